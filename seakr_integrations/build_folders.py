"""The hidden working folders of a build, and the safe removal of those an interrupted build left behind.

A killed build cannot delete its working folders, and they can be large (gigabytes for a model), so the next build
of the same target removes them, but only while no other build runs in that directory (see docs/design/core.md).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

BUILDING = "building"
"""The infix of a build's working folder: ``.NAME.building-XXXXXXXX``."""
OLD = "old"
"""The infix of a replaced index awaiting deletion: ``.NAME.old-XXXXXXXX``."""
TMP = "tmp"
"""The infix of a model conversion's working folder: ``.NAME.tmp-XXXXXXXX``."""
INDEX_INFIXES = (BUILDING, OLD)

log = logging.getLogger("seakr.build")


def leftovers(out: Path, infixes: tuple[str, ...] = INDEX_INFIXES) -> list[Path]:
    """The working folders of builds of ``out`` that exist in its parent now (running or interrupted)."""
    prefixes = tuple(f".{out.name}.{infix}-" for infix in infixes)
    if not out.parent.is_dir():
        return []
    return sorted(p for p in out.parent.iterdir() if p.name.startswith(prefixes) and p.is_dir() and not p.is_symlink())


@contextlib.contextmanager
def build_lock(out: Path, infixes: tuple[str, ...] = INDEX_INFIXES) -> Iterator[None]:
    """Hold the parent directory's shared build lock while the ``with`` block builds ``out``, after removing what
    interrupted builds of ``out`` left behind (its folders with these ``infixes``) if no other build in that
    directory is running."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover - Windows
        _warn_leftovers(out, "this platform has no flock to tell whether a build is running", leftovers(out, infixes))
        yield
        return
    fd = os.open(out.parent, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("another index build is running in %s; its working folders are left alone", out.parent)
        else:
            _remove_leftovers(out, infixes)
        fcntl.flock(fd, fcntl.LOCK_SH)  # converts the exclusive lock, or waits for a clean-up elsewhere to end
        yield
    finally:
        os.close(fd)  # releases the lock


def _remove_leftovers(out: Path, infixes: tuple[str, ...]) -> None:
    found = leftovers(out, infixes)
    if not found:
        return
    size = sum(_size(p) for p in found)
    for path in found:
        shutil.rmtree(path, ignore_errors=True)
    still = [p for p in found if os.path.lexists(p)]
    log.warning(
        "removed %d folder(s) (%.1f MB) that an interrupted build of %s left behind: %s",
        len(found) - len(still),
        size / 1e6,
        out,
        ", ".join(p.name for p in found if p not in still),
    )
    if still:
        _warn_leftovers(out, "they could not be deleted", still)


def _warn_leftovers(out: Path, why: str, found: list[Path]) -> None:
    if found:
        names = ", ".join(str(p) for p in found)
        warnings.warn(
            f"folders left by an interrupted build of {out} remain ({why}): {names}; delete them by hand when no "
            "build is running",
            RuntimeWarning,
            stacklevel=4,
        )


def _size(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total
