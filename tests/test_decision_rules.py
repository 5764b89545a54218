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
from seakr_integrations.evaluation.results import ResultsFile, read_traces, run_settings
from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.choices import choice_needs_samples, pick_final, pick_passage
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.rules import (
    DECISIONS,
    DEFAULT_RULES,
    HOOKS,
    RULES,
    ClaimCheck,
    FinalMargin,
    PassageLimit,
    Reads,
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
    assert recorded == [  # in the order the loop consults them
        {"rule": "token-cascade", "estimator": "min_token_prob", "band": [0.2, 0.9], "agreement": 0.9},
        {"rule": "passage-limit", "max_passages": 3},
        {"rule": "final-margin", "margin": 1.0},
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
        (" final-margin , claim-check ", ["claim-check", "final-margin"]),  # consulted in one order, whatever given
        ("default,claim-check", [r.name for r in DEFAULT_RULES]),  # given twice: once
        ("default,-claim-check,claim-check", [r.name for r in DEFAULT_RULES]),  # removed and added: the same place
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
        ([{"rule": "claim-check", "entities": "klingon"}], ValueError, "no entity finder is named 'klingon'"),
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
    modules = [m.name for m in pkgutil.iter_modules(rules_package.__path__) if m.name not in ("base", "rule_set")]
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
    assert set(defined) == {n for n, c in RULES.items() if c.__module__.startswith("seakr_integrations.")}
    for cls in RULES.values():
        assert cls.__doc__ and cls.name and set(cls.decisions()) <= set(DECISIONS)


# ------------------------------------------------------------------------------- a rule of a user's own
STATES_A_YEAR = GateReason.register("states_a_year", "The step states a year: retrieve.", retrieves=True)


@dataclass(frozen=True)
class NeverTrustDates(Rule):
    """A step that states a year retrieves (a rule written outside the package, for this test)."""

    name: ClassVar[str] = "never-trust-dates"
    decision: ClassVar[str] = "when to retrieve"

    def reads(self) -> Reads:
        return Reads(greedy_step=True)

    def read_step(self, state, text, output):
        return STATES_A_YEAR if re.search(r"\b1\d{3}\b", text) else None


def test_a_rule_of_ones_own_is_one_class():
    def respond(prompt, config):
        if not is_step(config) or "Context:" in prompt:
            return Reply("So the answer is France.")
        return Reply("It was finished in 1889.")

    backend = ScriptedBackend(respond)
    result = SeaKR(backend, FakeRetriever(default=[TOWER]), SeaKRConfig(**SMALL, rules=(NeverTrustDates(),))).answer(
        QUESTION
    )
    assert result.steps[0].reason == STATES_A_YEAR and result.passages == [TOWER]
    assert GateReason("states_a_year") is STATES_A_YEAR and result.config["rules"] == [{"rule": "never-trust-dates"}]
    assert RULES["never-trust-dates"] is NeverTrustDates  # registered by being defined
    paper, _ = run(SeaKRConfig.paper(**{**SMALL, "delta": 100.0}), respond)
    assert paper.passages == []  # the paper's gate trusts the certain step


def test_a_rule_of_ones_own_is_recorded_and_reads_back_from_a_results_file(tmp_path):
    def respond(prompt, config):
        if not is_step(config) or "Context:" in prompt:
            return Reply("So the answer is France.")
        return Reply("It was finished in 1889.")

    config = SeaKRConfig(**SMALL, rules=(NeverTrustDates(), PassageLimit(2)))
    result = SeaKR(ScriptedBackend(respond), FakeRetriever(default=[TOWER]), config).answer(QUESTION)
    path = tmp_path / "results.jsonl"
    with ResultsFile.open(path, {"method": "seakr", "seakr": config.to_dict()}) as out:
        out.append({"id": "q1", "answer": result.answer, "trace": result.to_dict()})
    assert run_settings(path) == config  # the user's rule rebuilt from the header, by its own class
    ((qid, trace),) = list(read_traces(path))
    assert qid == "q1" and trace.answer == result.answer and trace.steps[0].reason == STATES_A_YEAR


def test_the_rule_of_ones_own_in_the_docs_runs_as_written():
    text = (TESTS.parent / "docs" / "decision_rules.md").read_text(encoding="utf-8")
    section = text.split("## A rule of your own", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {"__name__": "docs_decision_rules"}
    exec(compile(code, "docs/decision_rules.md", "exec"), namespace)
    config = namespace["config"]
    assert config.rules[-1].name == "distrust-years" and RULES["distrust-years"] is namespace["DistrustYears"]
    assert GateReason("names_a_year").retrieves


# ------------------------------------------------------------------------------------------- the protocol
def test_every_hook_has_one_decision_point_and_one_composition():
    overridable = {
        name
        for name, member in vars(Rule).items()
        if callable(member) and not name.startswith("_") and name not in ("decisions", "from_dict")
    }
    assert overridable - set(HOOKS) == {"reads", "learn", "calibrated", "uncalibrated", "to_dict"}  # not decisions
    assert {h.decision for h in HOOKS.values()} == set(DECISIONS)
    assert {h.composition for h in HOOKS.values()} <= {"first", "fold", "each", "all"}


def test_a_rule_changes_only_the_decisions_it_declares():
    with pytest.raises(TypeError, match=r"overrides narrow_candidates, a hook of which passage"):

        @dataclass(frozen=True)
        class Sneaky(Rule):
            name: ClassVar[str] = "sneaky"
            decision: ClassVar[str] = "when to retrieve"

            def read_step(self, state, text, output):
                return None

            def narrow_candidates(self, state, new, text, focus):
                return new[:1]

    with pytest.raises(TypeError, match="declares 'when to stop' and overrides no hook of it"):

        @dataclass(frozen=True)
        class Idle(Rule):
            name: ClassVar[str] = "idle"
            decision: ClassVar[str] = "when to stop"

    with pytest.raises(TypeError, match="'when to panic' is not a decision point"):

        @dataclass(frozen=True)
        class Lost(Rule):
            name: ClassVar[str] = "lost"
            decision: ClassVar[str] = "when to panic"

    with pytest.raises(TypeError, match="'claim-check' is seakr_integrations.reasoning.rules.claim_check.ClaimCheck's"):

        @dataclass(frozen=True)
        class Impostor(Rule):
            name: ClassVar[str] = "claim-check"
            decision: ClassVar[str] = "when to stop"

            def limit(self, state):
                return None

    assert "sneaky" not in RULES and "idle" not in RULES


def test_the_order_rules_are_given_in_changes_nothing():
    given = (FinalMargin(1.0), PassageLimit(3), ClaimCheck(), NeverTrustDates())
    assert [r.name for r in SeaKRConfig(rules=given).rules] == [
        "claim-check", "passage-limit", "final-margin", "never-trust-dates"
    ]  # fmt: skip
    assert SeaKRConfig(rules=given) == SeaKRConfig(rules=given[::-1])
    assert parse_rules("default,-claim-check,claim-check") == DEFAULT_RULES


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
