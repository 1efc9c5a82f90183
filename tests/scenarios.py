"""Named test functions with hand-derived Jacobians and patterns: the scenario catalogue.

Every :class:`Scenario` is a numpy function ``f``, a point ``x0`` (any shape), its Jacobian
``jacobian(x) -> (m, n) dense array`` derived by hand (never by running sparsejac), and the
analytic *global* pattern (bool, ``(m, n)``) that sparsity detection must reproduce exactly.
Inputs and outputs are flattened in C order. Detection, forward mode, reverse mode and the
mixed/bidirectional engines all run over :data:`SCENARIOS`; :func:`fd_jacobian` and
:func:`random_point` are the shared helpers.

Models: DifferentiationInterfaceTest ``scenarios/sparse.jl`` (diffsquare, diffcube, banded
linear maps), SCT's Brusselator reference, scipy's ``TestApproxDerivativeSparse``
(``fun``/``jac``/``structure`` triples).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = [
    "SCENARIOS",
    "Scenario",
    "by_name",
    "fd_jacobian",
    "random_point",
    "scenario_params",
]


@dataclass(frozen=True)
class Scenario:
    """A function with its analytic Jacobian and pattern.

    Attributes
    ----------
    name : str
        Test id.
    f : callable
        ``f(x) -> array``; written in plain numpy.
    x0 : ndarray
        A generic point (any shape) where every pattern entry is numerically nonzero.
    jacobian : callable
        ``jacobian(x) -> ndarray (m, n)``, hand-derived.
    pattern : ndarray of bool
        The global pattern, ``(m, n)``.
    domain : (float, float)
        Interval for :func:`random_point` (the pattern is generic there).
    tags : tuple of str
        ``"sparse-matrix"``, ``"scatter"``, ``"reduction"``, ``"dense-row"`` ...
    """

    name: str
    f: Callable[[Any], Any]
    x0: np.ndarray
    jacobian: Callable[[np.ndarray], np.ndarray]
    pattern: np.ndarray
    domain: tuple[float, float] = (0.5, 1.5)
    tags: tuple[str, ...] = field(default=())

    @property
    def n(self) -> int:
        """Number of inputs."""
        return int(self.x0.size)

    @property
    def m(self) -> int:
        """Number of outputs."""
        return int(self.pattern.shape[0])


def fd_jacobian(f: Callable[[Any], Any], x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Dense central-difference Jacobian ``(m, n)`` of ``f`` at ``x`` (any shape, C order)."""
    x = np.asarray(x, dtype=np.float64)
    flat = x.ravel()
    cols = []
    for j in range(flat.size):
        e = np.zeros_like(flat)
        e[j] = h
        up = np.asarray(f((flat + e).reshape(x.shape)), dtype=np.float64).ravel()
        down = np.asarray(f((flat - e).reshape(x.shape)), dtype=np.float64).ravel()
        cols.append((up - down) / (2 * h))
    return np.stack(cols, axis=1)


def random_point(s: Scenario, rng: np.random.Generator) -> np.ndarray:
    """A random point of the scenario's shape, drawn from its domain."""
    lo, hi = s.domain
    return rng.uniform(lo, hi, size=s.x0.shape)


def _point(shape: tuple[int, ...], seed: int, domain: tuple[float, float] = (0.5, 1.5)
           ) -> np.ndarray:
    return np.random.default_rng(seed).uniform(*domain, size=shape)


# ---------------------------------------------------------------------------------------------
# diff-square and diff-cube (DI's diffsquare / diffcube)
# ---------------------------------------------------------------------------------------------


def _diffpower(k: int) -> tuple[Callable[[Any], Any], Callable[[np.ndarray], np.ndarray]]:
    def f(x: Any) -> Any:
        return np.diff(x**k)

    def jac(x: np.ndarray) -> np.ndarray:
        n = x.size
        j = np.zeros((n - 1, n))
        i = np.arange(n - 1)
        j[i, i] = -k * x[:-1] ** (k - 1)  # d(x_{i+1}^k - x_i^k)/dx_i
        j[i, i + 1] = k * x[1:] ** (k - 1)
        return j

    return f, jac


def _bidiagonal(n: int) -> np.ndarray:
    return np.eye(n - 1, n, dtype=bool) | np.eye(n - 1, n, 1, dtype=bool)


# ---------------------------------------------------------------------------------------------
# banded linear maps: a constant dense matrix with zeros, and a scipy.sparse band
# ---------------------------------------------------------------------------------------------


def _band(m: int, n: int, lower: int, upper: int) -> np.ndarray:
    i, j = np.indices((m, n))
    return (j - i <= upper) & (i - j <= lower)


_BAND_MASK = _band(7, 9, 2, 1)
_BAND_A = np.where(_BAND_MASK, np.arange(1.0, 64.0).reshape(7, 9), 0.0)
_BAND_SP = sp.diags_array([1.0, -2.0, 3.0, 0.5], offsets=[-1, 0, 1, 2], shape=(6, 8),
                          format="csr")


def _banded_dense(x: Any) -> Any:
    return _BAND_A @ x


def _banded_sparse(x: Any) -> Any:
    return _BAND_SP @ x


# ---------------------------------------------------------------------------------------------
# 2D Brusselator on a periodic nx × ny grid (SCT's reference problem), x of shape (nx, ny, 2)
# ---------------------------------------------------------------------------------------------

_NX, _NY = 4, 5
_ALPHA, _A, _B = 10.0, 3.4, 1.0


def _lap_roll(z: Any) -> Any:
    return (np.roll(z, 1, axis=0) + np.roll(z, -1, axis=0)
            + np.roll(z, 1, axis=1) + np.roll(z, -1, axis=1) - 4 * z)


def _lap_pad(z: Any) -> Any:
    zp = np.pad(z, 1, mode="wrap")
    return zp[2:, 1:-1] + zp[:-2, 1:-1] + zp[1:-1, 2:] + zp[1:-1, :-2] - 4 * z


def _lap_slices(z: Any) -> Any:
    # periodic shifts spelled with concatenate and slices
    up = np.concatenate([z[-1:], z[:-1]], axis=0)
    down = np.concatenate([z[1:], z[:1]], axis=0)
    left = np.concatenate([z[:, -1:], z[:, :-1]], axis=1)
    right = np.concatenate([z[:, 1:], z[:, :1]], axis=1)
    return up + down + left + right - 4 * z


def _brusselator(lap: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        u, v = x[..., 0], x[..., 1]
        du = _ALPHA * lap(u) + _B + u * u * v - (_A + 1) * u
        dv = _ALPHA * lap(v) + _A * u - u * u * v
        return np.stack([du, dv], axis=-1)

    return f


def _brusselator_jac(x: np.ndarray) -> np.ndarray:
    nx, ny = x.shape[:2]
    u, v = x[..., 0], x[..., 1]
    n = x.size

    def idx(i: Any, j: Any, c: int) -> Any:  # flat index of x[i, j, c] in C order
        return ((i % nx) * ny + (j % ny)) * 2 + c

    jac = np.zeros((n, n))
    for i in range(nx):
        for j in range(ny):
            for c in (0, 1):
                r = idx(i, j, c)
                for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                    jac[r, idx(i + di, j + dj, c)] += _ALPHA
                jac[r, idx(i, j, c)] += -4 * _ALPHA
            uu, vv = u[i, j], v[i, j]
            jac[idx(i, j, 0), idx(i, j, 0)] += 2 * uu * vv - (_A + 1)  # d du / du
            jac[idx(i, j, 0), idx(i, j, 1)] += uu * uu  # d du / dv
            jac[idx(i, j, 1), idx(i, j, 0)] += _A - 2 * uu * vv  # d dv / du
            jac[idx(i, j, 1), idx(i, j, 1)] += -uu * uu  # d dv / dv
    return jac


def _brusselator_pattern(nx: int, ny: int) -> np.ndarray:
    n = nx * ny * 2
    pat = np.zeros((n, n), dtype=bool)
    for i in range(nx):
        for j in range(ny):
            for c in (0, 1):
                r = ((i * ny + j) * 2) + c
                for di, dj in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
                    pat[r, (((i + di) % nx) * ny + (j + dj) % ny) * 2 + c] = True
                pat[r, (i * ny + j) * 2 + (1 - c)] = True  # u-v coupling at the same point
    return pat


# ---------------------------------------------------------------------------------------------
# arrowhead: a dense first row and first column plus the diagonal
# ---------------------------------------------------------------------------------------------


def _arrowhead(x: Any) -> Any:
    head = np.sum(x**2, keepdims=True)
    return np.concatenate([head, x[1:] * x[0] + np.sin(x[1:])])


def _arrowhead_jac(x: np.ndarray) -> np.ndarray:
    n = x.size
    jac = np.zeros((n, n))
    jac[0] = 2 * x  # d sum(x^2) / dx_j
    i = np.arange(1, n)
    jac[i, 0] = x[1:]  # d (x_i x_0 + sin x_i) / dx_0
    jac[i, i] = x[0] + np.cos(x[1:])
    return jac


def _arrowhead_pattern(n: int) -> np.ndarray:
    pat = np.eye(n, dtype=bool)
    pat[0] = True
    pat[:, 0] = True
    return pat


# ---------------------------------------------------------------------------------------------
# tridiagonal Burgers: out = np.zeros_like(u); out[1:-1] = ... (Dirichlet rows at both ends)
# ---------------------------------------------------------------------------------------------

_DX, _NU = 0.1, 0.05


def _burgers(u: Any) -> Any:
    out = np.zeros_like(u)
    out[1:-1] = (-u[1:-1] * (u[2:] - u[:-2]) / (2 * _DX)
                 + _NU * (u[2:] - 2 * u[1:-1] + u[:-2]) / _DX**2)
    out[0] = u[0] - 1.0
    out[-1] = u[-1] ** 2
    return out


def _burgers_jac(u: np.ndarray) -> np.ndarray:
    n = u.size
    jac = np.zeros((n, n))
    i = np.arange(1, n - 1)
    jac[i, i - 1] = u[1:-1] / (2 * _DX) + _NU / _DX**2
    jac[i, i] = -(u[2:] - u[:-2]) / (2 * _DX) - 2 * _NU / _DX**2
    jac[i, i + 1] = -u[1:-1] / (2 * _DX) + _NU / _DX**2
    jac[0, 0] = 1.0
    jac[-1, -1] = 2 * u[-1]
    return jac


def _tridiagonal(n: int) -> np.ndarray:
    return np.eye(n, dtype=bool) | np.eye(n, k=1, dtype=bool) | np.eye(n, k=-1, dtype=bool)


def _burgers_pattern(n: int) -> np.ndarray:
    pat = _tridiagonal(n)
    pat[0] = False
    pat[-1] = False
    pat[0, 0] = pat[-1, -1] = True
    return pat


# ---------------------------------------------------------------------------------------------
# constant scipy.sparse Laplacian: L @ u + u**2 (with a csr_matrix and a csr_array)
# ---------------------------------------------------------------------------------------------

_N_LAP = 8
_LAP_ARRAY = sp.diags_array([1.0, -2.0, 1.0], offsets=[-1, 0, 1], shape=(_N_LAP, _N_LAP),
                            format="csr")
_LAP_MATRIX = sp.csr_matrix(_LAP_ARRAY)


def _lap_array(u: Any) -> Any:
    return _LAP_ARRAY @ u + u**2


def _lap_matrix(u: Any) -> Any:
    return _LAP_MATRIX.dot(u) + u**2


def _lap_jac(u: np.ndarray) -> np.ndarray:
    return _LAP_ARRAY.toarray() + np.diag(2 * u)


# ---------------------------------------------------------------------------------------------
# scatter-add assembly over edges (an FEM-like residual with np.add.at)
# ---------------------------------------------------------------------------------------------

_EDGES = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [0, 3], [5, 1], [2, 2]])
_N_NODES = 7  # node 6 has no edge: an empty row and column


def _assembly(u: Any) -> Any:
    a, b = _EDGES[:, 0], _EDGES[:, 1]
    flux = (u[b] - u[a]) ** 3 + u[a] * u[b]
    out = np.zeros_like(u)
    np.add.at(out, a, flux)
    np.subtract.at(out, b, flux)
    return out


def _assembly_jac(u: np.ndarray) -> np.ndarray:
    jac = np.zeros((_N_NODES, _N_NODES))
    for a, b in _EDGES:
        dfa = -3 * (u[b] - u[a]) ** 2 + u[b]  # d flux / d u_a
        dfb = 3 * (u[b] - u[a]) ** 2 + u[a]  # d flux / d u_b
        if a == b:  # a self-loop: flux = u_a^2, added and subtracted at the same node
            continue
        jac[a, a] += dfa
        jac[a, b] += dfb
        jac[b, a] -= dfa
        jac[b, b] -= dfb
    return jac


def _assembly_pattern() -> np.ndarray:
    pat = np.zeros((_N_NODES, _N_NODES), dtype=bool)
    for a, b in _EDGES:
        pat[a, a] = pat[a, b] = pat[b, a] = pat[b, b] = True
    return pat


# ---------------------------------------------------------------------------------------------
# reduction coupling: x * sum(x) (dense)
# ---------------------------------------------------------------------------------------------


def _sum_coupled(x: Any) -> Any:
    return x * np.sum(x)


def _sum_coupled_jac(x: np.ndarray) -> np.ndarray:
    # d (x_i s) / dx_j = delta_ij s + x_i
    return np.diag(np.full(x.size, x.sum())) + x[:, None] * np.ones((1, x.size))


# ---------------------------------------------------------------------------------------------
# contractions: a constant with structural zeros, and both operands traced
# ---------------------------------------------------------------------------------------------

_C = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, -1.0]])  # (2, 3); its zeros are structural


def _matmul_const(x: Any) -> Any:
    return _C @ x  # x: (3, 4) -> (2, 4)


def _matmul_const_jac(x: np.ndarray) -> np.ndarray:
    # out[i, l] = sum_j C[i, j] x[j, l]: d out[i, l] / d x[j, l'] = C[i, j] delta_{l l'}
    jac = np.zeros((2, 4, 3, 4))
    for i in range(2):
        for j in range(3):
            for ll in range(4):
                jac[i, ll, j, ll] = _C[i, j]
    return jac.reshape(8, 12)


def _einsum_both(x: Any) -> Any:
    p = x[:6].reshape(2, 3)
    q = x[6:].reshape(3, 2)
    return np.einsum("ij,jk->ik", p, q) + p[:, :2] ** 2


def _einsum_both_jac(x: np.ndarray) -> np.ndarray:
    p = x[:6].reshape(2, 3)
    q = x[6:].reshape(3, 2)
    jac = np.zeros((2, 2, 12))
    for i in range(2):
        for k in range(2):
            for j in range(3):
                jac[i, k, i * 3 + j] += q[j, k]  # d/dP[i, j]
                jac[i, k, 6 + j * 2 + k] += p[i, j]  # d/dQ[j, k]
            jac[i, k, i * 3 + k] += 2 * p[i, k]  # the p[:, :2]**2 term
    return jac.reshape(4, 12)


def _matmul_self(x: Any) -> Any:
    return x @ x.T  # Gram matrix of the rows: x (3, 4) -> (3, 3)


def _matmul_self_jac(x: np.ndarray) -> np.ndarray:
    # G[a, b] = sum_l x[a, l] x[b, l]
    jac = np.zeros((3, 3, 3, 4))
    for a in range(3):
        for b in range(3):
            for ll in range(4):
                jac[a, b, a, ll] += x[b, ll]
                jac[a, b, b, ll] += x[a, ll]
    return jac.reshape(9, 12)


# ---------------------------------------------------------------------------------------------
# reshape / transpose heavy code on a 2-D input
# ---------------------------------------------------------------------------------------------


def _reshapes(x: Any) -> Any:
    # x: (3, 4). t = x.T (4, 3); r = t.reshape(2, 6); out = r[:, ::-1] * 2 + swapaxes(...)**2
    r = x.T.reshape(2, 6)
    s = np.swapaxes(x.reshape(3, 2, 2), 0, 2).reshape(2, 6)
    return r[:, ::-1] * 2 + s**2


def _reshapes_jac(x: np.ndarray) -> np.ndarray:
    jac = np.zeros((2, 6, 12))
    for a in range(2):
        for b in range(6):
            # r[a, c] = x.T.ravel()[6a + c] = x[k % 3, k // 3] with k = 6a + c, c = 5 - b
            k = 6 * a + (5 - b)
            jac[a, b, (k % 3) * 4 + k // 3] += 2.0
            # s = swapaxes(x.reshape(3, 2, 2), 0, 2) has shape (2, 2, 3): s[p, q, i] =
            # x.reshape(3, 2, 2)[i, q, p] = x.ravel()[4i + 2q + p]; flat 6a + b = 6p + 3q + i
            t = 6 * a + b
            p, q, i = t // 6, (t // 3) % 2, t % 3
            src = 4 * i + 2 * q + p
            jac[a, b, src] += 2 * x.ravel()[src]
    return jac.reshape(12, 12)


# ---------------------------------------------------------------------------------------------
# scalar output and an input of higher rank
# ---------------------------------------------------------------------------------------------


def _norm(x: Any) -> Any:
    return np.linalg.norm(x)


def _norm_jac(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x)).reshape(1, -1)


def _cube_rank3(x: Any) -> Any:
    # x: (2, 3, 2); out: (3, 2) = sum over axis 0 of x**3, times the first slice
    return np.sum(x**3, axis=0) * x[0]


def _cube_rank3_jac(x: np.ndarray) -> np.ndarray:
    jac = np.zeros((3, 2, 2, 3, 2))
    s = np.sum(x**3, axis=0)
    for j in range(3):
        for k in range(2):
            for i in range(2):
                jac[j, k, i, j, k] += 3 * x[i, j, k] ** 2 * x[0, j, k]
            jac[j, k, 0, j, k] += s[j, k]
    return jac.reshape(6, 12)


def _cube_rank3_pattern() -> np.ndarray:
    pat = np.zeros((3, 2, 2, 3, 2), dtype=bool)
    for j in range(3):
        for k in range(2):
            pat[j, k, :, j, k] = True
    return pat.reshape(6, 12)


# ---------------------------------------------------------------------------------------------
# an ODE right-hand side written through views of the output (dydt[:n] is a numpy view)
# ---------------------------------------------------------------------------------------------

_N_ODE = 5


def _ode_views(y: Any) -> Any:
    dydt = np.empty_like(y)
    u, v = y[:_N_ODE], y[_N_ODE:]
    du, dv = dydt[:_N_ODE], dydt[_N_ODE:]
    du[:] = -u * v + np.roll(u, 1)
    dv[:] = u * v - v**2
    return dydt


def _ode_views_jac(y: np.ndarray) -> np.ndarray:
    n = _N_ODE
    u, v = y[:n], y[n:]
    jac = np.zeros((2 * n, 2 * n))
    i = np.arange(n)
    jac[i, i] = -v  # d du_i / du_i
    jac[i, (i - 1) % n] += 1.0  # d du_i / du_{i-1} (periodic)
    jac[i, n + i] = -u  # d du_i / dv_i
    jac[n + i, i] = v  # d dv_i / du_i
    jac[n + i, n + i] = u - 2 * v  # d dv_i / dv_i
    return jac


def _ode_views_pattern() -> np.ndarray:
    n = _N_ODE
    i = np.arange(n)
    pat = np.zeros((2 * n, 2 * n), dtype=bool)
    pat[i, i] = pat[i, (i - 1) % n] = pat[i, n + i] = True
    pat[n + i, i] = pat[n + i, n + i] = True
    return pat


# ---------------------------------------------------------------------------------------------
# the catalogue
# ---------------------------------------------------------------------------------------------

_DS, _DSJ = _diffpower(2)
_DC, _DCJ = _diffpower(3)


# ---------------------------------------------------------------------------------------------
# linear algebra and scipy functions with traced operands (issue 13, items 3 and 7)
# ---------------------------------------------------------------------------------------------

_A0 = np.array([[4.0, 1.0, -0.5, 0.2], [0.3, 3.0, 0.7, -0.4], [0.1, -0.6, 5.0, 0.9],
                [0.8, 0.2, -0.3, 4.5]])
_B0 = np.array([1.0, -2.0, 0.5, 3.0])


def _solve_matrix(x: Any) -> Any:
    return np.linalg.solve(_A0 + np.diag(x), _B0)


def _solve_matrix_jac(x: np.ndarray) -> np.ndarray:
    # dX = -A^{-1} dA X with dA = e_j e_j^T: column j is -A^{-1}[:, j] X[j]
    ainv = np.linalg.inv(_A0 + np.diag(x))
    return -ainv * (ainv @ _B0)[None, :]


_A_BATCH = np.stack([_A0[:3, :3], _A0[1:, 1:]])  # (2, 3, 3)


def _solve_rhs_batched(x: Any) -> Any:
    return np.linalg.solve(_A_BATCH, (x**2)[..., None])


def _solve_rhs_batched_jac(x: np.ndarray) -> np.ndarray:
    blocks = [np.linalg.inv(_A_BATCH[k]) * (2 * x[k])[None, :] for k in range(2)]
    return np.block([[blocks[0], np.zeros((3, 3))], [np.zeros((3, 3)), blocks[1]]])


def _det2(x: Any) -> Any:
    return np.linalg.det(x.reshape(3, 2, 2))


def _det2_jac(x: np.ndarray) -> np.ndarray:
    # det [[a, b], [c, d]] = ad - bc: gradient (d, -c, -b, a)
    j = np.zeros((3, 12))
    for k in range(3):
        a, b, c, d = x.reshape(3, 4)[k]
        j[k, 4 * k:4 * k + 4] = [d, -c, -b, a]
    return j


def _inv2(x: Any) -> Any:
    return np.linalg.inv(x.reshape(2, 2, 2) + 2 * np.eye(2))


def _inv2_jac(x: np.ndarray) -> np.ndarray:
    # d(A^{-1})[i, j] / dA[p, q] = -A^{-1}[i, p] A^{-1}[q, j], block by block
    j = np.zeros((8, 8))
    for k, a in enumerate(x.reshape(2, 2, 2) + 2 * np.eye(2)):
        ainv = np.linalg.inv(a)
        j[4 * k:4 * k + 4, 4 * k:4 * k + 4] = -np.einsum("ip,qj->ijpq", ainv, ainv).reshape(4, 4)
    return j


def _chol2(x: Any) -> Any:
    return np.linalg.cholesky(x + 2 * np.eye(2))


def _chol2_jac(x: np.ndarray) -> np.ndarray:
    # reads the lower triangle a = A00, b = A10, c = A11:
    # L = [[sqrt(a), 0], [b / sqrt(a), sqrt(c - b^2 / a)]]
    a, b, c = x[0, 0] + 2, x[1, 0], x[1, 1] + 2
    l11 = np.sqrt(c - b * b / a)
    j = np.zeros((4, 4))  # rows L00, L01, L10, L11; columns A00, A01, A10, A11
    j[0, 0] = 0.5 / np.sqrt(a)
    j[2, 0] = -0.5 * b * a ** -1.5
    j[2, 2] = 1 / np.sqrt(a)
    j[3, 0] = b * b / (a * a) / (2 * l11)
    j[3, 2] = -b / (a * l11)
    j[3, 3] = 0.5 / l11
    return j


def _eigvalsh2(x: Any) -> Any:
    return np.linalg.eigvalsh(x)


def _eigvalsh2_jac(x: np.ndarray) -> np.ndarray:
    # [[a, b], [b, c]] from the lower triangle: (a + c)/2 -+ r, r = sqrt(((a - c)/2)^2 + b^2)
    a, b, c = x[0, 0], x[1, 0], x[1, 1]
    r = np.sqrt(((a - c) / 2) ** 2 + b * b)
    dr = np.array([(a - c) / 4 / r, 0.0, b / r, -(a - c) / 4 / r])
    mean = np.array([0.5, 0.0, 0.0, 0.5])
    return np.stack([mean - dr, mean + dr])


def _logsumexp_rows(x: Any) -> Any:
    import scipy.special

    return scipy.special.logsumexp(x, axis=1)


def _logsumexp_rows_jac(x: np.ndarray) -> np.ndarray:
    w = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)  # softmax of each row
    j = np.zeros((3, 12))
    for i in range(3):
        j[i, 4 * i:4 * i + 4] = w[i]
    return j


_DT = 0.1
_PAIRS = sp.block_diag([sp.csr_array([[-2.0, 1.0], [1.0, -3.0]])] * 4, format="csc")
_EULER = sp.csc_array(sp.eye_array(8) - _DT * _PAIRS)


def _implicit_euler(u: Any) -> Any:
    import scipy.sparse.linalg

    return scipy.sparse.linalg.spsolve(_EULER, u + _DT * u**2)


def _implicit_euler_jac(u: np.ndarray) -> np.ndarray:
    return np.linalg.inv(_EULER.toarray()) * (1 + 2 * _DT * u)[None, :]


_TRI5 = sp.csc_array(sp.diags_array([-1.0, 3.0, -1.0], offsets=[-1, 0, 1], shape=(5, 5)))


def _splu_solve(u: Any) -> Any:
    import scipy.sparse.linalg

    return scipy.sparse.linalg.splu(_TRI5).solve(np.sin(u))


def _splu_solve_jac(u: np.ndarray) -> np.ndarray:
    return np.linalg.inv(_TRI5.toarray()) * np.cos(u)[None, :]


_DATA = np.array([0.3, 1.1, 2.0, 0.7, 1.6, 0.9])


def _norm_fit(theta: Any) -> Any:
    import scipy.stats

    return scipy.stats.norm.logpdf(_DATA, loc=theta[0], scale=theta[1])


def _norm_fit_jac(theta: np.ndarray) -> np.ndarray:
    loc, s = theta
    z = (_DATA - loc) / s
    return np.stack([z / s, -1 / s + z * z / s], axis=1)


def _gamma_fit(theta: Any) -> Any:
    import scipy.stats

    return scipy.stats.gamma.logpdf(_DATA, theta[0] + 1.0, scale=theta[1])


def _gamma_fit_jac(theta: np.ndarray) -> np.ndarray:
    import scipy.special

    a, s = theta[0] + 1.0, theta[1]
    # logpdf = (a - 1) log(d / s) - d / s - gammaln(a) - log(s)
    d_a = np.log(_DATA / s) - scipy.special.digamma(a)
    d_s = -a / s + _DATA / s**2
    return np.stack([d_a, d_s], axis=1)


def _bessel_gammainc(x: Any) -> Any:
    import scipy.special

    return scipy.special.iv(0, x) + scipy.special.gammainc(2.0, x[::-1])


def _bessel_gammainc_jac(x: np.ndarray) -> np.ndarray:
    import scipy.special

    # I0' = I1; d/dx P(2, x) = x e^{-x} / Gamma(2)
    xr = x[::-1]
    return np.diag(scipy.special.i1(x)) + np.fliplr(np.diag(xr * np.exp(-xr)))


SCENARIOS: list[Scenario] = [
    Scenario("diffsquare", _DS, _point((9,), 1), _DSJ, _bidiagonal(9)),
    Scenario("diffcube", _DC, _point((9,), 2), _DCJ, _bidiagonal(9)),
    Scenario("banded_dense", _banded_dense, _point((9,), 3), lambda x: _BAND_A.copy(),
             _BAND_MASK, tags=("linear",)),
    Scenario("banded_sparse", _banded_sparse, _point((8,), 4),
             lambda x: _BAND_SP.toarray(), _BAND_SP.toarray() != 0,
             tags=("linear", "sparse-matrix")),
    Scenario("brusselator_roll", _brusselator(_lap_roll), _point((_NX, _NY, 2), 5),
             _brusselator_jac, _brusselator_pattern(_NX, _NY)),
    Scenario("brusselator_pad_wrap", _brusselator(_lap_pad), _point((_NX, _NY, 2), 6),
             _brusselator_jac, _brusselator_pattern(_NX, _NY)),
    Scenario("brusselator_slices", _brusselator(_lap_slices), _point((_NX, _NY, 2), 7),
             _brusselator_jac, _brusselator_pattern(_NX, _NY)),
    Scenario("arrowhead", _arrowhead, _point((8,), 8), _arrowhead_jac, _arrowhead_pattern(8),
             tags=("dense-row", "dense-column", "reduction")),
    Scenario("burgers_zeros_like", _burgers, _point((10,), 9), _burgers_jac,
             _burgers_pattern(10), tags=("setitem",)),
    Scenario("laplacian_csr_array", _lap_array, _point((_N_LAP,), 10), _lap_jac,
             _tridiagonal(_N_LAP), tags=("sparse-matrix",)),
    Scenario("laplacian_csr_matrix", _lap_matrix, _point((_N_LAP,), 11), _lap_jac,
             _tridiagonal(_N_LAP), tags=("sparse-matrix",)),
    Scenario("scatter_add_assembly", _assembly, _point((_N_NODES,), 12), _assembly_jac,
             _assembly_pattern(), tags=("scatter",)),
    Scenario("sum_coupled", _sum_coupled, _point((6,), 13), _sum_coupled_jac,
             np.ones((6, 6), dtype=bool), tags=("reduction", "dense")),
    Scenario("matmul_constant", _matmul_const, _point((3, 4), 14), _matmul_const_jac,
             _matmul_const_jac(np.ones((3, 4))) != 0, domain=(-1.0, 1.0), tags=("linear",)),
    Scenario("einsum_both_traced", _einsum_both, _point((12,), 15), _einsum_both_jac,
             _einsum_both_jac(np.ones(12)) != 0),
    Scenario("matmul_gram", _matmul_self, _point((3, 4), 16), _matmul_self_jac,
             _matmul_self_jac(np.ones((3, 4))) != 0),
    Scenario("reshape_transpose", _reshapes, _point((3, 4), 17), _reshapes_jac,
             _reshapes_jac(np.ones((3, 4))) != 0),
    Scenario("norm_scalar_output", _norm, _point((3, 4), 18), _norm_jac,
             np.ones((1, 12), dtype=bool), tags=("reduction",)),
    Scenario("rank3_input", _cube_rank3, _point((2, 3, 2), 19), _cube_rank3_jac,
             _cube_rank3_pattern(), tags=("reduction",)),
    Scenario("ode_views", _ode_views, _point((2 * _N_ODE,), 20), _ode_views_jac,
             _ode_views_pattern(), tags=("views",)),
    # linear algebra and scipy functions with traced operands
    Scenario("solve_traced_matrix", _solve_matrix, _point((4,), 21), _solve_matrix_jac,
             np.ones((4, 4), dtype=bool), tags=("linalg",)),
    Scenario("solve_traced_rhs_batched", _solve_rhs_batched, _point((2, 3), 22),
             _solve_rhs_batched_jac, _solve_rhs_batched_jac(np.ones((2, 3))) != 0,
             tags=("linalg",)),
    Scenario("det_batched_2x2", _det2, _point((12,), 23), _det2_jac,
             _det2_jac(np.ones(12)) != 0, tags=("linalg",)),
    Scenario("inv_batched_2x2", _inv2, _point((8,), 24), _inv2_jac,
             _inv2_jac(_point((8,), 24)) != 0, tags=("linalg",)),
    Scenario("cholesky_reads_lower", _chol2, _point((2, 2), 25), _chol2_jac,
             _chol2_jac(_point((2, 2), 25)) != 0, tags=("linalg",)),
    Scenario("eigvalsh_2x2", _eigvalsh2, _point((2, 2), 26), _eigvalsh2_jac,
             _eigvalsh2_jac(_point((2, 2), 26)) != 0, tags=("linalg",)),
    Scenario("logsumexp_rows", _logsumexp_rows, _point((3, 4), 27), _logsumexp_rows_jac,
             _logsumexp_rows_jac(np.ones((3, 4))) != 0, tags=("special", "reduction")),
    Scenario("implicit_euler_spsolve", _implicit_euler, _point((8,), 28), _implicit_euler_jac,
             np.kron(np.eye(4), np.ones((2, 2))) != 0, tags=("linalg", "sparse-matrix")),
    Scenario("splu_solve_tridiagonal", _splu_solve, _point((5,), 29), _splu_solve_jac,
             np.ones((5, 5), dtype=bool), tags=("linalg", "sparse-matrix")),
    Scenario("norm_logpdf_fit", _norm_fit, _point((2,), 30), _norm_fit_jac,
             np.ones((6, 2), dtype=bool), tags=("stats",)),
    Scenario("gamma_logpdf_fit", _gamma_fit, _point((2,), 31), _gamma_fit_jac,
             np.ones((6, 2), dtype=bool), tags=("stats",)),
    Scenario("bessel_gammainc", _bessel_gammainc, _point((5,), 32), _bessel_gammainc_jac,
             (np.eye(5) + np.fliplr(np.eye(5))) != 0, tags=("special",)),
]


def by_name(name: str) -> Scenario:
    """The scenario called ``name``."""
    for s in SCENARIOS:
        if s.name == name:
            return s
    raise KeyError(f"no scenario {name!r}; expected one of {[s.name for s in SCENARIOS]}")


def scenario_params(tag: str | None = None) -> list[Any]:
    """``pytest.param(scenario, id=name)`` for every scenario (optionally with ``tag``)."""
    import pytest

    return [pytest.param(s, id=s.name) for s in SCENARIOS if tag is None or tag in s.tags]
