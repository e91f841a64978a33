"""How the command modules share their configuration plumbing (read from their source)."""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parents[2] / "src" / "dcbrain" / "cli"


def _trees() -> dict[str, ast.Module]:
    return {path.name: ast.parse(path.read_text()) for path in sorted(CLI.glob("*.py"))}


def test_config_is_declared_once_for_every_command() -> None:
    declaring = sorted(
        name for name, tree in _trees().items()
        if any(isinstance(node, ast.Constant) and node.value == "--config"
               for node in ast.walk(tree)))
    assert declaring == ["_config.py"]


def test_worker_and_serve_share_through_the_composition_root_not_each_other() -> None:
    trees = _trees()
    for name, other in (("worker_cmd.py", "serve"), ("serve.py", "worker_cmd")):
        imported = {node.module for node in ast.walk(trees[name])
                    if isinstance(node, ast.ImportFrom)}
        assert f"dcbrain.cli.{other}" not in imported, name
        assert imported & {"dcbrain.config.composition", "dcbrain.config.runtime"}, name  # the root
