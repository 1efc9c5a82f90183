"""The primitive registry and its families (importing this package registers them all).

See :mod:`sparsejac.primitives.core` for the two levels (numpy entries, primitives with rules)
and the family modules for the rules themselves.
"""

from typing import Any

from sparsejac.primitives import (  # noqa: F401  (imported for their registrations)
    assembly,
    complex_pairs,
    composites,
    creation,
    elementwise,
    indexing,
    linalg,
    movement,
    numpy_linalg,
    reductions,
    sorting,
    special,
)
from sparsejac.primitives.core import FUNCTIONS, UFUNCS, Entry, Primitive

__all__ = ["FUNCTIONS", "UFUNCS", "Entry", "Primitive", "supported_entries"]


def supported_entries() -> list[Entry]:
    """Every registered numpy function and ufunc method, sorted by family and name.

    Examples
    --------
    >>> from sparsejac.primitives import supported_entries
    >>> names = [e.name for e in supported_entries()]
    >>> "numpy.roll" in names and "numpy.add.at" in names
    True
    """
    from sparsejac.tracing import library

    library.run_deferred(force=True)  # rules registered when their library is imported
    entries = list(FUNCTIONS.values())
    for u in UFUNCS.values():
        entries.extend(u.methods.values())
    unique = {e.name: e for e in entries}
    return sorted(unique.values(), key=lambda e: (e.family, e.name))


def _defer_heavy_libraries() -> None:
    """Register the rules of heavy libraries when the user's program has imported them.

    ``scipy.stats`` and ``scipy.linalg``/``scipy.sparse.linalg`` each take a tenth of a second
    or more to import, which ``import sparsejac`` should not pay.
    """
    import importlib

    from sparsejac.tracing import library

    library.defer("scipy.stats",
                  lambda: importlib.import_module("sparsejac.primitives.stats"))
    # scipy.sparse.linalg imports scipy.linalg, so this also covers spsolve and splu
    library.defer("scipy.linalg",
                  lambda: importlib.import_module("sparsejac.primitives.scipy_linalg"))

    def filters(which: str) -> Any:
        return lambda: getattr(importlib.import_module("sparsejac.primitives.filters"),
                               f"register_{which}")()

    library.defer("scipy.optimize",
                  lambda: importlib.import_module("sparsejac.primitives.optimize"))
    library.defer("scipy.interpolate",
                  lambda: importlib.import_module("sparsejac.primitives.interpolate"))
    library.defer("scipy.integrate",
                  lambda: importlib.import_module("sparsejac.primitives.integrate"))
    library.defer("scipy.spatial",
                  lambda: importlib.import_module("sparsejac.primitives.spatial"))
    library.defer("scipy.ndimage", filters("ndimage"))
    library.defer("scipy.signal", filters("signal"))


def _install() -> None:
    """Install this registry as the one every Tracer dispatches to."""
    from sparsejac.primitives import core, views
    from sparsejac.tracing import hooks

    hooks.install(hooks.Registry(
        function=core.dispatch_function,
        ufunc=core.dispatch_ufunc,
        getitem=indexing.getitem,
        setitem=indexing.setitem,
        astype=elementwise.astype,
        as_array=creation.as_traced_array,
        check_writeable=views.check_writeable,
        sync=views.sync,
        element=indexing.element,
        merge_writes=indexing.merge_writes,
        read_writes=indexing.read_writes,
    ))


_install()
_defer_heavy_libraries()
