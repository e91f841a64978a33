"""The names every plan can use besides its own and the registered callables.

Kept apart from the checker so that running compiled plan code (a sandbox process) does
not import the checker to know which callable names a builtin already takes.
"""

from __future__ import annotations

from dcbrain.tfplan.builtins import BUILTIN_FUNCTIONS, EXCEPTIONS
from dcbrain.tfplan.parser import SPECIAL_NAMES

#: Names every plan can use besides its own and the registered callables.
BUILTIN_NAMES = frozenset(BUILTIN_FUNCTIONS) | frozenset(EXCEPTIONS) | SPECIAL_NAMES
