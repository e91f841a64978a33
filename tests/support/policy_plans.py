"""Every plan of the policy tests, collected from their source: each string literal of a
policy test module that parses as a plan and calls one of that module's guarded tools,
with the tools and policies that module runs it with (and the AgentDojo plans).

Nothing here runs those tests: a module's text is read for its plans and the module is
loaded for its tools only. A plan added to one of these tests is collected with it.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from dcbrain import Chain
from dcbrain.chain import TFChainInterpreter
from dcbrain.llm.testing import ScriptedLLM
from dcbrain.tfplan import TFCheckError, TFInterpreterError, TFPolicyDenied

TESTS = Path(__file__).resolve().parent.parent
#: What a run of a plan came to.
PASSED, CHECKED, KNOWABLE, AT_RUN_TIME, FAILED = (
    "passed", "refused by the static check", "refused at a call by trusted_args",
    "refused at a call by a value policy", "failed otherwise")
#: Syntax that gives a plan more than one path: which of them runs is a run-time value.
BRANCHING = (ast.If, ast.IfExp, ast.While, ast.For, ast.AsyncFor, ast.BoolOp, ast.Try,
             ast.Match, ast.Break, ast.Continue, ast.Raise, ast.Assert)


@dataclass(frozen=True)
class PolicyPlan:
    """One plan of a policy test, and how to run it (``flow_check``, ``policy_mode``)."""

    corpus: str
    plan: str
    run: Callable[[bool, str], str]

    @property
    def one_path(self) -> bool:
        """Whether the plan has one path (no branch, loop, early exit, or filter of a
        comprehension): then the static check knows every value's sources."""
        tree = ast.parse(self.plan)
        return not any(isinstance(node, BRANCHING)
                       or (isinstance(node, ast.comprehension) and node.ifs)
                       for node in ast.walk(tree))


def outcome(evaluate: Callable[[], object]) -> str:
    """What ``evaluate`` came to, as one of the outcomes above."""
    try:
        evaluate()
    except TFCheckError:
        return CHECKED
    except TFPolicyDenied as exc:
        return KNOWABLE if exc.policy == "trusted_args" else AT_RUN_TIME
    except TFInterpreterError:
        return FAILED
    return PASSED


def load(relative: str) -> ModuleType:
    """The test module at ``relative`` (under ``tests/``), loaded for its tools."""
    path = TESTS / relative
    for module in list(sys.modules.values()):  # the module pytest imported, if it did
        if getattr(module, "__file__", None) == str(path):
            return module
    name = "_policy_plans_" + relative.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def plans_in(relative: str, guarded: frozenset[str]) -> list[str]:
    """The string literals of ``relative`` that parse as plans calling a ``guarded`` tool."""
    found: dict[str, None] = {}
    for node in ast.walk(ast.parse((TESTS / relative).read_text())):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        try:
            tree = ast.parse(node.value)
        except (SyntaxError, ValueError):
            continue
        called = {call.func.id for call in ast.walk(tree)
                  if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)}
        if called & guarded:
            found[node.value] = None
    return list(found)


PlanRunner = Callable[[str], Callable[[bool, str], str]]


def _interpreting(setup: Callable[[], dict[str, Any]]) -> PlanRunner:
    """How a plan runs: in a new interpreter per run (its arguments from ``setup()``: the
    tools, ``chains_map``, ``default_llm``), under the given flow check and policy mode;
    its outcome."""
    def for_plan(plan: str) -> Callable[[bool, str], str]:
        def run(flow_check: bool, mode: str) -> str:
            options = {"chains_map": {}, **setup()}
            interpreter = TFChainInterpreter(**options, flow_check=flow_check,
                                             policy_mode=mode,  # type: ignore[arg-type]
                                             isolation="inprocess")
            return outcome(lambda: interpreter.evaluate(plan))
        return run
    return for_plan


def _office(module: ModuleType, with_values: bool) -> PlanRunner:
    def setup() -> dict[str, Any]:
        policies = [module.TrustedValues("recipient", module.vendor_ibans)] \
            if with_values else []
        return {"tools": module.Office().tools(*policies),
                "default_llm": ScriptedLLM(["IBAN-KNOWN"] * 4)}
    return _interpreting(setup)


def _bank_moves(module: ModuleType) -> PlanRunner:
    def setup() -> dict[str, Any]:
        bank = module.Bank()
        return {"tools": [module.Tool(bank.read, side_effects=False),
                          module.Tool(bank.trusted, side_effects=False, trusted_output=True),
                          module.Tool(bank.files, side_effects=False, trusted_fields=["id_"]),
                          module.Tool(bank.pay, trusted_args=["recipient"]),
                          module.Tool(bank.delete, trusted_args=["file_id"])]}
    return _interpreting(setup)


def _flow(module: ModuleType) -> PlanRunner:
    def setup() -> dict[str, Any]:
        extract = Chain(name="extract", llm=ScriptedLLM([FACTS] * 4),
                        prompt="Extract the IBAN from: {{ text }}",
                        output_json_schema={"type": "object"})
        return {"chains_map": {"extract": extract}, "tools": module.TOOLS,
                "default_llm": ScriptedLLM(["DE1"] * 4)}
    return _interpreting(setup)


#: What the flow check's ``extract`` chain finds in what it reads.
FACTS = {"iban": "DE1", "amount": 1, "sender": "DE1"}


def _bills(module: ModuleType, asking: bool) -> PlanRunner:
    def setup() -> dict[str, Any]:
        bank = module.Bank()
        policies = [module.over_fifty] if asking else []
        return {"tools": [module.Tool(bank.read_bill, side_effects=False),
                          module.Tool(bank.send_money, trusted_args=["recipient"],
                                      policies=policies)]}
    return _interpreting(setup)


#: (corpus, test module, its guarded tools, how a plan of it runs).
SOURCES: list[tuple[str, str, frozenset[str],
                    Callable[[ModuleType], Callable[[str], Callable[[bool, str], str]]]]] = [
    ("office", "security/test_one_rule.py", frozenset({"send_money", "delete_file"}),
     lambda module: _office(module, with_values=False)),
    ("office with TrustedValues", "security/test_one_rule.py",
     frozenset({"send_money", "delete_file"}), lambda module: _office(module, with_values=True)),
    ("label moves", "security/test_label_moves.py", frozenset({"pay", "delete"}), _bank_moves),
    ("flow check", "tfplan/test_flow.py", frozenset({"send_money"}), _flow),
    ("brain policies", "brain/test_brain_policies.py", frozenset({"send_money"}),
     lambda module: _bills(module, asking=False)),
    ("brain policies, over_fifty", "brain/test_brain_policies.py", frozenset({"send_money"}),
     lambda module: _bills(module, asking=True)),
]


def policy_plans() -> Iterator[PolicyPlan]:
    """Every plan of the policy test modules, with how it runs."""
    for corpus, relative, guarded, runner in SOURCES:
        module = load(relative)
        for_plan = runner(module)
        for plan in plans_in(relative, guarded):
            yield PolicyPlan(corpus, plan, for_plan(plan))


def agentdojo_plans() -> Iterator[PolicyPlan]:
    """The fooled and honest AgentDojo plans, each with its suite's tools."""
    from support import agentdojo_plans as dojo

    def runner(case: Any) -> Callable[[bool, str], str]:
        def run(flow_check: bool, mode: str) -> str:
            world = dojo.environment(case.suite, case.injections)
            interpreter = dojo.interpreter_for(case, world, flow_check=flow_check,
                                               policy_mode=mode)
            return outcome(lambda: interpreter.evaluate(case.plan))
        return run

    for suite in dojo.SUITES:
        for kind, cases in (("fooled", dojo.fooled_cases(suite)),
                            ("honest", dojo.honest_cases(suite))):
            for case in cases:
                yield PolicyPlan(f"agentdojo {suite} {kind}", case.plan, runner(case))
