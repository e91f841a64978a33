"""The guard functions rewritten plans call, and the budget they charge.

``rewrite.py`` turns ``a.b`` into ``__tf_attr(a, "b")``, ``a * b`` into ``__tf_mul(a, b)``,
``for x in it`` into ``for x in __tf_iter(it)`` and so on; this module defines what those
calls do. Guards are closures over one run's counters so the hot paths stay cheap.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from dcbrain.tfplan.errors import (
    CallDepthLimitExceeded,
    OperationLimitExceeded,
    OutputLimitExceeded,
    SizeLimitExceeded,
)
from dcbrain.tfplan.formatting import (
    FormatLimitError,
    check_percent_format,
    check_spec,
    safe_format,
)
from dcbrain.tfplan.methods import CHARGED, FREE, STR_GROWING
from dcbrain.tfplan.state import RunState
from dcbrain.tfplan.values import CONTAINERS, comparison_problem, rendered_size_exceeds

_SEQUENCES = (str, list, tuple)
_SIZED_RESULTS = frozenset({str, list, tuple, dict, set, frozenset})
#: Iterables that cannot grow while a loop runs over them: charged once, up front.
_STABLE_ITERABLES = frozenset({
    tuple, str, range, frozenset, dict, set,
    type({}.keys()), type({}.values()), type({}.items()),
})
_INTS = (int, bool)
#: Methods whose positional arguments are iterables to be consumed under the budget.
_CONSUMING = frozenset({
    "extend", "update", "union", "intersection", "difference", "symmetric_difference",
    "intersection_update", "difference_update", "symmetric_difference_update",
    "issubset", "issuperset", "isdisjoint",
})
#: dict/set methods whose first argument is hashed (a key or an element).
_KEYED = frozenset({"get", "pop", "setdefault", "add", "discard", "remove"})
#: Methods that compare their argument with the object's elements (or sort them).
_COMPARING = frozenset({"count", "index", "sort"})
#: One operation per this many elements/characters a plan allocates.
ALLOC_DIVISOR = 4


class Namespace:
    """A read-only group of helper functions (``json``, ``math``) visible to plans."""

    __slots__ = ("members", "name")

    def __init__(self, name: str, members: dict[str, Any]) -> None:
        self.name = name
        self.members = members

    def __repr__(self) -> str:
        return f"<module {self.name!r}>"


class TypeProxy(Namespace):
    """A built-in type as a plan sees it: calling it runs the guarded constructor, and its
    members (``str.lower``, ``dict.fromkeys``) go through the same guards as methods."""

    __slots__ = ("constructor", "real")

    def __init__(self, real: type, constructor: Callable[..., Any],
                 members: dict[str, Any]) -> None:
        super().__init__(real.__name__, members)
        self.real = real
        self.constructor = constructor

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.constructor(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<class {self.name!r}>"


def build_guards(state: RunState) -> dict[str, Any]:
    """The ``__tf_*`` guard functions and the charging primitives of one run."""
    limits = state.limits
    max_ops = limits.max_operations
    max_size = limits.max_size
    max_bits = limits.max_size
    max_depth = limits.max_call_depth
    max_output = limits.max_output_chars
    ops = 0

    def over_budget() -> OperationLimitExceeded:
        return OperationLimitExceeded(
            f"plan exceeded its operation budget of {max_ops} (loop iterations and the "
            "size of values built)"
        )

    def charge(amount: int) -> None:
        nonlocal ops
        ops += amount
        if ops > max_ops:
            raise over_budget()

    def tick() -> bool:
        nonlocal ops
        ops += 1
        if ops > max_ops:
            raise over_budget()
        return True

    frames = [0, 0]  # plan functions: current depth, calls so far

    def too_deep() -> None:
        if frames[0] > max_depth:
            raise CallDepthLimitExceeded(f"plan functions nested deeper than {max_depth} calls")
        raise OperationLimitExceeded(
            f"plan made more than {max_ops} function calls (its operation budget)"
        )

    def operations() -> int:
        return ops + frames[1]

    def too_large(what: str, size: int) -> SizeLimitExceeded:
        return SizeLimitExceeded(f"{what} of size {size} exceeds the size limit {max_size}")

    def check_result(value: Any) -> Any:
        """Charge for a freshly built value and enforce the size limit on it."""
        kind = type(value)
        if kind in _SIZED_RESULTS:
            size = len(value)
            if size > max_size:
                raise too_large(kind.__name__, size)
            charge(1 + size // ALLOC_DIVISOR)
        elif kind is int:
            bits = value.bit_length()
            if bits > 64:
                if bits > max_bits:
                    raise SizeLimitExceeded(f"int of {bits} bits exceeds the size limit "
                                            f"{max_bits} bits")
                charge(bits >> 5)
        return value

    # -- iteration -------------------------------------------------------------------
    def counted(iterator: Iterator[Any]) -> Iterator[Any]:
        nonlocal ops
        for item in iterator:
            ops += 1
            if ops > max_ops:
                raise over_budget()
            yield item

    def iterate(iterable: Any) -> Iterable[Any]:
        nonlocal ops
        if type(iterable) in _STABLE_ITERABLES:
            try:
                size = len(iterable)
            except OverflowError:
                size = max_ops + 1
            if ops + size <= max_ops:
                ops += size
                return iterable  # type: ignore[no-any-return]
        return counted(iter(iterable))

    def materialize(iterable: Any, allocates: bool = True) -> Any:
        """A sized container with the items of ``iterable``, paid for in operations."""
        kind = type(iterable)
        if kind in _STABLE_ITERABLES or kind is list:
            try:
                size = len(iterable)
            except OverflowError:
                raise too_large(kind.__name__, iterable.__len__()) from None
            if allocates and size > max_size:
                raise too_large(kind.__name__, size)
            charge(size + (size // ALLOC_DIVISOR if allocates else 0))
            return iterable
        items = []
        for item in counted(iter(iterable)):
            items.append(item)
            if len(items) > max_size:
                raise too_large("iterable", len(items))
        charge(len(items) // ALLOC_DIVISOR)
        return items

    # -- structures compared or hashed in one C call ---------------------------------
    def deep(value: Any) -> Any:
        """``value``, once it is known not to expand past the size limit when compared."""
        kind = value.__class__
        if kind not in CONTAINERS:
            return value
        if len(value) > 16:
            charge(1 + len(value) // ALLOC_DIVISOR)
        if kind is dict:
            for item in value.items():
                if item[0].__class__ in CONTAINERS or item[1].__class__ in CONTAINERS:
                    break
            else:
                return value
        else:
            for item in value:
                if item.__class__ in CONTAINERS:
                    break
            else:
                return value  # flat: comparing it visits len(value) elements at most
        problem = comparison_problem(value, max_size)
        if problem is not None:
            raise SizeLimitExceeded(
                f"cannot compare or hash this {kind.__name__}: {problem}"
            )
        return value

    def key(value: Any) -> Any:
        """A dict key or set element: only tuples and frozensets hash recursively."""
        kind = value.__class__
        if kind is tuple or kind is frozenset:
            return deep(value)
        return value

    def charge_collisions(keys: Any) -> Any:
        """Keys that share a hash make one C-level insert loop quadratic: pay for it first."""
        if len(keys) > 1024:
            try:
                distinct = len({hash(k) for k in keys})
            except TypeError:
                return keys  # unhashable: Python raises the same error right away
            if distinct * 4 < len(keys):
                charge(len(keys) * len(keys) // max(distinct, 1) // 4)
        return keys

    def hashed_items(iterable: Any) -> Any:
        """The items of ``iterable``, checked and paid for before Python hashes them all."""
        return charge_collisions(deep(materialize(iterable)))

    def keyed(method: Callable[..., Any], *args: Any) -> Any:
        if args:
            key(args[0])
        return method(*args)

    def keyed_deep(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if args:
            deep(args[0])
        return method(*args, **kwargs)

    # -- operators --------------------------------------------------------------------
    def add(a: Any, b: Any) -> Any:
        result = a + b
        kind = result.__class__
        if kind is int or kind is float:  # numbers grow one bit per addition at most
            return result
        return check_result(result)

    def sub(a: Any, b: Any) -> Any:
        result = a - b
        kind = result.__class__
        if kind is int or kind is float:
            return result
        return check_result(result)

    def binop(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def guarded(a: Any, b: Any) -> Any:
            result = op(a, b)
            kind = type(result)
            if kind is float or kind is bool:
                return result
            if kind is int and -(1 << 64) < result < (1 << 64):
                return result
            return check_result(result)

        return guarded

    def mul(a: Any, b: Any) -> Any:
        ta, tb = type(a), type(b)
        if ta in _INTS and tb in _INTS:
            if a.bit_length() + b.bit_length() > max_bits:
                raise SizeLimitExceeded(f"int product exceeds the size limit {max_bits} bits")
        elif (ta in _INTS and tb in _SEQUENCES) or (tb in _INTS and ta in _SEQUENCES):
            count, sequence = (a, b) if ta in _INTS else (b, a)
            size = len(sequence) * count
            if size > max_size:
                raise too_large(type(sequence).__name__, size)
        return check_result(a * b)

    def power(a: Any, b: Any, mod: Any = None) -> Any:
        if mod is None and type(a) in _INTS and type(b) in _INTS and b > 0:
            bits = abs(a).bit_length()
            if bits > 1 and (bits - 1) * b > max_bits:
                raise SizeLimitExceeded(f"int power exceeds the size limit {max_bits} bits")
        if mod is None:
            return check_result(a**b)
        if type(b) in _INTS and type(mod) in _INTS and b > 0:
            # square-and-multiply: one big-int product per exponent bit
            charge(b.bit_length() * max(1, abs(mod).bit_length() // 64))
        return check_result(pow(a, b, mod))

    def lshift(a: Any, b: Any) -> Any:
        if (type(a) in _INTS and type(b) in _INTS and a and b > 0
                and a.bit_length() + b > max_bits):
            raise SizeLimitExceeded(f"int shift exceeds the size limit {max_bits} bits")
        return check_result(a << b)

    def mod(a: Any, b: Any) -> Any:
        if type(a) is str:
            try:
                check_percent_format(a, max_size)
            except FormatLimitError as exc:
                raise SizeLimitExceeded(str(exc)) from None
            if rendered_size_exceeds(b, max_size):
                raise too_large("formatted value", max_size + 1)
        return check_result(a % b)

    def check_iadd(target: Any, value: Any) -> Any:
        """Checks ``x += v`` and returns ``v``; the native ``+=`` keeps CPython's in-place
        string append. An iterable added to a list is first consumed under the budget."""
        kind = type(target)
        if kind is int or kind is float:
            return value
        if kind in _SEQUENCES and type(value) in _SEQUENCES:
            size = len(target) + len(value)
            if size > max_size:
                raise too_large(kind.__name__, size)
            charge(1 + len(value) // ALLOC_DIVISOR)
        elif kind is list:
            value = materialize(value)
            if len(target) + len(value) > max_size:
                raise too_large("list", len(target) + len(value))
        return value

    def list_iadd(a: Any, b: Any) -> Any:
        return check_result(operator.iadd(a, check_iadd(a, b)))

    in_place = {
        "Add": list_iadd, "Sub": binop(operator.isub),
        "BitOr": binop(operator.ior), "BitAnd": binop(operator.iand),
        "BitXor": binop(operator.ixor),
    }

    def augmented(op_name: str) -> Callable[[Any, Any], Any]:
        if op_name in in_place:
            return in_place[op_name]
        return {"Mult": mul, "Pow": power, "LShift": lshift, "Mod": mod}[op_name]

    # -- access ----------------------------------------------------------------------
    def attr(obj: Any, name: str) -> Any:
        kind = type(obj)
        free = FREE.get(kind)
        if free is not None:
            if name in free:
                if name in _KEYED and (kind is dict or kind is set):
                    return functools.partial(keyed, getattr(obj, name))
                if name == "remove" and kind is list:
                    deep(obj)
                    return functools.partial(keyed_deep, getattr(obj, name))
                return getattr(obj, name)
            if name in CHARGED[kind]:
                return charged_method(obj, kind, name)
        elif kind is Namespace or kind is TypeProxy:
            member = obj.members.get(name)
            if member is not None:
                return member
            if kind is TypeProxy:
                raise AttributeError(f"type object {obj.name!r} has no attribute {name!r}")
            raise AttributeError(f"module {obj.name!r} has no attribute {name!r}")
        type_name = getattr(kind, "plan_type_name", kind.__name__)
        raise AttributeError(f"{type_name!r} object has no attribute {name!r}")

    def charged_method(obj: Any, kind: type, name: str) -> Any:
        if kind is str and name in STR_GROWING:
            return functools.partial(STR_METHODS[name], obj)
        charge(1 + len(obj))
        method = getattr(obj, name)
        if name in _CONSUMING:
            return functools.partial(consuming, obj, method)
        if name in _COMPARING:
            deep(obj)
            return functools.partial(keyed_deep, method)
        if name == "copy" or kind is str:
            return functools.partial(returning_checked, method)
        return method

    def consuming(obj: Any, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        hashing = type(obj) is not list  # set and dict methods hash what they consume
        result = method(
            *(hashed_items(arg) if hashing else deep(materialize(arg)) for arg in args),
            **kwargs,
        )
        check_result(obj)
        return check_result(result)

    def returning_checked(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return check_result(method(*args, **kwargs))

    def get_slice(obj: Any, lower: Any, upper: Any, step: Any) -> Any:
        return check_result(obj[lower:upper:step])

    def star(value: Any) -> Any:
        if type(value) is dict:
            charge(1 + len(value))
            return value
        if not hasattr(type(value), "__iter__"):
            return value  # Python refuses it in its own words ("must be an iterable")
        return materialize(value)

    # -- strings ---------------------------------------------------------------------
    def render(value: Any, spec: str = "") -> str:
        try:
            check_spec(spec, max_size)
        except FormatLimitError as exc:
            raise SizeLimitExceeded(str(exc)) from None
        if rendered_size_exceeds(value, max_size):
            raise too_large("rendered value", max_size + 1)
        text = format(value, spec)
        charge(1 + len(text) // ALLOC_DIVISOR)
        return text

    checked_specs: set[str] = set()

    def formatted_value(value: Any, conversion: int, spec: str) -> Any:
        kind = value.__class__
        if conversion == -1 and (kind is str or kind is int or kind is float or kind is bool):
            if not spec:
                return value  # the f-string formats it natively
            if spec in checked_specs:
                return format(value, spec)
            try:
                check_spec(spec, max_size)
            except FormatLimitError as exc:
                raise SizeLimitExceeded(str(exc)) from None
            if len(checked_specs) < 256:
                checked_specs.add(spec)
            text = format(value, spec)
            charge(1 + len(text) // ALLOC_DIVISOR)
            return text
        if conversion != -1:
            value = convert(value, chr(conversion))
        return render(value, spec)

    def convert(value: Any, conversion: str) -> str:
        """``!r``, ``!s`` and ``!a`` of f-strings and ``str.format``, size-checked first."""
        if conversion == "r":
            return plan_repr(value)
        if conversion == "s":
            return plan_str(value)
        if rendered_size_exceeds(value, max_size):
            raise too_large("rendered value", max_size + 1)
        return check_result(ascii(value))  # type: ignore[no-any-return]

    def plan_str(value: Any = "") -> str:
        if type(value) is str:
            return value
        if rendered_size_exceeds(value, max_size):
            raise too_large("rendered value", max_size + 1)
        return check_result(str(value))  # type: ignore[no-any-return]

    def plan_repr(value: Any) -> str:
        if rendered_size_exceeds(value, max_size):
            raise too_large("rendered value", max_size + 1)
        return check_result(repr(value))  # type: ignore[no-any-return]

    def str_format(template: str, *args: Any, **kwargs: Any) -> str:
        try:
            return safe_format(template, args, kwargs, max_size, render, convert)
        except FormatLimitError as exc:
            raise SizeLimitExceeded(str(exc)) from None

    def str_pad(method: str) -> Callable[..., str]:
        def pad(text: str, width: Any, *args: Any) -> str:
            if type(width) in _INTS and width > max_size:
                raise too_large("str", width)
            return check_result(getattr(text, method)(width, *args))  # type: ignore[no-any-return]

        return pad

    def str_expandtabs(text: str, tabsize: Any = 8) -> str:
        if type(tabsize) in _INTS and len(text) + text.count("\t") * max(tabsize, 0) > max_size:
            raise too_large("str", len(text) + text.count("\t") * tabsize)
        return check_result(text.expandtabs(tabsize))  # type: ignore[no-any-return]

    def str_replace(text: str, old: Any, new: Any, count: Any = -1) -> str:
        if type(old) is str and type(new) is str and type(count) in _INTS:
            hits = len(text) + 1 if old == "" else text.count(old)
            if count >= 0:
                hits = min(hits, count)
            size = len(text) + hits * (len(new) - len(old))
            if size > max_size:
                raise too_large("str", size)
        return check_result(text.replace(old, new, count))  # type: ignore[no-any-return]

    def str_join(separator: str, *args: Any) -> str:
        if len(args) != 1:
            raise TypeError(f"str.join() takes exactly one argument ({len(args)} given)")
        if not hasattr(type(args[0]), "__iter__"):
            raise TypeError("can only join an iterable")
        items = materialize(args[0])
        size = len(separator) * max(len(items) - 1, 0)
        for item in items:
            if type(item) is str:
                size += len(item)
        if size > max_size:
            raise too_large("str", size)
        return check_result(separator.join(items))  # type: ignore[no-any-return]

    STR_METHODS: dict[str, Callable[..., Any]] = {
        "center": str_pad("center"), "ljust": str_pad("ljust"), "rjust": str_pad("rjust"),
        "zfill": str_pad("zfill"), "expandtabs": str_expandtabs, "replace": str_replace,
        "join": str_join, "format": str_format,
    }

    # -- output ----------------------------------------------------------------------
    def plan_print(*args: Any, sep: Any = " ", end: Any = "\n") -> None:
        sep = " " if sep is None else sep
        end = "\n" if end is None else end
        if type(sep) is not str or type(end) is not str:
            raise TypeError("sep and end must be None or a string")
        text = sep.join(plan_str(arg) for arg in args) + end
        with state.lock:
            state.output_chars += len(text)
            if state.output_chars > max_output:
                raise OutputLimitExceeded(f"plan printed more than {max_output} characters")
            state.output.append(text)

    return {
        "charge": charge,
        "operations": operations,
        "check_result": check_result,
        "materialize": materialize,
        "render": render,
        "plan_str": plan_str,
        "plan_repr": plan_repr,
        "plan_print": plan_print,
        "power": power,
        "__tf_tick": tick,
        "__tf_frames": frames,
        "__tf_max_depth": max_depth,
        "__tf_max_calls": max_ops,
        "__tf_too_deep": too_deep,
        "__tf_iter": iterate,
        "__tf_attr": attr,
        "__tf_slice": get_slice,
        "__tf_star": star,
        "__tf_fv": formatted_value,
        "__tf_deep": deep,
        "__tf_key": key,
        "hashed_items": hashed_items,
        "__tf_checked": check_result,
        "__tf_add": add,
        "__tf_sub": sub,
        "__tf_bitor": binop(operator.or_),
        "__tf_bitand": binop(operator.and_),
        "__tf_bitxor": binop(operator.xor),
        "__tf_mul": mul,
        "__tf_pow": power,
        "__tf_lshift": lshift,
        "__tf_mod": mod,
        "__tf_check_iadd": check_iadd,
        "__tf_iop_Add": augmented("Add"),
        "__tf_iop_Sub": augmented("Sub"),
        "__tf_iop_BitOr": augmented("BitOr"),
        "__tf_iop_BitAnd": augmented("BitAnd"),
        "__tf_iop_BitXor": augmented("BitXor"),
        "__tf_iop_Mult": augmented("Mult"),
        "__tf_iop_Pow": augmented("Pow"),
        "__tf_iop_LShift": augmented("LShift"),
        "__tf_iop_Mod": augmented("Mod"),
    }
