"""sparsejac: exact sparse Jacobians of plain numpy programs.

The pipeline (see ``docs/``): detect the sparsity pattern of ``f`` by tracing its numpy
calls, colour the pattern into a few seed directions, evaluate compressed Jacobian products
with forward or reverse mode, and decompress into a ``scipy.sparse.csr_array``.

Public names are listed in ``__all__``; everything else is internal (see the developer
reference in the documentation).
"""

from sparsejac.adapters import (
    BvpJacobian,
    OdeJacobian,
    RootJacobian,
    bvp_jacobian,
    least_squares_jacobian,
    ode_jacobian,
    root_jacobian,
)
from sparsejac.coloring import ColoringResult, color
from sparsejac.detection import jacobian_sparsity
from sparsejac.errors import (
    ConcretizationError,
    TracedConversionError,
    UnsupportedPrimitiveError,
)
from sparsejac.jacobian import jacobian
from sparsejac.operators import JacobianOperator
from sparsejac.report import function_report, matrix_report
from sparsejac.sparse_jacobian import SparseJacobian

__version__ = "0.1.0"

__all__ = [
    "BvpJacobian",
    "ColoringResult",
    "ConcretizationError",
    "JacobianOperator",
    "OdeJacobian",
    "RootJacobian",
    "SparseJacobian",
    "TracedConversionError",
    "UnsupportedPrimitiveError",
    "__version__",
    "bvp_jacobian",
    "color",
    "function_report",
    "jacobian",
    "jacobian_sparsity",
    "least_squares_jacobian",
    "matrix_report",
    "ode_jacobian",
    "root_jacobian",
]
