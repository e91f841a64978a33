"""JSON Schemas from plans, config files and MCP servers: checked once, validated in linear time.

:func:`compile_schema` is the one way dcbrain turns a schema it did not write into a
validator. It refuses, naming the schema's origin and the JSON path of the bad part: values
that are not JSON, a schema nested deeper than :data:`MAX_SCHEMA_DEPTH` or larger than
:data:`MAX_SCHEMA_NODES` values, anything that fails the schema's metaschema, a pattern RE2
cannot compile (backreferences, lookaround) and a ``$ref`` that refers to itself without
end. The validator it returns is ``jsonschema``'s for the schema's draft, except that
``pattern``, ``patternProperties`` and ``additionalProperties`` match with RE2 (time linear
in the text, where Python's backtracking ``re`` can take exponential time), ``uniqueItems``
hashes the items (``jsonschema`` compares unsortable ones pairwise) and ``$ref`` resolves
within the schema only (``jsonschema`` would fetch a remote URL). Compiled validators are
cached by the schema's canonical JSON, so a schema used again costs one ``json.dumps``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from functools import cache, lru_cache
from typing import Any

import re2
from jsonschema import FormatChecker, ValidationError, validators
from jsonschema import exceptions as jsonschema_exceptions
from referencing import Registry
from referencing.exceptions import Unresolvable

from dcbrain.exceptions import TFSchemaError

MAX_SCHEMA_DEPTH = 64
"""How deeply the values of a schema may nest (objects and arrays)."""
MAX_SCHEMA_NODES = 20_000
"""How many values (objects, arrays, strings, numbers …) a schema may hold."""
REFERENCE_BUDGET = 10_000
REFERENCES_PER_VALUE = 4
COUNTED_VALUES = 50_000
"""One validation follows at most ``REFERENCE_BUDGET`` references plus
``REFERENCES_PER_VALUE`` for each value in the instance (up to ``COUNTED_VALUES`` values):
references that fan out (``allOf`` of two references to a part that does the same) double
the work at each level."""

# Keywords whose value is data (never a schema): a "pattern" key inside is not a keyword.
_DATA_KEYWORDS = frozenset({"const", "default", "enum", "examples"})
# Keywords whose value maps names to schemas: their keys are names, not keywords.
_NAMED_SCHEMAS = frozenset({"$defs", "definitions", "dependencies", "dependentSchemas",
                            "properties", "patternProperties"})
_REFERENCES = frozenset({"$ref", "$dynamicRef", "$recursiveRef"})
_PROBES: tuple[Any, ...] = (None, {}, [], "", 0)
_PROBE_BUDGET = 1_000  # references a probe may follow: plenty for a schema that does not loop


class CompiledSchema:
    """A checked schema (a private JSON copy) and its linear-time ``jsonschema`` validator."""

    __slots__ = ("follows_references", "origin", "schema", "validator")

    def __init__(self, origin: str, schema: dict[str, Any], validator: Any,
                 follows_references: bool) -> None:
        self.origin = origin
        self.schema = schema
        self.validator = validator
        self.follows_references = follows_references

    def __repr__(self) -> str:
        return f"CompiledSchema({self.origin!r})"

    def errors(self, instance: Any) -> list[ValidationError]:
        """Every way ``instance`` fails the schema, ordered by where in the instance.

        :class:`TFSchemaError` when validation cannot finish: a ``$ref`` that does not
        resolve within the schema, or an instance nested too deeply for a recursive schema.
        """
        budget = (REFERENCE_BUDGET + REFERENCES_PER_VALUE * _count_values(instance)
                  if self.follows_references else None)
        token = _references_left.set([budget] if budget is not None else None)
        try:
            found = list(self.validator.iter_errors(instance))
        except TFSchemaError as exc:  # from _counted: no origin there
            raise self._unusable(str(exc)) from None
        except Unresolvable as exc:
            raise self._unusable(f"a $ref does not resolve within the schema (nothing is "
                                 f"fetched): {exc}") from None
        except RecursionError:
            raise self._unusable("the value is nested too deeply to be validated") from None
        finally:
            _references_left.reset(token)
        return sorted(found, key=_place)

    def _unusable(self, detail: str) -> TFSchemaError:
        return TFSchemaError(f"{self.origin}: {detail}", origin=self.origin)


def compile_schema(schema: Mapping[str, Any], origin: str) -> CompiledSchema:
    """The checked, compiled ``schema``; :class:`TFSchemaError` naming ``origin`` if refused.

    ``origin`` says where the schema came from, e.g. ``"chain 'x': output_json_schema"``.
    """
    refusal = _check_values(schema)
    if refusal is not None:
        raise refusal.error(origin)
    try:
        text = json.dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:  # NaN, infinity, a mapping that is not a dict
        raise _Refusal("", f"not JSON data: {exc}", refused=False).error(origin) from None
    compiled = _compiled(text)
    if isinstance(compiled, _Refusal):
        raise compiled.error(origin)
    return CompiledSchema(origin, *compiled)


def _place(error: ValidationError) -> list[tuple[int, Any]]:
    """Where ``error`` is in the value, as a sort key (indexes and keys never compared)."""
    return [(0, part) if isinstance(part, int) else (1, str(part))
            for part in error.absolute_path]


def describe_schema_error(error: ValidationError) -> str:
    """``path/in/the/value: message`` (just the message for the value itself)."""
    where = "/".join(str(part) for part in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


class _Refusal:
    """Why a schema was refused (cached like a compiled schema, worded with each origin)."""

    __slots__ = ("detail", "refused", "where")

    def __init__(self, where: str, detail: str, *, refused: bool = True) -> None:
        self.where, self.detail, self.refused = where, detail, refused

    def error(self, origin: str) -> TFSchemaError:
        verb = "is refused at" if self.refused else "is not a valid JSON Schema at"
        return TFSchemaError(f"{origin} {verb} {self.where or 'the top level'}: {self.detail}",
                             origin=origin, where=self.where)


def _check_values(schema: Mapping[str, Any]) -> _Refusal | None:
    """Why values that are not JSON, too many or too deep are refused; found iteratively,
    before anything walks the schema recursively."""
    stack: list[tuple[Any, int, tuple[str, ...]]] = [(schema, 0, ())]
    count = 0
    while stack:
        value, depth, path = stack.pop()
        count += 1
        if count > MAX_SCHEMA_NODES:
            return _Refusal("", f"more than {MAX_SCHEMA_NODES} values")
        if isinstance(value, Mapping):
            children: list[tuple[str, Any]] = []
            for key, item in value.items():
                if not isinstance(key, str):
                    return _Refusal(_where(path), f"a key is not a string: {key!r}",
                                    refused=False)
                children.append((key, item))
        elif isinstance(value, list | tuple):
            children = [(str(index), item) for index, item in enumerate(value)]
        elif value is None or isinstance(value, str | int | float):
            continue
        else:
            return _Refusal(_where(path), f"a {type(value).__name__} is not JSON data",
                            refused=False)
        if children and depth >= MAX_SCHEMA_DEPTH:
            return _Refusal(_where(path), f"nested deeper than {MAX_SCHEMA_DEPTH} levels")
        stack.extend((item, depth + 1, (*path, key)) for key, item in children)
    return None


@lru_cache(maxsize=512)
def _compiled(text: str) -> tuple[dict[str, Any], Any, bool] | _Refusal:
    """The JSON copy and validator of the schema ``text``, or why it is refused."""
    schema = json.loads(text)
    uses = _check_keywords(schema)
    if isinstance(uses, _Refusal):
        return uses
    base = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        base.check_schema(schema, format_checker=_METASCHEMA_FORMATS)
    except jsonschema_exceptions.SchemaError as exc:
        return _Refusal(_where(tuple(str(part) for part in exc.path)), exc.message,
                        refused=False)
    if {"patternProperties", "unevaluatedProperties"} <= uses:
        return _Refusal("", "unevaluatedProperties together with patternProperties is not "
                        "supported (jsonschema matches those patterns with a backtracking "
                        "engine)")
    validator = _linear_class(base)(schema, registry=Registry())
    follows_references = bool(uses & _REFERENCES)
    if follows_references:
        refusal = _probe_references(validator)
        if refusal is not None:
            return refusal
    return schema, validator, follows_references


def _probe_references(validator: Any) -> _Refusal | None:
    """Why the references of ``validator``'s schema cannot be followed: a loop that
    consumes no part of the value, or a fan-out past the budget, loops on every value."""
    for probe in _PROBES:
        token = _references_left.set([_PROBE_BUDGET])
        try:
            validator.is_valid(probe)
        except RecursionError:
            return _Refusal("", "its $ref refers to itself without end")
        except TFSchemaError as exc:
            return _Refusal("", str(exc))
        except Unresolvable:
            return None  # reported, with the reference, by CompiledSchema.errors
        finally:
            _references_left.reset(token)
    return None


def _check_keywords(schema: dict[str, Any]) -> _Refusal | set[str]:
    """The keywords ``schema`` uses, or why one is refused: a pattern RE2 cannot run, a
    ``$schema`` below the top level (``jsonschema`` would validate that part with its own
    validator) or a reference out of the schema."""
    keywords: set[str] = set()
    stack: list[tuple[Any, tuple[str, ...], bool]] = [(schema, (), True)]
    while stack:
        value, path, is_schema = stack.pop()
        if isinstance(value, list):
            stack.extend((item, (*path, str(index)), True) for index, item in enumerate(value))
            continue
        if not isinstance(value, dict):
            continue
        if not is_schema:  # a map of names to schemas
            stack.extend((item, (*path, key), True) for key, item in value.items())
            continue
        for key, item in value.items():
            keywords.add(key)
            here = (*path, key)
            refusal = _keyword_refusal(key, item, here)
            if refusal is not None:
                return refusal
            if key not in _DATA_KEYWORDS:
                stack.append((item, here, key not in _NAMED_SCHEMAS))
    return keywords


def _keyword_refusal(keyword: str, value: Any, path: tuple[str, ...]) -> _Refusal | None:
    if keyword == "pattern" and isinstance(value, str):
        return _pattern_refusal(value, path)
    if keyword == "patternProperties" and isinstance(value, dict):
        for pattern in value:
            refusal = _pattern_refusal(pattern, (*path, pattern))
            if refusal is not None:
                return refusal
    if keyword == "$schema" and len(path) > 1:
        return _Refusal(_where(path), "$schema is allowed only at the top level")
    if keyword in _REFERENCES and isinstance(value, str) and not value.startswith("#"):
        return _Refusal(_where(path), f"{value!r} is not a reference within the schema "
                        "(one starting with '#'): nothing is fetched")
    return None


def _pattern_refusal(pattern: str, path: tuple[str, ...]) -> _Refusal | None:
    problem = _re2_problem(pattern)
    if problem is None:
        return None
    return _Refusal(_where(path), f"{pattern!r} is not a regular expression RE2 can run "
                    f"({problem}): patterns are matched in linear time, without "
                    "backreferences or lookaround")


def _re2_problem(pattern: str) -> str | None:
    """Why RE2 cannot compile ``pattern``, or ``None``."""
    try:
        _regex(pattern)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        return reason.decode() if isinstance(reason, bytes) else str(reason)
    return None


def _where(path: tuple[str, ...]) -> str:
    return "/".join(path)


# -- following references --------------------------------------------------------------
_references_left: ContextVar[list[int] | None] = ContextVar("references_left", default=None)


def _counted(follow: Any) -> Any:
    """The keyword function ``follow`` (``$ref`` …), within the validation's budget."""

    def follow_within_budget(validator: Any, reference: Any, instance: Any,
                             schema: Any) -> Iterator[Any]:
        left = _references_left.get()
        if left is not None:
            left[0] -= 1
            if left[0] < 0:
                raise TFSchemaError("its references fan out: validating one value follows "
                                    "more of them than the budget allows", origin="")
        yield from follow(validator, reference, instance, schema)

    return follow_within_budget


def _count_values(instance: Any) -> int:
    """How many values ``instance`` holds, up to ``COUNTED_VALUES``: a value that shares
    parts (not JSON's) may hold exponentially many."""
    count, stack = 0, [instance]
    while stack and count < COUNTED_VALUES:
        value = stack.pop()
        count += 1
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return count


# -- matching --------------------------------------------------------------------------
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False
_ECMA_UNICODE_ESCAPE = re.compile(r"(\\\\)|\\u([0-9a-fA-F]{4})")


@lru_cache(maxsize=2048)
def _regex(pattern: str) -> re2._Regexp[str]:
    """``pattern`` (ECMA-262 syntax, as JSON Schema says) compiled by RE2."""
    return re2.compile(_ECMA_UNICODE_ESCAPE.sub(_re2_escape, pattern), _RE2_OPTIONS)


def _re2_escape(match: re.Match[str]) -> str:
    """``\\uXXXX`` (ECMA-262) as RE2 writes it; an escaped backslash stays as it is."""
    return match.group(1) or f"\\x{{{match.group(2)}}}"


def _is_re2_pattern(instance: object) -> bool:
    if isinstance(instance, str):
        _regex(instance)
    return True


# The metaschema's "format": "regex" (of "pattern" and "patternProperties") checked by RE2,
# so that RE2 syntax Python lacks (\p{L}, \z) passes; no other format is asserted.
_METASCHEMA_FORMATS = FormatChecker(formats=())
_METASCHEMA_FORMATS.checks("regex", raises=re2.error)(_is_re2_pattern)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        regex = _regex(pattern)
        for key, value in instance.items():
            if regex.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    """``jsonschema``'s ``additionalProperties``, with the patterns matched by RE2."""
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    regexes = [_regex(pattern) for pattern in patterns]
    extras = {key for key in instance
              if key not in properties and not any(regex.search(key) for regex in regexes)}
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            listed = ", ".join(repr(each) for each in sorted(patterns))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {listed}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            joined = ", ".join(repr(each) for each in sorted(extras, key=str))
            yield ValidationError(f"Additional properties are not allowed ({joined} {verb} "
                                  "unexpected)")


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if unique and validator.is_type(instance, "array") and not _all_distinct(instance):
        yield ValidationError(f"{instance!r} has non-unique elements")


def _all_distinct(items: list[Any]) -> bool:
    seen: set[Any] = set()
    for item in items:
        key = _canonical(item)
        if key in seen:
            return False
        seen.add(key)
    return True


# Tags of the canonical forms: no string, number or null equals them (True == 1 does).
_BOOLEAN, _ARRAY, _OBJECT = object(), object(), object()


def _canonical(value: Any) -> Any:
    """A hashable value equal for JSON-equal values: ``1 == 1.0``, ``True != 1``, keys unordered."""
    kind = type(value)
    if kind is str or kind is int or kind is float or value is None:
        return value  # Python's == and hash already agree on 1 and 1.0
    if kind is bool:
        return (_BOOLEAN, value)
    if kind is dict:
        return (_OBJECT, frozenset([(key, _canonical(item)) for key, item in value.items()]))
    if kind is list or kind is tuple:
        return (_ARRAY, *[_canonical(item) for item in value])
    if isinstance(value, Mapping):
        return _canonical(dict(value))
    if isinstance(value, list | tuple):
        return _canonical(list(value))
    return value  # a subclass of str or a number, or not JSON: compared as Python compares it


_LINEAR_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}


@cache
def _linear_class(base: Any) -> Any:
    """``base`` (a draft's validator class) with the linear-time keywords above."""
    keywords = {name: check for name, check in _LINEAR_KEYWORDS.items()
                if name in base.VALIDATORS}
    keywords.update((name, _counted(base.VALIDATORS[name])) for name in _REFERENCES
                    if name in base.VALIDATORS)
    return validators.extend(base, keywords)


__all__ = [
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "CompiledSchema",
    "compile_schema",
    "describe_schema_error",
]
