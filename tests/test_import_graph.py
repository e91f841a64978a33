"""The import graph follows the layers: a lower layer never imports a higher one.

Read from the AST of ``src/dcbrain`` (every import, lazy ones inside functions and
type-only ones too), so that no import can hide. A unit is a top-level module or
package of ``dcbrain``; where one package holds two layers (the MCP client is a tool
source, the MCP server a surface) the module is named.

The same map is drawn in ``docs/architecture.md``; ``python tests/test_import_graph.py``
redraws it there.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from dcbrain._docparts import GeneratedPart

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "dcbrain"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MAP_PART = GeneratedPart("tests/test_import_graph.py")

#: Lowest first: (name, what it holds, its units). A unit may import units of its own layer
#: or below, never above. ``docs/architecture.md`` draws this map (see :func:`layer_map`).
LAYERS: list[tuple[str, str, set[str]]] = [
    ("values and errors", "plain values, text, JSON, schemas, the exception tree",
     {"exceptions", "values", "usage", "messages", "schemas", "_lazy", "_sync", "_docparts"}),
    ("events", "the event vocabulary and its envelope", {"events"}),
    ("records", "the call journal and the input mailbox", {"journal", "neural"}),
    ("governance", "approvals, policies, retries, logs and telemetry",
     {"approvals", "policies", "retries", "logs", "telemetry"}),
    ("plan language", "tf_plan: parser, checker, interpreter, sandbox, labels", {"tfplan"}),
    ("tools", "Python functions and schema-described callables as tools", {"tools"}),
    ("models", "LLM providers, the local model, scripted LLMs", {"llm"}),
    ("memory and MCP tools", "conversation memory and run stores; MCP servers' tools",
     {"memory", "mcp"}),
    ("chains", "Chain, DCChains, the plan interpreter's call pipeline", {"chain"}),
    ("brains", "DCBrain's steps, planning, validation; the plan-execute agent",
     {"brain", "agent"}),
    ("runs", "one run pipeline: execute, record, list", {"runs"}),
    ("configuration", "dcbrain.toml's schema and the environment", {"config"}),
    ("durable", "durable runs on DBOS: engine, stores, workers", {"durable"}),
    ("composition", "building brains, stores and the runtime from settings",
     {"config.composition", "config.runtime"}),
    ("surfaces", "the HTTP server and the MCP server", {"server", "mcp.server"}),
    ("command line", "dcbrain's commands", {"cli"}),
    ("public API", "the names `import dcbrain` gives", {"dcbrain"}),
]
#: Modules named as units of their own, where one package holds two layers.
NAMED_MODULES = {("mcp", "server"), ("config", "composition"), ("config", "runtime")}
LAYER_OF = {unit: index for index, (_, _, units) in enumerate(LAYERS) for unit in units}
#: What exceptions.py may import: nothing of dcbrain (every layer raises its errors).
FOUNDATION_LEAVES = {"exceptions"}


def unit_of(module: str) -> str | None:
    """The layer unit a dotted ``dcbrain...`` module belongs to."""
    parts = module.split(".")
    if parts[0] != "dcbrain":
        return None
    if len(parts) == 1:
        return "dcbrain"
    if tuple(parts[1:3]) in NAMED_MODULES:
        return ".".join(parts[1:3])
    return parts[1]


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(part for part in parts if part != "__init__")


def imports_of(path: Path) -> list[tuple[int, str]]:
    """Every ``dcbrain`` module ``path`` imports, with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                found.append((node.lineno, ".".join([*base, *filter(None, [node.module])])))
            elif node.module:
                found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.split(".")[0] == "dcbrain"]


def unit_edges() -> dict[tuple[str, str], list[str]]:
    """(importer, imported) unit pairs, with where each import is."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(SOURCE.rglob("*.py")):
        importer = unit_of(module_name(path))
        assert importer is not None
        for line, name in imports_of(path):
            imported = unit_of(name)
            if imported is not None and imported != importer:
                edges[(importer, imported)].append(f"{path.relative_to(SOURCE)}:{line}")
    return edges


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(module_name(path)) for path in SOURCE.rglob("*.py")}
    assert units - set(LAYER_OF) == set()


def test_no_import_goes_up_a_layer() -> None:
    upward = {f"{a} -> {b}": where for (a, b), where in unit_edges().items()
              if LAYER_OF[b] > LAYER_OF[a]}
    assert upward == {}


def test_no_cycle_between_units() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in unit_edges():
        graph[a].add(b)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph[start]:
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    cycles = sorted(f"{a} <-> {b}" for a, b in unit_edges() if reaches(b, a, {b}))
    assert cycles == []


@pytest.mark.parametrize("leaf", sorted(FOUNDATION_LEAVES))
def test_the_exception_tree_imports_nothing_of_dcbrain(leaf: str) -> None:
    assert [(a, b) for a, b in unit_edges() if a == leaf] == []


def test_the_root_error_lives_in_the_foundation() -> None:
    from dcbrain.exceptions import TFError
    from dcbrain.tfplan.errors import TFError as LanguageRoot

    assert TFError is LanguageRoot and TFError.__module__ == "dcbrain.exceptions"


def layer_map() -> str:
    """The layer map as ``docs/architecture.md`` shows it, highest layer first."""
    rows = ["| layer | holds | units |", "|---|---|---|"]
    for name, holds, units in reversed(LAYERS):
        rows.append(f"| {name} | {holds} | {', '.join(f'`{u}`' for u in sorted(units))} |")
    return "\n".join([MAP_PART.start, "", *rows, "", MAP_PART.end])


def test_the_architecture_page_draws_this_layer_map() -> None:
    assert MAP_PART.find(ARCHITECTURE.read_text(encoding="utf-8")) == layer_map(), (
        "docs/architecture.md is stale: run `python tests/test_import_graph.py`")


def test_every_layer_is_named_and_holds_a_unit() -> None:
    names = [name for name, _, _ in LAYERS]
    assert len(set(names)) == len(names)
    assert all(units for _, _, units in LAYERS)


if __name__ == "__main__":
    MAP_PART.rewrite(ARCHITECTURE, layer_map())
    sys.exit(0)
