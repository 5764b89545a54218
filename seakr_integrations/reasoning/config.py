"""Every hyper-parameter of SeaKR in one typed object, with the authors' defaults (SPEC sections 4-7).

One object so that a run is described completely by it: the trace records it, evaluation varies it, and the
framework adapters pass it through unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from seakr_integrations.params import SamplingConfig, check_choice, check_flag, check_int, check_real, check_seconds
from seakr_integrations.reasoning.flat_sampling import SAMPLING_SETTINGS, SEAKR_SAMPLING, flat_sampling
from seakr_integrations.uncertainty.eigenscore import DEFAULT_ALPHA
from seakr_integrations.uncertainty.registry import REGISTRY, check_estimator

__all__ = [
    "PAPER_RULES",
    "ContentFilter",
    "ExemplarStyle",
    "FinalStrategy",
    "Mode",
    "RetrievalErrorPolicy",
    "RetrievePolicy",
    "SAMPLING_SETTINGS",
    "SEAKR_SAMPLING",
    "SeaKRConfig",
    "changed_settings",
    "check_alpha",
    "check_band",
]

Mode = Literal["multi_hop", "single_hop"]
ContentFilter = Literal["stopwords", "spacy"]
RetrievalErrorPolicy = Literal["raise", "answer_without"]
RetrievePolicy = Literal["uncertain", "always", "never"]
FinalStrategy = Literal["choose", "rationales", "knowledge"]
FinalSamples = Literal["deciding", "always"]
ExemplarStyle = Literal["2wiki", "hotpotqa", "simple"]


_PASS_DELTA = (
    "a float such as -6.0 (calibrate it with `seakr calibrate`), or None for the calibrated one; to retrieve at every "
    "step or never, set retrieve='always' or retrieve='never'"
)
_DEFAULT_TRUE = "must be True (the default) or False (the paper)"
_PAPER_FALSE = "must be True or False (the paper)"
_FLAGS = {  # the True/False settings (chat_template: or None) and what to pass
    "chat_template": "pass True, False, or None (use the template when the tokenizer has one)",
    "rerank": "must be True (the paper's self-aware re-ranking) or False (keep the search engine's first, the default)",
    "knowledge_needs_passages": _DEFAULT_TRUE,
    "stop_on_repeated_step": _DEFAULT_TRUE,
    "check_claims": _PAPER_FALSE,
    "cover_compared_entities": _PAPER_FALSE,
    "cover_bridge_entities": _PAPER_FALSE,
    "anchor_queries": _PAPER_FALSE,
    "answer_when_stated": _PAPER_FALSE,
    "answer_with_option": _PAPER_FALSE,
}
_GREEDY_ONLY = {  # the estimators that must read the greedy continuation alone
    "final_estimator": ": give an estimator that reads the greedy continuation alone ('min_token_prob', 'perplexity'), "
    "or None for the loop's estimator",
    "cascade_estimator": " needs samples or another call; the cascade's first stage reads the greedy continuation "
    "alone: use 'min_token_prob' or 'perplexity', or None for no cascade",
}


def check_alpha(alpha: object, why: str = "") -> float:
    """EigenScore's ridge as a float, refused unless positive (so that the log-determinant exists) and finite."""
    expected = f"a small positive float (SeaKR: {DEFAULT_ALPHA})"
    refusal = f"EigenScore's ridge must be positive{why} (SeaKR: {DEFAULT_ALPHA})"
    return check_real("alpha", alpha, expected, 0, open_low=True, refusal=refusal, raw=True)


def check_band(band: Any) -> tuple[float, float]:
    """A cascade band as ``(low, high)`` floats, refused unless it is two finite numbers with low <= high."""
    if isinstance(band, (str, bytes)) or not hasattr(band, "__len__") or len(band) != 2:
        raise ValueError(f"cascade_band={band!r}: give two numbers (sure_at_or_below, unsure_above), or None")
    low = check_real("cascade_band[0]", band[0], "a finite number")
    high = check_real("cascade_band[1]", band[1], "a finite number")
    if not low <= high:
        raise ValueError(f"cascade_band={band!r}: the low edge must not be above the high edge")
    return (low, high)


@flat_sampling
@dataclass(frozen=True)
class SeaKRConfig:
    """SeaKR's settings (``docs/design/reasoning.md`` has the measurements behind the defaults).

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
        n_candidates: Passages retrieved per query and re-ranked by uncertainty (N).
        max_steps: Reasoning steps after which the loop stops.
        max_docs: Chosen passages after which the loop stops: two by default, chosen by cross-validation for its
            cost (``docs/decision_rules.md``); the paper stops after five.
        base_stops: Stop strings of every call.
        step_stop: Added once at least one step is in the prompt.
        sentence_stop: Added to reasoning-step calls so each step is one sentence.
        mask_threshold: Query building keeps a word whose tokens all have probability >= this (FLARE masking).
        query_max_tokens: Queries are cut to their last this many tokens.
        content_filter: ``"stopwords"`` (built-in list) or ``"spacy"`` (POS tags, as the authors; needs spaCy and
            ``en_core_web_sm``).
        exemplar_style: ``"2wiki"``, ``"hotpotqa"`` or ``"simple"``; ``None``: ``"simple"`` for single-hop,
            ``"hotpotqa"`` for multi-hop.
        num_exemplars: How many exemplars of the style to show (the paper: 10).
        chat_template: Wrap prompts in the model's chat template; ``None`` does so when the tokenizer has one.
        on_retrieval_error: ``"raise"`` (the error names the question) or ``"answer_without"`` (answer with what
            was gathered so far and record the failure in the trace).
        search_timeout: Seconds one search may take before it fails with a ``TimeoutError`` (handled by
            ``on_retrieval_error``); ``None`` waits for ever.  A hung search is abandoned, not killed.  Not a method
            setting: results files and calibration profiles ignore it.
        retrieve: ``"uncertain"`` (SeaKR's self-aware gate, U > delta), ``"always"`` (the paper's "w/o self-aware
            retrieval" ablation) or ``"never"`` (the model's own knowledge).
        rerank: Re-rank each round's N search results by the model's uncertainty (the paper).  ``False`` keeps the
            search engine's first new passage and scores only it (N - 1 LM calls fewer per round).
        rerank_margin: With ``rerank``: keep the search engine's first new passage unless another is less uncertain
            by more than this (>= 0, in the estimator's units); 0, the paper, keeps the least uncertain.
        final_strategy: Multi-hop final answer: ``"choose"`` the less uncertain of the rationales-based and the
            knowledge-based answer (SeaKR), or always ``"rationales"`` or ``"knowledge"`` (the paper's Table 3
            ablations; only that answer is generated).
        final_margin: With ``"choose"``: the rationales-based answer wins only when its uncertainty is more than
            this below the knowledge-based one's (>= 0, estimator's units); 0, the paper: the less uncertain wins,
            a tie going to knowledge.
        final_samples: With ``"choose"``: ``"deciding"`` generates both answers without samples and samples each
            answer's own call only when the choice depends on it (both known and different); ``"always"``, the
            paper, samples every final call.
        knowledge_needs_passages: When the loop kept no passage, answer from the rationales alone (one LM call
            fewer), with ``final_strategy="knowledge"`` too.  ``False``, the paper, generates and compares both.
        stop_on_repeated_step: End the loop at a step that says what an earlier step said (case, punctuation and
            a/an/the aside).  ``False``, the paper, stops on a repeated query only.
        cascade_estimator: The cascade gate's first stage, an estimator of the greedy continuation alone: each step
            is generated greedily first, and the k samples are drawn only where this reading is inside
            ``cascade_band``.  Default ``"min_token_prob"`` (1 - the least likely token's probability); ``None``,
            the paper, samples at every step.
        cascade_band: ``(sure_at_or_below, unsure_above)`` in ``cascade_estimator``'s units.  ``None`` takes the
            band calibrated with delta (same profile); a model without one runs without the cascade.
        check_claims: A step that names an entity no kept passage covers is sent to retrieval, not accepted on
            confidence alone.  ``False``, the paper, trusts the gate.
        cover_compared_entities: A question that compares or joins entities ("X or Y", "X and Y") is not answered
            while one of them has no kept passage: SeaKR searches for it first (within ``max_steps`` and
            ``max_docs``).  ``False``, the paper, answers as soon as a step states an answer.
        cover_bridge_entities: Nor while a kept passage links the question to an entity no kept passage is about
            ("directed by George Marshall" for "where did the director of film X die?"): SeaKR searches for that
            bridge entity first, once each, and an answer stated before the last of them has its passage stays out
            of the chain.  ``False``, the paper, answers from the first passage.
        final_estimator: The estimator that compares the two final answers; ``None``: ``estimator``.  A greedy-only
            one (``"min_token_prob"``, ``"perplexity"``) draws no samples for the final answers.
        answer_when_stated: When the loop ends on a step that states the answer, give it and skip the final
            reasoning (two LM calls).  ``False``, the paper, reasons again from rationales and passages.
        answer_with_option: A question that closes on two options ("Which film ..., X or Y?") gets one of them: an
            answer naming neither becomes the option whose kept passage names it, else the other final answer when
            that names one.  ``False``, the paper, gives the answer as generated.
        anchor_queries: Keep queries on the question: one that names none of the question's entities still lacking
            a passage gets the first of them; one that shares no word with the question gets its content words.
            ``False``, the paper, searches the masked step as it is.
    """

    mode: Mode = "multi_hop"
    sampling: SamplingConfig = field(default=SEAKR_SAMPLING, kw_only=True)
    estimator: str = "eigenscore"
    alpha: float = DEFAULT_ALPHA
    delta: float | None = None
    n_candidates: int = 3
    max_steps: int = 7
    max_docs: int = 2
    base_stops: tuple[str, ...] = ("\n\n", "\nQuestion:", "\nContext")
    step_stop: str = "\n"
    sentence_stop: str = ". "
    mask_threshold: float = 0.9
    query_max_tokens: int = 64
    content_filter: ContentFilter = "stopwords"
    exemplar_style: ExemplarStyle | None = None
    num_exemplars: int = 10
    chat_template: bool | None = None
    on_retrieval_error: RetrievalErrorPolicy = "raise"
    search_timeout: float | None = 120.0
    retrieve: RetrievePolicy = "uncertain"
    rerank: bool = False
    rerank_margin: float = 0.0
    final_strategy: FinalStrategy = "choose"
    final_margin: float = 0.5
    final_samples: FinalSamples = "deciding"
    knowledge_needs_passages: bool = True
    stop_on_repeated_step: bool = True
    cascade_estimator: str | None = "min_token_prob"
    cascade_band: tuple[float, float] | None = None
    check_claims: bool = True
    cover_compared_entities: bool = True
    cover_bridge_entities: bool = False
    anchor_queries: bool = True
    final_estimator: str | None = None
    answer_when_stated: bool = False
    answer_with_option: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.base_stops, str):
            raise ValueError(
                f"base_stops={self.base_stops!r}: a list of strings, e.g. base_stops=[{self.base_stops!r}]"
            )
        object.__setattr__(self, "base_stops", tuple(self.base_stops))
        check_choice("mode", self.mode, Mode)
        check_estimator(self.estimator)
        checked: dict[str, Any] = {
            "alpha": check_alpha(self.alpha, " so that the log-determinant exists; pass a small positive float")
        }
        if self.delta is not None:
            checked["delta"] = check_real("delta", self.delta, _PASS_DELTA)
        rule = "a probability in [0, 1] (SeaKR: 0.9)"
        checked["mask_threshold"] = check_real("mask_threshold", self.mask_threshold, rule, 0, 1, refusal=rule)
        for name in ("n_candidates", "max_steps", "max_docs", "query_max_tokens"):
            checked[name] = check_int(name, getattr(self, name), "an integer >= 1", 1)
        checked["num_exemplars"] = check_int("num_exemplars", self.num_exemplars, "an integer >= 0 (the paper: 10)", 0)
        check_choice("content_filter", self.content_filter, ContentFilter)
        if self.exemplar_style is not None:
            check_choice("exemplar_style", self.exemplar_style, ExemplarStyle)
        check_choice("on_retrieval_error", self.on_retrieval_error, RetrievalErrorPolicy)
        if self.search_timeout is not None:
            checked["search_timeout"] = check_seconds(
                "search_timeout", self.search_timeout, ", or None to wait for ever"
            )
        check_choice("retrieve", self.retrieve, RetrievePolicy, "SeaKR")
        for name, best in (("rerank_margin", "least uncertain passage"), ("final_margin", "less uncertain answer")):
            rule = f">= 0 (0: the paper's {best})"
            checked[name] = check_real(name, getattr(self, name), f"a number {rule}", 0, refusal=f"must be {rule}")
        for name, refusal in _FLAGS.items():
            check_flag(name, getattr(self, name), refusal, none=name == "chat_template")
        for name, refusal in _GREEDY_ONLY.items():
            estimator = getattr(self, name)
            if estimator is not None:
                check_estimator(estimator)
                if not REGISTRY[estimator].needs <= {"greedy_logprobs"}:
                    raise ValueError(f"{name}={estimator!r}{refusal}")
        if self.cascade_band is not None:
            checked["cascade_band"] = check_band(self.cascade_band)
        check_choice("final_strategy", self.final_strategy, FinalStrategy, "SeaKR")
        check_choice("final_samples", self.final_samples, FinalSamples, "samples only where they decide")
        if self.sampling.k == 0:  # the rest of the sampling settings were validated by SamplingConfig
            raise ValueError(
                "k=0: SeaKR's loop measures every call's uncertainty from k samples; use k >= 2 (SeaKR: 20)"
            )
        if self.sampling.stop:
            raise ValueError(
                f"sampling.stop={list(self.sampling.stop)!r}: SeaKR sets each call's stops itself; set base_stops, "
                "step_stop or sentence_stop instead"
            )
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @property
    def style(self) -> str:
        """The exemplar style in effect."""
        return self.exemplar_style or ("simple" if self.mode == "single_hop" else "hotpotqa")

    def call_sampling(self, stop: tuple[str, ...] = ()) -> SamplingConfig:
        """The back-end parameters of one SeaKR call with the given stop strings (default: ``base_stops``)."""
        return self.sampling.with_(stop=stop or self.base_stops)

    def stops(self, has_steps: bool, one_sentence: bool) -> tuple[str, ...]:
        """SPEC section 4: base stops, ``"\\n"`` once a step exists, ``". "`` for a reasoning-step call."""
        added = (self.step_stop if has_steps else "", self.sentence_stop if one_sentence else "")
        return tuple(dict.fromkeys([*self.base_stops, *filter(None, added)]))

    @classmethod
    def paper(cls, **changes: Any) -> SeaKRConfig:
        """The authors' SeaKR exactly: the paper's re-ranking, final choice and stopping (``PAPER_RULES``), every
        other setting at its default; ``changes`` set other fields (``SeaKRConfig.paper(k=10, delta=-1.1)``)."""
        return cls(**{**PAPER_RULES, **changes})

    @classmethod
    def light(cls, **changes: Any) -> SeaKRConfig:
        """A light preset for a laptop CPU, the notebooks' settings: about a minute a question with SmolLM2-135M on two
        cores, with delta profiles shipped for it too; ``changes`` set other fields (``SeaKRConfig.light(k=8)``)."""
        return cls(**{"k": 10, "max_tokens": 32, "num_exemplars": 4, "max_steps": 2, **changes})

    @classmethod
    def calibrated(cls, backend: Any, *, root: Any = None, **settings: Any) -> SeaKRConfig:
        """A config whose delta and cascade band are those ``seakr calibrate`` saved for this back-end's model and
        these settings (``calibrated_config``: ``root`` is the profiles' directory; none: LookupError)."""
        from seakr_integrations.config_resolution import calibrated_config

        return calibrated_config(backend, cls(**settings), root)

    def with_(self, **changes: Any) -> SeaKRConfig:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form, recorded in every trace and results file: the sampling settings flat, in
        ``sampling``'s place, so ``SeaKRConfig(**d)`` reads it back and older files read the same."""
        return {key: list(v) if isinstance(v, tuple) else v for key, v in _settings(self).items()}


PAPER_RULES: dict[str, Any] = {
    "max_docs": 5,
    "rerank": True,
    "rerank_margin": 0.0,
    "final_margin": 0.0,
    "final_samples": "always",
    "knowledge_needs_passages": False,
    "stop_on_repeated_step": False,
    "cascade_estimator": None,
    "check_claims": False,
    "cover_compared_entities": False,
    "cover_bridge_entities": False,
    "anchor_queries": False,
    "final_estimator": None,
    "answer_when_stated": False,
    "answer_with_option": False,
}
"""The settings whose defaults differ from the paper's decisions, at the paper's values (``SeaKRConfig.paper()``;
``docs/decision_rules.md`` says why the defaults differ)."""


def changed_settings(config: SeaKRConfig) -> dict[str, Any]:
    """The settings of ``config`` that differ from ``SeaKRConfig()``'s defaults: what a repr shows, and what a
    component's config says "otherwise" about the settings it would take from its model."""
    default = _settings(SeaKRConfig())
    return {name: value for name, value in _settings(config).items() if value != default[name]}


def _settings(config: SeaKRConfig) -> dict[str, Any]:
    """Every setting of ``config`` by the name users write, in field order, the sampling settings flat."""
    names = [n for f in fields(config) for n in (SAMPLING_SETTINGS if f.name == "sampling" else (f.name,))]
    return {name: getattr(config, name) for name in names}
