"""A state probe is applied only where it was trained: it carries its model, layer, source and width, and a run that
would read it elsewhere refuses, naming both sides, where the mismatch can first be seen (the config for its layer
and source, the back-end for its model, default layer and hidden size, the profile for the probe inside it)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend
from rule_support import SMALL, TOWER

from seakr_integrations.calibration import DeltaProfile, load_profile, resolve_rules, save_profile
from seakr_integrations.config_resolution import resolve_config
from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.rules import StateProbe
from seakr_integrations.uncertainty.linear_probe import LinearProbe

pytestmark = pytest.mark.filterwarnings("ignore::seakr_integrations.calibration.UncalibratedDeltaWarning")

WIDTH = 16  # the scripted back-end's hidden size; it has 4 layers, so its default layer is 1


def probe(layer: int = 1, source: str = "mlp", width: int = WIDTH, model: str | None = None) -> LinearProbe:
    return LinearProbe(layer, source, "retrieval helps", (0.0,) * width, (1.0,) * width, (1.0,) * width, 0.0, 1.0,
                       model=model)  # fmt: skip


def seakr(config: SeaKRConfig) -> SeaKR:
    return SeaKR(ScriptedBackend(lambda prompt, c: Reply("x")), FakeRetriever(default=[TOWER]), config)


def test_the_config_refuses_a_probe_of_another_layer_or_source_naming_both():
    trained = probe(3, "residual", model="smollm2")
    with pytest.raises(ValueError) as raised:
        SeaKRConfig(layer=1, source="mlp", rules=(StateProbe(trained, (0.5, 0.5)),))
    message = str(raised.value)
    assert message.startswith(
        "StateProbe's probe was trained on layer 3 (residual) of smollm2-135m-instruct; this run reads layer 1 (mlp)."
    )
    assert "Pass layer=3, source='residual' (the probe's)" in message
    assert "`seakr calibrate --rules default,state-probe --layer 1 --source mlp`" in message
    with pytest.raises(ValueError, match=r"trained on layer 3 \(residual\).*reads the default layer \(mlp\)"):
        SeaKRConfig(rules=(StateProbe(trained, (0.5, 0.5)),))  # the source is known before the layer is
    base = SeaKRConfig(layer=3, source="residual", rules=(StateProbe(trained, (0.5, 0.5)),))
    with pytest.raises(ValueError, match=r"trained on layer 3 \(residual\).*this run reads layer 2 \(residual\)"):
        base.with_(layer=2)  # a copy is checked again


def test_the_back_end_refuses_its_default_layer_another_model_or_width_naming_both():
    with pytest.raises(ValueError) as raised:
        seakr(SeaKRConfig(**SMALL, source="residual", rules=(StateProbe(probe(3, "residual"), (0.5, 0.5)),)))
    assert str(raised.value).startswith(
        "StateProbe's probe was trained on layer 3 (residual); this run reads layer 1 (residual) of scripted. "
        "Pass layer=3, source='residual' (the probe's)"
    )
    with pytest.raises(ValueError) as raised:
        seakr(SeaKRConfig(**SMALL, rules=(StateProbe(probe(model="smollm2"), (0.5, 0.5)),)))
    assert str(raised.value) == (
        "StateProbe's probe was trained on layer 1 (mlp) of smollm2-135m-instruct; this run reads layer 1 (mlp) of "
        "scripted. Run it on smollm2-135m-instruct, or train a probe where this run reads: `seakr calibrate --rules "
        "default,state-probe --model scripted --layer 1 --source mlp`"
    )
    with pytest.raises(ValueError, match=r"reads vectors of width 8 \(layer 1 \(mlp\)\); this run's model scripted "
                                         r"has hidden size 16"):  # fmt: skip
        seakr(SeaKRConfig(**SMALL, rules=(StateProbe(probe(width=8), (0.5, 0.5)),)))


def test_a_probe_that_fits_runs_and_a_resolved_config_keeps_it():
    fits = probe(model="scripted")
    run = seakr(SeaKRConfig(**SMALL, rules=(StateProbe(fits, (0.5, 0.5)),)))
    assert run.config.rules[0].probe == fits
    backend = ScriptedBackend(lambda prompt, c: Reply("x"))
    assert resolve_config(backend, SeaKRConfig(**SMALL, rules=(StateProbe(fits, (0.5, 0.5)),))).config.rules


def test_a_profile_s_probe_is_its_model_s_and_must_be_its_layer(tmp_path):
    entry = {"probe": {k: v for k, v in probe().to_dict().items() if k != "model"}, "threshold": 0.4}
    alone = DeltaProfile("scripted", 1, "mlp", "eigenscore", 4, -1.0, "rate", rules={"state-probe": entry})
    path = save_profile(alone, tmp_path)  # a probe that records no model was trained on the profile's
    config = SeaKRConfig(rules=(StateProbe(),))
    (rule,) = resolve_rules(load_profile("scripted", 1, "mlp", "eigenscore", 4, tmp_path), config)
    assert rule.probe == probe(model="scripted") and rule.band == (0.4, 0.4)

    def read(data):
        path.write_text(json.dumps(data))
        return resolve_rules(load_profile("scripted", 1, "mlp", "eigenscore", 4, tmp_path), config)

    data = json.loads(path.read_text())
    data["rules"]["state-probe"]["probe"]["layer"] = 3
    with pytest.raises(ValueError) as raised:
        read(data)
    assert str(raised.value) == (
        f"{path}: not a valid delta profile: field rules.state-probe.probe.layer: the probe was trained on layer 3 "
        "(mlp) of scripted, but the profile is for layer 1 (mlp); run `seakr calibrate` again with state-probe among "
        "its --rules (it learns it), or delete the file"
    )
    data["rules"]["state-probe"]["probe"].update(layer=1, model="qwen")
    other = r"field rules\.state-probe\.probe\.model says the probe was trained on qwen.*, but it is stored for "
    with pytest.raises(ValueError, match=other + r"scripted: train it again with `seakr calibrate --rules default,"):
        read(data)


def test_a_probe_that_records_no_model_is_refused_where_none_can_be_read():
    alone = {k: v for k, v in probe().to_dict().items() if k != "model"}
    with pytest.raises(ValueError, match=r"the field 'model' is missing: the probe records no model.*seakr calibrate "
                                         r"--rules default,state-probe"):  # fmt: skip
        LinearProbe.from_dict(alone)
    assert LinearProbe.from_dict(alone, model="scripted").model == "scripted"  # its profile's model
    built = probe()  # a probe built in code may record no model: it reads back as it was
    assert LinearProbe.from_dict(built.to_dict()) == built


def test_a_profile_built_in_code_with_a_bad_probe_names_the_profile_and_the_field():
    bad = DeltaProfile(
        "m", 1, "mlp", "eigenscore", 4, -1.0, "rate", rules={"state-probe": {"probe": probe().to_dict()}}
    )
    with pytest.raises(ValueError, match=r"profile m__layer1__mlp__eigenscore__k4: .*the field "
                                         r"'rules\.state-probe\.threshold' is missing"):  # fmt: skip
        resolve_rules(bad, SeaKRConfig(rules=(StateProbe(),)))


@pytest.mark.parametrize(
    ("band", "message"),
    [
        ((5, 5), r"StateProbe\(band=\(5, 5\)\): the band is in the probe's probability, so both edges must be in "
                 r"\[0, 1\]"),
        ((-0.1, 0.5), r"both edges must be in \[0, 1\]"),
        ((math.nan, math.nan), r"band\[0\]=nan: must be a finite number"),
    ],
)  # fmt: skip
def test_a_band_outside_the_probability_is_refused_when_constructed(band, message):
    with pytest.raises(ValueError, match=message):
        StateProbe(probe(), band)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"source": "attention"}, r"LinearProbe\(source='attention'\): choose one of 'mlp', 'residual'"),
        ({"layer": -1}, r"LinearProbe\(layer=-1\): the layer it reads is an integer >= 0"),
        ({"scale": (0.0,) * WIDTH}, r"each must be > 0"),
        ({"bias": math.nan}, r"must be finite"),
        ({"model": ""}, r"LinearProbe\(model=''\)"),
    ],
)
def test_a_probe_that_cannot_be_read_is_refused_when_constructed(changes, message):
    with pytest.raises(ValueError, match=message):
        replace(probe(), **changes)
