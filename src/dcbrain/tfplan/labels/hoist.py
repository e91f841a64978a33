"""Loop-invariant label updates, run once before their loop instead of every turn.

The label rewrite grows a label with ``__tfl_x = __tfl_x | L`` (a self-update). Union is
idempotent and monotone, so when ``L`` reads only labels that no turn of the loop
changes, the update can run once before the loop. Every label, at every point in and
after the loop, is then a superset of what it would have been without hoisting (a loop
that runs zero times still adds ``L``), never a subset.

An update is hoisted from a ``for`` or ``while`` loop when it is a statement of the
loop's own body (not of an ``if`` or inner loop in it: their updates may never run, and
hoisting them would cost precision, not soundness) and:

* ``L`` is a union (``|``) of names of labels, integer constants and ``__tfh_flat`` of
  such a union: no call that could read anything else;
* every store of its target in the loop is a self-update (so the target only grows in
  the loop: what the hoisted update added stays);
* every name ``L`` reads is invariant in the loop: each of its stores in the loop is a
  hoisted update;
* neither the target nor what ``L`` reads is declared ``global`` or ``nonlocal`` by a
  plan function: a call in the loop could change those behind the loop's back.

Dropping an update makes its target change in the loop, so the conditions are checked
until nothing changes. Before the loop the updates run in an order that reaches what
any number of turns would: an update after those of the labels it reads, and updates
that read each other repeated (see :func:`_in_order`). Inner loops are done first: what
they hoisted is in the outer loop's body and may move out of it as well. A plan
function's body is its own scope: its statements never move out of it.
"""

from __future__ import annotations

import ast

from dcbrain.tfplan.labels.analysis import HELPER
from dcbrain.tfplan.parser import walk

_SHADOW = "__tfl_"
_FLAT = f"{HELPER}flat"


def hoist_label_updates(tree: ast.Module) -> ast.Module:
    """Move the loop-invariant label updates of a labelled plan before their loops."""
    main = tree.body[0]
    shared = {name for node in _statements(tree.body)
              if isinstance(node, ast.FunctionDef) and node is not main
              for statement in _statements(node.body)
              if isinstance(statement, ast.Global | ast.Nonlocal)
              for name in statement.names if _is_label(name)}
    tree.body = _hoisted_in(tree.body, shared)
    return tree


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Every statement in ``body``, at any depth (functions and ``global`` declarations
    are statements: no expression holds one)."""
    found: list[ast.stmt] = []
    todo = list(body)
    while todo:
        statement = todo.pop()
        found.append(statement)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                todo.extend(inner)
        for handler in getattr(statement, "handlers", ()):
            todo.extend(handler.body)
    return found


def _is_label(name: str) -> bool:
    return name.startswith(_SHADOW) or name.startswith(HELPER)


def _hoisted_in(body: list[ast.stmt], shared: set[str]) -> list[ast.stmt]:
    """``body`` with the invariant updates of every loop in it (at any depth) hoisted."""
    result: list[ast.stmt] = []
    for statement in body:
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                setattr(statement, field, _hoisted_in(inner, shared))
        for handler in getattr(statement, "handlers", []):
            handler.body = _hoisted_in(handler.body, shared)
        if isinstance(statement, ast.For | ast.While):
            result.extend(_hoist(statement, shared))
        result.append(statement)
    return result


def _hoist(loop: ast.For | ast.While, shared: set[str]) -> list[ast.stmt]:
    """Take the invariant updates out of ``loop``'s body; returns what runs before it."""
    growing, stores = _stores(loop)
    updates: dict[int, tuple[str, set[str]]] = {}
    for index, statement in enumerate(loop.body):
        update = _pure_update(statement)
        if update is not None and update[0] in growing and update[0] not in shared \
                and all(_is_label(name) and name not in shared for name in update[1]):
            updates[index] = update
    changed = True
    while changed:  # drop what reads a label changed in the loop, until nothing changes
        changed = False
        hoisted = _targets(updates)
        for index, (_, reads) in list(updates.items()):
            if not all(stores.get(name, 0) == len(hoisted.get(name, ())) for name in reads):
                del updates[index]
                changed = True
    if not updates:
        return []
    before = _in_order(loop.body, updates)
    loop.body = [statement for index, statement in enumerate(loop.body)
                 if index not in updates] or [ast.copy_location(ast.Pass(), loop)]
    return before


def _targets(updates: dict[int, tuple[str, set[str]]]) -> dict[str, list[int]]:
    """Where each target's updates are, in body order."""
    found: dict[str, list[int]] = {}
    for index in sorted(updates):
        found.setdefault(updates[index][0], []).append(index)
    return found


def _in_order(body: list[ast.stmt], updates: dict[int, tuple[str, set[str]]]
              ) -> list[ast.stmt]:
    """The updates, run so that each ends as it would after any number of turns.

    An update runs after those of the labels it reads (the next turn would see them).
    Targets that read each other (a cycle of ``k``) run ``k`` times over: what enters
    one of them crosses at most ``k`` updates to reach every other.
    """
    targets = _targets(updates)
    reads = {target: {name for index in indices for name in updates[index][1]
                      if name in targets and name != target}
             for target, indices in targets.items()}
    reach = {target: set(names) for target, names in reads.items()}
    changed = True
    while changed:  # transitive closure: loops have few updates
        changed = False
        for names in reach.values():
            more = set().union(*(reach[name] for name in names)) - names
            if more:
                names |= more
                changed = True
    result: list[ast.stmt] = []
    done: set[str] = set()
    while len(done) < len(targets):
        cycle = next(cycle for target in targets if target not in done
                     for cycle in [{target} | {name for name in reach[target]
                                               if target in reach[name]}]
                     if all(name in done or name in cycle
                            for member in cycle for name in reads[member]))
        statements = [body[index] for index in sorted(
            index for member in cycle for index in targets[member])]
        result.extend(statements)
        result.extend(_again(statement) for _ in range(len(cycle) - 1)
                      for statement in statements)
        done |= cycle
    return result


def _again(statement: ast.stmt) -> ast.stmt:
    """One more run of an update (its value's nodes shared: the compiler only reads them)."""
    assert isinstance(statement, ast.Assign)
    return ast.copy_location(ast.Assign(targets=statement.targets, value=statement.value),
                             statement)


def _stores(loop: ast.For | ast.While) -> tuple[set[str], dict[str, int]]:
    """The label names whose every store in one turn of ``loop`` is a self-update, and
    how many stores each label name has there (nested scopes included: a function
    defined in the loop may run in it)."""
    parts: list[ast.AST] = [loop.target if isinstance(loop, ast.For) else loop.test,
                            *loop.body]
    self_stores: set[int] = set()
    found: list[ast.AST] = []
    for part in parts:
        found.extend(walk(part))
    for node in found:
        if isinstance(node, ast.Assign) and _self_target(node) is not None:
            self_stores.add(id(node.targets[0]))
    counts: dict[str, int] = {}
    others: set[str] = set()
    for node in found:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            name = node.id
        elif isinstance(node, ast.arg):
            name = node.arg
        else:
            continue
        counts[name] = counts.get(name, 0) + 1
        if id(node) not in self_stores:
            others.add(name)
    return {name for name in counts if name not in others}, counts


def _self_target(statement: ast.Assign) -> str | None:
    """``x`` when ``statement`` is ``x = x | ...`` (one target, ``x`` a term of the union)."""
    if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
        return None
    target = statement.targets[0].id
    terms = _terms(statement.value)
    if any(isinstance(term, ast.Name) and term.id == target for term in terms):
        return target
    return None


def _terms(node: ast.expr) -> list[ast.expr]:
    """The operands of a chain of ``|`` (without recursion: a union may have many)."""
    terms: list[ast.expr] = []
    stack = [node]
    while stack:
        part = stack.pop()
        if isinstance(part, ast.BinOp) and isinstance(part.op, ast.BitOr):
            stack.extend((part.right, part.left))
        else:
            terms.append(part)
    return terms


def _pure_update(statement: ast.stmt) -> tuple[str, set[str]] | None:
    """``(x, names L reads)`` when ``statement`` is ``x = x | L`` and ``L`` calls nothing
    but ``__tfh_flat``."""
    if not isinstance(statement, ast.Assign):
        return None
    target = _self_target(statement)
    if target is None or not _is_label(target):
        return None
    reads: set[str] = set()
    stack: list[ast.expr] = [statement.value]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            stack.extend((node.left, node.right))
        elif isinstance(node, ast.Name):
            reads.add(node.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == _FLAT and len(node.args) == 1 and not node.keywords \
                and not isinstance(node.args[0], ast.Starred):
            stack.append(node.args[0])
        elif not (isinstance(node, ast.Constant) and type(node.value) is int):
            return None
    reads.discard(target)
    return target, reads
