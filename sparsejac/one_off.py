"""One Jacobian at one point: :func:`jacobian`.

The pipeline of :class:`~sparsejac.SparseJacobian` (:func:`sparsejac.pipeline.prepare`) for a
single point: no colouring search beyond the mandatory greedy passes, the eager interpreters on
the trace, and a local trace where ``f`` branches on values (exact at this point).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import scipy.sparse as sp

from sparsejac.coloring import DEFAULT_REVERSE_COST
from sparsejac.pipeline import prepare
from sparsejac.sparse_jacobian import bind_arguments
from sparsejac.tracing import no_cyclic_gc
from sparsejac.validation import (
    Mode,
    check_args,
    check_callable,
    check_fd_bounds,
    check_fd_method,
    check_fd_workers,
    check_kwargs,
    check_mode,
    check_reverse_cost,
    check_x,
)

__all__ = ["jacobian"]


def jacobian(
    f: Callable[..., Any],
    x: Any,
    *,
    sparsity: Any = None,
    mode: Mode = "auto",
    order: Any = "best",
    args: tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    fd_method: str | None = None,
    reverse_cost: float = DEFAULT_REVERSE_COST,
    effort: float | None = None,
    time_budget: float | None = None,
    workers: Any = None,
    bounds: Any = None,
) -> sp.csr_array:
    """The sparse Jacobian of ``f`` at ``x``, exactly (or by finite differences if asked).

    Detection, colouring, one compressed evaluation and decompression: the pipeline of
    :class:`~sparsejac.SparseJacobian`, for one point. To evaluate at many points, prepare once with
    :class:`~sparsejac.SparseJacobian` instead.

    Parameters
    ----------
    f : callable
        ``f(x, *args, **kwargs)`` written with numpy; ``x`` may have any shape (flattened in
        C order).
    x : array_like
        The point.
    sparsity : sparse matrix, array_like or path, optional
        Pattern to use instead of the detected one (must contain it, except for ``fd``).
    mode : {"auto", "forward", "reverse", "mixed", "fd"}
        As for :class:`~sparsejac.SparseJacobian` (``auto``: the lowest cost, no timing).
    order : str or callable
        Vertex order of the colouring (default ``"best"``).
    args, kwargs : optional
        Further arguments of ``f``.
    fd_method : {"2-point", "3-point", "cs"}, optional
        Finite-difference scheme, for ``mode="fd"`` only (approximate).
    reverse_cost : float
        Cost of a reverse product relative to a forward one (``auto``).
    effort : float, optional
        Colouring search effort. By default none: one Jacobian does not repay a search (a
        prepared :class:`~sparsejac.SparseJacobian` does), so with ``mode="auto"`` and
        ``order="best"`` a Jacobian of at most 16 columns and 64 rows is not coloured (one
        forward product per column, :data:`sparsejac.pipeline.ONE_SHOT_IDENTITY`), and a
        larger one is coloured by columns and rows in natural order, one pass each as
        scipy's ``group_columns`` does, and runs the mandatory DSATUR and bidirectional
        passes only when those need many colours or clearly more than the lower bound
        (:data:`sparsejac.pipeline.ONE_SHOT_SLACK` and neighbours) and the passes could
        cost less than the products they save
        (:func:`sparsejac.coloring.by_mode.passes_pay`: not a 3-D stencil's). ``effort=0``
        always runs the mandatory passes.
    time_budget : float, optional
        An opt-in wall-clock limit on that search.
    workers : int or map-like callable, optional
        For ``mode="fd"``: where the evaluations of ``f`` run (as for
        :class:`~sparsejac.SparseJacobian`).
    bounds : (lb, ub) or scipy.optimize.Bounds, optional
        For ``mode="fd"``: bounds that no evaluation of ``f`` leaves (as for
        :class:`~sparsejac.SparseJacobian`).

    Returns
    -------
    scipy.sparse.csr_array of float64, shape (f(x).size, x.size)

    Raises
    ------
    UnsupportedPrimitiveError
        ``f`` calls a numpy function sparsejac cannot trace (use ``mode="fd"`` with
        ``sparsity=``).

    See Also
    --------
    sparsejac.SparseJacobian : prepare once, evaluate many times.
    sparsejac.jacobian_sparsity : the pattern alone.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def f(x):
    ...     return np.array([x[0] * x[1], np.sin(x[2]), x[1] ** 2], like=x)
    >>> sparsejac.jacobian(f, np.array([1.0, 2.0, 0.0])).toarray()
    array([[2., 1., 0.],
           [0., 0., 1.],
           [0., 4., 0.]])
    """
    f = check_callable(f, x)
    mode = check_mode(mode)  # type: ignore[assignment]
    method = check_fd_method(fd_method, mode)
    xa = check_x(x)
    call = bind_arguments(f, check_args(args), check_kwargs(kwargs))
    plan = prepare(call, xa, sparsity=sparsity,
                   mode=mode, order=order, effort=effort, time_budget=time_budget,
                   fd_method=method, reverse_cost=check_reverse_cost(reverse_cost),
                   one_shot=True, workers=check_fd_workers(workers, mode),
                   bounds=check_fd_bounds(bounds, xa, mode, name="x"))
    # (the one evaluation walks the program as the preparation did: each automatic collection
    # would walk all of it too, 1.9 of 5.0 s for a 160,000-node element loop)
    with no_cyclic_gc():
        return plan.matrix(plan.evaluate(xa))
