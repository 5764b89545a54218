"""The CLI's quiet engine output: what vLLM, torch and the engine's processes write to standard error goes to a log
file while the engine runs, the command's own lines still reach the terminal, and descriptor 2 is restored after."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings

import pytest

from seakr_integrations.calibration import UncalibratedDeltaWarning
from seakr_integrations.cli.quiet import TAIL_LINES, engine_output_to_log, log_tail


def _fd2() -> tuple[int, int]:
    st = os.fstat(2)
    return st.st_dev, st.st_ino


def test_descriptor_2_goes_to_the_log_and_comes_back(tmp_path, capfd):
    log = tmp_path / "logs" / "engine.log"
    before = _fd2()
    with engine_output_to_log(log) as console:
        os.write(2, b"NUMA MEMBIND warning from C++\n")
        with open(2, "w", closefd=False) as fd2:  # the CLI's sys.stderr (pytest's capture replaces it here)
            print("Triton is installed, but doesn't include CPU backend", file=fd2)
        subprocess.run([sys.executable, "-c", "import sys; print('engine process noise', file=sys.stderr)"], check=True)
        logging.getLogger("vllm.fake").warning("a vLLM log line")
        logging.getLogger("seakr_integrations.fake").warning("our own warning")
        warnings.warn("torch's FutureWarning", FutureWarning, stacklevel=1)
        warnings.warn("our UncalibratedDeltaWarning", UncalibratedDeltaWarning, stacklevel=1)
        print("seakr: our progress", file=console)
    assert _fd2() == before
    shown = capfd.readouterr().err
    assert "seakr: our progress" in shown and "our own warning" in shown
    assert "our UncalibratedDeltaWarning" in shown
    for noise in ("NUMA", "Triton", "engine process noise", "a vLLM log line", "torch's FutureWarning"):
        assert noise not in shown
    logged = log.read_text()
    assert "NUMA" in logged and "Triton" in logged and "engine process noise" in logged
    print("after the block", file=sys.stderr)
    assert "after the block" in capfd.readouterr().err


def test_a_failure_prints_the_logs_tail_and_restores_descriptor_2(tmp_path, capfd):
    log = tmp_path / "engine.log"
    before = _fd2()
    with pytest.raises(RuntimeError, match="engine core failed"), engine_output_to_log(log):
        for i in range(TAIL_LINES + 5):
            os.write(2, f"line {i}\n".encode())
        raise RuntimeError("engine core failed")
    assert _fd2() == before
    shown = capfd.readouterr().err
    assert f"last {TAIL_LINES} lines of {log}" in shown
    assert f"line {TAIL_LINES + 4}" in shown and "line 4\n" not in shown


def test_disabled_leaves_standard_error_alone(tmp_path, capfd):
    with engine_output_to_log(tmp_path / "engine.log", enabled=False) as console:
        assert console is sys.stderr
        os.write(2, b"shown as it is\n")
    assert "shown as it is" in capfd.readouterr().err
    assert not (tmp_path / "engine.log").exists()


def test_log_tail_of_a_missing_file_is_empty(tmp_path):
    assert log_tail(tmp_path / "none.log") == []


def test_seakr_ask_keeps_the_engines_output_in_its_log_and_prints_the_same_answer(tmp_path, capfd, monkeypatch):
    import json

    from fakes import ScriptedBackend
    from test_reasoner_components import eiffel

    import seakr_integrations.cli as cli
    from seakr_integrations import calibration
    from seakr_integrations.retrieval.bm25 import BM25Index

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": p, "title": p, "text": f"text of {p}"}) + "\n" for p in ("p1", "p2")))
    BM25Index.build(str(corpus), str(tmp_path / "index"))
    monkeypatch.setenv("SEAKR_CACHE_DIR", str(tmp_path / "cache"))
    # the delta warning comes once per settings and process: an earlier test may have had it already
    monkeypatch.setattr(calibration, "_warned", set())

    def noisy_engine(args):
        os.write(2, b"INFO 05-01 [cpu_worker.py] NUMA MEMBIND warning\n")
        subprocess.run([sys.executable, "-c", "import sys; print('resource_tracker: noise', file=sys.stderr)"])
        return ScriptedBackend(eiffel)

    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", noisy_engine)
    before = _fd2()
    argv = [
        "ask",
        "Which country is the Eiffel Tower in?",
        "--index",
        str(tmp_path / "index"),
        "-k",
        "4",
        "--exemplars",
        "0",
    ]
    assert cli.main([*argv, "--max-tokens", "10"]) == 0
    assert _fd2() == before
    quiet = capfd.readouterr()
    assert "NUMA" not in quiet.err and "resource_tracker" not in quiet.err
    assert "answer: France" in quiet.out
    assert "UncalibratedDeltaWarning" in quiet.err  # our own warnings still reach the terminal
    assert "NUMA" in (tmp_path / "cache" / "logs" / "engine.log").read_text()
    assert cli.main([*argv, "--max-tokens", "10", "-v"]) == 0
    shown = capfd.readouterr()
    assert "NUMA" in shown.err and shown.out == quiet.out.replace(_took(quiet.out), _took(shown.out))


def _took(out: str) -> str:
    """The run's own time in ``seakr ask``'s summary line (``took 0.1 s``), which differs between runs."""
    import re

    found = re.search(r"took [\d.]+ s", out)
    assert found, out
    return found.group(0)


@pytest.mark.parametrize("command", ["eval", "calibrate"])
def test_eval_and_calibrate_keep_the_engines_output_as_quiet_as_ask(tmp_path, capfd, monkeypatch, command):
    """What a starting engine prints (vLLM's Triton and NUMA lines, its weight-loading bar: here a stand-in that
    writes to descriptor 2 and to ``sys.stderr``) goes to the log; the command's progress bar and results do not."""
    import json

    from fakes import ScriptedBackend
    from test_reasoner_components import eiffel

    import seakr_integrations.cli as cli
    from seakr_integrations import calibration
    from seakr_integrations.retrieval.bm25 import BM25Index

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": p, "title": p, "text": f"text of {p}"}) + "\n" for p in ("p1", "p2")))
    BM25Index.build(str(corpus), str(tmp_path / "index"))
    questions = tmp_path / "questions.jsonl"
    rows = [{"id": f"q{i}", "question": "Which country is the Eiffel Tower in?", "answers": ["France"]} for i in (1, 2)]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("SEAKR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(calibration, "_warned", set())

    def noisy_engine(args):
        os.write(2, b"[W utils.cpp:68] Warning: NUMA binding: Using MEMBIND policy\n")
        print("WARNING:vllm.triton_utils.importing:Triton is installed, no CPU backend", file=sys.stderr)
        print("Loading safetensors checkpoint shards: 100% Completed | 1/1", file=sys.stderr)
        return ScriptedBackend(eiffel)

    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", noisy_engine)
    # as outside pytest: Python's standard error writes to descriptor 2 (capfd gives it a file of its own)
    monkeypatch.setattr(sys, "stderr", open(2, "w", buffering=1, closefd=False))  # noqa: SIM115
    argv = [command, "--dataset", str(questions), "--index", str(tmp_path / "index"), "--no-coverage-check"]
    argv += ["-k", "4", "--exemplars", "0", "--max-tokens", "10", "--delta", "-6"]
    argv += ["--out", str(tmp_path / "out.jsonl")] if command == "eval" else ["--profile-dir", str(tmp_path / "p")]
    argv += ["--points", "2"] if command == "calibrate" else []
    before = _fd2()
    assert cli.main(argv) == 0
    assert _fd2() == before
    quiet = capfd.readouterr()
    for noise in ("NUMA", "Triton", "safetensors"):
        assert noise not in quiet.err and noise not in quiet.out
        assert noise in (tmp_path / "cache" / "logs" / "engine.log").read_text()
    assert "EM" in quiet.out if command == "eval" else "delta =" in quiet.out
    assert "100%" in quiet.err  # the command's own progress bar still reaches the terminal
    assert cli.main([*argv, "-v"]) == 0
    assert "NUMA" in capfd.readouterr().err


def test_the_commands_own_warnings_print_as_messages_not_as_python_source():
    """A command's own warning is one line, ``seakr: warning: ... (Category)``, without the file, line number and
    source line Python prints; other libraries' warnings keep Python's form."""
    code = (
        "import warnings\n"
        "from seakr_integrations.calibration import UncalibratedDeltaWarning\n"
        "from seakr_integrations.cli.quiet import plain_own_warnings\n"
        "plain_own_warnings(); plain_own_warnings()\n"
        "warnings.warn('delta=-6.0 is uncalibrated', UncalibratedDeltaWarning, stacklevel=1)\n"
        "warnings.warn('a FutureWarning of torch', FutureWarning, stacklevel=1)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = done.stderr.splitlines()
    assert lines[0] == "seakr: warning: delta=-6.0 is uncalibrated (UncalibratedDeltaWarning)"
    assert "FutureWarning: a FutureWarning of torch" in lines[1]  # not ours: Python's form
    assert not any("warnings.warn('delta" in line for line in lines)
