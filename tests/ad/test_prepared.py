"""Prepared programs: forward and reverse sweeps agree with the eager interpreters at new points."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsejac.ad import PreparedProgram, program_jvp, program_vjp
from sparsejac.detection import program_sparsity
from sparsejac.primitives.core import Primitive
from sparsejac.tracing import trace


def _greedy_groups(pattern: sp.csr_array) -> np.ndarray:
    """A valid (not optimal) column grouping: the slow obvious greedy, for test seeds."""
    csc = sp.csc_array(pattern)
    n = pattern.shape[1]
    groups = np.full(n, -1)
    for j in range(n):
        rows = csc.indices[csc.indptr[j]:csc.indptr[j + 1]]
        used = set()
        for i in rows:
            for k in pattern.indices[pattern.indptr[i]:pattern.indptr[i + 1]]:
                if groups[k] >= 0:
                    used.add(groups[k])
        g = 0
        while g in used:
            g += 1
        groups[j] = g
    return groups


def _brusselator(n: int):
    def f(y):
        u = y.reshape(n, n, 2)
        uu, vv = u[..., 0], u[..., 1]

        def lap(z):
            return (np.roll(z, 1, 0) + np.roll(z, -1, 0) + np.roll(z, 1, 1) + np.roll(z, -1, 1)
                    - 4 * z)

        du = 10 * lap(uu) + 1.0 + uu * uu * vv - 4.4 * uu
        dv = 10 * lap(vv) + 3.4 * uu - uu * uu * vv
        return np.stack([du, dv], -1).ravel()

    return f


def _burgers(u):
    du = np.zeros_like(u)
    du[1:-1] = -u[1:-1] * (u[2:] - u[:-2]) / 2 + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    du[0] = -u[0]
    du[-1] = u[-1] ** 2
    return du


def _arrowhead(x):
    out = x * x[0]
    out[0] = np.sum(x**2)
    return out


_L = sp.diags_array([1.0, -2.0, 1.0], offsets=[-1, 0, 1], shape=(12, 12)).tocsr()
_A = np.arange(12.0).reshape(3, 4) - 5.0

CASES = [
    pytest.param(_brusselator(5), (50,), id="brusselator"),
    pytest.param(_burgers, (20,), id="burgers_setitem"),
    pytest.param(_arrowhead, (15,), id="arrowhead"),
    pytest.param(lambda u: _L @ u + np.sin(u) * u, (12,), id="sparse_matmul"),
    pytest.param(lambda x: _A @ x**2, (4,), id="dense_const_matmul"),
    pytest.param(lambda x: (x.reshape(3, 3) @ x.reshape(3, 3)).ravel(), (9,), id="traced_matmul"),
    pytest.param(lambda x: np.einsum("ij,jk->ik", x.reshape(2, 3), np.exp(x).reshape(3, 2)),
                 (6,), id="einsum_both"),
    pytest.param(lambda x: np.cumprod(x.reshape(2, 4), axis=1), (8,), id="cumprod"),
    pytest.param(lambda x: np.cumsum(x**2)[::-1], (7,), id="cumsum"),
    pytest.param(lambda x: np.max(x.reshape(3, 4), axis=1) * x[:3], (12,), id="max"),
    pytest.param(lambda x: np.prod(x.reshape(3, 4), axis=0), (12,), id="prod"),
    pytest.param(lambda x: np.where(x > 0.5, x**2, np.sin(x)), (10,), id="where"),
    pytest.param(lambda x: np.maximum(x[:5], x[5:]) / (1 + x[:5] ** 2), (10,), id="maximum"),
    pytest.param(lambda x: np.pad(x.reshape(2, 3), 1, mode="wrap").ravel() * 3.0, (6,), id="pad"),
    pytest.param(lambda x: np.tile(x, 2) * np.repeat(x, 2), (4,), id="tile_repeat"),
    pytest.param(lambda x: x, (5,), id="identity"),
    pytest.param(lambda x: np.ones(3) * 2.0 + 0 * np.sum(np.zeros_like(x)), (4,), id="constant"),
    pytest.param(lambda x: x.reshape(3, 4).T @ np.linalg.norm(x.reshape(3, 4), axis=1), (12,),
                 id="norm"),
]


def _check(f, shape, width=None, rng=None):
    rng = rng or np.random.default_rng(0)
    x0 = rng.uniform(0.2, 1.0, shape)
    prog = trace(f, x0)
    pattern = program_sparsity(prog)
    g = _greedy_groups(pattern)
    p = int(g.max()) + 1 if g.size else 1
    gr = _greedy_groups(sp.csr_array(pattern.T))
    q = int(gr.max()) + 1 if gr.size else 1
    pp = PreparedProgram(prog, width=p if width is None else width)
    x1 = rng.uniform(0.2, 1.0, shape)
    s = np.zeros((x0.size, p))
    s[np.arange(x0.size), g] = 1.0
    w = np.zeros((q, pattern.shape[0]))
    w[gr, np.arange(pattern.shape[0])] = 1.0
    f1, b = pp.forward(x1, g, p)
    _, t_ref = program_jvp(trace(f, x1), s.T.reshape((p, *shape)))
    np.testing.assert_allclose(np.ravel(f1), np.ravel(f(x1)), rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(b, t_ref.reshape(p, -1).T, rtol=1e-12, atol=1e-12)
    _, c = pp.reverse(x1, gr, q)
    _, ct_ref = program_vjp(trace(f, x1), w.reshape((q, *np.shape(f(x1)))))
    np.testing.assert_allclose(c, ct_ref.reshape(q, -1), rtol=1e-12, atol=1e-12)
    return pp


@pytest.mark.parametrize(("f", "shape"), CASES)
def test_forward_reverse_match_eager(f, shape):
    """B = J S and C = W J from the prepared program equal the eager interpreters at a new x."""
    _check(f, shape)


@pytest.mark.parametrize(("f", "shape"), CASES)
def test_dense_blocks(f, shape):
    """With width 1 every wide intermediate becomes a dense block; results are unchanged."""
    _check(f, shape, width=1)


def test_opaque_primitives(monkeypatch):
    """A primitive without linearize is evaluated through its jvp/vjp rules."""
    stack = [Primitive]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        # only primitives with hand-written pattern, jvp and vjp rules can do without linearize
        if ("linearize" in cls.__dict__ and cls.pattern is not Primitive.pattern
                and cls.jvp is not Primitive.jvp
                and cls.vjp is not Primitive.vjp):
            monkeypatch.setattr(cls, "linearize", lambda self, node: None)
    for param in CASES[:6]:
        f, shape = param.values
        pp = _check(f, shape)
        # a pure reshape keeps its operand's entries without being linearised: the matmul
        # of two reshapes has nothing opaque left
        assert pp.stats()["dense_blocks"] >= (0 if param.id == "traced_matmul" else 1)


def test_constant_folding_brusselator():
    """The stencil part is folded at preparation: only the reaction terms are recomputed."""
    pp = _check(_brusselator(6), (72,))
    st = pp.stats()
    assert st["dense_blocks"] == 0
    assert st["output_entries"] == 72 * 6


def test_params_replay():
    """A traced parameter (an ODE's t) takes its new value in replays."""

    def f(y, t):
        return np.sin(t) * y**2 + t * np.roll(y, 1)

    y0 = np.linspace(0.1, 1.0, 6)
    prog = trace(f, y0, params=(0.3,))
    pp = PreparedProgram(prog, width=3)
    g = np.arange(6) % 3
    y1 = y0 + 0.5
    val, b = pp.forward(y1, g, 3, params=(1.7,))
    np.testing.assert_allclose(val, f(y1, 1.7))
    jac = np.diag(np.sin(1.7) * 2 * y1) + 1.7 * np.roll(np.eye(6), 1, axis=0)
    s = np.zeros((6, 3))
    s[np.arange(6), g] = 1
    np.testing.assert_allclose(b, jac @ s, rtol=1e-13)


def test_value_dependent_program_refused():
    """A program that read values while tracing cannot be prepared."""

    def f(x):
        return x if x[0] > 0 else -x

    prog = trace(f, np.ones(3), local=True)
    with pytest.raises(ValueError, match="local mode"):
        PreparedProgram(prog)


@pytest.mark.parametrize(("f", "shape"), CASES[:8])
def test_mixed_sweeps(f, shape):
    """One replay, both sweeps: B and C with partial seeds (-1 = not seeded) equal J S and W J."""
    rng = np.random.default_rng(3)
    x0 = rng.uniform(0.2, 1.0, shape)
    prog = trace(f, x0)
    pp = PreparedProgram(prog, width=2)
    n = x0.size
    m = int(np.size(f(x0)))
    cg = np.where(np.arange(n) % 2 == 0, np.arange(n) // 2, -1)  # seed every other column
    rg = np.where(np.arange(m) % 3 == 0, np.arange(m) // 3, -1)
    p, q = int(cg.max()) + 1, int(rg.max()) + 1
    x1 = rng.uniform(0.2, 1.0, shape)
    _, b, c = pp.mixed(x1, cg, p, rg, q)
    jac = program_jvp(trace(f, x1), np.eye(n).reshape((n, *shape)))[1].reshape(n, -1).T
    s = np.zeros((n, p))
    s[np.flatnonzero(cg >= 0), cg[cg >= 0]] = 1
    w = np.zeros((q, m))
    w[rg[rg >= 0], np.flatnonzero(rg >= 0)] = 1
    np.testing.assert_allclose(b, jac @ s, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c, w @ jac, rtol=1e-12, atol=1e-12)
    # the cached constant blocks of both seeds survive alternating calls
    _, b2, c2 = pp.mixed(x1, cg, p, rg, q)
    np.testing.assert_array_equal(b2, b)
    np.testing.assert_array_equal(c2, c)
