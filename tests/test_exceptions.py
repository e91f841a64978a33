"""One exception tree: every error class lives in one of two modules, under ``TFError``."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import dcbrain.exceptions as exceptions
from dcbrain.exceptions import TFError
from dcbrain.tfplan import Interpreter
from dcbrain.tfplan.errors import TFInterpreterError, TFRuntimeError

SOURCE = Path(__file__).parents[1] / "src" / "dcbrain"
HOMES = {"dcbrain.exceptions", "dcbrain.tfplan.errors"}


def _modules_defining_classes() -> list[str]:
    names = []
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, ast.ClassDef) for node in tree.body):
            parts = path.relative_to(SOURCE.parent).with_suffix("").parts
            names.append(".".join(part for part in parts if part != "__init__"))
    return names


@pytest.mark.parametrize("module_name", _modules_defining_classes())
def test_error_classes_are_defined_only_in_the_two_error_modules(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if issubclass(cls, BaseException) and cls.__module__ == module_name:
            assert module_name in HOMES, f"{cls.__qualname__} is defined in {module_name}"


def test_every_public_error_is_a_tf_error() -> None:
    for name in exceptions.__all__:
        assert issubclass(getattr(exceptions, name), TFError), name


def test_moved_errors_keep_their_old_import_paths() -> None:
    from dcbrain.brain.control import AbortRequested
    from dcbrain.config import ConfigError
    from dcbrain.llm.local import LocalModelUnavailable
    from dcbrain.server import ApiError, TooManyRuns

    assert (AbortRequested, ConfigError, LocalModelUnavailable, ApiError, TooManyRuns) == (
        exceptions.AbortRequested, exceptions.ConfigError, exceptions.LocalModelUnavailable,
        exceptions.ApiError, exceptions.TooManyRuns,
    )


def test_a_failed_plan_carries_what_it_did_as_a_typed_partial_result() -> None:
    def lookup(key: str) -> str:
        return key.upper()

    source = "print('start')\nfound = lookup(key='a')\nfound['missing']"
    with pytest.raises(TFRuntimeError) as caught:
        Interpreter({"lookup": lookup}).run(source)
    error: TFInterpreterError = caught.value
    assert isinstance(error, TFError)
    partial = error.partial_result
    assert partial.value is None
    assert partial.stdout == "start\n"
    assert [(record.name, record.result) for record in partial.trace] == [("lookup", "A")]


def test_the_plan_languages_errors_are_importable_from_dcbrain_exceptions() -> None:
    import dcbrain.tfplan.errors as language
    from dcbrain.exceptions import TFApprovalDenied, TFPolicyDenied, TFToolTimeout

    assert (TFApprovalDenied, TFPolicyDenied, TFToolTimeout) == (
        language.TFApprovalDenied, language.TFPolicyDenied, language.TFToolTimeout)
    for name in sorted(exceptions._LANGUAGE_ERRORS):
        assert getattr(exceptions, name) is getattr(language, name), name
        assert issubclass(getattr(exceptions, name), TFError), name
    assert set(exceptions._LANGUAGE_ERRORS) <= set(dir(exceptions))
    with pytest.raises(AttributeError, match="no attribute 'Expired'"):
        exceptions.Expired  # noqa: B018 - a signal of the sandbox, not an error to catch
