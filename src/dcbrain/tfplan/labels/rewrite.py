"""The label rewrite: code that keeps a shadow label beside every plan variable.

Runs on the guarded tree (``rewrite.py``) of a plan whose run tracks provenance. For each
plan variable ``x`` a shadow ``__tfl_x`` holds its label (see ``provenance.py``): every
statement that binds ``x`` is followed by ``__tfl_x = <label of the value>``, where the
label of an expression is the union of the labels of what it reads (names, literals,
call results), element labels kept where a container's shape is known (displays,
``parallel``, constant or name subscripts). A call that may reach the host goes through
``__tfh_at(func, lambda: <argument labels>)`` so the dispatcher learns each argument's
sources; a plan function gets its arguments' labels in a hidden keyword and adds what it
returns to ``__tfh_fr_<name>``. In strict mode ``__tfh_c`` holds the labels of the
conditions the current statement runs under, and every label includes it.

What the rewrite cannot follow it over-approximates with ``__tfl.seen`` (every source of
the run so far): a lambda's parameters where a host call reads them, a function called
by a builtin, a name bound by ``:=``. A container changed in place (``xs.append(v)``,
``d[k] = v``) adds the new labels to every variable it may be shared with (names linked
by assignment, flow-insensitively). Loop-invariant updates then leave their loop
(``_label_hoist.py``).

Kept whole: one ``ast.NodeTransformer``, :class:`LabelRewriter`, whose visit methods share
its current scope, the plan's analysis and its shadow names; split over files, each half
would reach into the other's state.
"""

from __future__ import annotations

import ast
import itertools

from dcbrain.tfplan.labels.analysis import (
    _TEMPORARY,
    HELPER,
    MUTATING_METHODS,
    SELECTIONS,
    _Analysis,
    _declared_in,
    _leaves,
    _locals_of,
    _locate_missing,
    _method_of,
    _plan_name,
    _positioned,
    _root,
    _stored,
    _subscripts,
    changes_in_place,
)
from dcbrain.tfplan.labels.containers import ContainerLabels, _Env
from dcbrain.tfplan.labels.exprs import (
    TRACKER,
    _assign,
    _call,
    _element,
    _flat,
    _Label,
    _name,
    _seen,
    _special,
    _union,
    copied,
)
from dcbrain.tfplan.labels.provenance import PLAN_BIT
from dcbrain.tfplan.parser import iter_child_nodes, walk

SHADOW = "__tfl_"
LABEL_KEYWORD = "__tfh_l"
_CONTEXT = "__tfh_c"
_RETURNED = "__tfh_r"


def _may_change(body: list[ast.stmt], analysis: _Analysis) -> tuple[set[str], set[str]]:
    """The plan variables ``body`` may bind, and those it may change in place (through a
    subscript, a method, or a plan function it calls, whose parameters and globals it
    may change)."""
    names: set[str] = set()
    roots: set[str] = set()
    for statement in body:
        for node in walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                if _plan_name(node.id):
                    names.add(node.id)
            elif isinstance(node, ast.FunctionDef) and _plan_name(node.name):
                names.add(node.name)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
                root = _root(node, analysis.aliases)
                if root:
                    roots.add(root)
            elif isinstance(node, ast.Call):
                method = _method_of(node)
                if method is not None and method[1] in MUTATING_METHODS:
                    root = _root(method[0], analysis.aliases)
                    if root:
                        roots.add(root)
                elif isinstance(node.func, ast.Name) and node.func.id in analysis.bound:
                    # a plan function may change what it is given and what it declares
                    roots.update(child.id for arg in node.args for child in walk(arg)
                                 if isinstance(child, ast.Name) and _plan_name(child.id))
                    names.update(analysis.declared_by.get(node.func.id, ()))
                    roots.update(analysis.changes_of.get(node.func.id, ()))
    return names, roots


def shadow(name: str) -> str:
    return SHADOW + name


def _returns_of(name: str) -> str:
    return f"{HELPER}fr_{name}"


class _Scope:
    def __init__(self, locals_: set[str], function: str | None) -> None:
        self.locals = locals_
        self.function = function
        self.declared: set[str] = set()
        self.mutations: list[tuple[str, _Label]] = []


class LabelRewriter(ContainerLabels):
    """Adds label tracking to a guarded plan (see the module docstring)."""

    def __init__(self, provided: frozenset[str], builtins: frozenset[str], strict: bool) -> None:
        self.provided = provided
        self.builtin_names = builtins
        self.strict = strict
        self._temporaries = itertools.count()
        self.analysis: _Analysis
        self.scope: _Scope
        self.global_shadows: set[str] = set()
        #: the label of the value an assignment stores (into subscripts too)
        self._stored_label = _Label()
        #: the guard rewrite's temporaries (``__tf_t1``) -> the helper holding their label
        self.temporaries: dict[str, str] = {}

    def rewrite(self, tree: ast.Module) -> ast.Module:
        main = tree.body[0]
        assert isinstance(main, ast.FunctionDef)
        self.analysis = _Analysis(main, self.builtin_names)
        declared: set[str] = set()
        statements = main.body
        for statement in statements:  # the rewriter's own, for the plan's top-level names
            if isinstance(statement, ast.Global):
                declared = set(statement.names)
                break
        top = _locals_of(main.body) | declared
        self.scope = _Scope(top, None)
        shared_globals = {name for name in top if name in declared}
        returns = [_returns_of(name) for name in sorted(self.analysis.functions)]
        groups = sorted(set(self.analysis.group_of.values()))
        names = sorted(shadow(name) for name in shared_globals) + returns + groups
        prologue: list[ast.stmt] = []
        if names:
            prologue.append(ast.Global(names=names))
        self.scope.declared = shared_globals
        self.global_shadows = shared_globals
        initial = sorted(shadow(name) for name in top) + returns + groups
        if self.strict:
            initial.append(_CONTEXT)
        if initial:
            prologue.append(ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store()) for n in initial],
                                       value=ast.Constant(value=0)))
        body = [statement if isinstance(statement, ast.Global) else self.statement(statement)
                for statement in statements]  # the Global's shadows are declared above
        main.body = [*_positioned(prologue, statements[0]),
                     *(part for item in body for part in (item if isinstance(item, list)
                                                           else [item]))]
        return tree

    # -- statements ---------------------------------------------------------------------
    def statements(self, body: list[ast.stmt]) -> list[ast.stmt]:
        result: list[ast.stmt] = []
        for statement in body:
            result.extend(self.statement(statement))
        return result

    def statement(self, node: ast.stmt) -> list[ast.stmt]:
        scope = self.scope
        scope.mutations = []
        after: list[ast.stmt] = []
        before: list[ast.stmt] = []
        if isinstance(node, ast.Assign):
            after = self._assign(node)
        elif isinstance(node, ast.AugAssign):
            label = self.label(node.value, {}, {}, precise=False)
            if isinstance(node.target, ast.Name) and _plan_name(node.target.id):
                name = shadow(node.target.id)
                after = [_assign(name, self._with_context(_Label(0, [_name(name)]) | label))]
            elif isinstance(node.target, ast.Subscript):
                self.label(node.target, {}, {}, precise=False)
                self._mutated(node.target, label)
        elif isinstance(node, ast.For):
            return self._for(node)
        elif isinstance(node, ast.While | ast.If):
            condition = self.label(node.test, {}, {}, precise=False)
            pending, scope.mutations = scope.mutations, []
            if isinstance(node, ast.While):
                node.body = self._guarded(node.body, condition)
                node.orelse = self.statements(node.orelse)
                if self.strict:  # the last test, false, decided where the loop stopped
                    after = self._joined(node.body, condition | _Label(0, [_name(_CONTEXT)]))
            else:
                before, node.body, node.orelse, after = self._branches(node, condition)
            scope.mutations = pending
        elif isinstance(node, ast.Try):
            node.body = self.statements(node.body)
            node.finalbody = self.statements(node.finalbody)
        elif isinstance(node, ast.FunctionDef):
            self._function(node)
        elif isinstance(node, ast.Return):
            return self._return(node)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            pass  # the shadows are declared where their function starts
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                for part in _subscripts(target):  # what is left moves: a change in place
                    self._mutated(part, self.label(part.slice, {}, {}, precise=False))
        else:
            for child in iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.label(child, {}, {}, precise=False)
        for root, label in scope.mutations:
            after.extend(self._shared_update(root, label))
        return [*_positioned(before, node), node, *_positioned(after, node)]

    def _assign(self, node: ast.Assign) -> list[ast.stmt]:
        value = node.value
        unpacked = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
            and value.func.id == "__tf_unpack"
        internal = all(isinstance(t, ast.Name) and not _plan_name(t.id) for t in node.targets)
        if internal:
            label = self.label(value, {}, {}, precise=False)
            first = node.targets[0]
            if len(node.targets) == 1 and isinstance(first, ast.Name) \
                    and _TEMPORARY.fullmatch(first.id):
                # ``t[k] op= v`` became ``t1 = t; t2 = k; t1[t2] = op(t1[t2], v)``: the
                # temporaries' labels are those of the container and the key
                self.temporaries[first.id] = f"{HELPER}v{first.id}"
                return [_assign(self.temporaries[first.id], self._with_context(label))]
            return []
        if unpacked:
            assert isinstance(value, ast.Call)
            label = self.label(value.args[0], {}, {}, precise=True, shaped=True)
        else:
            stores = all(isinstance(target, ast.Subscript) for target in node.targets)
            label = self.label(value, {}, {}, precise=not stores, shaped=not stores)
        after: list[ast.stmt] = []
        self._stored_label = label
        held: ast.expr = self._with_context(label)
        if len(node.targets) > 1 or any(isinstance(t, ast.Tuple | ast.List) for t in node.targets):
            temporary = f"{HELPER}t{next(self._temporaries)}"
            after.append(_assign(temporary, held))
            held = _name(temporary)
        for target in node.targets:
            after.extend(self._bind(target, held))
        return after

    def _bind(self, target: ast.expr, label: ast.expr, *, flat: bool = False
              ) -> list[ast.stmt]:
        """Shadow assignments for binding ``target`` to a value of ``label`` (``flat``:
        every element of it has that label)."""
        if isinstance(target, ast.Name):
            return [_assign(shadow(target.id), label)] if _plan_name(target.id) else []
        if isinstance(target, ast.Tuple | ast.List):
            bound: list[ast.stmt] = []
            starred = any(isinstance(elt, ast.Starred) for elt in target.elts)
            for index, elt in enumerate(target.elts):
                part: ast.expr = label if flat else _call("__tfh_flat", label) if starred \
                    else _call("__tfh_item", label, ast.Constant(value=index),
                               ast.Constant(value=0))
                bound.extend(self._bind(elt.value if isinstance(elt, ast.Starred) else elt,
                                        part, flat=flat or starred))
            return bound
        if isinstance(target, ast.Subscript):
            # ``t[k] = v``: the container now holds ``v`` under ``k``; both are its data
            key = self.label(target.slice, {}, {}, precise=False)
            self.label(target.value, {}, {}, precise=False)
            self._mutated(target, (_Label(0, [label]) if flat else self._stored_label) | key)
        return []

    def _for(self, node: ast.For) -> list[ast.stmt]:
        scope = self.scope
        scope.mutations = []
        label = _element(self.label(node.iter, {}, {}, precise=False))
        number = next(self._temporaries)
        iterable, held = f"{HELPER}i{number}", f"{HELPER}l{number}"
        before: list[ast.stmt] = [_assign(iterable, node.iter),
                                  _assign(held, self._with_context(label))]
        for root, mutation in scope.mutations:
            before.extend(self._shared_update(root, mutation))
        node.iter = _name(iterable)
        targets = self._bind(node.target, _name(held), flat=True)
        rebound = set(_stored(node.target)) & _locals_of(node.body)
        if not rebound:  # the target's label is the same in every turn: set it once
            before.extend(targets)
            targets = []
        original = list(node.body)
        node.body = [*_positioned(targets, node),
                     *self._guarded(node.body, _Label(0, [_name(held)]))]
        node.orelse = self.statements(node.orelse)
        after: list[ast.stmt] = []
        if self.strict:  # how many turns ran is the iterable's data
            after = [_assign(_CONTEXT, (_Label(0, [_name(_CONTEXT), _name(held)])).expr()),
                     *self._joined(original, _Label(0, [_name(_CONTEXT)]))]
        return [*_positioned(before, node), node, *_positioned(after, node)]

    def _guarded(self, body: list[ast.stmt], condition: _Label) -> list[ast.stmt]:
        """``body`` run under ``condition``: in strict mode its labels include it."""
        if not self.strict:
            return self.statements(body)
        # a union of two or more labels is an int already: no __tfh_flat call per turn
        raised = _assign(_CONTEXT, (_Label(0, [_name(_CONTEXT)]) | condition).expr())
        return [*_positioned([raised], body[0]), *self.statements(body)]

    def _branches(self, node: ast.If, condition: _Label
                  ) -> tuple[list[ast.stmt], list[ast.stmt], list[ast.stmt], list[ast.stmt]]:
        if not self.strict:
            return [], self.statements(node.body), self.statements(node.orelse), []
        saved = f"{HELPER}s{next(self._temporaries)}"
        raised = _assign(_CONTEXT, (_Label(0, [_name(saved)]) | condition).expr())
        body = [*_positioned([copied(raised)], node.body[0]),
                *self.statements(node.body)]
        # both branches raise the context, so that after the ``if`` it holds the
        # condition whichever ran: what either branch may change carries it (the branch
        # not taken decided its value too)
        orelse = [*_positioned([raised], node.orelse[0] if node.orelse else node),
                  *self.statements(node.orelse)]
        after = self._joined([*node.body, *node.orelse], _Label(0, [_name(_CONTEXT)]))
        if not _leaves([*node.body, *node.orelse]):
            # what runs after the ``if`` no longer depends on the condition, unless a
            # branch may leave the block (return, break, continue, raise)
            after.append(_assign(_CONTEXT, _name(saved)))
        return [_assign(saved, _name(_CONTEXT))], body, orelse, after

    def _joined(self, body: list[ast.stmt], condition: _Label) -> list[ast.stmt]:
        """Strict mode, after a branch or loop ``body`` that may not have run: every
        variable it may bind or change in place gains ``condition``."""
        names, roots = _may_change(body, self.analysis)
        joined: list[ast.stmt] = []
        for name in sorted(names):
            if name in self.scope.locals or name in self.scope.declared:
                target = shadow(name)
                joined.append(_assign(target, (_Label(0, [_name(target)]) | condition).expr()))
        for group in sorted({self.analysis.group_of[root] for root in roots
                             if root in self.analysis.group_of}):
            joined.append(_assign(group, (_Label(0, [_name(group)]) | condition).expr()))
        return joined

    def _with_context(self, label: _Label) -> ast.expr:
        if not self.strict:
            return label.expr()
        [part] = label.parts if len(label.parts) == 1 and not label.bits else [None]
        if isinstance(part, ast.Call) and isinstance(part.func, ast.Name) \
                and part.func.id in ("__tfh_list", "__tfh_dict"):
            # a display or ``parallel``: each element gets the context, and keeps its own
            # label (``a | c`` of a shape would flatten it)
            keys = part.args[:1] if part.func.id == "__tfh_dict" else []
            items = part.args[len(keys):]
            return _call(part.func.id, *keys, *(
                ast.BinOp(left=item, op=ast.BitOr(), right=_name(_CONTEXT)) for item in items))
        return (label | _Label(0, [_name(_CONTEXT)])).expr()

    def _mutated(self, target: ast.expr, label: _Label) -> None:
        root = _root(target, self.analysis.aliases)
        if root is not None:
            self.scope.mutations.append((root, label))

    def _shared_update(self, root: str, label: _Label) -> list[ast.stmt]:
        """``root`` was changed in place: every variable it may be shared with (its
        group) gains ``label``."""
        group = self.analysis.group_of.get(root)
        if group is None:
            return []
        return [_assign(group, self._with_context(_Label(0, [_name(group)]) | label))]

    def _function(self, node: ast.FunctionDef) -> None:
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.label(default, {}, {}, precise=False)
        if node.name in self.analysis.pure:
            return
        outer = self.scope
        params = [arg.arg for arg in (*node.args.posonlyargs, *node.args.args,
                                      *node.args.kwonlyargs, node.args.vararg,
                                      node.args.kwarg) if arg is not None]
        globals_, nonlocals = _declared_in(node.body)
        declared = globals_ | nonlocals
        locals_ = (_locals_of(node.body) | set(params)) - declared
        self.scope = _Scope(locals_, node.name)
        self.scope.declared = declared
        node.args.kwonlyargs.append(ast.arg(arg=LABEL_KEYWORD))
        node.args.kw_defaults.append(ast.Constant(value=None))
        given = ast.IfExp(test=ast.Compare(left=_name(LABEL_KEYWORD), ops=[ast.Is()],
                                           comparators=[ast.Constant(value=None)]),
                          body=_seen().expr(), orelse=_name(LABEL_KEYWORD))
        prologue: list[ast.stmt] = []
        names = sorted(shadow(name) for name in globals_ if _plan_name(name))
        names.extend(sorted(set(self.analysis.group_of.values())))
        if node.name in self.analysis.functions:
            names.append(_returns_of(node.name))
        if names:
            prologue.append(ast.Global(names=names))
        if nonlocals:
            prologue.append(ast.Nonlocal(names=sorted(shadow(name) for name in nonlocals)))
        prologue.append(_assign(LABEL_KEYWORD, given))
        targets = [shadow(name) for name in params if _plan_name(name)]
        if self.strict:
            targets.append(_CONTEXT)
        if targets:
            prologue.append(ast.Assign(targets=[ast.Name(id=t, ctx=ast.Store()) for t in targets],
                                       value=_name(LABEL_KEYWORD)))
        others = sorted(shadow(name) for name in locals_ - set(params) if _plan_name(name))
        if others:
            prologue.append(ast.Assign(targets=[ast.Name(id=t, ctx=ast.Store()) for t in others],
                                       value=ast.Constant(value=0)))
        # the rewriter's depth prologue (nonlocal first) stays ahead of everything
        first = next((i for i, s in enumerate(node.body) if not isinstance(s, ast.Nonlocal)), 0)
        head, rest = node.body[:first], node.body[first:]
        node.body = [*head, *_positioned(prologue, node), *self.statements(rest)]
        self.scope = outer

    def _return(self, node: ast.Return) -> list[ast.stmt]:
        function = self.scope.function
        if node.value is None or function is None or function not in self.analysis.functions:
            if node.value is not None:
                self.label(node.value, {}, {}, precise=False)
            return [node]
        label = self.label(node.value, {}, {}, precise=True)
        returns = _returns_of(function)
        hold = _assign(_RETURNED, node.value)
        add = _assign(returns, self._with_context(_Label(0, [_name(returns)]) | label))
        node.value = _name(_RETURNED)
        return [*_positioned([hold, add], node), node]

    # -- expressions --------------------------------------------------------------------
    def label(self, node: ast.expr, env: _Env, call_env: _Env, *, precise: bool,
              shaped: bool = False) -> _Label:
        """The label of ``node`` (host calls in it are routed through ``__tfh_at``)."""
        if isinstance(node, ast.Constant):
            return _Label(PLAN_BIT)
        if isinstance(node, ast.Name):
            return self._name_label(node.id, env)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "__tf_display":  # a charged display: as the display
            return self.label(node.args[0], env, call_env, precise=precise, shaped=shaped)
        if isinstance(node, ast.Call):
            return self._call_label(node, env, call_env, precise, shaped)
        if isinstance(node, ast.List | ast.Tuple) and shaped and \
                not any(isinstance(elt, ast.Starred) for elt in node.elts):
            items = [self.label(elt, env, call_env, precise=precise, shaped=True)
                     for elt in node.elts]
            if all(not item.parts for item in items):
                return _union(items)
            return _Label(0, [_call("__tfh_list", *(item.expr() for item in items))])
        if isinstance(node, ast.Dict) and shaped and all(
                isinstance(key, ast.Constant) and type(key.value) in (str, int)
                for key in node.keys):
            values = [self.label(value, env, call_env, precise=precise, shaped=True)
                      for value in node.values]
            if all(not value.parts for value in values):
                return _union(values)
            keys = ast.Tuple(elts=[ast.Constant(value=key.value) for key in node.keys
                                   if isinstance(key, ast.Constant)], ctx=ast.Load())
            return _Label(0, [_call("__tfh_dict", keys, *(value.expr() for value in values))])
        if isinstance(node, ast.Subscript) and precise and not isinstance(node.slice, ast.Slice):
            return self._item_label(node, env, call_env)
        if isinstance(node, ast.Lambda):
            params = {arg.arg for arg in walk(node.args) if isinstance(arg, ast.arg)}
            # a lambda that changes what it is given (``map(lambda f: f.update(...), fs)``)
            # may move any data it can reach: its parameters are anything
            given = _seen() if changes_in_place(node.body) else _Label()
            inner_env = {**env, **{name: given for name in params}}
            inner_calls = {**call_env, **{name: _seen() for name in params}}
            for default in node.args.defaults:
                self.label(default, env, call_env, precise=False)
            return self.label(node.body, inner_env, inner_calls, precise=precise)
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            return self._comprehension(node, env, call_env, precise)
        # the rest is the union of its parts: walked without recursion, since the guards
        # nest several nodes for each level of a plan's expression
        total = _Label()
        stack: list[ast.expr] = [node]
        while stack:
            part = stack.pop()
            if part is not node and _special(part, precise):
                total.add(self.label(part, env, call_env, precise=precise))
            elif isinstance(part, ast.NamedExpr):
                stack.append(part.value)
            else:
                stack.extend(child for child in iter_child_nodes(part)
                             if isinstance(child, ast.expr))
        return total

    def _name_label(self, name: str, env: _Env) -> _Label:
        if name in env:
            return env[name]
        if name in self.temporaries:
            return _Label(0, [_name(self.temporaries[name])])
        if not _plan_name(name):
            return _Label()
        analysis = self.analysis
        if name in analysis.dynamic:
            return _seen()
        if name in analysis.pure:
            return _union(self._name_label(read, {}) for read in analysis.free_reads[name])
        if name in analysis.functions:
            return _Label(0, [_name(_returns_of(name))])
        if name in analysis.bound:
            group = analysis.group_of.get(name)
            parts: list[ast.expr] = [_name(shadow(name))]
            if group:
                parts.append(_name(group))
            if name in analysis.changed_late:
                return _Label(0, parts) | _seen()
            return _Label(0, parts)
        if name in self.provided and name not in self.builtin_names:
            return _Label(0, [ast.Call(func=ast.Attribute(value=_name(TRACKER), attr="callee",
                                                          ctx=ast.Load()),
                                       args=[_name(name)], keywords=[])])
        return _Label()

    def _call_label(self, node: ast.Call, env: _Env, call_env: _Env, precise: bool,
                    shaped: bool) -> _Label:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else None
        if name == "__tf_parallel":
            branches = [self.label(arg, env, call_env, precise=precise) for arg in node.args]
            if shaped and not any(isinstance(arg, ast.Starred) for arg in node.args):
                return _Label(0, [_call("__tfh_list", *(branch.expr() for branch in branches))])
            return _union(branches)
        if name == "__construct_chain":  # the handle's results carry what built it
            given = self._argument_labels(node, call_env)
            self._route(node, given)
            return _union([*given[0], given[1], *given[2].values(), given[3]])
        method = _method_of(node)
        pure = method is not None or (name is not None and (not _plan_name(name) or (
            name in self.builtin_names and name not in self.analysis.bound)))
        if pure and method is None and name in SELECTIONS:
            selection = self._selection(str(name), node, env, call_env, precise)
            if selection is not None:
                return selection
        if pure:
            args = _union([
                *(self.label(arg, env, call_env, precise=precise) for arg in node.args),
                *(self.label(keyword.value, env, call_env, precise=precise)
                  for keyword in node.keywords)])
            if method is not None:
                if method[1] in MUTATING_METHODS:
                    self._mutated(method[0], args)
                return self.label(func, env, call_env, precise=False) | args
            return args
        if name is None:
            self.label(func, env, call_env, precise=False)
        given = self._argument_labels(node, call_env)
        args = _union([*given[0], given[1], *given[2].values(), given[3]])
        if name is not None and name in self.analysis.pure:
            return args | self._name_label(name, env)
        if name is not None and name in self.analysis.functions:
            keyword = ast.keyword(arg=LABEL_KEYWORD, value=self._with_context(args))
            _locate_missing(keyword.value, node)
            node.keywords.append(keyword)
            return _Label(0, [_name(_returns_of(name))])
        self._route(node, given)
        if name is not None:
            callee = ast.Call(func=ast.Attribute(value=_name(TRACKER), attr="callee",
                                                 ctx=ast.Load()),
                              args=[_name(name)], keywords=[])
            if not args.parts and not args.bits:
                return _Label(0, [callee])
            return _Label(0, [_call("__tfh_res", callee, args.expr())])
        return _seen() | args

    def _argument_labels(self, node: ast.Call, call_env: _Env
                         ) -> tuple[list[_Label], _Label, dict[str, _Label], _Label]:
        """Labels of a call's positional arguments, of ``*xs``, of its keywords and of
        ``**d``, as the host sees them (a lambda's parameters: anything)."""
        positional: list[_Label] = []
        rest, rest_keywords = _Label(), _Label()
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                rest = rest | _flat(self.label(arg.value, call_env, call_env, precise=False))
            elif isinstance(rest, _Label) and not rest.parts and not rest.bits:
                positional.append(self.label(arg, call_env, call_env, precise=True))
            else:
                rest = rest | self.label(arg, call_env, call_env, precise=False)
        keywords: dict[str, _Label] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                rest_keywords = rest_keywords | _flat(
                    self.label(keyword.value, call_env, call_env, precise=False))
            else:
                keywords[keyword.arg] = self.label(keyword.value, call_env, call_env,
                                                   precise=True)
        return positional, rest, keywords, rest_keywords

    def _route(self, node: ast.Call,
               given: tuple[list[_Label], _Label, dict[str, _Label], _Label]) -> None:
        """``f(args)`` -> ``__tfh_at(f, lambda: <labels>)(args)``."""
        positional, rest, keywords, rest_keywords = given
        labels = ast.Tuple(elts=[
            ast.Tuple(elts=[self._with_context(item) for item in positional], ctx=ast.Load()),
            self._with_context(rest),
            ast.Dict(keys=[ast.Constant(value=key) for key in keywords],
                     values=[self._with_context(value) for value in keywords.values()]),
            self._with_context(rest_keywords),
        ], ctx=ast.Load())
        thunk = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                              kw_defaults=[], defaults=[]),
                           body=copied(labels))
        routed = _call("__tfh_at", node.func, thunk)
        _locate_missing(routed, node.func)
        node.func = routed
