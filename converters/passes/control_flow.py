"""``if``/``while``/``for`` → runtime operator calls with explicit carried state.

Each statement's body becomes a nested function that writes the enclosing function's locals
(``nonlocal``); ``get_state``/``set_state`` closures expose the variables it carries (those it
modifies that are read later), so the operator can run it as Python or stage it. Every local of
a converted function starts as ``sc__.Undefined('name')``, which keeps ``nonlocal`` valid and
lets staged code report a variable defined on only one path. Input must be jump-free (the
break/continue/return passes run first).

    >>> import gast, astunparse
    >>> from stagecraft.converters.context import Context, Namer
    >>> src = "def f(x):\\n    if x > 0:\\n        y = 1\\n    else:\\n        y = 2\\n    return y"
    >>> tree = gast.parse(src).body[0]
    >>> out = convert(tree, Context("f.py", "f", Namer({"f", "x", "y"})))
    >>> print(astunparse.unparse(gast.gast_to_ast(out)).strip())  # doctest: +ELLIPSIS
    def f(x):
        y = sc__.Undefined('y')
    <BLANKLINE>
        def if_body():
            nonlocal y
            y = 1
    ...
        sc__.if_stmt((x > 0), if_body, else_body, get_state, set_state, ('y',), 'f.py:2')
        return y
"""
from __future__ import annotations

import gast

from stagecraft.converters.analysis.activity import assigned_names, declared, read_names
from stagecraft.converters.analysis.composites import (Composite, modified_composites,
                                                       untracked_subscript_bases)
from stagecraft.converters.analysis.liveness import analyze
from stagecraft.converters.context import RUNTIME, Context
from stagecraft.converters.operators.variables import RETURN_VALUE
from stagecraft.converters.passes.return_statements import RETURN_VALUES
from stagecraft.converters.templates import copy_location, template, template_expr


def _params(fn: gast.FunctionDef) -> set[str]:
    a = fn.args
    names = [x.id for x in a.posonlyargs + a.args + a.kwonlyargs]
    names += [x.id for x in (a.vararg, a.kwarg) if x is not None]
    return set(names)


def _tuple(names: list[str]) -> gast.Tuple:
    return gast.Tuple(elts=[gast.Name(n, gast.Load(), None, None) for n in names],
                      ctx=gast.Load())


def _names_constant(names: list, ctx: Context) -> gast.Tuple:
    """The state's names as messages show them: composites by their text, the generated
    return-value variable as RETURN_VALUE."""
    returns = ctx.notes.get(RETURN_VALUES, ())

    def label(n: str | Composite) -> str:
        if not isinstance(n, str):
            return n.text
        return RETURN_VALUE if n in returns else n
    return gast.Tuple(elts=[gast.Constant(label(n), None) for n in names], ctx=gast.Load())


# Methods that change a Python container in place.
MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update",
                      "setdefault", "add", "discard", "popitem"})


class _ControlFlow(gast.NodeTransformer):
    def __init__(self, ctx: Context, fn: gast.FunctionDef, local: set[str]):
        self.ctx = ctx
        self.locals = local
        liveness = analyze(fn)
        self.live = liveness.live_out
        self.loop_head = liveness.loop_head
        self.live_in = liveness.live_in
        self.globals, _ = declared(fn)
        self.reads_in: dict = {}
        # What each compound statement modifies, computed on the user's statements before any
        # rewriting (generated helper functions must not count as the user's variables).
        self.modified: dict = {}
        self.composites: dict = {}
        for node in gast.walk(fn):
            if isinstance(node, (gast.If, gast.While, gast.For)):
                # For a for loop this includes its target; the test/iterable binds nothing.
                stmts = [node] if isinstance(node, gast.For) else node.body + node.orelse
                # A local container whose items change under keys that cannot be tracked
                # (slices, computed keys) is carried whole.
                whole = untracked_subscript_bases(stmts) & local
                body = assigned_names(stmts) | whole
                self.modified[node] = sorted(body - self.globals)
                self.reads_in[node] = read_names(node)
                self.composites[node] = [c for c in modified_composites(stmts)
                                         if c.base not in whole]

    def _mutated(self, node: gast.stmt) -> list[str]:
        """Locals the loop changes through methods (``items.append(x)``) without assigning
        them: passed to the operator too, so a staged loop can say such changes cannot work."""
        found = set()
        for sub in gast.walk(node):
            if not isinstance(sub, gast.Call):
                continue
            func = sub.func
            if isinstance(func, gast.Attribute) and func.attr == "converted_call" and sub.args:
                func = sub.args[0]  # call_trees already routed the call through the runtime
            if isinstance(func, gast.Attribute) and func.attr in MUTATORS and \
                    isinstance(func.value, gast.Name):
                found.add(func.value.id)
        return sorted(found & self.locals - set(self.modified[node]))

    def _carried(self, node: gast.stmt, loop: bool) -> list[str]:
        live = set(self.live.get(node, ()))
        if loop:
            # What the next iteration reads before writing it (not the iterate, nor
            # temporaries the body assigns before reading): a variable first defined by the
            # loop and used only inside it must not require the loop to run at least once.
            live |= self.loop_head.get(node, self.reads_in[node])
        return [n for n in self.modified[node] if n in live]

    def _carried_composites(self, node: gast.stmt) -> list[Composite]:
        """The items and attributes the statement assigns whose container exists before it
        (AutoGraph's rule: every name they depend on is live on entry); changes to objects
        the statement creates itself are not state."""
        live = set(self.live_in.get(node, self.reads_in[node]))
        live |= self.loop_head.get(node, set())
        return [c for c in self.composites[node] if c.support <= live]

    def _state_functions(self, carried: list, restore: list[str] = ()) -> tuple[str, str, list]:
        """``get_state``/``set_state`` over ``carried`` (names, then composites) followed by
        ``restore``. Composites are read with ``ldu`` (Undefined when missing) and written back
        through ``set_item``/``set_attr``, which need no ``nonlocal``."""
        get, set_ = self.ctx.namer.new("get_state"), self.ctx.namer.new("set_state")
        values = self.ctx.namer.new("vars_")
        entries = list(carried) + list(restore)
        simple = [e for e in entries if isinstance(e, str)]
        if entries:
            reads, stores, writes = [], [], []
            for e in entries:
                if isinstance(e, str):
                    reads.append(gast.Name(e, gast.Load(), None, None))
                    stores.append(gast.Name(e, gast.Store(), None, None))
                    continue
                temp = self.ctx.namer.new("composite")
                reads.append(template_expr(f"{RUNTIME}.ldu(lambda: target, text)",
                                           target=e.target, text=gast.Constant(e.text, None)))
                stores.append(gast.Name(temp, gast.Store(), None, None))
                writes += _composite_store(e, temp)
            stmts = template(f"""
                def {get}():
                    return names_tuple
                def {set_}({values}):
                    nonlocal carried
                    names_store = {values}
                    writes
            """, names_tuple=gast.Tuple(elts=reads, ctx=gast.Load()), carried=simple,
                names_store=gast.Tuple(elts=stores, ctx=gast.Store()), writes=writes)
        else:
            stmts = template(f"""
                def {get}():
                    return ()
                def {set_}({values}):
                    pass
            """)
        return get, set_, stmts

    def _body_function(self, name: str, body: list, modified: list[str],
                       args: list[str] = (), prologue: list = ()) -> gast.FunctionDef:
        arg_list = ", ".join(args)
        (fdef,) = template(f"""
            def {name}({arg_list}):
                nonlocal modified
                prologue
                body
        """, modified=list(modified), prologue=list(prologue), body=list(body) or
            [gast.Pass()])
        return fdef

    # ---------------------------------------------------------------- statements
    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.FunctionDef:
        return convert(node, self.ctx)  # a nested user function: its own scope

    def visit_Lambda(self, node: gast.Lambda) -> gast.Lambda:
        return node

    def visit_If(self, node: gast.If) -> list:
        self.generic_visit(node)
        modified = self.modified[node]
        carried = self._carried(node, loop=False)
        # Modified by one branch and read by a branch (before any write there), yet dead
        # after the if: a staged if must reset them between its branch traces, or the else
        # branch would see what the if branch assigned.
        restore = sorted(set(self.live_in.get(node, ())) & set(modified) - set(carried))
        carried = carried + self._carried_composites(node)
        body_name, else_name = self.ctx.namer.new("if_body"), self.ctx.namer.new("else_body")
        get, set_, state = self._state_functions(carried, restore)
        out = [self._body_function(body_name, node.body, modified),
               self._body_function(else_name, node.orelse, modified)] + state
        extra = ", restore=restore_names" if restore else ""
        out += template(f"{RUNTIME}.if_stmt(test, {body_name}, {else_name}, {get}, {set_}, "
                        f"names, loc{extra})", test=node.test, names=_names_constant(carried, self.ctx),
                        loc=gast.Constant(self.ctx.loc(node), None),
                        restore_names=_names_constant(restore, self.ctx))
        return copy_location(out, node)

    @staticmethod
    def _options(node: gast.stmt) -> tuple[str, gast.Dict | None]:
        """The ``opts=`` argument (source suffix and dict) for a loop with a directive."""
        keywords = getattr(node, "sc_loop_options", None)
        if not keywords:
            return "", None
        return ", opts=loop_options", gast.Dict(
            keys=[gast.Constant(k.arg, None) for k in keywords],
            values=[k.value for k in keywords])

    def visit_While(self, node: gast.While) -> list:
        opts, options = self._options(node)
        self.generic_visit(node)
        modified = self.modified[node]
        carried = self._carried(node, loop=True) + self._mutated(node) + \
            self._carried_composites(node)
        test_name, body_name = self.ctx.namer.new("loop_test"), self.ctx.namer.new("loop_body")
        get, set_, state = self._state_functions(carried)
        (test_fn,) = template(f"""
            def {test_name}():
                return test
        """, test=node.test)
        out = [test_fn, self._body_function(body_name, node.body, modified)] + state
        out += template(f"{RUNTIME}.while_stmt({test_name}, {body_name}, {get}, {set_}, names, "
                        f"loc{opts})", names=_names_constant(carried, self.ctx),
                        loc=gast.Constant(self.ctx.loc(node), None),
                        loop_options=options)
        out += list(node.orelse)  # only reached without a break (break lowering guards it)
        return copy_location(out, node)

    def visit_For(self, node: gast.For) -> list:
        extra = getattr(node, "sc_extra_test", None)
        opts, options = self._options(node)
        self.generic_visit(node)
        modified = self.modified[node]
        carried = self._carried(node, loop=True) + self._mutated(node) + \
            self._carried_composites(node)
        body_name = self.ctx.namer.new("loop_body")
        item = self.ctx.namer.new("itr")
        get, set_, state = self._state_functions(carried)
        target = node.target
        (assign,) = template("target = item", target=target, item=item)
        out = [self._body_function(body_name, node.body, modified, [item], [assign])]
        extra_name = "None"
        if extra is not None:
            extra_name = self.ctx.namer.new("extra_test")
            out += template(f"""
                def {extra_name}():
                    return test
            """, test=extra)
        out += state
        out += template(f"{RUNTIME}.for_stmt(iterable, {extra_name}, {body_name}, {get}, "
                        f"{set_}, names, loc{opts})", iterable=node.iter,
                        names=_names_constant(carried, self.ctx), loc=gast.Constant(self.ctx.loc(node), None),
                        loop_options=options)
        out += list(node.orelse)
        return copy_location(out, node)


def convert(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Converts the control flow of ``node`` (and of functions nested in it)."""
    globals_, nonlocals = declared(node)
    # The user's locals, before their assignments move into generated body functions.
    local = sorted(assigned_names(node.body) - _params(node) - globals_ - nonlocals)
    transformer = _ControlFlow(ctx, node, set(local) | _params(node))
    node.body = [s for stmt in node.body for s in _as_list(transformer.visit(stmt))]
    inits = []
    for name in local:
        inits += template(f"{name} = {RUNTIME}.Undefined({name!r})")
    node.body = copy_location(inits, node) + node.body
    return node


def _composite_store(c: Composite, value: str) -> list[gast.stmt]:
    """``sc__.set_item(lambda: x, 'b', value)`` for ``x['b']`` (``set_attr`` for
    ``obj.attr``)."""
    if isinstance(c.target, gast.Subscript):
        return template(f"{RUNTIME}.set_item(lambda: parent, key, {value})",
                        parent=c.parent(), key=c.key())
    return template(f"{RUNTIME}.set_attr(lambda: parent, attr, {value})",
                    parent=c.parent(), attr=gast.Constant(c.target.attr, None))


def _as_list(x: object) -> list:
    return x if isinstance(x, list) else [x]
