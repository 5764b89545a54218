"""The token gate baseline: one closed-book chain, one retrieval when its greedy reading is above a threshold fitted
on training results; and the fit itself."""

import json

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from test_reasoner import CONFIG, parse

from seakr_integrations.evaluation.methods import make_method
from seakr_integrations.evaluation.token_gate import fit_token_gate
from seakr_integrations.reasoning.baselines import GREEDY_READING, ChainOfThought, TokenGate
from seakr_integrations.reasoning.decisions import GateReason

QUESTION = "Which country is the Eiffel Tower in?"
DOCS = [passage("p1"), passage("p2"), passage("p3")]


def chain(prompt, config):
    """Unsure ("Germany" at probability 0.5) without passages, right with them."""
    _, context, _ = parse(prompt)
    if context:
        return Reply("It stands in Paris. So the answer is France")
    return Reply("So the answer is Germany", low=("Germany",))


def test_cot_records_its_greedy_reading():
    result = ChainOfThought(ScriptedBackend(chain), FakeRetriever(default=DOCS), CONFIG).answer(QUESTION)
    (step,) = result.steps
    assert step.screen.estimator == GREEDY_READING and step.screen.value == pytest.approx(0.5)
    assert result.answer == "Germany" and result.searches == 0 and result.lm_calls == 1


@pytest.mark.parametrize(("threshold", "answer", "searches"), [(0.4, "France", 1), (0.5, "Germany", 0)])
def test_it_retrieves_once_only_above_its_threshold(threshold, answer, searches):
    retriever = FakeRetriever(default=DOCS)
    gate = TokenGate(ScriptedBackend(chain), retriever, CONFIG)
    gate.threshold = threshold
    result = gate.answer(QUESTION)
    assert result.answer == answer and result.searches == searches
    assert result.steps[0].reason == (GateReason.UNSURE_FROM_TOKENS if searches else GateReason.SURE_FROM_TOKENS)
    assert retriever.queries == [(QUESTION, CONFIG.n_candidates)] * searches
    assert result.lm_calls == 1 + searches


def write(path, rows):
    header = {"format": "seakr-eval-results/1", "fingerprint": "x", "config": {}}
    path.write_text("\n".join(json.dumps(r) for r in [header, *rows]) + "\n")


def cot_row(i, reading, f1):
    screen = {"value": reading, "estimator": GREEDY_READING, "num_samples": 0, "num_dropped": 0}
    return {"id": i, "question": i, "f1": f1, "em": f1, "trace": {"steps": [{"screen": screen}]}}


def test_the_fit_keeps_the_cot_answers_below_the_threshold_that_routes_best(tmp_path):
    # q0, q1: sure and right without retrieval; q2, q3: unsure and right only with it; q4 both wrong
    readings = {"q0": 0.1, "q1": 0.2, "q2": 0.7, "q3": 0.9, "q4": 0.3}
    cot = {"q0": 1.0, "q1": 1.0, "q2": 0.0, "q3": 0.0, "q4": 0.0}
    write(tmp_path / "cot.jsonl", [cot_row(i, readings[i], cot[i]) for i in readings])
    write(tmp_path / "single-retrieval.jsonl", [{"id": i, "f1": float(i in ("q2", "q3"))} for i in readings])
    fit = fit_token_gate(tmp_path)
    assert fit.threshold == 0.3  # the highest of the best: q4 gains nothing from retrieval
    assert fit.retrieval_rate == pytest.approx(0.4) and fit.f1["routed"] == pytest.approx(0.8)
    assert fit.questions == 5 and fit.estimator == GREEDY_READING


def test_the_fit_names_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="cot.jsonl is missing"):
        fit_token_gate(tmp_path)
    write(tmp_path / "cot.jsonl", [{"id": "q0", "f1": 1.0, "trace": {"steps": []}}])
    write(tmp_path / "single-retrieval.jsonl", [{"id": "q0", "f1": 0.0}])
    with pytest.raises(ValueError, match="no greedy reading .* run `seakr eval --method cot`"):
        fit_token_gate(tmp_path)
    with pytest.raises(ValueError, match="--train-results DIR"):
        make_method("token-gate", ScriptedBackend(chain), FakeRetriever(), CONFIG)


def test_the_method_is_keyed_by_its_fit(tmp_path):
    write(tmp_path / "cot.jsonl", [cot_row("q0", 0.2, 1.0), cot_row("q1", 0.6, 0.0)])
    write(tmp_path / "single-retrieval.jsonl", [{"id": "q0", "f1": 0.0}, {"id": "q1", "f1": 1.0}])
    retriever = FakeRetriever(default=DOCS)
    method = make_method("token-gate", ScriptedBackend(chain), retriever, CONFIG, train_results=tmp_path)
    described = method.describe()
    assert described["method"] == "token-gate" and described["gate"]["threshold"] == 0.2
    (answer,) = method.answer_many([QUESTION])
    assert answer.prediction == "France" and answer.retrievals == 1


def test_an_empty_chain_reads_inf_and_is_routed_to_retrieval(tmp_path):
    write(tmp_path / "cot.jsonl", [cot_row("q0", 0.2, 1.0), cot_row("q1", "inf", 0.0)])
    write(tmp_path / "single-retrieval.jsonl", [{"id": "q0", "f1": 0.0}, {"id": "q1", "f1": 1.0}])
    fit = fit_token_gate(tmp_path)
    assert fit.threshold == 0.2 and fit.retrieval_rate == 0.5 and fit.f1["routed"] == 1.0
