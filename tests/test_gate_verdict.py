"""The gate's verdict (``evaluation.verdict``): AUROC for "retrieval helps" with its interval, the retrieval rate on
questions delta was not set on, and the harm rate; an uninformative signal is called so."""

import numpy as np
import pytest

from seakr_integrations.evaluation.verdict import gate_verdict


def test_a_signal_that_knows_and_one_that_does_not():
    rng = np.random.default_rng(0)
    n = 200
    helps = rng.random(n) < 0.3
    cot = np.where(helps, 0.0, rng.random(n))
    single = np.where(helps, 1.0, cot)
    knows = helps + rng.normal(scale=0.5, size=n)
    verdict = gate_verdict("eigenscore", knows, cot, single, target_rate=0.5)
    assert verdict.informative and verdict.auroc > 0.8 and verdict.auroc_low > 0.5
    assert verdict.realized_rate == pytest.approx(0.5, abs=0.05) and verdict.helps == helps.sum()
    noise = gate_verdict("eigenscore", rng.normal(size=n), cot, single)
    assert not noise.informative and noise.auroc_low < 0.5 < noise.auroc_high and noise.realized_rate is None
    assert "carries no information" in noise.summary() and "carries information" in verdict.summary()


def test_harm_counts_right_closed_book_answers_turned_wrong():
    verdict = gate_verdict("x", [0.1, 0.2, 0.3, float("inf")], [1.0, 1.0, 0.0, 0.0], [0.0, 1.0, 1.0, 0.0])
    assert verdict.harm_rate == 0.25 and verdict.helps == 1


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="one reading and two answers"):
        gate_verdict("x", [0.1, 0.2], [1.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="at least 4"):
        gate_verdict("x", [0.1], [1.0], [0.0])
