"""Token-bounded recall for planning (``memory_chunk_size`` tokens at most).

``memory_chunk_size`` gives one budget per section — conversation, documents, knowledge,
keyword index — measured with a length function (cl100k tokens by default):

- ``16384``: the same budget for all four sections;
- ``[1000, 2000, 500, 500]``: one budget per section, in that order;
- ``(16384, fn)`` or ``([1000, 2000, 500, 500], fn)``: the same, measured with ``fn``.

Each section is rendered as one line per item (see the ``*_text`` methods of
:class:`Recall`); the rendered section is never longer than its budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final, TypeAlias

from dcbrain.llm.tokens import cl100k_base_length
from dcbrain.memory._chunking import LengthFunction, fit_prefix
from dcbrain.memory.base import ALL_KINDS
from dcbrain.messages import TextMessage

if TYPE_CHECKING:
    from dcbrain.memory.base import Memory, MemoryItem, MemoryKind

MemoryChunkSize: TypeAlias = int | Sequence[int] | tuple[object, ...]
DEFAULT_MEMORY_CHUNK_SIZE: Final[MemoryChunkSize] = (16384, cl100k_base_length)
TRUNCATION_MARKER: Final = "…[truncated]"
_PAGE: Final = 128
# A search ranks every match whatever its limit, so one large page beats several small.
_SEARCH_PAGE: Final = 512


@dataclass(frozen=True)
class RecallBudget:
    """The four budgets of a recall and the function that measures them."""

    conversation: int
    documents: int
    knowledge: int
    keywords: int
    length: LengthFunction = cl100k_base_length

    @classmethod
    def parse(cls, memory_chunk_size: MemoryChunkSize) -> RecallBudget:
        """Read any accepted form of ``memory_chunk_size``; wrong shapes raise ``TypeError``."""
        value: object = memory_chunk_size
        length: LengthFunction = cl100k_base_length
        if isinstance(value, tuple | list) and value and callable(value[-1]):
            length = value[-1]
            value = value[0] if len(value) == 2 else tuple(value[:-1])
        if isinstance(value, int) and not isinstance(value, bool):
            sizes = [value] * 4
        elif isinstance(value, tuple | list) and len(value) == 4:
            sizes = list(value)
        else:
            raise TypeError(
                "memory_chunk_size must be an int, four ints (conversation, documents, "
                "knowledge, keyword index), or either followed by a length function; "
                f"got {memory_chunk_size!r}"
            )
        for size in sizes:
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise TypeError(f"memory_chunk_size budgets must be ints >= 0, got {size!r}")
        return cls(sizes[0], sizes[1], sizes[2], sizes[3], length)


def render_message(message: TextMessage) -> str:
    """A conversation turn as one prompt entry."""
    return f"{message.role}: {message.content}\n"


def render_document(item: MemoryItem) -> str:
    return f"[{item.source}] {item.text}\n" if item.source else f"{item.text}\n"


def render_knowledge(item: MemoryItem) -> str:
    return f"- {item.text}\n"


def render_keyword_hit(item: MemoryItem) -> str:
    label = f"{item.kind}, {item.role}" if item.role else item.kind
    return f"({label}) {item.text}\n"


def render_entry(item: MemoryItem) -> str:
    """The item as an entry of its own section (conversation, documents or knowledge)."""
    if item.kind == "message":
        return render_message(item.to_message())
    if item.kind == "document":
        return render_document(item)
    return render_knowledge(item)


def count_entry_tokens(item: MemoryItem) -> tuple[int, int]:
    """cl100k tokens of the item's entry in its own section and as a keyword hit.

    Stores call this once per item so recall need not count again (``entry_tokens``,
    ``hit_tokens``).
    """
    return cl100k_base_length(render_entry(item)), cl100k_base_length(render_keyword_hit(item))


@dataclass
class Recall:
    """What memory contributes to one planning step.

    ``conversation`` is chronological; ``documents``, ``knowledge`` and ``keyword_hits``
    are most relevant first. ``keyword_hits`` holds keyword matches of any kind that are
    not already in the other sections.
    """

    conversation: list[TextMessage] = field(default_factory=list)
    documents: list[MemoryItem] = field(default_factory=list)
    knowledge: list[MemoryItem] = field(default_factory=list)
    keyword_hits: list[MemoryItem] = field(default_factory=list)

    def conversation_text(self) -> str:
        return "".join(render_message(message) for message in self.conversation)

    def documents_text(self) -> str:
        return "".join(render_document(item) for item in self.documents)

    def knowledge_text(self) -> str:
        return "".join(render_knowledge(item) for item in self.knowledge)

    def keyword_text(self) -> str:
        return "".join(render_keyword_hit(item) for item in self.keyword_hits)

    def is_empty(self) -> bool:
        return not (self.conversation or self.documents or self.knowledge or self.keyword_hits)


def recall(
    memory: Memory,
    conversation_id: str,
    current_input: str,
    memory_chunk_size: MemoryChunkSize = DEFAULT_MEMORY_CHUNK_SIZE,
) -> Recall:
    """Recent turns and relevant items of a conversation, each section within its budget.

    - Conversation: the newest turns that fit, returned in chronological order. The
      newest message is left out when it is the user's ``current_input`` itself (the
      brain commits the input before it plans).
    - Documents and knowledge: keyword matches for ``current_input`` by bm25 rank, then
      the remaining items newest first.
    - Keyword index: matches of any kind not already shown above (nor the current input).

    Items are taken in that order until the next one would not fit; a first item larger
    than the whole budget is cut to fit and ends with :data:`TRUNCATION_MARKER`.
    """
    budget = RecallBudget.parse(memory_chunk_size)
    length = budget.length
    # Counts stored with the items are cl100k counts: usable only with that length.
    counted = length is cl100k_base_length
    own_count = _stored_entry_tokens if counted else None
    hit_count = _stored_hit_tokens if counted else None

    turns = _recent_items(memory, conversation_id, "message")
    newest = next(turns, None)
    shown: set[int] = set()
    if newest is not None:
        if newest.role == "user" and newest.text.strip() == current_input.strip():
            shown.add(newest.id)
        else:
            turns = _chain_one(newest, turns)
    conversation_items = take_within(
        turns, budget.conversation, length, _render_item_message, own_count
    )
    conversation_items.reverse()

    sections: tuple[tuple[MemoryKind, int, Callable[[MemoryItem], str]], ...] = (
        ("document", budget.documents, render_document),
        ("knowledge", budget.knowledge, render_knowledge),
    )
    documents, knowledge = (
        take_within(_ranked(memory, conversation_id, kind, current_input), kind_budget, length,
                    render, own_count)
        for kind, kind_budget, render in sections
    )
    shown.update(item.id for item in (*conversation_items, *documents, *knowledge))
    hits = (
        item
        for item in _search_all(memory, conversation_id, current_input, None)
        if item.id not in shown
    )
    keyword_hits = take_within(hits, budget.keywords, length, render_keyword_hit, hit_count)
    return Recall(
        conversation=[item.to_message() for item in conversation_items],
        documents=documents,
        knowledge=knowledge,
        keyword_hits=keyword_hits,
    )


def take_within(
    items: Iterator[MemoryItem],
    budget: int,
    length: LengthFunction,
    render: Callable[[MemoryItem], str],
    stored: Callable[[MemoryItem], int | None] | None = None,
) -> list[MemoryItem]:
    """The longest prefix of ``items`` whose rendered entries fit ``budget`` together.

    Both the sum of the entries' lengths and the length of their concatenation stay
    within ``budget``, so the guarantee holds for any length function. ``stored`` gives
    an entry's length counted in advance (``None``: measure it with ``length``).
    """
    taken: list[MemoryItem] = []
    entries: list[str] = []
    used = 0
    for item in items:
        entry = render(item)
        cost = stored(item) if stored is not None else None
        if cost is None:
            cost = length(entry)
        if used + cost <= budget:
            taken.append(item)
            entries.append(entry)
            used += cost
            continue
        if not taken:
            cut = _truncated(item, budget, length, render)
            if cut is not None:
                taken.append(cut)
                entries.append(render(cut))
        break
    if not _counts_add_up(length, entries):
        while taken and length("".join(entries)) > budget:
            taken.pop()
            entries.pop()
    return taken


def _counts_add_up(length: LengthFunction, entries: list[str]) -> bool:
    """Whether the joined entries' length is the sum of theirs, without measuring it.

    cl100k splits text into pieces before merging tokens, and a newline followed by a
    character other than whitespace always ends a piece: entries that end with a newline
    and start with something else count the same apart and joined.
    """
    return length is cl100k_base_length and all(
        entry.endswith("\n") and not entry[:1].isspace() for entry in entries
    )


def _truncated(
    item: MemoryItem, budget: int, length: LengthFunction, render: Callable[[MemoryItem], str]
) -> MemoryItem | None:
    def render_text(text: str) -> str:
        return render(replace(item, text=text))

    cut = fit_prefix(item.text, budget, length, TRUNCATION_MARKER, render_text)
    return None if cut is None else replace(item, text=cut, entry_tokens=None, hit_tokens=None)


def _stored_entry_tokens(item: MemoryItem) -> int | None:
    return item.entry_tokens


def _stored_hit_tokens(item: MemoryItem) -> int | None:
    return item.hit_tokens


def _render_item_message(item: MemoryItem) -> str:
    # render_message(item.to_message()) without building the message: recall's hot path.
    return f"{item.role or 'user'}: {item.text}\n"


def _chain_one(first: MemoryItem, rest: Iterator[MemoryItem]) -> Iterator[MemoryItem]:
    yield first
    yield from rest


def _recent_items(memory: Memory, conversation_id: str, kind: MemoryKind) -> Iterator[MemoryItem]:
    before: int | None = None
    while True:
        page = memory.recent(conversation_id, kind, limit=_PAGE, before_id=before)
        yield from page
        if len(page) < _PAGE:
            return
        before = page[-1].id


def _search_all(
    memory: Memory, conversation_id: str, query: str, kind: MemoryKind | None
) -> Iterator[MemoryItem]:
    kinds = ALL_KINDS if kind is None else (kind,)
    offset, size = 0, _SEARCH_PAGE
    while True:
        page = memory.search(query, conversation_id, kinds=kinds, limit=size, offset=offset)
        yield from page
        if len(page) < size:
            return
        # Each page re-ranks every match, so pages grow to keep the number of queries small.
        offset, size = offset + size, size * 2


def _ranked(
    memory: Memory, conversation_id: str, kind: MemoryKind, query: str
) -> Iterator[MemoryItem]:
    """Keyword matches best first, then every other item of ``kind`` newest first."""
    matched: set[int] = set()
    for item in _search_all(memory, conversation_id, query, kind):
        matched.add(item.id)
        yield item
    for item in _recent_items(memory, conversation_id, kind):
        if item.id not in matched:
            yield item
