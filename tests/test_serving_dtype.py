"""``seakr serve`` runs what was calibrated (issue 67, item 2), on a real server (SmolLM2, CPU): without ``--dtype``
it loads float32, the shipped profiles' dtype, says so in ``/v1/seakr/info`` and logs no weight cast; with
``--dtype bfloat16`` (and chunked prefill, which takes no seeds on CPU) it says both, its log warns once about each,
a client warns once that the profile's dtype differs and sends no seed, and a long prompt never takes it down."""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator

import pytest

from tests.test_serving import _start, _stop
from tests.test_serving_plain_docs import LONG_PROMPT

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


@contextlib.contextmanager
def _server(tmp, *extra: str) -> Iterator[tuple[str, str]]:
    """A ``seakr serve smollm2`` with ``extra`` options (no ``--dtype`` unless given), and its log's path."""
    process, url = _start(tmp, *extra, dtype=None)
    try:
        yield url, next(tmp.glob("server-*.log"))
    finally:
        _stop(process)


def test_seakr_serve_runs_float32_and_logs_no_weight_cast(tmp_path):
    from seakr_integrations.backends.remote import RemoteBackend

    with _server(tmp_path, "--max-model-len", "1024") as (url, log), RemoteBackend(url, timeout=300) as backend:
        assert backend.info["dtype"] == backend.dtype == "float32"
        assert backend.info["seeded_sampling"] is True and backend.seeded
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no dtype or seed warning: the server runs what was calibrated
            from seakr_integrations.config_resolution import resolve_config
            from seakr_integrations.reasoning import SeaKRConfig

            resolved = resolve_config(backend, SeaKRConfig.light())
            assert resolved.profile is not None and resolved.profile.dtype == "float32"
            backend.generate(["Question: What is the capital of France?\nAnswer:"], k=2, max_tokens=4, seed=1)
        text = log.read_text()
    assert "Attempted to load weight" not in text
    assert "dtype=torch.float32" in text and "runs bfloat16" not in text and "no per-request seed" not in text


def test_a_bfloat16_server_with_chunked_prefill_says_so_and_never_goes_down(tmp_path):
    import httpx

    from seakr_integrations.backends.remote import RemoteBackend
    from seakr_integrations.backends.remote_errors import UnseededSamplesWarning
    from seakr_integrations.calibration import CalibrationMismatchWarning
    from seakr_integrations.config_resolution import resolve_config
    from seakr_integrations.reasoning import SeaKRConfig
    from seakr_integrations.uncertainty.estimate import estimate

    extra = ("--dtype", "bfloat16", "--enable-chunked-prefill", "--max-num-batched-tokens", "512")
    with _server(tmp_path, "--max-model-len", "4096", *extra) as (url, log):
        info = httpx.get(url + "/v1/seakr/info", timeout=30).json()
        assert info["dtype"] == "bfloat16" and info["seeded_sampling"] is False
        seeded = {"prompts": [LONG_PROMPT], "k": 2, "max_tokens": 4, "estimators": [], "seed": 7}
        refused = httpx.post(url + "/v1/seakr/generate", json=seeded, timeout=120)
        assert refused.status_code == 400 and "takes no per-request seed" in refused.json()["error"]["message"]
        with RemoteBackend(url, timeout=600) as backend:
            expected = f"the server at {url} runs smollm2-135m-instruct in bfloat16"
            with pytest.warns(CalibrationMismatchWarning, match=expected):
                resolve_config(backend, SeaKRConfig.light())
            with pytest.warns(UnseededSamplesWarning, match="takes no per-request seed"):
                (out,) = backend.generate([LONG_PROMPT], k=4, max_tokens=8, stop=["\n"])  # chunked: 512 a step
            assert len(out.samples) == 4 and math.isfinite(estimate(out, "eigenscore").value)
            assert len(backend.tokenize(LONG_PROMPT)) > 512
        assert httpx.get(url + "/health", timeout=10).status_code == 200
        text = log.read_text()
    assert text.count("takes no per-request seed") == 1
    assert text.count("this server runs smollm2-135m-instruct in bfloat16") == 1
    assert text.count("Attempted to load weight") <= 1  # vLLM's one line per cast weight, collapsed to one
    assert "Worker failed" not in text and "EngineCore encountered" not in text  # the engine never died
