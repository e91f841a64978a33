"""The tf_plan language described from its own tables, in one place.

``language_summary()`` is what planners read (the brain's and the orchestrator's prompts,
the embedded model's prompt); ``language_reference()`` is the generated part of
``docs/tfplan.md``. Both are built from the parser's allowlist, the builtins and the
method tables, so a construct or builtin added there shows up everywhere at once.

    python -m dcbrain.tfplan.language docs/tfplan.md   # rewrite the generated docs part
"""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path

from dcbrain._docparts import GeneratedPart
from dcbrain.tfplan.builtins import BUILTIN_FUNCTIONS, EXCEPTIONS
from dcbrain.tfplan.methods import ALLOWED, IN_PLACE_METHODS, MODULE_MEMBERS, TYPE_MEMBERS
from dcbrain.tfplan.parser import (
    ALLOWED_NODES,
    IMPORTABLE_MODULES,
    REJECTED_NODES,
    SPECIAL_NAMES,
)

#: Source symbol of every operator node (a test checks the allowlist's are all here).
OPERATOR_SYMBOLS: dict[type[ast.AST], str] = {
    ast.And: "and", ast.Or: "or", ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/",
    ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>",
    ast.BitOr: "|", ast.BitXor: "^", ast.BitAnd: "&", ast.MatMult: "@", ast.Invert: "~",
    ast.Not: "not", ast.UAdd: "+x", ast.USub: "-x", ast.Eq: "==", ast.NotEq: "!=",
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Is: "is",
    ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}
#: Arithmetic operators (the embedded model's grammar admits these).
ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)

#: Allowlist entries that are parts of other constructs rather than constructs.
_PARTS = frozenset({
    "module", "operator", "load", "store", "delete", "comprehension clause", "parameters",
    "parameter", "keyword argument", "name", "f-string field", "imported name",
})
#: Refusals that are rules on allowed nodes rather than node types.
_RULES = (
    "decorator", "bytes literal", "`...`", "attribute assignment",
    "names starting with `__` (except {special})", "attributes starting with `_`",
)
_VALUES = ("None, bool, int, float, str, list, tuple, dict, set, frozenset, Decimal, date, "
           "datetime, time, timedelta (as Python computes with them: Decimal + str is a "
           "TypeError; date - date is a timedelta), plan functions and lambdas, and the "
           "chains and tools listed below (they can only be called)")

_PART = GeneratedPart("dcbrain.tfplan.language")

#: How each operation moves labels (the sources a value carries; see docs/security.md).
#: The label rewrite (``_label_rewrite.py``) implements these rules and the static flow
#: check (``flow.py``) keeps what is certain of them; the in-place methods are
#: ``methods.IN_PLACE_METHODS``. Where a rule says "union", the result carries every
#: source of what it reads: an over-approximation, never less.
LABEL_RULES: tuple[tuple[str, str], ...] = (
    ("literal", "`plan` (and what the planner was shown before writing it)"),
    ("operator, f-string, slice, method (not in place), builtin", "the union of its operands"),
    ("list, tuple or dict display", "each element keeps its own label; a dict display's "
     "keys are literals, labeled apart from its values"),
    ("`x[k]`", "the element's label when the container's shape is known, else the whole "
     "container's; plus `k`'s"),
    ("`x = v`, `a, b = v`", "`x` takes `v`'s label (element by element when unpacked)"),
    ("`t[k] = v`, `t[k] op= v`, `del t[k]`", "a change in place: `t` and every variable "
     "that may share it carry the union of their elements, `k` and `v` from then on"),
    ("in-place method", "the same: " + ", ".join(f"`{name}`" for name in IN_PLACE_METHODS)),
    ("iteration (`for`, comprehension, `list(d)`, `sorted`, `max`, `min`, `filter`)",
     "each element the union of the iterable's (a record its own fields); a dict's keys "
     "their own label; a `key=` or filter's condition adds to it"),
    ("function given to a builtin (`map`, `filter`, `sorted`, `max`, `min`)",
     "shares its parameters with the builtin's other arguments: what it changes in place "
     "changes them; a lambda that changes its parameter reads anything the run has seen"),
    ("plan function call", "its result carries what it ever returned, plus its arguments'"),
    ("tool or chain call", "the callee's source plus its arguments' labels (arguments "
     "steer what comes back); a chain also every earlier chain result and what its prompts "
     "render (`memory:conversation`)"),
    ("`__construct_chain(...)`", "every result of the chain carries its arguments' labels"),
    ("`parallel(a, b)`", "each branch its own label"),
    ("`if`, `while`, `for` (strict mode)", "what the body computes or calls carries the "
     "condition's label; after it, every variable the body may assign or change does too "
     "(the branch not taken decided it), and after an early `return`, `break` or `raise`, "
     "the rest of the block"),
)


def allowed_constructs() -> tuple[list[str], list[str]]:
    """Statements and expressions of tf_plan, in allowlist order."""
    statements: list[str] = []
    expressions: list[str] = []
    for node, construct in ALLOWED_NODES.items():
        if construct in _PARTS:
            continue
        (statements if issubclass(node, ast.stmt) else expressions).append(construct)
    return statements, expressions


def operator_symbols(kinds: tuple[type[ast.AST], ...] | None = None) -> list[str]:
    """Symbols of the allowed operators (of ``kinds`` only, when given), in allowlist order."""
    return [OPERATOR_SYMBOLS[node] for node in ALLOWED_NODES
            if node in OPERATOR_SYMBOLS and (kinds is None or node in kinds)]


def _rejected(kind: type[ast.AST]) -> list[str]:
    """Rejected constructs of one kind (statements or expressions)."""
    return list(dict.fromkeys(construct for node, construct in REJECTED_NODES.items()
                              if issubclass(node, kind)))


def rejected_constructs() -> list[str]:
    special = ", ".join(sorted(SPECIAL_NAMES))
    named = list(dict.fromkeys(REJECTED_NODES.values()))
    return [*named, *(rule.format(special=special) for rule in _RULES)]


def _short(construct: str) -> str:
    """``if statement`` -> ``if``: the kind is clear from the list a construct is in."""
    for suffix in (" statement", " expression"):
        construct = construct.removesuffix(suffix)
    return construct


def _methods(brief: bool = False) -> list[tuple[str, str]]:
    """Method names per type; ``brief`` folds bool into int and frozenset into set."""
    rows = []
    for kind, methods in ALLOWED.items():
        if brief and kind in (bool, frozenset):
            continue
        names = sorted(methods)
        names += [f"(and `{kind.__name__}.{member}`)" for member in
                  sorted(TYPE_MEMBERS.get(kind, ()))]
        rows.append((kind.__name__, " ".join(names)))
    return rows


def _imports() -> str:
    modules = " and ".join(f"`import {name}`" for name in sorted(IMPORTABLE_MODULES))
    return (f"only {modules} (all are always available anyway) and `from math import "
            "sqrt`-style imports of their members")


@cache
def language_summary() -> str:
    """A concise definition of tf_plan for planning prompts."""
    statements, _ = allowed_constructs()
    modules = "; ".join(f"{name}: {' '.join(sorted(members))}"
                        for name, members in sorted(MODULE_MEMBERS.items()))
    methods = "; ".join(f"{kind}: {names}" for kind, names in _methods(brief=True))
    lines = [
        "tf_plan is a strict subset of Python 3. Write the script in one ```tf_plan code "
        "block.",
        f"- Statements: {', '.join(map(_short, statements))}.",
        f"- Expressions: all of Python's except {', '.join(map(_short, _rejected(ast.expr)))}"
        ", with the operators below.",
        f"- Operators: {' '.join(operator_symbols())}.",
        f"- Rejected: {', '.join(map(_short, rejected_constructs()))}.",
        f"- Imports: {_imports()}.",
        f"- Values: {_VALUES}.",
        f"- Builtins: {' '.join(BUILTIN_FUNCTIONS)}.",
        f"- Exceptions (raise and isinstance): {' '.join(EXCEPTIONS)}.",
        f"- Modules: {modules}.",
        f"- Methods (no other attribute exists): {methods}; bool has int's, frozenset "
        "the non-mutating ones of set.",
        "- Call a chain or tool by its name with keyword arguments: "
        "`summary = summarize(text=article)`. A chain returns a str, or a dict when it has "
        "an output schema; wrap other values, e.g. {\"result\": [1, 2, 3]}.",
        "- `a, b = parallel(chain_a(x=1), tool_b(y=2))` evaluates its arguments (any "
        "expressions; the chain and tool calls in them) at the same time and returns their "
        "values as a list in argument order; `parallel(*[f(q=q) for q in queries])` makes "
        "one branch per item. No keyword arguments.",
        "- `return replan_with(value)` ends the plan and hands `value` to you, the planner: "
        "your next prompt shows it in full (it uses one attempt, is not a failure and is "
        "not validated). Look first when the instructions or the format are in the data "
        "(an email's TODO list, a web page), then write the plan that acts.",
        "- `helper = __construct_chain(prompt=\"Rate {{ review }} for {{ reader }}\", "
        "output_schema={...}, name=\"...\")` builds a chain at run time. A call fills "
        "`{{ name }}` with its argument `name` (`{{ input }}`: `input=`): "
        "`helper(review=text, reader=\"a child\")`; arguments the prompt does not name are "
        "sent after it as data, and a name the call does not pass is an error.",
        "- Not available: a clock (`datetime.datetime.now()`, `date.today()`: ask a tool "
        "for the date), `re`, `random`, `os`, `sys`, the `time` module, files, network, "
        "`getattr`, `type`, `eval`, classes, try/except (a failed call ends the plan and "
        "the next planning sees its error). Parse dates with "
        "`datetime.datetime.strptime(text, \"%d %B %Y\")` or "
        "`datetime.date.fromisoformat(text)`.",
        "- The plan's result is the value of a top-level `return`, else of the last "
        "top-level expression; print() output is captured and shown with it.",
        "- The script is checked before it runs: names bound nowhere the code can see, "
        "unknown chains or tools, wrong keyword arguments and fields a result's record "
        "does not have are errors.",
    ]
    return "\n".join(lines) + "\n"


def language_reference() -> str:
    """The generated part of ``docs/tfplan.md``: rejections, builtins, modules, methods."""
    modules = "\n".join(f"- `{name}`: {' '.join(sorted(members))}"
                        for name, members in sorted(MODULE_MEMBERS.items()))
    methods = "\n".join(f"| {kind} | {names} |" for kind, names in _methods())
    return "\n".join([
        _PART.start,
        "",
        "Rejected with `line:col: <construct> is not allowed in tf_plan`: "
        f"{', '.join(rejected_constructs())}.",
        "",
        f"Imports: {_imports()}; any other import is an error.",
        "",
        "### Builtins",
        "",
        " ".join(f"`{name}`" for name in BUILTIN_FUNCTIONS),
        "",
        "Exception types: " + " ".join(f"`{name}`" for name in EXCEPTIONS),
        "",
        "### Modules",
        "",
        modules,
        "",
        "### Methods",
        "",
        "| type | methods |",
        "| --- | --- |",
        methods,
        "",
        "### Labels",
        "",
        "How each operation moves the sources a value carries (see docs/security.md):",
        "",
        "| operation | label of the result |",
        "| --- | --- |",
        *(f"| {operation} | {rule} |" for operation, rule in LABEL_RULES),
        "",
        _PART.end,
    ])


def generated_part(document: str) -> str | None:
    """The generated part of ``document`` (markers included), if it has one."""
    return _PART.find(document)


def write_reference(path: Path) -> None:
    """Replace the generated part of the document at ``path`` with the current one."""
    _PART.rewrite(path, language_reference())


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        write_reference(Path(argument))
