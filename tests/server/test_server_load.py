"""Load: 50 runs at once over HTTP, each followed live by its own reader; nothing is lost."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from dcbrain import SQLiteMemory
from support.server_app import Api, BrainScripts, ServeFn, Stream, replanning_brain

RUNS = 50


def test_fifty_concurrent_runs_complete_with_every_event_streamed_and_stored(
    serve: ServeFn, brains: BrainScripts, memory: SQLiteMemory
) -> None:
    brains.always(replanning_brain)
    with serve(max_concurrent_runs=RUNS) as api:

        def one(index: int) -> tuple[str, Stream]:
            client = Api(api.base_url)
            try:
                run_id = client.send(f"load-{index}", f"What is 2+3+1? (#{index})")
                return run_id, client.stream(run_id)
            finally:
                client.http.close()

        with ThreadPoolExecutor(RUNS) as pool:
            outcomes = list(pool.map(one, range(RUNS)))
        runs = [api.http.get(f"/v1/runs/{run_id}").json() for run_id, _ in outcomes]

    assert brains.built == RUNS
    assert [run["status"] for run in runs] == ["succeeded"] * RUNS
    assert [run["result"]["final_result"] for run in runs] == [6] * RUNS
    lengths = {len(stream.events) for _, stream in outcomes}
    assert len(lengths) == 1  # every run told the same story
    for run_id, stream in outcomes:
        assert [event["seq"] for event in stream.events] == list(range(len(stream.events)))
        assert stream.events[-1]["type"] == "final" and stream.end is not None
        stored = [record.event for record in memory.run_events(run_id)]
        assert stored == stream.events
