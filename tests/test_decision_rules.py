"""The decision rules as objects (``reasoning.rules``): the default preset and the paper's none, one code path for
both, the recorded and the ``--rules`` forms, bad rules refused clearly; and the paper's two choices
(``reasoning.choices``) as pure functions.  Each rule's own behaviour is tested in ``test_rule_<name>.py``."""

import dataclasses
import importlib
import math
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend
from rule_support import QUESTION, SMALL, TOWER, is_step, run

import seakr_integrations.reasoning.rules as rules_package
from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.choices import choice_needs_samples, pick_final, pick_passage
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.rules import (
    DEFAULT_RULES,
    RULES,
    ClaimCheck,
    FinalMargin,
    PassageLimit,
    Rule,
    TokenCascade,
    parse_rules,
    rules_from_json,
)

TESTS = Path(__file__).parent


# ------------------------------------------------------------------------------------- the paper's choices
@pytest.mark.parametrize(
    ("uncertainties", "kept"),
    [
        ([1.0, 0.5, 2.0], 1),  # the least uncertain
        ([1.0, 1.0, 2.0], 0),  # a tie keeps the search order
        ([math.inf, 3.0, 2.0], 2),  # an unscorable candidate loses to any scorable one
        ([math.inf, math.inf], 0),
        ([2.0], 0),
    ],
)
def test_pick_passage(uncertainties, kept):
    assert pick_passage(uncertainties) == kept


def test_pick_passage_needs_a_candidate():
    with pytest.raises(ValueError, match="at least one"):
        pick_passage([])


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


@pytest.mark.parametrize("bad", [-0.1, float("nan")])
def test_pick_final_refuses_a_bad_margin(bad):
    with pytest.raises(ValueError, match="margin"):
        pick_final(1.0, 2.0, margin=bad)


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


# -------------------------------------------------------------------------------------- the configuration
def test_the_config_holds_the_papers_hyper_parameters_and_one_rules_field():
    names = [f.name for f in dataclasses.fields(SeaKRConfig)]
    assert len(names) <= 15 and names[-1] == "rules"
    default, paper = SeaKRConfig(), SeaKRConfig.paper()
    assert default.rules == DEFAULT_RULES and paper.rules == ()
    assert paper == SeaKRConfig(rules=()) == default.with_(rules=())  # the same code path, no rules
    assert (paper.k, paper.max_tokens, paper.max_steps, paper.max_docs) == (20, 100, 7, 5)  # the authors' values
    assert SeaKRConfig.paper(k=4, delta=-2.0) == SeaKRConfig(rules=(), k=4, delta=-2.0)
    assert SeaKRConfig.paper(rules=(FinalMargin(),)).rules == (FinalMargin(),)  # an override wins


def test_rules_are_recorded_by_name_and_read_back():
    config = SeaKRConfig(rules=(TokenCascade(band=(0.2, 0.9)), FinalMargin(1.0), PassageLimit(3)))
    recorded = config.to_dict()["rules"]
    assert recorded == [
        {"rule": "token-cascade", "estimator": "min_token_prob", "band": [0.2, 0.9], "agreement": 0.9},
        {"rule": "final-margin", "margin": 1.0},
        {"rule": "passage-limit", "max_passages": 3},
    ]
    assert SeaKRConfig(**config.to_dict()) == config
    assert rules_from_json([r.to_dict() for r in DEFAULT_RULES]) == DEFAULT_RULES
    assert SeaKRConfig().to_dict()["rules"][:2] == [
        {"rule": "search-question-first"},
        {"rule": "claim-check", "entities": "english", "query": "entity", "backing": "page"},
    ]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("default", [r.name for r in DEFAULT_RULES]),
        ("paper", []),
        ("", []),
        ("default,-claim-check", [r.name for r in DEFAULT_RULES if r.name != "claim-check"]),
        ("paper,keep-first-result", ["keep-first-result"]),
        (" final-margin , claim-check ", ["final-margin", "claim-check"]),
        ("default,claim-check", [r.name for r in DEFAULT_RULES]),  # given twice: once
    ],
)
def test_the_rules_argument(text, names):
    assert [r.name for r in parse_rules(text)] == names
    assert [r.name for r in SeaKRConfig(rules=text).rules] == names


@pytest.mark.parametrize(
    ("rules", "error", "match"),
    [
        ("default,claim-chek", ValueError, "did you mean 'claim-check'"),
        ("-claim-check", ValueError, "removes a rule not given"),
        ((ClaimCheck, FinalMargin()), TypeError, r"did you mean ClaimCheck\(\)"),
        ((ClaimCheck(), ClaimCheck()), ValueError, "claim-check given more than once"),
        ((FinalMargin(), "nope"), TypeError, "'nope' is not a Rule"),
        (FinalMargin(), TypeError, "pass a tuple of Rule objects"),
        (5, TypeError, "pass a tuple of Rule objects"),
        ([{"rule": "final-margin", "margn": 1}], ValueError, "final-margin has no parameter margn"),
        ([{"rule": "claim-check", "entities": "klingon"}], ValueError, "entity finder 'klingon'"),
        ([{"margin": 1}], ValueError, "not a recorded rule"),
    ],
)
def test_bad_rules_are_refused_saying_what_to_pass(rules, error, match):
    with pytest.raises(error, match=match):
        SeaKRConfig(rules=rules)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: TokenCascade(estimator="eigenscore"), "greedy continuation alone"),
        (lambda: TokenCascade(estimator="nope"), "estimator"),
        (lambda: TokenCascade(band=(2.0, 1.0)), "low edge"),
        (lambda: TokenCascade(band=(1.0,)), "two numbers"),
        (lambda: TokenCascade(band=(1.0, float("nan"))), "finite"),
        (lambda: FinalMargin(-0.5), "margin=-0.5"),
        (lambda: FinalMargin(True), "margin"),
        (lambda: PassageLimit(0), "max_passages"),
        (lambda: ClaimCheck(entities="english"), "pass an EntityFinder"),
    ],
)
def test_bad_rule_parameters_are_refused(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_every_rule_is_one_module_with_its_own_test():
    modules = [m.name for m in pkgutil.iter_modules(rules_package.__path__) if m.name != "base"]
    defined = {}
    for name in modules:
        module = importlib.import_module(f"{rules_package.__name__}.{name}")
        classes = [
            c
            for c in vars(module).values()
            if isinstance(c, type) and issubclass(c, Rule) and c.__module__ == module.__name__
        ]
        assert len(classes) == 1, f"{name} should define one rule"
        defined[classes[0].name] = name
        assert (TESTS / f"test_rule_{name}.py").is_file(), f"the rule {name} has no test_rule_{name}.py"
    assert set(defined) == set(RULES)
    for cls in RULES.values():
        assert (
            cls.__doc__
            and cls.name
            and cls.decision in ("when to retrieve", "which passage", "when to stop", "how to answer")
        )


# ------------------------------------------------------------------------------- a rule of a user's own
@dataclass(frozen=True)
class NeverTrustDates(Rule):
    """A step that states a year retrieves (a rule written outside the package, for this test)."""

    name: ClassVar[str] = "never-trust-dates"
    decision: ClassVar[str] = "when to retrieve"

    def reads_greedy_step(self) -> bool:
        return True

    def read_step(self, state, text, output):
        return GateReason.UNSUPPORTED_CLAIM if re.search(r"\b1\d{3}\b", text) else None


def test_a_rule_of_ones_own_is_one_class():
    def respond(prompt, config):
        if not is_step(config) or "Context:" in prompt:
            return Reply("So the answer is France.")
        return Reply("It was finished in 1889.")

    backend = ScriptedBackend(respond)
    result = SeaKR(backend, FakeRetriever(default=[TOWER]), SeaKRConfig(**SMALL, rules=(NeverTrustDates(),))).answer(
        QUESTION
    )
    assert result.steps[0].reason == GateReason.UNSUPPORTED_CLAIM and result.passages == [TOWER]
    assert result.config["rules"] == [{"rule": "never-trust-dates"}]
    paper, _ = run(SeaKRConfig.paper(**{**SMALL, "delta": 100.0}), respond)
    assert paper.passages == []  # the paper's gate trusts the certain step


# ------------------------------------------------------------------------------------------- the paper's gate
def test_the_papers_config_reads_every_step_with_its_samples_in_one_call():
    def respond(prompt, config):
        if not is_step(config) or "Context" in prompt:
            return Reply("So the answer is France.")
        return Reply("The Eiffel Tower is in Paris.", spread=5.0)

    backend = ScriptedBackend(respond)
    result = SeaKR(backend, FakeRetriever(default=[TOWER]), SeaKRConfig.paper(**SMALL)).answer(QUESTION)
    assert all(c.k > 0 for batch in backend.batches for _, c in batch)
    assert result.steps[0].reason == GateReason.UNCERTAIN and result.steps[0].screen is None
    paper, _ = run(SeaKRConfig.paper(**SMALL))
    assert [(c.passage.id, c.chosen) for c in paper.steps[0].candidates] == [("p1", False), ("p2", True), ("p3", False)]
