"""Plan values: plain data in, plain data out, with sizes measured without recursion."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from sys import getsizeof
from typing import Any

from dcbrain.tfplan.errors import NotPlainData as NotPlainData
from dcbrain.tfplan.host_budget import HostBudget
from dcbrain.values.scalars import (
    SCALAR_TYPES,
    ScalarError,
    decimal_digits,
    plan_scalar,
    rendered_scalar_size,
)

#: Nesting depth of data crossing the plan/host boundary.
MAX_DATA_DEPTH = 200


def to_plan_value(value: Any, *, max_items: int, where: str) -> Any:
    """A deep copy of ``value`` if it is plain data of at most ``max_items`` elements and
    characters; raises :class:`NotPlainData` naming the first offending type.

    Copying keeps the two sides apart: a plan mutating a tool's result cannot change the
    tool's own data, and a tool keeping an argument cannot see the plan's later changes.
    """
    return sized_plan_value(value, max_items=max_items, where=where)[0]


def sized_plan_value(value: Any, *, max_items: int, where: str,
                     budget: HostBudget | None = None) -> tuple[Any, int]:
    """:func:`to_plan_value`, and an estimate of the bytes its copy takes: every string
    by ``sys.getsizeof`` (its characters' width included), every other part
    :data:`PART_BYTES`, every container :data:`CONTAINER_BYTES` more; a part that appears
    twice counts twice (the copy holds it twice).

    With ``budget``, the copy stops as soon as its estimate passes what the budget has
    left (:class:`~dcbrain.tfplan.errors.HostMemoryExceeded`): a value of a million
    references to one list is refused long before a million lists are built. Nothing is
    charged here; the caller charges the size returned.
    """
    kind = type(value)
    if kind in _ATOMS or (kind in _FLAT and not value):  # the common short values, as below
        size = PART_BYTES if kind in _ATOMS else PART_BYTES + CONTAINER_BYTES
        if max_items < 1:
            raise OverflowError(f"{where}: value larger than {max_items} elements/characters")
        if budget is not None and size > budget.available():
            raise budget.refusal(where)
        return (value if kind in _ATOMS else kind()), size
    items_left = max_items
    used = 0
    cap = budget.available() if budget is not None else -1

    def spend(units: int, size: int) -> None:
        nonlocal items_left, used
        items_left -= units
        used += size
        if items_left < 0:
            raise OverflowError(f"{where}: value larger than {max_items} elements/characters")
        if used > cap >= 0:
            assert budget is not None
            raise budget.refusal(where)

    def copy(item: Any, depth: int) -> Any:
        kind = type(item)
        if kind is str:
            spend(len(item), getsizeof(item))
            return item
        if kind in (int, float, bool, type(None)):
            spend(1, PART_BYTES)
            return item
        if kind in CONTAINERS:
            spend(1, PART_BYTES + CONTAINER_BYTES)
            if depth > MAX_DATA_DEPTH:
                raise NotPlainData(f"{where}: data nested deeper than {MAX_DATA_DEPTH} levels")
        if kind is list:
            return [copy(child, depth + 1) for child in item]
        if kind is dict:
            result = {}
            for key, child in item.items():
                if type(key) not in _KEY_TYPES:
                    raise NotPlainData(f"{where}: dict key of type {type(key).__name__}")
                result[copy(key, depth + 1)] = copy(child, depth + 1)
            return result
        if kind is tuple:
            return tuple(copy(child, depth + 1) for child in item)
        if kind is set or kind is frozenset:
            return kind(copy(child, depth + 1) for child in item)
        spend(1, PART_BYTES)
        try:
            scalar = plan_scalar(item, where)
        except ScalarError as exc:
            raise OverflowError(str(exc)) from None
        if scalar is not None:
            if scalar.__class__ is Decimal:
                digits = decimal_digits(scalar)  # its digits are its size, as a str's
                spend(digits, digits)
            return scalar
        raise NotPlainData(f"{where}: {kind.__name__} is not plain data (use None, bool, "
                           "int, float, str, list, tuple, dict, set, Decimal, date, "
                           "datetime, time, timedelta)")

    try:
        copied = copy(value, 0)
    finally:
        # it calls itself through its closure: a cycle, broken here at once
        copy = None  # type: ignore[assignment]
    return copied, used


_KEY_TYPES = frozenset({str, int, float, bool, type(None), tuple, *SCALAR_TYPES})
#: Values copied as themselves at one part's cost, and containers whose empty copy is new.
_ATOMS = frozenset({int, float, bool, type(None)})
_FLAT = frozenset({list, dict, tuple})

#: Estimated bytes of a part of a value that is not a string: an int or float object
#: and its slot in the container holding it.
PART_BYTES = 40
#: Estimated bytes of a container's own header, besides its slot (an empty list: 56).
CONTAINER_BYTES = 56


#: Plan values that hold other values.
CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
#: Live views of a dict: they hold (and compare, hash, render) the dict's keys and values.
VIEWS = frozenset({type({}.keys()), type({}.values()), type({}.items())})
#: Everything the size walks look inside.
WALKED = CONTAINERS | VIEWS
#: Longest error message shown to the planner; longer ones are cut.
MAX_MESSAGE_CHARS = 10_000


def rendered_size(value: Any, limit: int) -> int:
    """An upper bound of ``len(repr(value))``, or ``limit + 1`` once it is past ``limit``.

    Aliased structures count every time they appear, as ``repr`` prints them (``a = [a, a]``
    repeated 30 times renders 2**30 items); a container inside itself renders as ``[...]``.
    """
    kind = type(value)
    if kind is str:
        return min(len(value) * 4 + 2, limit + 1)  # worst case of repr() escapes
    if kind not in WALKED:
        return min(_rendered_leaf(value), limit + 1)
    weight = _expanded_weight(value, limit, _rendered_leaf, _rendered_overhead, 5)
    return limit + 1 if weight < 0 else weight


def rendered_size_exceeds(value: Any, limit: int) -> bool:
    """Whether ``str(value)``/``repr(value)`` could exceed ``limit`` characters."""
    return rendered_size(value, limit) > limit


def comparison_problem(value: Any, limit: int) -> str | None:
    """Why comparing or hashing ``value`` could not finish safely, or ``None``.

    Python compares and hashes containers element by element in one uninterruptible C
    call, recursively. ``a = (a, a)`` repeated 40 times holds 41 objects but 2**40
    leaves, and a tuple nested 300,000 deep overflows the C stack when hashed.
    """
    if type(value) not in WALKED:
        return None
    weight = _expanded_weight(value, limit, _one, _one, 1, max_depth=MAX_DATA_DEPTH)
    if weight == _DEEP:
        return f"it is nested deeper than {MAX_DATA_DEPTH} levels"
    if weight == _LARGE:
        return f"it repeats its own parts more than {limit} times over"
    return None


def nesting_depth(value: Any, limit: int = MAX_DATA_DEPTH) -> int:
    """How deeply ``value`` nests containers, counted up to ``limit + 1``."""
    if type(value) not in WALKED:
        return 0
    if _expanded_weight(value, 1 << 62, _one, _one, 1, max_depth=limit) == _DEEP:
        return limit + 1
    memo: dict[int, int] = {}
    held: dict[int, list[Any]] = {}

    def depth(node: Any) -> int:  # recursion is bounded: the walk above checked the depth
        known = memo.get(id(node))
        if known is not None:
            return known
        memo[id(node)] = 0  # a cycle adds nothing
        deepest = max((depth(child) for child in _children(node, held)
                       if type(child) in WALKED), default=0)
        memo[id(node)] = deepest + 1
        return deepest + 1

    return depth(value)


def bounded_message(exc: BaseException, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``str(exc)``, rendered only when it cannot be huge, and cut to ``limit`` characters.

    An exception's arguments can be any plan value (``assert False, dag``, a ``KeyError``
    whose key is a huge tuple); rendering those is one uninterruptible C call.
    """
    for arg in exc.args:
        if type(arg) is not str and rendered_size_exceeds(arg, limit):
            shown = ", ".join(
                arg if type(arg) is str and len(arg) <= limit else
                f"<{type(arg).__name__} too large to show>"
                for arg in exc.args
            )
            return shown[:limit]
    text = str(exc)
    return text if len(text) <= limit else text[:limit] + "..."


_LARGE = -1
_DEEP = -2


def _children(node: Any, held: dict[int, list[Any]]) -> Any:
    kind = type(node)
    if kind is dict:
        return [*node.keys(), *node.values()]
    if kind in VIEWS:
        # an items view makes new tuples on every pass: keep one list of them alive
        listed = held.get(id(node))
        if listed is None:
            listed = held[id(node)] = list(node)
        return listed
    return node


def _expanded_weight(
    value: Any,
    limit: int,
    leaf: Callable[[Any], int],
    overhead: Callable[[Any], int],
    cycle: int,
    max_depth: int | None = None,
) -> int:
    """The weight of ``value`` expanded into a tree; ``_LARGE`` past ``limit``, ``_DEEP``
    if it is nested deeper than ``max_depth``.

    A container weighs ``overhead(container)`` plus its children; a child that contains
    its parent weighs ``cycle``. Weights are computed once per distinct object (dynamic
    programming over ``id``), so the walk costs what the structure holds, not what it
    expands to.
    """
    weights: dict[int, int] = {}
    held: dict[int, list[Any]] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, leaving = stack.pop()
        key = id(node)
        children = _children(node, held)
        if leaving:
            on_path.discard(key)
            total = overhead(node)
            for child in children:
                if type(child) in WALKED:
                    total += weights.get(id(child), cycle)
                else:
                    total += leaf(child)
                if total > limit:
                    return _LARGE
            weights[key] = total
            continue
        if key in weights or key in on_path:
            continue
        on_path.add(key)
        if max_depth is not None and len(on_path) > max_depth:
            return _DEEP
        stack.append((node, True))
        stack.extend(
            (child, False) for child in children
            if type(child) in WALKED and id(child) not in weights
        )
    return weights[id(value)]


def _one(_: Any) -> int:
    return 1


def _rendered_leaf(value: Any) -> int:
    kind = type(value)
    if kind is str:
        return len(value) * 4 + 4
    if kind is int:
        return int(value.bit_length() * 3 // 10 + 4)
    if kind is float:
        return 26
    if kind is bool or value is None:
        return 5
    if kind in SCALAR_TYPES:
        return rendered_scalar_size(value)
    return 64


def _rendered_overhead(container: Any) -> int:
    return 2 + (4 if type(container) is dict else 2) * len(container)
