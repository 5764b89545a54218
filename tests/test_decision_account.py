"""The short decision account ``seakr ask`` prints: one line per step and one for the final answer, from the trace."""

from fakes import FakeRetriever, ScriptedBackend, passage
from test_calibration import respond
from test_reasoner import CONFIG

from seakr_integrations.quoting import quoted
from seakr_integrations.reasoning import SeaKR, SeaKRResult
from seakr_integrations.reasoning.account import decision_account
from seakr_integrations.reasoning.rules import ClaimCheck, TokenCascade


def answer(delta, retrieve="uncertain"):
    retriever = FakeRetriever(default=[passage("p1", title="Landmarks"), passage("p2", title="Spain")])
    seakr = SeaKR(ScriptedBackend(respond), retriever, CONFIG.with_(layer=1, delta=delta, retrieve=retrieve))
    return seakr.answer("Where is landmark 3?")


def test_an_uncertain_step_tells_what_was_searched_and_which_passage_was_kept_and_why():
    result = answer(delta=-50.0)
    lines = decision_account(result).splitlines()
    first = lines[0]
    assert first.startswith("step 1: uncertain (U ") and "> delta -50.00" in first, first
    assert f"searched for {quoted(result.steps[0].query)}" in first, first
    chosen = next(c for c in result.steps[0].candidates if c.chosen)
    assert f"kept {quoted(chosen.passage.title)} (search rank {chosen.rank}, U " in first, first
    assert lines[-1].startswith("answered from the passages it kept (knowledge) (U ") or lines[-1].startswith(
        "answered from its own reasoning (rationales) (U "
    ), lines[-1]
    assert lines[-1].endswith(quoted(result.answer)) and " rather than " in lines[-1]


def test_a_certain_step_is_kept_without_search_and_the_account_survives_a_json_round_trip():
    result = answer(delta=50.0)
    account = decision_account(result)
    assert account.startswith("step 1: certain enough (U ") and "<= delta 50.00" in account, account
    assert "searched" not in account
    assert decision_account(SeaKRResult.from_json(result.to_json())) == account


def test_without_the_gate_no_delta_is_claimed():
    account = decision_account(answer(delta=50.0, retrieve="always"))
    assert "delta" not in account and account.startswith("step 1: searches at every step (U "), account


def test_a_step_decided_before_the_samples_says_why_instead_of_citing_delta():
    retriever = FakeRetriever(default=[passage("p1", title="Landmarks"), passage("p2", title="Spain")])
    config = CONFIG.with_(layer=1, delta=50.0)
    seakr = SeaKR(ScriptedBackend(respond), retriever, config.with_(rules=(ClaimCheck(), TokenCascade(band=(0, 1)))))
    claims = seakr.answer("Where is landmark 3?")
    first = decision_account(claims).splitlines()[0]
    assert claims.steps[0].reason == "unsupported_claim", claims.steps[0]
    assert first.startswith("step 1: it names something no kept passage backs -> searched for "), first
    sure = SeaKR(ScriptedBackend(respond), retriever, config.with_(rules=(TokenCascade(band=(1.0, 1.0)),)))
    first = decision_account(sure.answer("Where is landmark 3?")).splitlines()[0]
    assert first.startswith("step 1: sure from its tokens (1 - min p ") and "kept its own step" in first, first
