"""One definition of the language: the summary, the docs and the prompts come from the tables."""

from __future__ import annotations

import ast
from datetime import datetime
from pathlib import Path

from dcbrain.brain.local_planner import plan_grammar
from dcbrain.brain.templates import DEFAULT_PLANNING_TEMPLATE
from dcbrain.chain.orchestrate import TFPLAN_LANGUAGE_SUMMARY
from dcbrain.tfplan import Limits
from dcbrain.tfplan.builtins import (
    BUILTIN_FUNCTIONS,
    EXCEPTIONS,
    PLAIN_BUILTINS,
    build_builtins,
)
from dcbrain.tfplan.guards import Guards
from dcbrain.tfplan.language import (
    OPERATOR_SYMBOLS,
    generated_part,
    language_reference,
    language_summary,
)
from dcbrain.tfplan.methods import ALLOWED, MODULE_MEMBERS
from dcbrain.tfplan.parser import ALLOWED_NODES
from dcbrain.tfplan.state import RunState

DOCS = Path(__file__).parents[2] / "docs" / "tfplan.md"


def test_docs_carry_the_generated_reference_unchanged() -> None:
    generated = generated_part(DOCS.read_text(encoding="utf-8"))
    assert generated == language_reference(), (
        "docs/tfplan.md is stale: run `python -m dcbrain.tfplan.language docs/tfplan.md`")


def test_planning_prompts_embed_the_generated_summary() -> None:
    summary = language_summary()
    assert summary in DEFAULT_PLANNING_TEMPLATE
    assert summary == TFPLAN_LANGUAGE_SUMMARY


def test_summary_names_every_builtin_method_and_module_member() -> None:
    summary = language_summary()
    words = set(summary.replace(".", " ").replace(";", " ").replace(",", " ").split())
    assert set(BUILTIN_FUNCTIONS) | set(EXCEPTIONS) <= words
    for kind in (str, list, tuple, dict, set):
        assert ALLOWED[kind] <= words
    for members in MODULE_MEMBERS.values():
        assert members <= words
    assert "`dict.fromkeys`" in summary


def test_builtins_table_is_what_a_plan_gets() -> None:
    names = build_builtins(Guards(RunState(limits=Limits())))
    assert set(names) == set(BUILTIN_FUNCTIONS) | set(EXCEPTIONS)
    assert set(names["math"].members) == MODULE_MEMBERS["math"]
    assert set(names["json"].members) == MODULE_MEMBERS["json"]


def test_two_runs_share_no_mutable_name() -> None:
    """Each run's builtins and guards are its own: only immutable values are shared."""
    first_guards, second_guards = (Guards(RunState(limits=Limits())) for _ in range(2))
    first, second = build_builtins(first_guards), build_builtins(second_guards)
    plain = {**PLAIN_BUILTINS, **EXCEPTIONS}
    for name, value in first.items():
        if value is second[name]:
            assert plain.get(name) is value, name
    assert first["list"].members is not second["list"].members
    assert first["datetime"].members is not second["datetime"].members
    first_date, second_date = (names["datetime"].members["datetime"]
                               for names in (first, second))
    assert first_date is not second_date
    assert first_date.members is not second_date.members
    assert first_date.members["strptime"] is not second_date.members["strptime"]
    assert first_date.members["fromisoformat"] == datetime.fromisoformat
    spaces = first_guards.namespace(), second_guards.namespace()
    assert spaces[0].keys() == spaces[1].keys()
    for name, value in spaces[0].items():
        other = spaces[1][name]
        if value is other:
            assert isinstance(value, frozenset | int | type) or value is len, name
        else:
            assert getattr(value, "__self__", value) is not getattr(other, "__self__", other)
    spaces[0]["__tf_native"] = frozenset()
    assert Guards(RunState(limits=Limits())).namespace()["__tf_native"] \
        == frozenset({str, int, float, bool})


def test_no_builtin_is_a_class_a_plan_did_not_already_have() -> None:
    names = build_builtins(Guards(RunState(limits=Limits())))
    for name in ("iter", "next", "hash"):
        assert not isinstance(names[name], type)


def test_every_allowed_operator_has_a_symbol() -> None:
    operators = [node for node, construct in ALLOWED_NODES.items() if construct == "operator"]
    assert set(operators) <= set(OPERATOR_SYMBOLS)


def test_embedded_model_grammar_admits_the_allowed_arithmetic() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    grammar = plan_grammar({"add": add})
    op_rule = next(line for line in grammar.splitlines() if line.startswith("op ::="))
    for node in (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow):
        assert f'"{OPERATOR_SYMBOLS[node]}"' in op_rule
