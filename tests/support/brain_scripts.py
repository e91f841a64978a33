"""Scripted replies and tools for DCBrain tests."""

from __future__ import annotations

from typing import Any


def plan(source: str) -> str:
    """A planner reply holding ``source`` as a tf_plan block."""
    return f"Here is my plan.\n```tf_plan\n{source}\n```"


def verdict(is_solved: bool, suggestion: str = "") -> dict[str, Any]:
    """A validator reply."""
    return {"is_solved": is_solved, "suggestion": suggestion}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def event_types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]
