"""The methods a plan may call on each built-in type, and the helper modules' members.

Both are allowlists: methods by exact type, module members by name.

``FREE`` methods cost nothing beyond their call; every other listed method copies or
scans its object and is charged for its size (see ``guards/access.py``). A method that is not
listed does not exist for a plan, whatever Python offers.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from decimal import Decimal

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

#: dict/set methods whose first argument is hashed.
KEYED_METHODS = frozenset({"get", "pop", "setdefault", "add", "discard", "remove"})

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
# Decimal: predicates only (as_tuple, quantize and the context methods stay out: they
# expose the digits' tuple type or take a context)
_DECIMAL_FREE = {"is_finite", "is_infinite", "is_nan", "is_signed", "is_zero"}
# fields, and methods that build a value of bounded size from them (no now()/today(), no
# timestamp() or astimezone(): they read the host's clock or zone)
_DATE_FREE = {"year", "month", "day", "weekday", "isoweekday", "isoformat", "toordinal",
              "replace"}
_TIME_FREE = {"hour", "minute", "second", "microsecond", "isoformat", "replace",
              "utcoffset"}
_DATETIME_FREE = _DATE_FREE | _TIME_FREE | {"date", "time"}
_TIMEDELTA_FREE = {"days", "seconds", "microseconds", "total_seconds"}
#: Methods of dates, datetimes and times that render a format (checked before running).
TEMPORAL_FORMATTING = {"strftime"}

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
    Decimal: frozenset(_DECIMAL_FREE),
    date: frozenset(_DATE_FREE),
    datetime: frozenset(_DATETIME_FREE),
    time: frozenset(_TIME_FREE),
    timedelta: frozenset(_TIMEDELTA_FREE),
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
    Decimal: frozenset(),
    date: frozenset(TEMPORAL_FORMATTING),
    datetime: frozenset(TEMPORAL_FORMATTING),
    time: frozenset(TEMPORAL_FORMATTING),
    timedelta: frozenset(),
}

#: type -> every method a plan may call.
ALLOWED: dict[type, frozenset[str]] = {kind: FREE[kind] | CHARGED[kind] for kind in FREE}

#: How each method that changes its receiver in place moves labels (the label rewrite and
#: the static flow check read this table; docs/tfplan.md lists it):
#: ``adds``: its last argument becomes an element of the receiver;
#: ``merges``: the elements (and keys) of its last argument become elements of the receiver;
#: ``moves``: elements of the receiver move, go or come back (reorderings and removals).
#: At run time each makes the receiver, and every variable that may share it, carry the
#: union of its elements and of the call's arguments (no element keeps a label of its own
#: past it); the static check keeps only what is certain.
IN_PLACE_METHODS: dict[str, str] = {
    "append": "adds", "add": "adds", "insert": "adds",
    "extend": "merges", "update": "merges", "setdefault": "merges",
    "difference_update": "moves", "intersection_update": "moves",
    "symmetric_difference_update": "merges",
    "pop": "moves", "popitem": "moves", "remove": "moves", "discard": "moves",
    "clear": "moves", "reverse": "moves", "sort": "moves",
}

#: type -> members reached through the type itself rather than a value (``dict.fromkeys``).
TYPE_MEMBERS: dict[type, frozenset[str]] = {
    dict: frozenset({"fromkeys"}),
    date: frozenset({"fromisoformat"}),
    datetime: frozenset({"fromisoformat", "combine", "strptime"}),
    time: frozenset({"fromisoformat"}),
}

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

#: Members of the helper modules (reached as ``math.sqrt``); ``datetime`` and ``decimal``
#: hold the value types' constructors, and no clock (``now()``, ``today()``): a plan's
#: result depends on its calls alone, so a replay sees the same values.
MODULE_MEMBERS: dict[str, frozenset[str]] = {
    "math": frozenset((*MATH_FUNCTIONS, *MATH_CONSTANTS, *MATH_GUARDED)),
    "json": frozenset({"dumps", "loads"}),
    "datetime": frozenset({"date", "datetime", "time", "timedelta", "timezone"}),
    "decimal": frozenset({"Decimal"}),
}
