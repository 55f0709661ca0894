"""``Module``: a container of variables and sub-modules, found by reflection like ``tf.Module``."""
from __future__ import annotations

import functools
import re
from typing import Any, Callable

from stagecraft.eager import nest
from stagecraft.state.checkpoint import tracking
from stagecraft.eager.scopes import name_scope
from stagecraft.state.variables import Variable


def _camel_to_snake(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


class Module:
    """Base class for models and layers: tracks the variables and sub-modules in its attributes.

    ``variables``, ``trainable_variables`` and ``submodules`` are found on every access by
    walking attributes sorted by name (lists, tuples and dicts included), then sub-modules,
    with each object listed once, in TensorFlow's order.

    >>> import stagecraft as tf
    >>> class Dense(tf.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.w = tf.Variable([[1.0]])
    ...         self.b = tf.Variable([0.0])
    >>> [v.numpy().tolist() for v in Dense().trainable_variables]
    [[0.0], [[1.0]]]
    """

    _TF_MODULE_IGNORED_PROPERTIES = frozenset(("_name", "_scope_name"))

    def __init__(self, name: str | None = None):
        if name is None:
            name = _camel_to_snake(type(self).__name__)
        elif not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"{name!r} is not a valid module name. Module names must be valid "
                             f"Python identifiers (e.g. 'encoder_1').")
        self._name = name
        # As tf.Module: the scope is fixed here, nested in the current one ('outer/m/').
        with name_scope(name) as scope:
            self._scope_name = scope

    def __setattr__(self, name: str, value: Any) -> None:
        # Checkpoint tracking (semantics.md §4.3): plain lists and dicts become tracked ones,
        # so appends to them can be restored later; a restore waiting for a child with this
        # name (deferred restoration) assigns the saved value now, before the attribute is set.
        if name not in self._TF_MODULE_IGNORED_PROPERTIES:
            value = tracking.wrap(value)
            tracking.notify(self, name, value)
        super().__setattr__(name, value)

    @property
    def name(self) -> str:
        return self._name

    @property
    def name_scope(self) -> name_scope:
        """The module's scope: an absolute ``tf.name_scope`` (``'m/'``, or ``'outer/m/'``
        when made inside ``tf.name_scope('outer')``)."""
        return name_scope(self._scope_name)

    @property
    def variables(self) -> tuple:
        """Every variable of this module and its sub-modules (each once)."""
        return tuple(_walk(self, lambda x: isinstance(x, Variable)))

    @property
    def trainable_variables(self) -> tuple:
        """The trainable variables, in the order of ``variables``."""
        return tuple(_walk(self, lambda x: isinstance(x, Variable) and x.trainable))

    @property
    def non_trainable_variables(self) -> tuple:
        return tuple(_walk(self, lambda x: isinstance(x, Variable) and not x.trainable))

    @property
    def submodules(self) -> tuple:
        """Every module reachable from this one (not including itself)."""
        return tuple(_walk(self, lambda x: isinstance(x, Module)))

    @classmethod
    def with_name_scope(cls, method: Callable) -> Callable:
        """Decorator: runs ``method`` inside the module's name scope."""
        @functools.wraps(method)
        def wrapped(self: "Module", *args: Any, **kwargs: Any) -> Any:
            with self.name_scope:
                return method(self, *args, **kwargs)
        return wrapped

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self._name!r}>"


def _walk(root: Module, predicate: Callable[[Any], bool]) -> list:
    """Matching objects: this module's attributes by sorted name, then each sub-module met (in
    order) the same way; every object at most once."""
    seen = {id(root)}
    out: list = []

    def visit(module: Module) -> None:
        pending = []
        attrs = vars(module)
        for key in sorted(attrs):
            if key in module._TF_MODULE_IGNORED_PROPERTIES:
                continue
            for leaf in nest.flatten(attrs[key]):
                if id(leaf) in seen:
                    continue
                if predicate(leaf):
                    seen.add(id(leaf))
                    out.append(leaf)
                if isinstance(leaf, Module):
                    seen.add(id(leaf))
                    pending.append(leaf)
        for sub in pending:
            visit(sub)

    visit(root)
    return out
