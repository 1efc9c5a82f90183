"""Never a silently wrong Jacobian: the reproducers of inputs that once gave wrong results.

Each test is a user's program that returned a wrong Jacobian without an error, with the exact
Jacobian derived by hand (or the error the call must now raise).
"""

from __future__ import annotations

import dataclasses
import re
import threading
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import sparsejac
from sparsejac.errors import TracedConversionError, UnsupportedPrimitiveError
from tests.scenarios import fd_jacobian

EXACT_MODES = ["forward", "reverse", "mixed"]


# -- traced arguments never become constants --------------------------------------------------


def test_linspace_with_traced_ends_is_exact():
    """np.linspace(x[0], x[1], 5): d/dstart = 1 - k/4, d/dstop = k/4 (was all zeros)."""
    want = np.array([[1, 0], [0.75, 0.25], [0.5, 0.5], [0.25, 0.75], [0, 1]])
    f = lambda x: np.linspace(x[0], x[1], 5)  # noqa: E731
    x = np.array([1.2, 3.4])
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, rtol=1e-15)
    assert sparsejac.jacobian_sparsity(f, x).nnz == 8
    for mode in EXACT_MODES:
        jac = sparsejac.SparseJacobian(f, x, mode=mode)
        np.testing.assert_allclose(jac(np.array([-1.0, 7.0])).toarray(), want, rtol=1e-15)


@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace_arrays_axis_and_endpoint(endpoint, rng):
    """Array ends, axis=1 and endpoint=False agree with fourth-order differences."""
    from tests.test_rules import fd4_jacobian

    def f(x):
        return np.linspace(x[:2] ** 2, x[2:], 4, endpoint=endpoint, axis=1)

    x = rng.uniform(0.5, 1.5, 4)
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), fd4_jacobian(f, x),
                               rtol=1e-8, atol=1e-9)
    np.testing.assert_array_equal(f(x), np.asarray(
        np.linspace(x[:2] ** 2, x[2:], 4, endpoint=endpoint, axis=1)))


def test_full_with_a_traced_fill_value_is_exact():
    """np.full(3, x[0]**2) depends on x[0] with derivative 2 x[0] in every element."""
    got = sparsejac.jacobian(lambda x: np.full(3, x[0] ** 2), np.array([3.0])).toarray()
    np.testing.assert_array_equal(got, [[6.0], [6.0], [6.0]])


def test_an_active_value_used_as_a_constant_raises():
    """A value with a derivative used where only constants fit is refused, never folded."""
    from sparsejac.tracing import trace
    from sparsejac.tracing.tracer import concretize

    def f(x):
        return concretize(x[0] * 2.0, "a test argument") * x

    with pytest.raises(TracedConversionError, match="a test argument depends on x"):
        trace(f, np.ones(2), local=True)


# -- complex intermediates: exact (real and imaginary parts traced as real arrays) -------------


def _abs_times_complex_jac(x):  # |x (1 + i)| = sqrt(2) |x|
    return np.diag(np.sqrt(2.0) * np.sign(x))


def _abs_of_sum_jac(x):  # |x0 + i x1| = hypot(x0, x1)
    r = np.hypot(x[0], x[1])
    return np.array([[x[0] / r, x[1] / r]])


def _abs_squared_jac(x):  # |2 + i x|^2 = 4 + x^2
    return np.diag(2.0 * x)


@pytest.mark.parametrize(("f", "jac"), [
    pytest.param(lambda x: np.abs(x * (1 + 1j)), _abs_times_complex_jac, id="abs_times_complex"),
    pytest.param(lambda x: np.atleast_1d(np.abs(x[0] + 1j * x[1])), _abs_of_sum_jac,
                 id="abs_of_sum"),
    pytest.param(lambda x: np.abs(x * 1j + 2.0) ** 2, _abs_squared_jac, id="abs_squared"),
])
@pytest.mark.parametrize("entry", ["jacobian", "SparseJacobian", "jvp", "sparsity"])
def test_complex_intermediates_are_exact(f, jac, entry):
    """Complex intermediates that once gave zeros, wrong signs and garbage are now exact (they
    were refused before complex pairs); compared with the hand-derived Jacobian."""
    x = np.array([0.7, -1.3])
    want = jac(x)
    calls = {
        "jacobian": lambda: sparsejac.jacobian(f, x).toarray(),
        "SparseJacobian": lambda: sparsejac.SparseJacobian(f, x)(x).toarray(),
        "jvp": lambda: sparsejac.ad.jvp(f, x, np.eye(2)).reshape(want.shape),
        "sparsity": lambda: sparsejac.jacobian_sparsity(f, x).toarray(),
    }
    got = calls[entry]()
    if entry == "sparsity":
        np.testing.assert_array_equal(got, want != 0)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("f", [
    pytest.param(lambda x: np.einsum("i,i->i", x.astype(complex), x * 1j).real,
                 id="einsum_of_complex"),
    pytest.param(lambda x: np.log(x * 1j).real, id="log_of_complex"),
    pytest.param(lambda x: np.real_if_close(np.exp(1j * x)), id="real_if_close_traced_imag"),
    pytest.param(lambda x: np.sqrt(x + 1j).real, id="sqrt_of_complex"),
])
@pytest.mark.parametrize("entry", ["jacobian", "SparseJacobian", "jvp", "sparsity"])
def test_unmodelled_complex_operations_raise_naming_the_call(f, entry):
    """A complex operation without a rule raises, naming the numpy call: never a guess."""
    x = np.ones(2)
    calls = {
        "jacobian": lambda: sparsejac.jacobian(f, x),
        "SparseJacobian": lambda: sparsejac.SparseJacobian(f, x),
        "jvp": lambda: sparsejac.ad.jvp(f, x, np.eye(2)),
        "sparsity": lambda: sparsejac.jacobian_sparsity(f, x),
    }
    with pytest.raises(UnsupportedPrimitiveError, match=r"numpy\.\S+ .*complex"):
        calls[entry]()


@pytest.mark.parametrize("f", [
    pytest.param(lambda x: 1j * x, id="complex_output"),
    pytest.param(lambda x: np.fft.fft(x), id="fft_output"),
])
def test_complex_outputs_are_refused(f):
    """f must return real numbers: a complex result says to return its parts."""
    with pytest.raises(TypeError, match=r"`f` must return real numbers.*complex.*\.real"):
        sparsejac.jacobian(f, np.ones(3))


def test_complex_x_is_refused():
    """A complex x is refused (differentiate its real and imaginary parts as a real x)."""
    with pytest.raises((TypeError, ValueError), match="complex"):
        sparsejac.jacobian(lambda x: x.real, np.ones(3) + 1j)


# -- finite differences see a fresh point ------------------------------------------------------


@pytest.mark.parametrize("method", ["2-point", "3-point"])
def test_fd_when_f_writes_into_its_argument(method):
    """def f(x): x *= 2; return x**2 has derivative 8 x (was about 8e8 with 2-point)."""
    def f(x):
        x *= 2
        return x**2

    x = np.array([1.0, 2.0, 3.0])
    got = sparsejac.jacobian(f, x, mode="fd", sparsity=np.eye(3), fd_method=method)
    np.testing.assert_allclose(got.diagonal(), 8 * x, rtol=1e-6)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])  # the caller's array is untouched


def test_fd_when_f_returns_a_buffer_it_reuses():
    """f returning the same output buffer every call: the base value is not overwritten."""
    buf = np.zeros(3)

    def f(x):
        buf[:] = x**2
        return buf

    got = sparsejac.jacobian(f, np.array([1.0, 2.0, 3.0]), mode="fd", sparsity=np.eye(3))
    np.testing.assert_allclose(got.diagonal(), [2.0, 4.0, 6.0], rtol=1e-6)


# -- a prepared Jacobian notices that f changed ------------------------------------------------


def test_a_changed_global_is_noticed():
    """K = 1.0; h = lambda x: K*x**2; prepare; K = 5.0: the diagonal is 10, not 2."""
    scope = {"K": 1.0, "np": np}
    exec("h = lambda x: K * x ** 2", scope)  # a real module-level global
    jac = sparsejac.SparseJacobian(scope["h"], np.ones(3))
    scope["K"] = 5.0
    np.testing.assert_array_equal(jac(np.ones(3)).diagonal(), [10.0, 10.0, 10.0])
    assert jac.stats()["preparations"] == 2


@pytest.mark.parametrize("where", ["global", "closure", "helper", "string", "hessian"])
def test_a_rebound_threshold_is_noticed_where_the_check_point_cannot_see_it(where):
    """np.where(x > thresh, x**2, x) prepared at 0 and thresh changed from 10 to 0.5: f's
    value at the check point near 0 is the same for both, so the replay kept the old
    branch at x = 1, 2, 3 (a silently wrong diagonal 1 instead of 2x). A rebound global or
    closure value f reads (its helpers' too) now prepares again. Oracle: 2x by hand."""
    scope = {"np": np, "thresh": 10.0, "how": "square"}
    exec("def helper(x):\n    return np.where(x > thresh, x ** 2, x)\n"
         "def g(x):\n    return np.where(x > thresh, x ** 2, x)\n"
         "def via(x):\n    return helper(x) * 1.0\n"
         "def by_name(x):\n    return x ** 2 if how == 'square' else x\n"
         "def energy(x):\n    return np.sum(g(x) * x)\n", scope)
    box = [10.0]
    cell_thresh = 10.0

    def closure(x):
        return np.where(x > cell_thresh, x ** 2, x)

    f = {"global": scope["g"], "closure": closure, "helper": scope["via"],
         "string": scope["by_name"], "hessian": scope["energy"]}[where]
    x = np.array([1.0, 2.0, 3.0])
    if where == "hessian":
        hess = sparsejac.SparseHessian(f, np.zeros(3))
        hess(x)
        scope["thresh"] = 0.5
        np.testing.assert_array_equal(hess(x).diagonal(), 6 * x)  # d2(x**3)/dx2
        return
    jac = sparsejac.SparseJacobian(f, np.zeros(3))
    if where != "string":
        np.testing.assert_array_equal(jac(x).diagonal(), np.ones(3))
    scope["thresh"] = 0.5
    scope["how"] = "identity" if where == "string" else "square"
    cell_thresh = 0.5
    box[0] = 0.5
    want = np.ones(3) if where == "string" else 2 * x
    np.testing.assert_array_equal(jac(x).diagonal(), want)
    assert jac.stats()["preparations"] == 2


def test_a_call_counter_or_an_equal_rebinding_prepares_nothing_again():
    """What f updates itself (`global ncalls; ncalls += 1`, a nonlocal counter) is not a
    change of f, nor an array global rebound to equal values each step: one preparation."""
    scope = {"np": np, "ncalls": 0, "P": np.array([1.0, 2.0])}
    exec("def f(x):\n    global ncalls\n    ncalls += 1\n    return P[0] * x ** 2\n", scope)

    def counting():
        c = 0

        def g(x):
            nonlocal c
            c += 1
            return x ** 3
        return g

    for f in (scope["f"], counting()):
        jac = sparsejac.SparseJacobian(f, np.ones(3))
        for i in range(4):
            scope["P"] = np.array([1.0, 2.0])
            jac(np.full(3, i + 1.0))
        assert jac.stats()["preparations"] == 1
    scope["P"] = np.array([3.0, 2.0])
    np.testing.assert_array_equal(
        sparsejac.SparseJacobian(scope["f"], np.ones(3))(np.ones(3)).diagonal(), [6.0] * 3)


@pytest.mark.parametrize("what", ["function", "tuple", "dict", "list"])
def test_a_rebound_function_tuple_or_container_is_noticed(what):
    """np.where(v > T, v**2, v) prepared at 0 with T = 0.5 held in a function, a tuple, a
    dict or a list, rebound to 2.0: at x = 1 the derivative is 1 (it kept 2)."""
    scope = {"np": np}
    exec("def act(v):\n    return np.where(v > 0.5, v ** 2, v)\n"
         "P = (0.5, 1.0)\ncfg = {'t': 0.5}\nL = [0.5]\n"
         "def f_function(v):\n    return act(v)\n"
         "def f_tuple(v):\n    return np.where(v > P[0], v ** 2, v)\n"
         "def f_dict(v):\n    return np.where(v > cfg['t'], v ** 2, v)\n"
         "def f_list(v):\n    return np.where(v > L[0], v ** 2, v)\n", scope)
    x = np.ones(3)
    jac = sparsejac.SparseJacobian(scope[f"f_{what}"], np.zeros(3))
    np.testing.assert_array_equal(jac(x).diagonal(), 2 * x)
    if what == "function":
        exec("def act(v):\n    return np.where(v > 2.0, v ** 2, v)\n", scope)
    else:
        scope.update(P=(2.0, 1.0), cfg={"t": 2.0}, L=[2.0])
    np.testing.assert_array_equal(jac(x).diagonal(), np.ones(3))
    assert jac.stats()["preparations"] == 2


def test_an_argument_changed_in_place_is_noticed():
    """A threshold array passed in args and changed in place (t[0] = 2.0) where the check
    point cannot see it: d/dv of where(v > t, v**3, v**2) at v = 1 is 2 (it kept 3)."""
    t = np.array([0.5])
    jac = sparsejac.SparseJacobian(lambda v, t: np.where(v > t[0], v ** 3, v ** 2),
                                   np.zeros(3), args=(t,))
    x = np.ones(3)
    np.testing.assert_array_equal(jac(x, t).diagonal(), [3.0] * 3)
    t[0] = 2.0
    np.testing.assert_array_equal(jac(x, t).diagonal(), [2.0] * 3)
    p = np.array([0.5])
    ode = sparsejac.ode_jacobian(lambda s, u, p: np.where(u > p[0], -(u ** 3), -u),
                                 0.0, np.zeros(3), args=(p,))
    np.testing.assert_array_equal(np.diag(ode(0.0, x, p)), [-3.0] * 3)
    p[0] = 2.0
    np.testing.assert_array_equal(np.diag(ode(0.0, x, p)), [-1.0] * 3)


def test_counters_in_containers_prepare_nothing_again():
    """Counters f bumps in a list, a dict and an array are no change of f: one preparation."""
    calls, stats, count = [0], {"n": 0}, np.zeros(1)

    def f(x):
        calls[0] += 1
        stats["n"] += 1
        count[0] += 1
        return 3.0 * x ** 2

    jac = sparsejac.SparseJacobian(f, np.ones(3))
    for k in range(4):
        np.testing.assert_array_equal(jac(np.full(3, k + 1.0)).diagonal(), [6.0 * (k + 1)] * 3)
    assert jac.stats()["preparations"] == 1


def test_a_change_hidden_by_nan_at_the_check_point_is_noticed():
    """w * sqrt(1 - x) prepared at x0 = 0.99: the check point lies past 1 (f is NaN there,
    and NaN equals NaN whatever w). After w[:] = 3 the derivative at 0.5 is
    -3 / (2 sqrt(0.5)) (it kept w = 1); the same for a Hessian of sum(w * (1 - x)**1.5)."""
    w = np.ones(3)
    x0, x = np.array([0.99, 0.2, 0.3]), np.full(3, 0.5)
    jac = sparsejac.SparseJacobian(lambda v, w: w * np.sqrt(1.0 - v), x0, args=(w,))
    hess = sparsejac.SparseHessian(lambda v, w: np.sum(w * (1.0 - v) ** 1.5), x0, args=(w,))
    jac(x, w)
    hess(x, w)
    w[:] = [3.0, 5.0, 7.0]
    np.testing.assert_allclose(jac(x, w).diagonal(), -w / (2 * np.sqrt(0.5)), rtol=1e-15)
    np.testing.assert_allclose(hess(x, w).diagonal(), 0.75 * w / np.sqrt(0.5), rtol=1e-15)


def test_a_traced_array_kept_by_f_is_refused_clearly():
    """f caches its first (traced) argument: the next call says so (was a TypeError)."""
    cache = {}

    def f(x):
        if "k" not in cache:
            cache["k"] = x.copy()
        return x * cache["k"]

    jac = sparsejac.SparseJacobian(f, np.array([0.3, 0.6, 0.9]))
    with pytest.raises(RuntimeError, match="a traced array was used after its trace ended"):
        jac(np.array([1.5, -0.7, 2.0]))


def test_derivative_formulas_do_not_raise_under_errstate_raise():
    """Under np.errstate(all='raise') the sigmoid runs cleanly at -700, 0, 700; so does its
    Jacobian (an underflow in the derivative formula raised). Oracle: s(x) s(-x)."""
    from scipy.special import expit

    x = np.array([-700.0, 0.0, 700.0])
    with np.errstate(all="raise"):
        got = sparsejac.jacobian(lambda v: 1 / (1 + np.exp(-v)), x).diagonal()
    # (at -700 the chain rule's 1/u**2 underflows: 0 against 9.9e-305, below any tolerance)
    np.testing.assert_allclose(got, expit(x) * expit(-x), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("mode", EXACT_MODES)
def test_a_parameter_sweep_through_a_dict_at_a_special_point(mode):
    """p["a"] * sin(x) at x = 0 has the same value for every a, not the same derivative."""
    p = {"a": 1.0}
    jac = sparsejac.SparseJacobian(lambda x: p["a"] * np.sin(x), np.ones(4), mode=mode)
    for a in (1.0, 2.0, 3.5):
        p["a"] = a
        np.testing.assert_array_equal(jac(np.zeros(4)).diagonal(), np.full(4, a))


def test_a_changed_closure_variable_in_an_ode_right_hand_side(rng):
    """A closure variable used only for t > 1 is checked at the current t."""
    k = [1.0]

    def rhs(t, y):
        return -y + np.where(t > 1.0, k[0], 0.0) * np.roll(y, 1)

    jac = sparsejac.ode_jacobian(rhs, 0.0, np.ones(5), format="csr")
    k[0] = 3.0
    got = jac(2.0, rng.uniform(size=5)).toarray()
    want = -np.eye(5) + 3.0 * np.roll(np.eye(5), 1, axis=0)
    np.testing.assert_array_equal(got, want)


def test_verify_false_and_refresh():
    """verify=False trusts the recording; refresh() prepares again on request."""
    k = [1.0]
    jac = sparsejac.SparseJacobian(lambda x: k[0] * x**2, np.ones(2), verify=False)
    k[0] = 5.0
    np.testing.assert_array_equal(jac(np.ones(2)).diagonal(), [2.0, 2.0])  # as documented
    jac.refresh()
    np.testing.assert_array_equal(jac(np.ones(2)).diagonal(), [10.0, 10.0])


def test_a_random_f_cannot_be_verified():
    """f that changes at every call raises a clear error instead of a stale Jacobian: at the
    preparation (the traced values are not a real call's), or at a call (f changed since)."""
    rng = np.random.default_rng(0)
    with pytest.raises(sparsejac.TraceMismatchError, match="unseeded random numbers"):
        sparsejac.SparseJacobian(lambda x: x * rng.random(), np.ones(2))
    calls = [0]

    def f(x):
        calls[0] += 1
        return x * (1.0 if calls[0] <= 2 else rng.random())  # the same until prepared

    jac = sparsejac.SparseJacobian(f, np.ones(2))
    with pytest.raises(RuntimeError, match=r"deterministic function of x|unseeded random"):
        jac(np.ones(2))  # (preparing again, the check of the traced values refuses f)


# -- threads ----------------------------------------------------------------------------------


def test_eight_threads_share_one_prepared_jacobian(rng):
    """8 threads × 100 calls of one prepared Jacobian: every result is right."""
    def f(x):
        return np.sin(x[1:]) * x[:-1] + np.roll(x, 1)[1:] ** 2 - np.cumsum(x)[1:] * 0.1

    n = 300
    jac = sparsejac.SparseJacobian(f, np.ones(n))
    points = [rng.uniform(0.5, 1.5, n) for _ in range(25)]
    expected = [sparsejac.jacobian(f, x).toarray() for x in points]
    wrong: list[int] = []

    def work(k: int) -> None:
        for i in range(100):
            j = (i * 7 + k) % len(points)
            if not np.allclose(jac(points[j]).toarray(), expected[j], rtol=1e-13, atol=1e-13):
                wrong.append(j)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


# -- crashes and misleading errors became clear ones ------------------------------------------


def test_lists_mixing_traced_scalars_and_numbers_are_traced():
    """np.append([x0, 2.0, x2], x3**2) is ordinary code: it is traced (was a dtype error)."""
    got = sparsejac.jacobian(lambda x: np.append([x[0], 2.0, x[2]], x[3] ** 2),
                             np.array([1.0, 2.0, 3.0, 4.0])).toarray()
    np.testing.assert_array_equal(got, np.diag([1.0, 0.0, 1.0, 8.0]))
    got = sparsejac.jacobian(lambda x: np.min(np.array([x[0], 1.0, x[1]])), np.array([0.5, 3.0]))
    np.testing.assert_array_equal(got.toarray(), [[1.0, 0.0]])


def test_kron_of_two_scalars():
    """np.kron of two 0-d values is their product (was numpy's 'nonzero on 0d arrays')."""
    got = sparsejac.jacobian(lambda x: np.kron(x[0], x[1]), np.array([2.0, 3.0])).toarray()
    np.testing.assert_array_equal(got, [[3.0, 2.0]])


@pytest.mark.parametrize(("call", "name"), [
    pytest.param(lambda x: __import__("scipy.special").special.comb(x, 2),
                 "scipy.special.comb", id="comb"),
    pytest.param(lambda x: __import__("scipy.spatial.distance").spatial.distance.braycurtis(
        x[:2], x[2:]), "scipy.spatial.distance.braycurtis", id="braycurtis"),
    pytest.param(lambda x: __import__("scipy.signal").signal.lfilter(
        [1.0, 0.5], [1.0], x), "scipy.signal.lfilter", id="lfilter"),
    pytest.param(lambda x: __import__("scipy.ndimage").ndimage.median_filter(x, 3),
                 "scipy.ndimage.median_filter", id="median_filter"),
])
def test_library_functions_that_convert_their_input_are_named(call, name):
    """A scipy function that converts its input is named in the error (not 'np.asarray')."""
    with pytest.raises(TracedConversionError, match=re.escape(name)):
        sparsejac.jacobian(call, np.array([3.0, 4.0, 5.0, 6.0]))


def test_fd_without_sparsity_on_an_untraceable_f_says_what_fd_needs():
    """mode='fd' without sparsity= on a black box: the error says to pass sparsity=."""
    import scipy.special

    with pytest.raises(UnsupportedPrimitiveError, match=r"mode='fd' without `sparsity=`"):
        sparsejac.jacobian(lambda x: scipy.special.dawsn(x), np.ones(3), mode="fd")


@pytest.mark.parametrize(("call", "error", "message"), [
    pytest.param(lambda: sparsejac.jacobian(np.ones(3), np.ones(3)), TypeError,
                 "`f` must be callable; got ndarray", id="f_array"),
    pytest.param(lambda: sparsejac.jacobian(np.ones(3), np.sin), TypeError,
                 "look swapped", id="swapped"),
    pytest.param(lambda: sparsejac.jacobian(lambda x, a: x * a, np.ones(3), args=np.ones(3)),
                 TypeError, "`args` must be a tuple", id="args_array"),
    pytest.param(lambda: sparsejac.SparseJacobian(lambda x, a: x * a, np.ones(3), args=2.0),
                 TypeError, "`args` must be a tuple", id="args_float"),
    pytest.param(lambda: sparsejac.jacobian(np.sin, np.ones(3), fd_method="3-point"),
                 ValueError, "`fd_method` applies to mode='fd' only", id="fd_method_exact"),
    pytest.param(lambda: sparsejac.SparseJacobian(lambda x: x, np.ones(4), mode="fd",
                                                  sparsity=np.eye(3)),
                 ValueError, r"`sparsity` has shape \(3, 3\) but the Jacobian of f has shape "
                 r"\(4, 4\)", id="fd_sparsity_shape"),
])
def test_bad_arguments_are_refused_at_the_call(call, error, message):
    """Each bad argument is a clear error at the call, naming the argument."""
    with pytest.raises(error, match=message):
        call()


# -- an opt-in check of trusted patterns --------------------------------------------------------


def _sparse_f(pattern: np.ndarray):
    """A nonlinear f whose Jacobian has exactly ``pattern``'s structure (at generic x)."""
    rows, cols = np.nonzero(pattern)
    w = 0.5 + np.arange(rows.size) % 7 / 7.0

    def f(x):
        out = np.zeros(pattern.shape[0], like=x)
        np.add.at(out, rows, w * np.sin(x[cols]) + 0.1 * x[cols] ** 2)
        return out

    return f


@pytest.mark.parametrize("seed", range(6))
def test_check_names_a_missing_entry(seed):
    """check=True finds the one entry removed from a random pattern, and passes the full one."""
    rng = np.random.default_rng(seed)
    n = 40
    true = (rng.random((30, n)) < 0.08) | np.eye(30, n, dtype=bool)
    f = _sparse_f(true)
    x0 = rng.uniform(0.5, 1.5, n)
    sparsejac.SparseJacobian(f, x0, mode="fd", sparsity=true, check=True)  # complete: passes
    rows, cols = np.nonzero(true)
    k = int(rng.integers(rows.size))
    user = true.copy()
    user[rows[k], cols[k]] = False
    with pytest.raises(ValueError, match=re.escape(f"({rows[k]}, {cols[k]})")):
        sparsejac.SparseJacobian(f, x0, mode="fd", sparsity=user, check=True)
    # without check=True the pattern is trusted (and the Jacobian is wrong at that entry)
    jac = sparsejac.SparseJacobian(f, x0, mode="fd", sparsity=user)
    assert jac(x0)[rows[k], cols[k]] == 0.0


# -- copy and pickle -----------------------------------------------------------------------------


def _scaled_bidiagonal(x, a):
    return a * x[1:] ** 2 - x[:-1]


def _rhs(t, y):
    return -(y**3) + np.cos(t) * np.roll(y, 1)


def _jacobian_in_a_worker(jac, x):
    return jac(x, 2.0).toarray()


@pytest.mark.parametrize("mode", ["auto", "forward", "reverse", "mixed", "fd"])
@pytest.mark.parametrize("how", ["deepcopy", "copy", "pickle"])
def test_prepared_jacobians_copy_and_pickle(mode, how):
    """copy.deepcopy (was 'SparsityPattern is immutable') and pickle (was a local-object
    error) give a prepared Jacobian with the same mode and values."""
    import copy
    import pickle

    jac = sparsejac.SparseJacobian(_scaled_bidiagonal, np.ones(6), args=(2.0,), mode=mode)
    other = {"deepcopy": copy.deepcopy, "copy": copy.copy,
             "pickle": lambda j: pickle.loads(pickle.dumps(j))}[how](jac)
    x = np.arange(6.0)
    assert other.mode == jac.mode
    assert other.coloring.n_colors == jac.coloring.n_colors
    np.testing.assert_array_equal(other(x, 2.0).toarray(), jac(x, 2.0).toarray())


def test_adapters_pickle():
    """The solver adapters pickle when the user's function does."""
    import pickle

    ode = sparsejac.ode_jacobian(_rhs, 0.0, np.ones(6), format="csr")
    again = pickle.loads(pickle.dumps(ode))
    np.testing.assert_array_equal(again(1.3, np.ones(6)).toarray(),
                                  ode(1.3, np.ones(6)).toarray())
    root = sparsejac.root_jacobian(_scaled_bidiagonal, np.ones(5), args=(2.0,))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(root))(np.ones(5), 2.0),
                                  root(np.ones(5), 2.0))


def test_a_prepared_jacobian_goes_to_a_process_pool():
    """multiprocessing sends a prepared Jacobian to worker processes (it pickles)."""
    import multiprocessing

    jac = sparsejac.SparseJacobian(_scaled_bidiagonal, np.ones(5), args=(2.0,))
    points = [np.arange(5.0) + k for k in range(4)]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        got = pool.starmap(_jacobian_in_a_worker, [(jac, x) for x in points])
    for x, g in zip(points, got, strict=True):
        np.testing.assert_array_equal(g, jac(x, 2.0).toarray())


@pytest.mark.filterwarnings("ignore::sparsejac.PreparedAgainWarning")  # (by design)
def test_threads_calling_with_different_args_each_get_their_own_jacobian():
    """Threads calling one prepared Jacobian (and Hessian) with different ``args`` objects:
    each call uses the preparation for its own arguments. The call read the shared state
    again after preparing, and another thread's preparation could be there by then (wrong
    values, or an IndexError when the pattern differed)."""
    from concurrent.futures import ThreadPoolExecutor

    cs = [np.full(50, float(k)) for k in (1, 2, 3)]
    jac = sparsejac.SparseJacobian(lambda x, c: c * x ** 2, np.ones(50), args=(cs[0],))

    def work(i):
        c = cs[i % 3]
        return float(np.abs(jac(np.ones(50), c).diagonal() - 2 * c).max())

    with ThreadPoolExecutor(4) as ex:
        assert max(ex.map(work, range(300))) == 0.0

    ws = [np.ones(30), np.linspace(0.0, 1.0, 30)]  # two patterns (a zero weight)
    hess = sparsejac.SparseHessian(lambda x, c: np.sum(c * x ** 4) + np.sum(x[1:] * x[:-1]),
                                   np.ones(30), args=(ws[0],))
    x = np.full(30, 0.5)

    def hwork(i):
        c = ws[i % 2]
        want = np.diag(12 * c * x ** 2) + np.eye(30, k=1) + np.eye(30, k=-1)
        grad = 4 * c * x ** 3 + np.r_[x[1:], 0.0] + np.r_[0.0, x[:-1]]
        return max(float(np.abs(hess(x, c).toarray() - want).max()),
                   float(np.abs(hess.gradient(x, c) - grad).max()))

    with ThreadPoolExecutor(4) as ex:
        assert max(ex.map(hwork, range(200))) < 1e-12


def test_a_traced_scalar_as_a_dict_key_is_a_branch_on_its_value():
    """``table[y[0]]`` hashes the element, as with numpy's scalars, and finds the key by an
    equality that holds at x only: a one-off Jacobian refuses it (the lookup fails at every
    nearby point; a memo keyed on x found this way gave a zero Jacobian), a global pattern
    refuses it as a branch on values (``ConcretizationError``, a TypeError as Python's
    unhashable error is), and a traced array stays unhashable like an ndarray."""
    table = {1.0: 3.0, 2.0: 5.0}

    def f(y):
        return y * table[y[0]]

    with pytest.raises(sparsejac.ConcretizationError, match=r"holds at this x"):
        sparsejac.jacobian(f, np.ones(3))
    with pytest.raises(sparsejac.ConcretizationError, match=r"hash\(\).*table\[y\[0\]\]"):
        sparsejac.jacobian_sparsity(f, np.ones(3))

    def g(y):
        return y * len({y: 1})

    with pytest.raises(TypeError, match=r"unhashable type: 'numpy\.ndarray'"):
        sparsejac.jacobian(g, np.ones(3))
    with pytest.raises(TypeError, match=r"unhashable type: 'numpy\.ndarray'"):
        g(np.ones(3))


def test_hessians_follow_arrays_changed_in_place():
    """An argument or a global array changed in place after preparation: the Hessian, its
    products and the constraint Hessian are those of the new ``f`` (the recording's replays
    read copies of the trace's constants, so the check sees the change), also where the
    changed term vanishes at the evaluation point (``w * x ** 2`` at ``x = 0``)."""
    w = np.array([1.0, 1.0])

    def f(x, w):
        return np.sum(w * x ** 4)

    x = np.array([1.0, 2.0])
    hs = sparsejac.SparseHessian(f, x, args=(w,))
    ch = sparsejac.constraint_hessian(lambda z: w * z ** 3, x)
    np.testing.assert_array_equal(hs(x, w).diagonal(), 12 * w * x ** 2)
    np.testing.assert_array_equal(ch(x, np.ones(2)).diagonal(), 6 * w * x)
    w[:] = [2.0, 0.0]
    np.testing.assert_array_equal(hs(x, w).diagonal(), 12 * w * x ** 2)
    np.testing.assert_array_equal(hs.hessp(x, np.ones(2), w), 12 * w * x ** 2)
    np.testing.assert_array_equal(hs.gradient(x, w), 4 * w * x ** 3)
    np.testing.assert_array_equal(ch(x, np.ones(2)).diagonal(), 6 * w * x)

    k = np.array([1.0, 1.0])
    quad = sparsejac.SparseHessian(lambda z: np.sum(k * z ** 2), np.ones(2))
    np.testing.assert_array_equal(quad(np.zeros(2)).diagonal(), [2.0, 2.0])
    k[:] = [3.0, 0.5]
    np.testing.assert_array_equal(quad(np.zeros(2)).diagonal(), [6.0, 1.0])


def test_a_changed_argument_shows_when_x0_is_zero():
    """Zeros is a common starting point: the check's point must be far enough from it that a
    changed coefficient of a cubic term shows (1e-3 hid it under the tolerance)."""
    def F(x, c):
        return 4 * x - np.roll(x, 1) - np.roll(x, -1) + c * x ** 3 - 1.0

    c = np.ones(5)
    jac = sparsejac.SparseJacobian(F, np.zeros(5), args=(c,))
    x = np.full(5, 0.5)
    np.testing.assert_allclose(jac(x, c).diagonal(), 4 + 3 * 0.25)
    c[:] = 3.0
    np.testing.assert_allclose(jac(x, c).diagonal(), 4 + 9 * 0.25)
    assert jac.stats()["preparations"] == 2


@pytest.mark.parametrize("value", [0.0, np.float64(5.0), np.zeros(1)],
                         ids=["float", "float64", "array"])
def test_a_constant_objective_has_zero_derivatives(value):
    """A constant objective (a feasibility problem for trust-constr) is prepared and called:
    zero gradient, empty Hessian, zero products (its check read a value that is not replayed)."""
    hs = sparsejac.SparseHessian(lambda x: value, np.ones(3))
    np.testing.assert_array_equal(hs.gradient(np.ones(3)), np.zeros(3))
    assert hs(np.ones(3)).nnz == 0
    np.testing.assert_array_equal(hs.hessp(np.ones(3), np.ones(3)), np.zeros(3))


def test_out_is_only_filled_when_it_has_the_plans_structure():
    """out= after new arguments prepared again with another pattern (more nonzeros, or as
    many elsewhere) filled the old matrix: stale or misplaced values, silently; a matrix of
    another SparseJacobian with as many nonzeros took values at the wrong places. Now a
    matrix of the structure before the call's new preparation is left alone and a new one
    returned; one of neither structure (another Jacobian's, one from two preparations ago)
    is refused, since a caller who relies on it being refilled would keep stale values
    (found from outside: out=J after J.eliminate_zeros() silently left J stale). Oracle:
    np.roll by hand."""
    def f(x, k):
        return x ** 2 + np.roll(x, k) if k else x ** 2

    x = np.arange(1.0, 6.0)
    jac = sparsejac.SparseJacobian(f, x, args=(1,))
    J = jac(x, 1)
    kept = J.toarray()
    got = jac(x, 0, out=J)  # 5 nonzeros: a new matrix, J left alone
    assert got is not J
    np.testing.assert_array_equal(got.toarray(), np.diag(2 * x))
    np.testing.assert_array_equal(J.toarray(), kept)
    with pytest.raises(ValueError, match="does not have this Jacobian's structure"):
        jac(x, -1, out=J)  # J is of neither the k = 0 nor the k = -1 structure
    J = jac(x, -1)
    np.testing.assert_array_equal(J.toarray(), np.diag(2 * x) + np.roll(np.eye(5), -1, 0))
    assert jac(x, -1, out=J) is J
    other = sparsejac.SparseJacobian(lambda x: x ** 2 + np.roll(x, 2), x)(x)
    before = other.toarray()
    with pytest.raises(ValueError, match="does not have this Jacobian's structure"):
        jac(x, -1, out=other)
    np.testing.assert_array_equal(other.toarray(), before)
    with pytest.raises(ValueError, match="`out` must be a csr_array"):
        jac(x, -1, out=sp.csc_array(J))
    J.eliminate_zeros()  # (no explicit zeros here: the structure stays, J is refilled)
    assert jac(x + 1.0, -1, out=J) is J


def test_out_whose_structure_the_caller_changed_is_refused():
    """Found from outside: jac(x, out=J) after J.eliminate_zeros() dropped explicit zeros
    returned a new matrix and left J with the old values, which a caller relying on out=
    being refilled kept using. Now refused, naming `out`; the values stay exact otherwise.
    Oracle: the derivatives by hand."""
    def g(x):
        return np.concatenate([x[1:] * x[:-1], [np.sum(x)]])

    jac = sparsejac.SparseJacobian(g, np.ones(6))
    xz = np.ones(6)
    xz[3] = 0.0  # explicit zeros in J at this point
    J = jac(xz)
    J.eliminate_zeros()
    with pytest.raises(ValueError, match="`out` does not have this Jacobian's structure"):
        jac(np.arange(1.0, 7.0), out=J)
    x = np.arange(1.0, 7.0)
    want = np.zeros((6, 6))
    want[np.arange(5), np.arange(1, 6)] = x[:-1]
    want[np.arange(5), np.arange(5)] += x[1:]
    want[5] = 1.0
    np.testing.assert_array_equal(jac(x).toarray(), want)


def test_linear_operator_of_a_complex_vector():
    """J (a + ib) = Ja + iJb for the real J, as scipy's aslinearoperator(J) gives (the
    imaginary part was dropped with a ComplexWarning). Oracle: the assembled J."""
    f = lambda x: x[1:] ** 2 - x[:-1]  # noqa: E731
    x = np.arange(1.0, 6.0)
    jac = sparsejac.SparseJacobian(f, x)
    A, J = jac.linear_operator(x), jac(x).toarray()
    v = np.linspace(-1, 1, 5) + 1j * np.arange(5.0)
    w = np.arange(4.0) - 2j
    np.testing.assert_allclose(A @ v, J @ v, rtol=1e-14)
    np.testing.assert_allclose(A.T @ w, J.T @ w, rtol=1e-14)
    np.testing.assert_allclose(A @ np.column_stack([v, 1j * v]), J @ np.column_stack([v, 1j * v]),
                               rtol=1e-14)


def test_ode_jacobian_partial_and_defaults_are_watched():
    """A global threshold array read by an ODE right-hand side (ode_jacobian's wrapper hid
    fun's globals), a functools.partial keyword and a mutable default, changed in place:
    d/du of where(u > t, 2u, 3u) at u = 1 becomes 3 (it kept 2)."""
    import functools

    scope = {"np": np, "T": np.array([0.5])}
    exec("def rhs(t, u):\n    return np.where(u > T[0], 2 * u, 3 * u)\n"
         "def g(u, th):\n    return np.where(u > th[0], 2 * u, 3 * u)\n"
         "def d(u, th=[0.5]):\n    return np.where(u > th[0], 2 * u, 3 * u)\n", scope)
    y = np.ones(3)
    ode = sparsejac.ode_jacobian(scope["rhs"], 0.0, np.zeros(3))
    np.testing.assert_array_equal(np.diag(ode(0.0, y)), [2.0] * 3)
    scope["T"][0] = 2.0
    np.testing.assert_array_equal(np.diag(ode(0.0, y)), [3.0] * 3)
    th = np.array([0.5])
    jp = sparsejac.SparseJacobian(functools.partial(scope["g"], th=th), np.zeros(3))
    jd = sparsejac.SparseJacobian(scope["d"], np.zeros(3))
    np.testing.assert_array_equal(jp(y).diagonal(), [2.0] * 3)
    np.testing.assert_array_equal(jd(y).diagonal(), [2.0] * 3)
    th[0] = 2.0
    scope["d"].__defaults__[0][0] = 2.0
    np.testing.assert_array_equal(jp(y).diagonal(), [3.0] * 3)
    np.testing.assert_array_equal(jd(y).diagonal(), [3.0] * 3)


def test_a_nan_rebound_to_a_fresh_nan_is_no_change():
    """A global NaN rebound to a new NaN object (float('nan') each step) is the same value:
    one preparation (NaN != NaN prepared again at every call)."""
    scope = {"np": np, "FILL": float("nan")}
    exec("def f(x):\n    return np.where(np.isnan(FILL), 2.0, 3.0) * x ** 2\n", scope)
    jac = sparsejac.SparseJacobian(scope["f"], np.ones(3))
    for k in range(4):
        scope["FILL"] = float("nan")
        np.testing.assert_array_equal(jac(np.full(3, k + 1.0)).diagonal(), [4.0 * (k + 1)] * 3)
    assert jac.stats()["preparations"] == 1


def test_attribute_names_are_not_watched_as_globals():
    """f reads model.T and x.shape; a global T and shape change between calls (a loop
    variable): no preparation again (every call prepared again)."""
    scope = {"np": np, "T": 0, "shape": 0}
    exec("class M:\n    T = 2.0\nmodel = M()\n"
         "def f(x):\n    return model.T * x ** 2 + 0 * x.shape[0]\n", scope)
    jac = sparsejac.SparseJacobian(scope["f"], np.ones(3))
    for k in range(5):
        scope["T"] = scope["shape"] = k
        np.testing.assert_array_equal(jac(np.full(3, 1.0 + k)).diagonal(), [4.0 * (1 + k)] * 3)
    assert jac.stats()["preparations"] == 1


def test_asarray_with_its_own_dtype_aliases():
    """np.asarray(x, dtype=float) of a float64 array is the array (numpy): a write through
    it reaches x. Row 0 of [3 x1**2, 3 x1, 3 x2] is [0, 6 x1, 0] (it was [3, 0, 0])."""

    def f(x):
        y = np.asarray(x, dtype=np.float64)
        y[0] = x[1] ** 2
        z = x.astype(np.float64, order="F", copy=False)
        z[2] = z[2] * 1.0
        return 3 * x

    x = np.array([1.0, 2.0, 3.0])
    want = np.array([[0.0, 12.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 3.0]])
    np.testing.assert_array_equal(sparsejac.jacobian(f, x).toarray(), want)


class _Model:
    """Constants behind an object's attribute: the watch sees the object, not ``c``."""

    c = 1.0


_MODEL = _Model()


def _cancelling(x):
    """The recording sums x @ x in another order than BLAS: the cancellation leaves only
    rounding, of the size of 1e12 * eps * |x|^2, in f's value (its Jacobian is c)."""
    return _MODEL.c * x + ((x @ x) * 1e12 - np.sum(x * x) * 1e12)


def test_rounding_the_recording_does_differently_is_not_taken_for_a_changed_f():
    """f cancels two large values that the recording rounds differently from numpy (its
    output is their rounding): the check refused it ("does not compute the same values")
    even though f is deterministic. It now allows differences within 1e-9 of the largest
    intermediate once a fresh preparation shows them, and still sees a changed constant."""
    rng = np.random.default_rng(3)
    _MODEL.c = 1.0
    try:
        jac = sparsejac.SparseJacobian(_cancelling, np.ones(50))
        for _ in range(4):
            x = rng.normal(size=50)
            j = jac(x).toarray()
            # J = c I + 2e12 x - 2e12 x: exact to the rounding of 2e12 x
            np.testing.assert_allclose(j, np.eye(50), atol=4e12 * np.abs(x).max() * 2.3e-16)
        assert jac.stats()["preparations"] <= 3
        _MODEL.c = 3.0  # invisible to the watch (an attribute): the value check sees it
        np.testing.assert_allclose(jac(rng.normal(size=50)).diagonal(), 3.0, atol=1e-2)
    finally:
        _MODEL.c = 1.0


def test_a_recording_that_differs_beyond_rounding_is_not_allowed():
    """What the allowance accepts is bounded by the intermediates' size: a recorded value
    that is off by more (a rule's bug) is no rounding, deterministic f or not."""
    f = lambda x: x**2 + 1.0  # noqa: E731
    jac = sparsejac.SparseJacobian(f, np.ones(3))
    state, check = jac._state, jac._check
    x = np.full(3, 2.0)
    for off, allowed in [(0.5, False), (1e-13, True)]:
        check.keep(state, b"", f(check.y) * (1.0 + off))
        assert check.tolerate_rounding(state, f(x) * (1.0 + off), x, ()) is allowed
    allow = check.allowance(state, 3)  # 4x the larger difference, at y or x, per element
    assert (allow >= 4e-13 * f(check.y) * 0.99).all()
    assert (allow <= 4e-13 * np.maximum(f(check.y), f(x)) * 1.01).all()
    assert check.allowance(object(), 3) == 0.0


def test_a_random_f_is_not_taken_for_rounding():
    rng = np.random.default_rng(0)
    jac = sparsejac.SparseJacobian(lambda x: x * 2.0, np.ones(3))
    state = jac._state
    noisy = dataclasses.replace(state, call=lambda z: z * (2.0 + 1e-14 * rng.random()))
    check = jac._check
    check.keep(noisy, b"", check.y * 2.0)
    assert not check.tolerate_rounding(noisy, np.full(3, 4.0), np.full(3, 2.0), ())


class _Shared:
    """Objective and constraints sharing an intermediate cached on x, as with scipy."""

    def __init__(self, same):
        self.key, self.val, self.same = None, None, same

    def con(self, x):
        if self.key is None or not self.same(x, self.key):
            self.key, self.val = np.array(x, copy=True), np.exp(x) * x[::-1]
        return self.val[:2] - 1.0


@pytest.mark.parametrize("same", [lambda x, k: tuple(x) == tuple(k),
                                  lambda x, k: bool(np.all(x == k))],
                         ids=["tuple_key", "memoize_jac"])
def test_a_cache_hit_on_x_is_not_differentiated_as_a_constant(same):
    """A one-off Jacobian of f whose cache already holds x fell back to a local trace, took
    the cache hit (constants) and returned an all-zero Jacobian. The branch on x == key holds
    at x only: it is refused, naming the line."""
    x = np.array([0.1, 0.5, -0.3])
    shared = _Shared(same)
    shared.con(x)  # the solver evaluated c(x) first
    with pytest.raises(sparsejac.ConcretizationError, match=r"holds at this x.*cache"):
        sparsejac.jacobian(shared.con, x)
    # a cold cache (another x) follows the computation: the true Jacobian
    fresh = _Shared(same)
    fresh.con(x + 1.0)
    want = sparsejac.jacobian(lambda z: (np.exp(z) * z[::-1])[:2] - 1.0, x).toarray()
    np.testing.assert_allclose(sparsejac.jacobian(fresh.con, x).toarray(), want)


def test_equalities_that_may_hold_nearby_are_still_followed():
    """y == y (a NaN check) and two x-dependent values (a converged iteration) may stay
    equal near x: local traces still follow them; x == c where it does not hold is a branch
    that holds nearby too."""
    x = np.array([0.5, 2.0])

    def f(y):
        z = y.copy()
        for _ in range(60):  # a fixed-point iteration inside f, until nothing changes
            new = 0.5 * (z + y / z)
            if np.all(new == z):
                break
            z = new
        return z * (1.0 if np.any(y != y) else 2.0) * (3.0 if y[0] == 7.0 else 1.0)

    want = np.diag(1.0 / np.sqrt(x))  # d(2 sqrt(y))/dy
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, rtol=1e-8)


def test_a_small_constant_change_beside_a_cancelling_row_is_seen():
    """The allowance learned from a cancelling row was one absolute tolerance for every row:
    a rate constant read through an attribute, changed from 0.001 to 0.02, stayed stale in
    the other rows. The check now compares with the difference learned at y, element by
    element: any change of f(y) shows (Jacobians and Hessians)."""
    rng = np.random.default_rng(3)
    _MODEL.c = 0.001
    try:
        jac = sparsejac.SparseJacobian(
            lambda x: np.concatenate([[(x @ x) * 1e12 - np.sum(x * x) * 1e12], _MODEL.c * x]),
            np.ones(50))
        for _ in range(3):
            jac(rng.normal(size=50))
        _MODEL.c = 0.02
        assert jac(rng.normal(size=50)).toarray()[1, 0] == 0.02
        _MODEL.c = 1e-4
        hess = sparsejac.SparseHessian(
            lambda x: (x @ x) * 1e12 - np.sum(x * x) * 1e12 + _MODEL.c * np.sum(x**4),
            np.ones(30))
        for _ in range(4):
            hess(rng.normal(size=30))
        _MODEL.c = 3e-4
        x = rng.normal(size=30)
        np.testing.assert_allclose(hess(x).diagonal(), 12 * 3e-4 * x**2, rtol=1e-6, atol=1e-3)
    finally:
        _MODEL.c = 1.0


def test_equalities_of_counts_signs_and_partial_masks_are_not_ties():
    """The tie refusal flagged any equality with a constant: a count (np.sum(x > 0) == n), a
    sign or floor of x, an index (argmin == 2), np.isfinite(x).all() == True, and a mask that
    holds on a constant boundary only (np.all(u == 0)) were refused though each holds near x.
    Only an equality of a differentiable operand that holds at every element is a tie."""
    x = np.array([1.5, 2.0, 3.0])
    knots = np.array([0.0, 1.0, 1.6, 3.0])
    branches = [
        lambda y: bool(np.sum(y > 0) == y.size),
        lambda y: bool(np.sign(y[1]) == 1),
        lambda y: bool(np.floor(y[0]) == 1),
        lambda y: bool(np.argmin(np.abs(knots - y[0])) == 2),
        lambda y: bool(np.isfinite(y).all() == True),  # noqa: E712
    ]
    for branch in branches:
        np.testing.assert_array_equal(
            sparsejac.jacobian(lambda y, b=branch: y**2 if b(y) else y, x).toarray(),
            np.diag(2 * x))

    def g(y):
        u = np.zeros(y.size + 2)
        u[1:-1] = y  # zero boundary values: u == 0 holds there only
        return y * (2.0 if not np.all(u == 0) else 1.0)

    np.testing.assert_array_equal(sparsejac.jacobian(g, x).toarray(), 2 * np.eye(3))
    with pytest.raises(sparsejac.ConcretizationError, match="holds at this x"):
        sparsejac.jacobian(g, np.zeros(3))  # every element equal: the special case at 0


def test_a_slow_rate_beside_a_fast_one_is_watched_row_by_row():
    """The check's tolerance was relative to the largest row: beside a fast reaction (1e10)
    a slow rate read through an attribute changed from 1e-3 to 0.5 unseen (J[2, 2] stayed
    -0.001). Each element is compared to its own size now. And a cancelling row keeps its
    allowance when an ODE's t changes at every call (it prepared again at each)."""

    class Rates:
        fast, slow = 1e10, 1e-3

    r = Rates()

    def rhs(t, y):
        return np.array([-r.fast * y[0] * y[1] + r.slow * y[2], r.fast * y[0] * y[1],
                         -r.slow * y[2]])

    jac = sparsejac.ode_jacobian(rhs, 0.0, np.array([1.0, 1e-3, 0.5]), format="dense")
    y = np.array([0.9, 2e-3, 0.4])
    assert jac(0.0, y)[2, 2] == -1e-3
    r.slow = 0.5
    assert jac(1.0, y)[2, 2] == -0.5

    def cancelling(t, y):
        return np.concatenate([[(y @ y) * 1e12 - np.sum(y * y) * 1e12], np.cos(t) * y[1:]])

    ode = sparsejac.ode_jacobian(cancelling, 0.0, np.ones(40), format="csr")
    rng = np.random.default_rng(0)
    for t in np.linspace(0.1, 2.0, 12):
        np.testing.assert_allclose(ode(t, rng.normal(size=40)).toarray()[1:],
                                   np.cos(t) * np.eye(40)[1:])
    assert ode.prepared.stats()["preparations"] <= 3


def test_a_cache_answering_near_its_key_warns():
    """np.allclose(x, key) makes f constant near the key: its zero Jacobian is exact for f
    as written (finite differences agree) but seldom meant; the one-off Jacobian warns."""

    class Memo:
        key = val = None

        def f(self, x):
            if self.key is None or not np.allclose(x, self.key):
                self.key, self.val = np.array(x, copy=True), np.exp(x) * x
            return self.val

    m, x = Memo(), np.array([0.1, 0.5, -0.3])
    m.f(x)
    with pytest.warns(RuntimeWarning, match="does not depend on x") as record:
        got = sparsejac.jacobian(m.f, x)
    assert record[0].filename == __file__
    assert got.nnz == 0 or not got.toarray().any()


_T = np.linspace(0.0, 2.0, 5)


def _guarded_rise(p):  # p1 (1 - exp(-k t)) / k with its limit p1 t at k = 0
    k = p[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        return p[1] * np.where(k == 0, _T, -np.expm1(-k * _T) / k)


def _guarded_rise_ne(p):
    k = p[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        return p[1] * np.select([k != 0], [-np.expm1(-k * _T) / k], _T)


def _rise_jacobian(p):
    """Hand-derived: d/dk of p1 (1 - exp(-k t)) / k, and the p1 column."""
    k, p1 = p
    g = -np.expm1(-k * _T) / k
    dg = (_T * np.exp(-k * _T) - g) / k
    return np.stack([p1 * dg, g], axis=1)


@pytest.mark.parametrize("f", [_guarded_rise, _guarded_rise_ne], ids=["where_eq", "select_ne"])
def test_a_numpy_selection_on_an_equality_at_x_is_refused_not_differentiated(f):
    """np.where(k == 0, limit, formula) at k = 0 gave the limit branch's derivative (a zero
    k column; finite differences give -p1 t²/2) and least_squares stopped there. It is
    refused with the line, at the trace point and when a prepared Jacobian meets the tie;
    nearby points are exact."""
    at_tie = np.array([0.0, 2.0])
    with pytest.raises(sparsejac.ConcretizationError,
                       match=r"holds at this x only \(at test_trust\.py:\d+: .*np\.abs\(k\) <"):
        sparsejac.jacobian(f, at_tie)
    jac = sparsejac.SparseJacobian(f, np.array([0.5, 2.0]))
    for p in ([0.5, 2.0], [0.3, 1.5], [-0.2, 2.0]):
        p = np.array(p)
        np.testing.assert_allclose(jac(p).toarray(), _rise_jacobian(p), rtol=1e-12, atol=1e-14)
    with pytest.raises(sparsejac.ConcretizationError, match=r"test_trust\.py:\d+: .*k"):
        jac(at_tie)
    np.testing.assert_allclose(jac(np.array([0.3, 2.0])).toarray(),
                               _rise_jacobian(np.array([0.3, 2.0])), rtol=1e-12)


def test_a_rule_own_equality_and_partial_equalities_are_not_ties():
    """xlogy's own x == 0 (a rule's special case, handled) and u == 0 at some elements only
    (a boundary) pass; the derivatives are the hand-derived ones."""
    import scipy.special as sc

    x = np.array([0.0, 0.5, 2.0])
    J = sparsejac.jacobian(lambda z: sc.xlogy(z, 3.0) + np.where(z == 0, 0.0, z ** 2), x)
    np.testing.assert_allclose(J.toarray(), np.diag(np.log(3.0) + np.array([0.0, 1.0, 4.0])))


def _rotate(r):  # the Rodrigues rotation of scipy's bundle-adjustment example
    p = np.array([1.0, 2.0, 3.0])
    theta = np.linalg.norm(r)
    with np.errstate(invalid="ignore"):
        v = np.nan_to_num(r / theta)
    return np.cos(theta) * p + np.sin(theta) * np.cross(v, p) + (v @ p) * (1 - np.cos(theta)) * v


def test_a_replay_keeps_the_warnings_f_silenced_to_itself():
    """f silenced 0/0 with np.errstate; the prepared engine's replay at r = 0 warned from
    sparsejac's own file (elementwise.py) anyway. It now refuses the NaN replaced there
    (np.nan_to_num of 0/0), without a warning."""
    import warnings

    jac = sparsejac.SparseJacobian(_rotate, np.ones(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(sparsejac.ConcretizationError, match="nan_to_num"):
            jac(np.zeros(3))
        assert np.isfinite(jac(np.full(3, 1e-3)).toarray()).all()


def test_a_nan_replaced_at_a_singular_point_is_refused_like_a_tie():
    """np.nan_to_num(r / |r|) at r = 0 (scipy's bundle-adjustment rotation), np.where(np.isnan(
    v), 0, v) and np.nan_to_num(p * log(p)) at p = 0 replace 0/0 or log(0) at exactly this
    point: the replacement's derivative (0) is not f's (d(R p)/dr at r = 0 is -[p]x). A
    derivative is refused there, one-off, prepared and replayed, also when only some elements
    are singular; patterns and finite differences are not; away from the point the Jacobian
    is exact (central differences)."""
    def where_guard(r):
        theta = np.linalg.norm(r)
        with np.errstate(invalid="ignore"):
            v = r / theta
        return np.where(np.isnan(v), 0.0, v) * theta ** 2

    def entropy(p):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.atleast_1d(np.sum(np.nan_to_num(p * np.log(p))))

    def two_cameras(r):
        return np.concatenate([_rotate(r[:3]), _rotate(r[3:])])

    for f, at in ((_rotate, np.zeros(3)), (where_guard, np.zeros(3)),
                  (entropy, np.array([0.0, 0.5, 0.5])),
                  (two_cameras, np.array([0.1, 0.2, 0.3, 0.0, 0.0, 0.0]))):
        with pytest.raises(sparsejac.ConcretizationError, match="finds a NaN or an infinity"):
            sparsejac.jacobian(f, at)
        assert sparsejac.jacobian_sparsity(f, at).nnz > 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert sparsejac.jacobian(f, at, mode="fd").shape[1] == at.size
        near = at + np.linspace(0.01, 0.03, at.size)
        jac = sparsejac.SparseJacobian(f, near)
        h = 1e-6
        fd = np.stack([(f(near + h * e) - f(near - h * e)) / (2 * h) for e in np.eye(at.size)],
                      axis=1)
        np.testing.assert_allclose(jac(near).toarray(), fd, rtol=1e-6, atol=1e-7)
        with pytest.raises(sparsejac.ConcretizationError, match="finds a NaN or an infinity"):
            jac(at)


def test_a_tie_does_not_stop_detection_finite_differences_or_flat_selections():
    """The tie refusal is for derivatives taken at the tie: patterns, finite differences and
    equalities of a value that is flat there (relu, clip, minimum) pass, as before."""
    def f(x):
        return np.where(x == 0, 0.0, x ** 2)

    z = np.zeros(3)
    np.testing.assert_array_equal(sparsejac.jacobian_sparsity(f, z).toarray(), np.eye(3))
    np.testing.assert_array_equal(
        sparsejac.hessian_sparsity(lambda x: np.sum(f(x)), z).toarray(), np.eye(3))
    fd = sparsejac.jacobian(f, z, mode="fd").toarray()
    assert np.all(np.abs(fd) < 1e-7)
    with pytest.raises(sparsejac.ConcretizationError, match="holds at this x only"):
        sparsejac.jacobian(f, z)
    with pytest.raises(sparsejac.ConcretizationError, match="holds at this x only"):
        sparsejac.SparseHessian(lambda x: np.sum(f(x)), z)
    x = np.array([-1.0, -2.0, -3.0])
    np.testing.assert_array_equal(
        sparsejac.jacobian(lambda x: np.where(np.maximum(x, 0) == 0, 0.1 * x, x), x).toarray(),
        0.1 * np.eye(3))
    np.testing.assert_array_equal(
        sparsejac.jacobian(lambda x: np.where(np.clip(x, -1, 1) == 1, 3 * x, x), -x).toarray(),
        3 * np.eye(3))

    def penalised(x):  # a penalty that vanishes where the constraint holds
        v = np.maximum(0.0, x - 5.0)
        return np.where(v == 0, x ** 2, x ** 2 + 100 * v ** 2)

    jac = sparsejac.SparseJacobian(penalised, np.array([1.0, 7.0]))
    np.testing.assert_array_equal(jac(np.array([1.0, 2.0])).toarray(), np.diag([2.0, 4.0]))


def test_a_strong_exponent_keeps_numpy_promotion_of_a_squared_modulus():
    """abs(float32) ** np.float64(2) is float64 in numpy: not recorded as a float32 square."""
    def f(v):
        return np.abs(v.astype(np.float32)) ** np.float64(2)

    x = np.array([0.3, -1.7, 0.1])
    J = sparsejac.jacobian(f, x).toarray()
    u = x.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(J, np.diag(2 * u), rtol=1e-7)


def test_even_exponents_of_a_modulus_are_smooth_at_zero():
    """sum(|x_i| ** (i + 1)) (the "sum of different powers" test function) at its minimum
    x = 0: |x_0| ** 2 is x_0 ** 2, second derivative 2 (it was 0: the modulus's zero
    derivative squared). Hand-derived Hessian diag(e (e - 1) |x| ** (e - 2)) and Jacobian."""
    def sodp(x):
        return np.sum(np.abs(x) ** np.arange(2, x.size + 2))

    for x in (np.zeros(4), np.array([0.0, 0.5, -0.3, -1.2])):
        e = np.arange(2, 6)
        want = e * (e - 1) * np.abs(x) ** (e - 2)
        np.testing.assert_allclose(np.diag(sparsejac.hessian(sodp, x).toarray()), want,
                                   rtol=1e-14, atol=0)
        np.testing.assert_allclose(sparsejac.SparseHessian(sodp, np.ones(4))(x).toarray(),
                                   np.diag(want), rtol=1e-14, atol=0)
        got = sparsejac.SparseJacobian(lambda v: np.abs(v) ** np.array([4.0, 3.0, 2.0, 6.0]),
                                       np.ones(4)).evaluate(x)
        np.testing.assert_allclose(got.toarray(), np.diag([4, 3, 2, 6] * np.abs(x) ** [
            3.0, 2.0, 1.0, 5.0] * np.sign(x)), rtol=1e-14, atol=0)


@pytest.mark.parametrize("p", [1.5, 1.2, 0.5, 2.5, 3.0])
def test_fractional_powers_of_a_modulus_have_their_second_derivative_at_zero(p):
    """|x| ** p with 0 < p < 2 at x = 0: the second derivative p (p - 1) |x| ** (p - 2) is
    infinite (a bridge penalty at the usual start w = 0); it was 0, as if the penalty were
    absent (the Hessian hunt). Values keep numpy's bits; the Jacobian is unchanged.
    Oracle: by hand, for every engine and path."""
    def f(x):
        return np.sum(np.abs(x) ** p)

    x = np.array([0.0, 0.7, -1.3])
    with np.errstate(divide="ignore"):
        want = p * (p - 1) * np.abs(x) ** (p - 2)
    got = np.diag(sparsejac.hessian(f, x).toarray())
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
    for kw in ({}, {"path": "products"}, {"method": "acyclic"}):
        np.testing.assert_allclose(sparsejac.SparseHessian(f, np.ones(3), **kw)(x).diagonal(),
                                   want, rtol=1e-14, atol=0)
    grad = np.concatenate([[0.0], p * np.sign(x[1:]) * np.abs(x[1:]) ** (p - 1)])
    np.testing.assert_allclose(sparsejac.jacobian(lambda v: np.abs(v) ** p, x).toarray(),
                               np.diag(grad), rtol=1e-14, atol=0)
    from sparsejac.tracing import trace

    assert np.array_equal(trace(lambda v: np.abs(v) ** p, x).out.value, np.abs(x) ** p)
    # the compiled tape encodes it (the power of the modulus): the same Jacobian
    taped = sparsejac.SparseJacobian(lambda v: np.abs(v) ** p * v[::-1], np.ones(3),
                                     engine="tape")
    assert taped.stats()["engine"]["engine"] == "tape"
    chained = sparsejac.SparseJacobian(lambda v: np.abs(v) ** p * v[::-1], np.ones(3),
                                       engine="chain")
    np.testing.assert_allclose(taped(x).toarray(), chained(x).toarray(), rtol=1e-15, atol=0)


def test_a_bridge_penalty_mixes_exponents_per_element():
    """An exponent array: the fractional elements get the modulus power's own derivatives,
    the even ones the smooth power, the others the power of the modulus. By hand."""
    e = np.array([1.5, 2.0, 3.0, 0.5])

    def f(x):
        return np.sum(np.abs(x) ** e)

    x = np.zeros(4)
    np.testing.assert_array_equal(np.diag(sparsejac.hessian(f, x).toarray()),
                                  [np.inf, 2.0, 0.0, -np.inf])


def test_a_tie_written_as_logical_not_or_a_bool_cast_is_refused_too():
    """np.logical_not(k) is k == 0 and k.astype(bool) is k != 0: the same special case at
    k = 0; patterns and points off the tie are unchanged."""
    def by_not(p):
        with np.errstate(invalid="ignore", divide="ignore"):
            return p[1] * np.where(np.logical_not(p[0]), _T, -np.expm1(-p[0] * _T) / p[0])

    def by_cast(p):
        with np.errstate(invalid="ignore", divide="ignore"):
            return p[1] * np.where(p[0].astype(bool), -np.expm1(-p[0] * _T) / p[0], _T)

    for f, op in ((by_not, "np.logical_not"), (by_cast, r"astype\(bool\)")):
        with pytest.raises(sparsejac.ConcretizationError, match=f"behind `{op}`"):
            sparsejac.jacobian(f, np.array([0.0, 2.0]))
        p = np.array([0.4, 2.0])
        np.testing.assert_allclose(sparsejac.jacobian(f, p).toarray(), _rise_jacobian(p),
                                   rtol=1e-12, atol=1e-14)
        assert sparsejac.jacobian_sparsity(f, np.array([0.0, 2.0])).nnz == 10


def test_a_tie_as_the_condition_itself_as_isclose_or_against_a_parameter_is_refused():
    """np.where(k, formula, limit) tests k != 0; np.isclose(k, 0, atol=0) is k == 0; k == t
    with t a traced parameter does not move with x: each gave the limit's zero derivative
    at k = 0 (finite differences give -p1 t²/2). Points off the tie are exact."""
    def by_condition(p):
        with np.errstate(invalid="ignore", divide="ignore"):
            return p[1] * np.where(p[0], -np.expm1(-p[0] * _T) / p[0], _T)

    def by_isclose(p):
        with np.errstate(invalid="ignore", divide="ignore"):
            return p[1] * np.where(np.isclose(p[0], 0, atol=0), _T,
                                   -np.expm1(-p[0] * _T) / p[0])

    def by_parameter(p, k0):
        k = p[0] - k0
        with np.errstate(invalid="ignore", divide="ignore"):
            return p[1] * np.where(p[0] == k0, _T, -np.expm1(-k * _T) / k)

    for f, op in ((by_condition, r"np\.where\(k, \.\.\.\)"), (by_isclose, "==")):
        with pytest.raises(sparsejac.ConcretizationError, match=f"`{op}`"):
            sparsejac.jacobian(f, np.array([0.0, 2.0]))
        p = np.array([0.4, 2.0])
        np.testing.assert_allclose(sparsejac.jacobian(f, p).toarray(), _rise_jacobian(p),
                                   rtol=1e-12, atol=1e-14)
    jac = sparsejac.SparseJacobian(by_parameter, np.array([0.4, 2.0]), params=(0.0,))
    np.testing.assert_allclose(jac.evaluate(np.array([0.7, 2.0]), params=(0.3,)).toarray(),
                               _rise_jacobian(np.array([0.4, 2.0])), rtol=1e-12, atol=1e-14)
    with pytest.raises(sparsejac.ConcretizationError, match="holds at this x only"):
        jac.evaluate(np.array([0.3, 2.0]), params=(0.3,))


def test_a_residual_at_its_solution_is_not_taken_for_another_program():
    """At x = solve(A, b), A @ x - b is round-off (1e-16) whose last bits depend on the order
    of the sums: the traced value was compared with a tolerance scaled by that round-off
    and refused as "f computes other values when traced" (a Newton solution, an ODE's
    steady state). The Jacobian is A."""
    rng = np.random.default_rng(0)
    A, b = rng.uniform(size=(6, 6)), rng.uniform(size=6)
    xs = np.linalg.solve(A, b)

    def residual(x):
        return A @ x - b

    np.testing.assert_allclose(sparsejac.jacobian(residual, xs).toarray(), A, rtol=1e-15)
    np.testing.assert_allclose(sparsejac.SparseJacobian(residual, xs)(xs).toarray(), A,
                               rtol=1e-15)
    jac = sparsejac.ode_jacobian(lambda t, y: b - A @ y, 0.0, xs)
    np.testing.assert_allclose(jac(0.0, xs), -A, rtol=1e-15)  # small: a dense array
    calls = iter(range(10))

    def counting(x):  # a real mismatch at the same point is still refused
        return A @ x - b + 1e-6 * next(calls)

    with pytest.raises(sparsejac.TraceMismatchError, match="other values"):
        sparsejac.jacobian(counting, xs)


def test_a_large_constant_does_not_loosen_the_trace_check_and_complex_ties_are_ties():
    """Two gaps of a draft: the round-off scale of the trace check counted the program's
    constants, so Robertson's rate constant 3e7 let an f that adds 1e-3 y1² under the
    tracer through (a wrong first column, -0.038 for -0.04); and z == 0 of z = x + 0j
    compared the parts as sparsejac's own comparison, never a tie (the limit's zero
    derivative, where differences give 0.5)."""
    def robertson(y):
        r = np.stack([-0.04 * y[0] + 1e4 * y[1] * y[2],
                      0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2, 3e7 * y[1] ** 2])
        if not isinstance(y, np.ndarray):  # another path under the tracer
            r = r + 1e-3 * y[0] ** 2
        return r

    with pytest.raises(sparsejac.TraceMismatchError):
        sparsejac.jacobian(robertson, np.array([1.0, 2e-5, 1e-2]))

    def expm1_over_x(x):
        z = x + 0j
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(z == 0, 1.0, np.expm1(x) / np.where(np.abs(x) < 1e-300, 1.0, x))

    with pytest.raises(sparsejac.ConcretizationError, match="holds at this x only"):
        sparsejac.jacobian(expm1_over_x, np.zeros(3))
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(sparsejac.jacobian(expm1_over_x, x).toarray(),
                               np.diag((x * np.exp(x) - np.expm1(x)) / x ** 2), rtol=1e-13)


def test_sign_at_zero_everywhere_is_a_tie():
    """np.sign(v) * g(|v|) at v = 0 everywhere (a pipe network at a flat start) would get a
    zero derivative where the slope is g'(0): refused like k == 0, one-off and at a prepared
    replay; at some elements only it passes (a boundary); np.where(v >= 0, g(v), -g(-v)) is
    exact there (the hand-derived slope 1 / (2 sqrt(eps)))."""
    eps = 1e-4

    def flow(h):
        dh = h[1:] - h[:-1]
        return np.sign(dh) * (np.sqrt(np.abs(dh) + eps) - np.sqrt(eps))

    def flow_where(h):  # g written for u >= 0: no modulus (whose derivative at 0 is 0)
        dh = h[1:] - h[:-1]
        g = lambda u: np.sqrt(u + eps) - np.sqrt(eps)  # noqa: E731
        with np.errstate(invalid="ignore"):  # the branch not taken
            return np.where(dh >= 0, g(dh), -g(-dh))

    flat = np.ones(4)
    with pytest.raises(sparsejac.ConcretizationError, match=r"np\.sign"):
        sparsejac.jacobian(flow, flat)
    jac = sparsejac.SparseJacobian(flow, np.array([1.0, 2.0, 0.5, 3.0]))
    with pytest.raises(sparsejac.ConcretizationError, match=r"np\.sign"):
        jac(flat)
    assert sparsejac.jacobian_sparsity(flow, flat).nnz == 6
    sparsejac.jacobian(flow, np.array([1.0, 1.0, 2.0, 3.0]))  # one element at 0: passes
    slope = 1.0 / (2.0 * np.sqrt(eps))
    want = slope * (np.eye(3, 4, 1) - np.eye(3, 4))
    np.testing.assert_allclose(sparsejac.jacobian(flow_where, flat).toarray(), want,
                               rtol=1e-12)
    h = np.array([1.0, 2.0, 0.5, 3.0])
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(sparsejac.SparseJacobian(flow_where, flat)(h).toarray(),
                                   fd_jacobian(flow_where, h), rtol=1e-6)


def test_a_nan_of_constant_data_masked_by_nan_to_num_is_not_a_singular_point():
    """Missing observations stored as NaN in constant data, masked with np.nan_to_num or
    np.where(np.isnan(r), 0, r) after a division by x: the NaN is the data's for every x, so
    the masked rows are exactly zero; no refusal (hand-derived Jacobian)."""
    data = np.array([1.0, np.nan, 2.0])

    def f(x):
        r = data / x - 1.0  # a division by x: a singular point at x = 0
        return np.nan_to_num(r) + np.where(np.isnan(r), 0.0, r)

    x = np.array([0.5, 2.0, 4.0])
    want = np.diag(2.0 * np.array([-1.0 / 0.25, 0.0, -2.0 / 16.0]))
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, rtol=1e-15)
    np.testing.assert_allclose(sparsejac.SparseJacobian(f, x + 1.0)(x).toarray(), want,
                               rtol=1e-15)


def test_a_guard_on_an_equality_is_followed_off_its_tie():
    """`if r == 0: return 0` (a guard against a division by zero; the idioms hunt, an orbit
    right-hand side) stopped every global pattern and prepared Jacobian. The equality holds at
    no point near x, so the generic branch is traced; a call where it holds is refused, never
    answered with the generic branch's derivatives. Oracle: by hand."""
    def orbit(y):
        r, v = y[:3], y[3:]
        rn = np.linalg.norm(r)
        if rn == 0:
            return np.zeros(6)
        return np.concatenate([v, -r / rn ** 3])

    def by_hand(y):
        r = y[:3]
        rn = np.linalg.norm(r)
        J = np.zeros((6, 6))
        J[:3, 3:] = np.eye(3)
        J[3:, :3] = -np.eye(3) / rn ** 3 + 3 * np.outer(r, r) / rn ** 5
        return J

    x = np.array([1.0, 0.2, 0.1, 0.0, 1.0, 0.0])
    jac = sparsejac.SparseJacobian(orbit, x)
    for p in (x, x + 0.3):
        np.testing.assert_allclose(jac(p).toarray(), by_hand(p), rtol=1e-13, atol=1e-15)
    at_tie = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    with pytest.raises(sparsejac.ConcretizationError, match="holds at this x only"):
        jac(at_tie)
    with pytest.raises(sparsejac.ConcretizationError):
        sparsejac.SparseJacobian(orbit, at_tie)


@pytest.mark.parametrize("engine", ["auto", "chain", "tape"])
def test_single_precision_constants_are_read_as_the_ufunc_loop_reads_them(engine):
    """``np.float32(2.5) ** x`` is computed in float64 (the constant cast first): its
    derivative uses float64's ``log(2.5)``, not float32's (found from outside: a relative
    error of 3e-8 in the one-off Jacobian and the chain engine)."""
    import scipy.special as sc

    a = np.float32(2.5)
    c = np.array([0.3, 1.7], dtype=np.float32)
    x = np.array([0.4, 1.3])
    cases = [
        (lambda x: a ** x, 2.5 ** x * np.log(2.5)),
        (lambda x: np.logaddexp(c, x), np.exp(x) / (np.exp(np.float64(c)) + np.exp(x))),
        (lambda x: sc.xlogy(c, x), np.float64(c) / x),
    ]
    for f, want in cases:
        with warnings.catch_warnings():  # (the tape does not encode every ufunc: chain then)
            warnings.simplefilter("ignore", UserWarning)
            got = sparsejac.SparseJacobian(f, x, engine=engine)(x).diagonal()
        np.testing.assert_allclose(got, want, rtol=1e-15)
        np.testing.assert_allclose(sparsejac.jacobian(f, x).diagonal(), want, rtol=1e-15)
