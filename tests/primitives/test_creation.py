"""Creation family (``sparsejac.primitives.creation``): arrays made from a traced array are
constants that can receive traced values; queries answer without tracing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import sparsejac
from tests.primitives.util import check_exact, rand

X34 = rand((3, 4), 71)


def _store(make: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        out = make(x)
        out[..., :1] = 1.0  # defined values even for np.empty_like
        out[..., 1:] = x[..., :-1] ** 2
        return out

    return f


MAKERS = [
    pytest.param(np.zeros_like, id="zeros_like"),
    pytest.param(np.empty_like, id="empty_like"),
    pytest.param(np.ones_like, id="ones_like"),
    pytest.param(lambda x: np.full_like(x, 2.5), id="full_like"),
    pytest.param(lambda x: np.zeros_like(x, dtype=np.float32), id="zeros_like_float32"),
    pytest.param(lambda x: np.zeros((3, 4), like=x), id="zeros_like_kw"),
    pytest.param(lambda x: np.empty((3, 4), like=x), id="empty_like_kw"),
    pytest.param(lambda x: np.ones((3, 4), like=x), id="ones_like_kw"),
    pytest.param(lambda x: np.full((3, 4), -1.0, like=x), id="full_like_kw"),
    pytest.param(lambda x: np.eye(3, 4, like=x), id="eye"),
    pytest.param(lambda x: np.array(np.ones((3, 4)), like=x), id="array_like_kw"),
]


@pytest.mark.parametrize("make", MAKERS)
def test_created_array_receives_traced_values(make: Callable[[Any], Any]) -> None:
    """``out = make(x); out[..., 1:] = x[..., :-1]**2``: shifted identity, first column empty."""
    expected = np.zeros((3, 4, 3, 4), dtype=bool)
    for i in range(3):
        for j in range(1, 4):
            expected[i, j, i, j - 1] = True
    check_exact(_store(make), X34, expected.reshape(12, 12))


def test_like_shape_override() -> None:
    """``np.zeros_like(x, shape=...)`` makes a constant of another shape."""
    def f(x: Any) -> Any:
        out = np.zeros_like(x, shape=(2,))
        out[0] = x[1, 1]
        return out

    check_exact(f, X34)


def test_full_like_with_traced_fill() -> None:
    """A traced fill value is broadcast to every element."""
    check_exact(lambda x: np.full_like(x, x[0, 0]), X34)


@pytest.mark.parametrize("make", [
    pytest.param(lambda x: np.arange(4.0, like=x), id="arange"),
    pytest.param(lambda x: np.identity(4, like=x), id="identity"),
    pytest.param(lambda x: np.linspace(0.0, 1.0, 4), id="linspace"),
    pytest.param(lambda x: np.ones(4, like=x), id="ones"),
])
def test_constants_have_no_dependencies(make: Callable[[Any], Any]) -> None:
    """Constants made from x carry no dependencies; combined with x they broadcast."""
    check_exact(lambda x: make(x) * x[0, :], X34)


def test_array_of_traced_elements_with_like() -> None:
    """``np.array([...], like=x)`` stacks traced scalars and constants; nested lists too."""
    check_exact(lambda x: np.array([x[0, 0], 2.0, x[2, 3] ** 2], like=x), X34)
    check_exact(lambda x: np.array([[x[0, 0], x[1, 1]], [x[2, 2], 1.0]], like=x), X34)
    check_exact(lambda x: np.asarray([x[0], x[1] * 2], like=x), X34)


def test_asarray_like_of_tracer_is_identity() -> None:
    """``np.asarray(t, like=x)`` returns the traced array itself."""
    check_exact(lambda x: np.asarray(x[1:], like=x) * 2, X34)


def test_queries_answer_without_tracing() -> None:
    """np.shape, ndim, size, result_type and the complex queries answer from metadata."""
    seen: dict[str, Any] = {}

    def f(x: Any) -> Any:
        seen.update(shape=np.shape(x), ndim=np.ndim(x), size=np.size(x),
                    size1=np.size(x, 1), rt=np.result_type(x, np.float32),
                    cplx=np.iscomplexobj(x), real=np.isrealobj(x), len=len(x))
        return x

    sparsejac.jacobian_sparsity(f, X34)
    assert seen == {"shape": (3, 4), "ndim": 2, "size": 12, "size1": 4,
                    "rt": np.dtype(np.float64), "cplx": False, "real": True, "len": 3}


def test_isclose_and_nan_to_num() -> None:
    """isclose has no dependencies; nan_to_num of a finite array is the identity."""
    assert sparsejac.jacobian_sparsity(lambda x: np.isclose(x, 1.0) * 1.0, X34).nnz == 0
    check_exact(lambda x: np.nan_to_num(x * 2), X34, np.eye(12, dtype=bool))


def test_allclose_is_a_value_read() -> None:
    """np.allclose returns a Python bool: refused globally, read at x locally."""
    def f(x: Any) -> Any:
        return x * 2 if np.allclose(x, 1.0, atol=1.0) else x

    with pytest.raises(sparsejac.ConcretizationError):
        sparsejac.jacobian_sparsity(f, X34)
    check_exact(f, X34, np.eye(12, dtype=bool), local=True)


SCALAR_LISTS = [
    pytest.param(lambda x: np.array([x[0] ** 2 - x[1], x[1] * x[2], np.sum(x)]), id="list"),
    pytest.param(lambda x: np.array([x[0], 2.0, x[2] ** 2]), id="with_constant"),
    pytest.param(lambda x: np.array([[x[0], x[1]], [x[2], 1.0]]), id="nested"),
    pytest.param(lambda x: np.array([x[0], x[1]]) * 2.0 - 1.0, id="object_arithmetic"),
    pytest.param(lambda x: np.sin(np.array([x[0], x[2]])) + np.exp(np.array([x[1], x[0]])),
                 id="object_loop_ufuncs"),
    pytest.param(lambda x: np.array([x[0], x[2]]) + x[:2], id="meets_traced_operand"),
    pytest.param(lambda x: x[1:] * np.array([x[2], x[0]]), id="meets_traced_operand_left"),
    pytest.param(lambda x: np.concatenate([np.array([x[0] * x[2]]), x]), id="into_function"),
    pytest.param(lambda x: np.array([[1.0, 2.0], [3.0, 4.0]]) @ np.array([x[0], x[1]]),
                 id="constant_matrix_times"),
    pytest.param(lambda x: np.asarray(x[0]) * x, id="asarray_of_scalar"),
]


@pytest.mark.parametrize("f", SCALAR_LISTS)
def test_np_array_of_traced_scalars(f: Callable[[Any], Any]) -> None:
    """``np.array([a, b])`` of traced scalars (the usual way to write small residuals) is
    traced: numpy builds an object array of Tracers, lifted back where it meets a traced call
    or is returned. Pattern exact, Jacobians exact in every mode."""
    x = rand((3,), 7)
    check_exact(f, x)
    want = sparsejac.jacobian(f, x, mode="fd", sparsity=sparsejac.jacobian_sparsity(f, x))
    for mode in ("forward", "reverse", "mixed"):
        got = sparsejac.jacobian(f, x, mode=mode).toarray()
        np.testing.assert_allclose(got, want.toarray(), rtol=1e-6, atol=1e-8)
    jac = sparsejac.SparseJacobian(f, x)
    x2 = rand((3,), 8)
    want2 = sparsejac.jacobian(f, x2, mode="fd", sparsity=jac.sparsity).toarray()
    np.testing.assert_allclose(jac(x2).toarray(), want2, rtol=1e-6, atol=1e-8)


def test_np_array_of_traced_scalars_hand_derived() -> None:
    """The residuals of scipy's ``root`` tutorial, written with np.array, against their
    hand-derived Jacobian."""
    def f(x: Any) -> Any:
        return np.array([x[0] + 0.5 * (x[0] - x[1]) ** 3 - 1.0,
                         0.5 * (x[1] - x[0]) ** 3 + x[1]])

    x = np.array([0.3, -0.4])
    d = 1.5 * (x[0] - x[1]) ** 2
    want = np.array([[1.0 + d, -d], [-d, 1.0 + d]])
    for mode in ("forward", "reverse"):
        np.testing.assert_allclose(sparsejac.jacobian(f, x, mode=mode).toarray(), want,
                                   rtol=1e-14)
