"""What a function's docstring says of the function and of each parameter.

Google (``Args:``), NumPy (``Parameters`` underlined) and Sphinx (``:param x:``) styles
are read with griffe, as pydantic-ai reads them. griffe is imported only for a
docstring that has a parameter section: importing it costs more than most tools' setup.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any

#: A line that opens a parameter section in one of the styles griffe reads.
_PARAMETER_SECTION = re.compile(
    r"^[ \t]*(?:(?:Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|"
    r"Other Parameters)[ \t]*:[ \t]*$|(?:Parameters|Other Parameters)[ \t]*\n[ \t]*-{3,}"
    r"|:(?:param|parameter|arg|argument|key|keyword)[ \t]+\w"
    r"|(?:Returns|Return|Yields)[ \t]*:[ \t]*$|Returns[ \t]*\n[ \t]*-{3,}|:returns?:)",
    re.MULTILINE)
#: A Google section header right under prose: griffe reads it as a section only after a
#: blank line, and would leave it in the summary.
_CRAMMED_HEADER = re.compile(
    r"(?<=\S)\n(?=[ \t]*(?:Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|"
    r"Other Parameters|Returns|Raises)[ \t]*:[ \t]*\n)")
_SPHINX = re.compile(r"^[ \t]*:(?:param|parameter|arg|argument|key|keyword)[ \t]+\w",
                     re.MULTILINE)


@dataclass(frozen=True)
class DocstringParts:
    """A docstring's summary (its first paragraph of prose, sections left out), the
    description of each parameter it documents, and what its ``Returns:`` says."""

    summary: str = ""
    parameters: dict[str, str] = field(default_factory=dict)
    returns: str = ""


def docstring_parts(doc: str | None) -> DocstringParts:
    text = inspect.cleandoc(doc or "")
    if not _PARAMETER_SECTION.search(text):
        return DocstringParts(text.split("\n\n")[0])
    import griffe

    text = _CRAMMED_HEADER.sub("\n\n", text)
    docstring = griffe.Docstring(text, lineno=1)
    style: Any = "sphinx" if _SPHINX.search(text) else \
        griffe.infer_docstring_style(docstring)[0] or "google"
    # warnings off: griffe would log every parameter documented without a type
    parsed = griffe.Docstring(text, lineno=1, parser=style,
                              parser_options={"warnings": False}).parse()
    summary = ""
    parameters: dict[str, str] = {}
    returns: list[str] = []
    for section in parsed:
        if section.kind is griffe.DocstringSectionKind.text and not summary:
            summary = str(section.value).split("\n\n")[0]
        elif section.kind in (griffe.DocstringSectionKind.parameters,
                              griffe.DocstringSectionKind.other_parameters):
            for parameter in section.value:
                if parameter.description:
                    parameters.setdefault(parameter.name, inspect.cleandoc(parameter.description))
        elif section.kind is griffe.DocstringSectionKind.returns:
            for item in section.value:
                annotation = str(item.annotation or "").strip()
                description = inspect.cleandoc(item.description or "")
                returns.append(f"{annotation}: {description}" if annotation and description
                               else annotation or description)
    return DocstringParts(summary.strip(), parameters, "; ".join(filter(None, returns)))
