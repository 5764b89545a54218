"""Unknown keyword arguments, refused with the nearest valid name: one rule for every public class of both adapters
and for ``SeaKRConfig``.

A mistyped setting (``SeaKRMiddleware(retriver=r)``, ``SeaKRQueryEngine(..., max_doc=3)``) that a class accepted
and dropped would change what runs without a word.  Each class checks the keywords it was given against the ones
it takes: a pydantic model (LangChain's and LlamaIndex's classes are) with ``refuse_unknown_fields`` in a
``model_validator(mode="before")``, a plain class with ``check_keywords`` on its ``**kwargs``.  The error is a
``TypeError``, as Python's own for an unexpected keyword argument, and names the nearest valid keyword, or the
``SeaKRConfig`` setting the name belongs to.  Framework-free: pydantic models are read through ``model_fields``.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Collection, Iterable, Mapping
from typing import Any

__all__ = ["accepted_keywords", "check_keywords", "refuse_unknown_fields", "unknown_keyword"]

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _nearest(name: str, valid: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(name, sorted(set(valid)), n=1, cutoff=0.6)
    if not found and len(name) >= 4:  # a part of a keyword: "timeout" for "search_timeout"
        found = sorted(v for v in valid if name.lower() in v.lower())
    return found[0] if found else None


def unknown_keyword(
    owner: str, name: str, valid: Iterable[str], *, config_settings: Collection[str] = (), hint: str = ""
) -> TypeError:
    """The error for keyword ``name``, which ``owner`` does not take: the nearest of ``valid`` named, else the
    nearest of ``config_settings`` (the ``SeaKRConfig`` settings, ``reasoning.config.SETTING_NAMES``, given when
    ``owner`` takes ``config=``), else every valid keyword and ``hint``.  The settings come from the caller: this
    module sits below the config, whose own keywords it checks too."""
    valid = sorted(set(valid))
    head = f"{owner} got an unexpected keyword argument {name!r}"
    nearest = _nearest(name, valid)
    if nearest is not None:
        return TypeError(f"{head}: did you mean {nearest!r}?")
    if config_settings:
        setting = _nearest(name, config_settings)
        if setting is not None:
            return TypeError(f"{head}: {setting!r} is a setting of SeaKRConfig; pass config=SeaKRConfig({setting}=...)")
    return TypeError(f"{head}; it takes: {', '.join(valid)}{hint}")


def check_keywords(
    owner: str, given: Iterable[str], valid: Iterable[str], *, config_settings: Collection[str] = (), hint: str = ""
) -> None:
    """Refuse the first of ``given`` that is not in ``valid`` (``unknown_keyword``'s ``TypeError``)."""
    valid = set(valid)
    for name in given:
        if name not in valid:
            raise unknown_keyword(owner, name, valid, config_settings=config_settings, hint=hint)


def accepted_keywords(cls: type) -> set[str]:
    """The keywords ``cls(...)`` takes: the named parameters of its ``__init__`` and of every ``__init__`` it hands
    ``**kwargs`` on to, and a pydantic model's fields with their aliases."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        try:
            params = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):  # a builtin's __init__: nothing more to learn
            break
        names |= {p.name for p in params if p.kind in _NAMED and p.name != "self"}
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            break
    for field_name, info in (getattr(cls, "model_fields", None) or {}).items():
        names.add(field_name)
        names.update(_aliases(info))
    return names


def _aliases(info: Any) -> list[str]:
    out = [info.alias] if isinstance(getattr(info, "alias", None), str) else []
    validation = getattr(info, "validation_alias", None)
    if isinstance(validation, str):
        out.append(validation)
    for choice in getattr(validation, "choices", ()) or ():
        if isinstance(choice, str):
            out.append(choice)
    return out


def refuse_unknown_fields(
    cls: type, data: Any, *, owner: str | None = None, config_settings: Collection[str] = ()
) -> Any:
    """For a pydantic ``model_validator(mode="before")``: ``data`` as it is, or ``unknown_keyword``'s
    ``TypeError`` for its first key that is no field (or alias) of ``cls``; ``config_settings`` are named when
    ``cls`` has a ``config`` field."""
    if isinstance(data, Mapping):
        takes_config = "config" in (getattr(cls, "model_fields", None) or {})
        settings = config_settings if takes_config else ()
        check_keywords(owner or cls.__name__, data, accepted_keywords(cls), config_settings=settings)
    return data
