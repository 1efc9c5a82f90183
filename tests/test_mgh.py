"""Outside in: the Moré–Garbow–Hillstrom least-squares test problems, written as their paper
defines them and as users write small residuals (``np.array([...])`` of scalar expressions,
Python loops, ``np.prod``), at their standard starting points and at random points.

Small problems (at most 16 unknowns and 64 residuals) take the one-off path without colouring
(:data:`sparsejac.pipeline.ONE_SHOT_IDENTITY`), larger ones are coloured; prepared Jacobians
replay at new points. Every Jacobian is compared with the complex-step derivative (exact to
rounding), or, for the helical valley (``arctan2`` has no complex form), with the
hand-derived Jacobian.

Moré, Garbow, Hillstrom, "Testing unconstrained optimization software", ACM TOMS 7 (1981).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import sparsejac


def rosenbrock(x: Any) -> Any:
    return np.array([10 * (x[1] - x[0] ** 2), 1 - x[0]])


def freudenstein_roth(x: Any) -> Any:
    return np.array([-13 + x[0] + ((5 - x[1]) * x[1] - 2) * x[1],
                     -29 + x[0] + ((x[1] + 1) * x[1] - 14) * x[1]])


def powell_badly_scaled(x: Any) -> Any:
    return np.array([1e4 * x[0] * x[1] - 1, np.exp(-x[0]) + np.exp(-x[1]) - 1.0001])


def brown_badly_scaled(x: Any) -> Any:
    return np.array([x[0] - 1e6, x[1] - 2e-6, x[0] * x[1] - 2])


def beale(x: Any) -> Any:
    y = np.array([1.5, 2.25, 2.625])
    i = np.arange(1, 4)
    return y - x[0] * (1 - x[1] ** i)


def helical_valley(x: Any) -> Any:
    theta = np.arctan2(x[1], x[0]) / (2 * np.pi)
    return np.array([10 * (x[2] - 10 * theta), 10 * (np.sqrt(x[0] ** 2 + x[1] ** 2) - 1), x[2]])


def _helical_valley_jacobian(x: np.ndarray) -> np.ndarray:
    r2 = x[0] ** 2 + x[1] ** 2
    r = np.sqrt(r2)
    dtheta = np.array([-x[1], x[0]]) / (2 * np.pi * r2)
    return np.array([[-100 * dtheta[0], -100 * dtheta[1], 10.0],
                     [10 * x[0] / r, 10 * x[1] / r, 0.0],
                     [0.0, 0.0, 1.0]])


def bard(x: Any) -> Any:
    y = np.array([0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39, 0.37, 0.58, 0.73, 0.96,
                  1.34, 2.10, 4.39])
    u = np.arange(1.0, 16.0)
    v = 16.0 - u
    w = np.minimum(u, v)
    return y - (x[0] + u / (v * x[1] + w * x[2]))


def box_3d(x: Any) -> Any:
    t = 0.1 * np.arange(1, 11)
    return (np.exp(-t * x[0]) - np.exp(-t * x[1])
            - x[2] * (np.exp(-t) - np.exp(-10 * t)))


def powell_singular(x: Any) -> Any:
    return np.array([x[0] + 10 * x[1], np.sqrt(5) * (x[2] - x[3]), (x[1] - 2 * x[2]) ** 2,
                     np.sqrt(10) * (x[0] - x[3]) ** 2])


def wood(x: Any) -> Any:
    return np.array([10 * (x[1] - x[0] ** 2), 1 - x[0], np.sqrt(90) * (x[3] - x[2] ** 2),
                     1 - x[2], np.sqrt(10) * (x[1] + x[3] - 2), (x[1] - x[3]) / np.sqrt(10)])


def kowalik_osborne(x: Any) -> Any:
    y = np.array([0.1957, 0.1947, 0.1735, 0.1600, 0.0844, 0.0627, 0.0456, 0.0342, 0.0323,
                  0.0235, 0.0246])
    u = np.array([4.0, 2.0, 1.0, 0.5, 0.25, 0.167, 0.125, 0.1, 0.0833, 0.0714, 0.0625])
    return y - x[0] * (u ** 2 + u * x[1]) / (u ** 2 + u * x[2] + x[3])


def watson(x: Any) -> Any:
    n = x.shape[0]
    out = []
    for i in range(1, 30):  # a Python loop over residuals, as the paper writes it
        t = i / 29
        s1 = sum((j - 1) * x[j - 1] * t ** (j - 2) for j in range(2, n + 1))
        s2 = sum(x[j - 1] * t ** (j - 1) for j in range(1, n + 1))
        out.append(s1 - s2 ** 2 - 1)
    out += [x[0], x[1] - x[0] ** 2 - 1]
    return np.array(out)


def extended_rosenbrock(x: Any) -> Any:
    f = np.empty_like(x)
    f[0::2] = 10 * (x[1::2] - x[0::2] ** 2)
    f[1::2] = 1 - x[0::2]
    return f


def extended_powell(x: Any) -> Any:
    a, b, c, d = x[0::4], x[1::4], x[2::4], x[3::4]
    return np.stack([a + 10 * b, np.sqrt(5) * (c - d), (b - 2 * c) ** 2,
                     np.sqrt(10) * (a - d) ** 2], axis=1).ravel()


def trigonometric(x: Any) -> Any:
    n = x.shape[0]
    i = np.arange(1, n + 1)
    return n - np.sum(np.cos(x)) + i * (1 - np.cos(x)) - np.sin(x)


def brown_almost_linear(x: Any) -> Any:
    n = x.shape[0]
    f = x + np.sum(x) - (n + 1)
    f[-1] = np.prod(x) - 1
    return f


def discrete_boundary_value(x: Any) -> Any:
    n = x.shape[0]
    h = 1 / (n + 1)
    t = h * np.arange(1, n + 1)
    xp = np.concatenate([[0.0], x, [0.0]])
    return 2 * x - xp[:-2] - xp[2:] + h ** 2 * (x + t + 1) ** 3 / 2


def discrete_integral_equation(x: Any) -> Any:
    n = x.shape[0]
    h = 1 / (n + 1)
    t = h * np.arange(1, n + 1)
    g = (x + t + 1) ** 3
    lower = np.cumsum(t * g)  # sum over j <= i
    upper = np.cumsum(((1 - t) * g)[::-1])[::-1] - (1 - t) * g  # sum over j > i
    return x + h / 2 * ((1 - t) * lower + t * upper)


def broyden_tridiagonal(x: Any) -> Any:
    xp = np.concatenate([[0.0], x, [0.0]])
    return (3 - 2 * x) * x - xp[:-2] - 2 * xp[2:] + 1


def broyden_banded(x: Any) -> Any:
    n = x.shape[0]
    out = []
    for i in range(n):  # a Python loop with a varying band, as users write it
        lo, hi = max(0, i - 5), min(n - 1, i + 1)
        s = sum(x[j] * (1 + x[j]) for j in range(lo, hi + 1) if j != i)
        out.append(x[i] * (2 + 5 * x[i] ** 2) + 1 - s)
    return np.array(out)


#: (function, standard starting point)
PROBLEMS: list[tuple[Callable[[Any], Any], np.ndarray]] = [
    (rosenbrock, np.array([-1.2, 1.0])),
    (freudenstein_roth, np.array([0.5, -2.0])),
    (powell_badly_scaled, np.array([0.0, 1.0])),
    (brown_badly_scaled, np.array([1.0, 1.0])),
    (beale, np.array([1.0, 1.0])),
    (helical_valley, np.array([-1.0, 0.0, 0.0])),
    (bard, np.array([1.0, 1.0, 1.0])),
    (box_3d, np.array([0.0, 10.0, 20.0])),
    (powell_singular, np.array([3.0, -1.0, 0.0, 1.0])),
    (wood, np.array([-3.0, -1.0, -3.0, -1.0])),
    (kowalik_osborne, np.array([0.25, 0.39, 0.415, 0.39])),
    (watson, np.zeros(6)),
    (extended_rosenbrock, np.tile([-1.2, 1.0], 5)),
    (extended_powell, np.tile([3.0, -1.0, 0.0, 1.0], 3)),
    (trigonometric, np.full(10, 0.1)),
    (brown_almost_linear, np.full(10, 0.5)),
    (discrete_boundary_value, (lambda t: t * (t - 1))(np.arange(1, 11) / 11)),
    (discrete_integral_equation, (lambda t: t * (t - 1))(np.arange(1, 11) / 11)),
    (broyden_tridiagonal, -np.ones(10)),
    (broyden_banded, -np.ones(10)),
]
#: larger instances of the scalable problems: coloured (more than 16 unknowns)
LARGE: list[tuple[Callable[[Any], Any], np.ndarray]] = [
    (extended_rosenbrock, np.tile([-1.2, 1.0], 50)),
    (extended_powell, np.tile([3.0, -1.0, 0.0, 1.0], 25)),
    (trigonometric, np.full(40, 0.025)),
    (brown_almost_linear, np.full(40, 0.5)),
    (discrete_boundary_value, (lambda t: t * (t - 1))(np.arange(1, 101) / 101)),
    (discrete_integral_equation, (lambda t: t * (t - 1))(np.arange(1, 41) / 41)),
    (broyden_tridiagonal, -np.ones(100)),
    (broyden_banded, -np.ones(60)),
]


def _oracle(f: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
    """The complex-step Jacobian (hand-derived for the helical valley)."""
    if f is helical_valley:
        return _helical_valley_jacobian(x)
    h = 1e-30
    cols = [np.imag(f(x + 1j * h * e)) / h for e in np.eye(x.size)]
    return np.array(cols).T


def _ids(problems: list[tuple[Callable[[Any], Any], np.ndarray]]) -> list[str]:
    return [f"{f.__name__}-{x0.size}" for f, x0 in problems]


@pytest.mark.parametrize(("f", "x0"), PROBLEMS + LARGE, ids=_ids(PROBLEMS + LARGE))
def test_one_off_jacobian_equals_complex_step(f: Callable[[Any], Any], x0: np.ndarray) -> None:
    """At the standard point and at two random ones, ``sparsejac.jacobian`` equals the
    oracle to rounding; the structure holds every nonzero of it; tiny problems are not
    coloured, larger ones are."""
    rng = np.random.default_rng(x0.size)
    for x in (x0, x0 + rng.uniform(-0.5, 0.5, x0.size), rng.uniform(0.2, 1.5, x0.size)):
        want = _oracle(f, x)
        got = sparsejac.jacobian(f, x)
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got.toarray(), want, rtol=0, atol=1e-13 * scale)
        assert not (np.abs(want) > 0)[got.toarray() == 0].any()  # no entry missing
    plan = sparsejac.pipeline.prepare(f, x0, one_shot=True)
    tiny = x0.size <= sparsejac.pipeline.ONE_SHOT_IDENTITY and plan.pattern.shape[0] <= \
        sparsejac.pipeline.ONE_SHOT_IDENTITY_ROWS
    assert (plan.colorings[plan.mode].order == "identity") == tiny


@pytest.mark.parametrize(("f", "x0"), PROBLEMS + LARGE, ids=_ids(PROBLEMS + LARGE))
def test_prepared_jacobian_replays_exactly(f: Callable[[Any], Any], x0: np.ndarray) -> None:
    """One ``SparseJacobian`` per problem, prepared at the standard point, equals the oracle
    at three other points."""
    jac = sparsejac.SparseJacobian(f, x0)
    rng = np.random.default_rng(x0.size + 1)
    for _ in range(3):
        x = x0 + rng.uniform(-0.5, 0.5, x0.size)
        want = _oracle(f, x)
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(jac(x).toarray(), want, rtol=0, atol=1e-13 * scale)


@pytest.mark.parametrize(("f", "x0"), PROBLEMS + LARGE[:4], ids=_ids(PROBLEMS + LARGE[:4]))
def test_sum_of_squares_hessian_is_exactly_symmetric_and_exact(f: Callable[[Any], Any],
                                                              x0: np.ndarray) -> None:
    """The Hessian of ``0.5 |F(x)|^2`` (one-off and prepared) is exactly symmetric (H[i, j]
    and H[j, i] come from different products, equal only to rounding, so the lower one is
    copied onto the upper) and equals central differences of the complex-step gradient
    ``J^T F`` to their accuracy."""
    def obj(x: Any) -> Any:
        return 0.5 * np.sum(f(x) ** 2)

    def grad(x: np.ndarray) -> np.ndarray:
        return _oracle(f, x).T @ f(x)

    x = x0 + np.random.default_rng(x0.size).uniform(-0.3, 0.3, x0.size)
    prepared = sparsejac.SparseHessian(obj, x0)
    for h in (sparsejac.hessian(obj, x), prepared(x)):
        assert abs(h - h.T).nnz == 0  # not one entry differs, even in the last bit
        step = 1e-6 * max(1.0, float(np.abs(x).max()))
        want = np.array([(grad(x + step * e) - grad(x - step * e)) / (2 * step)
                         for e in np.eye(x.size)]).T
        scale = max(1.0, float(np.abs(want).max()))
        tol = 1e-4 if f is brown_badly_scaled else 1e-8  # (differences of 1e6-scaled terms)
        np.testing.assert_allclose(h.toarray(), want, rtol=0, atol=tol * scale)
