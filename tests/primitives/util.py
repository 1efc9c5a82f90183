"""Shared checks for the family tests: exact patterns against an independent numerical oracle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import sparsejac
from sparsejac.tracing import trace
from tests.scenarios import fd_jacobian


def numeric_pattern(f: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
    """Where a central difference is nonzero: outputs that do not read x_j do not move at all."""
    return fd_jacobian(f, x) != 0


def check_exact(f: Callable[[Any], Any], x: Any, expected: Any = None, *,
                local: bool = False) -> np.ndarray:
    """The pattern of ``f`` at ``x`` equals ``expected`` (default: the numerical oracle), and
    the traced value equals numpy's value of ``f(x)``. Returns the pattern as a dense array."""
    x = np.asarray(x, dtype=np.float64)
    pat = sparsejac.jacobian_sparsity(f, x, local=local)
    assert pat.dtype == bool
    want = numeric_pattern(f, x) if expected is None else np.asarray(expected, dtype=bool)
    assert pat.shape == want.shape, (pat.shape, want.shape)
    np.testing.assert_array_equal(pat.toarray(), want)
    value = trace(f, x, local=local).out.value
    np.testing.assert_allclose(np.asarray(value, dtype=np.float64),
                               np.asarray(f(x), dtype=np.float64).reshape(np.shape(value)),
                               rtol=1e-13, atol=1e-13)
    return pat.toarray()


def rand(shape: tuple[int, ...], seed: int = 0, lo: float = 0.5, hi: float = 1.5) -> np.ndarray:
    """A generic point: uniform in [lo, hi), seeded."""
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)
