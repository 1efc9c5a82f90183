"""Indexing family (``sparsejac.primitives.indexing``): ``x[key]``, ``out[key] = v``,
``np.add.at``/``np.subtract.at``, ``np.bincount(weights=)``, ``np.copyto``,
``np.put_along_axis``; exact patterns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import sparsejac
from tests.primitives.util import check_exact, rand

X34 = rand((3, 4), 21)
X234 = rand((2, 3, 4), 22)

GETITEM = [
    pytest.param(lambda x: x[1], id="int"),
    pytest.param(lambda x: x[-1], id="negative_int"),
    pytest.param(lambda x: x[-1, -2], id="negative_pair"),
    pytest.param(lambda x: x[1:], id="slice"),
    pytest.param(lambda x: x[:, -3:-1], id="negative_slice"),
    pytest.param(lambda x: x[::2, 1::2], id="strided"),
    pytest.param(lambda x: x[::-1, ::-3], id="negative_stride"),
    pytest.param(lambda x: x[..., 1], id="ellipsis"),
    pytest.param(lambda x: x[None, :, None, 2], id="newaxis"),
    pytest.param(lambda x: x[[2, 0, 0]], id="fancy_rows_repeated"),
    pytest.param(lambda x: x[:, [-1, 1]], id="fancy_columns_negative"),
    pytest.param(lambda x: x[[0, 2, 2], [3, -4, 1]], id="pairs"),
    pytest.param(lambda x: x[np.array([[0, 1], [2, 2]]), np.array([[1], [3]])],
                 id="broadcast_index_arrays"),
    pytest.param(lambda x: x[[1, 2], 1:3], id="fancy_and_slice"),
    pytest.param(lambda x: x[np.array([True, False, True])], id="row_mask"),
    pytest.param(lambda x: x[:, np.array([False, True, True, False])], id="column_mask"),
    pytest.param(lambda x: x[np.arange(12).reshape(3, 4) % 3 == 0], id="full_mask"),
    pytest.param(lambda x: x[np.zeros((3, 4), dtype=bool)], id="empty_mask"),
    pytest.param(lambda x: x[1:1], id="empty_slice"),
    pytest.param(lambda x: x[[]], id="empty_fancy"),
]


@pytest.mark.parametrize("f", GETITEM)
def test_getitem_is_exact(f: Callable[[Any], Any]) -> None:
    """Basic, negative, strided, fancy and constant-mask indexing select exactly."""
    check_exact(f, X34)


def test_getitem_on_rank3() -> None:
    """Mixed fancy indices separated by a slice on a (2, 3, 4) input."""
    check_exact(lambda x: x[[1, 0], :, [3, 0]], X234)
    check_exact(lambda x: x[1, ..., ::-2], X234)


def test_getitem_pairs_hand_written() -> None:
    """``x[i, j]`` pairs read exactly x[i_k, j_k] (hand-written expectation)."""
    rows, cols = np.array([0, 2, 1]), np.array([3, 0, 0])
    expected = np.zeros((3, 12), dtype=bool)
    expected[np.arange(3), rows * 4 + cols] = True
    check_exact(lambda x: x[rows, cols], X34, expected)


def test_getitem_of_scalar_input() -> None:
    """A 0-d input indexed with ``()`` and ``...`` and ``None``."""
    check_exact(lambda x: np.stack([x[()], x[...], x[None][0]]), np.array(2.0))


def test_traced_index_is_refused_globally_and_read_locally() -> None:
    """Traced index arrays and masks are value reads: refused globally, read locally."""
    x = np.array([0.3, 1.7, 0.9, 1.2])
    for f in (lambda t: t[t > 1.0], lambda t: t[(t * 2).astype(int) % 4]):
        with pytest.raises(sparsejac.ConcretizationError, match=r"x\[\.\.\.\]"):
            sparsejac.jacobian_sparsity(f, x)
        check_exact(f, x, local=True)


# ---------------------------------------------------------------------------------------------
# assignment into arrays created from x
# ---------------------------------------------------------------------------------------------


def _assign(make: Callable[[Any], Any], key: Any, value: Callable[[Any], Any]
            ) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        out = make(x)
        out[key] = value(x)
        return out

    return f


SETITEM = [
    pytest.param(_assign(np.zeros_like, (slice(1, None),), lambda x: x[:-1] ** 2),
                 id="zeros_like_rows"),
    pytest.param(_assign(np.empty_like, ..., lambda x: x[::-1]), id="empty_like_all"),
    pytest.param(_assign(lambda x: np.zeros((2, 4), like=x), 1, lambda x: x[0] * x[2]),
                 id="zeros_like_x_row"),
    pytest.param(_assign(lambda x: x * 1.0, (slice(None), 0), lambda x: x[0, 0]),
                 id="broadcast_scalar_into_column"),
    pytest.param(_assign(lambda x: x * 1.0, ([0, 2, 0], [1, 1, 1]), lambda x: x[1, :3]),
                 id="fancy_duplicates_last_wins"),
    pytest.param(_assign(lambda x: x + 0.0, np.arange(12).reshape(3, 4) > 5, lambda x: 0.0),
                 id="mask_constant"),
    pytest.param(_assign(np.zeros_like, np.eye(3, 4, dtype=bool), lambda x: np.sin(x[0, :3])),
                 id="mask_traced_values"),
    pytest.param(_assign(lambda x: np.ones(5, like=x), slice(None, None, 2),
                         lambda x: x[:, 0]), id="strided_into_constant"),
]


@pytest.mark.parametrize("f", SETITEM)
def test_setitem_is_exact(f: Callable[[Any], Any]) -> None:
    """``out[key] = value`` follows numpy's semantics: overwritten elements forget their deps."""
    check_exact(f, X34)


def test_burgers_idiom_hand_written() -> None:
    """``out = zeros_like(u); out[1:-1] = u[2:] - 2 u[1:-1] + u[:-2]`` is tridiagonal inside."""
    def f(u: Any) -> Any:
        out = np.zeros_like(u)
        out[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
        return out

    n = 6
    expected = np.eye(n, dtype=bool) | np.eye(n, k=1, dtype=bool) | np.eye(n, k=-1, dtype=bool)
    expected[0] = expected[-1] = False
    check_exact(f, rand((n,), 23), expected)


def test_sequential_assignments_overwrite() -> None:
    """A later store replaces an earlier one; untouched elements keep their dependencies."""
    def f(x: Any) -> Any:
        y = x * 2.0
        y[0] = x[1]
        y[0] = x[2] ** 2
        y[1:] += x[0]
        return y

    check_exact(f, rand((3,), 24), [[0, 0, 1], [1, 1, 0], [1, 0, 1]])


def test_fill_method() -> None:
    """``out.fill(traced_scalar)`` broadcasts one element everywhere."""
    def f(x: Any) -> Any:
        out = np.empty_like(x)
        out.fill(x[1])
        return out

    check_exact(f, rand((3,), 25), [[0, 1, 0]] * 3)


# ---------------------------------------------------------------------------------------------
# scatter-add
# ---------------------------------------------------------------------------------------------


def test_add_at_accumulates_duplicates() -> None:
    """np.add.at with repeated targets sums every source (hand-written)."""
    def f(x: Any) -> Any:
        out = np.zeros(4, like=x)
        np.add.at(out, [0, 2, 2, 3], x)
        return out

    check_exact(f, rand((4,), 26), [[1, 0, 0, 0], [0, 0, 0, 0], [0, 1, 1, 0], [0, 0, 0, 1]])


def test_add_at_on_2d_with_tuple_index_and_scalar_value() -> None:
    """Tuple indices into a 2-D target; a traced scalar added at several places."""
    def f(x: Any) -> Any:
        out = x[:6].reshape(2, 3) * 1.0
        np.add.at(out, ([0, 1, 1], [2, 0, 0]), x[6])
        return out

    check_exact(f, rand((7,), 27))


def test_subtract_at_rows() -> None:
    """np.subtract.at with a slice-like row index on a 2-D target."""
    def f(x: Any) -> Any:
        out = np.zeros((2, 4), like=x)
        np.subtract.at(out, [1, 1, 0], x ** 2)
        return out

    check_exact(f, X34)


@pytest.mark.parametrize("minlength", [0, 8])
def test_bincount_with_traced_weights(minlength: int) -> None:
    """np.bincount(bins, weights=traced) sums the weights per bin (constant bins)."""
    bins = np.array([0, 3, 3, 1, 0, 5])

    def f(x: Any) -> Any:
        return np.bincount(bins, weights=x**2, minlength=minlength)

    pat = check_exact(f, rand((6,), 28))
    assert pat.shape == (max(minlength, 6), 6)


def test_bincount_without_weights_is_constant() -> None:
    """Counting constant bins gives a constant (empty pattern)."""
    pat = sparsejac.jacobian_sparsity(lambda x: np.bincount([0, 1, 1]) * x[0], np.ones(2))
    np.testing.assert_array_equal(pat.toarray(), [[1, 0], [1, 0]])


def test_copyto_with_constant_where() -> None:
    """np.copyto(dst, src, where=mask) keeps dst where the mask is False."""
    def f(x: Any) -> Any:
        dst = x * 1.0
        np.copyto(dst, x[::-1] ** 2, where=np.array([True, False, False, True]))
        return dst

    check_exact(f, rand((4,), 29), [[0, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0]])


def test_put_along_axis() -> None:
    """np.put_along_axis stores traced values at constant positions per row."""
    def f(x: Any) -> Any:
        out = np.zeros_like(x)
        np.put_along_axis(out, np.array([[0, 3], [1, 1], [2, 0]]), x[:, :2], axis=1)
        return out

    check_exact(f, X34)


PLAIN = np.zeros(3)  # made outside f: a plain array


def test_scatter_into_plain_array_is_refused() -> None:
    """np.add.at into a plain numpy array made outside f cannot receive traced values."""
    def f(x: Any) -> Any:
        np.add.at(PLAIN, [0, 1], x[:2])
        return PLAIN

    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match=r"numpy\.add\.at"):
        sparsejac.jacobian_sparsity(f, X34)
