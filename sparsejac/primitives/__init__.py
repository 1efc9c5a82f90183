"""The primitive registry and its families (importing this package registers them all).

See :mod:`sparsejac.primitives.core` for the two levels (numpy entries, primitives with rules)
and the family modules for the rules themselves.
"""

from sparsejac.primitives import (  # noqa: F401  (imported for their registrations)
    composites,
    creation,
    elementwise,
    indexing,
    linalg,
    movement,
    reductions,
)
from sparsejac.primitives.core import FUNCTIONS, UFUNCS, Entry, Primitive

__all__ = ["FUNCTIONS", "UFUNCS", "Entry", "Primitive", "supported_entries"]


def supported_entries() -> list[Entry]:
    """Every registered numpy function and ufunc method, sorted by family and name."""
    entries = list(FUNCTIONS.values())
    for u in UFUNCS.values():
        entries.extend(u.methods.values())
    unique = {e.name: e for e in entries}
    return sorted(unique.values(), key=lambda e: (e.family, e.name))
