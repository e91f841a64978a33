"""Python's own wording for errors raised inside the sandbox's functions.

Builtins such as ``sorted`` or ``str.replace`` are Python functions here, defined inside
``build_builtins`` or as methods of the guard classes (``Strings``, ``Arithmetic`` …).
When a plan calls one with the wrong arguments, Python names the internal function
(``build_builtins.<locals>.plan_sorted() missing 1 required positional argument``,
``Strings.replace() missing 1 …``); :func:`public_message` turns that into what CPython
says for the real builtin (``sorted expected 1 argument, got 0``), and names the sandbox's
stand-ins for modules, types and chains as Python names what they stand for.
"""

from __future__ import annotations

import re

#: Internal function name -> the name a plan calls it by.
_PUBLIC_NAMES: dict[str, str] = {
    "plan_repr": "repr", "plan_print": "print", "plan_str": "str", "plan_list": "list",
    "plan_tuple": "tuple", "plan_set": "set", "plan_frozenset": "frozenset",
    "plan_dict": "dict", "plan_sorted": "sorted", "plan_sum": "sum", "plan_round": "round",
    "plan_isinstance": "isinstance", "plan_format": "format", "plan_hash": "hash",
    "plan_iter": "iter", "json_dumps": "json.dumps", "json_loads": "json.loads",
    "math_prod": "math.prod", "math_fsum": "math.fsum", "math_lcm": "math.lcm",
    "math_gcd": "math.gcd", "power": "pow", "str_format": "str.format",
    "str_replace": "replace", "str_expandtabs": "expandtabs", "lcm": "math.lcm",
    "gcd": "math.gcd", "isqrt": "math.isqrt", "to_int": "int",
}
#: Guard methods a plan reaches as a bound ``str`` method: the string is one more
#: positional argument than the plan passed.
_STR_BOUND = frozenset({"replace", "expandtabs"})
#: Public name -> (fewest, most positional arguments, CPython's wording: "expected" for
#: ``sorted expected 1 argument, got 0``, "one" for ``hash() takes exactly one argument``).
_ARITY: dict[str, tuple[int, int, str]] = {
    "sorted": (1, 1, "expected"), "list": (0, 1, "expected"), "tuple": (0, 1, "expected"),
    "set": (0, 1, "expected"), "frozenset": (0, 1, "expected"), "dict": (0, 1, "expected"),
    "format": (1, 2, "expected"), "isinstance": (2, 2, "expected"), "hash": (1, 1, "one"),
    "replace": (2, 3, "expected"), "expandtabs": (0, 1, "expected"),
    "divmod": (2, 2, "expected"), "center": (1, 2, "expected"), "ljust": (1, 2, "expected"),
    "rjust": (1, 2, "expected"), "round": (1, 2, "expected"), "math.isqrt": (1, 1, "one"),
}
_INTERNAL_CALL = re.compile(
    r"\b(?:dcbrain\.[\w.]+\.)?(?:build_builtins\.<locals>\.|"
    r"(Strings|Arithmetic|Access|Budget|Guards)\.)"
    r"(?:\w+\.<locals>\.)*(\w+)\(\)( .*)?$")
_MISSING = re.compile(r" missing (\d+) required positional arguments?: .*")
_TOO_MANY = re.compile(
    r" takes (?:from \d+ to )?\d+ positional arguments? but (\d+) w(?:as|ere) given")

_PUBLIC_TYPES: dict[str, str] = {"Namespace": "module", "TypeProxy": "type",
                                 "HostCallable": "function"}
_INTERNAL_TYPE = re.compile(r"(?<=')(?:Namespace|TypeProxy|HostCallable)(?=')|"
                            r"(?<=, not )(?:Namespace|TypeProxy|HostCallable)$")


def public_message(message: str, kind: str = "TypeError") -> str:
    """``message`` as CPython words it for what the plan called. Type names are replaced
    in type and attribute errors only (elsewhere the quoted text may be the plan's data)."""
    if "<locals>" in message or "()" in message:
        message = _INTERNAL_CALL.sub(_public_call, message)
    if kind in ("TypeError", "AttributeError"):
        message = _INTERNAL_TYPE.sub(lambda match: _PUBLIC_TYPES[match.group(0)], message)
    return message


def _public_call(match: re.Match[str]) -> str:
    name = _PUBLIC_NAMES.get(match.group(2), match.group(2))
    rest = match.group(3) or ""
    # a guard method counts ``self`` (and a bound string) among the arguments given
    extra = (match.group(1) is not None) + (name in _STR_BOUND)
    given = _given(name, rest, extra)
    if given is None:
        return f"{name}(){rest}"
    fewest, most, wording = _ARITY[name]
    if wording == "one":
        return f"{name}() takes exactly one argument ({given} given)"
    bound, count = ("at least ", fewest) if given < fewest else ("at most ", most)
    if fewest == most:
        bound = ""
    return f"{name} expected {bound}{count} argument{'' if count == 1 else 's'}, got {given}"


def _given(name: str, rest: str, extra: int) -> int | None:
    """How many positional arguments the call had, when ``rest`` is an arity error."""
    if name not in _ARITY:
        return None
    missing = _MISSING.fullmatch(rest)
    if missing is not None:
        return _ARITY[name][0] - int(missing.group(1))
    too_many = _TOO_MANY.fullmatch(rest)
    return int(too_many.group(1)) - extra if too_many is not None else None


_HIDDEN_KEYWORD = re.compile(
    r"but (\d+) positional arguments? \(and (\d+) keyword-only arguments?\) were given")


def without_label_keyword(message: str) -> str:
    """Python's message about a plan function's arguments, as if the hidden keyword that
    carries their labels were not there."""
    def plain(match: re.Match[str]) -> str:
        positional, keywords = int(match[1]), int(match[2]) - 1
        given = f"{positional} was" if positional == 1 else f"{positional} were"
        if not keywords:
            return f"but {given} given"
        plural = "s" if keywords > 1 else ""
        noun = "argument" if positional == 1 else "arguments"
        return (f"but {positional} positional {noun} (and {keywords} keyword-only "
                f"argument{plural}) were given")
    return _HIDDEN_KEYWORD.sub(plain, message)
