"""``StopOnRepeatedStep``: a step that repeats an earlier one ends the loop and stays out of the chain."""

from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from rule_support import QUESTION, SMALL, is_step, parse, run

from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.rules import AnchorQueries, ClaimCheck, KeepFirstResult, StopOnRepeatedStep
from seakr_integrations.reasoning.rules.stop_on_repeated_step import repeats_earlier


def test_repeats_earlier_ignores_case_punctuation_and_articles_only():
    assert repeats_earlier("The tower is in Paris.", ["It is tall", "tower is in  paris"])
    assert not repeats_earlier("The tower is in Lyon.", ["The tower is in Paris."])
    assert not repeats_earlier("", [""]) and not repeats_earlier("...", ["..."])
    assert not repeats_earlier("anything", [])


def looping(prompt, config):
    _, answer = parse(prompt)
    if not is_step(config):
        return Reply("So the answer is Paris")
    return Reply("The tower is in Paris" if answer.count("Paris") < 1 else "the tower is in Paris.")


def test_a_repeated_step_ends_the_loop_and_is_not_added_again():
    new, _ = run(SeaKRConfig(**SMALL, max_steps=5, rules=(StopOnRepeatedStep(),)), looping)
    assert [s.stop for s in new.steps] == [None, "repeated step"] and new.stop_reason == "repeated step"
    assert new.steps[-1].accepted is None and new.steps[-1].pseudo_generation == "the tower is in Paris."
    assert new.finals["rationales"].context == ["step 1"] and new.lm_calls == 4  # two steps, two final answers
    paper, _ = run(SeaKRConfig.paper(**SMALL, max_steps=5), looping)
    assert len(paper.steps) == 5 and paper.stop_reason == "step limit" and paper.lm_calls == 7


def test_a_repeated_step_after_a_search_keeps_its_passage():
    def again(prompt, config):
        context, answer = parse(prompt)
        if not is_step(config):
            return Reply("So the answer is France")
        if len(context) > answer.count("France"):  # a candidate's call: the new passage is in the context
            return Reply("It is in France", spread=0.5)
        return Reply(f"Guess {answer.count('France')} about Germany", spread=1.0, low=("Germany",))

    retriever = FakeRetriever(default=lambda q: [passage(f"p{len(retriever.queries)}")])
    rules = (ClaimCheck(backing="mention"), AnchorQueries(), KeepFirstResult(), StopOnRepeatedStep())
    result = SeaKR(ScriptedBackend(again), retriever, SeaKRConfig(**SMALL, rules=rules)).answer(QUESTION)
    assert [s.accepted for s in result.steps] == ["It is in France", None]
    assert result.stop_reason == "repeated step" and [p.id for p in result.passages] == ["p1", "p2"]
    assert result.finals["knowledge"].context == ["p1", "p2"] and result.finals["rationales"].context == ["step 1"]
