"""A new message while a run is active: the run stops, the new input runs (seed 000)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from support.server_app import (
    PATIENCE_S,
    BrainScripts,
    ServeFn,
    direct_brain,
    stuck_brain,
)


def test_new_input_stops_the_run_at_its_next_safe_point_and_starts_a_new_one(
    serve: ServeFn, brains: BrainScripts
) -> None:
    gate = brains.hold()
    brains.then(lambda memory: direct_brain(memory, "Lisbon, then."))
    with serve() as api:
        first = api.send("trip", "Plan a trip to Porto")
        assert gate.entered.wait(PATIENCE_S)  # the plan is inside hold()
        response = api.http.post("/v1/conversations/trip/messages",
                                 json={"content": "Actually, Lisbon"})
        second = response.json()["run_id"]
        gate.opened.set()  # hold() returns; the summarize call is the safe point
        old = api.wait_for(first)
        new = api.wait_for(second)
        old_events = api.stream(first).events
        conversation = api.http.get("/v1/conversations/trip").json()

    assert response.status_code == 202 and response.json()["supersedes"] == first
    assert (old["status"], old["reason"], old["superseded_by"]) == (
        "aborted", "superseded", second)
    assert new["supersedes"] == first
    assert (new["status"], new["result"]["final_result"]) == ("succeeded", "Lisbon, then.")
    errors = [e["error"] for e in old_events if e["type"] == "error"]
    assert errors and errors[0].startswith("TFUserNewInputError")
    # The run stopped at the chain call's safe point, before the call was announced.
    assert not [e for e in old_events if e["type"].startswith("call_") and e["kind"] == "chain"]
    assert not [e for e in old_events if e["type"] == "call_started" and e.get("phase") == "run"]
    assert old_events[-1]["type"] == "final"
    assert (old_events[-1]["reason"], old_events[-1]["superseded_by"]) == ("superseded", second)
    assert [(m["role"], m["content"]) for m in conversation["messages"]] == [
        ("user", "Plan a trip to Porto"), ("user", "Actually, Lisbon"),
        ("assistant", "Lisbon, then."),
    ]


def test_a_run_that_does_not_reach_a_safe_point_in_time_is_aborted(
    serve: ServeFn, brains: BrainScripts
) -> None:
    brains.then(stuck_brain)
    brains.then(lambda memory: direct_brain(memory, "done"))
    with serve(supersede_grace_s=0) as api:
        first = api.send("c1", "first")
        api.stream(first, until=lambda e: e["type"] == "call_started")  # the planner is called
        second = api.send("c1", "second")
        old = api.wait_for(first)
        new = api.wait_for(second)
        final = api.stream(first).events[-1]
    assert (old["status"], old["reason"], old["superseded_by"]) == (
        "aborted", "superseded", second)
    assert (final["type"], final["status"], final["reason"]) == ("final", "aborted", "superseded")
    assert (new["status"], new["result"]["final_result"]) == ("succeeded", "done")


def test_a_message_waiting_for_its_turn_is_superseded_without_running(
    serve: ServeFn, brains: BrainScripts
) -> None:
    gate = brains.hold()
    brains.then(lambda memory: direct_brain(memory, "third answer"))
    with serve() as api:
        first = api.send_held("c1", "first", gate)
        second = api.send("c1", "second")
        third = api.send("c1", "third")
        gate.opened.set()
        runs = [api.wait_for(run_id) for run_id in (first, second, third)]
        second_events = api.stream(second).events
        messages = api.http.get("/v1/conversations/c1").json()["messages"]

    assert [(r["status"], r["reason"]) for r in runs] == [
        ("aborted", "superseded"), ("aborted", "superseded"), ("succeeded", "direct_answer")]
    assert runs[0]["superseded_by"] == second and runs[1]["superseded_by"] == third
    assert [e["type"] for e in second_events] == ["final"]  # it never started a brain
    assert brains.built == 2
    assert [m["content"] for m in messages] == ["first", "second", "third", "third answer"]


def test_messages_of_other_conversations_do_not_supersede(
    serve: ServeFn, brains: BrainScripts
) -> None:
    gate = brains.hold()
    brains.then(lambda memory: direct_brain(memory, "independent"))
    with serve() as api:
        first = api.send_held("c1", "slow one", gate)
        other = api.wait_for(api.send("c2", "quick one"))
        gate.opened.set()
        held = api.wait_for(first)
    assert other["status"] == "succeeded"
    assert (held["status"], held["superseded_by"]) == ("succeeded", None)
    assert held["result"]["final_result"] == "a summary"


def test_messages_posted_at_once_are_all_kept_in_the_conversation_in_order(
    serve: ServeFn, brains: BrainScripts
) -> None:
    questions = [f"message {n}" for n in range(12)]
    brains.always(lambda memory: direct_brain(memory, "the last answer"))
    with serve(supersede_grace_s=0.2) as api:
        def post(content: str) -> str:
            return api.send("burst", content)

        with ThreadPoolExecutor(len(questions)) as pool:
            run_ids = list(pool.map(post, questions))
        runs = [api.wait_for(run_id) for run_id in run_ids]
        conversation = api.http.get("/v1/conversations/burst").json()

    by_id = {run["run_id"]: run for run in runs}
    accepted = [next(run for run in runs if run["supersedes"] is None)]
    while accepted[-1]["superseded_by"] is not None:  # each message replaced the one before
        accepted.append(by_id[accepted[-1]["superseded_by"]])
    users = [m["content"] for m in conversation["messages"] if m["role"] == "user"]
    assert sorted(users) == sorted(questions)  # every message is kept
    assert users == [run["question"] for run in accepted]  # in the order the server took them
    assert sum(run["status"] == "succeeded" for run in runs) >= 1
    assert all(run["reason"] == "superseded" for run in runs if run["status"] == "aborted")
