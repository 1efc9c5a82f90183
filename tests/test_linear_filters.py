"""Issue 13 item 5: constant linear operators of scipy.ndimage / scipy.signal on traced arrays.

Hand-derived Jacobians for the reflecting 5-point Laplacian and a zero-padded 2-D convolution,
a slow unit-vector checker for the rest; every exact mode, global and local patterns (the
stencil footprint, not a dense block) and prepared replays at three points.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.ndimage as ndi
import scipy.signal as sig

import sparsejac
from tests.scenarios import fd_jacobian

SHAPE = (5, 6)
_K = np.array([[0.0, 1.0, 0.0], [2.0, -4.0, 1.0], [0.0, 3.0, 0.5]])


def _reflect(i: int, n: int) -> int:
    """scipy.ndimage's mode='reflect' (d c b a | a b c d | d c b a), one step out."""
    return -i - 1 if i < 0 else (2 * n - i - 1 if i >= n else i)


def _laplace_jac(x: np.ndarray) -> np.ndarray:
    """ndi.laplace(x) * x: (L x) * x with L the reflecting 5-point Laplacian."""
    n0, n1 = SHAPE
    lap = np.zeros((n0 * n1, n0 * n1))
    for i in range(n0):
        for j in range(n1):
            r = i * n1 + j
            lap[r, r] -= 4.0
            for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                lap[r, _reflect(i + di, n0) * n1 + _reflect(j + dj, n1)] += 1.0
    flat = x.ravel()
    return lap * flat[:, None] + np.diag(lap @ flat)


def _conv_jac(x: np.ndarray) -> np.ndarray:
    """convolve2d(x, K, 'same'), zero padded: out[i, j] = sum K[a, b] x[i - a + 1, j - b + 1]."""
    n0, n1 = SHAPE
    jac = np.zeros((n0 * n1, n0 * n1))
    for i in range(n0):
        for j in range(n1):
            for a in range(3):
                for b in range(3):
                    p, q = i - a + 1, j - b + 1
                    if 0 <= p < n0 and 0 <= q < n1 and _K[a, b]:
                        jac[i * n1 + j, p * n1 + q] += _K[a, b]
    return jac


def _by_unit_vectors(op: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """The slow checker of a linear op: one column per unit vector."""
    def jac(x: np.ndarray) -> np.ndarray:
        n = x.size
        return np.stack([np.ravel(op(np.eye(n)[k].reshape(x.shape))) for k in range(n)], axis=1)
    return jac


CASES = [
    pytest.param(lambda x: ndi.laplace(x) * x, _laplace_jac, id="ndimage_laplace_times_x"),
    pytest.param(lambda x: sig.convolve2d(x, _K, mode="same"), _conv_jac, id="convolve2d"),
    pytest.param(lambda x: ndi.gaussian_filter(x, 0.7, mode="nearest"),
                 _by_unit_vectors(lambda v: ndi.gaussian_filter(v, 0.7, mode="nearest")),
                 id="gaussian_filter"),
    pytest.param(lambda x: ndi.sobel(x, axis=1, mode="wrap"),
                 _by_unit_vectors(lambda v: ndi.sobel(v, axis=1, mode="wrap")), id="sobel_wrap"),
    pytest.param(lambda x: sig.fftconvolve(x, _K, mode="same"), _conv_jac, id="fftconvolve"),
    pytest.param(lambda x: ndi.uniform_filter(x, 3, mode="constant", cval=2.0),
                 _by_unit_vectors(lambda v: ndi.uniform_filter(v, 3, mode="constant")),
                 id="uniform_filter_cval"),
]


def _point(rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(0.5, 1.5, SHAPE)


@pytest.mark.parametrize(("f", "jac"), CASES)
def test_oracle(f: Any, jac: Any, rng: np.random.Generator) -> None:
    """The hand-derived (or unit-vector) Jacobian agrees with central differences."""
    x = _point(rng)
    np.testing.assert_allclose(jac(x), fd_jacobian(f, x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["forward", "reverse", "mixed", "auto"])
@pytest.mark.parametrize(("f", "jac"), CASES)
def test_every_mode(f: Any, jac: Any, mode: str, rng: np.random.Generator) -> None:
    """Each exact mode equals the oracle to rounding."""
    x = _point(rng)
    got = sparsejac.jacobian(f, x, mode=mode).toarray()  # type: ignore[arg-type]
    np.testing.assert_allclose(got, jac(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("f", "jac"), CASES)
def test_pattern_is_the_stencil_footprint(f: Any, jac: Any, rng: np.random.Generator) -> None:
    """Global and local patterns are the oracle's nonzeros (a stencil, not a dense block)."""
    x = _point(rng)
    nz = np.abs(jac(x)) > 1e-12
    for local in (False, True):
        got = sparsejac.jacobian_sparsity(f, x, local=local).toarray()
        np.testing.assert_array_equal(got, nz)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize(("f", "jac"), CASES)
def test_prepared_replay(f: Any, jac: Any, mode: str, rng: np.random.Generator) -> None:
    """One preparation, three new points."""
    sj = sparsejac.SparseJacobian(f, _point(rng), mode=mode)  # type: ignore[arg-type]
    for _ in range(3):
        x = _point(rng)
        np.testing.assert_allclose(sj(x).toarray(), jac(x), rtol=1e-12, atol=1e-12)


def test_traced_kernel_is_refused() -> None:
    """A traced kernel is not a constant linear operator: refused, naming the call."""
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match=r"scipy\.ndimage\.convolve"):
        sparsejac.jacobian(lambda x: ndi.convolve(x[:2, :2], x[2:4, :2]), np.ones(SHAPE))


@pytest.mark.parametrize("f", [
    lambda x: ndi.convolve1d(x, np.ones(3) / 3, mode="nearest"),
    lambda x: ndi.convolve(x, np.ones(3)),
    lambda x: ndi.correlate1d(x, weights=np.arange(3.0)),
    lambda x: sig.convolve(x, np.ones(3), mode="same"),
    lambda x: sig.convolve(np.ones(3), x, mode="same"),
    lambda x: sig.fftconvolve(x, np.arange(1.0, 4.0) * np.ones(3), mode="full"),
], ids=["convolve1d", "convolve", "correlate1d-kw", "signal", "signal-swapped", "fft"])
def test_kernel_made_in_f_with_np_ones_is_a_constant(f: Any, rng: np.random.Generator) -> None:
    """np.ones/np.zeros in f are traced buffers (they may be filled); as kernels they are the
    constants they hold, not a refused traced argument. Checked against unit vectors."""
    x = rng.uniform(-1, 1, 7)
    J = sparsejac.jacobian(f, x).toarray()
    expected = np.column_stack([f(e) for e in np.eye(7)])  # linear in x
    np.testing.assert_allclose(J, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sparsejac.SparseJacobian(f, x)(2 * x).toarray(), expected,
                               rtol=1e-12, atol=1e-12)


def test_kernel_scaled_by_a_parameter_is_refused() -> None:
    """A kernel that depends on a traced parameter changes between calls: not a constant."""
    def f(x: np.ndarray, t: float) -> Any:
        return ndi.convolve1d(x, np.ones(3) * t)

    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match=r"scipy\.ndimage"):
        sparsejac.SparseJacobian(f, np.ones(5), params=(2.0,))


def test_numpy_and_scipy_unchanged_outside_a_trace() -> None:
    """Outside a trace the filters run scipy's own code."""
    x = np.arange(30.0).reshape(SHAPE)
    np.testing.assert_array_equal(ndi.laplace(x), ndi.laplace(x.copy()))
