"""SamplingConfig validation: every bad value gets a ValueError that says how to fix it."""

import dataclasses
import json

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


# ------------------------------------------------------------------------------------ SeaKRConfig: one definition
def test_seakr_config_takes_its_sampling_defaults_from_sampling_config():
    from seakr_integrations.reasoning import SeaKRConfig

    seakr, sampling = SeaKRConfig(), SamplingConfig()
    own = {f.name for f in dataclasses.fields(SeaKRConfig)}
    assert "sampling" in own and not own & {f.name for f in dataclasses.fields(SamplingConfig)}  # declared once
    assert isinstance(seakr.sampling, SamplingConfig) and seakr.sampling.stop == ()
    shared = ("k", "temperature", "top_k", "top_p", "max_tokens", "min_tokens", "seed", "layer", "source")
    differ = {name for name in shared if getattr(seakr, name) != getattr(sampling, name)}
    assert differ == {"min_tokens"}  # the one deliberate difference (see SEAKR_SAMPLING)
    assert (seakr.min_tokens, sampling.min_tokens, SeaKRConfig.min_tokens) == (1, 0, 1)


def test_flat_sampling_keywords_mean_the_nested_sampling():
    from seakr_integrations.reasoning import SeaKRConfig
    from seakr_integrations.reasoning.config import changed_settings

    flat = SeaKRConfig(k=10, max_tokens=64)
    nested = SeaKRConfig(sampling=SamplingConfig(k=10, max_tokens=64, min_tokens=1))
    assert flat == nested and hash(flat) == hash(nested) and (flat.k, flat.max_tokens, flat.min_tokens) == (10, 64, 1)
    assert flat.with_(k=5).sampling == nested.sampling.with_(k=5)
    assert SeaKRConfig(sampling=SamplingConfig(k=4), k=6).sampling == SamplingConfig(k=6)  # keywords win
    assert changed_settings(flat) == {"k": 10, "max_tokens": 64}
    data = json.loads(json.dumps(flat.to_dict()))  # flat keys, as results files have always recorded them
    assert data["k"] == 10 and "sampling" not in data and SeaKRConfig(**data) == flat
    assert SeaKRConfig(sampling=json.loads(json.dumps(dataclasses.asdict(nested.sampling)))) == nested
    with pytest.raises(dataclasses.FrozenInstanceError):
        flat.k = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match=r"sampling.stop=\['x'\]: SeaKR sets each call's stops itself"):
        SeaKRConfig(sampling=SamplingConfig(stop=["x"]))
    with pytest.raises(ValueError, match="sampling=3: pass a SamplingConfig"):
        SeaKRConfig(sampling=3)


NOT_A_NUMBER = [float("nan"), float("inf"), float("-inf"), "high", True, None, [1.0]]


@pytest.mark.parametrize("field", ["delta", "alpha", "temperature", "top_p", "mask_threshold"])
@pytest.mark.parametrize("bad", NOT_A_NUMBER, ids=repr)
def test_seakr_config_refuses_non_finite_or_non_numeric_reals(field, bad):
    from seakr_integrations.reasoning import SeaKRConfig

    if field == "delta" and bad is None:
        assert SeaKRConfig(delta=None).delta is None  # None: the calibrated delta, resolved when SeaKR is built
        return

    with pytest.raises(ValueError, match=rf"^{field}=.*must be a finite number; pass ") as err:
        SeaKRConfig(**{field: bad})
    assert repr(bad) in str(err.value)


@pytest.mark.parametrize(
    "field", ["k", "top_k", "max_tokens", "min_tokens", "seed", "layer", "n_candidates", "max_steps", "num_exemplars"]
)
@pytest.mark.parametrize("bad", [2.0, "3", True, float("nan")], ids=repr)
def test_seakr_config_refuses_non_integers(field, bad):
    from seakr_integrations.reasoning import SeaKRConfig

    with pytest.raises(ValueError, match=rf"^{field}={bad!r}: must be an integer; pass "):
        SeaKRConfig(**{field: bad})


def test_delta_message_says_what_to_pass_instead():
    from seakr_integrations.reasoning import SeaKRConfig

    with pytest.raises(ValueError, match=r"delta=nan: .*-6\.0.*retrieve='always' or retrieve='never'"):
        SeaKRConfig(delta=float("nan"))
    with pytest.raises(ValueError, match=r"delta='high': must be a finite number"):
        SeaKRConfig(delta="high")
    with pytest.raises(ValueError, match="delta=True"):
        SeaKRConfig().with_(delta=True)  # with_ validates again


@pytest.mark.parametrize("bad", [0, 0.0, -1e-3, float("inf")])
def test_alpha_must_be_positive_and_finite(bad):
    from seakr_integrations.reasoning import SeaKRConfig

    with pytest.raises(ValueError, match=rf"^alpha={bad!r}: .*(positive|finite)"):
        SeaKRConfig(alpha=bad)


def test_numbers_are_normalised_to_plain_python_types():
    import json

    import numpy as np

    from seakr_integrations.reasoning import SeaKRConfig

    c = SeaKRConfig(
        delta=np.float32(-2.5), k=np.int64(4), temperature=1, alpha=np.float64(1e-2), n_candidates=np.int8(2)
    )
    assert (type(c.delta), type(c.k), type(c.temperature), type(c.alpha), type(c.n_candidates)) == (
        float,
        int,
        float,
        float,
        int,
    )
    assert json.loads(json.dumps(c.to_dict()))["k"] == 4
    assert SeaKRConfig(delta=-6) == SeaKRConfig(delta=-6.0)  # an int threshold is the same setting


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "k=0: SeaKR's loop"),
        ({"k": False}, "k=False: must be an integer"),
        ({"estimator": "vibes"}, "estimator='vibes': choose one of eigenscore, .*, prompt"),
        ({"chat_template": "yes"}, "chat_template='yes'"),
        ({"mask_threshold": 1.5}, r"mask_threshold=1.5: a probability"),
    ],
)
def test_seakr_config_other_bad_values(kwargs, message):
    from seakr_integrations.reasoning import SeaKRConfig

    with pytest.raises(ValueError, match=message):
        SeaKRConfig(**kwargs)


@pytest.mark.parametrize("field", ["temperature", "top_p"])
def test_sampling_config_refuses_nan(field):
    with pytest.raises(ValueError, match=rf"^{field}=nan: must be a finite number"):
        SamplingConfig(**{field: float("nan")})
