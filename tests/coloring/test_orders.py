"""Orders: every ORDERS entry is a deterministic permutation; each matches an exact reference.

Exact references:
- `largest_first` and `dsatur` equal networkx's `greedy_color` strategies on the
  column-intersection graph (same tie rule: smaller index first);
- `smallest_last`, `incidence_degree` and `dynamic_largest_first` use bucket queues whose tie
  rule networkx does not share (its smallest-last pops from a set); they are compared with
  the slow list-based replay below, which follows the documented rule, and `smallest_last`
  also with the defining property (each removed vertex has minimum remaining degree).
"""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest

import sparsejac
from sparsejac.coloring import ORDERS, BipartiteGraph
from sparsejac.coloring.greedy import greedy_color
from sparsejac.coloring.orders import check_permutation, resolve_order
from sparsejac.pattern import as_pattern

from .helpers import intersection_graph, laplacian_2d, small_matrices

MATRICES = small_matrices()
PARTITIONS = ["column", "row"]


def _case_ids() -> list:
    return [
        pytest.param(name, part, id=f"{name}-{part}") for name in MATRICES for part in PARTITIONS
    ]


def _oriented(a: np.ndarray, partition: str) -> np.ndarray:
    """The matrix whose columns are the vertices."""
    a = np.asarray(a) != 0
    return a if partition == "column" else a.T


def _neighbours_in_kernel_order(a: np.ndarray, v: int) -> list[int]:
    """Distance-2 neighbours of column v: its rows ascending, each row's columns ascending."""
    seen: list[int] = []
    for r in np.flatnonzero(a[:, v]):
        for w in np.flatnonzero(a[r]):
            if w != v and w not in seen:
                seen.append(int(w))
    return seen


def _reference_bucket_order(a, key, step, take_max, reverse):
    """Replay of the bucket-queue rule with Python lists (front of a list = taken first)."""
    n = a.shape[1]
    key = list(key)
    buckets: dict[int, list[int]] = {}
    for v in range(n - 1, -1, -1):
        buckets.setdefault(key[v], []).insert(0, v)
    done = [False] * n
    seq = []
    for _ in range(n):
        live = [k for k, b in buckets.items() if b]
        k = max(live) if take_max else min(live)
        v = buckets[k].pop(0)
        done[v] = True
        seq.append(v)
        for w in _neighbours_in_kernel_order(a, v):
            if not done[w]:
                buckets[key[w]].remove(w)
                key[w] += step
                buckets.setdefault(key[w], []).insert(0, w)
    return seq[::-1] if reverse else seq


def _degrees(a):
    g = intersection_graph(a)
    return [g.degree(v) for v in range(a.shape[1])]


@pytest.mark.parametrize("name", sorted(ORDERS))
@pytest.mark.parametrize(("matrix", "partition"), _case_ids())
def test_order_is_deterministic_permutation(name, matrix, partition):
    """Every order returns a permutation of the vertices, the same one for the same seed."""
    p = as_pattern(MATRICES[matrix])
    n = p.shape[1] if partition == "column" else p.shape[0]
    first = ORDERS[name](p, partition, np.random.default_rng(5))
    again = ORDERS[name](p, partition, np.random.default_rng(5))
    assert first.dtype == np.int64
    np.testing.assert_array_equal(np.sort(first), np.arange(n))
    np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize(("matrix", "partition"), _case_ids())
def test_largest_first_equals_networkx(matrix, partition):
    """largest_first is networkx's strategy_largest_first on the intersection graph."""
    g = intersection_graph(MATRICES[matrix], partition)
    ours = ORDERS["largest_first"](as_pattern(MATRICES[matrix]), partition, None)
    assert ours.tolist() == list(nx.coloring.strategy_largest_first(g, {}))


@pytest.mark.parametrize(("matrix", "partition"), _case_ids())
def test_dsatur_equals_networkx(matrix, partition):
    """dsatur colours exactly as networkx's DSATUR on the intersection graph."""
    a = MATRICES[matrix]
    g = intersection_graph(a, partition)
    expected = nx.greedy_color(g, strategy="DSATUR")
    seq = ORDERS["dsatur"](as_pattern(a), partition, None)
    graph = BipartiteGraph(as_pattern(a), partition)
    groups = greedy_color(graph, seq)
    assert {v: int(c) for v, c in enumerate(groups)} == expected


@pytest.mark.parametrize(
    ("name", "step", "take_max", "reverse"),
    [
        ("smallest_last", -1, False, True),
        ("incidence_degree", 1, True, False),
        ("dynamic_largest_first", -1, True, False),
    ],
)
@pytest.mark.parametrize(("matrix", "partition"), _case_ids())
def test_bucket_orders_equal_reference(name, step, take_max, reverse, matrix, partition):
    """The bucket-queue orders equal a slow list-based replay of their documented rule."""
    a = _oriented(MATRICES[matrix], partition)
    key = [0] * a.shape[1] if name == "incidence_degree" else _degrees(a)
    expected = _reference_bucket_order(a, key, step, take_max, reverse)
    ours = ORDERS[name](as_pattern(MATRICES[matrix]), partition, None)
    assert ours.tolist() == expected


@pytest.mark.parametrize(("matrix", "partition"), _case_ids())
def test_smallest_last_property(matrix, partition):
    """Read backwards, smallest_last removes a vertex of minimum remaining degree each time."""
    g = intersection_graph(MATRICES[matrix], partition)
    order = ORDERS["smallest_last"](as_pattern(MATRICES[matrix]), partition, None)
    h = g.copy()
    for v in order[::-1].tolist():
        assert h.degree(v) == min(d for _, d in h.degree())
        h.remove_node(v)


@pytest.mark.parametrize("name", ["incidence_degree", "dynamic_largest_first"])
@pytest.mark.parametrize(("matrix", "partition"), _case_ids())
def test_dynamic_order_property(name, matrix, partition):
    """Each pick has the largest count of ordered (ID) or unordered (DLF) neighbours."""
    g = intersection_graph(MATRICES[matrix], partition)
    order = ORDERS[name](as_pattern(MATRICES[matrix]), partition, None).tolist()
    placed: set[int] = set()
    for v in order:

        def count(u):
            inside = sum(w in placed for w in g[u])
            return inside if name == "incidence_degree" else g.degree(u) - inside

        assert count(v) == max(count(u) for u in g if u not in placed)
        placed.add(v)


@pytest.mark.parametrize("name", sorted(ORDERS))
@pytest.mark.parametrize(("matrix", "partition"), _case_ids())
def test_greedy_in_any_order_equals_networkx(name, matrix, partition):
    """First-fit greedy in an order equals networkx greedy_color given that order."""
    a = MATRICES[matrix]
    order = ORDERS[name](as_pattern(a), partition, np.random.default_rng(3))
    expected = nx.greedy_color(intersection_graph(a, partition), strategy=lambda g, c: order)
    groups = greedy_color(BipartiteGraph(as_pattern(a), partition), order)
    assert {v: int(c) for v, c in enumerate(groups)} == expected


def test_random_depends_on_seed():
    """The random order changes with the seed."""
    p = as_pattern(np.eye(30))
    a = ORDERS["random"](p, "column", np.random.default_rng(1))
    b = ORDERS["random"](p, "column", np.random.default_rng(2))
    assert not np.array_equal(a, b)


def test_laplacian_60_orders():
    """On the 60×60 5-point Laplacian, DSATUR finds the optimum 5 colours (natural gives 7)."""
    p = as_pattern(laplacian_2d(60))
    g = BipartiteGraph(p, "column")
    counts = {
        name: int(greedy_color(g, ORDERS[name](p, "column", None)).max()) + 1
        for name in ("natural", "dsatur")
    }
    assert counts == {"natural": 7, "dsatur": 5}


def test_resolve_order():
    """Names and callables resolve; anything else raises naming `order` and the choices."""
    assert resolve_order("dsatur") == ("dsatur", ORDERS["dsatur"])

    def mine(pattern, partition, rng):
        return np.arange(pattern.shape[1])

    assert resolve_order(mine) == ("mine", mine)
    with pytest.raises(ValueError, match=r"Unknown `order` 'bogus'; expected one of \['dsatur'"):
        resolve_order("bogus")
    with pytest.raises(TypeError, match=r"`order` must be a string or a callable; got int"):
        resolve_order(3)


@pytest.mark.parametrize(
    "bad", [[0, 1], [0, 1, 1], [0, 1, 3], np.array([0.0, 1.0, 2.0]), [[0, 1, 2]]]
)
def test_check_permutation_rejects(bad):
    """A non-permutation is rejected with the argument name and what was received."""
    with pytest.raises(ValueError, match=r"`order` must return a permutation of range\(3\); got"):
        check_permutation(bad, 3)


STRATEGIES = [pytest.param(s, id=s.__name__) for s in (
    nx.coloring.strategy_largest_first, nx.coloring.strategy_smallest_last,
    nx.coloring.strategy_random_sequential, nx.coloring.strategy_independent_set,
    nx.coloring.strategy_connected_sequential_bfs, nx.coloring.strategy_connected_sequential_dfs,
    nx.coloring.strategy_saturation_largest_first)]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize(("matrix", "partition"), _case_ids())
def test_networkx_strategy_as_order(strategy, matrix, partition):
    """A networkx strategy as `order=` colours exactly as networkx.greedy_color does on the
    exported intersection graph (strategies that traverse it depend on its edge order)."""
    a = MATRICES[matrix]
    g = sparsejac.coloring.intersection_graph(a, partition)
    random.seed(0)  # strategy_random_sequential draws from Python's random module
    expected = nx.greedy_color(g, strategy=strategy)
    random.seed(0)
    r = sparsejac.color(a, partition, order=strategy)
    groups = r.column_groups if partition == "column" else r.row_groups
    assert r.order == strategy.__name__
    assert {v: int(c) for v, c in enumerate(groups)} == expected


@pytest.mark.parametrize(("matrix", "partition"), _case_ids())
def test_intersection_graph_equals_reference(matrix, partition):
    """The library's vectorised intersection graph equals the slow pairwise one."""
    from sparsejac.coloring import intersection_graph as library_graph

    a = MATRICES[matrix]
    ours, ref = library_graph(a, partition), intersection_graph(a, partition)
    assert sorted(ours.nodes()) == sorted(ref.nodes())
    assert {frozenset(e) for e in ours.edges()} == {frozenset(e) for e in ref.edges()}


def test_networkx_strategy_needs_one_side():
    """A networkx strategy cannot order a bidirectional colouring: a clear error."""
    with pytest.raises(ValueError, match="networkx strategy"):
        sparsejac.color(np.eye(3), "bidirectional", order=nx.coloring.strategy_largest_first)
