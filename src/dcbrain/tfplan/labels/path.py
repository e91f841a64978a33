"""The way an untrusted label reached a refused argument, read back from the plan's text.

A refusal knows the argument, the call's line and the untrusted sources. The path is
the chain of assignments and calls that lead from the argument back to a call of one of
those sources: ``recipient=vendor_iban(vendor=bill['vendor']) (line 3) ← bill =
read_document() (line 1)``. It is the plan's own text (which the planner wrote), never
the data; where the text does not say (a value moved in place, a plan function's
return), the path stops at the last assignment it can name.
"""

from __future__ import annotations

import ast

from dcbrain.tfplan.parser import walk

#: Steps of a path; characters of each step's expression.
MAX_STEPS = 8
_MAX_TEXT = 80


def label_path(source: str, line: int, argument: str, sources: tuple[str, ...]) -> str | None:
    """``argument=... (line L) ← name = ... (line M) ← ...``; ``None`` when the call at
    ``line`` with keyword ``argument`` cannot be found in ``source``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    callees = {name.split(":", 1)[1].split(".", 1)[0] for name in sources if ":" in name}
    start = _argument_at(tree, line, argument)
    if start is None:
        return None
    bindings = _bindings(tree)
    steps = [f"{argument}={_text(start)} (line {line})"]
    current, at, seen = start, line, set()
    while len(steps) < MAX_STEPS and not _calls(current, callees):
        found = None
        for name in _names(current):
            if name in seen or name not in bindings:
                continue
            seen.add(name)
            found = _binding(bindings[name], at, callees)
            if found is not None:
                steps.append(f"{name} = {_text(found[1])} (line {found[0]})")
                current, at = found[1], found[0]
                break
        if found is None:
            break
    return " ← ".join(steps)


def _argument_at(tree: ast.AST, line: int, argument: str) -> ast.expr | None:
    for node in walk(tree):
        if isinstance(node, ast.Call) and node.lineno <= line <= (node.end_lineno or line):
            for keyword in node.keywords:
                if keyword.arg == argument:
                    return keyword.value
    return None


def _bindings(tree: ast.AST) -> dict[str, list[tuple[int, ast.expr]]]:
    """Every name's bindings: the line and the expression it was bound from."""
    found: dict[str, list[tuple[int, ast.expr]]] = {}

    def bind(target: ast.expr, value: ast.expr, line: int) -> None:
        for node in walk(target):
            if isinstance(node, ast.Name):
                found.setdefault(node.id, []).append((line, value))
            elif isinstance(node, ast.Subscript):  # a store into a container is its data
                root = node.value
                while isinstance(root, ast.Subscript):
                    root = root.value
                if isinstance(root, ast.Name):
                    found.setdefault(root.id, []).append((line, value))

    for node in walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, node.value, node.lineno)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign) and node.value is not None:
            bind(node.target, node.value, node.lineno)
        elif isinstance(node, ast.For | ast.comprehension):
            bind(node.target, node.iter, getattr(node, "lineno", 0) or node.iter.lineno)
        elif isinstance(node, ast.NamedExpr):
            bind(node.target, node.value, node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.args:
            found.setdefault(node.func.value.id, []).append((node.lineno, node.args[-1]))
    return found


def _binding(candidates: list[tuple[int, ast.expr]], before: int, callees: set[str]
             ) -> tuple[int, ast.expr] | None:
    """The binding the path goes on through: one that calls an untrusted source if any,
    else the last one before line ``before``."""
    earlier = [item for item in candidates if item[0] <= before] or candidates
    reading = [item for item in earlier if _calls(item[1], callees)]
    return (reading or earlier)[-1] if earlier else None


def _calls(node: ast.AST, callees: set[str]) -> bool:
    return any(isinstance(child, ast.Call) and isinstance(child.func, ast.Name)
               and child.func.id in callees for child in walk(node))


def _names(node: ast.AST) -> list[str]:
    return list(dict.fromkeys(child.id for child in walk(node)
                              if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load)))


def _text(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT - 1] + "…"
