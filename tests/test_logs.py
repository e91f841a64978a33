"""Log lines name the run they are about, as text or as one JSON object a line."""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import threading
from pathlib import Path

import pytest

from dcbrain.logs import JSONLineFormatter, TextFormatter, configure_logging, run_scope


def record(message: str, **extra: object) -> logging.LogRecord:
    logger = logging.getLogger("dcbrain.test")
    return logger.makeRecord("dcbrain.test", logging.INFO, __file__, 1, message, (), None,
                             extra=extra)


def test_a_json_line_has_the_process_the_run_and_the_lines_own_fields() -> None:
    formatter = JSONLineFormatter({"worker": "w1"})
    with run_scope("r1", "c1"):
        inside = json.loads(formatter.format(record("run ended", status="succeeded",
                                                    duration_s=1.5)))
    outside = json.loads(formatter.format(record("idle")))
    assert inside["message"] == "run ended" and inside["level"] == "info"
    assert (inside["worker"], inside["run_id"], inside["conversation_id"]) == ("w1", "r1", "c1")
    assert (inside["status"], inside["duration_s"]) == ("succeeded", 1.5)
    assert inside["ts"].endswith("Z") and inside["logger"] == "dcbrain.test"
    assert "run_id" not in outside and outside["worker"] == "w1"


def test_the_run_follows_into_a_thread_started_with_its_context() -> None:
    lines: list[str] = []
    formatter = TextFormatter()
    with run_scope("r2", "c2"):
        context = contextvars.copy_context()
    thread = threading.Thread(target=context.run,
                              args=(lambda: lines.append(formatter.format(record("tool"))),))
    thread.start()
    thread.join()
    assert lines[0].endswith("dcbrain.test: tool [run_id=r2 conversation_id=c2]")


def test_an_exception_is_kept_in_its_line() -> None:
    try:
        raise ValueError("bad")
    except ValueError:
        failed = logging.getLogger("x").makeRecord("x", logging.ERROR, __file__, 1, "boom", (),
                                                   sys.exc_info())
    line = json.loads(JSONLineFormatter().format(failed))
    assert line["level"] == "error" and "ValueError: bad" in line["exception"]


def test_json_logging_takes_dbos_and_uvicorn_lines_too(
    capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("dbos")
    from dbos._logger import init_logger

    root = logging.getLogger()
    level = root.level
    # as in a fresh `dcbrain serve` (log_config=None): an in-process test server configured
    # uvicorn's loggers its own way (a level, no propagation) earlier in this process
    uvicorn_loggers = [logging.getLogger(name) for name in ("uvicorn", "uvicorn.error")]
    saved = [(each.level, each.propagate, list(each.handlers)) for each in uvicorn_loggers]
    for each in uvicorn_loggers:
        each.setLevel(logging.NOTSET)
        each.propagate = True
        each.handlers.clear()
    handler = configure_logging("json", worker="w1")
    try:
        init_logger()  # what DBOS does at start: it adds no console handler of its own now
        logging.getLogger("dbos").warning("Exception listing queues: down")
        logging.getLogger("uvicorn.error").info("Application startup complete.")
        logging.getLogger("dcbrain.cli").info("dcbrain worker w1 ready")
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        for each, (each_level, propagate, handlers) in zip(uvicorn_loggers, saved, strict=True):
            each.setLevel(each_level)
            each.propagate = propagate
            each.handlers[:] = handlers
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [(line["logger"], line["message"], line["worker"]) for line in lines] == [
        ("dbos", "Exception listing queues: down", "w1"),
        ("uvicorn.error", "Application startup complete.", "w1"),
        ("dcbrain.cli", "dcbrain worker w1 ready", "w1")]


def test_retention_takes_days_or_hours(tmp_path: Path) -> None:
    from dcbrain.config import ConfigError, load_config
    from dcbrain.config.composition import retention_periods

    def periods(table: str) -> tuple[float, float] | None:
        path = tmp_path / "dcbrain.toml"
        path.write_text(table)
        return retention_periods(load_config(path))

    assert periods("[retention]\nhours = 12\n") == (12 * 3600.0, 3600.0)
    assert periods("[retention]\ndays = 1.5\ncheck_every_minutes = 5\n") == (1.5 * 86400, 300)
    assert periods("") is None
    with pytest.raises(ConfigError, match="days or hours, not both"):
        periods("[retention]\ndays = 1\nhours = 2\n")
