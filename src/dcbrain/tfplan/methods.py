"""The methods a plan may call on each built-in type, and the helper modules' members.

Both are allowlists: methods by exact type, module members by name.

``FREE`` methods cost nothing beyond their call; every other listed method copies or
scans its object and is charged for its size (see ``guards/access.py``). A method that is not
listed does not exist for a plan, whatever Python offers.
"""

from __future__ import annotations

_STR_FREE = {
    "startswith", "endswith", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit",
    "isidentifier", "islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper",
}
_STR_CHARGED = {
    "capitalize", "casefold", "count", "find", "index", "lower", "lstrip", "partition",
    "removeprefix", "removesuffix", "rfind", "rindex", "rpartition", "rsplit", "rstrip",
    "split", "splitlines", "strip", "swapcase", "title", "upper",
}
#: str methods whose result can be far larger than their object: checked before running.
STR_GROWING = {"center", "ljust", "rjust", "zfill", "expandtabs", "replace", "join", "format"}

_LIST_FREE = {"append", "pop", "clear", "insert", "remove", "reverse"}
_LIST_CHARGED = {"copy", "count", "index", "extend", "sort"}
_TUPLE_CHARGED = {"count", "index"}
_DICT_FREE = {"get", "pop", "popitem", "setdefault", "clear", "keys", "values", "items"}
_DICT_CHARGED = {"copy", "update"}
_SET_FREE = {"add", "discard", "remove", "pop", "clear"}
_SET_CHARGED = {
    "copy", "difference", "difference_update", "intersection", "intersection_update",
    "isdisjoint", "issubset", "issuperset", "symmetric_difference",
    "symmetric_difference_update", "union", "update",
}
_FROZENSET_CHARGED = {
    "copy", "difference", "intersection", "isdisjoint", "issubset", "issuperset",
    "symmetric_difference", "union",
}
_INT_FREE = {"bit_length", "bit_count", "as_integer_ratio", "conjugate"}
_FLOAT_FREE = {"is_integer", "as_integer_ratio", "conjugate", "hex"}

#: type -> methods that cost one call.
FREE: dict[type, frozenset[str]] = {
    str: frozenset(_STR_FREE),
    list: frozenset(_LIST_FREE),
    tuple: frozenset(),
    dict: frozenset(_DICT_FREE),
    set: frozenset(_SET_FREE),
    frozenset: frozenset(),
    int: frozenset(_INT_FREE),
    bool: frozenset(_INT_FREE),
    float: frozenset(_FLOAT_FREE),
}

#: type -> methods charged for the size of their object (and of their arguments).
CHARGED: dict[type, frozenset[str]] = {
    str: frozenset(_STR_CHARGED | STR_GROWING),
    list: frozenset(_LIST_CHARGED),
    tuple: frozenset(_TUPLE_CHARGED),
    dict: frozenset(_DICT_CHARGED),
    set: frozenset(_SET_CHARGED),
    frozenset: frozenset(_FROZENSET_CHARGED),
    int: frozenset(),
    bool: frozenset(),
    float: frozenset(),
}

#: type -> every method a plan may call.
ALLOWED: dict[type, frozenset[str]] = {kind: FREE[kind] | CHARGED[kind] for kind in FREE}

#: type -> members reached through the type itself rather than a value (``dict.fromkeys``).
TYPE_MEMBERS: dict[type, frozenset[str]] = {dict: frozenset({"fromkeys"})}

#: Every method name that exists for some type (used by the static checker).
ALL_METHOD_NAMES: frozenset[str] = frozenset().union(*ALLOWED.values(), *TYPE_MEMBERS.values())

#: Functions of ``math`` passed through unchanged (they neither iterate nor grow values).
MATH_FUNCTIONS = (
    "ceil", "floor", "trunc", "sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan",
    "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "degrees", "radians", "hypot",
    "fabs", "copysign", "isclose", "isfinite", "isinf", "isnan", "fmod",
    "remainder", "dist", "modf", "frexp", "ldexp", "erf", "erfc", "gamma", "lgamma",
)
MATH_CONSTANTS = ("pi", "e", "tau", "inf", "nan")
#: ``math`` functions that run under the budget (bounded arguments, charged loops).
MATH_GUARDED = ("factorial", "comb", "perm", "prod", "fsum", "pow", "lcm", "gcd", "isqrt")

#: Members of the helper modules ``math`` and ``json`` (reached as ``math.sqrt``).
MODULE_MEMBERS: dict[str, frozenset[str]] = {
    "math": frozenset((*MATH_FUNCTIONS, *MATH_CONSTANTS, *MATH_GUARDED)),
    "json": frozenset({"dumps", "loads"}),
}
