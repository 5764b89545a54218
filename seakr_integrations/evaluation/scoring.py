"""Answer scoring exactly as SeaKR and DRAGIN score (SPEC section 8): SQuAD normalisation, EM and token F1.

Published numbers are only comparable under the same scoring, down to the yes/no rule, so this is the one place
predictions are scored (``seakr eval``, calibration, the AUROC labels).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_SPECIAL = {"yes", "no", "noanswer"}


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lowercase, strip punctuation, drop the articles a/an/the, collapse whitespace."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _f1_one(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0  # a yes/no answer shares no credit with anything but itself
    pred_tokens, ref_tokens = pred.split(), ref.split()
    common = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def _golds(golds: str | Iterable[str]) -> list[str]:
    out = [golds] if isinstance(golds, str) else list(golds)
    if not out:
        raise ValueError("no gold answer to score against; a question needs at least one")
    return out


def exact_match(prediction: str, golds: str | Iterable[str]) -> float:
    """1.0 when the normalised prediction equals any normalised gold answer, else 0.0."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in _golds(golds)))


def f1(prediction: str, golds: str | Iterable[str]) -> float:
    """Token-level F1 against each gold answer, the best one counting (0.0 on a yes/no/noanswer mismatch)."""
    return max(_f1_one(prediction, g) for g in _golds(golds))


@dataclass(frozen=True, slots=True)
class Score:
    """EM and F1 of one prediction (both in [0, 1])."""

    em: float
    f1: float


def score(prediction: str, golds: str | Iterable[str]) -> Score:
    """EM and F1 of ``prediction`` against ``golds``."""
    golds = _golds(golds)
    return Score(exact_match(prediction, golds), f1(prediction, golds))
