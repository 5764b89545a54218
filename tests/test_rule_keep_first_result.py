"""``KeepFirstResult``: the search engine's first new passage is kept, and its step written without samples."""

from rule_support import SMALL, run

from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.rules import KeepFirstResult


def test_the_first_passage_is_kept_after_one_unsampled_call():
    result, backend = run(SeaKRConfig(**SMALL, rules=(KeepFirstResult(),)))
    first = result.steps[0]
    assert [(c.passage.id, c.chosen) for c in first.candidates] == [("p1", True)]
    assert len(backend.batches[1]) == 1 and backend.batches[1][0][1].k == 0
    assert first.accepted == "It is in France, says p1"


def test_the_paper_keeps_the_least_uncertain_of_all_three():
    result, backend = run(SeaKRConfig.paper(**SMALL))
    assert [(c.passage.id, c.chosen) for c in result.steps[0].candidates] == [
        ("p1", False),
        ("p2", True),
        ("p3", False),
    ]
    assert len(backend.batches[1]) == 3 and all(c.k > 0 for _, c in backend.batches[1])
