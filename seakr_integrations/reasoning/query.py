"""The search query SeaKR builds from an uncertain pseudo-generation (SPEC section 6, FLARE-style masking).

The words the model generated with low confidence are the likely mistakes, so they are masked and the rest (plus
words from the question or the previous step) becomes the query, without function words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from seakr_integrations.outputs import Continuation, token_offsets

# A plain English function-word list (written for this project), plus the words SeaKR removes explicitly.
STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few
    for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him
    himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my
    myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves then there there's
    these they they'd they'll they're they've this those through to too under until up very was wasn't we we'd
    we'll we're we've were weren't what what's when when's where where's which while who who's whom why why's with
    won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
    thus answer therefore hence also yes
    """.split()
)
_WORD = re.compile(r"\w+(?:['’\-]\w+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class BuiltQuery:
    """A query and how it was made (recorded in the trace).

    Attributes:
        text: The query sent to the retriever.
        masked: Words of the pseudo-generation dropped for low confidence.
        fallback: Whether the pseudo-generation left nothing and the question's content words were used.
    """

    text: str
    masked: tuple[str, ...]
    fallback: bool


def _words(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]


WordFilter = Callable[[Sequence[str]], "list[str] | None"]
"""A decision rule's content-word filter (``RuleSet.content_words``): a query's content words, or ``None`` for the
built-in stop-word list."""


def content_words(words: Sequence[str], keep: WordFilter | None = None) -> list[str]:
    """The content words of ``words``, in order: ``keep``'s (a rule's, e.g. ``SpacyQueryWords``), else the words
    that are not stop words."""
    kept = keep(words) if keep is not None else None
    return kept if kept is not None else [w for w in words if w.lower() not in STOP_WORDS]


def _confident_words(step: Continuation, decode: Callable[[list[int]], str], threshold: float) -> set[tuple[int, int]]:
    """Character spans of words in ``step.text`` whose every token has probability >= ``threshold``."""
    ends = token_offsets(step, decode)
    spans = list(zip([0, *ends[:-1]], ends, strict=True))
    probs = [math.exp(lp) for lp in step.logprobs] + [0.0] * (len(spans) - len(step.logprobs))
    confident = set()
    for _, start, end in _words(step.text):
        inside = [p for (s, e), p in zip(spans, probs, strict=True) if s < end and e > start]
        if inside and min(inside) >= threshold:
            confident.add((start, end))
    return confident


def build_query(
    step: Continuation,
    question: str,
    previous_step: str | None,
    decode: Callable[[list[int]], str],
    tokenize: Callable[[str], list[int]],
    *,
    threshold: float = 0.9,
    max_tokens: int = 64,
    keep_words: WordFilter | None = None,
) -> BuiltQuery:
    """SeaKR's query from an uncertain greedy step.

    Args:
        step: The greedy continuation (text, token ids, per-token logprobs).
        previous_step: The last accepted reasoning step, if any (its words, like the question's, are never masked).
        decode: Token ids -> text (the back-end's tokenizer), to map tokens onto words.
        tokenize: Text -> token ids, to cut the query to its last ``max_tokens`` tokens.
        threshold: A word is kept if every one of its tokens has probability >= this.
        keep_words: The rules' content-word filter (``None``: the built-in stop-word list).
    """
    known = {w.lower() for w, _, _ in _words(f"{question} {previous_step or ''}")}
    start = max([0, *(m.end() for m in _SENTENCE_END.finditer(step.text.rstrip()))])  # only the last sentence counts
    confident = _confident_words(step, decode, threshold) if step.text.strip() else set()
    kept, masked = [], []
    for word, s, e in _words(step.text):
        if s < start:
            continue
        (kept if (s, e) in confident or word.lower() in known else masked).append(word)
    words = content_words(kept, keep_words)
    fallback = not words
    if fallback:
        asked = [w for w, _, _ in _words(question)]
        words = content_words(asked, keep_words) or asked
    text = " ".join(words)
    ids = tokenize(text)
    if len(ids) > max_tokens:
        text = decode(ids[-max_tokens:]).strip() or text  # a cut inside a multi-byte character can decode to ""
    if not text.strip():  # never search for nothing: the question itself, as the user wrote it
        text, fallback = question.strip(), True
    return BuiltQuery(text, tuple(masked), fallback)


def has_words(text: str) -> bool:
    """Whether ``text`` has a word SeaKR could search for (a question of punctuation alone has none)."""
    return bool(_words(text))
