"""Every display is paid for, one operation per element, each time it is built.

CPython folds a display of constants into one constant and builds a new container from it
at every evaluation, so the loop step around it is no measure of what it builds. A set's
element costs two operations (its table takes about 64 bytes per element), every other
display's one; set and dict displays pay from their first element, list and tuple
displays from 8; a tuple of constants is one shared value and costs nothing. The charges
are the same in process and in a sandbox worker (``ConsoleResult.operations``).
"""

from __future__ import annotations

import pytest

from dcbrain.tfplan import Interpreter, OperationLimitExceeded
from dcbrain.tfplan.interpreter import Isolation

ISOLATIONS = [pytest.param("inprocess", id="inprocess"), pytest.param("process", id="sandbox")]
BYTES = ",".join(map(str, range(256)))
STEPS = 1000


def operations(body: str, isolation: Isolation) -> int:
    """Operations of ``STEPS`` loop steps running ``body``, less those of empty steps."""
    interpreter = Interpreter(isolation=isolation)
    loop = f"for i in range({STEPS}):\n    "
    return (interpreter.run(loop + body).operations
            - interpreter.run(loop + "x = i").operations)


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest.mark.parametrize(("body", "per_step"), [
    (f"x = {{{BYTES}}}", 2 * 256),  # a set display of constants, folded by CPython
    (f"x = frozenset({{{BYTES}}})", 2 * 256),
    ("x = {" + ",".join(f"{n}: {n}" for n in range(256)) + "}", 256),
    (f"x = [{BYTES}]", 256),
    (f"x = ({BYTES}, i)", 257),
    ("x = {i}", 2),  # a set of one element takes 216 bytes
    ("x = {'a': i}", 1),
    ("x = [[i, i, i], [i, i, i], [i, i, i]]", 12),  # the small lists count in the outer
])
def test_a_display_costs_its_elements_at_every_evaluation(body: str, per_step: int,
                                                          isolation: Isolation) -> None:
    assert operations(body, isolation) >= STEPS * per_step


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_tuple_of_constants_and_a_short_list_cost_nothing_more(isolation: Isolation) -> None:
    assert operations(f"x = ({BYTES})", isolation) == 0
    assert operations("x = [i, i]", isolation) == 0


def test_a_set_display_in_a_comprehension_ends_at_the_operation_limit_in_a_worker() -> None:
    # with default limits a sandbox worker built sets until its address space ran out
    # ("plan ran out of memory"): 2.4 GB in process, where nothing else bounds it
    plan = f"[{{{BYTES}}} for i in range(200000)]"
    with pytest.raises(OperationLimitExceeded) as caught:
        Interpreter(isolation="process").run(plan)
    assert caught.value.line == 1
