"""AUROC from ranks, its bootstrap interval, and the closed-book method that records every estimator's score."""

import math

import numpy as np
import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend
from test_reasoner import CONFIG

from seakr_integrations.evaluation.auroc import auroc, auroc_interval, bootstrap
from seakr_integrations.evaluation.methods import make_method


def test_auroc_perfect_chance_inverse_and_ties():
    assert auroc([0.1, 0.2, 0.8, 0.9], [False, False, True, True]) == 1.0
    assert auroc([0.9, 0.8, 0.2, 0.1], [False, False, True, True]) == 0.0
    assert auroc([0.5, 0.5, 0.5, 0.5], [False, True, False, True]) == 0.5
    # one wrong answer ranks above both right ones, the other ties with one: (1 + 1 + 1 + 0.5) / 4
    assert auroc([0.1, 0.3, 0.3, 0.9], [False, False, True, True]) == pytest.approx(0.875)
    assert auroc([1.0, math.inf, 2.0], [False, True, False]) == 1.0  # an empty generation ranks highest


@pytest.mark.parametrize(
    ("scores", "wrong", "message"),
    [
        ([0.1, 0.2], [True], "2 scores for 1 labels"),
        ([0.1, math.nan], [True, False], "NaN"),
    ],
)
def test_auroc_bad_input(scores, wrong, message):
    with pytest.raises(ValueError, match=message):
        auroc(scores, wrong)


def test_auroc_needs_both_classes():
    assert math.isnan(auroc([0.1, 0.2], [False, False]))
    assert math.isnan(auroc([0.1, 0.2], [True, True]))


def test_interval_holds_the_point_and_is_repeatable():
    rng = np.random.default_rng(3)
    labels = rng.random(80) < 0.4
    scores = labels + rng.normal(0, 1.0, 80)
    point, low, high = auroc_interval(scores, labels)
    assert point == auroc(scores, labels) and low < point < high
    assert 0.5 < point < 1.0 and (point, low, high) == auroc_interval(scores, labels)
    # a paired difference of a signal with itself is exactly zero on every resample
    assert bootstrap(lambda i: auroc(scores[i], labels[i]) - auroc(scores[i], labels[i]), labels) == (0.0, 0.0, 0.0)


def test_interval_without_a_resample_holding_both_classes_is_nan():
    point, low, high = auroc_interval([0.1, 0.9], [False, True], draws=0)
    assert point == 1.0 and math.isnan(low) and math.isnan(high)


def test_closed_book_method_records_each_estimators_score():
    def respond(prompt, config):
        hard = "hard" in prompt.rsplit("Question:", 1)[1]
        if prompt.endswith("Reply:"):  # the prompt estimator's probe
            return Reply("No" if hard else "Yes")
        return Reply("So the answer is Paris." if not hard else "So the answer is Rome.", spread=2.0 if hard else 0.1)

    method = make_method("closed-book", ScriptedBackend(respond), FakeRetriever(), CONFIG)
    easy, hard = method.answer_many(["An easy one?", "A hard one?"])
    assert (easy.prediction.lower(), hard.prediction.lower()) == ("paris", "rome")
    assert easy.retrievals == 0 and easy.lm_calls == 2 and easy.generated_tokens > 0  # the call and its probe
    assert set(easy.trace["uncertainty"]) >= {"eigenscore", "perplexity", "multi_perplexity", "ln_entropy", "prompt"}
    assert hard.trace["uncertainty"]["eigenscore"] > easy.trace["uncertainty"]["eigenscore"]
    assert (easy.trace["uncertainty"]["prompt"], hard.trace["uncertainty"]["prompt"]) == (0.0, 1.0)
    assert method.describe()["seakr"]["mode"] == "single_hop"


def test_closed_book_with_the_prompt_estimator_probes_once():
    def respond(prompt, config):
        return Reply("Yes") if prompt.endswith("Reply:") else Reply("So the answer is Paris.", spread=0.1)

    backend = ScriptedBackend(respond)
    method = make_method("closed-book", backend, FakeRetriever(), CONFIG.with_(estimator="prompt"))
    (answer,) = method.answer_many(["An easy one?"])
    assert answer.trace["uncertainty"]["prompt"] == 0.0
    assert [len(b) for b in backend.batches] == [1, 1]  # the call and one probe, not two
