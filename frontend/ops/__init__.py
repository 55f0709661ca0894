"""The op wrappers users call (``stagecraft.add``, ``stagecraft.nn.relu``, ...), each a call of
``bind``: ``array_ops``, ``math_ops``, ``nn_ops``, ``random_ops``, ``clip_ops``, ``logging_ops``
(print, assertions), ``script_ops`` (``py_function``), ``tensor_array`` and ``operators`` (the
Python operators of tensors and variables).

Nothing is imported here; the public namespaces (``stagecraft``, ``stagecraft.math``, ...)
re-export the wrappers.
"""
