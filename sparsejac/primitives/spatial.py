"""``scipy.spatial.distance``'s ``pdist``, ``cdist`` and ``squareform`` at traced points.

They convert their arguments with ``np.asarray`` and compute in compiled code, so numpy never
hands them to the tracer. While a trace runs they are intercepted
(:func:`~sparsejac.primitives.core.register_library`) and computed with numpy on the traced
points: the pairs' coordinate differences (``np.triu_indices`` for ``pdist``, broadcasting for
``cdist``), then the metric. An energy of a cluster written ``np.sum(lj(pdist(x.reshape(-1,
3))))`` (Lennard-Jones, Morse) is then traced as written. Metrics ``euclidean`` (at
coincident points its derivative is 0, the modulus's convention, as ``np.linalg.norm``'s),
``sqeuclidean`` and ``cityblock``; others, weights and a callable metric are refused by name.
Registered when the traced program has imported ``scipy.spatial``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.spatial.distance as ssd

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.primitives.core import register_library
from sparsejac.tracing.tracer import Tracer

__all__: list[str] = []

_METRICS = ("euclidean", "sqeuclidean", "cityblock")
_NOTE = "metrics euclidean, sqeuclidean, cityblock"


def _check_metric(name: str, metric: Any, out: Any, kwargs: dict[str, Any]) -> str:
    if out is not None:
        raise UnsupportedPrimitiveError(f"scipy.spatial.distance.{name}",
                                        "`out=` writes into a plain array; drop it",
                                        problem="with out=")
    if not isinstance(metric, str) or metric not in _METRICS or kwargs:
        what = (f"metric={metric!r}" if not kwargs else
                f"the keyword arguments {sorted(kwargs)}")
        raise UnsupportedPrimitiveError(
            f"scipy.spatial.distance.{name}", f"{what} has no rule; supported: metric one of "
            f"{', '.join(_METRICS)}, without weights (write another metric with numpy on the "
            "coordinate differences)", problem=f"with {what}")
    return metric


def _points(a: Any, what: str) -> Any:
    a = a if isinstance(a, Tracer) else np.asarray(a, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{what} must be a 2-dimensional array; got {a.ndim} dimensions")
    return a


def _distances(d: Any, metric: str) -> Any:
    if metric == "cityblock":
        return np.sum(np.abs(d), axis=-1)
    squared = np.sum(d * d, axis=-1)
    return squared if metric == "sqeuclidean" else np.sqrt(squared)


@register_library(ssd.pdist, name="scipy.spatial.distance.pdist", family="reductions",
                  via="composite: indexing, sum, sqrt", note=_NOTE)
def _pdist(X: Any, metric: Any = "euclidean", *, out: Any = None, **kwargs: Any) -> Any:
    metric = _check_metric("pdist", metric, out, kwargs)
    X = _points(X, "A (the points)")
    i, j = np.triu_indices(X.shape[0], 1)
    return _distances(X[i] - X[j], metric)


@register_library(ssd.cdist, name="scipy.spatial.distance.cdist", family="reductions",
                  via="composite: broadcasting, sum, sqrt", note=_NOTE)
def _cdist(XA: Any, XB: Any, metric: Any = "euclidean", *, out: Any = None,
           **kwargs: Any) -> Any:
    metric = _check_metric("cdist", metric, out, kwargs)
    XA, XB = _points(XA, "XA"), _points(XB, "XB")
    if XA.shape[1] != XB.shape[1]:
        raise ValueError("XA and XB must have the same number of columns (i.e. feature "
                         "dimension.)")
    return _distances(XA[:, None, :] - XB[None, :, :], metric)


@register_library(ssd.squareform, name="scipy.spatial.distance.squareform", family="movement",
                  via="gather")
def _squareform(X: Any, force: str = "no", checks: bool = True) -> Any:
    X = X if isinstance(X, Tracer) else np.asarray(X, dtype=np.float64)
    if X.ndim == 1 and force != "tomatrix":
        k = X.shape[0]
        m = int(np.ceil(np.sqrt(2 * k)))
        if m * (m - 1) != 2 * k:
            raise ValueError("Incompatible vector size. It must be a binomial coefficient n "
                             "choose 2 for some integer n >= 2.")
        m = max(m, 1)
        pos = np.zeros((m, m), dtype=np.int64)  # 0: the diagonal's zero
        i, j = np.triu_indices(m, 1)
        pos[i, j] = pos[j, i] = np.arange(1, k + 1)
        return np.concatenate([np.zeros(1), X])[pos]
    if X.ndim == 2 and force != "tovector":
        if X.shape[0] != X.shape[1]:
            raise ValueError("The matrix argument must be square.")
        if checks:
            value = np.asarray(X._var.value if isinstance(X, Tracer) else X)
            if not np.allclose(value, value.T) or np.any(np.diag(value) != 0):
                raise ValueError("Distance matrix 'X' must be symmetric with a zero "
                                 "diagonal.")
        return X[np.triu_indices(X.shape[0], 1)]
    raise ValueError(f"The first argument must be one or two dimensional array "
                     f"(force={force!r}); got {X.ndim} dimensions")
