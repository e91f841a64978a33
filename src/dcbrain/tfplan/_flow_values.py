"""What the static flow check knows of one plan value: the untrusted sources it certainly carries.

A :data:`Sources` is either ``None`` (the value may be trusted: nothing is certain) or the
non-empty set of calls it certainly got untrusted data from (``{"read_file()"}``). Two
operations make the lattice: :func:`union` (an operation mixes its operands: the result
carries every certain source) and :func:`either` (the value is one of several: it is
certainly untrusted only when each of them is).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, replace

#: Untrusted calls a value certainly carries data from; ``None``: none for certain.
Sources = frozenset[str] | None


def union(*sources: Sources) -> Sources:
    """The sources of a value computed from all of ``sources``."""
    found = [item for item in sources if item is not None]
    return frozenset().union(*found) if found else None


def either(*sources: Sources) -> Sources:
    """The sources of a value that is one of several (branches, elements of a list)."""
    if not sources or any(item is None for item in sources):
        return None
    return frozenset().union(*(item for item in sources if item is not None))


@dataclass(frozen=True)
class FlowValue:
    """A plan value as the flow check sees it.

    ``whole`` is what the value as a whole carries (a list carries what any of its
    elements carry: an argument of that list gets all of it); ``part`` is what anything
    read out of it carries, at any depth (elements keep their own labels, so a list of one
    trusted and one untrusted element has no certain ``part``). A scalar's parts are
    itself. ``items`` and ``keys`` keep the elements of a display (``[a, b]``,
    ``{"k": v}``) while they are known; ``element`` is what iterating gives, when that is
    known more precisely than ``part`` (``enumerate(emails)``). ``function`` is a plan
    function, ``chain`` a chain handle built by the plan. ``fields`` are the trusted fields
    of a tool result's records (a record, or a list of them: an element is the same).
    """

    whole: Sources = None
    part: Sources = None
    scalar: bool = False
    items: tuple[FlowValue, ...] | None = None
    keys: tuple[tuple[str, FlowValue], ...] | None = None
    element: FlowValue | None = None
    function: FunctionValue | None = None
    chain: bool = False
    fields: frozenset[str] | None = None

    @property
    def content(self) -> Sources:
        """What every piece read out of the value certainly carries."""
        return self.whole if self.scalar else self.part

    def iterated(self) -> FlowValue:
        """What one iteration over the value gives."""
        if self.fields is not None:
            return self
        if self.element is not None:
            return self.element
        if self.items is not None and self.items:
            return join_all(self.items)
        if self.scalar:
            return scalar(self.whole)
        return FlowValue(self.part, self.part)

    def item(self, key: object) -> FlowValue | None:
        """The element at a constant index or key, when the display is known."""
        if self.fields is not None:
            if isinstance(key, str):
                return UNKNOWN if key in self.fields else FlowValue(self.whole, self.whole)
            return self if isinstance(key, int) else None
        if self.items is not None and isinstance(key, int) and not isinstance(key, bool) \
                and -len(self.items) <= key < len(self.items):
            return self.items[key]
        if self.keys is not None and isinstance(key, str):
            for name, value in self.keys:
                if name == key:
                    return value
        return None

@dataclass(frozen=True)
class FunctionValue:
    """A plan function (or the environment its body sees when it is called)."""

    node: ast.FunctionDef
    top_level: bool
    closure: tuple[tuple[str, FlowValue], ...] = ()


#: A value that carries nothing untrusted for certain.
UNKNOWN = FlowValue()


def scalar(sources: Sources) -> FlowValue:
    """A str, number or bool carrying ``sources``."""
    return FlowValue(sources, sources, scalar=True)


def untrusted(source: str) -> FlowValue:
    """The result of an untrusted call: every part of it carries the call."""
    sources = frozenset({source})
    return FlowValue(sources, sources)


def records(source: str, fields: frozenset[str]) -> FlowValue:
    """The result of a call whose records have trusted ``fields``: as a whole, and in every
    other field, it carries the call."""
    sources = frozenset({source})
    return FlowValue(sources, None, fields=fields)


def changed(container: FlowValue, *put: FlowValue) -> FlowValue:
    """``container`` after a change in place that put ``put`` into it (``t[k] = v``,
    ``t[k] op= v``, ``del t[k]``, an in-place method and its arguments): the run gives
    every element the union of the container's elements and of what was put, so that
    union is certain of the container and of every piece read out of it."""
    sources = union(container.whole, container.content, *(value.whole for value in put))
    return FlowValue(sources, sources, scalar=container.scalar)


def under(value: FlowValue, condition: Sources) -> FlowValue:
    """``value`` computed under a condition that carries ``condition`` (strict mode): the
    value and every piece read out of it carry it too (records lose their trusted
    fields, as at run time)."""
    if condition is None or value.function is not None or value.chain:
        return value
    element = under(value.element, condition) if value.element is not None else None
    return FlowValue(
        whole=union(value.whole, condition),
        part=union(value.content, condition),
        scalar=value.scalar,
        items=None if value.items is None else tuple(under(item, condition)
                                                     for item in value.items),
        keys=None if value.keys is None else tuple((key, under(item, condition))
                                                   for key, item in value.keys),
        element=element,
    )


def join(a: FlowValue, b: FlowValue) -> FlowValue:
    """The value that is ``a`` on some paths and ``b`` on others."""
    if a is b:
        return a
    items = None
    if a.items is not None and b.items is not None and len(a.items) == len(b.items):
        items = tuple(join(x, y) for x, y in zip(a.items, b.items, strict=True))
    keys = None
    if a.keys is not None and b.keys is not None and [k for k, _ in a.keys] == \
            [k for k, _ in b.keys]:
        keys = tuple((k, join(x, y)) for (k, x), (_, y) in zip(a.keys, b.keys, strict=True))
    element = None
    if a.element is not None and b.element is not None:
        element = join(a.element, b.element)
    return FlowValue(
        whole=either(a.whole, b.whole),
        part=either(a.content, b.content),
        scalar=a.scalar and b.scalar,
        items=items,
        keys=keys,
        element=element,
        function=a.function if a.function == b.function else None,
        chain=a.chain and b.chain,
        fields=a.fields if a.fields == b.fields else None,
    )


def join_all(values: Iterable[FlowValue]) -> FlowValue:
    """:func:`join` of several values (there must be at least one)."""
    iterator = iter(values)
    result = next(iterator)
    for value in iterator:
        result = join(result, value)
    return result


def container(elements: list[FlowValue], *, items: bool = True) -> FlowValue:
    """A list, tuple or set display (or a dict's entries, keys first) of ``elements``."""
    if not elements:
        return FlowValue(items=() if items else None)
    return FlowValue(
        whole=union(*(value.whole for value in elements)),
        part=either(*(either(value.whole, value.content) for value in elements)),
        items=tuple(elements) if items else None,
    )


#: A variable environment: the value each name certainly has on every path reaching a
#: point (a name missing is unbound there).
Environment = dict[str, FlowValue]


def join_environments(environments: list[Environment]) -> Environment:
    """The environment after paths that end in each of ``environments``.

    A name bound on some paths only keeps the value those give: on the others reading it
    raises ``NameError``, so no call is made with another value.
    """
    if not environments:
        return {}
    if len(environments) == 1:
        return dict(environments[0])
    joined: Environment = {}
    for environment in environments:
        for name, value in environment.items():
            joined[name] = join(joined[name], value) if name in joined else value
    return joined


#: Builtins and methods whose result contains every part of their arguments as text.
_TEXT_OF_WHOLE = frozenset({"str", "repr", "format", "hash", "dumps", "join", "print"})
#: Builtins and methods whose result is a str, number or bool.
_SCALAR_RESULTS = frozenset({
    "int", "float", "bool", "len", "abs", "round", "chr", "ord", "hex", "oct", "bin", "pow",
    "sum", "any", "all", "isinstance", "callable", "lower", "upper", "strip", "lstrip",
    "rstrip", "replace", "title", "capitalize", "casefold", "removeprefix", "removesuffix",
    "zfill", "center", "ljust", "rjust", "count", "index", "find", "rfind", "startswith",
    "endswith", "isdigit", "isalpha", "isalnum", "isoformat", "strftime",
})


def builtin_result(name: str, values: list[FlowValue],
                   receiver: FlowValue | None = None) -> FlowValue:
    """A builtin or method: its result mixes its operands (elements keep their own
    sources only where the builtin passes them through)."""
    operands = [receiver, *values] if receiver is not None else values
    if name in _TEXT_OF_WHOLE:
        return scalar(union(*(value.whole for value in operands)))
    sources = union(*(value.content for value in operands))
    if name in ("enumerate", "zip", "items"):
        if name == "items" and receiver is not None:
            parts = [receiver.iterated(), FlowValue(receiver.content, receiver.content)]
        else:
            parts = ([scalar(None)] if name == "enumerate" else []) + \
                [value.iterated() for value in values]
        element = container(parts)
        return FlowValue(union(*(value.whole for value in parts)), element.part,
                         element=element)
    if name in ("sorted", "list", "tuple", "set", "frozenset", "reversed", "iter",
                "filter", "copy", "values", "keys") and operands:
        source = operands[0] if name not in ("filter",) or len(operands) < 2 \
            else operands[1]
        element = source.iterated()
        return FlowValue(union(element.whole), element.content, element=element)
    if name in ("next", "min", "max", "pop", "get") and operands:
        element = operands[0].iterated()
        return replace(element, whole=union(element.whole,
                                            *(value.whole for value in operands[1:])))
    return FlowValue(sources, sources, scalar=name in _SCALAR_RESULTS)
