"""sparsejac: exact sparse Jacobians of plain numpy programs.

The pipeline (see ``docs/``): detect the sparsity pattern of ``f`` by tracing its numpy
calls, colour the pattern into a few seed directions, evaluate compressed Jacobian products
with forward or reverse mode, and decompress into a ``scipy.sparse.csr_array``.

Public names are listed in ``__all__``; everything else is internal (see the developer
reference in the documentation). ``import sparsejac`` is cheap: each public name (and each
subpackage, ``sparsejac.ad`` ...) imports its module on first use, so numba, the colouring
kernels and scipy's solvers load only when a Jacobian is asked for.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from sparsejac.errors import (
    ConcretizationError,
    KernelCompilationWarning,
    PreparedAgainWarning,
    TracedConversionError,
    TraceMismatchError,
    UnsupportedPrimitiveError,
)
from sparsejac.tracing import hooks as _hooks

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time, __getattr__ below
    from sparsejac.adapters import (
        BvpJacobian,
        LeastSquaresJacobian,
        OdeJacobian,
        RootJacobian,
        bvp_jacobian,
        least_squares_jacobian,
        ode_jacobian,
        root_jacobian,
    )
    from sparsejac.coloring import ColoringResult, color
    from sparsejac.constrained import (
        ConstraintHessian,
        LagrangianHessian,
        constraint_hessian,
        lagrangian_hessian,
    )
    from sparsejac.detection import jacobian_sparsity
    from sparsejac.hessians import SparseHessian, hessian, hessian_sparsity
    from sparsejac.one_off import jacobian
    from sparsejac.operators import JacobianOperator, KrylovMethod
    from sparsejac.plans import load
    from sparsejac.products import ProductJacobian, from_products
    from sparsejac.report import function_report, matrix_report
    from sparsejac.sparse_jacobian import SparseJacobian
    from sparsejac.warmup import warm_up

__version__ = "0.1.0"

#: public name -> the module defining it (imported on first access)
_LAZY: dict[str, str] = {
    "BvpJacobian": "sparsejac.adapters",
    "bvp_jacobian": "sparsejac.adapters",
    "JacobianOperator": "sparsejac.operators",
    "KrylovMethod": "sparsejac.operators",
    "LeastSquaresJacobian": "sparsejac.adapters",
    "OdeJacobian": "sparsejac.adapters",
    "RootJacobian": "sparsejac.adapters",
    "least_squares_jacobian": "sparsejac.adapters",
    "ode_jacobian": "sparsejac.adapters",
    "root_jacobian": "sparsejac.adapters",
    "ColoringResult": "sparsejac.coloring",
    "color": "sparsejac.coloring",
    "jacobian_sparsity": "sparsejac.detection",
    "jacobian": "sparsejac.one_off",
    "function_report": "sparsejac.report",
    "matrix_report": "sparsejac.report",
    "SparseJacobian": "sparsejac.sparse_jacobian",
    "SparseHessian": "sparsejac.hessians",
    "ConstraintHessian": "sparsejac.constrained",
    "LagrangianHessian": "sparsejac.constrained",
    "hessian": "sparsejac.hessians",
    "hessian_sparsity": "sparsejac.hessians",
    "constraint_hessian": "sparsejac.constrained",
    "lagrangian_hessian": "sparsejac.constrained",
    "load": "sparsejac.plans",
    "ProductJacobian": "sparsejac.products",
    "from_products": "sparsejac.products",
    "warm_up": "sparsejac.warmup",
}

__all__ = [
    "BvpJacobian",
    "ColoringResult",
    "ConcretizationError",
    "ConstraintHessian",
    "JacobianOperator",
    "KernelCompilationWarning",
    "KrylovMethod",
    "LagrangianHessian",
    "LeastSquaresJacobian",
    "OdeJacobian",
    "PreparedAgainWarning",
    "ProductJacobian",
    "RootJacobian",
    "SparseHessian",
    "SparseJacobian",
    "TraceMismatchError",
    "TracedConversionError",
    "UnsupportedPrimitiveError",
    "__version__",
    "bvp_jacobian",
    "color",
    "constraint_hessian",
    "from_products",
    "function_report",
    "hessian",
    "hessian_sparsity",
    "jacobian",
    "jacobian_sparsity",
    "lagrangian_hessian",
    "least_squares_jacobian",
    "load",
    "matrix_report",
    "ode_jacobian",
    "root_jacobian",
    "warm_up",
]


def _load_primitives() -> None:
    importlib.import_module("sparsejac.primitives")


_hooks.loader(_load_primitives)  # a Tracer's first numpy call installs the registry


# No public name may equal a submodule's name: importing the submodule would rebind it.
def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")  # a subpackage: sparsejac.ad
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
