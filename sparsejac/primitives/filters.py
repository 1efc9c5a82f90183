"""Constant linear operators from ``scipy.ndimage`` and ``scipy.signal`` on traced arrays.

``scipy.ndimage.laplace`` or ``scipy.signal.convolve2d(x, kernel)`` with a constant kernel
are affine maps of the traced array, ``op(x) = M x + b``: the handler builds ``M`` once, as
a ``scipy.sparse`` matrix, and binds the linear-map primitive
(:func:`~sparsejac.primitives.linear.apply_sparse_map`), so patterns, products and prepared
replays are those of a constant sparse matrix.

``M`` is found by applying ``op`` to a few seed arrays (linearity), never to every unit
vector when the operator is local: the *footprint* of ``op`` (how far an output reaches, per
axis) is read from its response to one unit impulse in the middle of the array, inputs are
coloured by their coordinates modulo ``2 r + 1`` along each axis (two inputs of one colour are
never within reach of the same output), and one call per colour recovers every entry.
Boundary modes that reflect or clamp stay within reach; ``mode="wrap"`` (and any operator
that is not translation invariant) is caught by a check: ``M v + b`` must equal ``op(v)`` at
two random points, else ``M`` is rebuilt from unit vectors (up to 4,096 inputs) or the call
is refused. Entries below ``1e-13`` of the largest (the rounding residue of FFT-based
convolutions) are structural zeros.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.primitives.core import register_library
from sparsejac.primitives.linear import apply_sparse_map
from sparsejac.tracing.tracer import Tracer

__all__ = ["operator_matrix", "register_ndimage", "register_signal"]

_DENSE_LIMIT = 4096
_REL_ZERO = 1e-13


def _shape(a: Any) -> tuple[int, ...]:
    return tuple(np.shape(a._var.value if isinstance(a, Tracer) else a))


def _dense(op: Callable[[np.ndarray], np.ndarray], shape: tuple[int, ...], b: np.ndarray
           ) -> sp.csr_array:
    n = int(np.prod(shape))
    cols = []
    for j in range(n):
        e = np.zeros(n)
        e[j] = 1.0
        cols.append(np.ravel(op(e.reshape(shape))) - np.ravel(b))
    return sp.csr_array(np.stack(cols, axis=1))


def _coloured(op: Callable[[np.ndarray], np.ndarray], shape: tuple[int, ...], b: np.ndarray
              ) -> sp.csr_array | None:
    """M from one call per colour, or None when the output shape differs from the input's."""
    centre = tuple(s // 2 for s in shape)
    delta = np.zeros(shape)
    delta[centre] = 1.0
    resp = op(delta) - b.reshape(np.shape(b))
    if resp.shape != shape:
        return None
    scale = np.abs(resp).max(initial=0.0)
    nz = np.argwhere(np.abs(resp) > _REL_ZERO * scale)
    rad = [int(np.abs(nz[:, d] - centre[d]).max(initial=0)) for d in range(len(shape))]
    period = [min(2 * r + 1, s) for r, s in zip(rad, shape, strict=True)]
    grids = np.indices(shape)
    rows, cols, vals = [], [], []
    out_idx = np.indices(shape)
    for colour in itertools.product(*(range(p) for p in period)):
        mask = np.ones(shape, dtype=bool)
        for d, c in enumerate(colour):
            mask &= grids[d] % period[d] == c
        y = op(mask.astype(np.float64)) - b
        # the input of this colour within reach of each output
        src = []
        inside = np.ones(shape, dtype=bool)
        for d, c in enumerate(colour):
            p, r = period[d], rad[d]
            o = out_idx[d]
            # p == shape[d]: every index is its own colour along this axis
            j = np.full(shape, c) if p == shape[d] else o + ((c - o + r) % p) - r
            inside &= (j >= 0) & (j < shape[d])
            src.append(np.clip(j, 0, shape[d] - 1))
        keep = inside & (y != 0)
        rows.append(np.flatnonzero(keep))
        cols.append(np.ravel_multi_index(tuple(s[keep] for s in src), shape))
        vals.append(y[keep])
    n = int(np.prod(shape))
    return sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                        shape=(n, n))


def operator_matrix(op: Callable[[np.ndarray], np.ndarray], shape: tuple[int, ...], name: str
                    ) -> tuple[sp.csr_array, np.ndarray]:
    """``(M, b)`` with ``op(v) = M @ v.ravel() + b`` for the affine ``op`` on arrays of ``shape``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.primitives.filters import operator_matrix
    >>> m, b = operator_matrix(lambda v: np.convolve(v, [1.0, -2.0, 1.0], "same"), (5,), "f")
    >>> m.toarray()
    array([[-2.,  1.,  0.,  0.,  0.],
           [ 1., -2.,  1.,  0.,  0.],
           [ 0.,  1., -2.,  1.,  0.],
           [ 0.,  0.,  1., -2.,  1.],
           [ 0.,  0.,  0.,  1., -2.]])
    """
    b = np.asarray(op(np.zeros(shape)), dtype=np.float64)
    mat = _coloured(op, shape, b)
    rng = np.random.default_rng(0)
    probes = [rng.standard_normal(shape) for _ in range(2)]

    def agrees(m: sp.csr_array) -> bool:
        for v in probes:
            want = np.ravel(op(v))
            got = m @ v.ravel() + b.ravel()
            if got.shape != want.shape or not np.allclose(
                    got, want, rtol=1e-10, atol=1e-12 * (1.0 + np.abs(want).max(initial=0.0))):
                return False
        return True

    if mat is None or not agrees(mat):
        if int(np.prod(shape)) > _DENSE_LIMIT:
            raise UnsupportedPrimitiveError(
                name, f"an operator that is not translation invariant on {shape} inputs (more "
                f"than {_DENSE_LIMIT} unit vectors to apply; e.g. mode='wrap' or an output "
                "shape unlike the input's)")
        mat = _dense(op, shape, b.ravel())
        if not agrees(mat):
            raise UnsupportedPrimitiveError(name, "an operator that is not affine in its input")
    mat = sp.csr_array(mat)
    scale = np.abs(mat.data).max(initial=0.0)
    mat.data[np.abs(mat.data) <= _REL_ZERO * scale] = 0.0
    mat.eliminate_zeros()
    return mat, b


def _unwrap_constants(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """``values`` with traced constants (and those in lists and tuples) as their values."""
    def one(a: Any) -> Any:
        if isinstance(a, Tracer) and a._var.is_const:
            return a._var.value
        if isinstance(a, (list, tuple)) and any(isinstance(b, Tracer) for b in a):
            return type(a)(one(b) for b in a)
        return a
    return tuple(one(a) for a in values)


def _apply(name: str, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
           at: int = 0) -> Any:
    """``func(*args, **kwargs)``: the traced operand is ``args[at]``, everything else constant.

    Traced constants (a kernel made in ``f`` with ``np.ones``, which the tracer records as a
    buffer that could be filled) are their values.
    """
    others = [a for i, a in enumerate(args) if i != at] + list(kwargs.values())
    if not isinstance(args[at], Tracer) or any(
            isinstance(a, Tracer) or (isinstance(a, (list, tuple)) and any(
                isinstance(b, Tracer) for b in a)) for a in others):
        raise UnsupportedPrimitiveError(
            name, "a traced argument other than the array filtered (kernels, weights, sigma "
            "and the other operand must be constants)")
    if kwargs.get("output") is not None:
        raise UnsupportedPrimitiveError(name, "the `output=` argument")
    x = args[at]
    shape = _shape(x)

    def op(v: np.ndarray) -> np.ndarray:
        a = list(args)
        a[at] = v
        return np.asarray(func(*a, **kwargs), dtype=np.float64)

    mat, b = operator_matrix(op, shape, name)
    res = apply_sparse_map((x,), (mat,), b.shape)
    return res + b if np.any(b) else res


def _register(module: Any, modname: str, names: tuple[str, ...], note: str,
              operand: Callable[[tuple[Any, ...]], int]) -> None:
    for fname in names:
        func = getattr(module, fname)

        def handler(*args: Any, _f: Any = func, _n: str = f"{modname}.{fname}",
                    **kwargs: Any) -> Any:
            args = _unwrap_constants(args)
            kwargs = dict(zip(kwargs, _unwrap_constants(tuple(kwargs.values())), strict=True))
            if not any(isinstance(a, Tracer) for a in (*args, *kwargs.values())):
                return _f(*args, **kwargs)  # nothing traced after all: the library's result
            return _apply(_n, _f, args, kwargs, operand(args))

        register_library(func, name=f"{modname}.{fname}", family="linalg",
                         via="constant linear operator", note=note)(handler)


def register_ndimage() -> None:
    """Rules for the linear filters of ``scipy.ndimage`` (run when it is imported)."""
    import scipy.ndimage as ndi

    _register(ndi, "scipy.ndimage", (
        "laplace", "convolve", "correlate", "convolve1d", "correlate1d", "uniform_filter",
        "uniform_filter1d", "gaussian_filter", "gaussian_filter1d", "gaussian_laplace",
        "sobel", "prewitt"), "constant weights and parameters; sparse (stencil footprint)",
        lambda args: 0)


def register_signal() -> None:
    """Rules for the convolutions of ``scipy.signal`` (run when it is imported)."""
    import scipy.signal as sig

    _register(sig, "scipy.signal", (
        "convolve", "correlate", "convolve2d", "correlate2d", "fftconvolve", "oaconvolve"),
        "one traced operand, the other constant",
        lambda args: 0 if isinstance(args[0], Tracer) else 1)
