"""Elementwise family (``sparsejac.primitives.elementwise``): operators, ufuncs, constants,
broadcasting, ``where``/``clip``/``astype``/``round``, with exact patterns."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.special as sc

import sparsejac
from sparsejac.primitives.elementwise import (
    BINARY_ROWS,
    TERNARY_ROWS,
    UNARY_ROWS,
    ZERO_DERIVATIVE,
)
from tests.primitives.util import check_exact, rand

X34 = rand((3, 4), 1)

# ---------------------------------------------------------------------------------------------
# operators, reflected operators, unary operators
# ---------------------------------------------------------------------------------------------

OPERATORS = [
    pytest.param(lambda x: x + 2.0, id="add"),
    pytest.param(lambda x: 2.0 + x, id="radd"),
    pytest.param(lambda x: x - 1.0, id="sub"),
    pytest.param(lambda x: 1.0 - x, id="rsub"),
    pytest.param(lambda x: x * 3.0, id="mul"),
    pytest.param(lambda x: 3.0 * x, id="rmul"),
    pytest.param(lambda x: x / 3.0, id="truediv"),
    pytest.param(lambda x: 3.0 / x, id="rtruediv"),
    pytest.param(lambda x: x**2, id="pow_2"),
    pytest.param(lambda x: x**0.5, id="pow_half"),
    pytest.param(lambda x: 2**x, id="rpow_2"),
    pytest.param(lambda x: x**x, id="pow_self"),
    pytest.param(lambda x: x % 0.7, id="mod"),
    pytest.param(lambda x: 5.0 % x, id="rmod"),
    pytest.param(lambda x: -x, id="neg"),
    pytest.param(lambda x: +x, id="pos"),
    pytest.param(lambda x: abs(x - 1.0), id="abs"),
    pytest.param(lambda x: x + x[::-1], id="add_two_traced"),
    pytest.param(lambda x: x[0] * x, id="scalar_times_array"),
    pytest.param(lambda x: divmod(x, 0.7)[1], id="divmod"),
]


@pytest.mark.parametrize("f", OPERATORS)
def test_operator_pattern_is_exact(f: Callable[[Any], Any]) -> None:
    """Python operators (and reflected ones) give the exact elementwise pattern."""
    check_exact(f, X34)


ZERO_OPERATORS = [
    pytest.param(lambda x: x // 0.3, id="floordiv"),
    pytest.param(lambda x: 3.0 // x, id="rfloordiv"),
    pytest.param(lambda x: x < 1.0, id="lt"),
    pytest.param(lambda x: x <= x[0], id="le"),
    pytest.param(lambda x: x > 1.0, id="gt"),
    pytest.param(lambda x: 1.0 >= x, id="ge_reflected"),  # noqa: SIM300 - reflected on purpose
    pytest.param(lambda x: x == x[::-1], id="eq"),
    pytest.param(lambda x: x != 1.0, id="ne"),
    pytest.param(lambda x: (x > 1.0) & (x < 1.2), id="and"),
    pytest.param(lambda x: (x > 1.0) | (x < 0.7), id="or"),
    pytest.param(lambda x: (x > 1.0) ^ (x < 1.2), id="xor"),
    pytest.param(lambda x: ~(x > 1.0), id="invert"),
]


@pytest.mark.parametrize("f", ZERO_OPERATORS)
def test_zero_derivative_operator_gives_empty_pattern(f: Callable[[Any], Any]) -> None:
    """Comparisons, floor division and logical operators carry no dependencies."""
    pat = sparsejac.jacobian_sparsity(lambda x: f(x) * 1.0, X34)
    assert pat.shape == (12, 12)
    assert pat.nnz == 0


def test_in_place_operators_rebind() -> None:
    """``y += ...``, ``y *= ...``, ``y **= ...`` update the traced array as numpy would."""
    def f(x: Any) -> Any:
        y = x * 1.0
        y += x[::-1]
        y *= 2.0
        y **= 2
        y -= x[0]
        y /= x[-1]
        return y

    check_exact(f, rand((5,), 2))


# ---------------------------------------------------------------------------------------------
# every ufunc row: size-0 and size-1 axes, scalars, broadcasting
# ---------------------------------------------------------------------------------------------

SHAPES = [
    pytest.param((), id="scalar"),
    pytest.param((1,), id="1"),
    pytest.param((3, 1), id="3x1"),
    pytest.param((2, 3, 4), id="2x3x4"),
]


def _in(domain: tuple[float, float], shape: tuple[int, ...], seed: int) -> np.ndarray:
    lo, hi = domain
    return rand(shape, seed, lo, hi) if lo >= 0 else rand(shape, seed, 0.3, 0.9)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("row", [pytest.param(r, id=r.fn.__name__) for r in UNARY_ROWS])
def test_unary_row_is_diagonal(row: Any, shape: tuple[int, ...]) -> None:
    """A differentiable unary ufunc has the identity pattern on any shape."""
    x = _in(row.domain, shape, 3)
    check_exact(row.fn, x, np.eye(x.size, dtype=bool))


@pytest.mark.parametrize("row", [pytest.param(r, id=r.fn.__name__) for r in UNARY_ROWS[:3]])
def test_unary_row_on_size_zero_slice(row: Any) -> None:
    """On an empty slice the pattern is empty with zero rows."""
    pat = sparsejac.jacobian_sparsity(lambda x: row.fn(x[:, :0]), X34)
    assert pat.shape == (0, 12)


def _outer_pattern(m: int, n: int) -> np.ndarray:
    """out[i, j] = op(a[i], b[j]) for a of size m, b of size n stacked in x = [a, b]."""
    pat = np.zeros((m, n, m + n), dtype=bool)
    for i in range(m):
        for j in range(n):
            pat[i, j, i] = pat[i, j, m + j] = True
    return pat.reshape(m * n, m + n)


@pytest.mark.parametrize("row", [pytest.param(r, id=r.fn.__name__) for r in BINARY_ROWS
                                 if r.fn is not np.ldexp])
def test_binary_row_broadcasts_size_one_axes(row: Any) -> None:
    """A (3, 1) operand against a (1, 4) operand: every output reads one element of each."""
    lo, hi = row.domain
    lo, hi = (max(lo, 0.3), hi) if row.fn not in (np.remainder, np.fmod) else (2.0, 3.0)
    a = rand((3,), 4, lo, hi)
    b = rand((4,), 5, max(lo, 0.3), hi) if row.fn not in (np.remainder, np.fmod) \
        else rand((4,), 5, 0.3, 0.9)
    expected = _outer_pattern(3, 4)
    if row.fn is np.copysign:  # no derivative with respect to the sign operand
        expected[:, 3:] = False
    if row.fn is np.nextafter:  # no derivative with respect to the direction operand
        expected[:, 3:] = False
    if row.partials[0] is None:  # piecewise constant in the first operand (pdtr's count)
        expected[:, :3] = False
    if row.refuse and row.refuse[0] is not None:  # an order: constant, only b traced
        if row.fn is sc.yn:
            a = np.array([0.0, 1.0, 3.0])
        check_exact(lambda x: row.fn(a.reshape(3, 1), x.reshape(1, 4)), b, expected[:, 3:])
        return
    check_exact(lambda x: row.fn(x[:3].reshape(3, 1), x[3:].reshape(1, 4)),
                np.concatenate([a, b]), expected)


@pytest.mark.parametrize("row", [pytest.param(r, id=r.fn.__name__)
                                 for r in BINARY_ROWS + TERNARY_ROWS if r.refuse])
def test_refused_operands_name_the_function_and_the_argument(row: Any) -> None:
    """A traced order or parameter (iv's `v`, gammainc's `a`) is refused, naming both."""
    for k, why in enumerate(row.refuse):
        if why is None:
            continue
        name = f"scipy.special.{row.fn.__name__}"

        def f(x: Any, k: int = k) -> Any:
            args = [np.full(3, 0.5 if row.fn in (sc.betainc, sc.betaincc) else 2.0)
                    for _ in range(row.fn.nin)]
            args[k] = x
            return row.fn(*args)

        with pytest.raises(sparsejac.UnsupportedPrimitiveError,
                           match=rf"{name} cannot differentiate .* `{why[0]}` "
                                 rf"\(received a traced `{why[0]}`"):
            sparsejac.jacobian_sparsity(f, np.full(3, 1.5))
    # constant (or parameter) orders are fine, with the other operands traced
    pattern = sparsejac.jacobian_sparsity(lambda x: row.fn(*[
        x * 0.3 if why is None else np.full(3, 2.0) for why in row.refuse]), np.ones(3))
    assert pattern.nnz == 3


def _takes_floats(u: np.ufunc) -> bool:
    return any(t.startswith("d" * u.nin + "->") for t in u.types)


@pytest.mark.parametrize("ufunc", [pytest.param(u, id=u.__name__) for u in ZERO_DERIVATIVE
                                   if _takes_floats(u)])
def test_zero_derivative_ufunc_on_scalar(ufunc: np.ufunc) -> None:
    """Zero-derivative ufuncs give an empty pattern, also for 0-d inputs."""
    pat = sparsejac.jacobian_sparsity(lambda x: ufunc(*(x,) * ufunc.nin) * 1.0, np.array(1.5))
    assert pat.shape == (1, 1)
    assert pat.nnz == 0


# ---------------------------------------------------------------------------------------------
# constants mixed with traced arrays
# ---------------------------------------------------------------------------------------------


def test_constant_zeros_are_structural() -> None:
    """Multiplying by a constant array with zeros drops those entries (exact, valid for all x)."""
    c = np.array([0.0, 1.0, 0.0, 2.0])
    pat = check_exact(lambda x: x * c, X34)
    np.testing.assert_array_equal(pat, np.diag(np.tile(c != 0, 3)))


def test_constant_broadcast_against_traced() -> None:
    """A traced (3, 1) column times a constant (4,) row broadcasts to (3, 4)."""
    expected = np.repeat(np.eye(3, dtype=bool), 4, axis=0)
    check_exact(lambda x: x.reshape(3, 1) + np.arange(1.0, 5.0), rand((3,), 6), expected)


def test_traced_scalar_broadcast_to_array() -> None:
    """A 0-d traced input against a constant array: every output reads it."""
    check_exact(lambda x: x * np.arange(1.0, 4.0), np.array(1.3), np.ones((3, 1), dtype=bool))


def test_where_with_constant_condition_keeps_one_operand() -> None:
    """np.where with a constant mask is exact: each output reads only its chosen operand."""
    mask = np.array([True, False, True])
    pat = check_exact(lambda x: np.where(mask, x[:3], x[3:] ** 2), rand((6,), 7))
    np.testing.assert_array_equal(pat, [[1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 0],
                                        [0, 0, 1, 0, 0, 0]])


def test_where_with_traced_condition_is_union_globally() -> None:
    """A traced condition: the global pattern has both candidates, the local one the chosen."""
    x = np.array([0.5, 2.0, 0.7, 1.1, 1.2, 1.3])

    def f(t: Any) -> Any:
        return np.where(t[:3] > 1.0, t[:3], t[3:])

    glob = sparsejac.jacobian_sparsity(f, x).toarray()
    np.testing.assert_array_equal(glob, np.hstack([np.eye(3), np.eye(3)]).astype(bool))
    check_exact(f, x, local=True)


@pytest.mark.parametrize(("lo", "hi"), [pytest.param(0.8, 1.2, id="both"),
                                        pytest.param(None, 1.0, id="upper"),
                                        pytest.param(1.0, None, id="lower")])
def test_clip_local_pattern_drops_clipped_elements(lo: float | None, hi: float | None) -> None:
    """np.clip keeps every element globally and only the unclipped ones locally."""
    x = rand((3, 4), 8)
    assert sparsejac.jacobian_sparsity(lambda t: np.clip(t, lo, hi), x).nnz == 12
    check_exact(lambda t: np.clip(t, lo, hi), x, local=True)


def test_maximum_with_constant_local_pattern() -> None:
    """np.maximum(x, c) keeps x where it wins (local) and everywhere (global)."""
    x = np.array([0.2, 1.4, 0.9])
    assert sparsejac.jacobian_sparsity(lambda t: np.maximum(t, 1.0), x).nnz == 3
    check_exact(lambda t: np.maximum(t, 1.0), x, np.diag([False, True, False]), local=True)


@pytest.mark.parametrize(("dtype", "nnz"), [pytest.param(np.float32, 3, id="float32"),
                                            pytest.param(np.float64, 3, id="float64"),
                                            pytest.param(np.int64, 0, id="int64"),
                                            pytest.param(bool, 0, id="bool")])
def test_astype_keeps_float_dependencies_only(dtype: Any, nnz: int) -> None:
    """.astype to a float dtype keeps dependencies; integer and bool conversions drop them."""
    pat = sparsejac.jacobian_sparsity(lambda t: t.astype(dtype).astype(np.float64) * 1.0,
                                      np.array([1.2, 2.7, 3.1]))
    assert pat.nnz == nnz


@pytest.mark.parametrize("f", [pytest.param(lambda t: np.round(t, 1), id="round"),
                               pytest.param(lambda t: t.round(), id="method"),
                               pytest.param(np.floor, id="floor"),
                               pytest.param(np.sign, id="sign")])
def test_rounding_has_zero_derivative(f: Callable[[Any], Any]) -> None:
    """Rounding-like functions give an empty pattern."""
    assert sparsejac.jacobian_sparsity(lambda t: f(t) + 0.0, X34).nnz == 0


def test_ufunc_keyword_dtype_and_out() -> None:
    """``dtype=`` is honoured; ``out=`` into a traced array rebinds it."""
    def f(x: Any) -> Any:
        out = np.empty_like(x)
        np.multiply(x, 2.0, out=out, dtype=np.float64)
        return out

    check_exact(f, X34, np.eye(12, dtype=bool))


def test_unknown_ufunc_keyword_is_refused() -> None:
    """An unsupported keyword (``where=``) is refused, not ignored."""
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="`where=`"):
        sparsejac.jacobian_sparsity(lambda x: np.sin(x, where=x > 1), X34)


def test_operator_module_functions() -> None:
    """The operator module reaches the same dunders (operator.mul, operator.truediv)."""
    check_exact(lambda x: operator.truediv(operator.mul(x, x[::-1]), 2.0), rand((4,), 9))
