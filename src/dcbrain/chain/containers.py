"""Containers of chains: run several chains as one.

``SeqChains`` runs its chains in order on one shared ``current_input``, so each reads
what the earlier ones left in ``__chains_intermediate_results``. ``ParallelChains`` runs
them concurrently; unlike a shared input, each child works on its own copy of
``additional_kwargs`` and the entries they add to ``__chains_intermediate_results`` are
merged into the shared input in declaration order once all have finished, so the result
does not depend on which finished first.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from dcbrain.chain.chain import Chain
from dcbrain.chain.intermediate import join_intermediate_results, read_intermediate_results
from dcbrain.chain.result import ChainResult
from dcbrain.chain.runnable import ChainRun, Runnable
from dcbrain.exceptions import TFChainError
from dcbrain.messages import TextMessage


class Chains(Runnable):
    """Several chains run as one, with the :class:`Chain` run interface."""

    def __init__(
        self,
        chains: Sequence[Chain | Chains],
        *,
        name: str | None = None,
        description: str = "",
    ) -> None:
        self.name = name or type(self).__name__
        self.description = description
        self.chains: list[Chain | Chains] = list(chains)
        if not self.chains:
            raise TFChainError(f"{self.name!r}: a container needs at least one chain")
        for child in self.chains:
            if not isinstance(child, Chain | Chains):
                raise TFChainError(
                    f"{self.name!r}: expected Chain or Chains, got {type(child).__name__}"
                )

    def __repr__(self) -> str:
        names = ", ".join(child.name for child in self.chains)
        return f"{type(self).__name__}(name={self.name!r}, chains=[{names}])"

    @property
    def input_schema(self) -> dict[str, Any]:
        """The keyword arguments of all children, as one object schema."""
        properties: dict[str, Any] = {}
        required: list[str] = []
        for child in self.chains:
            schema = child.input_schema
            for key, value in schema.get("properties", {}).items():
                properties.setdefault(key, value)
            required.extend(key for key in schema.get("required", []) if key not in required)
        merged: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            merged["required"] = required
        return merged

    @property
    @abstractmethod
    def output_schema(self) -> dict[str, Any]:
        """JSON Schema of what the container returns."""



class SeqChains(Chains):
    """Runs its chains one after another on the same ``current_input``.

    The result accumulates every child's result; its content is the last child's.
    """

    @property
    def output_schema(self) -> dict[str, Any]:
        return self.chains[-1].output_schema

    async def _async_run(self, run: ChainRun) -> ChainResult:
        result = ChainResult(origin=run.current_input)
        for child in self.chains:
            child_result = await run.on(child)
            result += child_result
            result.content = child_result.content
            result.output = child_result.output
        return result


class ParallelChains(Chains):
    """Runs its chains concurrently on the same input.

    The content is ``{child name: child content}``; children need distinct names. If a
    child fails, the others are cancelled and the first failure (in declaration order)
    is raised, after the intermediate results written so far have been merged.
    """

    def __init__(self, chains: Sequence[Chain | Chains], *, name: str | None = None,
                 description: str = "") -> None:
        super().__init__(chains, name=name, description=description)
        names = [child.name for child in self.chains]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise TFChainError(
                f"{self.name!r}: parallel chains need distinct names, "
                f"{', '.join(map(repr, duplicates))} appears more than once"
            )

    @property
    def output_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {child.name: child.output_schema for child in self.chains},
            "required": [child.name for child in self.chains],
        }

    async def _async_run(self, run: ChainRun) -> ChainResult:
        current_input = run.current_input
        before = dict(current_input.additional_kwargs)
        inputs = [
            TextMessage(
                content=current_input.content,
                role=current_input.role,
                additional_kwargs=dict(current_input.additional_kwargs),
                created_at=current_input.created_at,
            )
            for _ in self.chains
        ]
        tasks = [
            asyncio.create_task(run.on(child, child_input))
            for child, child_input in zip(self.chains, inputs, strict=True)
        ]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            for task in tasks:
                task.cancel()  # no-op for finished tasks; stops the rest on failure or cancel
            await asyncio.gather(*tasks, return_exceptions=True)
            self._merge_intermediate_results(current_input, before, inputs)
        failed = next((task.exception() for task in tasks
                       if not task.cancelled() and task.exception() is not None), None)
        if failed is not None:
            del tasks, task  # they hold the error, whose traceback holds this frame
            try:
                raise failed
            finally:
                del failed
        result = ChainResult(origin=current_input)
        contents: dict[str, Any] = {}
        for child, task in zip(self.chains, tasks, strict=True):
            child_result = task.result()
            result += child_result
            contents[child.name] = child_result.content
        result.content = contents
        result.output = contents
        return result

    @staticmethod
    def _merge_intermediate_results(
        shared: TextMessage, before: dict[str, Any], copies: list[TextMessage]
    ) -> None:
        """Merge what each child added, in declaration order (later declared wins)."""
        join_intermediate_results(
            shared.additional_kwargs, before,
            (read_intermediate_results(child_input.additional_kwargs) for child_input in copies))
