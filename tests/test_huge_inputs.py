"""Messages about huge inputs quote their start and their length, never all of them, and their advice matches the
settings in effect."""

from __future__ import annotations

from fakes import FakeRetriever, ScriptedBackend, passage
from test_driver import two_steps
from test_reasoner import CONFIG

from seakr_integrations.quoting import quoted
from seakr_integrations.reasoning import SeaKR

HUGE = "Who " + "very " * 40_000 + "long?"  # 200,009 characters


def _error(config) -> str:
    backend = ScriptedBackend(two_steps, max_context=4_000)
    retriever = FakeRetriever(default=lambda q: [passage(q.split()[-1])])
    (result,) = SeaKR(backend, retriever, config).answer_many([HUGE], return_exceptions=True)
    assert isinstance(result, ValueError), result
    return str(result)


def test_a_huge_question_is_quoted_short_with_its_length():
    message = _error(CONFIG)
    assert len(message) < 1_000
    assert f"({len(HUGE):,} characters)" in message and "does not fit" in message
    assert "shorten the question" in message


def test_the_advice_names_only_settings_that_can_still_be_lowered():
    message = _error(CONFIG.with_(num_exemplars=0, max_tokens=1, min_tokens=0))
    assert "num_exemplars" not in message and "max_tokens (now" not in message
    assert "shorten the question" in message
    assert "lower num_exemplars (now 2)" in _error(CONFIG.with_(num_exemplars=2))


def test_quoted_keeps_short_text_whole_and_cuts_long_text():
    assert quoted("Paris?") == "'Paris?'"
    long = quoted("x" * 5_000)
    assert long.startswith("'" + "x" * 120 + "'...") and long.endswith("(5,000 characters)")
    assert quoted(None) == "None"
