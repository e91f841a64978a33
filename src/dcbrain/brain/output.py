"""A run's typed output: the accepted final result validated into the caller's type.

With ``output_type`` (on the :class:`~dcbrain.brain.DCBrain` or per run) the planner is
shown the type's JSON Schema, and an answer the validator accepted (or a direct answer)
is validated into the type before the run succeeds. An answer that does not fit is a
failed attempt like any other: the planner sees pydantic's error text and replans, so
``BrainResult.output`` is always an instance of the type, or ``None`` when the run
stopped without one.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from dcbrain.brain.context import BrainIntermediateResult
from dcbrain.exceptions import OutputMismatch
from dcbrain.values.jsonsafe import dumps
from dcbrain.values.typed import output_adapter, validation_errors


class OutputType:
    """``output_type``'s adapter and schema, checked once when the brain or run is made."""

    def __init__(self, output_type: Any) -> None:
        try:
            self.adapter, schema = output_adapter(output_type)
        except TypeError as exc:
            raise TypeError(f"DCBrain: {exc}") from None
        self.output_type = output_type
        self.name = getattr(output_type, "__name__", repr(output_type))
        self.schema = dumps(schema)

    def validate(self, value: Any) -> Any:
        """``value`` as an instance of the type; text that is JSON is decoded first.

        Raises :class:`OutputMismatch` with pydantic's error text.
        """
        if isinstance(value, str) and self.output_type is not str:
            with contextlib.suppress(ValueError):  # not JSON: validated as the text it is
                value = json.loads(value)
        try:
            return self.adapter.validate_python(value)
        except PydanticValidationError as exc:
            raise OutputMismatch(f"the answer does not match the output type {self.name}: "
                                 f"{validation_errors(exc)}") from None


def accept_output(ir: BrainIntermediateResult, output_type: OutputType | None) -> bool:
    """Whether the accepted final result of ``ir`` fits ``output_type`` (then ``ir.output``
    is the instance); a misfit becomes the attempt's error and is not accepted."""
    if output_type is None:
        ir.output = ir.final_result
        return True
    try:
        ir.output = output_type.validate(ir.final_result)
    except OutputMismatch as exc:
        ir.interpreter_err = exc
        ir.last_error = str(exc)
        ir.final_result = None
        ir.direct_answer = False
        ir.validated_by = None
        return False
    return True
