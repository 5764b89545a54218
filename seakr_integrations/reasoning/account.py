"""A short readable account of what SeaKR decided for one question, from its trace.

``seakr ask`` prints it under the answer, so a first run shows what SeaKR is for without ``--trace``.  It reads only
the trace (``SeaKRResult``), so it works on a result loaded from a results file too.
"""

from __future__ import annotations

import math

from seakr_integrations.quoting import quoted
from seakr_integrations.reasoning.answer import is_unknown
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.records import StepTrace, StopReason
from seakr_integrations.reasoning.trace import SeaKRResult
from seakr_integrations.uncertainty.record import Uncertainty


def _unread(u: Uncertainty) -> bool:
    """No reading taken (a call without samples, a step decided before them, a passage kept without re-ranking)."""
    return u.value is None or math.isnan(u.value)


def _u(u: Uncertainty) -> str:
    if _unread(u):
        return "U n/a"
    return "U inf (it wrote nothing)" if math.isinf(u.value) else f"U {u.value:.2f}"


_BEFORE_SAMPLES = {
    GateReason.UNSUPPORTED_CLAIM: "it names something no kept passage backs",
    GateReason.UNCOVERED_ENTITY: "an entity the answer needs (compared or bridge) has no passage yet",
    GateReason.UNSURE_FROM_TOKENS: "unsure from its tokens ({doubt}, above the band)",
}
"""The retrievals decided before any sample is drawn (``reasoning/gate.py``), in words."""


def _step_line(step: StepTrace, delta: float | None, gate: str) -> str:
    than = "" if delta is None else f" {'>' if step.decision == 'retrieve' else '<='} delta {delta:.2f}"
    head = f"step {step.index + 1}: "
    if step.reason == GateReason.QUESTION_FIRST:
        if step.error:
            return head + f"searched the question first -> the search failed ({step.error})"
        kept = ", ".join(quoted(c.passage.title or c.passage.id, 40) for c in step.candidates if c.chosen)
        return head + f"searched the question first -> kept {kept or 'nothing'}"
    verdict = {"always": "searches at every step", "never": "never searches"}.get(gate, "uncertain")
    if step.decision == "answer":
        said = quoted(step.pseudo_generation.strip(), 80)
        measured = f" ({_u(step.uncertainty)}{than})" if not _unread(step.uncertainty) else ""
        return head + f"it states the answer{measured}: {said}"
    doubt = f"1 - min p {step.screen.value:.2f}" if step.screen is not None else "1 - min p n/a"
    if step.decision == "accept":
        sure = {
            GateReason.SURE_FROM_TOKENS: f"sure from its tokens ({doubt}, below the band)",
            GateReason.SUPPORTED_CLAIM: "every name it states is in a kept passage",
        }.get(step.reason, f"certain enough ({_u(step.uncertainty)}{than})")
        return head + sure + ", kept its own step: " + quoted((step.accepted or step.pseudo_generation).strip(), 80)
    why = f"{verdict} ({_u(step.uncertainty)}{than})"
    if not step.pseudo_generation.strip() and gate == "uncertain":
        why = "it wrote an empty step"  # the gate retrieves on an empty step, whatever its U
    elif step.reason in _BEFORE_SAMPLES:
        why = _BEFORE_SAMPLES[step.reason].format(doubt=doubt)
    line = head + f"{why} -> searched for {quoted(step.query or '', 60)}"
    if step.error:
        return line + f" -> the search failed ({step.error})"
    chosen = next((c for c in step.candidates if c.chosen), None)
    if chosen is None:
        return line + " -> found no new passage"
    others = [c for c in step.candidates if not c.chosen]
    why = f"search rank {chosen.rank}"  # rank among all results, not only the new ones
    if not _unread(chosen.uncertainty):  # without re-ranking nothing measures the kept passage's step
        why += f", {_u(chosen.uncertainty)}"
    if others:
        why += "; the other candidates " + ", ".join(_u(c.uncertainty).removeprefix("U ") for c in others)
    return line + f" -> kept {quoted(chosen.passage.title or chosen.passage.id, 60)} ({why})"


def decision_account(result: SeaKRResult) -> str:
    """SeaKR's decisions for one question, one line per step and one for the final answer.

    Example::

        step 1: searched the question first -> kept "Sexual Politics", "Political sexuality", "Sex and politics"
        step 2: it names something no kept passage backs -> searched for "Kate Millett" -> kept "Kate Millett"
            (search rank 1)
        step 3: it states the answer: "So the answer is Oxford."
        answered from the passages it kept (knowledge): "Oxford"

    (``SeaKRConfig.paper()``: "step 1: uncertain (U -0.41 > delta -1.11) -> searched for ...", and "answered from
    knowledge (U -1.71) rather than rationales (U -1.02)".)
    """
    gate = result.config.get("retrieve", "uncertain")
    delta = result.config.get("delta")
    delta = float(delta) if isinstance(delta, (int, float)) and gate == "uncertain" else None
    lines = [_step_line(step, delta, gate) for step in result.steps]
    if result.stop_reason != StopReason.ANSWER_FOUND:
        lines.append(f"stopped: {result.stop_reason}")
    final = result.finals.get(result.strategy)
    other = next((f for name, f in result.finals.items() if name != result.strategy), None)
    source = {
        "knowledge": "the passages it kept (knowledge)",
        "rationales": "its own reasoning (rationales)",
    }
    if final is not None:
        line = f"answered from {source.get(result.strategy, result.strategy)}"
        if (
            other is not None and _unread(final.uncertainty) and _unread(other.uncertainty)
        ):  # sample-finals-when-they-differ
            said = "no answer" if is_unknown(other.answer) else "the same answer"
            line += f"; {other.strategy} gave {said}, so neither was sampled"
        elif other is not None:
            line += f" ({_u(final.uncertainty)}) rather than {other.strategy} ({_u(other.uncertainty)})"
        elif not _unread(final.uncertainty):
            line += f" ({_u(final.uncertainty)})"
        lines.append(line + f": {quoted(result.answer or '', 80)}")
    return "\n".join(lines)
