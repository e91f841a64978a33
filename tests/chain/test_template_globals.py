"""A compiled prompt template keeps every global of the sandboxed environment."""

from __future__ import annotations

import pytest

from dcbrain.chain import AdditionalInfoPrompt
from dcbrain.chain._templates import _ENVIRONMENT, compile_jinja
from dcbrain.exceptions import TFPromptVariableError


def test_a_template_reads_the_environments_globals() -> None:
    template = compile_jinja("{{ range(3) | list }} {% set ns = namespace(n=1) %}{{ ns.n }} "
                             "{{ dict(a=x) }}")
    assert dict(template.globals) == dict(_ENVIRONMENT.globals)
    assert template.render({"x": 2}) == '[0, 1, 2] 1 {"a": 2}'
    prompt = AdditionalInfoPrompt("{{ cycler('a', 'b').next() }} {{ topic }}")
    assert prompt.render({"topic": "t"}) == "a t"
    with pytest.raises(TFPromptVariableError):
        prompt.render({})
