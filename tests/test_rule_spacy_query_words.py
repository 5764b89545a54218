"""``SpacyQueryWords``: the query's content words chosen by spaCy's tags, and a clear error without spaCy."""

import importlib.util

import pytest
from fakes import Reply
from rule_support import SMALL, is_step, run

from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.rules import SpacyQueryWords


def unsure(prompt, config):
    if not is_step(config) or "Context:" in prompt:
        return Reply("So the answer is France.")
    return Reply("The Eiffel Tower is in Paris.", spread=5.0)


def test_it_asks_for_spacy_by_name():
    config = SeaKRConfig(**SMALL, rules=(SpacyQueryWords(),))
    assert SeaKRConfig(**SMALL).rule_set.content_words(["the", "Tower"]) is None  # the built-in stop-word list
    if importlib.util.find_spec("spacy") is None:
        with pytest.raises(Exception, match="needs spaCy"):
            run(config, unsure)
    else:  # pragma: no cover - spaCy is not a dependency here
        result, _ = run(config, unsure)
        assert "Eiffel" in result.steps[0].query
