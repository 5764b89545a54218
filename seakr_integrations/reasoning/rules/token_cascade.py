"""The cascade: the greedy step's own token probabilities decide when they are clear; samples only in between."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from seakr_integrations.params import check_real
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.rules.base import Decision, Reads, Rule, check_greedy_estimator
from seakr_integrations.uncertainty.estimate import estimate

if TYPE_CHECKING:
    from seakr_integrations.outputs import SelfAwareOutput
    from seakr_integrations.reasoning.state import QuestionState


def check_band(band: Any) -> tuple[float, float]:
    """A cascade band as ``(low, high)`` floats, refused unless it is two finite numbers with low <= high."""
    if isinstance(band, (str, bytes)) or not hasattr(band, "__len__") or len(band) != 2:
        raise ValueError(f"band={band!r}: give two numbers (sure_at_or_below, unsure_above), or None")
    low = check_real("band[0]", band[0], "a finite number")
    high = check_real("band[1]", band[1], "a finite number")
    if not low <= high:
        raise ValueError(f"band={band!r}: the low edge must not be above the high edge")
    return (low, high)


@dataclass(frozen=True)
class TokenCascade(Rule):
    """Each step is generated greedily first; a reading of that step alone decides when it is clearly sure (at or
    below the band's low edge: accept) or clearly unsure (above its high edge: retrieve), and the k samples are drawn
    only in between.  The samples are nearly all of SeaKR's cost; the band is calibrated with delta (``seakr
    calibrate`` stores both) as the widest thresholds that agree with the EigenScore gate on 90% of the first steps
    they decide.

    Attributes:
        estimator: An estimator of the greedy continuation alone (``"min_token_prob"``: 1 - the least likely
            token's probability; or ``"perplexity"``).
        band: ``(sure_at_or_below, unsure_above)`` in the estimator's units; ``None`` takes the band calibrated with
            delta, and without one every step draws its samples (a warning says so).
        agreement: What the calibration learns the band for (:meth:`learn`): the share, in (0.5, 1], of the first
            steps it decides on which it agrees with the gate at the calibrated delta, each side.
    """

    name: ClassVar[str] = "token-cascade"
    decision: ClassVar[Decision] = "when to retrieve"
    order: ClassVar[float] = 50
    estimator: str = "min_token_prob"
    band: tuple[float, float] | None = None
    agreement: float = 0.9

    def __post_init__(self) -> None:
        check_greedy_estimator(self, self.estimator)
        if self.band is not None:
            object.__setattr__(self, "band", check_band(self.band))

    def reads(self) -> Reads:
        """The screen always (the trace records it; calibration fits the band from it), and the greedy step first
        once there is a band to read it against."""
        return Reads(greedy_step=self.band is not None, screen=self.estimator)

    def read_step(self, state: QuestionState, text: str, output: SelfAwareOutput) -> GateReason | None:
        if self.band is None:
            return None
        reading = estimate(output, self.estimator).value
        if reading <= self.band[0]:
            return GateReason.SURE_FROM_TOKENS
        if reading > self.band[1]:
            return GateReason.UNSURE_FROM_TOKENS
        return None

    def calibrated(self, profile: Any) -> TokenCascade:
        """With the band the profile's calibration learned for this rule (``rules["token-cascade"]``), where it was
        learned on this rule's estimator."""
        from seakr_integrations.profile_checks import learned_state  # the profile's reader: no cycle at import
        from seakr_integrations.stored_schemas import CASCADE

        if profile is None or self.band is not None:
            return self
        state = learned_state(profile, self.name, CASCADE)  # checked: a malformed state names the file and field
        if state is None or state["estimator"] != self.estimator:
            return self
        low, high = state["band"]
        return replace(self, band=(float(low), float(high)))

    def uncalibrated(self) -> str | None:
        if self.band is not None:
            return None
        return (
            f"no cascade band for {self.estimator}: every step draws its samples. Calibrate one with `seakr calibrate "
            "--rules default,token-cascade` (it learns the band with delta), or pass TokenCascade(band=(low, high))"
        )

    def learn(self, evidence: Any) -> dict[str, Any]:
        """The band on this rule's estimator whose decisions agree with the gate at the calibrated delta on
        ``agreement`` of the first steps they decide, each side (:func:`cascade_band`)."""
        agreement = check_real(
            "agreement", self.agreement, "a share in (0.5, 1] (default 0.9)", 0.5, 1.0, open_low=True, raw=True,
            refusal="the share of the steps the cascade band decides on which it must agree with the gate, each "
            "side, is in (0.5, 1] (default 0.9)",
        )  # fmt: skip
        band = cascade_band(evidence.readings(self.estimator), evidence.uncertainties, evidence.delta, agreement)
        return {"estimator": self.estimator, **band}


def cascade_band(
    screens: Sequence[float], uncertainties: Sequence[float], delta: float, agreement: float
) -> dict[str, Any]:
    """The cascade's band: the widest thresholds on the cheap ``screens`` whose decisions agree with the gate on
    ``uncertainties`` (retrieve when above ``delta``) on at least ``agreement`` of the steps they decide, each side
    (docs/design/core.md).  Steps whose screen is not finite (an empty greedy step) are left out: the gate retrieves.

    Returns:
        ``{"band": [low, high], "agreement", "decided"}``, ``decided`` being the share of the finite steps the band
        decides without samples (``TokenCascade.learn`` adds the estimator).
    """
    if not 0.5 < agreement <= 1.0:
        raise ValueError(f"agreement={agreement!r}: a share in (0.5, 1]")
    pairs = sorted((s, u > delta) for s, u in zip(screens, uncertainties, strict=True) if np.isfinite(s))
    if not pairs:
        raise ValueError("no finite screen value to calibrate the cascade band on")
    values = [s for s, _ in pairs]
    low, high = values[0] - 1.0, values[-1] + 1.0
    accepted = 0
    for i, (s, retrieve) in enumerate(pairs):
        accepted += not retrieve
        if (i + 1 == len(pairs) or pairs[i + 1][0] != s) and accepted / (i + 1) >= agreement:
            low = s
    retrieved = 0
    for i in range(len(pairs) - 1, 0, -1):
        retrieved += pairs[i][1]
        above = len(pairs) - i
        if pairs[i - 1][0] != pairs[i][0] and retrieved / above >= agreement:
            high = pairs[i - 1][0]
    if (retrieved + pairs[0][1]) / len(pairs) >= agreement:
        high = values[0] - 1.0
    if low > high:  # both sides reach into each other: no band in between, decide at the middle
        low = high = (low + high) / 2
    decided = sum(1 for s in values if s <= low or s > high) / len(values)
    return {"band": [float(low), float(high)], "agreement": agreement, "decided": decided}
