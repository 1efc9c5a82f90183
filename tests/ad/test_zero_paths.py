"""Derivative accumulation treats 0 · inf and 0 · nan as 0 (a zero path contributes nothing).

``np.where(x > 0, np.sqrt(x), 0)`` is differentiable at negative x with derivative 0, but the
untaken branch's local derivative is NaN there; plain AD multiplies it by where's zero and
returns NaN (JAX's well-known "where gradient" trap). sparsejac returns the derivative of
the function that was written, in every mode. Genuinely infinite derivatives stay infinite.
"""

from __future__ import annotations

import numpy as np
import pytest

import sparsejac
from sparsejac.ad import jvp, vjp


def guarded_sqrt(x):
    return np.where(x > 0, np.sqrt(x), 0.0)


def guarded_log(x):
    return np.where(x > 0, np.log(np.abs(x) + (x == 0)), x)


def x_sqrt_x(x):
    return x * np.sqrt(x)


X = np.array([-1.0, 0.0, 4.0])
CASES = [
    pytest.param(guarded_sqrt, X, np.diag([0.0, 0.0, 0.25]), id="where_sqrt"),
    pytest.param(guarded_log, X, np.diag([1.0, 1.0, 0.25]), id="where_log"),
    pytest.param(x_sqrt_x, np.array([0.0, 4.0]), np.diag([0.0, 3.0]), id="x_sqrt_x"),
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize(("f", "x", "jac"), CASES)
@pytest.mark.parametrize("how", ["jvp", "vjp", "forward", "reverse", "prepared_forward",
                                 "prepared_reverse"])
def test_zero_paths_are_zero(f, x, jac, how):
    """Every mode gives the exact (finite) derivative where a zero path meets inf or nan."""
    n = x.size
    match how:
        case "jvp":
            got = jvp(f, x, np.eye(n))
        case "vjp":
            got = vjp(f, x, np.eye(n))
        case "forward" | "reverse":
            got = sparsejac.jacobian(f, x, mode=how).toarray()
        case _:
            mode = how.removeprefix("prepared_")
            got = sparsejac.SparseJacobian(f, np.full(n, 2.0), mode=mode)(x).toarray()
    np.testing.assert_array_equal(got, jac)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_genuine_infinity_kept():
    """An unguarded sqrt at 0 has an infinite derivative, and it is reported as such."""
    got = jvp(np.sqrt, np.array([0.0, 4.0]), np.eye(2))
    assert np.isinf(got[0, 0])
    assert got[1, 1] == 0.25
