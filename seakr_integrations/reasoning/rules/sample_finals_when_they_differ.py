"""The two final answers are sampled only when the choice between them depends on their samples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from seakr_integrations.reasoning.rules.base import Decision, FinalReading, Rule


@dataclass(frozen=True)
class SampleFinalsWhenTheyDiffer(Rule):
    """Generate both final answers greedily, and draw each answer's samples only when both are known and differ:
    the same answers as the paper's (the same calls with the same seeds), at a fraction of the cost.  The paper
    samples every final call, including a first call that has to be asked again with " So the answer is" (298 of
    300 HotpotQA questions), whose samples then go unread; the two answers agree on about half of the questions."""

    name: ClassVar[str] = "sample-finals-when-they-differ"
    decision: ClassVar[Decision] = "how to answer"
    order: ClassVar[float] = 150

    def final_reading(self, reading: FinalReading) -> FinalReading:
        return "deciding" if reading == "sampled" else reading
