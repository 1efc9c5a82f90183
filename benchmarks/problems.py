"""Test problems shared by the benchmarks, with numpy alone (a fresh process running
scipy's finite differences imports them without sparsejac: ``benchmarks/startup.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["HIRES_Y0", "broyden", "hires"]


def hires(t: Any, y: Any) -> Any:
    """HIRES: 8 reactions of plant physiology (Schäfer 1975)."""
    f = np.empty_like(y)
    f[0] = -1.71 * y[0] + 0.43 * y[1] + 8.32 * y[2] + 0.0007
    f[1] = 1.71 * y[0] - 8.75 * y[1]
    f[2] = -10.03 * y[2] + 0.43 * y[3] + 0.035 * y[4]
    f[3] = 8.32 * y[1] + 1.71 * y[2] - 1.12 * y[3]
    f[4] = -1.745 * y[4] + 0.43 * y[5] + 0.43 * y[6]
    f[5] = -280.0 * y[5] * y[7] + 0.69 * y[3] + 1.71 * y[4] - 0.43 * y[5] + 0.69 * y[6]
    f[6] = 280.0 * y[5] * y[7] - 1.81 * y[6]
    f[7] = -f[6]
    return f


HIRES_Y0 = np.array([1.0, 0, 0, 0, 0, 0, 0, 0.0057])


def broyden(x: Any) -> Any:
    """Broyden's tridiagonal function (scipy's least_squares documentation)."""
    r = (3 - 2 * x) * x + 1
    r[1:] -= x[:-1]
    r[:-1] -= 2 * x[1:]
    return r
