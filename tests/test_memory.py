"""Where a preparation's memory comes from: ``sparsejac.memory``.

Nothing computed may depend on it: a prepared Jacobian for many unknowns (inside
:func:`~sparsejac.memory.preparation_heap`) equals the hand-derived one, and afterwards the
allocator's parameters and numpy's huge-page advice are back to what the module documents.
The glibc calls themselves are checked through a recording stand-in.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import sparsejac
import sparsejac.memory as memory


class _FakeLibc:
    """Records mallopt and malloc_trim calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("malloc_trim", pad))
        return 1


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> _FakeLibc:
    libc = _FakeLibc()
    monkeypatch.setattr(memory, "_glibc", lambda: libc)
    return libc


def _switch_state() -> bool:
    switch = memory._hugepage_switch()
    assert switch is not None
    state = switch(True)
    switch(state)
    return state


def test_small_preparations_leave_the_allocator_alone(fake: _FakeLibc) -> None:
    with memory.preparation_heap(memory.HEAP_REUSE_N - 1) as active:
        assert not active
    assert fake.calls == []


@pytest.mark.parametrize("reclaims", [False, True])
def test_large_preparation_keeps_memory_then_restores(
        fake: _FakeLibc, monkeypatch: pytest.MonkeyPatch, reclaims: bool) -> None:
    monkeypatch.setattr(memory, "host_reclaims_free_pages", lambda: reclaims)
    before = _switch_state()
    with memory.preparation_heap(memory.HEAP_REUSE_N) as active:
        assert active
        assert fake.calls == [("mallopt", memory._M_MMAP_MAX, 0),
                              ("mallopt", memory._M_TRIM_THRESHOLD, memory._KEEP_ALL)]
        # small pages only where the host takes free pages back
        assert _switch_state() is (False if reclaims else before)
    assert fake.calls[2:] == [
        ("mallopt", memory._M_MMAP_MAX, memory._DEFAULT_MMAP_MAX),
        ("mallopt", memory._M_MMAP_THRESHOLD, 32 * 2**20),
        ("mallopt", memory._M_TRIM_THRESHOLD, 64 * 2**20)]
    assert _switch_state() is before


def test_nested_and_failing_preparations_restore_once(
        fake: _FakeLibc, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "host_reclaims_free_pages", lambda: True)
    before = _switch_state()
    counts = []

    def nested() -> None:
        with memory.preparation_heap(10**6), memory.preparation_heap(10**6):
            counts.append(len(fake.calls))  # the inner one joins the outer period
            raise RuntimeError("inner")

    with pytest.raises(RuntimeError, match="inner"):
        nested()
    assert counts == [2]
    assert len(fake.calls) == 5
    assert memory._STATE["depth"] == 0
    assert _switch_state() is before


def test_concurrent_preparations_share_one_period(
        fake: _FakeLibc, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "host_reclaims_free_pages", lambda: False)
    inside, release = threading.Barrier(3), threading.Event()

    def prepare() -> None:
        with memory.preparation_heap(10**6):
            inside.wait()
            release.wait()

    threads = [threading.Thread(target=prepare) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert len(fake.calls) == 2  # set once for both
    release.set()
    for t in threads:
        t.join()
    assert len(fake.calls) == 5
    assert memory._STATE["depth"] == 0


def test_return_freed_memory_trims(fake: _FakeLibc) -> None:
    assert memory.return_freed_memory()
    assert fake.calls == [("malloc_trim", 0)]


def test_without_glibc_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "_glibc", lambda: None)
    with memory.preparation_heap(10**7) as active:
        assert not active
    assert not memory.return_freed_memory()


def _device(root: Path, name: str, device: str, features: str) -> None:
    (root / name).mkdir()
    (root / name / "device").write_text(device + "\n")
    (root / name / "features").write_text(features + "\n")


def test_balloon_free_page_reporting_is_read_from_its_feature_bits(tmp_path: Path) -> None:
    assert not memory._balloon_reports_free_pages(tmp_path / "absent")
    _device(tmp_path, "virtio0", "0x0002", "0000010000")  # a block device with bit 5 set
    assert not memory._balloon_reports_free_pages(tmp_path)
    _device(tmp_path, "virtio1", "0x0005", "0110000000")  # a balloon without reporting
    assert not memory._balloon_reports_free_pages(tmp_path)
    _device(tmp_path, "virtio2", "0x0005", "0110010100")  # a balloon with reporting
    assert memory._balloon_reports_free_pages(tmp_path)
    (tmp_path / "virtio3").mkdir()  # unreadable entries say nothing
    assert not memory._balloon_reports_free_pages(tmp_path / "virtio3")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator only")
def test_a_large_prepared_jacobian_is_exact_and_restores_numpy() -> None:
    """Real allocator: n above HEAP_REUSE_N, against the hand-derived Jacobian."""
    n = memory.HEAP_REUSE_N + 5

    def f(x: np.ndarray) -> np.ndarray:
        return x[1:] ** 2 * np.sin(x[:-1])

    before = _switch_state()
    x = np.linspace(0.1, 2.0, n)
    J = sparsejac.SparseJacobian(f, x)(x + 0.25)
    assert memory._STATE["depth"] == 0
    assert _switch_state() is before
    y = x + 0.25
    expect_diag = np.cos(y[:-1]) * y[1:] ** 2
    expect_super = 2 * y[1:] * np.sin(y[:-1])
    assert np.allclose(J.diagonal(), expect_diag, rtol=1e-14, atol=0)
    assert np.allclose(J.diagonal(1), expect_super, rtol=1e-14, atol=0)
    assert J.nnz == 2 * (n - 1)


def test_a_trace_leaves_no_reference_cycles_of_its_nodes() -> None:
    """A traced program is freed by reference counting: a gather's replay used to keep the
    call's arguments, whose Tracers refer to the trace and every node (a cycle that only
    Python's cyclic collector frees, 0.35 s for 25,000 recorded operations)."""
    import gc

    from sparsejac.tracing.program import Node, Var

    def f(x: Any) -> Any:
        out = np.zeros(x.size)
        for i in range(x.size - 1):  # element loops, slices, lists of traced values
            out[i] = x[i] * x[i + 1]
        y = np.concatenate([x[:2], np.stack([x[0], x[-1]]), x[1::2]])
        z = np.atleast_1d(*[x[:1]]) + np.take(x, [0, 2]).sum()
        return np.concatenate([out, y, np.roll(z, 1), np.reshape(x, (2, -1)).T.ravel()])

    x = np.linspace(1.0, 2.0, 6)
    sparsejac.SparseJacobian(f, x)
    flags, enabled = gc.get_debug(), gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        jac = sparsejac.SparseJacobian(f, x)
        sparsejac.jacobian_sparsity(f, x)
        jac(x)
        del jac
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        leaked = [o for o in gc.garbage if isinstance(o, (Node, Var))]
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert not leaked, f"{len(leaked)} nodes or variables freed only by the cyclic collector"
