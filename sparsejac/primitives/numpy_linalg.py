"""``numpy.linalg`` with traced operands: the handlers of the dense matrix functions.

Each handler parses numpy's arguments, broadcasts the batch dimensions of the operands (a
gather) and binds the primitives of :mod:`sparsejac.primitives.dense_linalg`; results that
numpy returns as named tuples (``SlogdetResult``, ``EighResult``, ``SVDResult``, ``QRResult``)
are returned as the same named tuples of traced arrays. ``inv``, ``matrix_power``, ``cond``,
``matrix_norm`` and the matrix norms of ``norm`` are composites.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.primitives import decompositions as dec
from sparsejac.primitives import dense_linalg as dl
from sparsejac.primitives.core import Primitive, bind, register_function

__all__ = ["batched", "matrix_norm"]

_EIGH_RESULT = type(np.linalg.eigh(np.eye(1)))
_SVD_RESULT = type(np.linalg.svd(np.eye(1)))
_QR_RESULT = type(np.linalg.qr(np.eye(1)))
_SLOGDET_RESULT = type(np.linalg.slogdet(np.eye(1)))


def _shape(a: Any) -> tuple[int, ...]:
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def _square(a: Any, func: str) -> tuple[int, ...]:
    shape = _shape(a)
    if len(shape) < 2:
        raise np.linalg.LinAlgError(
            f"{len(shape)}-dimensional array given. Array must be at least two-dimensional")
    if shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    return shape


def batched(prim: Primitive, operands: tuple[Any, ...], cores: tuple[int, ...],
            params: dict[str, Any] | None = None) -> Any:
    """Bind ``prim`` on operands broadcast to a common batch shape.

    ``cores[k]`` is the number of trailing (core) dimensions of operand k; the leading ones
    are broadcast as numpy's gufuncs do and passed as ``params["batch"]``.
    """
    shapes = [_shape(o) for o in operands]
    batch = np.broadcast_shapes(*(s[:len(s) - c] for s, c in zip(shapes, cores, strict=True)))
    ops = []
    for o, s, c in zip(operands, shapes, cores, strict=True):
        target = (*batch, *s[len(s) - c:])
        ops.append(o if s == target else np.broadcast_to(o, target))
    return bind(prim, tuple(ops), {"batch": tuple(batch), **(params or {})})


@register_function(np.linalg.solve, family="linalg", via="solve",
                   note="traced matrix and/or right-hand side, batched")
def _solve(a: Any, b: Any) -> Any:
    n = _square(a, "solve")[-1]
    vector = len(_shape(b)) == 1
    bb = b[:, None] if vector else b
    if _shape(bb)[-2] != n:
        raise ValueError(f"solve: `b` has {_shape(bb)[-2]} rows, the matrix is {n} x {n}")
    x = batched(dl.SOLVE, (a, bb), (2, 2))
    return x[..., 0] if vector else x


@register_function(np.linalg.inv, family="linalg", via="inv")
def _inv(a: Any) -> Any:
    _square(a, "inv")
    return batched(dl.INV, (a,), (2,))


@register_function(np.linalg.det, family="linalg", via="det",
                   note="adjugate derivative: singular matrices too")
def _det(a: Any) -> Any:
    _square(a, "det")
    return batched(dl.DET, (a,), (2,))


@register_function(np.linalg.slogdet, family="linalg", via="logabsdet, slogdet_sign")
def _slogdet(a: Any) -> Any:
    _square(a, "slogdet")
    sign = batched(dl.SLOGDET_SIGN, (a,), (2,))
    return _SLOGDET_RESULT(sign, batched(dl.LOG_ABS_DET, (a,), (2,)))


@register_function(np.linalg.matrix_rank, family="linalg", via="matrix_rank (zero derivative)")
def _matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:
    if _shape(tol) or _shape(rtol):
        raise UnsupportedPrimitiveError("numpy.linalg.matrix_rank", "array-valued `tol`/`rtol`")
    if len(_shape(A)) < 2:
        return np.any(A != 0).astype(np.int64)
    return bind(dl.MATRIX_RANK, (A,), {"tol": tol, "hermitian": hermitian, "rtol": rtol})


@register_function(np.linalg.cholesky, family="linalg", via="cholesky",
                   note="reads the lower (upper=True: upper) triangle, as numpy does")
def _cholesky(a: Any, /, *, upper: bool = False) -> Any:
    _square(a, "cholesky")
    return batched(dl.CHOLESKY, (a,), (2,), {"upper": bool(upper)})


def _uplo(UPLO: str) -> bool:
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return UPLO == "L"


@register_function(np.linalg.eigh, family="linalg", via="eigh_values, eigh_vectors",
                   note="reads one triangle; eigenvector derivatives are NaN at coincident "
                        "eigenvalues")
def _eigh(a: Any, UPLO: str = "L") -> Any:
    _square(a, "eigh")
    lower = _uplo(UPLO)
    w = batched(dec.EIGH_VALUES, (a,), (2,), {"lower": lower, "vectors": True})
    v = batched(dec.EIGH_VECTORS, (a,), (2,), {"lower": lower})
    return _EIGH_RESULT(w, v)


@register_function(np.linalg.eigvalsh, family="linalg", via="eigh_values",
                   note="reads one triangle")
def _eigvalsh(a: Any, UPLO: str = "L") -> Any:
    _square(a, "eigvalsh")
    return batched(dec.EIGH_VALUES, (a,), (2,), {"lower": _uplo(UPLO), "vectors": False})


def _matrix(a: Any, func: str) -> tuple[int, ...]:
    shape = _shape(a)
    if len(shape) < 2:
        raise np.linalg.LinAlgError(
            f"{len(shape)}-dimensional array given. Array must be at least two-dimensional")
    return shape


@register_function(np.linalg.svd, family="linalg", via="svd_values, svd_u, svd_vh",
                   note="vector derivatives are NaN at coincident or zero singular values and "
                        "for the non-unique columns of full_matrices=True; no hermitian=True")
def _svd(a: Any, full_matrices: bool = True, compute_uv: bool = True,
         hermitian: bool = False) -> Any:
    _matrix(a, "svd")
    if hermitian:
        raise UnsupportedPrimitiveError(
            "numpy.linalg.svd", "`hermitian=True` (singular values sorted by |eigenvalue|); "
            "use np.linalg.eigh for a symmetric matrix")
    s = batched(dec.SVD_VALUES, (a,), (2,))
    if not compute_uv:
        return s
    full = bool(full_matrices)
    u = batched(dec.SVD_U, (a,), (2,), {"full": full})
    vh = batched(dec.SVD_VH, (a,), (2,), {"full": full})
    return _SVD_RESULT(u, s, vh)


@register_function(np.linalg.svdvals, family="linalg", via="svd_values")
def _svdvals(x: Any, /) -> Any:
    _matrix(x, "svdvals")
    return batched(dec.SVD_VALUES, (x,), (2,))


@register_function(np.linalg.pinv, family="linalg", via="pinv",
                   note="derivative where the rank is locally constant")
def _pinv(a: Any, rcond: Any = None, hermitian: bool = False, **kw: Any) -> Any:
    _matrix(a, "pinv")
    if _shape(rcond) or _shape(kw.get("rtol")):
        raise UnsupportedPrimitiveError("numpy.linalg.pinv", "array-valued `rcond`/`rtol`")
    kwargs = {"rcond": rcond, "hermitian": bool(hermitian), **kw}
    if hermitian:
        _square(a, "pinv")
    return batched(dec.PINV, (a,), (2,), {"kwargs": kwargs})


@register_function(np.linalg.lstsq, family="linalg", via="lstsq, lstsq_residuals, svd_values",
                   note="derivative where the rank is locally constant; a rank-deficient "
                        "matrix at the trace point needs local=True")
def _lstsq(a: Any, b: Any, rcond: Any = None) -> Any:
    from sparsejac.tracing.tracer import concretize

    m, n = _matrix(a, "lstsq")
    if len(_shape(a)) != 2:
        raise np.linalg.LinAlgError("lstsq: `a` must be two-dimensional")
    vector = len(_shape(b)) == 1
    bb = b[:, None] if vector else b
    if _shape(bb)[0] != m:
        raise np.linalg.LinAlgError("Incompatible dimensions")
    cutoff = float(np.finfo(np.float64).eps * max(m, n)) if rcond is None else rcond
    params = {"batch": (), "rcond": rcond, "cutoff": cutoff}
    x = bind(dec.LSTSQ, (a, bb), params)
    rank = bind(dl.MATRIX_RANK, (a,), {"tol": None, "hermitian": False, "rtol": cutoff})
    s = batched(dec.SVD_VALUES, (a,), (2,))
    # numpy returns residuals only for a full-rank, overdetermined system: a rank-deficient
    # matrix at the trace point makes them empty, a value-dependent shape (local mode only)
    res: Any
    if m > n and int(rank._var.value) == n:
        res = bind(dec.LSTSQ_RESIDUALS, (a, bb), params)
    else:
        if m > n:
            concretize(rank, "the rank of the matrix given to numpy.linalg.lstsq")
        res = np.zeros(0)
    return (x[:, 0] if vector else x), res, rank, s


@register_function(np.linalg.qr, family="linalg", via="qr_q, qr_r",
                   note="full column or row rank; mode='complete' with m > n: NaN derivative "
                        "of the non-unique columns; no mode='raw'")
def _qr(a: Any, mode: str = "reduced") -> Any:
    m, n = _matrix(a, "qr")[-2:]
    if mode not in ("reduced", "complete", "r"):
        raise UnsupportedPrimitiveError("numpy.linalg.qr", f"mode={mode!r}")
    complete = mode == "complete"
    r = batched(dec.QR_R, (a,), (2,), {"complete": False})
    if complete and m > n:
        zeros = np.zeros((*_shape(a)[:-2], m - n, n))
        r = np.concatenate([r, zeros], axis=-2)
    if mode == "r":
        return r
    q = batched(dec.QR_Q, (a,), (2,), {"complete": complete and m > n})
    return _QR_RESULT(q, r)


@register_function(np.linalg.matrix_power, family="linalg", via="composite: matmul, inv")
def _matrix_power(a: Any, n: int) -> Any:
    shape = _square(a, "matrix_power")
    try:
        n = int(n)  # an integer exponent (numpy's operator.index)
    except TypeError as exc:
        raise TypeError("exponent must be an integer") from exc
    if n == 0:
        eye = np.broadcast_to(np.eye(shape[-1]), shape)
        return eye * np.ones_like(a)
    if n < 0:
        a = np.linalg.inv(a)
        n = -n
    result = None
    z = a
    while n > 0:  # binary decomposition of n, as numpy's
        if n & 1:
            result = z if result is None else result @ z
        n >>= 1
        if n:
            z = z @ z
    return result


@register_function(np.linalg.cond, family="linalg",
                   note="p=None/2/-2 from singular values; other p from norm(A) norm(inv(A))",
                   via="composite: svd_values | norm, inv")
def _cond(x: Any, p: Any = None) -> Any:
    _matrix(x, "cond")
    if p is None or p == 2 or p == -2:
        s = np.linalg.svd(x, compute_uv=False)
        return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    _square(x, "cond")
    try:
        inverse = np.linalg.inv(x)
    except np.linalg.LinAlgError:  # numpy's cond is inf there: no derivative to give
        raise UnsupportedPrimitiveError(
            "numpy.linalg.cond", f"p={p!r} at a singular matrix (numpy gives inf, which has "
            "no derivative); p=None or 2 (from singular values) is inf there too: evaluate "
            "at a regular matrix", problem="a singular matrix") from None
    return np.linalg.norm(x, p, axis=(-2, -1)) * np.linalg.norm(inverse, p, axis=(-2, -1))


def matrix_norm(x: Any, ord: Any, row_axis: int, col_axis: int, keepdims: bool) -> Any:
    """Numpy's matrix norms over ``(row_axis, col_axis)`` of a traced array."""
    nd = len(_shape(x))
    row_axis, col_axis = row_axis % nd, col_axis % nd
    if row_axis == col_axis:
        raise ValueError("Duplicate axes given.")
    if ord in (None, "fro", "f"):
        res = np.sqrt(np.sum(x * x, axis=(row_axis, col_axis)))
    elif ord in (2, -2, "nuc"):
        moved = np.moveaxis(x, (row_axis, col_axis), (-2, -1))
        s = batched(dec.SVD_VALUES, (moved,), (2,))
        res = s[..., 0] if ord == 2 else (s[..., -1] if ord == -2 else np.sum(s, axis=-1))
    elif ord in (1, -1):
        red = np.sum(np.abs(x), axis=row_axis)
        ca = col_axis - 1 if col_axis > row_axis else col_axis
        res = np.max(red, axis=ca) if ord == 1 else np.min(red, axis=ca)
    elif ord in (np.inf, -np.inf):
        red = np.sum(np.abs(x), axis=col_axis)
        ra = row_axis - 1 if row_axis > col_axis else row_axis
        res = np.max(red, axis=ra) if ord == np.inf else np.min(red, axis=ra)
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        shape = list(_shape(x))
        shape[row_axis] = shape[col_axis] = 1
        res = np.reshape(res, tuple(shape))
    return res


@register_function(np.linalg.matrix_norm, family="linalg", via="composite: linalg.norm")
def _matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    _matrix(x, "matrix_norm")
    return matrix_norm(x, ord, -2, -1, keepdims)
