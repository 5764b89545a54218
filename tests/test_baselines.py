"""The baselines on SeaKR's machinery: CoT, single retrieval, IRCoT and FLARE, with scripted model replies."""

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from test_reasoner import CONFIG, is_step, parse

from seakr_integrations.evaluation.methods import make_method
from seakr_integrations.reasoning.baselines import FLARE, ChainOfThought, IRCoT, SingleRetrieval

QUESTION = "Which country is the Eiffel Tower in?"
DOCS = [passage("p1"), passage("p2"), passage("p3")]


def whole_chain(prompt, config):
    """A whole-chain call: right with passages, wrong without."""
    _, context, _ = parse(prompt)
    return Reply("It stands in Paris. So the answer is France" if context else "So the answer is Germany")


def test_cot_answers_in_one_call_without_retrieval():
    backend, retriever = ScriptedBackend(whole_chain), FakeRetriever(default=DOCS)
    result = ChainOfThought(backend, retriever, CONFIG).answer(QUESTION)
    assert result.answer == "Germany" and result.strategy == "chain" and set(result.finals) == {"chain"}
    assert retriever.queries == [] and result.searches == 0 and result.lm_calls == 1
    assert not is_step(backend.batches[0][0][1])  # the whole chain: no one-sentence stop


def test_single_retrieval_searches_the_question_once():
    backend, retriever = ScriptedBackend(whole_chain), FakeRetriever(default=DOCS)
    result = SingleRetrieval(backend, retriever, CONFIG).answer(QUESTION)
    assert retriever.queries == [(QUESTION, CONFIG.n_candidates)] and result.searches == 1
    assert result.answer == "France" and [p.id for p in result.passages] == ["p1", "p2", "p3"]
    assert "[1] text of p1" in backend.prompts[0] and result.lm_calls == 1
    # max_docs is SeaKR's stopping rule (two by default): a baseline's prompt keeps its own window of five
    result = SingleRetrieval(ScriptedBackend(whole_chain), retriever, CONFIG.with_(max_docs=2)).answer(QUESTION)
    assert [p.id for p in result.passages] == ["p1", "p2", "p3"]


def test_ircot_queries_with_each_sentence_and_accumulates_passages():
    found = {QUESTION: [passage("p1")], "The tower is in Paris": [passage("p2"), passage("p1")]}

    def respond(prompt, config):
        _, context, answer = parse(prompt)
        if not answer:
            return Reply("The tower is in Paris")
        return Reply("So the answer is France")

    backend = ScriptedBackend(respond)
    retriever = FakeRetriever(results=found)
    result = IRCoT(backend, retriever, CONFIG).answer(QUESTION)
    assert [q for q, _ in retriever.queries] == [QUESTION, "The tower is in Paris"]
    assert [p.id for p in result.passages] == ["p1", "p2"]  # accumulated, no duplicate
    assert result.answer == "France" and result.stop_reason == "answer found" and result.searches == 2
    assert [s.decision for s in result.steps] == ["retrieve", "retrieve", "retrieve"]


def test_flare_retrieves_only_for_a_low_probability_sentence_and_regenerates_it():
    def respond(prompt, config):
        _, context, answer = parse(prompt)
        if not answer and not context:
            return Reply("The Eiffel Tower stands in Germany", low=("Germany",))
        if not answer:
            return Reply("The Eiffel Tower stands in France")
        return Reply("So the answer is France")

    backend, retriever = ScriptedBackend(respond), FakeRetriever(default=DOCS)
    flare = FLARE(backend, retriever, CONFIG)
    flare.threshold = 0.6  # the scripted low words have probability 0.5
    result = flare.answer(QUESTION)
    first, second = result.steps
    assert first.decision == "retrieve" and first.masked_words == ["Germany"]
    assert retriever.queries == [("Eiffel Tower stands", CONFIG.n_candidates)]
    assert first.accepted == "The Eiffel Tower stands in France"  # regenerated from the results
    assert second.decision == "accept" and result.answer == "France" and result.searches == 1
    # at FLARE's default threshold 0.4 a probability of 0.5 is confident enough: no retrieval at all
    retriever = FakeRetriever(default=DOCS)
    assert FLARE(ScriptedBackend(respond), retriever, CONFIG).answer(QUESTION).searches == 0


def test_a_chain_that_never_states_the_answer_is_asked_for_it():
    def respond(prompt, config):
        if prompt.endswith("So the answer is"):
            return Reply(" France.")  # the forced " So the answer is" continuation
        if is_step(config):
            return Reply("The tower is tall")
        return Reply("The tower stands in Paris")  # a sentence that states no answer

    result = IRCoT(ScriptedBackend(respond), FakeRetriever(default=DOCS), CONFIG.with_(max_steps=2)).answer(QUESTION)
    assert result.stop_reason == "step limit" and result.answer == "France" and result.finals["chain"].forced


@pytest.mark.parametrize("name", ["cot", "single-retrieval", "ircot", "flare"])
def test_baselines_by_name_ask_for_the_greedy_continuation_only(name):
    """Nobody reads a baseline's uncertainty: every call is greedy alone (no samples, no read-out)."""
    backend = ScriptedBackend(whole_chain)
    method = make_method(name, backend, FakeRetriever(default=DOCS), CONFIG)
    [answer] = method.answer_many([QUESTION])
    assert answer.prediction in ("France", "Germany") and answer.lm_calls >= 1
    assert backend.batches and all(config.k == 0 for batch in backend.batches for _, config in batch)
    assert all(o.samples == [] for o in backend.outputs)
    steps = answer.trace["steps"]
    assert all(s["uncertainty"]["estimator"] == "none" for s in steps)
