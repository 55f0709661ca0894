"""Reverse-mode differentiation: ``GradientTape`` (``tape``), the VJP rule of every primitive
(``vjps``), ``custom_gradient``, and ``replay`` (re-running a graph under a tape, for the
gradients of staged calls, ``cond`` branches and loops).

Gradients of staged constructs live beside them in ``stagecraft.staging``: ``function_grad``
(calls of concrete functions), ``cond`` and ``while_loop``.
"""
