"""Reports: colouring figures of a matrix file, Jacobian figures of a function.

What ``sparsejac report`` prints, computed here and only formatted by :mod:`sparsejac.cli`:

* :func:`matrix_report` -- colour a pattern for every (partition, order) asked for;
* :func:`function_report` -- prepare a function's Jacobian and time it against ``f``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from sparsejac import kernels
from sparsejac.coloring import (
    BIDIRECTIONAL_ORDERS,
    DEFAULT_EFFORT,
    ORDERS,
    SYMMETRIC_METHODS,
    color,
    color_partitions,
    warm_up,
)
from sparsejac.coloring.graph import PARTITIONS, bidirectional_lower_bound
from sparsejac.coloring.recovery import check_symmetric
from sparsejac.coloring.symmetric import AdjacencyGraph
from sparsejac.pattern import as_pattern
from sparsejac.sparse_jacobian import SparseJacobian

__all__ = ["function_report", "matrix_report"]

#: Partitions that colour both sides (and so accept the bidirectional-only orders).
TWO_SIDED = ("bidirectional", "auto")


def _check_report_options(partitions: Any, orders: Any) -> tuple[list[str], list[str]]:
    """The partitions and orders as lists, checked.

    Unknown names, and an order that none of the partitions takes, raise a ValueError naming
    them (instead of an empty report).
    """
    for name, value in (("partitions", partitions), ("orders", orders)):
        if not isinstance(value, (str, list, tuple)):
            raise TypeError(f"`{name}` must be a name or a list of names; got "
                            f"{type(value).__name__}")
    parts = [partitions] if isinstance(partitions, str) else list(partitions)
    ords = [orders] if isinstance(orders, str) else list(orders)
    known = (*PARTITIONS, "auto", "symmetric")
    for p in parts:
        if p not in known:
            raise ValueError(f"`partitions`: unknown partition {p!r}; expected some of {known}")
    for o in ords:
        if o != "best" and o not in BIDIRECTIONAL_ORDERS and o not in ORDERS:
            raise ValueError(f"`orders`: unknown order {o!r}; expected 'best' or one of "
                             f"{tuple(BIDIRECTIONAL_ORDERS)}")
        takes = [p for p in parts if o == "best" or o in (
            BIDIRECTIONAL_ORDERS if p in TWO_SIDED else ORDERS)]
        if not takes:
            raise ValueError(f"order {o!r} applies to the bidirectional and auto partitions "
                             f"only; asked for {', '.join(parts)}")
    return parts, ords


def matrix_report(
    sparsity: Any,
    partitions: Sequence[str],
    orders: Sequence[str],
    *,
    seed: int = 0,
    effort: float = DEFAULT_EFFORT,
    time_budget: float | None = None,
    return_colorings: bool = False,
) -> Any:
    """Colour ``pattern`` for every (partition, order) and collect the report's figures.

    Parameters
    ----------
    sparsity : scipy sparse matrix, array_like, SparsityPattern, str or path
        The pattern (a path names a ``.mtx`` or ``.npz`` file).
    partitions : sequence of str
        Any of ``"column"``, ``"row"``, ``"bidirectional"``, ``"auto"`` and ``"symmetric"``
        (a structurally symmetric pattern: star and acyclic colouring, one result each).
    orders : sequence of str
        Names in :data:`~sparsejac.coloring.BIDIRECTIONAL_ORDERS` and/or ``"best"``; a
        column, row or symmetric partition skips the orders that are for bidirectional ones
        only.
    seed : int, optional
        Seed of the random orders.
    effort, time_budget : float, optional
        Effort (and the opt-in wall-clock limit) of ``"best"``.
    return_colorings : bool, optional
        Also return the colourings, ``{result_key(row): ColoringResult}`` (as
        ``(report, colorings)``; the key is ``(partition, order)``, with
        ``"symmetric:star"`` or ``"symmetric:acyclic"`` as the partition of a symmetric one).

    Returns
    -------
    dict
        ``shape``, ``nnz``, ``density``, ``max_row_count``, ``max_col_count``,
        ``lower_bound`` (``{"column": .., "row": .., "bidirectional": ..}``, and
        ``"symmetric"``: :func:`~sparsejac.coloring.symmetric.symmetric_lower_bound` when
        that partition is asked for) and ``results``: one dict per (partition, order) -- per
        (partition, method, order) for ``"symmetric"``, with a ``method`` key -- with
        ``partition`` and ``order`` (as requested), ``chosen`` (the result's partition:
        what ``auto`` picked), ``found_by`` (the result's ``order``, e.g.
        ``"best:dsatur"``), ``n_colors``, ``n_forward``, ``n_reverse``, ``lower_bound``,
        ``gap``, ``compression`` and ``seconds``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.report import matrix_report
    >>> rep = matrix_report(np.eye(3) + np.eye(3, k=1), ["column"], ["natural"])
    >>> rep["lower_bound"], [(r["order"], r["n_colors"]) for r in rep["results"]]
    ({'column': 2, 'row': 2, 'bidirectional': 2}, [('natural', 2)])
    >>> arrow = np.eye(5)
    >>> arrow[0, :] = arrow[:, 0] = 1
    >>> rep = matrix_report(arrow, ["column", "symmetric"], ["natural"])
    >>> [(r["partition"], r.get("method"), r["n_colors"]) for r in rep["results"]]
    [('column', None, 5), ('symmetric', 'star', 2), ('symmetric', 'acyclic', 2)]
    >>> rep["lower_bound"]["column"], rep["lower_bound"]["symmetric"]
    (5, 2)
    """
    pattern = as_pattern(sparsity, name="sparsity")
    partitions, orders = _check_report_options(partitions, orders)
    warm_up()  # so that the first timing does not include loading compiled kernels
    m, n = pattern.shape
    row_counts, col_counts = pattern.row_counts, pattern.col_counts
    max_row = int(row_counts.max()) if m else 0
    max_col = int(col_counts.max()) if n else 0
    found: dict[tuple[str, str], Any] = {}
    symmetric = "symmetric" in partitions
    if symmetric:
        check_symmetric(pattern)
    for order in orders:
        # bidirectional and auto share the one-sided searches: colour them together
        parts = [
            p
            for p in partitions
            if p != "symmetric" and (
                order == "best" or order in (BIDIRECTIONAL_ORDERS if p in TWO_SIDED else ORDERS))
        ]
        if symmetric and (order == "best" or order in ORDERS):
            for method in SYMMETRIC_METHODS:
                found[(f"symmetric:{method}", order)] = color(
                    pattern, "symmetric", order, method=method, seed=seed, effort=effort,
                    time_budget=time_budget)
        if parts:
            got = color_partitions(pattern, parts, order, seed=seed, effort=effort,
                                   time_budget=time_budget)
            found.update(((p, order), r) for p, r in got.items())
    results = []
    keys = [
        (f"symmetric:{m}" if p == "symmetric" else p, p, m)
        for p in partitions
        for m in (SYMMETRIC_METHODS if p == "symmetric" else (None,))
    ]
    for key, partition, kind in keys:
        for order in orders:
            if (key, order) not in found:
                continue  # dense_rows_first and dense_columns_first: bidirectional only
            r = found[(key, order)]
            s = r.stats()
            results.append(
                {
                    "partition": partition,
                    **({} if kind is None else {"method": kind}),
                    "order": order,
                    "chosen": r.partition,
                    "found_by": r.order,
                    "n_colors": r.n_colors,
                    "n_forward": r.n_forward,
                    "n_reverse": r.n_reverse,
                    "lower_bound": r.lower_bound,
                    "gap": s["gap"],
                    "compression": s["compression"],
                    "seconds": r.seconds,
                }
            )
    rep = {
        "shape": [m, n],
        "nnz": pattern.nnz,
        "density": pattern.density,
        "max_row_count": max_row,
        "max_col_count": max_col,
        "lower_bound": {
            "column": max(1, max_row),
            "row": max(1, max_col),
            "bidirectional": bidirectional_lower_bound(pattern),
            **({"symmetric": AdjacencyGraph(pattern).lower_bound} if symmetric else {}),
        },
        "results": results,
    }
    return (rep, found) if return_colorings else rep


def result_key(row: dict[str, Any]) -> tuple[str, str]:
    """The key of a :func:`matrix_report` result row in its colourings dict.

    Examples
    --------
    >>> from sparsejac.report import result_key
    >>> result_key({"partition": "symmetric", "method": "star", "order": "best"})
    ('symmetric:star', 'best')
    """
    part = row["partition"]
    if "method" in row:
        part = f"{part}:{row['method']}"
    return part, row["order"]


def _min_time(fn: Callable[[], Any], repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def function_report(
    f: Callable[..., Any], x0: Any, *, order: Any = "best", args: tuple[Any, ...] = (),
    repeats: int = 5, return_jacobian: bool = False,
) -> Any:
    """Figures of a function's Jacobian: pattern, colours per mode, the mode ``auto`` picks.

    What ``sparsejac report function`` prints. It prepares a
    :class:`~sparsejac.SparseJacobian` (``mode="auto"``) and times ``f`` and one prepared
    Jacobian (minimum of ``repeats``).

    Parameters
    ----------
    f : callable
        ``f(x, *args)`` written with numpy.
    x0 : array_like
        The point.
    order : str or callable
        Colouring order (default ``"best"``).
    args : tuple
        Further arguments of ``f``.
    repeats : int
        Timing repeats.
    return_jacobian : bool
        Also return the prepared :class:`~sparsejac.SparseJacobian` (as ``(report, jac)``).

    Returns
    -------
    dict
        JSON-ready: ``shape``, ``nnz``, ``density``, ``lower_bound`` (column/row),
        ``detection_seconds``, ``colors`` (forward, reverse and, when available, mixed
        products), ``auto`` (``mode``, ``reason``, ``n_products``, ``path``: ``"direct"``
        where the entries are assembled without products, else ``"products"``; ``seconds``
        per Jacobian),
        ``f_seconds`` and ``preparation_seconds``; for a scalar ``f`` also ``hessian``:
        ``nnz``, ``colors`` (star, acyclic and column colourings of its pattern),
        ``lower_bound``, ``n_products``, ``path`` (``"direct"``: assembled without products)
        and ``reason`` (what :class:`~sparsejac.SparseHessian` uses), ``seconds`` (one Hessian) and
        ``preparation_seconds``, or ``error`` when ``f`` has no second-order rule.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.report import function_report
    >>> rep = function_report(lambda x: x[1:] * x[:-1], np.ones(6), repeats=1)
    >>> rep["shape"], rep["nnz"], rep["colors"]["forward"], rep["auto"]["n_products"] <= 3
    ([5, 6], 10, 2, True)
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"`repeats` must be an integer >= 1; got {repeats!r}")
    t0 = time.perf_counter()
    jac = SparseJacobian(f, x0, order=order, args=args)
    jac.search()  # a report shows the colourings of the whole search
    prep = time.perf_counter() - t0
    st = jac.stats()
    x = jac.x0
    m, n = st["shape"]
    # the time a program that keeps computing sees: the compiled kernels (a fresh process
    # runs its first small calls in the interpreter, a hundred times slower, until numba's
    # start has paid for itself), loaded and warmed by one call before the timed ones
    kernels.expect(kernels.FALLBACK_BUDGET + 1)
    jac(x)
    rep = {
        "shape": [m, n],
        "nnz": st["nnz"],
        "density": st["nnz"] / (m * n) if m * n else 0.0,
        "lower_bound": st["lower_bound"],
        "detection_seconds": st["seconds"]["detection"],
        "coloring_seconds": st["seconds"]["coloring"],
        "colors": st["colors"],
        "auto": {
            "mode": jac.mode,
            "reason": jac.reason,
            "n_products": jac.n_products,
            # ("direct": J's entries written without products, n_products 0)
            "path": "direct" if (st.get("engine") or {}).get("path") == "direct"
            else "products",
            "seconds": _min_time(lambda: jac(x), repeats),
        },
        "f_seconds": _min_time(lambda: jac.f(x), repeats),
        "preparation_seconds": prep,
    }
    if m == 1:
        rep["hessian"] = _hessian_report(f, x, order, args, repeats)
    return (rep, jac) if return_jacobian else rep


def _hessian_report(f: Callable[..., Any], x: Any, order: Any, args: tuple[Any, ...],
                    repeats: int) -> dict[str, Any]:
    """A scalar function's Hessian: pattern, star/acyclic/column colours, one Hessian's time."""
    from sparsejac.errors import UnsupportedPrimitiveError
    from sparsejac.hessians import SparseHessian

    try:
        t0 = time.perf_counter()
        hess = SparseHessian(f, x, order=order, args=args, verify=False)
        prep = time.perf_counter() - t0
    except UnsupportedPrimitiveError as exc:
        return {"error": str(exc)}
    pattern = hess.plan.pattern
    acyclic = color(pattern, "symmetric", order, method="acyclic",
                    effort=float(hess.plan.effort))
    st = hess.stats()
    return {
        "nnz": st["nnz"],
        "colors": {"star": int(hess.coloring.n_colors) if hess.coloring.partition ==
                   "symmetric" else int(color(pattern, "symmetric", order, method="star",
                                              effort=float(hess.plan.effort)).n_colors),
                   "acyclic": int(acyclic.n_colors), "column": st["colors_column"]},
        "lower_bound": st["lower_bound"],
        "n_products": int(hess.n_products),
        "path": st["path"],
        "reason": hess.reason,
        "seconds": _min_time(lambda: hess(x), repeats),
        "preparation_seconds": prep,
    }
