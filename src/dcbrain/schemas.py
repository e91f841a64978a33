"""JSON Schemas from plans, config files and MCP servers: checked once, validated in linear time.

:func:`compile_schema` is the one way dcbrain turns a schema it did not write into a
validator. It refuses, naming the schema's origin and the JSON path of the bad part: values
that are not JSON, a schema nested deeper than :data:`MAX_SCHEMA_DEPTH` or larger than
:data:`MAX_SCHEMA_NODES` values, anything that fails the schema's metaschema, a pattern RE2
cannot compile (backreferences, lookaround), a ``$schema`` below the top level, a reference
out of the schema and references that loop or fan out without end. The validator it
returns is ``jsonschema``'s for the schema's draft, except that ``pattern``,
``patternProperties`` and ``additionalProperties`` match with RE2 (time linear in the text,
where Python's backtracking ``re`` can take exponential time), ``uniqueItems`` and ``enum``
hash a canonical form of the values (``jsonschema`` compares them pairwise), ``$ref``
resolves within the schema only (``jsonschema`` would fetch a remote URL) and one
validation stops at a work budget linear in the value (:data:`WORK_BUDGET`). Compiled
validators are cached by the schema's canonical JSON, so a schema used again costs one
``json.dumps``.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from functools import cache, lru_cache
from itertools import islice
from typing import Any

import re2
from jsonschema import FormatChecker, ValidationError, validators
from jsonschema import exceptions as jsonschema_exceptions
from referencing import Registry
from referencing.exceptions import Unresolvable

from dcbrain.exceptions import TFSchemaError

MAX_SCHEMA_DEPTH = 64
"""How deeply the values of a schema may nest (objects and arrays)."""
MAX_SCHEMA_NODES = 10_000
"""How many values (objects, arrays, strings, numbers …) a schema may hold."""
WORK_BUDGET = 50_000
WORK_PER_VALUE = 20
COUNTED_VALUES = 10_000
"""One validation does at most ``WORK_BUDGET`` units of work plus ``WORK_PER_VALUE`` for
each value in the instance (up to ``COUNTED_VALUES`` values); a keyword costs one unit plus
about the length of its list or object (``properties``, ``anyOf`` …). Without a bound
the work is the schema's size times the instance's, and references that fan out (``allOf``
of two references to a part that does the same) double it at each level."""

# Keywords whose value is data (never a schema): a "pattern" key inside is not a keyword.
_DATA_KEYWORDS = frozenset({"const", "default", "enum", "examples"})
# Keywords whose value maps names to schemas: their keys are names, not keywords.
_NAMED_SCHEMAS = frozenset({"$defs", "definitions", "dependencies", "dependentSchemas",
                            "properties", "patternProperties"})
_REFERENCES = frozenset({"$ref", "$dynamicRef", "$recursiveRef"})
_PROBES: tuple[Any, ...] = (None, {}, [], "", 0)
_PROBE_BUDGET = 10_000  # work a probe may do: plenty for references that do not fan out


class CompiledSchema:
    """A checked schema (a private JSON copy) and its linear-time ``jsonschema`` validator."""

    __slots__ = ("origin", "schema", "validator")

    def __init__(self, origin: str, schema: dict[str, Any], validator: Any) -> None:
        self.origin = origin
        self.schema = schema
        self.validator = validator

    def __repr__(self) -> str:
        return f"CompiledSchema({self.origin!r})"

    def errors(self, instance: Any) -> list[ValidationError]:
        """The ways ``instance`` fails the schema (the first 100), ordered by where in it.

        :class:`TFSchemaError` when validation cannot finish: past the work budget, at a
        ``$ref`` that does not resolve within the schema, or on an instance nested too
        deeply for a recursive schema.
        """
        token = _work_left.set([WORK_BUDGET + WORK_PER_VALUE * _count_values(instance)])
        try:
            found = list(islice(self.validator.iter_errors(instance), _MAX_ERRORS))
        except TFSchemaError as exc:  # from _charge: no origin there
            raise self._unusable(str(exc)) from None
        except Unresolvable as exc:
            raise self._unusable(f"a $ref does not resolve within the schema (nothing is "
                                 f"fetched): {exc}") from None
        except RecursionError:
            raise self._unusable("the value is nested too deeply to be validated") from None
        finally:
            _work_left.reset(token)
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
    compiled = _cached(text) if len(text) <= _CACHED_TEXT else _compiled(text)
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


def _compiled(text: str) -> tuple[dict[str, Any], Any] | _Refusal:
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
    if uses & _REFERENCES:
        refusal = _probe_references(validator)
        if refusal is not None:
            return refusal
    return schema, validator


def _probe_references(validator: Any) -> _Refusal | None:
    """Why the references of ``validator``'s schema cannot be followed: a loop that
    consumes no part of the value, or a fan-out past the budget, loops on every value."""
    for probe in _PROBES:
        token = _work_left.set([_PROBE_BUDGET])
        try:
            validator.is_valid(probe)
        except RecursionError:
            return _Refusal("", "its $ref refers to itself without end")
        except TFSchemaError as exc:
            return _Refusal("", str(exc))
        except Unresolvable:
            return None  # reported, with the reference, by CompiledSchema.errors
        finally:
            _work_left.reset(token)
    return None


# Schemas used again (a chain's, a tool's) are compiled once; large ones each time, so that
# a plan sending many distinct schemas cannot fill the memory with compiled ones.
_cached = lru_cache(maxsize=256)(_compiled)
_CACHED_TEXT = 32 * 1024


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


# -- the work budget ---------------------------------------------------------------------
_work_left: ContextVar[list[int] | None] = ContextVar("work_left", default=None)
_MAX_ERRORS = 100  # errors collected for one value (a message may quote a large part of it)


def _charge(units: int) -> None:
    left = _work_left.get()
    if left is not None:
        left[0] -= units
        if left[0] < 0:
            raise TFSchemaError("validating the value needs more work than the budget allows "
                                "(a large schema on a large value, or references that fan "
                                "out)", origin="")


# Units per item of a keyword's list or object: a combinator validates the value against
# each of its schemas, up front, so a large one is stopped before it starts; other keywords
# go through their items cheaply (enum looks the value up).
_COMBINATORS = frozenset({"allOf", "anyOf", "oneOf"})
_UNITS_PER_SCHEMA = 10
_ITEMS_PER_UNIT = 10


def _budgeted(check: Any, keyword: str) -> Any:
    """The keyword function ``check``, charged to the validation's budget."""

    def check_within_budget(validator: Any, value: Any, instance: Any,
                            schema: Any) -> Iterator[Any]:
        if not isinstance(value, list | dict) or keyword == "enum":
            _charge(1)
        elif keyword in _COMBINATORS:
            _charge(1 + _UNITS_PER_SCHEMA * len(value))
        else:
            _charge(1 + len(value) // _ITEMS_PER_UNIT)
        yield from check(validator, value, instance, schema)

    return check_within_budget


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
    _charge(len(patterns) * len(instance))
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
    _charge(len(regexes) * len(instance))
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


def _enum(validator: Any, enums: list[Any], instance: Any, schema: Any) -> Iterator[Any]:
    if _canonical(instance) not in _canonical_set(enums):
        yield ValidationError(f"{instance!r} is not one of {enums!r}")


_CANONICAL_SETS: dict[int, tuple[list[Any], frozenset[Any]]] = {}


def _canonical_set(values: list[Any]) -> frozenset[Any]:
    """The canonical forms of a schema's list (held here, so that its id stays its own)."""
    entry = _CANONICAL_SETS.get(id(values))
    if entry is None or entry[0] is not values:
        if len(_CANONICAL_SETS) >= 4096:
            _CANONICAL_SETS.clear()
        entry = _CANONICAL_SETS[id(values)] = (values, frozenset(map(_canonical, values)))
    return entry[1]


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
    "enum": _enum,
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}


@cache
def _linear_class(base: Any) -> Any:
    """``base`` (a draft's validator class) with the linear-time keywords above."""
    keywords = {name: _budgeted(_LINEAR_KEYWORDS.get(name, check), name)
                for name, check in base.VALIDATORS.items()}
    return validators.extend(base, keywords)


__all__ = [
    "COUNTED_VALUES",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "WORK_BUDGET",
    "WORK_PER_VALUE",
    "CompiledSchema",
    "compile_schema",
    "describe_schema_error",
]
