"""Automatic differentiation of numpy functions with matrix seeds.

* :func:`jvp` – forward mode: ``J(x) @ S`` for an ``n × p`` seed matrix, all ``p`` directions
  in one pass over the program (tangent blocks with the seed axis leading);
* :func:`vjp` – reverse mode: ``W @ J(x)`` for a ``q × m`` seed matrix, one forward pass plus
  one backward pass over the recorded pullbacks.

Both trace ``f`` at ``x`` in local mode (Python control flow on values is fine: the result is
the derivative of the branch taken at ``x``) and are exact to rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.ad.interpret import InterpretedLinearization, evaluate, program_jvp, program_vjp
from sparsejac.ad.prepared import Linearization, PreparedProgram
from sparsejac.ad.second_order import hvp
from sparsejac.ad.tape import Tape
from sparsejac.tracing import check_args, trace
from sparsejac.tracing.program import check_ties

__all__ = ["InterpretedLinearization", "Linearization", "PreparedProgram", "Tape", "evaluate",
           "hvp", "jvp", "program_jvp", "program_vjp", "vjp"]


def _seed(s: Any, name: str, length: int, axis: int, what: str) -> tuple[np.ndarray, bool]:
    """Seed as a 2-D float array whose ``axis`` has ``length``; second value: was a vector."""
    arr = s.toarray() if sp.issparse(s) else np.asarray(s)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"`{name}` must be a real array; got dtype {arr.dtype}")
    vec = arr.ndim == 1
    arr2 = np.expand_dims(arr, 1 - axis) if vec else arr
    if arr2.ndim != 2 or arr2.shape[axis] != length or arr2.shape[1 - axis] == 0:
        expected = f"({length}, p)" if axis == 0 else f"(q, {length})"
        raise ValueError(
            f"`{name}` has shape {arr.shape}; expected ({length},) or {expected} with at least "
            f"one seed ({what})"
        )
    return arr2.astype(np.float64), vec


def jvp(f: Callable[..., Any], x: Any, S: Any, *, args: tuple[Any, ...] = ()) -> np.ndarray:
    """Forward mode: the product ``J(x) @ S`` of the Jacobian of ``f`` with a seed matrix.

    Parameters
    ----------
    f : callable
        ``f(x, *args)`` written with numpy.
    x : array_like
        The point (any shape; flattened in C order).
    S : array_like or sparse matrix, shape (n,) or (n, p)
        Seed directions, ``n = x.size``; all ``p`` columns are pushed forward in one pass.
    args : tuple, optional
        Further arguments of ``f``, passed unchanged.

    Returns
    -------
    ndarray, shape (m,) or (m, p)
        ``J(x) @ S`` with ``m = f(x).size``.

    See Also
    --------
    vjp : reverse mode, ``W @ J(x)``.

    Examples
    --------
    The classic ``z = x1 x2 + sin(x1)``: the seed ``e1`` gives ``dz/dx1 = x2 + cos(x1)``.

    >>> import numpy as np
    >>> from sparsejac.ad import jvp
    >>> f = lambda x: x[0] * x[1] + np.sin(x[0])
    >>> jvp(f, np.array([0.0, 3.0]), np.eye(2)).round(12)  # J @ I: one row, two seeds
    array([[4., 0.]])
    """
    args = check_args(args)
    prog = trace(lambda xt: f(xt, *args), x, local=True)
    check_ties(prog)  # a special case taken at exactly this x: its derivative is not f's
    seeds, vec = _seed(S, "S", prog.n_in, 0, "one row per element of x")
    p = seeds.shape[1]
    _, t_out = program_jvp(prog, np.ascontiguousarray(seeds.T).reshape((p, *prog.x.shape)))
    res = t_out.reshape(p, -1).T
    return res[:, 0] if vec else res


def vjp(f: Callable[..., Any], x: Any, W: Any, *, args: tuple[Any, ...] = ()) -> np.ndarray:
    """Reverse mode: the product ``W @ J(x)`` of a seed matrix with the Jacobian of ``f``.

    Parameters
    ----------
    f : callable
        ``f(x, *args)`` written with numpy.
    x : array_like
        The point (any shape; flattened in C order).
    W : array_like or sparse matrix, shape (m,) or (q, m)
        Cotangent seeds, ``m = f(x).size``; all ``q`` rows are pulled back in one pass.
    args : tuple, optional
        Further arguments of ``f``, passed unchanged.

    Returns
    -------
    ndarray, shape (n,) or (q, n)
        ``W @ J(x)`` with ``n = x.size``.

    See Also
    --------
    jvp : forward mode, ``J(x) @ S``.

    Examples
    --------
    One reverse pass from ``z̄ = 1`` gives the whole gradient of ``z = x1 x2 + sin(x1)``:

    >>> import numpy as np
    >>> from sparsejac.ad import vjp
    >>> f = lambda x: x[0] * x[1] + np.sin(x[0])
    >>> vjp(f, np.array([0.0, 3.0]), np.array([1.0])).round(12)
    array([4., 0.])
    """
    args = check_args(args)
    prog = trace(lambda xt: f(xt, *args), x, local=True)
    check_ties(prog)  # a special case taken at exactly this x: its derivative is not f's
    seeds, vec = _seed(W, "W", prog.n_out, 1, "one column per element of f(x)")
    q = seeds.shape[0]
    _, ct_x = program_vjp(prog, np.ascontiguousarray(seeds).reshape((q, *prog.out.shape)))
    res = ct_x.reshape(q, -1)
    return res[0] if vec else res
