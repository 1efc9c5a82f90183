"""sparsejac: exact sparse Jacobians of plain numpy programs.

The pipeline (see ``docs/``): detect the sparsity pattern of ``f`` by tracing its numpy
calls, colour the pattern into a few seed directions, evaluate compressed Jacobian products
with forward or reverse mode, and decompress into a ``scipy.sparse.csr_array``.
"""

from sparsejac.api import (
    OdeJacobian,
    RootJacobian,
    SparseJacobian,
    jacobian,
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
from sparsejac.pattern import SparsityPattern, as_pattern

__version__ = "0.1.0"

__all__ = [
    "ColoringResult",
    "ConcretizationError",
    "OdeJacobian",
    "RootJacobian",
    "SparseJacobian",
    "SparsityPattern",
    "TracedConversionError",
    "UnsupportedPrimitiveError",
    "__version__",
    "as_pattern",
    "color",
    "jacobian",
    "jacobian_sparsity",
    "least_squares_jacobian",
    "ode_jacobian",
    "root_jacobian",
]
