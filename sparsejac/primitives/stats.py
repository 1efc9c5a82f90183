"""``scipy.stats`` densities and distribution functions with traced arguments.

A distribution's ``pdf``, ``logpdf``, ``cdf``, ``logcdf``, ``sf`` and ``logsf`` (``pmf`` and
``logpmf`` for a discrete one) are methods of scipy's generic ``rv_continuous`` /
``rv_discrete`` classes, which convert their arguments with ``np.asarray`` and dispatch to the
distribution's private ``_logpdf``, ``_cdf``, ... They are intercepted while a trace runs
(:mod:`sparsejac.tracing.library`; a frozen distribution, ``norm(loc, scale).logpdf(x)``, calls
the same methods) and reach a handler keyed by the method; the handler looks the distribution
up in :data:`DISTRIBUTIONS` by its class and recomputes scipy's generic method as a composite:
``y = (x - loc) / scale``, the distribution's formula where the arguments are valid and ``y``
is inside the support (the same private formulas as scipy's, on the scipy.special ufuncs this
package traces), the fill values of scipy (0, 1, -inf, NaN) elsewhere, chosen by
``np.where``. Any of ``x``, ``loc``, ``scale`` and the shape parameters may be traced, except
the shape parameters whose derivative has no closed form in the distribution functions
(``gamma``'s ``a``, ``beta``'s ``a`` and ``b``, ``t``'s ``df`` in ``cdf``/``sf`` and their
logarithms): those are refused with an error naming the method and the parameter. For a
discrete distribution, ``x`` (and ``loc``) enter through ``floor`` and have zero derivative.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.special as sc
import scipy.stats as st
from scipy.stats._distn_infrastructure import rv_continuous, rv_discrete

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.primitives import elementwise as ew
from sparsejac.primitives import partials
from sparsejac.primitives.core import register_library
from sparsejac.primitives.creation import as_traced_array

__all__ = ["DISTRIBUTIONS", "Distribution"]

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
_SQRT_2PI = np.sqrt(2.0 * np.pi)


@dataclass(frozen=True)
class Distribution:
    """scipy's private formulas of one distribution, on the standardised variable ``y``.

    Attributes
    ----------
    name : str
        scipy's name (``"norm"``).
    rules : dict
        Method (``"logpdf"``, ``"cdf"``, ...) -> ``(y, *shapes) -> value``.
    support : tuple of float
        ``(a, b)`` of the standardised variable.
    inside : float
        A point inside the support (where formulas are evaluated outside it, so that they
        raise no warnings; the value there is never used).
    refuse : dict
        Method -> the shape parameters that may not be traced in it.
    """

    name: str
    rules: dict[str, Callable[..., Any]]
    support: tuple[float, float] = (-np.inf, np.inf)
    inside: float = 0.0
    refuse: dict[str, tuple[str, ...]] = field(default_factory=dict)
    discrete: bool = False
    argcheck: Callable[..., Any] | None = None  # default: every shape parameter > 0

    def valid(self, *shapes: Any) -> Any:
        """Where the shape parameters are valid (scipy's ``_argcheck``)."""
        if self.argcheck is not None:
            return self.argcheck(*shapes)
        cond: Any = True
        for s in shapes:
            cond = np.logical_and(cond, np.greater(s, 0))
        return cond


def _norm_rules() -> dict[str, Callable[..., Any]]:
    return {
        "pdf": lambda y: np.exp(-y ** 2 / 2.0) / _SQRT_2PI,
        "logpdf": lambda y: -y ** 2 / 2.0 - _LOG_SQRT_2PI,
        "cdf": sc.ndtr,
        "logcdf": sc.log_ndtr,
        "sf": lambda y: sc.ndtr(-y),
        "logsf": lambda y: sc.log_ndtr(-y),
    }


def _t_logpdf(y: Any, df: Any) -> Any:
    return partials.t_log_density(y, df)


def _gamma_logpdf(y: Any, a: Any) -> Any:
    return sc.xlogy(a - 1.0, y) - y - sc.gammaln(a)


def _beta_logpdf(y: Any, a: Any, b: Any) -> Any:
    return sc.xlog1py(b - 1.0, -y) + sc.xlogy(a - 1.0, y) - sc.betaln(a, b)


def _lognorm_logpdf(y: Any, s: Any) -> Any:
    # -inf at y = 0 (the boundary of the closed support), as scipy's _lognorm_logpdf
    at0 = np.equal(y, 0)
    y1 = np.where(at0, 1.0, y)
    return np.where(at0, -np.inf, -np.log(y1) ** 2 / (2 * s ** 2) - np.log(s * y1 * _SQRT_2PI))


def _poisson_logpmf(k: Any, mu: Any) -> Any:
    return sc.xlogy(k, mu) - sc.gammaln(k + 1) - mu


def _with_logs(rules: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """Fill in scipy's defaults: pdf = exp(logpdf), logcdf = log(cdf), logsf = log(sf)."""
    out = dict(rules)
    if "logpdf" in out and "pdf" not in out:
        lp = out["logpdf"]
        out["pdf"] = lambda *a: np.exp(lp(*a))
    if "logpmf" in out and "pmf" not in out:
        lpm = out["logpmf"]
        out["pmf"] = lambda *a: np.exp(lpm(*a))
    for m in ("cdf", "sf"):
        if f"log{m}" not in out:
            f = out[m]
            out[f"log{m}"] = lambda *a, f=f: np.log(f(*a))
    return out


_DISTRIBUTION_FUNCTIONS = ("cdf", "logcdf", "sf", "logsf")

#: The supported distributions, by scipy's class.
DISTRIBUTIONS: dict[type, Distribution] = {
    type(st.norm): Distribution("norm", _norm_rules()),
    type(st.expon): Distribution("expon", _with_logs({
        "pdf": lambda y: np.exp(-y), "logpdf": lambda y: -y,
        "cdf": lambda y: -np.expm1(-y), "sf": lambda y: np.exp(-y), "logsf": lambda y: -y,
    }), support=(0.0, np.inf), inside=1.0),
    type(st.t): Distribution("t", _with_logs({
        "logpdf": _t_logpdf,
        "cdf": lambda y, df: sc.stdtr(df, y), "sf": lambda y, df: sc.stdtr(df, -y),
    }), refuse=dict.fromkeys(_DISTRIBUTION_FUNCTIONS, ("df",))),
    type(st.gamma): Distribution("gamma", _with_logs({
        "logpdf": _gamma_logpdf,
        "cdf": lambda y, a: sc.gammainc(a, y), "sf": lambda y, a: sc.gammaincc(a, y),
    }), support=(0.0, np.inf), inside=1.0, refuse=dict.fromkeys(_DISTRIBUTION_FUNCTIONS,
                                                                  ("a",))),
    type(st.beta): Distribution("beta", _with_logs({
        "logpdf": _beta_logpdf,
        "cdf": lambda y, a, b: sc.betainc(a, b, y), "sf": lambda y, a, b: sc.betaincc(a, b, y),
    }), support=(0.0, 1.0), inside=0.5, refuse=dict.fromkeys(_DISTRIBUTION_FUNCTIONS,
                                                               ("a", "b"))),
    type(st.lognorm): Distribution("lognorm", _with_logs({
        "logpdf": _lognorm_logpdf,
        "cdf": lambda y, s: sc.ndtr(np.log(y) / s),
        "logcdf": lambda y, s: sc.log_ndtr(np.log(y) / s),
        "sf": lambda y, s: sc.ndtr(-np.log(y) / s),
        "logsf": lambda y, s: sc.log_ndtr(-np.log(y) / s),
    }), support=(0.0, np.inf), inside=1.0),
    type(st.poisson): Distribution("poisson", _with_logs({
        "logpmf": _poisson_logpmf,
        "cdf": lambda k, mu: sc.pdtr(k, mu), "sf": lambda k, mu: sc.pdtrc(k, mu),
    }), support=(0.0, np.inf), inside=1.0, discrete=True,
        argcheck=lambda mu: np.greater_equal(mu, 0)),
}

#: Fill values outside the support: (below, above) per method.
_FILL = {
    "pdf": (0.0, 0.0), "logpdf": (-np.inf, -np.inf), "pmf": (0.0, 0.0),
    "logpmf": (-np.inf, -np.inf), "cdf": (0.0, 1.0), "logcdf": (-np.inf, 0.0),
    "sf": (1.0, 0.0), "logsf": (0.0, -np.inf),
}


def _distribution(dist: Any, method: str) -> Distribution:
    rules = DISTRIBUTIONS.get(type(dist))
    if rules is None or method not in rules.rules:
        name = getattr(dist, "name", type(dist).__name__)
        supported = ", ".join(sorted(d.name for d in DISTRIBUTIONS.values()))
        raise UnsupportedPrimitiveError(
            f"scipy.stats.{name}.{method}",
            f"with traced arguments; the supported distributions are {supported}")
    return rules


def _refuse(dist: Any, rules: Distribution, method: str, shapes: tuple[Any, ...]) -> None:
    names = [n.strip() for n in (dist.shapes or "").split(",") if n.strip()]
    refused = rules.refuse.get(method, ())
    why = "its derivative with respect to this parameter has no closed form"
    ew.refuse_traced(f"scipy.stats.{rules.name}.{method}", shapes,
                     [(n, why) if n in refused else None for n in names])


def _as_array(v: Any) -> Any:
    """A list or tuple argument (``loc=[0, 1]``, traced scalars among them) as one array."""
    return as_traced_array(v) if isinstance(v, (list, tuple)) else v


def _evaluate(dist: Any, method: str, x: Any, args: tuple[Any, ...],
              kwds: dict[str, Any]) -> Any:
    rules = _distribution(dist, method)
    shapes, loc, scale = dist._parse_args(*args, **kwds)
    x, loc, scale, *shape_list = (_as_array(v) for v in (x, loc, scale, *shapes))
    shapes = tuple(shape_list)
    _refuse(dist, rules, method, tuple(shapes))
    a, b = rules.support
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        valid = rules.valid(*shapes) & (scale > 0)
        safe_shapes = tuple(np.where(valid, s, 1.0) for s in shapes)
        if rules.discrete:  # the count enters through floor: zero derivative
            k = x - loc
            y = np.floor(k)
            if method in ("cdf", "logcdf", "sf", "logsf"):
                inside = (y >= a) & (y < b)
            else:
                inside = (y >= a) & (y <= b) & (y == k)
        else:
            y = (x - loc) / scale
            closed = method in ("pdf", "logpdf")  # as scipy's _support_mask / _open_...
            inside = ((a <= y) & (y <= b)) if closed else ((a < y) & (y < b))
        cond = valid & inside
        y_safe = np.where(cond, y, rules.inside)
        value = rules.rules[method](y_safe, *safe_shapes)
        if method == "pdf":
            value = value / scale
        elif method == "logpdf":
            value = value - np.log(np.where(valid, scale, 1.0))
        below, above = _FILL[method]
        outside = np.where(y < rules.inside, below, above) if below != above else below
        res = np.where(cond, value, outside)
        res = np.where(valid & ~np.isnan(x), res, np.nan)
    return res[()] if np.ndim(res) == 0 and isinstance(res, np.ndarray) else res


def _register(cls: type, method: str) -> None:
    family = "discrete" if cls is rv_discrete else "continuous"
    names = ", ".join(sorted(d.name for d in DISTRIBUTIONS.values()
                             if d.discrete == (cls is rv_discrete)))

    def handler(self: Any, x: Any, *args: Any, **kwds: Any) -> Any:
        return _evaluate(self, method, x, args, kwds)

    handler.__name__ = method
    note = (f"{family}: {names} (frozen too); x, loc, scale and the shape parameters traced, "
            "except in cdf/sf for gamma's `a`, beta's `a`, `b`, t's `df`")
    if cls is rv_discrete:
        note = f"discrete: {names} (frozen too); `mu` traced, `k` and `loc` zero derivative"
    register_library(getattr(cls, method), name=f"scipy.stats.{cls.__name__}.{method}",
                     family="stats", via="composite: scipy.special, where", note=note)(handler)


for _m in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"):
    _register(rv_continuous, _m)
for _m in ("pmf", "logpmf", "cdf", "logcdf", "sf", "logsf"):
    _register(rv_discrete, _m)


# -- the multivariate normal distribution ---------------------------------------------------


def _mvn_logpdf(dim: int, mean: Any, cov_object: Any, x: Any, name: str) -> Any:
    """The log-density of scipy's ``multivariate_normal`` at a traced ``x`` (or ``mean``).

    The covariance is a constant: its whitening map (``x @ U`` for scipy's default
    ``CovViaPSD``) and log pseudo-determinant come from scipy's own object, so the value is
    scipy's formula on scipy's factors (equal to rounding). A singular covariance
    (``allow_singular=True`` with rank < dim) has a support that changes with x: refused.
    """
    if np.any(cov_object.rank < dim):
        raise UnsupportedPrimitiveError(
            name, "with a singular covariance (allow_singular=True and rank < dim): its "
            "support depends on x; write the density on the subspace with np.linalg functions")
    nd = int(np.ndim(x))
    if nd == 0:
        x = np.reshape(x, (1,))
    elif nd == 1:
        x = np.reshape(x, (-1, 1)) if dim == 1 else np.reshape(x, (1, -1))
    dev = x - mean
    log_det, rank = cov_object.log_pdet, cov_object.rank
    if np.ndim(dev) > 1:
        log_det = np.asarray(log_det)[..., np.newaxis]
        rank = np.asarray(rank)[..., np.newaxis]
    maha = np.sum(np.square(cov_object._whiten(dev)), axis=-1)
    out = -0.5 * (rank * np.log(2 * np.pi) + log_det + maha)
    return np.squeeze(out)


def _mvn_parameters(dist: Any, mean: Any, cov: Any, allow_singular: bool, name: str
                    ) -> tuple[int, Any, Any]:
    """``(dim, mean, cov_object)`` as scipy's ``_process_parameters``; a traced mean stays.

    Arrays made inside ``f`` (``np.eye(d)``) are constant Tracers (buffers): their values.
    """
    from sparsejac.tracing.tracer import Tracer

    cov = _as_array(cov)
    if isinstance(cov, Tracer):
        if not cov._var.is_const:
            raise UnsupportedPrimitiveError(
                name, "with a traced covariance; write the density with np.linalg.slogdet "
                "and np.linalg.solve (or cholesky)")
        cov = cov._var.value
    mean = _as_array(mean)
    if isinstance(mean, Tracer) and mean._var.is_const:
        mean = mean._var.value
    if isinstance(mean, Tracer):
        dim, _, cov_object = dist._process_parameters(
            np.zeros(np.shape(mean._var.value)), cov, allow_singular)
        return dim, mean, cov_object
    dim, mean, cov_object = dist._process_parameters(mean, cov, allow_singular)
    return dim, mean, cov_object


def _register_mvn() -> None:
    from scipy.stats._multivariate import multivariate_normal_frozen, multivariate_normal_gen

    note = "x and mean traced, cov constant (not singular); frozen too"
    for method, post in (("logpdf", None), ("pdf", np.exp)):
        name = f"scipy.stats.multivariate_normal.{method}"

        def handler(self: Any, x: Any, mean: Any = None, cov: Any = 1,
                    allow_singular: bool = False, _name: str = name, _post: Any = post) -> Any:
            dim, m, cov_object = _mvn_parameters(self, mean, cov, allow_singular, _name)
            res = _mvn_logpdf(dim, m, cov_object, _as_array(x), _name)
            return res if _post is None else _post(res)

        def frozen(self: Any, x: Any, _name: str = name, _post: Any = post) -> Any:
            res = _mvn_logpdf(self.dim, self.mean, self.cov_object, _as_array(x), _name)
            return res if _post is None else _post(res)

        handler.__name__ = frozen.__name__ = method
        register_library(getattr(multivariate_normal_gen, method), name=name, family="stats",
                         via="composite: matmul, sum", note=note)(handler)
        register_library(getattr(multivariate_normal_frozen, method),
                         name=f"scipy.stats.multivariate_normal(...).{method}", family="stats",
                         via="composite: matmul, sum", note=note)(frozen)


_register_mvn()
