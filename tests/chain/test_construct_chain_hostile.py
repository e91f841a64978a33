"""A plan's ``__construct_chain`` takes data, never code: no keyword outside its documented
few, no string evaluated as a type, no template code in its prompts, no configured name.

A plan may be written by a prompt-injected model; each case is one it could write.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from dcbrain import Chain, Neural, ScriptedLLM, TFChainInterpreter
from dcbrain.exceptions import TFChainError
from dcbrain.tfplan import TFCallError, TFCheckError

ISOLATIONS = ["inprocess", "process"]

# Files the host opens while a test watches (audit hooks cannot be removed, so one hook
# serves every test of this module and records only while a test asks it to).
_opened: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _opened is not None and args and isinstance(args[0], str | Path):
        _opened.append(str(args[0]))


sys.addaudithook(_audit)


ESCAPE = (
    "c = __construct_chain(name='x', output_type=\"__import__('pathlib').Path("
    "'escape_marker.txt').write_text(open('secret.txt').read()) and int\")\n"
    "c(input='go')\n"
)


@pytest.fixture
def canary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "secret.txt").write_text("canary-7f3a")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest.mark.parametrize("checked", [True, False])
def test_a_string_output_type_is_never_evaluated(
    canary: Path, isolation: str, checked: bool
) -> None:
    global _opened
    interpreter = TFChainInterpreter({}, default_llm=ScriptedLLM(["{}"]),
                                     isolation=isolation)  # type: ignore[arg-type]
    _opened = []
    try:
        with pytest.raises((TFCheckError, TFCallError)) as caught:
            interpreter.evaluate(ESCAPE, check=checked)
        opened = _opened
    finally:
        _opened = None
    assert "output_type" in str(caught.value)
    assert not (canary / "escape_marker.txt").exists()
    assert not any(path.endswith("secret.txt") for path in opened)


def test_the_checker_names_an_unknown_keyword_with_its_position() -> None:
    interpreter = TFChainInterpreter({}, default_llm=ScriptedLLM([]))
    problems = interpreter.check("x = 1\nc = __construct_chain(name='c', tools=[x])\n")
    assert [(p.line, p.col) for p in problems] == [(2, 33)]
    assert "has no argument 'tools'" in problems[0].message
    assert "output_schema, tags, name, description, prompt, system_prompt" in problems[0].message


@pytest.mark.parametrize("keyword", ["output_type", "result_cache_key", "max_tool_rounds",
                                     "input_schema", "catch_intermediate_chain_result"])
def test_keywords_beyond_the_documented_ones_are_refused_at_run_time(keyword: str) -> None:
    interpreter = TFChainInterpreter({}, default_llm=ScriptedLLM([]), isolation="inprocess")
    with pytest.raises(TFCallError, match=f"__construct_chain has no argument '{keyword}'"):
        interpreter.evaluate(f"c = __construct_chain({keyword}='x')", check=False)


@pytest.mark.parametrize(("argument", "expected"), [
    ("output_schema='int'", "'output_schema' must be object, got str"),
    ("tags='abc'", "'tags' must be array, got str"),
    ("tags=[1, 2]", "'tags' must be a list of strings"),
    ("prompt={'a': 1}", "'prompt' must be string, got dict"),
])
def test_arguments_of_the_wrong_type_are_refused(argument: str, expected: str) -> None:
    interpreter = TFChainInterpreter({}, default_llm=ScriptedLLM([]), isolation="inprocess")
    with pytest.raises(TFCallError, match=expected):
        interpreter.evaluate(f"c = __construct_chain({argument})", check=False)


def test_a_chain_given_a_string_output_type_by_python_code_is_refused_too() -> None:
    with pytest.raises(TFChainError, match="output_type must be a type, not the string"):
        Chain(name="c", llm=ScriptedLLM([]), output_type="int")


HOSTILE_TEMPLATES = [
    # nested loops that hold the host's CPU
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    # string multiplication that reaches the host's memory
    "{{ 'x' * 1000000000 }}",
    "{{ input * 1000000000 }}",
    "{% set big = 'x' * 100000 %}{{ big }}",
    "{{ range(100000) | list }}",
    "{{ input | center(1000000000) }}",
    "{{ input | join('x') }}",
    "{% if input %}{{ input }}{% endif %}",
    "{{ input[input] }}",
    "{{ lipsum(1000000) }}",
]


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest.mark.parametrize("template", HOSTILE_TEMPLATES)
@pytest.mark.parametrize("keyword", ["prompt", "system_prompt"])
def test_a_template_from_a_plan_only_substitutes_values(
    isolation: str, template: str, keyword: str
) -> None:
    interpreter = TFChainInterpreter({}, default_llm=ScriptedLLM(["done"] * 2),
                                     isolation=isolation)  # type: ignore[arg-type]
    plan = f"c = __construct_chain({keyword}={template!r})\nc(input='go')\n"
    started = time.monotonic()
    with pytest.raises(TFCallError, match="may only substitute values") as caught:
        interpreter.evaluate(plan)
    assert time.monotonic() - started < 10  # a hang guard: these used to run for minutes
    assert f"__construct_chain {keyword}: line 1" in str(caught.value)
    assert caught.value.line == 1


def test_a_template_that_substitutes_values_renders_them() -> None:
    llm = ScriptedLLM(["ok"])
    interpreter = TFChainInterpreter({}, default_llm=llm, isolation="inprocess")
    result = interpreter.evaluate(
        "c = __construct_chain(name='greet', system_prompt='Be {{ tone | upper }}.', "
        "prompt='Hello {{ who.name }} from {{ where[\"city\"] }}: {{ input | default(\"-\") }} "
        "{{ facts | tojson }}')\n"
        "c(input='hi', who={'name': 'Ada'}, where={'city': 'Paris'}, tone='terse', "
        "facts=[1, 2])\n"
    )
    assert result.value == "ok"
    sent = llm.calls[0]
    assert sent[0] == {"role": "system", "content": "Be TERSE."}
    assert sent[-1]["content"] == 'Hello Ada from Paris: hi [1, 2]'


def test_a_plan_cannot_take_the_name_of_a_configured_chain() -> None:
    neural = Neural()
    trusted = Chain(name="summarize", llm=ScriptedLLM([]))
    neural.register("chain", "summarize", trusted)
    interpreter = TFChainInterpreter({}, default_llm=ScriptedLLM(["x"]), neural=neural,
                                     isolation="inprocess")
    with pytest.raises(TFCallError, match="name 'summarize' is taken"):
        interpreter.evaluate("c = __construct_chain(name='summarize')\nc(input='a')\n")
    assert neural.lookup("chain", "summarize") is trusted


def test_a_plan_cannot_take_the_name_of_one_of_its_own_tools() -> None:
    def lookup(key: str) -> str:
        return key

    interpreter = TFChainInterpreter({}, tools=[lookup], default_llm=ScriptedLLM(["x"]),
                                     isolation="inprocess")
    with pytest.raises(TFCallError, match="name 'lookup' is taken"):
        interpreter.evaluate("c = __construct_chain(name='lookup')\n")


def test_a_plan_may_build_a_chain_of_the_same_name_again() -> None:
    neural = Neural()
    interpreter = TFChainInterpreter({}, default_llm=ScriptedLLM(["a", "b"]), neural=neural,
                                     isolation="inprocess")
    result = interpreter.evaluate(
        "c = __construct_chain(name='city')\nd = __construct_chain(name='city', "
        "description='again')\n[c(input='1'), d(input='2')]\n"
    )
    assert result.value == ["a", "b"]
    assert neural.lookup("chain", "city").description == "again"
