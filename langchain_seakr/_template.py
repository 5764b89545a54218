"""``check_template``: a ``context_template`` refused at construction unless ``str.format(passages=...)`` fills it,
so a template with other braces fails where it is written, not on the first unsure turn of an agent."""

from __future__ import annotations

import string

__all__ = ["check_template"]

SLOT = "passages"


def check_template(template: str) -> str:
    """``template`` when it has the ``{passages}`` slot and no other field; else a ``ValueError`` that names the
    stray braces and how to write them (doubled: ``{{`` and ``}}`` stand for literal braces)."""
    try:
        fields = [(name, _written(name, conv, spec)) for _, name, spec, conv in string.Formatter().parse(template)]
    except ValueError as error:  # a lone "{" or "}"
        raise ValueError(
            f"context_template has a brace that str.format cannot read ({error}): double every literal brace "
            "({{ and }}) and keep {passages} where the kept passage goes"
        ) from None
    stray = list(dict.fromkeys(written for name, written in fields if name is not None and name != SLOT))
    shown = ", ".join(f"{{{field}}}" for field in stray)
    doubled = ", ".join(f"{{{{{field}}}}}" for field in stray)
    if SLOT not in (name for name, _ in fields):
        instead = (
            f"; it has {shown}, which nothing fills: rename it {{passages}}, or write it doubled ({doubled}) to show "
            "it as it is"
            if stray
            else ""
        )
        raise ValueError(f"context_template must contain {{passages}}, where the kept passage goes{instead}")
    if stray:
        raise ValueError(
            f"context_template has {shown} besides {{passages}}: only {{passages}} is filled in (with the kept "
            f"passage); write other braces doubled to show them as they are ({doubled})"
        )
    try:
        template.format(passages="")
    except (ValueError, IndexError, KeyError) as error:  # a format spec or conversion the slot cannot take
        raise ValueError(
            f"context_template cannot be filled ({type(error).__name__}: {error}): write {{passages}}"
        ) from None
    return template


def _written(name: str | None, conversion: str | None, spec: str | None) -> str:
    """A replacement field as the template writes it, without its braces."""
    return f"{name}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}"
