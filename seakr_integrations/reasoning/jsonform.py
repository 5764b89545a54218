"""The strict-JSON form of a SeaKR trace's values, both ways (non-finite numbers as ``"inf"``, ``"-inf"``,
``"nan"``; version 1's ``null`` as ``inf``), and the version of that form (``docs/design/reasoning.md``)."""

from __future__ import annotations

import math
from dataclasses import fields
from enum import StrEnum
from typing import Any

from seakr_integrations.uncertainty.estimate import Uncertainty

SCHEMA_VERSION = 2
"""Version of the trace's JSON form (described in ``docs/design/reasoning.md``); a trace without one is version 1."""


def number_to_json(value: float) -> float | str:
    """``value`` for strict JSON: the number itself, or ``"inf"``/``"-inf"``/``"nan"`` when it is not finite."""
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def number_from_json(value: float | int | str | None) -> float:
    """The float that :func:`number_to_json` wrote (``None``, version 1's non-finite number, reads as ``inf``); a
    ``ValueError`` for anything else."""
    if value is None:
        return math.inf
    if isinstance(value, str) and value not in ("inf", "-inf", "nan"):
        raise ValueError(f"{value!r} is not a number of a SeaKR trace (numbers, or 'inf', '-inf', 'nan')")
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{value!r} is not a number of a SeaKR trace")
    return float(value)


TEXT_FIELDS = frozenset(
    {"question", "answer", "strategy", "stop_reason", "generation", "pseudo_generation", "query", "accepted", "text"}
    | {"title", "decision", "error", "reason", "stop", "note", "estimator"}
)
"""Fields of a trace that hold text (or ``null``): a number there, NaN above all, is a corrupt trace."""

COUNT_FIELDS = frozenset({"lm_calls", "generated_tokens", "searches", "index", "search_rank", "num_samples"})
"""Fields of a trace that hold a whole number."""


def check_field_types(data: Any, path: str = "") -> None:
    """Refuse (``ValueError``) a trace's JSON form whose text fields are not text (``"answer": NaN``) or whose counts
    are not whole numbers, naming the first by its path (``steps[2].query``); the recorded ``config`` is not checked."""
    if isinstance(data, list):
        for i, item in enumerate(data):
            check_field_types(item, f"{path}[{i}]")
        return
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        where = f"{path}.{key}" if path else str(key)
        if key == "config" and not path:
            continue
        if key in TEXT_FIELDS and value is not None and not isinstance(value, str):
            raise ValueError(f"field {where} holds {_shown(value)}: it must be a string (or null)")
        if key in COUNT_FIELDS and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"field {where} holds {_shown(value)}: it must be a whole number")
        check_field_types(value, where)


def _shown(value: Any) -> str:
    """A wrong value, in words: NaN and the infinities by name, others by type and a short repr."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    return f"{type(value).__name__} {value!r:.40}"


def _plain(value: Any) -> Any:
    """Strict-JSON form: non-finite floats become ``"inf"``/``"-inf"``/``"nan"``, enums their values, tuples lists,
    records dicts."""
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, float):
        return number_to_json(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    return value


def _numbers_from_json(value: Any) -> Any:
    """``value`` with the strings ``"inf"``, ``"-inf"``, ``"nan"`` read back as floats (the recorded config)."""
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    if isinstance(value, dict):
        return {k: _numbers_from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers_from_json(v) for v in value]
    return value


def uncertainty_from_dict(data: dict[str, Any] | None, *, strict: bool = False) -> Uncertainty:
    """The ``Uncertainty`` of its JSON form (``Uncertainty.to_dict()`` through :func:`_plain`): a trace's, whatever
    its version, or with ``strict`` a ``seakr serve`` reply's, which must hold ``value`` and only the record's fields
    (else ``KeyError``/``TypeError``)."""
    if data is None and not strict:  # version 1 wrote no record for a number it could not compute
        return Uncertainty(math.inf, "unknown", 0, note="not recorded")
    known = {f.name for f in fields(Uncertainty)}
    values = {**data} if strict else {k: v for k, v in data.items() if k in known}
    values["value"] = number_from_json(data["value"] if strict else data.get("value"))
    return Uncertainty(**values)


def trace_version(data: Any) -> int | None:
    """The ``schema_version`` of a trace's JSON form: 1 for a trace written before the version was recorded (no
    version, its keys), ``None`` when ``data`` is not a SeaKR trace at all (e.g. the closed-book method's record).

    Raises:
        ValueError: The version is newer than this release reads, or not a version number.
    """
    if not isinstance(data, dict):
        return None
    if "schema_version" not in data:
        return 1 if {"steps", "finals", "config"} <= data.keys() else None
    version = data["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"schema_version {version!r} of a SeaKR trace is not a version number (1, 2, ...)")
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"this SeaKR trace has schema_version {version}, newer than the {SCHEMA_VERSION} this release of "
            "seakr-integrations reads: upgrade seakr-integrations to read it"
        )
    return version
