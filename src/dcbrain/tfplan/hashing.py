"""``hash`` in plans: the same number for the same value in every process.

Python salts the hashes of str and bytes with a per-process seed, and hashes ``None``
and NaN by address, so ``hash(name)`` passed to a tool would be another number after a
restart (and a durable replay would diverge). A plan's ``hash`` is Python's for numbers
and ranges (and Decimals); str and bytes, dates, datetimes, times and timedeltas hash by
a digest of their content (an aware datetime by its instant, as it compares); tuples and frozensets
combine their items' hashes with CPython's formulas (tuples exactly as CPython does, so
a tuple of numbers hashes as in Python). Equal values still hash equal (``1``, ``1.0``
and ``True`` alike). Other objects have no stable hash and are refused.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from dcbrain.tfplan.guards.budget import ALLOC_DIVISOR
from dcbrain.values.scalars import TEMPORAL_TYPES

_WIDTH = sys.hash_info.width
_MASK = (1 << _WIDTH) - 1
_DIGEST_BYTES = _WIDTH // 8
#: Python 3.12's fixed hash of ``None``.
_NONE_HASH = 0xFCA86420
# CPython's tuple hash (xxHash's 64-bit primes) and frozenset hash constants
_XXPRIME_1 = 11400714785074694791
_XXPRIME_2 = 14029467366897019727
_XXPRIME_5 = 2870177450012600261
_UNHASHABLE = frozenset({list, dict, set, bytearray})


def plan_hash(value: Any, charge: Callable[[int], None]) -> int:
    """The seed-independent hash of ``value``; ``charge`` pays for the work (one operation
    per item and per ``ALLOC_DIVISOR`` characters). Each shared part is hashed once."""
    known: dict[int, int] = {}
    pending: list[tuple[Any, bool]] = [(value, False)]
    while pending:  # iterative: a plan may already be close to its recursion limit
        node, items_done = pending.pop()
        if id(node) in known:
            continue
        kind = type(node)
        if kind is not tuple and kind is not frozenset:
            known[id(node)] = _scalar_hash(node, charge)
        elif items_done:
            hashes = [known[id(item)] for item in node]
            known[id(node)] = _tuple_hash(hashes) if kind is tuple else _frozenset_hash(hashes)
        else:
            charge(1 + len(node))
            pending.append((node, True))
            pending.extend((item, False) for item in node if id(item) not in known)
    return known[id(value)]


def _scalar_hash(value: Any, charge: Callable[[int], None]) -> int:
    kind = type(value)
    if kind is str:
        charge(1 + len(value) // ALLOC_DIVISOR)
        return _digest(value.encode("utf-8", "surrogatepass"), b"str")
    if kind is bytes:
        charge(1 + len(value) // ALLOC_DIVISOR)
        return _digest(value, b"bytes")
    if kind in (int, bool, range):
        return hash(value)
    if kind is float:
        return 0 if value != value else hash(value)
    if kind is complex:
        if value == value:
            return hash(value)
        # CPython's formula, with NaN parts hashed as 0
        real = 0 if value.real != value.real else hash(value.real)
        imag = 0 if value.imag != value.imag else hash(value.imag)
        return _signed((real + sys.hash_info.imag * imag) & _MASK)
    if value is None:
        return _NONE_HASH
    if kind is Decimal:
        return 0 if value.is_nan() else hash(value)
    if kind in TEMPORAL_TYPES or kind is timedelta:
        return _digest(_instant_text(value).encode(), kind.__name__.encode())
    name = getattr(value, "plan_type_name", kind.__name__)
    if kind in _UNHASHABLE:
        raise TypeError(f"unhashable type: '{name}'")
    raise TypeError(f"a {name} has no stable hash: hash() takes str, bytes, numbers, None "
                    "and tuples or frozensets of them")


def _instant_text(value: Any) -> str:
    """Text equal for equal values: an aware datetime or time at UTC (equal instants
    compare equal whatever their offsets)."""
    if type(value) is timedelta:
        return f"{value.days},{value.seconds},{value.microseconds}"
    offset = value.utcoffset() if type(value) is not date else None
    if offset is not None:
        if type(value) is datetime:
            return "Z" + str((value.replace(tzinfo=None) - offset).isoformat())
        moment = datetime.combine(date(2000, 1, 1), value.replace(tzinfo=None)) - offset
        return "Z" + str(moment.time().isoformat())
    return str(value.isoformat())


def _digest(data: bytes, person: bytes) -> int:
    digest = hashlib.blake2b(data, digest_size=_DIGEST_BYTES, person=person).digest()
    return _signed(int.from_bytes(digest, "little"))


def _tuple_hash(hashes: list[int]) -> int:
    acc = _XXPRIME_5
    for item in hashes:
        acc = (acc + (item & _MASK) * _XXPRIME_2) & _MASK
        acc = ((acc << 31) | (acc >> 33)) & _MASK
        acc = (acc * _XXPRIME_1) & _MASK
    acc = (acc + (len(hashes) ^ (_XXPRIME_5 ^ 3527539))) & _MASK
    return 1546275796 if acc == _MASK else _signed(acc)


def _frozenset_hash(hashes: list[int]) -> int:
    acc = 0
    for item in hashes:
        item &= _MASK
        acc ^= (((item ^ 89869747) ^ (item << 16)) * 3644798167) & _MASK
    acc ^= ((len(hashes) + 1) * 1927868237) & _MASK
    acc ^= (acc >> 11) ^ (acc >> 25)
    acc = (acc * 69069 + 907133923) & _MASK
    return 590923713 if acc == _MASK else _signed(acc)


def _signed(number: int) -> int:
    """``number`` (``_WIDTH`` bits) as a signed hash; -1 is never a hash in CPython."""
    if number >> (_WIDTH - 1):
        number -= 1 << _WIDTH
    return -2 if number == -1 else number
