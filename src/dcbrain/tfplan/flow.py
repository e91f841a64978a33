"""Static flow check: untrusted data that certainly reaches a guarded argument.

Before a plan runs, :func:`flow_problems` follows, from its syntax tree, which calls the
arguments of guarded calls (a tool's ``trusted_args``) can derive from: assignments,
containers (whose elements keep their own sources), comprehensions, plan functions (at
each call), branches and loops. A violation is reported only when it is *certain*: on
every path that reaches the call, the argument carries data from an untrusted call (a
tool without ``trusted_output``, or a chain that read such data). A flow that only *may*
happen (one branch of an ``if``, an element of a mixed list) is left to the checks made
while the plan runs.

Kept whole: one analysis, :class:`_FlowAnalysis`, a visitor whose methods share the plan's
environment, the functions being followed and the problems found so far; the helpers
around it are a few lines each.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from dcbrain.tfplan._flow_values import (
    UNKNOWN,
    Environment,
    FlowValue,
    FunctionValue,
    Sources,
    builtin_result,
    changed,
    container,
    join,
    join_all,
    join_environments,
    records,
    scalar,
    under,
    union,
    untrusted,
)
from dcbrain.tfplan.errors import FlowCheckOutOfSteps, Problem
from dcbrain.tfplan.labels.analysis import _Analysis, _filters, _leaves, _plan_name, _root
from dcbrain.tfplan.methods import IN_PLACE_METHODS
from dcbrain.tfplan.parser import walk

if TYPE_CHECKING:
    from dcbrain.tfplan.checker import CallableSpec
    from dcbrain.tfplan.parser import Plan

#: Statements and expressions one check may visit (plan functions are followed at every
#: call): past it the check stops and reports what it found, all of it still certain.
MAX_FLOW_STEPS = 50_000
#: Nesting of plan function calls the check follows.
MAX_FLOW_DEPTH = 8
#: Passes over a loop body before the names it still changes count as unknown.
_LOOP_PASSES = 4

#: The environment's entry for what the run has certainly seen so far (not a plan name).
SEEN = "__tf_seen"
#: The environment's entry for what the conditions the current statement runs under
#: certainly carry (strict mode; not a plan name).
CONTEXT = "__tf_context"
#: A call's argument: its keyword (``None``: positional), value and expression.
_Argument = tuple[str | None, FlowValue, ast.expr]


@dataclass
class _Frame:
    """One body being followed: a plan function's call or the plan's top level."""

    returns: list[FlowValue] = field(default_factory=list)
    breaks: list[list[Environment]] = field(default_factory=list)
    continues: list[list[Environment]] = field(default_factory=list)


def flow_problems(plan: Plan, specs: Mapping[str, CallableSpec],
                  literals: frozenset[str] = frozenset(), *,
                  strict: bool = False) -> list[Problem]:
    """Every certain flow of untrusted data into a guarded argument of ``plan``;
    ``literals`` are the untrusted sources the planner was shown before it wrote the plan
    (its literals carry them, as at run time). ``strict`` follows the conditions too, as
    strict mode does at run time: what is computed or called under an ``if``, a loop or a
    comprehension's filter, or after a branch that may leave early, carries what the
    condition certainly carries, and so does every variable a branch or loop whose
    condition carries it may bind or change (the branch not taken decided it too)."""
    if not any(spec.trusted_args and spec.side_effects for spec in specs.values()):
        return []
    analysis = _FlowAnalysis(plan, specs, strict)
    if literals:
        analysis.literal = scalar(frozenset(f"what the planner was shown ({source})"
                                            for source in sorted(literals)))
    with contextlib.suppress(FlowCheckOutOfSteps):  # out of steps: what was found is still certain
        analysis.block(plan.tree.body, {SEEN: UNKNOWN}, _Frame())
    return sorted(analysis.problems.values(), key=lambda p: (p.line, p.col))


class _FlowAnalysis:
    def __init__(self, plan: Plan, specs: Mapping[str, CallableSpec],
                 strict: bool = False) -> None:
        self.plan = plan
        self.specs = specs
        self.strict = strict
        self.problems: dict[tuple[int, int, str], Problem] = {}
        self.steps = 0
        self.active: list[ast.FunctionDef] = []
        # a name rebound through global/nonlocal changes where the check cannot follow
        self.opaque: set[str] = set()
        self.plan_names: set[str] = set()
        in_place = False  # whether the plan may change a container in place
        for node in plan.nodes():  # one walk for all three
            if isinstance(node, ast.Global | ast.Nonlocal):
                self.opaque.update(node.names)
            elif isinstance(node, ast.Name):
                if not isinstance(node.ctx, ast.Load):
                    self.plan_names.add(node.id)
            elif isinstance(node, ast.FunctionDef):
                self.plan_names.add(node.name)
            elif isinstance(node, ast.Subscript):
                in_place = in_place or isinstance(node.ctx, ast.Store | ast.Del)
            elif isinstance(node, ast.Attribute):
                in_place = in_place or node.attr in IN_PLACE_METHODS
        self.module: Environment = {}
        # the variables the run links as sharing a container (the label rewrite's own
        # analysis): a change in place through one of them reaches them all, and the run
        # reads each of them as the union of its elements
        self.sharing = _sharing(plan.source, frozenset(specs)) if strict or in_place \
            else _no_sharing()
        self.shared: dict[str, set[str]] = {}
        for name, group in self.sharing.group_of.items():
            self.shared.setdefault(group, set()).add(name)
        #: what a literal of the plan carries
        self.literal = scalar(None)

    def _step(self) -> None:
        self.steps += 1
        if self.steps > MAX_FLOW_STEPS:
            raise FlowCheckOutOfSteps

    def context(self, env: Environment) -> Sources:
        """What the conditions the current statement runs under certainly carry."""
        return env.get(CONTEXT, UNKNOWN).whole if self.strict else None

    def raise_context(self, env: Environment, condition: Sources) -> None:
        if self.strict and condition is not None:
            env[CONTEXT] = scalar(union(self.context(env), condition))

    def joined(self, body: list[ast.stmt], env: Environment, condition: Sources) -> None:
        """Strict mode, after a branch or loop ``body`` that may not have run: every
        variable it may bind or change in place carries ``condition`` (the rule of the
        run's label rewrite, ``_may_change``)."""
        if not self.strict or condition is None:
            return
        names, roots = self.may_change(body)
        for name in sorted(names):
            if name in env or name in self.opaque:
                env[name] = under(env.get(name, UNKNOWN), condition)
        for root in sorted(roots):
            self.changed_in_place(ast.Name(id=root), [scalar(condition)], env)

    def may_change(self, body: list[ast.stmt]) -> tuple[set[str], set[str]]:
        """The plan variables ``body`` may bind, and those it may change in place (through
        a subscript, a method, or a plan function it calls)."""
        names: set[str] = set()
        roots: set[str] = set()
        for statement in body:
            for node in walk(statement):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                    names.add(node.id)
                elif isinstance(node, ast.FunctionDef):
                    names.add(node.name)
                elif isinstance(node, ast.Subscript) and isinstance(node.ctx,
                                                                    ast.Store | ast.Del):
                    root = _root(node)
                    if root:
                        roots.add(root)
                elif isinstance(node, ast.Call):
                    func = node.func
                    if isinstance(func, ast.Attribute) and func.attr in IN_PLACE_METHODS:
                        root = _root(func.value)
                        if root:
                            roots.add(root)
                    elif isinstance(func, ast.Name) and func.id in self.plan_names:
                        roots.update(child.id for arg in node.args for child in walk(arg)
                                     if isinstance(child, ast.Name) and _plan_name(child.id))
                        names.update(self.sharing.declared_by.get(func.id, ()))
                        roots.update(self.sharing.changes_of.get(func.id, ()))
        return names, roots

    # -- statements -------------------------------------------------------------------
    def block(self, body: list[ast.stmt], env: Environment, frame: _Frame) -> Environment | None:
        """``env`` after ``body``; ``None`` when no path falls through its end."""
        current: Environment | None = env
        for statement in body:
            if current is None:
                return None
            if not self.active:
                self.module = current
            current = self.statement(statement, current, frame)
        return current

    def statement(self, node: ast.stmt, env: Environment, frame: _Frame) -> Environment | None:
        self._step()
        if isinstance(node, ast.Expr):
            self.expr(node.value, env)
        elif isinstance(node, ast.Assign):
            value = self.expr(node.value, env)
            for target in node.targets:
                self.assign(target, value, env)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.assign(node.target, self.expr(node.value, env), env)
        elif isinstance(node, ast.AugAssign):
            self.augmented(node, env)
        elif isinstance(node, ast.If):
            condition = self.expr(node.test, env).whole
            saved = env.get(CONTEXT)
            branches = [dict(env), dict(env)]
            for branch in branches:
                self.raise_context(branch, condition)
            after = _joined([self.block(node.body, branches[0], frame),
                             self.block(node.orelse, branches[1], frame)])
            if after is not None and self.strict:
                self.joined([*node.body, *node.orelse], after, self.context(after))
                if not _leaves([*node.body, *node.orelse]):
                    # what runs after the ``if`` no longer depends on the condition,
                    # unless a branch may leave the block
                    if saved is None:
                        after.pop(CONTEXT, None)
                    else:
                        after[CONTEXT] = saved
            return after
        elif isinstance(node, ast.For | ast.While):
            return self.loop(node, env, frame)
        elif isinstance(node, ast.FunctionDef):
            closure = () if not self.active else tuple(env.items())
            env[node.name] = FlowValue(function=FunctionValue(node, not self.active, closure))
        elif isinstance(node, ast.Return):
            returned = self.expr(node.value, env) if node.value else scalar(None)
            frame.returns.append(under(returned, self.context(env)))
            return None
        elif isinstance(node, ast.Raise):
            for part in (node.exc, node.cause):
                if part is not None:
                    self.expr(part, env)
            return None
        elif isinstance(node, ast.Break | ast.Continue):
            targets = frame.breaks if isinstance(node, ast.Break) else frame.continues
            if targets:
                targets[-1].append(dict(env))
            return None
        elif isinstance(node, ast.Assert):
            self.expr(node.test, env)
            if node.msg is not None:
                self.expr(node.msg, env)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                self.delete(target, env)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                env[(alias.asname or alias.name).partition(".")[0]] = UNKNOWN
        return env

    def loop(self, node: ast.For | ast.While, env: Environment,
             frame: _Frame) -> Environment | None:
        """A loop runs its body any number of times: its entry joins every pass's end."""
        iterated = self.expr(node.iter, env).iterated() if isinstance(node, ast.For) else UNKNOWN
        if isinstance(node, ast.For):  # the target's value, bound under the outer conditions
            iterated = under(iterated, self.context(env))
        entry = dict(env)
        breaks: list[Environment] = []
        continues: list[Environment] = []
        for attempt in range(_LOOP_PASSES + 1):
            breaks, continues = [], []
            frame.breaks.append(breaks)
            frame.continues.append(continues)
            body_env = dict(entry)
            if isinstance(node, ast.For):  # how many turns ran is the iterable's data
                self.raise_context(body_env, iterated.whole)
                self.assign(node.target, iterated, body_env)
            else:
                self.raise_context(body_env, self.expr(node.test, body_env).whole)
            end = self.block(node.body, body_env, frame)
            frame.breaks.pop()
            frame.continues.pop()
            next_entry = join_environments([entry, *continues, *([end] if end else [])])
            if next_entry == entry:
                break
            if attempt == _LOOP_PASSES:  # still changing: what keeps changing is unknown
                next_entry = {name: UNKNOWN if entry.get(name) != value else value
                              for name, value in next_entry.items()}
            entry = next_entry
        after_else = self.block(node.orelse, dict(entry), frame)
        after = _joined([after_else, *breaks])
        if after is not None and self.strict:
            if isinstance(node, ast.For):  # how many turns ran decides what follows
                self.raise_context(after, iterated.whole)
                self.joined(node.body, after, self.context(after))
            else:  # the last test, false, decided where the loop stopped
                test = self.expr(node.test, after).whole
                self.joined(node.body, after, union(self.context(after), test))
        return after

    def assign(self, target: ast.expr, value: FlowValue, env: Environment) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = UNKNOWN if target.id in self.opaque \
                else under(value, self.context(env))
        elif isinstance(target, ast.Tuple | ast.List):
            starred = any(isinstance(item, ast.Starred) for item in target.elts)
            known = value.items if value.items is not None and not starred \
                and len(value.items) == len(target.elts) else None
            for index, item in enumerate(target.elts):
                if isinstance(item, ast.Starred):
                    self.assign(item.value, replace(UNKNOWN, part=value.iterated().whole), env)
                else:
                    self.assign(item, known[index] if known is not None else value.iterated(),
                                env)
        elif isinstance(target, ast.Subscript):
            key = self.expr(target.slice, env)
            self.changed_in_place(target, [key, value], env)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, value, env)

    def augmented(self, node: ast.AugAssign, env: Environment) -> None:
        value = self.expr(node.value, env)
        target = node.target
        if isinstance(target, ast.Name):
            old = env.get(target.id, UNKNOWN)
            self.assign(target, self.binary(old, value), env)
        elif isinstance(target, ast.Subscript):
            self.changed_in_place(target, [self.expr(target.slice, env), value], env)

    def delete(self, target: ast.expr, env: Environment) -> None:
        if isinstance(target, ast.Name):
            env.pop(target.id, None)
        elif isinstance(target, ast.Subscript):
            self.changed_in_place(target, [self.expr(target.slice, env)], env)
        elif isinstance(target, ast.Tuple | ast.List):
            for item in target.elts:
                self.delete(item, env)

    # -- expressions ------------------------------------------------------------------
    def expr(self, node: ast.expr | None, env: Environment) -> FlowValue:
        if node is None:
            return UNKNOWN
        self._step()
        if isinstance(node, ast.Constant):
            return self.literal
        if isinstance(node, ast.Name):
            value = env.get(node.id, UNKNOWN)
            if value.function is not None or value.chain:
                return value
            if node.id in self.sharing.changed_late:  # changed later by a lambda or
                return changed(value, env.get(SEEN, UNKNOWN))  # generator: all seen so far
            if node.id in self.sharing.group_of and value.fields is None:
                return changed(value)
            return value
        if isinstance(node, ast.Call):
            return self.call(node, env)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, env)
        if isinstance(node, ast.JoinedStr):
            return scalar(union(*(self.expr(value, env).whole for value in node.values)))
        if isinstance(node, ast.FormattedValue):
            return scalar(union(self.expr(node.value, env).whole,
                                self.expr(node.format_spec, env).whole))
        if isinstance(node, ast.BinOp):
            return self.binary(self.expr(node.left, env), self.expr(node.right, env))
        if isinstance(node, ast.UnaryOp):
            return scalar(self.expr(node.operand, env).whole)
        if isinstance(node, ast.Compare):
            values = [self.expr(node.left, env)] + [self.expr(item, env)
                                                    for item in node.comparators]
            return scalar(union(*(value.whole for value in values)))
        if isinstance(node, ast.BoolOp):
            return join_all(self.expr(value, env) for value in node.values)
        if isinstance(node, ast.IfExp):  # strict mode: the test chose, its data is the value's
            test = self.expr(node.test, env).whole
            test = test if self.strict else None
            return under(join(self.expr(node.body, env), self.expr(node.orelse, env)), test)
        if isinstance(node, ast.NamedExpr):
            value = self.expr(node.value, env)
            self.assign(node.target, value, env)
            return value
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return self.display(node.elts, env)
        if isinstance(node, ast.Dict):
            return self.dict_display(node, env)
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            return self.comprehension(node, env)
        if isinstance(node, ast.Slice):
            return scalar(union(*(self.expr(part, env).whole
                                  for part in (node.lower, node.upper, node.step))))
        if isinstance(node, ast.Starred):
            return self.expr(node.value, env)
        return UNKNOWN  # lambdas, method objects: opaque values

    def binary(self, left: FlowValue, right: FlowValue) -> FlowValue:
        whole = union(left.whole, right.whole)
        if left.scalar or right.scalar:
            return scalar(whole)
        return FlowValue(whole, join(left.iterated(), right.iterated()).whole)

    def display(self, elements: list[ast.expr], env: Environment) -> FlowValue:
        values: list[FlowValue] = []
        spread = False
        for element in elements:
            value = self.expr(element, env)
            if isinstance(element, ast.Starred):
                spread = True
                value = value.iterated()
            values.append(value)
        result = container(values, items=not spread)
        return replace(result, whole=None) if spread and result.whole is not None and \
            all(isinstance(e, ast.Starred) for e in elements) else result

    def dict_display(self, node: ast.Dict, env: Environment) -> FlowValue:
        entries: list[FlowValue] = []
        keys: list[tuple[str, FlowValue]] | None = []
        for key, value_node in zip(node.keys, node.values, strict=True):
            value = self.expr(value_node, env)
            if key is None:  # **other: its entries, which may be none
                entries.append(replace(value, whole=None) if not value.scalar else value)
                keys = None
                continue
            key_value = self.expr(key, env)
            entries += [key_value, value]
            if keys is not None and isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.append((key.value, value))
            else:
                keys = None
        result = container(entries, items=False)
        return replace(result, keys=tuple(keys) if keys is not None else None)

    def comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
                      env: Environment) -> FlowValue:
        inner = dict(env)
        conditions: Sources = None
        for generator in node.generators:
            self.assign(generator.target, self.expr(generator.iter, inner).iterated(), inner)
            for condition in generator.ifs:
                conditions = union(conditions, self.expr(condition, inner).whole)
        if isinstance(node, ast.DictComp):
            key, value = self.expr(node.key, inner), self.expr(node.value, inner)
            whole = union(key.whole, value.whole)
            return under(FlowValue(whole, join(key, value).whole
                                   if key.content and value.content else None), conditions)
        element = self.expr(node.elt, inner)
        if not (_filters(node) and element.fields is not None and not self.strict):
            # what the filter kept is its data (records keep their trusted fields but in
            # strict mode, as at run time)
            element = under(element, conditions)
        return FlowValue(element.whole, join(element, element.iterated()).whole,
                         element=element)

    def subscript(self, node: ast.Subscript, env: Environment) -> FlowValue:
        value = self.expr(node.value, env)
        index = self.expr(node.slice, env)
        if isinstance(node.slice, ast.Constant):
            known = value.item(node.slice.value)
            if known is not None:
                return known
        if value.scalar:
            return scalar(union(value.whole, index.whole))
        if isinstance(node.slice, ast.Slice):
            return FlowValue(union(value.content, index.whole), value.content)
        element = value.iterated() if value.items is None and value.keys is None \
            else FlowValue(value.content, value.content)
        return replace(element, whole=union(element.whole, index.whole))

    # -- calls ------------------------------------------------------------------------
    def call(self, node: ast.Call, env: Environment) -> FlowValue:
        func = node.func
        if isinstance(func, ast.Attribute):
            return self.method(node, func, env)
        callee = env.get(func.id) if isinstance(func, ast.Name) else self.expr(func, env)
        arguments: list[_Argument] = [(None, self.expr(arg, env), arg) for arg in node.args]
        arguments += [(keyword.arg, self.expr(keyword.value, env), keyword.value)
                      for keyword in node.keywords]
        if callee is not None and callee.function is not None:
            result = self.plan_function(callee.function, node, arguments, env)
            for name in self.opaque & env.keys():  # it may have set them: unknown
                env[name] = UNKNOWN
            return result
        if callee is not None and callee.chain:  # what built the chain chose its output
            return self.chain_result(arguments, callee.whole)
        if not isinstance(func, ast.Name) or func.id in self.plan_names:
            return UNKNOWN
        name = func.id
        if name == "__construct_chain":
            built = union(*(value.whole for _, value, _ in arguments))
            return FlowValue(whole=built, chain=True)
        spec = self.specs.get(name)
        if spec is not None:
            result = self.registered(spec, node, arguments, env)
            if result.whole is not None:  # what the run has seen, for certain, from here on
                env[SEEN] = scalar(union(env.get(SEEN, UNKNOWN).whole, result.whole))
            return result
        if name == "parallel" and not any(isinstance(arg, ast.Starred) for arg in node.args):
            return container([value for _, value, _ in arguments])
        for _, value, arg in arguments:  # a plan function a builtin calls: its parameters
            if value.function is not None and isinstance(arg, ast.Name):  # read all seen
                for root in sorted(self.sharing.changes_of.get(arg.id, ())):
                    self.changed_in_place(ast.Name(id=root), [env.get(SEEN, UNKNOWN)], env)
        return builtin_result(name, [value for _, value, _ in arguments])

    def method(self, node: ast.Call, func: ast.Attribute, env: Environment) -> FlowValue:
        receiver = self.expr(func.value, env)
        values = [self.expr(arg, env) for arg in node.args]
        values += [self.expr(keyword.value, env) for keyword in node.keywords]
        result = builtin_result(func.attr, values, receiver)
        if not receiver.scalar and func.attr in IN_PLACE_METHODS:
            self.changed_in_place(func.value, [receiver, *values], env)
        return result

    def changed_in_place(self, target: ast.expr, put: list[FlowValue],
                         env: Environment) -> None:
        """``target`` (a variable, an element of one, what a plan function returns) was
        changed in place with ``put``: the variable and every variable the run links with
        it carry the union from then on."""
        root = _root(target)
        if root is None:
            return
        put = [*put, scalar(self.context(env))]
        group = self.sharing.group_of.get(root)
        names = self.shared[group] | {root} if group is not None else {root}
        for name in names:
            value = env.get(name)
            if value is None or name in self.opaque or value.function is not None \
                    or value.chain:
                continue
            env[name] = changed(value, *put)

    def registered(self, spec: CallableSpec, node: ast.Call, arguments: list[_Argument],
                   env: Environment) -> FlowValue:
        if spec.kind == "chain":
            return self.chain_result(arguments)
        if spec.trusted_args and spec.side_effects:
            self.guarded(spec, node, arguments, env)
        if spec.trusted_output:
            # arguments steer what comes back (a lookup keyed by untrusted data): as at
            # run time, the result carries them
            steered = union(*(value.whole for _, value, _ in arguments))
            return UNKNOWN if steered is None else FlowValue(steered, steered)
        if spec.trusted_fields:
            # arguments steer what comes back: the trusted fields carry them too
            steered = union(*(value.whole for _, value, _ in arguments))
            if steered is not None:
                return FlowValue(union(frozenset({f"{spec.name}()"}), steered), steered)
            return records(f"{spec.name}()", spec.trusted_fields)
        return untrusted(f"{spec.name}()")

    def chain_result(self, arguments: list[_Argument], built: Sources = None
                     ) -> FlowValue:
        """A chain is as trustworthy as what it reads: its whole input, and for a chain
        the plan built, what it was built from."""
        sources = union(built, *(value.whole for _, value, _ in arguments))
        return FlowValue(sources, sources)

    def guarded(self, spec: CallableSpec, node: ast.Call,
                arguments: list[_Argument], env: Environment) -> None:
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            arguments = [item for item in arguments if item[0] is not None]
        for index, (name, value, where) in enumerate(arguments):
            if name is None and index < len(spec.positional):
                name = spec.positional[index]
            value = under(value, self.context(env))
            if name in spec.trusted_args and value.whole is not None:
                self.report(spec.name, name, value.whole, where)

    def report(self, callee: str, argument: str, sources: frozenset[str],
               where: ast.expr) -> None:
        line, col = where.lineno, where.col_offset
        lines = self.plan.lines
        if 0 < line <= len(lines):
            col = len(lines[line - 1].encode()[:col].decode(errors="ignore"))
        message = (f"{callee}({argument}=...) gets data from {describe_sources(sources)} "
                   f"(untrusted); policy: {argument} must come from the user or a trusted "
                   "tool")
        self.problems.setdefault((line, col + 1, argument),
                                 Problem(line, col + 1, message, kind="CheckError"))

    def plan_function(self, function: FunctionValue, node: ast.Call,
                      arguments: list[_Argument], caller: Environment) -> FlowValue:
        """A plan function's result at this call: its body followed with these arguments."""
        definition = function.node
        if definition in self.active or len(self.active) >= MAX_FLOW_DEPTH:
            return UNKNOWN
        closure = dict(function.closure)
        env = {**closure, **self.module} if function.top_level else {**self.module, **closure}
        env.update(self.parameters(definition.args, node, arguments))
        env.pop(CONTEXT, None)
        # strict mode: its body runs under the caller's conditions and its arguments
        self.raise_context(env, union(self.context(caller),
                                      *(value.whole for _, value, _ in arguments)))
        frame = _Frame()
        self.active.append(definition)
        try:
            end = self.block(definition.body, env, frame)
        finally:
            self.active.pop()
        returns = frame.returns + ([scalar(None)] if end is not None else [])
        return join_all(returns) if returns else UNKNOWN

    def parameters(self, spec: ast.arguments, node: ast.Call,
                   arguments: list[_Argument]) -> Environment:
        """The parameters' values at a call: known where an argument clearly binds them."""
        env: Environment = {}
        positional = [*spec.posonlyargs, *spec.args]
        every = [*positional, *spec.kwonlyargs]
        for item in every + [a for a in (spec.vararg, spec.kwarg) if a is not None]:
            env[item.arg] = UNKNOWN
        if any(isinstance(arg, ast.Starred) for arg in node.args) or \
                any(keyword.arg is None for keyword in node.keywords):
            return env
        for index, (name, value, _) in enumerate(arguments):
            if name is None and index < len(positional):
                env[positional[index].arg] = value
            elif name is not None and name in {item.arg for item in every}:
                env[name] = value
        return env


def _sharing(source: str, provided: frozenset[str]) -> _Analysis:
    """The label rewrite's analysis of ``source``: which variables share a container."""
    from dcbrain.tfplan.rewrite import plan_tree  # the rewrite imports the checker

    main = plan_tree(source, provided).body[0]
    assert isinstance(main, ast.FunctionDef)
    return _Analysis(main, frozenset())


@lru_cache(maxsize=1)
def _no_sharing() -> _Analysis:
    """The analysis of a plan that changes no container in place (that of an empty one:
    no variables share one); made once, only read."""
    return _sharing("", frozenset())


def _joined(ends: list[Environment | None]) -> Environment | None:
    reached = [end for end in ends if end is not None]
    return join_environments(reached) if reached else None


def describe_sources(sources: Sources) -> str:
    """``read_file() and fetch()``: the calls of a certain flow, for messages."""
    return " and ".join(sorted(sources)) if sources else "nothing untrusted"
