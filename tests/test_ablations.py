"""The paper's Table 3 ablations as settings of the one loop: always / never retrieve, no re-ranking (the
``KeepFirstResult`` rule), one final."""

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from test_reasoner import CONFIG, final, is_step, parse

from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.rules import KeepFirstResult
from seakr_integrations.uncertainty.prompt import PROBE_SUFFIX

DOCS = [passage("p1"), passage("p2"), passage("p3")]
SPREADS = {"text of p1": 0.5, "text of p2": 0.2, "text of p3": 0.8}


def respond(first_spread: float):
    """A first step with the given spread; with a passage, one sentence whose spread depends on the passage."""

    def reply(prompt, config):
        _, context, answer = parse(prompt)
        if not is_step(config):
            return final("From the context. So the answer is France" if context else "So the answer is Germany")
        if not answer and not context:
            return Reply("The Eiffel Tower stands in Germany", spread=first_spread, low=("Germany",))
        if not answer:
            return Reply("It is in France", spread=SPREADS.get(context[-1], 0.7))
        return Reply("So the answer is France", spread=1.0)

    return reply


def run(first_spread: float, **changes):
    backend, retriever = ScriptedBackend(respond(first_spread)), FakeRetriever(default=DOCS)
    result = SeaKR(backend, retriever, CONFIG.with_(**changes)).answer("Which country is the Eiffel Tower in?")
    return result, backend, retriever


def test_the_default_gate_accepts_a_certain_step_and_always_retrieves_anyway():
    result, _, retriever = run(0.0)
    assert result.steps[0].decision == "accept" and retriever.queries == []
    result, _, retriever = run(0.0, retrieve="always")
    assert result.steps[0].decision == "retrieve" and len(retriever.queries) == 1
    assert result.steps[0].chosen_passage_id == "p2"


def test_never_retrieve_accepts_an_uncertain_step():
    result, _, retriever = run(1.0, retrieve="never")
    assert result.steps[0].decision == "accept" and result.steps[0].uncertainty.value > CONFIG.delta
    assert retriever.queries == [] and result.passages == []


def test_without_reranking_the_search_engines_first_passage_is_kept_after_one_call():
    result, backend, _ = run(1.0)
    assert result.steps[0].chosen_passage_id == "p2"  # SeaKR: the least uncertain
    result, backend, _ = run(1.0, rules=(KeepFirstResult(),))
    step = result.steps[0]
    assert [(c.passage.id, c.rank, c.chosen) for c in step.candidates] == [("p1", 1, True)]
    assert step.chosen_passage_id == "p1" and step.accepted == "It is in France"
    assert len(backend.batches[1]) == 1  # one generation with the first passage, not N


@pytest.mark.parametrize("strategy", ["rationales", "knowledge"])
def test_one_final_strategy_generates_only_that_answer(strategy):
    chosen, backend, _ = run(1.0)
    assert set(chosen.finals) == {"rationales", "knowledge"}
    result, backend, _ = run(1.0, final_strategy=strategy)
    assert set(result.finals) == {strategy} and result.strategy == strategy
    assert result.answer == result.finals[strategy].answer
    assert len(backend.batches[-1]) == 1
    assert result.config["final_strategy"] == strategy


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"retrieve": "sometimes"}, "retrieve='sometimes'"),
        ({"rules": "paper,keep-first"}, "unknown rule 'keep-first' \\(did you mean 'keep-first-result'\\?\\)"),
        ({"final_strategy": "both"}, "final_strategy='both'"),
    ],
)
def test_bad_ablation_settings_say_what_to_choose(changes, message):
    with pytest.raises(ValueError, match=message):
        SeaKRConfig(**changes)


def test_results_count_searches_and_generated_tokens():
    result, backend, retriever = run(1.0)
    assert result.searches == len(retriever.queries) == 1
    assert result.generated_tokens == sum(o.generated_tokens() for o in backend.outputs)
    assert result.generated_tokens > 0 and result.to_dict()["generated_tokens"] == result.generated_tokens
    result, _, retriever = run(1.0, retrieve="never")
    assert result.searches == 0


def test_the_prompt_estimator_asks_the_model_after_every_call_and_reads_its_yes_or_no():
    """The paper's "Prompt" ablation: the gate and the re-ranking read 1 - P(yes) of a probe after each call."""
    inner = respond(0.0)  # by EigenScore the first step is certain: the gate would accept it

    def reply(prompt, config):
        if prompt.endswith(PROBE_SUFFIX):
            _, context, _ = parse(prompt)
            return Reply("Yes" if context == ["text of p3"] else "No")  # knows only with p3 (EigenScore: p2)
        return inner(prompt, config)

    backend, retriever = ScriptedBackend(reply), FakeRetriever(default=DOCS)
    result = SeaKR(backend, retriever, CONFIG.with_(estimator="prompt", delta=0.5)).answer("Where is the tower?")
    first = result.steps[0]
    assert first.decision == "retrieve" and first.uncertainty.estimator == "prompt" and first.uncertainty.value == 1.0
    assert [(c.passage.id, c.uncertainty.value) for c in first.candidates] == [("p1", 1.0), ("p2", 1.0), ("p3", 0.0)]
    assert first.chosen_passage_id == "p3"
    probes = [b for b in backend.batches if all(p.endswith(PROBE_SUFFIX) for p, _ in b)]
    calls = [b for b in backend.batches if b not in probes]
    assert len(probes) == len(calls) and [len(b) for b in probes] == [len(b) for b in calls]  # one probe per call
    for (probe, config), (prompt, _) in zip(probes[0], calls[0], strict=True):
        assert probe.startswith(prompt) and config.max_tokens == SeaKR.PROBE_TOKENS  # shares the call's prefix
    assert result.lm_calls == 2 * sum(len(b) for b in calls)
