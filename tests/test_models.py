"""Packaged models: short names, sha256 check, atomic conversion, local directories."""

from pathlib import Path

import pytest

from seakr_integrations import models
from seakr_integrations.models import known_model_names, resolve_model


def test_unknown_name_lists_known_ones():
    with pytest.raises(ValueError) as err:
        resolve_model("gpt-7")
    for name in ("smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct"):
        assert name in str(err.value)
    assert "local Hugging Face model directory" in str(err.value)
    assert "Hugging Face model id (org/name" in str(err.value)


def test_aliases_resolve_to_the_same_model():
    assert {"smollm2", "qwen2.5-0.5b"} <= set(known_model_names())
    assert models.packaged_model("SmolLM2") is models.packaged_model("smollm2-135m-instruct")


def test_local_directory(tmp_path: Path):
    with pytest.raises(ValueError, match="no config.json"):
        resolve_model(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    assert resolve_model(tmp_path) == tmp_path


def test_missing_package_says_what_to_install(monkeypatch):
    fake = models.PackagedModel(
        "fake", "x", (("no_such_package_seakr", "m.gguf"),), "pip install fake-pkg", "0" * 64, "MIT"
    )
    monkeypatch.setattr(models, "PACKAGED_MODELS", (fake,))
    with pytest.raises(ValueError, match="pip install fake-pkg"):
        resolve_model("fake")


def _smollm2_with(monkeypatch, **changes):
    import dataclasses

    real = models.packaged_model("smollm2")
    patched = dataclasses.replace(real, **changes)
    monkeypatch.setattr(models, "PACKAGED_MODELS", (patched,))
    return patched


def test_sha256_mismatch_is_refused_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAKR_CACHE_DIR", str(tmp_path))
    _smollm2_with(monkeypatch, sha256="f" * 64)
    with pytest.raises(ValueError, match="sha256"):
        resolve_model("smollm2")
    assert list((tmp_path / "models").iterdir()) == []


def test_interrupted_conversion_leaves_no_half_model(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAKR_CACHE_DIR", str(tmp_path))

    def crash(gguf_path, out_dir):
        out_dir.mkdir()
        (out_dir / "config.json").write_text("{}")  # half-written model...
        raise KeyboardInterrupt  # ...and the user presses Ctrl-C

    monkeypatch.setattr(models, "_gguf_to_safetensors", crash)
    with pytest.raises(KeyboardInterrupt):
        resolve_model("smollm2")
    assert list((tmp_path / "models").iterdir()) == []


def test_a_conversion_that_fails_in_its_process_is_an_error_and_leaves_nothing(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf")
    with pytest.raises(RuntimeError, match="converting bad.gguf to safetensors failed .*exited with 1, 1"):
        models._gguf_to_safetensors(bad, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_smollm2_converts_once_and_is_reused(smollm2_dir: Path):
    assert (smollm2_dir / "model.safetensors").is_file() and (smollm2_dir / "tokenizer.json").is_file()
    assert (smollm2_dir / ".seakr-complete").read_text().split()[1] == models.packaged_model("smollm2").sha256
    mtime = (smollm2_dir / "model.safetensors").stat().st_mtime
    assert resolve_model("smollm2") == smollm2_dir
    assert (smollm2_dir / "model.safetensors").stat().st_mtime == mtime


@pytest.mark.slow
def test_qwen_multi_part_gguf_is_checked_and_loads():
    """The 491 MB Qwen GGUF arrives in six PyPI packages: concatenated, sha256-checked, converted, generates."""
    from seakr_integrations.backends.hf import HFBackend

    path = resolve_model("qwen2.5-coder-0.5b-instruct")
    assert (path / ".seakr-complete").is_file()
    backend = HFBackend(path, device="cpu")
    assert (backend.num_layers, backend.hidden_size, backend.default_layer) == (24, 896, 11)
    out = backend.generate([backend.chat_prompt("What is 2 + 2? Answer with a number.")], k=2, max_tokens=8)[0]
    assert "4" in out.greedy.text
    assert out.eos_vectors().shape == (2, 896)


@pytest.mark.slow
def test_fresh_conversion_of_the_real_gguf(tmp_path, monkeypatch):
    """The whole path on an empty cache: locate the package file, hash it, dequantise, save, rename into place."""
    import json

    monkeypatch.setenv("SEAKR_CACHE_DIR", str(tmp_path))
    from seakr_integrations.models import PACKAGED_MODELS

    smollm2 = next(m for m in PACKAGED_MODELS if m.name == "smollm2-135m-instruct")
    target_name = f"{smollm2.name}-{smollm2.sha256[:12]}"
    stale = tmp_path / "models" / f".{target_name}.tmp-killed01"  # what a killed conversion leaves
    (stale / "model").mkdir(parents=True)
    (stale / "model" / "model.safetensors").write_bytes(b"x" * 1000)
    path = resolve_model("smollm2")
    assert path.parent == tmp_path / "models"
    assert not stale.exists()  # removed by this conversion: no conversion of this model was running
    assert json.loads((path / "config.json").read_text())["num_hidden_layers"] == 30
    assert "quantization_config" not in json.loads((path / "config.json").read_text())
    assert [p.name for p in (tmp_path / "models").iterdir()] == [path.name]  # no temporary left over
