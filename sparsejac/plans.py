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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from sparsejac.coloring import ColoringResult
from sparsejac.pattern import as_pattern
from sparsejac.pipeline import SavedPlan

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

    path = os.fspath(path)
    if not os.path.exists(path) and os.path.exists(path + ".npz"):
        path += ".npz"  # save("plan") wrote plan.npz (numpy's rule): the same name loads it
    try:
        with np.load(path, allow_pickle=False) as z:
            header = json.loads(str(z["header"]))
            arrays = {k: z[k] for k in z.files if k != "header"}
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"`path` {os.fspath(path)!r} is not a saved sparsejac plan ({exc})"
                         ) from exc
    if header.get("format") != FORMAT:
        raise ValueError(f"`path` {os.fspath(path)!r} holds format {header.get('format')!r}; "
                         f"this version reads {FORMAT!r}")
    m, n = header["shape"]
    pattern = as_pattern(sp.csr_array((np.ones(arrays["indices"].size, dtype=bool),
                                       arrays["indices"], arrays["indptr"]), shape=(m, n)))
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
    x0 = arrays["x0"]
    params = tuple(arrays[f"param{i}"] for i in range(header["n_params"]))
    kw = kwargs or {}
    real = np.asarray(bind_arguments(f, tuple(args), kw)(np.array(x0, copy=True), *params),
                      dtype=np.float64).ravel()
    want = arrays["fx0"]
    if real.shape != want.shape or not np.allclose(real, want, rtol=1e-12, atol=0.0,
                                                   equal_nan=True):
        raise ValueError(
            "`f` does not give the saved plan's value at its x0: the plan was made for "
            "another function (or other arguments); prepare anew with SparseJacobian")
    options = dict(header["options"])
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
