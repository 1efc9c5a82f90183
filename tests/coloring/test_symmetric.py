"""Symmetric colouring (star and acyclic) and its recovery, against independent oracles.

Oracles: the slow checkers of ``sparsejac.coloring.check`` (themselves checked against
networkx: two-coloured components are stars / forests), dense Hessians built from random
values, brute-force optimal colourings of tiny graphs, known chromatic numbers (paths,
stars, cycles, complete graphs) and ColPack's counts on the shared symmetric matrices.
"""

from __future__ import annotations

import csv
import functools
import itertools
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsejac
from sparsejac.coloring import (
    ORDERS,
    AdjacencyGraph,
    ColoringResult,
    SymmetricRecovery,
    check_acyclic_coloring,
    check_result,
    check_star_coloring,
)
from sparsejac.coloring.symmetric import symmetric_groups, symmetric_lower_bound
from sparsejac.pattern import as_pattern

from ..conftest import SHARED_MATRICES, requires_shared, shared_matrix_files
from .helpers import arrowhead, laplacian_2d

METHODS = ("star", "acyclic")
ALL_ORDERS = (*ORDERS, "best")


def random_symmetric(n: int, density: float, seed: int, diagonal: bool = True) -> np.ndarray:
    """A random symmetric matrix with random values (diagonal nonzero when asked)."""
    rng = np.random.default_rng(seed)
    mask = np.triu(rng.random((n, n)) < density, 1)
    values = np.where(mask, rng.standard_normal((n, n)) + 3.0, 0.0)
    H = values + values.T
    if diagonal:
        H += np.diag(rng.standard_normal(n) + 5.0)
    return H


def path(n: int) -> np.ndarray:
    return np.eye(n) + np.eye(n, k=1) + np.eye(n, k=-1)


def cycle(n: int) -> np.ndarray:
    a = path(n)
    a[0, n - 1] = a[n - 1, 0] = 1
    return a


def graph_of(H: np.ndarray) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(H.shape[0]))
    i, j = np.nonzero(np.triu(H != 0, 1))
    g.add_edges_from(zip(i.tolist(), j.tolist(), strict=True))
    return g


def two_colored_components(H: np.ndarray, colors) -> list[nx.Graph]:
    """Components of the subgraphs induced by every pair of colours (networkx)."""
    g = graph_of(H)
    out = []
    for a, b in itertools.combinations(sorted(set(colors)), 2):
        nodes = [v for v in g if colors[v] in (a, b)]
        sub = g.subgraph(nodes)
        out += [sub.subgraph(c) for c in nx.connected_components(sub)]
    return out


def nx_is_star(H, colors) -> bool:
    proper = all(colors[u] != colors[v] for u, v in graph_of(H).edges())
    return proper and all(
        nx.is_tree(c) and (c.number_of_nodes() <= 2 or nx.diameter(c) <= 2)
        for c in two_colored_components(H, colors)
    )


def nx_is_acyclic(H, colors) -> bool:
    proper = all(colors[u] != colors[v] for u, v in graph_of(H).edges())
    return proper and all(nx.is_forest(c) for c in two_colored_components(H, colors))


def passes(check, H, colors) -> bool:
    try:
        check(H, colors)
    except AssertionError:
        return False
    return True


# -- the checkers against networkx -----------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 8), density=st.floats(0.1, 0.9), seed=st.integers(0, 10**6),
       k=st.integers(1, 4))
def test_checkers_agree_with_networkx(n, density, seed, k):
    """The slow checkers accept exactly what the networkx definitions accept."""
    H = random_symmetric(n, density, seed)
    colors = np.random.default_rng(seed).integers(0, k, n)
    colors = np.unique(colors, return_inverse=True)[1]  # no empty colour
    assert passes(check_star_coloring, H, colors) == nx_is_star(H, colors.tolist())
    assert passes(check_acyclic_coloring, H, colors) == nx_is_acyclic(H, colors.tolist())


def test_checkers_reject_known_bad_colourings():
    """A two-coloured path on 4 vertices is acyclic, not star; a two-coloured C4 neither."""
    check_acyclic_coloring(path(4), [0, 1, 0, 1])
    with pytest.raises(AssertionError, match=r"path .* two colours"):
        check_star_coloring(path(4), [0, 1, 0, 1])
    with pytest.raises(AssertionError, match="closes a cycle"):
        check_acyclic_coloring(cycle(4), [0, 1, 0, 1])
    with pytest.raises(AssertionError, match="share colour"):
        check_star_coloring(path(3), [0, 0, 1])
    with pytest.raises(AssertionError, match="not symmetric"):
        check_star_coloring(np.eye(3) + np.eye(3, k=1), [0, 1, 2])


# -- the kernels give valid colourings, recovery is exact ------------------------------


CASES = [(n, d, s) for s, (n, d) in enumerate(
    [(1, 0.5), (2, 1.0), (5, 0.5), (12, 0.3), (30, 0.1), (40, 0.25), (25, 0.6), (60, 0.05)])]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("n", "density", "seed"), CASES)
def test_every_order_valid_and_exact(method, n, density, seed):
    """Every order gives a valid colouring whose decompression equals H to rounding."""
    H = random_symmetric(n, density, seed)
    check = check_star_coloring if method == "star" else check_acyclic_coloring
    for order in ALL_ORDERS:
        r = sparsejac.color(H, "symmetric", order, method=method)
        assert r.partition == "symmetric"
        assert r.method == method
        check(H, r.groups)
        back = r.decompress(r.compress(H))
        np.testing.assert_allclose(back.toarray(), H, rtol=1e-12, atol=1e-12)
        assert r.lower_bound <= r.n_colors
        check_result(r)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 25), density=st.floats(0.0, 0.8), seed=st.integers(0, 10**6),
       diagonal=st.booleans(), method=st.sampled_from(METHODS),
       order=st.sampled_from(ALL_ORDERS))
def test_random_hypothesis(n, density, seed, diagonal, method, order):
    """Random symmetric matrices, with or without diagonal: valid, exact, deterministic."""
    H = random_symmetric(n, density, seed, diagonal)
    if not H.any():
        H[0, 0] = 1.0
    r = sparsejac.color(H, "symmetric", order, method=method, check=True)
    S, W = r.seed_matrices()
    assert W is None
    B = H @ S
    np.testing.assert_allclose(r.decompress(B).toarray(), H, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r.decompress(np.asfortranarray(B)).toarray(), H, rtol=1e-12,
                               atol=1e-12)
    again = sparsejac.color(H, "symmetric", order, method=method)
    assert np.array_equal(again.groups, r.groups)


def test_decompress_data_out_and_sparse_input():
    """decompress_data writes into `out`; compress accepts scipy sparse; B is not modified."""
    H = random_symmetric(30, 0.2, 7)
    r = sparsejac.color(sp.csr_array(H), "symmetric", method="acyclic")
    B = r.compress(sp.csr_array(H))
    keep = B.copy()
    out = np.empty(r.pattern.nnz)
    got = r.decompress_data(B, out=out)
    assert got is out
    np.testing.assert_allclose(out, H[r.pattern.rows, r.pattern.indices], rtol=1e-12)
    assert np.array_equal(B, keep)
    with pytest.raises(ValueError, match="`B` has shape"):
        r.decompress(np.zeros((30, r.n_colors + 1)))


# -- known small cases ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "H", "star", "acyclic"),
    [
        ("path10", path(10), 3, 2),
        ("path3", path(3), 2, 2),
        ("arrowhead", arrowhead(12), 2, 2),
        ("cycle6", cycle(6), 3, 3),
        ("cycle5", cycle(5), 4, 3),
        ("complete5", np.ones((5, 5)), 5, 5),
        ("diagonal", np.eye(4), 1, 1),
    ],
)
def test_known_optimal_counts(name, H, star, acyclic):
    """best reaches the known star and acyclic chromatic numbers of small graphs."""
    assert sparsejac.color(H, "symmetric", method="star").n_colors == star
    assert sparsejac.color(H, "symmetric", method="acyclic").n_colors == acyclic


def test_grid_and_natural_orders():
    """5-point grid (acyclic chromatic number 3, star 5): greedy is within one colour."""
    lap = laplacian_2d(6)
    a = sparsejac.color(lap, "symmetric", method="acyclic")
    s = sparsejac.color(lap, "symmetric", method="star")
    check_acyclic_coloring(lap, a.groups)
    check_star_coloring(lap, s.groups)
    assert a.lower_bound == 3
    assert 3 <= a.n_colors <= 4  # the acyclic chromatic number of a grid is 3
    assert 5 <= s.n_colors <= 6  # the star chromatic number of a large grid is 5
    assert sparsejac.color(path(5), "symmetric", "natural").groups.tolist() == [0, 1, 0, 2, 0]
    assert sparsejac.color(path(5), "symmetric", "natural",
                           method="acyclic").groups.tolist() == [0, 1, 0, 1, 0]


def test_symmetric_never_worse_than_column_on_arrowhead():
    """An arrowhead needs n colours for columns and 2 for star colouring, at every size."""
    for n in (5, 50, 500):
        A = arrowhead(n)
        assert sparsejac.color(A).n_colors == n
        r = sparsejac.color(A, "symmetric")
        assert r.n_colors == 2
        assert np.array_equal(r.decompress(r.compress(A)).toarray(), A)


def _brute_force_minimum(H: np.ndarray, check) -> int:
    n = H.shape[0]
    for k in range(1, n + 1):
        for colors in itertools.product(range(k), repeat=n):
            if len(set(colors)) == k and passes(check, H, np.array(colors)):
                return k
    raise AssertionError("unreachable")


@pytest.mark.parametrize("seed", range(6))
def test_lower_bound_and_best_against_brute_force(seed):
    """lower bound <= optimum <= best, with the optimum found by trying every colouring."""
    H = random_symmetric(6, 0.6, seed)
    for method, check in (("star", check_star_coloring), ("acyclic", check_acyclic_coloring)):
        opt = _brute_force_minimum(H, check)
        r = sparsejac.color(H, "symmetric", method=method)
        assert r.lower_bound <= opt <= r.n_colors
        assert r.n_colors <= opt + 1


def test_lower_bound_formula():
    """The edge-count bound: complete graphs need n, trees 2, no edges 1."""
    for n in range(1, 9):
        assert symmetric_lower_bound(n, n * (n - 1) // 2) == n
    assert symmetric_lower_bound(100, 99) == 2
    assert symmetric_lower_bound(7, 0) == 1


# -- arguments and errors ---------------------------------------------------------------


def test_errors():
    """Bad patterns, methods and combinations name the argument."""
    with pytest.raises(ValueError, match=r"structurally symmetric `sparsity`.*e.g. \(0, 1\)"):
        sparsejac.color(np.eye(3) + np.eye(3, k=1), "symmetric")
    with pytest.raises(ValueError, match="square `sparsity`"):
        sparsejac.color(np.ones((2, 3)), "symmetric")
    with pytest.raises(ValueError, match="Unknown `method` 'direct'"):
        sparsejac.color(np.eye(3), "symmetric", method="direct")
    with pytest.raises(ValueError, match="`method` applies to partition='symmetric' only"):
        sparsejac.color(np.eye(3), "column", method="star")
    with pytest.raises(ValueError, match="networkx strategy"):
        sparsejac.color(np.eye(3), "symmetric", order=nx.coloring.strategy_largest_first)
    with pytest.raises(ValueError, match="Unknown `order` 'dense_rows_first'"):
        sparsejac.color(np.eye(3), "symmetric", order="dense_rows_first")


def test_invalid_colours_refused_by_result():
    """A ColoringResult refuses colours without the property its method needs."""
    pat = as_pattern(cycle(4))
    with pytest.raises(ValueError, match="not an acyclic colouring"):
        ColoringResult(pattern=pat, partition="symmetric", order="x", n_colors=2,
                       column_groups=[0, 1, 0, 1], row_groups=None, lower_bound=1,
                       method="acyclic")
    with pytest.raises(ValueError, match="not a star colouring"):
        ColoringResult(pattern=as_pattern(path(4)), partition="symmetric", order="x",
                       n_colors=2, column_groups=[0, 1, 0, 1], row_groups=None,
                       lower_bound=1, method="star")
    with pytest.raises(ValueError, match="share colour"):
        SymmetricRecovery(pat, np.array([0, 0, 1, 2]), 3, "star")
    with pytest.raises(ValueError, match="`method`"):
        ColoringResult(pattern=pat, partition="column", order="x", n_colors=4,
                       column_groups=[0, 1, 2, 3], row_groups=None, lower_bound=1,
                       method="star")


def test_column_colouring_is_a_star_colouring():
    """Theory check: a distance-2 (column) colouring is a star colouring, accepted as such."""
    H = random_symmetric(40, 0.15, 3)
    col = sparsejac.color(H)
    check_star_coloring(H, col.groups)
    r = ColoringResult(pattern=col.pattern, partition="symmetric", order="column",
                       n_colors=col.n_colors, column_groups=col.groups, row_groups=None,
                       lower_bound=1, method="star")
    np.testing.assert_allclose(r.decompress(r.compress(H)).toarray(), H, rtol=1e-12)


def test_custom_order_and_adjacency_graph():
    """A callable order gets (pattern, 'symmetric', rng); the graph's degrees are distance-1."""
    H = random_symmetric(20, 0.3, 11)
    seen = []

    def reverse(pattern, partition, rng):
        seen.append(partition)
        return np.arange(pattern.shape[0])[::-1]

    r = sparsejac.color(H, "symmetric", reverse, method="acyclic")
    assert seen == ["symmetric"]
    assert r.order == "reverse"
    g = AdjacencyGraph(as_pattern(H))
    assert np.array_equal(symmetric_groups(g, "acyclic", np.arange(20)[::-1]), r.groups)
    assert g.degrees.tolist() == [d for _, d in sorted(graph_of(H).degree())]
    assert g.n_edges == graph_of(H).number_of_edges()


def test_best_search_is_deterministic_and_stats():
    """Same seed, same colouring and the same work; stats name the method and depth."""
    H = laplacian_2d(12)
    a = sparsejac.color(H, "symmetric", method="acyclic", seed=3, effort=0.05)
    b = sparsejac.color(H, "symmetric", method="acyclic", seed=3, effort=0.05)
    assert np.array_equal(a.groups, b.groups)
    assert a.work == b.work
    assert a.order == b.order
    s = a.stats()
    assert s["method"] == "acyclic"
    assert s["depth"] >= 1
    assert s["partition"] == "symmetric"
    assert sparsejac.color(H, "symmetric").stats()["depth"] == 0
    assert "method='acyclic'" in repr(a)


# -- ColPack's counts on the shared symmetric matrices ------------------------------------


def _symmetric_files() -> list[Path]:
    out = []
    for p in shared_matrix_files():
        a = sp.csr_array(as_pattern(p).to_csr_array())
        if a.shape[0] == a.shape[1] and (a != a.T).nnz == 0:
            out.append(p)
    return out


@functools.cache
def _colpack_symmetric() -> dict[tuple[str, str], int]:
    best: dict[tuple[str, str], int] = {}
    with open(SHARED_MATRICES / "colpack_reference.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["problem"] in METHODS:
                key = (row["matrix"], row["problem"])
                best[key] = min(best.get(key, 1 << 62), int(row["colors"]))
    return best


def _shared_params():
    files = _symmetric_files()
    if not files:
        return [pytest.param(None, id="no-shared-matrices")]
    return [pytest.param(p, id=p.stem) for p in files]


@requires_shared
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("path", _shared_params())
def test_no_worse_than_colpack_on_shared(path, method):
    """best's star and acyclic counts are at most ColPack's best on every symmetric matrix."""
    reference = _colpack_symmetric().get((path.stem, method))
    if reference is None:
        pytest.skip(f"colpack_reference.csv has no {method} count for {path.stem}")
    r = sparsejac.color(path, "symmetric", method=method)
    assert r.n_colors <= reference, f"{path.stem} {method}: {r.n_colors} > ColPack {reference}"
    p = r.pattern
    lo, hi = np.minimum(p.rows, p.indices), np.maximum(p.rows, p.indices)
    values = np.sin(lo * 7.0 + hi * 3.0) + 2.0  # symmetric values
    H = sp.csr_array((values, p.indices, p.indptr), shape=p.shape)
    back = r.decompress(r.compress(H))
    np.testing.assert_allclose(back.data, values, rtol=1e-9, atol=1e-9)


@requires_shared
def test_natural_order_matches_colpack_on_shared():
    """ColPack's natural-order counts are reproduced exactly (same algorithms)."""
    natural: dict[tuple[str, str], int] = {}
    with open(SHARED_MATRICES / "colpack_reference.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["problem"] in METHODS and row["ordering"] == "natural":
                natural[(row["matrix"], row["problem"])] = int(row["colors"])
    assert natural
    for (name, method), count in natural.items():
        r = sparsejac.color(SHARED_MATRICES / f"{name}.mtx", "symmetric", "natural",
                            method=method)
        assert r.n_colors == count, (name, method)


@pytest.mark.parametrize("method", ["star", "acyclic"])
def test_complete_graph_shortcut_equals_the_kernel(method):
    """A dense Hessian's graph is complete: the colouring is what the kernel's first-fit pass
    gives (every vertex the next colour in the order), without the O(n^3) pass; a graph
    one edge short of complete still takes the kernel."""
    from sparsejac.coloring import _symmetric
    from sparsejac.coloring.greedy import kernel_array
    from sparsejac.coloring.symmetric import symmetric_groups

    kern = _symmetric.star_color if method == "star" else _symmetric.acyclic_color
    rng = np.random.default_rng(0)
    for n in (2, 3, 7, 25):
        dense = np.ones((n, n))
        holed = dense.copy()
        holed[0, 1] = holed[1, 0] = 0
        for a in (dense, holed, dense - np.eye(n)):
            g = AdjacencyGraph(as_pattern(a))
            for _ in range(4):
                order = rng.permutation(n)
                expected = kern(g.ptr, g.adj, g.eid, g.n_edges, kernel_array(order), g.big)
                assert np.array_equal(symmetric_groups(g, method, order), expected)


def _first_free(forbidden, v):
    """The smallest colour not forbidden for ``v`` (first fit)."""
    c = 0
    while forbidden[c] == v:
        c += 1
    return c


def _star_walking(ptr, adj, eid, n_edges, order):
    """GTMP 2007 Algorithm 4.1 as first written: it walks the neighbours of every coloured
    neighbour (quadratic around a hub coloured early); the reference of the kernel."""
    n = ptr.size - 1
    color = [-1] * n
    forbidden = [-1] * (n + 1)
    fn_v, fn_w, fn_e = [-1] * (n + 1), [-1] * (n + 1), [-1] * (n + 1)
    treated = [-1] * n
    star, hub = [-1] * max(n_edges, 1), [-1] * max(n_edges, 1)
    n_stars = 0

    def treat(v, w):
        for b in range(ptr[w], ptr[w + 1]):
            if color[adj[b]] >= 0:
                forbidden[color[adj[b]]] = v
        treated[w] = v

    for v in order:
        for a in range(ptr[v], ptr[v + 1]):
            w = adj[a]
            cw = color[w]
            if cw < 0:
                continue
            forbidden[cw] = v
            if fn_v[cw] == v:
                q = fn_w[cw]
                if treated[q] != v:
                    treat(v, q)
                treat(v, w)
            else:
                fn_v[cw], fn_w[cw], fn_e[cw] = v, w, eid[a]
                for b in range(ptr[w], ptr[w + 1]):
                    x = adj[b]
                    if x != v and color[x] >= 0 and hub[star[eid[b]]] == x:
                        forbidden[color[x]] = v
        c = color[v] = _first_free(forbidden, v)
        for a in range(ptr[v], ptr[v + 1]):
            w = adj[a]
            if color[w] < 0:
                continue
            for b in range(ptr[w], ptr[w + 1]):
                x = adj[b]
                if x != v and color[x] == c:
                    s = star[eid[b]]
                    hub[s] = w
                    star[eid[a]] = s
                    break
            else:
                cw = color[w]
                if fn_v[cw] == v and fn_w[cw] != w:
                    s = star[fn_e[cw]]
                    hub[s] = v
                    star[eid[a]] = s
                else:
                    star[eid[a]] = n_stars
                    hub[n_stars] = -1
                    n_stars += 1
    return np.array(color)


def _acyclic_walking(ptr, adj, eid, n_edges, order):
    """GTMP 2007 Algorithm 3.1 as first written (disjoint-set forest of two-coloured trees),
    walking the neighbours of every coloured neighbour; the reference of the kernel."""
    n = ptr.size - 1
    m = max(n_edges, 1)
    color = [-1] * n
    forbidden = [-1] * (n + 1)
    fn_v, fn_e = [-1] * (n + 1), [-1] * (n + 1)
    visit_v, visit_w = [-1] * m, [-1] * m
    parent, rank = list(range(m)), [0] * m

    def find(e):
        while parent[e] != e:
            e = parent[e]
        return e

    def union(a, b):
        if a == b:
            return
        if rank[a] < rank[b]:
            parent[a] = b
        elif rank[a] > rank[b]:
            parent[b] = a
        else:
            parent[b] = a
            rank[a] += 1

    for v in order:
        for a in range(ptr[v], ptr[v + 1]):
            if color[adj[a]] >= 0:
                forbidden[color[adj[a]]] = v
        for a in range(ptr[v], ptr[v + 1]):
            w = adj[a]
            if color[w] < 0:
                continue
            seen = set()
            for b in range(ptr[w], ptr[w + 1]):
                x = adj[b]
                if color[x] < 0 or forbidden[color[x]] == v or color[x] in seen:
                    continue
                seen.add(color[x])
                r = find(eid[b])
                if visit_v[r] != v:
                    visit_v[r], visit_w[r] = v, w
                elif visit_w[r] != w:
                    forbidden[color[x]] = v
        c = color[v] = _first_free(forbidden, v)
        for a in range(ptr[v], ptr[v + 1]):
            w = adj[a]
            cw = color[w]
            if cw < 0 or w == v:
                continue
            if fn_v[cw] != v:
                fn_v[cw], fn_e[cw] = v, eid[a]
            else:
                union(find(eid[a]), find(fn_e[cw]))
        for a in range(ptr[v], ptr[v + 1]):
            w = adj[a]
            if color[w] < 0:
                continue
            for b in range(ptr[w], ptr[w + 1]):
                if adj[b] != v and color[adj[b]] == c:
                    union(find(eid[a]), find(eid[b]))
                    break
    return np.array(color)


@pytest.mark.parametrize("method", ["star", "acyclic"])
@pytest.mark.parametrize("seed", range(8))
def test_symmetric_kernels_equal_the_walking_algorithms_around_hubs(method, seed):
    """The kernels' colour tables for big vertices (and the star kernel's leaf lists) give
    the colours of the algorithms that walk neighbourhoods, on random patterns with hubs, in
    natural, random and largest-first orders."""
    from sparsejac.coloring.symmetric import AdjacencyGraph, symmetric_groups

    rng = np.random.default_rng(seed)
    n = int(rng.integers(150, 400))
    a = sp.random(n, n, density=float(rng.uniform(0.002, 0.02)), random_state=seed)
    for h in rng.choice(n, size=int(rng.integers(1, 5)), replace=False):  # hubs
        cols = rng.choice(n, size=int(rng.integers(n // 3, n)), replace=False)
        a = a + sp.csr_matrix((np.ones(cols.size), (np.full(cols.size, h), cols)),
                              shape=(n, n))
    pattern = as_pattern(((a + a.T) != 0).astype(float) + sp.eye(n))
    graph = AdjacencyGraph(pattern)
    assert (graph.big >= 0).any()
    for order in (np.arange(n), rng.permutation(n), np.argsort(-graph.degrees, kind="stable")):
        got = symmetric_groups(graph, method, order)
        walking = _star_walking if method == "star" else _acyclic_walking
        want = walking(graph.ptr, graph.adj, graph.eid, graph.n_edges, order)
        np.testing.assert_array_equal(got, want)
        check = check_star_coloring if method == "star" else check_acyclic_coloring
        check(pattern.to_csr_array().toarray(), got)


@pytest.mark.parametrize("method", ["star", "acyclic"])
def test_symmetric_colouring_of_an_arrowhead_with_its_hub_first(method):
    """Natural order on an arrowhead whose hub is vertex 0: the hub is a big vertex, whose
    neighbours are no longer walked for every vertex after it (33 s at n = 2e5 before); the
    colouring is the walking algorithm's: 2 colours."""
    from sparsejac.coloring.symmetric import AdjacencyGraph, symmetric_groups

    n = 20_000
    rows = np.concatenate([np.zeros(n - 1, int), np.arange(1, n), np.arange(n)])
    cols = np.concatenate([np.arange(1, n), np.zeros(n - 1, int), np.arange(n)])
    pattern = as_pattern(sp.csr_array((np.ones(rows.size), (rows, cols)), shape=(n, n)))
    graph = AdjacencyGraph(pattern)
    assert graph.big[0] == 0
    groups = symmetric_groups(graph, method, np.arange(n))
    assert groups[0] == 0
    assert set(groups[1:].tolist()) == {1}
