"""Issue 13 item 6: complex intermediates with real x and real outputs, hand-derived Jacobians.

Every case runs in each exact mode, through a global and a local pattern, and through one
prepared ``SparseJacobian`` replayed at three new points. The oracle of each hand-derived
Jacobian is central differences (:func:`tests.scenarios.fd_jacobian`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import sparsejac
from tests.scenarios import fd_jacobian

N = 8
_K = 2.0 * np.pi * np.fft.rfftfreq(N, d=1.0 / N) / N  # wavenumbers of a period-N grid (h = 1)


def _spectral_derivative(x: Any) -> Any:
    """d/dt of a periodic sample: irfft(i k rfft(x)); a real linear map D (dense)."""
    return np.fft.irfft(1j * _K * np.fft.rfft(x), n=N)


def _spectral_jac(x: np.ndarray) -> np.ndarray:
    # D[j, l] = (1/N) sum_k w_k k sin(k (l - j))-type kernel, by hand: for N even the Nyquist
    # mode contributes nothing (irfft keeps its real part, i k X is imaginary there)
    j = np.arange(N)
    d = np.zeros((N, N))
    for m in range(1, N // 2):
        k = 2.0 * np.pi * m / N
        # derivative of (2/N) cos(k (t - l)) at t = j
        d += -(2.0 / N) * k * np.sin(k * (j[:, None] - j[None, :]))
    return d


def _exp_ikx(x: Any) -> Any:
    """Re(e^{i 3 x}) + Im(e^{i 3 x}) * x: cos(3x) + x sin(3x)."""
    z = np.exp(1j * 3.0 * x)
    return z.real + z.imag * x


def _exp_ikx_jac(x: np.ndarray) -> np.ndarray:
    return np.diag(-3.0 * np.sin(3 * x) + np.sin(3 * x) + 3.0 * x * np.cos(3 * x))


def _abs_angle(x: Any) -> Any:
    """|x_i + i x_{i+1}| and angle(x_i + i x_{i+1}) (not holomorphic)."""
    z = x[:-1] + 1j * x[1:]
    return np.concatenate([np.abs(z), np.angle(z)])


def _abs_angle_jac(x: np.ndarray) -> np.ndarray:
    a, b = x[:-1], x[1:]
    r2 = a * a + b * b
    r = np.sqrt(r2)
    n = x.size
    jac = np.zeros((2 * (n - 1), n))
    i = np.arange(n - 1)
    jac[i, i], jac[i, i + 1] = a / r, b / r
    jac[n - 1 + i, i], jac[n - 1 + i, i + 1] = -b / r2, a / r2
    return jac


def _conj_product(x: Any) -> Any:
    """Re(conj(z) w) with z = x + i x^2, w = x' - 2i (x' = x reversed): x x' - 2 x^2."""
    z = x + 1j * x**2
    w = x[::-1] - 2j
    return (np.conj(z) * w).real


def _conj_product_jac(x: np.ndarray) -> np.ndarray:
    return np.diag(x[::-1] - 4 * x) + np.fliplr(np.diag(x))


def _power_spectrum(x: Any) -> Any:
    """|fft(x)|^2: sum over l, m of x_l x_m cos(2 pi k (l - m) / N)."""
    return np.abs(np.fft.fft(x)) ** 2


def _power_spectrum_jac(x: np.ndarray) -> np.ndarray:
    k = np.arange(N)
    c = np.cos(2 * np.pi * np.outer(k, k) / N)
    s = np.sin(2 * np.pi * np.outer(k, k) / N)
    return 2 * ((c @ x)[:, None] * c + (s @ x)[:, None] * s)


def _u(rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(0.5, 1.5, N)


CASES: list[tuple[str, Callable[[Any], Any], Callable[[np.ndarray], np.ndarray]]] = [
    ("spectral_derivative", _spectral_derivative, _spectral_jac),
    ("exp_ikx", _exp_ikx, _exp_ikx_jac),
    ("abs_angle", _abs_angle, _abs_angle_jac),
    ("conj_product", _conj_product, _conj_product_jac),
    ("power_spectrum", _power_spectrum, _power_spectrum_jac),
]
PARAMS = [pytest.param(f, j, id=name) for name, f, j in CASES]


@pytest.mark.parametrize(("f", "jac"), PARAMS)
def test_hand_derived_jacobian_is_right(f: Any, jac: Any, rng: np.random.Generator) -> None:
    """The oracle agrees with central differences."""
    x = _u(rng)
    np.testing.assert_allclose(jac(x), fd_jacobian(f, x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["forward", "reverse", "mixed", "auto"])
@pytest.mark.parametrize(("f", "jac"), PARAMS)
def test_every_mode_is_exact(f: Any, jac: Any, mode: str, rng: np.random.Generator) -> None:
    """Each exact mode gives the hand-derived Jacobian to rounding."""
    x = _u(rng)
    got = sparsejac.jacobian(f, x, mode=mode).toarray()  # type: ignore[arg-type]
    np.testing.assert_allclose(got, jac(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("f", "jac"), PARAMS)
def test_patterns_hold_the_nonzeros(f: Any, jac: Any, rng: np.random.Generator) -> None:
    """Global and local patterns hold J's nonzeros and agree (nothing value-dependent)."""
    x = _u(rng)
    glob = sparsejac.jacobian_sparsity(f, x).toarray()
    local = sparsejac.jacobian_sparsity(f, x, local=True).toarray()
    np.testing.assert_array_equal(glob, local)
    nz = np.abs(jac(x)) > 1e-12
    assert not (nz & ~glob).any()


def test_local_patterns_are_exact_for_pointwise_cases(rng: np.random.Generator) -> None:
    """Elementwise complex arithmetic keeps its sparsity (no dense block)."""
    x = _u(rng)
    for f, jac in ((_exp_ikx, _exp_ikx_jac), (_abs_angle, _abs_angle_jac),
                   (_conj_product, _conj_product_jac)):
        np.testing.assert_array_equal(sparsejac.jacobian_sparsity(f, x).toarray(), jac(x) != 0)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize(("f", "jac"), PARAMS)
def test_prepared_replay_at_new_points(f: Any, jac: Any, mode: str,
                                       rng: np.random.Generator) -> None:
    """One preparation, three new points, each exact."""
    sj = sparsejac.SparseJacobian(f, _u(rng), mode=mode)  # type: ignore[arg-type]
    for _ in range(3):
        x = _u(rng)
        np.testing.assert_allclose(sj(x).toarray(), jac(x), rtol=1e-12, atol=1e-12)


def test_outside_a_trace_numpy_is_unchanged() -> None:
    """Complex numpy code without traced arrays runs numpy's own code."""
    x = np.linspace(0, 1, 5)
    np.testing.assert_array_equal(np.abs(np.fft.fft(x)), np.abs(np.fft.fft(x.copy())))
    assert np.fft.fft(x).dtype == np.complex128


def test_binary_ufuncs_without_a_complex_rule_are_refused_by_name():
    """``**`` and ``np.maximum`` of a complex intermediate: UnsupportedPrimitiveError naming
    numpy's function (it was Python's TypeError from unpacking inside sparsejac)."""
    import sparsejac

    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match=r"numpy\.power"):
        sparsejac.jacobian(lambda x: ((x + 1j) ** 0.5).real, np.ones(2))
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match=r"numpy\.maximum"):
        sparsejac.jacobian(lambda x: np.maximum(x + 1j, 0).real, np.ones(2))


def test_matmul_methods_and_comparisons_of_complex_intermediates():
    """``@`` with a complex operand is real-linear part by part; ``.copy()``, ``.ravel()``,
    ``.flatten()``, ``.astype(complex)`` work as their functions; comparisons and other
    ndarray methods raise sparsejac's errors (they were Python's TypeError/AttributeError)."""
    import sparsejac
    from tests.test_rules import fd4_jacobian

    x = np.linspace(0.2, 1.0, 3)
    c = np.exp(1j * np.arange(9.0).reshape(3, 3))
    for fn in (lambda z: (c @ z).imag, lambda z: (z @ c).real,
               lambda z: (np.exp(1j * z) @ c).real, lambda z: np.exp(1j * z).copy().real,
               lambda z: np.exp(1j * z).ravel().imag, lambda z: np.exp(1j * z).flatten().real,
               lambda z: np.exp(1j * z).astype(complex).real):
        np.testing.assert_allclose(sparsejac.jacobian(fn, x).toarray(), fd4_jacobian(fn, x),
                                   rtol=1e-7, atol=1e-9)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="comparison"):
        sparsejac.jacobian(lambda z: np.where((z + 1j * z) > 0, z, 0), x)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="astype"):
        sparsejac.jacobian(lambda z: np.exp(1j * z).astype(float), x)
    with pytest.raises(AttributeError, match="not supported on a complex intermediate"):
        sparsejac.jacobian(lambda z: (z + 1j).max().real, x)


def test_modulus_at_the_origin_has_the_abs_convention() -> None:
    """|z| at z = 0 (np.hypot, the modulus of a complex intermediate) has derivative 0, as
    np.abs and np.linalg.norm at 0 have; it was NaN (0/0), so the amplitude spectrum of a
    constant signal had NaN rows. Oracle: the convention, and central differences where the
    modulus is smooth (the spectrum's non-zero frequencies are 0 at a constant x only in
    value; the zero frequency's row is the sign of the sum: ones)."""
    z = np.zeros(2)
    for f in (lambda x: np.hypot(x[0], x[1]), lambda x: np.abs(x[0] + 1j * x[1]),
              lambda x: np.abs(x + 0j), lambda x: np.linalg.norm(x)):
        np.testing.assert_array_equal(sparsejac.jacobian(f, z).toarray(), 0.0)
    spectrum = sparsejac.jacobian(lambda x: np.abs(np.fft.rfft(x)), np.ones(4)).toarray()
    np.testing.assert_array_equal(spectrum, [[1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]])
    x = np.array([0.3, -0.4])
    np.testing.assert_allclose(sparsejac.jacobian(lambda u: np.hypot(u[0], u[1]), x).toarray(),
                               [[0.6, -0.8]], rtol=1e-14)


def test_complex_sparse_matrix_imag_and_spmatrix_product() -> None:
    """A constant complex scipy.sparse matrix times real traced x is a complex intermediate
    (numpy's casting UFuncTypeError before); .imag of a real traced array is zeros, as
    numpy's (an AttributeError before); u * L with a csr_matrix L is u @ L, as numpy defers
    to L (f 'returned an array of dtype object' before). Oracle: dense numpy, by hand."""
    import scipy.sparse as sp

    C = np.array([[1 + 2j, 0, 3j], [0, 2 - 1j, 0], [4, 0, 1 + 1j]])
    x = np.array([1.0, 2.0, 3.0])
    for S in (sp.csr_array(C), sp.csc_matrix(C)):
        got = sparsejac.jacobian(lambda u, S=S: np.abs(S @ u), x).toarray()
        want = sparsejac.jacobian(lambda u: np.abs(C @ u), x).toarray()  # the dense path
        np.testing.assert_allclose(got, want, rtol=1e-14)
        h = 1e-6
        fd = np.array([(np.abs(C @ (x + h * e)) - np.abs(C @ (x - h * e))) / (2 * h)
                       for e in np.eye(3)]).T
        np.testing.assert_allclose(got, fd, rtol=1e-7)
    np.testing.assert_array_equal(
        sparsejac.jacobian(lambda u: u + u.imag + (u + 0j).imag, x).toarray(), np.eye(3))
    L = sp.csr_matrix(np.array([[1.0, 2, 0], [0, 1, 3], [4, 0, 1]]))
    np.testing.assert_array_equal(sparsejac.jacobian(lambda u: u * L, x).toarray(),
                                  L.toarray().T)


def test_matmul_of_two_complex_intermediates():
    """A @ v with both complex (one with a constant imaginary part: x + 1j) raised a bare
    TypeError naming an internal class; it is the real-pair product, checked against
    central differences of the numpy function."""

    def f(x):
        a = x[:4].reshape(2, 2) + 1j
        b = x[:4].reshape(2, 2) + 1j * x[:4].reshape(2, 2) ** 2
        v = x[4:] + 1j * x[4:] ** 2
        w, u = a @ v, v @ b
        return np.concatenate([w.real, w.imag, u.real, u.imag])

    x = np.arange(1.0, 7.0) / 3.0
    want = np.array([(f(x + 1e-6 * e) - f(x - 1e-6 * e)) / 2e-6 for e in np.eye(6)]).T
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, atol=1e-7)


def _complex_buffer(y):
    b = np.zeros(y.size, dtype=complex)
    b[:] = y * (1 + 2j)
    return np.abs(b) ** 2


def test_a_complex_buffer_is_refused_with_its_line_and_the_way_out():
    """Assignment into np.zeros(n, dtype=complex): refused (not traced), naming the line and
    how to build the array from traced parts; it said only "use numpy functions on it"."""
    with pytest.raises(sparsejac.TracedConversionError,
                       match=r"\(at test_complex_intermediates\.py:\d+: `b\[:\] = .*"
                       r"complex buffers.*re \+ 1j \* im"):
        sparsejac.jacobian(_complex_buffer, np.ones(3))


def _masked_by_complex_equality(x: Any) -> Any:
    z = x[:2] + 1j * x[2:]
    return np.where(z == 1 + 0j, 0.0, 1.0) * x[:2] ** 2 + np.where(z != z[::-1], x[:2], 0.0)


def test_complex_equality_compares_both_parts_at_every_replay() -> None:
    """``z == c`` and ``z != w`` of complex intermediates compare both parts as traced
    comparisons. ``==`` was Python's identity (always False), baked into a prepared Jacobian:
    replayed where z == 1, row 0 kept the derivative 2 x[0] of the branch f does not take.
    Oracle: f's own branch, the hand derivative of the branch taken."""
    prepared = sparsejac.SparseJacobian(_masked_by_complex_equality, np.array([3.0, 2, 1, 1]))
    for x in (np.array([1.0, 2, 0, 1]), np.array([3.0, 3, 1, 1]), np.array([2.0, 5, 1, 0])):
        z = x[:2] + 1j * x[2:]
        expected = np.zeros((2, 4))
        expected[[0, 1], [0, 1]] = np.where(z == 1, 0.0, 2 * x[:2]) + (z != z[::-1])
        for jac in (prepared(x), sparsejac.jacobian(_masked_by_complex_equality, x)):
            np.testing.assert_array_equal(jac.toarray(), expected)


def test_a_complex_value_with_a_zero_imaginary_part_stays_complex() -> None:
    """y + 0j and y * (1 + 0j) were traced as the real y: np.sqrt of it ran the real square
    root, so a Jacobian prepared at positive y was 0 (or NaN) at negative y, where numpy's
    complex root is imaginary (the hand derivative of sqrt(-y) at y = -4 is -0.25). They
    stay complex: sqrt is refused by name; arithmetic, .real and abs are exact."""
    x0 = np.array([4.0, 9.0])
    for f in (lambda y: np.sqrt(y * (1 + 0j)).imag, lambda y: np.sqrt(y + 0j).real):
        with pytest.raises(sparsejac.UnsupportedPrimitiveError, match=r"numpy\.sqrt"):
            sparsejac.SparseJacobian(f, x0)
    x = np.array([-4.0, 9.0])
    for f, J in ((lambda y: ((y + 0j) * y).real, np.diag(2 * x)),
                 (lambda y: np.abs(y * (1 + 0j)) * 3, np.diag(3 * np.sign(x))),
                 (lambda y: np.fft.irfft(np.fft.rfft(y + 0j)), np.eye(2))):
        np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), J, atol=1e-15)
    with pytest.raises(TypeError, match="complex"):
        sparsejac.jacobian(lambda y: y + 0j, x)


@pytest.mark.parametrize("f", [
    pytest.param(lambda x: np.sin(x[:-1] + 1j * x[1:]).real, id="sin"),
    pytest.param(lambda x: np.cos(x[:-1] + 1j * x[1:]).imag, id="cos"),
    pytest.param(lambda x: np.sinh(x[:-1] * 1j + x[1:]).imag, id="sinh"),
    pytest.param(lambda x: np.abs(np.cosh(x[:-1] + 1j * x[1:])), id="cosh"),
    pytest.param(lambda x: ((x[:-1] + 1j * x[1:]) ** 3).imag, id="cube"),
    pytest.param(lambda x: ((x[:-1] - 2j * x[1:]) ** -2).real, id="inverse-square"),
    pytest.param(lambda x: ((x + 0j) ** 2).real + np.sin(x + 0j).real, id="zero-imaginary"),
    pytest.param(lambda x: np.dot(np.exp(1j * x), np.arange(4.0) + 1j).real * x, id="dot"),
])
def test_trigonometric_powers_and_dot_of_complex_intermediates(f: Any) -> None:
    """sin, cos, sinh, cosh, integer powers and np.dot of complex intermediates, written
    with real functions of the parts (they were refused; ``(x + 0j) ** 2`` and
    ``np.sin(x + 0j)`` were exact while such values were taken for real ones). Oracle:
    fourth-order differences of numpy's own complex functions."""
    from tests.test_rules import fd4_jacobian

    x = np.array([0.7, -1.3, 2.0, 0.4])
    J = sparsejac.jacobian(f, x).toarray()
    np.testing.assert_allclose(J, fd4_jacobian(lambda z: np.real(f(z)), x), rtol=1e-7,
                               atol=1e-8)


def test_power_flow_with_a_sparse_complex_admittance_matrix():
    """The AC power-flow mismatch S = V conj(Ybus V) with Ybus a complex scipy.sparse matrix
    (csr_matrix or csr_array; @, .dot, *) against MATPOWER's hand-derived dS/dVa and dS/dVm."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    n = 6
    branches = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0), (1, 4)]
    y = np.zeros((n, n), complex)
    for i, j in branches:
        yb = 1.0 / (rng.uniform(0.01, 0.05) + 1j * rng.uniform(0.05, 0.2))
        y[i, i] += yb
        y[j, j] += yb
        y[i, j] -= yb
        y[j, i] -= yb
    va, vm = rng.uniform(-0.2, 0.2, n), rng.uniform(0.9, 1.1, n)
    v = vm * np.exp(1j * va)
    ibus = y @ v
    dva = 1j * np.diag(v) @ np.conj(np.diag(ibus) - y @ np.diag(v))
    dvm = np.diag(v) @ np.conj(y @ np.diag(v / vm)) + np.conj(np.diag(ibus)) @ np.diag(v / vm)
    want = np.block([[dva.real, dvm.real], [dva.imag, dvm.imag]])
    for ybus, mul in ((sp.csr_matrix(y), lambda a, b: a @ b),
                      (sp.csr_array(y), lambda a, b: a.dot(b)),
                      (sp.csr_matrix(y), lambda a, b: a * b)):
        def mismatch(z: Any, ybus: Any = ybus, mul: Any = mul) -> Any:
            volt = z[n:] * np.exp(1j * z[:n])
            s = volt * np.conj(mul(ybus, volt))
            return np.concatenate([s.real, s.imag])

        z = np.concatenate([va, vm])
        np.testing.assert_allclose(sparsejac.jacobian(mismatch, z).toarray(), want,
                                   rtol=1e-12, atol=1e-10)
        jac = sparsejac.SparseJacobian(mismatch, np.concatenate([np.zeros(n), np.ones(n)]))
        np.testing.assert_allclose(jac(z).toarray(), want, rtol=1e-12, atol=1e-10)


def _pair(x: Any) -> Any:
    return x[:3] * np.exp(1j * x[3:])


_A = np.array([[1.0 - 2j, 0.5, 0.0], [0.0, 2.0 + 1j, -1j], [0.3, 0.0, 1.0]])

_JOINS = [
    pytest.param(lambda x: np.concatenate([_pair(x), np.array([1j]), _pair(x) ** 2]).imag,
                 id="concatenate"),
    pytest.param(lambda x: np.stack([_pair(x), 2 * _pair(x)], axis=1).real.ravel(), id="stack"),
    pytest.param(lambda x: np.hstack([_pair(x), x[:1]]).imag, id="hstack"),
    pytest.param(lambda x: np.vstack([_pair(x), np.conj(_pair(x))]).imag.ravel(), id="vstack"),
    pytest.param(lambda x: np.append(_pair(x), 3 - 1j).real, id="append"),
    pytest.param(lambda x: np.where(x[:3] > 1.0, _pair(x), 1j * x[:3]).imag, id="where"),
    pytest.param(lambda x: np.outer(_pair(x), np.conj(_pair(x))).real.ravel(), id="outer"),
    pytest.param(lambda x: np.atleast_1d(np.vdot(_pair(x), _A @ _pair(x)).real), id="vdot"),
    pytest.param(lambda x: np.reciprocal(_pair(x)).imag, id="reciprocal"),
    pytest.param(lambda x: (np.diag(_pair(x)) @ _A).real.ravel(), id="diag"),
    pytest.param(lambda x: _pair(x).dot(_A).imag, id="dot_method"),
    pytest.param(lambda x: (x[:3].astype(complex) * np.exp(1j * x[3:])).imag, id="astype"),
]


@pytest.mark.parametrize("f", _JOINS)
def test_joins_selections_and_products_of_complex_pairs(f: Callable[[Any], Any]) -> None:
    """Joining, selecting and multiplying complex intermediates part by part: exact against
    central differences, one-off and prepared at another point."""
    x = np.array([1.2, 0.7, 1.5, 0.3, -0.4, 1.1])
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), fd_jacobian(f, x),
                               rtol=1e-7, atol=1e-7)
    y = x + np.array([0.1, 0.5, -0.2, 0.3, 0.1, -0.2])
    np.testing.assert_allclose(sparsejac.SparseJacobian(f, x)(y).toarray(), fd_jacobian(f, y),
                               rtol=1e-7, atol=1e-7)


def test_dot_method_of_a_plain_array_on_a_complex_pair_says_what_to_write() -> None:
    """A.dot(z) with a plain A: numpy converts z; the error leads with A @ z."""
    with pytest.raises(sparsejac.TracedConversionError, match=r"write A @ z"):
        sparsejac.jacobian(lambda x: _A.dot(_pair(x)).real, np.ones(6))
