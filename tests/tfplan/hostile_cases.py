"""Plans that would take their host down — a segfault, a C call holding the GIL for
minutes, memory past every limit, a run that never ends — each with the error a guard must
give instead, inside the limits, at the plan's own position.

The cases are data, so any runner can replay them: in process (``test_hostile.py``) or
through sandbox worker processes. Each is ``(id, plan, expected, limits)``: ``expected`` is
an error class of ``dcbrain.tfplan.errors`` (or a tuple of them) and ``limits`` overrides
``LIMITS`` for that case.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from dcbrain.tfplan.errors import (
    CallDepthLimitExceeded,
    OperationLimitExceeded,
    OutputLimitExceeded,
    SizeLimitExceeded,
    TFLimitError,
    TFRuntimeError,
    TimeLimitExceeded,
)

#: The limits every case runs under unless it overrides them.
LIMITS: dict[str, Any] = {
    "max_operations": 200_000,
    "timeout_s": 2.0,
    "max_size": 100_000,
    "max_output_chars": 10_000,
    "max_calls": 50,
}
#: Guards against hangs, not a performance target.
MAX_WALL_S = 10.0


class HostileCase(NamedTuple):
    id: str
    plan: str
    expected: type[BaseException] | tuple[type[BaseException], ...]
    limits: Mapping[str, Any] = MappingProxyType({})


SIZE = SizeLimitExceeded
OPERATIONS = OperationLimitExceeded
LIMIT = TFLimitError
RUNTIME = TFRuntimeError
RUNAWAY = (OperationLimitExceeded, TimeLimitExceeded)
DEEP_LIMITS = {"max_operations": 10**6, "timeout_s": 8.0}  # building it is slow on a busy machine

#: A tuple nested 300,000 levels deep (hashing it recurses in C past the stack).
DEEP_TUPLE = "t = ()\nfor i in range(300000):\n    t = (t,)\n"
#: 41 objects, 2**40 leaves: the same part shared twice at every level.
DAG_LIST = "a = [1]\nfor i in range(40):\n    a = [a, a]\n"
DAG_TUPLE = "a = (1,)\nfor i in range(40):\n    a = (a, a)\n"
OTHER_DAG_LIST = "b = [1]\nfor i in range(40):\n    b = [b, b]\n"
#: 2**15 leaves of 90,000 characters: small enough to compare, 3 GB to render.
WIDE_TUPLE = "s = 'x' * 90000\nt = (s,)\nfor i in range(15):\n    t = (t, t)\n"
#: Two ints of about a million bits (under the default max_bits).
BIG_INTS = "x = 3 ** 600000\ny = 7 ** 200000\n"
#: Room to build BIG_INTS, whose powers are paid for by their size.
BIG_INTS_LIMITS = {"max_operations": 2_000_000}
#: A budget that a loop of big-int work uses up within a fraction of the time limit when
#: the work is paid for by size, and only long after it when each call costs one operation.
BIG_INT_WORK_LIMITS = {"max_operations": 3_000_000}


def _chain(wrapper: str) -> str:
    """20,000 lazy iterators, each over the next: one C recursion per level when pulled."""
    return f"it = range(1)\nfor i in range(20000):\n    it = {wrapper}\nlist(it)"


_BYTES = ",".join(map(str, range(256)))
#: CPython folds each display into one constant and rebuilds it at every step: ~3 GB
#: unless the display itself is charged.
DISPLAY_CASES: list[HostileCase] = [
    HostileCase("constant_set_display_in_a_comprehension",
                f"[{{{_BYTES}}} for i in range(200000)]", OPERATIONS),
    HostileCase("constant_list_display_in_a_comprehension",
                f"[[{_BYTES}] for i in range(200000)]", OPERATIONS),
    HostileCase("constant_dict_display_in_a_loop",
                "maps = []\nfor i in range(20000):\n    maps.append({"
                + ",".join(f"{n}: {n}" for n in range(256)) + "})", OPERATIONS),
    HostileCase("nested_small_displays_in_a_comprehension",
                "[[[i, i, i], [i, i, i], [i, i, i]] for i in range(200000)]", OPERATIONS),
    HostileCase("constant_display_past_max_size", f"s = {{{_BYTES}}}", SIZE,
                {"max_size": 100}),
]

HOSTILE_CASES: list[HostileCase] = [
    # --- dict views of deep or shared values: depth and DAG checks see through them ----
    HostileCase("set_of_values_view_of_deep_tuple", DEEP_TUPLE + "set({0: t}.values())",
                SIZE, DEEP_LIMITS),
    HostileCase("frozenset_of_items_view_of_deep_tuple",
                DEEP_TUPLE + "frozenset({0: t}.items())", SIZE, DEEP_LIMITS),
    HostileCase("starred_set_display_of_deep_tuple", DEEP_TUPLE + "s = {*[t]}", SIZE,
                DEEP_LIMITS),
    HostileCase("starred_set_display_of_values_view", DEEP_TUPLE + "s = {*{0: t}.values()}",
                SIZE, DEEP_LIMITS),
    HostileCase("items_views_of_dags_compared",
                DAG_LIST + OTHER_DAG_LIST + "{0: a}.items() == {0: b}.items()", SIZE),
    HostileCase("values_view_of_dags_sorted",
                DAG_LIST + OTHER_DAG_LIST + "sorted({0: a, 1: b}.values())", SIZE),
    HostileCase("values_view_of_dag_rendered", DAG_LIST + "str({0: a}.values())", SIZE),
    # --- keys checked at the call site, through a stored method, in a generator --------
    HostileCase("dict_get_with_a_dag_key", DAG_TUPLE + "{}.get(a)", SIZE),
    HostileCase("stored_dict_get_with_a_dag_key", DAG_TUPLE + "g = {}.get\ng(a)", SIZE),
    HostileCase("dict_key_in_a_generator_expression",
                DAG_TUPLE + "d = {}\nlist(d.get(k) for k in [a])", SIZE),
    HostileCase("set_add_of_a_dag", DAG_TUPLE + "s = set()\ns.add(a)", SIZE),
    # --- sort keys ----------------------------------------------------------------------
    HostileCase("list_sort_key_of_dags",
                DAG_LIST + OTHER_DAG_LIST + "xs = [a, b]\nxs.sort(key=lambda v: v)", SIZE),
    HostileCase("list_sort_of_dags", DAG_LIST + OTHER_DAG_LIST + "xs = [a, b]\nxs.sort()",
                SIZE),
    # --- keys sharing one hash: a quadratic insert loop in one C call -------------------
    HostileCase("dict_of_colliding_pairs",
                "dict([(i * (2 ** 61 - 1), 0) for i in range(30000)])", LIMIT,
                {"max_operations": 10**7}),
    HostileCase("dict_update_with_colliding_pairs",
                "d = {}\nd.update([(i * (2 ** 61 - 1), 0) for i in range(30000)])", LIMIT,
                {"max_operations": 10**7}),
    # --- big ints, paid for by bit size -------------------------------------------------
    HostileCase("pow_negative_exponent_with_modulus", "pow(3, -(10 ** 5000), 7 ** 5000)",
                LIMIT),
    HostileCase("modular_pow_of_huge_ints", "x = 7 ** 30000\npow(x, x, x + 2)", LIMIT),
    HostileCase("floor_division_of_million_bit_ints", BIG_INTS + "x // y", LIMIT,
                BIG_INTS_LIMITS),
    HostileCase("modulo_of_million_bit_ints", BIG_INTS + "x % y", LIMIT,
                BIG_INTS_LIMITS),
    HostileCase("divmod_of_million_bit_ints", BIG_INTS + "divmod(x, y)", LIMIT,
                BIG_INTS_LIMITS),
    HostileCase("augmented_floor_division", BIG_INTS + "x //= y", LIMIT,
                BIG_INTS_LIMITS),
    HostileCase("gcd_of_base32_ints",
                "x = int('v' * 90000, 32)\ny = int('u' * 90000, 32)\nmath.gcd(x, y)", LIMIT),
    HostileCase("int_of_long_base32_text", "int('v' * 90000, 32)", SIZE,
                {"max_bits": 100_000}),
    HostileCase("int_bits_have_their_own_limit", "2 ** 200000", SIZE, {"max_bits": 100_000}),
    HostileCase("isqrt_of_a_huge_power_in_a_loop", "while True:\n    math.isqrt(10**100000)",
                OPERATIONS, BIG_INT_WORK_LIMITS),
    HostileCase("isqrt_of_a_huge_int_in_a_loop", "n = 10**100000\nwhile True:\n    math.isqrt(n)",
                OPERATIONS, BIG_INT_WORK_LIMITS),
    HostileCase("comb_in_a_loop", "while True:\n    math.comb(10000, 5000)", OPERATIONS,
                BIG_INT_WORK_LIMITS),
    HostileCase("products_of_huge_ints_in_a_loop",
                "a = 3 ** 300000\nb = 7 ** 170000\nwhile True:\n    a * b", OPERATIONS,
                BIG_INT_WORK_LIMITS),
    HostileCase("huge_powers_in_a_loop", "while True:\n    x = 3 ** 600000", OPERATIONS,
                BIG_INT_WORK_LIMITS),
    HostileCase("rounding_a_huge_int_in_a_loop",
                "n = 10 ** 100000\nwhile True:\n    round(n, -50000)", OPERATIONS,
                BIG_INT_WORK_LIMITS),
    HostileCase("binary_text_of_a_huge_int_in_a_loop",
                "n = 3 ** 600000\nwhile True:\n    bin(n)", OPERATIONS,
                {**BIG_INT_WORK_LIMITS, "max_size": 10**6}),
    # --- output sized before it is built ------------------------------------------------
    HostileCase("percent_format_many_wide_fields", "('%99999d' * 50) % tuple(range(50))",
                SIZE),
    HostileCase("percent_format_many_long_values",
                "s = 'x' * 90000\n('%s' * 50) % ((s,) * 50)", SIZE),
    HostileCase("percent_format_named_fields",
                "s = 'x' * 90000\n('%(a)s' * 50) % {'a': s}", SIZE),
    HostileCase("fstring_many_long_fields", "s = 'x' * 90000\nf'" + "{s}" * 12 + "'", SIZE),
    HostileCase("fstring_many_wide_fields", "f'" + "{1:>99999}" * 20 + "'", SIZE),
    HostileCase("format_many_wide_fields", "('{:>99999}' * 50).format(*range(50))", SIZE),
    HostileCase("print_huge_separator", "print(*range(100), sep='x' * 90000)",
                OutputLimitExceeded),
    HostileCase("print_many_long_values", "s = 'x' * 9000\nprint(*[s] * 10000)",
                OutputLimitExceeded),
    HostileCase("json_dumps_huge_indent", "json.dumps([[1]] * 100, indent=10 ** 9)", SIZE),
    HostileCase("json_dumps_long_indent_text",
                "json.dumps({'a': [[[1]]]}, indent='x' * 60000)", SIZE),
    HostileCase("json_dumps_huge_separators",
                "json.dumps(list(range(1000)), separators=('x' * 90000, ':'))", SIZE),
    # --- unpacking and slice stores of huge iterables -----------------------------------
    HostileCase("starred_unpacking_of_huge_range", "a, *b = range(10 ** 9)", SIZE),
    HostileCase("starred_unpacking_in_for_loop",
                "for a, *b in [range(10 ** 9)]:\n    pass", SIZE),
    HostileCase("starred_unpacking_in_comprehension",
                "[b for a, *b in [range(10 ** 9)]]", SIZE),
    HostileCase("nested_starred_unpacking", "x, (y, *z) = 1, range(10 ** 9)", SIZE),
    HostileCase("slice_store_of_huge_range", "xs = [1, 2]\nxs[:] = range(10 ** 9)", SIZE),
    HostileCase("slice_store_in_tuple_target", "xs = []\na, xs[:] = 1, range(10 ** 9)", SIZE),
    HostileCase("slice_store_doubling", "xs = [0] * 1000\nwhile True:\n    xs[:0] = xs", SIZE),
    # --- lambdas, map and filter are operations -----------------------------------------
    HostileCase("lambda_calls_are_charged", "list(map(lambda v: v, range(150000)))",
                OPERATIONS),
    HostileCase("membership_in_a_huge_map", "5 in map(abs, range(-10 ** 12, 0))", RUNAWAY),
    HostileCase("map_chain", _chain("map(abs, it)"), LIMIT),
    HostileCase("filter_chain", _chain("filter(None, it)"), LIMIT),
    HostileCase("zip_chain", _chain("zip(it)"), LIMIT),
    HostileCase("enumerate_chain", _chain("enumerate(it)"), LIMIT),
    # --- displays of constants, built anew by every step of a loop ----------------------
    *DISPLAY_CASES,
    # --- growth past max_size one element at a time -------------------------------------
    HostileCase("list_append_in_a_loop", "xs = []\nwhile True:\n    xs.append(1)", SIZE,
                {"max_operations": 10**6}),
    HostileCase("list_insert_in_a_loop", "xs = []\nfor i in range(10 ** 6):\n    xs.insert(0, i)",
                LIMIT, {"max_operations": 10**7}),
    HostileCase("set_add_in_a_loop", "s = set()\nfor i in range(10 ** 6):\n    s.add(i)", SIZE,
                {"max_operations": 10**7}),
    # --- error messages rendered under a size cap ---------------------------------------
    HostileCase("assert_message_is_a_dag", DAG_LIST + "assert False, a", RUNTIME),
    HostileCase("raise_with_a_dag", DAG_LIST + "raise ValueError(a)", RUNTIME),
    HostileCase("key_error_with_a_wide_key", WIDE_TUPLE + "{}[t]", RUNTIME),
    HostileCase("set_remove_of_a_wide_key", WIDE_TUPLE + "set().remove(t)", RUNTIME),
    HostileCase("list_index_of_a_wide_value", WIDE_TUPLE + "[1].index(t)", RUNTIME),
    # --- parallel: branches bounded over every nesting level ----------------------------
    HostileCase("queued_branches_spin",
                "def spin():\n    while True:\n        pass\n"
                "parallel(*[spin() for i in range(20)])",
                RUNAWAY, {"max_parallel": 2, "max_operations": 10**12, "timeout_s": 1.0}),
    HostileCase("recursive_lambda_over_parallel",
                "f = lambda n: parallel(f(n + 1), f(n + 1))\nf(0)", CallDepthLimitExceeded),
    HostileCase("recursive_function_over_parallel",
                "def f(n):\n    return parallel(f(n + 1), f(n + 1))\nf(0)",
                CallDepthLimitExceeded),
]
