"""Running plans: results, host calls, parallel, async, limits, positions, cancellation."""

from __future__ import annotations

import asyncio
import cProfile
import threading
from typing import Any

import pytest

from dcbrain.tfplan import (
    CallLimitExceeded,
    Interpreter,
    Limits,
    OutputLimitExceeded,
    PlanCancelled,
    TFCallError,
    TFCheckError,
    TFRuntimeError,
    TFSyntaxError,
    TimeLimitExceeded,
)


def test_value_is_top_level_return_else_last_expression() -> None:
    interpreter = Interpreter()
    assert interpreter.run("x = 2\nx * 21").value == 42
    result = interpreter.run("if True:\n    return {'a': [1, 2]}\nprint('never')")
    assert result.value == {"a": [1, 2]}
    assert result.returned and result.stdout == ""
    assert interpreter.run("x = 1").value is None


def test_print_is_captured_not_written(capsys: pytest.CaptureFixture[str]) -> None:
    result = Interpreter().run("print('a', 1, sep='-', end='!')\nprint()")
    assert result.stdout == "a-1!\n"
    assert capsys.readouterr().out == ""


def test_host_calls_are_traced_with_position_and_result() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    result = Interpreter({"add": add}).run("x = 1\ny = add(a=x, b=2)\ny")
    assert result.value == 3
    (record,) = result.trace
    assert (record.name, record.kwargs, record.result) == ("add", {"a": 1, "b": 2}, 3)
    assert (record.line, record.col) == (2, 5)
    assert record.error is None and record.duration_s >= 0


def test_tools_register_under_their_names() -> None:
    def shout(text: str) -> str:
        return text.upper()

    assert Interpreter(tools=[shout]).run("shout(text='hi')").value == "HI"


def test_failing_host_call_is_a_call_error_at_the_call() -> None:
    def lookup(key: str) -> str:
        raise KeyError(key)

    with pytest.raises(TFCallError) as caught:
        Interpreter({"lookup": lookup}).run("print('before')\n\nlookup(key='k')")
    error = caught.value
    assert (error.kind, error.line, error.col) == ("KeyError", 3, 1)
    assert error.stdout == "before\n"
    assert error.trace[0].error == "KeyError: 'k'"


def test_host_results_must_be_plain_data() -> None:
    def leak() -> Any:
        return threading.Lock()

    with pytest.raises(TFCallError, match="not plain data"):
        Interpreter({"leak": leak}).run("leak()")


def test_runtime_error_inside_a_function_points_inside_it() -> None:
    source = "def pick(d):\n    return d['missing']\n\nx = pick({})\n"
    with pytest.raises(TFRuntimeError) as caught:
        Interpreter().run(source)
    assert caught.value.headline() == "2:12: KeyError: 'missing'"
    assert "return d['missing']" in str(caught.value)


#: Characters that str.splitlines() breaks at but Python's tokenizer does not.
NOT_LINE_BREAKS = "\f\v\x1c\x1d\x1e\x85\u2028\u2029"


@pytest.mark.parametrize("isolation", ["process", "inprocess"])
def test_positions_after_a_string_holding_other_line_separators(isolation: str) -> None:
    first = f"s = '{NOT_LINE_BREAKS}'; t = lookup(key=s); {{}}['same line']"
    source = f"{first}\nx = 1\n{{}}['next line']"
    interpreter = Interpreter({"lookup": lambda key: key},
                              isolation=isolation)  # type: ignore[arg-type]
    with pytest.raises(TFRuntimeError) as caught:
        interpreter.run(source)
    assert caught.value.headline() == "1:36: KeyError: 'same line'"
    assert caught.value.source_line == first
    assert (caught.value.trace[0].line, caught.value.trace[0].col) == (1, 21)
    with pytest.raises(TFRuntimeError) as caught:
        interpreter.run(source.replace("{}['same line']", "0"))
    assert caught.value.headline() == "3:1: KeyError: 'next line'"
    assert str(caught.value).endswith("\n    {}['next line']\n    ^")


def test_a_syntax_error_after_a_string_holding_other_line_separators() -> None:
    with pytest.raises(TFSyntaxError) as caught:
        Interpreter().run(f"s = '{NOT_LINE_BREAKS}'\nx = (1,\ny = 2")
    assert caught.value.source_line == "x = (1,"


def test_check_before_run_reports_problems_without_running() -> None:
    calls: list[str] = []

    def tool(x: int) -> int:
        calls.append("ran")
        return x

    with pytest.raises(TFCheckError) as caught:
        Interpreter({"tool": tool}).run("tool(x=1)\ntool(y=2)", check=True)
    assert calls == []
    assert caught.value.problems[0].line == 2


async def test_async_callables_overlap_in_parallel() -> None:
    in_flight = 0
    peak = 0
    both_started = asyncio.Event()

    async def fetch(key: str) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if in_flight == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), timeout=5)
        in_flight -= 1
        return key.upper()

    result = await Interpreter({"fetch": fetch}).arun(
        "a, b = parallel(fetch(key='x'), fetch(key='y'))\n[a, b]"
    )
    assert result.value == ["X", "Y"]
    assert peak == 2
    assert {record.branch for record in result.trace} == {0, 1}


def test_parallel_over_a_comprehension_keeps_argument_order() -> None:
    barrier = threading.Barrier(3, timeout=5)

    def square(n: int) -> int:
        barrier.wait()  # all three branches must be in flight at once
        return n * n

    result = Interpreter({"square": square}).run(
        "parallel(*[square(n=n) for n in [3, 1, 2]])"
    )
    assert result.value == [9, 1, 4]


def test_parallel_error_is_the_first_failing_branch_in_argument_order() -> None:
    def fail(msg: str) -> str:
        raise ValueError(msg)

    with pytest.raises(TFCallError, match="first"):
        Interpreter({"fail": fail}).run("parallel(fail(msg='first'), fail(msg='second'))")


def test_sync_run_awaits_async_callables() -> None:
    async def double(n: int) -> int:
        await asyncio.sleep(0)
        return n * 2

    assert Interpreter({"double": double}).run("double(n=21)").value == 42


def test_call_limit() -> None:
    def ping() -> str:
        return "pong"

    with pytest.raises(CallLimitExceeded) as caught:
        Interpreter({"ping": ping}, limits=Limits(max_calls=3)).run("while True:\n    ping()")
    assert len(caught.value.trace) == 3


def test_output_limit_keeps_what_fit() -> None:
    with pytest.raises(OutputLimitExceeded) as caught:
        Interpreter(limits=Limits(max_output_chars=10)).run("for i in range(100):\n    print(i)")
    assert caught.value.stdout == "0\n1\n2\n3\n4\n"


def test_time_limit_stops_pure_computation() -> None:
    limits = Limits(timeout_s=0.2, max_operations=10**12)
    with pytest.raises(TimeLimitExceeded) as caught:
        Interpreter(limits=limits).run("x = 0\nwhile True:\n    x += 1")
    assert caught.value.line in (2, 3)


def test_time_limit_waits_for_a_running_tool_then_stops() -> None:
    finished: list[bool] = []

    def slow() -> str:
        threading.Event().wait(0.4)
        finished.append(True)
        return "done"

    with pytest.raises(TimeLimitExceeded):
        Interpreter({"slow": slow}, limits=Limits(timeout_s=0.1)).run("slow()\nprint('after')")
    assert finished == [True]


async def test_cancelling_arun_cancels_the_plan_and_its_async_call() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def wait_forever() -> str:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    task = asyncio.create_task(Interpreter({"wait_forever": wait_forever}).arun("wait_forever()"))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(cancelled.wait(), 5)


def test_cancelled_error_kind_exists_for_stopped_plans() -> None:
    assert PlanCancelled("x").kind == "Cancelled"


def test_passthrough_errors_are_not_wrapped() -> None:
    class NewInput(Exception):
        pass

    def interrupt() -> str:
        raise NewInput("user typed")

    with pytest.raises(NewInput):
        Interpreter({"interrupt": interrupt}, passthrough=(NewInput,)).run("interrupt()")


def test_plan_cannot_change_a_callable_name_it_does_not_own() -> None:
    with pytest.raises(ValueError, match="identifier"):
        Interpreter({"_hidden": print})


def test_limits_overrides_are_validated() -> None:
    assert Limits().with_overrides({"max_calls": "5"}).max_calls == 5
    with pytest.raises(ValueError, match="unknown limit"):
        Limits().with_overrides({"max_cals": "5"})
    with pytest.raises(ValueError, match="positive"):
        Limits(max_calls=0)


def test_plans_run_under_a_profiler_before_and_after_a_time_limit() -> None:
    # Profilers, debuggers and coverage trace every call; a stop signal left pending in
    # CPython would make a traced thread spin forever.
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        assert Interpreter().run("sum(range(10))").value == 45
        limits = Limits(timeout_s=0.1, max_operations=10**12)
        with pytest.raises(TimeLimitExceeded):
            Interpreter(limits=limits).run("while True:\n    pass")
        assert Interpreter().run("max([3, 9, 2])").value == 9
    finally:
        profiler.disable()


def test_time_limit_reached_inside_one_long_builtin_call() -> None:
    limits = Limits(timeout_s=0.001, max_operations=10**9, max_size=10**7)
    with pytest.raises(TimeLimitExceeded):
        Interpreter(limits=limits).run("sorted([(i * 7919) % 10007 for i in range(10)] * 300000)")
