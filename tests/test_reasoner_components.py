"""The loop's parts on their own (assess, rerank), its event stream and per-question observers.

These are what the LangChain and LlamaIndex adapters are built on, so that neither re-implements a decision rule:
the tests pin that the parts decide exactly as the loop does.  Same scripted back-end as ``test_reasoner.py``.
"""

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from test_reasoner import CONFIG, final, is_step, parse

from seakr_integrations.reasoning import (
    AnswerChosen,
    PassagesReranked,
    PassagesRetrieved,
    QuestionAnswered,
    SeaKR,
    StepAssessed,
    StepFinished,
)
from seakr_integrations.reasoning.events import Observer


def eiffel(prompt, config):
    """Uncertain first step; p2 gives the least uncertain next step; then the answer."""
    spreads = {"text of p1": 0.5, "text of p2": 0.2, "text of p3": 0.8}
    _, context, answer = parse(prompt)
    if not is_step(config):
        return final("So the answer is France")
    if not context:
        return Reply("The Eiffel Tower stands in Germany", spread=1.0, low=("Germany",))
    if not answer:
        return Reply("It is in France", spread=spreads[context[-1]])
    return Reply("So the answer is France", spread=1.0)


DOCS = [passage("p1"), passage("p2"), passage("p3")]


def test_events_follow_the_phases_and_end_with_the_result():
    seakr = SeaKR(ScriptedBackend(eiffel), FakeRetriever(default=DOCS), CONFIG)
    events = list(seakr.iter_events(["Which country is the Eiffel Tower in?"]))
    assert [e.kind for e in events] == [
        "step_assessed",
        "passages_retrieved",
        "passages_reranked",
        "step_finished",
        "step_assessed",
        "step_finished",
        "answer_chosen",
        "question_answered",
    ]
    assessed, retrieved, reranked, step = events[:4]
    assert isinstance(assessed, StepAssessed) and assessed.step.decision == "retrieve"
    assert assessed.step.candidates == [] and assessed.step.query is None  # a snapshot taken at the gate
    assert isinstance(retrieved, PassagesRetrieved) and [p.id for p in retrieved.passages] == ["p1", "p2", "p3"]
    assert retrieved.query == "Eiffel Tower stands"
    assert isinstance(reranked, PassagesReranked) and reranked.chosen_passage_id == "p2"
    assert [c.chosen for c in reranked.candidates] == [False, True, False]
    assert isinstance(step, StepFinished) and step.step.accepted == "It is in France"
    assert isinstance(events[-2], AnswerChosen) and events[-2].answer == "France"
    result = events[-1].result
    assert isinstance(events[-1], QuestionAnswered) and result.answer == "France"
    assert step.step.to_dict() == result.steps[0].to_dict()
    assert all(e.question_index == 0 and e.question.startswith("Which") for e in events)
    import json

    for e in events:  # every event is strict JSON
        json.dumps(e.to_dict(), allow_nan=False)


def test_single_hop_events():
    def uncertain(prompt, config):
        _, context, _ = parse(prompt)
        return Reply("So the answer is Paris", 0.2) if context else Reply("So the answer is Nice", 1.0)

    seakr = SeaKR(ScriptedBackend(uncertain), FakeRetriever(default=DOCS[:2]), CONFIG.with_(mode="single_hop"))
    kinds = [e.kind for e in seakr.iter_events(["capital of france"])]
    assert kinds == [
        "step_assessed",
        "passages_retrieved",
        "passages_reranked",
        "step_finished",
        "answer_chosen",
        "question_answered",
    ]


def test_assess_uses_the_loops_gate_and_batches_questions():
    def respond(prompt, config):
        question, _, _ = parse(prompt)
        return Reply(f"Step for {question}", spread=0.0 if "easy" in question else 1.0)

    backend = ScriptedBackend(respond)
    seakr = SeaKR(backend, None, CONFIG)  # no retriever needed to assess
    easy, hard = seakr.assess_many(["easy one?", "hard one?"])
    assert len(backend.batches) == 1 and len(backend.batches[0]) == 2
    assert easy.retrieve is False and easy.uncertainty.value <= CONFIG.delta
    assert hard.retrieve is True and hard.uncertainty.value > CONFIG.delta
    assert easy.generation == "Step for easy one?" and len(easy.output.samples) == CONFIG.k
    assert is_step(backend.batches[0][0][1])  # multi-hop assesses the next step, one sentence
    empty = SeaKR(ScriptedBackend(lambda p, c: Reply("", spread=0.0)), None, CONFIG).assess("q?")
    assert empty.retrieve is True  # an empty step always retrieves
    answered = SeaKR(ScriptedBackend(lambda p, c: Reply("So the answer is X", spread=0.0)), None, CONFIG)
    assert answered.assess("q?").states_answer is True


def test_rerank_orders_by_uncertainty_and_matches_the_loops_pick():
    backend = ScriptedBackend(eiffel)
    seakr = SeaKR(backend, None, CONFIG)
    ranked = seakr.rerank("Which country is the Eiffel Tower in?", DOCS)
    assert [(c.passage.id, c.rank, c.chosen) for c in ranked] == [("p2", 2, True), ("p1", 1, False), ("p3", 3, False)]
    assert len(backend.batches) == 1 and len(backend.batches[0]) == 3
    loop = SeaKR(ScriptedBackend(eiffel), FakeRetriever(default=DOCS), CONFIG).answer(
        "Which country is the Eiffel Tower in?"
    )
    assert loop.steps[0].chosen_passage_id == ranked[0].passage.id
    assert [c.uncertainty for c in loop.steps[0].candidates] == [
        c.uncertainty for c in sorted(ranked, key=lambda c: c.rank)
    ]
    assert seakr.rerank("q?", []) == []


def test_search_query_is_the_query_the_loop_searches():
    question = "Which country is the Eiffel Tower in?"
    seakr = SeaKR(ScriptedBackend(eiffel), None, CONFIG)
    query = seakr.search_query(seakr.assess(question))
    assert query.text == "Eiffel Tower stands" and query.masked == ("Germany",)  # the unsure word is masked
    loop = SeaKR(ScriptedBackend(eiffel), FakeRetriever(default=DOCS), CONFIG).answer(question)
    assert loop.steps[0].query == query.text and loop.steps[0].masked_words == list(query.masked)
    single = SeaKR(ScriptedBackend(eiffel), None, CONFIG.with_(mode="single_hop"))
    assert single.search_query(single.assess(question)).text == question  # single-hop searches the question


def test_rerank_puts_empty_generations_last_and_single_hop_scores_answers():
    def respond(prompt, config):
        _, context, _ = parse(prompt)
        return {"text of p1": Reply("", 0.0), "text of p2": Reply("So the answer is B", 0.5)}.get(
            context[-1] if context else "", Reply("So the answer is C", 0.1)
        )

    ranked = SeaKR(ScriptedBackend(respond), None, CONFIG).rerank("q?", DOCS)
    assert [c.passage.id for c in ranked] == ["p3", "p2", "p1"] and ranked[-1].rank_value == float("inf")
    backend = ScriptedBackend(respond)
    single = SeaKR(backend, None, CONFIG.with_(mode="single_hop")).rerank("q?", DOCS)
    assert [c.passage.id for c in single][:2] == ["p3", "p2"]
    assert not any(is_step(c) for p, c in backend.batches[0])  # single-hop scores whole answers, not steps
    assert all(len(parse(p)[1]) == 1 for p, c in backend.batches[0])  # each passage alone
    with pytest.raises(TypeError, match="Passage"):
        SeaKR(ScriptedBackend(respond), None, CONFIG).rerank("q?", ["not a passage"])


class Recorder(Observer):
    def __init__(self, name: str, log: list) -> None:
        self.name, self.log = name, log

    def on_lm_start(self, prompts):
        self.log.append((self.name, "start", [parse(p)[0] for p in prompts]))

    def on_lm_end(self, outputs, uncertainties):
        assert len(outputs) == len(uncertainties)
        self.log.append((self.name, "end", len(outputs)))

    def on_lm_error(self, error):
        self.log.append((self.name, "error", str(error)))

    def search(self, retriever, query, k):
        self.log.append((self.name, "search", query))
        return super().search(retriever, query, k)

    def on_event(self, event):
        self.log.append((self.name, event.kind))


def test_observers_see_their_own_questions_calls_in_a_shared_batch():
    log: list = []
    backend = ScriptedBackend(eiffel)
    seakr = SeaKR(backend, FakeRetriever(default=DOCS), CONFIG)
    questions = ["Which country is the Eiffel Tower in?", "Where is the Eiffel Tower?"]
    results = list(seakr.iter_events(questions, observers=[Recorder("a", log), Recorder("b", log)]))
    assert len(backend.batches[0]) == 2  # both questions' first steps share one batch...
    starts = [(n, qs) for n, what, *rest in log if what == "start" for qs in rest]
    assert ("a", [questions[0]]) in starts and ("b", [questions[1]]) in starts  # ...yet each observer sees its own
    assert [e for n, e, *r in log if n == "a" and e == "search"] == ["search"]
    assert sum(1 for n, e, *_ in log if n == "b" and e == "question_answered") == 1
    for name in "ab":
        mine = [what for n, what, *_ in log if n == name and what in ("start", "end")]
        assert mine == ["start", "end"] * (len(mine) // 2) and mine
    assert len([e for e in results if e.kind == "question_answered"]) == 2
    with pytest.raises(ValueError, match="one per question"):
        list(seakr.iter_events(questions, observers=[Recorder("a", log)]))


def test_observer_hears_a_failed_backend_call_and_the_error_propagates():
    def broken(prompt, config):
        raise RuntimeError("engine died")

    log: list = []
    seakr = SeaKR(ScriptedBackend(broken), FakeRetriever(), CONFIG)
    with pytest.raises(RuntimeError, match="engine died"):
        list(seakr.iter_events(["q?"], observers=[Recorder("a", log)]))
    assert ("a", "error", "engine died") in log


def test_construction_rejects_a_backend_without_hidden_states_and_answers_need_a_retriever():
    class TextOnly:
        tokenizer = None

        def generate(self, prompts):
            return ["text"]

    with pytest.raises(TypeError, match="hidden states"):
        SeaKR(TextOnly(), FakeRetriever(), CONFIG)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no retriever"):
        SeaKR(ScriptedBackend(eiffel), None, CONFIG).answer("q?")
