"""The project's own hunt for holes: random numpy programs in the style of PDE right-hand sides.

Hypothesis builds a program from a small vocabulary of what right-hand sides and residuals do
(slices with padding, rolls, buffers from ``np.zeros_like`` filled by slices, in-place
updates, reductions broadcast back, cumulative sums, broadcasting against a 2-D reshape,
elementwise maths, constants). For each program and a random point:

* the global and the local pattern contain every nonzero of the complex-step Jacobian (exact
  to rounding: ``Im f(x + i h e_j) / h`` with ``h = 1e-20``);
* ``sparsejac.jacobian`` and a prepared Jacobian in every exact mode equal it, at the
  preparation point and at a second point.

The vocabulary includes limiters (``np.maximum``, ``np.minimum``, ``np.clip``, ``np.where`` on
conditions that move with x), products of two moving arrays and small solves: the compiled
tape encodes them, and the small programs here take it.

A modest number of examples runs in ``make test``; ``-m slow`` runs many more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import sparsejac

N = 12  # length of x (3 x 4 when a step reshapes it)

UNARY = {
    "sin": np.sin,
    "exp": lambda a: np.exp(0.3 * a),
    "tanh": np.tanh,
    "square": np.square,
    "soft": lambda a: np.sqrt(1.0 + a * a),
    "cube": lambda a: a * a * a,
}


def _step(kind: str, k: int, c: float) -> Callable[[list[Any]], Any]:
    """One step: reads the arrays made so far (``pool``), returns a new length-N array."""

    def pick(pool: list[Any], i: int) -> Any:
        return pool[i % len(pool)]

    match kind:
        case "unary":
            fn = list(UNARY.values())[k % len(UNARY)]
            return lambda pool: fn(pick(pool, -1))
        case "add" | "mul" | "sub":
            op = {"add": np.add, "mul": np.multiply, "sub": np.subtract}[kind]
            return lambda pool: op(pick(pool, -1), pick(pool, k))
        case "scale":
            return lambda pool: c * pick(pool, -1) + (c - 1.0)
        case "roll":
            return lambda pool: np.roll(pick(pool, -1), k % 5 - 2)
        case "shift":  # a[1:] padded with a constant: boundary rows
            return lambda pool: np.concatenate([pick(pool, -1)[1:], [c]])
        case "stencil":  # a buffer filled by slices, the usual PDE way
            def stencil(pool: list[Any]) -> Any:
                a = pick(pool, -1)
                out = np.zeros_like(a)
                out[1:-1] = a[2:] - 2.0 * a[1:-1] + a[:-2]
                out[0] = c * a[0]
                out[-1] = a[-1] - a[k % N]
                return out
            return stencil
        case "inplace":  # a copy updated in place on a strided slice
            def inplace(pool: list[Any]) -> Any:
                b = pick(pool, -1).copy()
                b[:: 1 + k % 3] *= c
                b[k % N] += pick(pool, 0)[0]
                return b
            return inplace
        case "total":  # a reduction broadcast back (a global coupling)
            return lambda pool: pick(pool, -1) + c * np.sum(pick(pool, k) ** 2)
        case "cumsum":
            return lambda pool: np.cumsum(pick(pool, -1)) * 0.1
        case "rows":  # 2-D view: each row times its own sum (broadcasting)
            def rows(pool: list[Any]) -> Any:
                a = pick(pool, -1).reshape(3, 4)
                return (a * a.sum(axis=1, keepdims=True)).ravel()
            return rows
        case "where":  # a value-dependent choice, global pattern = both sides
            return lambda pool: np.where(pick(pool, k) > c, pick(pool, -1), -pick(pool, -1))
        case "limit":  # limiters: minmod of two slopes, a clip, an upwind choice
            def limit(pool: list[Any]) -> Any:
                v, w = pick(pool, -1), pick(pool, k)
                minmod = np.maximum(0.0, np.minimum(v, w)) + np.minimum(0.0, np.maximum(v, w))
                up = np.where(np.logical_and(v.real > c, ~(w.real > 0)), v * w, c * v)
                return minmod + np.clip(w, -0.5, 0.5) * v + up
            return limit
        case "outer":  # a product of two arrays that both move: 3 x 4 = N
            return lambda pool: np.outer(pick(pool, -1)[:3], pick(pool, k)[4:8]).ravel()
        case "solve":  # a small system whose matrix and right-hand sides both move
            def solve(pool: list[Any]) -> Any:
                a, b = np.tanh(pick(pool, -1)), pick(pool, k)  # (|a| < 1: not singular)
                m = 3.0 * np.eye(3) + 0.2 * np.outer(a[:3], np.tanh(b[3:6]))
                return np.linalg.solve(m, b.reshape(3, 4)).ravel()
            return solve
        case _:  # pragma: no cover - the strategy only draws the kinds above
            raise AssertionError(kind)


KINDS = ["unary", "add", "mul", "sub", "scale", "roll", "shift", "stencil", "inplace", "total",
         "cumsum", "rows", "where", "limit", "outer", "solve"]

steps = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, 11),
              st.floats(-1.5, 1.5).filter(lambda v: abs(v) > 0.1)),
    min_size=1, max_size=7)


def build(program: list[tuple[str, int, float]]) -> Callable[[Any], Any]:
    """The program as a function of x (every step appends to a pool; the last is returned)."""
    fns = [_step(kind, k, c) for kind, k, c in program]

    def f(x: Any) -> Any:
        pool = [x]
        for fn in fns:
            pool.append(fn(pool))
        return pool[-1]

    return f


def complex_step(f: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
    h = 1e-20
    cols = []
    for j in range(x.size):
        z = x.astype(complex)
        z[j] += 1j * h
        cols.append(np.imag(np.asarray(f(z))) / h)
    return np.stack(cols, axis=1)


def check(program: list[tuple[str, int, float]], seed: int) -> None:
    f = build(program)
    rng = np.random.default_rng(seed)
    x0 = rng.uniform(-1.0, 1.0, N)
    x1 = rng.uniform(-1.0, 1.0, N)
    want0, want1 = complex_step(f, x0), complex_step(f, x1)
    scale = 1.0 + max(np.abs(want0).max(), np.abs(want1).max())
    assume(scale < 1e100)  # (a product of squares that overflows: rounding decides where)
    glob = sparsejac.jacobian_sparsity(f, x0).toarray()
    loc = sparsejac.jacobian_sparsity(f, x0, local=True).toarray()
    assert not (want0 != 0)[~glob].any(), f"global pattern misses entries: {program}"
    assert not (want0 != 0)[~loc].any(), f"local pattern misses entries: {program}"
    assert not (want1 != 0)[~glob].any(), f"global pattern misses entries at x1: {program}"
    np.testing.assert_allclose(sparsejac.jacobian(f, x0).toarray(), want0, rtol=1e-10,
                               atol=1e-12 * scale, err_msg=str(program))
    for mode in ("forward", "reverse", "mixed"):
        jac = sparsejac.SparseJacobian(f, x0, mode=mode)
        for x, want in ((x0, want0), (x1, want1)):
            np.testing.assert_allclose(jac(x).toarray(), want, rtol=1e-10, atol=1e-12 * scale,
                                       err_msg=f"{mode}: {program}")


@settings(max_examples=100)
@given(program=steps, seed=st.integers(0, 2**16))
def test_random_programs(program, seed):
    """Random PDE-style programs: patterns contain the complex-step nonzeros, modes match."""
    check(program, seed)


@pytest.mark.slow
@settings(max_examples=2000)
@given(program=steps, seed=st.integers(0, 2**16))
def test_random_programs_long(program, seed):
    """The same hunt with many more programs (run with -m slow)."""
    check(program, seed)
