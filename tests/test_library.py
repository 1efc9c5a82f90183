"""Library functions traced by interception (sparsejac/tracing/library.py).

While a trace runs, the code of each registered library function (``scipy.linalg.solve``,
``scipy.special.logsumexp``, the ``scipy.stats`` methods, ...) is swapped for a trampoline that
hands calls with traced arguments to the registry. These tests hold the promises of that
design: outside a trace every function runs its own code and returns scipy's result; during a
trace, another thread calling the real function gets the real result; a name imported before
the trace (``from scipy.special import logsumexp``) is traced too; two threads tracing at once
keep the trampolines installed until the last trace ends.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.special as sc
import scipy.stats as st
from scipy.linalg import solve as imported_solve
from scipy.special import logsumexp as imported_logsumexp

import sparsejac
import sparsejac.primitives  # the registry: it registers the library functions
from sparsejac.tracing import library, trace
from sparsejac.tracing.tracer import Tracer

library.run_deferred()  # scipy.linalg and scipy.stats are imported above: register their rules

A = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 2.0]])
B = np.array([1.0, 2.0, 3.0])


def _codes() -> dict[str, Any]:
    return {f"{f.__module__}.{f.__qualname__}": f.__code__ for f in library.intercepted()}


def test_registered_functions_are_intercepted() -> None:
    """The library functions the registry traces are known to the interception layer."""
    library.run_deferred()  # scipy.stats is imported: its rules are registered
    funcs = library.intercepted()
    for f in (sla.solve, sla.lu_solve, sla.cho_solve, sla.expm, sc.logsumexp, sc.softmax,
              sc.log_softmax, sc.polygamma, sc.zeta, sc.multigammaln,
              type(st.norm).__mro__[1].logpdf):
        assert f in funcs, f


def test_outside_a_trace_every_function_runs_its_own_code() -> None:
    """No trampoline is installed outside a trace; results are scipy's, bit for bit."""
    before = _codes()
    sparsejac.jacobian(lambda x: sla.solve(A, x) + sc.logsumexp(x) + st.norm.logpdf(x), B)
    assert _codes() == before
    for code in before.values():
        assert not code.co_filename.startswith("<sparsejac")
    assert "a" in inspect.signature(sla.solve).parameters  # not the trampoline's (*args)
    np.testing.assert_allclose(sla.solve(A, B), np.linalg.solve(A, B), rtol=1e-14)
    np.testing.assert_allclose(sc.logsumexp(B), np.log(np.exp(B).sum()), rtol=1e-15)


def test_inside_a_trace_plain_calls_run_scipy() -> None:
    """During a trace, a call without traced arguments is scipy's own call."""
    seen = {}

    def f(x: Any) -> Any:
        if isinstance(x, Tracer):  # (not the real call that checks the traced values)
            seen["solve"] = sla.solve(A, B)  # constants only: scipy's code
            seen["code"] = sla.solve.__code__.co_filename
        return sla.solve(A, x)

    sparsejac.jacobian(f, B)
    assert not isinstance(seen["solve"], Tracer)
    np.testing.assert_array_equal(seen["solve"], sla.solve(A, B))
    assert seen["code"].startswith("<sparsejac: traced")


def test_names_imported_before_the_trace_are_traced() -> None:
    """``from scipy.linalg import solve`` at import time reaches the same trampoline."""
    jac = sparsejac.jacobian(lambda x: imported_solve(A, x) + imported_logsumexp(x), B)
    w = np.exp(B) / np.exp(B).sum()
    np.testing.assert_allclose(jac.toarray(), np.linalg.inv(A) + w[None, :], rtol=1e-12)


def test_another_thread_gets_the_real_result_during_a_trace() -> None:
    """A thread calling scipy while another traces gets scipy's results (many calls)."""
    entered, release = threading.Event(), threading.Event()
    results: list[Any] = []
    errors: list[BaseException] = []

    def f(x: Any) -> Any:
        entered.set()
        assert release.wait(10)
        return sla.solve(A, x) + sc.logsumexp(x)

    def tracer_thread() -> None:
        try:
            sparsejac.jacobian(f, B)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=tracer_thread)
    t.start()
    assert entered.wait(10)
    try:
        assert sla.solve.__code__.co_filename.startswith("<sparsejac")  # installed now
        for k in range(50):
            b = B + k
            results.append((sla.solve(A, b), sc.logsumexp(b), st.norm.logpdf(b, 1.0, 2.0)))
    finally:
        release.set()
        t.join(10)
    assert not errors
    for k, (x, lse, lp) in enumerate(results):
        b = B + k
        assert type(x) is np.ndarray
        np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-14)
        np.testing.assert_allclose(lse, np.log(np.exp(b).sum()), rtol=1e-14)
        np.testing.assert_allclose(lp, -0.5 * ((b - 1.0) / 2.0) ** 2 - np.log(2.0 * np.sqrt(
            2 * np.pi)), rtol=1e-14)
    assert not sla.solve.__code__.co_filename.startswith("<sparsejac")  # removed after


def test_two_threads_tracing_at_once() -> None:
    """Reference counting: the trampolines stay until the last of two traces ends."""
    both_running = threading.Barrier(2, timeout=10)
    first_done = threading.Event()
    still_installed: list[bool] = []
    out: dict[int, Any] = {}

    def run(i: int) -> None:
        def f(x: Any) -> Any:
            both_running.wait()
            y = sla.solve(A, x * (i + 1))
            if i == 0:  # trace 0 outlives trace 1
                assert first_done.wait(10)
                still_installed.append(sla.solve.__code__.co_filename.startswith("<sparsejac"))
                y = y + sc.logsumexp(x)
            return y

        out[i] = trace(f, B)
        if i == 1:
            first_done.set()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert still_installed == [True]
    np.testing.assert_allclose(out[1].out.value, 2 * np.linalg.solve(A, B), rtol=1e-14)
    assert "solve" in [n.prim.name for n in out[0].nodes]
    assert not sla.solve.__code__.co_filename.startswith("<sparsejac")


def test_an_exception_in_f_restores_the_code() -> None:
    """A trace that fails still removes its trampolines."""
    def f(x: Any) -> Any:
        sla.solve(A, x)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        trace(f, B)
    assert not sla.solve.__code__.co_filename.startswith("<sparsejac")
    np.testing.assert_allclose(sla.solve(A, B), np.linalg.solve(A, B), rtol=1e-14)


def test_closures_keep_their_layout() -> None:
    """A decorated function with a closure (scipy's batch wrappers) can be intercepted."""
    def make() -> Any:
        scale = 2.0

        def scaled(a: Any) -> Any:
            return scale * np.asarray(a)

        return scaled

    func = make()
    library.intercept(func)
    try:
        from sparsejac.primitives.core import FUNCTIONS, Entry

        FUNCTIONS[func] = Entry("test.scaled", "elementwise", lambda a: a * 2.0, "composite")
        jac = sparsejac.jacobian(lambda x: func(x), B).toarray()
        np.testing.assert_array_equal(jac, 2.0 * np.eye(3))
        np.testing.assert_array_equal(func(B), 2.0 * B)
    finally:
        del FUNCTIONS[func]
        library.forget(func)
    assert func not in library.intercepted()


def test_scipy_stats_rules_wait_for_scipy_stats() -> None:
    """``import sparsejac`` does not import scipy.stats (a third of a second)."""
    import subprocess
    import sys

    code = ("import sys, numpy as np, sparsejac; assert 'scipy.stats' not in sys.modules; "
            "import scipy.stats as st; "
            "j = sparsejac.jacobian(lambda x: st.norm.logpdf(x), np.array([0.5])); "
            "assert abs(j.toarray()[0, 0] + 0.5) < 1e-15")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_only_python_functions_can_be_intercepted() -> None:
    """A compiled function (a ufunc, a builtin) is refused with a clear error."""
    with pytest.raises(TypeError, match="pure-Python"):
        library.intercept(np.add)


def test_library_imported_inside_f_is_traced() -> None:
    """``import scipy.stats`` in f's body: its rules register, and the trace is taken again.

    Run in a fresh interpreter, where scipy.stats is not imported before the trace starts.
    """
    import subprocess
    import sys

    code = (
        "import numpy as np, sparsejac\n"
        "def f(t):\n"
        "    import scipy.stats\n"
        "    return scipy.stats.norm.logpdf(np.array([0.5, 1.5]), loc=t[0], scale=t[1])\n"
        "J = sparsejac.jacobian(f, np.array([1.0, 2.0])).toarray()\n"
        "z = (np.array([0.5, 1.5]) - 1.0) / 2.0\n"
        "want = np.stack([z / 2.0, -1 / 2.0 + z * z / 2.0], axis=1)\n"
        "assert np.allclose(J, want, rtol=1e-12), (J, want)\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
