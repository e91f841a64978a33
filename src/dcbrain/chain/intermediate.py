"""The ``__chains_intermediate_results`` cache: how later chains read earlier outputs.

It lives in ``current_input.additional_kwargs`` under
:data:`~dcbrain.messages.CHAINS_INTERMEDIATE_RESULTS` as a JSON string of one dict; each
successful chain merges its output into it (appending, never replacing the whole dict).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from dcbrain.messages import CHAINS_INTERMEDIATE_RESULTS
from dcbrain.values.jsonsafe import dumps


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
    if before.get(CHAINS_INTERMEDIATE_RESULTS) == after.get(CHAINS_INTERMEDIATE_RESULTS):
        return {}  # the same text (usually the same object): nothing to decode
    old = read_intermediate_results(before)
    new = read_intermediate_results(after)
    return changed_entries(old, new)


def changed_entries(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``new`` that ``old`` lacks or holds with another value."""
    return {key: value for key, value in new.items() if key not in old or old[key] != value}


def join_intermediate_results(
    additional_kwargs: dict[str, Any], base: Mapping[str, Any],
    additions: Iterable[Mapping[str, Any]],
) -> None:
    """Merge what each of several branches added to the cache of ``base`` (the
    ``additional_kwargs`` they started from) into ``additional_kwargs``, in order (later
    wins); an entry a branch left as it was in ``base`` is no change.

    ``base`` and ``additional_kwargs`` are decoded once and the result encoded once, so
    joining costs the size of the cache plus what the branches added, however many.
    """
    old = read_intermediate_results(base)
    joined: dict[str, Any] = {}
    for added in additions:
        joined.update(changed_entries(old, added))
    if joined:
        merge_intermediate_results(additional_kwargs, joined)


#: A field of the cache a template reads: ``chains_intermediate_result.summary`` or
#: ``chains_intermediate_result["summary"]`` (Jinja2 and f-string alike).
_FIELD_READ = re.compile(
    r"chains_intermediate_result\s*(?:\.\s*(\w+)|\[\s*['\"]?(\w+)['\"]?\s*\])")


def missing_intermediate_results(template: str, results: Mapping[str, Any]) -> str:
    """What a template reading the cache lacks, said for a person: ``'summary' is missing
    (the cache holds: facts)``, of the fields ``template`` reads."""
    names = dict.fromkeys(match.group(1) or match.group(2)
                          for match in _FIELD_READ.finditer(template))
    missing = [name for name in names if name not in results] or list(names)
    held = ", ".join(sorted(results)) or "nothing"
    fields = ", ".join(map(repr, missing)) or "a field"
    return f"{fields} {'is' if len(missing) < 2 else 'are'} missing (the cache holds: {held})"
