"""Fixtures for the plan-execute agent tests."""

from __future__ import annotations

import pytest

from support.call_log import CallLog


@pytest.fixture
def log() -> CallLog:
    """Recording tools ``work``, ``awork`` and ``flaky``; set ``log.fail`` to make one raise."""
    return CallLog()
