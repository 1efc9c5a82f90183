"""The value steps of the prepared engine: one compiled contribution path against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from sparsejac.ad.chain import Contribution, ValueStep, apply_contributions
from sparsejac.numeric import mul0


def _reference(contribs, values, size):
    """``acc[target] += r[r_idx] * j[j_idx] * scale`` written with numpy and mul0."""
    acc = np.zeros(size)
    for c in contribs:
        r = c.r_const if c.r_slot is None else np.ravel(values[c.r_slot])
        j = c.j_const if c.j_slot is None else np.ravel(values[c.j_slot])
        n = c.target.size if c.target.size else size
        r = np.broadcast_to(r if r.size == 1 or not c.r_idx.size else r[c.r_idx], (n,))
        j = np.broadcast_to(j if j.size == 1 or not c.j_idx.size else j[c.j_idx], (n,))
        term = mul0(r, j) * c.scale
        if c.target.size:
            np.add.at(acc, c.target, term)
        else:
            acc += term
    return acc


class _Node:
    class prim:
        name = "test"


def _idx(a):
    return np.asarray(a, dtype=np.int32)


NONE = _idx([])


@pytest.mark.parametrize("size", [1, 5, 3000], ids=["one", "small", "large"])
def test_contributions_match_numpy(size, rng):
    """Gathers, scalars, duplicate targets and constant factors agree with the numpy sum."""
    r_vals = rng.normal(size=2 * size)
    j_vals = rng.normal(size=3 * size)
    values = [r_vals, j_vals, np.array([2.5])]
    target = _idx(rng.integers(0, size, 2 * size))       # duplicates on purpose
    contribs = [
        Contribution(None, 0, _idx(rng.permutation(2 * size)[:size]), None, 1,
                     _idx(rng.integers(0, 3 * size, size)), NONE),          # assign, in order
        Contribution(np.array([-1.5]), None, NONE, None, 1,
                     _idx(rng.integers(0, 3 * size, 2 * size)), target, 0.5),
        Contribution(None, 2, _idx(np.zeros(size)), rng.normal(size=size), None, NONE, NONE),
    ]
    step = ValueStep(_Node(), [], 0, size, contribs)  # type: ignore[arg-type]
    got = apply_contributions(step, values, np.full(size, np.nan))
    np.testing.assert_allclose(got, _reference(contribs, values, size), rtol=1e-13, atol=1e-13)


def test_zero_times_nonfinite_is_zero():
    """A zero local derivative contributes 0 even against inf or nan (the mul0 convention)."""
    values = [np.array([0.0, 2.0, 0.0]), np.array([np.inf, 3.0, np.nan])]
    c = Contribution(None, 0, NONE, None, 1, NONE, NONE)
    step = ValueStep(_Node(), [], 0, 3, [c])  # type: ignore[arg-type]
    np.testing.assert_array_equal(apply_contributions(step, values, np.empty(3)), [0, 6, 0])


def test_wrong_sizes_raise():
    """Values of the wrong size are a rule bug and raise instead of reading past an array."""
    values = [np.ones(2), np.ones(5)]
    c = Contribution(None, 0, NONE, None, 1, NONE, NONE)
    step = ValueStep(_Node(), [], 0, 5, [c])  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="linearize rule of 'test'"):
        apply_contributions(step, values, np.empty(5))


def test_keys_under_a_codec_of_more_sources_and_the_row_pointer(rng):
    """Entries built from keys under a codec of one source, read under codecs of more
    sources (a wider source field, as a preparation adds sources): the keys those codecs
    encode, without decoding; the row pointer from the keys alone. Oracle: encode by hand."""
    from sparsejac.ad.entries import Entries, KeyCodec

    size, ncols = 50, 300
    rows = np.sort(rng.integers(0, size, 400))
    cols = rng.integers(0, ncols, 400)
    one = KeyCodec(size, 1, ncols)
    keys = np.unique(one.encode(rows, np.zeros_like(rows), cols))
    e = Entries.from_keys(size, keys, one, np.zeros(keys.size))
    r, s, c = one.decode(keys)
    for n_sources in (1, 2, 5, 17):
        wide = KeyCodec(size, n_sources, ncols)
        np.testing.assert_array_equal(e.keys(wide), wide.encode(r, s, c))
    want = np.searchsorted(r, np.arange(size + 1))
    np.testing.assert_array_equal(e.ptr, want)
