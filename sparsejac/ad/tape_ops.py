"""The tape's instructions beyond elementwise operations and gathers, built from a node.

* :func:`affine`: a linear primitive as ``out = c + R in`` (``LINEAR``);
* :func:`bilinear`: a contraction of two operands that both move, as sums of products over
  pairs of slots (``BILINEAR``);
* :func:`solve_slots`: a small ``np.linalg.solve`` (``SOLVE``).

Each raises :class:`Unsupported` for a node the tape does not encode (the program then keeps
the chain engine), with the reason ``engine="tape"``'s warning gives.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.numeric import shared_arange
from sparsejac.primitives.linalg import Contraction
from sparsejac.primitives.linear import LinearMap, map_jacobian
from sparsejac.primitives.reductions import CumSum, ReduceSum
from sparsejac.tracing import Node

__all__ = ["LINEAR_PRIMITIVES", "MAX_PAIRS", "MAX_SOLVE", "SOLVE_UNITS", "Unsupported", "affine",
           "bilinear", "cat", "float_value", "reads", "solve_slots"]

#: Primitives that are linear in their operands (given constant other operands); a constant
#: local Jacobian alone does not make an operation affine (``remainder``, ``copysign``).
LINEAR_PRIMITIVES = (LinearMap, ReduceSum, CumSum, Contraction)


class Unsupported(Exception):
    """The program has a node the tape does not encode."""


def float_value(v: Any) -> np.ndarray:
    """``v`` as a flat float64 array (booleans and exact integers too); else Unsupported."""
    a = np.asarray(v)
    if a.dtype.kind not in "biuf":
        raise Unsupported(f"a value of dtype {a.dtype}")
    if a.dtype.kind in "iu" and a.size and np.abs(a).max() > 2**53:
        raise Unsupported("an integer beyond float64's exact range")
    return np.asarray(a, dtype=np.float64).ravel()


def reads(v: Any) -> bool:
    """Whether an affine instruction reads operand ``v`` (x or a parameter moves it)."""
    return bool(v.active or not (v.kind == "const" or v.sources == 0))


def one_map(node: Node, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                           np.ndarray] | None:
    """:func:`affine` of a linear map of one operand it reads: its CSR arrays as they are.

    The general path builds the same rows, columns and values through the map's COO local
    Jacobian and a stable sort by row, which leaves CSR order unchanged.
    """
    v = node.inputs[0]
    if not reads(v):
        return None
    m = node.params["plan"].mats[0]
    size = node.out.size
    with np.errstate(all="ignore"):
        offset = float_value(node.prim.impl(np.zeros(v.shape, dtype=v.dtype),
                                             **node.params))
    if offset.size != size:
        return None
    if m is None:
        ar = np.arange(size + 1, dtype=np.int64)
        return offset, ar, ar[:-1] + s, np.ones(size)
    if not (isinstance(m, (sp.csr_array, sp.csr_matrix)) and m.has_canonical_format) \
            or m.shape != (size, v.size):
        return None
    return (offset, m.indptr.astype(np.int64), m.indices.astype(np.int64) + s,
            m.data.astype(np.float64))


#: Products above this many per contraction of two moving operands are left to the chain
#: engine (a matrix product of 40 x 40 matrices: BLAS beats a loop over pairs).
MAX_PAIRS = 1 << 16


def bilinear(node: Node, ins: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(ptr, col, val)`` of a contraction of two operands that move (``R @ t``, ``np.outer``).

    Each output element is a sum of products ``a[i] * b[j]``, one pair of slots per term,
    listed by enumerating the einsum's letters. None where an operand is constant (an affine
    map, :func:`affine`) or for another primitive.
    """
    if not isinstance(node.prim, Contraction) or len(node.inputs) != 2 \
            or not all(reads(v) for v in node.inputs):
        return None
    subs: tuple[str, ...] = node.params["ins"]
    out: str = node.params["out"]
    sizes: dict[str, int] = node.params["sizes"]
    letters = "".join(dict.fromkeys(subs[0] + subs[1] + out))
    dims = [int(sizes[c]) for c in letters]
    total = math.prod(dims)
    if total > MAX_PAIRS:
        raise Unsupported(f"`einsum` of {total:,} products of operands that move with x "
                           f"(above {MAX_PAIRS:,})")
    shapes = (node.out.shape, node.inputs[0].shape, node.inputs[1].shape)
    if any(tuple(sizes[c] for c in sub) != tuple(shape)
           for sub, shape in zip((out, *subs), shapes, strict=True)):
        raise Unsupported("`einsum` with broadcast operands")
    coord = dict(zip(letters, np.indices(dims).reshape(len(letters), -1), strict=True))

    def flat(sub: str, shape: tuple[int, ...]) -> np.ndarray:
        if not sub:
            return np.zeros(total, dtype=np.int64)
        return np.ravel_multi_index(tuple(coord[c] for c in sub), shape).astype(np.int64)

    r = flat(out, shapes[0])
    order = np.argsort(r, kind="stable")
    a = flat(subs[0], shapes[1])[order] + ins[0]
    b = flat(subs[1], shapes[2])[order] + ins[1]
    r_ptr = np.zeros(node.out.size + 1, dtype=np.int64)
    np.cumsum(2 * np.bincount(r, minlength=node.out.size), out=r_ptr[1:])
    val = np.zeros(2 * total)
    val[0::2] = 1.0
    return r_ptr, np.stack([a, b], axis=1).reshape(-1), val


#: Systems above this size are left to the chain engine (LAPACK); below, the tape's own LU
#: (``n³/3`` operations a solve) costs less than a walk in Python.
MAX_SOLVE = 16
#: A solve's multiply-add in element operations of the fallback paths' accounting (before
#: numba is loaded, its loops run in the interpreter; 4 is about their relative cost)
SOLVE_UNITS = 4


def solve_slots(node: Node, ins: list[int]) -> np.ndarray:
    """A ``SOLVE`` instruction's indices: ``(n, k, batch)``, then A's and B's slots."""
    a, b = node.inputs
    n = int(a.shape[-1])
    if set(node.params) - {"batch"} or len(a.shape) < 2 or len(b.shape) < 2:
        raise Unsupported(f"`{node.prim.name}` with options (scipy's, transposed, triangular)")
    if n > MAX_SOLVE or a.shape[:-2] != b.shape[:-2] or tuple(b.shape) != tuple(node.out.shape):
        raise Unsupported(f"`{node.prim.name}` of a {n} × {n} system (above {MAX_SOLVE}) or "
                           "with broadcast batches")
    batch = int(np.prod(a.shape[:-2], dtype=np.int64))
    head = np.array([n, int(b.shape[-1]), batch], dtype=np.int64)
    return np.concatenate([head, ins[0] + shared_arange(a.size), ins[1] + shared_arange(b.size)])


def affine(node: Node, ins: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``out = c + R in`` for a linear primitive with constant local Jacobians."""
    if not isinstance(node.prim, LINEAR_PRIMITIVES):
        raise Unsupported(f"`{node.prim.name}` is not among the operations it encodes")
    if isinstance(node.prim, LinearMap) and len(node.inputs) == 1:
        one = one_map(node, ins[0])  # (element loops: thousands of small gathers)
        if one is not None:
            return one
    ljs = node.prim.linearize(node)
    if ljs is None:
        raise Unsupported(f"`{node.prim.name}` has no local Jacobian")
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    plan = node.params.get("plan") if isinstance(node.prim, LinearMap) else None
    read: list[bool] = []  # operands the instruction reads (the others: in the offset)
    for j, (v, lj, s) in enumerate(zip(node.inputs, ljs, ins, strict=True)):
        read.append(reads(v))
        if not v.active:
            if not read[-1]:
                continue
            if plan is None:  # (a linear map's matrix is its local Jacobian, param or not)
                raise Unsupported(f"`{node.prim.name}` reads a parameter")
            lj = map_jacobian(plan.mats[j], v.size)
        if lj is None:
            continue
        if lj.dyn is not None or lj.const is None:
            raise Unsupported(f"`{node.prim.name}` of operands that move with x (a product, not a "
                                 "linear map)")
        rows.append(np.asarray(lj.rows, dtype=np.int64))
        cols.append(np.asarray(lj.cols, dtype=np.int64) + s)
        vals.append(np.broadcast_to(np.asarray(lj.const, dtype=np.float64), (lj.nnz,)))
    zero_args = [np.zeros(v.shape, dtype=v.dtype) if r else v.value
                 for v, r in zip(node.inputs, read, strict=True)]
    with np.errstate(all="ignore"):
        offset = float_value(node.prim.impl(*zero_args, **node.params))
    size = node.out.size
    if offset.size != size:
        raise Unsupported(f"`{node.prim.name}`: a value of an unexpected size")
    r = cat(rows, np.int64)
    order = np.argsort(r, kind="stable")
    r_ptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=size), out=r_ptr[1:])
    return offset, r_ptr, cat(cols, np.int64)[order], cat(vals, np.float64)[order]


def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    """The parts concatenated as ``dtype`` (an empty array for none)."""
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)


