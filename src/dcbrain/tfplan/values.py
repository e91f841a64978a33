"""Plan values: plain data in, plain data out, with sizes measured without recursion."""

from __future__ import annotations

from typing import Any

#: Types of plain data a plan may hold and exchange with the host.
PLAIN_SCALARS = (type(None), bool, int, float, str)
PLAIN_CONTAINERS = (list, tuple, dict, set, frozenset)


class NotPlainData(TypeError):
    """A value handed to a plan is not plain data."""


#: Nesting depth of data crossing the plan/host boundary.
MAX_DATA_DEPTH = 200


def to_plan_value(value: Any, *, max_items: int, where: str) -> Any:
    """A deep copy of ``value`` if it is plain data of at most ``max_items`` elements and
    characters; raises :class:`NotPlainData` naming the first offending type.

    Copying keeps the two sides apart: a plan mutating a tool's result cannot change the
    tool's own data, and a tool keeping an argument cannot see the plan's later changes.
    """
    budget = [max_items]

    def copy(item: Any, depth: int) -> Any:
        kind = type(item)
        if kind is str:
            budget[0] -= len(item)
        else:
            budget[0] -= 1
        if budget[0] < 0:
            raise OverflowError(f"{where}: value larger than {max_items} elements/characters")
        if kind in (str, int, float, bool, type(None)):
            return item
        if depth > MAX_DATA_DEPTH:
            raise NotPlainData(f"{where}: data nested deeper than {MAX_DATA_DEPTH} levels")
        if kind is list:
            return [copy(child, depth + 1) for child in item]
        if kind is dict:
            result = {}
            for key, child in item.items():
                if type(key) not in (str, int, float, bool, type(None), tuple):
                    raise NotPlainData(f"{where}: dict key of type {type(key).__name__}")
                result[copy(key, depth + 1)] = copy(child, depth + 1)
            return result
        if kind is tuple:
            return tuple(copy(child, depth + 1) for child in item)
        if kind is set or kind is frozenset:
            return kind(copy(child, depth + 1) for child in item)
        raise NotPlainData(f"{where}: {kind.__name__} is not plain data "
                           "(use None, bool, int, float, str, list, tuple, dict, set)")

    return copy(value, 0)


def rendered_size_exceeds(value: Any, limit: int) -> bool:
    """Whether ``str(value)``/``repr(value)`` could exceed ``limit`` characters.

    An upper-bound estimate that visits at most about ``limit`` nodes. Aliased structures
    count every time they appear, as ``repr`` prints them (``a = [a, a]`` repeated 30
    times would render 2**30 items); a container inside itself renders as ``[...]``.
    """
    kind = type(value)
    if kind is str:
        return len(value) * 4 + 2 > limit  # worst case of repr() escapes
    if kind in (float, bool, type(None)):
        return False
    if kind is int:
        return bool(value.bit_length() * 3 // 10 + 2 > limit)
    total = 0
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, leaving = stack.pop()
        if leaving:
            on_path.discard(id(item))
            continue
        kind = type(item)
        if kind is str:
            total += len(item) * 4 + 4
        elif kind is int:
            total += item.bit_length() * 3 // 10 + 4
        elif kind is float:
            total += 26
        elif kind in (dict, list, tuple, set, frozenset):
            if id(item) in on_path:
                total += 5
                continue
            on_path.add(id(item))
            stack.append((item, True))
            if kind is dict:
                total += 2 + 4 * len(item)
                stack.extend((key, False) for key in item)
                stack.extend((val, False) for val in item.values())
            else:
                total += 2 + 2 * len(item)
                stack.extend((child, False) for child in item)
        else:
            total += 64
        if total > limit:
            return True
    return False


_CONTAINERS = frozenset({list, tuple, dict, set, frozenset})


def comparison_problem(value: Any, limit: int) -> str | None:
    """Why comparing or hashing ``value`` could not finish safely, or ``None``.

    Python compares and hashes containers element by element in one uninterruptible C
    call, recursively. ``a = (a, a)`` repeated 40 times holds 41 objects but 2**40
    leaves, and a tuple nested 300,000 deep overflows the C stack when hashed. The
    expanded size is computed once per distinct object (dynamic programming over
    ``id``), so this check costs what the structure holds, not what it expands to.
    """
    if type(value) not in _CONTAINERS:
        return None
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, leaving = stack.pop()
        key = id(node)
        children = [*node.keys(), *node.values()] if type(node) is dict else node
        if leaving:
            on_path.discard(key)
            total = 1
            for child in children:
                total += sizes.get(id(child), 1) if type(child) in _CONTAINERS else 1
                if total > limit:
                    return f"it repeats its own parts more than {limit} times over"
            sizes[key] = total
            continue
        if key in sizes or key in on_path:
            continue
        on_path.add(key)
        if len(on_path) > MAX_DATA_DEPTH:
            return f"it is nested deeper than {MAX_DATA_DEPTH} levels"
        stack.append((node, True))
        stack.extend(
            (child, False) for child in children
            if type(child) in _CONTAINERS and id(child) not in sizes
        )
    return None


def plan_type_name(value: Any) -> str:
    return type(value).__name__
