"""Compile the kernels of sparsejac's common paths ahead of their first use: :func:`warm_up`.

sparsejac's compiled kernels are numba functions cached on disk. The first process that
needs one after installing (or upgrading) compiles it, which makes that first use seconds
slower (:class:`~sparsejac.errors.KernelCompilationWarning` says so). :func:`warm_up`, also
``sparsejac warm-up`` on the command line, runs small Jacobians and Hessians through every
common path (detection, colouring with the default search, the compiled tape in each mode,
the chain engine and direct assembly, parameters such as an ODE's ``t``, Hessians, finite
differences), so that they are compiled once, at a moment of the user's choosing.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from sparsejac.validation import Mode

__all__ = ["warm_up"]

MODES: tuple[Mode, ...] = ("auto", "forward", "reverse", "mixed")


def _stencil(x: Any) -> Any:
    """A vector program: a 1-D stencil with a nonlinear diagonal (direct assembly)."""
    r = x ** 3 - 2.0 * x
    r[1:] += np.sin(x[:-1])
    r[:-1] += x[1:] * x[:-1]
    return r


def _kinetics(t: Any, y: Any) -> Any:
    """A scalar program, element by element, with a time parameter (the compiled tape)."""
    f = np.empty_like(y)
    f[0] = -1.7 * y[0] + 0.4 * y[1] * y[2] + np.exp(-t)
    f[1] = 1.7 * y[0] - 8.7 * y[1] / (1.0 + y[3] ** 2)
    f[2] = -10.0 * y[2] + np.sqrt(1.0 + y[3] ** 2) - np.log1p(y[4] ** 2)
    f[3] = 280.0 * y[3] * y[4] - np.tanh(y[1])
    f[4] = -f[3] + y[0] * np.cos(y[2])
    return f


def _arrow(x: Any) -> Any:
    """An arrowhead, a dense row and a dense column: mixed mode."""
    r = x ** 2 + np.cos(x[0])
    r[0] = np.sum(np.sin(x))
    return r


def _objective(x: Any) -> Any:
    """A scalar objective with a banded Hessian (symmetric colouring)."""
    return np.sum((x[1:] - x[:-1] ** 2) ** 2) + np.sum(np.log1p(x ** 2))


def warm_up(*, sizes: tuple[int, ...] = (40, 3000)) -> float:
    """Compile (or load from numba's cache) the kernels of sparsejac's common paths.

    Run it once after installing or upgrading (``sparsejac warm-up`` on the command line):
    the first Jacobian of every later process then loads compiled kernels instead of
    compiling them. Results are unaffected; only when the compilation happens changes.

    Parameters
    ----------
    sizes : tuple of int
        Problem sizes to run, each 4 to 10**6 (small ones take the scalar paths, larger ones
        the vector ones).

    Returns
    -------
    float
        Seconds spent (tens of seconds when it compiles, about a second when every kernel
        is already cached).

    Raises
    ------
    TypeError, ValueError
        ``sizes`` is not a sequence of integers from 4 to 10**6.

    Examples
    --------
    >>> import sparsejac
    >>> seconds = sparsejac.warm_up(sizes=(12,))
    >>> seconds > 0
    True
    """
    if (not isinstance(sizes, (tuple, list)) or not sizes
            or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool)
                       for n in sizes)):
        raise TypeError(f"`sizes` must be a non-empty tuple of integers; got {sizes!r}")
    if min(sizes) < 4 or max(sizes) > 10 ** 6:
        raise ValueError(f"`sizes` must be 4 to 10**6 each (problem sizes to compile for); "
                         f"got {tuple(sizes)!r}")
    import numba  # noqa: F401  (loaded: every path below takes its kernels, none the numpy paths)
    import scipy.sparse as sp

    from sparsejac.ad import native
    from sparsejac.adapters import ode_jacobian
    from sparsejac.coloring import color_partitions
    from sparsejac.detection import jacobian_sparsity
    from sparsejac.errors import KernelCompilationWarning
    from sparsejac.hessians import SparseHessian
    from sparsejac.one_off import jacobian
    from sparsejac.sparse_jacobian import SparseJacobian

    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KernelCompilationWarning)
        for n in sizes:
            x = np.linspace(0.2, 1.2, n)
            jacobian_sparsity(_stencil, x)
            jacobian(_stencil, x)
            for mode in MODES:
                for fn in (_stencil, _arrow):
                    jac = SparseJacobian(fn, x, mode=mode)
                    jac(x + 0.1, out=jac(x))
            SparseJacobian(_stencil, x, mode="fd")(x)
            hess = SparseHessian(_objective, x)
            hess(x + 0.1)
            color_partitions(sp.random_array((n, n), density=min(3.0 / n, 1.0), rng=rng)
                             + sp.eye_array(n))
        y = np.linspace(0.1, 0.5, 5)
        for mode in MODES:
            ode = ode_jacobian(_kinetics, 0.0, y, mode=mode)
            ode(0.5, y + 0.1)
            ode(1.0, y)
            SparseJacobian(lambda z: _kinetics(0.0, z), y, mode=mode)(y)
        native.compile_scalars()  # (what a tape's generated code calls: ad.native)
    return time.perf_counter() - t0

