"""Helpers of the colouring tests: small named matrices, networkx graphs, hypothesis patterns."""

from __future__ import annotations

import networkx as nx
import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


def banded(n: int, lower: int, upper: int, m: int | None = None) -> np.ndarray:
    """Dense 0/1 matrix with `lower` subdiagonals and `upper` superdiagonals."""
    m = n if m is None else m
    i, j = np.indices((m, n))
    return ((j - i <= upper) & (i - j <= lower)).astype(float)


def laplacian_2d(N: int) -> sp.csr_array:
    """5-point Laplacian on an N×N grid."""
    T = sp.diags_array([np.ones(N - 1), 2 * np.ones(N), np.ones(N - 1)], offsets=[-1, 0, 1])
    eye = sp.eye_array(N)
    return sp.csr_array(sp.kron(T, eye) + sp.kron(eye, T))


def arrowhead(n: int) -> np.ndarray:
    """Diagonal plus a dense first row and first column."""
    a = np.eye(n)
    a[0, :] = 1
    a[:, 0] = 1
    return a


def random_pattern(m: int, n: int, density: float, seed: int) -> np.ndarray:
    """Seeded random 0/1 matrix."""
    return (np.random.default_rng(seed).random((m, n)) < density).astype(float)


def small_matrices() -> dict[str, np.ndarray]:
    """Named small matrices covering the structural corner cases (asymmetric shapes)."""
    empty_lines = random_pattern(9, 7, 0.3, 1)
    empty_lines[3] = 0
    empty_lines[:, 2] = 0
    dense_row = random_pattern(8, 11, 0.15, 2)
    dense_row[5] = 1
    dense_col = random_pattern(12, 7, 0.15, 3)
    dense_col[:, 4] = 1
    return {
        "tridiagonal": banded(9, 1, 1),
        "banded_2_3": banded(10, 2, 3),
        "rect_banded": banded(7, 1, 2, m=11),
        "arrowhead": arrowhead(8),
        "laplacian_5x5": laplacian_2d(5).toarray(),
        "random_wide": random_pattern(6, 14, 0.3, 4),
        "random_tall": random_pattern(15, 5, 0.35, 5),
        "random_sparse": random_pattern(20, 17, 0.1, 6),
        "empty_lines": empty_lines,
        "dense_row": dense_row,
        "dense_col": dense_col,
        "single_entry": np.array([[0.0, 0.0, 1.0]]),
        "all_zero": np.zeros((3, 4)),
        "full": np.ones((3, 4)),
    }


def intersection_graph(a: np.ndarray, partition: str = "column") -> nx.Graph:
    """Column-intersection graph (or row-intersection for "row"), nodes inserted 0..n-1."""
    a = np.asarray(a) != 0
    if partition == "row":
        a = a.T
    n = a.shape[1]
    g = nx.Graph()
    g.add_nodes_from(range(n))
    for row in a:
        cols = np.flatnonzero(row).tolist()
        g.add_edges_from((u, v) for i, u in enumerate(cols) for v in cols[i + 1 :])
    return g


def n_groups(groups: np.ndarray | dict) -> int:
    if isinstance(groups, dict):
        return max(groups.values()) + 1 if groups else 0
    return int(np.max(groups)) + 1


@st.composite
def patterns(draw: st.DrawFn, max_side: int = 12) -> np.ndarray:
    """Random 0/1 matrices, often with empty rows/columns, a dense row or a dense column."""
    m = draw(st.integers(1, max_side))
    n = draw(st.integers(1, max_side))
    a = draw(hnp.arrays(np.bool_, (m, n), elements=st.booleans())).astype(float)
    thin = draw(st.sampled_from([1.0, 0.5, 0.2]))
    if thin < 1:
        keep = draw(hnp.arrays(np.float64, (m, n), elements=st.floats(0, 1))) < thin
        a = a * keep
    extra = draw(st.sampled_from(["none", "dense_row", "dense_col", "empty_row", "empty_col"]))
    if extra == "dense_row":
        a[draw(st.integers(0, m - 1))] = 1
    elif extra == "dense_col":
        a[:, draw(st.integers(0, n - 1))] = 1
    elif extra == "empty_row":
        a[draw(st.integers(0, m - 1))] = 0
    elif extra == "empty_col":
        a[:, draw(st.integers(0, n - 1))] = 0
    return a
