"""Second order: the reverse sweep of a recorded program, written as a traceable program.

The gradient of a scalar program is its reverse sweep: the nodes backwards, each pulling
the output's cotangent back through its local Jacobian ``ct_k = R_k^T ct``. Every rule here
is the local Jacobian the first-order rules are derived from
(:mod:`sparsejac.primitives.derive`): a constant entry is a constant linear map of the
cotangent, a value-dependent entry is computed by the primitive's own ``dyn`` formula from
the node's input and output values.

:func:`gradient_call` turns a recorded program into a function ``g(x, *params)`` that
performs that sweep *on traced values*: called with the Tracers of a new trace, it records
the gradient as a program of its own. Everything about Jacobians then applies to it:

* the Jacobian's pattern of the gradient program is the Hessian's pattern (a constant local
  derivative -- a linear operation -- contributes no second-order interaction, a
  value-dependent one contributes exactly the inputs its value reads);
* forward mode over the gradient program is forward-over-reverse: Hessian-vector products
  with matrix seeds, all seed columns at once (:func:`hvp`).

Called with plain arrays, ``g`` evaluates the gradient by the reverse interpreter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.ad.cotangents import Scattered, value
from sparsejac.ad.interpret import program_jvp, program_vjp
from sparsejac.errors import (
    ConcretizationError,
    TracedConversionError,
    UnsupportedPrimitiveError,
    with_hint,
)
from sparsejac.numeric import is_arange
from sparsejac.primitives.core import LocalJac, Primitive, bind
from sparsejac.primitives.dense_linalg import MatrixFunction
from sparsejac.primitives.derive import local_jacobians
from sparsejac.primitives.linear import apply_sparse_map
from sparsejac.primitives.sorting import SortPermute
from sparsejac.tracing import Program, check_args, trace
from sparsejac.tracing.program import Node, check_ties
from sparsejac.tracing.tracer import Tracer
from sparsejac.tracing.walk import pull_back

__all__ = ["gradient_call", "gradient_program", "hvp", "trace_gradient"]


class LocalValues(Primitive):
    """The values of a piecewise-constant local Jacobian, as a zero-derivative operation.

    ``max``'s one-hot at the arg-extremum and ``sort``'s permutation are chosen at ``x`` and
    constant around it: in the recorded reverse sweep they depend on ``x`` (the program is
    valid for every ``x``) but carry no derivative.
    """

    name = "local_values"
    zero_derivative = True

    def impl(self, *vals: Any, lj: LocalJac, n_in: int, **params: Any) -> np.ndarray:
        """``lj.dyn`` on the node's input values and output value."""
        assert lj.dyn is not None
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            d = lj.dyn(list(vals[:n_in]), vals[n_in])
        return np.ascontiguousarray(np.broadcast_to(np.asarray(d, dtype=np.float64),
                                                    (lj.nnz,)))

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """No derivative."""
        return [None] * len(node.inputs)


LOCAL_VALUES = LocalValues()


def _pull(node: Any, k: int, s: Any, args: Sequence[Any], out: Any, ct: Any) -> Any:
    """``R_k^T ct`` for input ``k`` of ``node``, on traced values."""
    m, n = s.shape
    shape = node.inputs[k].shape
    # (a reshape of a Tracer is a recorded node: none for a cotangent already flat or a
    # scalar one, the many small nodes of an element loop; a scalar step keeps it scalar)
    traced = isinstance(ct, Tracer)
    scalar = m == 1 and n == 1 and (ct.ndim == 0 if traced else np.size(ct) == 1)
    flat = (ct if ct.ndim <= 1 else ct.reshape(-1)) if traced else np.ravel(ct)
    if scalar and s.const is not None and np.size(s.const) == 1 and np.size(s.indices) == 1:
        c = float(np.ravel(s.const)[0])
        g = flat if c == 1.0 else flat * c
        return g if g.shape == shape else g.reshape(shape)
    if s.const is not None:  # a constant local Jacobian: a constant linear map
        # R's CSR arrays are R^T's CSC ones: one conversion to CSR, no transpose
        if isinstance(flat, Tracer):  # R^T's entries: (R's column, R's row, value)
            rows_r = np.repeat(np.arange(m, dtype=np.int64), np.diff(s.indptr))
            return Scattered(flat, np.asarray(s.indices, dtype=np.int64), rows_r,
                             np.asarray(s.const, dtype=np.float64), shape)
        return np.asarray(_transposed(s) @ flat).reshape(shape)
    lj = s.lj
    rows = np.asarray(lj.rows, dtype=np.int64)
    cols = np.asarray(lj.cols, dtype=np.int64)
    nnz = rows.size
    assert lj.dyn is not None
    d: Any
    if node.prim.piecewise_constant:
        d = bind(LOCAL_VALUES, [*args, out], {"lj": lj, "n_in": len(args)})
    else:
        try:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                d = lj.dyn(args, out)
        except (TracedConversionError, ConcretizationError) as exc:
            raise UnsupportedPrimitiveError(
                node.prim.name, "its local derivative formula is not itself traceable; first "
                "derivatives through it are supported, second derivatives are not. Compute the "
                "Hessian by finite differences of the gradient, or rewrite this step with "
                "supported operations",
                problem="has no second-order rule (Hessians)") from exc
    if isinstance(d, Tracer) and not (scalar and d.ndim == 0):
        if d.ndim != 1 or d.shape[0] != nnz:
            d = np.broadcast_to(d, (nnz,)) if d.ndim == 0 else d.reshape(-1)
    elif np.ndim(d):
        d = np.asarray(d, dtype=np.float64).reshape(-1)
    if scalar and not traced:
        flat = flat.reshape(())  # (a scalar product: no reshape of the traced result)
    # (one row: its value broadcasts, a scalar cotangent included)
    gathered = flat if m == 1 or is_arange(rows, m) else flat[rows]
    prod = gathered * d
    if is_arange(cols, n):
        g = prod
    else:
        if isinstance(prod, Tracer):
            return Scattered(prod, cols, np.arange(nnz), np.ones(nnz), shape)
        scatter = sp.csr_array((np.ones(nnz), (cols, np.arange(nnz))), shape=(n, nnz))
        g = apply_sparse_map([prod], [scatter], shape)
    return g.reshape(shape) if g.shape != shape else g


def _transposed(s: Any) -> sp.csr_array:
    """``R^T`` of a constant local Jacobian (R's CSR arrays are R^T's CSC ones)."""
    m, n = s.shape
    return sp.csc_array((s.const, s.indices, s.indptr), shape=(n, m)).tocsr()


def _by_formula(node: Node) -> bool:
    """A node pulled back by its cotangent formula, not its local Jacobian.

    A large dense matrix function, a sort (a scatter, not the lanes' whole local Jacobian).
    """
    prim = node.prim
    return isinstance(prim, MatrixFunction | SortPermute) and prim.pulls_by_formula(node)


def _needed_values(prog: Program) -> set[int]:
    """The variables whose values the reverse sweep reads, and what computing them needs.

    A node whose local Jacobian is value-dependent reads its inputs and its output; one with
    constant local Jacobians (a linear operation) reads nothing. Leaving the rest out keeps
    ``f``'s own value and other dead forward steps out of the recorded gradient program.
    """
    needed: set[int] = set()
    for node in reversed(prog.nodes):
        reads = node.out.active and (_by_formula(node) or any(
            s is not None and s.const is None for s, var in
            zip(local_jacobians(node), node.inputs, strict=True) if var.active))
        if reads:
            needed.add(node.out.id)
        if node.out.id in needed:
            needed.update(v.id for v in node.inputs)
    return needed


def _traced_gradient(prog: Program, x: Any, params: Sequence[Any]) -> Any:
    """The reverse sweep of ``prog`` replayed on the traced ``x`` and ``params``."""
    vals: dict[int, Any] = {prog.x.id: x}
    for var, val in zip(prog.params, params, strict=True):
        vals[var.id] = val
    needed = _needed_values(prog)
    for node in prog.nodes:
        if node.out.id not in needed:  # no rule reads it (f's own value, a linear step)
            continue
        args = [vals.get(v.id, v.value) for v in node.inputs]
        if any(isinstance(a, Tracer) for a in args):
            vals[node.out.id] = bind(node.prim, args, node.params)  # type: ignore[arg-type]
        else:
            vals[node.out.id] = node.prim.impl(*args, **node.params)
    def pull(node: Node, ct: Any) -> list[Any]:
        args = [vals.get(v.id, v.value) for v in node.inputs]
        out = vals.get(node.out.id, node.out.value)  # read only by value-dependent rules
        if _by_formula(node):
            assert isinstance(node.prim, MatrixFunction | SortPermute)
            return node.prim.traced_cotangents(node, args, out, value(ct))
        held = [ct]

        def dense() -> Any:  # the cotangent's value, recorded (and flattened) once a node
            got = value(held[0])
            if isinstance(got, Tracer) and got.ndim > 1:
                got = got.reshape(-1)
            held[0] = got
            return got

        pulled: list[Any] = []
        for k, (s, var) in enumerate(zip(local_jacobians(node), node.inputs, strict=True)):
            if s is None or not var.active:
                pulled.append(None)
                continue
            if isinstance(held[0], Scattered) and s.const is not None:  # a constant step
                got = held[0].mapped(s, var.shape)
                if got is not None:
                    pulled.append(got)
                    continue
            pulled.append(_pull(node, k, s, args, out, dense()))
        return pulled

    cts = pull_back(prog, np.ones(prog.out.shape), pull)
    g_x = cts.get(prog.x.id)
    if g_x is None:
        return np.zeros(prog.x.shape) + 0.0 * x  # keeps the result in the trace
    return value(g_x)


def gradient_call(prog: Program, local: bool = False) -> Callable[..., Any]:
    """``g(x, *params)``: the gradient of the scalar program ``prog``, traceable.

    Parameters
    ----------
    prog : Program
        A program whose output has one element: global (replayable), or, with
        ``local=True``, recorded at the point where the gradient program will be recorded.
    local : bool
        Accept a value-dependent program (its gradient program is then valid at its point).

    Returns
    -------
    callable
        ``g(x, *params) -> ndarray`` of ``x``'s shape. With Tracers it records the reverse
        sweep; with arrays it evaluates the gradient (the reverse interpreter).

    Raises
    ------
    ValueError
        ``prog`` does not have one output element, or is value dependent.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.tracing import trace
    >>> from sparsejac.ad.second_order import gradient_call
    >>> g = gradient_call(trace(lambda x: np.sum(x[1:] * x[:-1] ** 2), np.ones(3)))
    >>> g(np.array([1.0, 2.0, 3.0]))
    array([ 4., 13.,  4.])
    >>> sparsejac.jacobian(g, np.array([1.0, 2.0, 3.0])).toarray()   # the Hessian
    array([[4., 2., 0.],
           [2., 6., 4.],
           [0., 4., 0.]])
    """
    if prog.out.size != 1:
        raise ValueError(
            f"a gradient needs a scalar function; this one returns shape {prog.out.shape}")
    if prog.value_dependent and not local:
        raise ValueError(
            "this program read traced values while it was recorded (local mode); its gradient "
            "program cannot be recorded: trace it globally")
    for node in prog.nodes:  # the local structures (and any compiled kernel) before a trace
        if node.out.active and not _by_formula(node):
            local_jacobians(node)

    def g(x: Any, *params: Any) -> Any:
        if isinstance(x, Tracer) or any(isinstance(p, Tracer) for p in params):
            return _traced_gradient(prog, x, params)
        if prog.value_dependent:
            raise ValueError("a value-dependent program's gradient is only recorded, not "
                             "evaluated at another point")
        seed = np.ones((1, *prog.out.shape))
        return program_vjp(prog, seed, x=np.asarray(x, dtype=np.float64),
                           params=list(params) if prog.params else None)[1][0]

    g.__name__ = "gradient"
    return g


def gradient_program(f: Callable[..., Any], x: Any, params: Sequence[Any] = ()) -> Program:
    """The recorded gradient program of scalar ``f`` (its Jacobian is ``f``'s Hessian).

    Parameters
    ----------
    f : callable
        ``f(x, *params)`` written with numpy, returning one element.
    x : array_like
        The point.
    params : sequence
        Traced, non-differentiated inputs.

    Returns
    -------
    Program

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.ad.second_order import gradient_program
    >>> from sparsejac.detection import program_sparsity
    >>> prog = gradient_program(lambda x: np.sum(np.sin(x[1:] * x[:-1])), np.ones(4))
    >>> program_sparsity(prog).toarray().astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 1, 0],
           [0, 1, 1, 1],
           [0, 0, 1, 1]])
    """
    x = np.asarray(x, dtype=np.float64)
    prog = trace(f, x, params=params)
    return trace_gradient(prog, x, params=params, name="gradient")


def trace_gradient(prog: Program, x: np.ndarray, *, params: Sequence[Any] = (),
                   name: str = "gradient", local: bool = False) -> Program:
    """The traced program of ``prog``'s gradient (what second derivatives differentiate).

    A step of the gradient's rules that cannot be traced (the slope lookup in the derivative
    of ``np.interp``, by an index computed from ``x``) is refused with a hint saying where it
    came from.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.tracing import trace
    >>> from sparsejac.ad.second_order import trace_gradient
    >>> g = trace_gradient(trace(lambda x: np.sum(x ** 3), np.ones(2)), np.ones(2))
    >>> g.out.shape
    (2,)
    """
    try:
        return trace(gradient_call(prog, local=local), x, params=params, name=name,
                     local=local)
    except UnsupportedPrimitiveError as exc:
        raise with_hint(exc, (
            f" It was called while tracing the {name} for second derivatives: the derivative "
            "rule of a function f uses (np.interp, say) needs it, and second derivatives "
            "need every step of the gradient traced. Hessians have no mode='fd': for such an "
            "f, take the Jacobian of a gradient you write by hand, "
            "sparsejac.SparseJacobian(grad, x0, mode='fd', sparsity=pattern).")) from exc


def hvp(f: Callable[..., Any], x: Any, V: Any, *, args: tuple[Any, ...] = ()) -> np.ndarray:
    """Hessian-vector products ``H(x) @ V`` of scalar ``f``, all columns of ``V`` at once.

    Forward mode over the recorded reverse sweep (forward-over-reverse): one pass of
    ``p``-column tangent blocks for an ``n × p`` seed matrix. Exact to rounding.

    Parameters
    ----------
    f : callable
        ``f(x, *args)`` written with numpy, returning one element.
    x : array_like
        The point (any shape; flattened in C order).
    V : array_like or sparse matrix, shape (n,) or (n, p)
        The seed directions, ``n = x.size``.
    args : tuple, optional
        Further arguments of ``f``, passed unchanged.

    Returns
    -------
    ndarray, shape (n,) or (n, p)

    Raises
    ------
    ValueError
        ``f`` does not return one element, or ``V`` has the wrong shape.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.ad import hvp
    >>> f = lambda x: np.sum(x[1:] * x[:-1] ** 2)      # H = [[4,2,0],[2,6,4],[0,4,0]] at x
    >>> hvp(f, np.array([1.0, 2.0, 3.0]), np.eye(3))
    array([[4., 2., 0.],
           [2., 6., 4.],
           [0., 4., 0.]])
    >>> hvp(f, np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 0.0]))
    array([4., 2., 0.])
    """
    from sparsejac.ad import _seed

    args = check_args(args)
    x = np.asarray(x, dtype=np.float64)
    call = (lambda z: f(z, *args)) if args else f
    first = trace(call, x)
    check_ties(first)  # a special case taken at exactly this x: its derivatives are not f's
    prog = trace_gradient(first, x, name="gradient")
    seeds, vec = _seed(V, "V", x.size, 0, "n = x.size")
    p = seeds.shape[1]
    _, t = program_jvp(prog, np.ascontiguousarray(seeds.T).reshape((p, *x.shape)))
    res = t.reshape(p, -1).T
    return res[:, 0] if vec else res
