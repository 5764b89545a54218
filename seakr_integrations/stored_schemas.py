"""One schema per kind of file seakr reads back, in one place: the delta profile (``calibration``) with what its
rules learned (the cascade band, the linear probe of ``uncertainty.linear_probe``), the results file's header
(``evaluation.results``) and the decision trace (``reasoning.trace``), which results records carry.
``stored.check`` applies them when a file is read; each reader says what to do about a refused file.

The profile and the probe are closed (a field they do not know is refused: it would be ignored, and it comes from
another version of seakr or an edit); a trace and a results header are open (older and newer ones carry fields this
release does not read).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from seakr_integrations.params import MAX_K, HiddenSource, choices
from seakr_integrations.stored import Field, FieldError, Schema, join
from seakr_integrations.uncertainty.registry import estimator_names

__all__ = ["CASCADE", "LEARNED", "PROBE", "PROBE_ENTRY", "PROFILE", "RESULTS_FORMAT", "RESULTS_HEADER", "TRACE"]

SOURCES = tuple(choices(HiddenSource))
TEXT = Field("text", "a string (or null)", null=True)
FINITE = Field("number", "a finite number")
PROBABILITY = Field("number", "a probability in [0, 1]", low=0, high=1)
COUNT = Field("int", "a whole number >= 0", low=0)
ANY_OBJECT = Field("object", "a JSON object")


# -- the linear probe ------------------------------------------------------------------------------------------------
def _one_width(probe: Mapping[str, Any], path: str) -> None:
    """``mean``, ``scale`` and ``weights`` hold one number per hidden dimension; ``width`` says how many."""
    width = len(probe["weights"])
    for name in ("mean", "scale"):
        if len(probe[name]) != width:
            raise FieldError(
                join(path, name),
                f"field {join(path, name)} holds {len(probe[name])} numbers and {join(path, 'weights')} {width}: "
                "a probe holds one of each per hidden dimension",
            )
    stored = probe.get("width")
    if stored is not None and stored != width:
        raise FieldError(
            join(path, "width"), f"field {join(path, 'width')} holds {stored}, but the probe has {width} weights"
        )
    for i, value in enumerate(probe["scale"]):
        if value <= 0:
            raise FieldError.wrong(join(join(path, "scale"), i), value, "a standard deviation > 0")


def _numbers(what: str) -> Field:
    return Field("list", f"a list of {what}, one per hidden dimension", required=True, each=FINITE)


PROBE = Schema(
    "linear probe",
    {
        "layer": Field("int", "the 0-based decoder layer it reads (an integer >= 0)", required=True, low=0),
        "source": Field("text", f"the hidden state it reads, one of {SOURCES}", required=True, choices=SOURCES),
        "label": Field("text", "what it predicts (a string)", required=True),
        "mean": _numbers("finite numbers"),
        "scale": _numbers("standard deviations > 0"),
        "weights": _numbers("finite numbers"),
        "bias": Field("number", "a finite number", required=True),
        "penalty": Field("number", "the L2 strength it was fitted with (a finite number >= 0)", required=True, low=0),
        "trained_on": Field("object", "what it was trained on (a JSON object)", null=True),
        "model": Field("text", "the model it was trained on (its name)", null=True),
        "width": Field("int", "the hidden size it reads (an integer >= 1)", low=1),
    },
    closed=True,
    also=(_one_width,),
)
"""``LinearProbe.to_dict()``: ``model`` and ``width`` may be absent in a probe inside a profile (the profile's model;
the number of weights)."""


# -- the rules' learned state (a profile's ``rules``) -----------------------------------------------------------------
VERDICT = Schema(
    "gate verdict",
    {
        "signal": Field("text", "the signal's name"),
        "questions": COUNT,
        "helps": COUNT,
        "informative": Field("bool", "true or false"),
        **{
            name: Field("number", "a probability in [0, 1] (or null)", null=True, low=0, high=1)
            for name in ("auroc", "auroc_low", "auroc_high", "target_rate", "realized_rate", "harm_rate")
        },
    },
)

LEARNED = Schema(
    "rule's learned state",
    {"verdict": Field("object", "what the calibration found the rule's signal knows", schema=VERDICT)},
)
"""What every rule's learned state shares (``DeltaProfile.rules``): the rest is the rule's own, which it checks when
it reads it (``profile_checks.learned_state``, with one of the schemas below)."""


def _ordered_band(cascade: Mapping[str, Any], path: str) -> None:
    band = cascade["band"]
    if len(band) != 2 or band[0] > band[1]:
        raise FieldError.wrong(join(path, "band"), band, "[low, high] with low <= high")


CASCADE = Schema(
    "cascade band",
    {
        "estimator": Field("text", "the greedy-only estimator's name", required=True),
        "band": Field("list", "[low, high]: two finite numbers", required=True, each=FINITE),
        "agreement": PROBABILITY,
        "decided": PROBABILITY,
    },
    also=(_ordered_band,),
)
"""The ``token-cascade`` rule's learned state: its band, calibrated with delta."""

PROBE_ENTRY = Schema(
    "stored state probe",
    {
        "probe": Field("object", "the probe (LinearProbe.to_dict())", required=True, schema=PROBE),
        "threshold": Field("number", "the probe's threshold, a probability in [0, 1]", required=True, low=0, high=1),
        "penalty_inner_auroc": Field("number", "a finite number (or null)", null=True),
        "verdict": Field("object", "what the calibration found the probe knows", schema=VERDICT),
    },
)
"""The ``state-probe`` rule's learned state: its probe, threshold and verdict."""


# -- the delta profile -----------------------------------------------------------------------------------------------
PROMPT = Schema(
    "prompt settings",
    {
        "exemplar_style": Field("text", "an exemplar style's name"),
        "num_exemplars": COUNT,
        "chat_template": Field("bool", "true, false or null", null=True),
    },
)

SWEEP_POINT = Schema("sweep point", {"delta": Field("number", "a finite number", required=True)})

PROFILE = Schema(
    "delta profile",
    {
        "model": Field("text", "the model's name", required=True),
        "layer": Field("int", "the 0-based layer read (an integer >= 0), or null", required=True, null=True, low=0),
        "source": Field("text", f"one of {SOURCES}", required=True, choices=SOURCES),
        "estimator": Field("text", f"one of {estimator_names()}", required=True, choices=estimator_names()),
        "k": Field("int", f"the samples per call, from 0 to {MAX_K}", required=True, low=0, high=MAX_K),
        "delta": Field("number", "the calibrated threshold, a finite number", required=True),
        "objective": Field("text", "'f1' or 'rate'", required=True, choices=("f1", "rate")),
        "target_rate": Field("number", "a retrieval rate in [0, 1], or null", null=True, low=0, high=1),
        "dataset": Field("text", "the calibration questions' file name"),
        "questions": COUNT,
        "sweep": Field("list", "a list of sweep points", each=Field("object", "a sweep point", schema=SWEEP_POINT)),
        "prompt": Field("object", "the prompt settings", schema=PROMPT),
        "rules": Field(
            "object", "each rule's learned state, by the rule's name", each=Field("object", "a state", schema=LEARNED)
        ),
        "verdict": Field("object", "the gate verdicts by signal", each=Field("object", "a verdict", schema=VERDICT)),
        "dtype": Field("text", "the dtype the model ran in (or null)", null=True),
    },
    closed=True,
)
"""``DeltaProfile.to_dict()``, as ``seakr calibrate`` saves it."""


# -- the results header ----------------------------------------------------------------------------------------------
RESULTS_FORMAT = "seakr-eval-results/1"
"""The results files' format, first line of every one (``evaluation.results``)."""

RUN_CONFIG = Schema(
    "run configuration",
    {
        "method": Field("text", "the method's name"),
        "dataset": Field("text", "the question file's name"),
        "seakr": Field("object", "the SeaKRConfig's settings (SeaKRConfig.to_dict()), or null", null=True),
    },
)

RESULTS_HEADER = Schema(
    "results header",
    {
        "format": Field("text", f"{RESULTS_FORMAT!r}", required=True),
        "fingerprint": Field("text", "the configuration's hash (a string)", required=True),
        "config": Field("object", "the run's configuration", required=True, schema=RUN_CONFIG),
    },
)


# -- the decision trace ----------------------------------------------------------------------------------------------
NUMBER = Field("trace_number", "a number, 'inf', '-inf' or 'nan' (or null)", null=True)
IDS = Field("list", "a list of ids (or null)", null=True, each=Field("id", "a string or an integer"))
TEXTS = Field("list", "a list of strings (or null)", null=True, each=Field("text", "a string"))

UNCERTAINTY = Schema(
    "uncertainty",
    {
        "value": NUMBER,
        "estimator": Field("text", "a string (the estimator's name)", required=True),
        "num_samples": Field("int", f"a whole number from 0 to {MAX_K}", required=True, low=0, high=MAX_K),
        "num_dropped": COUNT,
        "layer": Field("int", "a layer (or null)", null=True, low=0),
        "source": TEXT,
        "note": TEXT,
    },
)
MEASURED = Field("object", "an uncertainty record (or null)", null=True, schema=UNCERTAINTY)

CANDIDATE = Schema(
    "candidate passage",
    {
        "id": Field("id", "the passage's id", required=True),
        "title": TEXT,
        "text": TEXT,
        "search_rank": Field("int", "a whole number >= 1", required=True, low=1),
        "search_score": NUMBER,
        "generation": TEXT,
        "uncertainty": MEASURED,
        "rank_value": NUMBER,
        "chosen": Field("bool", "true or false"),
    },
)

STEP = Schema(
    "step",
    {
        "index": Field("int", "a whole number", required=True, low=0),
        "pseudo_generation": TEXT,
        "uncertainty": MEASURED,
        "decision": Field(
            "text", "'answer', 'accept' or 'retrieve'", required=True, choices=("answer", "accept", "retrieve")
        ),
        "query": TEXT,
        "masked_words": TEXTS,
        "candidates": Field(
            "list", "a list of candidates", null=True, each=Field("object", "a candidate", schema=CANDIDATE)
        ),
        "chosen_passage_id": Field("id", "a passage id (or null)", null=True),
        "accepted": TEXT,
        "stop": TEXT,
        "error": TEXT,
        "reason": TEXT,
        "screen": MEASURED,
    },
)

FINAL = Schema(
    "final answer",
    {
        "strategy": TEXT,
        "answer": TEXT,
        "generation": TEXT,
        "uncertainty": MEASURED,
        "forced": Field("bool", "true or false"),
        "context": IDS,
        "screen": MEASURED,
    },
)

PASSAGE = Schema(
    "passage", {"id": Field("id", "the passage's id", required=True), "title": TEXT, "text": TEXT, "score": NUMBER}
)

RULE_APPLIED = Schema(
    "rule applied",
    {
        "rule": Field("text", "a string (the rule's name)", required=True),
        "round": Field("int", "a step number (or null)", null=True),
        "what": Field("text", "a string (what it changed)", required=True),
    },
)


def _steps_in_order(trace: Mapping[str, Any], path: str) -> None:
    """Each step's ``index`` is its position: a trace records every round, in order."""
    for i, step in enumerate(trace["steps"]):
        if step["index"] != i:
            raise FieldError.wrong(join(join(join(path, "steps"), i), "index"), step["index"], f"{i} (its position)")


TRACE = Schema(
    "SeaKR trace",
    {
        "schema_version": Field("int", "a version number", low=1),
        "question": Field("text", "a string (the question)", required=True),
        "answer": TEXT,
        "strategy": Field("text", "a string (the winning strategy)", required=True),
        "finals": Field(
            "object",
            "the final answers by strategy",
            required=True,
            each=Field("object", "a final answer", schema=FINAL),
        ),
        "steps": Field("list", "the rounds (a list)", required=True, each=Field("object", "a step", schema=STEP)),
        "passages": Field("list", "the passages kept", null=True, each=Field("object", "a passage", schema=PASSAGE)),
        "stop_reason": Field("text", "a string (why the loop ended)", required=True),
        "notes": TEXTS,
        "lm_calls": COUNT,
        "generated_tokens": COUNT,
        "searches": COUNT,
        "config": Field("object", "the settings used", null=True),
        "rules_applied": Field(
            "list", "the rules applied", null=True, each=Field("object", "a rule applied", schema=RULE_APPLIED)
        ),
    },
    also=(_steps_in_order,),
)
"""``SeaKRResult.to_dict()``, version 2 (``docs/design/reasoning.md``); its version is read before this check."""
