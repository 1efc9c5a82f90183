"""Reductions family (``sparsejac.primitives.reductions``): sums, products, extrema and scans
along any axis with ``keepdims``, the composites built on them, and zero-derivative queries."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import sparsejac
from sparsejac.tracing import trace
from tests.primitives.util import check_exact, rand
from tests.scenarios import fd_jacobian

X234 = rand((2, 3, 4), 31)

AXES = [
    pytest.param(None, id="all"),
    pytest.param(0, id="0"),
    pytest.param(-1, id="-1"),
    pytest.param(1, id="1"),
    pytest.param((0, 2), id="0,2"),
    pytest.param((-1, -2), id="-1,-2"),
]
KEEP = [pytest.param(False, id="drop"), pytest.param(True, id="keepdims")]


@pytest.mark.parametrize("keepdims", KEEP)
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("fn", [pytest.param(np.sum, id="sum"), pytest.param(np.prod, id="prod"),
                                pytest.param(np.mean, id="mean")])
def test_linear_and_product_reductions_are_exact(fn: Callable[..., Any], axis: Any,
                                                 keepdims: bool) -> None:
    """sum, prod and mean over any axes (negative, tuples, all) with keepdims: whole groups."""
    check_exact(lambda x: fn(x, axis=axis, keepdims=keepdims), X234)


@pytest.mark.parametrize("keepdims", KEEP)
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("fn", [pytest.param(np.max, id="max"), pytest.param(np.min, id="min")])
def test_extrema_global_group_local_choice(fn: Callable[..., Any], axis: Any,
                                           keepdims: bool) -> None:
    """max/min: the global pattern is the whole group, the local one the arg-extremum."""
    def f(x: Any) -> Any:
        return fn(x, axis=axis, keepdims=keepdims)

    glob = sparsejac.jacobian_sparsity(f, X234).toarray()
    np.testing.assert_array_equal(glob, sparsejac.jacobian_sparsity(
        lambda x: np.sum(x, axis=axis, keepdims=keepdims), X234).toarray())
    loc = check_exact(f, X234, local=True)
    assert (loc.sum(axis=1) == 1).all()


def test_max_hand_written() -> None:
    """np.max over rows of a (2, 3) input (hand-written global and local patterns)."""
    x = np.array([[1.0, 5.0, 2.0], [0.5, 0.1, 0.9]])
    f = lambda t: t.max(axis=-1)  # noqa: E731
    glob = sparsejac.jacobian_sparsity(f, x).toarray()
    np.testing.assert_array_equal(glob, [[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]])
    check_exact(f, x, [[0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1]], local=True)


@pytest.mark.parametrize("axis", [pytest.param(None, id="flat"), pytest.param(0, id="0"),
                                  pytest.param(-1, id="-1"), pytest.param(1, id="1")])
@pytest.mark.parametrize("fn", [pytest.param(np.cumsum, id="cumsum"),
                                pytest.param(np.cumprod, id="cumprod")])
def test_scans_are_lower_triangular_per_lane(fn: Callable[..., Any], axis: Any) -> None:
    """cumsum/cumprod along any axis: element k of a lane reads elements 0..k."""
    pat = check_exact(lambda x: fn(x, axis=axis), X234)
    if axis is None:
        np.testing.assert_array_equal(pat, np.tril(np.ones((24, 24), dtype=bool)))


def test_size_one_and_size_zero_axes() -> None:
    """Reducing a size-1 axis is the identity; a size-0 axis gives constants (sum 0, prod 1)."""
    x = rand((3, 1), 32)
    check_exact(lambda t: np.sum(t, axis=1), x, np.eye(3, dtype=bool))
    check_exact(lambda t: np.cumsum(t, axis=-1), x, np.eye(3, dtype=bool))
    assert sparsejac.jacobian_sparsity(lambda t: np.sum(t[:, :0], axis=1), x).nnz == 0
    assert sparsejac.jacobian_sparsity(lambda t: np.prod(t[:, :0], axis=1), x).nnz == 0
    with pytest.raises(ValueError, match="zero-size array"):
        sparsejac.jacobian_sparsity(lambda t: np.max(t[:, :0], axis=1), x)


def test_scalar_input_reductions() -> None:
    """Reductions of a 0-d input are the identity."""
    for fn in (np.sum, np.prod, np.max, np.mean, np.cumsum):
        check_exact(fn, np.array(1.3), np.ones((1, 1), dtype=bool))


UFUNC_METHODS = [
    pytest.param(lambda x: np.add.reduce(x), id="add_reduce_default_axis0"),
    pytest.param(lambda x: np.add.reduce(x, axis=(1, 2), keepdims=True), id="add_reduce_axes"),
    pytest.param(lambda x: np.multiply.reduce(x, axis=-1), id="multiply_reduce"),
    pytest.param(lambda x: np.add.accumulate(x, axis=2), id="add_accumulate"),
    pytest.param(lambda x: np.multiply.accumulate(x, axis=1), id="multiply_accumulate"),
    pytest.param(lambda x: np.cumulative_sum(x, axis=0), id="cumulative_sum"),
    pytest.param(lambda x: np.cumulative_prod(x, axis=-1), id="cumulative_prod"),
]


@pytest.mark.parametrize("f", UFUNC_METHODS)
def test_ufunc_reduce_and_accumulate(f: Callable[[Any], Any]) -> None:
    """ufunc.reduce/accumulate and the array-API cumulative functions are exact."""
    check_exact(f, X234)


COMPOSITES = [
    pytest.param(lambda x: np.var(x, axis=0), id="var"),
    pytest.param(lambda x: np.var(x, axis=(0, -1), ddof=1, keepdims=True), id="var_ddof"),
    pytest.param(lambda x: np.std(x, axis=-1), id="std"),
    pytest.param(lambda x: np.average(x, axis=1, weights=[0.5, 1.0, 2.0]), id="average"),
    pytest.param(lambda x: np.average(x, axis=(0, 2)), id="average_unweighted"),
    pytest.param(lambda x: np.trace(x[0]), id="trace"),
    pytest.param(lambda x: np.trace(x, 1, 1, 2), id="trace_axes"),
    pytest.param(lambda x: np.diff(x), id="diff"),
    pytest.param(lambda x: np.diff(x, n=2, axis=1), id="diff_n2"),
    pytest.param(lambda x: np.diff(x, n=0), id="diff_n0"),
    pytest.param(lambda x: np.diff(x, axis=0, append=x[-1:] * 2), id="diff_append_traced"),
    pytest.param(lambda x: np.diff(x, prepend=1.0), id="diff_prepend_scalar"),
    pytest.param(lambda x: x.mean(axis=-1, keepdims=True) * x, id="mean_method"),
    pytest.param(lambda x: x.sum(0) + x.prod(0), id="methods"),
    pytest.param(lambda x: x.std(axis=-1, ddof=1) + x.var(axis=-1), id="std_var_methods"),
    pytest.param(lambda x: x[0].trace(1) * x, id="trace_method"),
]


@pytest.mark.parametrize("f", COMPOSITES)
def test_composite_reductions_are_exact(f: Callable[[Any], Any]) -> None:
    """var, std, average, trace and diff are exact compositions."""
    check_exact(f, X234)


def test_ptp_global_and_local() -> None:
    """np.ptp reads the whole lane globally and the max and min elements locally."""
    x = np.array([[1.0, 4.0, 2.0], [3.0, 0.5, 1.0]])
    glob = sparsejac.jacobian_sparsity(lambda t: np.ptp(t, axis=1), x).toarray()
    np.testing.assert_array_equal(glob, [[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]])
    check_exact(lambda t: np.ptp(t, axis=1), x, [[1, 1, 0, 0, 0, 0], [0, 0, 0, 1, 1, 0]],
                local=True)


def test_diff_hand_written() -> None:
    """np.diff of a vector is bidiagonal (hand-written)."""
    expected = np.eye(3, 4, dtype=bool) | np.eye(3, 4, k=1, dtype=bool)
    check_exact(np.diff, rand((4,), 33), expected)



def test_diff_edge_arguments_as_numpy() -> None:
    """n=0 is the input; a 0-d input and a negative n are numpy's ValueErrors (not AxisError)."""
    check_exact(lambda t: np.diff(t, n=0), rand((3,), 34), np.eye(3, dtype=bool))
    check_exact(lambda t: np.diff(t, n=2, prepend=0.0), rand((3,), 35),
                np.array([[1, 1, 0], [1, 1, 1]], dtype=bool))
    for f in (lambda t: np.diff(t[0]), lambda t: np.diff(t, n=-1)):
        with pytest.raises(ValueError, match=r"diff requires|non-negative"):
            f(np.ones(3))
        with pytest.raises(ValueError, match=r"diff requires|non-negative"):
            sparsejac.jacobian(f, np.ones(3))


ZERO = [
    pytest.param(lambda x: np.all(x > 1, axis=1), id="all"),
    pytest.param(lambda x: np.any(x > 1, keepdims=True), id="any"),
    pytest.param(lambda x: np.argmax(x, axis=-1), id="argmax"),
    pytest.param(lambda x: np.argmin(x), id="argmin"),
    pytest.param(lambda x: np.count_nonzero(x > 1, axis=(0, 1)), id="count_nonzero"),
    pytest.param(lambda x: x.argmax(axis=0) + x.all(), id="methods"),
]


@pytest.mark.parametrize("f", ZERO)
def test_zero_derivative_reductions(f: Callable[[Any], Any]) -> None:
    """all/any/argmax/argmin/count_nonzero have no dependencies (and the right values)."""
    pat = check_exact(lambda x: f(x) * 1.0, X234)
    assert not pat.any()


@pytest.mark.parametrize("kwargs", [pytest.param({"where": np.ones((2, 3, 4), bool)},
                                                 id="where"),
                                    pytest.param({"initial": 1.0}, id="initial")])
def test_unsupported_reduction_keywords(kwargs: dict[str, Any]) -> None:
    """``where=`` and ``initial=`` are refused by name, never ignored (``np.sum(where=)`` is
    supported: see below)."""
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match=next(iter(kwargs))):
        sparsejac.jacobian_sparsity(lambda x: np.prod(x, **kwargs), X234)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="initial"):
        sparsejac.jacobian_sparsity(lambda x: np.sum(x, initial=1.0), X234)


@pytest.mark.parametrize("where", [
    pytest.param(lambda x: np.arange(24).reshape(2, 3, 4) % 3 == 0, id="constant-mask"),
    pytest.param(lambda x: x > 1.0, id="traced-mask"),  # exact in a local pattern
])
@pytest.mark.parametrize("axis", [None, 1, (0, 2)])
def test_sum_where_drops_masked_elements(where: Callable[[Any], Any], axis: Any) -> None:
    """``np.sum(x, where=mask)``: masked-out elements are structural zeros, the rest add."""
    def f(x: Any) -> Any:
        return np.sum(x * x, axis=axis, where=where(x))
    x = rand((2, 3, 4), seed=3)
    pat = check_exact(f, x, local=True)
    mask = np.broadcast_to(where(x), x.shape)
    jac = sparsejac.jacobian(f, x).toarray()
    np.testing.assert_allclose(jac, fd_jacobian(f, x), rtol=1e-7, atol=1e-8)
    assert not pat[:, ~mask.ravel()].any()


def test_bad_axis_raises_numpy_error() -> None:
    """An out-of-range axis raises numpy's AxisError, as numpy would."""
    with pytest.raises(np.exceptions.AxisError):
        sparsejac.jacobian_sparsity(lambda x: np.sum(x, axis=3), X234)


def test_prod_and_cumprod_with_an_overflowed_entry_agree_in_every_path():
    """Where one Jacobian entry overflows to inf, the others stay finite: the one-off (eager)
    rules multiplied the inf partial by zero seeds and cotangents (NaN), where the prepared
    engines gave the values."""
    import sparsejac

    for x in (np.array([1e200, 1e-200, 3e200]), np.array([0.0, 1e200, 1e200])):
        with np.errstate(over="ignore", invalid="ignore"):
            for fn in (lambda z: np.array([np.prod(z)]), np.cumprod):
                want = sparsejac.SparseJacobian(fn, np.ones(3))(x).toarray()
                assert not np.isnan(want).any()
                for mode in ("forward", "reverse", "mixed"):
                    np.testing.assert_array_equal(sparsejac.jacobian(fn, x, mode=mode).toarray(),
                                                  want)


@pytest.mark.parametrize("spec", ["okj,poj->pok", "okj,pok->poj", "kj,j->k", "ij,ij->i"])
def test_einsum0_is_mul0_summed(spec: str) -> None:
    """einsum0 (contractions with 0 * inf = 0, without the product array) against the
    materialised oracle: mul0 of the broadcast operands, summed over the contracted indices.
    Operands with zeros, +-inf and NaN in every combination."""
    from sparsejac.numeric import einsum0, mul0

    rng = np.random.default_rng(11)
    ins, out = spec.split("->")
    sa, sb = ins.split(",")
    letters = sorted(set(sa + sb))
    for trial in range(40):
        dims = dict(zip(letters, (int(v) for v in rng.integers(1, 4, len(letters))), strict=True))
        arrays = []
        for sub in (sa, sb):
            v = rng.normal(size=[dims[c] for c in sub])
            special = rng.choice([0.0, np.inf, -np.inf, np.nan, 1.0], size=v.shape,
                                 p=[0.3, 0.1, 0.1, 0.05, 0.45] if trial % 2 else
                                 [0.2, 0.0, 0.05, 0.0, 0.75])
            arrays.append(np.where(special == 1.0, v, special))
        a, b = arrays
        full = "".join(letters)
        # the oracle: broadcast both to every index, multiply with mul0, sum the others
        ba = np.broadcast_to(np.einsum(f"{sa}->{''.join(c for c in full if c in sa)}", a)
                             .reshape([dims[c] if c in sa else 1 for c in full]),
                             [dims[c] for c in full])
        bb = np.broadcast_to(np.einsum(f"{sb}->{''.join(c for c in full if c in sb)}", b)
                             .reshape([dims[c] if c in sb else 1 for c in full]),
                             [dims[c] for c in full])
        with np.errstate(invalid="ignore", over="ignore"):
            prod = mul0(ba, bb)
            summed = prod.sum(axis=tuple(i for i, c in enumerate(full) if c not in out))
        want = np.einsum(f"{''.join(c for c in full if c in out)}->{out}", summed)
        # the same values, summed in another order: +-inf and NaN where the oracle has them
        np.testing.assert_allclose(einsum0(spec, a, b), want, rtol=1e-12, atol=1e-15)


def test_hessian_through_an_overflowing_prod_stays_small() -> None:
    """AMGM (scipy's global-optimisation benchmark) where prod(x) overflows: the second-order
    program's cumprod rule multiplied every direction by its lane Jacobian, 7.4 GiB at
    N = 1000 (MemoryError). The rule's values are einsum0's (checked above)."""
    def amgm(x: np.ndarray) -> Any:
        return (np.sum(x) / x.size - np.prod(x) ** (1.0 / x.size)) ** 2

    import tracemalloc

    n = 400
    rng = np.random.default_rng(1)
    hess = sparsejac.SparseHessian(amgm, 1 + 0.01 * rng.random(n))
    x = 8 + 2 * rng.random(n)  # prod overflows: f is inf
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isinf(amgm(x))
        tracemalloc.start()
        got = hess(x)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert got.shape == (n, n)
    assert peak < 100e6, peak  # the materialised rule: 400 x 400 x 400 doubles, 512 MB


def test_max_and_min_with_initial_and_where_by_hand() -> None:
    """``initial=`` takes part as one more element (a tie with it halves the derivative),
    ``where=`` masks elements out; an empty group gives ``initial``. Values as numpy's."""
    x = np.array([0.0, -1.0, 2.0, 2.0])
    mask = np.array([[True, False], [True, True]])
    cases = [
        (lambda t: np.atleast_1d(np.max(t[:2], initial=0.0)), [[0.5, 0, 0, 0]]),
        (lambda t: np.max(t.reshape(2, 2), axis=1, initial=1.0), [[0, 0, 0, 0], [0, 0, .5, .5]]),
        (lambda t: np.min(t.reshape(2, 2), axis=0, initial=1.0, where=mask),
         [[1, 0, 0, 0], [0, 0, 0, 0]]),
        (lambda t: np.atleast_1d(np.amin(t[:0], initial=3.0)) + t[0], [[1, 0, 0, 0]]),
    ]
    for f, want in cases:
        np.testing.assert_array_equal(sparsejac.jacobian(f, x).toarray(), want)
        np.testing.assert_array_equal(trace(f, x).out.value, f(x))
    with pytest.raises(ValueError, match="initial"):
        sparsejac.jacobian(lambda t: np.max(t, where=t > 0), x)


def test_nanmax_and_nanmin_skip_nan_elements() -> None:
    """NaN elements never win; an all-NaN group is NaN with no derivative (numpy's value)."""
    x = np.array([0.0, -1.0, 2.0, 2.0])
    nan = np.array([np.nan, 0.0, np.nan, np.nan])
    cases = [
        (lambda t: np.atleast_1d(np.nanmax(t + nan)), [[0, 1, 0, 0]]),
        (lambda t: np.nanmin((t + nan).reshape(2, 2), axis=0), [[0, 0, 0, 0], [0, 1, 0, 0]]),
        (lambda t: np.nanmax((t + nan).reshape(2, 2), axis=1, initial=5.0), np.zeros((2, 4))),
        (lambda t: np.nanmax(t.reshape(2, 2), axis=1), [[1, 0, 0, 0], [0, 0, .5, .5]]),
    ]
    for f, want in cases:
        with warnings.catch_warnings():  # numpy's All-NaN slice warning (in the trace check)
            warnings.simplefilter("ignore", RuntimeWarning)
            np.testing.assert_array_equal(sparsejac.jacobian(f, x).toarray(), want)
            np.testing.assert_array_equal(trace(f, x).out.value, f(x))


def test_max_initial_keeps_numpys_dtype_and_where_shape():
    """An empty group with initial= is float32 for float32 input (a prepared Jacobian's
    replay compares values with f's); a where= mask that would grow the array is refused as
    numpy refuses it."""
    x = np.arange(1.0, 7.0)

    def f(t: Any) -> Any:
        return (np.max(t.astype(np.float32).reshape(2, 3)[:, :0], axis=1, initial=1.0)
                + t[:2].astype(np.float32))

    np.testing.assert_array_equal(sparsejac.SparseJacobian(f, x)(x).toarray(), np.eye(2, 6))
    with pytest.raises(ValueError, match="where"):
        sparsejac.jacobian(lambda t: np.max(t[:3], initial=0.0, where=np.ones((2, 3), bool)), x)
