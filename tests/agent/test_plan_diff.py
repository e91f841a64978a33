"""PlanDiff as data (to_dict) and as text (render)."""

from __future__ import annotations

import json

from dcbrain.agent import PlanDiff, Step

OLD = [
    Step(1, "search", {"q": "x"}),
    Step(2, "fetch", {"url": "u"}),
    Step(3, "summarize", {"text": "t"}),
    Step(4, "write", {"title": "x"}),
]
NEW = [
    Step(2, "fetch_mirror", {"url": "u"}, "the page, from the mirror"),
    Step(3, "summarize", {"text": "t"}),
    Step(5, "notify", {"to": "ops"}, "the team knows"),
]


def diff() -> PlanDiff:
    return PlanDiff.compute(OLD, NEW, done_ids={1}, revision=2, reason="fetch timed out")


def test_to_dict_is_json_and_carries_both_plans() -> None:
    data = diff().to_dict()
    assert json.loads(json.dumps(data)) == data
    assert {k: data[k] for k in ("revision", "reason", "removed", "added", "revised")} == {
        "revision": 2,
        "reason": "fetch timed out",
        "removed": [4],
        "added": [5],
        "revised": [2],
    }
    assert (data["unchanged"], data["done"]) == ([3], [1])
    assert [step["tool_name"] for step in data["old_steps"]] == [
        "search",
        "fetch",
        "summarize",
        "write",
    ]
    assert data["new_steps"][0]["expected_outcome"] == "the page, from the mirror"


def test_render_strikes_removed_lines_and_marks_added_ones() -> None:
    assert diff().render() == "\n".join(
        [
            "plan revision 2: fetch timed out",
            "  [1] search(q='x')  (done)",
            "- ~~[2] fetch(url='u')~~",
            "+ [2] fetch_mirror(url='u')  (revised)  expect: the page, from the mirror",
            "  [3] summarize(text='t')",
            "- ~~[4] write(title='x')~~",
            "+ [5] notify(to='ops')  (added)  expect: the team knows",
        ]
    )


def test_ansi_render_uses_strike_through_and_colour() -> None:
    lines = diff().render("ansi").splitlines()
    assert lines[2] == "\x1b[9;31m- [2] fetch(url='u')\x1b[0m"
    assert lines[-1].startswith("\x1b[32m+ [5] notify") and lines[-1].endswith("\x1b[0m")


def test_the_diff_keeps_its_own_copies_of_the_plans() -> None:
    old = [Step(1, "a", {"k": [1]})]
    result = PlanDiff.compute(old, [], revision=1)
    old[0].args["k"].append(2)
    assert result.old_steps[0].args == {"k": [1]}
    assert result.removed == [1] and result.added == []


def test_identical_plans_give_an_empty_diff() -> None:
    same = PlanDiff.compute(OLD, [step.snapshot() for step in OLD])
    assert same.is_empty and same.unchanged == [1, 2, 3, 4]


def test_gather_steps_render_their_calls() -> None:
    step = Step.gather(7, [("search", {"q": "a"}), {"tool_name": "search", "args": {"q": "b"}}])
    assert step.describe() == "[7] gather(search(q='a'), search(q='b'))"
    assert step.calls == [("search", {"q": "a"}), ("search", {"q": "b"})]
