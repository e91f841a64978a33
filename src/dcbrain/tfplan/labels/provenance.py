"""Where each plan value came from: labels, their shapes, and the sources of a call.

A label is the set of a value's sources (``user``, ``plan``, ``tool:<name>``,
``chain:<name>``). While a plan runs, a label is an ``int`` whose bits name sources (one
bit per source name, the same in every run of this process) or, for a list, tuple or
dict whose elements came from different places, a :class:`Shape` holding one label per
element. ``a | b`` of any two labels is their union (a shape flattens first), so the
code the label rewrite adds (see ``_label_rewrite.py``) is plain ``|`` of ints in the
common case. Bits never leave the process: a call's argument labels cross the sandbox
and reach the chain layer as :class:`CallSources`, sets of source names.

A host call's result carries the callee's source plus its arguments' labels (what an
attacker picks can steer what comes back); a chain's result also carries every earlier
chain result of the run (a chain reads those as intermediate results). So a replayed
call (the run journal) and a call relayed from a sandbox process get the labels the
original call had, computed where the plan runs.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

#: How a run tracks labels: not at all (the plan compiles as without tracking), data
#: flow only, or data flow and the conditions under which values are computed.
Tracking = Literal["off", "on", "strict"]

USER = "user"
PLAN = "plan"
TRACKING_MODES: tuple[Tracking, ...] = ("off", "on", "strict")

_names: list[str] = [USER, PLAN]
_bits: dict[str, int] = {USER: 1, PLAN: 2}
_lock = threading.Lock()

#: The label of a plan literal.
PLAN_BIT = 2


def bit_of(source: str) -> int:
    """The bit standing for ``source`` in this process."""
    found = _bits.get(source)
    if found is not None:
        return found
    with _lock:
        found = _bits.get(source)
        if found is None:
            found = 1 << len(_names)
            _names.append(source)
            _bits[source] = found
        return found


def bits_of(sources: Iterable[str]) -> int:
    label = 0
    for source in sources:
        label |= bit_of(source)
    return label


def flat(label: Any) -> int:
    """The union of everything in ``label``."""
    return label if label.__class__ is int else label.flat


def names_of(label: Any) -> frozenset[str]:
    """The source names of ``label``."""
    bits = flat(label)
    return frozenset(name for index, name in enumerate(_names) if bits >> index & 1)


class Shape:
    """The label of a container whose elements keep their own labels.

    ``own`` is what the container as a whole depends on (how it was built), ``items``
    one label per element (a list for a list or tuple, a dict for a dict's values).
    """

    __slots__ = ("flat", "items", "own")

    def __init__(self, own: int, items: list[Any] | dict[Any, Any]) -> None:
        self.own = own
        self.items = items
        total = own
        for item in (items.values() if isinstance(items, dict) else items):
            total |= flat(item)
        self.flat = total

    def item(self, key: Any) -> Any:
        """The label of element ``key``; the whole when the key is not a known element."""
        items = self.items
        try:
            if isinstance(items, dict):
                found = items[key] if key.__class__ in (str, int) else self.flat
            elif key.__class__ is int:
                found = items[key]
            else:
                return self.flat
        except (KeyError, IndexError):
            return self.flat
        return found | self.own if self.own else found

    def __or__(self, other: Any) -> int:
        return self.flat | flat(other)

    __ror__ = __or__

    def __repr__(self) -> str:
        return f"Shape({sorted(names_of(self.own))}, {self.items!r})"


class Fields:
    """The label of a tool result whose records have trusted fields.

    A tool declared ``trusted_fields=["id_"]`` returns records (dicts), or a list of them,
    whose ``id_`` is trusted data and everything else untrusted. ``base`` is the label of
    the untrusted rest, ``fields`` one label per trusted field name. An element of the
    list (an ``int`` key) is a record with the same label; a trusted field of a record has
    its own label, any other key ``base``. Anything else done with the value (``|``, a
    method, a builtin that is not a selection) flattens it, so a trusted field name never
    ends up over data moved from elsewhere.
    """

    __slots__ = ("base", "fields", "flat")

    def __init__(self, base: int, fields: Mapping[str, int]) -> None:
        self.base = base
        self.fields = dict(fields)
        total = base
        for bits in self.fields.values():
            total |= bits
        self.flat = total

    def item(self, key: Any) -> Any:
        if key.__class__ is int:
            return self
        if key.__class__ is str:
            return self.fields.get(key, self.base)
        return self.flat

    def plus(self, bits: int) -> Fields:
        """The label of the same records when ``bits`` steered them (a call's arguments)."""
        if not bits:
            return self
        return Fields(self.base | bits, {name: own | bits for name, own in self.fields.items()})

    def __or__(self, other: Any) -> Any:
        if other.__class__ is int and not other:  # ``label | context`` outside conditions
            return self
        return self.flat | flat(other)

    def __ror__(self, other: Any) -> int:
        # what accumulates labels (a group, a context, a function's returns) holds ints
        return flat(other) | self.flat

    def __repr__(self) -> str:
        return f"Fields({sorted(names_of(self.base))}, {sorted(self.fields)})"


def item_label(label: Any, key: Any, key_label: int) -> Any:
    """The label of ``value[key]`` when ``value`` has ``label`` and ``key`` has ``key_label``."""
    if label.__class__ is int:
        return label | key_label
    found = label.item(key)
    if not key_label:
        return found
    return found.plus(key_label) if found.__class__ is Fields else found | key_label


def result_of(callee: Any, arguments: int) -> Any:
    """The label of a host call's result: the callee's, steered by its arguments'."""
    if callee.__class__ is Fields:
        return callee.plus(flat(arguments))
    return callee | arguments


def element_of(label: Any) -> Any:
    """The label of one element the value of ``label`` iterates over (a dict display's
    keys are the plan's literals: its values' labels are not theirs)."""
    if label.__class__ is Shape and label.items.__class__ is dict:
        return label.own | PLAN_BIT
    return label if label.__class__ is Fields else flat(label)


def selected(label: Any, others: Any) -> Any:
    """The label of an element (or a reordering) of the value of ``label`` picked by
    ``others`` (a ``key`` function, a filter): records keep their trusted fields, since
    what picked them is a condition, not their data (strict mode uses :func:`result_of`,
    which adds it to every field)."""
    if label.__class__ is Fields:
        return label
    return element_of(label) | flat(others)


def list_label(*items: Any) -> Any:
    """The label of a list or tuple display of elements with these labels."""
    if all(item.__class__ is int for item in items) and len(set(items)) <= 1:
        return items[0] if items else 0
    return Shape(0, list(items))


def dict_label(keys: Sequence[Any], *labels: Any) -> Any:
    """The label of a dict display with constant ``keys`` and these value labels (its
    keys are the plan's literals: one label for all holds only when it is theirs too)."""
    if all(item.__class__ is int for item in labels) and len(set(labels)) <= 1 \
            and (not labels or labels[0] | PLAN_BIT == PLAN_BIT):
        return labels[0] if labels else 0
    return Shape(0, dict(zip(keys, labels, strict=True)))


@dataclass(frozen=True)
class CallSources:
    """The sources of each argument of one call: by position and by keyword.

    ``rest`` is the label of positional arguments beyond ``args`` (``*xs``) and
    ``rest_keywords`` of keywords not in ``kwargs`` (``**d``).
    """

    args: tuple[frozenset[str], ...] = ()
    kwargs: Mapping[str, frozenset[str]] = field(default_factory=dict)
    rest: frozenset[str] = frozenset()
    rest_keywords: frozenset[str] = frozenset()

    def bound(self, names: Sequence[str], keywords: Iterable[str]) -> dict[str, frozenset[str]]:
        """Sources by parameter name: positions in the order of ``names``, then
        ``keywords`` (the call's keyword names)."""
        result: dict[str, frozenset[str]] = {}
        for index, name in enumerate(names):
            result[name] = self.args[index] if index < len(self.args) else self.rest
        for name in keywords:
            result[name] = self.kwargs.get(name, self.rest_keywords)
        return result

    def to_wire(self) -> dict[str, Any]:
        return {"args": [sorted(item) for item in self.args],
                "kwargs": {key: sorted(value) for key, value in self.kwargs.items()},
                "rest": sorted(self.rest), "rest_keywords": sorted(self.rest_keywords)}

    @classmethod
    def from_wire(cls, wire: Any) -> CallSources:
        """Read what a sandbox process sent; ``ValueError`` when it is not that shape."""
        if not isinstance(wire, dict):
            raise ValueError("call sources must be a dict")

        def names(value: Any) -> frozenset[str]:
            if not isinstance(value, list) or not all(type(item) is str for item in value):
                raise ValueError("sources must be a list of names")
            return frozenset(value)

        args, kwargs = wire.get("args", []), wire.get("kwargs", {})
        if not isinstance(args, list) or not isinstance(kwargs, dict) \
                or not all(type(key) is str for key in kwargs):
            raise ValueError("call sources: bad args or kwargs")
        return cls(tuple(names(item) for item in args),
                   {key: names(value) for key, value in kwargs.items()},
                   names(wire.get("rest", [])), names(wire.get("rest_keywords", [])))


#: The sources of the arguments of the host call running in this context (``None`` when
#: its plan does not track labels).
call_sources: contextvars.ContextVar[CallSources | None] = contextvars.ContextVar(
    "tf_plan_call_sources", default=None)


class Tracker:
    """A run's labels of host results; what the label rewrite's code calls at run time.

    ``seen`` is every source the run has produced so far: the label of a value whose
    origin the rewrite cannot follow (a lambda's parameter, a caught exception).
    """

    def __init__(self, sources: Mapping[str, str], strict: bool,
                 fields: Mapping[str, Iterable[str]] | None = None,
                 reads: Mapping[str, Iterable[str]] | None = None) -> None:
        self.sources = dict(sources)
        self.strict = strict
        #: Callables whose results also carry what their prompts render (a chain that
        #: reads the conversation: ``memory:conversation``): those sources' bits.
        self.reads = {name: bits_of(names) for name, names in (reads or {}).items()}
        #: Chains the plan built (``__construct_chain``), by name: the labels of what they
        #: were built from (prompt, system prompt, output schema, name). They are every
        #: result's: whoever wrote a chain's instructions chose its output.
        self.constructed: dict[str, int] = {}
        #: Callables whose results' records have trusted fields: their labels.
        self.records = {name: Fields(bit_of(self.source_of(name)),
                                     {field: bit_of(f"{self.source_of(name)}.{field}")
                                      for field in sorted(names)})
                        for name, names in (fields or {}).items() if names}
        self.seen = PLAN_BIT | 1
        self.chains = 0
        self._lock = threading.Lock()

    def source_of(self, name: str) -> str:
        """The source a call of host callable ``name`` gives its result."""
        return self.sources.get(name) or f"chain:{name}"

    def callee(self, func: Any) -> Any:
        """The label a call of ``func`` adds to its arguments' labels (see
        :func:`result_of`): an ``int``, or :class:`Fields` for a tool with trusted fields."""
        name = getattr(func, "plan_type_name", None) == "callable" and func.name
        if not name:
            return self.seen
        records = self.records.get(name)
        if records is not None:
            return records
        return self.own_label(name)

    def own_label(self, name: str) -> int:
        """What a call of ``name`` adds to its arguments' labels: its source (none for a
        chain the plan built: its instructions' labels instead), what its prompts render,
        and for a chain every earlier chain result of the run."""
        made = self.constructed.get(name)
        source = self.source_of(name)
        label = bit_of(source) if made is None else made
        label |= self.reads.get(name, 0)
        return label | self.chains if source.startswith("chain:") else label

    def record(self, name: str, sources: CallSources) -> None:
        """A call of ``name`` with arguments from ``sources`` returned."""
        if name == "__construct_chain":  # a handle, no data: see :meth:`construct`
            return
        label = result_label(self, name, sources)
        with self._lock:
            self.seen |= label
            if self.source_of(name).startswith("chain:"):
                self.chains |= label

    def at(self, func: Any, labels: Callable[[], tuple[Any, ...]]) -> Any:
        """``func`` about to be called with arguments whose labels ``labels()`` gives:
        a host callable is called through :class:`LabeledCall`, ``__construct_chain``
        through :meth:`construct`, anything else as it is."""
        if getattr(func, "constructs_chains", False):
            return lambda *args, **kwargs: self.construct(func, labels, args, kwargs)
        if getattr(func, "plan_type_name", None) != "callable":
            return func
        return LabeledCall(self, func, labels)

    def construct(self, func: Any, labels: Callable[[], tuple[Any, ...]],
                  args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Build a chain; its results will carry the labels of what it was built from."""
        handle = func(*args, **kwargs)
        positional, rest, keywords, rest_keywords = labels()
        label = flat(rest) | flat(rest_keywords)
        for item in (*positional, *keywords.values()):
            label |= flat(item)
        name = getattr(handle, "name", None)
        if isinstance(name, str):
            with self._lock:
                self.constructed[name] = self.constructed.get(name, 0) | label
        return handle


class LabeledCall:
    """A host call that passes its arguments' sources to the dispatcher."""

    __slots__ = ("func", "labels", "tracker")
    plan_type_name = "callable"

    def __init__(self, tracker: Tracker, func: Any, labels: Callable[[], tuple[Any, ...]]
                 ) -> None:
        self.tracker = tracker
        self.func = func
        self.labels = labels

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        positional, rest, keywords, rest_keywords = self.labels()
        sources = CallSources(tuple(names_of(item) for item in positional),
                              {key: names_of(value) for key, value in keywords.items()},
                              names_of(rest), names_of(rest_keywords))
        return self.func.call_with_sources(args, kwargs, sources)


def result_label(tracker: Tracker, name: str, sources: CallSources) -> int:
    """The label of what a call of ``name`` with arguments from ``sources`` returned."""
    label = bits_of(sources.rest) | bits_of(sources.rest_keywords)
    for item in (*sources.args, *sources.kwargs.values()):
        label |= bits_of(item)
    return label | tracker.own_label(name)


def unknown_sources(tracker: Tracker) -> CallSources:
    """The sources of a call whose arguments the plan's labels do not reach (a host
    callable called by a builtin): anything the run has seen."""
    everything = names_of(tracker.seen)
    return CallSources(rest=everything, rest_keywords=everything)


def tracking_namespace(tracker: Tracker) -> dict[str, Any]:
    """What the label rewrite's code finds in the plan's globals."""
    return {"__tfl": tracker, "__tfh_at": tracker.at, "__tfh_item": item_label,
            "__tfh_list": list_label, "__tfh_dict": dict_label, "__tfh_flat": flat,
            "__tfh_res": result_of, "__tfh_elem": element_of, "__tfh_sel": selected}
