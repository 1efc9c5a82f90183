"""Memory a preparation gives back: freed heap returned to the system after large ones.

A preparation frees temporaries of tens of bytes per Jacobian nonzero; glibc keeps freed
blocks below 32 MB inside the process, so without :func:`return_freed_memory` the resident
set after preparing stays two to three times what the prepared Jacobian holds
(``benchmarks/memory.py``).
"""

from __future__ import annotations

import sys

__all__ = ["TRIM_NNZ", "return_freed_memory"]


#: Preparations of at least this many nonzeros return their freed memory to the system. The
#: call costs tens of milliseconds (54 ms after the 2-D Brusselator at N = 128, 2·10⁵
#: nonzeros, a preparation of 0.05 s): below this size it would double a preparation to
#: return a few tens of megabytes.
TRIM_NNZ = 1_000_000


def return_freed_memory() -> bool:
    """Ask the C allocator to return freed heap memory to the system (glibc's malloc_trim).

    A preparation frees temporaries of tens of bytes per Jacobian nonzero; glibc keeps
    freed blocks below 32 MB in the process, so without this the resident set after
    preparing stays two to three times what the prepared Jacobian holds. Only free memory
    is released; nothing else changes. Returns False where the call is unavailable
    (another C library, another system).

    Examples
    --------
    >>> from sparsejac.memory import return_freed_memory
    >>> isinstance(return_freed_memory(), bool)
    True
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return False
    trim(0)
    return True
