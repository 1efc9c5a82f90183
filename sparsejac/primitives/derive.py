"""The three rules of a primitive, derived from its local Jacobian.

A primitive states its value (``impl``) and its local Jacobian (``linearize``: per input, a
sparse matrix ``R_k`` of fixed structure whose values are constants or a function of the
primal values). Everything else follows, here, once for every primitive (as autograd's
``def_linear`` and JAX's transposition of linear primitives derive one rule from another):

* pattern: ``deps_out = OR_k |R_k| @ deps_k``, entries whose constant value is exactly 0
  dropped (they are structural zeros);
* jvp: ``t_out = sum_k t_k @ R_k.T`` on tangent blocks ``(p, *shape)``;
* vjp: ``ct_k = ct_out @ R_k`` on cotangent blocks ``(q, *shape)``.

Products skip entries whose value is exactly zero, so a zero local derivative contributes
nothing even against an infinite or NaN tangent (the convention of
:func:`sparsejac.numeric.mul0`). The structure of each ``R_k`` (CSR index arrays and the
permutation from the entry order of ``LocalJac`` to CSR order) is computed once per node and
cached on it; replays only refresh the values of value-dependent entries.

:class:`~sparsejac.primitives.core.Primitive` uses these as its default rules; a primitive
may override one with a hand-written *fast path*, which the registry-driven tests compare
with the derived rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.numeric import mul0
from sparsejac.primitives import depsets
from sparsejac.tracing.program import Node

__all__ = ["derived_jvp", "derived_pattern", "derived_vjp", "local_jacobians"]


@dataclass(frozen=True)
class _Structure:
    """CSR structure of one local Jacobian, and where each ``LocalJac`` entry lands in it."""

    indptr: np.ndarray
    indices: np.ndarray
    perm: np.ndarray | None  # CSR position i holds LocalJac entry perm[i] (None: entry i)
    shape: tuple[int, int]
    const: np.ndarray | None  # values in CSR order when constant (zeros dropped)
    lj: Any


def _structure(lj: Any, shape: tuple[int, int]) -> _Structure:
    rows = np.asarray(lj.rows, dtype=np.int64)
    cols = np.asarray(lj.cols, dtype=np.int64)
    keep: np.ndarray | None = None
    const = None
    if lj.dyn is None:
        c = np.broadcast_to(np.asarray(lj.const, dtype=np.float64), rows.shape)
        nz = c != 0
        if not nz.all():  # exact zeros of a constant local Jacobian are structural zeros
            keep = np.flatnonzero(nz)
            rows, cols, c = rows[keep], cols[keep], c[keep]
        const = c
    if _in_csr_order(rows, cols):  # elementwise and most gathers: no sort, no duplicates
        order = None
        rows_s, cols_s = rows, cols
    else:
        order = np.lexsort((cols, rows))
        rows_s, cols_s = rows[order], cols[order]
        if rows_s.size > 1:
            dup = (rows_s[1:] == rows_s[:-1]) & (cols_s[1:] == cols_s[:-1])
            if dup.any():
                raise AssertionError(f"a local Jacobian has {int(dup.sum())} repeated entries")
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows_s, minlength=shape[0]), out=indptr[1:])
    perm = keep if order is None else (order if keep is None else keep[order])
    if const is not None:
        const = np.ascontiguousarray(const if order is None else const[order])
    return _Structure(indptr, cols_s, perm, shape, const, lj)


def _in_csr_order(rows: np.ndarray, cols: np.ndarray) -> bool:
    """Whether the entries are strictly increasing in (row, column): CSR order, no repeats."""
    if rows.size < 2:
        return True
    step = np.diff(rows)
    if (step < 0).any():
        return False
    same = step == 0
    return not same.any() or bool((np.diff(cols)[same] > 0).all())


def local_jacobians(node: Node) -> list[_Structure | None]:
    """The node's local Jacobians as CSR structures (cached on the node).

    Raises
    ------
    NotImplementedError
        The primitive has no ``linearize`` (it must then write its rules by hand).
    """
    cached = node.cache.get("local_jacobians")
    if cached is not None:
        return list(cached)
    ljs = node.prim.linearize(node)
    if ljs is None:
        raise NotImplementedError(
            f"primitive {node.prim.name!r} has no linearize rule, so its pattern, jvp and vjp "
            "rules cannot be derived; write them, or give it a linearize rule")
    res = [None if lj is None else _structure(lj, (node.out.size, var.size))
           for lj, var in zip(ljs, node.inputs, strict=True)]
    node.cache["local_jacobians"] = tuple(res)
    return res


def _matrix(s: _Structure, vals: Sequence[Any] | None, out: Any) -> sp.csr_array:
    """The local Jacobian with its values at ``vals`` (entries equal to zero dropped)."""
    if s.const is not None:
        m = sp.csr_array((s.const, s.indices, s.indptr), shape=s.shape)
    else:
        assert vals is not None
        v = np.broadcast_to(np.asarray(s.lj.dyn(vals, out), dtype=np.float64), (s.lj.nnz,))
        data = np.array(v) if s.perm is None else v[s.perm]
        if data.all():
            m = sp.csr_array((data, s.indices, s.indptr), shape=s.shape)
        else:  # a zero derivative contributes nothing, even against inf or nan
            m = sp.csr_array((data, s.indices.copy(), s.indptr.copy()), shape=s.shape)
            m.eliminate_zeros()
    m.has_sorted_indices = True
    return m


def derived_pattern(node: Node, deps: Sequence[Any], local: bool) -> Any:
    """``OR_k |R_k| @ deps_k`` (constant zeros dropped)."""
    terms = []
    for s, d in zip(local_jacobians(node), deps, strict=True):
        if s is None or d is None:
            continue
        r = sp.csr_array((np.ones(s.indices.size, dtype=bool), s.indices, s.indptr),
                         shape=s.shape)
        terms.append(depsets.apply_linear(r, d))
    return depsets.union(terms)


def mul0_matmul(m: sp.csr_array, d: np.ndarray) -> np.ndarray:
    """``m @ d``, where an inf or nan entry of ``m`` times a zero of ``d`` contributes nothing.

    The convention of :func:`sparsejac.numeric.mul0`: a derivative that does not exist (the
    non-unique columns of a complete QR, say) stays out of the entries whose tangent or
    cotangent does not reach it. Only matrices with such entries take the second path.
    """
    bad = ~np.isfinite(m.data)
    if not bad.any():
        return np.asarray(m @ d)
    good = sp.csr_array((np.where(bad, 0.0, m.data), m.indices, m.indptr), shape=m.shape)
    res = np.array(good @ d, dtype=np.float64)
    rows = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))[bad]
    np.add.at(res, rows, mul0(m.data[bad][:, None], d[m.indices[bad]]))
    return res


def derived_jvp(node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None],
                out: Any) -> np.ndarray | None:
    """``sum_k t_k @ R_k.T``, shape ``(p, *out_shape)``."""
    acc = None
    for s, t in zip(local_jacobians(node), tangents, strict=True):
        if s is None or t is None:
            continue
        p = t.shape[0]
        term = mul0_matmul(_matrix(s, vals, out), t.reshape(p, -1).T)  # (out_size, p)
        acc = term if acc is None else acc + term
    if acc is None:
        return None
    return np.ascontiguousarray(acc.T).reshape((acc.shape[1], *node.out.shape))


def derived_vjp(node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
                ) -> list[np.ndarray | None]:
    """``ct_out @ R_k`` for every active input, shape ``(q, *shape_k)``."""
    q = ct.shape[0]
    c2 = ct.reshape(q, -1)
    res: list[np.ndarray | None] = []
    for s, var in zip(local_jacobians(node), node.inputs, strict=True):
        if s is None or not var.active:
            res.append(None)
            continue
        m = _matrix(s, vals, out)
        g = (np.asarray(m.T @ c2.T) if np.isfinite(m.data).all()  # (size_k, q)
             else mul0_matmul(sp.csr_array(m.T), c2.T))
        res.append(np.ascontiguousarray(g.T).reshape((q, *var.shape)))
    return res
