"""The JSON form of self-aware outputs between ``seakr serve`` and ``RemoteBackend``: both ends use these functions
(the server's ``serving.plugin``, the client's ``backends.remote``), so the codec belongs to neither
(docs/design/backends.md)."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from seakr_integrations.outputs import Continuation, SelfAwareOutput
from seakr_integrations.reasoning.jsonform import number_from_json, number_to_json, uncertainty_from_dict
from seakr_integrations.uncertainty.estimate import Uncertainty

VECTOR_DTYPES = ("float16", "float32")


def encode_vectors(vectors: np.ndarray, dtype: str = "float16") -> dict[str, Any]:
    """Rows of vectors as ``{"dtype", "shape", "data"}`` (base64 of little-endian values)."""
    if dtype not in VECTOR_DTYPES:
        raise ValueError(f"vector dtype {dtype!r}: choose one of {', '.join(VECTOR_DTYPES)}")
    array = np.ascontiguousarray(vectors, dtype=np.dtype(dtype).newbyteorder("<"))
    return {"dtype": dtype, "shape": list(array.shape), "data": base64.b64encode(array.tobytes()).decode("ascii")}


def decode_vectors(encoded: dict[str, Any]) -> np.ndarray:
    """The float32 array that :func:`encode_vectors` encoded."""
    dtype = encoded.get("dtype")
    if dtype not in VECTOR_DTYPES:
        raise ValueError(f"vector dtype {dtype!r} is not one of {', '.join(VECTOR_DTYPES)}")
    array = np.frombuffer(base64.b64decode(encoded["data"]), dtype=np.dtype(dtype).newbyteorder("<"))
    return array.reshape([int(n) for n in encoded["shape"]]).astype(np.float32)


def uncertainty_to_json(u: Uncertainty) -> dict[str, Any]:
    data = u.to_dict()
    data["value"] = number_to_json(u.value)
    return data


def continuation_to_json(c: Continuation, *, with_lse: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "text": c.text,
        "token_ids": list(c.token_ids),
        "logprobs": [number_to_json(lp) for lp in c.logprobs],
        "finish_reason": c.finish_reason,
        "stop_reason": c.stop_reason,
    }
    if with_lse and c.logit_lse is not None:
        data["logit_lse"] = [number_to_json(v) for v in c.logit_lse]
    if c.offsets is not None:
        data["offsets"] = list(c.offsets)
    return data


def continuation_from_json(data: dict[str, Any]) -> Continuation:
    lse = data.get("logit_lse")
    return Continuation(
        data["text"],
        [int(t) for t in data["token_ids"]],
        [number_from_json(lp) for lp in data["logprobs"]],
        data["finish_reason"],
        data.get("stop_reason"),
        logit_lse=None if lse is None else [number_from_json(v) for v in lse],
        offsets=None if data.get("offsets") is None else [int(o) for o in data["offsets"]],
    )


def output_from_json(prompt: str, data: dict[str, Any]) -> SelfAwareOutput:
    """A ``SelfAwareOutput`` from one entry of the server's ``outputs`` (vectors only when they were sent);
    the server's uncertainties go to ``scores``."""
    samples = [continuation_from_json(s) for s in data["samples"]]
    if data.get("eos_vectors") is not None:
        vectors = decode_vectors(data["eos_vectors"])
        for sample, vector in zip(samples, vectors, strict=True):
            sample.eos_vector = vector
    greedy = continuation_from_json(data["greedy"])
    if data.get("greedy_vector") is not None:
        greedy.eos_vector = decode_vectors(data["greedy_vector"])[0]
    output = SelfAwareOutput(
        prompt,
        [int(t) for t in data["prompt_token_ids"]],
        greedy,
        samples,
        int(data["layer"]),
        str(data["source"]),
    )
    output.scores = {name: uncertainty_from_dict(u, strict=True) for name, u in (data.get("uncertainty") or {}).items()}
    return output
