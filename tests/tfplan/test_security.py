"""The tf_plan sandbox holds against known Python-sandbox escapes and resource exhaustion.

Each attack is a plan a hostile or confused planner could write. It must end in a
``TFInterpreterError`` (the class given in the table, or the common base where several
are defensible), quickly, and without touching the host (see ``host_guard``).

The attacks follow the public history of broken Python sandboxes: smolagents'
LocalPythonExecutor (CVE-2025-5120, CVE-2025-9959: modules through function globals,
``__class__.__mro__``/``__subclasses__``, builtins through tool objects), RestrictedPython
and asteval advisories (format-string attribute access, ``str.format_map``, generator
frames, ``f_globals``/``f_back``), and the classic resource bombs.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from dcbrain.tfplan import Interpreter, Limits, TFInterpreterError
from dcbrain.tfplan.errors import (
    CallDepthLimitExceeded,
    CallLimitExceeded,
    OperationLimitExceeded,
    OutputLimitExceeded,
    SizeLimitExceeded,
    TFCheckError,
    TFLimitError,
    TFRuntimeError,
    TFSyntaxError,
    TimeLimitExceeded,
)

TEST_LIMITS: dict[str, Any] = {
    "max_operations": 200_000,
    "timeout_s": 2.0,
    "max_size": 100_000,
    "max_output_chars": 10_000,
    "max_calls": 50,
}
#: Guards against hangs, not a performance target.
MAX_WALL_S = 10.0

SYNTAX = TFSyntaxError
CHECK = TFCheckError
RUNTIME = TFRuntimeError
ANY = TFInterpreterError
SIZE = SizeLimitExceeded
OUTPUT = OutputLimitExceeded
CALLS = CallLimitExceeded
DEPTH = CallDepthLimitExceeded
LIMIT = TFLimitError
RUNAWAY = (OperationLimitExceeded, TimeLimitExceeded)
#: A name outside the builtin allowlist: rejected by the checker when the plan is checked,
#: else a NameError when it runs (``Interpreter.run(source)`` does not check by default).
UNKNOWN_NAME = "unknown name"


def make_interpreter(host: Any, **limit_overrides: Any) -> Interpreter:
    limits = Limits(**{**TEST_LIMITS, **limit_overrides})
    return Interpreter(callables=host.callables, tools=host.tools, limits=limits)


def attempt(host: Any, source: str, **limit_overrides: Any) -> Any:
    """Run ``source``; return the result, or whatever was raised (even BaseException)."""
    try:
        return make_interpreter(host, **limit_overrides).run(source)
    except BaseException as exc:  # SystemExit or KeyboardInterrupt must not slip past
        return exc


#: 41 objects, 2**40 leaves: the same part shared twice at every level.
DAG_TUPLE = "a = (1,)\nfor i in range(40):\n    a = (a, a)\n"
DAG_LIST = "a = [1]\nfor i in range(40):\n    a = [a, a]\n"
#: A tuple nested 300,000 levels deep (building it takes a while on a busy machine).
DEEP_TUPLE = "t = ()\nfor i in range(300000):\n    t = (t,)\n"
DEEP_LIMITS: dict[str, Any] = {"max_operations": 10**6, "timeout_s": 8.0}


def attack(case_id: str, source: str, expected: Any, **limit_overrides: Any) -> Any:
    return pytest.param(source, expected, limit_overrides, id=case_id)


def nested_calls(count: int) -> str:
    return "parallel(" + ", ".join(f"search(query='{i}')" for i in range(count)) + ")"


ATTACKS = [
    # --- constructs the language rejects at parse time ----------------------------------
    attack("import", "import os\nos.system('touch ' + SENTINEL_PATH)", SYNTAX),
    attack("from_import", "from os import system\nsystem('id')", SYNTAX),
    attack("import_builtins", "import builtins\nbuiltins.open(SENTINEL_PATH, 'w')", SYNTAX),
    attack("dunder_import", "__import__('os').system('touch ' + SENTINEL_PATH)", SYNTAX),
    attack("builtins_name", "__builtins__['open'](SENTINEL_PATH, 'w')", SYNTAX),
    attack("dunder_name", "__name__", SYNTAX),
    attack("loader", "__loader__.load_module('os')", SYNTAX),
    attack("try_swallows_limit", "try:\n    while True:\n        pass\nexcept BaseException:\n"
           "    pass", SYNTAX),
    attack("with_open", "with open(SENTINEL_PATH, 'w') as fh:\n    fh.write('x')", SYNTAX),
    attack("class_def", "class A:\n    pass", SYNTAX),
    attack("async_def", "async def f():\n    return 1", SYNTAX),
    attack("await", "await search(query='x')", SYNTAX),
    attack("yield_generator", "def g():\n    yield 1\nlist(g())", SYNTAX),
    attack("yield_in_lambda", "g = lambda: (yield)", SYNTAX),
    attack("global_dunder", "def f():\n    global __builtins__\n    __builtins__ = {}", SYNTAX),
    attack("nonlocal_module_level", "nonlocal x", SYNTAX),
    attack("decorator_builtin", "@print\ndef f():\n    pass", SYNTAX),
    attack("decorator_host", "@search\ndef f():\n    pass", SYNTAX),
    attack("null_byte", "1\x00", SYNTAX),
    attack("lone_surrogate", "'\ud800'", SYNTAX),
    attack("nested_brackets_1000", "[" * 1000 + "]" * 1000, SYNTAX),
    attack("chained_plus_10000", "1" + " + 1" * 10_000, ANY),
    attack("unary_minus_100000", "-" * 100_000 + "1", ANY),
    attack("not_chain_10000", "not " * 10_000 + "True", ANY),
    # --- dunder attributes: the classic object-graph walks ------------------------------
    attack("tuple_subclasses", "().__class__.__mro__[-1].__subclasses__()", SYNTAX),
    attack("str_base", "''.__class__.__base__", SYNTAX),
    attack("print_self", "print.__self__.__import__('os')", SYNTAX),
    attack("len_module", "len.__module__", SYNTAX),
    attack("join_self", "''.join.__self__", SYNTAX),
    attack("function_globals", "def f():\n    pass\nf.__globals__['__builtins__']", SYNTAX),
    attack("lambda_globals", "(lambda: 0).__globals__", SYNTAX),
    attack("function_code", "def f():\n    return 1\nf.__code__.co_consts", SYNTAX),
    attack("closure_cell", "def outer():\n    x = 1\n    def inner():\n        return x\n"
           "    return inner\nouter().__closure__[0].cell_contents", SYNTAX),
    attack("host_globals", "search.__globals__['os']", SYNTAX),
    attack("host_call_globals", "search.__call__.__globals__", SYNTAX),
    attack("tool_wrapped", "lookup.__wrapped__", SYNTAX),
    attack("tool_private", "lookup._validated", SYNTAX),
    attack("construct_chain_globals", "__construct_chain.__globals__", SYNTAX),
    attack("construct_chain_code", "__construct_chain.__code__", SYNTAX),
    attack("exception_traceback", "ValueError('x').__traceback__", SYNTAX),
    attack("set_host_defaults", "search.__defaults__ = ('pwned', 1)", SYNTAX),
    attack("swap_host_code", "def f():\n    pass\nsearch.__code__ = f.__code__", SYNTAX),
    attack("fstring_globals", "f'{search.__globals__}'", SYNTAX),
    attack("lambda_default_self", "(lambda p=print: p.__self__)()", SYNTAX),
    attack("walrus_comprehension", "[(b := print.__self__) for i in [1]]\nb", SYNTAX),
    attack("walrus_builtins", "[(__builtins__ := {}) for i in [1]]", SYNTAX),
    attack("fullwidth_dunder", "().\uff3f\uff3fclass\uff3f\uff3f", SYNTAX),
    attack("fullwidth_import", "\uff3f\uff3fimport\uff3f\uff3f('os')", SYNTAX),
    # --- names outside the builtin allowlist --------------------------------------------
    attack("eval", "eval('1 + 1')", UNKNOWN_NAME),
    attack("exec", "exec('import os')", UNKNOWN_NAME),
    attack("open_write", "open(SENTINEL_PATH, 'w').write('x')", UNKNOWN_NAME),
    attack("compile", "compile('1', 'x', 'eval')", UNKNOWN_NAME),
    attack("getattr", "getattr(search, '__glo' + 'bals__')", UNKNOWN_NAME),
    attack("setattr", "setattr(search, 'x', 1)", UNKNOWN_NAME),
    attack("delattr", "delattr(search, 'x')", UNKNOWN_NAME),
    attack("hasattr", "hasattr(search, '__globals__')", UNKNOWN_NAME),
    attack("map_getattr", "list(map(getattr, [search], ['__globals__']))", UNKNOWN_NAME),
    attack("globals", "globals()", UNKNOWN_NAME),
    attack("locals", "locals()", UNKNOWN_NAME),
    attack("vars", "vars(search)", UNKNOWN_NAME),
    attack("dir", "dir()", UNKNOWN_NAME),
    attack("type", "type(search)", UNKNOWN_NAME),
    attack("object", "object()", UNKNOWN_NAME),
    attack("super", "super()", UNKNOWN_NAME),
    attack("classmethod", "classmethod(len)", UNKNOWN_NAME),
    attack("staticmethod", "staticmethod(len)", UNKNOWN_NAME),
    attack("property", "property(len)", UNKNOWN_NAME),
    attack("memoryview", "memoryview('a')", UNKNOWN_NAME),
    attack("bytearray", "bytearray(10)", UNKNOWN_NAME),
    attack("breakpoint", "breakpoint()", UNKNOWN_NAME),
    attack("help", "help()", UNKNOWN_NAME),
    attack("exit", "exit()", UNKNOWN_NAME),
    attack("quit", "quit()", UNKNOWN_NAME),
    attack("input", "input()", UNKNOWN_NAME),
    attack("id", "id(search)", UNKNOWN_NAME),
    attack("os_name", "os.system('id')", UNKNOWN_NAME),
    attack("sys_name", "sys.modules", UNKNOWN_NAME),
    attack("fullwidth_eval", "\uff45\uff56\uff41\uff4c('1 + 1')", UNKNOWN_NAME),
    attack("fullwidth_exec", "\uff45\uff58\uff45\uff43('import os')", UNKNOWN_NAME),
    attack("fullwidth_getattr",
           "\uff47\uff45\uff54\uff41\uff54\uff54\uff52(search, 'x')", UNKNOWN_NAME),
    attack("script_e_eval", "\u212fval('1')", UNKNOWN_NAME),
    # --- raising what a host must never see ---------------------------------------------
    attack("raise_system_exit", "raise SystemExit", ANY),
    attack("raise_system_exit_0", "raise SystemExit(0)", ANY),
    attack("raise_keyboard_interrupt", "raise KeyboardInterrupt", ANY),
    attack("raise_generator_exit", "raise GeneratorExit", ANY),
    attack("raise_base_exception", "raise BaseException('x')", ANY),
    attack("raise_memory_error", "raise MemoryError", ANY),
    attack("raise_host_callable", "raise search", ANY),
    attack("raise_value_error", "raise ValueError('boom')", RUNTIME),
    attack("zero_division", "1 / 0", RUNTIME),
    # --- frames, code objects and other non-dunder reflection ---------------------------
    attack("generator_frame_globals", "g = (x for x in [1])\ng.gi_frame.f_globals", ANY),
    attack("generator_code", "g = (x for x in [1])\ng.gi_code.co_consts", ANY),
    attack("generator_f_back", "g = (x for x in [1])\ng.gi_frame.f_back.f_builtins", ANY),
    attack("generator_yieldfrom", "g = (x for x in [1])\ng.gi_yieldfrom", ANY),
    attack("generator_throw", "g = (x for x in [1])\ng.throw(ValueError)", ANY),
    attack("with_traceback", "ValueError('x').with_traceback(None)", ANY),
    attack("py2_func_globals", "def f():\n    pass\nf.func_globals", ANY),
    attack("str_mro", "str.mro()", ANY),
    # --- format strings -----------------------------------------------------------------
    attack("format_class", "'{0.__class__}'.format(1)", ANY),
    attack("format_subclasses", "'{0.__class__.__mro__[1].__subclasses__}'.format(())", ANY),
    attack("format_host_globals", "'{f.__globals__}'.format(f=search)", ANY),
    attack("format_plan_fn_globals", "def g():\n    pass\n"
           "'{0.__globals__[__builtins__]}'.format(g)", ANY),
    attack("format_plain_attribute", "'{0.real}'.format(1)", ANY),
    attack("format_index_on_str", "'{0[0]}'.format('abc')", ANY),
    attack("format_name_index_on_list", "'{0[x]}'.format([1])", ANY),
    attack("format_index_on_host", "'{0[0]}'.format(search)", ANY),
    attack("format_built_at_runtime", "fmt = '{0.__cla' + 'ss__}'\nfmt.format(1)", ANY),
    attack("format_bound_method_stored", "fmt = '{0.__class__}'.format\nfmt(1)", ANY),
    attack("format_unbound", "str.format('{0.__class__}', 1)", ANY),
    attack("format_through_map", "list(map('{0.__class__}'.format, [1]))", ANY),
    attack("format_as_sort_key", "sorted([1, 2], key='{0.__class__}'.format)", ANY),
    attack("format_lambda_default", "(lambda fmt=str.format: fmt('{0.__class__}', 1))()", ANY),
    attack("format_map", "'{x.__class__}'.format_map({'x': 1})", ANY),
    attack("format_map_index", "'{x[0]}'.format_map({'x': [1]})", ANY),
    attack("format_spec_field_attribute", "'{0:{1.__class__}}'.format(1, 2)", ANY),
    # --- host callables are opaque handles ----------------------------------------------
    attack("tool_func", "lookup.func", ANY),
    attack("tool_call_method", "lookup.call(key='x')", ANY),
    attack("host_name", "search.name", ANY),
    attack("host_set_attribute", "search.cache = {}", SYNTAX),
    attack("host_del_attribute", "del search.cache", SYNTAX),
    attack("construct_chain_func", "__construct_chain.func", ANY),
    attack("host_private_kwarg", "search(**{'query': 'x', '__class__': 1})", ANY),
    attack("host_star_args", "print(*search)", ANY),
    attack("isinstance_host", "isinstance(1, search)", ANY),
    attack("isinstance_deep_tuple", "t = int\nfor i in range(5000):\n    t = (t,)\n"
           "isinstance(1, t)", ANY),
    attack("repr_deep_list", "x = []\nfor i in range(5000):\n    x = [x]\nstr(x)", ANY),
    attack("compare_deep_lists", "a = []\nb = []\nfor i in range(5000):\n    a = [a]\n"
           "    b = [b]\na == b", ANY),
    attack("repr_aliased_dag", DAG_LIST + "str(a)", ANY),
    # Structures that share their own parts: 41 objects, 2**40 leaves. Python compares and
    # hashes them leaf by leaf in one C call, so they must be refused before that call.
    attack("compare_aliased_dags",
           DAG_LIST + "b = [1]\nfor i in range(40):\n    b = [b, b]\na == b", SIZE),
    attack("hash_aliased_tuple_dag", DAG_TUPLE + "{a: 1}", SIZE),
    attack("dag_subscript_key", DAG_TUPLE + "d = {}\nd[a] = 1", SIZE),
    attack("dag_in_list", DAG_LIST + "b = [a]\nx = [1] in b", SIZE),
    attack("dag_chained_compare", DAG_LIST + "x = 1\nx < a < a", SIZE),
    attack("dag_set_add", DAG_TUPLE + "s = set()\ns.add(a)", SIZE),
    attack("dag_dict_get", DAG_TUPLE + "d = {}\nd.get(a)", SIZE),
    attack("dag_set_display", DAG_TUPLE + "s = {a}", SIZE),
    attack("dag_set_comprehension", DAG_TUPLE + "s = {a for i in range(2)}", SIZE),
    attack("dag_sorted", DAG_LIST + "sorted([a, a])", SIZE),
    attack("dag_max_key", DAG_LIST + "max([1, 2], key=lambda i: a)", SIZE),
    attack("dag_list_index", DAG_LIST + "[a, a].index([2])", SIZE),
    attack("dag_list_remove", DAG_LIST + "b = [a]\nb.remove([2])", SIZE),
    attack("dag_set_constructor", DAG_TUPLE + "set([a])", SIZE),
    attack("dag_set_update", DAG_TUPLE + "s = set()\ns.update([a])", SIZE),
    # Hashing a tuple nested 300,000 deep recurses in C without a depth check (a crash).
    attack("deep_tuple_dict_key", DEEP_TUPLE + "d = {}\nd[t] = 1", SIZE, **DEEP_LIMITS),
    attack("deep_tuple_set_display", DEEP_TUPLE + "s = {t}", SIZE, **DEEP_LIMITS),
    attack("deep_tuple_fromkeys", DEEP_TUPLE + "dict.fromkeys([t])", SIZE, **DEEP_LIMITS),
    attack("deep_tuple_frozenset", DEEP_TUPLE + "frozenset([t])", SIZE, **DEEP_LIMITS),
    # single built-in calls that would run long in C
    attack("round_huge_negative_digits", "x = round(1, -10 ** 8)\nwhile True:\n    pass", RUNAWAY),
    attack("lcm_of_a_long_range", "math.lcm(*range(1, 400000))", LIMIT),
    attack("hash_collision_set_update",
           "xs = [i * (2 ** 61 - 1) for i in range(60000)]\ns = set()\ns.update(xs)", LIMIT,
           max_operations=10 ** 7),
    attack("hash_collision_fromkeys",
           "dict.fromkeys([i * (2 ** 61 - 1) for i in range(60000)])", LIMIT,
           max_operations=10 ** 7),
    attack("format_repr_conversion_of_a_dag",
           "a = [1]\nfor i in range(24):\n    a = [a, a]\n'{!r}'.format(a)", SIZE),
    attack("exponential_recursion", "def f(n):\n    return 0 if n == 0 else f(n - 1) + f(n - 1)\n"
           "f(40)", RUNAWAY),
    attack("print_file_argument", "print('x', file=SENTINEL_PATH)", ANY),
    # --- sizes: ints, strings, collections ----------------------------------------------
    attack("power_tower", "9 ** 9 ** 9", SIZE),
    attack("power_2_10_10", "2 ** 10 ** 10", SIZE),
    attack("pow_builtin", "pow(10, 10 ** 10)", SIZE),
    attack("shift", "1 << 10 ** 10", SIZE),
    attack("int_squaring", "x = 3\nwhile True:\n    x = x * x", LIMIT),  # bits or budget
    attack("str_repeat", "'a' * 10 ** 10", SIZE),
    attack("list_repeat", "[0] * 10 ** 10", SIZE),
    attack("list_repeat_twice", "[0] * 1000 * 1000", SIZE),
    attack("tuple_repeat", "(1, 2) * 10 ** 6", SIZE),
    attack("str_doubling", "s = 'a'\nwhile True:\n    s = s + s", SIZE),
    attack("list_doubling_augmented", "x = [0]\nwhile True:\n    x += x", SIZE),
    attack("list_extend_self", "x = [0] * 50000\nx.extend(x)\nx.extend(x)", LIMIT),
    attack("list_inplace_repeat", "x = [0] * 1000\nx *= 10 ** 6", SIZE),
    attack("str_concat", "'a' * 60000 + 'b' * 60000", SIZE),
    attack("dict_growth", "d = {}\nfor i in range(10 ** 6):\n    d[i] = i", LIMIT),
    attack("str_replace_growth", "s = 'a' * 1000\ns.replace('a', s)", SIZE),
    attack("str_replace_loop", "s = 'ab'\nwhile True:\n    s = s.replace('a', 'aa')", SIZE),
    attack("ljust", "'x'.ljust(10 ** 10)", SIZE),
    attack("center", "'x'.center(10 ** 10)", SIZE),
    attack("zfill", "'1'.zfill(10 ** 10)", SIZE),
    attack("expandtabs", r"('\t' * 1000).expandtabs(10 ** 7)", SIZE),
    attack("join_big_pieces", "s = 'a' * 60000\ns.join(['', '', ''])", SIZE),
    attack("join_repeated_list", "', '.join(['abc'] * 10 ** 8)", SIZE),
    attack("join_endless_generator", "''.join('a' for i in range(10 ** 9))", LIMIT),
    attack("format_width", "'{:>10000000000}'.format(1)", SIZE),
    attack("format_nested_width", "'{:>{}}'.format(1, 10 ** 10)", SIZE),
    attack("format_nested_indexed_width", "'{0:>{1}}'.format(1, 10 ** 10)", SIZE),
    attack("fstring_width", "f'{1:>{10 ** 10}}'", SIZE),
    attack("fstring_doubling", "s = 'ab'\nwhile True:\n    s = f'{s}{s}'", SIZE),
    attack("fstring_doubling_in_comprehension",
           "s = 'x' * 1000\nparts = [f'{s}{s}{s}{s}' for i in range(100000)]", LIMIT),
    attack("percent_width", "'%10000000000d' % 1", SIZE),
    attack("percent_star_width", "'%*d' % (10 ** 10, 1)", SIZE),
    attack("format_builtin_width", "format(1, '>10000000000')", (SIZE, CHECK, RUNTIME)),
    attack("host_argument_too_big", "lookup(key='x' * 10 ** 10)", SIZE),
    attack("str_of_huge_int", "str(10 ** 5000)", ANY),
    attack("int_of_huge_str", "int('9' * 50000)", ANY),
    attack("float_overflow", "10.0 ** 400", RUNTIME),
    # --- collections built by builtins in C loops ---------------------------------------
    attack("list_range_huge", "list(range(10 ** 18))", LIMIT),
    attack("sum_range_huge", "sum(range(10 ** 15))", LIMIT),
    attack("max_range_huge", "max(range(10 ** 15))", LIMIT),
    attack("sorted_range_huge", "sorted(range(10 ** 9))", LIMIT),
    attack("set_range_huge", "set(range(10 ** 9))", LIMIT),
    attack("tuple_range_huge", "tuple(range(10 ** 9))", LIMIT),
    attack("zip_range_huge", "list(zip(range(10 ** 9), range(10 ** 9)))", LIMIT),
    attack("dict_fromkeys", "dict.fromkeys(range(10 ** 9))", ANY),
    attack("dict_fromkeys_on_instance", "{}.fromkeys(range(10 ** 9))", ANY),
    attack("comprehension_bomb", "[[0] * 10 ** 5 for i in range(10 ** 5)]", LIMIT),
    attack("nested_comprehension", "[i * j for i in range(10 ** 5) for j in range(10 ** 5)]",
           LIMIT),
    attack("any_over_huge_range", "any(x < 0 for x in range(10 ** 15))", RUNAWAY),
    # --- single C-level calls whose cost is not proportional to their size -------------
    attack("modular_pow_big_exponent", "pow(3, 10 ** 5000, 7 ** 5000)", LIMIT),
    attack("hash_collision_set", "x = [i * (2 ** 61 - 1) for i in range(60000)]\nlen(set(x))",
           LIMIT, max_operations=10 ** 7),
    # --- runaway loops and recursion ----------------------------------------------------
    attack("while_true", "while True:\n    pass", RUNAWAY),
    attack("while_true_wall_time", "while True:\n    pass", TimeLimitExceeded,
           max_operations=10 ** 12, timeout_s=1.0),
    attack("recursion", "def f(n):\n    return f(n + 1)\nf(0)", DEPTH),
    attack("mutual_recursion", "def a(n):\n    return b(n)\ndef b(n):\n    return a(n)\na(0)",
           DEPTH),
    attack("lambda_recursion", "f = lambda: f()\nf()", DEPTH),
    attack("recursion_through_map", "def f(x):\n    return list(map(f, [x]))\nf(1)", LIMIT),
    attack("recursion_through_sort_key", "def f(x):\n    return sorted([x], key=f)\nf(1)",
           LIMIT),
    attack("recursion_past_python_limit", "def f(n):\n    return f(n + 1)\nf(0)", ANY,
           max_call_depth=100_000),
    attack("sort_key_loops", "def k(x):\n    while True:\n        pass\nsorted([3, 1, 2], key=k)",
           RUNAWAY),
    attack("parallel_branches_spin", "def spin():\n    while True:\n        pass\n"
           "parallel(spin(), spin())", LIMIT),
    # --- output and host-call floods ----------------------------------------------------
    attack("print_flood", "while True:\n    print('x' * 100)", OUTPUT),
    attack("print_big", "print('x' * 20000)", OUTPUT),
    attack("print_big_end", "print('a', end='b' * 20000)", OUTPUT),
    attack("print_many_args", "print(*range(10000))", OUTPUT),
    attack("host_call_flood", "for i in range(10 ** 6):\n    search(query='q')", CALLS),
    attack("tool_call_flood", "[lookup(key=str(i)) for i in range(1000)]", CALLS),
    attack("parallel_flood", nested_calls(60), CALLS),
    attack("parallel_starred_flood", "parallel(*[search(query=str(i)) for i in range(100)])",
           ANY),
]


@pytest.mark.parametrize(("source", "expected", "limit_overrides"), ATTACKS)
def test_attack_is_stopped(
    host_guard: Any, source: str, expected: Any, limit_overrides: dict[str, Any]
) -> None:
    source = source.replace("SENTINEL_PATH", repr(str(host_guard.sentinel)))
    started = time.monotonic()
    outcome = attempt(host_guard, source, **limit_overrides)
    elapsed = time.monotonic() - started

    host_guard.assert_host_untouched()
    max_calls = limit_overrides.get("max_calls", TEST_LIMITS["max_calls"])
    assert len(host_guard.calls) <= max_calls, f"{len(host_guard.calls)} host calls got through"
    assert isinstance(outcome, BaseException), f"plan completed: value={outcome.value!r:.200}"
    assert isinstance(outcome, TFInterpreterError), (
        f"plain {type(outcome).__name__} escaped the sandbox: {outcome!r}"
    )
    assert elapsed < MAX_WALL_S, f"took {elapsed:.1f}s"
    assert_expected(outcome, expected)
    assert isinstance(outcome.line, int)
    assert isinstance(outcome.col, int)
    assert outcome.kind
    assert str(outcome)


def assert_expected(outcome: TFInterpreterError, expected: Any) -> None:
    if expected == UNKNOWN_NAME:
        unknown = isinstance(outcome, CHECK) or (
            isinstance(outcome, RUNTIME) and outcome.kind == "NameError"
        )
        assert unknown, f"{type(outcome).__name__}: {outcome}"
    else:
        assert isinstance(outcome, expected), f"{type(outcome).__name__}: {outcome}"


UNKNOWN_NAME_ATTACKS = [case for case in ATTACKS if case.values[1] == UNKNOWN_NAME]


@pytest.mark.parametrize(("source", "expected", "limit_overrides"), UNKNOWN_NAME_ATTACKS)
def test_checker_rejects_unknown_names(
    host_guard: Any, source: str, expected: Any, limit_overrides: dict[str, Any]
) -> None:
    source = source.replace("SENTINEL_PATH", repr(str(host_guard.sentinel)))
    with pytest.raises(CHECK) as caught:
        make_interpreter(host_guard, **limit_overrides).run(source, check=True)
    assert caught.value.problems
    assert host_guard.calls == []
    host_guard.assert_host_untouched()


ASYNC_ATTACKS = [
    attack("while_true", "while True:\n    pass", RUNAWAY),
    attack("host_call_flood", "for i in range(10 ** 6):\n    search(query='q')", CALLS),
    attack("format_class", "'{0.__class__}'.format(1)", ANY),
    attack("str_repeat", "'a' * 10 ** 10", SIZE),
    attack("print_flood", "while True:\n    print('x' * 100)", OUTPUT),
]


@pytest.mark.parametrize(("source", "expected", "limit_overrides"), ASYNC_ATTACKS)
async def test_attack_is_stopped_under_arun(
    host_guard: Any, source: str, expected: Any, limit_overrides: dict[str, Any]
) -> None:
    started = time.monotonic()
    with pytest.raises(expected):
        await make_interpreter(host_guard, **limit_overrides).arun(source)
    assert time.monotonic() - started < MAX_WALL_S
    host_guard.assert_host_untouched()


DEEP_BUT_PARSEABLE = [
    pytest.param("1" + " + 1" * 2000, id="chained_plus_2000"),
    pytest.param("-" * 900 + "1", id="unary_minus_900"),
    pytest.param("not " * 900 + "True", id="not_chain_900"),
    pytest.param("[" * 190 + "]" * 190, id="nested_list_190"),
    pytest.param("1 if True else " * 500 + "1", id="conditional_chain_500"),
    pytest.param("x = 1\n" + "y = " + "(lambda: " * 150 + "x" + ")()" * 150, id="lambdas_150"),
]


@pytest.mark.parametrize("source", DEEP_BUT_PARSEABLE)
def test_deep_plans_evaluate_or_fail_cleanly(host_guard: Any, source: str) -> None:
    started = time.monotonic()
    outcome = attempt(host_guard, source)
    assert time.monotonic() - started < MAX_WALL_S
    if isinstance(outcome, BaseException):
        assert isinstance(outcome, TFInterpreterError), f"plain {type(outcome).__name__}"
    host_guard.assert_host_untouched()


# --- positive controls: the sandbox runs legitimate plans -------------------------------


def test_format_with_plain_fields_and_specs(host_guard: Any) -> None:
    result = make_interpreter(host_guard).run("'{} {name:>8}'.format(1, name='x')")
    assert result.value == "1        x"
    host_guard.assert_host_untouched()


def test_format_indexes_a_dict(host_guard: Any) -> None:
    result = make_interpreter(host_guard).run("'{0[a]}'.format({'a': 1})")
    assert result.value == "1"
    host_guard.assert_host_untouched()


def test_host_callable_returns_data(host_guard: Any) -> None:
    result = make_interpreter(host_guard).run("r = search(query='cats', k=2)\nr['hits']")
    assert result.value == ["cats-0", "cats-1"]
    assert host_guard.calls == [("search", {"query": "cats", "k": 2})]
    host_guard.assert_host_untouched()


def test_tool_returns_data(host_guard: Any) -> None:
    assert make_interpreter(host_guard).run("lookup(key='abc')").value == "ABC"
    host_guard.assert_host_untouched()


def test_parallel_returns_results_in_argument_order(host_guard: Any) -> None:
    result = make_interpreter(host_guard).run("parallel(f(x=1), f(x=2))")
    assert list(result.value) == [{"x": 1}, {"x": 2}]
    host_guard.assert_host_untouched()


def test_print_is_captured_not_written_to_the_host(host_guard: Any) -> None:
    result = make_interpreter(host_guard).run("print('hello', 42)\n'done'")
    assert result.stdout == "hello 42\n"
    assert result.value == "done"
    host_guard.assert_host_untouched()


def test_ordinary_recursion_and_loops_fit_the_limits(host_guard: Any) -> None:
    source = (
        "def fib(n):\n"
        "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "total = 0\n"
        "for i in range(1000):\n"
        "    total += i\n"
        "[fib(15), total, len('ab' * 1000), 2 ** 64]"
    )
    assert make_interpreter(host_guard).run(source).value == [610, 499500, 2000, 2**64]
    host_guard.assert_host_untouched()


def test_limits_are_errors_with_positions(host_guard: Any) -> None:
    with pytest.raises(SizeLimitExceeded) as caught:
        make_interpreter(host_guard).run("x = 1\ny = 'a' * 10 ** 10")
    assert caught.value.line == 2
    assert caught.value.kind == "SizeLimitExceeded"
    host_guard.assert_host_untouched()


def test_mutating_returned_host_data_leaves_the_host_copy_alone(host_guard: Any) -> None:
    result = make_interpreter(host_guard).run(
        "c = catalog()\nc['items'].append('pwned')\nc['owner'] = 'plan'\nc"
    )
    assert result.value["owner"] == "plan"
    assert host_guard.catalog_data == {"items": ["alpha", "beta"], "owner": "host"}
    host_guard.assert_host_untouched()
