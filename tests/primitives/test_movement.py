"""Movement family (``sparsejac.primitives.movement``): every data-movement function is one
gather by positions; its pattern is a 0/1 selection, exact, on asymmetric shapes, negative
axes, size-1 and size-0 axes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import sparsejac
from tests.primitives.util import check_exact, rand

X34 = rand((3, 4), 11)
X234 = rand((2, 3, 4), 12)

MOVES_2D = [
    pytest.param(lambda x: x.reshape(4, 3), id="reshape"),
    pytest.param(lambda x: x.reshape(-1, 2), id="reshape_minus_one"),
    pytest.param(lambda x: np.reshape(x, (2, 6), order="F"), id="reshape_fortran"),
    pytest.param(lambda x: x.ravel(), id="ravel"),
    pytest.param(lambda x: np.ravel(x, order="F"), id="ravel_fortran"),
    pytest.param(lambda x: x.flatten(), id="flatten"),
    pytest.param(lambda x: x.T, id="T"),
    pytest.param(lambda x: np.transpose(x), id="transpose"),
    pytest.param(lambda x: np.swapaxes(x, 0, -1), id="swapaxes_negative"),
    pytest.param(lambda x: np.moveaxis(x, -1, 0), id="moveaxis_negative"),
    pytest.param(lambda x: np.squeeze(x[None, :, :1]), id="squeeze_all"),
    pytest.param(lambda x: np.squeeze(x[:1], axis=0), id="squeeze_axis"),
    pytest.param(lambda x: np.expand_dims(x, -1), id="expand_dims_negative"),
    pytest.param(lambda x: x[:, None, :], id="newaxis"),
    pytest.param(lambda x: np.broadcast_to(x[:1], (5, 4)), id="broadcast_to_size_one_axis"),
    pytest.param(lambda x: np.broadcast_to(x, (2, 3, 4)), id="broadcast_to_new_axis"),
    pytest.param(lambda x: np.roll(x, 1), id="roll_flat"),
    pytest.param(lambda x: np.roll(x, -1, axis=-1), id="roll_negative_axis"),
    pytest.param(lambda x: np.roll(x, (2, 1), axis=(0, 1)), id="roll_two_axes"),
    pytest.param(lambda x: np.flip(x), id="flip_all"),
    pytest.param(lambda x: np.flip(x, axis=-2), id="flip_negative_axis"),
    pytest.param(lambda x: np.fliplr(x), id="fliplr"),
    pytest.param(lambda x: np.flipud(x), id="flipud"),
    pytest.param(lambda x: np.rot90(x), id="rot90"),
    pytest.param(lambda x: np.tile(x, 2), id="tile"),
    pytest.param(lambda x: np.tile(x[0], (2, 1)), id="tile_new_axis"),
    pytest.param(lambda x: np.repeat(x, 2), id="repeat_flat"),
    pytest.param(lambda x: np.repeat(x, [2, 0, 1, 1], axis=-1), id="repeat_counts"),
    pytest.param(lambda x: np.concatenate([x, x[:1]], axis=0), id="concatenate_axis0"),
    pytest.param(lambda x: np.concatenate([x[:, :0], x, np.ones((3, 1))], axis=-1),
                 id="concatenate_empty_and_constant"),
    pytest.param(lambda x: np.concatenate([x, x], axis=None), id="concatenate_flat"),
    pytest.param(lambda x: np.stack([x[0], x[2]]), id="stack"),
    pytest.param(lambda x: np.stack([x, x**2], axis=-1), id="stack_negative_axis"),
    pytest.param(lambda x: np.hstack([x, x[:, :1]]), id="hstack"),
    pytest.param(lambda x: np.vstack([x, x[0]]), id="vstack"),
    pytest.param(lambda x: np.column_stack([x[0], x[1], np.zeros(4)]), id="column_stack"),
    pytest.param(lambda x: np.dstack([x, x]), id="dstack"),
    pytest.param(lambda x: np.pad(x, 1), id="pad_constant"),
    pytest.param(lambda x: np.pad(x, ((0, 2), (1, 0)), constant_values=3.0),
                 id="pad_constant_values"),
    pytest.param(lambda x: np.pad(x, (1, 2), mode="wrap"), id="pad_wrap"),
    pytest.param(lambda x: np.pad(x, 2, mode="edge"), id="pad_edge"),
    pytest.param(lambda x: np.pad(x, ((2, 1), (0, 3)), mode="reflect"), id="pad_reflect"),
    pytest.param(lambda x: np.pad(x, 1, mode="symmetric"), id="pad_symmetric"),
    pytest.param(lambda x: np.diagonal(x), id="diagonal"),
    pytest.param(lambda x: np.diag(x, 1), id="diag_offset"),
    pytest.param(lambda x: np.diag(x[1]), id="diag_of_vector"),
    pytest.param(lambda x: np.tril(x), id="tril"),
    pytest.param(lambda x: np.triu(x, -1), id="triu"),
    pytest.param(lambda x: np.take(x, [-1, 0, 0]), id="take_flat"),
    pytest.param(lambda x: np.take(x, [[1, 2]], axis=0), id="take_2d_indices"),
    pytest.param(lambda x: np.take(x, [5, -7], axis=1, mode="wrap"), id="take_wrap"),
    pytest.param(lambda x: np.take_along_axis(x, np.array([[2], [0], [1]]), axis=1),
                 id="take_along_axis"),
    pytest.param(lambda x: np.resize(x, (2, 7)), id="resize"),
    pytest.param(lambda x: np.delete(x, 1, axis=0), id="delete"),
    pytest.param(lambda x: np.insert(x, 2, 0.5, axis=1), id="insert_constant"),
    pytest.param(lambda x: np.append(x, x[:1], axis=0), id="append"),
    pytest.param(lambda x: np.compress([False, True, True], x, axis=0), id="compress"),
    pytest.param(lambda x: np.split(x, [1, 3], axis=1)[1], id="split_indices"),
    pytest.param(lambda x: np.array_split(x, 2)[1], id="array_split"),
    pytest.param(lambda x: np.atleast_3d(x[0]), id="atleast_3d"),
    pytest.param(lambda x: np.block([[x, x[:, :1]], [x[:1], x[:1, :1]]]), id="block"),
    pytest.param(lambda x: np.copy(x)[::-1], id="copy"),
    pytest.param(lambda x: np.matrix_transpose(x), id="matrix_transpose"),
    pytest.param(lambda x: np.unstack(x)[1], id="unstack"),
]


@pytest.mark.parametrize("f", MOVES_2D)
def test_movement_on_matrix_is_exact(f: Callable[[Any], Any]) -> None:
    """A data-movement call on a (3, 4) input selects rows of the identity, exactly."""
    pat = check_exact(f, X34)
    assert (pat.sum(axis=1) <= 1).all()  # each output reads at most one input element


MOVES_3D = [
    pytest.param(lambda x: np.transpose(x, (2, 0, 1)), id="transpose_axes"),
    pytest.param(lambda x: np.transpose(x, (-1, 0, -2)), id="transpose_negative_axes"),
    pytest.param(lambda x: np.moveaxis(x, [0, 1], [-1, -2]), id="moveaxis_many"),
    pytest.param(lambda x: np.rollaxis(x, -1, 1), id="rollaxis"),
    pytest.param(lambda x: x.mT, id="mT"),
    pytest.param(lambda x: np.swapaxes(x, 1, 2), id="swapaxes"),
    pytest.param(lambda x: np.diagonal(x, -1, 2, 1), id="diagonal_axes"),
    pytest.param(lambda x: np.flip(x, axis=(0, 2)), id="flip_axes"),
    pytest.param(lambda x: np.roll(x, 3, axis=-1), id="roll_last"),
    pytest.param(lambda x: np.dsplit(x, [1])[1], id="dsplit"),
    pytest.param(lambda x: np.concatenate([x, x[:, :1]], axis=-2), id="concatenate_middle"),
    pytest.param(lambda x: np.pad(x, ((0, 0), (1, 1), (2, 0)), mode="wrap"), id="pad_axes"),
    pytest.param(lambda x: x.reshape(6, 4)[::2], id="reshape_and_stride"),
]


@pytest.mark.parametrize("f", MOVES_3D)
def test_movement_on_rank3_is_exact(f: Callable[[Any], Any]) -> None:
    """Movement along chosen and negative axes of a (2, 3, 4) input is exact."""
    check_exact(f, X234)


def test_roll_is_a_shifted_identity() -> None:
    """np.roll(x, 1) reads x[i - 1] (hand-written expectation)."""
    check_exact(lambda x: np.roll(x, 1), rand((5,), 13), np.roll(np.eye(5, dtype=bool), 1,
                                                                 axis=0))


def test_constant_padding_rows_are_empty() -> None:
    """Fill values of np.pad carry no dependencies; the interior is the identity."""
    pat = check_exact(lambda x: np.pad(x, 2, constant_values=7.0), rand((3,), 14))
    np.testing.assert_array_equal(pat.sum(axis=1), [0, 0, 1, 1, 1, 0, 0])


def test_broadcast_to_repeats_rows() -> None:
    """np.broadcast_to copies one element into many outputs."""
    pat = check_exact(lambda x: np.broadcast_to(x, (4, 2)), rand((2,), 15))
    np.testing.assert_array_equal(pat, np.tile(np.eye(2, dtype=bool), (4, 1)))


def test_movement_of_size_zero_results() -> None:
    """Empty results have zero rows; empty operands contribute nothing."""
    assert sparsejac.jacobian_sparsity(lambda x: np.reshape(x[:0], (0, 3)), X34).shape == \
        (0, 12)
    assert sparsejac.jacobian_sparsity(lambda x: np.tile(x, 0), X34).shape == (0, 12)
    check_exact(lambda x: np.concatenate([x[:0].ravel(), x[:, :1].ravel()]), X34)


def test_movement_of_scalar_input() -> None:
    """A 0-d input can be reshaped, broadcast and stacked."""
    check_exact(lambda x: np.stack([x, x * 2, np.reshape(x, ())]), np.array(1.5))
    check_exact(lambda x: np.broadcast_to(x, (2, 3)), np.array(0.7))
    check_exact(lambda x: np.atleast_1d(x), np.array(0.7))


def test_multi_output_movement() -> None:
    """split, broadcast_arrays and meshgrid return several traced arrays."""
    def f(x: Any) -> Any:
        a, b = np.split(x, 2)
        c, d = np.broadcast_arrays(a[:, None], b[None, :])
        e, g = np.meshgrid(a, b[:1])
        return np.concatenate([(c * d).ravel(), (e + g).ravel()])

    check_exact(f, rand((6,), 16))


def test_mixed_constant_and_traced_operands() -> None:
    """Constant operands of a movement call become empty rows in the right places."""
    pat = check_exact(lambda x: np.stack([np.arange(3.0), x, np.ones(3)], axis=1),
                      rand((3,), 17))
    np.testing.assert_array_equal(pat.sum(axis=1), [0, 1, 0] * 3)


def test_traced_shift_is_refused_globally_but_read_locally() -> None:
    """A shift that depends on x is a value read: ConcretizationError globally, fine locally."""
    def f(x: Any) -> Any:
        return np.roll(x, (x[0] > 1.0).astype(int))

    x = np.array([1.5, 0.2, 0.3])
    with pytest.raises(sparsejac.ConcretizationError, match=r"numpy\.roll"):
        sparsejac.jacobian_sparsity(f, x)
    check_exact(f, x, np.roll(np.eye(3, dtype=bool), 1, axis=0), local=True)


@pytest.mark.parametrize("mode", ["mean", "linear_ramp"])
def test_unsupported_pad_mode_is_refused(mode: str) -> None:
    """np.pad modes that are not position maps are refused by name."""
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match=f"mode='{mode}'"):
        sparsejac.jacobian_sparsity(lambda x: np.pad(x, 1, mode=mode), X34)


_MEMORY_ORDER = {
    "T.ravel(K)": lambda u: u.reshape(3, 4).T.ravel(order="K") ** 2,
    "T.ravel(A)": lambda u: u.reshape(3, 4).T.ravel("A") ** 2,
    "T.flatten(K)": lambda u: u.reshape(3, 4).T.flatten("K") ** 2,
    "T.reshape(A)": lambda u: u.reshape(3, 4).T.reshape(-1, order="A") ** 2,
    "np.reshape(T, A)": lambda u: np.reshape(u.reshape(3, 4).T, -1, order="A") ** 2,
    "np.ravel(T, K)": lambda u: np.ravel(u.reshape(3, 4).T, order="K") ** 2,
    "F-reshape.ravel(A)": lambda u: u.reshape((3, 4), order="F").ravel(order="A") ** 2,
    "reversed.ravel(K)": lambda u: u.reshape(3, 4)[:, ::-1].ravel("K") * u,
    "strided.T.ravel(K)": lambda u: u.reshape(3, 4)[::2, 1:].T.ravel("K") ** 3,
    "flipped.T.ravel(A)": lambda u: u.reshape(3, 4)[::-1].T.ravel("A") ** 2,
    "empty_like(T).ravel(K)": lambda u: _filled(np.empty_like(u.reshape(3, 4).T),
                                                u.reshape(3, 4).T ** 2).ravel("K"),
    # calls that set the layout: the traced value must have numpy's
    "ascontiguousarray(T).ravel(K)": lambda u: np.ascontiguousarray(
        u.reshape(3, 4).T, like=u).ravel("K") * np.arange(12.0),
    "copy(F).ravel(K)": lambda u: u.reshape(3, 4).copy(order="F").ravel("K") ** 2,
    "T.copy().ravel(K)": lambda u: u.reshape(3, 4).T.copy().ravel("K") ** 2,
    "asfortranarray.ravel(K)": lambda u: np.asfortranarray(u.reshape(3, 4), like=u).ravel(
        "K") ** 2,
    "array(F).ravel(A)": lambda u: np.array(u.reshape(3, 4), order="F", like=u).ravel("A") * u,
    "asarray(T, C).reshape(A)": lambda u: np.asarray(u.reshape(3, 4).T, order="C", like=u
                                                     ).reshape(-1, order="A") ** 2,
}


def _filled(buf, value):
    buf[...] = value
    return buf


@pytest.mark.parametrize("name", list(_MEMORY_ORDER))
def test_memory_order_ravel_and_reshape_follow_the_layout(name):
    """``ravel``/``flatten``/``reshape`` with ``order="K"`` or ``"A"`` read a transpose, a
    reversed or strided view, or a Fortran-ordered buffer in memory order, as numpy does:
    the one-off Jacobian, the global pattern and the prepared Jacobian are those of numpy's
    ``f`` (complex step), not of a C-order read."""
    from scipy.optimize._numdiff import approx_derivative

    f = _MEMORY_ORDER[name]
    x = np.arange(1.0, 13.0)
    want = approx_derivative(f, x, method="cs")
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, rtol=1e-12)
    pattern = sparsejac.jacobian_sparsity(f, x).toarray()
    assert pattern[want != 0].all()
    y = x + 0.5
    np.testing.assert_allclose(sparsejac.SparseJacobian(f, x)(y).toarray(),
                               approx_derivative(f, y, method="cs"), rtol=1e-12)


def test_memory_layout_calls_at_a_point_of_equal_values():
    """At x = ones a permuted read has the same values: only the layout tells. A copy in
    Fortran order read with order="K" selected the identity (a silently wrong Jacobian and
    pattern that the value check could not catch there). Hand-derived oracle."""
    perm = np.arange(12).reshape(3, 4).ravel(order="F")
    want = np.zeros((12, 12))
    want[np.arange(12), perm] = 2.0
    for f in (_MEMORY_ORDER["copy(F).ravel(K)"],
              lambda u: u.reshape(3, 4).astype(float, order="F").ravel("K") ** 2):
        np.testing.assert_array_equal(sparsejac.jacobian(f, np.ones(12)).toarray(), want)
        np.testing.assert_array_equal(sparsejac.jacobian_sparsity(f, np.ones(12)).toarray(),
                                      want != 0)


@pytest.mark.parametrize("name", ["concatenate", "stack", "take", "compress", "quantile",
                                  "cumsum_view"])
def test_out_argument_fills_a_buffer_made_in_f(name):
    """``out=`` of a numpy function (not a ufunc) into a buffer made in f: numpy writes the
    result there and returns it. The rules ignored it (concatenate, stack: an unwritten
    buffer, a zero Jacobian and an empty pattern at some x, an internal IndexError at others;
    take, compress: numpy's casting TypeError; quantile: a misleading refusal). Oracle:
    central differences of numpy's f."""
    def f(u):
        if name == "concatenate":
            out = np.zeros(2 * u.size)
            np.concatenate([u, u ** 2], out=out)
        elif name == "stack":
            out = np.zeros((2, u.size))
            np.stack([u, u ** 2], out=out)
        elif name == "take":
            out = np.empty(3)
            r = np.take(u, [0, 2, 2], out=out)
            return out * r
        elif name == "compress":
            out = np.ones(2)
            np.compress([True, False, True, False], u, out=out)
        elif name == "quantile":
            out = np.zeros(2)
            np.quantile(u, [0.2, 0.8], out=out)
        else:
            out = np.zeros(6)
            np.cumsum(u, out=out[1:5])
        return out

    x = np.array([0.3, -1.2, 0.7, 2.0])
    want = np.array([(f(x + 1e-6 * e) - f(x - 1e-6 * e)).ravel() / 2e-6 for e in np.eye(4)]).T
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, atol=1e-8)
    pattern = sparsejac.jacobian_sparsity(f, x).toarray()
    assert pattern[np.abs(want) > 1e-8].all()
    np.testing.assert_allclose(sparsejac.SparseJacobian(f, x)(x).toarray(), want, atol=1e-8)


def test_out_argument_of_the_wrong_shape_or_a_plain_array():
    """numpy's shape check, and a plain array made outside f refused with the call named."""
    glob = np.zeros(6)
    with pytest.raises(ValueError, match=r"numpy\.concatenate: `out` has shape \(4,\)"):
        sparsejac.jacobian(lambda u: np.concatenate([u, u], out=np.zeros(4)), np.ones(3))
    with pytest.raises(sparsejac.TracedConversionError, match=r"numpy\.concatenate\(\.\.\., out"):
        sparsejac.jacobian(lambda u: np.concatenate([u, u], out=glob), np.ones(3))
