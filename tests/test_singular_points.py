"""Derivatives at the edges of functions' domains and ranges, in every path (found from outside).

A hunt of edge values compared the one-off Jacobian in each mode, both prepared engines in each
mode, ``sparsejac.ad`` and the Hessians against derivatives by hand. Each case here failed on
at least one path before it was fixed: lost digits (``tanh`` on the tape, ``expm1``,
``logaddexp`` at large arguments, ``arcsinh`` beyond 1e154), the sign of an infinite derivative
at a signed zero (``sqrt(-x)`` at 0), the ``0 · inf = 0`` convention in contractions, and the
two modes meeting a singular point differently.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import sparsejac
from sparsejac import ad
from sparsejac.errors import ConcretizationError


def every_path(f: Callable[[Any], Any], x: np.ndarray, x0: np.ndarray) -> dict[str, np.ndarray]:
    """J at ``x`` by the one-off Jacobian and by both engines prepared at ``x0``, per mode."""
    got = {}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for mode in ("forward", "reverse"):
            got[f"one-off {mode}"] = sparsejac.jacobian(f, x, mode=mode).toarray()
            for engine in ("tape", "chain"):
                jac = sparsejac.SparseJacobian(f, x0, mode=mode, engine=engine, verify=False)
                got[f"{engine} {mode}"] = jac(x).toarray()
        got["prepared auto"] = sparsejac.SparseJacobian(f, x0, verify=False)(x).toarray()
    return got


def assert_every_path(f: Callable[[Any], Any], x: np.ndarray, x0: np.ndarray, want: Any,
                      rtol: float = 1e-15) -> None:
    want = np.asarray(want, dtype=np.float64)
    for name, got in every_path(f, x, x0).items():
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=rtol, atol=0,
                                   err_msg=name)


def test_tanh_keeps_its_digits_on_the_tape() -> None:
    """The tape took 1 - tanh(x)^2: a relative error of 1e-8 at x = 10, 0 beyond 19."""
    x = np.array([10.0, 15.0, 20.0, 40.0])
    assert_every_path(np.tanh, x, x + 0.5, np.diag(1.0 / np.cosh(x) ** 2), rtol=1e-14)


def test_expm1_derivative_is_exp() -> None:
    """expm1(x) + 1 lost the digits of exp(x): 30 % off at -37, 0 below -37.4."""
    x = np.array([-20.0, -37.0, -40.0, -700.0])
    assert_every_path(np.expm1, x, x + 0.5, np.diag(np.exp(x)), rtol=1e-14)
    h = sparsejac.hessian(lambda z: np.sum(np.expm1(z)), x).toarray()
    np.testing.assert_allclose(np.diag(h), np.exp(x), rtol=1e-14)


def test_logaddexp_weights_at_large_arguments() -> None:
    """exp(a - out) was 1 where out rounds to a (|a| >= 1e16): weights (1, 1), not (0.5, 0.5)."""
    def f(z: Any) -> Any:
        return np.atleast_1d(np.logaddexp(z[0], z[1]))

    for v in (1e15, 1e16, -1e300):
        assert_every_path(f, np.array([v, v]), np.array([1.0, 2.0]), [[0.5, 0.5]])
    h = sparsejac.hessian(lambda z: np.logaddexp(z[0], z[1]), np.array([1e16, 1e16]))
    np.testing.assert_allclose(h.toarray(), [[0.25, -0.25], [-0.25, 0.25]], rtol=1e-15)


def test_inverse_hyperbolic_and_circular_functions_far_out_and_near_one() -> None:
    """1/sqrt(x*x + 1) overflowed beyond 1.3e154 (0, not 1/x); 1 - x*x lost digits near 1."""
    big = np.array([1e200, 3e300])
    assert_every_path(np.arcsinh, big, np.array([2.0, 3.0]), np.diag(1.0 / big), rtol=1e-15)
    assert_every_path(np.arccosh, big, np.array([2.0, 3.0]), np.diag(1.0 / big), rtol=1e-15)
    near = np.array([1.0 - 1e-8, -1.0 + 1e-9])
    d = (1.0 - near) * (1.0 + near)
    assert_every_path(np.arctanh, near, np.array([0.5, -0.5]), np.diag(1.0 / d), rtol=1e-14)
    assert_every_path(np.arcsin, near, np.array([0.5, -0.5]), np.diag(1.0 / np.sqrt(d)),
                      rtol=1e-14)


@pytest.mark.parametrize(("f", "x"), [
    (lambda z: np.sqrt(-z), 0.0),             # d/dx sqrt(-x) -> -inf as x -> 0-
    (lambda z: np.sqrt(-(z - 1.0)), 1.0),
    (lambda z: np.log(-z), 0.0),
    (lambda z: np.log2(-z), 0.0),
])
def test_an_infinite_derivative_at_a_negated_zero_has_its_sign(f: Any, x: float) -> None:
    """sqrt(-0.0) is -0.0, and 0.5 / -0.0 gave +inf for sqrt(-x)'s -inf at 0."""
    assert_every_path(f, np.array([x]), np.array([x - 0.5]), [[-np.inf]])


def test_contractions_keep_the_zero_convention() -> None:
    """An infinite cotangent (sqrt at 0) times a zero residual in ``@`` gave NaN in reverse
    mode, which spread to every entry of ``sqrt(x @ x) + x``."""
    c = np.array([1.0, 2.0, 3.0])
    assert_every_path(lambda z: np.atleast_1d(np.sqrt((z - c) @ (z - c))), c, c + 0.3,
                      np.zeros((1, 3)))
    assert_every_path(lambda z: np.sqrt(z @ z) + z, np.zeros(2), np.ones(2), np.eye(2))
    with np.errstate(all="ignore"):
        assert np.array_equal(ad.vjp(lambda z: np.sqrt((z - c) @ (z - c)), c, np.ones(1)),
                              np.zeros(3))


def test_a_finite_derivative_from_either_mode_is_kept() -> None:
    """Forward and reverse mode meet a singular point at different places: x[0] cancels
    before sqrt's infinite partial (0 forward, NaN reverse); y * c - y * c after it (NaN
    forward, 0 reverse). Every path now gives the finite value where either mode has it."""
    assert_every_path(lambda z: np.atleast_1d(np.sqrt(np.sum(z) - z[0])),
                      np.array([1.0, 0.0, 0.0]), np.array([1.0, 2.0, 3.0]),
                      [[0.0, np.inf, np.inf]])
    def twice(z: Any) -> Any:
        y = np.sqrt(z[0])
        return np.atleast_1d(y * 3.0 - y * 3.0 + z[1])

    # (the chain engine's preaccumulated entries hold 3 inf - 3 inf in either mode: NaN)
    for name, got in every_path(twice, np.array([0.0, 2.0]), np.array([1.0, 2.0])).items():
        if not name.startswith("chain"):
            np.testing.assert_array_equal(got, [[0.0, 1.0]], err_msg=name)


def test_sparsejac_ad_refuses_a_special_case_as_jacobian_does() -> None:
    """``where(x != 0, (1 - cos x) / x, 0)`` at 0 (slope 1/2): ad.jvp and ad.vjp gave 0."""
    def f(z: Any) -> Any:
        return np.where(z != 0, (1 - np.cos(z)) / z, 0.0)

    x = np.zeros(2)
    for call in (lambda: ad.jvp(f, x, np.eye(2)), lambda: ad.vjp(f, x, np.eye(2)),
                 lambda: ad.hvp(lambda z: np.sum(f(z)), x, np.eye(2)),
                 lambda: sparsejac.jacobian(f, x)):
        with pytest.raises(ConcretizationError), np.errstate(all="ignore"):
            call()
