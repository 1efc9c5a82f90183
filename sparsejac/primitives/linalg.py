"""Contractions, products with constant sparse matrices, and ``np.linalg.norm``.

Contractions: ``einsum``, ``matmul``/``@``, ``dot``, ``inner``, ``outer``, ``tensordot``,
``kron``; constant ``scipy.sparse`` matrices times traced arrays.

Every dense contraction is normalised to one explicit einsum (:class:`Contraction`), whatever
the numpy spelling, and any operand may be traced:

* pattern: for each traced operand k, the 0/1 matrix ``R_k`` linking output elements to the
  elements of operand k that enter their sum, computed by an einsum over indicator arrays
  (a constant operand's zeros are structural zeros; a traced one is taken as nonzero);
* jvp: the product rule, one einsum per traced operand with the seed axis as an extra index;
* vjp: one einsum per traced operand contracting the cotangent with the other operands.

A constant ``scipy.sparse`` matrix times a traced array (``L @ u``, the PDE idiom) binds the
sparse :data:`~sparsejac.primitives.linear.LINEAR_MAP` instead, with ``L`` itself as the rule.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.numeric import einsum0
from sparsejac.primitives.core import (
    LocalJac,
    Primitive,
    bind,
    contiguous,
    floats,
    register_function,
    register_library,
    register_ufunc,
)
from sparsejac.primitives.linear import apply_sparse_map
from sparsejac.tracing.program import Node
from sparsejac.tracing.tracer import Tracer

__all__ = ["CONTRACTION", "Contraction", "contract", "parse_einsum"]

_LETTERS = string.ascii_letters
#: largest dense indicator tensor the pattern rule of a contraction may build
MAX_PATTERN_WORK = 50_000_000


def _shape(a: Any) -> tuple[int, ...]:
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def parse_einsum(subscripts: str, shapes: Sequence[tuple[int, ...]]
                 ) -> tuple[list[str], str]:
    """Explicit letters per operand and for the output, with ``...`` expanded.

    Examples
    --------
    >>> parse_einsum("...ij,jk", [(2, 3, 4), (4, 5)])
    (['aij', 'jk'], 'aik')
    >>> parse_einsum("ii", [(3, 3)])
    (['ii'], '')
    """
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        lhs, rhs = subscripts.split("->")
        explicit = True
    else:
        lhs, rhs, explicit = subscripts, "", False
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise ValueError(
            f"einsum: {len(ins)} operands in the subscripts, {len(shapes)} given"
        )
    used = set(subscripts) - set(".,->")
    free = [c for c in _LETTERS if c not in used]
    ell_nd = 0
    for s, shp in zip(ins, shapes, strict=True):
        if "..." in s:
            ell_nd = max(ell_nd, len(shp) - (len(s) - 3))
    ell = "".join(free[:ell_nd])
    out_ins = []
    for s, shp in zip(ins, shapes, strict=True):
        if "..." in s:
            k = len(shp) - (len(s) - 3)
            s = s.replace("...", ell[ell_nd - k:] if k else "")
        if len(s) != len(shp):
            raise ValueError(f"einsum: subscripts {s!r} do not match an operand of shape {shp}")
        out_ins.append(s)
    if explicit:
        out = rhs.replace("...", ell)
    else:
        counts: dict[str, int] = {}
        for s in out_ins:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return out_ins, out


def _letter_sizes(ins: Sequence[str], shapes: Sequence[tuple[int, ...]]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for s, shp in zip(ins, shapes, strict=True):
        for c, n in zip(s, shp, strict=True):
            if sizes.get(c, 1) not in (1, n) and n != 1:
                raise ValueError(f"einsum: index {c!r} has sizes {sizes[c]} and {n}")
            if c not in sizes or sizes[c] == 1:  # (a size 1 broadcasts, to 0 too: an empty
                sizes[c] = n                     # block of generic code, A[:, :0] @ x[:0])
    return sizes


class Contraction(Primitive):
    """``np.einsum(ins -> out, *operands)`` with any operands traced."""

    name = "einsum"

    def impl(self, *vals: Any, ins: tuple[str, ...], out: str, **p: Any) -> np.ndarray:
        """Evaluate the einsum."""
        return np.asarray(np.einsum(f"{','.join(ins)}->{out}", *vals, optimize=len(vals) > 2))

    @staticmethod
    def _operand_map(node: Node, k: int, vals: Sequence[Any] | None) -> tuple[str, np.ndarray]:
        """``W[L]`` = d out / d operand k over the letters ``L = out + ins[k]``.

        With ``vals=None`` it is the structural indicator (a traced operand counts as
        nonzero everywhere, a constant one by its nonzeros); otherwise the actual values.
        """
        ins: tuple[str, ...] = node.params["ins"]
        out: str = node.params["out"]
        sizes: dict[str, int] = node.params["sizes"]
        letters = "".join(dict.fromkeys(out + ins[k]))
        work = int(np.prod([sizes[c] for c in letters], dtype=np.int64))
        if work > MAX_PATTERN_WORK:
            raise UnsupportedPrimitiveError(
                "numpy.einsum", f"the dense pattern rule would need {work:,} entries; "
                "use a scipy.sparse matrix for large constant operators"
            )
        specs, ops = [], []
        for i, var in enumerate(node.inputs):
            if i == k:
                continue
            if vals is not None:
                op = floats(vals[i])
            elif var.is_const:
                op = (np.asarray(var.value) != 0).astype(np.float64)
            else:
                op = np.broadcast_to(1.0, var.shape)
            specs.append(ins[i])
            ops.append(op)
        present = set("".join(specs))
        for c in letters:
            if c not in present:
                specs.append(c)
                ops.append(np.ones(sizes[c]))
        w = np.einsum(f"{','.join(specs)}->{letters}", *ops) if ops else np.ones(())
        return letters, w

    def _structure(self, node: Node, k: int) -> tuple[np.ndarray, np.ndarray, tuple[Any, ...]]:
        """(rows, cols, coords) of the structural nonzeros of d out / d operand k."""
        ins: tuple[str, ...] = node.params["ins"]
        out: str = node.params["out"]
        letters, w = self._operand_map(node, k, None)
        coords = np.nonzero(w != 0) if np.ndim(w) else ()  # (all 0-d: einsum(",", a, b))
        coord = dict(zip(letters, coords, strict=True))
        nnz = coords[0].size if coords else int(w != 0)
        rows = (np.ravel_multi_index(tuple(coord[c] for c in out), node.out.shape)
                if out else np.zeros(nnz, dtype=np.int64))
        cols = (np.ravel_multi_index(tuple(coord[c] for c in ins[k]), node.inputs[k].shape)
                if ins[k] else np.zeros(nnz, dtype=np.int64))
        return rows.astype(np.int64), cols.astype(np.int64), coords

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """The structural map, valued by the other operands (constant when they are)."""
        res: list[LocalJac | None] = []
        for k, var in enumerate(node.inputs):
            if not var.active:
                res.append(None)
                continue
            rows, cols, coords = self._structure(node, k)
            others_const = all(v.is_const for i, v in enumerate(node.inputs) if i != k)
            if others_const:
                _, w = self._operand_map(node, k, [v.value for v in node.inputs])
                res.append(LocalJac(rows, cols, const=np.ascontiguousarray(w[coords],
                                                                           dtype=np.float64)))
            else:
                res.append(LocalJac(rows, cols,
                                    dyn=functools.partial(_contraction_values, node, k, coords)))
        return res

    def jvp(self, node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None],
            out: Any) -> np.ndarray | None:
        """Product rule with the seed axis as an extra einsum index."""
        ins: tuple[str, ...] = node.params["ins"]
        outs: str = node.params["out"]
        z = node.params["seed"]
        acc = None
        for k, t in enumerate(tangents):
            if t is None:
                continue
            specs = [z + s if i == k else s for i, s in enumerate(ins)]
            ops = [t if i == k else v for i, v in enumerate(vals)]
            term = _einsum0(f"{','.join(specs)}->{z}{outs}", ops)
            acc = term if acc is None else acc + term
        return acc

    def vjp(self, node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
            ) -> list[np.ndarray | None]:
        """Contract the cotangent with the other operands."""
        ins: tuple[str, ...] = node.params["ins"]
        outs: str = node.params["out"]
        sizes: dict[str, int] = node.params["sizes"]
        z = node.params["seed"]
        res: list[np.ndarray | None] = []
        for k, var in enumerate(node.inputs):
            if not var.active:
                res.append(None)
                continue
            mine = ins[k]
            uniq = "".join(dict.fromkeys(mine))  # a repeated index ("ii") reads a diagonal
            others = [s for i, s in enumerate(ins) if i != k]
            avail = set(outs) | set("".join(others))
            keep = "".join(c for c in uniq if c in avail)
            ops = [v for i, v in enumerate(vals) if i != k]
            g = _einsum0(f"{','.join([z + outs, *others])}->{z}{keep}", [ct, *ops])
            q = ct.shape[0]
            if keep != uniq:  # indices summed inside operand k only: broadcast back
                shape = [q] + [sizes[c] if c in keep else 1 for c in uniq]
                g = np.broadcast_to(g.reshape(shape), (q, *[sizes[c] for c in uniq]))
            if uniq != mine:  # scatter onto the diagonal that was read
                full = np.zeros((q, *var.shape))
                np.einsum(f"{z}{mine}->{z}{uniq}", full)[...] = g
                g = full
            res.append(g)
        return res


CONTRACTION = Contraction()


def _einsum0(subscripts: str, ops: Sequence[Any]) -> np.ndarray:
    """``np.einsum`` of a rule's operands, with :func:`~sparsejac.numeric.mul0`'s ``0 · inf = 0``.

    Finite operands take numpy's optimised contraction; two with an infinity or a NaN (a
    cotangent through ``sqrt`` at 0 times a zero residual) take
    :func:`~sparsejac.numeric.einsum0`, so that a zero factor contributes nothing, as it does
    in every other rule (found from outside: ``sqrt((x - c) @ (x - c))`` at ``x = c`` had a
    NaN gradient in reverse mode, and ``sqrt(x @ x) + x`` at 0 an all-NaN Jacobian).
    """
    arrs = [np.asarray(o, dtype=np.float64) for o in ops]
    if len(arrs) == 2 and not all(np.isfinite(a).all() for a in arrs):
        return einsum0(subscripts, arrs[0], arrs[1])
    return np.asarray(np.einsum(subscripts, *arrs, optimize=True))


def contract(subscripts: str, *operands: Any) -> Any:
    """Bind one einsum over ``operands`` (Tracers or constants)."""
    shapes = [_shape(o) for o in operands]
    ins, out = parse_einsum(subscripts, shapes)
    sizes = _letter_sizes(ins, shapes)
    # operands with a size-1 axis against a longer index are broadcast first, so the rules
    # below only see consistent index sizes
    operands = tuple(
        o if shp == tuple(sizes[c] for c in s)
        else np.broadcast_to(o, tuple(sizes[c] for c in s))
        for o, s, shp in zip(operands, ins, shapes, strict=True)
    )
    seed = next(c for c in _LETTERS if c not in "".join(ins) + out)
    return bind(CONTRACTION, operands,
                {"ins": tuple(ins), "out": out, "sizes": sizes, "seed": seed})


def _contraction_values(node: Node, k: int, coords: tuple[Any, ...], vals: Sequence[Any],
                        out: Any) -> np.ndarray:
    _, w = Contraction._operand_map(node, k, vals)
    return contiguous(w[coords])


# ---------------------------------------------------------------------------------------
# constant sparse matrices
# ---------------------------------------------------------------------------------------


def _sparse_times(a: Any, b: Any) -> Any:
    """``a @ b`` where exactly one of them is a constant scipy.sparse matrix.

    A complex matrix times a real traced array is a complex intermediate: the products with
    its real and imaginary parts.
    """
    mat = a if sp.issparse(a) else b
    if mat.dtype.kind == "c":
        from sparsejac.primitives import complex_pairs

        re = _sparse_times(mat.real, b) if mat is a else _sparse_times(a, mat.real)
        im = _sparse_times(mat.imag, b) if mat is a else _sparse_times(a, mat.imag)
        return complex_pairs._make(re, im, tuple(re.shape))
    if sp.issparse(a):
        m = sp.csr_array(a)
        if b.ndim == 1:
            return apply_sparse_map((b,), (m,), (m.shape[0],))
        if b.ndim == 2:
            k = b.shape[1]
            return apply_sparse_map((b,), (sp.kron(m, sp.eye_array(k), format="csr"),),
                                    (m.shape[0], k))
        raise UnsupportedPrimitiveError("matmul", "a sparse matrix times a traced array of "
                                        f"{b.ndim} dimensions")
    m = sp.csr_array(b)
    if a.ndim == 1:
        return apply_sparse_map((a,), (sp.csr_array(m.T),), (m.shape[1],))
    if a.ndim == 2:
        r = a.shape[0]
        return apply_sparse_map((a,), (sp.kron(sp.eye_array(r), m.T, format="csr"),),
                                (r, m.shape[1]))
    raise UnsupportedPrimitiveError("matmul", f"a traced array of {a.ndim} dimensions times a "
                                    "sparse matrix")


def _check_sparse_shapes(a: Any, b: Any) -> None:
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:  # spmatrix * traced scalar reaches matmul through `*`
        raise UnsupportedPrimitiveError(
            "scipy.sparse product", "a sparse matrix scaled by a traced scalar; write "
            "c * (L @ u) instead of (c * L) @ u"
        )
    inner_a = sa[-1]
    inner_b = sb[0] if len(sb) == 1 else sb[-2]
    if inner_a != inner_b:
        raise ValueError(f"matmul: dimension mismatch, shapes {sa} and {sb}")


def _matmul(a: Any, b: Any, **kwargs: Any) -> Any:
    if kwargs.get("dtype") is not None or kwargs.get("axes") is not None:
        raise UnsupportedPrimitiveError("numpy.matmul", f"keyword arguments {sorted(kwargs)}")
    if sp.issparse(a) or sp.issparse(b):
        _check_sparse_shapes(a, b)
        return _sparse_times(a, b)
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    if na == 1 and nb == 1:
        return contract("i,i->", a, b)
    if na == 1:
        return contract("k,...km->...m", a, b)
    if nb == 1:
        return contract("...nk,k->...n", a, b)
    return contract("...nk,...km->...nm", a, b)


register_ufunc(np.matmul, "__call__", _matmul, family="linalg", via="einsum | linear_map",
               note="constant scipy.sparse operands allowed")


@register_function(np.dot, family="linalg", via="einsum | linear_map")
def _dot(a: Any, b: Any, out: Any = None) -> Any:
    if out is not None:
        raise UnsupportedPrimitiveError("numpy.dot", "the `out=` argument")
    if sp.issparse(a) or sp.issparse(b):
        _check_sparse_shapes(a, b)
        return _sparse_times(a, b)
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return np.multiply(a, b)
    la = _LETTERS[:na]
    if nb == 1:
        return contract(f"{la},{la[-1]}->{la[:-1]}", a, b)
    lb = list(_LETTERS[na:na + nb])
    lb[-2] = la[-1]
    lb_s = "".join(lb)
    return contract(f"{la},{lb_s}->{la[:-1]}{lb_s[:-2]}{lb_s[-1]}", a, b)


@register_function(np.inner, family="linalg", via="einsum")
def _inner(a: Any, b: Any) -> Any:
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return np.multiply(a, b)
    la = _LETTERS[:na]
    lb = _LETTERS[na:na + nb - 1] + la[-1]
    return contract(f"{la},{lb}->{la[:-1]}{lb[:-1]}", a, b)


@register_function(np.vdot, family="linalg", via="einsum")
def _vdot(a: Any, b: Any) -> Any:
    return contract("i,i->", np.ravel(a), np.ravel(b))


@register_function(np.outer, family="linalg", via="einsum")
def _outer(a: Any, b: Any, out: Any = None) -> Any:
    if out is not None:
        raise UnsupportedPrimitiveError("numpy.outer", "the `out=` argument")
    return contract("i,j->ij", np.ravel(a), np.ravel(b))


def _sublist_subscripts(args: tuple[Any, ...]) -> tuple[str, list[Any]]:
    """Einsum's sublist form ``(op0, sub0, op1, sub1, ..., [out])`` as subscripts and operands."""
    ops = list(args[0::2])
    subs = list(args[1::2])
    out_sub = None
    if len(args) % 2 == 1:  # a trailing output sublist
        out_sub = args[-1]
        ops = ops[:-1]

    def letters(sub: Any) -> str:
        parts = []
        for s in sub:
            if s is Ellipsis:
                parts.append("...")
            elif isinstance(s, (int, np.integer)) and 0 <= int(s) < 52:
                parts.append(_SUBLIST_LETTERS[int(s)])
            else:
                raise UnsupportedPrimitiveError(
                    "numpy.einsum", f"sublist entry {s!r} (allowed: integers 0..51 and Ellipsis)")
        return "".join(parts)

    spec = ",".join(letters(s) for s in subs)
    if out_sub is not None:
        spec += "->" + letters(out_sub)
    return spec, ops


_SUBLIST_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@register_function(np.einsum, family="linalg", via="einsum",
                   note="string subscripts and the sublist form")
def _einsum(*operands: Any, out: Any = None, optimize: Any = False, dtype: Any = None,
            **kw: Any) -> Any:
    if out is not None or dtype is not None or kw:
        raise UnsupportedPrimitiveError("numpy.einsum", "the `out=`/`dtype=` arguments")
    if isinstance(operands[0], str):
        spec, ops = operands[0], list(operands[1:])
    else:
        spec, ops = _sublist_subscripts(operands)
    if any(sp.issparse(o) for o in ops):
        raise UnsupportedPrimitiveError("numpy.einsum", "scipy.sparse operands; use `@`")
    result = contract(spec, *ops)
    if len(ops) == 1 and isinstance(ops[0], Tracer) and isinstance(result, Tracer):
        _link_einsum_view(spec, ops[0], result)
    return result


def _link_einsum_view(spec: str, op: Tracer, result: Tracer) -> None:
    """Where numpy's einsum of one operand is a (writeable) view, record the aliasing.

    ``np.einsum('ii->i', A)`` and pure transpositions return views of ``A``; writes through
    them (``d = np.einsum('ii->i', A); d[:] = x``) reach ``A``, in the trace as in numpy.
    """
    from sparsejac.primitives import views

    shape = tuple(op.shape)
    probe = np.empty(shape)
    if not views.is_view_of(np.einsum(spec, probe), probe):
        return
    size = int(np.prod(shape, dtype=np.int64))
    views.link_view(op, result, lambda: np.array(
        np.einsum(spec, np.arange(size, dtype=np.int64).reshape(shape))), True)


@register_function(np.tensordot, family="linalg", via="einsum")
def _tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    na, nb = len(_shape(a)), len(_shape(b))
    if isinstance(axes, (int, np.integer)):
        ax_a = list(range(na - int(axes), na))
        ax_b = list(range(int(axes)))
    else:
        ax_a, ax_b = axes
        ax_a = [int(ax_a)] if isinstance(ax_a, (int, np.integer)) else [int(a) for a in ax_a]
        ax_b = [int(ax_b)] if isinstance(ax_b, (int, np.integer)) else [int(b) for b in ax_b]
    ax_a = [x % na for x in ax_a]
    ax_b = [x % nb for x in ax_b]
    la = list(_LETTERS[:na])
    lb = list(_LETTERS[na:na + nb])
    for i, j in zip(ax_a, ax_b, strict=True):
        lb[j] = la[i]
    out = [c for i, c in enumerate(la) if i not in ax_a] + \
          [c for j, c in enumerate(lb) if j not in ax_b]
    return contract(f"{''.join(la)},{''.join(lb)}->{''.join(out)}", a, b)


@register_function(np.kron, family="linalg", via="einsum, gather")
def _kron(a: Any, b: Any) -> Any:
    sa, sb = _shape(a), _shape(b)
    nd = max(len(sa), len(sb))
    if nd == 0:  # two scalars: their product (numpy returns it 0-d)
        return np.multiply(a, b)
    sa = (1,) * (nd - len(sa)) + sa
    sb = (1,) * (nd - len(sb)) + sb
    a = np.reshape(a, sa)
    b = np.reshape(b, sb)
    la, lb = _LETTERS[:nd], _LETTERS[nd:2 * nd]
    inter = "".join(x + y for x, y in zip(la, lb, strict=True))
    prod = contract(f"{la},{lb}->{inter}", a, b)
    return np.reshape(prod, tuple(x * y for x, y in zip(sa, sb, strict=True)))


@register_function(np.linalg.norm, family="linalg",
                   via="composite: abs, power, sum, max | svd_values",
                   note="every vector and matrix `ord`; `ord=0` counts nonzeros (zero "
                        "derivative)")
def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    from sparsejac.primitives.numpy_linalg import matrix_norm

    nd = len(_shape(x))
    if axis is None:
        if ord is None:
            res = np.sqrt(np.sum(x * x))
            return np.reshape(res, (1,) * nd) if keepdims else res
        if nd == 2:
            return matrix_norm(x, ord, 0, 1, keepdims)
        if nd != 1:
            raise ValueError("Improper number of dimensions to norm.")
        axis = 0
    if isinstance(axis, (tuple, list)) and len(axis) == 2:
        return matrix_norm(x, ord, int(axis[0]), int(axis[1]), keepdims)
    if isinstance(axis, (tuple, list)):
        if len(axis) != 1:
            raise ValueError("Improper number of dimensions to norm.")
        axis = axis[0]
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if ord is None or ord == 2:
        return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return np.max(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == 1:
        return np.sum(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:  # a count: zero derivative
        return np.sum((x != 0).astype(np.float64), axis=axis, keepdims=keepdims)
    p = float(ord)
    return np.sum(np.abs(x) ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


@register_function(np.cross, family="linalg", via="composite: indexing, multiply")
def _cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
           axis: Any = None) -> Any:
    if axis is not None:
        axisa = axisb = axisc = axis
    a = np.moveaxis(a, axisa, -1)
    b = np.moveaxis(b, axisb, -1)
    if _shape(a)[-1] != 3 or _shape(b)[-1] != 3:
        raise UnsupportedPrimitiveError("numpy.cross", "vectors of length 2")
    c0 = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    c1 = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    c2 = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return np.moveaxis(np.stack([c0, c1, c2], axis=-1), -1, axisc)


_ = Tracer  # Tracer operands reach these handlers through numpy's dispatch


# -- scipy.sparse matrices built from arrays made inside f ---------------------------------


def _constant_diagonals(name: str, func: Any) -> Any:
    """A handler for ``func`` (``scipy.sparse.diags`` ...) given arrays made inside ``f``.

    ``np.ones(n)`` inside a trace is a buffer (a constant Tracer, so that traced values can
    be written into it), which scipy does not take for an ndarray (its ``isscalarlike`` test
    of ``diagonals[0]``): the matrix is built from the values. Diagonals that depend on x
    would make a traced sparse matrix, which sparsejac does not model.
    """

    def plain(a: Any) -> Any:
        if isinstance(a, Tracer):
            if not a._var.is_const:
                raise UnsupportedPrimitiveError(
                    name, "diagonals that depend on x or on a traced parameter (a traced "
                    "sparse matrix): write the product with numpy instead, sp.diags(d) @ u "
                    "as d * u (and an off-diagonal band as a shifted product, "
                    "d[:-1] * u[1:])",
                    problem="is not supported with traced diagonals")
            return a._var.value
        if isinstance(a, (list, tuple)):
            return type(a)(plain(v) for v in a)
        return a

    def handler(*args: Any, **kwargs: Any) -> Any:
        return func(*(plain(a) for a in args), **{k: plain(v) for k, v in kwargs.items()})

    return handler


for _name in ("diags", "diags_array", "spdiags"):
    _func = getattr(sp, _name, None)
    if _func is not None:
        register_library(_func, name=f"scipy.sparse.{_name}", family="linalg",
                         via="the matrix itself (constant)", lift=False,
                         note="constant diagonals, arrays made inside f included")(
            _constant_diagonals(f"scipy.sparse.{_name}", _func))
