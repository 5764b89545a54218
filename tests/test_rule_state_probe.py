"""``StateProbe``: a linear probe on the greedy step's hidden state decides the gate without samples; the vector is
read in the same call as the step; the probe and its threshold come from the profile; a plain server refuses it."""

from dataclasses import replace

import numpy as np
import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend
from rule_support import QUESTION, SMALL, TOWER, is_step

from seakr_integrations.backends.openai_plain import check_sampling
from seakr_integrations.calibration import DeltaProfile, resolve_rules
from seakr_integrations.params import SamplingConfig
from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.rules import StateProbe
from seakr_integrations.uncertainty.linear_probe import LinearProbe

WIDTH = 16
PROBE = LinearProbe(
    1, "mlp", "retrieval helps", (0.0,) * WIDTH, (1.0,) * WIDTH, (4.0,) + (0.0,) * (WIDTH - 1), 0.0, 1.0
)
"""Reads the first dimension: a state with +1 there is unsure (p 0.98), -1 sure (p 0.02)."""


def knowing(sure: bool):
    state = (-1.0 if sure else 1.0,) + (0.0,) * (WIDTH - 1)

    def respond(prompt, config):
        if not is_step(config) or "Context:" in prompt:
            return Reply("So the answer is France.")
        return Reply("The Eiffel Tower is in Paris.", spread=5.0, state=state)

    return respond


def answer(sure: bool, band=(0.5, 0.5)):
    backend = ScriptedBackend(knowing(sure))
    config = SeaKRConfig(**SMALL, rules=(StateProbe(PROBE, band),))
    return SeaKR(backend, FakeRetriever(default=[TOWER]), config).answer(QUESTION), backend


def test_the_probe_decides_without_samples():
    unsure, backend = answer(sure=False)
    assert unsure.steps[0].reason == GateReason.UNSURE_FROM_STATE and unsure.steps[0].decision == "retrieve"
    steps = [c for batch in backend.batches for p, c in batch if is_step(c) and "Context:" not in p]
    assert steps and all(c.k == 0 and c.greedy_vector for c in steps)
    assert not any(c.greedy_vector for batch in backend.batches for _, c in batch if not is_step(c))
    sure, _ = answer(sure=True)
    assert sure.steps[0].reason == GateReason.SURE_FROM_STATE and sure.passages == []
    inside, _ = answer(sure=False, band=(0.01, 0.99))  # p 0.98 inside the band: the samples decide
    assert inside.steps[0].reason == GateReason.UNCERTAIN


def test_the_probe_and_threshold_come_from_the_profile():
    stored = {"probe": PROBE.to_dict(), "threshold": 0.4}
    profile = DeltaProfile("m", 1, "mlp", "eigenscore", 4, -1.0, "rate", rules={"state-probe": stored})
    (rule,) = resolve_rules(profile, SeaKRConfig(rules=(StateProbe(),)))
    assert rule == StateProbe(replace(PROBE, model="m"), (0.4, 0.4))  # trained on the profile's model
    recorded = SeaKRConfig(rules=(rule,)).to_dict()["rules"][0]
    assert recorded == {
        "rule": "state-probe",
        "probe": {"layer": 1, "source": "mlp", "trained_on": {}},
        "band": [0.4, 0.4],
    }
    assert SeaKRConfig(rules=[recorded]).rules == (StateProbe(band=(0.4, 0.4)),)  # the weights stay in the profile
    assert np.isclose(PROBE.probability([1.0] + [0.0] * (WIDTH - 1)), 1 / (1 + np.exp(-4)))


def test_without_a_probe_it_does_nothing_and_a_plain_server_refuses_the_vector():
    assert not StateProbe().reads().greedy_step
    assert "seakr calibrate --rules default,state-probe" in StateProbe().uncalibrated()
    with pytest.raises(ValueError, match="greedy_vector=True: the server at http://x is a plain"):
        check_sampling(SamplingConfig(greedy_vector=True), "http://x")
    with pytest.raises(TypeError, match="pass a LinearProbe"):
        StateProbe(probe={"layer": 1})
