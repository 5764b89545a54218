"""``seakr calibrate`` judges the gate (``evaluation.gate_check``): labels from closed-book and single-retrieval
answers to the calibration questions, a verdict per signal, and, with the ``state-probe`` rule, a linear probe on the
first step's state stored with delta as the rule's learned state; a profile whose gate knows nothing says so once
when SeaKR is built on it."""

import re
import warnings

import numpy as np
from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from test_calibration import is_step, parse

from seakr_integrations import calibration
from seakr_integrations.calibration import UninformativeGateWarning, warn_uninformative
from seakr_integrations.evaluation.calibrate import calibrate_delta
from seakr_integrations.evaluation.probe_learning import ProbeNotTrainedWarning
from seakr_integrations.evaluation.questions import Question
from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.rules import StateProbe

QUESTIONS = [Question(f"q{i}", f"Where is landmark {i}?", ("France",)) for i in range(40)]
CONFIG = SeaKRConfig(k=4, num_exemplars=0, max_tokens=10, delta=-6.5, rules=())


def model(knows: bool, helped_every: int = 2):
    """Retrieval helps on even landmarks (closed-book they answer Spain); the first step's spread and its state say
    so when ``knows``, and nothing when not."""
    noise = np.random.default_rng(0)

    def respond(prompt, config):
        question, context, answer = parse(prompt)
        i = int(question.split()[-1].rstrip("?"))
        if not is_step(config):
            wrong = i % helped_every == 0 and not context
            return Reply("So the answer is Spain" if wrong else "So the answer is France", spread=0.5)
        spread = (1.0 if i % 2 == 0 else 0.1) if knows else float(noise.random())
        return Reply(f"Landmark {i} is in France", spread=spread)

    def scoring(sequence):
        text = "".join(chr(t) for t in sequence if t)
        i = int(re.findall(r"landmark (\d+)\?", text)[-1])
        state = np.zeros(16)
        state[0] = (1.0 if i % 2 == 0 else -1.0) if knows else noise.normal()
        return state + noise.normal(scale=0.3, size=16)

    return ScriptedBackend(respond, scoring=scoring)


def calibrate(knows: bool, helped_every: int = 2):
    retriever = FakeRetriever(default=[passage("p1")])
    backend = model(knows, helped_every)
    config = CONFIG.with_(rules=(StateProbe(),))  # the rule learns its probe
    return calibrate_delta(backend, retriever, QUESTIONS, config, objective="rate", target_rate=0.5)


def test_a_gate_that_knows_and_one_that_does_not():
    knowing = calibrate(knows=True)
    learned = knowing.rules["state-probe"]  # the probe's verdict is part of what the rule learned
    assert list(knowing.verdict) == ["eigenscore"] and learned["verdict"]["signal"] == "state probe"
    for v in (knowing.verdict["eigenscore"], learned["verdict"]):
        assert v["informative"] and v["auroc"] > 0.9 and v["helps"] == 20 and v["questions"] == 40, v
    assert knowing.verdict["eigenscore"]["harm_rate"] == 0.0
    assert learned["probe"]["layer"] == 1 and learned["probe"]["model"] == "scripted"
    assert 0.0 <= learned["threshold"] <= 1.0
    (rule,) = calibration.resolve_rules(knowing, SeaKRConfig(rules=(StateProbe(),)))
    assert rule.reads().greedy_step and rule.probe.probability(np.eye(16)[0]) > 0.5
    blind = calibrate(knows=False)
    assert not blind.verdict["eigenscore"]["informative"]
    assert not blind.rules["state-probe"]["verdict"]["informative"]


def test_an_uninformative_gate_says_so_once(monkeypatch):
    monkeypatch.setattr(calibration, "_warned", set())
    blind = calibrate(knows=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_uninformative(blind, SeaKRConfig())
        warn_uninformative(blind, SeaKRConfig())
        warn_uninformative(blind, SeaKRConfig(retrieve="always"))  # no gate: nothing to say
    said = [w for w in caught if issubclass(w.category, UninformativeGateWarning)]
    assert len(said) == 1 and "the gate's eigenscore carries no information" in str(said[0].message)
    assert "mode='single_hop', retrieve='always'" in str(said[0].message)
    (probe,) = calibration.resolve_rules(blind, SeaKRConfig(rules=(StateProbe(),)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_uninformative(blind, SeaKRConfig(rules=(probe,)))  # the probe gates: its own verdict is the one said
    (said,) = [w for w in caught if issubclass(w.category, UninformativeGateWarning)]
    assert "the gate's state probe carries no information" in str(said.message)


def test_too_few_helped_questions_store_no_probe_and_keep_delta():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        profile = calibrate(knows=True, helped_every=10)  # retrieval helps on 4 of 40
    said = [str(w.message) for w in caught if issubclass(w.category, ProbeNotTrainedWarning)]
    assert said == [
        "no state probe stored: retrieval helped on 4 of 40 calibration questions: a probe needs at least 5 questions "
        "with each label; calibrate on more questions (100 HotpotQA questions gave 27 where it helped)"
    ]
    assert "state-probe" not in profile.rules and profile.verdict["eigenscore"]["helps"] == 4
    assert np.isfinite(profile.delta)
