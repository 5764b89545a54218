"""SamplingConfig validation: every bad value gets a ValueError that says how to fix it."""

import pytest

from seakr_integrations.params import SamplingConfig


def test_defaults_are_the_authors():
    c = SamplingConfig()
    assert (c.k, c.temperature, c.top_k, c.top_p, c.max_tokens, c.seed, c.layer, c.source) == (
        20,
        1.0,
        50,
        0.9,
        100,
        42,
        None,
        "mlp",
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 1}, "EigenScore .* at least 2"),
        ({"k": -1}, "at least 2"),
        ({"temperature": -1}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"top_k": -5}, "top_k"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"stop": "\n"}, "list of strings"),
        ({"stop": [""]}, "non-empty"),
        ({"source": "attention"}, "source"),
        ({"layer": -1}, "layer"),
    ],
)
def test_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SamplingConfig(**kwargs)


def test_with_revalidates_and_freezes_stop():
    c = SamplingConfig().with_(k=5, stop=["\n"])
    assert c.k == 5 and c.stop == ("\n",)
    with pytest.raises(ValueError):
        c.with_(k=1)


@pytest.mark.parametrize("bad", [-1, 101, 1.5])
def test_min_tokens_must_fit_under_max_tokens(bad):
    with pytest.raises(ValueError, match="min_tokens"):
        SamplingConfig(max_tokens=100, min_tokens=bad)
