"""``scipy.linalg`` and ``scipy.sparse.linalg`` solves with traced operands.

These scipy functions call ``np.asarray`` on their arguments, so they are traced by
interception (:mod:`sparsejac.tracing.library`, registered with
:func:`~sparsejac.primitives.core.register_library`): while a trace runs, a call with a traced
argument reaches the handler here; any other call runs scipy's own code.

* ``scipy.linalg.solve`` binds :data:`~sparsejac.primitives.dense_linalg.SOLVE` on the matrix
  scipy actually reads (one triangle for ``assume_a="sym"``/``"pos"``, the triangle of a
  triangular solver, the bands of ``"tridiagonal"``, the diagonal), valued by scipy itself;
  ``scipy.linalg.expm`` binds :data:`EXPM` (its derivative is the Fréchet derivative, from
  ``expm([[A, dA], [0, A]])``).
* A traced right-hand side solved with a *constant* factorisation — ``scipy.linalg.lu_solve``,
  ``cho_solve``, ``scipy.sparse.linalg.spsolve``, ``splu(A).solve``, ``factorized(A)`` —
  binds :data:`CONST_SOLVE`, ``X = A⁻¹ B`` with the factorisation as a parameter: its value,
  JVP (``A⁻¹ dB``) and VJP (``A⁻ᵀ ct``) are solves with the factors, and its local Jacobian is
  ``A⁻¹`` on the structure of the factors: for a sparse ``Pr A Pc = L U``, column j of
  ``A⁻¹`` is nonzero on the nodes reachable from j in the graph of L, then of U
  (Gilbert and Peierls), so a block-diagonal or reducible A gives a sparse pattern, not a
  dense block.

``splu`` (and ``factorized``) called *inside* the traced function return a
:class:`TracedSuperLU`, scipy's factorisation whose ``solve`` also takes traced right-hand
sides; a factorisation made before the trace is scipy's own object, whose ``solve`` is
compiled code that numpy gives no hook into (the error says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.kernels import kernel
from sparsejac.primitives import dense_linalg as dl
from sparsejac.primitives import derive
from sparsejac.primitives.core import LocalJac, Primitive, bind, floats, register_library
from sparsejac.primitives.numpy_linalg import batched
from sparsejac.tracing.program import Node
from sparsejac.tracing.tracer import Tracer, concretize

__all__ = [
    "CONST_SOLVE",
    "EXPM",
    "ConstSolve",
    "Expm",
    "Factorization",
    "TracedSuperLU",
    "expm_frechet_stack",
    "inverse_structure",
]


def _traced(a: Any) -> bool:
    return isinstance(a, Tracer) and not a._var.is_const


def _shape(a: Any) -> tuple[int, ...]:
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


# -- the structure of A⁻¹ from the factors ------------------------------------------------------


@kernel()
def _reach_columns(lp, li, up, ui, n):  # type: ignore[no-untyped-def]  # pragma: no cover
    """CSC structure of ``U⁻¹ L⁻¹``: column j = U-reach of the L-reach of j (unsorted)."""
    cap = 4 * n + 16
    out = np.empty(cap, np.int64)
    ptr = np.zeros(n + 1, np.int64)
    mark_l = np.full(n, -1, np.int64)
    mark_u = np.full(n, -1, np.int64)
    stack = np.empty(n, np.int64)
    seen = np.empty(n, np.int64)
    used = 0
    for j in range(n):
        # reach in the graph of L (edge c -> r for L[r, c] != 0)
        ns = 0
        top = 0
        stack[top] = j
        top += 1
        mark_l[j] = j
        while top:
            top -= 1
            c = stack[top]
            seen[ns] = c
            ns += 1
            for e in range(lp[c], lp[c + 1]):
                r = li[e]
                if mark_l[r] != j:
                    mark_l[r] = j
                    stack[top] = r
                    top += 1
        # then in the graph of U from all of them
        top = 0
        for s in range(ns):
            c = seen[s]
            mark_u[c] = j
            stack[top] = c
            top += 1
        count = 0
        while top:
            top -= 1
            c = stack[top]
            if used + count >= cap:
                cap *= 2
                grown = np.empty(cap, np.int64)
                grown[:used + count] = out[:used + count]
                out = grown
            out[used + count] = c
            count += 1
            for e in range(up[c], up[c + 1]):
                r = ui[e]
                if mark_u[r] != j:
                    mark_u[r] = j
                    stack[top] = r
                    top += 1
        used += count
        ptr[j + 1] = used
    return ptr, out[:used]


def inverse_structure(lower: sp.csc_array, upper: sp.csc_array, perm_r: np.ndarray,
                      perm_c: np.ndarray) -> sp.csc_array:
    """Structure of ``A⁻¹`` (boolean CSC) for ``Pr A Pc = L U`` (scipy's SuperLU convention).

    ``A⁻¹ = Pc U⁻¹ L⁻¹ Pr``, so ``A⁻¹[i, j] = M[perm_c[i], perm_r[j]]`` with ``M = U⁻¹ L⁻¹``,
    whose column b holds the nodes reachable from b in the graph of L and then of U.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp, scipy.sparse.linalg as spla
    >>> a = sp.csc_array(np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 3.0]]))
    >>> lu = spla.splu(a)
    >>> inverse_structure(lu.L, lu.U, lu.perm_r, lu.perm_c).toarray().astype(int)
    array([[1, 1, 0],
           [1, 1, 0],
           [0, 0, 1]])
    """
    n = lower.shape[0]
    low = sp.csc_array(lower)
    up = sp.csc_array(upper)
    lp, li = low.indptr.astype(np.int64), low.indices.astype(np.int64)
    upp, ui = up.indptr.astype(np.int64), up.indices.astype(np.int64)
    ptr, idx = _reach_columns(lp, li, upp, ui, n)
    m = sp.csc_array((np.ones(idx.size, dtype=bool), idx, ptr), shape=(n, n))
    inv_c = np.empty(n, dtype=np.int64)
    inv_c[np.asarray(perm_c)] = np.arange(n)
    # rows: M row perm_c[i] -> i; columns: A⁻¹ column j is M column perm_r[j]
    cols = m[:, np.asarray(perm_r)]
    coo = sp.coo_array(cols)
    out = sp.csc_array((coo.data, (inv_c[coo.row], coo.col)), shape=(n, n))
    out.sort_indices()
    return out


@kernel()
def _greedy_groups(cptr, cidx, rptr, ridx, n):  # type: ignore[no-untyped-def]  # pragma: no cover
    """First-fit groups of columns whose structures share no row (distance-2 colouring)."""
    group = np.full(n, -1, np.int64)
    forbidden = np.full(n + 1, -1, np.int64)
    for j in range(n):
        for e in range(cptr[j], cptr[j + 1]):
            i = cidx[e]
            for f in range(rptr[i], rptr[i + 1]):
                jj = ridx[f]
                if group[jj] >= 0:
                    forbidden[group[jj]] = j
        c = 0
        while forbidden[c] == j:
            c += 1
        group[j] = c
    return group


def _column_groups(s: sp.csc_array) -> tuple[np.ndarray, int]:
    """Groups of the columns of a structure that can share a right-hand side, and their count.

    The greedy pass costs the sum of the squared row counts; past a budget (a dense inverse,
    whose columns all conflict anyway) every column is its own group.
    """
    n = s.shape[1]
    rows = sp.csr_array(s)
    work = int(np.sum(np.diff(rows.indptr).astype(np.int64) ** 2))
    if work > 64 * max(s.nnz, n) + 10_000_000:
        return np.arange(n, dtype=np.int64), n
    group = _greedy_groups(s.indptr.astype(np.int64), s.indices.astype(np.int64),
                           rows.indptr.astype(np.int64), rows.indices.astype(np.int64), n)
    return group, int(group.max()) + 1 if n else 0


# -- constant factorisations ---------------------------------------------------------------------


class Factorization:
    """A constant factorisation of an n × n matrix: solves and the structure of its inverse.

    Parameters
    ----------
    solve : callable
        ``(b, trans) -> x`` for ``b`` of shape ``(n,)`` or ``(n, k)`` (``trans``: solve with
        the transpose).
    n : int
        Order of the matrix.
    factors : tuple, optional
        ``(L, U, perm_r, perm_c)`` of a sparse LU; without it the inverse is taken as dense.
    transposed : bool
        This operator is the inverse of the transpose.
    name : str
        What produced it, for the program's repr.
    """

    def __init__(self, solve: Any, n: int, *, factors: Any = None, transposed: bool = False,
                 name: str = "factorization") -> None:
        self._solve = solve
        self.n = int(n)
        self.factors = factors
        self.transposed = bool(transposed)
        self.name = name
        self._structure: sp.csc_array | None = None
        self._values: np.ndarray | None = None

    def solve(self, b: np.ndarray, transpose: bool = False) -> np.ndarray:
        """``op⁻¹ b`` (``transpose``: ``op⁻ᵀ b``)."""
        return np.asarray(self._solve(b, transpose != self.transposed))

    def structure(self) -> sp.csc_array:
        """Boolean CSC structure of ``op⁻¹`` (cached)."""
        if self._structure is None:
            if self.factors is None:
                s = sp.csc_array(np.ones((self.n, self.n), dtype=bool))
            else:
                s = inverse_structure(*self.factors)
                if self.transposed:
                    s = sp.csc_array(s.T)
                    s.sort_indices()
            self._structure = s
        return self._structure

    def inverse_is_dense(self) -> bool:
        """Whether solving is cheaper than multiplying by ``op⁻¹`` (benchmarks/rules.py).

        Dense factors: always (LAPACK). Sparse ones: when ``op⁻¹`` has more than twice the
        entries of L and U (a tridiagonal system's inverse is full; 2 × 2 blocks stay blocks).
        """
        if self.factors is None:
            return True
        low, up = self.factors[0], self.factors[1]
        return bool(self.structure().nnz > 2 * (low.nnz + up.nnz))

    def inverse_values(self, chunk: int = 256) -> np.ndarray:
        """Values of ``op⁻¹`` on :meth:`structure` (CSC order), computed once.

        Columns of ``op⁻¹`` whose structures share no row are solved for together, with the
        sum of their unit vectors as one right-hand side (a greedy colouring of the columns,
        as the compressed Jacobians of this package): two solves for 2 × 2 diagonal blocks of
        any size, one per column when the inverse is dense.
        """
        if self._values is None:
            s = self.structure()
            groups, ngroups = _column_groups(s)
            col_of_entry = np.repeat(groups, np.diff(s.indptr))
            vals = np.empty(s.indices.size)
            for g0 in range(0, ngroups, chunk):
                g1 = min(g0 + chunk, ngroups)
                e = np.zeros((self.n, g1 - g0))
                in_chunk = (groups >= g0) & (groups < g1)
                e[np.flatnonzero(in_chunk), groups[in_chunk] - g0] = 1.0
                x = self.solve(e).reshape(self.n, g1 - g0)
                sel = (col_of_entry >= g0) & (col_of_entry < g1)
                vals[sel] = x[s.indices[sel], col_of_entry[sel] - g0]
            self._values = vals
        return self._values

    def __repr__(self) -> str:
        return f"<{self.name} of order {self.n}{', transposed' if self.transposed else ''}>"


class ConstSolve(Primitive):
    """``X = op⁻¹ B`` for a constant factorisation ``op`` (``node.params["solver"]``).

    B has shape ``(n, *rest)``; every trailing index is one right-hand side. The local
    Jacobian is ``op⁻¹`` on the structure of the factors for every right-hand side; the JVP
    and VJP are solves with the tangent and cotangent blocks (faster than the local Jacobian
    when ``op⁻¹`` is dense: ``O(nnz(L + U))`` per column instead of ``O(n²)``).
    """

    name = "const_solve"

    def impl(self, b: Any, *, solver: Factorization, **params: Any) -> np.ndarray:
        """Solve with the factorisation."""
        b = np.asarray(b, dtype=np.float64)
        flat = b.reshape(b.shape[0], -1)
        x = solver.solve(flat if b.ndim > 1 else b)
        return x.reshape(b.shape)

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """``op⁻¹ ⊗ I`` over the right-hand sides, constant."""
        solver: Factorization = node.params["solver"]
        var = node.inputs[0]
        if not var.active:
            return [None]
        s = solver.structure()
        k = var.size // max(solver.n, 1)
        cols_a = np.repeat(np.arange(solver.n, dtype=np.int64), np.diff(s.indptr))
        rows_a = s.indices.astype(np.int64)
        vals = solver.inverse_values()
        c = np.arange(k, dtype=np.int64)
        rows = (rows_a[:, None] * k + c).ravel()
        cols = (cols_a[:, None] * k + c).ravel()
        return [LocalJac(rows, cols, const=np.repeat(vals, k))]

    def jvp(self, node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None],
            out: Any) -> np.ndarray | None:
        """Solve with the tangent block when ``A⁻¹`` is denser than the factors (fast path)."""
        t = tangents[0]
        if t is None:
            return None
        if not node.params["solver"].inverse_is_dense():
            return derive.derived_jvp(node, vals, tangents, out)
        return self._solve_block(node, t, transpose=False)

    def vjp(self, node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
            ) -> list[np.ndarray | None]:
        """Solve the transpose with the cotangent block, likewise (fast path)."""
        if not node.inputs[0].active:
            return [None]
        if not node.params["solver"].inverse_is_dense():
            return derive.derived_vjp(node, vals, out, ct)
        return [self._solve_block(node, ct, transpose=True)]

    @staticmethod
    def _solve_block(node: Node, t: np.ndarray, *, transpose: bool) -> np.ndarray:
        solver: Factorization = node.params["solver"]
        p = t.shape[0]
        shape = node.inputs[0].shape
        rest = int(np.prod(shape[1:], dtype=np.int64))
        cols = np.moveaxis(t.reshape(p, shape[0], rest), 1, 0).reshape(shape[0], p * rest)
        x = solver.solve(np.ascontiguousarray(cols), transpose).reshape(shape[0], p, rest)
        return np.ascontiguousarray(np.moveaxis(x, 1, 0)).reshape(p, *shape)


CONST_SOLVE = ConstSolve()


def solve_with(solver: Factorization, b: Any, func: str) -> Any:
    """Bind :data:`CONST_SOLVE` for a right-hand side ``b`` of shape ``(n, ...)``."""
    shape = _shape(b)
    if not shape or shape[0] != solver.n:
        raise ValueError(f"{func}: the right-hand side has shape {shape}, the matrix is "
                         f"{solver.n} x {solver.n}")
    return bind(CONST_SOLVE, (b,), {"solver": solver})


def _constant(a: Any, func: str, arg: str, instead: str) -> Any:
    if _traced(a) or (isinstance(a, (tuple, list)) and any(_traced(v) for v in a)):
        raise UnsupportedPrimitiveError(func, f"a traced {arg}; {instead}")
    return concretize(a, f"{arg} of {func}")


# -- matrix exponential ------------------------------------------------------------------------


def expm_frechet_stack(a: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The Fréchet derivative ``L(A, t)`` of ``expm`` for a stack of directions.

    ``expm([[A, E], [0, A]]) = [[expm(A), L(A, E)], [0, expm(A)]]`` (Higham, *Functions of
    Matrices*, 2008, thm. 3.6), evaluated for every direction at once by scipy's batched expm.
    """
    n = a.shape[-1]
    shape = np.broadcast_shapes(a.shape, t.shape)
    big = np.zeros((*shape[:-2], 2 * n, 2 * n))
    big[..., :n, :n] = a
    big[..., n:, n:] = a
    big[..., :n, n:] = t
    flat = big.reshape(-1, 2 * n, 2 * n)
    res = sla.expm(flat).reshape(big.shape)
    return np.ascontiguousarray(res[..., :n, n:])


class Expm(dl.MatrixFunction):
    """``scipy.linalg.expm``."""

    name = "expm"

    def impl(self, a: Any, **params: Any) -> np.ndarray:
        """``scipy.linalg.expm``."""
        return np.asarray(sla.expm(a))

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """The Fréchet derivative (:func:`expm_frechet_stack`)."""
        return expm_frechet_stack(floats(vals[0]), t)

    def reads(self, node: Node, k: int) -> tuple[int | str, ...]:
        """The matrix only."""
        return (0,)


EXPM = Expm()


# -- scipy.linalg ----------------------------------------------------------------------------------

_ASSUME = {
    None: "gen", "gen": "gen", "general": "gen", "banded": "gen",
    "sym": "sym", "symmetric": "sym", "her": "sym", "hermitian": "sym",
    "pos": "sym", "positive definite": "sym",
    "diagonal": "diag", "tridiagonal": "tri",
    "upper triangular": "upper", "lower triangular": "lower",
}


def _read_matrix(a: Any, kind: str, lower: bool) -> Any:
    """The matrix scipy's solver for ``kind`` reads (the rest of ``a`` is never looked at)."""
    n = _shape(a)[-1]
    if kind == "sym":
        tri = np.tril(a) if lower else np.triu(a)
        strict = np.tril(a, -1) if lower else np.triu(a, 1)
        return tri + np.swapaxes(strict, -1, -2)
    if kind == "upper":
        return np.triu(a)
    if kind == "lower":
        return np.tril(a)
    if kind == "diag":
        return a * np.eye(n)
    if kind == "tri":
        band = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1
        return a * band
    return a


@register_library(sla.solve, name="scipy.linalg.solve", family="linalg", via="solve",
                  note="every `assume_a` (the triangle or band it reads), `transposed`, batched")
def _scipy_solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False,
                 overwrite_b: bool = False, check_finite: bool = True, assume_a: Any = None,
                 transposed: bool = False) -> Any:
    if assume_a not in _ASSUME:
        raise ValueError(f"{assume_a} is not a recognized matrix structure")
    shape = _shape(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Expected square matrix, got a1.shape={shape}")
    n = shape[-1]
    a_read = _read_matrix(a, _ASSUME[assume_a], bool(lower))
    vector = len(_shape(b)) == 1
    bb = b[:, None] if vector else b
    if _shape(bb)[-2] != n:
        raise ValueError(f"incompatible shapes: a1.shape={shape} and b1.shape={_shape(b)}")
    kind = _ASSUME[assume_a]
    if kind == "diag":
        x = bb / np.diagonal(a, axis1=-2, axis2=-1)[..., :, None]
        return x[..., 0] if vector else x
    kwargs = {"lower": bool(lower), "assume_a": assume_a, "transposed": bool(transposed),
              "check_finite": False}
    params = {"scipy": kwargs, "transposed": bool(transposed),
              "triangle": kind if kind in ("upper", "lower") else None}
    x = batched(dl.SOLVE, (a_read, bb), (2, 2), params)
    return x[..., 0] if vector else x


@register_library(sla.expm, name="scipy.linalg.expm", family="linalg", via="expm",
                  note="batched; Fréchet derivative by the block method")
def _expm(A: Any) -> Any:
    shape = _shape(A)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError("expected a square matrix (or a stack of them)")
    return batched(EXPM, (A,), (2,))


#: The structures of ``scipy.linalg.inv`` traced: those whose inverse is dense, so that its
#: pattern is exact (a triangular inverse is triangular, with a sparser dependence than a
#: dense inverse's; with ``"diagonal"`` scipy 1.17 returns ``a``'s off-diagonal entries).
_INV_ASSUME = (None, "general", "gen", "sym", "pos", "her")


@register_library(sla.inv, name="scipy.linalg.inv", family="linalg", via="inv",
                  note="general, sym, her, pos (the triangle it reads), batched")
def _scipy_inv(a: Any, overwrite_a: bool = False, check_finite: bool = True, *,
               assume_a: Any = None, lower: bool = False) -> Any:
    if assume_a not in _INV_ASSUME:
        raise UnsupportedPrimitiveError(
            "scipy.linalg.inv", f"assume_a={assume_a!r}; traced: "
            f"{', '.join(map(repr, _INV_ASSUME))}; a triangular matrix: scipy.linalg.solve(a, "
            "np.eye(n), assume_a=...), a diagonal one: 1 / np.diagonal(a)")
    _square(a)
    return np.linalg.inv(_read_matrix(a, _ASSUME[assume_a], bool(lower)))


@register_library(sla.det, name="scipy.linalg.det", family="linalg", via="det",
                  note="as np.linalg.det (exact at singular matrices), batched")
def _scipy_det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    _square(a)
    return np.linalg.det(a)


def _square(a: Any) -> None:
    """Refuse, as scipy does, a matrix (or stack) that is not square."""
    shape = _shape(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Expected square matrix, got a.shape={shape}")


_INSTEAD = ("factorise a constant matrix, or solve with the traced matrix itself: "
            "scipy.linalg.solve(a, b) or np.linalg.solve(a, b)")


@register_library(sla.lu_solve, name="scipy.linalg.lu_solve", family="linalg",
                  via="const_solve", note="constant factorisation, traced right-hand side")
def _lu_solve(lu_and_piv: Any, b: Any, trans: int = 0, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
    lu, piv = (_constant(v, "scipy.linalg.lu_solve", "factorisation `lu_and_piv`", _INSTEAD)
               for v in lu_and_piv)
    if trans not in (0, 1, 2):
        raise ValueError("trans must be 0, 1 or 2")
    lu = np.asarray(lu, dtype=np.float64)
    piv = np.asarray(piv)

    def solve(rhs: np.ndarray, transpose: bool) -> np.ndarray:
        return np.asarray(sla.lu_solve((lu, piv), rhs, trans=1 if transpose else 0))

    solver = Factorization(solve, lu.shape[0], transposed=trans != 0, name="lu_factor")
    return solve_with(solver, b, "scipy.linalg.lu_solve")


@register_library(sla.cho_solve, name="scipy.linalg.cho_solve", family="linalg",
                  via="const_solve", note="constant factorisation, traced right-hand side")
def _cho_solve(c_and_lower: Any, b: Any, overwrite_b: bool = False,
               check_finite: bool = True) -> Any:
    c, low = c_and_lower
    c = np.asarray(_constant(c, "scipy.linalg.cho_solve", "factorisation `c_and_lower`",
                             _INSTEAD), dtype=np.float64)

    def solve(rhs: np.ndarray, transpose: bool) -> np.ndarray:  # symmetric: op = opᵀ
        return np.asarray(sla.cho_solve((c, bool(low)), rhs))

    solver = Factorization(solve, c.shape[0], name="cho_factor")
    return solve_with(solver, b, "scipy.linalg.cho_solve")


# -- scipy.sparse.linalg ---------------------------------------------------------------------------


def sparse_factorization(lu: Any, transposed: bool = False) -> Factorization:
    """A :class:`Factorization` of scipy's ``SuperLU`` object (structure from its factors)."""

    def solve(rhs: np.ndarray, transpose: bool) -> np.ndarray:
        return np.asarray(lu.solve(np.asarray(rhs, dtype=np.float64), "T" if transpose else "N"))

    return Factorization(solve, lu.shape[0], factors=(lu.L, lu.U, lu.perm_r, lu.perm_c),
                         transposed=transposed, name="splu")


class TracedSuperLU:
    """What ``scipy.sparse.linalg.splu`` returns to a traced function.

    scipy's factorisation object (every attribute is the real one's), whose :meth:`solve`
    also takes a traced right-hand side: it then binds :data:`CONST_SOLVE`.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp, scipy.sparse.linalg as spla
    >>> import sparsejac
    >>> a = sp.csc_array(sp.diags_array([1.0, 4.0, 1.0], offsets=[-1, 0, 1], shape=(3, 3)))
    >>> lu = TracedSuperLU(spla.splu(a))  # what f's own call splu(a) returns while tracing
    >>> def f(u):
    ...     return lu.solve(u ** 2)
    >>> sparsejac.jacobian(f, np.ones(3)).toarray().round(4)
    array([[ 0.5357, -0.1429,  0.0357],
           [-0.1429,  0.5714, -0.1429],
           [ 0.0357, -0.1429,  0.5357]])
    """

    def __init__(self, lu: Any) -> None:
        self._lu = lu
        self._solvers: dict[str, Factorization] = {}

    def solve(self, rhs: Any, trans: str = "N") -> Any:
        """``A x = rhs`` (``trans="T"``: ``Aᵀ x = rhs``); traced ``rhs`` allowed."""
        if not isinstance(rhs, Tracer):
            return self._lu.solve(rhs, trans)
        if trans not in ("N", "T", "H"):
            raise ValueError("trans must be 'N', 'T' or 'H'")
        if trans not in self._solvers:
            self._solvers[trans] = sparse_factorization(self._lu, transposed=trans != "N")
        return solve_with(self._solvers[trans], rhs, "SuperLU.solve")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lu, name)

    def __repr__(self) -> str:
        return f"TracedSuperLU({self._lu!r})"


def _sparse_matrix(A: Any, func: str) -> sp.csc_array:
    if isinstance(A, Tracer):
        raise UnsupportedPrimitiveError(
            func, "a traced matrix `A`: the sparse solvers need a constant scipy.sparse matrix "
            "(np.linalg.solve takes a traced dense one)")
    if not sp.issparse(A):
        raise TypeError(f"{func}: `A` must be a scipy.sparse matrix; got {type(A).__name__}")
    return sp.csc_array(A)


@register_library(spla.splu, name="scipy.sparse.linalg.splu", family="linalg",
                  via="const_solve", always=True,
                  note="called inside f, with a constant matrix; `.solve(b)` with traced b")
def _splu(A: Any, permc_spec: Any = None, diag_pivot_thresh: Any = None, relax: Any = None,
          panel_size: Any = None, options: Any = None) -> Any:
    a = _sparse_matrix(A, "scipy.sparse.linalg.splu")
    return TracedSuperLU(spla.splu(a, permc_spec=permc_spec, diag_pivot_thresh=diag_pivot_thresh,
                                   relax=relax, panel_size=panel_size, options=options))


@register_library(spla.factorized, name="scipy.sparse.linalg.factorized", family="linalg",
                  via="const_solve", always=True,
                  note="called inside f, with a constant matrix (SuperLU)")
def _factorized(A: Any) -> Any:
    a = _sparse_matrix(A, "scipy.sparse.linalg.factorized")
    return TracedSuperLU(spla.splu(a)).solve


@register_library(spla.spsolve, name="scipy.sparse.linalg.spsolve", family="linalg",
                  via="const_solve",
                  note="constant sparse matrix, traced dense right-hand side; pattern from the "
                       "structure of the LU factors")
def _spsolve(A: Any, b: Any, permc_spec: Any = None, use_umfpack: bool = True) -> Any:
    a = _sparse_matrix(A, "scipy.sparse.linalg.spsolve")
    if sp.issparse(b):
        raise UnsupportedPrimitiveError("scipy.sparse.linalg.spsolve", "a sparse `b`")
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"matrix must be square (has shape {a.shape})")
    lu = spla.splu(a, permc_spec=permc_spec)
    shape = _shape(b)
    if len(shape) == 2 and shape[1] == 1:  # spsolve returns a vector for a column b
        return np.reshape(solve_with(sparse_factorization(lu), b, "spsolve"), (shape[0],))
    return solve_with(sparse_factorization(lu), b, "scipy.sparse.linalg.spsolve")
