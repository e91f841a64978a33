"""The source's layout: concepts in packages, few private modules at the root, and no
module long without a reason stated at its top."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src" / "dcbrain"

#: Lines past which a module says, at its top, why it is one module.
LONG_MODULE_LINES = 600
#: The sentence a long module's docstring starts its reason with.
REASON = "Kept whole:"
#: Private modules at the package root: only those many layers use.
MAX_ROOT_PRIVATE_MODULES = 3


def test_few_private_modules_sit_at_the_package_root() -> None:
    private = sorted(path.name for path in SOURCE.glob("_*.py") if path.name != "__init__.py")
    assert len(private) <= MAX_ROOT_PRIVATE_MODULES, private


def test_a_long_module_states_why_it_is_one_module() -> None:
    unexplained = []
    for path in sorted(SOURCE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= LONG_MODULE_LINES:
            continue
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if REASON not in docstring:
            unexplained.append(f"{path.relative_to(SOURCE)}: {text.count(chr(10))} lines")
    assert unexplained == []
