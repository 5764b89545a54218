"""Several ``seakr serve`` replicas behind nginx, started for real on one machine: the deployment docs/serving.md
describes, for ``tests/test_serving_replicas.py`` and the benchmarks that measure it (``bench/soak.py --replicas``,
``bench/serve_clients.py --replicas``).  It lives with the tests because it needs the repository's
``deploy/nginx.conf`` and kills replicas on purpose: a harness, not something the library ships.

Each replica is ``seakr serve MODEL --port P`` (every one after the first with ``--join`` the first, so one that
differs is refused); with ``cores``, replica i is bound to its share of the machine's cores
(``VLLM_CPU_OMP_THREADS_BIND``) so that they do not fight over the same ones.  nginx runs ``deploy/nginx.conf`` with
the replicas' ports put in, from Debian's package (``apt-get install nginx-light``); with one replica, clients go to
it directly.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
NGINX_CONF = ROOT / "deploy" / "nginx.conf"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def core_shares(replicas: int) -> list[str | None]:
    """Each replica's cores as a ``VLLM_CPU_OMP_THREADS_BIND`` value (a disjoint share), or ``None`` for all when
    there are fewer cores than replicas."""
    cores = sorted(os.sched_getaffinity(0))
    if replicas == 1 or len(cores) < replicas:
        return [None] * replicas
    size = len(cores) // replicas
    return [",".join(map(str, cores[i * size : (i + 1) * size])) for i in range(replicas)]


def nginx_config(ports: list[int], listen: int) -> str:
    """``deploy/nginx.conf`` with its two example replicas replaced by ``ports`` and its port by ``listen``."""
    text = NGINX_CONF.read_text()
    example = re.findall(r"( *server 127\.0\.0\.1:800[12] (.*);\n)", text)
    if len(example) != 2 or "listen 127.0.0.1:8000;" not in text:
        raise SystemExit(f"{NGINX_CONF} no longer has the example upstream this script replaces; update nginx_config")
    (first, options), (second, _) = example
    servers = "".join(f"        server 127.0.0.1:{p} {options};\n" for p in ports)
    text = text.replace(first + second, servers)
    return text.replace("listen 127.0.0.1:8000;", f"listen 127.0.0.1:{listen};")


class Deployment:
    """``replicas`` servers of ``model`` (and nginx in front of two or more) in ``tmp``; ``url`` is where clients go.
    ``cores``: give each replica its own share of the cores."""

    def __init__(self, model: str, replicas: int, tmp: Path, *, cores: bool = True, extra: tuple[str, ...] = ()):
        if replicas > 1 and shutil.which("nginx") is None:
            raise SystemExit("nginx is not installed: apt-get install nginx-light (or nginx), then run this again")
        self.model, self.tmp, self.extra = model, tmp, extra
        self.ports = [free_port() for _ in range(replicas)]
        self.binds = core_shares(replicas) if cores else [None] * replicas
        self.servers: list[subprocess.Popen | None] = [None] * replicas
        self.nginx: subprocess.Popen | None = None
        self.url = ""

    def __enter__(self) -> Deployment:
        # a benchmark stopped with SIGTERM (kill, timeout) still stops its servers and nginx on the way out
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        try:
            for i in range(len(self.ports)):
                self.start(i)
            if len(self.ports) > 1:
                listen = free_port()
                conf = self.tmp / "nginx.conf"
                conf.write_text(nginx_config(self.ports, listen))
                (self.tmp / "nginx").mkdir(exist_ok=True)
                log = (self.tmp / "nginx.log").open("w")
                self.nginx = subprocess.Popen(
                    ["nginx", "-p", str(self.tmp / "nginx"), "-c", str(conf)], stdout=log, stderr=subprocess.STDOUT
                )
                self.url = f"http://127.0.0.1:{listen}"
                wait_ready(self.url, self.nginx, self.tmp / "nginx.log", 30)
            else:
                self.url = self.replica_url(0)
        except BaseException:
            self.__exit__()
            raise
        return self

    def replica_url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.ports[i]}"

    def start(self, i: int) -> float:
        """Start replica ``i`` (again, after a kill) and wait until it answers; the seconds that took."""
        command = [sys.executable, "-m", "seakr_integrations.cli", "serve"]
        if i > 0:
            command += ["--join", self.replica_url(0)]
        command += [self.model, "--port", str(self.ports[i]), "--seed", "0", *self.extra]
        env = dict(os.environ)
        if self.binds[i] is not None:
            env["VLLM_CPU_OMP_THREADS_BIND"] = self.binds[i]
        log = self.tmp / f"replica{i}.log"
        with log.open("a") as stream:
            self.servers[i] = subprocess.Popen(
                command, stdout=stream, stderr=subprocess.STDOUT, start_new_session=True, cwd=self.tmp, env=env
            )
        return wait_ready(self.replica_url(i), self.servers[i], log, 600)

    def kill(self, i: int) -> None:
        """SIGKILL replica ``i``'s process group (its API server, engine and worker) mid-whatever."""
        server = self.servers[i]
        if server is not None and server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()

    def pids(self) -> dict[str, int]:
        """Each live process to measure: ``replicaN`` and ``nginx``."""
        found = {f"replica{i}": s.pid for i, s in enumerate(self.servers) if s is not None and s.poll() is None}
        if self.nginx is not None and self.nginx.poll() is None:
            found["nginx"] = self.nginx.pid
        return found

    def __exit__(self, *_: object) -> None:
        for server in self.servers:
            if server is not None and server.poll() is None:
                os.killpg(server.pid, signal.SIGTERM)
                try:
                    server.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, signal.SIGKILL)
        if self.nginx is not None and self.nginx.poll() is None:
            self.nginx.terminate()
            self.nginx.wait(30)


def wait_ready(url: str, process: subprocess.Popen, log: Path, limit: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < limit:
        if process.poll() is not None:
            raise SystemExit(f"{url}: the process exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"{url} did not answer within {limit:g} s:\n{log.read_text()[-3000:]}")
