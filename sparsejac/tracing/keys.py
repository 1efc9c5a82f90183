"""Basic indexing keys (integers, slices of integers, ``...``, None) and their positions."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["basic_positions", "is_basic_key"]


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
