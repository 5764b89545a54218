"""The gate read in stages (``reasoning.gate``): the cascade decides from the greedy step's tokens outside its band
and samples only inside it, unsupported claims retrieve, compared entities get a passage before the answer, and no
samples are drawn where no decision reads them.  The paper's config keeps one sampled call per step.

The scripted back-end: the greedy step's perplexity is 1 unless a reply marks words as low-confidence; its
EigenScore grows with the reply's spread (spread 0: the most certain).
"""

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage

from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.decisions import GateDecision, GateReason

SMALL = {"k": 4, "num_exemplars": 0, "max_tokens": 10, "delta": -6.5}
QUESTION = "Which country is the Eiffel Tower in?"
TOWER = passage("p1", "The Eiffel Tower is in Paris, France.", "Eiffel Tower")


def is_step(config) -> bool:
    return ". " in config.stop


def sampled(backend: ScriptedBackend) -> list[str]:
    """Prompts that were generated with samples."""
    return [p for batch in backend.batches for p, c in batch if c.k > 0]


def test_the_cascade_decides_outside_its_band_and_samples_inside_it():
    def respond(prompt, config):
        if not is_step(config):
            return Reply("So the answer is France.")
        if "Context:" in prompt:
            return Reply("So the answer is France.")
        return Reply("The Eiffel Tower is in Paris.", spread=5.0, low=("Paris",))

    perplexity_of_step = None
    # band below the step's perplexity: clearly unsure from the tokens, retrieve without samples
    backend = ScriptedBackend(respond)
    cfg = SeaKRConfig(**SMALL, cascade_estimator="perplexity", cascade_band=(1.0, 1.05), check_claims=False)
    result = SeaKR(backend, FakeRetriever(default=[TOWER]), cfg).answer(QUESTION)
    first = result.steps[0]
    perplexity_of_step = first.screen.value
    assert perplexity_of_step > 1.05 and first.reason == GateReason.UNSURE_FROM_TOKENS
    assert first.decision == "retrieve" and first.uncertainty.estimator == "none"
    assert not any("Tower is in Paris" in p for p in sampled(backend) if "Context:" not in p)

    # band around it: the samples decide, as the paper's gate (spread 5 is far above delta)
    backend = ScriptedBackend(respond)
    cfg = cfg.with_(cascade_band=(1.0, perplexity_of_step + 1))
    result = SeaKR(backend, FakeRetriever(default=[TOWER]), cfg).answer(QUESTION)
    assert result.steps[0].reason == GateReason.UNCERTAIN and result.steps[0].uncertainty.estimator == "eigenscore"
    assert len(sampled(backend)) >= 1

    # band above it: clearly sure, accepted without samples
    backend = ScriptedBackend(respond)
    cfg = cfg.with_(cascade_band=(perplexity_of_step + 1, perplexity_of_step + 2))
    result = SeaKR(backend, FakeRetriever(default=[TOWER]), cfg).answer(QUESTION)
    assert result.steps[0].reason == GateReason.SURE_FROM_TOKENS and result.steps[0].decision == "accept"


def test_the_papers_config_reads_every_step_with_its_samples_in_one_call():
    backend = ScriptedBackend(lambda p, c: Reply("So the answer is France.") if not is_step(c) or "Context" in p
                              else Reply("The Eiffel Tower is in Paris.", spread=5.0))  # fmt: skip
    result = SeaKR(backend, FakeRetriever(default=[TOWER]), SeaKRConfig.paper(**SMALL)).answer(QUESTION)
    assert all(c.k > 0 for batch in backend.batches for _, c in batch)
    assert result.steps[0].reason == GateReason.UNCERTAIN and result.steps[0].screen is None


def test_a_claim_about_an_entity_no_passage_covers_retrieves_without_samples():
    def respond(prompt, config):
        if not is_step(config):
            return Reply("So the answer is France.")
        if "Context:" in prompt and "Answer: The Eiffel Tower" not in prompt:
            return Reply("The Eiffel Tower is in Paris.")  # after the passage: now covered
        if "Answer: The Eiffel Tower" in prompt:
            return Reply("So the answer is France.")
        return Reply("The Eiffel Tower is in Lyon.")  # confident (spread 0), but nothing covers it yet

    backend = ScriptedBackend(respond)
    cfg = SeaKRConfig(**SMALL, check_claims=True)
    result = SeaKR(backend, FakeRetriever(default=[TOWER]), cfg).answer(QUESTION)
    assert result.steps[0].reason == GateReason.UNSUPPORTED_CLAIM and result.steps[0].decision == "retrieve"
    assert result.passages == [TOWER] and result.answer == "France"
    first_step_calls = [c for batch in backend.batches for p, c in batch if is_step(c) and "Context:" not in p]
    assert first_step_calls and all(c.k == 0 for c in first_step_calls)


def test_a_compared_entity_gets_a_passage_before_the_answer():
    question = "Who was born first, Ada Lovelace or Alan Turing?"
    ada = passage("ada", "Ada Lovelace was born in 1815.", "Ada Lovelace")
    alan = passage("alan", "Alan Turing was born in 1912.", "Alan Turing")

    def respond(prompt, config):
        if not is_step(config):
            return Reply("So the answer is Ada Lovelace.")
        return Reply("So the answer is Ada Lovelace.")

    retriever = FakeRetriever(default=lambda q: [alan] if "Turing" in q else [ada])
    cfg = SeaKRConfig(**SMALL, cover_compared_entities=True)
    result = SeaKR(ScriptedBackend(respond), retriever, cfg).answer(question)
    assert [q for q, _ in retriever.queries] == ["Ada Lovelace born first", "Alan Turing born first"]
    assert {p.id for p in result.passages} == {"ada", "alan"}
    assert result.steps[0].reason == GateReason.UNCOVERED_ENTITY
    # the paper answers at once
    retriever = FakeRetriever(default=[ada])
    result = SeaKR(ScriptedBackend(respond), retriever, SeaKRConfig.paper(**SMALL)).answer(question)
    assert retriever.queries == [] and result.answer == "Ada Lovelace"


def test_bridge_entities_get_a_passage_before_the_answer():
    question = "Where did the director of film Duel In The Jungle die?"
    duel = passage("duel", "Duel in the Jungle is a 1954 film directed by George Marshall.", "Duel in the Jungle")
    marshall = passage("gm", "George Marshall died in Washington, D.C.", "George Marshall")

    def respond(prompt, config):
        if is_step(config) and "Context:" not in prompt:
            return Reply("The director of Duel In The Jungle was Tom Smith.")
        return Reply("So the answer is Washington.")

    retriever = FakeRetriever(default=lambda q: [marshall] if "Marshall" in q else [duel])
    cfg = SeaKRConfig(**SMALL, cover_bridge_entities=True)
    result = SeaKR(ScriptedBackend(respond), retriever, cfg).answer(question)
    assert [p.id for p in result.passages] == ["duel", "gm"]
    assert retriever.queries[-1][0] == "George Marshall director film die"
    assert result.steps[1].reason == GateReason.UNCOVERED_ENTITY
    # without the rule (the default) the first passage's answer stands
    retriever = FakeRetriever(default=lambda q: [marshall] if "Marshall" in q else [duel])
    result = SeaKR(ScriptedBackend(respond), retriever, SeaKRConfig(**SMALL)).answer(question)
    assert [p.id for p in result.passages] == ["duel"]


def test_an_answer_naming_neither_option_gives_the_option_its_passage_leads_to():
    question = "Which film has the director who died earlier, Santa And The Fairy Snow Queen or Hearts In Bondage?"
    bondage = passage("hb", "Hearts in Bondage is a 1936 film directed by Lew Ayres.", "Hearts in Bondage")
    santa = passage("s", "Santa and the Fairy Snow Queen is a 1951 film.", "Santa and the Fairy Snow Queen")
    retriever = FakeRetriever(default=lambda q: [santa] if "Santa" in q else [bondage])
    backend = ScriptedBackend(lambda p, c: Reply("So the answer is Lew Ayres."))
    result = SeaKR(backend, retriever, SeaKRConfig(**SMALL)).answer(question)
    assert result.answer == "Hearts In Bondage"
    assert any("answer_with_option" in note for note in result.notes)
    assert result.finals[result.strategy].answer == "Lew Ayres"  # the final answer as generated stays in the trace
    result = SeaKR(backend, retriever, SeaKRConfig(**SMALL, answer_with_option=False)).answer(question)
    assert result.answer == "Lew Ayres"


def test_no_samples_where_no_decision_reads_them():
    def respond(prompt, config):
        if not is_step(config):
            return Reply("So the answer is France.")
        if "Context:" in prompt:
            return Reply("So the answer is France.")
        return Reply("The Eiffel Tower is in Paris.", spread=5.0)

    backend = ScriptedBackend(respond)
    SeaKR(backend, FakeRetriever(default=[TOWER]), SeaKRConfig(**SMALL)).answer(QUESTION)  # rerank=False
    candidate_calls = [c for batch in backend.batches for p, c in batch if "Context:" in p and is_step(c)]
    assert candidate_calls and all(c.k == 0 for c in candidate_calls)
    # no passage kept: the one final answer (rationales) is not compared with anything
    backend = ScriptedBackend(lambda p, c: Reply("So the answer is France." if not is_step(c) else "It is in France."))
    result = SeaKR(backend, FakeRetriever(), SeaKRConfig(**{**SMALL, "delta": 100.0})).answer(QUESTION)
    assert list(result.finals) == ["rationales"]
    assert all(c.k == 0 for batch in backend.batches for _, c in batch if not is_step(c))


def test_the_standalone_gate_reports_the_stage_that_decided():
    backend = ScriptedBackend(lambda p, c: Reply("The Eiffel Tower is in Paris."))
    seakr = SeaKR(backend, None, SeaKRConfig(**SMALL, check_claims=True))
    assessment = seakr.assess(QUESTION)
    decision = GateDecision.from_assessment(assessment, seakr.config)
    assert decision.retrieve and decision.reason is GateReason.UNSUPPORTED_CLAIM
    assert "no kept passage" in decision.explanation


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"cascade_estimator": "eigenscore"}, "greedy continuation alone"),
        ({"cascade_estimator": "nope"}, "estimator"),
        ({"cascade_band": (2.0, 1.0)}, "low edge"),
        ({"cascade_band": (1.0,)}, "two numbers"),
        ({"cascade_band": (1.0, float("nan"))}, "finite"),
        ({"check_claims": "yes"}, "check_claims"),
    ],
)
def test_bad_cascade_and_claim_settings_are_refused(changes, match):
    with pytest.raises(ValueError, match=match):
        SeaKRConfig(**changes)


def test_without_re_ranking_the_kept_passage_covers_what_the_step_claimed_when_a_result_does():
    def respond(prompt, config):
        if not is_step(config) or "Context:" in prompt:
            return Reply("So the answer is France.")
        return Reply("The Eiffel Tower was built by Gustave Eiffel.")

    other = passage("p0", "A tower is a tall structure.", "Tower")
    eiffel = passage("p1", "Gustave Eiffel's company built the Eiffel Tower.", "Gustave Eiffel")
    result = SeaKR(ScriptedBackend(respond), FakeRetriever(default=[other, eiffel]), SeaKRConfig(**SMALL)).answer(
        QUESTION
    )
    assert result.steps[0].reason == GateReason.UNSUPPORTED_CLAIM and [p.id for p in result.passages] == ["p1"]
    paper = SeaKRConfig(**{**SMALL, "delta": -100.0}, check_claims=False)  # search order, without the claim check
    result = SeaKR(ScriptedBackend(respond), FakeRetriever(default=[other, eiffel]), paper).answer(QUESTION)
    assert [p.id for p in result.passages][:1] == ["p0"]
