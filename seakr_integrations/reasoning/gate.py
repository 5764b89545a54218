"""SeaKR's self-aware retrieval gate: read the model's next step and decide whether to retrieve.

The samples the paper's gate draws at every step are nearly all of SeaKR's cost, so with a cascade or claim checks
the step is read in cheaper stages first (greedy step, its claims, its token probabilities) and sampled only when
they cannot decide (``docs/design/reasoning.md``).  Every reading records its ``GateReason``.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.reasoning.answer import has_answer
from seakr_integrations.reasoning.calls import NOT_MEASURED, ModelCalls
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.state import Call, QuestionState
from seakr_integrations.uncertainty.estimate import Uncertainty


@dataclass(frozen=True)
class Reading:
    """What the gate read from one step and what it decided (``retrieve``).

    Attributes:
        output: The step's greedy continuation (and its samples when they were drawn in the same call).
        uncertainty: The estimator's uncertainty (``NOT_MEASURED`` where an earlier stage decided).
        screen: The reading of the greedy step by the rules' greedy-only estimator (``TokenCascade``), if any.
        reason: Why it decided (``None`` for a step that states the answer, where the loop ends without a gate).
    """

    output: SelfAwareOutput
    uncertainty: Uncertainty
    screen: Uncertainty | None
    reason: GateReason | None
    retrieve: bool


class Gate:
    """The gate of one configuration over one back-end's calls."""

    def __init__(self, config: SeaKRConfig, calls: ModelCalls) -> None:
        self.config = config
        self.calls = calls
        self.rules = config.rule_set

    @property
    def staged(self) -> bool:
        """Whether steps are read in stages (greedy first, samples only when a decision needs them)."""
        cfg = self.config
        return cfg.mode == "multi_hop" and cfg.retrieve == "uncertain" and self.rules.reads().greedy_step

    def needs_retrieval(self, text: str, u: Uncertainty) -> bool:
        """Whether :meth:`reason` retrieves."""
        return self.reason(text, u).retrieves

    def reason(self, text: str, u: Uncertainty) -> GateReason:
        """The paper's gate on a measured step, as a ``GateReason``: an empty step, or an uncertainty above delta
        (single-hop: not below it), retrieves; ``config.retrieve`` can replace the gate by always or never."""
        cfg = self.config
        if cfg.retrieve == "always":
            return GateReason.ALWAYS_RETRIEVE
        if cfg.retrieve == "never":
            return GateReason.NEVER_RETRIEVE
        if not text.strip():
            return GateReason.EMPTY_GENERATION
        unsure = not u.value < cfg.delta if cfg.mode == "single_hop" else u.value > cfg.delta
        return GateReason.UNCERTAIN if unsure else GateReason.CONFIDENT

    def read(self, state: QuestionState, call: Call, *, stop_at_answer: bool) -> Generator[Any, Any, Reading]:
        """Generate the step of ``call`` (prompt, sampling with k samples) for ``state`` and decide.
        ``stop_at_answer``: the loop ends at a step that states the answer, so such a step needs no gate (the
        standalone gate, ``SeaKR.assess``, still measures it)."""
        if not self.staged:
            ((out, u),) = yield from self.calls.run(state, [call])
            text = out.greedy.text.strip()
            reason = None if stop_at_answer and has_answer(text) else self.reason(text, u)
            return Reading(out, u, self.calls.screen(out), reason, self.needs_retrieval(text, u))
        prompt, sampling = call
        ((out, _),) = yield from self.calls.run(state, [(prompt, sampling.with_(k=0))])
        text = out.greedy.text.strip()
        screen = self.calls.screen(out)
        if stop_at_answer and has_answer(text):
            return Reading(out, NOT_MEASURED, screen, None, False)
        if not text:
            return Reading(out, NOT_MEASURED, screen, GateReason.EMPTY_GENERATION, True)
        decided = self.rules.read_step(state, text, out)
        if decided is not None:
            return Reading(out, NOT_MEASURED, screen, decided, GateReason(decided).retrieves)
        ((_, u),) = yield from self.calls.run(state, [call])  # the samples; the step stays the greedy text above
        reason = self.reason(text, u)
        return Reading(out, u, screen, reason, reason is GateReason.UNCERTAIN)
