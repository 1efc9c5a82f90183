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

The decompositions (eigh, svd, pinv, lstsq, qr) are in
:mod:`sparsejac.primitives.decompositions`. Derivatives that do not exist are not invented:
the eigenvectors' derivative at coincident eigenvalues, the singular vectors' at coincident or
zero singular values, and that of the non-unique columns of ``svd(full_matrices=True)`` and
``qr(mode="complete")`` are NaN (the function is not differentiable, or not unique, there);
``svd(hermitian=True)`` is refused by its handler.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from sparsejac.primitives import dense_products as dp
from sparsejac.primitives import derive
from sparsejac.primitives.core import LocalJac, Primitive, contiguous, floats
from sparsejac.tracing.program import Node
from sparsejac.tracing.tracer import Tracer

__all__ = [
    "CHOLESKY",
    "DET",
    "INV",
    "LOG_ABS_DET",
    "MATRIX_RANK",
    "SLOGDET_SIGN",
    "SOLVE",
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

    #: The user's call, for messages.
    call = "numpy.linalg"

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """The derivative in the tangent directions ``t`` of operand k: ``(P, *out.shape)``."""
        raise NotImplementedError

    def cotangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                  ct: np.ndarray) -> np.ndarray:
        """The adjoint of :meth:`tangent`: cotangents ``(Q, *out.shape)`` to ``(Q, *shape_k)``.

        Optional (NotImplementedError: none); it must be traceable, as :meth:`tangent`.
        Elements of operand k outside :meth:`in_structure` are zeroed by the caller.
        """
        raise NotImplementedError

    def has_cotangent(self) -> bool:
        """Whether the primitive states :meth:`cotangent`."""
        return type(self).cotangent is not MatrixFunction.cotangent

    def mask(self, node: Node, k: int) -> np.ndarray | None:
        """Structural nonzeros of one block ``(out_core_size, in_core_size)``; None: dense."""
        return None

    def in_structure(self, node: Node, k: int) -> np.ndarray | None:
        """The elements of one block of operand k that are read (core shape); None: all.

        Used without the block (:meth:`by_products`), where :meth:`mask` is too large.
        """
        return None

    def out_structure(self, node: Node) -> np.ndarray | None:
        """The output elements of one block that have a derivative (core shape); None: all."""
        return None

    def block_entries(self, node: Node, k: int) -> int:
        """Entries of one block of the local Jacobian with respect to operand k (dense)."""
        oc = dp.core_size(node, node.out.shape)
        if self.has_column_matrix(node, k):
            orows, nrhs = node.out.shape[-2:]
            return int(orows) * int(node.inputs[k].shape[-2]) * int(nrhs)
        return oc * dp.core_size(node, node.inputs[k].shape)

    def by_products(self, node: Node) -> bool:
        """Whether the node states no local Jacobian and is applied by products instead.

        True when a block of its local Jacobian would have more than
        :data:`~sparsejac.primitives.dense_products.BLOCK_LIMIT` entries, or all blocks
        together more than :data:`~sparsejac.primitives.dense_products.TOTAL_LIMIT`
        (:mod:`sparsejac.primitives.dense_products`).
        """
        hit = node.cache.get("by_products")
        if hit is None:
            nb = int(np.prod(node.params["batch"], dtype=np.int64))
            sizes = [self.block_entries(node, k) for k, v in enumerate(node.inputs) if v.active]
            hit = node.cache["by_products"] = bool(sizes) and (
                max(sizes) > dp.BLOCK_LIMIT or nb * sum(sizes) > dp.TOTAL_LIMIT)
        return bool(hit)

    def pulls_by_formula(self, node: Node) -> bool:
        """Whether a recorded reverse sweep (second order) uses :meth:`cotangent`."""
        if self.by_products(node):
            return True
        return self.has_cotangent() and any(
            self.block_entries(node, k) > dp.SECOND_ORDER_LIMIT
            for k, v in enumerate(node.inputs) if v.active)

    def too_large(self, node: Node, what: str) -> Exception:
        """The error for a node applied by products where ``what`` needs its block."""
        from sparsejac.errors import UnsupportedPrimitiveError

        size = max(self.block_entries(node, k) for k, v in enumerate(node.inputs) if v.active)
        shapes = " and ".join(str(tuple(v.shape)) for v in node.inputs if v.active)
        return UnsupportedPrimitiveError(
            self.call, f"traced operand of shape {shapes}: {what} would need its local "
            f"Jacobian, {size:,} entries per matrix (sparsejac applies such a node by "
            f"products above {dp.BLOCK_LIMIT:,}); compute these derivatives with fewer or "
            "smaller traced matrices, or by finite differences of a gradient",
            problem="is too large here")

    def pattern(self, node: Node, deps: Sequence[Any], local: bool) -> Any:
        """Derived from the local Jacobian; by products: dense within each block."""
        if not self.by_products(node):
            return derive.derived_pattern(node, deps, local)
        return dp.block_pattern(node, deps, self.out_structure(node),
                                [self.in_structure(node, k) for k in range(len(deps))])

    def vjp(self, node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
            ) -> list[np.ndarray | None]:
        """Derived from the local Jacobian; by products: the cotangent formula."""
        if not self.by_products(node):
            return derive.derived_vjp(node, vals, out, ct)
        res: list[np.ndarray | None] = []
        om = self.out_structure(node)
        if om is not None:
            ct = np.where(om, ct, 0.0)
        for k, var in enumerate(node.inputs):
            if not var.active:
                res.append(None)
                continue
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                if self.has_cotangent():
                    g = np.asarray(self.cotangent(node, k, vals, out, ct), dtype=np.float64)
                else:
                    g = dp.chunked_vjp(self.tangent, node, k, vals, out, ct)
            g = np.broadcast_to(g, (ct.shape[0], *var.shape))
            im = self.in_structure(node, k)
            res.append(np.ascontiguousarray(g if im is None else np.where(im, g, 0.0)))
        return res

    def traced_cotangents(self, node: Node, vals: Sequence[Any], out: Any, ct: Any
                          ) -> list[Any]:
        """:meth:`cotangent` of one cotangent ``ct`` (out's shape) on traced values."""
        if not self.has_cotangent():
            raise self.too_large(node, "a second derivative")
        c = ct.reshape((1, *node.out.shape))
        om = self.out_structure(node)
        if om is not None:
            c = c * om.astype(np.float64)
        res: list[Any] = []
        for k, var in enumerate(node.inputs):
            if not var.active:
                res.append(None)
                continue
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                g = self.cotangent(node, k, vals, out, c)
            im = self.in_structure(node, k)
            if im is not None:
                g = g * im.astype(np.float64)
            res.append(g.reshape(var.shape) if g.shape == (1, *var.shape)
                       else np.broadcast_to(g, (1, *var.shape)).reshape(var.shape))
        return res

    def reads(self, node: Node, k: int) -> tuple[int | str, ...]:
        """The operands (indices, ``"out"``) the derivative with respect to operand k reads."""
        return (*range(len(node.inputs)), "out")

    def jvp(self, node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None],
            out: Any) -> np.ndarray | None:
        """The tangent formula on the tangent block (fast path).

        ``p`` directions cost ``p`` evaluations of the formula, where the derived rule builds
        the local Jacobian (one evaluation per element of a block) and multiplies by it:
        benchmarks/rules.py measures 10x (3 × 3) to 400x (40 × 40) for a traced solve. Only
        for dense blocks: where a mask states structural zeros the formula would leave
        rounding there (Cholesky, QR), and the derived rule is used.
        """
        if self.by_products(node):
            return self._formula_jvp(node, vals, tangents, out)
        dense = node.cache.get("dense_blocks")
        if dense is None:
            dense = node.cache["dense_blocks"] = all(
                self.mask(node, k) is None and self.column_mask(node, k) is None
                for k, v in enumerate(node.inputs) if v.active)
        if not dense:
            return derive.derived_jvp(node, vals, tangents, out)
        acc = None
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for k, t in enumerate(tangents):
                if t is None:
                    continue
                term = np.asarray(self.tangent(node, k, vals, out, t), dtype=np.float64)
                acc = term if acc is None else acc + term
        if acc is None:
            return None
        p = acc.shape[0]
        return np.ascontiguousarray(np.broadcast_to(acc, (p, *node.out.shape)))

    def _formula_jvp(self, node: Node, vals: Sequence[Any],
                     tangents: Sequence[np.ndarray | None], out: Any) -> np.ndarray | None:
        """The tangent formula, with the read elements and derivative outputs stated."""
        acc = None
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for k, t in enumerate(tangents):
                if t is None:
                    continue
                im = self.in_structure(node, k)
                tk = t if im is None else np.where(im, t, 0.0)
                term = np.asarray(self.tangent(node, k, vals, out, tk), dtype=np.float64)
                acc = term if acc is None else acc + term
        if acc is None:
            return None
        om = self.out_structure(node)
        if om is not None:
            acc = np.where(om, acc, 0.0)
        p = acc.shape[0]
        return np.ascontiguousarray(np.broadcast_to(acc, (p, *node.out.shape)))

    def column_matrix(self, node: Node, k: int, vals: Sequence[Any], out: Any
                      ) -> np.ndarray | None:
        """For a right-hand side operand k: the matrix M with ``dX[:, c] = M dB[:, c]``.

        ``(*batch, out_rows, in_rows)``, the same for every column c (a solve's ``A⁻¹``); None
        (the default) for other operands. The local Jacobian is then M repeated over the
        columns, computed once instead of once per column.
        """
        return None

    def has_column_matrix(self, node: Node, k: int) -> bool:
        """Whether :meth:`column_matrix` gives a matrix for operand ``k``.

        Decided from the node alone: the prepared engine asks after the trace-point values of
        traced operands are released.
        """
        return False

    def column_mask(self, node: Node, k: int) -> np.ndarray | None:
        """Structural nonzeros of :meth:`column_matrix` ``(out_rows, in_rows)``; None: dense."""
        return None

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """Block-diagonal local Jacobians: the tangent formula on unit tangents of a block.

        None (no local Jacobian) for a node applied by products (:meth:`by_products`).
        """
        if self.by_products(node):
            return None
        batch: tuple[int, ...] = node.params["batch"]
        nb = int(np.prod(batch, dtype=np.int64))
        oc = int(np.prod(node.out.shape[len(batch):], dtype=np.int64))
        consts = [v.value for v in node.inputs]
        res: list[LocalJac | None] = []
        for k, var in enumerate(node.inputs):
            if not var.active:
                res.append(None)
                continue
            ic = int(np.prod(var.shape[len(batch):], dtype=np.int64))
            base = np.arange(nb, dtype=np.int64)[:, None]
            if self.has_column_matrix(node, k):
                rows, cols, fn = self._columnwise(node, k)
            else:
                m = self.mask(node, k)
                if m is None:
                    r = np.repeat(np.arange(oc, dtype=np.int64), ic)
                    c = np.tile(np.arange(ic, dtype=np.int64), oc)
                else:
                    r, c = (a.astype(np.int64) for a in np.nonzero(m))
                rows = (base * oc + r).ravel()
                cols = (base * ic + c).ravel()
                fn = functools.partial(_block_values, self, node, k, r, c)
            rd = self.reads(node, k)
            if all(x != "out" and node.inputs[int(x)].is_const for x in rd):
                res.append(LocalJac(rows, cols, const=fn(consts, node.out.value)))
            else:
                res.append(LocalJac(rows, cols, dyn=fn))
        return res

    def _columnwise(self, node: Node, k: int) -> tuple[np.ndarray, np.ndarray, Any]:
        """Entries ``(b, i, p, c)``: output ``(b, i, c)`` reads operand ``(b, p, c)``."""
        batch: tuple[int, ...] = node.params["batch"]
        nb = int(np.prod(batch, dtype=np.int64))
        orows, nrhs = node.out.shape[-2:]
        irows = node.inputs[k].shape[-2]
        m = self.column_mask(node, k)
        if m is None:
            m = np.ones((orows, irows), dtype=bool)
        i, p = (a.astype(np.int64) for a in np.nonzero(m))
        c = np.arange(nrhs, dtype=np.int64)
        b = np.arange(nb, dtype=np.int64)[:, None, None]
        rows = ((b * orows + i[None, :, None]) * nrhs + c).ravel()
        cols = ((b * irows + p[None, :, None]) * nrhs + c).ravel()

        def fn(vals: Sequence[Any], out: Any) -> np.ndarray:
            mat = self.column_matrix(node, k, vals, out)
            assert mat is not None
            v = floats(mat).reshape(nb, orows, irows)[:, i, p]
            return np.repeat(v, nrhs, axis=1).ravel()

        return rows, cols, fn


#: Largest tangent stack (elements) that one call of a tangent formula builds.
_CHUNK_ELEMENTS = 1 << 22


def _block_values(prim: MatrixFunction, node: Node, k: int, r: np.ndarray, c: np.ndarray,
                  vals: Sequence[Any], out: Any) -> np.ndarray:
    """The tangent formula on the unit tangents of a block, in chunks of directions."""
    batch: tuple[int, ...] = node.params["batch"]
    nb = int(np.prod(batch, dtype=np.int64))
    core = node.inputs[k].shape[len(batch):]
    ic = int(np.prod(core, dtype=np.int64))
    oc = int(np.prod(node.out.shape[len(batch):], dtype=np.int64))
    step = max(1, _CHUNK_ELEMENTS // max(nb * max(ic, oc), 1))
    pieces = []
    for j0 in range(0, ic, step):
        j1 = min(j0 + step, ic)
        basis = np.zeros((j1 - j0, ic))  # rows j0..j1 of the identity
        basis[np.arange(j1 - j0), np.arange(j0, j1)] = 1.0
        basis = basis.reshape((j1 - j0, *(1,) * len(batch), *core))
        t = np.broadcast_to(basis, (j1 - j0, *batch, *core))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            part = floats(prim.tangent(node, k, vals, out, t))
        pieces.append(part.reshape(j1 - j0, nb, oc).transpose(1, 2, 0))
    y = pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=2)
    return contiguous(y[:, r, c]).ravel()


# -- solve and inverse ---------------------------------------------------------------------


class Solve(MatrixFunction):
    """``X = solve(A, B)`` with A ``(*batch, n, n)`` and B ``(*batch, n, k)``.

    ``params["scipy"]``: keyword arguments of ``scipy.linalg.solve`` that compute the value
    (``A`` is then the matrix scipy reads); ``params["transposed"]``: solve ``Aᵀ X = B``.
    """

    name = "solve"
    call = "np.linalg.solve"

    def impl(self, a: Any, b: Any, *, scipy: Any = None, **params: Any) -> np.ndarray:
        """``np.linalg.solve`` (or ``scipy.linalg.solve``)."""
        if scipy is not None:
            from scipy.linalg import solve

            return np.asarray(solve(a, b, **scipy))
        return np.asarray(np.linalg.solve(a, b))

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """``-A⁻¹ dA X`` (k = 0) or ``A⁻¹ dB`` (k = 1)."""
        return _solve_tangent(floats(vals[0]), out, k, t,
                              bool(node.params.get("transposed")))

    def cotangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                  ct: np.ndarray) -> np.ndarray:
        """``B̄ = A⁻ᵀ X̄`` and ``Ā = −B̄ Xᵀ`` (transposed: ``B̄ = A⁻¹ X̄``, ``Ā = −X B̄ᵀ``)."""
        a = floats(vals[0])
        transposed = bool(node.params.get("transposed"))
        ainv = _inv(a)
        bbar = (ainv if transposed else _mT(ainv)) @ ct
        if k == 1:
            return floats(bbar)
        return floats(-(out @ _mT(bbar)) if transposed else -(bbar @ _mT(out)))

    def in_structure(self, node: Node, k: int) -> np.ndarray | None:
        """The triangle of a triangular A."""
        tri = node.params.get("triangle")
        if tri is None or k != 0:
            return None
        n = node.out.shape[-2]
        full = np.ones((n, n), dtype=bool)
        return np.triu(full) if tri == "upper" else np.tril(full)

    def column_matrix(self, node: Node, k: int, vals: Sequence[Any], out: Any
                      ) -> np.ndarray | None:
        """``dX[:, c] = A⁻¹ dB[:, c]``: M = A⁻¹ (``A⁻ᵀ`` for a transposed solve)."""
        if k == 0:
            return None
        a = floats(vals[0])
        return _inv(_mT(a) if node.params.get("transposed") else a)

    def has_column_matrix(self, node: Node, k: int) -> bool:
        """The right-hand side's (``A⁻¹``)."""
        return k == 1

    def mask(self, node: Node, k: int) -> np.ndarray | None:
        """A triangular A (``params["triangle"]``): the structure of the derivative in A.

        It is the nonzeros of the derivative at a random triangular matrix: products of exact
        zeros are exact zeros, so that is the structure.
        """
        tri = node.params.get("triangle")
        if tri is None:
            return None
        n, nrhs = node.out.shape[-2:]
        a, _, x = self._random_triangular(node)
        y = _solve_tangent(a, x, 0, np.eye(n * n).reshape(n * n, n, n),
                           bool(node.params.get("transposed")))
        return np.asarray(y.reshape(n * n, n * nrhs).T != 0)

    def column_mask(self, node: Node, k: int) -> np.ndarray | None:
        """A triangular A has a triangular inverse."""
        if node.params.get("triangle") is None:
            return None
        a, _, _ = self._random_triangular(node)
        return np.asarray(_inv(_mT(a) if node.params.get("transposed") else a) != 0)

    @staticmethod
    def _random_triangular(node: Node) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n, nrhs = node.out.shape[-2:]
        rng = np.random.default_rng(0)
        a = rng.uniform(0.5, 1.0, (n, n)) + n * np.eye(n)
        a = np.triu(a) if node.params["triangle"] == "upper" else np.tril(a)
        b = rng.uniform(0.5, 1.0, (n, nrhs))
        x = np.linalg.solve(_mT(a) if node.params.get("transposed") else a, b)
        return a, b, x

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
        return floats(-(ainv @ (t @ x)))
    return floats(ainv @ t)


class Inv(MatrixFunction):
    """``np.linalg.inv``."""

    name = "inv"
    call = "np.linalg.inv"

    def impl(self, a: Any, **params: Any) -> np.ndarray:
        """``np.linalg.inv``."""
        return np.asarray(np.linalg.inv(a))

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """``-A⁻¹ dA A⁻¹``."""
        return floats(-(out @ t @ out))

    def cotangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                  ct: np.ndarray) -> np.ndarray:
        """``Ā = −A⁻ᵀ Ȳ A⁻ᵀ``."""
        yt = _mT(out)
        return floats(-(yt @ ct @ yt))


# -- determinants --------------------------------------------------------------------------


def adjugate(a: np.ndarray) -> np.ndarray:
    """``adj(a)`` (batched) from the SVD: exact also for singular matrices.

    ``a = U S Vᵀ`` gives ``adj(a) = det(V) V adj(S) det(U) Uᵀ`` with
    ``adj(S)_ii = prod_{j≠i} s_j`` (products from both sides, no division). A traced ``a``
    (a recorded reverse sweep, second order) of size up to 3 uses the cofactors, polynomials
    exact everywhere; a larger one ``det(a) inv(a)``: exact away from singular matrices, where
    numpy's inverse raises ``LinAlgError``.
    """
    if isinstance(a, Tracer):
        n = a.shape[-1]
        if n <= 3:
            return _cofactor_adjugate(a, n)
        return np.linalg.det(a)[..., None, None] * np.linalg.inv(a)
    u, s, vh = np.linalg.svd(a)
    n = s.shape[-1]
    left = np.concatenate([np.ones((*s.shape[:-1], 1)), np.cumprod(s, axis=-1)[..., :-1]],
                          axis=-1)
    right = np.flip(np.cumprod(np.flip(s, -1), axis=-1), -1)
    right = np.concatenate([right[..., 1:], np.ones((*s.shape[:-1], 1))], axis=-1)
    adj_s = left * right if n else s
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return np.asarray(sign[..., None, None] * (_mT(vh) * adj_s[..., None, :]) @ _mT(u))


def _cofactor_adjugate(a: Any, n: int) -> Any:
    """``adj(a)`` of a traced stack of 1×1, 2×2 or 3×3 matrices from its cofactors."""
    if n == 1:
        return a * 0.0 + 1.0
    if n == 2:
        rows = [[a[..., 1, 1], -a[..., 0, 1]], [-a[..., 1, 0], a[..., 0, 0]]]
    else:
        def cof(i: int, j: int) -> Any:  # the (i, j) cofactor, by the cyclic rule
            i1, i2, j1, j2 = (i + 1) % 3, (i + 2) % 3, (j + 1) % 3, (j + 2) % 3
            return a[..., i1, j1] * a[..., i2, j2] - a[..., i1, j2] * a[..., i2, j1]

        rows = [[cof(j, i) for j in range(3)] for i in range(3)]  # adj = cofactorsᵀ
    return np.stack([np.stack(r, axis=-1) for r in rows], axis=-2)


class Det(MatrixFunction):
    """``np.linalg.det``."""

    name = "det"
    call = "np.linalg.det"

    def impl(self, a: Any, **params: Any) -> np.ndarray:
        """``np.linalg.det``."""
        return np.asarray(np.linalg.det(a))

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """``tr(adj(A) dA)``."""
        adj = adjugate(floats(vals[0]))
        return floats(np.einsum("...ji,p...ij->p...", adj, t))

    def cotangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                  ct: np.ndarray) -> np.ndarray:
        """``Ā = d̄ adj(A)ᵀ``."""
        return floats(ct[..., None, None] * _mT(adjugate(floats(vals[0]))))

    def reads(self, node: Node, k: int) -> tuple[int | str, ...]:
        """The matrix only."""
        return (0,)


class LogAbsDet(MatrixFunction):
    """``np.linalg.slogdet(a)[1]``."""

    name = "logabsdet"
    call = "np.linalg.slogdet"

    def impl(self, a: Any, **params: Any) -> np.ndarray:
        """``np.linalg.slogdet(a).logabsdet``."""
        return np.asarray(np.linalg.slogdet(a)[1])

    def tangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                t: np.ndarray) -> np.ndarray:
        """``tr(A⁻¹ dA)``."""
        ainv = _inv(floats(vals[0]))
        return floats(np.einsum("...ji,p...ij->p...", ainv, t))

    def cotangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                  ct: np.ndarray) -> np.ndarray:
        """``Ā = l̄ A⁻ᵀ``."""
        return floats(ct[..., None, None] * _mT(_inv(floats(vals[0]))))

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
    call = "np.linalg.cholesky"

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

    def cotangent(self, node: Node, k: int, vals: Sequence[Any], out: Any,
                  ct: np.ndarray) -> np.ndarray:
        """``G = L⁻ᵀ Φ(Lᵀ L̄) L⁻¹``; ``Ā = tril(G) + tril(Gᵀ, −1)`` (the triangle read)."""
        upper = node.params["upper"]
        low = _mT(out) if upper else out
        lbar = _mT(ct) if upper else ct
        n = low.shape[-1]
        phi = np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)
        linv = _inv(low)
        g = _mT(linv) @ ((_mT(low) @ lbar) * phi) @ linv
        if upper:
            return floats(np.triu(g) + np.triu(_mT(g), 1))
        return floats(np.tril(g) + np.tril(_mT(g), -1))

    def in_structure(self, node: Node, k: int) -> np.ndarray | None:
        """The triangle that is read."""
        n = node.out.shape[-1]
        full = np.ones((n, n), dtype=bool)
        return np.triu(full) if node.params["upper"] else np.tril(full)

    def out_structure(self, node: Node) -> np.ndarray | None:
        """The factor's triangle."""
        return self.in_structure(node, 0)

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


SOLVE = Solve()
INV = Inv()
DET = Det()
LOG_ABS_DET = LogAbsDet()
SLOGDET_SIGN = SlogdetSign()
MATRIX_RANK = MatrixRank()
CHOLESKY = Cholesky()
