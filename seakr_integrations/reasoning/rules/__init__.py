"""SeaKR's decision rules beyond the paper's, one small class per module (``base.Rule`` says what a rule is).
Importing a rule's module registers it by name in :data:`RULES`; this package imports its own.

``SeaKRConfig(rules=...)`` takes a tuple of them; ``SeaKRConfig()`` runs :data:`DEFAULT_RULES`, and
``SeaKRConfig.paper()`` none.  :func:`parse_rules` reads the ``--rules`` form (``default,-claim-check``) and
:func:`rules_from_json` the form results files and traces record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from difflib import get_close_matches
from typing import Any

from seakr_integrations.reasoning.rules.accept_covered_steps import AcceptCoveredSteps
from seakr_integrations.reasoning.rules.anchor_queries import AnchorQueries
from seakr_integrations.reasoning.rules.answer_alone import AnswerAlone
from seakr_integrations.reasoning.rules.answer_from_passages import AnswerFromPassages
from seakr_integrations.reasoning.rules.answer_with_option import AnswerWithOption
from seakr_integrations.reasoning.rules.base import (
    DECISIONS,
    HOOKS,
    RULES,
    Decision,
    Hook,
    Reads,
    Rule,
)
from seakr_integrations.reasoning.rules.claim_check import ClaimCheck
from seakr_integrations.reasoning.rules.cover_compared_entities import CoverComparedEntities
from seakr_integrations.reasoning.rules.final_from_tokens import FinalFromTokens
from seakr_integrations.reasoning.rules.final_margin import FinalMargin
from seakr_integrations.reasoning.rules.keep_first_result import KeepFirstResult
from seakr_integrations.reasoning.rules.no_knowledge_without_passages import NoKnowledgeWithoutPassages
from seakr_integrations.reasoning.rules.passage_limit import PassageLimit
from seakr_integrations.reasoning.rules.rule_set import RuleSet, consulting_order
from seakr_integrations.reasoning.rules.sample_finals_when_they_differ import SampleFinalsWhenTheyDiffer
from seakr_integrations.reasoning.rules.search_question_first import SearchQuestionFirst
from seakr_integrations.reasoning.rules.spacy_query_words import SpacyQueryWords
from seakr_integrations.reasoning.rules.state_probe import StateProbe
from seakr_integrations.reasoning.rules.step_limit import StepLimit
from seakr_integrations.reasoning.rules.stop_on_repeated_step import StopOnRepeatedStep
from seakr_integrations.reasoning.rules.token_cascade import TokenCascade

__all__ = [
    "DECISIONS",
    "DEFAULT_RULES",
    "HOOKS",
    "LIGHT_RULES",
    "PRESETS",
    "RULES",
    "AcceptCoveredSteps",
    "AnchorQueries",
    "AnswerAlone",
    "AnswerFromPassages",
    "AnswerWithOption",
    "ClaimCheck",
    "CoverComparedEntities",
    "Decision",
    "FinalFromTokens",
    "FinalMargin",
    "Hook",
    "KeepFirstResult",
    "NoKnowledgeWithoutPassages",
    "PassageLimit",
    "Reads",
    "Rule",
    "RuleSet",
    "SampleFinalsWhenTheyDiffer",
    "SearchQuestionFirst",
    "SpacyQueryWords",
    "StateProbe",
    "StepLimit",
    "StopOnRepeatedStep",
    "TokenCascade",
    "check_rules",
    "parse_rules",
    "rules_from_json",
]

DEFAULT_RULES: tuple[Rule, ...] = (
    SearchQuestionFirst(),
    ClaimCheck(),
    AcceptCoveredSteps(),
    AnchorQueries(),
    KeepFirstResult(),
    CoverComparedEntities(),
    StopOnRepeatedStep(),
    StepLimit(),
    NoKnowledgeWithoutPassages(),
    AnswerFromPassages(),
    AnswerWithOption(),
)
"""The ``default`` preset, what ``SeaKRConfig()`` runs, in the order the loop consults them: the question's own
search first, then at most two steps that search for a name no kept passage is about, and the answer from the
passages; chosen by cross-validation among eight such loops (``docs/decision_rules.md``).  Not among them:
``PassageLimit``, ``SampleFinalsWhenTheyDiffer``, ``FinalMargin`` and ``FinalFromTokens`` (measured, not chosen) and
``TokenCascade`` (it lost F1 in the previous default, and steps here are sampled only when they name nothing)."""

LIGHT_RULES: tuple[Rule, ...] = (*DEFAULT_RULES, AnswerAlone())
"""The ``light`` preset, what ``SeaKRConfig.light()`` runs: the default rules, and a final generation that is the
answer alone read as the answer (the light preset's small model and four exemplars need it)."""

PRESETS: dict[str, tuple[Rule, ...]] = {"default": DEFAULT_RULES, "light": LIGHT_RULES, "paper": ()}
"""Named rule sets: ``default`` (``SeaKRConfig()``), ``light`` (``SeaKRConfig.light()``) and ``paper`` (none:
``SeaKRConfig.paper()``)."""


def check_rules(rules: object) -> tuple[Rule, ...]:
    """``rules`` as a tuple of ``Rule`` objects, each at most once, in the order the loop consults them
    (``rule_set.consulting_order``); a ``TypeError`` or ``ValueError`` that says what to pass otherwise."""
    if isinstance(rules, (str, bytes, Rule)) or not isinstance(rules, Iterable):
        raise TypeError(
            f"rules={rules!r}: pass a tuple of Rule objects, e.g. (ClaimCheck(), FinalMargin(0.5)), or "
            "parse_rules('default,-claim-check')"
        )
    checked = tuple(rules)
    for rule in checked:
        if not isinstance(rule, Rule):
            hint = f" (did you mean {rule.__name__}()?)" if isinstance(rule, type) and issubclass(rule, Rule) else ""
            raise TypeError(f"rules: {rule!r} is not a Rule object{hint}")
    names = [r.name for r in checked]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"rules: {', '.join(twice)} given more than once; give each rule once")
    unregistered = [r for r in checked if RULES.get(r.name) is not type(r)]
    if unregistered:
        rule = unregistered[0]
        raise ValueError(
            f"rules: {type(rule).__name__} is not the rule registered as {rule.name!r}; give a Rule subclass a "
            "name of its own (class attribute name = '...')"
        )
    return consulting_order(checked)


def _unknown(name: str) -> ValueError:
    known = [*PRESETS, *RULES]
    close = get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ValueError(
        f"unknown rule {name!r}{hint}; the presets are {', '.join(PRESETS)}, the rules {', '.join(RULES)}"
    )


def parse_rules(text: str) -> tuple[Rule, ...]:
    """Rules from the ``--rules`` form: comma-separated presets (``default``, ``paper``), rule names (added with
    their default parameters) and ``-name`` (removed): ``"default,-claim-check"``, ``"paper,keep-first-result"``.
    An empty text is ``paper`` (no rules)."""
    rules: list[Rule] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item.startswith("-"):
            name = item[1:].strip()
            if name not in RULES:
                raise _unknown(name)
            if not any(r.name == name for r in rules):
                start = "" if rules else f"; start from the rules it is removed from, e.g. default,-{name}"
                raise ValueError(f"--rules {text!r}: -{name} removes a rule not given before it{start}")
            rules = [r for r in rules if r.name != name]
        elif item in PRESETS:
            rules += [r for r in PRESETS[item] if all(r.name != s.name for s in rules)]
        elif item in RULES:
            if all(r.name != item for r in rules):
                rules.append(RULES[item]())
        else:
            raise _unknown(item)
    return consulting_order(rules)


def rules_from_json(data: Sequence[Mapping[str, Any]]) -> tuple[Rule, ...]:
    """Rules as ``Rule.to_dict`` wrote them (a results file's or trace's ``rules``), each read back by its own class
    (``Rule.from_dict``) found by name in :data:`RULES`."""
    rules = []
    for item in data:
        if not isinstance(item, Mapping) or "rule" not in item:
            raise ValueError(f"rules: {item!r} is not a recorded rule (a mapping with 'rule' and its parameters)")
        cls = RULES.get(str(item["rule"]))
        if cls is None:
            raise ValueError(
                f"{_unknown(str(item['rule']))}; a rule of your own registers when its class is defined: import the "
                "module that defines it before reading the file"
            )
        rules.append(cls.from_dict(item))
    return check_rules(rules)
