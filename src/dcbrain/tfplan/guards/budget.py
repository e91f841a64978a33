"""The operation budget of one run, and the size checks every other guard builds on.

Everything a plan does in bulk is paid for here: loop iterations one by one, values by
their size (one operation per ``ALLOC_DIVISOR`` elements or characters), structures
compared or hashed in one C call by the size they expand to.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from dcbrain.tfplan.errors import (
    CallDepthLimitExceeded,
    OperationLimitExceeded,
    SizeLimitExceeded,
)
from dcbrain.tfplan.limits import Limits
from dcbrain.tfplan.values import VIEWS, WALKED, comparison_problem

#: One operation per this many elements/characters a plan allocates.
ALLOC_DIVISOR = 4
SIZED_RESULTS = frozenset({str, list, tuple, dict, set, frozenset})
#: Iterables that cannot grow while a loop runs over them: charged once, up front.
STABLE_ITERABLES = frozenset({tuple, str, range, frozenset, dict, set, *VIEWS})
#: Iterables a loop pays for up front: a list may grow while it is looped over, but every
#: element added to it is paid for by the operation that adds it.
UPFRONT_ITERABLES = STABLE_ITERABLES | {list}
#: Containers compared or hashed without a full walk when they hold at most this many
#: elements in all (a flat row, a short key tuple).
_SMALL_TREE = 64


class Budget:
    """Operation and size accounting of one run; every guard charges through it."""

    __slots__ = ("calls", "max_bits", "max_depth", "max_ops", "max_size", "ops")

    def __init__(self, limits: Limits) -> None:
        self.max_ops = limits.max_operations
        self.max_size = limits.max_size
        self.max_bits = limits.max_bits
        self.max_depth = limits.max_call_depth
        self.ops = 0
        #: plan function calls so far, as counted by the rewritten code itself
        self.calls: Callable[[], int] = _no_calls

    # -- operations ------------------------------------------------------------------
    def over_budget(self) -> OperationLimitExceeded:
        return OperationLimitExceeded(
            f"plan exceeded its operation budget of {self.max_ops} (loop iterations and the "
            "size of values built)"
        )

    def charge(self, amount: int) -> None:
        self.ops += amount
        if self.ops > self.max_ops:
            raise self.over_budget()

    def tick(self) -> bool:
        """One operation (a ``while`` iteration, a lambda call); always true."""
        self.ops += 1
        if self.ops > self.max_ops:
            raise self.over_budget()
        return True

    def too_deep(self, depth: int) -> None:
        """Called by a plan function's prologue once a call counter passed its limit."""
        if depth > self.max_depth:
            raise CallDepthLimitExceeded(
                f"plan functions nested deeper than {self.max_depth} calls")
        raise OperationLimitExceeded(
            f"plan made more than {self.max_ops} function calls (its operation budget)"
        )

    def count_calls(self, calls: Callable[[], int]) -> None:
        """Called once by the rewritten plan: how to read its count of function calls."""
        self.calls = calls

    def operations(self) -> int:
        return self.ops + self.calls()

    # -- sizes -----------------------------------------------------------------------
    def too_large(self, what: str, size: int) -> SizeLimitExceeded:
        return SizeLimitExceeded(f"{what} of size {size} exceeds the size limit {self.max_size}")

    def too_many_bits(self, what: str, bits: int) -> SizeLimitExceeded:
        error = SizeLimitExceeded(f"{what} of {bits} bits exceeds the limit {self.max_bits} bits")
        error.limit = "max_bits"
        return error

    def check_result(self, value: Any) -> Any:
        """Charge for a freshly built value and enforce the size limits on it."""
        kind = value.__class__
        if kind in SIZED_RESULTS:
            size = len(value)
            if size > self.max_size:
                raise self.too_large(kind.__name__, size)
            self.ops += 1 + size // ALLOC_DIVISOR
            if self.ops > self.max_ops:
                raise self.over_budget()
        elif kind is int:
            bits = value.bit_length()
            if bits > 64:
                if bits > self.max_bits:
                    raise self.too_many_bits("int", bits)
                self.charge(bits >> 5)
        return value

    def check_display(self, value: Any, weight: int) -> Any:
        """Charge for a display of ``weight`` elements (its nested small displays
        included) as it is built, one operation per element, and enforce the size limit
        on it."""
        size = len(value)
        if size > self.max_size:
            raise self.too_large(value.__class__.__name__, size)
        self.ops += 1 + weight
        if self.ops > self.max_ops:
            raise self.over_budget()
        return value

    # -- iteration -------------------------------------------------------------------
    def counted(self, iterator: Iterator[Any]) -> Iterator[Any]:
        max_ops = self.max_ops
        for item in iterator:
            self.ops += 1
            if self.ops > max_ops:
                raise self.over_budget()
            yield item

    def iterate(self, iterable: Any) -> Iterable[Any]:
        """``iterable`` for a ``for`` loop or a consumer, paid item by item or up front."""
        if iterable.__class__ in UPFRONT_ITERABLES:
            try:
                size = len(iterable)
            except OverflowError:
                size = self.max_ops + 1
            if self.ops + size <= self.max_ops:
                self.ops += size
                return iterable  # type: ignore[no-any-return]
        return self.counted(iter(iterable))

    def materialize(self, iterable: Any, allocates: bool = True) -> Any:
        """A sized container with the items of ``iterable``, paid for in operations."""
        kind = type(iterable)
        if kind in STABLE_ITERABLES or kind is list:
            try:
                size = len(iterable)
            except OverflowError:
                raise self.too_large(kind.__name__, iterable.__len__()) from None
            if allocates and size > self.max_size:
                raise self.too_large(kind.__name__, size)
            self.charge(size + (size // ALLOC_DIVISOR if allocates else 0))
            return iterable
        items = []
        limit = self.max_size
        for item in self.counted(iter(iterable)):
            items.append(item)
            if len(items) > limit:
                raise self.too_large("iterable", len(items))
        self.charge(len(items) // ALLOC_DIVISOR)
        return items

    def unpack(self, value: Any, shape: Any) -> Any:
        """``value`` ready for an assignment to a target of ``shape``, which mirrors it:
        ``None`` where an item is bound as it is, ``"[:]"`` where it is stored into a slice
        (consumed whole), a tuple of shapes for a tuple target, with ``"*"`` at its starred
        name (which collects the rest into a list)."""
        if shape is None:
            return value
        items = self.materialize(value)
        if shape == "[:]":
            return items
        nested = [(index, part) for index, part in enumerate(shape)
                  if part is not None and part != "*"]
        if not nested:
            return items
        items = list(items)
        star = shape.index("*") if "*" in shape else -1
        for index, part in nested:
            # positions after a starred name count from the end
            at = index if star < 0 or index < star else index - len(shape)
            if -len(items) <= at < len(items):
                items[at] = self.unpack(items[at], part)
        return items

    def iterate_unpacked(self, iterable: Any, shape: Any) -> Iterator[Any]:
        """``iterate`` for a loop whose target has a starred name or a slice."""
        unpack = self.unpack
        for item in self.iterate(iterable):
            yield unpack(item, shape)

    # -- structures compared or hashed in one C call ---------------------------------
    def deep(self, value: Any) -> Any:
        """``value``, once it is known not to expand past the size limit when compared."""
        kind = value.__class__
        if kind not in WALKED:
            return value
        size = len(value)
        if size <= 16:
            if kind is not dict:
                for item in value:
                    if item.__class__ in WALKED:
                        break
                else:
                    return value  # a short flat tuple or list: the common key
        else:
            self.charge(1 + size // ALLOC_DIVISOR)
        if size <= _SMALL_TREE:
            if _small_tree(value):
                return value
        elif _flat(value):
            return value  # comparing it visits len(value) elements at most
        problem = comparison_problem(value, self.max_size)
        if problem is not None:
            raise SizeLimitExceeded(f"cannot compare or hash this {kind.__name__}: {problem}")
        return value

    def key(self, value: Any) -> Any:
        """A dict key or set element: only tuples and frozensets hash recursively."""
        kind = value.__class__
        if kind is tuple or kind is frozenset:
            return self.deep(value)
        return value

    def checked_keys(self, keys: list[Any]) -> list[Any]:
        """Sort keys, each checked as ``deep`` would; scalars and flat tuples of them (the
        common keys) are recognised in bulk."""
        kinds = set(map(type, keys))
        if tuple in kinds:
            tuples = [key for key in keys if key.__class__ is tuple]
            inner = set(map(type, itertools.chain.from_iterable(tuples)))
            if inner.isdisjoint(WALKED):
                kinds.discard(tuple)
        if not kinds.isdisjoint(WALKED):
            deep = self.deep
            for key in keys:
                deep(key)
        return keys

    def order_by_key(self, items: Any, key: Any, reverse: Any = False) -> list[int]:
        """Positions of ``items`` sorted by ``key`` (stable), its keys checked first."""
        keys = self.checked_keys(list(map(key, items)))
        return sorted(range(len(keys)), key=keys.__getitem__, reverse=reverse)

    def contained_in(self, value: Any) -> Any:
        """The right side of ``in``: checked like any comparison; an iterator is searched
        item by item under the budget (``x in map(...)`` runs in C otherwise)."""
        kind = value.__class__
        if kind in WALKED or kind is str or kind is range:
            return self.deep(value)
        if hasattr(value, "__next__"):
            return self.counted(value)
        return value

    def charge_collisions(self, keys: Any) -> Any:
        """Keys that share a hash make one C-level insert loop quadratic: pay for it first."""
        if len(keys) > 1024:
            try:
                distinct = len({hash(k) for k in keys})
            except TypeError:
                return keys  # unhashable: Python raises the same error right away
            if distinct * 4 < len(keys):
                self.charge(len(keys) * len(keys) // max(distinct, 1) // 4)
        return keys

    def hashed_items(self, iterable: Any) -> Any:
        """The items of ``iterable``, checked and paid for before Python hashes them all."""
        return self.charge_collisions(self.deep(self.materialize(iterable)))

    def hashed_pairs(self, source: Any) -> Any:
        """``source`` of ``dict(source)``/``dict.update``, its keys checked and paid for."""
        if type(source) is dict:
            self.charge(1 + len(source))
            return self.charge_collisions(source)
        pairs = self.deep(self.materialize(source))
        keys = [pair[0] for pair in pairs
                if (type(pair) is tuple or type(pair) is list) and len(pair) == 2]
        self.charge_collisions(keys)
        return pairs


def _no_calls() -> int:
    return 0


def _small_tree(value: Any) -> bool:
    """Whether ``value`` holds at most ``_SMALL_TREE`` elements, nested or not, counting
    shared parts each time they appear (comparing it then cannot run long)."""
    budget = _SMALL_TREE
    pending = [value]
    while pending:
        node = pending.pop()
        if node.__class__ is dict:
            budget -= 2 * len(node)
            if budget < 0:
                return False
            for item in node.items():
                if item[0].__class__ in WALKED:
                    pending.append(item[0])
                if item[1].__class__ in WALKED:
                    pending.append(item[1])
            continue
        budget -= len(node)
        if budget < 0:
            return False
        for item in node:
            if item.__class__ in WALKED:
                pending.append(item)
    return True


def _flat(value: Any) -> bool:
    if value.__class__ is dict:
        return not any(key.__class__ in WALKED or item.__class__ in WALKED
                       for key, item in value.items())
    return not any(item.__class__ in WALKED for item in value)
