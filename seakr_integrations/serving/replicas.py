"""What must agree across replicas of one ``seakr serve`` deployment behind a load balancer (docs/serving.md,
"Growing past one machine"), and the check that refuses a replica that differs.

Behind a balancer each request may reach any replica, and a client reads ``/v1/seakr/info`` once, from whichever
answered.  A replica reading another layer, in another dtype or from other weights would hand that client
uncertainties on another scale than the delta it calibrated, silently.  So every replica says what it is (its
``fingerprint`` over :data:`REPLICA_FIELDS`, in ``/v1/seakr/info`` and in every reply), ``RemoteBackend`` refuses a
reply from a replica whose fingerprint differs from the one it connected to, and ``seakr serve --join URL`` refuses to
start a replica that differs from the one at ``URL``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

REPLICA_FIELDS = (
    "model",
    "weights",
    "num_layers",
    "hidden_size",
    "eos_token_id",
    "default_layer",
    "source",
    "dtype",
    "seeded_sampling",
)
"""The facts of a server that decide its replies: which model and weights, which layer and source the read-out
reads, in which dtype, and whether samples take seeds.  Limits, the port and the tensor-parallel size may differ (a
tensor-parallel server's vectors equal a single worker's within float tolerance: docs/serving.md)."""

_DTYPE_NAMES = {"float": "float32", "half": "float16"}


def replica_facts(info: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`REPLICA_FIELDS` of a server's ``/v1/seakr/info`` (a missing one is ``None``)."""
    facts = {name: info.get(name) for name in REPLICA_FIELDS}
    if isinstance(facts["dtype"], str):
        facts["dtype"] = _DTYPE_NAMES.get(facts["dtype"], facts["dtype"])
    return facts


def replica_fingerprint(info: Mapping[str, Any]) -> str:
    """A short hash of :func:`replica_facts`: equal for replicas that answer alike."""
    text = json.dumps(replica_facts(info), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def replica_differences(mine: Mapping[str, Any], theirs: Mapping[str, Any], *, only: Sequence[str] = ()) -> list[str]:
    """Each of :data:`REPLICA_FIELDS` (or of ``only``) on which two servers' facts differ: ``name: mine != theirs``."""
    a, b = replica_facts(mine), replica_facts(theirs)
    return [f"{name}: {a[name]!r} != {b[name]!r}" for name in (only or REPLICA_FIELDS) if a[name] != b[name]]


def check_join(mine: Mapping[str, Any], url: str, timeout: float = 30.0) -> dict[str, Any]:
    """The ``/v1/seakr/info`` of the replica at ``url``, after checking that a server with facts ``mine`` (those known
    before it starts: model, weights, layers, layer, source, dtype) would answer like it, on each fact both know; a
    ``ValueError`` naming each difference otherwise, or when ``url`` answers no ``/v1/seakr/info``."""
    import httpx

    where = url.rstrip("/") + "/v1/seakr/info"
    try:
        response = httpx.get(where, timeout=timeout)
        theirs = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError) as exc:
        raise ValueError(
            f"--join {url}: GET {where} failed ({type(exc).__name__}: {exc}); is a seakr server there?"
        ) from None
    if not isinstance(theirs, dict):
        raise ValueError(f"--join {url}: GET {where} returned HTTP {response.status_code}, not seakr's server info")
    known = [name for name in REPLICA_FIELDS if name in mine and theirs.get(name) is not None]
    differences = replica_differences(mine, theirs, only=known)
    if differences:
        raise ValueError(
            f"--join {url}: this replica would not answer like the one there ({'; '.join(differences)}): start it "
            "with the same model, SEAKR_SERVE_LAYER, SEAKR_SERVE_SOURCE and --dtype, or put it behind another balancer"
        )
    return theirs
