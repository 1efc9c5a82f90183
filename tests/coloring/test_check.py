"""The slow checkers themselves: they accept valid colourings and pinpoint invalid ones."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import sparsejac
from sparsejac.coloring import (
    check_bicoloring,
    check_groups,
    check_result,
    check_structurally_orthogonal,
)

A = np.array([[1, 0, 1, 0], [0, 1, 1, 0], [1, 0, 0, 1]])


def test_valid_colourings_pass():
    """Structurally orthogonal groups pass for both partitions."""
    check_structurally_orthogonal(A, [0, 0, 1, 1], "column")
    check_structurally_orthogonal(A, [0, 1, 2], "row")


def test_column_conflict_message():
    """A column conflict names the row, both columns and the group."""
    with pytest.raises(
        AssertionError, match=r"^row 0 has nonzeros in columns 0 and 2, both in group 1$"
    ):
        check_structurally_orthogonal(A, [1, 0, 1, 0], "column")


def test_row_conflict_message():
    """A row conflict names the column, both rows and the group."""
    with pytest.raises(
        AssertionError, match=r"^column 2 has nonzeros in rows 0 and 1, both in group 0$"
    ):
        check_structurally_orthogonal(A, [0, 0, 1], "row")


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        (
            [0, 1, 2],
            r"`groups` must be an integer array of shape \(4,\); got int64 array of shape \(3,\)",
        ),
        ([0.0, 1.0, 0.0, 1.0], r"must be an integer array of shape \(4,\); got float64"),
        ([0, -1, 0, 1], r"`groups` must be >= 0; got -1"),
        ([0, 2, 0, 2], r"`groups` must use every group 0..2; group 1 is empty"),
    ],
)
def test_malformed_groups(groups, message):
    """Malformed groups raise ValueError saying what is wrong."""
    with pytest.raises(ValueError, match=message):
        check_structurally_orthogonal(A, groups, "column")


def test_check_groups_counts():
    """check_groups returns the number of groups."""
    assert check_groups(np.array([2, 0, 1, 0]), 4) == 3
    assert check_groups(np.array([], dtype=int), 0) == 0


def test_check_result_catches_tampering():
    """check_result rejects a result whose groups were tampered with."""
    r = sparsejac.color(A, order="natural")
    check_result(r)
    bad = dataclasses.replace(r, column_groups=np.zeros(4, dtype=np.int64), n_colors=1)
    with pytest.raises(AssertionError, match="row 0 has nonzeros in columns 0 and 2"):
        check_result(bad)
    wrong_count = dataclasses.replace(r, n_colors=r.n_colors + 1)
    with pytest.raises(AssertionError, match="n_colors is 3 but the groups use 2"):
        check_result(wrong_count)


def test_check_result_with_values(rng):
    """check_result round-trips given values, including ones at structural zeros of J."""
    J = A * rng.standard_normal(A.shape)
    J[0, 0] = 0.0  # a structural nonzero that happens to be zero
    check_result(sparsejac.color(A, "row"), J=J)


ARROW = np.array([[1, 1, 1], [1, 1, 0], [1, 0, 1]])


def test_check_bicoloring_accepts_valid():
    """Forward colours on the diagonal columns and one reverse colour for the dense row."""
    check_bicoloring(ARROW, [0, 1, 1], [0, -1, -1])
    check_bicoloring(ARROW, [0, 1, 2], [-1, -1, -1])  # a column colouring is a bicolouring


@pytest.mark.parametrize(
    ("cg", "rg", "message"),
    [
        (
            [-1, -1, -1],
            [-1, -1, -1],
            r"^nonzero \(0, 0\) is in neither B nor C alone: column 0 is neutral; row 0 is "
            r"neutral$",
        ),
        (
            [0, 1, 1],
            [-1, -1, -1],
            r"^nonzero \(0, 1\) is in neither B nor C alone: column 1 shares row 0 with column "
            r"2, both in forward colour 1; row 0 is neutral$",
        ),
        (
            [-1, -1, -1],
            [0, 0, 1],
            r"^nonzero \(0, 0\) is in neither B nor C alone: column 0 is neutral; row 0 shares "
            r"column 0 with row 1, both in reverse colour 0$",
        ),
    ],
)
def test_check_bicoloring_messages(cg, rg, message):
    """An unrecoverable nonzero is named with, per side, why it cannot be read there."""
    with pytest.raises(AssertionError, match=message):
        check_bicoloring(ARROW, cg, rg)


@pytest.mark.parametrize(
    ("cg", "rg", "message"),
    [
        ([0, 1], [0, -1, -1], r"`column_groups` must be an integer array of shape \(3,\)"),
        ([0, -2, 1], [0, -1, -1], r"`column_groups` must be >= -1; got -2"),
        ([0, 2, 2], [0, -1, -1], r"`column_groups` must use every group 0..2; group 1 is empty"),
        ([0, 1, 1], [1, -1, -1], r"`row_groups` must use every group 0..1; group 0 is empty"),
    ],
)
def test_check_bicoloring_malformed(cg, rg, message):
    """Malformed groups raise ValueError naming the argument."""
    with pytest.raises(ValueError, match=message):
        check_bicoloring(ARROW, cg, rg)


def test_check_result_bidirectional():
    """check_result verifies a bidirectional result and catches wrong counts and seeds."""
    a = np.eye(6)
    a[0, :] = a[:, 0] = 1
    r = sparsejac.color(a, "bidirectional")
    assert (r.n_forward, r.n_reverse) == (2, 1)
    check_result(r)
    bad = dataclasses.replace(r)
    object.__setattr__(bad, "_sides", (3, 1))
    with pytest.raises(AssertionError, match=r"n_colors is 3 \(n_forward 3, n_reverse 1\)"):
        check_result(bad)
