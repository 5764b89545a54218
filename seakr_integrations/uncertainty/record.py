"""The record every estimator returns: a score and what it was computed from."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Uncertainty:
    """A score and what it was computed from (part of the decision trace).

    Attributes:
        value: Higher = more uncertain; ``inf`` when it could not be computed (see ``note``).
        estimator: Which estimator produced it.
        num_samples: Samples that entered the score.
        num_dropped: Samples dropped because their text was empty.
        layer: Decoder layer of the vectors (EigenScore), else ``None``.
        source: ``"mlp"`` or ``"residual"`` (EigenScore), else ``None``.
        note: Why the value is ``inf``, or ``None`` when it is an ordinary number.
    """

    value: float
    estimator: str
    num_samples: int
    num_dropped: int = 0
    layer: int | None = None
    source: str | None = None
    note: str | None = None

    @property
    def is_finite(self) -> bool:
        return math.isfinite(self.value)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (``inf`` stays a float; ``json.dumps`` writes it as ``Infinity``)."""
        return asdict(self)

    def to_metadata(self) -> dict[str, Any]:
        """The form both adapters attach to responses (LangChain ``response_metadata``/``generation_info``,
        LlamaIndex ``additional_kwargs``): plain JSON, with ``value`` ``None`` when it could not be computed (the
        reason is in ``note``), the same convention as the candidates' ``seakr_uncertainty`` metadata."""
        data = asdict(self)
        data["value"] = self.value if self.is_finite else None
        return data
