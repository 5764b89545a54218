"""The linear probe (``uncertainty.linear_probe``) and its fitting (``evaluation.probe_fit``): logistic regression
that separates what is separable, a choice of layer by inner cross-validation that finds the informative layer,
AUROC as the rank statistic, and plain-number storage."""

import json
from dataclasses import replace

import numpy as np
import pytest

from seakr_integrations.evaluation.auroc import auroc
from seakr_integrations.evaluation.probe_fit import choose_and_fit, fit_logistic
from seakr_integrations.uncertainty.linear_probe import LinearProbe


def test_auroc_is_the_rank_statistic():
    assert auroc([0.1, 0.2, 0.9, 0.8], [False, False, True, True]) == 1.0
    assert auroc([0.9, 0.8, 0.1, 0.2], [False, False, True, True]) == 0.0
    assert auroc([0.5, 0.5], [False, True]) == 0.5  # a tie counts half
    assert np.isnan(auroc([0.1, 0.2], [True, True]))


def test_logistic_regression_separates_a_separable_label():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 5))
    y = (x[:, 2] > 0).astype(float)
    w, b = fit_logistic(x, y, penalty=1.0)
    assert np.argmax(np.abs(w)) == 2 and auroc(x @ w + b, y.astype(bool)) > 0.99


def test_a_state_wider_than_the_questions_takes_the_same_newton_steps_through_the_rows():
    """More dimensions than questions (a hidden state against a calibration set) solves each step by the rows'
    n x n system; it must land where the full d x d solve lands."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 120))
    y = ((x[:, 0] + rng.normal(size=40)) > 0.5).astype(float)
    for penalty in (0.1, 10.0):
        w, b = fit_logistic(x, y, penalty)
        a = np.hstack([x, np.ones((40, 1))])
        full = np.zeros(121)
        reg = np.append(np.full(120, penalty), 0.0)
        for _ in range(50):
            p = 1 / (1 + np.exp(-(a @ full)))
            full -= np.linalg.solve(
                (a * (p * (1 - p))[:, None]).T @ a + np.diag(reg + 1e-9), a.T @ (p - y) + reg * full
            )
        np.testing.assert_allclose(w, full[:-1], atol=1e-8)
        assert b == pytest.approx(full[-1], abs=1e-8)


def test_the_inner_choice_finds_the_layer_that_knows_and_the_probe_round_trips():
    rng = np.random.default_rng(1)
    n, layers, width = 160, 4, 12
    labels = rng.random(n) < 0.4
    data = rng.normal(size=(n, layers, width))
    data[:, 2, 0] += 2.0 * labels  # only layer 2 carries the label
    probe, choice = choose_and_fit(
        {"mlp": data},
        labels,
        np.arange(n) % 4,
        layers=range(layers),
        label="retrieval helps",
        trained_on={"lines": "test"},
    )
    assert (choice.layer, choice.source) == (2, "mlp") and choice.inner_auroc > 0.8
    assert auroc(probe.probabilities(data[:, 2]), labels) > 0.8
    probe = replace(probe, model="smollm2")  # a stored probe says the model it was trained on
    again = LinearProbe.from_dict(json.loads(json.dumps(probe.to_dict())))
    assert again == probe and again.probability(data[0, 2]) == pytest.approx(probe.probability(data[0, 2]))
    assert again.model == "smollm2-135m-instruct" and again.width == probe.to_dict()["width"] == width
    with pytest.raises(ValueError, match=r"the field 'model' is missing.*seakr calibrate --rules default,state-probe"):
        LinearProbe.from_dict({k: v for k, v in probe.to_dict().items() if k != "model"})  # stored without: not guessed
    unnamed = replace(probe, model=None)  # a probe built in code may name no model: it reads back as it was
    assert LinearProbe.from_dict(unnamed.to_dict()) == unnamed


def test_bad_probes_and_inputs_are_refused():
    with pytest.raises(ValueError, match="one length"):
        LinearProbe(1, "mlp", "x", (0.0,), (1.0, 1.0), (1.0,), 0.0, 1.0)
    with pytest.raises(ValueError, match="finite"):
        LinearProbe(1, "mlp", "x", (0.0,), (1.0,), (float("nan"),), 0.0, 1.0)
    probe = LinearProbe(1, "mlp", "x", (0.0,), (1.0,), (1.0,), 0.0, 1.0)
    with pytest.raises(ValueError, match="width 1"):
        probe.probabilities(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="not a stored linear probe"):
        LinearProbe.from_dict({"layer": 1})
    with pytest.raises(ValueError, match="same 'x' label"):
        choose_and_fit({"mlp": np.zeros((4, 1, 2))}, [True] * 4, [0, 0, 1, 1], layers=[0], label="x", trained_on={})
