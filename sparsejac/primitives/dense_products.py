"""Large dense matrix functions: products through the tangent formula, no local Jacobian.

The local Jacobian of a dense matrix function of a traced ``m × m`` matrix (``cholesky``,
``solve`` with a traced matrix, ``inv``, ...) is dense ``m² × m²`` within each block: 5 GB of
values at ``m = 160``, and as many formula evaluations to fill it. A program with few inputs
(the three hyperparameters of a Gaussian process) needs only a few products through the node,
``O(p m³)`` time and ``O(m²)`` memory each way. So a node whose local Jacobian would exceed
:data:`BLOCK_LIMIT` entries in one block (or :data:`TOTAL_LIMIT` over its batch) states no
``linearize`` (:meth:`~sparsejac.primitives.dense_linalg.MatrixFunction.linearize` returns
None); the prepared engine then materialises its operands' tangents and calls its rules, which
are written here without the block:

* pattern (:func:`block_pattern`): every output element of a block depends on every operand
  element of the block the function reads (a superset of the structure inside a block, which
  is dense for these functions anyway);
* JVP: the tangent formula on the tangent block itself;
* VJP: the primitive's cotangent formula (the adjoint of its tangent formula) where it states
  one (solve, inv, det, slogdet, cholesky), else the tangent formula on chunks of unit
  directions contracted with the cotangent (:func:`chunked_vjp`: exact, memory bounded, one
  formula evaluation per operand element).

Second derivatives (:mod:`sparsejac.ad.second_order`) record the cotangent formula on traced
values instead of the block from :data:`SECOND_ORDER_LIMIT` entries on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.primitives import depsets
from sparsejac.primitives.depsets import DepSet
from sparsejac.tracing.program import Node

__all__ = [
    "BLOCK_LIMIT",
    "SECOND_ORDER_LIMIT",
    "TOTAL_LIMIT",
    "block_pattern",
    "chunked_vjp",
    "core_size",
]

#: Entries of one block of a node's local Jacobian above which the node is applied by products
#: (a 32 × 32 matrix function of a 32 × 32 matrix has 2**20).
BLOCK_LIMIT = 1 << 20
#: Entries of a node's whole local Jacobian (all blocks of a batch) above which it is too.
TOTAL_LIMIT = 1 << 25
#: Entries of one block above which a recorded gradient (second order) pulls the cotangent
#: through the node's cotangent formula instead of recording the block's values: recording
#: the block traces the formula on ``m²`` unit directions at once, nodes of ``m⁴`` elements.
SECOND_ORDER_LIMIT = 1 << 12

#: Largest tangent stack (elements) that one call of a tangent formula builds.
CHUNK_ELEMENTS = 1 << 22


def core_size(node: Node, shape: tuple[int, ...]) -> int:
    """Elements of one block of an operand or output of shape ``shape``."""
    nbatch = len(node.params["batch"])
    return int(np.prod(shape[nbatch:], dtype=np.int64))


def block_pattern(node: Node, deps: Sequence[Any], out_mask: np.ndarray | None,
                  in_masks: Sequence[np.ndarray | None]) -> Any:
    """Output element ``(b, i)`` depends on every read operand element of block ``b``.

    ``out_mask`` (one block, flat): the output elements that have a derivative (None: all);
    ``in_masks[k]``: the elements of operand k's block that are read (None: all).
    """
    batch: tuple[int, ...] = node.params["batch"]
    nb = int(np.prod(batch, dtype=np.int64))
    terms = []
    for k, d in enumerate(deps):
        if d is None:
            continue
        ic = core_size(node, node.inputs[k].shape)
        cols = np.arange(nb * ic, dtype=np.int64).reshape(nb, ic)
        m = in_masks[k]
        if m is not None:
            cols = cols[:, np.asarray(m, dtype=bool).ravel()]
        rows = np.repeat(np.arange(nb, dtype=np.int64), cols.shape[1])
        r = sp.csr_array((np.ones(rows.size, dtype=bool), (rows, cols.ravel())),
                         shape=(nb, nb * ic))
        terms.append(depsets.apply_linear(r, d))
    per_block = depsets.union(terms)
    if per_block is None:
        return None
    oc = core_size(node, node.out.shape)
    take = np.repeat(np.arange(nb, dtype=np.int64), oc).reshape(nb, oc)
    if out_mask is not None:
        take[:, ~np.asarray(out_mask, dtype=bool).ravel()] = -1
    res: DepSet = depsets.take_rows(per_block, take.ravel())
    return res


def chunked_vjp(tangent: Any, node: Node, k: int, vals: Sequence[Any], out: Any,
                ct: np.ndarray) -> np.ndarray:
    """``ct @ J_k`` from the tangent formula on chunks of unit directions of operand k.

    Exact; each chunk builds at most :data:`CHUNK_ELEMENTS` elements of tangents, so memory
    stays bounded, and the time is one formula evaluation per element of a block.
    """
    batch: tuple[int, ...] = node.params["batch"]
    nb = int(np.prod(batch, dtype=np.int64))
    core = node.inputs[k].shape[len(batch):]
    ic = core_size(node, node.inputs[k].shape)
    oc = core_size(node, node.out.shape)
    q = ct.shape[0]
    c2 = np.asarray(ct, dtype=np.float64).reshape(q, nb, oc)
    res = np.zeros((q, nb, ic))
    step = max(1, CHUNK_ELEMENTS // max(nb * max(ic, oc), 1))
    for j0 in range(0, ic, step):
        j1 = min(j0 + step, ic)
        basis = np.zeros((j1 - j0, ic))
        basis[np.arange(j1 - j0), np.arange(j0, j1)] = 1.0
        t = np.broadcast_to(basis.reshape((j1 - j0, *(1,) * len(batch), *core)),
                            (j1 - j0, *batch, *core))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            part = np.asarray(tangent(node, k, vals, out, t), dtype=np.float64)
        part = part.reshape(j1 - j0, nb, oc)
        if np.isfinite(part).all():
            res[:, :, j0:j1] = np.einsum("qbo,cbo->qbc", c2, part)
        else:  # a derivative that does not exist (NaN) times a zero cotangent: nothing
            for i in range(q):
                prod = np.where(c2[i] == 0, 0.0, part * c2[i])  # (c, nb, oc)
                res[i, :, j0:j1] = prod.sum(axis=2).T
    return res.reshape((q, *node.inputs[k].shape))
