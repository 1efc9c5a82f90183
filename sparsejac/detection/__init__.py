"""Sparsity detection: the dependency-set interpreter over a recorded program.

:func:`jacobian_sparsity` traces ``f`` and runs every active node's pattern rule (see
:mod:`sparsejac.primitives`) on boolean CSR dependency matrices, starting from the identity
for ``x``. A *global* pattern (the default) holds for every ``x``: branches chosen by values
are refused while tracing, and value-dependent operations (``np.maximum``, ``np.where`` with a
traced condition, ``np.max``) contribute every operand that could be chosen. A *local* pattern
holds at the given ``x`` only: Python control flow may read values, and those operations keep
only the operand chosen at ``x``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.primitives import depsets
from sparsejac.tracing import Program, check_args, check_kwargs, trace
from sparsejac.tracing.walk import check_block, dead_after

__all__ = ["jacobian_sparsity", "program_sparsity"]


def _too_dense(node: Any, n: int, exc: MemoryError) -> MemoryError:
    """The error of a dependency set that does not fit: the call, the sizes, the way out."""
    return MemoryError(
        f"the sparsity pattern of `{node.prim.name}` ({node.out.size:,} elements, each on up "
        f"to {n:,} elements of x) does not fit in memory ({exc}): the Jacobian of f is "
        "(nearly) dense there, with up to "
        f"{float(node.out.size) * n:.2g} nonzeros. Sparse Jacobians cannot help with that "
        "part of f; for products with the Jacobian, sparsejac.KrylovMethod(f) (and "
        "scipy.optimize.newton_krylov) needs no pattern.")


def program_sparsity(prog: Program, *, local: bool | None = None) -> sp.csr_array:
    """The Jacobian pattern of a recorded program, shape ``(out.size, x.size)``, bool.

    Parameters
    ----------
    prog : Program
        From :func:`sparsejac.tracing.trace`.
    local : bool, optional
        Use the values at the trace point to keep only chosen operands (defaults to the
        mode the program was traced in).

    Returns
    -------
    scipy.sparse.csr_array of bool

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.tracing import trace
    >>> from sparsejac.detection import program_sparsity
    >>> prog = trace(lambda x: np.maximum(x[:2], x[2:]), np.array([1.0, 5.0, 3.0, 2.0]))
    >>> program_sparsity(prog).toarray().astype(int)              # global: both operands
    array([[1, 0, 1, 0],
           [0, 1, 0, 1]])
    >>> program_sparsity(prog, local=True).toarray().astype(int)  # the ones chosen at x
    array([[0, 0, 1, 0],
           [0, 1, 0, 0]])
    """
    local = prog.local if local is None else local
    n = prog.n_in
    deps: dict[int, depsets.DepSet] = {prog.x.id: depsets.identity(n)}
    for node, dead in zip(prog.nodes, dead_after(prog), strict=True):
        if node.out.active:
            in_deps = [deps.get(v.id) if v.active else None for v in node.inputs]
            try:
                d = node.prim.pattern(node, in_deps, local)
            except MemoryError as exc:
                raise _too_dense(node, n, exc) from exc
            if d is not None:
                check_block("pattern", node, d, (node.out.size, n))
                deps[node.out.id] = d
        for vid in dead:  # free dependency sets nobody reads any more
            deps.pop(vid, None)
    out = deps.get(prog.out.id) if prog.out.active else None
    if out is None:
        out = depsets.empty(prog.n_out, n)
    try:
        res = out.tocsr()
    except MemoryError as exc:  # (x - np.mean(x) at n = 10^5: found from outside)
        last = next(nd for nd in reversed(prog.nodes) if nd.out is prog.out)
        raise _too_dense(last, n, exc) from exc
    res.sort_indices()
    return res


def jacobian_sparsity(
    f: Callable[..., Any], x: Any, *, local: bool = False, args: tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
) -> sp.csr_array:
    """Sparsity pattern of the Jacobian of ``f`` at (or around) ``x``, by tracing its numpy calls.

    Parameters
    ----------
    f : callable
        ``f(x, *args)`` written with numpy; it is run once on a traced stand-in for ``x``.
    x : array_like
        Any shape; flattened in C order, as is the output.
    local : bool, default False
        False: a *global* pattern, valid for every ``x`` (Python control flow on values is
        refused with :class:`~sparsejac.errors.ConcretizationError`). True: a *local* pattern,
        valid at this ``x``: control flow may read values, and ``np.maximum``, ``np.where``,
        ``np.max`` ... keep only the branch taken at ``x``.
    args : tuple, optional
        Further arguments passed to ``f`` unchanged (constants for the trace).
    kwargs : dict, optional
        Keyword arguments passed to ``f`` unchanged, as ``args``.

    Returns
    -------
    scipy.sparse.csr_array
        Boolean, shape ``(f(x).size, x.size)``: entry ``(i, j)`` is True when output ``i`` may
        depend on input ``j``. It drops straight into scipy's ``jac_sparsity=``.

    Raises
    ------
    UnsupportedPrimitiveError
        ``f`` calls a numpy function sparsejac has no rule for (the message names it).
    ConcretizationError
        Global mode met ``if traced > 0:`` or similar; the message suggests ``local=True``.
    TracedConversionError
        ``f`` converted a traced value to a plain number or array (``float(y)``,
        ``np.asarray(y)``, assignment into ``np.zeros(shape)``).

    See Also
    --------
    sparsejac.color : colour the pattern into seed directions.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def f(x):
    ...     return x[1:] * x[:-1]
    >>> sparsejac.jacobian_sparsity(f, np.ones(4)).toarray().astype(int)
    array([[1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]])

    A branch on values needs a local pattern:

    >>> g = lambda x: np.maximum(x[:2], x[2:])
    >>> sparsejac.jacobian_sparsity(g, np.array([1.0, 5.0, 3.0, 2.0])).toarray().astype(int)
    array([[1, 0, 1, 0],
           [0, 1, 0, 1]])
    >>> sparsejac.jacobian_sparsity(g, np.array([1.0, 5.0, 3.0, 2.0]), local=True
    ...                             ).toarray().astype(int)
    array([[0, 0, 1, 0],
           [0, 1, 0, 0]])
    """
    if not callable(f):
        raise TypeError(f"`f` must be callable; got {type(f).__name__}")
    args, kw = check_args(args), check_kwargs(kwargs)
    if not isinstance(local, (bool, np.bool_)):
        raise TypeError(f"`local` must be True or False; got {type(local).__name__} "
                        f"{local!r:.60}")
    prog = trace(lambda xt: f(xt, *args, **kw), x, local=bool(local), check=True)
    return program_sparsity(prog, local=local)

