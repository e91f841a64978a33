"""The top level of ``dcbrain``: what users import, and only that, loaded on first use."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import dcbrain

#: Parts behind the public names: importable from their packages, not from the top level.
INTERNALS = {
    "BrainContext": "dcbrain.brain",
    "ChainContext": "dcbrain.chain",
    "merge_usages": "dcbrain.usage",
    "AdditionalInfoPrompt": "dcbrain.chain",
    "ChainsIntermediatePrompt": "dcbrain.chain",
    "KnowledgePrompt": "dcbrain.chain",
    "MemoPrompt": "dcbrain.chain",
}


def test_the_names_users_reach_for_are_at_the_top_level() -> None:
    from dcbrain import MCPTools, TFError, Tool, tool
    from dcbrain.mcp import MCPTools as MCPToolsOfItsPackage
    from dcbrain.tfplan import Limits

    assert dcbrain.Limits is Limits and MCPTools is MCPToolsOfItsPackage
    assert issubclass(dcbrain.TFBrainError, TFError)
    def stock(sku: str) -> int:
        """Units in stock."""
        return 3

    fresh = Tool(stock, name="stock_level", reuse=False)
    assert (fresh.name, fresh.reuse, fresh.description) == ("stock_level", False, "Units in stock.")
    assert tool(stock).name == "stock"


def test_the_names_the_product_contract_fixes_stay() -> None:
    for name in ("DCBrain", "DCChains", "TFChainInterpreter", "BaseBrain", "SessionResult"):
        assert name in dcbrain.__all__
    assert callable(dcbrain.BaseBrain.connect_to_neural)
    from dcbrain.messages import CHAINS_INTERMEDIATE_RESULTS

    assert CHAINS_INTERMEDIATE_RESULTS == "__chains_intermediate_results"


@pytest.mark.parametrize("name", sorted(INTERNALS))
def test_internals_are_not_at_the_top_level_but_stay_in_their_packages(name: str) -> None:
    assert name not in dcbrain.__all__
    with pytest.raises(AttributeError):
        getattr(dcbrain, name)
    assert getattr(importlib.import_module(INTERNALS[name]), name) is not None


def test_event_classes_come_from_dcbrain_events() -> None:
    from dcbrain.events import Event, Final, PlanCreated  # noqa: F401 - importable there

    assert not {"Event", "Final", "PlanCreated"} & set(dcbrain.__all__)


def test_importing_dcbrain_imports_none_of_what_its_names_need() -> None:
    probe = ("import sys, dcbrain; print(sorted(m for m in sys.modules "
             "if m.startswith(('dcbrain.', 'pydantic', 'openai', 'jinja2'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "['dcbrain._lazy']"
