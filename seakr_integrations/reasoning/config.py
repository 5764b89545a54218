"""Every setting of SeaKR in one typed object: the authors' hyper-parameters (SPEC sections 4-7) and the decision
rules (``rules``).

One object so that a run is described completely by it: the trace records it, evaluation varies it, and the
framework adapters pass it through unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from seakr_integrations.params import SamplingConfig, check_choice, check_flag, check_int, check_real
from seakr_integrations.reasoning.flat_sampling import SAMPLING_SETTINGS, SEAKR_SAMPLING, flat_sampling
from seakr_integrations.reasoning.rules import (
    DEFAULT_RULES,
    LIGHT_RULES,
    Rule,
    RuleSet,
    check_rules,
    parse_rules,
    rules_from_json,
)
from seakr_integrations.reasoning.rules.state_probe import check_probe_readout
from seakr_integrations.uncertainty.eigenscore import DEFAULT_ALPHA
from seakr_integrations.uncertainty.registry import check_estimator

__all__ = [
    "BASE_STOPS",
    "ExemplarStyle",
    "FinalStrategy",
    "Mode",
    "RetrievePolicy",
    "SAMPLING_SETTINGS",
    "SEAKR_SAMPLING",
    "SENTENCE_STOP",
    "SETTING_NAMES",
    "STEP_STOP",
    "SeaKRConfig",
    "changed_settings",
    "check_alpha",
]

Mode = Literal["multi_hop", "single_hop"]
RetrievePolicy = Literal["uncertain", "always", "never"]
FinalStrategy = Literal["choose", "rationales", "knowledge"]
ExemplarStyle = Literal["2wiki", "hotpotqa", "simple"]

BASE_STOPS = ("\n\n", "\nQuestion:", "\nContext")
"""Stop strings of every call (SPEC section 4)."""
STEP_STOP = "\n"
"""Added once at least one step is in the prompt."""
SENTENCE_STOP = ". "
"""Added to reasoning-step calls, so each step is one sentence."""

_PASS_DELTA = (
    "a float such as -6.0 (calibrate it with `seakr calibrate`), or None for the calibrated one; to retrieve at every "
    "step or never, set retrieve='always' or retrieve='never'"
)


def check_alpha(alpha: object, why: str = "") -> float:
    """EigenScore's ridge as a float, refused unless positive (so that the log-determinant exists) and finite."""
    expected = f"a small positive float (SeaKR: {DEFAULT_ALPHA})"
    refusal = f"EigenScore's ridge must be positive{why} (SeaKR: {DEFAULT_ALPHA})"
    return check_real("alpha", alpha, expected, 0, open_low=True, refusal=refusal, raw=True)


@flat_sampling
@dataclass(frozen=True)
class SeaKRConfig:
    """SeaKR's settings: the paper's hyper-parameters, and the decision rules that change its decisions.

    ``SeaKRConfig()`` runs the paper's hyper-parameters with the default rules (``rules.DEFAULT_RULES``, each
    measured in ``docs/decision_rules.md``); ``SeaKRConfig.paper()`` is the same code path with no rules: the
    authors' SeaKR.

    Attributes:
        mode: ``"multi_hop"`` (the iterative loop of SPEC section 5) or ``"single_hop"`` (one retrieval at most).
        sampling: The ``SamplingConfig`` of every LM call (``k``, ``temperature``, ``top_k``, ``top_p``,
            ``max_tokens``, ``min_tokens``, ``seed``, ``layer``, ``source``; ``k >= 2`` here), default
            ``SEAKR_SAMPLING``, without ``stop`` (SeaKR sets each call's).  Each is also a keyword and a read-only
            attribute: ``SeaKRConfig(k=10)`` is ``SeaKRConfig(sampling=SEAKR_SAMPLING.with_(k=10))``, ``config.k``
            is ``config.sampling.k``.
        estimator: A name in ``seakr_integrations.uncertainty.REGISTRY``: ``"eigenscore"`` is SeaKR, the others the
            paper's ablations; ``"prompt"`` asks the model after every call whether it knows enough (one call more).
        alpha: EigenScore's ridge (positive and finite).
        delta: Retrieve when the uncertainty is above it (a finite number; to retrieve always or never, set
            ``retrieve``).  Its scale depends on model and settings, so ``None`` takes the calibrated one when
            ``SeaKR`` is built (``resolve_config``): your ``seakr calibrate`` profile, else the package's for its
            bundled models, else the authors' -6.0 with an ``UncalibratedDeltaWarning``.
        n_candidates: Passages retrieved per query (N), re-ranked by uncertainty in the paper.
        max_steps: Reasoning steps after which the loop stops (the paper: 7; the default rules stop after two,
            ``StepLimit``).
        max_docs: Kept passages after which the loop stops (the paper: 5; ``PassageLimit`` stops earlier).
        mask_threshold: Query building keeps a word whose tokens all have probability >= this (FLARE masking).
        exemplar_style: ``"2wiki"``, ``"hotpotqa"`` or ``"simple"``; ``None``: ``"simple"`` for single-hop,
            ``"hotpotqa"`` for multi-hop.
        num_exemplars: How many exemplars of the style to show (the paper: 10).
        chat_template: Wrap prompts in the model's chat template; ``None`` does so when the tokenizer has one.
        retrieve: ``"uncertain"`` (SeaKR's self-aware gate, U > delta), ``"always"`` (the paper's "w/o self-aware
            retrieval" ablation) or ``"never"`` (the model's own knowledge).
        final_strategy: Multi-hop final answer: ``"choose"`` between the rationales-based and the knowledge-based
            answer (SeaKR), or always ``"rationales"`` or ``"knowledge"`` (the paper's Table 3 ablations; only that
            answer is generated).
        rules: The decision rules, consulted in order (``seakr_integrations.reasoning.rules``): Rule objects, their
            recorded form (``Rule.to_dict``), or the ``--rules`` text (``"default,-claim-check"``).  ``()`` is the
            paper.
    """

    mode: Mode = "multi_hop"
    sampling: SamplingConfig = field(default=SEAKR_SAMPLING, kw_only=True)
    estimator: str = "eigenscore"
    alpha: float = DEFAULT_ALPHA
    delta: float | None = None
    n_candidates: int = 3
    max_steps: int = 7
    max_docs: int = 5
    mask_threshold: float = 0.9
    exemplar_style: ExemplarStyle | None = None
    num_exemplars: int = 10
    chat_template: bool | None = None
    retrieve: RetrievePolicy = "uncertain"
    final_strategy: FinalStrategy = "choose"
    rules: tuple[Rule, ...] = DEFAULT_RULES

    def __post_init__(self) -> None:
        check_choice("mode", self.mode, Mode)
        check_estimator(self.estimator)
        checked: dict[str, Any] = {
            "alpha": check_alpha(self.alpha, " so that the log-determinant exists; pass a small positive float")
        }
        if self.delta is not None:
            checked["delta"] = check_real("delta", self.delta, _PASS_DELTA)
        rule = "a probability in [0, 1] (SeaKR: 0.9)"
        checked["mask_threshold"] = check_real("mask_threshold", self.mask_threshold, rule, 0, 1, refusal=rule)
        for name in ("n_candidates", "max_steps", "max_docs"):
            checked[name] = check_int(name, getattr(self, name), "an integer >= 1", 1)
        checked["num_exemplars"] = check_int("num_exemplars", self.num_exemplars, "an integer >= 0 (the paper: 10)", 0)
        if self.exemplar_style is not None:
            check_choice("exemplar_style", self.exemplar_style, ExemplarStyle)
        check_flag(
            "chat_template",
            self.chat_template,
            "pass True, False, or None (use it when the tokenizer has one)",
            none=True,
        )
        check_choice("retrieve", self.retrieve, RetrievePolicy, "SeaKR")
        check_choice("final_strategy", self.final_strategy, FinalStrategy, "SeaKR")
        checked["rules"] = _read_rules(self.rules)
        check_probe_readout(checked["rules"], self.sampling.layer, self.sampling.source)  # a probe reads its own layer
        if self.sampling.k == 0:  # the rest of the sampling settings were validated by SamplingConfig
            raise ValueError(
                "k=0: SeaKR's loop measures every call's uncertainty from k samples; use k >= 2 (SeaKR: 20)"
            )
        if self.sampling.stop:
            raise ValueError(
                f"sampling.stop={list(self.sampling.stop)!r}: SeaKR sets each call's stops itself (SPEC section 4)"
            )
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @property
    def style(self) -> str:
        """The exemplar style in effect."""
        return self.exemplar_style or ("simple" if self.mode == "single_hop" else "hotpotqa")

    @property
    def rule_set(self) -> RuleSet:
        """The rules as the loop consults them."""
        return RuleSet(self.rules)

    def call_sampling(self, stop: tuple[str, ...] = ()) -> SamplingConfig:
        """The back-end parameters of one SeaKR call with the given stop strings (default: ``BASE_STOPS``)."""
        return self.sampling.with_(stop=stop or BASE_STOPS)

    @staticmethod
    def stops(has_steps: bool, one_sentence: bool) -> tuple[str, ...]:
        """SPEC section 4: base stops, ``"\\n"`` once a step exists, ``". "`` for a reasoning-step call."""
        added = (STEP_STOP if has_steps else "", SENTENCE_STOP if one_sentence else "")
        return tuple(dict.fromkeys([*BASE_STOPS, *filter(None, added)]))

    @classmethod
    def paper(cls, **changes: Any) -> SeaKRConfig:
        """The authors' decisions (Algorithm 1 with no rules) on the paper's hyper-parameters, with one difference that
        stays: ``min_tokens=1``, so that no step is empty before it is read (the authors' code allows an empty step,
        which has no uncertainty and always retrieves; ``min_tokens=0`` restores it).  ``changes`` set other fields
        (``SeaKRConfig.paper(k=10, delta=-1.1)``)."""
        return cls(**{"rules": (), **changes})

    @classmethod
    def light(cls, **changes: Any) -> SeaKRConfig:
        """A light preset for a laptop CPU, the notebooks' settings: about a minute a question with SmolLM2-135M on two
        cores, with delta profiles shipped for it too, and the light rules (``rules.LIGHT_RULES``: the default ones
        and ``AnswerAlone``); ``changes`` set other fields (``SeaKRConfig.light(k=8)``)."""
        return cls(**{**LIGHT, **changes})

    def with_(self, **changes: Any) -> SeaKRConfig:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form, recorded in every trace and results file: the sampling settings flat, in
        ``sampling``'s place, and each rule by name with its parameters, so ``SeaKRConfig(**d)`` reads it back."""
        out: dict[str, Any] = {}
        for key, value in _settings(self).items():
            if key == "rules":
                out[key] = [r.to_dict() for r in value]
            else:
                out[key] = list(value) if isinstance(value, tuple) else value
        return out


SETTING_NAMES: tuple[str, ...] = tuple(
    name for f in fields(SeaKRConfig) for name in (SAMPLING_SETTINGS if f.name == "sampling" else (f.name,))
)
"""Every setting of ``SeaKRConfig`` by the name users write, in field order, the sampling settings flat: what a
component that takes ``config=`` names for a keyword that belongs in the config (``keywords.check_keywords``)."""

LIGHT: dict[str, Any] = {"k": 10, "max_tokens": 32, "num_exemplars": 4, "max_steps": 2, "rules": LIGHT_RULES}
"""What ``SeaKRConfig.light()`` changes (its calibration profiles are shipped with these settings)."""


def _read_rules(rules: Any) -> tuple[Rule, ...]:
    """``rules`` in any of its accepted forms as a checked tuple of ``Rule`` objects."""
    if isinstance(rules, str):
        return parse_rules(rules)
    if isinstance(rules, (list, tuple)) and rules and all(isinstance(r, Mapping) for r in rules):
        return rules_from_json(rules)
    return check_rules(rules)


def changed_settings(config: SeaKRConfig) -> dict[str, Any]:
    """The settings of ``config`` that differ from ``SeaKRConfig()``'s defaults: what a repr shows, and what a
    component's config says "otherwise" about the settings it would take from its model."""
    default = _settings(SeaKRConfig())
    return {name: value for name, value in _settings(config).items() if value != default[name]}


def _settings(config: SeaKRConfig) -> dict[str, Any]:
    """Every setting of ``config`` by the name users write (``SETTING_NAMES``)."""
    return {name: getattr(config, name) for name in SETTING_NAMES}
