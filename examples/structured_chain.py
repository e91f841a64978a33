"""Structured output and intermediate results: two chains, the second reads the first.

Run it as it is (no model, no network): ``python examples/structured_chain.py``.
A ScriptedLLM stands in for the model; swap in ``OpenAILLM(model=..., base_url=...,
api_key=...)`` to run it against a real one.
"""

from __future__ import annotations

import json

from dcbrain import Chain, ScriptedLLM, SeqChains, TextMessage
from dcbrain.chain import AdditionalInfoPrompt, ChainsIntermediatePrompt
from dcbrain.messages import CHAINS_INTERMEDIATE_RESULTS

REPORT = "Q3 revenue rose 12% to 4.2M; churn fell from 3.1% to 2.4%; two new markets opened."

analyze = Chain(
    name="analyze",
    description="Summarize a business report and rate it",
    llm=ScriptedLLM(
        [
            # The first reply breaks the schema ("score" is a string): the chain shows the
            # model the validation error and asks once more.
            '{"summary": "Revenue up 12%, churn down", "score": "high"}',
            '{"summary": "Revenue up 12%, churn down", "score": 8}',
        ]
    ),
    system_prompt="You are a financial analyst.",
    prompt="Summarize this report and score it from 1 to 10:\n{{ report }}",
    output_json_schema={
        "type": "object",
        "properties": {"summary": {"type": "string"}, "score": {"type": "integer"}},
        "required": ["summary", "score"],
    },
)

headline = Chain(
    name="headline",
    description="Write a headline from the analysis",
    llm=ScriptedLLM(["Strong Q3: growth up, churn down"]),
    prompt=[
        # Reads what `analyze` left in __chains_intermediate_results; renders to nothing if
        # the field is missing.
        ChainsIntermediatePrompt("Analysis: {{ chains_intermediate_result.summary }}"),
        AdditionalInfoPrompt("Write a headline of at most six words."),
    ],
    result_cache_key="headline",
)


def main() -> None:
    message = TextMessage("Prepare the quarterly brief", additional_kwargs={"report": REPORT})
    pipeline = SeqChains([analyze, headline], name="brief")
    print("planner sees:", json.dumps(pipeline.describe()["input_schema"]))
    result = pipeline.run(message)
    print("headline:", result.content)
    print("log:")
    for line in result.logs:
        print("  ", line)
    cache = json.loads(message.additional_kwargs[CHAINS_INTERMEDIATE_RESULTS])
    print("intermediate results:", json.dumps(cache, ensure_ascii=False))
    print(f"usage: {result.usage.total_tokens} tokens in {result.usage.requests} LLM calls")


if __name__ == "__main__":
    main()
