"""Dependency sets packed as bits (sparsejac.primitives.packed) against dense boolean oracles.

Detection packs a result whose CSR form would be large and dense (the gradient program of a
function with a dense Hessian held N^3 pairs: out of memory at N = 1000). The sets must be
the same: each operation is checked against numpy's boolean arithmetic on dense matrices,
with packed and CSR operands mixed, and whole programs against unpacked detection.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsejac
from sparsejac.primitives import depsets, packed
from tests.scenarios import SCENARIOS


def _random(rng: np.random.Generator, m: int, n: int, density: float) -> depsets.DepSet:
    return depsets.DepSet.of(sp.csr_array(rng.random((m, n)) < density))


def _as_packed(d: depsets.DepSet) -> depsets.DepSet:
    return depsets.DepSet(None, None, d.shape, packed.from_csr(d.indptr, d.indices,
                                                               d.shape[1]))


def _dense(d: depsets.DepSet) -> np.ndarray:
    out = d.toarray()
    for i in range(d.shape[0]):  # canonical: sorted, no duplicates per row
        assert np.all(np.diff(d.indices[d.indptr[i]:d.indptr[i + 1]]) > 0)
    return out


@pytest.fixture
def always_pack(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every result that can be packed is (the sizes of the production thresholds are large)."""
    monkeypatch.setattr(packed, "PACKED_MIN", 1)
    monkeypatch.setattr(packed, "PACKED_GAIN", 0)


@pytest.mark.parametrize("n", [1, 63, 64, 65, 130])
def test_round_trip_and_counts(n: int) -> None:
    rng = np.random.default_rng(n)
    for density in (0.0, 0.1, 0.6, 1.0):
        d = _random(rng, 17, n, density)
        bits = packed.from_csr(d.indptr, d.indices, n)
        assert bits.shape == (17, packed.words(n))
        np.testing.assert_array_equal(packed.popcount_rows(bits), np.diff(d.indptr))
        ptr, idx = packed.to_csr(bits, n)
        np.testing.assert_array_equal(ptr, d.indptr)
        np.testing.assert_array_equal(idx, d.indices)
        p = _as_packed(d)
        assert p.nnz == d.nnz
        np.testing.assert_array_equal(_dense(p), d.toarray())


def test_operations_match_boolean_arithmetic(always_pack: None,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """take_rows, keep_rows, union, apply_linear and vstack on packed, CSR and mixed operands
    (small chunks, so that the chunked loops run several times) equal the dense oracle."""
    monkeypatch.setattr(packed, "CHUNK_WORDS", 8)
    rng = np.random.default_rng(3)
    for trial in range(60):
        k, n, m = (int(v) for v in rng.integers(1, 9, 3))
        n = n * 20  # several words a row
        a, b = _random(rng, k, n, 0.3), _random(rng, k, n, 0.05)
        da, db = a.toarray(), b.toarray()
        pa = _as_packed(a) if trial % 2 else a
        pb = _as_packed(b) if trial % 3 else b
        rows = rng.integers(-1, k, m)
        want = np.where((rows >= 0)[:, None], da[np.maximum(rows, 0)], False)
        np.testing.assert_array_equal(_dense(depsets.take_rows(pa, rows)), want)
        keep = rng.random(k) < 0.5
        np.testing.assert_array_equal(_dense(depsets.keep_rows(pa, keep)),
                                      da & keep[:, None])
        u = depsets.union([pa, pb])
        assert u is not None
        np.testing.assert_array_equal(_dense(u), da | db)
        dense_r = np.where(rng.random((m, k)) < 0.4, rng.integers(0, 2, (m, k)), 0)
        r = sp.csr_array(dense_r.astype(float))
        np.testing.assert_array_equal(_dense(depsets.apply_linear(r, pa)),
                                      (dense_r != 0).astype(int) @ da.astype(int) > 0)
        np.testing.assert_array_equal(_dense(depsets.vstack([pa, b, pb])),
                                      np.vstack([da, db, db]))


def _trig01(x: np.ndarray) -> np.ndarray:
    """scipy's global-optimisation benchmark Trigonometric01: an N x N intermediate."""
    n = x.size
    i = np.arange(1.0, n + 1)[:, None]
    inner = np.cos(x) + i * (1 - np.cos(x) - np.sin(x))
    return np.sum((n - np.sum(inner, axis=1)) ** 2)


def _trig01_hessian(x: np.ndarray) -> np.ndarray:
    """By hand: s_i = sum_j c_ij, f = sum_i (n - s_i)^2."""
    n = x.size
    i = np.arange(1.0, n + 1)[:, None]
    s = np.sum(np.cos(x) + i * (1 - np.cos(x) - np.sin(x)), axis=1)
    a = -np.sin(x) + i * (np.sin(x) - np.cos(x))  # ds_i/dx_j
    b = -np.cos(x) + i * (np.cos(x) + np.sin(x))  # d2 s_i/dx_j^2
    return 2 * a.T @ a - 2 * np.diag(((n - s)[:, None] * b).sum(axis=0))


def test_dense_hessian_through_packed_sets(always_pack: None) -> None:
    """The Hessian of Trigonometric01 (dense, through N x N intermediates that each depend on
    every input) with every large set packed: the dense pattern and the hand-derived values."""
    x = np.linspace(0.1, 0.9, 12)
    assert sparsejac.hessian_sparsity(_trig01, x).nnz == 144
    np.testing.assert_allclose(sparsejac.hessian(_trig01, x).toarray(), _trig01_hessian(x),
                               rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_packed_detection_gives_the_same_patterns(scenario, always_pack: None) -> None:
    """The scenario catalogue's global patterns, every large-enough result packed."""
    got = sparsejac.jacobian_sparsity(scenario.f, scenario.x0).toarray()
    np.testing.assert_array_equal(got, scenario.pattern)


@pytest.mark.slow
def test_dense_hessian_at_n_1000_fits() -> None:
    """N = 1000: 10^9 (element, input) pairs, 8 GB as CSR (the machine ran out of memory);
    packed, 125 MB a set. The pattern is the dense one."""
    x = np.linspace(0.1, 0.9, 1000)
    pat = sparsejac.hessian_sparsity(_trig01, x)
    assert pat.nnz == 10**6
