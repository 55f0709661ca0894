"""Staging: ``@function`` and everything between a Python function and a compiled graph
function, laid out as TensorFlow's ``polymorphic_function/``:

- ``function``: ``Function``, its trace cache, retracing warnings and method binding;
- ``tracing``: running a Python function on placeholders inside a ``FuncGraph``;
- ``concrete_function``: ``ConcreteFunction`` and its three call paths;
- ``function_grad``: gradients of staged calls;
- ``signature``: ``input_signature`` checks and binding;
- ``func_graph``, ``graph_tensor``, ``tensor_spec``, ``trace_cache`` (cache keys);
- ``cond`` and ``while_loop`` (with ``regions``): staged control flow and its gradients;
- ``compiled``: the code a backend generated.

Nothing is imported here: ``stagecraft.staging.function`` is the module, ``stagecraft.function``
the decorator.
"""
