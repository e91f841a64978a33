"""The guards rewritten plans call, and the budget they charge.

``rewrite.py`` turns ``a.b`` into ``__tf_attr(a, "b")``, ``a * b`` into ``__tf_mul(a, b)``,
``for x in it`` into ``for x in __tf_iter(it)`` and so on; :meth:`Guards.namespace` binds
those names to one run's guards. The guards are grouped by concern: the operation
budget and structure checks (``budget.py``), operators on numbers and sequences
(``arithmetic.py``), rendering and formatting (``strings.py``), attribute, method and
subscript access (``access.py``).
"""

from __future__ import annotations

from typing import Any

from dcbrain.tfplan.guards.access import Access, Namespace, TypeProxy
from dcbrain.tfplan.guards.arithmetic import Arithmetic
from dcbrain.tfplan.guards.budget import ALLOC_DIVISOR, Budget
from dcbrain.tfplan.guards.strings import Strings
from dcbrain.tfplan.state import RunState

_AUGMENTED = ("Add", "Sub", "BitOr", "BitAnd", "BitXor", "Mult", "Pow", "LShift", "Mod",
              "FloorDiv")
#: The name each augmented assignment's guard is bound to, with its operator.
_AUGMENTED_NAMES = tuple((f"__tf_iop_{op_name}", op_name) for op_name in _AUGMENTED)
#: The ``__tf_*`` names bound to immutable values, alike in every run.
_CONSTANTS: dict[str, Any] = {
    "__tf_numbers": frozenset({int, float}),
    "__tf_int": int,
    "__tf_len": len,
    "__tf_native": frozenset({str, int, float, bool}),
    "__tf_flat": frozenset({str, int, float, bool, type(None)}),
    "__tf_small": 1 << 64,
}


class Guards:
    """Every guard of one plan run."""

    __slots__ = ("access", "arithmetic", "budget", "strings")

    def __init__(self, state: RunState) -> None:
        self.budget = Budget(state.limits)
        self.strings = Strings(self.budget, state)
        self.arithmetic = Arithmetic(self.budget, self.strings)
        self.access = Access(self.budget, self.strings)

    def release(self) -> None:
        """The plan run ended: drop the guards' tables of their own bound methods (each
        would keep its guard in a cycle, for Python's cyclic collector to free)."""
        self.strings.methods.clear()
        self.arithmetic.release()

    def namespace(self) -> dict[str, Any]:
        """The ``__tf_*`` names the rewritten plan calls, bound to this run."""
        budget, arithmetic, strings, access = (
            self.budget, self.arithmetic, self.strings, self.access)
        names = dict(_CONSTANTS)  # immutable values: the same for every run
        names.update({
            "__tf_tick": budget.tick,
            "__tf_count_calls": budget.count_calls,
            "__tf_max_depth": budget.max_depth,
            "__tf_max_calls": budget.max_ops,
            "__tf_too_deep": budget.too_deep,
            "__tf_iter": budget.iterate,
            "__tf_unpack": budget.unpack,
            "__tf_iter_unpack": budget.iterate_unpacked,
            "__tf_deep": budget.deep,
            "__tf_key": budget.key,
            "__tf_in": budget.contained_in,
            "__tf_checked": budget.check_result,
            "__tf_display": budget.check_display,
            "__tf_attr": access.attr,
            "__tf_keyed_method": access.keyed_method,
            "__tf_slice": access.get_slice,
            "__tf_set_slice": access.set_slice,
            "__tf_star": access.star,
            "__tf_hashed_star": access.hashed_star,
            "__tf_fv": strings.formatted_value,
            "__tf_fjoin": strings.join_fstring,
            "__tf_add": arithmetic.add,
            "__tf_sub": arithmetic.sub,
            "__tf_bitor": arithmetic.bitor,
            "__tf_bitand": arithmetic.bitand,
            "__tf_bitxor": arithmetic.bitxor,
            "__tf_mul": arithmetic.mul,
            "__tf_pow": arithmetic.power,
            "__tf_lshift": arithmetic.lshift,
            "__tf_mod": arithmetic.mod,
            "__tf_floordiv": arithmetic.floordiv,
            "__tf_check_iadd": arithmetic.check_iadd,
        })
        augmented = arithmetic.augmented
        for name, op_name in _AUGMENTED_NAMES:
            names[name] = augmented(op_name)
        return names


__all__ = ["ALLOC_DIVISOR", "Access", "Arithmetic", "Budget", "Guards", "Namespace", "Strings",
           "TypeProxy"]
