"""``[brain] output_type``: a class of an importable module or of a file by the config,
checked by ``dcbrain config check`` and built into the brain."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcbrain.config import ConfigError, load_config
from dcbrain.config.composition import build_brain
from support.cli_runner import RunCLI

MODELS = '''
from pydantic import BaseModel


class Quote(BaseModel):
    product: str
    price: float


def look_up(product: str) -> dict:
    """A product's entry."""
    return {"product": product, "price": 1.0}
'''


def _config(tmp_path: Path, output_type: str) -> Path:
    (tmp_path / "tools.py").write_text(MODELS)
    (tmp_path / "shop_models.py").write_text(MODELS)
    path = tmp_path / "dcbrain.toml"
    path.write_text('tools = ["tools.py"]\n[llm.main]\nmodel = "m"\napi_key = "none"\n'
                    f'[brain]\noutput_type = "{output_type}"\n')
    return path


@pytest.mark.parametrize("spec", ["tools.py:Quote", "shop_models:Quote"])
def test_the_brain_answers_in_the_configured_type(tmp_path: Path, spec: str) -> None:
    brain = build_brain(load_config(_config(tmp_path, spec)))
    assert brain.output_type.__name__ == "Quote"
    assert sorted(brain.output_type.model_fields) == ["price", "product"]


@pytest.mark.parametrize(("spec", "problem"), [
    ("tools.py:Price", "brain.output_type: 'tools.py:Price': tools.py has no Price"),
    ("missing.py:Quote", "brain.output_type: 'missing.py:Quote': no file"),
    ("no_such_module:Quote", "brain.output_type: 'no_such_module:Quote': importing "
     "no_such_module failed: ModuleNotFoundError"),
    ("tools.py:look_up", "brain.output_type: 'tools.py:look_up': look_up is a function, "
     "not a class"),
])
def test_config_check_names_an_output_type_it_cannot_use(
    tmp_path: Path, run_cli: RunCLI, spec: str, problem: str
) -> None:
    config = _config(tmp_path, spec)
    with pytest.raises(ConfigError) as caught:
        build_brain(load_config(config))
    assert problem in str(caught.value)
    done = run_cli("config", "check", "--config", str(config))
    assert done.returncode == 2
    assert problem in done.stderr


def test_an_output_type_that_is_not_module_colon_class_is_refused_as_written(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    done = run_cli("config", "check", "--config", str(_config(tmp_path, "Quote")))
    assert done.returncode == 2
    assert "brain.output_type" in done.stderr
