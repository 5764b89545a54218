"""Every branch of SeaKR's loop with a scripted back-end (SPEC sections 5-7).

The scripted back-end's uncertainty is real EigenScore over vectors whose spread the script sets: spread 0 gives
ln(alpha) ~ -6.91 (below the default delta -6.0, "certain"); any spread >= 0.1 gives a score far above it, growing
with the spread.
"""

import json
import re

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage

from seakr_integrations.calibration import PAPER_DELTA
from seakr_integrations.reasoning import RetrievalError, SeaKR, SeaKRConfig
from seakr_integrations.reasoning.records import FinalTrace
from seakr_integrations.reasoning.seakr_loop import choose as _choose
from seakr_integrations.uncertainty.estimate import Uncertainty

CONFIG = SeaKRConfig.paper(k=4, num_exemplars=0, max_tokens=10, delta=PAPER_DELTA)  # the authors' decisions (parity)


def parse(prompt: str) -> tuple[str, list[str], str]:
    """(question, context passages, answer so far) of a prompt built without exemplars or chat template."""
    head, _, answer = prompt.rpartition("\nAnswer:")
    return head.rsplit("Question: ", 1)[1], re.findall(r"\[\d+\] (.*)\n", head), answer.strip()


def is_step(config) -> bool:
    return ". " in config.stop


def final(text: str = "So the answer is Paris", spread: float = 0.0):
    return Reply(text, spread)


def test_answer_found_before_the_gate_needs_no_retrieval():
    def respond(prompt, config):
        return Reply("So the answer is Paris", spread=5.0) if is_step(config) else final()

    retriever = FakeRetriever()
    backend = ScriptedBackend(respond)
    result = SeaKR(backend, retriever, CONFIG).answer("What is the capital of France?")
    assert retriever.queries == []
    assert [s.decision for s in result.steps] == ["answer"]
    # no steps left once the answer sentence is dropped, and no passages: both final prompts are the same text,
    # so the back-end generates it once and both strategies read that output
    assert [len(b) for b in backend.batches] == [1, 1] and result.lm_calls == 3
    assert result.finals["rationales"].uncertainty == result.finals["knowledge"].uncertainty
    assert result.steps[0].uncertainty.value > CONFIG.delta  # uncertain, yet no retrieval: the answer came first
    assert result.answer == "Paris" and result.stop_reason == "answer found"


def test_uncertain_step_retrieves_and_keeps_the_least_uncertain_passage():
    docs = [passage("p1"), passage("p2"), passage("p3")]
    spreads = {"text of p1": 0.5, "text of p2": 0.2, "text of p3": 0.8}

    def respond(prompt, config):
        _, context, answer = parse(prompt)
        if not is_step(config):
            return final("France is the country. So the answer is France")
        if not context:
            return Reply("The Eiffel Tower stands in Germany", spread=1.0, low=("Germany",))
        if not answer:
            return Reply("It is in France", spread=spreads[context[-1]])
        return Reply("So the answer is France", spread=1.0)

    backend = ScriptedBackend(respond)
    retriever = FakeRetriever(default=docs)
    result = SeaKR(backend, retriever, CONFIG).answer("Which country is the Eiffel Tower in?")

    first = result.steps[0]
    assert first.decision == "retrieve" and first.pseudo_generation == "The Eiffel Tower stands in Germany"
    assert retriever.queries == [("Eiffel Tower stands", 3)]
    assert first.query == "Eiffel Tower stands" and first.masked_words == ["Germany"]
    assert [(c.passage.id, c.rank, c.chosen) for c in first.candidates] == [
        ("p1", 1, False),
        ("p2", 2, True),
        ("p3", 3, False),
    ]
    values = [c.uncertainty.value for c in first.candidates]
    assert values[1] < values[0] < values[2]
    assert first.chosen_passage_id == "p2" and first.accepted == "It is in France"
    assert len(backend.batches[1]) == 3  # the three candidates were scored in one back-end call
    assert result.steps[1].decision == "answer"
    second_prompt = backend.batches[2][0][0]
    assert "Context: [1] text of p2\n" in second_prompt and second_prompt.endswith("Answer: It is in France.")
    assert [p.id for p in result.passages] == ["p2"]
    assert result.answer == "France"


def test_repeated_query_ends_the_loop():
    def respond(prompt, config):
        if not is_step(config):
            return final()
        return Reply("Paris capital France", spread=1.0)

    retriever = FakeRetriever(default=lambda q: [passage(f"p{len(retriever.queries)}")])
    result = SeaKR(ScriptedBackend(respond), retriever, CONFIG).answer("What is the capital of France?")
    assert len(retriever.queries) == 1
    assert result.steps[-1].stop == "repeated query" == result.stop_reason
    assert result.steps[-1].candidates == []


def test_no_new_candidates_ends_the_loop():
    def respond(prompt, config):
        _, context, answer = parse(prompt)
        if not is_step(config):
            return final()
        return Reply(f"Guess number {len(answer)}", spread=1.0)

    retriever = FakeRetriever(default=[passage("p1")])  # the only passage is chosen in round one
    result = SeaKR(ScriptedBackend(respond), retriever, CONFIG).answer("What is it?")
    assert [s.chosen_passage_id for s in result.steps] == ["p1", None]
    assert result.stop_reason == "no new passages"

    empty = FakeRetriever(default=[])
    result = SeaKR(ScriptedBackend(respond), empty, CONFIG).answer("What is it?")
    assert len(result.steps) == 1 and result.stop_reason == "no new passages" and result.passages == []


def test_tie_keeps_search_order_and_empty_generation_scores_inf():
    def respond(prompt, config):
        _, context, answer = parse(prompt)
        if not is_step(config):
            return final()
        if not context:
            return Reply("", spread=0.0, sample_text="something")  # empty greedy step: retrieve even if certain
        if context[-1] == "text of p1":
            return Reply("", spread=0.0, sample_text="x")  # the most certain samples, but an empty step
        return Reply("So the answer is Paris", spread=0.5)

    retriever = FakeRetriever(default=[passage("p1"), passage("p2"), passage("p3")])
    result = SeaKR(ScriptedBackend(respond), retriever, CONFIG).answer("What is the capital of France?")
    step = result.steps[0]
    assert step.decision == "retrieve" and step.uncertainty.value < CONFIG.delta
    assert step.query == "capital France"  # nothing generated: the question's content words
    ranks = [c.rank_value for c in step.candidates]
    assert ranks[0] == float("inf") and ranks[1] == ranks[2]
    assert step.chosen_passage_id == "p2"  # p1 is empty; p2 and p3 tie, so search order decides
    json.loads(result.to_json())  # inf is written as "inf" in strict JSON
    assert result.to_dict()["steps"][0]["candidates"][0]["rank_value"] == "inf"


def test_step_limit_and_passage_limit():
    def certain(prompt, config):
        _, _, answer = parse(prompt)
        return Reply(f"Fact number {len(answer)}", spread=0.0) if is_step(config) else final()

    result = SeaKR(ScriptedBackend(certain), FakeRetriever(), CONFIG.with_(max_steps=3)).answer("Q one?")
    assert [s.decision for s in result.steps] == ["accept"] * 3 and result.stop_reason == "step limit"

    def uncertain(prompt, config):
        _, context, answer = parse(prompt)
        return Reply(f"Guess {len(answer)} words", spread=1.0) if is_step(config) else final()

    counter = iter(range(100))
    retriever = FakeRetriever(default=lambda q: [passage(f"p{next(counter)}")])
    result = SeaKR(ScriptedBackend(uncertain), retriever, CONFIG.with_(max_docs=2)).answer("Q two?")
    assert len(result.passages) == 2 and result.stop_reason == "passage limit"


def _final(strategy, answer, value):
    return FinalTrace(strategy, answer, "", Uncertainty(value, "eigenscore", 4))


@pytest.mark.parametrize(
    ("rationale", "knowledge", "winner"),
    [
        (("Paris", 1.0), ("Rome", 2.0), "rationales"),
        (("Paris", 2.0), ("Rome", 1.0), "knowledge"),
        (("Paris", 1.0), ("Rome", 1.0), "knowledge"),  # tie
        (("unknown", 0.1), ("Rome", 5.0), "knowledge"),
        (("Paris", 5.0), ("Unknown person", 0.1), "rationales"),
        ((None, 0.1), ("Rome", 5.0), "knowledge"),
        (("Paris", 5.0), (None, 0.1), "rationales"),
        ((None, 0.1), (None, 5.0), "knowledge"),
    ],
)
def test_final_choice(rationale, knowledge, winner):
    assert _choose(_final("rationales", *rationale), _final("knowledge", *knowledge)).strategy == winner


def test_final_reasoning_uses_rationales_and_knowledge_and_forces_an_answer():
    def respond(prompt, config):
        question, context, answer = parse(prompt)
        if prompt.endswith("So the answer is"):
            return Reply(" London.", spread=0.3)
        if is_step(config):
            if not context and not answer:
                return Reply("I need to look it up", spread=1.0)
            if not answer:
                return Reply("The city is London", spread=0.2)
            return Reply("So the answer is London", spread=1.0)
        if context == ["The city is London"]:  # from rationales: steps without the answer sentence
            return Reply("It is London. So the answer is London", spread=0.5)
        return Reply("The passage talks about a city", spread=0.0)  # from knowledge: no answer, forced

    backend = ScriptedBackend(respond)
    result = SeaKR(backend, FakeRetriever(default=[passage("p1")]), CONFIG).answer("Which city?")
    rationales, knowledge = result.finals["rationales"], result.finals["knowledge"]
    assert rationales.context == ["step 1"] and not rationales.forced and rationales.answer == "London"
    assert knowledge.context == ["p1"] and knowledge.forced and knowledge.answer == "London"
    assert knowledge.generation == "The passage talks about a city So the answer is London."
    assert knowledge.uncertainty.value > -6  # the forced call's score (spread 0.3), not the first call's
    assert knowledge.uncertainty.value < rationales.uncertainty.value  # spread 0.3 (forced call) vs 0.5
    assert result.strategy == "knowledge"


def test_single_hop_direct_when_certain_else_best_passage():
    config = CONFIG.with_(mode="single_hop")

    def certain(prompt, config):
        return Reply("So the answer is Paris", spread=0.0)

    retriever = FakeRetriever()
    result = SeaKR(ScriptedBackend(certain), retriever, config).answer("capital of france")
    assert retriever.queries == [] and result.strategy == "direct" and result.answer == "Paris"

    replies = {"text of p1": Reply("So the answer is Lyon", 0.5), "text of p2": Reply("So the answer is Paris", 0.2)}

    def uncertain(prompt, config):
        _, context, _ = parse(prompt)
        return replies[context[0]] if context else Reply("So the answer is Nice", 1.0)

    retriever = FakeRetriever(default=[passage("p1"), passage("p2")])
    backend = ScriptedBackend(uncertain)
    result = SeaKR(backend, retriever, config).answer("capital of france")
    assert retriever.queries == [("capital of france", 3)]
    assert result.strategy == "passage" and result.answer == "Paris" and result.steps[0].chosen_passage_id == "p2"
    assert [len(parse(p)[1]) for p, _ in backend.batches[1]] == [1, 1]  # each passage alone, one batch


def test_answer_many_shares_batches_and_matches_one_at_a_time():
    def respond(prompt, config):
        question, context, answer = parse(prompt)
        if not is_step(config):
            return final(f"So the answer is {question[:5]}")
        if not context:
            return Reply(f"Unsure about {question}", spread=1.0)
        return Reply(f"So the answer is {question[:5]}", spread=0.2)

    questions = ["Alpha question?", "Beta question?", "Gamma question?"]
    retriever = FakeRetriever(default=lambda q: [passage(q.split()[-1])])
    backend = ScriptedBackend(respond)
    seakr = SeaKR(backend, retriever, CONFIG)
    together = seakr.answer_many(questions)
    assert max(len({parse(p)[0] for p, _ in batch}) for batch in backend.batches) == 3
    assert len(backend.batches) == 3  # step, candidates, finals: each one batch for all questions
    alone = [seakr.answer(q) for q in questions]
    assert [r.to_dict() for r in together] == [r.to_dict() for r in alone]
    assert [i for i, _ in seakr.iter_answers(questions, max_in_flight=1)] == [0, 1, 2]
    backend.batches.clear()
    twice = seakr.answer_many(questions[:1] * 2)
    assert twice[0].to_dict() == twice[1].to_dict() == alone[0].to_dict()
    assert all(len({p for p, _ in batch}) == len(batch) for batch in backend.batches)  # each prompt generated once


def test_bad_questions_are_rejected_before_any_work():
    backend = ScriptedBackend(lambda p, c: final())
    seakr = SeaKR(backend, FakeRetriever(), CONFIG)
    with pytest.raises(ValueError, match="question 1 is empty"):
        seakr.answer_many(["ok?", "  "])
    with pytest.raises(ValueError, match="question 0 is empty"):
        seakr.answer("")
    with pytest.raises(ValueError, match="list of strings"):
        seakr.answer_many("a question")
    assert backend.batches == []
    with pytest.raises(TypeError, match="search"):
        SeaKR(backend, object(), CONFIG)


def test_retriever_errors_raise_with_the_question_or_are_recorded():
    def respond(prompt, config):
        return Reply("Not sure", spread=1.0) if is_step(config) else final()

    broken = FakeRetriever(error=ConnectionError("index offline"))
    with pytest.raises(RetrievalError, match=r"'Who is X\?'.*ConnectionError: index offline.*answer_without"):
        SeaKR(ScriptedBackend(respond), broken, CONFIG).answer("Who is X?")

    result = SeaKR(ScriptedBackend(respond), broken, CONFIG, on_retrieval_error="answer_without").answer("Who is X?")
    assert result.steps[0].error == "ConnectionError: index offline"
    assert result.stop_reason == "retrieval error" and result.answer == "Paris"
    assert any("index offline" in n for n in result.notes)

    wrong = FakeRetriever(default=[{"id": "p1", "text": "t"}])
    with pytest.raises(RetrievalError, match="must return Passage"):
        SeaKR(ScriptedBackend(respond), wrong, CONFIG).answer("Who is X?")


def test_context_too_long_drops_the_oldest_passage_and_says_so():
    long = [passage(f"p{i}", f"passage {i} " + "x" * 400) for i in range(3)]

    def respond(prompt, config):
        _, context, answer = parse(prompt)
        return Reply(f"Guess {len(answer)} more", spread=1.0) if is_step(config) else final()

    counter = iter(long)
    retriever = FakeRetriever(default=lambda q: [next(counter)])
    backend = ScriptedBackend(respond, max_context=700 + CONFIG.max_tokens + 1)
    result = SeaKR(backend, retriever, CONFIG.with_(max_docs=2)).answer("Which one?")
    assert [p.id for p in result.passages] == ["p0", "p1"]
    assert "passage p0 was left out of a prompt to fit the model's context" in result.notes
    assert all(len(p) <= 700 for p in backend.prompts)
    assert "passage 1 " in backend.prompts[-1] and "passage 0 " not in backend.prompts[-1]

    tiny = ScriptedBackend(respond, max_context=60)
    with pytest.raises(ValueError, match=r"even without passages .*: shorten the question"):
        SeaKR(tiny, FakeRetriever(), CONFIG).answer("Which one of the many possible options is it?")


def test_trace_is_strict_json_and_readable():
    def respond(prompt, config):
        _, context, answer = parse(prompt)
        if not is_step(config):
            return final()
        return Reply("Maybe Paris", spread=1.0) if not context else Reply("So the answer is Paris", 0.2)

    result = SeaKR(ScriptedBackend(respond), FakeRetriever(default=[passage("p1")]), CONFIG).answer("Capital?")
    data = json.loads(result.to_json())
    assert data["answer"] == "Paris" and data["strategy"] in ("rationales", "knowledge")
    step = data["steps"][0]
    assert {"pseudo_generation", "uncertainty", "decision", "query", "candidates", "chosen_passage_id"} <= set(step)
    assert step["candidates"][0]["id"] == "p1" and step["candidates"][0]["search_rank"] == 1
    assert data["config"]["delta"] == -6.0 and data["lm_calls"] == result.lm_calls == 4
    text = result.format()
    assert "-> retrieve" in text and "*[1] p1 (p1)" in text and "Answer: Paris" in text


@pytest.mark.parametrize("min_tokens", [1, 0])
def test_every_loop_call_carries_min_tokens(min_tokens):
    """``min_tokens`` (default 1, so an instruct model cannot close its turn with an empty step) reaches every call:
    the reasoning steps, the re-ranking candidates and the final answers."""
    assert SeaKRConfig().min_tokens == 1

    def respond(prompt, config):
        _, context, answer = parse(prompt)
        if not is_step(config):
            return final()
        return Reply("So the answer is Paris" if context else "Paris is in France", spread=5.0)

    backend = ScriptedBackend(respond)
    config = CONFIG.with_(min_tokens=min_tokens)
    SeaKR(backend, FakeRetriever(default=[passage("p1"), passage("p2")]), config).answer("Where is Paris?")
    used = [c for batch in backend.batches for _, c in batch]
    assert len(used) >= 4 and {c.min_tokens for c in used} == {min_tokens}
    assert any(is_step(c) for c in used) and any(not is_step(c) for c in used)
