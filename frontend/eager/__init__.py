"""The eager core: ``Tensor`` (and ``DeviceTensor`` for GPU buffers), ``bind`` (the one entry
point of every op, on every device), conversion of Python and NumPy values, the execution
context, placement (devices, copies), ``locations`` (the user's file:line in errors), ``nest``
and the name/init scopes. ``tensor.LATE_BOUND`` holds what tensors need from the layers above.

Nothing is imported here, so that ``stagecraft.eager.X`` always names the module ``X``.
"""
