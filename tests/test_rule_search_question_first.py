"""``SearchQuestionFirst``: the question is searched before the first step and all its results are kept, so the
steps read them and search only for what they leave out."""

from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from rule_support import QUESTION, SMALL, is_step, parse

from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.account import decision_account
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.rules import ClaimCheck, KeepFirstResult, SearchQuestionFirst

TOWER = passage("p1", "The Eiffel Tower is a wrought-iron lattice tower.", "Eiffel Tower")
OTHER = passage("p2", "A tower is a tall structure.", "Tower")
PARIS = passage("p3", "Paris is the capital of France.", "Paris")


def reads_then_answers(prompt, config):
    """With passages the first step names Paris; once Paris has a passage it answers."""
    context, answer = parse(prompt)
    if not is_step(config):
        return Reply("So the answer is France")
    if any("capital of France" in c for c in context):
        return Reply("So the answer is France.")
    return Reply("The Eiffel Tower stands in Paris.") if context else Reply("It is in Germany.", spread=1.0)


def test_the_question_is_searched_before_any_call_and_every_result_is_kept():
    retriever = FakeRetriever(default=[TOWER, OTHER])
    backend = ScriptedBackend(reads_then_answers)
    result = SeaKR(backend, retriever, SeaKRConfig(**SMALL, rules=(SearchQuestionFirst(),))).answer(QUESTION)
    assert retriever.queries[0] == (QUESTION, 3)
    opening = result.steps[0]
    assert opening.reason == GateReason.QUESTION_FIRST and opening.query == QUESTION
    assert [(c.passage.id, c.chosen) for c in opening.candidates] == [("p1", True), ("p2", True)]
    first_prompt = backend.batches[0][0][0]
    assert "wrought-iron" in first_prompt and "A tower is" in first_prompt
    assert [p.id for p in result.passages][:2] == ["p1", "p2"]
    assert {"rule": "search-question-first", "round": 1, "what": "opening search"} in result.rules_applied
    assert decision_account(result).startswith("step 1: searched the question first -> kept 'Eiffel Tower', 'Tower'")


def test_a_step_naming_what_the_question_passages_leave_out_searches_for_that_name():
    results = {QUESTION: [TOWER, OTHER], "Paris": [PARIS]}
    retriever = FakeRetriever(results, default=[OTHER])
    rules = (SearchQuestionFirst(), ClaimCheck(), KeepFirstResult())
    result = SeaKR(ScriptedBackend(reads_then_answers), retriever, SeaKRConfig(**SMALL, rules=rules)).answer(QUESTION)
    hop = result.steps[1]
    assert hop.reason == GateReason.UNSUPPORTED_CLAIM and hop.query == "Paris"
    assert [p.id for p in result.passages] == ["p1", "p2", "p3"] and result.answer == "France"


def test_the_step_query_is_the_papers_masked_step():
    results = {QUESTION: [TOWER, OTHER]}
    retriever = FakeRetriever(results, default=[PARIS])
    rules = (SearchQuestionFirst(), ClaimCheck(query="step"), KeepFirstResult())
    result = SeaKR(ScriptedBackend(reads_then_answers), retriever, SeaKRConfig(**SMALL, rules=rules)).answer(QUESTION)
    assert result.steps[1].query != "Paris" and "Paris" in (result.steps[1].query or "")


def test_without_it_the_first_step_reasons_from_nothing():
    retriever = FakeRetriever(default=[TOWER])
    backend = ScriptedBackend(reads_then_answers)
    SeaKR(backend, retriever, SeaKRConfig(**SMALL, rules=(ClaimCheck(),))).answer(QUESTION)
    assert "Context:" not in backend.batches[0][0][0]


def test_its_record_is_its_name():
    assert SearchQuestionFirst().to_dict() == {"rule": "search-question-first"}
    recorded = {"rule": "claim-check", "entities": "english", "query": "entity", "backing": "page"}
    assert ClaimCheck().to_dict() == recorded
    assert SeaKRConfig(rules="paper,search-question-first").rules == (SearchQuestionFirst(),)


def test_a_failed_opening_search_answers_without_passages_when_told_to():
    retriever = FakeRetriever(error=TimeoutError("index down"))
    config = SeaKRConfig(**SMALL, rules=(SearchQuestionFirst(), ClaimCheck()))
    seakr = SeaKR(ScriptedBackend(reads_then_answers), retriever, config, on_retrieval_error="answer_without")
    result = seakr.answer(QUESTION)
    assert result.stop_reason == "retrieval error" and result.passages == [] and len(retriever.queries) == 1
    assert result.steps[0].error == "TimeoutError: index down" and result.answer


def test_retrieval_off_searches_nothing_and_the_opening_keeps_each_result_once_up_to_max_docs():
    retriever = FakeRetriever(default=[TOWER, OTHER])
    never = SeaKRConfig(**SMALL, retrieve="never")  # the default rules, retrieval off
    assert SeaKR(ScriptedBackend(reads_then_answers), retriever, never).answer(QUESTION).searches == 0
    assert retriever.queries == []
    twice = FakeRetriever(default=[TOWER, TOWER, OTHER])
    config = SeaKRConfig(**SMALL, max_docs=1, rules=(SearchQuestionFirst(),))
    result = SeaKR(ScriptedBackend(reads_then_answers), twice, config).answer(QUESTION)
    assert [c.passage.id for c in result.steps[0].candidates] == ["p1"] and [p.id for p in result.passages] == ["p1"]


def test_the_gate_decision_explains_the_new_reasons():
    from seakr_integrations.reasoning.decisions import GateDecision

    for reason, words in [
        (GateReason.SUPPORTED_CLAIM, "covered by a kept passage"),
        (GateReason.QUESTION_FIRST, "searched"),
    ]:
        assert words in GateDecision("q", reason == GateReason.QUESTION_FIRST, reason, float("nan"), -1.0).explanation
