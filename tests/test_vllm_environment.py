"""VLLMBackend sets only the environment vLLM must read, never over the user's values, and restores what applies
to the engine's start only (the engine's processes keep their copy; ours and the ones it starts later do not)."""

import json
import os

import pytest

from seakr_integrations.backends import vllm as vllm_backend
from seakr_integrations.backends import vllm_settings
from seakr_integrations.backends.vllm import _environment
from seakr_integrations.backends.vllm_settings import engine_environment

START_VARS = ("VLLM_CPU_KVCACHE_SPACE", "VLLM_CPU_NUM_OF_RESERVED_CPU", "LD_PRELOAD", "VLLM_USE_V2_MODEL_RUNNER")


@pytest.fixture
def clean_env(monkeypatch):
    for name in START_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(vllm_settings, "_intel_openmp", lambda: "/venv/lib/libiomp5.so")
    monkeypatch.setattr(vllm_settings, "_tcmalloc", lambda: None)
    return monkeypatch


def test_start_environment_fills_only_what_the_user_left_unset(clean_env):
    assert engine_environment(on_cpu=False) == {"VLLM_USE_V2_MODEL_RUNNER": "0"}  # the hook's runner, GPU or CPU
    clean_env.setenv("VLLM_USE_V2_MODEL_RUNNER", "0")
    assert engine_environment(on_cpu=False) == {}
    assert engine_environment(on_cpu=True, kv_cache_space_gib=3) == {
        "VLLM_CPU_KVCACHE_SPACE": "3",
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
        "LD_PRELOAD": "/venv/lib/libiomp5.so",
    }
    clean_env.setenv("VLLM_CPU_KVCACHE_SPACE", "8")
    clean_env.setenv("VLLM_CPU_NUM_OF_RESERVED_CPU", "1")
    clean_env.setenv("LD_PRELOAD", "/lib/libjemalloc.so")
    assert engine_environment(on_cpu=True) == {"LD_PRELOAD": "/lib/libjemalloc.so:/venv/lib/libiomp5.so"}
    clean_env.setenv("LD_PRELOAD", "/lib/libgomp.so")  # an OpenMP runtime of the user's: keep it alone
    assert engine_environment(on_cpu=True) == {}
    clean_env.delenv("LD_PRELOAD")
    assert engine_environment(on_cpu=True, preload_intel_openmp=False, kv_cache_space_gib=None) == {}


def test_the_systems_tcmalloc_goes_first_unless_the_user_preloads_an_allocator(clean_env):
    clean_env.setattr(vllm_settings, "_tcmalloc", lambda: "libtcmalloc_minimal.so.4")
    clean_env.setenv("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
    assert engine_environment(on_cpu=True)["LD_PRELOAD"] == "libtcmalloc_minimal.so.4:/venv/lib/libiomp5.so"
    clean_env.setenv("LD_PRELOAD", "/lib/libjemalloc.so")
    assert engine_environment(on_cpu=True)["LD_PRELOAD"] == "/lib/libjemalloc.so:/venv/lib/libiomp5.so"
    assert "LD_PRELOAD" not in engine_environment(on_cpu=False)  # GPU: vLLM's own allocator settings


def test_environment_applies_during_the_block_and_restores_after_even_on_error(clean_env):
    clean_env.setenv("LD_PRELOAD", "/lib/mine.so")
    before = dict(os.environ)
    with pytest.raises(RuntimeError, match="engine failed"):
        with _environment({"LD_PRELOAD": "/lib/mine.so:/lib/libiomp5.so", "VLLM_CPU_KVCACHE_SPACE": "2"}):
            assert os.environ["LD_PRELOAD"] == "/lib/mine.so:/lib/libiomp5.so"
            assert os.environ["VLLM_CPU_KVCACHE_SPACE"] == "2"
            raise RuntimeError("engine failed")
    assert dict(os.environ) == before


@pytest.mark.vllm
@pytest.mark.parametrize("runner", ["0", None])
def test_constructing_a_backend_leaves_the_environment_as_it_was(clean_env, tmp_path, runner):
    """The engine sees the start settings; afterwards (here: a start that fails) os.environ is as before, except
    VLLM_USE_V2_MODEL_RUNNER=0 where it was unset, which vLLM reads for as long as the engine runs."""
    pytest.importorskip("vllm", reason="vLLM is not installed")
    from vllm.platforms import current_platform

    if runner is None:
        clean_env.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    else:
        clean_env.setenv("VLLM_USE_V2_MODEL_RUNNER", runner)
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 64}))
    before = dict(os.environ)
    seen = {}

    def start(*args, **kwargs):
        seen.update(os.environ)
        raise RuntimeError("this model cannot start")

    clean_env.setattr(vllm_backend.VLLMBackend, "_start_engine", staticmethod(start))
    with pytest.raises(RuntimeError, match="cannot start"):
        vllm_backend.VLLMBackend(tmp_path, kv_cache_space_gib=3)
    expected = dict(before) if runner is not None else {**before, "VLLM_USE_V2_MODEL_RUNNER": "0"}
    assert dict(os.environ) == expected
    assert seen["VLLM_USE_V2_MODEL_RUNNER"] in ("0", runner)
    if current_platform.is_cpu():
        assert seen["VLLM_CPU_KVCACHE_SPACE"] == "3" and seen["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "0"
        assert "VLLM_CPU_KVCACHE_SPACE" not in os.environ


@pytest.mark.parametrize("bad", [1.5, 0, "2", True])
def test_kv_cache_space_must_be_whole_gib(tmp_path, bad):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match=rf"kv_cache_space_gib={bad!r}: .*whole number of GiB"):
        vllm_backend.VLLMBackend(tmp_path, kv_cache_space_gib=bad)


def test_popped_vectors_and_logsumexps_round_trip_through_the_one_codec():
    """What a worker's ``seakr_pop_vectors`` sends, ``unpack_popped`` (VLLMBackend and the server's engine) reads."""
    import numpy as np

    from seakr_integrations.backends.vllm_worker import SeaKRWorkerExtension, unpack_popped

    worker = SeaKRWorkerExtension.__new__(SeaKRWorkerExtension)
    worker._seakr_captured = {"a": np.arange(3, dtype=np.float32), "b": np.ones(3, np.float32)}
    worker._seakr_lse, worker._seakr_fired = {"g": {0: 1.5, 2: 3.0}}, 4
    vectors, lse = unpack_popped(worker.seakr_pop_vectors(["b"], ["g"]))
    assert list(vectors) == ["b"] and vectors["b"].tolist() == [1.0, 1.0, 1.0] and lse == {"g": {0: 1.5, 2: 3.0}}
    assert list(worker._seakr_captured) == ["a"]
    worker._seakr_captured = {}
    assert unpack_popped(worker.seakr_pop_vectors()) == ({}, {})
