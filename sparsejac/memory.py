"""Memory a preparation uses: freed heap reused while it runs, returned after large ones.

A preparation allocates and frees temporaries of tens of bytes per Jacobian nonzero, most of
them larger than glibc's mmap threshold (32 MB at most): each is mapped fresh and every page
of it faulted in, then unmapped when freed. :func:`preparation_heap` keeps freed memory in the
process while a large preparation runs, so that the next temporary reuses pages already
faulted in; on a virtual machine whose host takes back the guest's free pages (virtio-balloon
free page reporting), where a fresh huge page costs several times a fresh small one, it also
asks numpy for small pages meanwhile. Afterwards :func:`return_freed_memory` hands what the
temporaries freed back to the system: without it the resident set after preparing stays two to
three times what the prepared Jacobian holds (``benchmarks/memory.py``).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["HEAP_REUSE_N", "TRIM_NNZ", "host_reclaims_free_pages", "preparation_heap",
           "return_freed_memory"]


#: Preparations of at least this many nonzeros return their freed memory to the system. The
#: call costs tens of milliseconds (54 ms after the 2-D Brusselator at N = 128, 2·10⁵
#: nonzeros, a preparation of 0.05 s): below this size it would double a preparation to
#: return a few tens of megabytes.
TRIM_NNZ = 1_000_000

#: Preparations for at least this many unknowns run in :func:`preparation_heap`. Smaller
#: ones allocate little above glibc's own mmap threshold: their process keeps glibc's
#: default, adaptive thresholds.
HEAP_REUSE_N = 65_536

# glibc's mallopt parameters (malloc.h) and the values its adaptive thresholds reach in a
# process that has freed one large block (64-bit): mmap threshold 32 MB, trim threshold twice
# that; 65,536 mappings at most (its default).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_MMAP_MAX = -1, -3, -4
_MMAP_THRESHOLD_MAX = 32 * 2**20
_DEFAULT_MMAP_MAX = 65_536
_KEEP_ALL = 2**31 - 1  # mallopt takes an int: the largest trim threshold it can be given

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"depth": 0, "huge": None}


@functools.cache
def _glibc() -> Any:
    """The C library through ctypes if it is glibc, else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018 - only glibc has it
        libc.mallopt  # noqa: B018
        libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


@functools.cache
def host_reclaims_free_pages() -> bool:
    """Whether this system is a virtual machine whose host takes back its free pages.

    True when a virtio memory balloon offers free page reporting (feature bit 5): the guest
    reports freed memory to the host, which discards it, and a page touched again later is
    supplied by the host anew. Measured on such a machine, a fresh 2 MB huge page costs
    about 1.9 s per GiB, a fresh 4 KB page 0.34 s per GiB, a huge page reused at once
    0.06 s per GiB. Read once from ``/sys``; False wherever that says nothing.

    Examples
    --------
    >>> from sparsejac.memory import host_reclaims_free_pages
    >>> isinstance(host_reclaims_free_pages(), bool)
    True
    """
    return _balloon_reports_free_pages(Path("/sys/bus/virtio/devices"))


def _balloon_reports_free_pages(root: Path) -> bool:
    """Whether a virtio device under ``root`` is a balloon with free page reporting."""
    try:
        devices = sorted(root.iterdir()) if root.is_dir() else []
        for dev in devices:
            if int((dev / "device").read_text().strip(), 16) != 5:  # 5: memory balloon
                continue
            features = (dev / "features").read_text().strip()
            if len(features) > 5 and features[5] == "1":  # VIRTIO_BALLOON_F_REPORTING
                return True
    except (OSError, ValueError):
        return False
    return False


def _hugepage_switch() -> Callable[[bool], bool] | None:
    """The switch of numpy's huge-page advice for large arrays (returns the previous state)."""
    import numpy as np

    for where in ("_core", "core"):
        module = getattr(np, where, None)
        fn = getattr(getattr(module, "multiarray", None), "_set_madvise_hugepage", None)
        if callable(fn):
            return fn  # type: ignore[no-any-return]
    return None  # pragma: no cover - every numpy this package supports has it


@contextlib.contextmanager
def preparation_heap(n: int) -> Iterator[bool]:
    """Keep freed memory in the process while a preparation for ``n`` unknowns runs.

    For ``n`` of at least :data:`HEAP_REUSE_N` on glibc, large blocks come from the heap
    instead of fresh mappings and freed memory is not trimmed, so that each temporary of the
    preparation reuses pages an earlier one faulted in (on the 2-D Brusselator at
    n = 2·10⁶ in a fresh process, 1.2 s less of 4.2 s); on a machine where
    :func:`host_reclaims_free_pages`, numpy is also asked for small pages, since there a
    fresh huge page costs about 5.6 times the small pages it replaces (a further 1.2 s).
    Nested and concurrent preparations share one such period. At its end glibc's mmap and
    trim thresholds are set to 32 and 64 MB, the values its adaptive thresholds reach in
    any process that has freed a large array, and numpy's huge-page advice is restored;
    :func:`return_freed_memory` then returns the freed memory. Yields whether the period
    is active. Only where memory comes from: nothing computed depends on it.

    Examples
    --------
    >>> from sparsejac.memory import preparation_heap
    >>> with preparation_heap(10) as active:   # small: glibc's defaults stay
    ...     pass
    >>> active
    False
    """
    libc = _glibc() if n >= HEAP_REUSE_N else None
    if libc is None:
        yield False
        return
    with _LOCK:
        if _STATE["depth"] == 0:
            libc.mallopt(_M_MMAP_MAX, 0)
            libc.mallopt(_M_TRIM_THRESHOLD, _KEEP_ALL)
            switch = _hugepage_switch() if host_reclaims_free_pages() else None
            _STATE["huge"] = None if switch is None else (switch, switch(False))
        _STATE["depth"] += 1
    try:
        yield True
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0:
                libc.mallopt(_M_MMAP_MAX, _DEFAULT_MMAP_MAX)
                libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)
                libc.mallopt(_M_TRIM_THRESHOLD, 2 * _MMAP_THRESHOLD_MAX)
                if _STATE["huge"] is not None:
                    switch, previous = _STATE["huge"]
                    switch(previous)
                    _STATE["huge"] = None


def return_freed_memory() -> bool:
    """Ask the C allocator to return freed heap memory to the system (glibc's malloc_trim).

    A preparation frees temporaries of tens of bytes per Jacobian nonzero; glibc keeps
    freed blocks in the process (all of them while :func:`preparation_heap` is active, those
    below its trim threshold otherwise), so without this the resident set after preparing
    stays two to three times what the prepared Jacobian holds. Only free memory is
    released; nothing else changes. Returns False where the call is unavailable (another C
    library, another system).

    Examples
    --------
    >>> from sparsejac.memory import return_freed_memory
    >>> isinstance(return_freed_memory(), bool)
    True
    """
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
