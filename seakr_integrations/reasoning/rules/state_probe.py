"""A linear probe on the model's state: the greedy step's hidden state at EOS decides the gate, without samples."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.rules.base import Decision, Reads, Rule
from seakr_integrations.reasoning.rules.token_cascade import check_band
from seakr_integrations.uncertainty.linear_probe import LinearProbe

if TYPE_CHECKING:
    from seakr_integrations.outputs import SelfAwareOutput
    from seakr_integrations.reasoning.state import QuestionState


@dataclass(frozen=True)
class StateProbe(Rule):
    """The greedy step's hidden state at EOS (the samples' read-out layer and source, read in the same engine call as
    the step) goes through a linear probe trained to predict "retrieval helps" (``seakr calibrate --rules
    default,state-probe``); the probe's probability decides: at or below the band's low edge accept, above its high
    edge retrieve, in between the k samples decide as the paper's gate.  A band of one point, ``(t, t)``, is a gate
    without samples.  Semantic Entropy Probes (Kossen et al. 2024) and Probing-RAG (Baek et al. 2025) read a model's
    state this way.

    Attributes:
        probe: The ``LinearProbe``; ``None`` takes the one calibrated with delta (same profile).
        band: ``(sure_at_or_below, unsure_above)`` in probability; ``None`` takes the calibrated threshold ``(t, t)``
            (the probe's own retrieval rate at the target rate).  Without either the rule does nothing (a warning
            says so).
    """

    name: ClassVar[str] = "state-probe"
    decision: ClassVar[Decision] = "when to retrieve"
    order: ClassVar[float] = 40
    probe: LinearProbe | None = None
    band: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.probe is not None and not isinstance(self.probe, LinearProbe):
            raise TypeError(
                f"StateProbe(probe={self.probe!r}): pass a LinearProbe (seakr calibrate --rules default,state-probe "
                "makes one)"
            )
        if self.band is not None:
            band = check_band(self.band)
            if not 0 <= band[0] <= band[1] <= 1:
                raise ValueError(
                    f"StateProbe(band={self.band!r}): the band is in the probe's probability, so both edges must be in "
                    "[0, 1]; pass (t, t) for a threshold t, or None for the calibrated one"
                )
            object.__setattr__(self, "band", band)

    def reads(self) -> Reads:
        ready = self.probe is not None and self.band is not None
        return Reads(greedy_step=ready, greedy_vector=ready)

    def read_step(self, state: QuestionState, text: str, output: SelfAwareOutput) -> GateReason | None:
        if self.probe is None or self.band is None:
            return None
        vector = output.greedy.eos_vector
        if vector is None:
            raise RuntimeError(
                "the state-probe rule needs the greedy step's hidden state, and the back-end returned none: "
                "it must read hidden states (not a plain OpenAI-compatible server)"
            )
        p = self.probe.probability(vector)
        if p <= self.band[0]:
            return GateReason.SURE_FROM_STATE
        if p > self.band[1]:
            return GateReason.UNSURE_FROM_STATE
        return None

    def calibrated(self, profile: Any) -> StateProbe:
        """With the probe and threshold the profile's calibration learned for this rule (``rules["state-probe"]``)
        filled in."""
        from seakr_integrations.profile_checks import learned_state  # the profile's reader: no cycle at import
        from seakr_integrations.stored_schemas import PROBE_ENTRY
        from seakr_integrations.uncertainty.linear_probe import stored_probe

        if profile is None or (self.probe is not None and self.band is not None):
            return self
        where = {"model": profile.model, "layer": profile.layer, "source": profile.source}
        # checked: a malformed state, or a probe trained elsewhere than the profile reads, names the file and field
        stored = learned_state(profile, self.name, PROBE_ENTRY, lambda state, path: stored_probe(state, path, **where))
        if stored is None:
            return self
        probe, threshold = stored
        return replace(self, probe=self.probe or probe, band=self.band or (threshold, threshold))

    def uncalibrated(self) -> str | None:
        if self.probe is not None and self.band is not None:
            return None
        return (
            "no state probe: the state-probe rule does nothing. Train one with `seakr calibrate --rules "
            "default,state-probe` (it learns the probe with delta), or pass StateProbe(probe=..., band=...)"
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StateProbe:
        """Read back without the probe (the record holds what it was, not its weights: the profile supplies them)."""
        band = data.get("band")
        return cls(probe=None, band=None if band is None else tuple(band))

    def learn(self, evidence: Any) -> dict[str, Any] | None:
        """A probe for "retrieval helps" on the first step's hidden state, its threshold at the calibration's target
        rate and its verdict (``evaluation.probe_learning.learn_probe``); ``None``, and a warning that says why,
        when the labels cannot train one."""
        from seakr_integrations.evaluation.probe_learning import learn_probe

        return learn_probe(evidence, self.name)

    def to_dict(self) -> dict[str, Any]:
        """Recorded by what the probe is, not its weights (they are in the profile)."""
        probe = None if self.probe is None else {"layer": self.probe.layer, "source": self.probe.source,
                                                 "trained_on": dict(self.probe.trained_on)}  # fmt: skip
        return {"rule": self.name, "probe": probe, "band": None if self.band is None else list(self.band)}


def check_probe_readout(rules: Sequence[Any], layer: int | None, source: str, model: str | None = None,
                        width: int | None = None, backend: str = "") -> None:  # fmt: skip
    """Refuse (``ValueError``) a ``StateProbe`` whose probe was trained elsewhere than this run reads: another layer
    or source (the config knows them, unless ``layer`` is ``None``: the back-end's default), model or hidden size
    (known where the config meets the back-end; ``backend``: how ``seakr calibrate`` names it, ``--model NAME`` or
    ``--server URL``).  A probe read through another layer's vector still returns a
    probability, a meaningless one, and the trace would record the probe's layer as if it had been read."""
    for rule in rules:
        probe = getattr(rule, "probe", None) if isinstance(rule, StateProbe) else None
        problem = None if probe is None else probe.mismatch(layer=layer, source=source, model=model, width=width)
        if problem is None:
            continue
        assert probe is not None
        options = (f" {backend}" if backend else "") + ("" if layer is None else f" --layer {layer}")
        rules = "--rules default,state-probe"
        train = f"train a probe where this run reads: `seakr calibrate {rules}{options} --source {source}`"
        if probe.mismatch(model=model, width=width) is not None:  # another model: no layer of this one fits
            raise ValueError(f"{problem}. Run it on {probe.model or 'the model it was trained on'}, or {train}")
        raise ValueError(
            f"{problem}. Pass layer={probe.layer}, source={probe.source!r} (the probe's) to read where it was "
            f"trained, or {train}"
        )
