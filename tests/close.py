"""Comparing results of two real-model runs: same texts and decisions, floats equal up to rounding.

Two identical CPU runs of the same model can differ in the last digits of a float (the BLAS kernels' summation order
depends on memory alignment and threading), so uncertainty values are compared with a relative tolerance while
everything else must be exactly equal.
"""

from __future__ import annotations

import math
from typing import Any


def assert_close(a: Any, b: Any, *, rel: float = 1e-6, path: str = "") -> None:
    """Assert ``a`` equals ``b``, except that floats may differ by ``rel`` (relative); nested dicts/lists too."""
    if isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=rel, abs_tol=rel) or (math.isnan(a) and math.isnan(b)), f"{path}: {a} != {b}"
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            assert_close(a[key], b[key], rel=rel, path=f"{path}.{key}")
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), f"{path}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_close(x, y, rel=rel, path=f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"
