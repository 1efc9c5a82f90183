"""Error cases of tracing and detection (``sparsejac.errors``): each raises the documented type,
and its message names the offending call and says what to do instead."""

from __future__ import annotations

import math
import pickle
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.special as special

import sparsejac
from sparsejac.errors import (
    SUPPORTED_FUNCTIONS_DOC,
    ConcretizationError,
    TracedConversionError,
    UnsupportedPrimitiveError,
)

X = np.array([0.5, -1.0, 2.0, 1.5])

# ---------------------------------------------------------------------------------------------
# Python control flow on values: refused globally, accepted locally
# ---------------------------------------------------------------------------------------------


def _if(x: Any) -> Any:
    if x[0] > 0:
        return x
    return -x


def _while(x: Any) -> Any:
    y = x
    while np.sum(y) < 100.0:
        y = y * 2
    return y


def _int_index(x: Any) -> Any:
    return x[int(x[2])] * x


def _operator_index(x: Any) -> Any:
    return x[: (x[2] * 1).astype(int)]


def _traced_mask(x: Any) -> Any:
    return np.sum(x[x > 0] ** 2)


def _traced_fancy(x: Any) -> Any:
    return x[np.argmax(x)] * x


def _traced_take(x: Any) -> Any:
    return np.take(x, (x > 1).astype(int))


def _traced_shift(x: Any) -> Any:
    return np.roll(x, (x[2] * 1).astype(int))


def _traced_add_at_index(x: Any) -> Any:
    out = np.zeros_like(x)
    np.add.at(out, (x > 0).astype(int), x)
    return out


def _python_max(x: Any) -> Any:
    return max(x[0], x[1])


CONTROL_FLOW = [
    # (f, what the message must name)
    pytest.param(_if, r"bool\(\) of a traced array", id="if"),
    pytest.param(_while, r"bool\(\) of a traced array", id="while"),
    pytest.param(_python_max, r"bool\(\) of a traced array", id="builtin_max"),
    pytest.param(_int_index, r"int\(\) of a traced array", id="int_as_index"),
    pytest.param(_operator_index, r"use as an index \(operator.index\)", id="traced_slice_bound"),
    pytest.param(_traced_mask, r"an index array or mask used in x\[\.\.\.\]", id="boolean_mask"),
    pytest.param(_traced_fancy, r"an index array or mask used in x\[\.\.\.\]",
                 id="traced_index_array"),
    pytest.param(_traced_take, "an argument of numpy.take", id="take"),
    pytest.param(_traced_shift, "an argument of numpy.roll", id="roll_shift"),
    pytest.param(_traced_add_at_index, "the indices of numpy.add.at", id="add_at_indices"),
]


@pytest.mark.parametrize(("f", "names"), CONTROL_FLOW)
def test_value_dependent_control_flow_is_refused_globally(f: Callable[[Any], Any],
                                                          names: str) -> None:
    """Global mode refuses to read a value, names the operation, and suggests local=True."""
    with pytest.raises(ConcretizationError, match=names) as info:
        sparsejac.jacobian_sparsity(f, X)
    msg = str(info.value)
    assert "local=True" in msg
    assert "np.where" in msg  # the value-free alternative
    assert isinstance(info.value, TypeError)


@pytest.mark.parametrize(("f", "names"), CONTROL_FLOW)
def test_value_dependent_control_flow_is_accepted_locally(f: Callable[[Any], Any],
                                                          names: str) -> None:
    """Local mode answers the same reads from the values at x and returns a pattern."""
    pat = sparsejac.jacobian_sparsity(f, X, local=True)
    assert pat.shape[1] == X.size


# ---------------------------------------------------------------------------------------------
# conversions that would drop the dependence on x: refused in every mode
# ---------------------------------------------------------------------------------------------

ONES_2X4 = np.ones((2, 4))
GLOBAL_OUT = np.zeros(4)
GLOBAL_SCALAR = np.zeros(())

CONVERSIONS = [
    pytest.param(lambda x: float(x[0]) * x, r"float\(\) of a traced array", id="float"),
    pytest.param(lambda x: math.sin(x[0]) * x, r"float\(\) of a traced array", id="math_sin"),
    pytest.param(lambda x: complex(x[0]) * x, r"complex\(\) of a traced array", id="complex"),
    pytest.param(lambda x: x[0].item() * x, r"\.item\(\) of a traced array", id="item"),
    pytest.param(lambda x: np.array(x.tolist()), r"\.tolist\(\) of a traced array",
                 id="tolist"),
    # a memo keyed on f's argument (found by a hunt from outside: an AttributeError before)
    pytest.param(lambda x: {x.tobytes(): x ** 2}[x.tobytes()],
                 r"\.tobytes\(\) of a traced array", id="tobytes"),
    pytest.param(lambda x: np.maximum.reduce([x, 2 * x]), r"by a call the tracer cannot follow",
                 id="ufunc_method_of_a_list"),
    # a plain array made outside f (a module-level constant) cannot receive or hold traces
    pytest.param(lambda x: ONES_2X4.dot(x), r"A @ y or np\.dot\(A, y\)",
                 id="ndarray_dot_method"),
    pytest.param(lambda x: np.mean([x[0], x[1]]), r"pass np\.stack\(\[a, b\]\) instead",
                 id="list_into_numpy_function"),
    pytest.param(lambda x: np.add(x, 1, out=GLOBAL_OUT), r"numpy\.add\(\.\.\., out=\.\.\.\)",
                 id="ufunc_out"),
    pytest.param(lambda x: np.sum(x, out=GLOBAL_SCALAR), r"numpy\.sum\(\.\.\., out=\.\.\.\)",
                 id="reduction_out"),
    # found from outside: object elements would not carry the derivative (a silently wrong J)
    pytest.param(lambda x: np.array(x, dtype=object).astype(float) * 2 + x,
                 r"converted to dtype object", id="array_dtype_object"),
    pytest.param(lambda x: np.array([math.exp(v) for v in x.astype(object)]),
                 r"converted to dtype object", id="astype_object_math_exp"),
    pytest.param(lambda x: np.asarray(x, dtype=object).sum() + x, r"converted to dtype object",
                 id="asarray_dtype_object"),
    pytest.param(lambda x: pickle.loads(pickle.dumps(x)) * x, r"was pickled", id="pickle"),
]


@pytest.mark.parametrize("local", [pytest.param(False, id="global"),
                                   pytest.param(True, id="local")])
@pytest.mark.parametrize(("f", "names"), CONVERSIONS)
def test_conversion_that_drops_the_dependence_is_refused(f: Callable[[Any], Any], names: str,
                                                         local: bool) -> None:
    """float(), .item(), np.asarray() ... of a value that depends on x raise in both modes."""
    with pytest.raises(TracedConversionError, match=names):
        sparsejac.jacobian_sparsity(f, X, local=local)


def test_float_of_a_constant_is_allowed() -> None:
    """Converting a value that does not depend on x is fine (it is a constant)."""
    def f(x: Any) -> Any:
        scale = float(np.zeros_like(x)[0] + 2.0)
        return x * scale

    np.testing.assert_array_equal(sparsejac.jacobian_sparsity(f, X).toarray(), np.eye(4))


WAYS = ("np.zeros(n)", "np.zeros_like(x)", "np.empty_like(x)", "np.zeros(shape, like=x)")
BUFFER = np.zeros(4)  # made outside f: a plain array


def _store_slice(x: Any) -> Any:
    BUFFER[1:] = x[:-1]
    return BUFFER


def _store_element(x: Any) -> Any:
    BUFFER[0] = x[0]
    return BUFFER


def test_store_into_plain_array_shows_the_ways_to_write_it() -> None:
    """A buffer made outside f, ``out[1:] = traced``: a TracedConversionError listing the fixes
    (buffers made inside f with np.zeros(n) are traceable, see test_buffers_made_inside_f)."""
    with pytest.raises(TracedConversionError) as info:
        sparsejac.jacobian_sparsity(_store_slice, X)
    msg = str(info.value)
    assert "a plain array: made outside f" in msg
    for way in WAYS:
        assert way in msg


def test_element_store_into_plain_array_chains_the_explanation() -> None:
    """``out[i] = traced`` into a plain array made outside f: sparsejac's error, which names
    the fixes.

    numpy converts the element with ``float()`` and replaces any failure by its own
    "setting an array element with a sequence" ValueError, keeping the original as
    ``__cause__``: the trace raises the original, with numpy's message as a note.
    """
    with pytest.raises(TracedConversionError) as info:
        sparsejac.jacobian_sparsity(_store_element, X)
    assert "setting an array element" in "".join(info.value.__notes__)
    for way in WAYS:
        assert way in str(info.value)


def test_ways_to_create_output_arrays_work() -> None:
    """Each way named in the message traces: zeros_like, empty_like, zeros(shape, like=x)."""
    def build(make: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def f(x: Any) -> Any:
            out = make(x)
            out[1:] = x[:-1]
            out[0] = x[0]
            return out

        return f

    for make in (np.zeros_like, np.empty_like, lambda x: np.zeros(4, like=x)):
        pat = sparsejac.jacobian_sparsity(build(make), X).toarray()
        np.testing.assert_array_equal(pat, np.eye(4, k=-1) + np.eye(4, k=0) * [1, 0, 0, 0])


# ---------------------------------------------------------------------------------------------
# unsupported numpy functions: never a silent guess
# ---------------------------------------------------------------------------------------------

UNSUPPORTED = [
    # (f, public name, detail the message must contain or "")
    pytest.param(lambda x: np.argpartition(x, x[0]), "numpy.argpartition", "traced `kth`",
                 id="argpartition"),
    pytest.param(lambda x: np.unique(x), "numpy.unique", "", id="unique"),
    pytest.param(lambda x: np.nonzero(x), "numpy.nonzero", "", id="nonzero"),
    pytest.param(lambda x: np.nanmedian(x), "numpy.nanmedian", "", id="nanmedian"),
    pytest.param(lambda x: np.median(x, axis=(0,)), "numpy.median", "`axis`", id="median_axes"),
    pytest.param(lambda x: np.quantile(x, 0.5, method="weibull"), "numpy.quantile",
                 "method='weibull'", id="quantile_method"),
    pytest.param(lambda x: np.linalg.eig(x.reshape(2, 2))[0], "numpy.linalg.eig", "",
                 id="linalg_eig"),
    pytest.param(lambda x: np.linalg.eigvals(x.reshape(2, 2)), "numpy.linalg.eigvals", "",
                 id="linalg_eigvals"),
    pytest.param(lambda x: np.fft.hfft(x), "numpy.fft.hfft", "", id="fft"),
    pytest.param(lambda x: np.sqrt(1j * x).real, "numpy.sqrt", "complex operand",
                 id="complex_sqrt"),
    pytest.param(lambda x: np.multiply.reduceat(x, [0, 2]), "numpy.multiply.reduceat", "",
                 id="ufunc_reduceat"),
    pytest.param(lambda x: np.logaddexp.accumulate(x), "numpy.logaddexp.accumulate", "",
                 id="ufunc_accumulate"),
    pytest.param(lambda x: np.modf(x)[0], "numpy.modf", "", id="two_output_ufunc"),
    pytest.param(lambda x: np.where(x > 0), "numpy.where", "one-argument form",
                 id="where_one_argument"),
    pytest.param(lambda x: np.prod(x, where=x > 0), "numpy.prod", "`where=`", id="prod_where"),
    pytest.param(lambda x: np.pad(x, 1, mode="mean"), "numpy.pad", "mode='mean'",
                 id="pad_mode"),
    pytest.param(lambda x: np.einsum(x, [0, "a"], [0]), "numpy.einsum", "sublist entry",
                 id="einsum"),
    pytest.param(lambda x: np.interp(x, [0.0, 1.0], x[:2], period=1.0), "numpy.interp",
                 "`period=`", id="interp_period"),
    pytest.param(lambda x: np.add(x, 1, where=x > 0), "numpy.add", "`where=`",
                 id="ufunc_where"),
    pytest.param(lambda x: special.dawsn(x), "scipy.special.dawsn", "", id="scipy_special_ufunc"),
    pytest.param(lambda x: x.argpartition(x[0]), "numpy.argpartition", "traced `kth`",
                 id="argpartition_method"),
    pytest.param(lambda x: x.sort(order="a"), "numpy.sort", "`order=`", id="sort_method"),
    pytest.param(lambda x: x.nonzero(), "numpy.nonzero", "", id="nonzero_method"),
    pytest.param(lambda x: x.resize(3), "numpy.ndarray.resize", "in place", id="resize_method"),
]


@pytest.mark.parametrize(("f", "name", "detail"), UNSUPPORTED)
def test_unsupported_function_names_itself_and_the_docs(f: Callable[[Any], Any], name: str,
                                                         detail: str) -> None:
    """An unknown call raises UnsupportedPrimitiveError naming it and docs/supported.md."""
    with pytest.raises(UnsupportedPrimitiveError) as info:
        sparsejac.jacobian_sparsity(f, X)
    err = info.value
    assert isinstance(err, NotImplementedError)
    assert err.function == name
    msg = str(err)
    assert msg.startswith(f"{name} is not supported")
    assert SUPPORTED_FUNCTIONS_DOC in msg
    assert detail in msg


def test_unsupported_in_local_mode_too() -> None:
    """Local mode does not make an unknown function supported."""
    with pytest.raises(UnsupportedPrimitiveError, match=r"numpy\.unique"):
        sparsejac.jacobian_sparsity(np.unique, X, local=True)


@pytest.mark.parametrize("name", ["flat", "strides", "view", "tofile", "ctypes"])
def test_unmodelled_ndarray_attribute_says_so(name: str) -> None:
    """An ndarray attribute the tracer does not model is an AttributeError that says so."""
    with pytest.raises(AttributeError, match=rf"ndarray\.{name} is not supported on a traced"):
        sparsejac.jacobian_sparsity(lambda x: getattr(x, name) and x, X)


def test_hasattr_on_a_traced_array_still_works() -> None:
    """hasattr() sees False for an unmodelled attribute instead of an exception."""
    seen = []
    sparsejac.jacobian_sparsity(lambda x: seen.append(hasattr(x, "flat")) or x, X)
    assert seen == [False, True]  # traced, then the real call that checks the values


def test_supported_docs_path_exists() -> None:
    """The page the messages point at exists in the repository."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    assert (root / SUPPORTED_FUNCTIONS_DOC).is_file()


# ---------------------------------------------------------------------------------------------
# misuse that is not about values
# ---------------------------------------------------------------------------------------------


def test_integer_array_cannot_receive_a_traced_value() -> None:
    """Assigning a traced float into an integer traced array is refused (it would truncate)."""
    def f(x: Any) -> Any:
        out = np.zeros_like(x, dtype=int)
        out[0] = x[0]
        return out

    with pytest.raises(TypeError, match="would truncate it"):
        sparsejac.jacobian_sparsity(f, X)


def test_sparse_matrix_scaled_by_traced_scalar_is_refused() -> None:
    """``spmatrix * traced_scalar`` (a scaled sparse matrix) is refused with a rewrite hint."""
    import scipy.sparse as sp

    lap = sp.csr_matrix(np.eye(4))
    with pytest.raises(UnsupportedPrimitiveError, match=r"c \* \(L @ u\)"):
        sparsejac.jacobian_sparsity(lambda x: lap * x[0], X)


def test_nested_tracing_is_refused() -> None:
    """Calling jacobian_sparsity on a traced value inside f is refused clearly."""
    def f(x: Any) -> Any:
        return sparsejac.jacobian_sparsity(np.sin, x)

    with pytest.raises(TypeError, match="already a traced array"):
        sparsejac.jacobian_sparsity(f, X)


def test_python_builtins_on_traced_values_give_sparsejac_errors() -> None:
    """f-string formats, round() and shape assignment on a traced array: sparsejac's errors
    (or the right result), not TypeError/AttributeError from Python's internals."""
    x = np.array([0.5, 1.5, 2.5])
    with pytest.raises(sparsejac.TracedConversionError, match="format"):
        sparsejac.jacobian(lambda y: (f"{y[0]:.3f}", y ** 2)[1], x)
    assert f"{sparsejac.jacobian(lambda y: y * 2.0, x).nnz:d}" == "3"
    const = sparsejac.jacobian(lambda y: (f"{np.ones(2).sum():.2f}", y ** 2)[1], x)  # constant
    np.testing.assert_array_equal(const.toarray(), np.diag(2 * x))
    j = sparsejac.jacobian(lambda y: round(y[1], 1) * y, x)  # zero derivative a.e.
    np.testing.assert_array_equal(j.toarray(), np.diag(np.full(3, 1.5)))
    with pytest.raises(sparsejac.UnsupportedPrimitiveError,
                       match=r"shape assignment .*write `a = a\.reshape\(shape\)`"):
        sparsejac.jacobian_sparsity(lambda y: (setattr(y, "shape", (3, 1)), y)[1], x)


def _zero_negative_rows(y: np.ndarray) -> np.ndarray:
    y = y.reshape(3, 2).copy()
    y[y[:, 0] < 0] = 0.0
    return (np.roll(y, 1) * y).ravel()


def test_a_traced_mask_in_an_assignment_names_the_assignment_and_its_line() -> None:
    """`y[m] = 0` with a row mask m moving with x, in a global trace: the error spoke of
    x[...] and named no line. (A mask of y's own shape is np.where: traced.)"""
    with pytest.raises(sparsejac.ConcretizationError,
                       match=r"mask used in an assignment y\[\.\.\.\] = v depends on traced "
                       r"values \(at test_errors\.py:\d+: `y\[y\[:, 0\] < 0\] = 0\.0`"):
        sparsejac.SparseJacobian(_zero_negative_rows, np.array([0.5, -0.3, 0.8, 1.0, 2.0, 3.0]))


def test_jacobian_sparsity_passes_kwargs() -> None:
    """``kwargs=`` as in jacobian and SparseJacobian."""
    p = sparsejac.jacobian_sparsity(lambda y, k=0: y[k:] * y[0], np.ones(3), kwargs={"k": 1})
    assert p.toarray().astype(int).tolist() == [[1, 1, 0], [1, 0, 1]]


def test_library_errors_name_the_function_the_user_called() -> None:
    """A decorated scipy function is named after itself, not scipy's decorator (the message
    said 'scipy.wrapper'); a scipy.stats method carries its distribution's name."""
    import scipy.linalg as sla
    import scipy.stats as st

    with pytest.raises(sparsejac.TracedConversionError, match=r"^scipy\.linalg\.lu_factor "):
        sparsejac.jacobian(lambda x: sla.lu_factor(x.reshape(2, 2))[0], np.arange(1.0, 5.0))
    with pytest.raises(sparsejac.TracedConversionError, match=r"^scipy\.stats\.norm\.ppf "):
        sparsejac.jacobian(lambda x: st.norm.ppf(x * 0.1), np.arange(1.0, 5.0))


def test_elementwise_and_composite_edge_cases_from_outside() -> None:
    """heaviside(x1, x2) is x2 where x1 == 0 (it was treated as constant: a wrong Jacobian and
    a global pattern missing an entry); arctan2 at extreme scales (x**2 + y**2 overflowed);
    average(returned=True) without weights returns the weights' sum in the average's shape;
    piecewise with one traced mask; polyval of a poly1d."""
    from tests.test_rules import fd4_jacobian

    c = np.array([0.0, 1.0, -1.0])
    np.testing.assert_array_equal(
        sparsejac.jacobian(lambda x: np.heaviside(c, x), np.array([0.3, 0.7, 2.0])).toarray(),
        np.diag([1.0, 0.0, 0.0]))
    pattern = sparsejac.jacobian_sparsity(lambda x: np.heaviside(x[:1] - x[1:2], x[2:]),
                                          np.array([1.0, 2.0, 0.5]))
    assert pattern.toarray().tolist() == [[False, False, True]]
    for scale in (1e-200, 1e200, 1.0):
        got = sparsejac.jacobian(lambda z: np.arctan2(z[:1], z[1:]),
                                 np.array([3.0, 4.0]) * scale).toarray()
        np.testing.assert_allclose(got, [[0.16 / scale, -0.12 / scale]], rtol=1e-14)
    x = np.array([-1.0, 2.0, 3.0, 0.5, 1.0, 2.0])
    for fn in (lambda z: np.concatenate(np.average(z.reshape(2, 3), axis=1, returned=True)),
               lambda z: np.piecewise(z, z < 0, [lambda v: v ** 2, np.exp]),
               lambda z: np.polyval(np.poly1d([3.0, 1.0, 2.0]), z)):
        np.testing.assert_allclose(sparsejac.jacobian(fn, x).toarray(), fd4_jacobian(fn, x),
                                   rtol=1e-7, atol=1e-8)


def test_sinc_derivative_keeps_its_digits_near_zero() -> None:
    """(cos(pi x) - sinc(x)) / x cancels near 0 (relative error 1.7e-5 at 1e-6, exactly 0 at
    1e-9); the series there gives full precision. Oracle: the Taylor series to 24 terms."""
    import math

    def ref(v: float) -> float:
        return sum((-1) ** k * math.pi ** (2 * k) * 2 * k * v ** (2 * k - 1)
                   / math.factorial(2 * k + 1) for k in range(1, 25))

    for v in (1e-9, 1e-6, 1e-3, 0.0999, 0.1001, 0.3):
        got = sparsejac.jacobian(np.sinc, np.array([v])).toarray()[0, 0]
        assert abs(got - ref(v)) <= 1e-14 * abs(ref(v))


def test_errors_raised_inside_other_libraries_name_the_call():
    """Code of another library that fails on a traced array: its own error (a ValueError
    from scipy.sparse.block_diag unpacking a traced vector's shape) carries a note
    naming the function f called; a conversion sparsejac refused first is raised as
    sparsejac's error even when numpy or scipy turned it into another one (np.fromiter's
    "setting an array element with a sequence", csr_matrix's "unrecognized input"); the
    user's own errors are left as they are."""
    import scipy.sparse as sp

    x = np.linspace(0.1, 1.0, 5)
    with pytest.raises(ValueError, match="not enough values") as info:
        sparsejac.jacobian(lambda u: sp.block_diag([u]) @ u, x)
    assert "inside scipy.sparse.block_diag while f was traced" in "".join(info.value.__notes__)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="traced diagonals"):
        sparsejac.jacobian(lambda u: sp.diags_array([u], offsets=[0]) @ u, x)
    with pytest.raises(sparsejac.TracedConversionError, match=r"scipy\.sparse\.csr_matrix"):
        sparsejac.jacobian(lambda u: sp.csr_matrix(np.diag(u)) @ u, x)
    with pytest.raises(sparsejac.TracedConversionError, match=r"float\(\)") as info:
        sparsejac.jacobian(lambda u: np.fromiter((v ** 2 for v in u), float), x)
    assert "setting an array element" in "".join(info.value.__notes__)
    with pytest.raises(ValueError, match="could not be broadcast") as info:
        sparsejac.jacobian(lambda u: u[:3] + u, x)
    assert not getattr(info.value, "__notes__", None)


def test_bad_params_and_f_name_the_argument(tmp_path):
    """params=3.0, params of strings and a str f were Python's own errors; save("plan") wrote
    plan.npz, which load("plan") could not find."""
    with pytest.raises(TypeError, match=r"`f` must be callable; got str"):
        sparsejac.jacobian_sparsity("f", np.ones(3))
    with pytest.raises(TypeError, match=r"`params` must be a sequence"):
        sparsejac.SparseJacobian(lambda x, t: t * x, np.ones(3), params=3.0)
    jac = sparsejac.SparseJacobian(lambda x, t: t * x, np.ones(3), params=(1.0,))
    with pytest.raises(TypeError, match=r"`params\[0\]` must be a real number"):
        jac.evaluate(np.ones(3), params=("a",))
    f = lambda x: x[1:] ** 2 - x[:-1]  # noqa: E731
    sparsejac.SparseJacobian(f, np.ones(4)).save(tmp_path / "plan")
    np.testing.assert_array_equal(
        sparsejac.load(tmp_path / "plan", f)(np.ones(4)).toarray(),
        sparsejac.jacobian(f, np.ones(4)).toarray())


def test_load_with_arguments_of_another_pattern_says_so(tmp_path):
    """The refusal spoke of a `sparsity` argument load's caller never passed."""
    def g(x, s):
        return x ** 2 + np.roll(x, s)

    sparsejac.SparseJacobian(g, np.ones(6), args=(-1,)).save(tmp_path / "g.npz")
    with pytest.raises(ValueError, match=r"saved plan's pattern misses .* prepare anew") as info:
        sparsejac.load(tmp_path / "g.npz", g, args=(1,))
    assert "omit `sparsity`" not in str(info.value)


def test_a_ragged_list_of_traced_values_gets_numpys_error_with_the_shapes():
    """A (1,) array among scalars raised numpy's 'all input arrays must have the same shape'
    from inside the tracer's stacking; numpy's own message, with the shapes and the line."""
    x = np.array([0.7, -1.3, 2.1])

    def f(x):
        return np.array([x[0] * x[1], x[1:2] ** 2, x[2]])

    with pytest.raises(ValueError, match=r"inhomogeneous shape.*shapes \[\(\), \(1,\)\]"):
        sparsejac.jacobian(f, x)
    with pytest.raises(ValueError, match="inhomogeneous shape"):
        sparsejac.jacobian(lambda x: [x[0] * x[1], x[1:2] ** 2, np.sum(x)], x)


def test_ufunc_casting_is_applied_as_numpy_applies_it():
    """casting= was dropped: np.add(x, 1, dtype=int, casting='unsafe') raised numpy's
    'same_kind' error; the operands are cast first, as numpy does, and a cast numpy refuses
    is refused."""
    x = np.array([1.5, 2.5])
    f = lambda x: np.add(x, 1, dtype=int, casting="unsafe") * x  # noqa: E731
    np.testing.assert_array_equal(sparsejac.jacobian(f, x).toarray(), np.diag(f(x) / x))
    g = lambda x: np.multiply(x, 3, dtype=np.float32, casting="unsafe") * x  # noqa: E731
    np.testing.assert_allclose(sparsejac.jacobian(g, x).toarray(), np.diag(6 * x))
    with pytest.raises(TypeError, match="casting rule 'safe'"):
        sparsejac.jacobian(lambda x: np.add(x, 1, dtype=np.float32, casting="safe"), x)


def test_reshape_by_an_integer_array():
    x = np.arange(6.0)
    for shape in (np.array([2, 3]), [2, -1]):
        got = sparsejac.jacobian(lambda x, s=shape: x.reshape(s).sum(axis=0), x).toarray()
        np.testing.assert_array_equal(got, np.tile(np.eye(3), 2))

    def f(x):
        shape = np.zeros(2, dtype=int)  # a buffer made in f (a traced constant)
        shape[:] = [3, 2]
        return x.reshape(shape).sum(axis=1)

    np.testing.assert_array_equal(sparsejac.jacobian(f, x).toarray(),
                                  np.kron(np.eye(3), np.ones(2)))
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        sparsejac.jacobian(lambda x: x.reshape([2.0, 3.0]), x)


def test_a_library_converting_an_odes_time_is_exact_and_warns_after_a_few_times():
    """BarycentricInterpolator(tp, fp)(t) in a right-hand side converts the time t: it is a
    branch per value of t (exact, prepared again for each), and the warning names the
    numpy way (np.interp of t) and the splines that are traced."""
    from scipy.interpolate import BarycentricInterpolator

    spline = BarycentricInterpolator(np.linspace(0.0, 5.0, 6), np.arange(6.0) ** 2)

    def rhs(t, y):
        return -y * spline(t)

    jac = sparsejac.ode_jacobian(rhs, 0.0, np.ones(3))
    np.testing.assert_allclose(jac(1.5, np.ones(3)), -2.25 * np.eye(3), rtol=1e-14)
    np.testing.assert_allclose(jac(2.5, np.ones(3)), -6.25 * np.eye(3), rtol=1e-14)
    with pytest.warns(RuntimeWarning, match=r"np\.asarray\(\) of a parameter.*np\.interp.*"
                                            r"CubicSpline"):
        jac(3.5, np.ones(3))


def test_a_multivariate_distributions_refusal_names_it():
    import scipy.stats as st

    with pytest.raises(sparsejac.TracedConversionError,
                       match=r"scipy\.stats\.multivariate_t\.logpdf received"):
        sparsejac.jacobian(
            lambda x: np.atleast_1d(st.multivariate_t.logpdf(x, loc=np.zeros(2))),
            np.array([0.1, 0.2]))


def test_writing_into_a_linspace_grid_says_grids_are_plain():
    def f(x):
        u = np.linspace(0.0, 1.0, x.size + 2)
        u[1:-1] = x
        return u[2:] - u[:-2]

    with pytest.raises(sparsejac.TracedConversionError, match=r"np\.arange, np\.linspace"):
        sparsejac.jacobian(f, np.ones(3))


_GRID = np.linspace(0.0, 3.0, 6)


def _piecewise_over_a_plain_grid(p):
    return np.piecewise(_GRID, [_GRID < 1.5, _GRID >= 1.5],
                        [lambda tt: p[0] * tt, lambda tt: p[1] * tt ** 2])


def test_a_numpy_function_given_plain_arrays_is_named_with_the_way_out() -> None:
    """np.piecewise over a plain grid with functions of traced parameters: numpy's own code
    fills a plain array; the error spoke of global buffers and named no numpy function."""
    with pytest.raises(sparsejac.TracedConversionError,
                       match=r"numpy\.piecewise converted .*test_errors\.py:\d+.*"
                             r"np\.asarray\(t, like=x\)"):
        sparsejac.jacobian(_piecewise_over_a_plain_grid, np.array([1.0, 2.0]))

    def traced_grid(p):  # the way out the message names
        t = np.asarray(_GRID, like=p)
        return np.piecewise(t, [_GRID < 1.5, _GRID >= 1.5],
                            [lambda tt: p[0] * tt, lambda tt: p[1] * tt ** 2])

    expect = np.zeros((6, 2))
    expect[:3, 0], expect[3:, 1] = _GRID[:3], _GRID[3:] ** 2
    np.testing.assert_array_equal(sparsejac.jacobian(traced_grid, np.array([1.0, 2.0])).toarray(),
                                  expect)


def test_a_dot_method_of_a_plain_array_says_first_how_to_write_it():
    """S.dot(rates) with a constant ndarray S (a kinetics idiom) converts the traced rates
    in numpy's C code; the way out (S @ rates) was the last of eight suggestions."""
    S = np.array([[-1.0, 1.0], [1.0, -1.0], [0.0, 2.0]])

    def rhs(c):
        return S.dot(np.stack([2.0 * c[0] * c[1], 0.5 * c[2] ** 2]))

    with pytest.raises(sparsejac.TracedConversionError) as info:
        sparsejac.jacobian(rhs, np.array([1.0, 2.0, 3.0]))
    text = str(info.value)
    assert text.index("write A @ y or np.dot(A, y)") < text.index("Otherwise")
    J = sparsejac.jacobian(lambda c: S @ np.stack([2.0 * c[0] * c[1], 0.5 * c[2] ** 2]),
                           np.array([1.0, 2.0, 3.0])).toarray()
    np.testing.assert_allclose(J, S @ np.array([[4.0, 2.0, 0.0], [0.0, 0.0, 3.0]]))


@pytest.mark.parametrize("lookup", ["searchsorted", "digitize"])
def test_a_table_lookup_in_time_is_a_branch_on_t(lookup):
    """u_data[np.searchsorted(t_data, t) - 1] in a right-hand side (a hold of an input, found
    refused by two hunts from outside): an index computed from t alone is read as a branch,
    as int(t) is, and each interval gets its exact Jacobian (hand-derived: -u_k I); an index
    computed from x is refused by a prepared Jacobian, naming the indexing and local=True."""
    tk, uk = np.linspace(0.0, 5.0, 6), np.arange(6.0) + 1.0

    def rhs(t, y):
        i = np.searchsorted(tk, t) - 1 if lookup == "searchsorted" else np.digitize(t, tk) - 1
        return -uk[i] * y ** 2

    y = np.array([1.0, 2.0])
    jac = sparsejac.ode_jacobian(rhs, 0.5, y, format="csr")
    for t in (0.5, 2.5, 4.2, 0.7):
        want = np.searchsorted(tk, t) - 1
        np.testing.assert_array_equal(jac(t, y).toarray(), np.diag(-2.0 * uk[want] * y))
    assert jac.prepared.stats()["branches"][1] == 2  # one more preparation per interval met
    with pytest.raises(sparsejac.ConcretizationError, match=r"index.*local=True"):
        sparsejac.SparseJacobian(lambda x: x[getattr(np, lookup)(*(
            (x, 0.5) if lookup == "searchsorted" else (0.5, x)))] * x, np.linspace(0, 1, 5))


def test_a_refusal_swallowed_by_compiled_code_is_raised():
    """scipy.optimize.fsolve inside f with x reaching it through the function it solves
    (CellML models solve algebraic loops so, found by the idioms hunt): MINPACK converts the
    traced result, sparsejac refuses, and MINPACK raised its own error ('Result from function
    call is not a proper array of floats'); now sparsejac's refusal, naming fsolve."""
    from scipy.optimize import fsolve

    def f(x):
        root = fsolve(lambda z: z ** 3 - x[0], np.ones(1))
        return root * x[1]

    with pytest.raises(sparsejac.TracedConversionError, match=r"scipy\.optimize\.fsolve") as e:
        sparsejac.jacobian(f, np.array([8.0, 1.0]))
    assert "it then surfaced as" in "".join(getattr(e.value, "__notes__", []))


# -- found from outside: a hunt of the API contract -----------------------------------------


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # (numpy's, about np.matrix)
def test_matrix_and_masked_points_are_refused() -> None:
    """``np.matrix`` (``*`` a matrix product) and masked arrays were silently read as plain
    arrays: the Jacobian of another function (the elementwise square; the mask dropped)."""
    xm = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError, match=r"`x` must be a plain numpy array; got a numpy\.matrix"):
        sparsejac.jacobian(lambda x: x * x, xm)
    xk = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    with pytest.raises(TypeError, match=r"`x0` must be a plain numpy array; got a masked"):
        sparsejac.SparseJacobian(lambda x: np.atleast_1d(np.sum(x)), xk)
    jac = sparsejac.SparseJacobian(lambda x: x ** 2, np.ones(4))
    with pytest.raises(TypeError, match=r"`x` must be a plain numpy array"):
        jac(np.matrix(np.ones(4)))


def test_arguments_are_checked_by_every_entry_point() -> None:
    """``args``, ``kwargs``, ``params`` and ``local`` got foreign errors (or were taken:
    ``local="no"`` gave the local Hessian pattern, ``args="ab"`` was splatted into f)."""
    from sparsejac import ad

    f = lambda x, *a, **k: x ** 2  # noqa: E731
    s = lambda x, *a, **k: np.sum(x ** 2)  # noqa: E731
    x = np.ones(3)
    calls: list[tuple[str, Callable[[], Any]]] = [
        ("args", lambda: sparsejac.jacobian_sparsity(f, x, args=5)),
        ("args", lambda: sparsejac.jacobian_sparsity(f, x, args="ab")),
        ("kwargs", lambda: sparsejac.jacobian_sparsity(f, x, kwargs=[1])),
        ("args", lambda: ad.jvp(f, x, np.ones(3), args=5)),
        ("args", lambda: ad.vjp(f, x, np.ones(3), args=None)),
        ("args", lambda: ad.hvp(s, x, np.ones(3), args="ab")),
        ("params", lambda: sparsejac.SparseHessian(s, x, params=5)),
        ("params", lambda: sparsejac.hessian(s, x, params=5)),
        ("params", lambda: sparsejac.hessian_sparsity(s, x, params=5)),
        ("params[0]", lambda: sparsejac.SparseHessian(lambda x, t: np.sum(x * t), x,
                                                      params=("a",))),
        ("local", lambda: sparsejac.hessian_sparsity(s, x, local="no")),
    ]
    for name, call in calls:
        with pytest.raises(TypeError, match=f"`{re.escape(name)}` must be"):
            call()


def test_products_of_other_kinds_are_refused_not_cast() -> None:
    """``from_products`` cast complex blocks to their real part (a warning only), None to
    NaN and strings to numbers."""
    import scipy.sparse as sp

    P = sp.csr_array(np.eye(3, dtype=bool))
    D = np.diag([1 + 2j, 3j, 1.0])
    with pytest.raises(ValueError, match=r"`jvp` must return .* got an array of dtype complex"):
        sparsejac.from_products(sparsity=P, jvp=lambda x, S: D @ S)(np.ones(3))
    with pytest.raises(ValueError, match=r"`vjp` must return .* got an array of dtype complex"):
        sparsejac.from_products(sparsity=P, vjp=lambda x, W: W @ D)(np.ones(3))
    with pytest.raises(ValueError, match=r"got an array of dtype object"):
        sparsejac.from_products(sparsity=P, jvp=lambda x, S: np.full(S.shape, None))(np.ones(3))
    with pytest.raises(ValueError, match=r"got NoneType None"):
        sparsejac.from_products(sparsity=P, jvp=lambda x, S: None)(np.ones(3))
    J = sparsejac.from_products(sparsity=P, jvp=lambda x, S: [[1], [2], [3]])(np.ones(3))
    np.testing.assert_array_equal(J.diagonal(), [1.0, 2.0, 3.0])  # lists still work


def test_workers_results_are_counted_both_ways() -> None:
    """A ``workers`` map returning None, or more results than points, was not refused."""
    f = lambda x: x ** 2  # noqa: E731
    x = np.ones(3)
    with pytest.raises(TypeError, match=r"`workers` must return"):
        sparsejac.jacobian(f, x, mode="fd", sparsity=np.eye(3), workers=lambda g, pts: None)
    with pytest.raises(ValueError, match=r"`workers` returned more results"):
        sparsejac.jacobian(f, x, mode="fd", sparsity=np.eye(3),
                           workers=lambda g, pts: [*map(g, pts), g(x)])


def test_adapter_shapes_and_paths_are_checked_at_preparation(tmp_path: Any) -> None:
    """An ODE right-hand side of another size, a mesh that does not fit y, a directory as
    the plan's path, and KrylovMethod's shape, args and solver were taken silently."""
    x = np.linspace(0.5, 1.5, 5)
    with pytest.raises(ValueError, match=r"`fun` must return dy/dt, an array of y0's size 5"):
        sparsejac.ode_jacobian(lambda t, y: y[1:], 0.0, x)
    with pytest.raises(ValueError, match=r"`x` must be the mesh of y's 4 nodes"):
        sparsejac.bvp_jacobian(lambda x, y: y, lambda a, b: a - b, x, np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"is a directory; give a file name"):
        sparsejac.SparseJacobian(lambda x: x ** 2, x).save(tmp_path)
    F = lambda x, *a: 4 * x - np.roll(x, 1) + x ** 3 - 1.0  # noqa: E731
    with pytest.raises(TypeError, match=r"`shape` must be"):
        sparsejac.KrylovMethod(F, shape="a")
    with pytest.raises(TypeError, match=r"`args` must be"):
        sparsejac.KrylovMethod(F, args=5)
    from scipy.optimize import newton_krylov

    bad = sparsejac.KrylovMethod(F, solver=lambda *a, **k: None)
    with pytest.raises(TypeError, match=r"`solver` must return \(x, info\)"):
        newton_krylov(F, np.zeros(10), **bad.jac_options)


def test_a_bytes_path_is_a_pattern_file(tmp_path: Any) -> None:
    """``sparsity=b"pattern.mtx"`` was read as an array of strings."""
    import os

    import scipy.io as sio
    import scipy.sparse as sp

    path = os.path.join(tmp_path, "pattern.mtx")
    sio.mmwrite(path, sp.eye_array(3))
    J = sparsejac.jacobian(lambda x: x ** 2, np.ones(3), sparsity=os.fsencode(path))
    np.testing.assert_array_equal(J.toarray(), 2.0 * np.eye(3))
