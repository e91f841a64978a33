"""The default planning and validation prompts (Jinja2, rendered from the planning context).

The planning template renders the fields of
:class:`~dcbrain.brain.planning.PlanningContext`: ``spec_chains`` and ``tools`` (JSON
capability descriptions), ``iterations_left``, ``max_iterations``, ``tokens_left``,
``max_tokens``, ``contextual_plan_info`` (earlier failed attempts: ``plan``, ``result``,
``error``, ``suggestion``), ``looked_up`` (what plans handed back with ``replan_with``:
``plan``, ``value``, ``sources``, ``iteration``), ``previous_suggestion``, ``memory_documents``,
``memory_keyword_hits``, ``journal_calls`` (the run's successful calls with their
results; ``succeeded_calls`` is the same as a list) and ``output_schema`` (the JSON
Schema of the run's output type, empty without one). The question itself is sent after it,
with the conversation (``MemoPrompt``) and knowledge (``KnowledgePrompt``) in between.

The validation template reads ``input`` (the question), ``plan``, ``plan_result``,
``plan_output`` (what the plan printed) and ``evidence`` (the calls the plan made, one
per line with their results).
"""

from __future__ import annotations

from typing import Any, Final

from dcbrain.tfplan.language import language_summary

DEFAULT_PLANNING_TEMPLATE: Final = """\
You are the planner of an assistant that solves questions by writing small programs.
Answer the user's question (the last message) in one of two ways:

1. If it needs none of the chains or tools below, reply with the answer in plain text,
   without any code block. That text is the final answer.
2. Otherwise reply with a plan: one ```tf_plan code block with a script that computes
   the answer. The script runs in a sandbox; its result is checked by a validator.

## The tf_plan language
{% raw %}""" + language_summary() + """{% endraw %}\
`raise ValueError("...")` gives up with a message. Prefer `parallel` whenever calls do
not depend on each other, and end with `return value` (a dict for several values).

## Chains
{{ spec_chains }}

## Tools
{{ tools }}

## Budget
Planning attempts left, this one included: {{ iterations_left }} of {{ max_iterations }}.
Tokens left: {{ tokens_left }} of {{ max_tokens }}. Keep plans short and direct.
{% if output_schema %}
## The answer's shape
The answer (the value the plan returns, or a direct answer written as JSON) must match
this JSON Schema:
{{ output_schema }}
{% endif %}{% if looked_up %}
## What your plans looked up with replan_with
{% for item in looked_up %}
### Attempt {{ item.iteration }} (data from {{ item.sources }})
```tf_plan
{{ item.plan }}
```
It handed back:
{{ item.value }}
{% endfor %}
Use what they found to write the plan that answers the question.
{% endif %}{% if contextual_plan_info %}
## Earlier attempts that did not solve the question
{% for attempt in contextual_plan_info %}
### Attempt {{ loop.index }}
```tf_plan
{{ attempt.plan }}
```
{% if attempt.error %}It failed with this error:
{{ attempt.error }}
{% endif %}{% if attempt.result %}Its result: {{ attempt.result }}
{% endif %}{% if attempt.suggestion %}The validator's suggestion: {{ attempt.suggestion }}
{% endif %}{% endfor %}
Write a new plan that fixes these problems; do not repeat a failed plan.
{% endif %}{% if journal_calls %}
## Calls that already succeeded in this run
Calling one of these again with the same arguments returns the recorded result at no cost \
(it does not run again), so a new plan may simply repeat the calls whose results it needs:
{{ journal_calls }}
{% endif %}{% if previous_suggestion %}
## The validator's last suggestion
{{ previous_suggestion }}
{% endif %}{% if memory_documents %}
## Documents from memory
{{ memory_documents }}{% endif %}{% if memory_keyword_hits %}
## Related items from memory
{{ memory_keyword_hits }}{% endif %}"""

DEFAULT_VALIDATE_TEMPLATE: Final = """\
You are the validator of an assistant that answers questions by running plans.
Decide whether the plan's result fully and correctly answers the user's question.

## The question
{{ input }}

## The plan
```tf_plan
{{ plan }}
```

## The plan's result
{{ plan_result }}
{% if plan_output %}
## What the plan printed
{{ plan_output }}
{% endif %}{% if evidence %}
## The calls the plan made, with their results (what the result rests on)
{{ evidence }}
{% endif %}
Check that:
- the result answers every part of the question, in the form it asks for;
- each name, number, date and total in it follows from the calls' results above
  (recompute sums, counts and differences yourself);
- it does not rest on a call that failed or found nothing, and the plan did nothing the
  question did not ask for.

Reply with only a JSON object: {"is_solved": true or false, "suggestion": "..."}.
`is_solved` is true only when the result answers the question completely and correctly.
When it is false, `suggestion` says concretely what the next plan must do differently;
when it is true, `suggestion` may be empty."""

VERDICT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "is_solved": {"type": "boolean"},
        "suggestion": {"type": "string"},
    },
    "required": ["is_solved"],
}

QUESTION_TEMPLATE: Final = "{{ input }}"
