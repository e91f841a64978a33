"""Attribute, method, subscript and star access: the allowlist at run time.

``a.b`` reaches only the methods listed in ``methods.py`` for ``type(a)``; a method that
copies, scans, compares or hashes its object or arguments is handed back wrapped so its
cost is paid and its inputs are checked before the C call runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from dcbrain.tfplan.guards.budget import Budget
from dcbrain.tfplan.guards.strings import Strings
from dcbrain.tfplan.methods import CHARGED, FREE, STR_GROWING, TEMPORAL_FORMATTING
from dcbrain.tfplan.methods import KEYED_METHODS as _KEYED
from dcbrain.tfplan.values import MAX_MESSAGE_CHARS, rendered_size_exceeds

#: Methods whose positional arguments are iterables to be consumed under the budget.
_CONSUMING = frozenset({
    "extend", "update", "union", "intersection", "difference", "symmetric_difference",
    "intersection_update", "difference_update", "symmetric_difference_update",
    "issubset", "issuperset", "isdisjoint",
})
#: Methods that compare their argument with the object's elements.
_COMPARING = frozenset({"count", "index"})
#: Methods that add one element: one operation, refused once the object is at the size
#: limit.
_GROWING = frozenset({"append", "insert", "add", "setdefault"})


class Namespace:
    """A read-only group of helper functions (``json``, ``math``) visible to plans."""

    __slots__ = ("members", "name")

    def __init__(self, name: str, members: dict[str, Any]) -> None:
        self.name = name
        self.members = members

    def __repr__(self) -> str:
        return f"<module {self.name!r}>"


class LazyMembers(dict[str, Any]):
    """Members of a type proxy, each made on first use (a run uses few of them)."""

    def __init__(self, names: Iterable[str], make: Callable[[str], Any]) -> None:
        # starts empty (``dict.__init__`` without arguments adds nothing)
        self.names = names if isinstance(names, frozenset) else frozenset(names)
        self.make = make

    def __missing__(self, name: str) -> Any:
        if name not in self.names:
            raise KeyError(name)
        member = self[name] = self.make(name)
        return member

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default


class TypeProxy(functools.partial[Any]):
    """A built-in type as a plan sees it: calling it runs the guarded constructor (a
    ``partial``, so the call costs no Python frame), and its members (``str.lower``,
    ``dict.fromkeys``) go through the same guards as methods."""

    real: type
    name: str
    members: dict[str, Any]

    def __new__(cls, real: type, constructor: Callable[..., Any],
                members: dict[str, Any]) -> TypeProxy:
        proxy = super().__new__(cls, constructor)
        proxy.real = real
        proxy.name = real.__name__
        proxy.members = members
        return proxy

    def __repr__(self) -> str:
        return f"<class {self.name!r}>"


class Access:
    """``a.b``, ``a[i:j]``, ``*a``/``**a`` and the wrapped methods of one run."""

    def __init__(self, budget: Budget, strings: Strings) -> None:
        self.budget = budget
        self.strings = strings

    def attr(self, obj: Any, name: str) -> Any:
        kind = obj.__class__
        free = FREE.get(kind)
        if free is not None:
            if name in free:
                if name in _GROWING:
                    budget = self.budget
                    if len(obj) >= budget.max_size:
                        raise budget.too_large(kind.__name__, len(obj) + 1)
                    # loops over a list pay for its growth here; an insert moves the rest
                    budget.ops += 1 + (len(obj) >> 4 if name == "insert" else 0)
                    if budget.ops > budget.max_ops:
                        raise budget.over_budget()
                if name in _KEYED and (kind is dict or kind is set):
                    return functools.partial(self._keyed, getattr(obj, name))
                if name == "remove" and kind is list:
                    self.budget.deep(obj)
                    return functools.partial(self._keyed_deep, getattr(obj, name))
                return getattr(obj, name)
            if name in CHARGED[kind]:
                return self._charged_method(obj, kind, name)
        elif kind is Namespace or kind is TypeProxy:
            member = obj.members.get(name)
            if member is not None:
                return member
            if kind is TypeProxy:
                raise AttributeError(f"type object {obj.name!r} has no attribute {name!r}")
            raise AttributeError(f"module {obj.name!r} has no attribute {name!r}")
        type_name = getattr(kind, "plan_type_name", kind.__name__)
        raise AttributeError(f"{type_name!r} object has no attribute {name!r}")

    def keyed_method(self, obj: Any, name: str) -> Any:
        """``obj.name`` called at once with a first argument the caller already checked
        (``d.get(k)``): a dict's or set's method is handed back unwrapped."""
        kind = obj.__class__
        if (kind is dict or kind is set) and name in FREE[kind]:
            if name in _GROWING:
                budget = self.budget
                if len(obj) >= budget.max_size:
                    raise budget.too_large(kind.__name__, len(obj) + 1)
                budget.tick()
            return getattr(obj, name)
        return self.attr(obj, name)

    def _charged_method(self, obj: Any, kind: type, name: str) -> Any:
        if kind is str and name in STR_GROWING:
            return functools.partial(self.strings.methods[name], obj)
        if name in TEMPORAL_FORMATTING:
            return functools.partial(self.strings.strftime, obj)
        budget = self.budget
        budget.charge(1 + len(obj))
        method = getattr(obj, name)
        if name in _CONSUMING:
            return functools.partial(self._consuming, obj, method)
        if name == "sort":
            return functools.partial(self._sort, obj)
        if name in _COMPARING:
            budget.deep(obj)
            if kind is list and name == "index":
                return functools.partial(self._list_index, obj)
            return functools.partial(self._keyed_deep, method)
        if name == "copy" or kind is str:
            return functools.partial(self._returning_checked, method)
        return method

    def _keyed(self, method: Callable[..., Any], *args: Any) -> Any:
        if args:
            self.budget.key(args[0])
        return method(*args)

    def _keyed_deep(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if args:
            self.budget.deep(args[0])
        return method(*args, **kwargs)

    def _list_index(self, items: list[Any], value: Any, *args: Any) -> int:
        budget = self.budget
        budget.deep(value)
        if value.__class__ not in _SCALARS and rendered_size_exceeds(value, MAX_MESSAGE_CHARS) \
                and value not in (items[slice(*args)] if len(args) == 2 else
                                  items[args[0]:] if args else items):
            # CPython would put repr(value) in its message, in one C call
            raise ValueError(f"{value.__class__.__name__} value is not in list")
        return items.index(value, *args)

    def _sort(self, items: list[Any], *, key: Any = None, reverse: Any = False) -> None:
        budget = self.budget
        budget.charge(len(items) * max(len(items).bit_length(), 1) // 4)
        if key is None:  # the items are compared; with a key only the keys are
            budget.deep(items)
            items.sort(reverse=reverse)
        else:
            order = budget.order_by_key(items, key, reverse)
            items[:] = [items[index] for index in order]

    def _consuming(self, obj: Any, method: Callable[..., Any], *args: Any,
                   **kwargs: Any) -> Any:
        budget = self.budget
        kind = obj.__class__
        if kind is dict:  # update: its keys are hashed
            consumed = [budget.hashed_pairs(arg) for arg in args]
            budget.charge_collisions(list(kwargs))
        elif kind is list:
            consumed = [budget.deep(budget.materialize(arg)) for arg in args]
        else:
            consumed = [budget.hashed_items(arg) for arg in args]
        result = method(*consumed, **kwargs)
        budget.check_result(obj)
        return budget.check_result(result)

    def _returning_checked(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self.budget.check_result(method(*args, **kwargs))

    # -- subscripts and stars --------------------------------------------------------
    def get_slice(self, obj: Any, lower: Any, upper: Any, step: Any) -> Any:
        return self.budget.check_result(obj[lower:upper:step])

    def set_slice(self, obj: Any, lower: Any, upper: Any, step: Any, value: Any) -> None:
        """``obj[lower:upper:step] = value``: the value is consumed and the result sized."""
        budget = self.budget
        items = budget.materialize(value)
        if obj.__class__ is list and len(obj) + len(items) > budget.max_size:
            raise budget.too_large("list", len(obj) + len(items))
        obj[lower:upper:step] = items

    def star(self, value: Any) -> Any:
        if value.__class__ is dict:
            self.budget.charge(1 + len(value))
            return value
        if not hasattr(value.__class__, "__iter__"):
            return value  # Python refuses it in its own words ("must be an iterable")
        return self.budget.materialize(value)

    def hashed_star(self, value: Any) -> Any:
        """``*value`` in a set display: its items are hashed."""
        return self.budget.hashed_items(value)


_SCALARS = frozenset({int, float, str, bool, type(None)})
