"""Labels of what is read out of containers: subscripts, comprehensions and the builtins
that pick elements (``max(files, key=...)``), where records keep their fields (see
``provenance.Fields``). A part of :class:`~dcbrain.tfplan.labels.rewrite.LabelRewriter`.
"""

from __future__ import annotations

import ast

from dcbrain.tfplan.labels.analysis import _Analysis, _filters, _stored
from dcbrain.tfplan.labels.exprs import _call, _element, _Label, _name, _union

#: ``name -> label`` of names whose label is known from where they are bound
#: (comprehension targets, lambda parameters), for values and for host call arguments.
_Env = dict[str, _Label]


class ContainerLabels:
    """The labels of subscripts, comprehensions and selections; :meth:`label` is the
    rewriter's, for their parts."""

    analysis: _Analysis
    strict: bool

    def label(self, node: ast.expr, env: _Env, call_env: _Env, *, precise: bool,
              shaped: bool = False) -> _Label:
        raise NotImplementedError

    def _item_label(self, node: ast.Subscript, env: _Env, call_env: _Env) -> _Label:
        container = self.label(node.value, env, call_env, precise=True)
        key_node = node.slice
        if isinstance(key_node, ast.Call) and isinstance(key_node.func, ast.Name) \
                and key_node.func.id == "__tf_key" and len(key_node.args) == 1:
            key_node = key_node.args[0]
        if isinstance(key_node, ast.UnaryOp) and isinstance(key_node.op, ast.USub) \
                and isinstance(key_node.operand, ast.Constant) \
                and type(key_node.operand.value) is int:  # xs[-1]: a constant index too
            key_node = ast.Constant(value=-key_node.operand.value)
        key_label = self.label(node.slice, env, call_env, precise=True)
        simple = isinstance(key_node, ast.Constant) or (
            isinstance(key_node, ast.Name) and key_node.id not in env
            and key_node.id not in self.analysis.walrus)
        if not container.parts or not simple:
            return container | key_label
        key: ast.expr = ast.Constant(value=key_node.value) \
            if isinstance(key_node, ast.Constant) else _name(getattr(key_node, "id", ""))
        return _Label(0, [_call("__tfh_item", container.expr(), key, key_label.expr())])

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
                       env: _Env, call_env: _Env, precise: bool) -> _Label:
        env, call_env = dict(env), dict(call_env)
        total, conditions = _Label(), _Label()
        for generator in node.generators:
            iterable = _element(self.label(generator.iter, env, call_env, precise=precise))
            total = total | iterable
            for name in _stored(generator.target):
                env[name] = iterable
                call_env[name] = iterable
            for condition in generator.ifs:
                conditions = conditions | self.label(condition, env, call_env,
                                                     precise=precise)
        if _filters(node):  # some of the iterable's own elements: records keep their fields
            return self._selected(iterable, conditions)
        parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        for part in parts:
            total = total | self.label(part, env, call_env, precise=precise)
        return total | conditions

    def _selected(self, picked: _Label, by: _Label) -> _Label:
        """The label of elements of a value of label ``picked`` chosen by ``by`` (see
        ``provenance.selected``)."""
        if not picked.parts:
            return picked | by
        helper = "__tfh_res" if self.strict else "__tfh_sel"
        return _Label(0, [_call(helper, picked.expr(), by.expr())])

    def _selection(self, name: str, node: ast.Call, env: _Env, call_env: _Env,
                   precise: bool) -> _Label | None:
        """The label of a builtin that returns elements of its iterable argument, picked
        or ordered by its other arguments (``max(files, key=...)``); ``None`` for any
        other call."""
        args, keywords = node.args, node.keywords
        if any(isinstance(arg, ast.Starred) for arg in args) \
                or any(keyword.arg is None for keyword in keywords):
            return None
        if name == "filter":
            if len(args) != 2 or keywords:
                return None
            picked, by = args[1], [args[0]]
        else:
            if len(args) != 1 or any(keyword.arg not in ("key", "reverse")
                                     for keyword in keywords):
                return None
            picked, by = args[0], [keyword.value for keyword in keywords]
        by_labels = [self.label(item, env, call_env, precise=precise) for item in by]
        return self._selected(self.label(picked, env, call_env, precise=precise),
                              _union(by_labels))
