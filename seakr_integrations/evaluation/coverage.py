"""Does this index hold this dataset's passages?  A cheap check before hours of evaluation.

A mismatched index runs without error and produces meaningless numbers; searching for a sample of the questions'
supporting titles tells quickly whether the index and the dataset belong together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from seakr_integrations.evaluation.questions import Question
from seakr_integrations.retrieval.passage import Retriever


@dataclass(frozen=True)
class Coverage:
    """How many of the sampled supporting titles the index returned for a search on the title itself.

    Attributes:
        titles: Supporting titles searched.
        found: Of those, how many came back (exact title, case-insensitive) in the top ``k``.
        missing: Up to five titles that did not come back, for the error message.
    """

    titles: int
    found: int
    missing: tuple[str, ...] = ()

    @property
    def fraction(self) -> float:
        return self.found / self.titles if self.titles else 1.0


def index_coverage(questions: Sequence[Question], retriever: Retriever, *, sample: int = 20, k: int = 10) -> Coverage:
    """Search the supporting titles of the first ``sample`` questions that have them; count those found.

    Questions without supporting titles (NQ-open, user files) are not checked; if none has them the coverage is
    complete by definition (``titles == 0``).
    """
    titles = [t for q in [q for q in questions if q.supporting_titles][:sample] for t in q.supporting_titles]
    titles = list(dict.fromkeys(titles))
    found, missing = 0, []
    for title in titles:
        hits = retriever.search(title, k)
        if any(p.title.casefold() == title.casefold() for p in hits):
            found += 1
        elif len(missing) < 5:
            missing.append(title)
    return Coverage(len(titles), found, tuple(missing))
