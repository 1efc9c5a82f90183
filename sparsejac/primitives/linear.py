"""Linear maps with a constant sparse matrix: ``out.flat = sum_k M_k @ in_k.flat``.

One primitive, :data:`LINEAR_MAP`, serves scatter-add (``np.add.at``), ``np.bincount`` with
traced weights and products with constant ``scipy.sparse`` matrices (``L @ u``, the PDE idiom).
It states its value and its local Jacobians, the matrices themselves; the pattern
(``deps_out = |M_k| @ deps_k``), jvp (``t_out = t_k @ M_k.T``) and vjp (``ct_k = ct @ M_k``)
are derived from them (:mod:`sparsejac.primitives.derive`).

``M_k = None`` stands for the identity (an operand added unchanged, as ``a`` in
``np.add.at(a, i, b)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.primitives.core import LocalJac, Primitive, bind
from sparsejac.tracing.program import Node

__all__ = ["LINEAR_MAP", "LinearPlan", "apply_sparse_map", "map_jacobian"]


@dataclass
class LinearPlan:
    """The matrices of a linear map (``None``: identity) and the output shape."""

    mats: tuple[sp.csr_array | None, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    @property
    def size(self) -> int:
        """Number of output elements."""
        return int(np.prod(self.shape, dtype=np.int64))


class LinearMap(Primitive):
    """``out.flat = sum_k M_k @ in_k.flat`` for constant sparse ``M_k``."""

    name = "linear_map"

    def impl(self, *vals: Any, plan: LinearPlan, **params: Any) -> np.ndarray:
        """Apply the matrices to the flattened operand values."""
        acc = np.zeros(plan.size, dtype=plan.dtype)
        for m, v in zip(plan.mats, vals, strict=True):
            flat = np.ravel(v)
            acc += flat if m is None else m @ flat
        return acc.reshape(plan.shape)

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """The matrices themselves (constant values)."""
        plan: LinearPlan = node.params["plan"]
        return [map_jacobian(m, var.size) if var.active else None
                for m, var in zip(plan.mats, node.inputs, strict=True)]


def map_jacobian(m: sp.csr_array | None, size: int) -> LocalJac:
    """A linear map's matrix (None: the identity on ``size`` values) as a local Jacobian."""
    if m is None:
        ar = np.arange(size, dtype=np.int64)
        return LocalJac(ar, ar, const=1.0)
    coo = sp.coo_array(m)
    return LocalJac(coo.row.astype(np.int64), coo.col.astype(np.int64),
                    const=np.asarray(coo.data, dtype=np.float64))


LINEAR_MAP = LinearMap()


def apply_sparse_map(
    operands: Sequence[Any], mats: Sequence[sp.csr_array | None], shape: tuple[int, ...],
    dtype: Any = np.float64,
) -> Any:
    """Bind :data:`LINEAR_MAP` for ``out.flat = sum_k M_k @ operands[k].flat``."""
    plan = LinearPlan(tuple(None if m is None else _canonical(m) for m in mats), tuple(shape),
                      np.dtype(dtype))
    return bind(LINEAR_MAP, tuple(operands), {"plan": plan})


def _canonical(m: Any) -> sp.csr_array:
    """``m`` as a CSR array with sorted, unique entries (the caller's matrix untouched).

    scipy allows a matrix to store an entry twice (its products add the copies); the rules
    need each entry once.
    """
    out = sp.csr_array(m)
    if not out.has_canonical_format:
        out = sp.csr_array(m, copy=True)  # (csr_array(m) may share m's arrays)
        out.sum_duplicates()
    return out
