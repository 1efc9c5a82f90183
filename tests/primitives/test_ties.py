"""Derivatives at ties of ``np.maximum``, ``np.minimum``, ``np.fmax``, ``np.fmin``, ``np.clip``
and of the ``np.max``/``np.min`` reductions: the symmetric derivative (half of each side).

The oracle is the central difference quotient ``(f(x + h e_j) - f(x - h e_j)) / 2h``, which
tends to the average of the one-sided derivatives at a kink: the value these conventions give
at a tie of two. With it, sums of kinks at the same point differentiate as the smooth function
they spell. A reduction's ``k`` tied extrema share the derivative equally (``1/k`` each: the
derivative along ``(1, ..., 1)`` stays 1), checked by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import sparsejac
from tests.scenarios import fd_jacobian

H = 1e-7


def central(f: Callable[[np.ndarray], Any], x: np.ndarray) -> np.ndarray:
    """Central differences, the symmetric derivative at kinks."""
    return fd_jacobian(f, x, h=H)


def softplus_max(z: Any) -> Any:
    return np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))


def softplus_max_swapped(z: Any) -> Any:
    return np.maximum(0, z) + np.log1p(np.exp(-np.abs(z)))


def softplus_stack(z: Any) -> Any:
    return np.max(np.stack([z, np.zeros_like(z)]), axis=0) + np.log1p(np.exp(-np.abs(z)))


def logistic_loss(w: Any) -> Any:
    """Mean logistic loss with the stable softplus, as written in ML code."""
    a = np.array([[1.0, 2.0, -1.0], [0.5, -1.0, 2.0], [-1.5, 0.5, 1.0], [2.0, 1.0, 0.5]])
    y = np.array([1.0, -1.0, 1.0, -1.0])
    z = -y * (a @ w)
    return np.atleast_1d(np.mean(softplus_max(z)))


CASES = [
    pytest.param(softplus_max, np.array([0.0, 1.0, -1.0, 0.0]), id="softplus_maximum"),
    pytest.param(softplus_max_swapped, np.array([0.0, 2.0, 0.0]), id="softplus_maximum_0_z"),
    pytest.param(softplus_stack, np.array([0.0, -0.5, 0.0]), id="softplus_max_stack"),
    pytest.param(logistic_loss, np.zeros(3), id="logistic_loss_at_w0"),
    pytest.param(lambda x: np.maximum(x, 0) + np.minimum(x, 0), np.array([0.0, 1.0, -2.0]),
                 id="relu_plus_negative_part"),
    pytest.param(lambda x: np.maximum(x, -x) - np.abs(x), np.array([0.0, 1.5]),
                 id="abs_as_maximum"),
    pytest.param(lambda x: np.fmax(x, 0) - np.fmin(0, -x), np.array([0.0, 0.7, -0.7]),
                 id="fmax_fmin"),
    pytest.param(lambda x: np.clip(x, -1.0, 1.0) + np.maximum(x - 1.0, 0) + np.minimum(x + 1, 0),
                 np.array([-1.0, 1.0, 0.3, 2.0]), id="clip_at_both_bounds"),
    pytest.param(lambda x: np.maximum(x[:2] ** 2, x[2:]), np.array([1.0, 0.5, 1.0, 3.0]),
                 id="maximum_of_crossing_functions"),
    pytest.param(lambda x: np.max(x.reshape(2, 3), axis=1) * np.array([1.0, 2.0]),
                 np.array([1.0, 3.0, 3.0, 2.0, 0.0, 2.0]), id="max_reduction_ties"),
    pytest.param(lambda x: np.atleast_1d(np.linalg.norm(x, np.inf)),
                 np.array([-2.0, 2.0, 1.0]), id="inf_norm_ties"),
    pytest.param(lambda x: np.min(x.reshape(3, 2), axis=0) ** 2, np.array([1.0, 2.0, 1.0, 2.0,
                                                                           4.0, 3.0]),
                 id="min_reduction_ties"),
]


@pytest.mark.parametrize(("f", "x"), CASES)
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_one_off_jacobian_is_the_symmetric_derivative(f: Any, x: np.ndarray, mode: str) -> None:
    """At ties, forward and reverse give the central difference quotient's limit."""
    got = sparsejac.jacobian(f, x, mode=mode).toarray()
    np.testing.assert_allclose(got, central(f, x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("f", "x"), CASES)
def test_prepared_jacobian_at_and_away_from_the_tie(f: Any, x: np.ndarray) -> None:
    """A Jacobian prepared at the tie is right there and at a point without ties, and one
    prepared away from the tie is right at the tie."""
    away = x + np.linspace(0.011, 0.037, x.size)
    for at, where in ((x, x), (x, away), (away, x)):
        jac = sparsejac.SparseJacobian(f, at)
        np.testing.assert_allclose(jac(where).toarray(), central(f, where), rtol=1e-6,
                                   atol=1e-6)


@pytest.mark.parametrize(("f", "x"), CASES)
def test_local_pattern_keeps_every_tied_operand(f: Any, x: np.ndarray) -> None:
    """The local pattern at a tie holds every nonzero of the symmetric derivative."""
    pat = sparsejac.jacobian_sparsity(f, x, local=True).toarray()
    want = np.abs(central(f, x)) > 1e-6
    assert not (want & ~pat).any()


def test_maximum_at_a_tie_halves_each_operand() -> None:
    """np.maximum(a, b) and np.minimum at a == b: 1/2 to each operand, in either order."""
    x = np.array([2.0, 2.0])
    for fn in (np.maximum, np.minimum, np.fmax, np.fmin):
        got = sparsejac.jacobian(lambda t, fn=fn: np.atleast_1d(fn(t[0], t[1])), x).toarray()
        np.testing.assert_array_equal(got, [[0.5, 0.5]])


def test_fmax_ignores_a_nan_operand() -> None:
    """np.fmax / np.fmin take the other operand where one is NaN: derivative and local pattern."""
    x = np.array([2.0, 1.0, 3.0, 4.0])
    nan = np.array([np.nan, 0.0])
    for fn in (np.fmax, np.fmin):
        def f(t: Any, fn: Any = fn) -> Any:
            return fn(t[:2] + nan, t[2:] + nan[::-1])  # fn(nan, 3), fn(1, nan)

        got = sparsejac.jacobian(f, x).toarray()
        np.testing.assert_array_equal(got, [[0, 0, 1, 0], [0, 1, 0, 0]])
        pat = sparsejac.jacobian_sparsity(f, x, local=True).toarray()
        np.testing.assert_array_equal(pat, got != 0)


def test_max_reduction_shares_the_derivative_among_k_ties() -> None:
    """np.max with k equal largest elements gives 1/k to each; a NaN group keeps its first NaN."""
    x = np.array([3.0, 1.0, 3.0, 3.0, 5.0, 2.0, 5.0, 0.0])
    nan = np.array([0.0, 0.0, 0.0, 0.0, np.nan, 0.0, np.nan, 0.0])
    got = sparsejac.jacobian(lambda t: np.max((t + nan).reshape(2, 4), axis=1), x).toarray()
    third = 1.0 / 3.0
    np.testing.assert_allclose(got, [[third, 0, third, third, 0, 0, 0, 0],
                                     [0, 0, 0, 0, 1, 0, 0, 0]], rtol=1e-15)
