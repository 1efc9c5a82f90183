"""Saved plans: a prepared Jacobian's pattern, colourings and mode in a ``.npz`` file.

Preparing a large problem spends most of its time colouring (and searching for fewer
colours). :meth:`sparsejac.SparseJacobian.save` writes what that produced; :func:`load`
prepares the same Jacobian again from it with the function supplied anew, skipping the
colouring. Nothing executable is stored (the file holds arrays and a JSON header, read with
``allow_pickle=False``); the recorded program holds references to code, so it is recorded
again by tracing ``f`` at the saved ``x0``, and checked: ``f`` must give the saved value
there, and its detected pattern must lie in the saved one.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from sparsejac.coloring import ColoringResult
from sparsejac.deferred import search_due
from sparsejac.pattern import as_pattern
from sparsejac.pipeline import Plan, SavedPlan
from sparsejac.validation import check_args, check_callable, check_kwargs

if TYPE_CHECKING:
    from sparsejac.sparse_jacobian import SparseJacobian

__all__ = ["load", "save"]

#: The file format's name and version (refused if different).
FORMAT = "sparsejac-plan-1"


def save(jac: SparseJacobian, path: str | os.PathLike[str]) -> None:
    """Write ``jac``'s pattern, colourings, mode and preparation point to ``path`` (``.npz``).

    See :meth:`sparsejac.SparseJacobian.save`.

    Examples
    --------
    >>> import json, os, tempfile
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.plans import save
    >>> path = os.path.join(tempfile.mkdtemp(), "plan.npz")
    >>> save(sparsejac.SparseJacobian(lambda x: x ** 2, np.ones(3)), path)
    >>> json.loads(str(np.load(path)["header"]))["format"]
    'sparsejac-plan-1'
    """
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path) or isinstance(
            os.fspath(path), bytes) or os.fspath(path).endswith(("/", os.sep)):
        raise TypeError(f"`path` must name a file (a str or path-like); got {path!r:.80}")
    if os.path.isdir(path):  # (numpy would write `path`.npz beside it; found from outside)
        raise ValueError(f"`path` {os.fspath(path)!r} is a directory; give a file name")
    plan = jac.plan
    pat = plan.pattern
    x0 = jac.x0
    fx0 = np.asarray(jac.f(x0), dtype=np.float64).ravel()
    params = [np.asarray(p) for p in jac.params0]
    if any(p.dtype.kind not in "biuf" for p in params):
        raise ValueError("only numeric `params` can be saved; got "
                         f"{[str(p.dtype) for p in params]}")
    arrays: dict[str, np.ndarray] = {
        "indptr": np.asarray(pat.indptr), "indices": np.asarray(pat.indices),
        "x0": x0, "fx0": fx0}
    for i, p in enumerate(params):
        arrays[f"param{i}"] = p
    colorings = {}
    for mode, c in plan.colorings.items():
        colorings[mode] = {"partition": c.partition, "order": str(c.order),
                           "n_colors": int(c.n_colors), "lower_bound": int(c.lower_bound)}
        if c.column_groups is not None:
            arrays[f"cols_{mode}"] = np.asarray(c.column_groups)
        if c.row_groups is not None:
            arrays[f"rows_{mode}"] = np.asarray(c.row_groups)
    header = {"format": FORMAT, "shape": list(pat.shape), "mode": plan.mode,
              "reason": plan.reason, "costs": plan.costs, "effort": plan.effort,
              "colorings": colorings, "n_params": len(params), "options": jac.options}
    arrays["header"] = np.array(json.dumps(header))
    np.savez(os.fspath(path), **arrays)  # type: ignore[arg-type]


def load(path: str | os.PathLike[str], f: Callable[..., Any], *, args: tuple[Any, ...] = (),
         kwargs: dict[str, Any] | None = None, verify: bool = True,
         workers: Any = None) -> SparseJacobian:
    """Prepare ``f`` again from a plan saved by :meth:`sparsejac.SparseJacobian.save`.

    The saved pattern, colourings and mode are used as they are: no colouring and no colour
    search, the costly part of preparing a large problem. ``f`` is traced once at the saved
    ``x0`` (its program refers to code, which a file does not hold) and must be the function
    the plan was made for.

    Parameters
    ----------
    path : str or path-like
        The ``.npz`` file.
    f : callable
        The function, with the same signature as when the plan was saved.
    args, kwargs : optional
        Its further arguments (not stored in the file).
    verify, workers
        As for :class:`~sparsejac.SparseJacobian`.

    Returns
    -------
    SparseJacobian

    Raises
    ------
    ValueError
        The file is not a saved plan, or ``f`` does not give the saved value at ``x0``, or
        its pattern does not lie in the saved one.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import sparsejac
    >>> f = lambda x: x[1:] ** 2 - x[:-1]
    >>> jac = sparsejac.SparseJacobian(f, np.ones(5))
    >>> path = os.path.join(tempfile.mkdtemp(), "plan.npz")
    >>> jac.save(path)
    >>> again = sparsejac.load(path, f)
    >>> again.mode == jac.mode, again.stats()["coloring_work"]
    (True, 0.0)
    >>> np.array_equal(again(np.arange(5.0)).toarray(), jac(np.arange(5.0)).toarray())
    True
    """
    from sparsejac.sparse_jacobian import SparseJacobian, bind_arguments

    f = check_callable(f)
    args = check_args(args)
    path = os.fspath(path)
    if not os.path.exists(path) and os.path.exists(path + ".npz"):
        path += ".npz"  # save("plan") wrote plan.npz (numpy's rule): the same name loads it
    try:
        with np.load(path, allow_pickle=False) as z:
            header = json.loads(str(z["header"]))
            arrays = {k: z[k] for k in z.files if k != "header"}
        if header.get("format") != FORMAT:
            raise _WrongFormat(f"`path` {path!r} holds format {header.get('format')!r}; this "
                               f"version reads {FORMAT!r}")
        saved, x0, params, want, options = _decode(header, arrays)
    except _WrongFormat as exc:
        raise ValueError(str(exc)) from None
    except (OSError, ValueError, KeyError, TypeError, IndexError, EOFError,
            zipfile.BadZipFile) as exc:  # damaged, truncated or not a plan
        raise ValueError(f"`path` {path!r} is not a saved sparsejac plan ({type(exc).__name__}: "
                         f"{exc})") from exc
    kw = check_kwargs(kwargs)
    real = np.asarray(bind_arguments(f, tuple(args), kw)(np.array(x0, copy=True), *params),
                      dtype=np.float64).ravel()
    if real.shape != want.shape or not np.allclose(real, want, rtol=1e-12, atol=0.0,
                                                   equal_nan=True):
        raise ValueError(
            "`f` does not give the saved plan's value at its x0: the plan was made for "
            "another function (or other arguments); prepare anew with SparseJacobian")
    try:
        return SparseJacobian(f, x0, sparsity=saved, params=params, args=tuple(args),
                              kwargs=kwargs, verify=verify, workers=workers, **options)
    except ValueError as exc:
        if "`sparsity` misses" not in str(exc):
            raise
        what = str(exc).removeprefix("`sparsity` misses ").split(" (the trace found them)")
        example = what[-1].split(";")[0]
        raise ValueError(
            f"the saved plan's pattern misses {what[0]} (with these arguments){example}; the "
            "plan was made for other arguments: prepare anew with SparseJacobian") from exc


class _WrongFormat(Exception):
    """A plan file of another format version."""


def _decode(header: dict[str, Any], arrays: dict[str, np.ndarray]) -> tuple[
        SavedPlan, np.ndarray, tuple[np.ndarray, ...], np.ndarray, dict[str, Any]]:
    """The saved plan, ``x0``, the parameters, ``f(x0)`` and the options, from a plan file."""
    m, n = header["shape"]
    pattern = as_pattern(sp.csr_array((np.ones(arrays["indices"].size, dtype=bool),
                                       arrays["indices"], arrays["indptr"]), shape=(m, n)),
                         name="the saved pattern")
    colorings = {
        mode: ColoringResult(
            pattern=pattern, partition=c["partition"], order=c["order"],
            n_colors=c["n_colors"], column_groups=arrays.get(f"cols_{mode}"),
            row_groups=arrays.get(f"rows_{mode}"), lower_bound=c["lower_bound"],
            seconds=0.0, candidates=(), work=0.0)
        for mode, c in header["colorings"].items()}
    saved = SavedPlan(pattern, colorings, header["mode"], header["reason"],
                      {k: float(v) for k, v in header["costs"].items()},
                      float(header["effort"]))
    x0 = np.asarray(arrays["x0"], dtype=np.float64)
    params = tuple(arrays[f"param{i}"] for i in range(header["n_params"]))
    return saved, x0, params, np.asarray(arrays["fx0"], dtype=np.float64), dict(
        header["options"])


def plan_stats(plan: Plan, calls: int, preparations: int, branches: list[int]
               ) -> dict[str, Any]:
    """:meth:`sparsejac.SparseJacobian.stats` of ``plan``, after ``calls`` calls."""
    m, n = plan.shape
    rows, cols = plan.pattern.row_counts, plan.pattern.col_counts
    return {
        "shape": [m, n],
        "nnz": int(plan.pattern.nnz),
        "mode": plan.mode,
        "reason": plan.reason,
        "n_products": plan.n_products,
        "exact": plan.mode != "fd",
        "retraced_each_call": plan.engine.kind == "retrace",
        "colors": {md: int(c.n_colors) for md, c in plan.colorings.items()},
        "products": {md: [int(c.n_forward), int(c.n_reverse)]
                     for md, c in plan.colorings.items()},
        "costs": dict(plan.costs),
        "lower_bound": {"column": int(rows.max()) if rows.size else 0,
                        "row": int(cols.max()) if cols.size else 0},
        "coloring_budget": plan.effort + plan.pending,
        "deferred_search": (None if not plan.pending else
                            {"effort": plan.pending, "due_after_calls": search_due(plan),
                             "calls": calls}),
        "coloring_work": float(sum(c.work for c in plan.colorings.values())),
        "seconds": dict(plan.seconds),
        "engine": plan.engine.stats(),
        "preparations": preparations,
        "branches": branches,
    }
