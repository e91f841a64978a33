"""Non-interference, generated: the attacker's value never reaches a guarded argument.

Plans are built from a grammar over the language: assignments, subscript stores and
augmented stores, ``del``, dict keys, ``set.add``, the in-place list methods, swaps,
comprehensions, the builtins that take a function (with lambdas and plan functions that
change their parameter), plan functions, ``parallel``, and in strict mode ``if`` and
``for`` on untrusted conditions. Each plan has one untrusted source, ``read()``, whose
result is the attacker's value, and one guarded sink, ``sink(value=...)`` with
``trusted_args=["value"]``. Each plan runs twice with two different attacker values. The
property: where the two runs' sink calls first differ, one of them was refused.

- ``enforce`` tracks explicit flows, so its plans branch and loop on trusted data only
  (a condition computed from the attacker's value is an implicit flow, which enforce
  mode leaves alone by design);
- ``strict`` tracks implicit flows as well: every construct, conditions on the attacker's
  value included, and the branch not taken.

A run that ends in an error of the plan (an index the attacker's value moved, say) ends
its trace there: what an error reveals is the termination channel, out of scope.

The normal test run tries a bounded number of plans; ``pytest tests/security/
test_noninterference.py --hypothesis-profile=long`` tries many more (the profile is
registered in ``tests/conftest.py``).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcbrain.chain import TFChainInterpreter
from dcbrain.tfplan import TFInterpreterError, TFPolicyDenied
from dcbrain.tools import Tool

#: Pairs of attacker values: equal to a plan literal or not, sorting before or after them.
ATTACKS = [("p", "zz"), ("a", "q"), ("zz", "EVIL"), ("q", "p"), ("k", "j")]
LITERALS = ["'p'", "'q'", "'k'", "'j'"]
STRINGS = ["s0", "s1", "s2"]

#: The plan's first lines: the attacker's value, a trusted value, containers of both.
PRELUDE = [
    "ev = read()",
    "tv = trusted()",
    "s0 = 'p'",
    "s1 = ev",
    "s2 = tv",
    "xs = ['p', 'q', 'k']",
    "d = {'k': 'p', 'j': 'q'}",
    "st = {'p'}",
    "rows = [xs]",
    "recs = [{'id': 'p', 'body': s1}]",
    "def put(l, v):",
    "    l.append(v)",
    "    return v",
    "def first(l):",
    "    return l[0]",
    "def swap(l):",
    "    l[0], l[-1] = l[-1], l[0]",
    "def rekey(r):",
    "    r['id'] = r['body']",
    "def get():",
    "    return xs",
]


def _value(draw: Any) -> str:
    # the attacker's value half of the time: most plans then have a flow to refuse
    return draw(st.one_of(st.just("ev"), st.sampled_from([*STRINGS, *LITERALS, "tv"])))


@st.composite
def _statement(draw: Any, strict: bool, depth: int = 0) -> list[str]:
    """One statement of the grammar (some are several lines that keep lengths fixed)."""
    s = draw(st.sampled_from(STRINGS))
    v, w = _value(draw), _value(draw)
    choices = [
        [f"{s} = {v}"],
        [f"{s} = {v} + {w}"],
        [f"{s} = f'{{{v}}}-{{{w}}}'"],
        [f"{s} = {v} if {w} else 'p'"] if strict else [f"{s} = {v}"],
        [f"xs[{draw(st.sampled_from(['0', '1', '-1']))}] = {v}"],
        [f"xs[0] += {v}"],
        [f"d['k'] += {v}"],
        [f"xs.append({v})", "xs.pop(0)"],
        [f"xs.insert(0, {v})", "xs.pop()"],
        ["xs.reverse()"],
        ["xs.sort()"],
        ["xs.append(xs.pop(0))"],
        ["xs.remove(xs[0])", f"xs.append({v})"],
        ["del xs[0]", f"xs.append({v})"],
        ["xs.clear()", f"xs.extend([{v}, {w}, 'p'])"],
        ["xs[0], xs[-1] = xs[-1], xs[0]"],
        ["d['k'], d['j'] = d['j'], d['k']"],
        [f"d[{v}] = {w}"],
        [f"d.update({{{v}: {w}}})"],
        [f"d.setdefault({v}, {w})"],
        ["d.pop('k', None)", "d['k'] = 'p'"],
        ["del d['j']", f"d['j'] = {v}"],
        [f"st.add({v})"],
        [f"{s} = xs[{draw(st.sampled_from(['0', '1', '-1']))}]"],
        [f"{s} = d.get('k', 'p')"],
        [f"{s} = d.get({v}, 'p')"],
        [f"{s} = list(d)[0]"],
        [f"{s} = sorted(d)[0]"],
        [f"{s} = list(d.keys())[-1]"],
        [f"{s} = [k for k, x in d.items()][0]"],
        [f"{s} = list(d.values())[0]"],
        [f"{s} = sorted(st)[0]"],
        [f"{s} = max(xs)"],
        [f"{s} = min(xs, key=lambda x: x)"],
        [f"{s} = ''.join(xs)"],
        [f"{s} = [x for x in xs][0]"],
        [f"{s} = [x + {v} for x in xs][0]"],
        [f"xs = [x + {v} for x in xs]"],
        [f"d = {{x: {v} for x in xs}}"],
        ["for k in d:", f"    {s} = k"],
        ["for x in xs:", f"    {s} = {s} + x"],
        [f"list(map(lambda l: l.append({v}), rows))", "xs.pop(0)"],
        [f"list(filter(lambda l: l.insert(0, {v}), rows))", "xs.pop()"],
        ["max(rows, key=lambda l: l.reverse() or 0)"],
        ["sorted(rows, key=lambda l: l.sort() or 0)"],
        ["list(map(lambda r: r.update({'id': r['body']}), recs))"],
        ["list(map(rekey, recs))"],
        ["list(map(swap, rows))"],
        [f"{s} = recs[0]['id']"],
        [f"put(xs, {v})", "xs.pop(0)"],
        [f"{s} = first(xs)"],
        ["swap(xs)"],
        [f"{s}, s2 = parallel(read(), trusted())"],
        [f"s2, {s} = parallel(trusted(), trusted())"],
        [f"{s} = d['k'] if 'k' in d else 'p'"],
        [f"get()[0] = {v}"],
        [f"get().insert(0, {v})", "xs.pop()"],
        ["ys = get()", f"ys[-1] = {v}"],
        ["late = lambda v: xs.insert(0, v)", f"late({v})", "xs.pop()"],
        [f"g = (xs.insert(0, {v}) for _ in 'p')", "list(g)", "xs.pop()"],
    ]
    if depth < 1:
        body = draw(st.lists(_statement(strict, depth + 1), min_size=1, max_size=2))
        inner = ["    " + line for lines in body for line in lines]
        if strict:
            w_cond = draw(st.sampled_from([f"{v} == {w}", f"{v} < {w}", f"{v} in xs",
                                           f"{v} in d", "len(st) > 1", f"{v}"]))
            choices += [[f"if {w_cond}:", *inner],
                        [f"if {w_cond}:", *inner, "else:", f"    {s} = 'q'"],
                        ["for x in sorted(st):", *inner],
                        ["def branch():", f"    if {w_cond}:", "        return 'p'",
                         "    return 'q'", f"{s} = branch()"]]
        else:
            choices += [["if tv == 'T':", *inner], ["for _ in ['p', 'q']:", *inner]]
    return draw(st.sampled_from(choices))


@st.composite
def plans(draw: Any, strict: bool) -> str:
    body = draw(st.lists(_statement(strict), min_size=1, max_size=8))
    sink = draw(st.sampled_from(["s0", "s1", "s2", "xs[0]", "xs[-1]", "d.get('k', 'p')",
                                 "list(d)[0]", "sorted(st)[0]", "recs[0]['id']",
                                 "first(xs)"]))
    lines = [*PRELUDE, *(line for lines in body for line in lines), f"sink(value={sink})"]
    return "\n".join(lines)


class Run:
    """One run of a plan: the sink calls it made, how it ended."""

    def __init__(self, plan: str, attack: str, mode: str, isolation: str) -> None:
        self.calls: list[Any] = []
        self.ended = "done"

        def read() -> str:
            """The attacker's value."""
            return attack

        def trusted() -> str:
            """The application's own value."""
            return "T"

        def sink(value: Any) -> str:
            """The guarded call."""
            self.calls.append(repr(value))
            return "ok"

        interpreter = TFChainInterpreter(
            {}, tools=[Tool(read, side_effects=False),
                       Tool(trusted, side_effects=False, trusted_output=True),
                       Tool(sink, trusted_args=["value"])],
            flow_check=False, isolation=isolation, policy_mode=mode)  # type: ignore[arg-type]
        try:
            interpreter.evaluate(plan)
        except TFPolicyDenied:
            self.ended = "refused"
        except TFInterpreterError:
            self.ended = "error"

    def trace(self) -> list[Any]:
        return [*self.calls, self.ended]


def _assert_noninterference(plan: str, mode: str, isolation: str, attack: tuple[str, str]
                            ) -> None:
    one, two = (Run(plan, value, mode, isolation) for value in attack)
    for left, right in zip(one.trace(), two.trace(), strict=False):
        if left == right:
            continue
        if "refused" in (left, right) or "error" in (left, right):
            return
        pytest.fail(f"{mode} ({isolation}): the attacker's value reached sink(value=...) "
                    f"unrefused: {one.trace()} with {attack[0]!r}, {two.trace()} with "
                    f"{attack[1]!r}, for the plan:\n{plan}")


_SETTINGS = settings(deadline=None, database=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(plan=plans(strict=False), attack=st.sampled_from(ATTACKS))
def test_enforce_refuses_every_explicit_flow_in_process(plan: str, attack: tuple[str, str]
                                                        ) -> None:
    _assert_noninterference(plan, "enforce", "inprocess", attack)


@_SETTINGS
@given(plan=plans(strict=True), attack=st.sampled_from(ATTACKS))
def test_strict_refuses_every_flow_in_process(plan: str, attack: tuple[str, str]) -> None:
    _assert_noninterference(plan, "strict", "inprocess", attack)


@settings(_SETTINGS, max_examples=max(5, settings.default.max_examples // 10))
@given(data=st.data(), attack=st.sampled_from(ATTACKS))
def test_the_sandbox_refuses_the_same_flows(data: st.DataObject, attack: tuple[str, str]
                                            ) -> None:
    mode = data.draw(st.sampled_from(["enforce", "strict"]))
    plan = data.draw(plans(strict=mode == "strict"))
    _assert_noninterference(plan, mode, "process", attack)


def test_the_oracle_can_fail() -> None:
    """With policies off, the attacker's value reaches the sink, and the oracle says so."""
    plan = "\n".join([*PRELUDE, "xs[0] = ev", "sink(value=xs[0])"])
    with pytest.raises(pytest.fail.Exception, match="reached sink"):
        _assert_noninterference(plan, "off", "inprocess", ATTACKS[0])
