"""The ``__chains_intermediate_results`` cache: how later chains read earlier outputs (seed 001).

It lives in ``current_input.additional_kwargs`` under
:data:`~dcbrain.messages.CHAINS_INTERMEDIATE_RESULTS` as a JSON string of one dict; each
successful chain merges its output into it (appending, never replacing the whole dict).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dcbrain._jsonsafe import dumps
from dcbrain.messages import CHAINS_INTERMEDIATE_RESULTS


def read_intermediate_results(additional_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The decoded cache; ``{}`` when absent or not a JSON object."""
    raw = additional_kwargs.get(CHAINS_INTERMEDIATE_RESULTS)
    if isinstance(raw, dict):
        return dict(raw)
    if not isinstance(raw, str) or not raw:
        return {}
    try:
        decoded = json.loads(raw)
    except ValueError:
        return {}
    return decoded if isinstance(decoded, dict) else {}


def merge_intermediate_results(
    additional_kwargs: dict[str, Any], update: Mapping[str, Any]
) -> None:
    """Merge ``update`` into the cache in ``additional_kwargs`` (later keys win)."""
    results = read_intermediate_results(additional_kwargs)
    results.update(update)
    additional_kwargs[CHAINS_INTERMEDIATE_RESULTS] = dumps(results)


def intermediate_results_added(
    before: Mapping[str, Any], after: Mapping[str, Any]
) -> dict[str, Any]:
    """The cache entries ``after`` added or changed compared with ``before``."""
    old = read_intermediate_results(before)
    new = read_intermediate_results(after)
    return {key: value for key, value in new.items() if key not in old or old[key] != value}
