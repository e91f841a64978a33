"""Prompts: Jinja2 and f-string templates, and what each prompt class renders from."""

from __future__ import annotations

import json
import logging

import pytest

from dcbrain import Chain, ScriptedLLM, TFChainInterpreter
from dcbrain.chain import (
    AdditionalInfoPrompt,
    ChainsIntermediatePrompt,
    JSONExamplePrompt,
    KnowledgePrompt,
    MemoPrompt,
    PromptContext,
    json_example,
)
from dcbrain.exceptions import TFChainError, TFPromptVariableError
from dcbrain.messages import CHAINS_INTERMEDIATE_RESULTS, TextMessage
from dcbrain.tfplan import TFInterpreterError


def context(content: str = "the question", **kwargs: object) -> PromptContext:
    return PromptContext(current_input=TextMessage(content=content, additional_kwargs=dict(kwargs)))


def with_results(results: object, content: str = "q") -> PromptContext:
    raw = results if isinstance(results, str) else json.dumps(results)
    return context(content, **{CHAINS_INTERMEDIATE_RESULTS: raw})


# templates


@pytest.mark.parametrize(
    ("template", "template_format"),
    [
        ("Translate {{ text }} into {{ lang }}.", "jinja2"),
        ("Translate {text} into {lang}.", "f-string"),
    ],
)
def test_templates_render_from_additional_kwargs(template: str, template_format: str) -> None:
    prompt = AdditionalInfoPrompt(template, template_format=template_format)  # type: ignore[arg-type]
    messages = prompt.to_messages(context(text="bonjour", lang="English"))
    assert messages == [{"role": "user", "content": "Translate bonjour into English."}]
    assert prompt.variables == {"text", "lang"}


@pytest.mark.parametrize(
    ("template", "template_format"),
    [("Q: {{ input }}", "jinja2"), ("Q: {current_input}", "f-string")],
)
def test_input_and_current_input_are_the_input_text(template: str, template_format: str) -> None:
    prompt = AdditionalInfoPrompt(template, template_format=template_format)  # type: ignore[arg-type]
    assert prompt.to_messages(context("why?"))[0]["content"] == "Q: why?"


def test_call_arguments_override_the_input_text() -> None:
    prompt = AdditionalInfoPrompt("{{ input }}")
    assert prompt.to_messages(context("user text", input="plan text"))[0]["content"] == "plan text"


@pytest.mark.parametrize(
    ("template", "template_format"), [("Hello {{ name }}", "jinja2"), ("Hello {name}", "f-string")]
)
def test_undefined_variables_are_errors_naming_the_variable(
    template: str, template_format: str
) -> None:
    prompt = AdditionalInfoPrompt(template, template_format=template_format)  # type: ignore[arg-type]
    with pytest.raises(TFPromptVariableError, match=r"'name' is undefined \(available: .*topic"):
        prompt.to_messages(context(topic="x"))


def test_undefined_fields_of_a_variable_are_errors() -> None:
    prompt = AdditionalInfoPrompt("{{ user.name }}")
    with pytest.raises(TFPromptVariableError, match="no attribute 'name'"):
        prompt.to_messages(context(user={"id": 1}))


def test_f_string_templates_look_up_dict_keys_and_list_items() -> None:
    prompt = AdditionalInfoPrompt("{user.name} likes {tags[1]}", template_format="f-string")
    rendered = prompt.to_messages(context(user={"name": "Ann"}, tags=["tea", "jazz"]))
    assert rendered[0]["content"] == "Ann likes jazz"


def test_f_string_templates_do_not_reach_python_attributes() -> None:
    prompt = AdditionalInfoPrompt("{text.__class__}", template_format="f-string")
    with pytest.raises(TFPromptVariableError, match="no '__class__'"):
        prompt.to_messages(context(text="abc"))


def test_jinja2_templates_are_sandboxed() -> None:
    prompt = AdditionalInfoPrompt("{{ text.__class__.__mro__ }}")
    with pytest.raises(TFChainError):
        prompt.to_messages(context(text="abc"))


def test_dicts_and_lists_render_as_json() -> None:
    data = {"a": [1, "二"]}
    jinja = AdditionalInfoPrompt("{{ data }}").to_messages(context(data=data))
    fstring = AdditionalInfoPrompt("{data}", template_format="f-string").to_messages(
        context(data=data)
    )
    assert jinja[0]["content"] == fstring[0]["content"] == '{"a": [1, "二"]}'


def test_jinja2_control_flow_and_escaped_f_string_braces() -> None:
    jinja = AdditionalInfoPrompt("{% for x in items %}[{{ x }}]{% endfor %}")
    assert jinja.variables == {"items"}
    assert jinja.to_messages(context(items=["a", "b"]))[0]["content"] == "[a][b]"
    fstring = AdditionalInfoPrompt("{{literal}} {value}", template_format="f-string")
    assert fstring.variables == {"value"}
    assert fstring.to_messages(context(value=1))[0]["content"] == "{literal} 1"


def test_a_prompt_that_renders_blank_sends_no_message() -> None:
    prompt = AdditionalInfoPrompt("{% if show %}shown{% endif %}")
    assert prompt.to_messages(context(show=False)) == []


@pytest.mark.parametrize(
    ("template", "template_format", "error"),
    [
        ("{{ unclosed", "jinja2", "Jinja2 syntax error at line 1"),
        ("{unclosed", "f-string", "not a valid f-string template"),
        ("{} and {0}", "f-string", "must start with a variable name"),
    ],
)
def test_malformed_templates_are_rejected_when_built(
    template: str, template_format: str, error: str
) -> None:
    with pytest.raises(TFChainError, match=error):
        AdditionalInfoPrompt(template, template_format=template_format)  # type: ignore[arg-type]


def test_unknown_template_format_is_rejected() -> None:
    with pytest.raises(TFChainError, match="unknown template_format 'mustache'"):
        AdditionalInfoPrompt("x", template_format="mustache")  # type: ignore[arg-type]


def test_role_is_configurable_and_input_variables_exclude_current_input() -> None:
    prompt = AdditionalInfoPrompt("{{ current_input }} {{ input }} {{ k }}", role="system")
    assert prompt.to_messages(context("q", k="v"))[0]["role"] == "system"
    assert prompt.input_variables() == {"input", "k"}


# ChainsIntermediatePrompt (seed 001)


@pytest.mark.parametrize(
    ("template", "template_format"),
    [
        ("上一步的分析结果：{{ chains_intermediate_result.summary }}", "jinja2"),
        ("上一步的分析结果：{chains_intermediate_result.summary}", "f-string"),
    ],
)
def test_intermediate_prompt_reads_earlier_chain_results(
    template: str, template_format: str
) -> None:
    prompt = ChainsIntermediatePrompt(template, template_format=template_format)  # type: ignore[arg-type]
    messages = prompt.to_messages(with_results({"summary": "销量增长", "other": 1}))
    assert messages == [{"role": "user", "content": "上一步的分析结果：销量增长"}]


@pytest.mark.parametrize(
    ("template", "template_format"),
    [
        ("Search result: {{ chains_intermediate_result.search_result }}", "jinja2"),
        ("Search result: {chains_intermediate_result.search_result}", "f-string"),
    ],
)
@pytest.mark.parametrize("results", [{"summary": "only this"}, {}, "not json", "[1, 2]"])
def test_intermediate_prompt_renders_nothing_when_a_needed_field_is_missing(
    template: str, template_format: str, results: object
) -> None:
    prompt = ChainsIntermediatePrompt(template, template_format=template_format)  # type: ignore[arg-type]
    assert prompt.to_messages(with_results(results)) == []


def test_intermediate_prompt_renders_nothing_without_any_cache() -> None:
    prompt = ChainsIntermediatePrompt("Earlier: {{ chains_intermediate_result.summary }}")
    assert prompt.to_messages(context("q")) == []


def test_intermediate_prompt_supports_nested_fields_and_the_input() -> None:
    prompt = ChainsIntermediatePrompt(
        "{input}: {chains_intermediate_result.metrics[0].name}", template_format="f-string"
    )
    rendered = prompt.to_messages(with_results({"metrics": [{"name": "revenue"}]}, content="Q3"))
    assert rendered[0]["content"] == "Q3: revenue"


def test_intermediate_prompt_rejects_variables_it_cannot_provide() -> None:
    with pytest.raises(TFChainError, match="also uses 'topic'"):
        ChainsIntermediatePrompt("{{ topic }} {{ chains_intermediate_result.x }}")


def test_intermediate_prompt_does_not_advertise_inputs() -> None:
    prompt = ChainsIntermediatePrompt("{{ input }} {{ chains_intermediate_result.x }}")
    assert prompt.input_variables() == frozenset()


# MemoPrompt and KnowledgePrompt


def test_memo_prompt_replays_the_conversation_as_chat_messages() -> None:
    ctx = context("now")
    ctx.conversation = [
        TextMessage("hi", role="user"),
        TextMessage("hello!", role="assistant"),
        TextMessage("tool said x", role="tool"),
    ]
    assert MemoPrompt().to_messages(ctx) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello!"},
        {"role": "user", "content": "tool said x"},
    ]
    assert MemoPrompt(max_messages=1).to_messages(ctx) == [
        {"role": "user", "content": "tool said x"}
    ]


def test_memo_prompt_with_a_template_renders_one_message() -> None:
    ctx = context("now")
    ctx.conversation = [TextMessage("hi"), TextMessage("hello!", role="assistant")]
    prompt = MemoPrompt("{% for m in conversation %}{{ m.role }}: {{ m.content }}\n{% endfor %}")
    assert prompt.to_messages(ctx) == [{"role": "user", "content": "user: hi\nassistant: hello!\n"}]


def test_memo_prompt_without_conversation_renders_nothing() -> None:
    assert MemoPrompt().to_messages(context()) == []
    assert MemoPrompt("History: {{ conversation }}").to_messages(context()) == []


def test_knowledge_prompt_lists_the_knowledge() -> None:
    ctx = context()
    ctx.knowledge = ["Paris is in France", '{"fact": 1}']
    messages = KnowledgePrompt().to_messages(ctx)
    assert messages[0]["role"] == "system"
    assert "- Paris is in France\n" in messages[0]["content"]
    assert '- {"fact": 1}\n' in messages[0]["content"]


def test_knowledge_prompt_with_a_custom_template_and_no_knowledge() -> None:
    ctx = context()
    assert KnowledgePrompt("Facts: {{ knowledge | join('; ') }}").to_messages(ctx) == []
    ctx.knowledge = ["a", "b"]
    assert KnowledgePrompt("Facts: {{ knowledge | join('; ') }}").to_messages(ctx)[0][
        "content"
    ] == ("Facts: a; b")


# JSON example


def test_json_example_follows_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "count": {"type": "integer"},
            "score": {"type": "number"},
            "ok": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "kind": {"enum": ["a", "b"]},
            "maybe": {"type": ["null", "integer"]},
            "either": {"anyOf": [{"type": "string", "const": "x"}, {"type": "integer"}]},
            "nested": {"properties": {"inner": {"type": "string", "examples": ["e.g."]}}},
        },
    }
    assert json_example(schema) == {
        "title": "...",
        "count": 0,
        "score": 0.0,
        "ok": True,
        "tags": ["..."],
        "kind": "a",
        "maybe": 0,
        "either": "x",
        "nested": {"inner": "e.g."},
    }


def test_json_example_prompt_shows_schema_and_example() -> None:
    schema = {"type": "object", "properties": {"summary": {"type": "string"}}}
    [message] = JSONExamplePrompt(schema).to_messages(context())
    assert message["role"] == "system"
    assert '"summary": {\n' in message["content"]
    assert '{"summary": "..."}' in message["content"]


def metrics_chain(llm: ScriptedLLM, **options: object) -> Chain:
    return Chain(name="metrics", llm=llm, prompt=[
        AdditionalInfoPrompt("Extract the key metrics."),
        ChainsIntermediatePrompt("Earlier summary: {{ chains_intermediate_result.summary }}",
                                 **options),  # type: ignore[arg-type]
    ])


def test_a_chain_whose_earlier_chain_has_not_run_says_what_it_left_out(
        caplog: pytest.LogCaptureFixture) -> None:
    summarize = Chain(name="summarize", llm=ScriptedLLM([{"summary": "sales grew"}]),
                      prompt="Summarize {{ text }}",
                      output_json_schema={"type": "object",
                                          "properties": {"summary": {"type": "string"}}})
    llm = ScriptedLLM(["revenue", "revenue"])
    interpreter = TFChainInterpreter({"summarize": summarize, "metrics": metrics_chain(llm)})
    with caplog.at_level(logging.WARNING, logger="dcbrain.chain.prompts"):
        early = interpreter.evaluate("return metrics()")
    assert [message["content"] for message in llm.calls[0]] == ["Extract the key metrics."]
    [note] = [line for line in early.chain_result.logs if "left out" in line]
    assert note.startswith("chain 'metrics': prompt ChainsIntermediatePrompt('Earlier summary")
    assert note.endswith("left out: intermediate result 'summary' is missing "
                         "(the cache holds: nothing)")
    assert "intermediate result 'summary' is missing" in caplog.text
    interpreter.evaluate("summarize(text='q3')\nreturn metrics()")
    assert "Earlier summary: sales grew" in llm.calls[1][-1]["content"]


def test_a_required_intermediate_result_that_is_missing_fails_the_chain() -> None:
    interpreter = TFChainInterpreter({"metrics": metrics_chain(ScriptedLLM(["x"]),
                                                               required=True)})
    with pytest.raises(TFInterpreterError,
                       match=r"intermediate result 'summary' is missing \(the cache holds: "
                             r"nothing\); the chain that writes it has not run"):
        interpreter.evaluate("return metrics()")
