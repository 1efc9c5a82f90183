"""Functions for the ``sparsejac report --function`` tests (imported by dotted name)."""

from __future__ import annotations

import numpy as np


def tridiagonal(x):
    """A tridiagonal residual: forward mode needs 3 products."""
    y = x**3 - 2.0 * x
    y[1:] += x[:-1]
    y[:-1] += x[1:]
    return y


def dense_row(x):
    """Tridiagonal plus a dense last row (a total): reverse mode wins."""
    y = np.sin(x)
    y[1:] += 0.5 * x[:-1]
    y[:-1] += 0.5 * x[1:]
    y[-1] = np.sum(x**2)
    return y


def branches(x):
    """Branches on a value: global detection refuses it."""
    return x if x[0] > 0 else -x


not_callable = 3


def arrowhead_energy(x):
    """A scalar energy whose Hessian is an arrowhead: 2 star colours, n column colours."""
    return x[0] * np.sum(x[1:] ** 2) + np.sum(np.sin(x))
