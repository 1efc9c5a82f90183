"""A tape's Jacobian compiled by numba from generated statements (:mod:`sparsejac.ad.native`)
against the interpreting tape kernel it replaces: the same values, Jacobian and verdict bit
for bit; built once calls paid for it; kept on disk for later processes, or compiled in
memory where no directory is writable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import sparsejac
from sparsejac.ad import Tape, native
from sparsejac.ad import _tape as k
from sparsejac.ad._tape_python import terms
from sparsejac.ad.fused import Fused, NativeSlot, describe
from sparsejac.tracing import trace

from .test_fused import kinetics, kinetics_jacobian
from .test_tape_python import _kernel_call


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test writes its generated modules into its own directory; numba is loaded (the
    generated code replaces the compiled kernel, not the paths that run before it)."""
    from sparsejac import kernels

    kernels.expect(kernels.FALLBACK_BUDGET + 1)
    monkeypatch.setenv("SPARSEJAC_CACHE_DIR", str(tmp_path))
    return tmp_path


def _packed(f: Any, x0: np.ndarray, params: tuple[float, ...], partition: str
            ) -> tuple[np.ndarray, np.ndarray, int, int]:
    tape = Tape.build(trace(f, x0, params=params))
    assert tape is not None
    c = sparsejac.color(sparsejac.jacobian_sparsity(lambda x: f(x, *params), x0), partition)
    _, _, ints, floats, nnz, m, _, _ = tape.fused_call(c)
    return ints, floats, nnz, m


def _small_ops(x: np.ndarray, t: float) -> np.ndarray:
    """The generator's instructions on a few unknowns (a tape within native.MAX_TERMS)."""
    y = np.zeros(x.size + 2)
    y[1:-1] = x
    y[0] = x[-1] * t
    u = (np.exp(-x) * np.sqrt(np.abs(x)) + np.sin(x) * np.cos(x) + 1.0 / (2.0 + x)
         + x ** (1.0 + 0.1 * x[::-1]) + np.arctan2(x, 1.0 + x[::-1] ** 2) + np.log1p(x * x))
    up = np.where(x > t, x ** 2, np.sin(x) * x[::-1])
    lim = np.maximum(x, x[::-1]) - np.minimum(np.clip(x, -0.5, 1.2), 0.9)
    return u - 2 * y[1:-1] + y[:-2] + y[2:] + up + lim + np.sum(x * x[::-1]) * t


@pytest.mark.parametrize(("f", "n", "params", "partition"), [
    (_small_ops, 4, (0.8,), "column"), (_small_ops, 4, (0.8,), "row"),
    (kinetics, 7, (), "bidirectional"), (kinetics, 7, (), "column")])
def test_native_code_is_the_kernel_bit_for_bit(
        f: Any, n: int, params: tuple[float, ...], partition: str,
        rng: np.random.Generator) -> None:
    """At points inside and outside the functions' domains, with zeros where abs, sqrt and
    products have zero or infinite partials: values, Jacobian, value at a second point and
    verdict are the interpreting kernel's, bit for bit (signs of zeros included)."""
    if f is kinetics:
        def g(x: np.ndarray) -> np.ndarray:
            return kinetics(x)
        f = g
    x0 = rng.uniform(0.5, 1.5, n)
    ints, floats, nnz, m = _packed(f, x0, params, partition)
    assert terms(ints) <= native.MAX_TERMS
    pair = native.build(ints, floats, n)
    assert pair is not None
    kern, kern0 = pair
    compiled = getattr(k.jacobian_packed, "compiled", k.jacobian_packed)
    compiled0 = getattr(k.jacobian_packed0, "compiled", k.jacobian_packed0)
    pv = np.array(params, dtype=np.float64)
    points = [x0, rng.uniform(-1.0, 1.0, n), np.where(np.arange(n) % 3 == 0, 0.0, x0),
              np.full(n, -3.0), np.full(n, 0.0), np.full(n, 800.0), np.full(n, 1e4)]
    verdicts = []
    for x in points:
        y = x[::-1].copy()
        want = _kernel_call(compiled, ints, floats, x, pv, y, m, nnz)
        got = _kernel_call(kern, ints, floats, x, pv, y, m, nnz)
        assert got[3] == want[3]  # the value at the second point: always the kernel's
        # the generated code answers as the kernel, or declines where an entry comes out
        # non-finite in its arithmetic (the kernel skips a zero term against an infinite
        # partial; the caller's general path then answers, as the kernel would)
        assert got == want if got[0] else not want[0] or not _all_finite_sums(x)
        verdicts.append((want[0], got[0]))
        if not pv.size:
            d0, f0, d1, f1 = np.full(nnz, 7.0), np.full(m, 7.0), np.full(nnz, 7.0), np.full(m, 7.0)
            with np.errstate(all="ignore"):
                ok0, ok1 = kern0(ints, floats, x, d0, f0), compiled0(ints, floats, x, d1, f1)
            assert not ok0 or (ok1 and d0.tobytes() == d1.tobytes())
    assert (True, True) in verdicts
    assert (False, False) in verdicts  # points where the kernel declines are among them


def _all_finite_sums(x: np.ndarray) -> bool:
    """False at the points with zeros, where abs, sqrt and products meet infinite partials."""
    return bool(np.all(x != 0.0))


def test_built_once_calls_paid_for_it(monkeypatch: pytest.MonkeyPatch,
                                      rng: np.random.Generator) -> None:
    """The interpreting kernel answers until the calls' rent reaches the price; then the
    generated code, for ``kernel`` and ``kernel0`` alike; a second plan of the same tape
    takes the built code at once."""
    x0 = rng.uniform(0.5, 1.5, 8)
    ints, floats, _, _ = _packed(lambda x: kinetics(x), x0, (), "column")
    monkeypatch.setattr(native, "BASE_UNITS", 0)
    monkeypatch.setattr(native, "UNITS_PER_TERM", 1)
    monkeypatch.setattr(native, "SCALAR_UNITS", 0)
    slot = NativeSlot(ints, floats, 8)
    assert slot.per_call == max(1, int(native.RENT_PER_TERM * terms(ints)))
    calls = 0
    while slot.kernels is None:
        got = slot.pick(True, "compiled")
        calls += 1
        if slot.kernels is None:
            assert got == "compiled"
    assert slot.kernels
    assert 2 <= calls <= 2 + native.LOAD_UNITS // slot.per_call + terms(ints)
    assert slot.pick(False, "compiled") is slot.kernels[0]
    assert slot.pick(True, "compiled") is slot.kernels[1]
    again = NativeSlot(ints, floats, 8)
    assert again.pick(True, "compiled") is slot.kernels[1]  # built already: no rent


def test_a_prepared_jacobian_switches_without_changing_a_bit(
        monkeypatch: pytest.MonkeyPatch, rng: np.random.Generator) -> None:
    """Through SparseJacobian: the Jacobians before and after the switch are the same bits
    (and the hand-derived ones), and stats() says the generated code runs."""
    monkeypatch.setattr(native, "BASE_UNITS", 0)
    monkeypatch.setattr(native, "UNITS_PER_TERM", 0)
    monkeypatch.setattr(native, "LOAD_UNITS", 0)
    monkeypatch.setattr(native, "SCALAR_UNITS", 0)
    x = rng.uniform(0.5, 1.5, 7)
    jac = sparsejac.SparseJacobian(kinetics, x)
    kinds, values = set(), []
    for i in range(5):
        got = jac(x * (1 + 0.1 * i))
        values.append(got.toarray().tobytes())
        np.testing.assert_allclose(got.toarray(), kinetics_jacobian(x * (1 + 0.1 * i)),
                                   rtol=1e-13, atol=1e-15)
        kinds.add(jac.stats()["engine"]["kernel"])
    assert "compiled, generated" in kinds
    strided = np.repeat(x, 2)[::2]  # not contiguous: the general path, the same Jacobian
    assert not strided.flags.c_contiguous
    np.testing.assert_allclose(jac(strided).toarray(), jac(x.copy()).toarray(), rtol=1e-15,
                               atol=0)
    frozen = x.copy()
    frozen.setflags(write=False)  # read-only: the general path too (numba would compile anew)
    assert jac(frozen).toarray().tobytes() == jac(x.copy()).toarray().tobytes()
    fresh = sparsejac.SparseJacobian(kinetics, x, engine="chain")  # another engine: reference
    assert values[0] == fresh(x).toarray().tobytes() or np.allclose(
        np.frombuffer(values[0]), fresh(x).toarray().ravel(), rtol=1e-15, atol=0)


def test_a_later_process_loads_it_from_the_disk(cache: Path) -> None:
    """Built here, the module and numba's cache are on disk: another process finds it
    (``cached``) and loads it, the same kernel bit for bit."""
    x0 = np.linspace(0.5, 1.5, 6)
    ints, floats, nnz, m = _packed(lambda x: kinetics(x), x0, (), "row")
    assert not native.cached(ints, floats, 6)
    kern0 = native.build(ints, floats, 6)[1]  # type: ignore[index]
    data, fx = np.empty(nnz), np.empty(m)
    assert kern0(ints, floats, x0, data, fx)
    assert native.cached(ints, floats, 6)
    code = (
        "import numpy as np, sparsejac\n"
        "from sparsejac.ad import Tape, native\n"
        "from sparsejac.tracing import trace\n"
        "from tests.ad.test_fused import kinetics\n"
        "x0 = np.linspace(0.5, 1.5, 6)\n"
        "tape = Tape.build(trace(lambda x: kinetics(x), x0))\n"
        "c = sparsejac.color(sparsejac.jacobian_sparsity(lambda x: kinetics(x), x0), 'row')\n"
        "_, _, ints, floats, nnz, m, _, _ = tape.fused_call(c)\n"
        "print(native.cached(ints, floats, 6))\n"
        "data, fx = np.empty(nnz), np.empty(m)\n"
        "native.build(ints, floats, 6)[1](ints, floats, x0, data, fx)\n"
        "print(data.tobytes().hex())\n")
    env = {**os.environ, "SPARSEJAC_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env, cwd=Path(__file__).resolve().parents[2]
                         ).stdout.split()
    assert out == ["True", data.tobytes().hex()]


def test_without_a_writable_directory_it_compiles_in_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rng: np.random.Generator) -> None:
    """A cache directory that cannot be created: the module is compiled in memory."""
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("SPARSEJAC_CACHE_DIR", str(blocker))
    assert native.cache_dir() is None
    x0 = rng.uniform(0.5, 1.5, 5)
    ints, floats, nnz, m = _packed(lambda x, t: _small_ops(x, t), x0, (0.3,), "column")
    kern = native.build(ints, floats, 5)[0]  # type: ignore[index]
    want = _kernel_call(getattr(k.jacobian_packed, "compiled", k.jacobian_packed), ints,
                        floats, x0, np.array([0.3]), x0[::-1].copy(), m, nnz)
    assert _kernel_call(kern, ints, floats, x0, np.array([0.3]), x0[::-1].copy(), m,
                        nnz) == want
    assert not list(tmp_path.glob("*.py"))


def test_large_tapes_keep_the_interpreting_kernel(rng: np.random.Generator) -> None:
    """Beyond MAX_TERMS (compiling would take seconds) there is no slot: the kernel as it is,
    or a Fused before numba is loaded; describe() says "compiled" for numba's kernel."""
    x0 = rng.uniform(0.5, 1.5, 200)
    tape = Tape.build(trace(kinetics, x0))
    assert tape is not None
    c = sparsejac.color(sparsejac.jacobian_sparsity(kinetics, x0), "column")
    kernel, kernel0, ints = tape.fused_call(c)[:3]
    assert terms(ints) > native.MAX_TERMS
    for kern in (kernel, kernel0):
        assert not isinstance(kern, Fused) or kern.native is None
    assert native.build(ints, tape.fused_call(c)[3], 200) is None
    assert describe([len]) == "compiled"


def test_constants_are_not_folded_into_the_c_library_calls(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """Found from outside: with its exponent a literal, LLVM turned the generated code's
    pow(y, 2.0) into y * y, pow(y, 0.5) into sqrt(y), pow(y, -1.0) into 1 / y; the C
    library's pow, which the interpreting kernel and numpy call, differs from those in the
    last bit now and then. The generated code reads its constants from the tape at run
    time, as the kernel does."""
    import math

    for name in ("BASE_UNITS", "UNITS_PER_TERM", "LOAD_UNITS", "SCALAR_UNITS"):
        monkeypatch.setattr(native, name, 0)

    def f(y: np.ndarray) -> np.ndarray:
        return np.array([y[0] ** 0.5 * y[3], y[1] ** 2 * y[3], y[2] ** -1.0 * y[3],
                         2.0 ** y[3]])

    c = np.random.default_rng(1).uniform(0, 4, 200_000)
    x = np.array([next(v for v in c if math.pow(v, 0.5) != math.sqrt(v)),
                  next(v for v in c if math.pow(v, 2.0) != v * v),
                  next(v for v in c if math.pow(v, -1.0) != 1.0 / v), 1.0])
    jac = sparsejac.SparseJacobian(f, x)
    for _ in range(4):
        got = jac(x)
    assert jac.stats()["engine"]["kernel"] == "compiled, generated"
    want = f(x)  # numpy's pow: J[:3, 3] = f(x)[:3] / y[3] with y[3] = 1
    np.testing.assert_array_equal(got.toarray()[:3, 3], want[:3])


def test_a_damaged_module_or_cache_file_is_written_and_compiled_again(cache: Path) -> None:
    """Found from outside: an emptied or truncated module in the cache directory (or a
    truncated numba cache file next to it) made the switching call raise, in every later
    process. The module is then removed, written and compiled again."""
    x0 = np.linspace(0.5, 1.5, 5)
    ints, floats, nnz, m = _packed(lambda x: kinetics(x), x0, (), "column")
    kern0 = native.build(ints, floats, 5)[1]  # type: ignore[index]
    want = np.empty(nnz)
    kern0(ints, floats, x0, want, np.empty(m))
    module = next((cache / "native").glob("*.py"))
    for damage in ("", "def _jac(x, pv, data, fx, K):\n    v1 = (x[0] +"):
        module.write_text(damage)
        native._BUILT.clear()  # (as in a new process)
        kern0 = native.build(ints, floats, 5)[1]  # type: ignore[index]
        got = np.empty(nnz)
        kern0(ints, floats, x0, got, np.empty(m))
        assert got.tobytes() == want.tobytes()
    assert native.cached(ints, floats, 5)
