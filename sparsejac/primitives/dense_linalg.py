"""Dense matrix functions of traced operands: solve, inverse, determinants, factorisations.

Every primitive here is a *batched matrix function*: its operands have shape
``(*batch, *core_k)`` and its output ``(*batch, *core_out)`` with the same batch dimensions
(the handlers broadcast them first), and output block ``b`` depends on operand block ``b``
only. Each states its value (``impl``, numpy's or scipy's own function) and its directional
derivative, a JVP *formula* ``tangent(node, k, vals, out, t)`` that maps a stack of tangents
``(P, *batch, *core_k)`` of operand k to ``(P, *batch, *core_out)``. The local Jacobian
(``linearize``) is that formula applied to the unit tangents of one block, so its structure is
block diagonal over the batch, dense inside a block except where :meth:`MatrixFunction.mask`
states structural zeros (a triangle that is never read, the columns a QR column does not depend
on); pattern, JVP and VJP are derived from it (:mod:`sparsejac.primitives.derive`).

The formulas (``F ∘ X`` is the elementwise product, ``S(t)`` the symmetric matrix that a
function reading one triangle sees):

=================  =============================================================================
solve ``X=A⁻¹B``    ``dX = A⁻¹ (dB − dA X)``
inv                 ``dA⁻¹ = −A⁻¹ dA A⁻¹``
det                 ``d det = tr(adj(A) dA)`` (the adjugate from the SVD, so singular A is fine)
slogdet             ``d log|det| = tr(A⁻¹ dA)``; the sign has zero derivative
cholesky ``A=LLᵀ``  ``dL = L Φ(L⁻¹ S(dA) L⁻ᵀ)``, Φ: strictly lower part plus half the diagonal
eigh                ``dw_k = v_kᵀ S v_k``, ``dV = V (F ∘ VᵀSV)``, ``F_ak = 1/(w_k − w_a)``
svd                 ``ds_k = u_kᵀ dA v_k``; ``dU``, ``dV`` for distinct nonzero singular values
pinv                ``dP = −P dA P + PPᵀ dAᵀ (I − AP) + (I − PA) dAᵀ PᵀP`` (constant rank)
qr                  ``C = Qᵀ dA R⁻¹``, ``Ω = tril(C,−1) − tril(C,−1)ᵀ``, ``dR = (C − Ω) R``,
                    ``dQ = dA R⁻¹ − Q (C − Ω)``
=================  =============================================================================

Derivatives that do not exist are not invented: the eigenvectors' derivative at coincident
eigenvalues, and the singular vectors' at coincident or zero singular values, are NaN (the
function is not differentiable there); ``np.linalg.svd`` vectors of a non-square matrix with
``full_matrices=True`` (not unique) and ``hermitian=True`` forms are refused by the handlers.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from sparsejac.primitives.core import LocalJac, Primitive
from sparsejac.tracing.program import Node

__all__ = [
    "CHOLESKY",
    "DET",
    "EIGH_VALUES",
    "EIGH_VECTORS",
    "INV",
    "LOG_ABS_DET",
    "LSTSQ",
    "LSTSQ_RESIDUALS",
    "MATRIX_RANK",
    "PINV",
    "QR_Q",
    "QR_R",
    "SLOGDET_SIGN",
    "SOLVE",
    "SVD_U",
    "SVD_VALUES",
    "SVD_VH",
    "MatrixFunction",
]


def _mT(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


def _inv(a: np.ndarray) -> np.ndarray:
    """``inv(a)``, NaN for a singular block (its derivative does not exist)."""
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        out = np.full(np.shape(a), np.nan)
        for idx in np.ndindex(*np.shape(a)[:-2]):
            with contextlib.suppress(np.linalg.LinAlgError):
                out[idx] = np.linalg.inv(a[idx])
        return out


def sym_from_triangle(t: np.ndarray, lower: bool) -> np.ndarray:
    """The symmetric matrix a function that reads one triangle of ``t`` sees."""
    tri = np.tril(t) if lower else np.triu(t)
    strict = np.tril(t, -1) if lower else np.triu(t, 1)
    return np.asarray(tri + _mT(strict))


def _triangle_mask(n: int, lower: bool) -> np.ndarray:
    """(1, n*n) mask of the operand elements in the triangle that is read."""
    tri = np.tril(np.ones((n, n), dtype=bool)) if lower else np.triu(np.ones((n, n), dtype=bool))
    return tri.reshape(1, n * n)


class MatrixFunction(Primitive):
    """A batched matrix function described by its JVP formula (see the module docstring).

    ``node.params["batch"]`` is the batch shape. Subclasses define ``impl``, ``tangent`` and,
    for structural zeros inside a block, ``mask``; ``reads(node, k)`` lists the operands (and
    ``"out"``) the derivative with respect to operand k reads, so that it is a constant of the
    prepared program when they are all constants.
    """

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """The derivative in the tangent directions ``t`` of operand k: ``(P, *out.shape)``."""
        raise NotImplementedError

    def mask(self, node: Node, k: int) -> np.ndarray | None:
        """Structural nonzeros of one block ``(out_core_size, in_core_size)``; None: dense."""
        return None

    def reads(self, node: Node, k: int) -> tuple[int | str, ...]:
        """The operands (indices, ``"out"``) the derivative with respect to operand k reads."""
        return (*range(len(node.inputs)), "out")

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """Block-diagonal local Jacobians: the tangent formula on unit tangents of a block."""
        batch: tuple[int, ...] = node.params["batch"]
        nb = int(np.prod(batch, dtype=np.int64))
        oc = int(np.prod(node.out.shape[len(batch):], dtype=np.int64))
        res: list[LocalJac | None] = []
        for k, var in enumerate(node.inputs):
            if not var.active:
                res.append(None)
                continue
            ic = int(np.prod(var.shape[len(batch):], dtype=np.int64))
            m = self.mask(node, k)
            if m is None:
                r = np.repeat(np.arange(oc, dtype=np.int64), ic)
                c = np.tile(np.arange(ic, dtype=np.int64), oc)
            else:
                r, c = (a.astype(np.int64) for a in np.nonzero(m))
            base = np.arange(nb, dtype=np.int64)[:, None]
            rows = (base * oc + r).ravel()
            cols = (base * ic + c).ravel()
            fn = functools.partial(_block_values, self, node, k, r, c)
            rd = self.reads(node, k)
            if all(x != "out" and node.inputs[int(x)].is_const for x in rd):
                vals = [v.value for v in node.inputs]
                res.append(LocalJac(rows, cols, const=fn(vals, node.out.value)))
            else:
                res.append(LocalJac(rows, cols, dyn=fn))
        return res


def _block_values(prim: MatrixFunction, node: Node, k: int, r: np.ndarray, c: np.ndarray,
                  vals: Sequence[Any], out: Any) -> np.ndarray:
    batch: tuple[int, ...] = node.params["batch"]
    nb = int(np.prod(batch, dtype=np.int64))
    core = node.inputs[k].shape[len(batch):]
    ic = int(np.prod(core, dtype=np.int64))
    basis = np.eye(ic).reshape((ic, *(1,) * len(batch), *core))
    t = np.broadcast_to(basis, (ic, *batch, *core))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        y = np.asarray(prim.tangent(node, k, vals, out, t), dtype=np.float64)
    oc = y.size // (ic * nb) if ic * nb else 0
    y = y.reshape(ic, nb, oc).transpose(1, 2, 0)
    return np.ascontiguousarray(y[:, r, c]).ravel()


# -- solve and inverse ---------------------------------------------------------------------


class Solve(MatrixFunction):
    """``X = solve(A, B)`` with A ``(*batch, n, n)`` and B ``(*batch, n, k)``.

    ``params["scipy"]``: keyword arguments of ``scipy.linalg.solve`` that compute the value
    (``A`` is then the matrix scipy reads); ``params["transposed"]``: solve ``Aᵀ X = B``.
    """

    name = "solve"

    def impl(self, a: Any, b: Any, *, scipy: Any = None, **params: Any) -> np.ndarray:
        """``np.linalg.solve`` (or ``scipy.linalg.solve``)."""
        if scipy is not None:
            from scipy.linalg import solve

            return np.asarray(solve(a, b, **scipy))
        return np.asarray(np.linalg.solve(a, b))

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """``-A⁻¹ dA X`` (k = 0) or ``A⁻¹ dB`` (k = 1)."""
        return _solve_tangent(np.asarray(vals[0], dtype=np.float64), out, k, t,
                              bool(node.params.get("transposed")))

    def mask(self, node: Node, k: int) -> np.ndarray | None:
        """Column c of X depends on column c of B only; a triangular A has a triangular inverse.

        For ``params["triangle"]`` (``"upper"``/``"lower"``: A is read as triangular) the mask
        is the nonzeros of the derivative at a random triangular matrix: products of exact
        zeros are exact zeros, so that is the structure.
        """
        n, nrhs = node.out.shape[-2:]
        tri = node.params.get("triangle")
        if tri is None:
            if k == 0:
                return None
            same = np.equal.outer(np.arange(nrhs), np.arange(nrhs))
            return np.broadcast_to(same[None, :, None, :], (n, nrhs, n, nrhs)).reshape(
                n * nrhs, n * nrhs)
        transposed = bool(node.params.get("transposed"))
        rng = np.random.default_rng(0)
        a = rng.uniform(0.5, 1.0, (n, n)) + n * np.eye(n)
        a = np.triu(a) if tri == "upper" else np.tril(a)
        b = rng.uniform(0.5, 1.0, (n, nrhs))
        x = np.linalg.solve(_mT(a) if transposed else a, b)
        core = (n, n) if k == 0 else (n, nrhs)
        ic = core[0] * core[1]
        y = _solve_tangent(a, x, k, np.eye(ic).reshape(ic, *core), transposed)
        return np.asarray(y.reshape(ic, n * nrhs).T != 0)

    def reads(self, node: Node, k: int) -> tuple[int | str, ...]:
        """dX/dB reads A only (a constant when A is)."""
        return (0, "out") if k == 0 else (0,)


def _solve_tangent(a: np.ndarray, x: np.ndarray, k: int, t: np.ndarray,
                   transposed: bool) -> np.ndarray:
    if transposed:
        a = _mT(a)
        if k == 0:
            t = _mT(t)
    ainv = _inv(a)
    if k == 0:
        return np.asarray(-(ainv @ (t @ x)))
    return np.asarray(ainv @ t)


class Inv(MatrixFunction):
    """``np.linalg.inv``."""

    name = "inv"

    def impl(self, a: Any, **params: Any) -> np.ndarray:
        """``np.linalg.inv``."""
        return np.asarray(np.linalg.inv(a))

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """``-A⁻¹ dA A⁻¹``."""
        return np.asarray(-(out @ t @ out))


# -- determinants --------------------------------------------------------------------------


def adjugate(a: np.ndarray) -> np.ndarray:
    """``adj(a)`` (batched) from the SVD: exact also for singular matrices.

    ``a = U S Vᵀ`` gives ``adj(a) = det(V) V adj(S) det(U) Uᵀ`` with
    ``adj(S)_ii = prod_{j≠i} s_j`` (products from both sides, no division).
    """
    u, s, vh = np.linalg.svd(a)
    n = s.shape[-1]
    left = np.concatenate([np.ones((*s.shape[:-1], 1)), np.cumprod(s, axis=-1)[..., :-1]],
                          axis=-1)
    right = np.flip(np.cumprod(np.flip(s, -1), axis=-1), -1)
    right = np.concatenate([right[..., 1:], np.ones((*s.shape[:-1], 1))], axis=-1)
    adj_s = left * right if n else s
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return np.asarray(sign[..., None, None] * (_mT(vh) * adj_s[..., None, :]) @ _mT(u))


class Det(MatrixFunction):
    """``np.linalg.det``."""

    name = "det"

    def impl(self, a: Any, **params: Any) -> np.ndarray:
        """``np.linalg.det``."""
        return np.asarray(np.linalg.det(a))

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """``tr(adj(A) dA)``."""
        adj = adjugate(np.asarray(vals[0], dtype=np.float64))
        return np.asarray(np.einsum("...ji,p...ij->p...", adj, t))

    def reads(self, node: Node, k: int) -> tuple[int | str, ...]:
        """The matrix only."""
        return (0,)


class LogAbsDet(MatrixFunction):
    """``np.linalg.slogdet(a)[1]``."""

    name = "logabsdet"

    def impl(self, a: Any, **params: Any) -> np.ndarray:
        """``np.linalg.slogdet(a).logabsdet``."""
        return np.asarray(np.linalg.slogdet(a)[1])

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """``tr(A⁻¹ dA)``."""
        ainv = _inv(np.asarray(vals[0], dtype=np.float64))
        return np.asarray(np.einsum("...ji,p...ij->p...", ainv, t))

    def reads(self, node: Node, k: int) -> tuple[int | str, ...]:
        """The matrix only."""
        return (0,)


class SlogdetSign(Primitive):
    """``np.linalg.slogdet(a)[0]``: piecewise constant, zero derivative."""

    name = "slogdet_sign"
    zero_derivative = True

    def impl(self, a: Any, **params: Any) -> np.ndarray:
        """``np.linalg.slogdet(a).sign``."""
        return np.asarray(np.linalg.slogdet(a)[0])


class MatrixRank(Primitive):
    """``np.linalg.matrix_rank``: an integer, zero derivative."""

    name = "matrix_rank"
    zero_derivative = True

    def impl(self, a: Any, *, tol: Any = None, hermitian: bool = False,
             **params: Any) -> np.ndarray:
        """``np.linalg.matrix_rank``."""
        return np.asarray(np.linalg.matrix_rank(a, tol=tol, hermitian=hermitian))


# -- cholesky ------------------------------------------------------------------------------


class Cholesky(MatrixFunction):
    """``np.linalg.cholesky(a, upper=...)``: reads the lower (upper) triangle of ``a``."""

    name = "cholesky"

    def impl(self, a: Any, *, upper: bool = False, **params: Any) -> np.ndarray:
        """``np.linalg.cholesky``."""
        return np.asarray(np.linalg.cholesky(a, upper=upper))

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """``dL = L Φ(L⁻¹ S(dA) L⁻ᵀ)``."""
        upper = node.params["upper"]
        low = _mT(out) if upper else out
        s = sym_from_triangle(t, lower=not upper)
        linv = _inv(low)
        x = linv @ s @ _mT(linv)
        n = low.shape[-1]
        phi = np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)
        dl = low @ (x * phi)
        return _mT(dl) if upper else dl

    def mask(self, node: Node, k: int) -> np.ndarray | None:
        """``L[i,j]`` depends on ``A[p,q]`` (p ≥ q) iff q ≤ j and (p ≤ j or p = i)."""
        n = node.out.shape[-1]
        i, j, p, q = np.ix_(*(np.arange(n),) * 4)
        m = (i >= j) & (p >= q) & (q <= j) & ((p <= j) | (p == i))
        if node.params["upper"]:  # U = Lᵀ from the upper triangle: transpose both sides
            m = m.transpose(1, 0, 3, 2)
        return np.asarray(m.reshape(n * n, n * n))

    def reads(self, node: Node, k: int) -> tuple[int | str, ...]:
        """The factor only."""
        return ("out",)


# -- symmetric eigenproblem ----------------------------------------------------------------


def _eigh(a: Any, lower: bool) -> tuple[np.ndarray, np.ndarray]:
    w, v = np.linalg.eigh(np.asarray(a, dtype=np.float64), UPLO="L" if lower else "U")
    return w, v


class EighValues(MatrixFunction):
    """``np.linalg.eigh(a, UPLO)[0]`` (and ``eigvalsh``): reads one triangle."""

    name = "eigh_values"

    def impl(self, a: Any, *, lower: bool = True, vectors: bool = True,
             **params: Any) -> np.ndarray:
        """Eigenvalues in ascending order (from ``eigh`` or ``eigvalsh``, as f called it)."""
        uplo = "L" if lower else "U"
        if vectors:
            return np.asarray(np.linalg.eigh(a, UPLO=uplo)[0])  # type: ignore[call-overload]
        return np.asarray(np.linalg.eigvalsh(a, UPLO=uplo))  # type: ignore[call-overload]

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """``dw_k = v_kᵀ S(dA) v_k``."""
        lower = node.params["lower"]
        _, v = _eigh(vals[0], lower)
        s = sym_from_triangle(t, lower)
        return np.asarray(np.einsum("...ik,p...ij,...jk->p...k", v, s, v))

    def mask(self, node: Node, k: int) -> np.ndarray | None:
        """Only the triangle that is read."""
        n = node.out.shape[-1]
        return np.broadcast_to(_triangle_mask(n, node.params["lower"]), (n, n * n))

    def reads(self, node: Node, k: int) -> tuple[int | str, ...]:
        """The matrix only."""
        return (0,)


class EighVectors(MatrixFunction):
    """``np.linalg.eigh(a, UPLO)[1]``; NaN derivative at coincident eigenvalues."""

    name = "eigh_vectors"

    def impl(self, a: Any, *, lower: bool = True, **params: Any) -> np.ndarray:
        """Eigenvectors (columns)."""
        return np.asarray(np.linalg.eigh(a, UPLO="L" if lower else "U")[1])

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """``dV = V (F ∘ Vᵀ S(dA) V)``, ``F_ak = 1/(w_k − w_a)`` (NaN where they coincide)."""
        lower = node.params["lower"]
        w, _ = _eigh(vals[0], lower)
        v = np.asarray(out, dtype=np.float64)
        gap = w[..., None, :] - w[..., :, None]  # [a, k] = w_k - w_a
        n = w.shape[-1]
        off = ~np.eye(n, dtype=bool)
        f = np.where(off, 1.0 / np.where(gap == 0, np.nan, gap), 0.0)
        s = sym_from_triangle(t, lower)
        return np.asarray(v @ (f * (_mT(v) @ s @ v)))

    def mask(self, node: Node, k: int) -> np.ndarray | None:
        """Only the triangle that is read."""
        n = node.out.shape[-1]
        return np.broadcast_to(_triangle_mask(n, node.params["lower"]), (n * n, n * n))

    def reads(self, node: Node, k: int) -> tuple[int | str, ...]:
        """The matrix and the vectors."""
        return (0, "out")


# -- singular value decomposition ------------------------------------------------------------


def _thin_svd(a: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    u, s, vh = np.linalg.svd(np.asarray(a, dtype=np.float64), full_matrices=False)
    return u, s, vh


def svd_vector_tangents(a: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(dU, dVh)`` of the thin SVD of ``a`` in the directions ``t`` ``(P, *a.shape)``.

    For m ≥ n (``F_ij = 1/(s_j² − s_i²)``, NaN where singular values coincide):
    ``dU = U (F ∘ (dP S + S dPᵀ)) + (I − UUᵀ) dA V S⁻¹``, ``dV = V (F ∘ (S dP + dPᵀ S))``
    with ``dP = Uᵀ dA V``; for m < n, the same for ``aᵀ = V S Uᵀ`` with the roles of U and V
    swapped (the vectors are numpy's for ``a``, so the signs match the values).
    """
    u, s, vh = _thin_svd(a)
    if a.shape[-2] < a.shape[-1]:
        du_t, dvh_t = _svd_vector_tangents(_mT(vh), s, _mT(u), _mT(t))
        return _mT(dvh_t), _mT(du_t)
    return _svd_vector_tangents(u, s, vh, t)


def _svd_vector_tangents(u: np.ndarray, s: np.ndarray, vh: np.ndarray, t: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    m, n = u.shape[-2], vh.shape[-1]
    v = _mT(vh)
    dp = _mT(u) @ t @ v
    s2 = s * s
    gap = s2[..., None, :] - s2[..., :, None]  # [i, j] = s_j² - s_i²
    off = ~np.eye(n, dtype=bool)
    f = np.where(off, 1.0 / np.where(gap == 0, np.nan, gap), 0.0)
    sd = s[..., None, :]  # right-multiplication by S scales columns
    sl = s[..., :, None]  # left-multiplication scales rows
    du = u @ (f * (dp * sd + sl * _mT(dp)))
    if m > n:
        inv_s = np.where(s == 0, np.nan, 1.0 / np.where(s == 0, 1.0, s))
        proj = t @ v - u @ (_mT(u) @ t @ v)
        du = du + proj * inv_s[..., None, :]
    dv = v @ (f * (sl * dp + _mT(dp) * sd))
    return du, _mT(dv)


class SvdValues(MatrixFunction):
    """Singular values (``svd(..., compute_uv=False)``, ``svdvals``): descending."""

    name = "svd_values"

    def impl(self, a: Any, **params: Any) -> np.ndarray:
        """``np.linalg.svd(a, compute_uv=False)``."""
        return np.asarray(np.linalg.svd(a, compute_uv=False))

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """``ds_k = u_kᵀ dA v_k``."""
        u, _, vh = _thin_svd(vals[0])
        return np.asarray(np.einsum("...ik,p...ij,...kj->p...k", u, t, vh))

    def reads(self, node: Node, k: int) -> tuple[int | str, ...]:
        """The matrix only."""
        return (0,)


def _pad_nan(d: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``d`` in the leading corner of a NaN array of ``shape`` (last two axes padded)."""
    if d.shape[-2:] == shape[-2:]:
        return d
    out = np.full((*d.shape[:-2], *shape[-2:]), np.nan)
    out[..., :d.shape[-2], :d.shape[-1]] = d
    return out


class SvdU(MatrixFunction):
    """The left singular vectors ``U``.

    With ``full_matrices=True`` and m > n, the columns beyond the n-th span the orthogonal
    complement of the range and are not unique: their derivative is NaN.
    """

    name = "svd_u"

    def impl(self, a: Any, *, full: bool = False, **params: Any) -> np.ndarray:
        """``np.linalg.svd(a, full_matrices=full)[0]``."""
        return np.asarray(np.linalg.svd(a, full_matrices=full)[0])

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """See :func:`svd_vector_tangents`."""
        du = svd_vector_tangents(np.asarray(vals[0], dtype=np.float64), t)[0]
        return _pad_nan(du, node.out.shape)

    def reads(self, node: Node, k: int) -> tuple[int | str, ...]:
        """The matrix only."""
        return (0,)


class SvdVh(SvdU):
    """The right singular vectors ``Vh`` (rows beyond the m-th of a full Vh: NaN derivative)."""

    name = "svd_vh"

    def impl(self, a: Any, *, full: bool = False, **params: Any) -> np.ndarray:
        """``np.linalg.svd(a, full_matrices=full)[2]``."""
        return np.asarray(np.linalg.svd(a, full_matrices=full)[2])

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """See :func:`svd_vector_tangents`."""
        dvh = svd_vector_tangents(np.asarray(vals[0], dtype=np.float64), t)[1]
        return _pad_nan(dvh, node.out.shape)


# -- pseudo-inverse ------------------------------------------------------------------------


def pinv_tangent(a: np.ndarray, p: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``dP = −P dA P + PPᵀ dAᵀ (I − AP) + (I − PA) dAᵀ PᵀP`` (Golub and Pereyra, 1973)."""
    m, n = a.shape[-2:]
    tt = _mT(t)
    return np.asarray(-(p @ t @ p) + (p @ _mT(p)) @ tt @ (np.eye(m) - a @ p)
                      + (np.eye(n) - p @ a) @ tt @ (_mT(p) @ p))


class Pinv(MatrixFunction):
    """``np.linalg.pinv``: the derivative where the rank is locally constant.

    ``hermitian=True`` reads the lower triangle only (numpy's ``eigh`` path).
    """

    name = "pinv"

    def impl(self, a: Any, *, kwargs: Any = None, **params: Any) -> np.ndarray:
        """``np.linalg.pinv(a, **kwargs)``."""
        return np.asarray(np.linalg.pinv(a, **(kwargs or {})))

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """See :func:`pinv_tangent`."""
        a = np.asarray(vals[0], dtype=np.float64)
        if (node.params.get("kwargs") or {}).get("hermitian"):
            a = sym_from_triangle(a, lower=True)
            t = sym_from_triangle(t, lower=True)
        return pinv_tangent(a, np.asarray(out, dtype=np.float64), t)

    def mask(self, node: Node, k: int) -> np.ndarray | None:
        """Only the lower triangle for ``hermitian=True``."""
        if not (node.params.get("kwargs") or {}).get("hermitian"):
            return None
        n = node.inputs[0].shape[-1]
        return np.broadcast_to(_triangle_mask(n, True), (n * n, n * n))


class LstsqSolution(MatrixFunction):
    """``np.linalg.lstsq(a, b, rcond)[0]`` for a 2-D ``b``: ``X = pinv(A) B``."""

    name = "lstsq"

    def impl(self, a: Any, b: Any, *, rcond: Any = None, **params: Any) -> np.ndarray:
        """``np.linalg.lstsq``."""
        return np.asarray(np.linalg.lstsq(a, b, rcond=rcond)[0])

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """``dP B`` (k = 0) or ``P dB`` (k = 1), P the pseudo-inverse with lstsq's cutoff."""
        a = np.asarray(vals[0], dtype=np.float64)
        p = np.linalg.pinv(a, rcond=node.params["cutoff"])
        if k == 0:
            return pinv_tangent(a, p, t) @ np.asarray(vals[1], dtype=np.float64)
        return np.asarray(p @ t)

    def mask(self, node: Node, k: int) -> np.ndarray | None:
        """Column c of X depends on column c of B only."""
        if k == 0:
            return None
        n, nrhs = node.out.shape[-2:]
        m = node.inputs[1].shape[-2]
        same = np.equal.outer(np.arange(nrhs), np.arange(nrhs))
        return np.broadcast_to(same[None, :, None, :], (n, nrhs, m, nrhs)).reshape(
            n * nrhs, m * nrhs)


class LstsqResiduals(MatrixFunction):
    """``np.linalg.lstsq(a, b)[1]`` (full column rank, m > n): ``‖B − AX‖²`` per column.

    ``d‖r‖² = 2 rᵀ (dB − dA X)``: the change of X does not contribute (``r ⊥ range(A)``).
    """

    name = "lstsq_residuals"

    def impl(self, a: Any, b: Any, *, rcond: Any = None, **params: Any) -> np.ndarray:
        """``np.linalg.lstsq(a, b, rcond)[1]``."""
        return np.asarray(np.linalg.lstsq(a, b, rcond=rcond)[1])

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """``−2 rᵀ dA X`` (k = 0) or ``2 rᵀ dB`` (k = 1), column by column."""
        a = np.asarray(vals[0], dtype=np.float64)
        b = np.asarray(vals[1], dtype=np.float64)
        x = np.linalg.lstsq(a, b, rcond=node.params["rcond"])[0]
        r = b - a @ x
        if k == 0:
            return np.asarray(-2.0 * np.einsum("ic,pij,jc->pc", r, t, x))
        return np.asarray(2.0 * np.einsum("ic,pic->pc", r, t))

    def mask(self, node: Node, k: int) -> np.ndarray | None:
        """Column c depends on column c of B only."""
        if k == 0:
            return None
        m, nrhs = node.inputs[1].shape
        same = np.equal.outer(np.arange(nrhs), np.arange(nrhs))
        return np.broadcast_to(same[:, None, :], (nrhs, m, nrhs)).reshape(nrhs, m * nrhs)


# -- QR ----------------------------------------------------------------------------------------


def qr_tangents(q: np.ndarray, r: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(dQ, dR)`` of the reduced QR ``A = QR`` (any m, n; full rank) in directions ``t``."""
    m, n = t.shape[-2:]
    kk = min(m, n)
    r1 = r[..., :kk, :kk]
    r1inv = _inv(r1)
    t1 = t[..., :, :kk]
    c = _mT(q) @ t1 @ r1inv
    low = np.tril(c, -1)
    omega = low - _mT(low)
    dr1 = (c - omega) @ r1
    dq = t1 @ r1inv - q @ (c - omega)
    if n > kk:
        dr2 = _mT(q) @ t[..., :, kk:] - omega @ r[..., :, kk:]
        dr = np.concatenate([dr1, np.broadcast_to(dr2, (*dr1.shape[:-1], n - kk))], axis=-1)
    else:
        dr = dr1
    return dq, dr


def _qr_column_deps(m: int, n: int) -> np.ndarray:
    """``D[i, q]``: column i of Q depends on column q of A (all rows)."""
    kk = min(m, n)
    i, q = np.ix_(np.arange(kk), np.arange(n))
    d = q <= i
    if m <= n:  # Q square: its last column is fixed by the others (up to a sign)
        d[kk - 1] = q[0] <= kk - 2
    return np.asarray(d)


class QrQ(MatrixFunction):
    """``np.linalg.qr(a)`` ``Q``.

    Reduced, or ``complete``: the columns beyond the n-th of an m × n matrix with m > n are not
    unique, their derivative is NaN.
    """

    name = "qr_q"

    def impl(self, a: Any, *, complete: bool = False, **params: Any) -> np.ndarray:
        """``np.linalg.qr(a, mode).Q``."""
        return np.asarray(np.linalg.qr(a, mode="complete" if complete else "reduced")[0])

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """See :func:`qr_tangents`."""
        q, r = np.linalg.qr(np.asarray(vals[0], dtype=np.float64))
        return _pad_nan(qr_tangents(q, r, t)[0], node.out.shape)

    def mask(self, node: Node, k: int) -> np.ndarray | None:
        """``Q[:, i]`` depends on the columns ``q ∈ D(i)`` of A (extra columns: all)."""
        m, n = node.inputs[0].shape[-2:]
        d = _qr_column_deps(m, n)  # (kk, n)
        cols = node.out.shape[-1]
        if cols > d.shape[0]:
            d = np.concatenate([d, np.ones((cols - d.shape[0], n), dtype=bool)])
        full = np.broadcast_to(d[None, :, None, :], (m, cols, m, n))
        return full.reshape(m * cols, m * n)

    def reads(self, node: Node, k: int) -> tuple[int | str, ...]:
        """The matrix only."""
        return (0,)


class QrR(QrQ):
    """``np.linalg.qr(a)`` ``R`` (also ``mode="r"``)."""

    name = "qr_r"

    def impl(self, a: Any, *, complete: bool = False, **params: Any) -> np.ndarray:
        """``np.linalg.qr(a, mode="r")``."""
        return np.asarray(np.linalg.qr(a, mode="r"))

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """See :func:`qr_tangents`."""
        q, r = np.linalg.qr(np.asarray(vals[0], dtype=np.float64))
        return qr_tangents(q, r, t)[1]

    def mask(self, node: Node, k: int) -> np.ndarray | None:
        """``R[i, j]`` (i ≤ j) depends on the columns ``D(i) ∪ {j}`` of A."""
        m, n = node.inputs[0].shape[-2:]
        d = _qr_column_deps(m, n)
        kk = d.shape[0]
        i, j, q = np.ix_(np.arange(kk), np.arange(n), np.arange(n))
        cols = (i <= j) & (d[:, None, :] | (q == j))
        full = np.broadcast_to(cols[:, :, None, :], (kk, n, m, n))
        return full.reshape(kk * n, m * n)


SOLVE = Solve()
INV = Inv()
DET = Det()
LOG_ABS_DET = LogAbsDet()
SLOGDET_SIGN = SlogdetSign()
MATRIX_RANK = MatrixRank()
CHOLESKY = Cholesky()
EIGH_VALUES = EighValues()
EIGH_VECTORS = EighVectors()
SVD_VALUES = SvdValues()
SVD_U = SvdU()
SVD_VH = SvdVh()
PINV = Pinv()
LSTSQ = LstsqSolution()
LSTSQ_RESIDUALS = LstsqResiduals()
QR_Q = QrQ()
QR_R = QrR()
