"""Registry-driven: every rule case of ``tests/test_rules.py`` whose program is a compiled tape,
through the tape's generated numba code (:mod:`sparsejac.ad.native`) against the
interpreting kernel and its numpy twin, bit for bit.

The cases are put side by side, each on its own slice of one long ``x`` (a block-diagonal
Jacobian, so the colouring stays that of the largest block), in chunks of at most
``native.MAX_TERMS`` terms: one generated module per chunk. Slow (a minute of numba
compilation): ``make test-slow``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import sparsejac
from sparsejac.ad import Tape, native
from sparsejac.ad import _tape as k
from sparsejac.ad._tape_numpy import jacobian_packed_numpy
from sparsejac.ad._tape_python import parts, terms
from sparsejac.tracing import trace
from tests.test_rules import CASES, Case, sample

pytestmark = pytest.mark.slow


def _taped(case: Case, rng: np.random.Generator) -> tuple[np.ndarray, int] | None:
    """A point of the case's domain and its tape's terms, or None (no tape, no code)."""
    x = sample(case.domain, case.shape, rng)
    try:
        tape = Tape.build(trace(case.f, x))
        if tape is None:
            return None
        fc = tape.fused_call(sparsejac.color(sparsejac.jacobian_sparsity(case.f, x), "column"))
    except (sparsejac.SparsejacError, ValueError, TypeError):
        return None
    if fc is None or terms(fc[2]) > native.MAX_TERMS // 2 or parts(fc[2], fc[3], x.size) is None:
        return None
    return x, terms(fc[2])


def _chunks() -> list[list[tuple[Case, np.ndarray]]]:
    rng = np.random.default_rng(20261129)
    chunks: list[list[tuple[Case, np.ndarray]]] = [[]]
    used = 0
    for case in CASES:
        got = _taped(case, rng)
        if got is None:
            continue
        x, t = got
        if used + t > native.MAX_TERMS // 2 and chunks[-1]:
            chunks.append([])
            used = 0
        chunks[-1].append((case, x))
        used += t
    return chunks


def _side_by_side(chunk: list[tuple[Case, np.ndarray]]) -> tuple[Callable[[Any], Any],
                                                                   np.ndarray]:
    sizes = [x.size for _, x in chunk]
    starts = np.cumsum([0, *sizes])

    def f(z: Any) -> Any:
        return np.concatenate([np.ravel(case.f(z[a:b].reshape(x.shape)))
                               for (case, x), a, b in zip(chunk, starts[:-1], starts[1:],
                                                          strict=True)])

    return f, np.concatenate([x.ravel() for _, x in chunk])


CHUNKS = _chunks()


def test_the_cases_are_covered() -> None:
    """Most rule cases have a tape that generates code (the rest: no tape, or SOLVE)."""
    assert sum(len(c) for c in CHUNKS) >= 150


@pytest.mark.parametrize("k_chunk", range(len(CHUNKS)))
def test_generated_numba_code_is_the_kernel_bit_for_bit(
        k_chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At a point of every case's domain, one outside (negative values), and one with zeros:
    values and Jacobian are the interpreting kernel's and its numpy twin's, bit for bit,
    wherever the generated code answers (it declines only where the kernel does, or where
    an entry comes out non-finite in its arithmetic: the general path then answers)."""
    monkeypatch.setenv("SPARSEJAC_CACHE_DIR", str(tmp_path))
    f, x0 = _side_by_side(CHUNKS[k_chunk])
    tape = Tape.build(trace(f, x0))
    assert tape is not None
    for partition in ("column", "row"):
        c = sparsejac.color(sparsejac.jacobian_sparsity(f, x0), partition)
        _, _, ints, floats, nnz, m, _, _ = tape.fused_call(c)
        if terms(ints) > native.MAX_TERMS:
            continue
        kern, _ = native.build(ints, floats, x0.size)  # type: ignore[misc]
        compiled = getattr(k.jacobian_packed, "compiled", k.jacobian_packed)
        answered = 0
        for x in (x0, -x0, np.where(np.arange(x0.size) % 4 == 0, 0.0, x0)):
            y = x0[::-1].copy()
            got = []
            for kernel in (kern, compiled, jacobian_packed_numpy):
                data, fx, fy = np.full(nnz, 7.0), np.full(m, 7.0), np.full(m, 7.0)
                with np.errstate(all="ignore"):
                    ok = kernel(ints, floats, x, np.zeros(0), y, data, fx, fy)
                got.append((bool(ok), data.tobytes(), fx.tobytes(), fy.tobytes()))
            # (the twin, the reference path; a declined call leaves data unspecified)
            assert got[1] == got[2] if got[1][0] else not got[2][0]
            assert got[0][3] == got[1][3]  # the value at the second point, always
            if got[0][0]:
                answered += 1
                assert got[0] == got[1]
            else:
                assert not got[1][0] or not np.all(x != 0.0) or not np.all(x > 0.0)
        assert answered >= 1
