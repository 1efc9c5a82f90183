"""Python branches on the parameters alone (an ODE's ``if t < t1:``): followed, and checked.

The value a branch reads depends on the parameters, not on ``x``, so the program traced at
one parameter value holds for every ``x`` and for the parameter values that take the same
branches (:class:`sparsejac.tracing.guards.ParamGuards`); a prepared Jacobian prepares
again for another branch and keeps the preparations (:func:`sparsejac.verifying.for_params`).
Oracles: hand-derived Jacobians and Hessians.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.integrate import solve_ivp
from scipy.interpolate import RegularGridInterpolator

import sparsejac
from sparsejac.verifying import BRANCHES_KEPT

# -- the SEIR model with a contact rate per time interval (a loop of `if a <= t <= b:`) ----

BETA, GAMMA, SIGMA = 0.3, 1 / 14, 1 / 2
INTERVALS, INTERVAL_BETAS = [[10, 20], [30, 60]], [0.45, 0.12]


def seir(t, y):
    beta = BETA
    for (a, b), interval_beta in zip(INTERVALS, INTERVAL_BETAS, strict=True):
        if a <= t <= b:
            beta = interval_beta
            break
    s, e, i, r = y
    n = s + e + i + r
    return np.array([-beta * s * i / n, beta * s * i / n - SIGMA * e, SIGMA * e - GAMMA * i,
                     GAMMA * i])


def seir_jacobian(t, y):
    beta = next((bt for (a, b), bt in zip(INTERVALS, INTERVAL_BETAS, strict=True)
                 if a <= t <= b), BETA)
    s, e, i, r = y
    n = s + e + i + r
    q = beta * s * i / n ** 2  # d(beta s i / n) / d(any) has -q from n
    infection = np.array([beta * i / n - q, -q, beta * s / n - q, -q])
    return np.array([-infection, infection + np.array([0, -SIGMA, 0, 0]), [0, SIGMA, -GAMMA, 0],
                     [0, 0, GAMMA, 0]])


Y0 = np.array([1e4, 30.0, 20.0, 5.0])


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_interval_loop_is_exact_in_every_interval(fmt):
    jac = sparsejac.ode_jacobian(seir, 0.0, Y0, format=fmt)
    for t in [0.0, 15.0, 35.0, 5.0, 45.0, 70.0, 15.5, 20.0, 10.0]:
        got = jac(t, Y0 * 1.1)
        got = got.toarray() if sp.issparse(got) else got
        np.testing.assert_allclose(got, seir_jacobian(t, Y0 * 1.1), rtol=1e-13, atol=1e-15)


def test_branches_are_prepared_once_and_kept():
    jac = sparsejac.ode_jacobian(seir, 0.0, Y0, format="csr")
    for t in [15.0, 35.0, 16.0, 36.0, 1.0, 15.0]:
        jac(t, Y0)
    kept, made = jac.prepared.stats()["branches"]
    assert made == 2  # [10, 20] and [30, 60]: the t = 0 preparation serves t = 1 too
    assert kept == 2


def test_solve_ivp_with_a_switch_in_time_matches_the_hand_derived_jacobian():
    ours = solve_ivp(seir, (0, 100), Y0, method="BDF", rtol=1e-8, atol=1e-6,
                     jac=sparsejac.ode_jacobian(seir, 0.0, Y0))
    hand = solve_ivp(seir, (0, 100), Y0, method="BDF", rtol=1e-8, atol=1e-6,
                     jac=seir_jacobian)
    assert ours.success
    assert hand.success
    assert (ours.nfev, ours.njev, ours.nlu) == (hand.nfev, hand.njev, hand.nlu)
    np.testing.assert_allclose(ours.y, hand.y, rtol=1e-10, atol=1e-8)


# -- a switch that changes the pattern ------------------------------------------------------

def switched(t, y):
    if t < 1.0:
        return -2.0 * y
    return -y + np.concatenate([[0.0], y[:-1] ** 2])


def switched_jacobian(t, y):
    if t < 1.0:
        return -2.0 * np.eye(y.size)
    return -np.eye(y.size) + np.diag(2 * y[:-1], -1)


def test_a_branch_with_another_pattern_has_its_own():
    y = np.arange(1.0, 6.0)
    jac = sparsejac.ode_jacobian(switched, 0.0, y, format="csr")
    before, after = jac(0.5, y), jac(3.0, y)
    assert before.nnz == 5
    assert after.nnz == 9
    np.testing.assert_array_equal(before.toarray(), switched_jacobian(0.5, y))
    np.testing.assert_array_equal(after.toarray(), switched_jacobian(3.0, y))
    with pytest.warns(RuntimeWarning, match="pattern of the branch"):
        assert jac.sparsity.nnz == 9  # the pattern in use follows the branch


def test_values_refuse_another_branch_pattern_than_structure_gave():
    y = np.arange(1.0, 6.0)
    jac = sparsejac.SparseJacobian(lambda x, t: switched(t, x), y, params=(0.0,))
    rows, cols = jac.structure()
    np.testing.assert_array_equal(jac.values(y, params=(0.5,)),
                                  switched_jacobian(0.5, y)[rows, cols])
    with pytest.raises(RuntimeError, match=r"branches on them in Python \(bool\(\) of .*"
                                           r"sparsity="):
        jac.values(y, params=(2.0,))
    union = sp.csr_array(switched_jacobian(0.0, y) + switched_jacobian(2.0, y) != 0)
    jac = sparsejac.SparseJacobian(lambda x, t: switched(t, x), y, params=(0.0,),
                                   sparsity=union)
    rows, cols = jac.structure()
    for t in [0.5, 2.0, 0.2]:
        np.testing.assert_array_equal(jac.values(y, params=(t,)),
                                      switched_jacobian(t, y)[rows, cols])


def test_evaluate_without_params_after_a_switch_uses_the_preparation_params():
    y = np.arange(1.0, 6.0)
    jac = sparsejac.SparseJacobian(lambda x, t: switched(t, x), y, params=(0.0,))
    np.testing.assert_array_equal(jac.evaluate(y, params=(2.0,)).toarray(),
                                  switched_jacobian(2.0, y))
    np.testing.assert_array_equal(jac(y).toarray(), switched_jacobian(0.0, y))
    op = jac.linear_operator(y, params=(2.0,))
    np.testing.assert_array_equal(op @ np.ones(5), switched_jacobian(2.0, y) @ np.ones(5))


def test_at_most_a_fixed_number_of_branches_is_kept():
    table = np.arange(1.0, 40.0)

    def hourly(t, y):
        return -table[int(t)] * y  # a forcing tabulated per unit of time

    jac = sparsejac.ode_jacobian(hourly, 0.0, np.ones(3), format="csr")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for t in np.arange(0.0, 30.0, 0.5):
            np.testing.assert_array_equal(jac(t, np.ones(3)).toarray(),
                                          -table[int(t)] * np.eye(3))
    assert [str(w.message)[:60] for w in caught] == [
        "`hourly` has needed 16 new preparations for new values of it"]
    assert "int() of a parameter" in str(caught[0].message)
    kept, made = jac.prepared.stats()["branches"]
    assert made == 29  # int(t) is what the branch keeps: t = 0.5 shares t = 0's
    assert kept == BRANCHES_KEPT


# -- Python numbers of t: exact, prepared again per value, with a warning ----------------------

@pytest.mark.parametrize(("rhs", "factor"), [
    pytest.param(lambda t, y: y * math.exp(-t), lambda t: math.exp(-t), id="math.exp"),
    pytest.param(lambda t, y: y * min(t, 1.0), lambda t: min(t, 1.0), id="min"),
    pytest.param(lambda t, y: y * int(t), lambda t: float(int(t)), id="int"),
])
def test_python_numbers_of_t_are_exact(rhs, factor):
    jac = sparsejac.ode_jacobian(rhs, 0.0, np.ones(3), format="csr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for t in [0.0, 0.25, 1.5, 2.75]:
            np.testing.assert_array_equal(jac(t, np.ones(3)).toarray(),
                                          factor(t) * np.eye(3))


def test_reading_t_as_a_number_warns_after_a_few_preparations():
    jac = sparsejac.ode_jacobian(lambda t, y: y * math.exp(-t), 0.0, np.ones(3))
    jac(1.0, np.ones(3))
    jac(2.0, np.ones(3))
    with pytest.warns(RuntimeWarning, match=r"3 new preparations .* float\(\) of .*"
                                            r"np\.exp\(-t\) instead of math\.exp\(-t\)"):
        jac(3.0, np.ones(3))


def test_a_library_function_of_t_is_exact():
    grid = np.linspace(0.0, 10.0, 11)
    inflow = RegularGridInterpolator((grid,), np.sin(grid))

    def tank(t, y):
        return -inflow([t])[0] * y ** 2 + np.roll(y, 1)

    jac = sparsejac.ode_jacobian(tank, 0.0, np.ones(4), format="csr")
    y = np.full(4, 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for t in [0.5, 1.5, 7.25]:
            expect = -4 * np.interp(t, grid, np.sin(grid)) * np.eye(4) + np.roll(np.eye(4), 1, 0)
            np.testing.assert_allclose(jac(t, y).toarray(), expect, rtol=1e-15)


# -- what stays refused, and what else follows the branches --------------------------------------

def test_a_branch_on_x_and_t_together_is_still_refused():
    def rhs(t, y):
        return -y if t * y[0] > 1 else y ** 2

    with pytest.raises(sparsejac.ConcretizationError, match="global sparsity pattern"):
        sparsejac.ode_jacobian(rhs, 0.0, np.ones(3))


def test_hessian_follows_a_branch_on_its_parameter():
    def f(x, a):
        if a > 0:
            return a * np.sum(x ** 4)
        return np.sum(x[1:] * x[:-1])

    x = np.array([1.0, 2.0, 3.0])
    hess = sparsejac.SparseHessian(f, x, params=(1.0,))
    np.testing.assert_array_equal(hess.evaluate(x, params=(2.0,)).toarray(),
                                  np.diag(24.0 * x ** 2))
    np.testing.assert_array_equal(hess.evaluate(x, params=(-1.0,)).toarray(),
                                  np.eye(3, k=1) + np.eye(3, k=-1))
    np.testing.assert_array_equal(hess.gradient(x, params=(-1.0,)), [2.0, 4.0, 2.0])
    np.testing.assert_array_equal(hess.gradient(x, params=(1.0,)), 4.0 * x ** 3)


K = [1.0]


def with_global(t, y):
    if t < 1.0:
        return -K[0] * y
    return K[0] * y ** 2


def test_a_changed_global_replaces_every_branch():
    y = np.full(3, 2.0)
    jac = sparsejac.ode_jacobian(with_global, 0.0, y, format="csr")
    jac(0.0, y), jac(2.0, y)
    K[0] = 3.0
    try:
        np.testing.assert_array_equal(jac(2.0, y).toarray(), 12.0 * np.eye(3))
        np.testing.assert_array_equal(jac(0.0, y).toarray(), -3.0 * np.eye(3))
    finally:
        K[0] = 1.0


def test_an_out_matrix_of_another_branch_is_left_alone():
    y = np.arange(1.0, 6.0)
    jac = sparsejac.SparseJacobian(lambda x, t: switched(t, x), y, params=(0.0,))
    out = jac.evaluate(y, params=(0.5,))
    kept = out.toarray()
    new = jac.evaluate(y, params=(2.0,), out=out)
    assert new is not out
    np.testing.assert_array_equal(out.toarray(), kept)
    np.testing.assert_array_equal(new.toarray(), switched_jacobian(2.0, y))
    assert jac.evaluate(y, params=(0.7,), out=out) is out
    np.testing.assert_array_equal(out.toarray(), switched_jacobian(0.7, y))


def test_dense_jacobians_from_two_threads_on_two_branches():
    """Two threads on the two sides of `if t > 2` (the branch hunt): a dense Jacobian placed
    its values by the current plan, which the other thread had switched to its branch."""
    from concurrent.futures import ThreadPoolExecutor

    y = np.arange(1.0, 6.0)
    jac = sparsejac.ode_jacobian(switched, 0.0, y, format="dense")

    def wrong(t):
        return sum(not np.array_equal(jac(t, y), switched_jacobian(t, y)) for _ in range(300))

    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(wrong, (0.5, 2.0))) == [0, 0]


def test_round_of_t_rounds_as_python_does():
    """round(0.15, 1) is 0.1 in Python, 0.2 in numpy: the branch it decides was refused (with
    verify) or silently wrong (verify=False) under numpy's rounding (the branch hunt)."""
    def rhs(t, y):
        return -(5.0 if round(t, 1) == 0.1 else 1.0) * y ** 2

    y = np.array([0.8, 1.3, 0.6])
    for verify in (True, False):
        jac = sparsejac.ode_jacobian(rhs, 0.0, y, verify=verify)
        for t in (0.0, 0.15, 0.12, 0.16, 0.05):
            rate = 5.0 if round(t, 1) == 0.1 else 1.0
            np.testing.assert_array_equal(jac(t, y), np.diag(-2 * rate * y))
        assert jac.prepared.stats()["branches"][1] <= 4


def test_the_pattern_of_a_branch_warns_that_it_is_one_branch() -> None:
    """Reading ``.sparsity`` of a preparation that followed a branch on ``t`` warns, naming
    the read: the pattern is that branch's, and another branch has other nonzeros (here a
    neighbour coupling from t = 1 on, which a pattern given to scipy would miss); a
    preparation without branches reads silently."""

    def switched(t, y):
        if t < 1.0:
            return -y
        return -y + 0.5 * np.roll(y, 1)

    jac = sparsejac.ode_jacobian(switched, 0.0, np.ones(4))
    with pytest.warns(RuntimeWarning, match=r"pattern of the branch .*bool\(\) of a value"):
        early = jac.sparsity
    assert early.nnz == 4
    late = jac(2.0, np.ones(4))  # the other branch: its own preparation, exact
    late = late.toarray() if sp.issparse(late) else late  # (dense for 4 unknowns)
    np.testing.assert_array_equal(late, -np.eye(4) + 0.5 * np.roll(np.eye(4), 1, 0))
    assert np.count_nonzero(late) > early.nnz
    plain = sparsejac.ode_jacobian(lambda t, y: -y * t, 0.0, np.ones(4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert plain.sparsity.nnz == 4


def test_an_index_array_computed_from_t_is_a_decision_not_a_value_read() -> None:
    """``rates[np.searchsorted(times, [t, t + 1])]``: numpy converts the traced index array
    whole (np.asarray), which reads integers, a branch per pair of intervals as ``int(t)``
    is, not a new value at every t: no early warning, and each interval exact."""
    times, rates = np.array([0.0, 1.0, 2.0, 5.0]), np.array([1.0, 3.0, 0.5, 2.0, 7.0])

    def f(t, y):
        return -rates[np.searchsorted(times, np.array([t, t + 1.0]))].sum() * y

    jac = sparsejac.ode_jacobian(f, 0.5, np.ones(2), format="csr")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for t in (0.5, 1.5, 3.0, 6.0, 0.7):
            k = rates[np.searchsorted(times, [t, t + 1.0])].sum()
            np.testing.assert_array_equal(jac(t, np.ones(2)).toarray(), -k * np.eye(2))
    assert jac.prepared.stats()["branches"][1] == 3
