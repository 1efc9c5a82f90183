"""scipy.integrate's quadrature of sampled values, traced through scipy's own numpy code.

``simpson``, ``trapezoid``, ``cumulative_trapezoid`` and ``cumulative_simpson`` convert
their arguments with ``np.asarray`` and then compute with numpy only (slices, products,
sums, cumulative sums). While a trace runs they are intercepted and run their own code on
the traced values (:func:`~sparsejac.primitives.core.register_through`), so their Jacobian is
that of scipy's own formulas (Simpson's rule with Cartwright's correction for an even number
of samples included). Registered when the traced program has imported ``scipy.integrate``.
A traced sample grid ``x`` goes through the same code; where scipy converts it to a plain
float (``simpson`` of an even number of samples), that is refused with a message.
"""

from __future__ import annotations

import scipy.integrate as si

from sparsejac.primitives.core import register_through

__all__: list[str] = []

for _name in ("simpson", "trapezoid", "cumulative_trapezoid", "cumulative_simpson"):
    _func = getattr(si, _name, None)
    if _func is not None:
        register_through(_func, name=f"scipy.integrate.{_name}", family="reductions")
