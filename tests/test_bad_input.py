"""Bad input found by probing the public surface from outside: each gets a clear error.

Before, these crashed the process (an out-of-range index in a pattern), raised numpy's,
scipy's, numba's or zipfile's own errors, answered for the arguments of an earlier call, or
read ``None`` as NaN.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import sparsejac
from sparsejac.pattern import PatternFileError


def _f(x):
    return np.concatenate([x[1:] ** 2 - x[:-1], [np.sum(x ** 2)]])


# -- patterns whose index arrays do not describe a matrix (a segmentation fault before) ------

def _bad_csr():
    return sp.csr_array((np.ones(1), np.array([7]), np.array([0, 1, 1, 1])), shape=(3, 3))


@pytest.mark.parametrize("call", [
    pytest.param(lambda a: sparsejac.color(a, "column", "natural"), id="color"),
    pytest.param(lambda a: sparsejac.color(a), id="color-best"),
    pytest.param(lambda a: sparsejac.SparseJacobian(lambda x: x ** 2, np.ones(3), sparsity=a),
                 id="SparseJacobian"),
    pytest.param(lambda a: sparsejac.SparseJacobian(lambda x: x ** 2, np.ones(3), sparsity=a,
                                                    mode="fd"), id="fd"),
])
def test_an_index_outside_the_shape_is_refused(call):
    with pytest.raises(ValueError, match=r"`sparsity` \(csr\) has a column index outside "
                                         r"0 \.\. 2 \(min 7, max 7\)"):
        call(_bad_csr())


def test_negative_indices_and_a_broken_indptr_are_refused():
    a = _bad_csr()
    a.indices[0] = -5
    with pytest.raises(ValueError, match=r"column index outside 0 \.\. 2 \(min -5"):
        sparsejac.color(a, "column", "natural")
    csc = sp.csc_array(np.eye(3))
    csc.indices[1] = 3
    with pytest.raises(ValueError, match=r"\(csc\) has a row index outside 0 \.\. 2"):
        sparsejac.color(csc, "column", "natural")
    broken = sp.csr_array(np.eye(3))
    broken.indptr[1] = 5
    with pytest.raises(ValueError, match="invalid indptr"):
        sparsejac.color(broken, "column", "natural")


def test_a_file_with_a_bad_index_or_a_vast_shape_is_refused(tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(path, format=np.array(b"csr"), shape=np.array([3, 3]), data=np.ones(1),
             indices=np.array([7]), indptr=np.array([0, 1, 1, 1]))
    with pytest.raises(PatternFileError, match="column index outside"):
        sparsejac.color(str(path), "column", "natural")
    vast = tmp_path / "vast.mtx"
    vast.write_text("%%MatrixMarket matrix coordinate real general\n"
                    "100000000000 100000000000 1\n1 1 1\n")
    with pytest.raises(PatternFileError, match="does not fit in memory"):
        sparsejac.color(str(vast), "column", "natural")


# -- a call without arguments uses the preparation's, not the previous call's ------------------

def test_a_call_without_arguments_uses_the_preparations():
    x0 = np.linspace(0.5, 1.5, 4)
    jac = sparsejac.SparseJacobian(lambda x, scale=1.0: scale * x ** 2, x0,
                                   kwargs={"scale": 2.0})
    np.testing.assert_allclose(jac(x0, scale=3.0).diagonal(), 6 * x0)
    np.testing.assert_allclose(jac(x0).diagonal(), 4 * x0)
    np.testing.assert_allclose(jac.values(x0), 4 * x0)
    np.testing.assert_allclose(jac.evaluate(x0).diagonal(), 4 * x0)
    d1, d2 = np.float64(2.0), np.float64(3.0)
    jac = sparsejac.SparseJacobian(lambda x, d: d * x ** 2, x0, args=(d1,))
    np.testing.assert_allclose(jac(x0, d2).diagonal(), 6 * x0)
    np.testing.assert_allclose(jac(x0).diagonal(), 4 * x0)
    hess = sparsejac.SparseHessian(lambda x, d: d * np.sum(x ** 3), x0, args=(d1,))
    np.testing.assert_allclose(hess(x0, d2).diagonal(), 18 * x0)
    np.testing.assert_allclose(hess(x0).diagonal(), 12 * x0)
    np.testing.assert_allclose(hess.values(x0), 12 * x0)


def test_solver_adapters_still_pass_their_arguments():
    x0 = np.linspace(0.5, 1.5, 4)
    d = np.float64(3.0)
    lsq = sparsejac.least_squares_jacobian(lambda x, d: d * x ** 2, x0, args=(np.float64(2.0),))
    np.testing.assert_allclose(np.diag(lsq(x0, d)), 6 * x0)
    ode = sparsejac.ode_jacobian(lambda t, y, d: d * y ** 2, 0.0, x0, args=(np.float64(2.0),))
    np.testing.assert_allclose(np.diag(ode(0.0, x0, d)), 6 * x0)


# -- values that are not what the argument holds ----------------------------------------------

def test_complex_or_missing_vectors_are_refused():
    hess = sparsejac.SparseHessian(lambda x: np.sum(x[1:] ** 2 * x[:-1]), np.ones(4))
    with pytest.raises(TypeError, match="`p` must be 4 finite real numbers; got ndarray"):
        hess.hessp(np.ones(4), np.ones(4) * 1j)
    with pytest.raises(TypeError, match="`p` must be 4 finite real numbers; got str"):
        hess.hessp(np.ones(4), "a")
    ch = sparsejac.constraint_hessian(lambda x: np.array([np.sum(x ** 2)]), np.ones(4))
    with pytest.raises(TypeError, match="`v` must be 1 finite real number; got NoneType"):
        ch(np.ones(4), None)


def test_a_read_only_out_is_refused():
    jac = sparsejac.SparseJacobian(_f, np.linspace(0.5, 1.5, 6))
    out = jac(np.ones(6))
    out.data.setflags(write=False)
    with pytest.raises(ValueError, match="writeable data"):
        jac(np.ones(6), out=out)


@pytest.mark.parametrize(("t", "error"), [(10 ** 400, TypeError), (math.nan, ValueError),
                                          (math.inf, ValueError), ("a", TypeError)])
def test_an_odes_time_must_be_a_finite_number(t, error):
    jac = sparsejac.ode_jacobian(lambda t, y: -y * t, 0.0, np.ones(3))
    with pytest.raises(error, match="`t` must be"):
        jac(t, np.ones(3))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"verify": "no"}, "`verify` must be True or False; got str 'no'"),
    ({"calibrate": "bogus"}, "`calibrate` must be True or False"),
    ({"check": None}, "`check` must be True or False"),
])
def test_flags_must_be_booleans(kwargs, match):
    with pytest.raises(TypeError, match=match):
        sparsejac.SparseJacobian(_f, np.ones(4), **kwargs)


def test_option_strings_given_arrays_are_refused():
    with pytest.raises(ValueError, match="`partition` must be a string"):
        sparsejac.color(np.eye(3), partition=np.array([1, 2]))
    with pytest.raises(ValueError, match="Unknown `fd_method`"):
        sparsejac.SparseJacobian(_f, np.ones(4), mode="fd", fd_method=np.array([1.0, 2.0]),
                                 sparsity=np.ones((4, 4)))
    with pytest.raises(TypeError, match="`local` must be True or False"):
        sparsejac.jacobian_sparsity(_f, np.ones(4), local=np.array([1, 0]))


# -- saved plans --------------------------------------------------------------------------------

def test_damaged_plan_files_are_not_plans(tmp_path):
    x0 = np.linspace(0.5, 1.5, 6)
    good = str(tmp_path / "plan.npz")
    sparsejac.SparseJacobian(_f, x0).save(good)
    items = dict(np.load(good))
    raw = (tmp_path / "plan.npz").read_bytes()
    (tmp_path / "empty.npz").write_bytes(b"")
    (tmp_path / "truncated.npz").write_bytes(raw[: len(raw) // 2])
    np.savez(tmp_path / "nox0.npz", **{k: v for k, v in items.items() if k != "x0"})
    bad = dict(items, indices=np.array(items["indices"]))
    bad["indices"][0] = 10 ** 6
    np.savez(tmp_path / "index.npz", **bad)
    for name in ("empty", "truncated", "nox0", "index"):
        with pytest.raises(ValueError, match="is not a saved sparsejac plan"):
            sparsejac.load(str(tmp_path / f"{name}.npz"), _f)
    with pytest.raises(TypeError, match="`f` must be callable"):
        sparsejac.load(good, None)
    with pytest.raises(TypeError, match="`args` must be a tuple"):
        sparsejac.load(good, _f, args="ab")


@pytest.mark.parametrize("path", [b"/tmp/plan.npz", "", None, "somewhere" + os.sep])
def test_save_needs_a_file_name(path):
    jac = sparsejac.SparseJacobian(_f, np.ones(4))
    with pytest.raises(TypeError, match="`path` must name a file"):
        jac.save(path)


def test_plot_coloring_checks_its_arguments(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is an optional extra")
    from sparsejac.plot import plot_coloring

    result = sparsejac.color(np.eye(4) + np.eye(4, k=1), "column")
    with pytest.raises(TypeError, match="`result` must be a ColoringResult"):
        plot_coloring(None, str(tmp_path / "a.png"))
    with pytest.raises(TypeError, match="`path` must be a file name"):
        plot_coloring(result, None)
    with pytest.raises(ValueError, match="must end in an image format's extension"):
        plot_coloring(result, str(tmp_path / "a.txt"))


def test_helpers_name_what_they_were_given():
    from sparsejac.coloring import check_result, partition_cost

    result = sparsejac.color(np.eye(4) + np.eye(4, k=1), "column")
    with pytest.raises(TypeError, match="`result` must be a ColoringResult"):
        check_result(None)
    with pytest.raises(TypeError, match="`result` must be a ColoringResult"):
        partition_cost(None)
    with pytest.raises(ValueError, match=r"`J` has shape \(3, 3\); the colouring's pattern"):
        check_result(result, J=np.ones((3, 3)))
    jac = sparsejac.SparseJacobian(_f, np.ones(4))
    with pytest.raises(TypeError, match="`solver` must be"):
        sparsejac.KrylovMethod(jac, solver=None)
    products = sparsejac.from_products(sparsity=np.eye(3), jvp=lambda x, s: "abc")
    with pytest.raises(ValueError, match="`jvp` must return J @ S: an array of real numbers"):
        products(np.ones(3))


def test_an_f_that_changes_between_calls_raises_the_same_error_on_replay():
    """Random weights times x (scipy's XinSheYang01 benchmark), prepared at 0 where they do
    not show: the replay's refusal was a bare RuntimeError, the preparation's a
    TraceMismatchError (the benchmark hunt)."""
    rng = np.random.default_rng(0)

    def f(x):
        return rng.random(x.size) * x ** 2

    jac = sparsejac.SparseJacobian(f, np.zeros(3))
    with pytest.raises(sparsejac.TraceMismatchError, match="does not compute the same values"):
        jac(np.ones(3))
    hess = sparsejac.SparseHessian(lambda x: np.sum(f(x)), np.zeros(3))
    with pytest.raises(sparsejac.TraceMismatchError, match="does not compute the same value"):
        hess(np.ones(3))


def test_empty_names_none_options_and_vast_warm_ups_are_refused():
    with pytest.raises(ValueError, match="`sparsity` is an empty file name"):
        sparsejac.SparseJacobian(_f, np.ones(4), sparsity="")
    with pytest.raises(TypeError, match="`partitions` must be a name or a list of names"):
        sparsejac.matrix_report(np.eye(3), None, None)
    with pytest.raises(ValueError, match=r"`sizes` must be 4 to 10\*\*6 each"):
        sparsejac.warm_up(sizes=(10 ** 12,))


def test_seed_matrices_without_a_seed_are_refused():
    from sparsejac.ad import hvp, jvp

    with pytest.raises(ValueError, match=r"`S` has shape \(6, 0\).*at least one seed"):
        jvp(lambda x: x ** 2, np.ones(6), np.ones((6, 0)))
    with pytest.raises(ValueError, match=r"`V` has shape \(6, 0\).*at least one seed"):
        hvp(lambda x: np.sum(x ** 3), np.ones(6), np.ones((6, 0)))


def test_a_flat_x_whose_reshape_changes_f_warns_once() -> None:
    """A flat x for a multi-dimensional x0 is differentiated reshaped to x0's shape. An f
    written for flat vectors (as scipy passes them) but prepared with a 3 x 2 x0 computes
    another function on that shape: its Hessian was silently the other function's (found
    from outside). The first flat call now warns, naming both shapes and the way out, once
    per object. An f written for x0's shape (which refuses the flat vector) and an
    elementwise f (the same values) keep the reshape without a word."""
    x0 = np.full((3, 2), 0.5)
    flat = np.linspace(-1.0, 1.0, 6)

    def chain(x: Any) -> Any:  # written for a flat x
        return np.sum((x[1:] - x[:-1] ** 2) ** 2)

    hess = sparsejac.SparseHessian(chain, x0)
    with pytest.warns(RuntimeWarning, match=r"`x` is a flat vector.*shape \(3, 2\).*x0\.ravel"):
        hess(flat)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hess(flat)  # once per object
        np.testing.assert_array_equal(  # prepared flat, as the warning says: chain's Hessian
            sparsejac.SparseHessian(chain, x0.ravel())(flat).toarray(),
            sparsejac.hessian(chain, flat).toarray())
        columns = sparsejac.SparseJacobian(lambda x: x[:, 0] * x[:, 1], x0)(flat).toarray()
        np.testing.assert_array_equal(columns[0, :2], [flat[1], flat[0]])
        cubes = sparsejac.SparseHessian(lambda x: np.sum(x ** 3), x0)
        np.testing.assert_array_equal(cubes(flat).diagonal(), 6.0 * flat)
        np.testing.assert_array_equal(cubes.hessp(flat, np.ones(6)), 6.0 * flat)
    with pytest.warns(RuntimeWarning, match=r"`x` is a flat vector.*this Jacobian"):
        sparsejac.SparseJacobian(lambda x: x[1:] - x[:-1] ** 2, x0)(flat)
