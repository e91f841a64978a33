"""Plan values: plain data in, plain data out, with sizes measured without recursion."""

from __future__ import annotations

from typing import Any

#: Types of plain data a plan may hold and exchange with the host.
PLAIN_SCALARS = (type(None), bool, int, float, str)
PLAIN_CONTAINERS = (list, tuple, dict, set, frozenset)


class NotPlainData(TypeError):
    """A value handed to a plan is not plain data."""


def to_plan_value(value: Any, *, max_items: int, where: str) -> Any:
    """Return ``value`` if it is plain data of at most ``max_items`` elements and characters.

    Walks iteratively, so deep or aliased structures cannot exhaust the stack; raises
    :class:`NotPlainData` naming the first offending type.
    """
    budget = max_items
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            budget -= len(item)
        elif kind in (type(None), bool, int, float):
            budget -= 1
        elif kind is dict:
            budget -= len(item)
            for key, val in item.items():
                if type(key) not in (str, int, float, bool, type(None), tuple):
                    raise NotPlainData(f"{where}: dict key of type {type(key).__name__}")
                stack.append(key)
                stack.append(val)
        elif kind in (list, tuple, set, frozenset):
            budget -= len(item)
            stack.extend(item)
        else:
            raise NotPlainData(f"{where}: {kind.__name__} is not plain data "
                               "(use None, bool, int, float, str, list, tuple, dict, set)")
        if budget < 0:
            raise OverflowError(f"{where}: value larger than {max_items} elements/characters")
    return value


def rendered_size_exceeds(value: Any, limit: int) -> bool:
    """Whether ``str(value)``/``repr(value)`` could exceed ``limit`` characters.

    An upper-bound estimate that visits at most ``limit`` nodes: aliased structures such as
    ``a = [a, a]`` repeated 30 times would render to 2**30 items, and are caught here
    before ``repr`` allocates them.
    """
    kind = type(value)
    if kind is str:
        return len(value) * 4 + 2 > limit  # worst case of repr() escapes
    if kind in (int, float, bool, type(None)):
        return False
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            total += len(item) * 4 + 4
        elif kind is int:
            total += item.bit_length() * 3 // 10 + 4
        elif kind is float:
            total += 26
        elif kind is dict:
            total += 2 + 4 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif kind in (list, tuple, set, frozenset):
            total += 2 + 2 * len(item)
            stack.extend(item)
        else:
            total += 64
        if total > limit:
            return True
    return False


def plan_type_name(value: Any) -> str:
    return type(value).__name__
