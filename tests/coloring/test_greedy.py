"""Greedy colouring: natural order is scipy's group_columns, known counts, DSATUR, restarts."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize._numdiff import group_columns

from sparsejac.coloring import BipartiteGraph, check_structurally_orthogonal
from sparsejac.coloring.greedy import (
    dsatur_color,
    greedy_color,
    kernel_array,
    relabel,
    restart,
)
from sparsejac.pattern import as_pattern

from .helpers import banded, intersection_graph, laplacian_2d, n_groups, small_matrices


@pytest.mark.parametrize(
    ("m", "n", "density", "seed"),
    [(30, 20, 0.1, 0), (20, 30, 0.2, 1), (50, 50, 0.05, 2), (7, 40, 0.5, 3), (40, 7, 0.3, 4)],
)
def test_natural_equals_group_columns(m, n, density, seed):
    """Natural-order column greedy is scipy's group_columns(A, order=arange(n)), exactly."""
    a = sp.random_array((m, n), density=density, rng=np.random.default_rng(seed), format="csr")
    g = greedy_color(BipartiteGraph(as_pattern(a), "column"), np.arange(n))
    np.testing.assert_array_equal(g, group_columns(a, order=np.arange(n)))
    # and a row colouring is group_columns of the transpose
    gr = greedy_color(BipartiteGraph(as_pattern(a), "row"), np.arange(m))
    np.testing.assert_array_equal(gr, group_columns(a.T, order=np.arange(m)))


@pytest.mark.parametrize("name", sorted(small_matrices()))
def test_natural_equals_group_columns_small(name):
    """The same on every small named matrix, including all-zero and dense lines."""
    a = small_matrices()[name]
    n = a.shape[1]
    g = greedy_color(BipartiteGraph(as_pattern(a), "column"), np.arange(n))
    np.testing.assert_array_equal(g, group_columns(a, order=np.arange(n)))


def test_group_columns_with_permutation(rng):
    """With any fixed order, greedy equals group_columns given that order."""
    a = sp.random_array((25, 35), density=0.15, rng=rng, format="csr")
    order = rng.permutation(35)
    g = greedy_color(BipartiteGraph(as_pattern(a), "column"), order)
    np.testing.assert_array_equal(g, group_columns(a, order=order))


@pytest.mark.parametrize(("lower", "upper"), [(0, 0), (1, 1), (2, 3), (3, 0), (0, 4), (5, 2)])
@pytest.mark.parametrize("partition", ["column", "row"])
def test_banded_needs_bandwidth(lower, upper, partition):
    """A banded matrix with bandwidths (l, u) takes l+u+1 colours in natural order."""
    a = banded(20, lower, upper)
    g = BipartiteGraph(as_pattern(a), partition)
    groups = greedy_color(g, np.arange(20))
    assert n_groups(groups) == lower + upper + 1 == g.lower_bound
    check_structurally_orthogonal(a, groups, partition)


def test_tridiagonal_three():
    """Tridiagonal: three colours, j mod 3."""
    g = greedy_color(BipartiteGraph(as_pattern(banded(10, 1, 1)), "column"), np.arange(10))
    np.testing.assert_array_equal(g, np.arange(10) % 3)


def test_dsatur_laplacian_60():
    """DSATUR on the 60×60 5-point Laplacian's intersection graph gives the optimum 5."""
    a = laplacian_2d(60)
    groups, _ = dsatur_color(BipartiteGraph(as_pattern(a), "column"))
    assert n_groups(groups) == 5
    check_structurally_orthogonal(a, groups)


@pytest.mark.parametrize(
    "N", [pytest.param(15, id="15x15"), pytest.param(60, id="60x60", marks=pytest.mark.slow)]
)
def test_dsatur_laplacian_equals_networkx(N):
    """On Laplacians, DSATUR equals networkx's DSATUR colour for colour (60×60: slow, 10 s)."""
    a = laplacian_2d(N)
    groups, _ = dsatur_color(BipartiteGraph(as_pattern(a), "column"))
    ref = nx.greedy_color(intersection_graph(a.toarray()), strategy="DSATUR")
    assert {v: int(c) for v, c in enumerate(groups)} == ref
    assert n_groups(ref) == 5


def test_dsatur_many_colours_uses_hash_path():
    """Beyond the bit table, DSATUR keeps exact saturations (forced through the hash set)."""
    from sparsejac.coloring import _kernels

    a = (np.random.default_rng(0).random((40, 150)) < 0.5).astype(float)
    g = BipartiteGraph(as_pattern(a), "column")
    full, _ = _kernels.dsatur(*g.arrays, g.degrees)
    tiny, _ = _kernels.dsatur(*g.arrays, g.degrees, 8)  # one word: colours >= 64 hashed
    assert n_groups(full) > 64
    np.testing.assert_array_equal(full, tiny)
    check_structurally_orthogonal(a, full)


def test_relabel_is_isomorphic(rng):
    """Relabelled arrays describe the same graph with vertex i = old perm[i]."""
    a = (rng.random((9, 12)) < 0.3).astype(float)
    g = BipartiteGraph(as_pattern(a), "column")
    perm = rng.permutation(12)
    vptr, vidx, nptr, nidx = relabel(g, perm)
    for i in range(12):
        np.testing.assert_array_equal(vidx[vptr[i] : vptr[i + 1]], np.flatnonzero(a[:, perm[i]]))
    for r in range(9):
        np.testing.assert_array_equal(
            np.sort(perm[nidx[nptr[r] : nptr[r + 1]]]), np.flatnonzero(a[r])
        )


@pytest.mark.parametrize(
    "name", ["incidence_degree", "dsatur", "smallest_last", "dynamic_largest_first"]
)
@pytest.mark.parametrize("partition", ["column", "row"])
def test_restart_valid_and_seeded(name, partition):
    """Random-tie restarts give valid colourings, reproducible for the same generator seed."""
    a = laplacian_2d(12).toarray()[:, :100]
    g = BipartiteGraph(as_pattern(a), partition)
    one = restart(g, name, np.random.default_rng(9))
    two = restart(g, name, np.random.default_rng(9))
    np.testing.assert_array_equal(one, two)
    check_structurally_orthogonal(a, one, partition)


def test_restart_unknown_name():
    """An unknown restart order is rejected."""
    g = BipartiteGraph(as_pattern(np.eye(3)), "column")
    with pytest.raises(ValueError, match="Unknown restart order 'natural'"):
        restart(g, "natural", np.random.default_rng(0))


def test_kernel_array_normalises():
    """kernel_array returns read-only C-contiguous int64, reusing such an array."""
    a = kernel_array(np.arange(5, dtype=np.int32)[::-1])
    assert a.dtype == np.int64
    assert a.flags.c_contiguous
    assert not a.flags.writeable
    assert kernel_array(a) is a


@pytest.mark.parametrize("name", sorted(small_matrices()))
@pytest.mark.parametrize("partition", ["column", "row"])
def test_mask_kernel_equals_pair_kernel(name, partition, rng):
    """The per-net mask kernel and the pair-walking kernel give identical colourings."""
    from sparsejac.coloring import _kernels

    g = BipartiteGraph(as_pattern(small_matrices()[name]), partition)
    for order in (np.arange(g.n_vertices), rng.permutation(g.n_vertices)):
        order = kernel_array(order)
        pairs = _kernels.greedy(*g.arrays, order)
        np.testing.assert_array_equal(pairs, greedy_color(g, order))
        words = -(-(int(pairs.max()) + 1) // 64)  # the fewest words that can hold the colours
        np.testing.assert_array_equal(pairs, _kernels.greedy_masks(*g.arrays, order, words, False))
    np.testing.assert_array_equal(
        _kernels.greedy(*g.arrays, kernel_array(np.arange(g.n_vertices))), greedy_color(g)
    )


def test_mask_kernel_many_colours(rng):
    """Beyond 64 colours (several mask words) the mask kernel still equals group_columns."""
    a = sp.random_array((60, 300), density=0.6, rng=rng, format="csr")
    g = BipartiteGraph(as_pattern(a), "column")
    assert g.mask_words > 2
    groups = greedy_color(g)
    assert n_groups(groups) > 128
    np.testing.assert_array_equal(groups, group_columns(a, order=np.arange(300)))
    order = rng.permutation(300)
    np.testing.assert_array_equal(greedy_color(g, order), group_columns(a, order=order))


def test_pair_kernel_fallback(monkeypatch):
    """When the mask table would be too large, greedy falls back to the pair kernel."""
    from sparsejac.coloring import graph as graph_module

    monkeypatch.setattr(graph_module, "MAX_MASK_BYTES", 8)
    a = laplacian_2d(7)
    g = BipartiteGraph(as_pattern(a), "column")
    assert g.mask_words == 0
    np.testing.assert_array_equal(greedy_color(g), group_columns(a, order=np.arange(49)))
    assert n_groups(restart(g, "incidence_degree", np.random.default_rng(0))) >= 5


def test_color_bound_is_a_bound(rng):
    """color_bound is at least the distance-2 degree plus one (and at most n)."""
    for seed in range(5):
        a = (np.random.default_rng(seed).random((20, 25)) < 0.2).astype(float)
        g = BipartiteGraph(as_pattern(a), "column")
        assert int(g.degrees.max()) + 1 <= g.color_bound <= 25


@pytest.mark.parametrize("seed", range(6))
def test_a_net_holding_every_vertex_gives_first_fit_without_its_pass(seed):
    """A row holding every column (a curve fit's Jacobian, a dense row): first fit gives each
    vertex the next colour in visiting order, and the shortcut gives exactly that, against
    group_columns (natural order) and networkx's greedy colouring of the intersection graph
    visited in the same order (random orders), for columns and rows."""
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(2, 30)), int(rng.integers(2, 12))
    a = (rng.random((m, n)) < 0.3).astype(float)
    a[rng.integers(0, m), :] = 1.0  # a full row
    a[:, rng.integers(0, n)] = 1.0  # and a full column
    pat = as_pattern(a)
    np.testing.assert_array_equal(greedy_color(BipartiteGraph(pat, "column")),
                                  group_columns(sp.csr_array(a), order=np.arange(n)))
    for partition, size in (("column", n), ("row", m)):
        order = rng.permutation(size)
        got = greedy_color(BipartiteGraph(pat, partition), order)
        graph = intersection_graph(a, partition)
        want = nx.greedy_color(graph, strategy=lambda g, c, o=order: iter(o.tolist()))
        np.testing.assert_array_equal(got, [want[v] for v in range(size)])
