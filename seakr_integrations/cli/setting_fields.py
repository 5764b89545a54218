"""Command-line options made from a settings dataclass's fields: each one's type, default and description (the
``Attributes:`` section of the class docstring, where every setting is described once), so that an option's
choices and help follow the setting it sets instead of a copy of them."""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Sequence
from typing import Any, Literal, Union, get_args, get_origin

from seakr_integrations.params import choices as literal_choices

__all__ = ["attribute_docs", "option_keywords"]

_ENTRY = re.compile(r"(\w+): (.*)")
"""The first line of an attribute's description: ``name: text``."""


def attribute_docs(cls: type) -> dict[str, str]:
    """Each attribute's description in the ``Attributes:`` section of ``cls``'s Google-style docstring, on one line,
    with reStructuredText's double backquotes dropped; empty when the docstrings are stripped (``python -OO``)."""
    lines = inspect.cleandoc(cls.__doc__ or "").splitlines()
    if "Attributes:" not in lines:
        return {}
    docs: dict[str, list[str]] = {}
    indent: int | None = None
    for line in lines[lines.index("Attributes:") + 1 :]:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        indent = depth if indent is None else indent
        if depth < indent:  # the next section
            break
        entry = _ENTRY.fullmatch(line.strip()) if depth == indent else None
        if entry:
            docs[entry[1]] = [entry[2]]
        elif docs:
            docs[next(reversed(docs))].append(line.strip())
    return {name: re.sub(r"``(.*?)``", r"\1", " ".join(words)) for name, words in docs.items()}


def option_keywords(hint: Any, default: Any, description: str, choices: Sequence[str] | None = None) -> dict[str, Any]:
    """The ``add_argument`` keywords of an option for a setting of type ``hint``: a ``Literal``'s values as the
    choices (or ``choices``, for a ``str`` whose values a registry holds), an ``int`` or ``float`` as the type; the
    ``description`` as the help.  ``Optional`` is read as the type it wraps: an option left out keeps ``default``.

    Raises:
        TypeError: ``hint`` is none of these (a flag, a list, a nested object): such a setting's option is written
            by hand.
    """
    kind = _without_none(hint)
    if get_origin(kind) is Literal:
        typed: dict[str, Any] = {"choices": literal_choices(kind)}
    elif kind is str:
        typed = {} if choices is None else {"choices": choices}
    elif kind in (int, float):
        typed = {"type": kind}
    else:
        raise TypeError(f"no option is made for a setting of type {hint!r}: write its option by hand")
    return {**typed, "default": default, "help": description.replace("%", "%%")}


def _without_none(hint: Any) -> Any:
    """``X`` for ``X | None`` (or ``Optional[X]``), else ``hint`` itself."""
    if get_origin(hint) in (Union, types.UnionType):
        kinds = [kind for kind in get_args(hint) if kind is not type(None)]
        if len(kinds) == 1:
            return kinds[0]
    return hint
