"""The eager core: ``Tensor`` (and ``DeviceTensor`` for GPU buffers), ``bind`` (the one entry
point of every op), conversion of Python and NumPy values, the execution context, placement of
eager ops on devices, ``nest`` and the name/init scopes.

Nothing is imported here, so that ``stagecraft.eager.X`` always names the module ``X``.
"""
