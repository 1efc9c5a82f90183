"""Dense Jacobians by the replayed eager interpreters (``ReplayEngine``): nothing recorded.

Oracles: complex step on the numpy function itself, central differences, and the chain
engine (``engine="chain"``, which records the chain rule entry by entry).
"""

from __future__ import annotations

import numpy as np
import pytest

import sparsejac
from sparsejac.engines import REPLAY_MIN_ENTRIES, ReplayEngine, replays_dense
from sparsejac.pattern import as_pattern
from tests.primitives.test_dense_linalg import complex_step

N = 64
K = 2 * np.pi * np.fft.rfftfreq(N, d=0.5)


def ks_spectral(t: float, u: np.ndarray) -> np.ndarray:
    """Kuramoto-Sivashinsky, pseudo-spectral, with a forcing switched on in t."""
    lin = np.fft.irfft((K ** 2 - K ** 4) * np.fft.rfft(u), n=N)
    nl = np.fft.irfft(0.5j * K * np.fft.rfft(u * u), n=N)
    return lin - nl + np.where(t > 1.0, 0.1, 0.0) * np.cos(u)


def test_a_spectral_right_hand_side_is_replayed_and_exact() -> None:
    """Dense 64 x 64: replayed, equal to the chain engine and to central differences, at
    times on both sides of the switch, in every mode."""
    rng = np.random.default_rng(0)
    u0 = np.cos(np.arange(N) * 0.3)
    jac = sparsejac.ode_jacobian(ks_spectral, 0.0, u0)
    assert isinstance(jac.prepared._state.plan.engine, ReplayEngine)
    assert jac.prepared.stats()["engine"]["engine"] == "replay"
    chain = sparsejac.ode_jacobian(ks_spectral, 0.0, u0, engine="chain")
    assert chain.prepared.stats()["engine"]["engine"] == "chain"
    for t in (0.0, 2.0):
        u = rng.uniform(-1.0, 1.0, N)
        got = np.asarray(sparsejac.SparseJacobian(lambda v, t=t: ks_spectral(t, v), u0)(u)
                         .toarray())
        np.testing.assert_allclose(_dense(jac(t, u)), _dense(chain(t, u)), rtol=1e-12,
                                   atol=1e-9)
        np.testing.assert_allclose(got, _dense(chain(t, u)), rtol=1e-12, atol=1e-9)
        fd = np.stack([(ks_spectral(t, u + 1e-6 * e) - ks_spectral(t, u - 1e-6 * e)) / 2e-6
                       for e in np.eye(N)], axis=1)
        np.testing.assert_allclose(_dense(jac(t, u)), fd, rtol=1e-6, atol=1e-4)
    for mode in ("forward", "reverse", "mixed"):
        one = sparsejac.SparseJacobian(lambda v: ks_spectral(2.0, v), u0, mode=mode)
        u = rng.uniform(-1.0, 1.0, N)
        np.testing.assert_allclose(one(u).toarray(), _dense(chain(2.0, u)), rtol=1e-12,
                                   atol=1e-9)


def _dense(m: object) -> np.ndarray:
    return np.asarray(m.toarray() if hasattr(m, "toarray") else m)  # type: ignore[union-attr]


def test_a_dense_coupling_against_complex_step() -> None:
    """A rank-one coupling plus a local term (every entry nonzero), against complex step."""
    def f(x: np.ndarray) -> np.ndarray:
        return np.tanh(x) * np.sum(x * x) + np.exp(0.1 * x) * np.mean(np.sin(x))

    rng = np.random.default_rng(1)
    x0 = rng.uniform(-1, 1, 70)
    jac = sparsejac.SparseJacobian(f, x0)
    assert jac.stats()["engine"]["engine"] == "replay"
    for x in (x0, rng.uniform(-1, 1, 70)):
        np.testing.assert_allclose(jac(x).toarray(), complex_step(f, x), rtol=1e-12,
                                   atol=1e-13)
        v = rng.normal(size=70)
        np.testing.assert_allclose(jac.linear_operator(x) @ v, complex_step(f, x) @ v,
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("shape", "dense", "want"), [
    ((64, 64), True, True),    # 4,096 entries, all nonzero
    ((63, 64), True, False),   # below REPLAY_MIN_ENTRIES
    ((64, 64), False, False),  # a band: recorded
])
def test_the_rule_reads_the_pattern_only(shape: tuple[int, int], dense: bool,
                                         want: bool) -> None:
    m, n = shape
    pattern = np.ones(shape, bool) if dense else np.abs(
        np.arange(m)[:, None] - np.arange(n)[None, :]) <= 3
    assert replays_dense(as_pattern(pattern)) is want
    assert REPLAY_MIN_ENTRIES == 4096
