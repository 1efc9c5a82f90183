"""scipy.optimize's test functions (``rosen``, ``rosen_der``, ``rosen_hess_prod``).

scipy writes them with the array API (``array_namespace``, ``xp_promote``), which converts
its argument with ``np.asanyarray`` before any arithmetic, so numpy never hands a traced
argument to the tracer. While a trace runs they are intercepted
(:func:`~sparsejac.primitives.core.register_library`) and traced as the same formulas written
with numpy. Registered when the traced program has imported ``scipy.optimize``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.optimize as so

from sparsejac.primitives.core import register_library

__all__: list[str] = []

_VIA = "the same formula in numpy (scipy writes it with the array API)"


@register_library(so.rosen, name="scipy.optimize.rosen", family="reductions", via=_VIA)
def _rosen(x: Any) -> Any:
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0, axis=0)


@register_library(so.rosen_der, name="scipy.optimize.rosen_der", family="movement", via=_VIA)
def _rosen_der(x: Any) -> Any:
    xm, xm_m1, xm_p1 = x[1:-1], x[:-2], x[2:]
    der = np.zeros_like(x)
    der[1:-1] = 200 * (xm - xm_m1 ** 2) - 400 * (xm_p1 - xm ** 2) * xm - 2 * (1 - xm)
    der[0] = -400 * x[0] * (x[1] - x[0] ** 2) - 2 * (1 - x[0])
    der[-1] = 200 * (x[-1] - x[-2] ** 2)
    return der


@register_library(so.rosen_hess_prod, name="scipy.optimize.rosen_hess_prod",
                  family="movement", via=_VIA)
def _rosen_hess_prod(x: Any, p: Any) -> Any:
    hp = np.zeros_like(x * p)
    hp[0] = (1200 * x[0] ** 2 - 400 * x[1] + 2) * p[0] - 400 * x[0] * p[1]
    hp[1:-1] = (-400 * x[:-2] * p[:-2]
                + (202 + 1200 * x[1:-1] ** 2 - 400 * x[2:]) * p[1:-1]
                - 400 * x[1:-1] * p[2:])
    hp[-1] = -400 * x[-2] * p[-2] + 200 * p[-1]
    return hp
