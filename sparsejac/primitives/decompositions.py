"""Matrix decompositions of traced operands: eigh, svd, pinv, lstsq, qr.

Batched matrix functions (:class:`~sparsejac.primitives.dense_linalg.MatrixFunction`): each
states its value (numpy's own function) and its JVP formula; the local Jacobian is the formula
on the unit tangents of one block (see :mod:`sparsejac.primitives.dense_linalg` for the
formulas and for what is NaN where a derivative does not exist).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sparsejac.primitives.core import floats
from sparsejac.primitives.dense_linalg import (
    MatrixFunction,
    _inv,
    _mT,
    _triangle_mask,
    sym_from_triangle,
)
from sparsejac.tracing.program import Node

__all__ = [
    "EIGH_VALUES",
    "EIGH_VECTORS",
    "LSTSQ",
    "LSTSQ_RESIDUALS",
    "PINV",
    "QR_Q",
    "QR_R",
    "SVD_U",
    "SVD_VALUES",
    "SVD_VH",
    "pinv_tangent",
    "qr_tangents",
    "svd_vector_tangents",
]


# -- symmetric eigenproblem ----------------------------------------------------------------


def _eigh(a: Any, lower: bool) -> tuple[np.ndarray, np.ndarray]:
    w, v = np.linalg.eigh(np.asarray(a, dtype=np.float64), UPLO="L" if lower else "U")
    return w, v


def _cluster_mean(d: np.ndarray, w: np.ndarray, positive: bool = False) -> np.ndarray:
    """Each eigenvalue's derivative ``d`` (``(p, ..., n)``) averaged over its cluster in ``w``.

    Eigenvalues that coincide (to 16 units in the last place of the largest) have no
    derivative each (``eigvalsh(diag(1 + x))`` is
    ``min(1 + x0, 1 + x1)`` at a tie), and ``v_kᵀ dA v_k`` depends on the basis LAPACK
    returns for their eigenspace. Their mean is differentiable, with the mean of those
    products (``tr(Q_cᵀ dA Q_c) / k``, the same in every basis), and each takes it: the tie
    convention of ``np.minimum`` (half of each side) and exact for every symmetric function
    of the cluster (its sum, its mean). Distinct eigenvalues keep their own. With
    ``positive`` (singular values) only positive values form clusters: zero ones are not
    differentiable even summed (``|x|`` at 0) and keep theirs.
    """
    # coincident to rounding: LAPACK's eigenvalues of a matrix with a repeated one differ by
    # a few units in the last place of the largest (Q diag(1, 1, 3) Qᵀ: 1 and 1 + 2e-16)
    tol = 16.0 * np.finfo(np.float64).eps * np.max(np.abs(w), axis=-1, keepdims=True)
    same = np.abs(w[..., :, None] - w[..., None, :]) <= tol[..., None]
    if positive:
        same &= (w > tol)[..., :, None]
        same |= np.eye(w.shape[-1], dtype=bool)
    if int(np.count_nonzero(same)) == same.size // max(w.shape[-1], 1):
        return d  # (no two coincide: the diagonal alone)
    # (summed by selection, not weights: another cluster's NaN stays out of this one)
    total = np.sum(np.where(same[None], d[..., None, :], 0.0), axis=-1)
    return np.asarray(total / np.sum(same, axis=-1))


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
        w, v = _eigh(vals[0], lower)
        s = sym_from_triangle(t, lower)
        return _cluster_mean(np.asarray(np.einsum("...ik,p...ij,...jk->p...k", v, s, v)), w)

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
        """``ds_k = u_kᵀ dA v_k``; coincident positive ones, the mean (see ``_cluster_mean``)."""
        u, s, vh = _thin_svd(vals[0])
        return _cluster_mean(np.asarray(np.einsum("...ik,p...ij,...kj->p...k", u, t, vh)), s,
                             positive=True)

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
        du = svd_vector_tangents(floats(vals[0]), t)[0]
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
        dvh = svd_vector_tangents(floats(vals[0]), t)[1]
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
        a = floats(vals[0])
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
        a = floats(vals[0])
        p = np.linalg.pinv(a, rcond=node.params["cutoff"])
        if k == 0:
            return np.asarray(pinv_tangent(a, p, t) @ floats(vals[1]))
        return np.asarray(p @ t)

    def column_matrix(self, node: Node, k: int, vals: Sequence[Any], out: Any
                      ) -> np.ndarray | None:
        """``dX[:, c] = P dB[:, c]`` with P the pseudo-inverse (lstsq's cutoff)."""
        if k == 0:
            return None
        return np.asarray(np.linalg.pinv(floats(vals[0]),
                                         rcond=node.params["cutoff"]))

    def has_column_matrix(self, node: Node, k: int) -> bool:
        """The right-hand side's (the pseudo-inverse)."""
        return k == 1

    def reads(self, node: Node, k: int) -> tuple[int | str, ...]:
        """dX/dB reads A only (a constant when A is)."""
        return (0, 1) if k == 0 else (0,)


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
        a = floats(vals[0])
        b = floats(vals[1])
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
        q, r = np.linalg.qr(floats(vals[0]))
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
        q, r = np.linalg.qr(floats(vals[0]))
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
