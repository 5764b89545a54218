"""Wall seconds and peak memory of one command, its whole process tree counted: the first-run numbers of
docs/benchmarks.md.

``/usr/bin/time``'s maximum RSS is that of the largest single process, but vLLM runs its engine in a child process
beside the command's own, so the tree's sum is what a machine has to hold.  This samples every process of the tree
every ``--every`` seconds and reports the peak of the sum of their proportional set sizes (PSS: a page shared by two
processes counts half in each, so shared libraries are not counted twice) and of their RSS (an upper bound).

    python bench/first_run.py --out /tmp/logs/run -- .venv/bin/seakr ask "..."

prints one JSON line (``wall_s``, ``peak_pss_gb``, ``peak_rss_gb``, ``rc``) and leaves the command's stdout and
stderr in ``OUT.stdout`` and ``OUT.stderr``, and each second's memory by process in ``OUT.memory``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (every thread's list: a child started from a thread is listed there)."""
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            text = (task / "children").read_text()
            found.extend(int(c) for c in text.split())
    except OSError:
        pass
    return found


def _tree(root: int) -> list[int]:
    """``root`` and all its descendants alive now."""
    seen, todo = [], [root]
    while todo:
        pid = todo.pop()
        seen.append(pid)
        todo.extend(_children(pid))
    return seen


def _name(pid: int) -> str:
    """The process's name (vLLM renames its engine ``VLLM::EngineCore`` and its worker ``VLLM::Worker``)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def _memory_kb(pid: int) -> tuple[int, int]:
    """(PSS, RSS) of ``pid`` in KiB; zeros when it has exited."""
    pss = rss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
            elif line.startswith("Rss:"):
                rss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return pss, rss


def measure(command: list[str], out: Path, every: float) -> dict[str, float]:
    """Run ``command`` to its end; its wall time and its tree's peak PSS and RSS."""
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with (
        open(f"{out}.stdout", "wb") as stdout,
        open(f"{out}.stderr", "wb") as stderr,
        open(f"{out}.memory", "w") as timeline,
    ):
        proc = subprocess.Popen(command, stdout=stdout, stderr=stderr)
        peak_pss = peak_rss = 0
        last = -1.0
        while proc.poll() is None:
            pids = _tree(proc.pid)
            sums = [_memory_kb(pid) for pid in pids]
            pss, rss = sum(p for p, _ in sums), sum(r for _, r in sums)
            peak_pss, peak_rss = max(peak_pss, pss), max(peak_rss, rss)
            now = time.perf_counter() - started
            if now - last >= 1.0:  # a timeline, one line a second: when the peak happens, and in which process
                each = " ".join(f"{_name(pid)}={p / 1e6:.2f}" for pid, (p, _) in zip(pids, sums, strict=True) if p)
                timeline.write(f"{now:.0f}s pss={pss / 1e6:.2f}GB {each}\n")
                last = now
            time.sleep(every)
    return {
        "wall_s": round(time.perf_counter() - started, 1),
        "peak_pss_gb": round(peak_pss * 1024 / 1e9, 2),
        "peak_rss_gb": round(peak_rss * 1024 / 1e9, 2),
        "rc": proc.returncode,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="prefix of the command's .stdout and .stderr files")
    parser.add_argument("--every", type=float, default=0.2, help="seconds between samples (default 0.2)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("name the command to measure after --")
    print(json.dumps(measure(command, args.out, args.every)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
