"""Helpers shared by the benchmark scripts (run as ``python benchmarks/NAME.py``)."""

from __future__ import annotations

import datetime
import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy

import sparsejac


def machine() -> str:
    """Interpreter, numpy, scipy and sparsejac versions, architecture and date."""
    return (f"{platform.python_implementation()} {platform.python_version()}, numpy "
            f"{np.__version__}, scipy {scipy.__version__}, sparsejac {sparsejac.__version__}, "
            f"{platform.machine()}, {datetime.date.today().isoformat()}")


def best(fn: Callable[[], Any], repeats: int) -> float:
    """The minimum wall time of ``repeats`` calls of ``fn``, after one untimed call."""
    fn()
    out = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out
