"""Spans nest as the work does: a tool's own spans under its call, a chain's LLM call
under the chain, and a call the journal answers is marked reused."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dcbrain import DCBrain, ScriptedLLM
from support.brain_scripts import brain_reusing_its_chain, plan, verdict

_tracer = trace.get_tracer("tests.tools")


def lookup(order_id: str) -> str:
    """Look an order up (the tool traces its own work)."""
    with _tracer.start_as_current_span("lookup.database"):
        return f"order {order_id}"


def _one(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    [span] = [s for s in spans if s.name == name]
    return span


def _parent_of(span: ReadableSpan, spans: list[ReadableSpan]) -> ReadableSpan:
    assert span.parent is not None, span.name
    [parent] = [s for s in spans if s.context.span_id == span.parent.span_id]
    return parent


def test_a_tools_own_span_nests_under_its_call_also_in_a_parallel_branch(
        spans: InMemorySpanExporter) -> None:
    brain = DCBrain(
        default_llm=ScriptedLLM([plan(
            'a = lookup(order_id="A1")\n'
            'b, c = parallel(lookup(order_id="B2"), lookup(order_id="C3"))\n'
            'return [a, b, c]')]),
        default_validate_llm=ScriptedLLM([verdict(True)]), tools=[lookup])
    result = brain.run("q", conversation_id="c1")
    assert result.status == "succeeded", result.error
    finished = list(spans.get_finished_spans())
    own = [s for s in finished if s.name == "lookup.database"]
    assert len(own) == 3
    parents = [_parent_of(span, finished) for span in own]
    assert [p.name for p in parents] == ["tool lookup"] * 3
    assert len({p.context.span_id for p in parents}) == 3  # each under its own call
    run = _one(finished, "dcbrain.brain.run")
    assert {s.context.trace_id for s in finished} == {run.context.trace_id}


def test_a_chains_llm_call_nests_under_the_chain_and_a_reused_call_is_marked(
        spans: InMemorySpanExporter) -> None:
    brain = brain_reusing_its_chain(ScriptedLLM([{"summary": "short"}], model="chainer"))
    result = brain.run("q", conversation_id="c1")
    assert result.final_result == "short"
    finished = list(spans.get_finished_spans())
    chain_calls = [s for s in finished if s.name == "chain summarize"]
    assert [(s.attributes or {}).get("dcbrain.reused") for s in chain_calls] == [False, True]
    [chain_llm] = [s for s in finished if s.name == "chat chainer"]
    assert _parent_of(chain_llm, finished) is chain_calls[0]
    brain_calls = [s for s in finished if s.name == "chat scripted"]  # planner, validator
    assert brain_calls and {_parent_of(s, finished).name for s in brain_calls} <= {
        "dcbrain.brain.planning", "dcbrain.brain.running"}
