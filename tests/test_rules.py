"""One registry-driven test of every primitive's three rules, for every registered entry.

For every elementwise row (``UNARY_ROWS``, ``BINARY_ROWS``, with operands drawn from the row's
``domain``) on several shapes, broadcasting pairs and constant operands, and for a table of
representative calls of every other registered numpy entry (:data:`CASES`), at a random point:

* the JVP with a 3-column seed and the VJP with a 3-row seed match a fourth-order central
  difference Jacobian (relative tolerance 1e-6);
* the adjoint identity ``<W, J S> = <W J, S>`` holds between ``sparsejac.ad.jvp`` and
  ``sparsejac.ad.vjp`` to 1e-12 (relative);
* the global and the local pattern contain every numerically nonzero entry, the local one is
  inside the global one, and the pattern *equals* the nonzeros of the exact Jacobian at the
  random (generic) point.

* every hand-written *fast path* (a ``pattern``, ``jvp`` or ``vjp`` that overrides the rule
  derived from the local Jacobian, see ``sparsejac.primitives.derive``) agrees with the derived
  rule on every node of the traced program: equal global patterns, equal products to 1e-12.

Documented exceptions to "equals": a call marked ``select`` chooses between operands by value
(``np.maximum``, ``np.max``, ``np.where`` with a traced condition, ``np.clip``, ``ptp``, the
inf-norm, ``select``/``piecewise`` with traced conditions); its global pattern is the union of
the candidates, so only its *local* pattern equals the nonzeros.

Models: jax ``tests/lax_autodiff_test.py`` (``LAX_GRAD_OPS`` with domains, compatible shapes),
autograd ``check_grads``, SCT ``test/classification.jl`` (the zero-derivative check).
``test_every_entry_is_covered`` keeps the table honest: a new registry entry fails it until it
gets a case here (or a commented place in :data:`SKIP`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import scipy.integrate as sint
import scipy.interpolate as si
import scipy.linalg as sla
import scipy.optimize as so
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import scipy.spatial.distance as ssd
import scipy.special as sc
import scipy.stats as st

import sparsejac
from sparsejac.ad import jvp, vjp
from sparsejac.primitives import derive, supported_entries
from sparsejac.primitives.core import OPAQUE, Primitive, public_name
from sparsejac.primitives.elementwise import (
    BINARY_ROWS,
    ELEMENTWISE,
    NONZERO,
    TERNARY_ROWS,
    UNARY_ROWS,
    ZERO_DERIVATIVE,
    Row,
)
from sparsejac.tracing import trace
from sparsejac.tracing.walk import Values

# ---------------------------------------------------------------------------------------------
# the checker
# ---------------------------------------------------------------------------------------------

H = 1e-4  # fourth-order central differences: truncation ~H^4, rounding ~eps/H


def fd4_jacobian(f: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
    """Dense fourth-order central-difference Jacobian ``(m, n)`` (x any shape, C order)."""
    flat = x.ravel()
    cols = []
    for j in range(flat.size):
        def at(t: float, j: int = j) -> np.ndarray:
            e = flat.copy()
            e[j] += t
            return np.asarray(f(e.reshape(x.shape)), dtype=np.float64).ravel()

        cols.append((-at(2 * H) + 8 * at(H) - 8 * at(-H) + at(-2 * H)) / (12 * H))
    return np.stack(cols, axis=1)


def check_rules(f: Callable[[Any], Any], x: np.ndarray, rng: np.random.Generator, *,
                select: bool = False) -> None:
    """The three rules of every primitive ``f`` uses agree with each other and with numerics."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    jac = fd4_jacobian(f, x)
    m = jac.shape[0]
    scale = 1.0 + np.abs(jac).max(initial=0.0)
    s = rng.standard_normal((n, 3))
    w = rng.standard_normal((3, m))

    b = jvp(f, x, s)
    c = vjp(f, x, w)
    np.testing.assert_allclose(b, jac @ s, rtol=1e-6, atol=1e-6 * scale, err_msg="jvp vs FD")
    np.testing.assert_allclose(c, w @ jac, rtol=1e-6, atol=1e-6 * scale, err_msg="vjp vs FD")

    lhs, rhs = np.sum(w * b.T), np.sum(c * s.T)
    mag = max(1.0, np.sum(np.abs(w * b.T)), np.sum(np.abs(c * s.T)))
    assert abs(lhs - rhs) <= 1e-12 * mag, f"adjoint identity: {lhs!r} != {rhs!r}"

    glob = sparsejac.jacobian_sparsity(f, x).toarray()
    loc = sparsejac.jacobian_sparsity(f, x, local=True).toarray()
    assert glob.shape == loc.shape == (m, n)
    numeric = np.abs(jac) > 1e-7 * scale
    assert not (numeric & ~glob).any(), f"global pattern misses {np.argwhere(numeric & ~glob)}"
    assert not (numeric & ~loc).any(), f"local pattern misses {np.argwhere(numeric & ~loc)}"
    assert not (loc & ~glob).any(), "the local pattern is not inside the global one"

    exact = jvp(f, x, np.eye(n)) != 0  # forward mode is exact: its zeros are true zeros
    np.testing.assert_array_equal(loc if select else glob, exact,
                                  err_msg="pattern != nonzeros at a generic point")
    check_fast_paths(f, x, rng)


def fast_paths(prim: Primitive) -> list[str]:
    """The rules ``prim`` writes by hand although it has a local Jacobian to derive them from."""
    if type(prim).linearize is Primitive.linearize or prim.zero_derivative:
        return []
    return [r for r in ("pattern", "jvp", "vjp")
            if getattr(type(prim), r) is not getattr(Primitive, r)]


def check_fast_paths(f: Callable[[Any], Any], x: np.ndarray, rng: np.random.Generator) -> None:
    """Every hand-written rule of the primitives ``f`` uses equals the derived rule."""
    try:
        prog = trace(f, x)
    except sparsejac.ConcretizationError:
        prog = trace(f, x, local=True)
    vals = Values(prog).complete()
    for node in prog.nodes:
        rules = fast_paths(node.prim) if node.out.active else []
        if not rules:
            continue
        args, out = vals.args(node), vals[node.out]
        n_src = 5
        deps = [sp.csr_array(rng.random((v.size, n_src)) < 0.4) if v.active else None
                for v in node.inputs]
        what = f"{node.prim.name} fast path"
        if "pattern" in rules:
            fast = node.prim.pattern(node, deps, False)
            derived = derive.derived_pattern(node, deps, False)
            empty = sp.csr_array((node.out.size, n_src), dtype=bool)
            np.testing.assert_array_equal(
                (fast if fast is not None else empty).toarray(),
                (derived if derived is not None else empty).toarray(), err_msg=f"{what} pattern")
        if "jvp" in rules:
            ts = [rng.standard_normal((3, *v.shape)) if v.active else None for v in node.inputs]
            fast = node.prim.jvp(node, args, ts, out)
            derived = derive.derived_jvp(node, args, ts, out)
            zero = np.zeros((3, *node.out.shape))
            np.testing.assert_allclose(fast if fast is not None else zero,
                                       derived if derived is not None else zero,
                                       rtol=1e-12, atol=1e-12, err_msg=f"{what} jvp")
        if "vjp" in rules:
            ct = rng.standard_normal((3, *node.out.shape))
            for v, g1, g2 in zip(node.inputs, node.prim.vjp(node, args, out, ct),
                                 derive.derived_vjp(node, args, out, ct), strict=True):
                if v.active:
                    zero = np.zeros((3, *v.shape))
                    np.testing.assert_allclose(g1 if g1 is not None else zero,
                                               g2 if g2 is not None else zero,
                                               rtol=1e-12, atol=1e-12, err_msg=f"{what} vjp")


# ---------------------------------------------------------------------------------------------
# elementwise rows: every row on several shapes, broadcasting pairs and constant operands
# ---------------------------------------------------------------------------------------------

UNARY_SHAPES = [(), (3,), (3, 4), (2, 1, 3)]
# (shape of a, shape of b, which operands are traced)
BINARY_CASES = [
    ((3, 4), (3, 4), "ab"),
    ((3, 4), (4,), "ab"),
    ((3, 1), (1, 4), "ab"),
    ((), (2, 3), "ab"),
    ((2, 3), (), "ab"),
    ((3, 4), (4,), "a"),  # b constant
    ((4,), (3, 4), "b"),  # a constant
]


def sample(domain: tuple[float, float], shape: tuple[int, ...], rng: np.random.Generator
           ) -> np.ndarray:
    """Operand values from a row's domain (``NONZERO`` gets random signs)."""
    v = rng.uniform(*domain, size=shape)
    if domain == NONZERO:
        v = v * rng.choice([-1.0, 1.0], size=shape)
    return v


def _row_id(row: Row) -> str:
    return row.fn.__name__


def _binary_f(fn: Any, sa: tuple[int, ...], sb: tuple[int, ...], traced: str,
              consts: dict[str, np.ndarray]) -> Callable[[Any], Any]:
    na = int(np.prod(sa, dtype=int))

    def f(x: Any) -> Any:
        if traced == "ab":
            a, b = x[:na].reshape(sa), x[na:].reshape(sb)
        elif traced == "a":
            a, b = x.reshape(sa), consts["b"]
        else:
            a, b = consts["a"], x.reshape(sb)
        return fn(a, b)

    return f


@pytest.mark.parametrize("shape", [pytest.param(s, id=str(s)) for s in UNARY_SHAPES])
@pytest.mark.parametrize("row", [pytest.param(r, id=_row_id(r)) for r in UNARY_ROWS])
def test_unary_row(row: Row, shape: tuple[int, ...], rng: np.random.Generator) -> None:
    """A unary row's JVP, VJP and pattern agree with central differences and each other."""
    x = sample(row.domain, shape, rng)
    check_rules(row.fn, x, rng)


#: Per-operand domains where a row's shared domain has open regions of zero derivative:
#: d(a mod b)/db = -floor(a/b) vanishes wherever a < b, so keep a/b above 2 (generic points).
OPERAND_DOMAINS = {
    np.remainder: ((2.0, 3.0), (0.3, 0.9)),
    np.fmod: ((2.0, 3.0), (0.3, 0.9)),
}


#: Operands that take integers: (ufunc, operand index) -> the integers to sample from.
INTEGER_OPERANDS = {(np.ldexp, 1): (-2, 3), (sc.yn, 0): (0, 4)}


def traceable(row: Row, traced: str) -> bool:
    """Whether the operands named in ``traced`` ("a", "b", "ab") may be traced for ``row``.

    Integer operands (ldexp's exponent, yn's order) and the operands a row refuses (the
    order of a Bessel function, the parameter of gammainc) are never traced.
    """
    for k, name in enumerate("ab"):
        if name not in traced:
            continue
        if (row.fn, k) in INTEGER_OPERANDS or (row.refuse and row.refuse[k] is not None):
            return False
    return True


def sample_operands(row: Row, sa: tuple[int, ...], sb: tuple[int, ...],
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Operand values for a binary row (integers where the row takes them)."""
    da, db = OPERAND_DOMAINS.get(row.fn, (row.domain, row.domain))
    ops = [sample(da, sa, rng), sample(db, sb, rng)]
    for k, shape in enumerate((sa, sb)):
        if (row.fn, k) in INTEGER_OPERANDS:
            ops[k] = rng.integers(*INTEGER_OPERANDS[row.fn, k], size=shape)
    return ops[0], ops[1]


def binary_row_params() -> list[Any]:
    """Every binary row with every shape pair and every traceable choice of operands."""
    return [pytest.param(row, sa, sb, traced, id=f"{_row_id(row)}-{sa}-{sb}-{traced}")
            for row in BINARY_ROWS for sa, sb, traced in BINARY_CASES
            if traceable(row, traced)]


@pytest.mark.parametrize(("row", "sa", "sb", "traced"), binary_row_params())
def test_binary_row(row: Row, sa: tuple[int, ...], sb: tuple[int, ...], traced: str,
                    rng: np.random.Generator) -> None:
    """A binary row's rules are right for equal shapes, broadcasting pairs and constants."""
    a, b = sample_operands(row, sa, sb, rng)
    consts = {"a": a, "b": b}
    x = {"ab": np.concatenate([np.ravel(a), np.ravel(b)]), "a": a, "b": b}[traced]
    f = _binary_f(row.fn, sa, sb, traced, consts)
    check_rules(f, np.asarray(x, dtype=np.float64), rng, select=row.select is not None)


# operands for the classification check: floats where the ufunc takes them, else integers
_INT_ONLY = {np.invert, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.left_shift,
             np.right_shift, np.gcd, np.lcm}


@pytest.mark.parametrize("ufunc", [pytest.param(u, id=u.__name__) for u in ZERO_DERIVATIVE])
def test_zero_derivative_ufunc(ufunc: np.ufunc, rng: np.random.Generator) -> None:
    """A ZERO_DERIVATIVE ufunc gives an empty pattern, a zero JVP, and is flat numerically."""
    x = rng.uniform(0.5, 3.5, size=(3, 4)) * rng.choice([-1.0, 1.0], size=(3, 4))

    def f(t: Any) -> Any:
        if ufunc in _INT_ONLY:
            t = (t * 10).astype(np.int64)
        args = (t,) if ufunc.nin == 1 else (t, np.roll(t, 1, axis=1))
        return ufunc(*args).astype(np.float64) + 0 * t[0]

    pat = sparsejac.jacobian_sparsity(f, x)
    assert pat.shape == (12, 12)
    assert pat.nnz == 0
    assert sparsejac.jacobian_sparsity(f, x, local=True).nnz == 0
    np.testing.assert_array_equal(jvp(f, x, rng.standard_normal((12, 3))), 0.0)
    if ufunc not in _INT_ONLY:  # SCT's one-way check: the classification is numerically true
        np.testing.assert_allclose(fd4_jacobian(f, x), 0.0, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# every other registry entry: a table of representative calls
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A representative call of a registry entry: ``f(x)`` at a random ``x`` of ``shape``."""

    entry: str
    id: str
    f: Callable[[Any], Any]
    shape: tuple[int, ...] = (3, 4)
    domain: tuple[float, float] = (0.5, 1.5)
    select: bool = False  # value-dependent choice: only the local pattern equals the nonzeros


#: coefficients of numpy.polynomial series: 4 terms, 2 series
_SERIES = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5], [0.3, -0.2]])

#: splines of tabulated data (scipy.interpolate), on knots covering the cases' domain
_KNOTS = np.linspace(0.0, 2.0, 7)
_SPLINE = si.CubicSpline(_KNOTS, 1.0 + 0.5 * np.sin(2 * _KNOTS))
_SPLINE2 = si.CubicSpline(_KNOTS, np.stack([_KNOTS, np.cos(_KNOTS)], axis=1))

#: a covariance for scipy.stats.multivariate_normal (4 x 4, symmetric positive definite)
_MVN_COV = np.array([[2.0, 0.5, 0.0, 0.2], [0.5, 1.5, 0.3, 0.0], [0.0, 0.3, 1.0, 0.1],
                     [0.2, 0.0, 0.1, 0.8]])


def _set(out: Any, key: Any, value: Any) -> Any:
    out[key] = value
    return out


def _add_at(x: Any) -> Any:
    out = np.zeros_like(x[0])
    np.add.at(out, [0, 3, 3, 1], x[1] * x[2])
    return out


def _subtract_at(x: Any) -> Any:
    out = x[0] ** 2
    np.subtract.at(out, (np.array([2, 2, 0]),), x[1, :3])
    return out


def _copyto(x: Any) -> Any:
    out = np.empty_like(x)
    np.copyto(out, x**2)
    np.copyto(out, x[0], where=np.array([True, False, True, False]))
    return out


def _put_along_axis(x: Any) -> Any:
    out = np.zeros_like(x)
    np.put_along_axis(out, np.array([[1], [0], [3]]), x[:, :1] ** 2, axis=1)
    return out


def _put(x: Any) -> Any:
    out = np.zeros(15)  # a buffer made inside f
    np.put(out, [0, 3, 20, 3, -1], x.ravel()[:5] ** 2, mode="wrap")
    return out


def _gradient(x: Any) -> Any:
    gx, gy = np.gradient(x, 0.5, np.array([0.0, 1.0, 3.0, 4.5]), edge_order=2)
    return np.stack([gx, gy])


def _piecewise_traced(x: Any) -> Any:
    return np.piecewise(x, [x < 1.0, x >= 1.2], [lambda t: t**2, lambda t: -t, 0.5])


_MASK = np.array([[True, False, True, False], [False, False, True, True],
                  [True, True, False, False]])
_K = np.array([[1.0, 0.0, -2.0], [0.0, 3.0, 0.0], [2.0, 0.0, 0.0], [0.0, 1.0, 1.0]])  # (4, 3)
_L = sp.diags_array([1.0, -2.0, 1.0], offsets=[-1, 0, 1], shape=(3, 3), format="csr")


_M4 = np.array([[4.0, 1.0, 0.0, 0.0], [1.0, 3.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.5],
                [0.0, 0.0, 0.5, 5.0]])
_LU4 = sla.lu_factor(_M4)
_CHO4 = sla.cho_factor(_M4)
_BLK6 = sp.block_diag([sp.csc_array([[2.0, 1.0], [1.0, 3.0]])] * 3, format="csc")
_TRI6 = sp.csc_array(sp.diags_array([-1.0, 4.0, -1.0], offsets=[-1, 0, 1], shape=(6, 6)))


def _shift(x: Any, c: float = 3.0) -> Any:
    """A traced (non-symmetric) matrix safely away from singular: x + c I."""
    return x + c * np.eye(x.shape[0])


def _mesh(x: Any) -> Any:
    a, b = np.meshgrid(x[0], x[1, :2])
    return a * b


def _bcast_arrays(x: Any) -> Any:
    a, b = np.broadcast_arrays(x[:, :1], x[:1])
    return a * b


_STENCIL = np.array([[0.0, 1.0, 0.0], [1.0, -4.0, 2.0], [0.0, 3.0, 0.0]])


def _ndi() -> Any:
    import scipy.ndimage

    return scipy.ndimage


def _sig() -> Any:
    import scipy.signal

    return scipy.signal


CASES: list[Case] = [
    # -- creation: constants made from x, then combined with traced values -------------------
    Case("numpy.zeros", "zeros_like_x", lambda x: _set(np.zeros((2, 4), like=x), 1, x[0] ** 2)),
    Case("numpy.ones", "ones", lambda x: np.ones(4, like=x) * x),
    Case("numpy.empty", "empty", lambda x: _set(np.empty((3, 4), like=x), ..., np.sin(x))),
    Case("numpy.full", "full", lambda x: _set(np.full(4, 2.0, like=x), slice(1, 3), x[0, :2])),
    Case("numpy.arange", "arange", lambda x: np.arange(1.0, 5.0, like=x) * x),
    Case("numpy.identity", "identity", lambda x: np.identity(3, like=x) @ x),
    Case("numpy.eye", "eye", lambda x: x @ np.eye(4, 2, k=1, like=x)),
    Case("numpy.linspace", "linspace", lambda x: x * np.linspace(1.0, 2.0, 4)),
    Case("numpy.zeros_like", "zeros_like", lambda x: _set(np.zeros_like(x), (slice(1, None),),
                                                          x[:-1] ** 2)),
    Case("numpy.empty_like", "empty_like", lambda x: _set(np.empty_like(x), ..., x[::-1])),
    Case("numpy.ones_like", "ones_like", lambda x: np.ones_like(x) / x),
    Case("numpy.full_like", "traced_fill", lambda x: np.full_like(x, x[0, 0]) * x),
    Case("numpy.full_like", "constant_fill", lambda x: np.full_like(x, 3.0) * x),
    Case("numpy.array", "list_of_traced", lambda x: np.array([x[0, 0], x[1, 1] * 2, 3.0], like=x)),
    Case("numpy.asarray", "like", lambda x: np.asarray(x, like=x) ** 2),
    Case("numpy.asanyarray", "like", lambda x: np.asanyarray([x[0], x[1]], like=x) * 2),
    Case("numpy.ascontiguousarray", "like",
         lambda x: np.ascontiguousarray(x.T, like=x) ** 2),
    Case("numpy.asfortranarray", "like", lambda x: np.asfortranarray(x, like=x) ** 3),
    Case("numpy.nan_to_num", "finite", lambda x: np.nan_to_num(x**2)),
    Case("numpy.nan_to_num", "in_place", lambda x: np.nan_to_num(x**2, copy=False) * x),
    Case("numpy.require", "identity", lambda x: np.require(x**2, requirements=["C"]) * x),
    Case("numpy.require", "own_data", lambda x: np.require(x.T, requirements="O") ** 2),
    Case("numpy.asarray_chkfinite", "identity", lambda x: np.asarray_chkfinite(x**2) * x),
    Case("numpy.polynomial.polynomial.polyval", "tensor",
         lambda x: np.polynomial.polynomial.polyval(x, _SERIES)),
    Case("numpy.polynomial.chebyshev.chebval", "tensor",
         lambda x: np.polynomial.chebyshev.chebval(x, _SERIES)),
    Case("numpy.polynomial.legendre.legval", "one_d",
         lambda x: np.polynomial.legendre.legval(x, _SERIES[:, 0])),
    Case("numpy.polynomial.hermite.hermval", "tensor",
         lambda x: np.polynomial.hermite.hermval(x, _SERIES)),
    Case("numpy.polynomial.hermite_e.hermeval", "untensored",
         lambda x: np.polynomial.hermite_e.hermeval(x, _SERIES[:, :1, None], tensor=False)),
    Case("numpy.polynomial.laguerre.lagval", "tensor",
         lambda x: np.polynomial.laguerre.lagval(x, _SERIES)),
    # -- elementwise functions that are not plain ufunc rows --------------------------------
    Case("numpy.where", "traced_condition", lambda x: np.where(x > 1.0, x**2, -x[0]),
         select=True),
    Case("numpy.where", "constant_condition", lambda x: np.where(_MASK, x**2, x[0])),
    Case("numpy.clip", "both_bounds", lambda x: np.clip(x, 0.8, 1.2), select=True),
    Case("numpy.clip", "traced_bound", lambda x: np.clip(x[0], x[1], None), select=True),
    Case("numpy.real", "real", lambda x: np.real(x) ** 2),
    Case("numpy.sinc", "sinc", lambda x: np.sinc(x), domain=(-2.0, 2.0)),
    Case("numpy.interp", "traced_x", lambda x: np.interp(x, [0.0, 0.8, 1.1, 2.0],
                                                         [1.0, 3.0, 2.0, 5.0])),
    Case("numpy.interp", "traced_fp", lambda x: np.interp([0.1, 0.5, 1.7, 2.5], [0.0, 1.0, 2.0],
                                                          x[:3], right=-1.0), shape=(3,)),
    Case("numpy.interp", "both_traced", lambda x: np.interp(x[0] * 2.0, [0.0, 1.0, 1.5, 3.0],
                                                            x[1]), select=True),
    Case("numpy.interp", "both_traced_left_right", lambda x: np.interp(
        x * 2.2 - 1.0, [0.0, 1.0, 1.5, 2.0], x[0], left=-1.0, right=3.0), select=True),
    Case("numpy.select", "traced_conditions",
         lambda x: np.select([x < 0.8, x > 1.2], [x**2, x[0]], default=-x), select=True),
    Case("numpy.select", "constant_conditions",
         lambda x: np.select([_MASK, ~_MASK], [x**2, np.sin(x)])),
    Case("numpy.piecewise", "traced_conditions", _piecewise_traced, select=True),
    Case("numpy.piecewise", "constant_conditions",
         lambda x: np.piecewise(x, [_MASK], [np.exp, lambda t: t**3])),
    Case("numpy.polyval", "constant_coefficients", lambda x: np.polyval([2.0, -1.0, 3.0], x)),
    Case("numpy.polyval", "traced_coefficients", lambda x: np.polyval(x[0], x[1:])),
    # -- indexing: scatter-add and in-place stores -------------------------------------------
    Case("numpy.add.at", "duplicates", _add_at),
    Case("numpy.add.reduceat", "segments_and_repeats",
         lambda x: np.add.reduceat(x ** 2, [0, 2, 2, 5, 1]), shape=(6,)),
    Case("numpy.add.reduceat", "axis1",
         lambda x: np.add.reduceat(np.sin(x), [1, 0, 2], axis=1), shape=(2, 3)),
    Case("numpy.ediff1d", "to_begin", lambda x: np.ediff1d(x ** 2, to_begin=x[:1]), shape=(6,)),
    Case("numpy.ediff1d", "2d_to_end", lambda x: np.ediff1d(x, to_end=[1.0, 2.0]),
         shape=(2, 3)),
    Case("numpy.subtract.at", "into_traced", _subtract_at),
    Case("numpy.bincount", "weights", lambda x: np.bincount([0, 3, 3, 1, 0, 5], weights=x[:6]),
         shape=(7,)),
    Case("numpy.copyto", "where", _copyto),
    Case("numpy.put_along_axis", "axis1", _put_along_axis),
    Case("numpy.put", "repeated_and_wrapped", _put),
    # -- linalg: contractions with constant and traced operands --------------------------------
    Case("numpy.matmul", "constant_left", lambda x: _K.T @ x.T),
    Case("numpy.matmul", "both_traced_batched", lambda x: np.stack([x, 2 * x]) @ x.T),
    Case("numpy.matmul", "sparse_matrix", lambda x: _L @ x + x**2),
    Case("numpy.matmul", "vector_sparse", lambda x: x[:, 0] @ sp.csr_matrix(_L)),
    Case("numpy.dot", "constant", lambda x: np.dot(x, _K)),
    Case("numpy.dot", "both_traced", lambda x: np.dot(x[0], x[1:].T)),
    Case("numpy.einsum", "both_traced", lambda x: np.einsum("ij,kj->ik", x, x[:2] ** 2)),
    Case("numpy.einsum", "repeated_index", lambda x: np.einsum("ii->i", x[:, :3]) * x[0, 3]),
    Case("numpy.einsum", "sublists", lambda x: np.einsum(x, [0, 1], x[:2], [2, 1], [0, 2])),
    Case("numpy.einsum", "sublists_ellipsis", lambda x: np.einsum(x, [Ellipsis, 1], _K, [1, 2])),
    Case("numpy.einsum", "constant_ellipsis", lambda x: np.einsum("...j,jk->...k", x, _K)),
    Case("numpy.inner", "both_traced", lambda x: np.inner(x, x[0])),
    Case("numpy.vdot", "both_traced", lambda x: np.vdot(x, x[::-1])),
    Case("numpy.outer", "both_traced", lambda x: np.outer(x[0], x[1, :2])),
    Case("numpy.tensordot", "constant", lambda x: np.tensordot(x, _K, axes=1)),
    Case("numpy.tensordot", "both_traced", lambda x: np.tensordot(x, x**2, axes=([0], [0]))),
    Case("numpy.kron", "both_traced", lambda x: np.kron(x[0, :2], x[1:, :3])),
    Case("numpy.cross", "both_traced", lambda x: np.cross(x[:, :3], x[:, 1:])),
    Case("numpy.linalg.norm", "frobenius", lambda x: np.linalg.norm(x)),
    Case("numpy.linalg.norm", "axis1_ord1", lambda x: np.linalg.norm(x - 1.0, ord=1, axis=1)),
    Case("numpy.linalg.norm", "ord3_keepdims", lambda x: np.linalg.norm(x, ord=3, axis=0,
                                                                       keepdims=True)),
    Case("numpy.linalg.norm", "inf", lambda x: np.linalg.norm(x, ord=np.inf, axis=-1),
         select=True),
    Case("numpy.linalg.multi_dot", "chain", lambda x: np.linalg.multi_dot([_K.T, x.T, x[:, 0]])),
    Case("numpy.linalg.vector_norm", "axes", lambda x: np.linalg.vector_norm(x, axis=(0, 1))),
    # numpy 2's array-API spellings
    Case("numpy.linalg.matmul", "matmul", lambda x: np.linalg.matmul(x.T, x)),
    Case("numpy.linalg.outer", "outer", lambda x: np.linalg.outer(x[0], x[1] ** 2)),
    Case("numpy.linalg.vecdot", "vecdot", lambda x: np.linalg.vecdot(x, x[0] ** 2)),
    Case("numpy.linalg.trace", "last_axes", lambda x: np.linalg.trace(x.reshape(3, 2, 2) ** 2)),
    Case("numpy.linalg.diagonal", "last_axes",
         lambda x: np.linalg.diagonal(x.reshape(2, 2, 3), offset=1) ** 2),
    Case("numpy.linalg.cross", "cross", lambda x: np.linalg.cross(x[:, :3], x[:, 1:] ** 2)),
    Case("numpy.linalg.matrix_transpose", "transpose",
         lambda x: np.linalg.matrix_transpose(x) * x.T),
    Case("numpy.linalg.tensordot", "axes_1", lambda x: np.linalg.tensordot(x, x.T, axes=1)),
    Case("numpy.vecdot", "rows", lambda x: np.vecdot(x, x[0] ** 2)),
    Case("numpy.matvec", "matvec", lambda x: np.matvec(x, x[0] ** 2)),
    Case("numpy.vecmat", "vecmat", lambda x: np.vecmat(x[:, 0] ** 2, x)),
    # -- dense linear algebra with traced operands (sparsejac/primitives/dense_linalg.py) -----
    Case("numpy.linalg.solve", "traced_matrix", lambda x: np.linalg.solve(_shift(x), x[:, 0]),
         shape=(3, 3)),
    Case("numpy.linalg.solve", "constant_matrix", lambda x: np.linalg.solve(_M4, x**2),
         shape=(4, 2)),
    Case("numpy.linalg.solve", "batched", lambda x: np.linalg.solve(
        x[None] + 3 * np.eye(3) * np.arange(1.0, 3.0)[:, None, None], x[:, :2]), shape=(3, 3)),
    Case("numpy.linalg.inv", "inv", lambda x: np.linalg.inv(_shift(x)), shape=(3, 3)),
    Case("numpy.linalg.det", "det", np.linalg.det, shape=(3, 3)),
    Case("numpy.linalg.det", "batched", lambda x: np.linalg.det(x.reshape(2, 2, 2)),
         shape=(2, 4)),
    Case("numpy.linalg.slogdet", "slogdet",
         lambda x: np.prod(np.linalg.slogdet(_shift(x))), shape=(3, 3)),
    Case("numpy.linalg.cholesky", "reads_lower", lambda x: np.linalg.cholesky(_shift(x, 4.0)),
         shape=(4, 4)),
    Case("numpy.linalg.cholesky", "upper", lambda x: np.linalg.cholesky(
        _shift(x, 4.0), upper=True), shape=(4, 4)),
    Case("numpy.linalg.eigh", "values", lambda x: np.linalg.eigh(x)[0], shape=(3, 3)),
    Case("numpy.linalg.eigh", "vectors_upper", lambda x: np.linalg.eigh(x, UPLO="U")[1],
         shape=(3, 3)),
    Case("numpy.linalg.eigvalsh", "eigvalsh", lambda x: np.linalg.eigvalsh(x @ x.T),
         shape=(3, 2)),
    Case("numpy.linalg.svd", "values", lambda x: np.linalg.svd(x, compute_uv=False)),
    Case("numpy.linalg.svd", "u_tall", lambda x: np.linalg.svd(x, full_matrices=False)[0],
         shape=(4, 3)),
    Case("numpy.linalg.svd", "vh_wide", lambda x: np.linalg.svd(x, full_matrices=False)[2]),
    Case("numpy.linalg.svd", "square_full", lambda x: np.linalg.svd(x)[0] * np.linalg.svd(x)[2],
         shape=(3, 3)),
    Case("numpy.linalg.svdvals", "svdvals", np.linalg.svdvals, shape=(4, 3)),
    Case("numpy.linalg.pinv", "wide", np.linalg.pinv),
    Case("numpy.linalg.pinv", "hermitian", lambda x: np.linalg.pinv(_shift(x), hermitian=True),
         shape=(3, 3)),
    Case("numpy.linalg.lstsq", "solution", lambda x: np.linalg.lstsq(x, np.arange(4.0))[0],
         shape=(4, 3)),
    Case("numpy.linalg.lstsq", "traced_rhs", lambda x: np.linalg.lstsq(x[:, :2], x[:, 2:])[0],
         shape=(4, 4)),
    Case("numpy.linalg.lstsq", "residuals", lambda x: np.linalg.lstsq(x[:, :2], x[:, 2:])[1],
         shape=(4, 4)),
    Case("numpy.linalg.qr", "tall", lambda x: np.linalg.qr(x)[0] @ np.linalg.qr(x)[1].T,
         shape=(4, 3)),
    Case("numpy.linalg.qr", "wide_r", lambda x: np.linalg.qr(x, mode="r")),
    Case("numpy.linalg.qr", "square_q", lambda x: np.linalg.qr(x)[0], shape=(3, 3)),
    Case("numpy.linalg.matrix_power", "cube", lambda x: np.linalg.matrix_power(x, 3),
         shape=(3, 3)),
    Case("numpy.linalg.matrix_power", "negative",
         lambda x: np.linalg.matrix_power(_shift(x), -2), shape=(3, 3)),
    Case("numpy.linalg.cond", "cond", np.linalg.cond, shape=(3, 3)),
    Case("numpy.linalg.matrix_norm", "nuclear", lambda x: np.linalg.matrix_norm(x, ord="nuc")),
    Case("numpy.linalg.norm", "matrix_2", lambda x: np.linalg.norm(x, 2)),
    Case("numpy.linalg.norm", "matrix_-2_axes", lambda x: np.linalg.norm(x, -2, axis=(1, 0))),
    Case("numpy.linalg.norm", "matrix_1", lambda x: np.linalg.norm(x, 1), select=True),
    Case("numpy.linalg.norm", "matrix_-inf_keepdims",
         lambda x: np.linalg.norm(x, -np.inf, axis=(0, 1), keepdims=True), select=True),
    Case("numpy.linalg.norm", "vector_0", lambda x: np.linalg.norm(x, 0, axis=1) + x[:, 0]),
    # -- scipy.linalg and scipy.sparse.linalg (sparsejac/primitives/scipy_linalg.py) ---------
    Case("scipy.linalg.solve", "general", lambda x: sla.solve(_shift(x), x[:, :2]),
         shape=(3, 3)),
    Case("scipy.linalg.solve", "sym_reads_upper", lambda x: sla.solve(
        _shift(x), x[:, 0], assume_a="sym"), shape=(3, 3)),
    Case("scipy.linalg.solve", "pos_lower", lambda x: sla.solve(
        _shift(x), x[:, 0], assume_a="pos", lower=True), shape=(3, 3)),
    Case("scipy.linalg.solve", "upper_triangular", lambda x: sla.solve(
        _shift(x), x[:, 0], assume_a="upper triangular"), shape=(3, 3)),
    Case("scipy.linalg.solve", "lower_triangular_transposed", lambda x: sla.solve(
        _shift(x), x[:, :2], assume_a="lower triangular", transposed=True), shape=(3, 3)),
    Case("scipy.linalg.solve", "diagonal", lambda x: sla.solve(
        _shift(x), x[:, 0], assume_a="diagonal"), shape=(3, 3)),
    Case("scipy.linalg.solve", "tridiagonal", lambda x: sla.solve(
        _shift(x), x[:, 0], assume_a="tridiagonal"), shape=(4, 4)),
    Case("scipy.linalg.lu_solve", "constant_factors", lambda x: sla.lu_solve(_LU4, x**2),
         shape=(4, 2)),
    Case("scipy.linalg.lu_solve", "transposed", lambda x: sla.lu_solve(_LU4, x**2, trans=1),
         shape=(4,)),
    Case("scipy.linalg.cho_solve", "constant_factor", lambda x: sla.cho_solve(_CHO4, np.sin(x)),
         shape=(4,)),
    Case("scipy.linalg.inv", "general", lambda x: sla.inv(_shift(x)), shape=(3, 3)),
    Case("scipy.linalg.inv", "pos_reads_upper", lambda x: sla.inv(
        _shift(x) @ _shift(x).T, assume_a="pos"), shape=(3, 3)),
    Case("scipy.linalg.inv", "sym_lower", lambda x: sla.inv(
        _shift(x), assume_a="sym", lower=True), shape=(3, 3)),
    Case("scipy.linalg.det", "det", lambda x: sla.det(_shift(x)), shape=(3, 3)),
    Case("scipy.linalg.det", "batched", lambda x: sla.det(_shift(x.reshape(2, 2, 2))),
         shape=(2, 4)),
    Case("scipy.linalg.expm", "expm", sla.expm, shape=(3, 3)),
    Case("scipy.linalg.expm", "batched", lambda x: sla.expm(x.reshape(2, 2, 2)), shape=(2, 4)),
    Case("scipy.sparse.linalg.spsolve", "reducible", lambda x: spla.spsolve(_BLK6, x**2),
         shape=(6,)),
    Case("scipy.sparse.linalg.spsolve", "irreducible", lambda x: spla.spsolve(_TRI6, x**2),
         shape=(6,)),
    Case("scipy.sparse.linalg.splu", "solve", lambda x: spla.splu(_BLK6).solve(x**2),
         shape=(6,)),
    Case("scipy.sparse.linalg.splu", "solve_transposed_2d",
         lambda x: spla.splu(_TRI6).solve(x**2, trans="T"), shape=(6, 2)),
    Case("scipy.sparse.linalg.factorized", "factorized",
         lambda x: spla.factorized(_BLK6)(np.exp(x)), shape=(6,)),
    # -- scipy.spatial.distance (sparsejac/primitives/spatial.py) -----------------------------
    Case("scipy.spatial.distance.pdist", "euclidean", lambda x: ssd.pdist(x.reshape(3, 2)),
         shape=(6,)),
    Case("scipy.spatial.distance.cdist", "cityblock_constant_b",
         lambda x: ssd.cdist(x.reshape(3, 2), np.array([[0.1, 0.2]]), "cityblock"), shape=(6,)),
    Case("scipy.spatial.distance.squareform", "vector_and_matrix",
         lambda x: ssd.squareform(ssd.squareform(x[:3] ** 2)) * x[3], shape=(6,)),
    # -- scipy.integrate's quadratures, traced through (sparsejac/primitives/integrate.py) ----
    Case("scipy.integrate.simpson", "even_x", lambda x: np.atleast_1d(
        sint.simpson(x ** 2, x=np.linspace(0.0, 1.0, 6) ** 2)), shape=(6,)),
    Case("scipy.integrate.trapezoid", "axis0", lambda x: sint.trapezoid(x * x, dx=0.5, axis=0),
         shape=(3, 2)),
    Case("scipy.integrate.cumulative_trapezoid", "initial",
         lambda x: sint.cumulative_trapezoid(np.sin(x), dx=0.1, initial=0), shape=(6,)),
    Case("scipy.integrate.cumulative_simpson", "dx",
         lambda x: sint.cumulative_simpson(x ** 3, dx=0.2), shape=(6,)),
    # -- scipy.optimize's test functions (sparsejac/primitives/optimize.py) -------------------
    Case("scipy.optimize.rosen", "rosen", lambda x: so.rosen(x) * np.ones(1), shape=(6,)),
    Case("scipy.optimize.rosen_der", "rosen_der", lambda x: so.rosen_der(x), shape=(6,)),
    Case("scipy.optimize.rosen_hess_prod", "both_traced",
         lambda x: so.rosen_hess_prod(x, x[::-1] ** 2), shape=(6,)),
    # -- scipy.special composites and ternary rows (sparsejac/primitives/special.py) ----------
    Case("scipy.special.logsumexp", "all", lambda x: sc.logsumexp(x)),
    Case("scipy.special.logsumexp", "axis_traced_b",
         lambda x: sc.logsumexp(x, axis=1, b=x[:, ::-1] ** 2, keepdims=True)),
    Case("scipy.special.logsumexp", "return_sign",
         lambda x: sc.logsumexp(x, axis=0, b=x - 1.0, return_sign=True)[0]),
    Case("scipy.special.softmax", "axis1", lambda x: sc.softmax(x, axis=1)),
    Case("scipy.special.log_softmax", "all", sc.log_softmax),
    Case("scipy.special.polygamma", "orders",
         lambda x: sc.polygamma(2, x) + sc.polygamma(np.array([[0], [1], [3]]), x)),
    Case("scipy.special.zeta", "hurwitz", lambda x: sc.zeta(3.0, x)),
    Case("scipy.special.multigammaln", "d3", lambda x: sc.multigammaln(x + 2.0, 3)),
    Case("scipy.special.betainc", "x", lambda x: sc.betainc(2.0, 3.0, x / 2)),
    Case("scipy.special.betaincc", "x", lambda x: sc.betaincc(1.5, 0.5, x / 2)),
    # -- scipy.stats (sparsejac/primitives/stats.py): x, loc, scale, shapes traced ------------
    Case("scipy.stats.rv_continuous.logpdf", "norm", lambda x: st.norm.logpdf(x[0], x[1], x[2])),
    Case("scipy.stats.rv_continuous.logpdf", "t", lambda x: st.t.logpdf(x[0], 3 * x[1],
                                                                       scale=x[2])),
    Case("scipy.stats.rv_continuous.logpdf", "gamma",
         lambda x: st.gamma.logpdf(x[0], 2 * x[1], scale=x[2])),
    Case("scipy.stats.rv_continuous.logpdf", "beta", lambda x: st.beta.logpdf(x[0] / 2, x[1],
                                                                             x[2])),
    Case("scipy.stats.rv_continuous.logpdf", "lognorm",
         lambda x: st.lognorm.logpdf(x[0], x[1], scale=x[2])),
    Case("scipy.stats.rv_continuous.logpdf", "expon_frozen",
         lambda x: st.expon(scale=x[1]).logpdf(x[0])),
    Case("scipy.stats.rv_continuous.pdf", "norm_frozen", lambda x: st.norm(x[1], x[2]).pdf(x[0])),
    Case("scipy.stats.rv_continuous.pdf", "t_gamma_beta", lambda x: st.t.pdf(x[0], 3.0)
         + st.gamma.pdf(x[2], x[1]) + st.beta.pdf(x[2] / 2, 2.0, x[1])),
    Case("scipy.stats.rv_continuous.pdf", "lognorm_expon",
         lambda x: st.lognorm.pdf(x[1], x[2]) + st.expon.pdf(x[0], loc=-x[2])),
    Case("scipy.stats.rv_continuous.cdf", "norm_t", lambda x: st.norm(x[1], x[2]).cdf(x[0])
         + st.t.cdf(x[0], 3.0, loc=x[1], scale=x[2])),
    Case("scipy.stats.rv_continuous.cdf", "gamma_beta_lognorm_expon",
         lambda x: st.gamma.cdf(x[0], 2.0, scale=x[2]) + st.beta(2.0, 3.0).cdf(x[0] / 2)
         + st.lognorm.cdf(x[0], x[1]) + st.expon.cdf(x[2], scale=x[1])),
    Case("scipy.stats.rv_continuous.sf", "all", lambda x: st.norm.sf(x[0], x[1], x[2])
         + st.beta.sf(x[1] / 2, 1.5, 2.5) + st.lognorm.sf(x[2], 0.7) + st.expon.sf(x[1])
         + st.t.sf(x[0], 4.0) + st.gamma.sf(x[2], 1.5, scale=x[1])),
    Case("scipy.stats.multivariate_normal.logpdf", "points_and_mean",
         lambda x: st.multivariate_normal.logpdf(x[1:], mean=x[0], cov=_MVN_COV)),
    Case("scipy.stats.multivariate_normal.pdf", "points",
         lambda x: st.multivariate_normal.pdf(x, cov=_MVN_COV)),
    Case("scipy.stats.multivariate_normal(...).logpdf", "frozen",
         lambda x: st.multivariate_normal(np.ones(4), _MVN_COV).logpdf(x)),
    Case("scipy.stats.multivariate_normal(...).pdf", "frozen",
         lambda x: st.multivariate_normal(np.ones(4), _MVN_COV).pdf(x - 1)),
    Case("scipy.stats.rv_continuous.logcdf", "all", lambda x: st.norm.logcdf(x[1])
         + st.expon.logcdf(x[0]) + st.lognorm.logcdf(x[0], x[2]) + st.gamma.logcdf(x[1], 2.0)),
    Case("scipy.stats.rv_continuous.logsf", "all", lambda x: st.norm.logsf(x[0])
         + st.expon.logsf(x[2]) + st.t.logsf(x[1], 2.5) + st.gamma.logsf(x[1], 1.5)),
    Case("scipy.stats.rv_discrete.logpmf", "poisson",
         lambda x: st.poisson.logpmf(np.array([0, 1, 3, 2]), 3 * x[0])),
    Case("scipy.stats.rv_discrete.pmf", "poisson_frozen", lambda x: st.poisson(x[1]).pmf(2)),
    Case("scipy.stats.rv_discrete.cdf", "poisson",
         lambda x: st.poisson.cdf(np.array([1, 0, 4, 2]), x[2])),
    Case("scipy.stats.rv_discrete.sf", "poisson", lambda x: st.poisson.sf(3, 2 * x[1])),
    Case("scipy.interpolate.CubicSpline", "cubic_pchip_vector",
         lambda x: _SPLINE(x) * x + si.PchipInterpolator(_KNOTS, _KNOTS ** 2)(x[::-1], 1)
         + _SPLINE2(x)[..., 1]),
    Case("scipy.interpolate.BSpline", "make_interp_spline",
         lambda x: si.make_interp_spline(_KNOTS, np.sin(_KNOTS))(x) * x[0, 0]),
    Case("scipy.interpolate.interp1d", "linear",
         lambda x: si.interp1d(_KNOTS, np.sin(_KNOTS))(x) * x[0, 0]),
    Case("scipy.interpolate.interp1d", "previous_hold",
         lambda x: si.interp1d(_KNOTS, np.sin(_KNOTS), kind="previous")(x) * x),
    Case("scipy.interpolate.interp1d", "cubic",
         lambda x: si.interp1d(_KNOTS, _KNOTS ** 2, kind="cubic")(x[::-1]) * x),
    Case("scipy.stats.rv_discrete.logcdf", "poisson", lambda x: st.poisson.logcdf(2, x[0])),
    Case("scipy.stats.rv_discrete.logsf", "poisson", lambda x: st.poisson.logsf(1, x[0])),
    Case("numpy.convolve", "constant_kernel", lambda x: np.convolve(x, [1.0, -2.0, 1.0], "same"),
         shape=(7,)),
    Case("numpy.convolve", "both_traced", lambda x: np.convolve(x[:3], x[3:], "full"),
         shape=(7,)),
    Case("numpy.correlate", "valid", lambda x: np.correlate(x, [0.5, 1.0], "valid"), shape=(6,)),
    # -- movement (one gather mechanism) -------------------------------------------------------
    Case("numpy.reshape", "reshape", lambda x: np.reshape(x, (2, 6))[::-1]),
    Case("numpy.ravel", "fortran", lambda x: np.ravel(x, order="F")),
    Case("numpy.transpose", "axes", lambda x: np.transpose(x, (1, 2, 0)), shape=(2, 3, 4)),
    Case("numpy.swapaxes", "negative", lambda x: np.swapaxes(x, 0, -1), shape=(2, 3, 4)),
    Case("numpy.moveaxis", "moveaxis", lambda x: np.moveaxis(x, 0, -1), shape=(2, 3, 4)),
    Case("numpy.rollaxis", "rollaxis", lambda x: np.rollaxis(x, 2), shape=(2, 3, 4)),
    Case("numpy.squeeze", "axis", lambda x: np.squeeze(x[:, None, :1], axis=1)),
    Case("numpy.expand_dims", "two_axes", lambda x: np.expand_dims(x, (0, -1))),
    Case("numpy.broadcast_to", "row", lambda x: np.broadcast_to(x[:, :1], (3, 5)) * 2),
    Case("numpy.roll", "two_axes", lambda x: np.roll(x, (1, -2), axis=(0, 1))),
    Case("numpy.roll", "flat", lambda x: np.roll(x, 5)),
    Case("numpy.flip", "last", lambda x: np.flip(x, axis=-1)),
    Case("numpy.fliplr", "fliplr", np.fliplr),
    Case("numpy.flipud", "flipud", np.flipud),
    Case("numpy.rot90", "k3", lambda x: np.rot90(x, k=3)),
    Case("numpy.tile", "tile", lambda x: np.tile(x, (2, 1, 2))),
    Case("numpy.repeat", "per_row", lambda x: np.repeat(x, [1, 0, 2], axis=0)),
    Case("numpy.diagonal", "offset", lambda x: np.diagonal(x, 1, 1, 2), shape=(2, 3, 4)),
    Case("numpy.diag", "of_matrix", lambda x: np.diag(x, -1)),
    Case("numpy.diag", "of_vector", lambda x: np.diag(x[0]) * 2),
    Case("numpy.diagflat", "offset", lambda x: np.diagflat(x[:2], k=1)),
    Case("numpy.tril", "tril", lambda x: np.tril(x, -1)),
    Case("numpy.triu", "triu", lambda x: np.triu(x, 1)),
    Case("numpy.take", "axis1", lambda x: np.take(x, [3, 0, 3], axis=1)),
    Case("numpy.take_along_axis", "axis1",
         lambda x: np.take_along_axis(x, np.array([[0, 3], [2, 2], [1, 0]]), axis=1)),
    Case("numpy.copy", "copy", lambda x: np.copy(x) ** 2),
    Case("numpy.resize", "grow", lambda x: np.resize(x, (5, 3))),
    Case("numpy.delete", "columns", lambda x: np.delete(x, [0, 2], axis=1)),
    Case("numpy.split", "split", lambda x: np.split(x, 2, axis=1)[1]),
    Case("numpy.array_split", "uneven", lambda x: np.array_split(x, 3, axis=1)[-1]),
    Case("numpy.hsplit", "hsplit", lambda x: np.hsplit(x, [1])[1]),
    Case("numpy.vsplit", "vsplit", lambda x: np.vsplit(x, [2])[0]),
    Case("numpy.dsplit", "dsplit", lambda x: np.dsplit(x, 2)[1], shape=(2, 3, 4)),
    Case("numpy.matrix_transpose", "batched", np.matrix_transpose, shape=(2, 3, 4)),
    Case("numpy.transpose", "permute_dims_alias", lambda x: np.permute_dims(x, (2, 0, 1)),
         shape=(2, 3, 4)),
    Case("numpy.unstack", "axis1", lambda x: np.unstack(x, axis=1)[2]),
    Case("numpy.pad", "constant", lambda x: np.pad(x, ((1, 0), (0, 2)), constant_values=2.0)),
    Case("numpy.pad", "wrap", lambda x: np.pad(x, 1, mode="wrap")),
    Case("numpy.pad", "edge", lambda x: np.pad(x, (2, 1), mode="edge")),
    Case("numpy.pad", "reflect", lambda x: np.pad(x, 2, mode="reflect")),
    Case("numpy.pad", "symmetric", lambda x: np.pad(x, ((0, 2), (1, 1)), mode="symmetric")),
    Case("numpy.compress", "rows", lambda x: np.compress([True, False, True], x, axis=0)),
    Case("numpy.insert", "traced_values", lambda x: np.insert(x, 1, x[:, 0] ** 2, axis=1)),
    Case("numpy.append", "append", lambda x: np.append(x[0], x[1:, 0] * 2)),
    Case("numpy.concatenate", "axis1", lambda x: np.concatenate([x, x[:, :1] ** 2], axis=-1)),
    Case("numpy.concatenate", "concat_alias", lambda x: np.concat([x[1:], np.ones((1, 4)), x[:1]])),
    Case("numpy.stack", "axis1", lambda x: np.stack([x[0], x[2] ** 2], axis=1)),
    Case("numpy.hstack", "hstack", lambda x: np.hstack([x[0], x[1, :2], np.ones(2)])),
    Case("numpy.vstack", "vstack", lambda x: np.vstack([x[0], x[2] * 2])),
    Case("numpy.dstack", "dstack", lambda x: np.dstack([x, x**2])),
    Case("numpy.column_stack", "column_stack", lambda x: np.column_stack([x[0], x[2]])),
    Case("numpy.block", "block", lambda x: np.block([[x[:2, :2], x[:2, 2:] ** 2], [x[2:]]])),
    Case("numpy.atleast_1d", "scalar", lambda x: np.atleast_1d(x[0, 0]) * x[1]),
    Case("numpy.atleast_2d", "vector", lambda x: np.atleast_2d(x[0]) * x),
    Case("numpy.atleast_3d", "matrix", lambda x: np.atleast_3d(x) ** 2),
    Case("numpy.broadcast_arrays", "pair", _bcast_arrays),
    Case("numpy.meshgrid", "pair", _mesh),
    # -- reductions and scans along any axis ---------------------------------------------------
    Case("numpy.sum", "axis_keepdims", lambda x: np.sum(x**2, axis=-1, keepdims=True)),
    Case("numpy.sum", "all", lambda x: np.sum(x**2)),
    Case("numpy.add.reduce", "axis0", lambda x: np.add.reduce(x**2, axis=0)),
    Case("numpy.prod", "axis1", lambda x: np.prod(x, axis=1)),
    Case("numpy.multiply.reduce", "axes", lambda x: np.multiply.reduce(x, axis=(0, 2)),
         shape=(2, 3, 2)),
    Case("numpy.max", "axis1", lambda x: np.max(x, axis=1), select=True),
    Case("numpy.amax", "all", lambda x: np.amax(x), select=True),
    Case("numpy.nanmax", "axis0", lambda x: np.nanmax(x, axis=0), select=True),
    Case("numpy.nanmin", "axis1", lambda x: np.nanmin(x, axis=1, keepdims=True), select=True),
    Case("numpy.maximum.reduce", "axis0", lambda x: np.maximum.reduce(x), select=True),
    Case("numpy.min", "keepdims", lambda x: np.min(x, axis=0, keepdims=True), select=True),
    Case("numpy.amin", "axis", lambda x: np.amin(x, axis=-1), select=True),
    Case("numpy.minimum.reduce", "axis1", lambda x: np.minimum.reduce(x, axis=1), select=True),
    Case("numpy.ptp", "axis0", lambda x: np.ptp(x, axis=0), select=True),
    Case("numpy.mean", "axes", lambda x: np.mean(x**2, axis=(0, 1))),
    Case("numpy.var", "ddof", lambda x: np.var(x, axis=1, ddof=1)),
    Case("numpy.std", "axis0_keepdims", lambda x: np.std(x, axis=0, keepdims=True)),
    Case("numpy.average", "weights", lambda x: np.average(x, axis=1, weights=[1.0, 2.0, 0.5,
                                                                               3.0])),
    Case("numpy.trace", "offset", lambda x: np.trace(x, 1) * x[0]),
    Case("numpy.diff", "n2_axis0", lambda x: np.diff(x**2, n=2, axis=0)),
    Case("numpy.diff", "prepend", lambda x: np.diff(x, prepend=0.0)),
    Case("numpy.cumsum", "axis0", lambda x: np.cumsum(x**2, axis=0)),
    Case("numpy.cumsum", "flat", lambda x: np.cumsum(x)),
    Case("numpy.cumulative_sum", "axis1", lambda x: np.cumulative_sum(x, axis=1)),
    Case("numpy.add.accumulate", "axis0", lambda x: np.add.accumulate(x)),
    Case("numpy.cumprod", "last", lambda x: np.cumprod(x, axis=-1)),
    Case("numpy.cumulative_prod", "axis0", lambda x: np.cumulative_prod(x, axis=0)),
    Case("numpy.multiply.accumulate", "axis1", lambda x: np.multiply.accumulate(x, axis=1)),
    Case("numpy.gradient", "mixed_spacing", _gradient),
    # -- sorting: value-dependent selections (global pattern dense along the axis) -----------
    Case("numpy.sort", "axis0", lambda x: np.sort(x, axis=0) * x[0], select=True),
    Case("numpy.sort", "flat", lambda x: np.sort(x, axis=None) ** 2, select=True),
    Case("numpy.partition", "kth", lambda x: np.partition(x, 1, axis=1), select=True),
    Case("numpy.partition", "kths", lambda x: np.partition(x, (0, 2), axis=0), select=True),
    Case("numpy.median", "even", lambda x: np.median(x, axis=1), select=True),
    Case("numpy.median", "odd_keepdims", lambda x: np.median(x, axis=0, keepdims=True),
         select=True),
    Case("numpy.median", "flat", lambda x: np.median(x) * x, select=True),
    Case("numpy.quantile", "vector_q", lambda x: np.quantile(x, [0.1, 0.5, 0.95], axis=1),
         select=True),
    Case("numpy.percentile", "flat", lambda x: np.percentile(x, 30.0) + x, select=True),
    Case("numpy.maximum.accumulate", "axis1", lambda x: np.maximum.accumulate(x, axis=1),
         select=True),
    Case("numpy.minimum.accumulate", "axis0", lambda x: np.minimum.accumulate(x ** 2),
         select=True),
    Case("numpy.take_along_axis", "argsort", lambda x: np.take_along_axis(
        x, np.argsort(x, axis=0), axis=0), select=True),
    # -- complex intermediates: pairs of real traced arrays ----------------------------------
    Case("numpy.real", "exp_ikx", lambda x: np.real(np.exp(1j * 2.0 * x) * (x + 0.5j))),
    Case("numpy.imag", "product", lambda x: np.imag((x + 1j * x[::-1]) * (x ** 2 - 0.3j))),
    Case("numpy.angle", "deg", lambda x: np.angle(x - 1j * x[0] ** 2, deg=True)),
    Case("numpy.real_if_close", "zero_imag", lambda x: np.real_if_close(x * (2 + 0j))),
    Case("numpy.fft.fft", "abs", lambda x: np.abs(np.fft.fft(x, axis=0))),
    Case("numpy.fft.ifft", "conj", lambda x: (np.fft.ifft(x * 1j) * np.conj(1j * x)).real),
    Case("numpy.fft.rfft", "spectral_derivative", lambda x: np.fft.irfft(
        1j * np.arange(3) * np.fft.rfft(x, norm="ortho"), n=4, norm="ortho")),
    Case("numpy.fft.irfft", "n", lambda x: np.fft.irfft(x[:, :3] + 1j * x[:, 1:], n=5)),
    Case("numpy.fft.fft2", "imag", lambda x: np.fft.fft2(x).imag),
    Case("numpy.fft.ifft2", "real", lambda x: np.fft.ifft2(x * (1 - 2j)).real),
    Case("numpy.fft.fftn", "abs", lambda x: np.abs(np.fft.fftn(x))),
    Case("numpy.fft.ifftn", "axes", lambda x: np.fft.ifftn(x, axes=(0,)).imag),
    Case("numpy.fft.fftshift", "real", lambda x: np.fft.fftshift(x, axes=1)),
    Case("numpy.fft.ifftshift", "complex", lambda x: np.fft.ifftshift(np.fft.fft(x)).real),
    # -- scipy.ndimage / scipy.signal: constant linear operators (sparse matrices) ---------
    Case("scipy.ndimage.laplace", "reflect", lambda x: _ndi().laplace(x) * x),
    Case("scipy.ndimage.convolve", "constant_cval", lambda x: _ndi().convolve(
        x, _STENCIL, mode="constant", cval=1.5)),
    Case("scipy.ndimage.correlate", "wrap", lambda x: _ndi().correlate(x, _STENCIL, mode="wrap")),
    Case("scipy.ndimage.convolve1d", "axis0", lambda x: _ndi().convolve1d(x, [1.0, -1.0], axis=0)),
    Case("scipy.ndimage.correlate1d", "nearest", lambda x: _ndi().correlate1d(
        x, [1.0, 2.0, 3.0], mode="nearest")),
    Case("scipy.ndimage.uniform_filter", "size3", lambda x: _ndi().uniform_filter(x, 3)),
    Case("scipy.ndimage.uniform_filter1d", "size2", lambda x: _ndi().uniform_filter1d(x, 2)),
    Case("scipy.ndimage.gaussian_filter", "sigma", lambda x: _ndi().gaussian_filter(x, 0.8)),
    Case("scipy.ndimage.gaussian_filter1d", "order1", lambda x: _ndi().gaussian_filter1d(
        x, 0.7, order=1, axis=0)),
    Case("scipy.ndimage.gaussian_laplace", "sigma", lambda x: _ndi().gaussian_laplace(x, 0.6)),
    Case("scipy.ndimage.sobel", "axis0", lambda x: _ndi().sobel(x, axis=0) ** 2),
    Case("scipy.ndimage.prewitt", "axis1", lambda x: _ndi().prewitt(x, axis=1)),
    Case("scipy.signal.convolve", "same", lambda x: _sig().convolve(x, _STENCIL, mode="same")),
    Case("scipy.signal.correlate", "full_swapped", lambda x: _sig().correlate(_STENCIL, x)),
    Case("scipy.signal.convolve2d", "wrap", lambda x: _sig().convolve2d(
        x, _STENCIL, mode="same", boundary="wrap")),
    Case("scipy.signal.correlate2d", "valid", lambda x: _sig().correlate2d(
        x, _STENCIL[:2], mode="valid")),
    Case("scipy.signal.fftconvolve", "same", lambda x: _sig().fftconvolve(
        x, _STENCIL, mode="same")),
    Case("scipy.signal.oaconvolve", "full", lambda x: _sig().oaconvolve(x, _STENCIL)),
    # -- assembly: composites calling numpy per piece --------------------------------------
    Case("numpy.r_ / numpy.c_", "r_", lambda x: np.r_[x[0], 2.0, 1:3, x[1, ::-1] ** 2]),
    Case("numpy.r_ / numpy.c_", "c_", lambda x: np.c_[x[0], x[1] ** 2, x[2:].T]),
    Case("numpy.apply_along_axis", "vector", lambda x: np.apply_along_axis(
        lambda r: r * r.sum(), 0, x)),
    Case("numpy.apply_along_axis", "matrix", lambda x: np.apply_along_axis(
        lambda r: np.outer(r[:2], r), 1, x)),
    Case("numpy.vectorize", "binary", lambda x: np.vectorize(
        lambda a, b: a * np.exp(b))(x, x[0])),
    Case("numpy.trapezoid", "dx", lambda x: np.trapezoid(x**2, dx=0.1, axis=0)),
    Case("numpy.trapezoid", "traced_x", lambda x: np.trapezoid(x[1], x=x[0])),
]

#: Entries with a zero derivative: every output is constant for the tracer (tested below).
ZERO_CASES: list[Case] = [
    Case("numpy.all", "axis", lambda x: np.all(x > 1.0, axis=0)),
    Case("numpy.any", "all", lambda x: np.any(x > 1.0)),
    Case("numpy.argmax", "axis", lambda x: np.argmax(x, axis=1)),
    Case("numpy.argmin", "keepdims", lambda x: np.argmin(x, axis=0, keepdims=True)),
    Case("numpy.argsort", "axis0", lambda x: np.argsort(x, axis=0)),
    Case("numpy.argpartition", "kth1", lambda x: np.argpartition(x, 1, axis=0)),
    Case("numpy.count_nonzero", "axis", lambda x: np.count_nonzero(x > 1.0, axis=1)),
    Case("numpy.round", "decimals", lambda x: np.round(x * 10, 1)),
    Case("numpy.around", "around", lambda x: np.around(x * 10)),
    Case("numpy.isclose", "isclose", lambda x: np.isclose(x, 1.0, atol=0.2)),
    Case("numpy.searchsorted", "values", lambda x: np.searchsorted(
        np.array([0.5, 1.0, 1.5]), x, side="right")),
    Case("numpy.searchsorted", "table", lambda x: np.searchsorted(np.sort(x[0]), 1.0)
         * np.ones(2)),
    Case("numpy.digitize", "right", lambda x: np.digitize(x, np.array([0.5, 1.0, 1.5]),
                                                          right=True)),
    Case("numpy.linalg.matrix_rank", "rank", lambda x: np.linalg.matrix_rank(x) * np.ones(3)),
]

#: Entries without a representative call here, and why.
SKIP = {
    # pure queries: they return shapes, dtypes or Python values, never arrays to differentiate
    "numpy.shape", "numpy.ndim", "numpy.size", "numpy.result_type", "numpy.iscomplexobj",
    "numpy.isrealobj", "numpy.common_type",
    # returns a Python bool (local mode only); tested in tests/primitives/test_creation.py
    "numpy.allclose",
    # constant sparse matrices, nothing to differentiate; tested against the matrix itself
    # in tests/primitives/test_linalg.py
    "scipy.sparse.diags", "scipy.sparse.diags_array", "scipy.sparse.spdiags",
}


def _case_id(c: Case) -> str:
    return f"{c.entry.removeprefix('numpy.')}-{c.id}"


@pytest.mark.parametrize("case", [pytest.param(c, id=_case_id(c)) for c in CASES])
def test_entry(case: Case, rng: np.random.Generator) -> None:
    """A registry entry's representative call has consistent, numerically right rules."""
    x = rng.uniform(*case.domain, size=case.shape)
    check_rules(case.f, x, rng, select=case.select)


@pytest.mark.parametrize("case", [pytest.param(c, id=_case_id(c)) for c in ZERO_CASES])
def test_zero_derivative_entry(case: Case, rng: np.random.Generator) -> None:
    """A zero-derivative entry gives an empty pattern (global and local) and a zero JVP."""
    x = rng.uniform(*case.domain, size=case.shape)

    def f(t: Any) -> Any:
        return case.f(t).astype(np.float64) + 0 * t[0, 0]

    assert sparsejac.jacobian_sparsity(f, x).nnz == 0
    assert sparsejac.jacobian_sparsity(f, x, local=True).nnz == 0
    np.testing.assert_array_equal(jvp(f, x, rng.standard_normal((x.size, 3))), 0.0)


def test_every_entry_is_covered() -> None:
    """Every registered entry is an elementwise row, a case, a zero case or a listed skip."""
    rows = {public_name(r.fn) for r in UNARY_ROWS + BINARY_ROWS}
    zero = {public_name(u) for u in ZERO_DERIVATIVE}
    cases = {c.entry for c in CASES} | {c.entry for c in ZERO_CASES}
    covered = rows | zero | cases | SKIP
    missing = sorted(e.name for e in supported_entries() if e.name not in covered)
    assert not missing, f"registry entries without a rule test: {missing}"
    stale = sorted(cases - {e.name for e in supported_entries()})
    assert not stale, f"cases for entries that are not registered: {stale}"


def test_every_elementwise_primitive_is_covered() -> None:
    """Every primitive in ELEMENTWISE is a table row, a zero-derivative ufunc or has a case."""
    names = {r.fn.__name__ for r in UNARY_ROWS + BINARY_ROWS + TERNARY_ROWS}
    names |= {u.__name__ for u in ZERO_DERIVATIVE}
    names |= {c.entry.removeprefix("numpy.").removeprefix("scipy.special.") for c in CASES}
    assert sorted(set(ELEMENTWISE) - names) == []


def _registered_primitives() -> dict[int, Primitive]:
    """Every primitive instance the family modules define (module constants and tables)."""
    import importlib
    import pkgutil

    import sparsejac.primitives as package

    found: dict[int, Primitive] = {}
    for info in pkgutil.iter_modules(package.__path__):
        mod = importlib.import_module(f"sparsejac.primitives.{info.name}")
        for value in vars(mod).values():
            items = value.values() if isinstance(value, dict) else [value]
            for item in items:
                if isinstance(item, Primitive):
                    found[id(item)] = item
    return found


def test_every_primitive_has_a_local_jacobian() -> None:
    """Each primitive states its local Jacobian, has zero derivative, or is a listed opaque one."""
    prims = _registered_primitives()
    assert len(prims) > 50
    missing = sorted(p.name for p in prims.values()
                     if type(p).linearize is Primitive.linearize and not p.zero_derivative
                     and p.name not in OPAQUE)
    assert not missing, f"primitives without linearize (list them in OPAQUE): {missing}"
    for name, reason in OPAQUE.items():
        assert reason, f"opaque primitive {name!r} needs a reason"


def test_structured_primitives_derive_their_rules() -> None:
    """The linear primitives keep only the fast paths benchmarks/rules.py measured faster."""
    from sparsejac.primitives.linalg import Contraction
    from sparsejac.primitives.linear import LINEAR_MAP
    from sparsejac.primitives.movement import GATHER
    from sparsejac.primitives.reductions import CUMSUM, REDUCE_SUM

    assert fast_paths(LINEAR_MAP) == []
    assert fast_paths(REDUCE_SUM) == ["vjp"]
    assert fast_paths(CUMSUM) == ["jvp", "vjp"]
    assert fast_paths(GATHER) == ["pattern", "jvp", "vjp"]
    assert fast_paths(Contraction()) == ["jvp", "vjp"]
    # solves with the factors where A⁻¹ is denser than L + U (the derived rule otherwise)
    from sparsejac.primitives.scipy_linalg import CONST_SOLVE

    assert fast_paths(CONST_SOLVE) == ["jvp", "vjp"]
    # dense matrix functions: their JVP formula on the tangent block (dense blocks only);
    # pattern and VJP are derived except for a node too large for its local Jacobian
    # (sparsejac/primitives/dense_products.py, tests/primitives/test_dense_linalg_large.py)
    from sparsejac.primitives.dense_linalg import SOLVE

    assert fast_paths(SOLVE) == ["pattern", "jvp", "vjp"]
