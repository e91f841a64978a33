"""DCChains: an LLM writes a tf_plan script over three sub-chains, which then runs.

Run it as it is (no model, no network): ``python examples/dc_chains.py``.
ScriptedLLMs stand in for the models; swap in ``OpenAILLM(model=..., base_url=...,
api_key=...)`` to run it against real ones. The planner's first script calls a chain
with a wrong argument: the static check rejects it before anything runs, and the
planner sees the error and writes a second script.
"""

from __future__ import annotations

import json

from dcbrain import Chain, DCChains, ScriptedLLM, TextMessage
from dcbrain.chain import AdditionalInfoPrompt, ChainsIntermediatePrompt
from dcbrain.messages import CHAINS_INTERMEDIATE_RESULTS

REVIEWS = [
    "Battery lasts two days, screen is superb.",
    "Screen cracked after a week; support never answered.",
    "Great value, but the charger is slow.",
]

sentiment = Chain(
    name="sentiment",
    description="Classify the sentiment of one review",
    llm=ScriptedLLM(['{"label": "positive"}', '{"label": "negative"}', '{"label": "mixed"}']),
    prompt="Classify the sentiment of this review: {{ review }}",
    output_json_schema={
        "type": "object",
        "properties": {"label": {"enum": ["positive", "negative", "mixed"]}},
        "required": ["label"],
    },
)

themes = Chain(
    name="themes",
    description="List the product themes mentioned in reviews",
    llm=ScriptedLLM(['{"themes": ["battery", "screen", "support", "charger"]}']),
    prompt="List the product themes in these reviews:\n{{ reviews }}",
    output_json_schema={
        "type": "object",
        "properties": {"themes": {"type": "array", "items": {"type": "string"}}},
        "required": ["themes"],
    },
)

brief = Chain(
    name="brief",
    description="Write a two-sentence brief for the product team",
    llm=ScriptedLLM(["Reviews are split: the screen delights until it breaks. "
                     "Fix support response times and charger speed first."]),
    prompt=[
        # reads what `themes` left in __chains_intermediate_results
        ChainsIntermediatePrompt("Themes: {{ chains_intermediate_result.themes }}"),
        AdditionalInfoPrompt("Sentiments: {{ sentiments }}\nWrite a two-sentence brief."),
    ],
    result_cache_key="brief",
)

REVIEWS_LITERAL = json.dumps(REVIEWS, ensure_ascii=False)

FIRST_PLAN = f"""\
```tf_plan
reviews = {REVIEWS_LITERAL}
labels = [sentiment(text=r)["label"] for r in reviews]
```"""

SECOND_PLAN = f"""\
```tf_plan
reviews = {REVIEWS_LITERAL}
labels = [sentiment(review=r)["label"] for r in reviews]
found = themes(reviews="\\n".join(reviews))
counts = {{label: labels.count(label) for label in sorted(set(labels))}}
print("sentiments:", counts)
summary = brief(sentiments=counts)
return {{"brief": summary, "themes": found["themes"], "sentiments": counts}}
```"""

planner = ScriptedLLM([FIRST_PLAN, SECOND_PLAN])


def main() -> None:
    review_desk = DCChains(
        {"sentiment": sentiment, "themes": themes, "brief": brief},
        llm=planner,
        name="review_desk",
        description="Turn customer reviews into a brief",
    )
    message = TextMessage("Summarize these reviews for the product team:\n" + REVIEWS_LITERAL)
    result = review_desk.run(message)

    print("== plans")
    for line in result.logs:
        if line.startswith("DCChains"):
            print(line)
    print("== trace")
    for line in result.logs:
        if line.startswith("plan call"):
            print(" ", line.split(" (")[0])
    print("== result")
    print(json.dumps(result.content, indent=2, ensure_ascii=False))
    cache = json.loads(message.additional_kwargs[CHAINS_INTERMEDIATE_RESULTS])
    print("== intermediate results:", ", ".join(sorted(cache)))
    print(f"== usage: {result.usage.total_tokens} tokens in {result.usage.requests} LLM calls")


if __name__ == "__main__":
    main()
