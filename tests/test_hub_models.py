"""A model by its Hugging Face id (``org/name``, ``org/name@revision``), found in the Hugging Face cache without a
network: a tiny model placed in a temporary cache, in the layout ``huggingface_hub`` writes, asked by its id from
the resolver, the command line and both frameworks.  A hub that cannot be reached, or forbidden by
``HF_HUB_OFFLINE=1``, is an error that says what was tried."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from seakr_integrations.models import hub_id, resolve_model

REPO = "seakr-test/tiny-llama"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
QUESTION = "Who voiced Winnie the Pooh?"


def place(cache: Path, model_files: Path | None) -> Path:
    """``REPO`` in ``cache`` as ``huggingface_hub`` stores it (``refs/main`` -> ``snapshots/COMMIT``)."""
    repo = cache / f"models--{REPO.replace('/', '--')}"
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    if model_files is None:
        (snapshot / "config.json").write_text('{"model_type": "llama"}')
    else:
        for f in model_files.iterdir():
            shutil.copy(f, snapshot / f.name)
    return snapshot


@pytest.fixture
def offline_cache(tmp_path, monkeypatch):
    """An empty Hugging Face cache, offline, for this process (``huggingface_hub`` reads its constants at call time)."""
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def test_what_reads_as_a_hub_id():
    assert hub_id("Qwen/Qwen2.5-0.5B-Instruct") == ("Qwen/Qwen2.5-0.5B-Instruct", None)
    assert hub_id("org/name@v1.0") == ("org/name", "v1.0")
    assert hub_id("qwen") is None and hub_id("a/b/c") is None and hub_id("/tmp") is None


def test_a_cached_model_resolves_by_its_id_and_revision_offline(offline_cache):
    snapshot = place(offline_cache, None)
    assert resolve_model(REPO) == snapshot
    assert resolve_model(f"{REPO}@{COMMIT}") == snapshot


def test_offline_a_model_not_in_the_cache_says_what_was_tried(offline_cache):
    with pytest.raises(ValueError) as raised:
        resolve_model("seakr-test/not-there")
    said = str(raised.value)
    assert "'seakr-test/not-there' is not in the Hugging Face cache" in said and str(offline_cache) in said
    assert "HF_HUB_OFFLINE=1" in said and "huggingface-cli download seakr-test/not-there" in said
    place(offline_cache, None)
    with pytest.raises(ValueError, match=r"'seakr-test/tiny-llama@v9' is not in the Hugging Face cache"):
        resolve_model(f"{REPO}@v9")


def test_an_unreachable_hub_says_the_download_failed(offline_cache, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setattr(
        constants, "HUGGINGFACE_CO_URL_TEMPLATE", "http://127.0.0.1:9/{repo_id}/resolve/{revision}/{filename}"
    )
    with pytest.raises(ValueError, match=r"not in the Hugging Face cache .* and downloading it failed \("):
        resolve_model("seakr-test/not-there")


def test_a_repository_without_a_config_is_no_model(offline_cache):
    snapshot = place(offline_cache, None)
    (snapshot / "config.json").unlink()
    (snapshot / "README.md").write_text("not a model")
    with pytest.raises(ValueError, match="hold no config.json"):
        resolve_model(REPO)


@pytest.mark.slow
def test_the_command_line_and_both_frameworks_take_the_id(tmp_path, tiny_llama_dir, offline_cache):
    place(offline_cache, tiny_llama_dir)
    env = {**os.environ, "HF_HUB_CACHE": str(offline_cache), "HF_HUB_OFFLINE": "1", "SEAKR_CACHE_DIR": str(tmp_path)}
    argv = ["ask", QUESTION, "--model", REPO, "--backend", "hf", "-k", "2", "--max-tokens", "4"]
    argv += ["--exemplars", "0", "--delta", "0", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "seakr_integrations.cli", *argv], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f'"model": "{REPO}"' in done.stdout or REPO in done.stdout

    from langchain_seakr import ChatSeaKR
    from llamaindex_seakr import SeaKRLLM

    chat = ChatSeaKR(model=REPO, k=2, max_tokens=4)
    assert len(chat.invoke("Hello").response_metadata["samples"]) == 2
    llm = SeaKRLLM(model=REPO, k=2, max_tokens=4)
    assert len(llm.complete("Hello").additional_kwargs["samples"]) == 2


def test_seakr_serve_serves_a_hub_model_under_its_id(offline_cache):
    import json

    from seakr_integrations.serving.launch import serve_command

    snapshot = place(offline_cache, None)
    config = {"model_type": "llama", "max_position_embeddings": 512, "num_hidden_layers": 4, "hidden_size": 128}
    config |= {"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64, "dtype": "float32"}
    (snapshot / "config.json").write_text(json.dumps(config))
    args, _ = serve_command(REPO, on_cpu=True, convert=False)
    assert str(snapshot) in args and args[args.index("--served-model-name") + 1] == REPO
