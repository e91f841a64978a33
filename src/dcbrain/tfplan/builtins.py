"""The builtins a plan sees: an allowlist, with consumers of iterables paid for.

Types that only convert scalars (``int``, ``float``, ``bool``) are the real ones. The
constructors that copy or render collections (``str``, ``list``, ``dict`` …) are guarded
functions; ``isinstance`` maps them back to the real types.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any, cast

from dcbrain.tfplan.errors import SizeLimitExceeded
from dcbrain.tfplan.guards import Guards, Namespace, TypeProxy
from dcbrain.tfplan.guards.access import LazyMembers
from dcbrain.tfplan.hashing import plan_hash as stable_hash
from dcbrain.tfplan.methods import ALLOWED, MATH_CONSTANTS, MATH_FUNCTIONS, TYPE_MEMBERS
from dcbrain.tfplan.parser import SPECIAL_NAMES
from dcbrain.values.scalars import (
    MAX_DECIMAL_DIGITS,
    MAX_DECIMAL_TEXT,
    ScalarError,
    checked_decimal,
)

#: Exception types a plan may raise (``raise ValueError("...")``) and test with isinstance.
EXCEPTIONS: dict[str, type[BaseException]] = {
    cls.__name__: cls
    for cls in (
        Exception, ValueError, TypeError, KeyError, IndexError, RuntimeError, AssertionError,
        ZeroDivisionError, ArithmeticError, LookupError, NotImplementedError, AttributeError,
        NameError, OverflowError, StopIteration,
    )
}

#: Builtins passed through unchanged: they neither iterate nor build large values.
PLAIN_BUILTINS: dict[str, Any] = {
    "len": len, "abs": abs, "divmod": divmod, "chr": chr, "ord": ord,
    "int": int, "float": float, "bool": bool,
    "range": range, "enumerate": enumerate, "zip": zip, "map": map, "filter": filter,
    "reversed": reversed, "next": next, "callable": callable,
}

#: Every builtin function of tf_plan (the exception types aside), in the order the
#: language summary lists them; ``build_builtins`` binds exactly these names.
BUILTIN_FUNCTIONS: tuple[str, ...] = (
    "print", "len", "range", "enumerate", "zip", "map", "filter", "reversed", "iter", "next",
    "min", "max", "sum", "abs", "round", "divmod", "sorted", "any", "all", "str", "int",
    "float", "bool", "list", "dict", "set", "frozenset", "tuple", "isinstance", "repr",
    "hash", "chr", "ord", "hex", "oct", "bin", "pow", "format", "callable", "parallel",
    "replan_with", "json", "math", "datetime", "decimal",
)

#: Characters of text and of format ``datetime.strptime`` takes.
MAX_STRPTIME_CHARS = 200
#: The one key of the value ``replan_with(value)`` makes the plan's result.
REPLAN_WITH_KEY = "__replan_with__"


def requested_replan(plan: str, value: Any) -> tuple[bool, Any]:
    """Whether the plan ended with ``replan_with(value)``, and that value."""
    if type(value) is dict and len(value) == 1 and REPLAN_WITH_KEY in value \
            and "replan_with" in plan:
        return True, value[REPLAN_WITH_KEY]
    return False, None


def real_types(classinfo: Any) -> Any:
    """``classinfo`` (a type, or a tuple of them) with plan type proxies as the types
    they stand for."""
    if isinstance(classinfo, tuple):
        return tuple(real_types(item) for item in classinfo)
    return classinfo.real if isinstance(classinfo, TypeProxy) else classinfo


def build_builtins(guards: Guards) -> dict[str, Any]:
    """The names every plan can use, bound to one run's guards."""
    budget, arithmetic, strings = guards.budget, guards.arithmetic, guards.strings
    materialize = budget.materialize
    iterate = budget.iterate
    deep = budget.deep
    hash_key = budget.key
    hashed_items = budget.hashed_items
    check_result = budget.check_result
    charge = budget.charge

    def plan_list(iterable: Any = ()) -> list[Any]:
        return list(materialize(iterable))

    def plan_tuple(iterable: Any = ()) -> tuple[Any, ...]:
        return tuple(materialize(iterable))

    def plan_set(iterable: Any = ()) -> set[Any]:
        return set(hashed_items(iterable))

    def plan_frozenset(iterable: Any = ()) -> frozenset[Any]:
        return frozenset(hashed_items(iterable))

    def plan_dict(source: Any = (), /, **kwargs: Any) -> dict[str, Any]:
        budget.charge_collisions(list(kwargs))
        return check_result(dict(budget.hashed_pairs(source), **kwargs))  # type: ignore[no-any-return]

    def plan_sorted(iterable: Any, /, *, key: Any = None, reverse: bool = False) -> list[Any]:
        items = materialize(iterable)
        charge(len(items) * max(len(items).bit_length(), 1) // 4)
        if key is None:  # the items are compared; with a key only the keys are
            return sorted(deep(items), reverse=reverse)
        listed = items if type(items) is list else list(items)
        return [listed[index] for index in budget.order_by_key(listed, key, reverse)]

    def consumer(func: Callable[..., Any], compares: bool = False) -> Callable[..., Any]:
        def consume(*args: Any, **kwargs: Any) -> Any:
            key = kwargs.get("key")
            if compares and key is not None:
                if len(args) == 1 and set(kwargs) <= {"key", "default"}:
                    # min/max by key: the keys computed in one pass and checked in bulk
                    items = materialize(args[0])
                    listed = items if type(items) is list else list(items)
                    if not listed and "default" in kwargs:
                        return kwargs["default"]
                    keys = budget.checked_keys(list(map(key, listed)))
                    return listed[func(range(len(keys)), key=keys.__getitem__)]
                kwargs["key"] = lambda item: deep(key(item))
            if len(args) == 1:  # lazily, so any()/all() stop early as in Python
                items = iterate(args[0])
                if compares and key is None:
                    items = (deep(item) for item in items)
                return func(items, **kwargs)
            if compares and key is None:
                deep(args)
            return func(*args, **kwargs)

        consume.__name__ = consume.__qualname__ = func.__name__
        return consume

    def lazy(func: Callable[..., Any], read: slice) -> Callable[..., Any]:
        """``map``, ``filter``, ``zip``, ``enumerate``: the iterables they read (the
        positional arguments in ``read``) are paid for as they are consumed, and a chain
        of them recurses in Python, which stops cleanly, instead of in C, which crashes."""
        def start(*args: Any, **kwargs: Any) -> Any:
            first, last, _ = read.indices(len(args))
            return func(*args[:first], *[iterate(arg) for arg in args[first:last]],
                        *args[last:], **kwargs)

        start.__name__ = start.__qualname__ = func.__name__
        return start

    def folded(combine: Callable[[Any, Any], Any], iterable: Any, start: Any) -> Any:
        """``start`` combined with each item in turn, as ``sum`` and ``math.prod`` do."""
        total = start
        for item in iterate(iterable):
            total = combine(total, item)
        return total

    def plan_sum(iterable: Any, /, start: Any = 0) -> Any:
        if type(start) is str:
            raise TypeError("sum() can't sum strings [use ''.join(seq) instead]")
        return folded(arithmetic.add, iterable, start)

    def plan_iter(*args: Any) -> Any:
        """An iterator that pays for each item it yields: ``x in iter(...)`` or
        ``iter(int, 1)`` would otherwise loop in C, where no limit can stop it. An
        iterator is its own iterator, as in Python."""
        if not 1 <= len(args) <= 2:
            raise TypeError(f"iter expected at most 2 arguments, got {len(args)}"
                            if args else "iter expected at least 1 argument, got 0")
        iterator = iter(*args)
        if len(args) == 1 and iterator is args[0]:
            return iterator
        return iterate(iterator)

    def plan_hash(value: Any, /) -> int:
        return stable_hash(hash_key(value), charge)

    def plan_isinstance(value: Any, classinfo: Any) -> bool:
        return isinstance(value, real_types(classinfo))

    def plan_format(value: Any, spec: Any = "") -> str:
        if type(spec) is not str:
            raise TypeError("format() argument 2 must be str")
        return strings.render(value, spec)

    def plan_parallel(*values: Any) -> list[Any]:
        return list(values)

    def plan_replan_with(value: Any, /) -> dict[str, Any]:
        return {REPLAN_WITH_KEY: value}

    def json_loads(text: Any) -> Any:
        if type(text) is not str:
            raise TypeError(f"json.loads() expects str, not {type(text).__name__}")
        charge(1 + len(text) // 4)
        return json.loads(text)

    def combinatoric(name: str) -> Callable[..., int]:
        def bounded(*args: Any) -> int:
            return arithmetic.combinatoric(name, *args)

        bounded.__name__ = bounded.__qualname__ = name
        return bounded

    def sized(func: Callable[..., Any]) -> Callable[..., Any]:
        """``hex``, ``oct``, ``bin``: their text is paid for by its size."""
        def render(*args: Any) -> Any:
            return check_result(func(*args))

        render.__name__ = render.__qualname__ = func.__name__
        return render

    def math_prod(iterable: Any, /, *, start: Any = 1) -> Any:
        return folded(arithmetic.mul, iterable, start)

    def math_fsum(iterable: Any) -> float:
        return math.fsum(materialize(iterable, allocates=False))

    math_members = dict(_MATH_PLAIN)
    math_members.update(
        factorial=combinatoric("factorial"), comb=combinatoric("comb"),
        perm=combinatoric("perm"), prod=math_prod, fsum=math_fsum, pow=math.pow,
        lcm=arithmetic.lcm, gcd=arithmetic.gcd, isqrt=arithmetic.isqrt,
        floor=arithmetic.integral(math.floor), ceil=arithmetic.integral(math.ceil),
        trunc=arithmetic.integral(math.trunc),
    )

    attr = guards.access.attr

    def unbound(real: type, name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if not args:
                raise TypeError(f"unbound method {real.__name__}.{name}() needs an argument")
            obj, *args = args  # type: ignore[assignment]
            if type(obj) is not real:
                raise TypeError(f"descriptor {name!r} for {real.__name__!r} objects doesn't "
                                f"apply to a {type(obj).__name__!r} object")
            return attr(obj, name)(*args, **kwargs)

        return call

    def proxy(real: type, constructor: Callable[..., Any]) -> TypeProxy:
        members = LazyMembers(ALLOWED.get(real, _NO_NAMES), functools.partial(unbound, real))
        if real is dict:
            members["fromkeys"] = lambda keys, value=None: check_result(
                dict.fromkeys(hashed_items(keys), value))
        constructors = _TYPE_CONSTRUCTORS.get(real)
        if constructors:
            members.update(constructors)
        if real is datetime:
            members["strptime"] = plan_strptime
        if real is timezone:
            members["utc"] = UTC
        return TypeProxy(real, constructor, members)

    def plan_strptime(text: Any, format: Any, /) -> datetime:
        # the format is compiled to a regular expression: both stay short
        if type(text) is not str or type(format) is not str:
            raise TypeError("strptime() arguments must be str")
        if len(text) > MAX_STRPTIME_CHARS or len(format) > MAX_STRPTIME_CHARS:
            raise ValueError(f"strptime() takes at most {MAX_STRPTIME_CHARS} characters of "
                             "text and of format")
        charge(1 + len(text) + len(format))
        return datetime.strptime(text, format)

    def plan_decimal(value: Any = "0", /) -> Decimal:
        if value.__class__ not in _DECIMAL_SOURCES:
            raise TypeError(f"conversion from {type(value).__name__} to Decimal is not "
                            "supported")
        # sized before it is converted: an int's conversion is quadratic in its digits
        if value.__class__ is int and value.bit_length() > _DECIMAL_INT_BITS:
            raise SizeLimitExceeded(f"Decimal() of an int of {value.bit_length()} bits is "
                                    f"past the limit of {MAX_DECIMAL_DIGITS} digits")
        if value.__class__ is str and len(value) > MAX_DECIMAL_TEXT:
            raise SizeLimitExceeded(f"Decimal() of a text of {len(value)} characters is "
                                    f"past the limit of {MAX_DECIMAL_DIGITS} digits")
        try:
            return checked_decimal(Decimal(cast(str, value)), "Decimal()")
        except ScalarError as exc:
            raise SizeLimitExceeded(str(exc)) from None

    guarded_print = strings.plan_print
    guarded_repr = strings.plan_repr

    def plan_print(*args: Any, **options: Any) -> None:
        for option in options:
            if option not in ("sep", "end", "flush"):
                raise TypeError(f"'{option}' is an invalid keyword argument for print()")
        options.pop("flush", None)  # output is captured: there is nothing to flush
        guarded_print(*args, **options)

    def plan_repr(*args: Any, **kwargs: Any) -> str:
        if kwargs:
            raise TypeError("repr() takes no keyword arguments")
        if len(args) != 1:
            raise TypeError(f"repr() takes exactly one argument ({len(args)} given)")
        return guarded_repr(args[0])

    names = dict(_PLAIN_NAMES)
    names.update(
        print=plan_print, str=proxy(str, strings.plan_str), repr=plan_repr,
        int=proxy(int, arithmetic.to_int), divmod=arithmetic.divmod,
        map=lazy(map, slice(1, None)), filter=lazy(filter, slice(1, None)),
        zip=lazy(zip, slice(None)), enumerate=lazy(enumerate, slice(0, 1)),
        list=proxy(list, plan_list), tuple=proxy(tuple, plan_tuple), set=proxy(set, plan_set),
        frozenset=proxy(frozenset, plan_frozenset), dict=proxy(dict, plan_dict),
        sorted=plan_sorted, sum=plan_sum, min=consumer(min, compares=True),
        max=consumer(max, compares=True),
        any=consumer(any), all=consumer(all), isinstance=plan_isinstance, format=plan_format,
        pow=arithmetic.power, parallel=plan_parallel, replan_with=plan_replan_with,
        round=arithmetic.round, hash=plan_hash,
        iter=plan_iter, hex=sized(hex), oct=sized(oct), bin=sized(bin),
        json=Namespace("json", {"dumps": strings.json_dumps, "loads": json_loads}),
        math=Namespace("math", math_members),
        # made on first use: most plans never touch them
        datetime=Namespace("datetime", LazyMembers(
            _DATETIME_TYPES, lambda name: proxy(_DATETIME_TYPES[name], _DATETIME_TYPES[name]))),
        decimal=Namespace("decimal", LazyMembers(
            ("Decimal",), lambda name: proxy(Decimal, plan_decimal))),
    )
    return names


#: The names every run binds alike: the plain builtins and the exception types.
_PLAIN_NAMES: dict[str, Any] = {**PLAIN_BUILTINS, **EXCEPTIONS}
#: ``math``'s members that need no guard.
_MATH_PLAIN: dict[str, Any] = {name: getattr(math, name)
                               for name in (*MATH_FUNCTIONS, *MATH_CONSTANTS)}
_DECIMAL_SOURCES = frozenset({str, int, bool, float, Decimal})
#: Bits of the largest int with at most MAX_DECIMAL_DIGITS digits.
_DECIMAL_INT_BITS = int(MAX_DECIMAL_DIGITS * 3.3219)
_DATETIME_TYPES: dict[str, type] = {real.__name__: real for real in (
    date, datetime, time, timedelta, timezone)}
_NO_NAMES: frozenset[str] = frozenset()
#: The value types' own constructors (``date.fromisoformat``), bounded by their input:
#: the type's own members, the same in every run.
_TYPE_CONSTRUCTORS: dict[type, dict[str, Any]] = {
    real: {name: getattr(real, name) for name in names if name != "fromkeys"}
    for real, names in TYPE_MEMBERS.items()}


#: Names every plan can use besides its own and the registered callables (here, not in
#: the checker: running compiled plan code, as a sandbox process does, needs no checker).
BUILTIN_NAMES = frozenset(BUILTIN_FUNCTIONS) | frozenset(EXCEPTIONS) | SPECIAL_NAMES
