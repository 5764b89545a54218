"""The decision rules beyond the paper's (``reasoning.rules``, ``SeaKRConfig`` options): each decides as documented,
``SeaKRConfig.paper()`` keeps the authors' decisions, and bad settings are refused with a clear error.

The scripted back-end's uncertainty grows with the spread a reply sets (spread 0: the most certain).
"""

import math
import re

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage

from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.account import decision_account
from seakr_integrations.reasoning.config import PAPER_RULES
from seakr_integrations.reasoning.rules import choice_needs_samples, pick_final, pick_passage, repeats_earlier
from seakr_integrations.reasoning.trace import SeaKRResult

SMALL = {"k": 4, "num_exemplars": 0, "max_tokens": 10, "delta": -6.5}
QUESTION = "Which country is the Eiffel Tower in?"


def parse(prompt: str) -> tuple[list[str], str]:
    """(context passages, answer so far) of a prompt built without exemplars or chat template."""
    head, _, answer = prompt.rpartition("\nAnswer:")
    return re.findall(r"\[\d+\] (.*)\n", head), answer.strip()


def is_step(config) -> bool:
    return ". " in config.stop


# ------------------------------------------------------------------------------------------- the pure rules
@pytest.mark.parametrize(
    ("uncertainties", "margin", "kept"),
    [
        ([1.0, 0.5, 2.0], 0.0, 1),  # the paper: the least uncertain
        ([1.0, 1.0, 2.0], 0.0, 0),  # a tie keeps the search order
        ([1.0, 0.5, 2.0], 0.5, 0),  # not lower by more than the margin: the search engine's first
        ([1.0, 0.4, 0.45], 0.5, 1),  # lower by more than the margin
        ([math.inf, 3.0, 2.0], 5.0, 2),  # an unscorable first loses to any scorable candidate
        ([math.inf, math.inf], 0.0, 0),
        ([2.0], 1.0, 0),
        ([1.0, -50.0], math.inf, 0),  # an infinite margin is the search order
    ],
)
def test_pick_passage(uncertainties, margin, kept):
    assert pick_passage(uncertainties, margin) == kept


@pytest.mark.parametrize(
    ("rationales", "knowledge", "margin", "winner"),
    [
        ((1.0, False), (2.0, False), 0.0, "rationales"),  # the paper: the less uncertain
        ((1.0, False), (1.0, False), 0.0, "knowledge"),  # a tie goes to knowledge
        ((1.0, False), (2.0, False), 1.0, "knowledge"),  # not lower by more than the margin
        ((0.5, False), (2.0, False), 1.0, "rationales"),
        ((0.1, True), (5.0, False), 0.0, "knowledge"),  # an unknown answer loses whatever its uncertainty
        ((5.0, False), (0.1, True), 9.0, "rationales"),
        ((0.1, True), (5.0, True), 0.0, "knowledge"),
    ],
)
def test_pick_final(rationales, knowledge, margin, winner):
    (r, r_unknown), (k, k_unknown) = rationales, knowledge
    assert pick_final(r, k, rationales_unknown=r_unknown, knowledge_unknown=k_unknown, margin=margin) == winner


@pytest.mark.parametrize(
    ("rationales", "knowledge", "needed"),
    [
        ("France", "Italy", True),
        ("France", "the france.", False),  # the same answer as it is scored
        (None, "Italy", False),  # a missing answer loses whatever its uncertainty
        ("unknown", "Italy", False),
        (None, None, False),
    ],
)
def test_choice_needs_samples_only_between_two_known_different_answers(rationales, knowledge, needed):
    assert choice_needs_samples(rationales, knowledge) is needed


def test_repeats_earlier_ignores_case_punctuation_and_articles_only():
    assert repeats_earlier("The tower is in Paris.", ["It is tall", "tower is in  paris"])
    assert not repeats_earlier("The tower is in Lyon.", ["The tower is in Paris."])
    assert not repeats_earlier("", [""]) and not repeats_earlier("...", ["..."])
    assert not repeats_earlier("anything", [])


@pytest.mark.parametrize("bad", [-0.1, float("nan")])
def test_the_rules_refuse_a_bad_margin(bad):
    with pytest.raises(ValueError, match="margin"):
        pick_passage([1.0, 2.0], bad)
    with pytest.raises(ValueError, match="margin"):
        pick_final(1.0, 2.0, margin=bad)
    with pytest.raises(ValueError, match="at least one"):
        pick_passage([])


# --------------------------------------------------------------------------------------------- the settings
def test_paper_is_the_authors_rules_with_overrides():
    paper = SeaKRConfig.paper()
    assert (paper.rerank, paper.rerank_margin, paper.final_margin) == (True, 0.0, 0.0)
    assert not paper.knowledge_needs_passages and not paper.stop_on_repeated_step
    assert paper == SeaKRConfig(**PAPER_RULES)
    assert SeaKRConfig.paper(k=4, delta=-2.0) == SeaKRConfig(**PAPER_RULES, k=4, delta=-2.0)
    assert SeaKRConfig.paper(rerank_margin=1.0).rerank_margin == 1.0  # an override wins over the preset
    default = SeaKRConfig()
    assert (default.rerank, default.knowledge_needs_passages, default.stop_on_repeated_step) == (False, True, True)
    assert (default.rerank_margin, default.final_margin) == (0.0, 0.5)
    assert (default.check_claims, default.cover_compared_entities, default.anchor_queries) == (True, True, True)
    assert default.cascade_estimator == "min_token_prob" and paper.cascade_estimator is None
    assert (default.max_docs, paper.max_docs, default.max_steps, paper.max_steps) == (2, 5, 7, 7)
    assert not (paper.check_claims or paper.cover_compared_entities or paper.anchor_queries)
    assert default.with_(**PAPER_RULES) == paper


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"rerank_margin": -1.0}, "rerank_margin=-1.0"),
        ({"rerank_margin": float("nan")}, "rerank_margin"),
        ({"rerank_margin": "big"}, "rerank_margin"),
        ({"rerank_margin": math.inf}, "rerank_margin=inf"),  # the search order for ever is rerank=False
        ({"final_margin": -0.5}, "final_margin=-0.5"),
        ({"final_margin": True}, "final_margin"),
        ({"knowledge_needs_passages": "yes"}, "knowledge_needs_passages='yes'"),
        ({"stop_on_repeated_step": 1}, "stop_on_repeated_step=1"),
    ],
)
def test_bad_rule_settings_are_refused(changes, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        SeaKRConfig(**changes)
    with pytest.raises(ValueError, match=re.escape(message)):
        SeaKRConfig.paper(**changes)


# ------------------------------------------------------------------------------------------------ the loop
SPREADS = {"text of p1": 0.6, "text of p2": 0.5, "text of p3": 0.9}


def eiffel(prompt, config):
    """One uncertain step, then a step per passage (p2 a little more certain than p1), then the answer."""
    context, answer = parse(prompt)
    if not is_step(config):
        return Reply("So the answer is France")
    if not context:
        return Reply("The Eiffel Tower stands in Germany", spread=1.0, low=("Germany",))
    if not answer:
        return Reply(f"It is in France, says {context[-1][-2:]}", spread=SPREADS[context[-1]])
    return Reply("So the answer is France", spread=1.0)


def run(config: SeaKRConfig, respond=eiffel, docs=("p1", "p2", "p3")):
    backend = ScriptedBackend(respond)
    result = SeaKR(backend, FakeRetriever(default=[passage(d) for d in docs]), config).answer(QUESTION)
    return result, backend


def test_the_default_keeps_the_search_engines_first_passage_and_scores_only_it():
    result, backend = run(SeaKRConfig(**SMALL))
    first = result.steps[0]
    assert [(c.passage.id, c.chosen) for c in first.candidates] == [("p1", True)]
    assert len(backend.batches[1]) == 1 and first.accepted == "It is in France, says p1"


def test_paper_keeps_the_least_uncertain_passage():
    result, backend = run(SeaKRConfig.paper(**SMALL))
    first = result.steps[0]
    assert [(c.passage.id, c.chosen) for c in first.candidates] == [("p1", False), ("p2", True), ("p3", False)]
    assert len(backend.batches[1]) == 3 and result.notes == []


def test_rerank_margin_keeps_the_first_unless_another_is_clearly_less_uncertain():
    paper, _ = run(SeaKRConfig.paper(**SMALL))
    u = [c.uncertainty.value for c in paper.steps[0].candidates]
    gap = u[0] - u[1]
    assert gap > 0
    wide, backend = run(SeaKRConfig.paper(**SMALL, rerank_margin=gap * 2))
    assert [c.chosen for c in wide.steps[0].candidates] == [True, False, False]
    assert len(backend.batches[1]) == 3  # every candidate is still scored: the margin costs no LM call
    assert any("rerank_margin" in note for note in wide.notes)
    narrow, _ = run(SeaKRConfig.paper(**SMALL, rerank_margin=gap / 2))
    assert [c.chosen for c in narrow.steps[0].candidates] == [False, True, False]


def test_final_margin_keeps_the_knowledge_answer_unless_rationales_are_clearly_less_uncertain():
    def respond(prompt, config):
        context, _ = parse(prompt)
        if is_step(config):
            return eiffel(prompt, config)
        from_steps = bool(context) and context[0].startswith("It is")
        return Reply("So the answer is France" if from_steps else "So the answer is Italy", 0.2 if from_steps else 0.3)

    paper, _ = run(SeaKRConfig.paper(**SMALL), respond)
    r, k = (paper.finals[s].uncertainty.value for s in ("rationales", "knowledge"))
    assert r < k and paper.strategy == "rationales" and paper.answer == "France"
    wide, _ = run(SeaKRConfig.paper(**SMALL, final_margin=(k - r) * 2), respond)
    assert wide.strategy == "knowledge" and wide.answer == "Italy"


def test_no_passage_kept_answers_from_the_rationales_alone():
    def certain(prompt, config):
        _, answer = parse(prompt)
        if not is_step(config):
            return Reply("So the answer is France")
        return Reply("So the answer is France" if answer else "The tower is in Paris")  # certain: no retrieval

    new, backend = run(SeaKRConfig(**SMALL, check_claims=False), certain)  # "Paris" has no passage: trust the gate
    assert new.passages == [] and list(new.finals) == ["rationales"] and new.strategy == "rationales"
    assert len(backend.batches[-1]) == 1 and any("rationales alone" in n for n in new.notes)
    paper, paper_backend = run(SeaKRConfig.paper(**SMALL), certain)
    assert sorted(paper.finals) == ["knowledge", "rationales"] and paper.lm_calls == new.lm_calls + 1
    assert len(paper_backend.batches[-1]) == 2


def test_a_repeated_step_ends_the_loop_and_is_not_added_again():
    def looping(prompt, config):
        _, answer = parse(prompt)
        if not is_step(config):
            return Reply("So the answer is Paris")
        return Reply("The tower is in Paris" if answer.count("Paris") < 1 else "the tower is in Paris.")

    new, _ = run(SeaKRConfig(**SMALL, max_steps=5, check_claims=False), looping)
    assert [s.stop for s in new.steps] == [None, "repeated step"] and new.stop_reason == "repeated step"
    assert new.steps[-1].accepted is None and new.steps[-1].pseudo_generation == "the tower is in Paris."
    assert new.finals["rationales"].context == ["step 1"] and new.lm_calls == 3  # two steps, one final answer
    paper, _ = run(SeaKRConfig.paper(**SMALL, max_steps=5), looping)
    assert len(paper.steps) == 5 and paper.stop_reason == "step limit" and paper.lm_calls == 7


def test_a_repeated_step_after_re_ranking_keeps_its_passage():
    def again(prompt, config):
        context, answer = parse(prompt)
        if not is_step(config):
            return Reply("So the answer is France")
        if len(context) > answer.count("France"):  # a candidate's call: the new passage is in the context
            return Reply("It is in France", spread=0.5)
        return Reply(f"Guess {answer.count('France')} about Germany", spread=1.0, low=("Germany",))

    retriever = FakeRetriever(default=lambda q: [passage(f"p{len(retriever.queries)}")])
    result = SeaKR(ScriptedBackend(again), retriever, SeaKRConfig(**SMALL)).answer(QUESTION)
    assert [s.accepted for s in result.steps] == ["It is in France", None]
    assert result.stop_reason == "repeated step" and [p.id for p in result.passages] == ["p1", "p2"]
    assert result.finals["knowledge"].context == ["p1", "p2"] and result.finals["rationales"].context == ["step 1"]


def test_answer_when_stated_gives_the_loops_answer_without_reasoning_again():
    def stated(prompt, config):
        context, answer = parse(prompt)
        if not is_step(config):
            return Reply("So the answer is Italy")  # the final reasoning would change the answer
        return Reply("So the answer is France")

    config = SeaKRConfig(**SMALL, answer_when_stated=True)
    result, backend = run(config, stated)
    assert result.answer == "France" and result.strategy == "stated" and list(result.finals) == ["stated"]
    assert result.lm_calls == 1 and all(is_step(c) for batch in backend.batches for _, c in batch)
    assert SeaKRResult.from_json(result.to_json()).strategy == "stated"
    paper, _ = run(SeaKRConfig.paper(**SMALL), stated)
    assert paper.answer == "Italy"


def test_a_greedy_only_final_estimator_compares_the_answers_without_samples():
    def respond(prompt, config):
        context, _ = parse(prompt)
        if is_step(config):
            return eiffel(prompt, config)
        from_steps = bool(context) and context[0].startswith("It is")
        if from_steps:  # the rationales' answer: one word the model doubted
            return Reply("So the answer is Frence", low=("Frence",))
        return Reply("So the answer is France")

    result, backend = run(SeaKRConfig(**SMALL, final_estimator="min_token_prob"), respond)
    assert result.strategy == "knowledge" and result.answer == "France"
    assert result.finals["rationales"].uncertainty.estimator == "min_token_prob"
    assert all(c.k == 0 for batch in backend.batches for _, c in batch if not is_step(c))
    with pytest.raises(ValueError, match="greedy continuation alone"):
        SeaKRConfig(final_estimator="eigenscore")


def _finals_saying(rationales: str, knowledge: str, *, state_it: bool = True):
    """A model whose final answers from the rationales and from the passages are these (stated at once, or only when
    asked again with " So the answer is")."""

    def respond(prompt, config):
        context, answer = parse(prompt)
        if is_step(config):
            return eiffel(prompt, config)
        from_steps = bool(context) and context[0].startswith("It is")
        said, spread = (rationales, 0.2) if from_steps else (knowledge, 0.3)
        if state_it or answer.endswith("So the answer is"):
            return Reply(f"So the answer is {said}" if state_it else said, spread)
        return Reply("Let me think about it", 1.0)

    return respond


def final_calls(backend):
    return [(p, c) for batch in backend.batches for p, c in batch if not is_step(c)]


@pytest.mark.parametrize("state_it", [True, False])
def test_final_samples_are_drawn_only_for_answers_that_differ_and_give_the_papers_choice(state_it):
    respond = _finals_saying("France", "Italy", state_it=state_it)
    always, always_backend = run(SeaKRConfig(**SMALL, final_margin=0.0, final_samples="always"), respond)
    deciding, backend = run(SeaKRConfig(**SMALL, final_margin=0.0), respond)
    assert (deciding.answer, deciding.strategy) == (always.answer, always.strategy) == ("France", "rationales")
    for s in ("rationales", "knowledge"):
        assert deciding.finals[s].uncertainty.value == pytest.approx(always.finals[s].uncertainty.value)
    sampled = [(p, c) for p, c in final_calls(backend) if c.k > 0]
    # the samples of each answer's own call: the one that asked again when the first stated no answer
    assert len(sampled) == 2 and all(p.endswith("So the answer is") is not state_it for p, _ in sampled)
    if not state_it:  # "always" also sampled the first calls, whose uncertainty the calls asking again replaced
        assert deciding.generated_tokens < always.generated_tokens
        assert sum(c.k for _, c in final_calls(always_backend)) == 2 * sum(c.k for _, c in final_calls(backend))


def test_final_answers_that_agree_are_not_sampled():
    result, backend = run(SeaKRConfig(**SMALL), _finals_saying("France", "france"))
    assert result.answer == "france" and result.strategy == "knowledge"
    assert all(c.k == 0 for _, c in final_calls(backend)) and len(final_calls(backend)) == 2
    assert any("neither was sampled" in note for note in result.notes)
    assert decision_account(result).endswith("rationales gave the same answer, so neither was sampled: 'france'")
    with pytest.raises(ValueError, match="final_samples='sometimes'"):
        SeaKRConfig(final_samples="sometimes")
