"""Issue 13 item 4: contractions and data movement, against hand-derived Jacobians.

Each case is ``f``, a point generator and ``jac(x)`` derived by hand (never by running
sparsejac); every case is checked (i) against central differences (the oracle of the oracle),
(ii) in every exact mode with global detection, (iii) through a prepared ``SparseJacobian``
replayed at several new points, and (iv) its local pattern (``local=True``) equals the nonzeros
of the hand-derived Jacobian, while the global pattern contains them. Value-dependent
selections (sort, median, running maxima) have a global pattern dense along the sorted axis
and an exact local one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import sparsejac
from tests.scenarios import fd_jacobian


@dataclass(frozen=True)
class Idiom:
    name: str
    f: Callable[[Any], Any]
    point: Callable[[np.random.Generator], np.ndarray]
    jac: Callable[[np.ndarray], np.ndarray]
    exact_global: bool = True  # the global pattern equals the nonzeros (not a selection)


def _u(shape: tuple[int, ...], lo: float = 0.5, hi: float = 1.5
       ) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.uniform(lo, hi, shape)


# -- sort: out = s**2 with s = x[p], p = argsort(x): J[i, p[i]] = 2 x[p[i]] -----------------
def _sort_sq_jac(x: np.ndarray) -> np.ndarray:
    p = np.argsort(x)
    jac = np.zeros((x.size, x.size))
    jac[np.arange(x.size), p] = 2 * x[p]
    return jac


# -- median along rows of (3, 5): the middle element of each row ----------------------------
def _median_rows_jac(x: np.ndarray) -> np.ndarray:
    jac = np.zeros((3, 15))
    for r in range(3):
        jac[r, 5 * r + np.argsort(x[r])[2]] = 1.0
    return jac


# -- quantile 0.3 of 6 values: virtual index 1.5: (s[1] + s[2]) / 2 -------------------------
def _quantile_jac(x: np.ndarray) -> np.ndarray:
    p = np.argsort(x)
    jac = np.zeros((1, 6))
    jac[0, p[1]] = jac[0, p[2]] = 0.5
    return jac


# -- running maximum: out[i] = x[argmax(x[:i+1])] --------------------------------------------
def _runmax_jac(x: np.ndarray) -> np.ndarray:
    jac = np.zeros((x.size, x.size))
    for i in range(x.size):
        jac[i, np.argmax(x[: i + 1])] = 1.0
    return jac


# -- rows sorted by their own argsort, times 3 -----------------------------------------------
def _take_argsort_jac(x: np.ndarray) -> np.ndarray:
    jac = np.zeros((x.size, x.size))
    for r in range(x.shape[0]):
        p = np.argsort(x[r])
        jac[r * 4 + np.arange(4), r * 4 + p] = 3.0
    return jac


# -- interp with x and fp traced: x = z[:3] * 2 (in [1, 3)), fp = z[3:] (6 breakpoints) ------
_XP = np.linspace(0.0, 3.0, 6)


def _interp_both(z: Any) -> Any:
    return np.interp(z[:3] * 2.0, _XP, z[3:])


def _interp_both_jac(z: np.ndarray) -> np.ndarray:
    jac = np.zeros((3, 9))
    for i in range(3):
        xi = 2.0 * z[i]
        j = int(np.searchsorted(_XP, xi, side="right") - 1)
        h = _XP[j + 1] - _XP[j]
        t = (xi - _XP[j]) / h
        jac[i, i] = 2.0 * (z[3 + j + 1] - z[3 + j]) / h
        jac[i, 3 + j] = 1.0 - t
        jac[i, 3 + j + 1] = t
    return jac


# -- einsum sublist form: x x^T for x (3, 4): d(xx^T)_ik / dx_ab = d_ia x_kb + d_ka x_ib ---------
def _gram_jac(x: np.ndarray) -> np.ndarray:
    jac = np.zeros((3, 3, 3, 4))
    for i in range(3):
        for k in range(3):
            jac[i, k, i, :] += x[k]
            jac[i, k, k, :] += x[i]
    return jac.reshape(9, 12)


# -- np.r_ and np.c_ --------------------------------------------------------------------------
def _r_jac(x: np.ndarray) -> np.ndarray:  # r_[x**2, 1.0, 2:4, x[::-1]]
    n = x.size
    jac = np.zeros((2 * n + 3, n))
    jac[np.arange(n), np.arange(n)] = 2 * x
    jac[n + 3 + np.arange(n), n - 1 - np.arange(n)] = 1.0
    return jac


def _c_jac(x: np.ndarray) -> np.ndarray:  # c_[x, sin(x)]: (n, 2)
    n = x.size
    jac = np.zeros((n, 2, n))
    jac[np.arange(n), 0, np.arange(n)] = 1.0
    jac[np.arange(n), 1, np.arange(n)] = np.cos(x)
    return jac.reshape(2 * n, n)


# -- apply_along_axis: each column c -> c * sum(c); vectorize: a * exp(b) -----------------------
def _apply_jac(x: np.ndarray) -> np.ndarray:  # x (3, 4), axis 0
    jac = np.zeros((3, 4, 3, 4))
    s = x.sum(axis=0)
    for j in range(4):
        for i in range(3):
            jac[i, j, :, j] = x[i, j]
            jac[i, j, i, j] += s[j]
    return jac.reshape(12, 12)


def _vectorize_jac(x: np.ndarray) -> np.ndarray:  # f = vectorize(a*exp(b))(x, x[0]), x (3, 4)
    jac = np.zeros((3, 4, 3, 4))
    for i in range(3):
        for j in range(4):
            jac[i, j, i, j] += np.exp(x[0, j])
            jac[i, j, 0, j] += x[i, j] * np.exp(x[0, j])
    return jac.reshape(12, 12)


def _sum_where_jac(x: np.ndarray) -> np.ndarray:  # sum(x**2, where=mask, axis=1), x (3, 4)
    mask = np.arange(12).reshape(3, 4) % 3 != 1
    jac = np.zeros((3, 3, 4))
    for i in range(3):
        jac[i, i] = np.where(mask[i], 2 * x[i], 0.0)
    return jac.reshape(3, 12)


_MASK = np.arange(12).reshape(3, 4) % 3 != 1

IDIOMS = [
    Idiom("sort_squares", lambda x: np.sort(x) ** 2, _u((7,)), _sort_sq_jac, False),
    Idiom("median_rows", lambda x: np.median(x, axis=1), _u((3, 5)), _median_rows_jac, False),
    Idiom("quantile", lambda x: np.atleast_1d(np.quantile(x, 0.3)), _u((6,)), _quantile_jac,
          False),
    Idiom("running_max", lambda x: np.maximum.accumulate(x), _u((7,)), _runmax_jac, False),
    Idiom("take_along_argsort",
          lambda x: 3.0 * np.take_along_axis(x, np.argsort(x, axis=1), axis=1),
          _u((3, 4)), _take_argsort_jac, False),
    Idiom("interp_x_and_fp", _interp_both, _u((9,)), _interp_both_jac, False),
    Idiom("einsum_sublists", lambda x: np.einsum(x, [0, 1], x, [2, 1], [0, 2]), _u((3, 4)),
          _gram_jac),
    Idiom("r_", lambda x: np.r_[x**2, 1.0, 2:4, x[::-1]], _u((5,)), _r_jac),
    Idiom("c_", lambda x: np.c_[x, np.sin(x)], _u((5,)), _c_jac),
    Idiom("apply_along_axis", lambda x: np.apply_along_axis(lambda c: c * c.sum(), 0, x),
          _u((3, 4)), _apply_jac),
    Idiom("vectorize", lambda x: np.vectorize(lambda a, b: a * np.exp(b))(x, x[0]),
          _u((3, 4)), _vectorize_jac),
    Idiom("sum_where", lambda x: np.sum(x**2, axis=1, where=_MASK), _u((3, 4)), _sum_where_jac),
]
PARAMS = [pytest.param(c, id=c.name) for c in IDIOMS]


@pytest.mark.parametrize("c", PARAMS)
def test_hand_derived_jacobian_is_right(c: Idiom, rng: np.random.Generator) -> None:
    """The oracle itself agrees with central differences at two random points."""
    for _ in range(2):
        x = c.point(rng)
        np.testing.assert_allclose(c.jac(x), fd_jacobian(c.f, x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["forward", "reverse", "mixed", "auto"])
@pytest.mark.parametrize("c", PARAMS)
def test_every_mode_is_exact(c: Idiom, mode: str, rng: np.random.Generator) -> None:
    """``jacobian`` in each exact mode equals the hand-derived Jacobian to rounding."""
    x = c.point(rng)
    got = sparsejac.jacobian(c.f, x, mode=mode).toarray()  # type: ignore[arg-type]
    np.testing.assert_allclose(got, c.jac(x), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("c", PARAMS)
def test_local_pattern_is_exact_and_inside_the_global_one(c: Idiom,
                                                           rng: np.random.Generator) -> None:
    """The local pattern is the nonzeros of J(x); the global pattern contains them (and equals
    them unless the function selects by value)."""
    x = c.point(rng)
    nz = c.jac(x) != 0
    local = sparsejac.jacobian_sparsity(c.f, x, local=True).toarray()
    np.testing.assert_array_equal(local, nz)
    glob = sparsejac.jacobian_sparsity(c.f, x).toarray()
    assert not (local & ~glob).any()
    if c.exact_global:
        np.testing.assert_array_equal(glob, nz)
    else:
        assert glob.sum() > nz.sum()


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("c", PARAMS)
def test_prepared_replay_at_new_points(c: Idiom, mode: str, rng: np.random.Generator) -> None:
    """One preparation, three new points: each replay equals the hand-derived Jacobian there
    (the selection of sort, median, running max and interp is recomputed at every point)."""
    jac = sparsejac.SparseJacobian(c.f, c.point(rng), mode=mode)  # type: ignore[arg-type]
    for _ in range(3):
        x = c.point(rng)
        np.testing.assert_allclose(jac(x).toarray(), c.jac(x), rtol=1e-13, atol=1e-13)
    assert jac.stats()["preparations"] == 1


def test_partition_and_percentile_match_numpy(rng: np.random.Generator) -> None:
    """Traced values are numpy's (partition's kth element, percentile's interpolation)."""
    x = rng.uniform(0, 1, (4, 7))
    for f in (lambda v: np.partition(v, 3, axis=1)[:, 3], lambda v: np.percentile(v, [5, 60]),
              lambda v: np.median(v, axis=0, keepdims=True), lambda v: np.sort(v, axis=None)):
        got = sparsejac.jacobian(f, x)
        np.testing.assert_allclose(got.toarray(), fd_jacobian(f, x), rtol=1e-6, atol=1e-7)


def test_argpartition_selects_with_local_detection() -> None:
    """``np.argpartition`` has a zero derivative; indexing with it follows the local choice."""
    def f(x):  # type: ignore[no-untyped-def]
        i = np.argpartition(x, 2)
        return x[i[:3]] ** 2

    x = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    want = np.zeros((3, 5))
    for r, c in enumerate(np.argpartition(x, 2)[:3]):
        want[r, c] = 2.0 * x[c]
    np.testing.assert_array_equal(sparsejac.jacobian(f, x).toarray(), want)
    with pytest.raises(sparsejac.ConcretizationError):
        sparsejac.jacobian_sparsity(f, x)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_quantile_methods(method: str) -> None:
    """Values equal numpy's; Jacobians equal central differences at a generic point."""
    rng = np.random.default_rng(3)
    x = rng.uniform(0.0, 1.0, (4, 6))
    for q, axis in ((0.3, 1), ([0.1, 0.5, 1.0], 0), (0.5, None)):
        def f(z, q=q, axis=axis):  # type: ignore[no-untyped-def]
            return np.atleast_1d(np.quantile(z, q, axis=axis, method=method))

        got = sparsejac.jacobian(f, x).toarray()
        np.testing.assert_allclose(got, fd_jacobian(f, x), atol=1e-6)
        jac = sparsejac.SparseJacobian(f, x)
        y = rng.uniform(0.0, 1.0, (4, 6))
        np.testing.assert_allclose(jac(y).toarray(), fd_jacobian(f, y), atol=1e-6)
