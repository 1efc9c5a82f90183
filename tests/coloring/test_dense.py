"""Dense nets: the near-linear kernels against the pairwise kernels, networkx and slow replays.

A net (row, for a column partition) on s vertices costs the pairwise kernels s**2 steps; the
kernels of sparsejac/coloring/_dense.py never walk a dense net's pairs. Checks:

- on random patterns with a few dense rows and columns, and any set of nets taken as dense
  (so that small patterns exercise every path), the degrees equal networkx's, first-fit
  greedy and DSATUR equal the pairwise kernels and networkx's ``greedy_color`` exactly, and
  the bucket orders equal a slow replay of their documented rule (with no dense net: the
  pairwise kernels' orders);
- the star bicolouring's big-vertex bit sets change nothing (equal to the plain kernel);
- with the real rule (nets of at least DENSE_NET_MIN vertices), every order of every
  partition through ``sparsejac.color`` is valid by the slow checkers, DSATUR and
  largest-first equal networkx, and named patterns (arrowheads, the BVP with an unknown
  parameter and a normalisation row) have their known counts;
- the work measure is linear in nnz on those patterns, and colouring them at n = 20,000 in
  every order and partition stays cheap (the pairwise kernels took minutes);
- the conflict nets of a bicolouring never exceed NET_ENTRIES_PER_NONZERO entries per
  nonzero.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsejac
from sparsejac.coloring import (
    BIDIRECTIONAL_ORDERS,
    ORDERS,
    BipartiteGraph,
    _bikernels,
    _kernels,
    check_bicoloring,
    check_structurally_orthogonal,
)
from sparsejac.coloring.bicolor import (
    NET_ENTRIES_PER_NONZERO,
    _conflict_nets,
    augmented_arrays,
    color_assignment,
)
from sparsejac.coloring.dense import (
    DENSE_NET_MIN,
    MAX_DENSE_GROUPS,
    DenseNets,
    select_dense_nets,
)
from sparsejac.coloring.greedy import dsatur_color, greedy_color, restart
from sparsejac.pattern import as_pattern

from .helpers import intersection_graph

DYNAMIC = {  # name: (initial keys are degrees, step, take the max, reverse)
    "smallest_last": (True, -1, False, True),
    "incidence_degree": (False, 1, True, False),
    "dynamic_largest_first": (True, -1, True, False),
}


# -- patterns -----------------------------------------------------------------------------


@st.composite
def dense_patterns(draw: st.DrawFn, max_side: int = 22) -> np.ndarray:
    """Random sparse 0/1 matrices with up to three dense rows and three dense columns."""
    m = draw(st.integers(1, max_side))
    n = draw(st.integers(1, max_side))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    a = (rng.random((m, n)) < draw(st.sampled_from([0.05, 0.15, 0.3]))).astype(float)
    for _ in range(draw(st.integers(0, 3))):
        a[rng.integers(m), rng.random(n) < draw(st.sampled_from([0.6, 0.9, 1.0]))] = 1
    for _ in range(draw(st.integers(0, 3))):
        a[rng.random(m) < draw(st.sampled_from([0.6, 0.9, 1.0])), rng.integers(n)] = 1
    return a


def arrow(n: int, cross: bool = True) -> sp.csr_array:
    """Diagonal, a dense first row and a dense first column (crossing at (0, 0)), or
    (``cross=False``) row 0 over columns 0..n-2 and column n-1 over rows 1..n-1 (apart)."""
    i = np.arange(n)
    if cross:
        r = np.concatenate([i, np.zeros(n, dtype=int), i])
        c = np.concatenate([i, i, np.zeros(n, dtype=int)])
    else:
        r = np.concatenate([i, np.zeros(n - 2, dtype=int), i[1:-1]])
        c = np.concatenate([i, i[1:-1], np.full(n - 2, n - 1)])
    a = sp.csr_array((np.ones(r.size), (r, c)), shape=(n, n))
    a.data[:] = 1
    return a


def bvp(n: int) -> sp.csr_array:
    """The Jacobian pattern of a 3-point BVP in u (n - 1 unknowns) with a parameter lam.

    Rows 0..n-2: u[i-1], u[i], u[i+1] and lam; row n-1: the normalisation sum(u**2) - 1.
    """
    k = n - 1
    i = np.arange(k)
    r = np.concatenate([i, i[1:], i[:-1], i, np.full(k, k)])
    c = np.concatenate([i, i[1:] - 1, i[:-1] + 1, np.full(k, k), i])
    return sp.csr_array((np.ones(r.size), (r, c)), shape=(n, n))


def _bvp_function(z: np.ndarray) -> np.ndarray:
    u, lam = z[:-1], z[-1]
    up = np.concatenate([[0.0], u, [0.0]])
    return np.concatenate([up[:-2] - 2 * up[1:-1] + up[2:] + lam * u, [np.sum(u**2) - 1.0]])


def _oriented(a: np.ndarray, partition: str) -> np.ndarray:
    a = np.asarray(a) != 0
    return a if partition == "column" else a.T


def _dense_of(graph: BipartiteGraph, threshold: int) -> DenseNets:
    """The structure with every net of at least ``threshold`` vertices taken as dense."""
    nets = np.flatnonzero(np.diff(graph.nptr) >= threshold)
    return DenseNets.build(graph.arrays, nets)


# -- slow references ------------------------------------------------------------------------


def replay_dynamic(a: np.ndarray, dense: np.ndarray, name: str) -> list[int]:
    """The documented rule of the bucket orders with dense nets, replayed with Python lists.

    ``a`` has the vertices as columns and the nets as rows; ``dense`` flags the dense nets.
    Groups: vertices with the same dense nets, numbered by first appearance (0: none). Key:
    the degree (or 0). Each step takes the extreme key, ties to the latest of (own last move,
    group's last shift), then the latest own move; moves the unfinished light neighbours that
    share no dense net with it (in walk order: its nets ascending, each net's vertices
    ascending); then shifts every group on one of its dense nets (in increasing number).
    """
    use_degree, step, take_max, reverse = DYNAMIC[name]
    n = a.shape[1]
    nets = [np.flatnonzero(a[:, v]).tolist() for v in range(n)]
    sig = [frozenset(r for r in nets[v] if dense[r]) for v in range(n)]
    ids: dict[tuple[int, ...], int] = {(): 0}
    grp = []
    for v in range(n):
        grp.append(ids.setdefault(tuple(sorted(sig[v])), len(ids)))
    g = intersection_graph(a)
    key = [g.degree(v) if use_degree else 0 for v in range(n)]
    own, clock = [0] * n, 0
    for v in range(n - 1, -1, -1):
        own[v], clock = clock, clock + 1
    shift = dict.fromkeys(ids.values(), -1)
    done = [False] * n
    seq = []
    for _ in range(n):
        rest = [u for u in range(n) if not done[u]]
        extreme = (max if take_max else min)(key[u] for u in rest)
        v = max((u for u in rest if key[u] == extreme),
                key=lambda u: (max(own[u], shift[grp[u]]), own[u]))
        done[v] = True
        seq.append(v)
        seen = {v}
        for r in nets[v]:
            if dense[r]:
                continue
            for w in np.flatnonzero(a[r]).tolist():
                if w in seen:
                    continue
                seen.add(w)
                if not done[w] and not (sig[v] & sig[w]):
                    key[w] += step
                    own[w], clock = clock, clock + 1
        for gid in sorted({grp[u] for u in range(n) if sig[v] & sig[u]}):
            for w in range(n):
                if grp[w] == gid and not done[w]:
                    key[w] += step
            shift[gid], clock = clock, clock + 1
    return seq[::-1] if reverse else seq


def _orthogonal(pattern, groups: np.ndarray, partition: str) -> bool:
    """Vectorised structural orthogonality: no (line, group) pair twice."""
    lines, verts = ((pattern.rows, pattern.indices) if partition == "column"
                    else (pattern.indices, pattern.rows))
    pairs = lines * (int(groups.max()) + 1) + groups[verts]
    return bool(np.unique(pairs).size == pairs.size)


# -- the kernels on random patterns --------------------------------------------------------


@settings(max_examples=80)
@given(dense_patterns(), st.sampled_from(["column", "row"]), st.integers(1, 6),
       st.integers(0, 2**31 - 1))
def test_dense_kernels_equal_pairwise(a, partition, threshold, seed):
    """Degrees, greedy and DSATUR with dense nets equal the pairwise kernels and networkx."""
    p = as_pattern(a)
    graph = BipartiteGraph(p, partition)
    dense = _dense_of(graph, threshold)
    nxg = intersection_graph(a, partition)
    degrees = _kernels.distance2_degrees(*graph.arrays)
    assert dense.degrees.tolist() == [nxg.degree(v) for v in range(graph.n_vertices)]
    np.testing.assert_array_equal(dense.degrees, degrees)
    order = np.random.default_rng(seed).permutation(graph.n_vertices)
    colors = dense.greedy(order)
    np.testing.assert_array_equal(colors, _kernels.greedy(*graph.arrays, order))
    assert {v: int(c) for v, c in enumerate(colors)} == nx.greedy_color(
        nxg, strategy=lambda g, c: order)
    np.testing.assert_array_equal(dense.greedy(), _kernels.greedy(
        *graph.arrays, np.arange(graph.n_vertices)))
    check_structurally_orthogonal(p, colors, partition)
    ds_colors, ds_seq = dense.dsatur()
    ref_colors, ref_seq = _kernels.dsatur(*graph.arrays, degrees)
    np.testing.assert_array_equal(ds_seq, ref_seq)
    np.testing.assert_array_equal(ds_colors, ref_colors)
    assert {v: int(c) for v, c in enumerate(ds_colors)} == nx.greedy_color(nxg, "DSATUR")
    # the seen-colour table spilling into its hash set changes nothing
    from sparsejac.coloring import _dense

    spilled = _dense.dense_dsatur(*dense.arrays, dense.hid, dense.hptr, dense.hidx, dense.grp,
                                  dense.gptr, dense.gidx, dense.hgptr, dense.hgidx,
                                  dense.degrees, 8)
    np.testing.assert_array_equal(spilled[1], ref_seq)


@settings(max_examples=60)
@given(dense_patterns(max_side=16), st.sampled_from(["column", "row"]), st.integers(1, 6))
def test_dense_bucket_orders_follow_the_rule(a, partition, threshold):
    """The bucket orders with dense nets equal the slow replay of the documented rule."""
    graph = BipartiteGraph(as_pattern(a), partition)
    dense = _dense_of(graph, threshold)
    flags = np.zeros(graph.nptr.size - 1, dtype=bool)
    flags[dense.nets] = True
    oriented = _oriented(a, partition)
    for name in DYNAMIC:
        order = dense.dynamic_order(name)
        assert order.tolist() == replay_dynamic(oriented, flags, name), name
        check_structurally_orthogonal(a, dense.greedy(order), partition)


@settings(max_examples=40)
@given(dense_patterns(max_side=16), st.sampled_from(["column", "row"]))
def test_dense_bucket_orders_without_dense_nets_are_the_pairwise_ones(a, partition):
    """With no net dense, the grouped kernel is exactly the pairwise bucket-queue kernel."""
    graph = BipartiteGraph(as_pattern(a), partition)
    dense = DenseNets.build(graph.arrays, np.zeros(0, dtype=np.int64))
    degrees = _kernels.distance2_degrees(*graph.arrays)
    for name, (use_degree, step, take_max, reverse) in DYNAMIC.items():
        key0 = degrees if use_degree else np.zeros(graph.n_vertices, dtype=np.int64)
        expected = _kernels._dynamic_order(*graph.arrays, key0, step, take_max, reverse)
        np.testing.assert_array_equal(dense.dynamic_order(name), expected)


@settings(max_examples=60)
@given(dense_patterns(), st.integers(0, 2**31 - 1), st.booleans(), st.booleans(),
       st.integers(1, 4), st.integers(1, 12))
def test_star_bicoloring_big_vertices_change_nothing(a, seed, implicit, shared, big_min,
                                                     max_big):
    """Bit sets and slot hashes for big vertices give the plain star kernel's colouring."""
    p = as_pattern(a)
    if p.nnz == 0:
        return
    m, n = p.shape
    ptr, adj, eid = augmented_arrays(p)
    order = np.random.default_rng(seed).permutation(n + m).astype(np.int64)
    args = (ptr, adj, eid, p.rows, p.indices, n, order, implicit, shared, n + m)
    plain = _bikernels.star_bicolor(*args, 1, 0)
    big = _bikernels.star_bicolor(*args, big_min, max_big)
    np.testing.assert_array_equal(plain[0], big[0])
    np.testing.assert_array_equal(plain[1], big[1])


def test_groups_are_signatures_in_order_of_appearance():
    """Vertices on the same dense nets share a group; groups numbered by first vertex."""
    a = np.zeros((4, 6))
    a[0, [1, 2, 3, 5]] = 1  # dense net 0
    a[1, [2, 3, 4, 5]] = 1  # dense net 1
    a[2, [0, 1]] = 1
    a[3, [4, 5]] = 1
    g = BipartiteGraph(as_pattern(a), "column")
    d = DenseNets.build(g.arrays, np.array([0, 1]))
    assert d.grp.tolist() == [0, 1, 2, 2, 3, 2]
    assert d.gsize.tolist() == [0, 4, 5, 4]
    assert d.degrees.tolist() == [1, 4, 4, 4, 3, 4]
    assert d.lex.tolist() == [1, 1, 0, 0, 0, 0]


def test_dynamic_order_rejects_unknown_name():
    g = BipartiteGraph(as_pattern(np.eye(3)), "column")
    with pytest.raises(ValueError, match=r"Unknown dynamic `name` 'dsatur'"):
        DenseNets.build(g.arrays, np.zeros(0, dtype=np.int64)).dynamic_order("dsatur")


# -- the rule and the public API --------------------------------------------------------------


def test_rule_selects_only_dense_lines():
    """Long lines far above the mean are dense; meshes, small and uniform patterns have none."""
    assert BipartiteGraph(as_pattern(arrow(600)), "column").dense.nets.tolist() == [0]
    assert BipartiteGraph(as_pattern(arrow(600)), "row").dense.nets.tolist() == [0]
    assert BipartiteGraph(as_pattern(arrow(600, cross=False)), "row").dense.nets.tolist() \
        == [599]
    lap = sp.kron(sp.eye_array(40), sp.eye_array(40) + sp.eye_array(40, k=1))
    assert BipartiteGraph(as_pattern(lap), "column").dense is None
    assert BipartiteGraph(as_pattern(arrow(DENSE_NET_MIN - 1)), "column").dense is None
    assert BipartiteGraph(as_pattern(arrow(600)), "bidirectional").dense is None
    sizes = np.full(100, 200)  # uniform: not far above the mean
    assert select_dense_nets(sizes, 100).tolist() == []
    sizes = np.r_[np.full(10_000, 2), 300]  # 300**2 < 16 * 10_000: walking it is cheap
    assert select_dense_nets(sizes, 10_000).tolist() == []


def test_group_cap_halves_the_dense_nets():
    """More than MAX_DENSE_GROUPS signatures: the smallest dense nets become light."""
    rng = np.random.default_rng(0)
    n = 2000
    a = sp.lil_array((12, n))
    for r in range(12):  # 12 dense rows over random halves: thousands of signatures
        a[r, np.flatnonzero(rng.random(n) < 0.5)] = 1
    a = sp.vstack([sp.csr_array(a), sp.eye_array(n, format="csr")]).tocsr()
    g = BipartiteGraph(as_pattern(a), "column")
    assert DenseNets.build(g.arrays, np.arange(12), MAX_DENSE_GROUPS) is None
    assert DenseNets.build(g.arrays, np.arange(12)).n_groups > MAX_DENSE_GROUPS
    assert g.dense is not None
    assert g.dense.n_groups <= MAX_DENSE_GROUPS
    assert 0 < g.dense.n_dense < 12
    colors = greedy_color(g)
    check_structurally_orthogonal(a, colors)


def _dense_cases() -> dict[str, sp.csr_array]:
    rng = np.random.default_rng(7)
    mixed = sp.lil_array(sp.random_array((260, 300), density=0.01, rng=rng))
    mixed[3, rng.random(300) < 0.8] = 1
    mixed[250, :] = 1
    mixed[rng.random(260) < 0.9, 17] = 1
    return {"arrow": arrow(200), "arrow_apart": arrow(200, cross=False), "bvp": bvp(201),
            "mixed": sp.csr_array(mixed)}


CASES = _dense_cases()


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("partition", ["column", "row"])
def test_every_order_with_dense_nets(case, partition):
    """Every named order (and best) is valid; DSATUR and largest-first equal networkx."""
    a = CASES[case]
    graph = BipartiteGraph(as_pattern(a), partition)
    assert graph.dense is not None
    for name in [*sorted(ORDERS), "best"]:
        r = sparsejac.color(a, partition, order=name, check=True, effort=0.05)
        assert r.n_colors >= graph.lower_bound
    nxg = intersection_graph(a.toarray(), partition)
    expected = nx.greedy_color(nxg, "DSATUR")
    assert dsatur_color(graph)[0].tolist() == [expected[v] for v in range(graph.n_vertices)]
    lf = ORDERS["largest_first"](graph, partition, None)
    assert lf.tolist() == list(nx.coloring.strategy_largest_first(nxg, {}))
    flags = np.zeros(graph.nptr.size - 1, dtype=bool)
    flags[graph.dense.nets] = True
    oriented = _oriented(a.toarray(), partition)
    for name in DYNAMIC:
        assert ORDERS[name](graph, partition, None).tolist() == replay_dynamic(
            oriented, flags, name)
    for name in ("incidence_degree", "dsatur", "smallest_last", "dynamic_largest_first"):
        groups = restart(graph, name, np.random.default_rng(1))
        check_structurally_orthogonal(a, groups, partition)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_bidirectional_order_with_dense_lines(case):
    """Every bidirectional order, and auto, gives a valid colouring."""
    a = CASES[case]
    for name in [*sorted(BIDIRECTIONAL_ORDERS), "best"]:
        r = sparsejac.color(a, "bidirectional", order=name, check=True, effort=0.05)
        check_bicoloring(a, r.column_groups, r.row_groups)
    auto = sparsejac.color(a, "auto", check=True, effort=0.05)
    assert auto.n_colors <= min(c.n_colors for c in auto.candidates)


@pytest.mark.parametrize(("pattern", "one_sided", "bidirectional"), [
    (arrow(1000), 1000, 3),
    (arrow(1000, cross=False), 999, 3),
    (bvp(1001), 1001, 5),
])
def test_known_counts(pattern, one_sided, bidirectional):
    """A dense row over every column (a dense column meeting all the others) is a clique:
    n colours in every order (n - 1 when the dense lines are apart: column 0 and column
    n - 1, or row 0 and row n - 1, share no line); mixed mode needs a handful."""
    for partition in ("column", "row"):
        for name in sorted(ORDERS):
            assert sparsejac.color(pattern, partition, order=name).n_colors == one_sided
    r = sparsejac.color(pattern, "bidirectional", effort=0.1)
    assert r.n_colors == bidirectional
    assert sparsejac.color(pattern, "auto", effort=0.1).n_colors == bidirectional


def test_bvp_jacobian_is_exact():
    """The BVP reproducer prepares (mixed mode, a handful of products) and is exact."""
    n = 2001
    z = np.linspace(0.1, 1.0, n)
    jac = sparsejac.SparseJacobian(_bvp_function, z)
    assert jac.n_products <= 6
    k = n - 1
    u = z[:-1]
    expected = sp.lil_array((n, n))
    expected[np.arange(k), np.arange(k)] = -2.0 + z[-1]
    expected[np.arange(1, k), np.arange(k - 1)] = 1.0
    expected[np.arange(k - 1), np.arange(1, k)] = 1.0
    expected[np.arange(k), k] = u
    expected[k, np.arange(k)] = 2 * u
    np.testing.assert_allclose(jac(z).toarray(), expected.toarray(), rtol=1e-14, atol=0)


# -- scale -------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [arrow, lambda n: arrow(n, cross=False), bvp])
def test_work_is_linear_in_nnz(make):
    """The cost model's walk work grows like nnz (the pairwise work like n**2)."""
    works = []
    for n in (4000, 8000, 16000):
        p = as_pattern(make(n))
        for partition in ("column", "row"):
            g = BipartiteGraph(p, partition)
            assert g.work <= 10 * p.nnz
            assert g.pair_work >= n * n // 2
            works.append(g.work)
    assert works[4] <= 2.2 * works[2]
    assert works[2] <= 2.2 * works[0]


@pytest.mark.parametrize("make", [arrow, lambda n: arrow(n, cross=False), bvp])
def test_every_order_at_scale(make):
    """At n = 20,000, every order of every partition colours quickly and validly.

    The pairwise kernels took seconds per order here (DSATUR about 13 s, quadratic).
    """
    a = make(20_000)
    p = as_pattern(a)
    for partition in ("column", "row"):
        for name in sorted(ORDERS):
            r = sparsejac.color(p, partition, order=name)
            assert r.n_colors in (19_999, 20_000)
            assert _orthogonal(p, r.groups, partition)
    for name in sorted(BIDIRECTIONAL_ORDERS):
        r = sparsejac.color(p, "bidirectional", order=name)
        assert r.n_colors >= 2
    r = sparsejac.color(p, "auto", effort=0.05)
    assert r.partition == "bidirectional"
    assert r.n_colors <= 6


def test_conflict_nets_stay_linear():
    """A dense row read half from B, half from C: exact nets would need n**2 / 4 entries."""
    n = 3000
    a = sp.csr_array(sp.eye_array(n) + sp.csr_array(
        (np.ones(n), (np.zeros(n, dtype=int), np.arange(n))), shape=(n, n)))
    a.data[:] = 1
    p = as_pattern(a)
    to_c = (p.rows == 0) & (p.indices % 2 == 0)  # half of row 0 from C, the rest from B
    nets, _ = _conflict_nets(p, ~to_c)
    assert nets.nnz <= NET_ENTRIES_PER_NONZERO * p.nnz
    cg, rg = color_assignment(p, to_c, np.random.default_rng(0))
    check_bicoloring(a, cg, rg)
