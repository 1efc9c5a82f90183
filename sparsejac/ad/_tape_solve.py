"""The ``SOLVE`` instruction of the compiled tape: small dense systems by LU with pivoting.

:func:`solve_forward` and :func:`solve_reverse` are called by the tape's passes
(:mod:`sparsejac.ad._tape`) for each ``np.linalg.solve`` of up to
:data:`sparsejac.ad.tape_ops.MAX_SOLVE` unknowns; the instruction's index layout is described
there. The numpy twin (:mod:`sparsejac.ad._tape_numpy`) runs these same loops interpreted,
so its values are the compiled kernel's bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

from sparsejac.kernels import kernel

__all__ = ["solve_forward", "solve_reverse"]


@kernel(inline="always")
def _lu(lu, perm, n):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``lu`` (n × n) in place into its LU factors with partial pivoting; False if singular."""
    for c in range(n):
        piv = c
        best = abs(lu[c, c])
        for i in range(c + 1, n):
            if abs(lu[i, c]) > best:
                best = abs(lu[i, c])
                piv = i
        perm[c] = piv
        if not best > 0.0:  # (a zero or NaN pivot)
            return False
        if piv != c:
            for j in range(n):
                t = lu[c, j]
                lu[c, j] = lu[piv, j]
                lu[piv, j] = t
        for i in range(c + 1, n):
            f = lu[i, c] / lu[c, c]
            lu[i, c] = f
            for j in range(c + 1, n):
                lu[i, j] -= f * lu[c, j]
    return True


@kernel(inline="always")
def _lu_solve(lu, perm, n, v, transposed):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``v`` in place into ``A⁻¹ v`` (``A⁻ᵀ v`` when ``transposed``) from :func:`_lu`'s factors."""
    if not transposed:
        for c in range(n):  # P v, then L y = P v, then U x = y
            t = v[c]
            v[c] = v[perm[c]]
            v[perm[c]] = t
        for i in range(n):
            acc = v[i]
            for j in range(i):
                acc -= lu[i, j] * v[j]
            v[i] = acc
        for i in range(n - 1, -1, -1):
            acc = v[i]
            for j in range(i + 1, n):
                acc -= lu[i, j] * v[j]
            v[i] = acc / lu[i, i]
        return
    for i in range(n):  # Uᵀ y = v, Lᵀ z = y, then Pᵀ z
        acc = v[i]
        for j in range(i):
            acc -= lu[j, i] * v[j]
        v[i] = acc / lu[i, i]
    for i in range(n - 1, -1, -1):
        acc = v[i]
        for j in range(i + 1, n):
            acc -= lu[j, i] * v[j]
        v[i] = acc
    for c in range(n - 1, -1, -1):
        t = v[c]
        v[c] = v[perm[c]]
        v[perm[c]] = t


@kernel(inline="always")
def _factor(lu, perm, buf, idx, start, n):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Load one matrix of the batch (slots ``idx[start:start + n * n]``) and factor it."""
    for i in range(n):
        for j in range(n):
            lu[i, j] = buf[idx[start + i * n + j]]
    return _lu(lu, perm, n)


@kernel()
def solve_forward(idx, ia, o, buf, tb, act):  # type: ignore[no-untyped-def]  # pragma: no cover
    """A ``SOLVE`` instruction's values ``X = A⁻¹ B`` and tangents ``A⁻¹ (dB - dA X)``.

    A singular ``A`` gives NaN values (the caller then takes the chain engine).
    """
    n = idx[ia]
    k = idx[ia + 1]
    a0 = ia + 3
    b0 = a0 + idx[ia + 2] * n * n
    p = tb.shape[1]
    lu = np.empty((n, n))
    perm = np.empty(n, np.int64)
    v = np.empty(n)
    for bt in range(idx[ia + 2]):
        ok = _factor(lu, perm, buf, idx, a0 + bt * n * n, n)
        for c in range(k):
            for i in range(n):
                v[i] = buf[idx[b0 + (bt * n + i) * k + c]]
            if ok:
                _lu_solve(lu, perm, n, v, False)
            for i in range(n):
                buf[o + (bt * n + i) * k + c] = v[i] if ok else math.nan
        if not (p and act and ok):
            continue
        for j in range(p):
            for c in range(k):
                for i in range(n):
                    acc = 0.0
                    if act & 2:
                        acc = tb[idx[b0 + (bt * n + i) * k + c], j]
                    if act & 1:
                        for m in range(n):
                            t = tb[idx[a0 + (bt * n + i) * n + m], j]
                            if t != 0.0:
                                acc -= t * buf[o + (bt * n + m) * k + c]
                    v[i] = acc
                _lu_solve(lu, perm, n, v, False)
                for i in range(n):
                    tb[o + (bt * n + i) * k + c, j] = v[i]


@kernel()
def solve_reverse(idx, ia, o, buf, cb, act):  # type: ignore[no-untyped-def]  # pragma: no cover
    """A ``SOLVE`` instruction's cotangents: ``B̄ = A⁻ᵀ X̄`` and ``Ā = −B̄ Xᵀ``."""
    n = idx[ia]
    k = idx[ia + 1]
    a0 = ia + 3
    b0 = a0 + idx[ia + 2] * n * n
    lu = np.empty((n, n))
    perm = np.empty(n, np.int64)
    v = np.empty(n)
    for bt in range(idx[ia + 2]):
        if not _factor(lu, perm, buf, idx, a0 + bt * n * n, n):
            continue  # (not reached: a forward pass found the NaN first)
        for j in range(cb.shape[1]):
            for c in range(k):
                for i in range(n):
                    v[i] = cb[o + (bt * n + i) * k + c, j]
                _lu_solve(lu, perm, n, v, True)
                for i in range(n):
                    g = v[i]
                    if g == 0.0:
                        continue
                    if act & 2:
                        cb[idx[b0 + (bt * n + i) * k + c], j] += g
                    if act & 1:
                        for m in range(n):
                            cb[idx[a0 + (bt * n + i) * n + m], j] -= g * buf[
                                o + (bt * n + m) * k + c]
