"""External references: ColPack's counts on the shared matrices, and pinned counts.

- On every matrix of ../shared/data/matrices, `order="best"` uses no more colours than
  ColPack's best order (colpack_reference.csv), for columns and rows; the round trip is exact
  and the checker passes. Skipped where ../shared is absent (a user's machine).
- The same for bidirectional colourings against ColPack's star bicolouring
  (`star_bicoloring_implicit`, best over its orders, forward plus reverse passes), with a
  smaller effort (:data:`SHARED_EFFORT`); and `partition="auto"` is the cheapest of the
  three colourings it computes.
- tests/reference/coloring_counts.csv pins the colour count of every named order on small
  generated matrices, and tests/reference/bicoloring_counts.csv the forward and reverse
  passes of every bidirectional order, so that a change of tie-breaking or kernel shows up.
  Regenerate them (after checking why counts moved) with
  `python -m tests.coloring.test_reference`.
"""

from __future__ import annotations

import csv
import functools
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import sparsejac
from sparsejac.coloring import (
    BIDIRECTIONAL_ORDERS,
    DEFAULT_REVERSE_COST,
    ORDERS,
    check_result,
    partition_cost,
)

from ..conftest import SHARED_MATRICES, requires_shared, shared_matrix_files
from .helpers import laplacian_2d, small_matrices

PINNED = Path(__file__).resolve().parent.parent / "reference" / "coloring_counts.csv"
PINNED_BI = PINNED.with_name("bicoloring_counts.csv")
FILES = shared_matrix_files()
#: Effort per search for the bidirectional and auto checks on the shared matrices.
SHARED_EFFORT = 0.25


def _colpack_best() -> dict[tuple[str, str], int]:
    best: dict[tuple[str, str], int] = {}
    with open(SHARED_MATRICES / "colpack_reference.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            problem = {"column_pd2": "column", "row_pd2": "row"}.get(row["problem"])
            if problem is None or row["ordering"] == "lower_bound":
                continue
            key = (row["matrix"], problem)
            best[key] = min(best.get(key, 1 << 62), int(row["colors"]))
    return best


@functools.cache
def _best(path: Path, partition: str) -> sparsejac.ColoringResult:
    return sparsejac.color(path, partition)


def _shared_params():
    if not FILES:
        return [pytest.param(None, id="no-shared-matrices")]
    return [pytest.param(p, id=p.stem) for p in FILES]


@requires_shared
@pytest.mark.parametrize("partition", ["column", "row"])
@pytest.mark.parametrize("path", _shared_params())
def test_best_no_worse_than_colpack(path, partition):
    """best uses at most as many colours as ColPack's best order on every shared matrix."""
    reference = _colpack_best()[(path.stem, partition)]
    r = _best(path, partition)
    assert r.n_colors <= reference, f"{path.stem} {partition}: {r.n_colors} > ColPack {reference}"
    assert r.lower_bound <= r.n_colors


@requires_shared
@pytest.mark.parametrize("partition", ["column", "row"])
@pytest.mark.parametrize("path", _shared_params())
def test_shared_round_trip(path, partition):
    """On every shared matrix, best's colouring passes the checker and round-trips exactly."""
    r = _best(path, partition)
    rng = np.random.default_rng(0)
    p = r.pattern
    values = rng.standard_normal(p.nnz) + 5.0
    check_result(r, J=sp.csr_array((values, p.indices, p.indptr), shape=p.shape))


@requires_shared
def test_colpack_reference_covers_every_matrix():
    """The reference CSV has both one-sided problems for every shared matrix."""
    best = _colpack_best()
    assert {(p.stem, part) for p in FILES for part in ("column", "row")} <= set(best)


def _colpack_bicoloring() -> dict[str, int]:
    best: dict[str, int] = {}
    with open(SHARED_MATRICES / "colpack_reference.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["problem"] == "star_bicoloring_implicit":
                best[row["matrix"]] = min(best.get(row["matrix"], 1 << 62), int(row["colors"]))
    return best


@functools.cache
def _bidirectional(path: Path) -> sparsejac.ColoringResult:
    return sparsejac.color(path, "bidirectional", effort=SHARED_EFFORT)


@functools.cache
def _auto(path: Path) -> sparsejac.ColoringResult:
    return sparsejac.color(path, "auto", effort=SHARED_EFFORT)


@requires_shared
@pytest.mark.parametrize("path", _shared_params())
def test_bidirectional_no_worse_than_colpack(path):
    """Bidirectional best needs no more passes than ColPack's best star bicolouring."""
    reference = _colpack_bicoloring()[path.stem]
    r = _bidirectional(path)
    assert r.n_colors <= reference, f"{path.stem}: {r.n_colors} > ColPack {reference}"
    one_sided = {c.name: c.n_colors for c in r.candidates[:2]}
    assert r.n_colors <= min(one_sided.values())
    assert r.n_forward + r.n_reverse == r.n_colors


@requires_shared
@pytest.mark.parametrize("path", _shared_params())
def test_bidirectional_shared_round_trip(path):
    """On every shared matrix the bicolouring passes the checker and round-trips exactly."""
    r = _bidirectional(path)
    p = r.pattern
    values = np.random.default_rng(1).standard_normal(p.nnz) + 5.0
    check_result(r, J=sp.csr_array((values, p.indices, p.indptr), shape=p.shape))


@requires_shared
@pytest.mark.parametrize("path", _shared_params())
def test_auto_is_cheapest_on_shared(path):
    """auto picks the cheapest of its column, row and bidirectional colourings."""
    r = _auto(path)
    costs = [c.n_forward + DEFAULT_REVERSE_COST * c.n_reverse for c in r.candidates]
    assert [c.name.split(":")[0] for c in r.candidates] == ["column", "row", "bidirectional"]
    assert partition_cost(r) == min(costs)
    assert (r.n_forward, r.n_reverse) == min(
        ((c.n_forward, c.n_reverse) for c in r.candidates),
        key=lambda fr: (fr[0] + DEFAULT_REVERSE_COST * fr[1], sum(fr)),
    )


def _pinned_matrices() -> dict[str, object]:
    out: dict[str, object] = dict(small_matrices())
    out["laplacian_20x20"] = laplacian_2d(20)
    rng = np.random.default_rng(2026)
    out["random_60x80"] = sp.random_array((60, 80), density=0.06, rng=rng)
    return out


def _counts() -> list[dict[str, str]]:
    rows = []
    for name, a in _pinned_matrices().items():
        for partition in ("column", "row"):
            for order in sorted(ORDERS):
                r = sparsejac.color(a, partition, order=order, seed=0)
                rows.append(
                    {
                        "matrix": name,
                        "partition": partition,
                        "order": order,
                        "colors": str(r.n_colors),
                    }
                )
    return rows


def _bi_counts() -> list[dict[str, str]]:
    rows = []
    for name, a in _pinned_matrices().items():
        for order in sorted(BIDIRECTIONAL_ORDERS):
            r = sparsejac.color(a, "bidirectional", order=order, seed=0)
            rows.append(
                {
                    "matrix": name,
                    "order": order,
                    "forward": str(r.n_forward),
                    "reverse": str(r.n_reverse),
                }
            )
    return rows


def test_pinned_counts():
    """Every named order gives the pinned number of colours on the small reference set."""
    with open(PINNED, newline="") as fh:
        pinned = list(csv.DictReader(fh))
    assert _counts() == pinned


def test_pinned_bicoloring_counts():
    """Every bidirectional order gives the pinned forward and reverse passes."""
    with open(PINNED_BI, newline="") as fh:
        pinned = list(csv.DictReader(fh))
    assert _bi_counts() == pinned


if __name__ == "__main__":  # regenerate the pinned tables
    for path, fields, rows in (
        (PINNED, ["matrix", "partition", "order", "colors"], _counts()),
        (PINNED_BI, ["matrix", "order", "forward", "reverse"], _bi_counts()),
    ):
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
        print(f"wrote {path}")
