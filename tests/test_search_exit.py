"""A search abandoned after ``search_timeout`` never keeps the interpreter alive (issue 49): the driver's search
threads are daemons, so a process whose question failed on time exits on time, however long the search hangs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import CancelledError

import pytest

from seakr_integrations.reasoning.search_pool import DaemonPool

TESTS = os.path.dirname(os.path.abspath(__file__))
CHILD_PATH = os.pathsep.join([TESTS, *filter(None, [os.environ.get("PYTHONPATH")])])
"""Where the child finds the tests' fakes (``python -c`` puts the working folder, this checkout, first itself)."""
SCRIPT = textwrap.dedent(
    """
    import time
    from fakes import ScriptedBackend, passage
    from llamaindex_fakes import CONFIG, QUESTION, eiffel
    from seakr_integrations.reasoning import SeaKR

    class Sleepy:
        def search(self, query, k=3):
            time.sleep(120)
            return [passage("p1")]

    seakr = SeaKR(ScriptedBackend(eiffel), Sleepy(), CONFIG, search_timeout=0.5, on_retrieval_error={policy!r})
    try:
        result = seakr.answer(QUESTION)
        print("answered", any("search_timeout" in note for note in result.notes))
    except Exception as error:
        print("failed", type(error).__name__, "search_timeout" in str(error))
    """
)


@pytest.mark.parametrize(
    ("policy", "said"), [("raise", "failed RetrievalError True"), ("answer_without", "answered True")]
)
def test_a_process_whose_search_hangs_exits_once_its_question_is_done(policy, said):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(policy=policy)],
        capture_output=True,
        text=True,
        timeout=100,
        env={**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": CHILD_PATH},
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == said
    assert elapsed < 45, f"the process took {elapsed:.0f} s to exit: an abandoned search kept it alive"


def test_the_pool_runs_work_concurrently_and_cancels_what_has_not_started():
    pool = DaemonPool(2)
    release = threading.Event()
    first, second = pool.submit(release.wait, 10), pool.submit(release.wait, 10)
    third = pool.submit(lambda: "late")
    time.sleep(0.2)
    assert first.running() and second.running() and not third.done()  # two threads, the third waits
    assert all(t.daemon for t in pool._threads) and len(pool._threads) == 2
    pool.shutdown(wait=False, cancel_futures=True)
    with pytest.raises(CancelledError):
        third.result(timeout=1)
    release.set()
    assert first.result(timeout=5) is True and second.result(timeout=5) is True
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(print)


def test_the_pool_hands_back_errors_and_reuses_idle_threads():
    pool = DaemonPool(4)
    assert pool.submit(lambda x: x + 1, 1).result(timeout=5) == 2
    with pytest.raises(ZeroDivisionError):
        pool.submit(lambda: 1 / 0).result(timeout=5)
    time.sleep(0.1)
    assert [pool.submit(lambda i=i: i).result(timeout=5) for i in range(5)] == list(range(5))
    assert len(pool._threads) == 1  # one at a time: the idle thread took each
    pool.shutdown(wait=True)
