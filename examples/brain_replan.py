"""DCBrain offline: the first plan fails validation, the revised plan succeeds.

Scripted LLMs stand in for real models, so this runs without a network. It prints the
run's events as they happen, including the diff of the revised plan.
"""

from __future__ import annotations

from dcbrain import Chain, DCBrain, ScriptedLLM
from dcbrain.events import Event


def convert(amount: float, rate: float) -> float:
    """Convert an amount of money with an exchange rate."""
    return round(amount * rate, 2)


FIRST_PLAN = """\
price = convert(amount=120, rate=0.9)
return {"price_eur": price}"""

SECOND_PLAN = """\
rate = lookup_rate(currency="EUR")
price = convert(amount=120, rate=rate["rate"])
return {"price_eur": price, "rate": rate["rate"]}"""

lookup_rate = Chain(
    name="lookup_rate",
    description="Today's USD exchange rate for a currency",
    llm=ScriptedLLM([{"rate": 0.92}]),
    prompt="Exchange rate USD -> {{ currency }} today?",
    output_json_schema={"type": "object", "properties": {"rate": {"type": "number"}},
                        "required": ["rate"]},
)
planner = ScriptedLLM([f"```tf_plan\n{FIRST_PLAN}\n```", f"```tf_plan\n{SECOND_PLAN}\n```"])
validator = ScriptedLLM([
    {"is_solved": False, "suggestion": "0.9 is a guess: look up today's rate first."},
    {"is_solved": True, "suggestion": ""},
])


def show(event: Event) -> None:
    data = event.data
    if event.type == "state_changed":
        print(f"state: {data['source']} -> {data['dest']}")
    elif event.type == "plan_created":
        print(f"plan:\n{data['plan']}")
    elif event.type == "plan_revised":
        print(f"plan revised ({data['reason']}):\n{data['diff']['unified']}{data['summary']}")
    elif event.type == "call_finished" and data["kind"] != "llm":
        print(f"  {data['kind']} {data['name']} -> {data['result']}")
    elif event.type == "validation":
        print(f"validation: solved={data['is_solved']} {data['suggestion']}")


brain = DCBrain(spec_chains={"lookup_rate": lookup_rate}, default_llm=planner,
                default_validate_llm=validator, tools=[convert], max_iterations=3)
brain.subscribe(show)
result = brain.run("What do 120 USD cost in EUR today?", conversation_id="demo")
print(f"= {result.status}: {result.reason}")
print(f"answer: {result.final_result}")
print(f"plans: {len(result.plans)}, tokens: {result.usage.total_tokens}")
