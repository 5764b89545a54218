"""Replicas behind a load balancer, without a model (issue 68): what must agree, the client's check of every reply's
replica, and ``seakr serve --join``, against local stub servers.  Real replicas behind nginx:
test_serving_replicas.py."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from seakr_integrations.serving.replicas import check_join, replica_differences, replica_fingerprint
from seakr_integrations.wire import encode_vectors

INFO = {
    "model": "smollm2",
    "weights": "smollm2-135m-instruct-b179c9523d0e",
    "num_layers": 30,
    "hidden_size": 4,
    "max_context": 512,
    "eos_token_id": 2,
    "default_layer": 14,
    "layers": [14],
    "source": "mlp",
    "estimators": ["eigenscore"],
    "supports_logits": True,
    "chat_template": False,
    "seeded_sampling": True,
    "dtype": "float32",
}


def test_replicas_alike_share_a_fingerprint_and_any_fact_that_decides_replies_changes_it():
    same = {**INFO, "max_context": 8192, "replica": "b:8002", "samples_in_flight": 3}  # limits, address: may differ
    assert replica_fingerprint(same) == replica_fingerprint(INFO)
    assert replica_fingerprint({**INFO, "dtype": "float"}) == replica_fingerprint(INFO)  # vLLM's alias
    for name, other in (("default_layer", 13), ("source", "residual"), ("dtype", "bfloat16"), ("weights", "x")):
        assert replica_fingerprint({**INFO, name: other}) != replica_fingerprint(INFO)
        assert replica_differences(INFO, {**INFO, name: other}) == [f"{name}: {INFO[name]!r} != {other!r}"]


class Replica(BaseHTTPRequestHandler):
    """A seakr server's /v1/seakr/info and /v1/seakr/vectors; ``server.info`` is what it says it is, ``server.answers``
    the facts its replies carry (another replica's, behind a balancer that mixes them)."""

    def do_GET(self) -> None:  # noqa: N802
        self._send({**self.server.info, "fingerprint": replica_fingerprint(self.server.info), "replica": "a:8001"})

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        if self.server.down:  # what nginx answers when the replica it asked is gone
            self.send_response(502)
            self.send_header("Content-Type", "text/html")
            self.send_header("X-SeaKR-Replica", "127.0.0.1:8002")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        facts = self.server.answers
        vectors = encode_vectors(np.zeros((1, 4), np.float32), "float32")
        self._send({"vectors": vectors, "fingerprint": replica_fingerprint(facts), "replica": "b:8002"})

    def _send(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def replica():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Replica)
    server.info = server.answers = INFO
    server.down = False
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_reply_from_a_replica_unlike_the_one_connected_to_is_refused_and_named(replica):
    from seakr_integrations.backends.remote import RemoteBackend, RemoteBackendError

    with RemoteBackend(f"http://127.0.0.1:{replica.server_port}", timeout=10) as backend:
        assert backend.replica == "a:8001" and backend.fingerprint == replica_fingerprint(INFO)
        assert backend.last_token_vectors([[1, 2]]).shape == (1, 4)  # a replica alike: fine
        replica.answers = {**INFO, "default_layer": 13}
        with pytest.raises(RemoteBackendError, match=r"replica 'b:8002', which serves another .*--join"):
            backend.last_token_vectors([[1, 2]])


def test_seakr_serve_join_refuses_a_replica_that_would_differ_and_names_each_difference(replica):
    url = f"http://127.0.0.1:{replica.server_port}"
    mine = {k: INFO[k] for k in ("model", "weights", "num_layers", "default_layer", "source", "dtype")}
    assert check_join(mine, url)["replica"] == "a:8001"
    with pytest.raises(ValueError, match=r"default_layer: 5 != 14; dtype: 'bfloat16' != 'float32'"):
        check_join({**mine, "default_layer": 5, "dtype": "bfloat16"}, url)
    with pytest.raises(ValueError, match="is a seakr server there"):
        check_join(mine, "http://127.0.0.1:9")  # nothing listens on port 9


def test_a_failure_the_balancer_answers_names_the_replica_it_asked(replica):
    from seakr_integrations.backends.remote import RemoteBackend, RemoteBackendError

    with RemoteBackend(f"http://127.0.0.1:{replica.server_port}", timeout=2) as backend:
        replica.down = True
        with pytest.raises(RemoteBackendError, match=r"HTTP 502.*\(balancer: replica 127\.0\.0\.1:8002\)"):
            backend.last_token_vectors([[1, 2]])
