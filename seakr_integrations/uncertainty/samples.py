"""SPEC section 2/3's rules around the sample-based formulas, written once for every estimator that reads samples.

Samples whose text is empty are dropped before scoring (an empty continuation says nothing about what the model
would answer), and fewer than two kept samples count as maximally uncertain: there is nothing to compare.
"""

from __future__ import annotations

import math

from seakr_integrations.outputs import Continuation, SelfAwareOutput
from seakr_integrations.uncertainty.record import Uncertainty


def kept_samples(output: SelfAwareOutput) -> tuple[list[Continuation], int]:
    """The samples with non-empty text, and how many were dropped."""
    kept = [s for s in output.samples if s.text.strip()]
    return kept, len(output.samples) - len(kept)


def too_few_samples(
    output: SelfAwareOutput, estimator: str, kept: list[Continuation], *, readout: bool = False
) -> Uncertainty | None:
    """``inf`` with the reason when fewer than 2 samples were kept, else ``None`` (score them); ``readout``: the
    estimator reads hidden states, so the record names their layer and source."""
    if len(kept) >= 2:
        return None
    return Uncertainty(
        math.inf,
        estimator,
        num_samples=len(kept),
        num_dropped=len(output.samples) - len(kept),
        layer=output.layer if readout else None,
        source=output.source if readout else None,
        note=f"only {len(kept)} of {len(output.samples)} samples had non-empty text; at least 2 are needed, "
        "so the model counts as maximally uncertain",
    )
