"""View semantics (``sparsejac.primitives.views``): writes through numpy views reach their base
and views see writes to their base, exactly as numpy does (the traced value is compared with
numpy's on every case)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import sparsejac
from sparsejac.ad import jvp, vjp
from tests.primitives.util import check_exact, rand
from tests.scenarios import fd_jacobian


def _ode_slices(y: Any) -> Any:
    dydt = np.empty_like(y)
    u, v = y[:3], y[3:]
    du, dv = dydt[:3], dydt[3:]
    du[:] = u * v
    dv[:] = u - v**2
    return dydt


def _ode_split(y: Any) -> Any:
    dydt = np.zeros_like(y)
    du, dv = np.split(dydt, 2)
    u, v = np.split(y, 2)
    du += u * v[::-1]
    dv[...] = np.sin(u)
    return dydt


def _reshape_view(x: Any) -> Any:
    out = np.zeros_like(x)
    grid = out.reshape(2, 3)
    g = x.reshape(2, 3)
    grid[1:, 1:-1] = g[:-1, 1:-1] * g[1:, 2:] - 2 * g[1:, :-2]
    return out


def _view_of_view(x: Any) -> Any:
    out = np.zeros_like(x)
    a = out[1:]
    b = a[::2]
    b[:] = x[:b.shape[0]] ** 2
    return out


def _base_then_old_view(x: Any) -> Any:
    out = np.zeros_like(x)
    v = out[:2]
    out[:] = x[::-1]
    return v * 1.0


def _inplace_on_view_of_input(x: Any) -> Any:
    u = x[:3]
    u *= 2.0
    return x * 1.0


def _transposed_view(x: Any) -> Any:
    out = np.zeros((3, 4), like=x)
    out.T[0] = x[:3]
    return out


def _row_view_of_2d(x: Any) -> Any:
    out = np.zeros((2, 3), like=x)
    row = out[1]
    row += x[:3]
    return out


def _overlapping_views(x: Any) -> Any:
    out = np.zeros_like(x)
    a = out[:3]
    b = out[2:5]
    a[:] = x[:3] ** 2
    return b * 1.0


def _ufunc_out_view(x: Any) -> Any:
    out = np.zeros_like(x)
    np.multiply(x[:3], 2.0, out=out[1:4])
    return out


def _flipped_view(x: Any) -> Any:
    out = np.zeros_like(x)
    np.flip(out)[:2] = x[:2]
    return out


def _scalar_is_a_copy(x: Any) -> Any:
    out = np.zeros_like(x)
    a = out[0]
    a += x[0]  # a numpy scalar: out is not changed
    return out + a


def _fancy_is_a_copy(x: Any) -> Any:
    out = np.zeros_like(x)
    c = out[[0, 1]]
    c[:] = x[:2]  # a copy: out is not changed
    return np.concatenate([out, c])


def _flatten_copy_ravel_view(x: Any) -> Any:
    m = x.reshape(2, 3) * 1.0
    m.flatten()[0] = 0.0  # copy
    m.ravel()[1] = 0.0  # view
    return m


def _views_of_several_operands(x: Any) -> Any:
    u = x[:3] * 1.0
    w = x[3:] * 2.0
    a, b = np.atleast_1d(u, w)  # each result is its operand itself (a view)
    b[0] = 3.0  # reaches w
    a[1] = a[2] * w[1]  # reaches u
    return np.concatenate([u + w, a * b])


def _interior_update_2d(x: Any) -> Any:
    u = x.reshape(2, 3) * 1.0
    u[:, 1:] += u[:, :-1] * x[:2]  # the PDE idiom: y[inner] += stencil(y)
    u[1:, :] -= u[:-1, :] ** 2
    return u


def _nested_slice_augmented(x: Any) -> Any:
    y = np.sin(x)
    y[1:][::2] += x[::2][:3]  # Python writes back y[1:][::2], then y[1:]
    return y


def _stale_looking_view_written_back(x: Any) -> Any:
    y = x * 2.0
    v = y[1:4]
    w = y[:2]
    w[:] = x[4:] ** 2  # changes v[0] through y
    y[1:4] = v  # v was re-read: a no-op, as in numpy
    return y * v.sum()


def _einsum_diagonal_view(x: Any) -> Any:
    a = np.zeros((3, 3))
    d = np.einsum("ii->i", a)  # numpy returns a writeable view of a's diagonal
    d[:] = x[:3] * x[3:]
    a[0] += x[3:] ** 2  # and the view sees writes to a
    return np.concatenate([a.ravel(), d * 2.0])


def _einsum_transpose_view(x: Any) -> Any:
    u = x.reshape(2, 3) * 1.0
    t = np.einsum("ij->ji", u)
    t[1] = np.exp(x[:2])  # writes u[:, 1]
    return u.ravel()


VIEWS = [
    pytest.param(_ode_slices, id="ode_slices_of_empty_like"),
    pytest.param(_ode_split, id="ode_np_split"),
    pytest.param(_reshape_view, id="reshape_view"),
    pytest.param(_view_of_view, id="view_of_view"),
    pytest.param(_base_then_old_view, id="write_base_read_view"),
    pytest.param(_inplace_on_view_of_input, id="inplace_on_view_of_x"),
    pytest.param(_transposed_view, id="transposed_view"),
    pytest.param(_row_view_of_2d, id="row_view"),
    pytest.param(_overlapping_views, id="overlapping_views"),
    pytest.param(_ufunc_out_view, id="ufunc_out_view"),
    pytest.param(_flipped_view, id="flipped_view"),
    pytest.param(_scalar_is_a_copy, id="scalar_is_a_copy"),
    pytest.param(_fancy_is_a_copy, id="fancy_is_a_copy"),
    pytest.param(_flatten_copy_ravel_view, id="flatten_copy_ravel_view"),
    pytest.param(_views_of_several_operands, id="views_of_several_operands"),
    pytest.param(_interior_update_2d, id="interior_update_2d"),
    pytest.param(_nested_slice_augmented, id="nested_slice_augmented"),
    pytest.param(_stale_looking_view_written_back, id="view_written_back_after_base_changed"),
    pytest.param(_einsum_diagonal_view, id="einsum_diagonal_view"),
    pytest.param(_einsum_transpose_view, id="einsum_transpose_view"),
]


@pytest.mark.parametrize("f", VIEWS)
def test_view_semantics_match_numpy(f: Callable[[Any], Any]) -> None:
    """The traced value equals numpy's and the pattern is the exact numerical one."""
    check_exact(f, rand((6,), 91))


@pytest.mark.parametrize("f", VIEWS)
def test_derivatives_through_views(f: Callable[[Any], Any], rng: np.random.Generator) -> None:
    """Forward and reverse mode see the writes made through views."""
    x = rand((6,), 92)
    jac = fd_jacobian(f, x)
    np.testing.assert_allclose(jvp(f, x, np.eye(6)), jac, atol=1e-7)
    np.testing.assert_allclose(vjp(f, x, np.eye(jac.shape[0])), jac, atol=1e-7)


def test_ode_idiom_pattern_hand_written() -> None:
    """The classic ODE right-hand side written through views has the expected pattern."""
    expected = np.array([[1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 1, 0], [0, 0, 1, 0, 0, 1],
                         [1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 1, 0], [0, 0, 1, 0, 0, 1]],
                        dtype=bool)
    check_exact(_ode_slices, rand((6,), 93), expected)


@pytest.mark.parametrize("make", [
    pytest.param(lambda x: np.broadcast_to(x[:3], (2, 3)), id="broadcast_to"),
    pytest.param(lambda x: np.diagonal(x.reshape(2, 3)), id="diagonal"),
])
def test_read_only_views_refuse_writes(make: Callable[[Any], Any]) -> None:
    """Writing into a read-only view raises numpy's ValueError, traced or not."""
    def f(x: Any) -> Any:
        v = make(x)
        v[0] = 1.0
        return x

    with pytest.raises(ValueError, match="read-only"):
        f(np.ones(6))
    with pytest.raises(ValueError, match="read-only"):
        sparsejac.jacobian_sparsity(f, np.ones(6))


def test_augmented_assignment_on_a_slice_records_read_add_write() -> None:
    """``y[k] += d`` records the read of ``y[k]``, the add and one write-back: Python's closing
    ``y[k] = <the view>`` is a no-op (a view always equals its base where it sits) and the
    written view is not read back. Exact against the hand-derived Jacobian."""
    from sparsejac.tracing import trace

    def f(x: Any) -> Any:
        r = x ** 3 - 2 * x
        r[1:] += x[:-1]
        r[:-1] += x[1:]
        return r + 0.1 * x[::-1]

    x = rand((10,), 96)
    names = [nd.prim.name for nd in trace(f, x).nodes]
    # 3 (r) + 2 x (x[a:b], r[c:d], add, write-back) + 3 (x[::-1], multiply, add)
    assert len(names) == 14, names
    want = np.diag(3 * x ** 2 - 2) + np.eye(10, k=-1) + np.eye(10, k=1) + 0.1 * np.eye(10)[::-1]
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, rtol=1e-15)


@pytest.mark.parametrize("write", [
    pytest.param(lambda r: r.__setitem__(slice(1, None), r[:-1]), id="shifted_view"),
    pytest.param(lambda r: r.__setitem__(slice(None, None, 2), r[::2] * 2), id="not_a_view"),
    pytest.param(lambda r: r.__setitem__(slice(1, 4), r.copy()[1:4] + 1), id="view_of_a_copy"),
    pytest.param(lambda r: r.__setitem__(Ellipsis, r[...]), id="whole_view_back"),
    pytest.param(lambda r: r.reshape(2, 3).__setitem__((slice(None), 0), r.reshape(2, 3)[:, 1]),
                 id="view_of_a_view"),
])
def test_writing_a_view_elsewhere_is_a_real_write(write: Callable[[Any], Any]) -> None:
    """Only a view written back exactly where it sits is skipped: a shifted view, a computed
    value, a view of a copy and a view through another view are written as numpy writes them
    (values and derivatives compared with numpy's and finite differences)."""
    def f(x: Any) -> Any:
        r = np.sin(x)
        write(r)
        return r * x

    check_exact(f, rand((6,), 97))
    x = rand((6,), 98)
    np.testing.assert_allclose(jvp(f, x, np.eye(6)), fd_jacobian(f, x), atol=1e-7)


def test_broadcast_arrays_views_take_no_writes() -> None:
    """``np.broadcast_arrays`` returns views that numpy deprecates writing to (a FutureWarning,
    read-only in future numpy): traced, tracing them warns nothing, reading them is exact,
    and a write through one is refused with a message saying what to do (a write that would
    not reach the operand would make the Jacobian silently wrong)."""
    def read(x: Any) -> Any:
        a, b = np.broadcast_arrays(x[:3], x.reshape(2, 3))
        return (a * b).ravel()

    def write(x: Any) -> Any:
        a, b = np.broadcast_arrays(x[:3], x.reshape(2, 3))
        b[0, 0] = 1.0
        return (a * b).ravel()

    x = rand((6,), 95)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jac = sparsejac.jacobian(read, x).toarray()
    expected = np.zeros((6, 6))
    for i in range(2):
        for j in range(3):
            expected[3 * i + j, j] += x[3 * i + j]
            expected[3 * i + j, 3 * i + j] += x[j]
    np.testing.assert_allclose(jac, expected, rtol=1e-15)
    with pytest.raises(ValueError, match=r"read-only.*np.broadcast_arrays.*copy"):
        sparsejac.jacobian(write, x)


def test_callers_x_is_not_changed_through_views() -> None:
    """Writing through a view of the traced x never reaches the caller's array."""
    x = rand((6,), 94)
    before = x.copy()
    sparsejac.jacobian_sparsity(_inplace_on_view_of_input, x)
    np.testing.assert_array_equal(x, before)
