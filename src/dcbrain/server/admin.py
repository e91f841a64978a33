"""The operators' endpoints: listing runs, resuming stopped ones, pruning old ones.

Cancel is ``abort`` under the operators' word (``app.py`` routes both to one handler);
``docs/server.md#operating-runs`` says what each endpoint promises.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from dcbrain.exceptions import ApiError, InvalidRunQuery, RunConflict
from dcbrain.runs.listing import RunQuery
from dcbrain.runs.retention import parse_duration
from dcbrain.server._responses import JSONResponse
from dcbrain.server.service import RunService


class AdminEndpoints:
    """``GET /v1/runs``, ``POST /v1/runs/{id}/resume`` and ``POST /v1/runs/prune``.

    ``json_object`` reads a state-changing request's optional JSON object body (with the
    app's checks), ``run_id_of`` the run id of the path, ``conversation_id`` is the
    pattern a conversation id matches.
    """

    def __init__(self, runs: RunService,
                 json_object: Callable[[Request], Awaitable[dict[str, Any]]],
                 run_id_of: Callable[[Request], str], conversation_id: re.Pattern[str]) -> None:
        self.runs = runs
        self.json_object = json_object
        self.run_id_of = run_id_of
        self.conversation_id = conversation_id

    async def page_runs(self, request: Request) -> Response:
        params = request.query_params
        cid = params.get("conversation_id")
        if cid and not self.conversation_id.fullmatch(cid):
            raise ApiError(400, "invalid_query", "conversation_id: not a conversation id (1-128 "
                           "letters, digits and _ . : @ -)")
        try:
            query = RunQuery.parse(params.get("status"), cid, params.get("limit"),
                                   params.get("cursor"))
        except InvalidRunQuery as exc:
            raise ApiError(400, "invalid_query", str(exc)) from None
        return JSONResponse((await self.runs.page_runs(query)).to_dict())

    async def resume_run(self, request: Request) -> Response:
        run_id = self.run_id_of(request)
        body = await self.json_object(request)
        any_version = body.get("any_version", False)
        if not isinstance(any_version, bool):
            raise ApiError(422, "invalid_body", "any_version must be true or false")
        if not await self.runs.exists(run_id):
            raise ApiError(404, "not_found", f"no run {run_id!r}")
        try:
            resumed = await self.runs.resume_run(run_id, any_version=any_version)
        except RunConflict as exc:
            raise ApiError(409, "not_resumable", str(exc)) from None
        return JSONResponse({**resumed, "resuming": True}, status_code=202)

    async def prune_runs(self, request: Request) -> Response:
        body = await self.json_object(request)
        older_than = body.get("older_than")
        if not isinstance(older_than, str):
            raise ApiError(422, "invalid_body", 'the body must be {"older_than": "30d"} (a '
                           "duration: d, h, m or s)")
        try:
            seconds = parse_duration(older_than)
        except ValueError as exc:
            raise ApiError(422, "invalid_body", f"older_than: {exc}") from None
        pruned = await asyncio.to_thread(self.runs.prune, seconds)
        return JSONResponse({"pruned": pruned, "older_than_s": seconds})

