"""Operators that can build large values or run long on large ints.

Python's big-int operations run in one C call each: ``x * y`` takes time growing with the
product of the operands' sizes (Karatsuba past a few dozen words), ``x // y`` and
``x % y`` with the product of the quotient's and the divisor's sizes, ``a ** e`` with its
result's, ``pow(a, e, m)`` a product per bit of ``e``, ``math.isqrt`` and ``round(x, -n)``
a division each, ``math.factorial``/``comb``/``perm`` a tree of products. They are sized
and paid for (by bit size) before Python starts them.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from dcbrain.tfplan.errors import SizeLimitExceeded
from dcbrain.tfplan.guards.budget import ALLOC_DIVISOR, Budget
from dcbrain.tfplan.guards.strings import Strings
from dcbrain.values.scalars import MAX_INTEGER_DIGITS, decimal_digits, integer_digits

_INTS = (int, bool)
_SEQUENCES = (str, list, tuple)
#: Largest argument of math.factorial/comb/perm: their results grow far faster than it.
MAX_COMBINATORIC = 10_000
#: One operation per this many products of 64-bit words in quadratic big-int algorithms.
_WORD_PRODUCTS_PER_OP = 16
#: Operands (in 64-bit words) from which CPython multiplies with Karatsuba's method.
_KARATSUBA_WORDS = 35
_SMALL = 1 << 64
#: Digits of a Decimal whose arithmetic costs no more than a loop step (a plan's precision).
_SHORT_DECIMAL = 28
_LOG2_10 = math.log2(10)


def _words(number: int) -> int:
    return (number.bit_length() >> 6) + 1


def _product_words(a_words: int, b_words: int) -> int:
    """Word products of a product of ints of these sizes, as CPython multiplies: by the
    schoolbook up to ``_KARATSUBA_WORDS``, else with Karatsuba's method on chunks of the
    smaller size."""
    small, large = min(a_words, b_words), max(a_words, b_words)
    if small <= _KARATSUBA_WORDS:
        return small * large
    return int(large * small * (_KARATSUBA_WORDS / small) ** 0.415)


def _power_operations(result_bits: float) -> int:
    """Operations of ``a ** e`` with a result of ``result_bits``: repeated squaring, whose
    squarings add up to about one and a half times the last one."""
    half = int(result_bits) // 128 + 1
    return 3 * _product_words(half, half) // (2 * _WORD_PRODUCTS_PER_OP) + 1


def _decimal_words(number: Any) -> int:
    """The size of a Decimal operand in 64-bit words (about 19 digits each); 0 for any
    other operand, or a Decimal of a plan's 28 digits or fewer (no charge beyond the
    step)."""
    if number.__class__ is not Decimal or not number.is_finite():
        return 0
    digits = decimal_digits(number)
    return 0 if digits <= _SHORT_DECIMAL else digits // 19 + 1


def _division_operations(dividend_words: int, divisor_words: int) -> int:
    """Schoolbook division: a word product per word of the quotient and of the divisor."""
    quotient = max(dividend_words - divisor_words, 0) + 1
    return quotient * divisor_words // _WORD_PRODUCTS_PER_OP + 1


class Arithmetic:
    """Binary operators, ``pow``, ``divmod``, ``int()`` and ``math.gcd``/``lcm`` of one run."""

    def __init__(self, budget: Budget, strings: Strings) -> None:
        self.budget = budget
        self.strings = strings
        self.bitor = self._bitwise(operator.or_)
        self.bitand = self._bitwise(operator.and_)
        self.bitxor = self._bitwise(operator.xor)
        self._in_place: dict[str, Callable[[Any, Any], Any]] = {
            "Add": self.list_iadd, "Sub": self._bitwise(operator.isub),
            "BitOr": self._bitwise(operator.ior), "BitAnd": self._bitwise(operator.iand),
            "BitXor": self._bitwise(operator.ixor), "Mult": self.mul, "Pow": self.power,
            "LShift": self.lshift, "Mod": self.mod, "FloorDiv": self.floordiv,
        }

    def release(self) -> None:
        """Drop the guards bound to this object (the run ended; see ``Guards.release``)."""
        self._in_place.clear()
        del self.bitor, self.bitand, self.bitxor

    def augmented(self, op_name: str) -> Callable[[Any, Any], Any]:
        """The guard of ``x op= v`` for the operator named ``op_name`` (``"Add"`` …)."""
        return self._in_place[op_name]

    # -- growing operators -----------------------------------------------------------
    def add(self, a: Any, b: Any) -> Any:
        result = a + b
        kind = result.__class__
        if kind is int or kind is float:  # numbers grow one bit per addition at most
            return result
        return self.budget.check_result(result)

    def sub(self, a: Any, b: Any) -> Any:
        result = a - b
        kind = result.__class__
        if kind is int or kind is float:
            return result
        return self.budget.check_result(result)

    def charge_decimal(self, a: Any, b: Any, shape: str) -> None:
        """Pay for Decimal arithmetic as for ints of the operands' sizes: ``shape`` is
        ``"product"`` or ``"division"``. A plan's own Decimals have 28 digits and cost
        the step; one of up to :data:`~dcbrain.values.scalars.MAX_DECIMAL_DIGITS` from a tool
        costs its size (``+`` and ``-`` are linear in those digits: the step pays)."""
        wa, wb = _decimal_words(a), _decimal_words(b)
        if not wa and not wb:
            return
        wa, wb = max(wa, 1), max(wb, 1)
        if shape == "product":
            self.budget.charge(_product_words(wa, wb) // _WORD_PRODUCTS_PER_OP + 1)
        else:
            self.budget.charge(_division_operations(wa, wb) + wa // ALLOC_DIVISOR)

    def _bitwise(self, op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        check_result = self.budget.check_result

        def guarded(a: Any, b: Any) -> Any:
            result = op(a, b)
            kind = result.__class__
            if kind is float or kind is bool:
                return result
            if kind is int and -_SMALL < result < _SMALL:
                return result
            return check_result(result)

        return guarded

    def mul(self, a: Any, b: Any) -> Any:
        budget = self.budget
        ta, tb = a.__class__, b.__class__
        if ta is float or tb is float:
            return a * b
        if ta in _INTS and tb in _INTS:
            if -_SMALL < a < _SMALL and -_SMALL < b < _SMALL:
                return a * b
            if a.bit_length() + b.bit_length() > budget.max_bits:
                raise budget.too_many_bits("int product", a.bit_length() + b.bit_length())
            if not (-_SMALL < a < _SMALL or -_SMALL < b < _SMALL):
                budget.charge(_product_words(_words(a), _words(b)) // _WORD_PRODUCTS_PER_OP)
        elif ta is Decimal or tb is Decimal:
            self.charge_decimal(a, b, "product")
            return a * b
        elif (ta in _INTS and tb in _SEQUENCES) or (tb in _INTS and ta in _SEQUENCES):
            count, sequence = (a, b) if ta in _INTS else (b, a)
            size = len(sequence) * count
            if size > budget.max_size:
                raise budget.too_large(type(sequence).__name__, size)
        return budget.check_result(a * b)

    def power(self, a: Any, b: Any, mod: Any = None) -> Any:
        budget = self.budget
        if a.__class__ is Decimal or b.__class__ is Decimal:
            # at the plan's 28 digits, whatever the exponent: a product per exponent bit
            self.charge_decimal(a, a, "product")
            self.charge_decimal(b, b, "product")
        if mod is None:
            if a.__class__ in _INTS and b.__class__ in _INTS and b > 0:
                bits = abs(a).bit_length()
                if bits > 1 and (bits - 1) * b > budget.max_bits:
                    raise budget.too_many_bits("int power", (bits - 1) * b)
                if bits > 1:
                    budget.charge(_power_operations(math.log2(abs(a)) * b))
            return budget.check_result(a**b)
        if a.__class__ in _INTS and b.__class__ in _INTS and mod.__class__ in _INTS:
            for name, number in (("base", a), ("exponent", b), ("modulus", mod)):
                if number.bit_length() > budget.max_bits:
                    raise budget.too_many_bits(f"pow() {name}", number.bit_length())
            words = _words(mod)
            # reducing the base, then a product and a reduction per exponent bit (a
            # negative exponent first inverts the base, which costs one more reduction)
            budget.charge((_words(a) * words + 2 * abs(b).bit_length() * words * words
                           + (words * words if b < 0 else 0)) // _WORD_PRODUCTS_PER_OP + 1)
        return budget.check_result(pow(a, b, mod))

    def lshift(self, a: Any, b: Any) -> Any:
        budget = self.budget
        if (a.__class__ in _INTS and b.__class__ in _INTS and a and b > 0
                and a.bit_length() + b > budget.max_bits):
            raise budget.too_many_bits("int shift", a.bit_length() + b)
        return budget.check_result(a << b)

    # -- division --------------------------------------------------------------------
    def _charge_division(self, a: Any, b: Any) -> None:
        if a.__class__ in _INTS and b.__class__ in _INTS and not -_SMALL < b < _SMALL \
                and not -_SMALL < a < _SMALL:
            self.budget.charge(_division_operations(_words(a), _words(b)))
        elif a.__class__ is Decimal or b.__class__ is Decimal:
            self.charge_decimal(a, b, "division")

    def floordiv(self, a: Any, b: Any) -> Any:
        self._charge_division(a, b)
        return a // b

    def mod(self, a: Any, b: Any) -> Any:
        kind = a.__class__
        if kind is int and b.__class__ is int and -_SMALL < b < _SMALL:
            return a % b  # linear in a
        if kind is str:
            return self.strings.percent(a, b)
        self._charge_division(a, b)
        return a % b

    def divmod(self, a: Any, b: Any) -> tuple[Any, Any]:
        self._charge_division(a, b)
        return divmod(a, b)  # type: ignore[no-any-return]

    def round(self, number: Any, ndigits: Any = None) -> Any:
        """``round()``: an int rounded to ``-n`` digits is divided by ``10**n``; a Decimal
        rounded to an int has all the digits up to its exponent."""
        if ndigits is None and number.__class__ is Decimal:
            self.decimal_to_int(number, "round()")
        if type(number) is int and type(ndigits) is int and ndigits < 0:
            if -ndigits > number.bit_length() * 3 // 10 + 2:
                return 0  # past the digits it has; Python would compute 10**-ndigits first
            power_bits = -ndigits * _LOG2_10
            self.budget.charge(_power_operations(power_bits) + _division_operations(
                _words(number), int(power_bits) // 64 + 1))
        return round(number, ndigits)

    def isqrt(self, number: Any) -> int:
        """``math.isqrt``: Newton's method, a division per doubling of precision."""
        if number.__class__ in _INTS:
            words = _words(number)
            self.budget.charge(words * words // (2 * _WORD_PRODUCTS_PER_OP) + 1)
        return math.isqrt(number)

    def combinatoric(self, name: str, *args: Any) -> int:
        """``math.factorial``, ``perm`` and ``comb`` (``name``), for arguments up to
        ``MAX_COMBINATORIC``: a tree of products up to the size of ``perm(n, k)``, each
        level about the cost of its last product (``comb`` also divides as much)."""
        func: Callable[..., int] = getattr(math, name)
        if any(type(arg) is int and arg > MAX_COMBINATORIC for arg in args):
            raise SizeLimitExceeded(
                f"math.{name}() arguments are limited to {MAX_COMBINATORIC}")
        n = args[0] if args else None
        k = args[1] if len(args) == 2 and name != "factorial" else None
        if k is None:  # factorial(n), perm(n), perm(n, None): n factors
            k = n
        if len(args) <= 2 and type(n) is int and type(k) is int and 0 <= k <= n:
            if name == "comb":
                k = min(k, n - k)
            bits = (math.lgamma(n + 1) - math.lgamma(n - k + 1)) / math.log(2)
            half = int(bits) // 128 + 1
            levels = max(k, 1).bit_length() * (2 if name == "comb" else 1)
            self.budget.charge(_product_words(half, half) * levels // _WORD_PRODUCTS_PER_OP
                               + 1)
        return self.budget.check_result(func(*args))  # type: ignore[no-any-return]

    def gcd(self, *numbers: Any) -> int:
        """``math.gcd``: Lehmer's algorithm is quadratic in the operands' size."""
        self._charge_pairs(numbers)
        return math.gcd(*numbers)

    def lcm(self, *numbers: Any) -> int:
        self._charge_pairs(numbers)
        result = 1
        for number in numbers:
            result = self.budget.check_result(math.lcm(result, number))
        return result

    def _charge_pairs(self, numbers: tuple[Any, ...]) -> None:
        words = max((_words(n) for n in numbers if n.__class__ in _INTS), default=1)
        self.budget.charge(1 + len(numbers) * (1 + words * words // _WORD_PRODUCTS_PER_OP))

    def decimal_to_int(self, number: Decimal, what: str) -> None:
        """Refuse an int conversion of ``number`` past :data:`MAX_INTEGER_DIGITS` before
        it is built, and pay for it (quadratic in its digits)."""
        digits = integer_digits(number)
        if digits > MAX_INTEGER_DIGITS:
            raise SizeLimitExceeded(f"{what} of a Decimal of {digits} integer digits exceeds "
                                    f"the limit of {MAX_INTEGER_DIGITS} digits")
        self.budget.charge(1 + digits * digits // 4096)

    def integral(self, func: Callable[[Any], int]) -> Callable[[Any], int]:
        """``math.floor``, ``ceil`` and ``trunc``: of a Decimal, an int sized first."""
        def bounded(number: Any, /) -> int:
            if number.__class__ is Decimal:
                self.decimal_to_int(number, f"math.{func.__name__}()")
            return func(number)

        bounded.__name__ = bounded.__qualname__ = func.__name__
        return bounded

    def to_int(self, value: Any = 0, /, base: Any = None) -> int:
        """``int()``: text in a power-of-two base converts without CPython's digit limit;
        a Decimal is sized before its digits are converted."""
        if base is None:
            if value.__class__ is Decimal:
                self.decimal_to_int(value, "int()")
            return int(value)
        if value.__class__ is str and base.__class__ in _INTS:
            bits_per_digit = (base - 1).bit_length() if base >= 2 else 4
            bits = len(value) * bits_per_digit
            if bits > self.budget.max_bits:
                raise self.budget.too_many_bits("int()", bits)
            self.budget.charge(1 + len(value) // ALLOC_DIVISOR)
        return int(value, base)

    # -- in place ----------------------------------------------------------------------
    def check_iadd(self, target: Any, value: Any) -> Any:
        """Checks ``x += v`` and returns ``v``; the native ``+=`` keeps CPython's in-place
        string append. An iterable added to a list is first consumed under the budget."""
        kind = target.__class__
        if kind is int or kind is float:
            return value
        budget = self.budget
        if kind in _SEQUENCES and value.__class__ in _SEQUENCES:
            size = len(target) + len(value)
            if size > budget.max_size:
                raise budget.too_large(kind.__name__, size)
            budget.charge(1 + len(value) // ALLOC_DIVISOR)
        elif kind is list:
            value = budget.materialize(value)
            if len(target) + len(value) > budget.max_size:
                raise budget.too_large("list", len(target) + len(value))
        return value

    def list_iadd(self, a: Any, b: Any) -> Any:
        return self.budget.check_result(operator.iadd(a, self.check_iadd(a, b)))
