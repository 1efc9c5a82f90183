"""Basic indexing keys (integers, slices of integers, ``...``, None) and their positions."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["basic_positions", "fancy_positions", "is_basic_key"]


def _is_int(k: Any) -> bool:
    return isinstance(k, int | np.integer) and not isinstance(k, bool | np.bool_)


def is_basic_key(key: Any) -> bool:
    """Whether ``key`` is basic indexing: integers, slices of integers, ``...`` and None.

    Examples
    --------
    >>> from sparsejac.tracing.keys import is_basic_key
    >>> is_basic_key((slice(1, None), 0)), is_basic_key([0, 1]), is_basic_key(True)
    (True, False, False)
    """
    for k in key if isinstance(key, tuple) else (key,):
        if k is None or k is Ellipsis:
            continue
        if isinstance(k, slice):
            if not all(b is None or _is_int(b) for b in (k.start, k.stop, k.step)):
                return False
        elif not _is_int(k):
            return False
    return True


def basic_positions(shape: tuple[int, ...], key: Any) -> np.ndarray | None:
    """The flat positions ``x[key]`` reads in an array of ``shape``; None unless basic.

    None as well for a key numpy refuses (the general path raises numpy's error).

    Examples
    --------
    >>> from sparsejac.tracing.keys import basic_positions
    >>> basic_positions((2, 3), (slice(None), 1)).tolist(), basic_positions((3,), [0])
    ([1, 4], None)
    """
    if not is_basic_key(key):
        return None
    try:
        out: np.ndarray = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)[key]
    except (IndexError, TypeError):
        return None
    return out


def fancy_positions(shape: tuple[int, ...], key: Any, most: int = 64) -> np.ndarray | None:
    """The flat positions ``x[key]`` reads for an integer-array key on every axis, or None.

    Integer arrays (or lists, or integers beside them) on every axis of ``shape``, in
    bounds, reading at most ``most`` elements: numpy's advanced indexing, which copies, with
    the result's shape. None for any other key (basic keys, masks, out-of-bounds indices:
    the general path then answers, with numpy's error where there is one). A finite-element
    loop's ``R[t] += r_e`` reads and writes such keys, three or four positions at a time.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.tracing.keys import fancy_positions
    >>> fancy_positions((5,), np.array([4, -1, 0])).tolist()
    [4, 4, 0]
    >>> fancy_positions((2, 3), ([1, 0], 2)).tolist(), fancy_positions((5,), slice(2))
    ([5, 2], None)
    """
    keys = key if isinstance(key, tuple) else (key,)
    if not shape or len(keys) != len(shape):
        return None
    arrays = []
    for k in keys:
        if _is_int(k):
            arrays.append(np.asarray(int(k)))
            continue
        if not isinstance(k, np.ndarray | list) or (isinstance(k, list) and not k):
            return None
        a = np.asarray(k)
        if a.dtype.kind not in "iu":
            return None
        arrays.append(a)
    if not any(a.ndim for a in arrays):
        return None
    try:
        grid = np.broadcast_arrays(*arrays)
    except ValueError:
        return None
    if not 0 < grid[0].size <= most:
        return None
    index = []
    for a, n in zip(grid, shape, strict=True):
        a = np.where(a < 0, a + n, a)
        if (a < 0).any() or (a >= n).any():
            return None
        index.append(a)
    return np.asarray(np.ravel_multi_index(index, shape), dtype=np.int64)
