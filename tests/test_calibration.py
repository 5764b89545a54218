"""Delta calibration: a sweep that maximises F1 or hits a retrieval rate, saved as a profile SeaKRConfig loads."""

import json
import warnings

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from test_reasoner import CONFIG, is_step, parse

from seakr_integrations import calibration, config_resolution
from seakr_integrations.backends.cached import CachedBackend
from seakr_integrations.calibration import (
    CalibrationMismatchWarning,
    DeltaProfile,
    UncalibratedDeltaWarning,
    load_profile,
    prompt_mismatches,
    prompt_settings,
    resolve_delta,
    save_profile,
)
from seakr_integrations.config_resolution import calibrated_config
from seakr_integrations.evaluation.calibrate import calibrate_delta, threshold_grid
from seakr_integrations.evaluation.questions import Question
from seakr_integrations.profile_names import canonical_model_name, profile_key
from seakr_integrations.reasoning import SeaKR

# Question i's closed-book first step has spread i/10 (more uncertain as i grows) and a wrong answer; with the
# passage the model answers right.  Retrieving helps every question, so the best F1 is at the lowest threshold.
QUESTIONS = [Question(f"q{i}", f"Where is landmark {i}?", ("France",)) for i in range(1, 7)]


def respond(prompt, config):
    question, context, answer = parse(prompt)
    i = int(question.split()[-1].rstrip("?"))
    if not is_step(config):
        return Reply("So the answer is France" if context else "So the answer is Spain", spread=0.5)
    if not answer and not context:
        return Reply(f"Landmark {i} is in Spain", spread=i / 10, low=("Spain",))
    if not answer:
        return Reply(f"Landmark {i} is in France", spread=0.1)
    return Reply("So the answer is France", spread=0.1)


def setup():
    return ScriptedBackend(respond), FakeRetriever(default=[passage("p1"), passage("p2")])


def test_threshold_grid_spans_always_to_never():
    grid = threshold_grid([1.0, 2.0, float("inf"), 3.0], points=3)
    assert grid[0] < 1.0 and grid[1:4] == [1.0, 2.0, 3.0] and grid[-1] > 3.0
    with pytest.raises(ValueError, match="every first step was empty"):
        threshold_grid([float("inf")])


def test_f1_objective_picks_the_best_threshold_and_shares_calls_across_the_sweep(monkeypatch):
    backend, retriever = setup()
    caches = []
    real = CachedBackend.stream

    def spy(self):
        caches.append(self)
        return real(self)

    monkeypatch.setattr(CachedBackend, "stream", spy)
    profile = calibrate_delta(backend, retriever, QUESTIONS, CONFIG, points=4, dataset="toy.jsonl", progress=False)
    rows = profile.sweep
    assert [r["delta"] for r in rows] == sorted(r["delta"] for r in rows) and len(rows) == 6
    assert rows[0]["f1"] == 1.0 and rows[0]["first_step_retrieval_rate"] == 1.0  # below every U: always retrieve
    assert rows[-1]["f1"] == 0.0 and rows[-1]["retrievals_per_question"] == 0.0  # above every U: never
    chosen = [r for r in rows if r.get("chosen")]
    assert len(chosen) == 1 and chosen[0]["f1"] == 1.0 and profile.delta == chosen[0]["delta"]
    assert max(r["delta"] for r in rows if r["f1"] == 1.0) == profile.delta  # ties: fewer retrievals
    hits, misses = caches[-1].hits, caches[-1].misses
    assert hits > misses  # the sweep's runs share most of their calls
    assert (profile.model, profile.k, profile.objective, profile.questions) == ("scripted", CONFIG.k, "f1", 6)


def test_rate_objective_hits_the_target_on_first_steps():
    backend, retriever = setup()
    profile = calibrate_delta(backend, retriever, QUESTIONS, CONFIG, objective="rate", target_rate=0.5)
    first = [r for r in profile.sweep if r.get("chosen")][0]
    assert first["first_step_retrieval_rate"] == 0.5 and profile.target_rate == 0.5
    assert calibrate_delta(backend, retriever, QUESTIONS, CONFIG, objective="rate", target_rate=1.0).delta < 0
    with pytest.raises(ValueError, match="target_rate=1.5"):
        calibrate_delta(backend, retriever, QUESTIONS, CONFIG, objective="rate", target_rate=1.5)
    with pytest.raises(ValueError, match="objective='auc'"):
        calibrate_delta(backend, retriever, QUESTIONS, CONFIG, objective="auc")


def test_profiles_save_load_and_silence_the_uncalibrated_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAKR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(calibration, "_warned", set())  # the warning is once per process and settings
    monkeypatch.setattr(calibration, "_loaded", {})  # profiles read here must not count in later tests
    backend, retriever = setup()
    config = CONFIG.with_(layer=1)
    with pytest.warns(UncalibratedDeltaWarning, match="uncalibrated for scripted .*seakr calibrate"):
        SeaKR(backend, retriever, config)
    with pytest.raises(LookupError, match="no calibrated delta for scripted"):
        calibrated_config(backend, config)
    profile = calibrate_delta(backend, retriever, QUESTIONS, config, points=3, progress=False)
    path = save_profile(profile)
    assert (
        path.parent == tmp_path / "calibration"
        and load_profile("scripted", 1, "mlp", "eigenscore", CONFIG.k) == profile
    )
    loaded = calibrated_config(backend, config)
    assert loaded.delta == profile.delta and loaded.k == CONFIG.k
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert SeaKR(backend, retriever, loaded).profile == profile
        assert resolve_delta("scripted", 1, config.with_(retrieve="always"))[1] is None  # the gate is unused
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not a valid delta profile"):
        load_profile("scripted", 1, "mlp", "eigenscore", CONFIG.k)


def test_a_profile_from_another_directory_counts_as_calibrated(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAKR_CACHE_DIR", str(tmp_path / "cache"))  # the default directory holds no profile
    monkeypatch.setattr(calibration, "_warned", set())
    monkeypatch.setattr(calibration, "_loaded", {})
    backend, retriever = setup()
    config = CONFIG.with_(layer=1)
    profile = calibrate_delta(backend, retriever, QUESTIONS, config, points=3, progress=False)
    save_profile(profile, tmp_path / "profiles")
    monkeypatch.setattr(calibration, "_warned", set())  # calibrating ran SeaKR with its warning silenced
    loaded = calibrated_config(backend, config, tmp_path / "profiles")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert SeaKR(backend, retriever, loaded).profile == profile
    # another delta was not calibrated, wherever the profile came from
    with pytest.warns(UncalibratedDeltaWarning, match="uncalibrated for scripted"):
        assert SeaKR(backend, retriever, loaded.with_(delta=profile.delta + 1.0)).profile is None


def test_a_profile_records_its_prompt_and_warns_when_applied_to_another(tmp_path, monkeypatch):
    monkeypatch.setattr(calibration, "_loaded", {})
    monkeypatch.setattr(calibration, "_warned", set())
    backend, retriever = setup()
    config = CONFIG.with_(layer=1, exemplar_style="2wiki")
    profile = calibrate_delta(backend, retriever, QUESTIONS, config, points=3, progress=False)
    assert profile.prompt == {
        "exemplar_style": "2wiki",
        "num_exemplars": config.num_exemplars,
        "chat_template": config.chat_template,
    }
    save_profile(profile, tmp_path)
    assert load_profile("scripted", 1, "mlp", "eigenscore", CONFIG.k, tmp_path).prompt == profile.prompt
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same prompt: no warning
        assert calibrated_config(backend, config, tmp_path).delta == profile.delta
    other = config.with_(exemplar_style="hotpotqa", num_exemplars=3)
    with pytest.warns(CalibrationMismatchWarning) as caught:
        assert calibrated_config(backend, other, tmp_path).delta == profile.delta
    message = str(caught[0].message)
    assert "exemplar_style: calibrated '2wiki', now 'hotpotqa'" in message
    assert f"num_exemplars: calibrated {config.num_exemplars}, now 3" in message and "calibrate again" in message
    assert prompt_mismatches(profile, config) == []


def test_a_profile_that_recorded_the_removed_chat_answer_prefix_loads_and_compares_by_its_value(tmp_path):
    """Profiles written before ``chat_answer_prefix`` left ``SeaKRConfig`` record it: ``True`` is today's prompt
    (``Answer:`` opens the assistant turn), so such a profile matches; ``False`` was another prompt, and says so."""
    config = CONFIG.with_(layer=1, exemplar_style="2wiki")
    recorded = {**prompt_settings(config), "chat_answer_prefix": True}
    (tmp_path / f"{profile_key('scripted', 1, 'mlp', 'eigenscore', config.k)}.json").write_text(
        json.dumps(
            {**DeltaProfile("scripted", 1, "mlp", "eigenscore", config.k, -1.0, "f1").to_dict(), "prompt": recorded}
        )
    )
    loaded = load_profile("scripted", 1, "mlp", "eigenscore", config.k, tmp_path)
    assert loaded.prompt == prompt_settings(config) and prompt_mismatches(loaded, config) == []
    old = DeltaProfile(
        "scripted", 1, "mlp", "eigenscore", config.k, -1.0, "f1", prompt={**recorded, "chat_answer_prefix": False}
    )
    assert prompt_mismatches(old, config) == ["chat_answer_prefix: calibrated False, now True"]


def test_a_calibrated_config_changed_afterwards_warns_when_seakr_runs_it(tmp_path, monkeypatch):
    monkeypatch.setattr(calibration, "_loaded", {})
    monkeypatch.setattr(calibration, "_warned", set())
    backend, retriever = setup()
    config = CONFIG.with_(layer=1, exemplar_style="2wiki")
    save_profile(calibrate_delta(backend, retriever, QUESTIONS, config, points=3, progress=False), tmp_path)
    monkeypatch.setattr(calibration, "_warned", set())  # calibrating ran SeaKR with its warning silenced
    loaded = calibrated_config(backend, config, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SeaKR(backend, retriever, loaded)  # the calibration's prompt
    with pytest.warns(UncalibratedDeltaWarning) as caught:  # its own delta: uncalibrated, not a mismatch
        SeaKR(backend, retriever, loaded.with_(exemplar_style="hotpotqa", delta=loaded.delta + 1))
    assert not [w for w in caught if w.category is CalibrationMismatchWarning]
    with pytest.warns(CalibrationMismatchWarning, match="exemplar_style: calibrated '2wiki', now 'hotpotqa'"):
        SeaKR(backend, retriever, loaded.with_(exemplar_style="hotpotqa"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process for the same change
        SeaKR(backend, retriever, loaded.with_(exemplar_style="hotpotqa"))


def test_a_profile_saved_before_prompts_were_recorded_loads_without_a_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(calibration, "_loaded", {})
    backend, _ = setup()
    old = DeltaProfile("scripted", 1, "mlp", "eigenscore", CONFIG.k, 0.5, "rate", 0.5)
    path = save_profile(old, tmp_path)
    data = json.loads(path.read_text())
    del data["prompt"]  # the files written before the field existed
    path.write_text(json.dumps(data))
    assert load_profile("scripted", 1, "mlp", "eigenscore", CONFIG.k, tmp_path).prompt == {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert calibrated_config(backend, CONFIG.with_(layer=1), tmp_path).delta == 0.5


def test_model_names_are_canonical():
    assert canonical_model_name("smollm2") == canonical_model_name("SmolLM2-135M-Instruct".lower())
    assert canonical_model_name("/models/my-llama/") == "my-llama"


def test_resolving_is_one_step_before_seakr_is_built_and_the_loop_runs_with_its_config(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAKR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(calibration, "_warned", set())
    monkeypatch.setattr(calibration, "_loaded", {})
    backend, retriever = setup()
    config = CONFIG.with_(layer=1, delta=None)
    save_profile(calibrate_delta(backend, retriever, QUESTIONS, config.with_(delta=0.0), points=3, progress=False))
    resolved = config_resolution.resolve_config(backend, config)
    assert resolved.requested == config and resolved.config.delta == resolved.profile.delta is not None

    def no_files(*args, **kwargs):
        raise AssertionError("SeaKR read a profile although its config was resolved")

    with monkeypatch.context() as m:
        m.setattr(calibration, "load_profile", no_files)
        m.setattr(calibration, "shipped_profile", no_files)
        seakr = SeaKR(backend, retriever, resolved)
    plain = SeaKR(backend, retriever, config)  # the convenience resolves it the same way, by the same function
    for built in (seakr, plain):
        assert (built.config, built.requested_config, built.profile) == (resolved.config, config, resolved.profile)
        assert built.calls.config is built.config and built.loop.config is built.config  # built with it, not patched
    other = ScriptedBackend(respond)
    other.model_name = "another"
    with pytest.raises(ValueError, match="resolved for scripted, not another"):
        SeaKR(other, retriever, resolved)


def test_a_components_loop_resolves_its_config_once(monkeypatch):
    from seakr_integrations.self_aware_model import LoopCache

    backend, retriever = setup()
    seen = []
    real = config_resolution.resolve_config
    monkeypatch.setattr(config_resolution, "resolve_config", lambda b, c: seen.append(c) or real(b, c))
    cache = LoopCache()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncalibratedDeltaWarning)  # k=6 has no profile: not what is tested
        loop = cache.get(backend, retriever, CONFIG)
        assert cache.get(backend, retriever, CONFIG) is loop and seen == [CONFIG]  # a reused loop reads nothing
        assert cache.get(backend, retriever, CONFIG.with_(k=6)) is not loop and seen == [CONFIG, CONFIG.with_(k=6)]
