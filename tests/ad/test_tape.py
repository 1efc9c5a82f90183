"""The compiled tape against the chain engine, dense finite differences and hand-derived Jacobians.

The registry-driven comparison (every elementwise row and entry case, tape vs eager
interpreters) is in ``test_prepared_rules.py``; here: what the tape adds (shared buffer slots
for ``out[i] = ...``, affine maps, parameters, the engine rule, threads, refusals).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import sparsejac
from sparsejac.ad import PreparedProgram, Tape, jvp
from sparsejac.ad import _tape as _k
from sparsejac.ad.tape import OPS
from sparsejac.pipeline import TAPE_WORK_PER_NODE, choose_engine
from sparsejac.primitives.elementwise import BINARY_ROWS, UNARY_ROWS, ZERO_DERIVATIVE
from sparsejac.tracing import trace


def dense_fd(f: Any, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences, column by column (an independent oracle)."""
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        cols.append((np.ravel(f(x + e)) - np.ravel(f(x - e))) / (2 * h))
    return np.stack(cols, axis=1)


def compare(f: Any, x0: np.ndarray, x1: np.ndarray, params: tuple[Any, ...] = ()) -> Tape:
    """Tape forward/reverse/mixed at x1 equal the chain engine's and dense FD."""
    prog = trace(f, x0, params=params)
    tape = Tape.build(prog)
    assert tape is not None, "the tape should encode this program"
    chain = PreparedProgram(prog, width=2)
    n = x0.size
    v_t, b_t = tape.forward(x1, np.arange(n), n, params=params)
    v_c, b_c = chain.forward(x1, np.arange(n), n, params=params)
    m = b_t.shape[0]
    np.testing.assert_allclose(v_t, v_c, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(v_t, f(x1, *params), rtol=1e-14, atol=1e-14)
    scale = 1.0 + np.abs(b_c).max(initial=0.0)
    np.testing.assert_allclose(b_t, b_c, rtol=0, atol=1e-13 * scale)
    _, c_t = tape.reverse(x1, np.arange(m), m, params=params)
    np.testing.assert_allclose(c_t, b_c, rtol=0, atol=1e-13 * scale)
    _, b_m, c_m = tape.mixed(x1, np.arange(n), n, np.arange(m), m, params=params)
    np.testing.assert_allclose(b_m, b_c, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(c_m, b_c, rtol=0, atol=1e-13 * scale)
    fd = dense_fd(lambda z: f(z, *params), x1)
    np.testing.assert_allclose(b_t, fd, rtol=1e-6, atol=1e-6 * scale)
    return tape


def test_every_mirrored_ufunc_is_a_registry_row_with_those_partials() -> None:
    """OPS names the registry's own partials, so a changed partial leaves the tape unused."""
    rows = {r.fn: r.partials for r in [*UNARY_ROWS, *BINARY_ROWS]}
    rows.update({uf: (None,) * uf.nin for uf in ZERO_DERIVATIVE})
    for fn, (_, partials) in OPS.items():
        assert rows[fn] == partials, fn.__name__


#: the opcodes with a derivative (the others give 1.0 or 0.0: conditions of np.where)
ARITHMETIC = [f for f, (op, _) in OPS.items() if not (_k.LESS <= op <= _k.XOR or op == _k.NOT)]
LOGICAL = [f for f in OPS if f not in ARITHMETIC]


@pytest.mark.parametrize("fn", [f for f in ARITHMETIC if getattr(f, "nin", 1) == 1
                                and f is not np.sign],  # (f's own sign: tie-checked)
                         ids=lambda f: f.__name__)
def test_unary_opcodes(fn: Any, rng: np.random.Generator) -> None:
    lo, hi = (1.2, 1.9) if fn is np.arccosh else (0.2, 0.9)  # (inside every domain)
    x0, x1 = rng.uniform(lo, hi, 5), rng.uniform(lo, hi, 5)
    compare(lambda x: fn(x) * x[::-1], x0, x1)


@pytest.mark.parametrize("fn", [f for f in ARITHMETIC if getattr(f, "nin", 1) == 2],
                         ids=lambda f: f.__name__)
def test_binary_opcodes_with_broadcasting(fn: Any, rng: np.random.Generator) -> None:
    x0, x1 = rng.uniform(0.5, 1.5, 6), rng.uniform(0.5, 1.5, 6)
    c = rng.uniform(0.5, 1.5, (1, 3))
    compare(lambda x: fn(x[:3].reshape(1, 3), x[3:].reshape(3, 1)) + fn(c, x[2]), x0, x1)


def element_loop(y: np.ndarray) -> np.ndarray:
    """A tridiagonal right-hand side written as a loop over elements into a buffer."""
    n = y.size
    out = np.zeros(n)
    for i in range(n):
        left = y[i - 1] if i > 0 else 0.0
        right = y[i + 1] if i < n - 1 else 0.0
        out[i] = left - 2.0 * y[i] + right + 0.5 * y[i] ** 2
    return out


def element_loop_jacobian(y: np.ndarray) -> np.ndarray:
    n = y.size
    return np.diag(-2.0 + y) + np.eye(n, k=1) + np.eye(n, k=-1)


def test_element_loop_shares_the_buffer_and_is_exact(rng: np.random.Generator) -> None:
    x0, x1 = rng.uniform(-1, 1, 40), rng.uniform(-1, 1, 40)
    tape = compare(element_loop, x0, x1)
    _, b = tape.forward(x1, np.arange(40), 40)
    np.testing.assert_allclose(b, element_loop_jacobian(x1), rtol=0, atol=1e-14)
    # each out[i] = ... writes one slot: the buffer's slots are shared along the loop
    assert tape.stats()["slots"] < 40 * 20


def test_recurrence_in_a_buffer(rng: np.random.Generator) -> None:
    """out[i] reads out[i - 1]: the old buffer is read before the write that replaces it."""
    def f(x: np.ndarray) -> np.ndarray:
        out = np.zeros(x.size)
        out[0] = x[0]
        for i in range(1, x.size):
            out[i] = 0.5 * out[i - 1] + x[i] ** 2
            out[i] += out[i - 1] * x[i]
        return out

    compare(f, rng.uniform(0.1, 1, 8), rng.uniform(0.1, 1, 8))


def test_shift_within_a_buffer_is_not_shared(rng: np.random.Generator) -> None:
    """out[1:] = out[:-1] reads the elements it overwrites: a copy, not shared slots."""
    def f(x: np.ndarray) -> np.ndarray:
        out = x * 2.0
        out[1:] = out[:-1]
        out[0] = x[-1] ** 3
        return out

    x1 = rng.uniform(0.1, 1, 6)
    compare(f, rng.uniform(0.1, 1, 6), x1)
    want = np.zeros((6, 6))
    want[0, 5] = 3 * x1[5] ** 2
    want[np.arange(1, 6), np.arange(5)] = 2.0
    np.testing.assert_allclose(sparsejac.jacobian(f, x1, mode="forward").toarray(), want)


def test_sums_cumsums_and_constant_contractions_are_affine_maps(
        rng: np.random.Generator) -> None:
    m = rng.normal(size=(3, 5))

    def f(x: np.ndarray) -> np.ndarray:
        return np.concatenate([np.cumsum(x ** 2), [np.sum(np.sin(x)) + 4.0], m @ x,
                               np.einsum("ij,j->i", m, np.exp(x)), np.pad(x, 1) * 2])

    compare(f, rng.uniform(-1, 1, 5), rng.uniform(-1, 1, 5))


def test_parameters_take_their_new_values(rng: np.random.Generator) -> None:
    def f(y: np.ndarray, t: Any) -> np.ndarray:
        return np.exp(-t) * y ** 2 + t * y[::-1]

    x0, x1 = rng.uniform(0, 1, 4), rng.uniform(0, 1, 4)
    prog = trace(f, x0, params=(0.3,))
    tape = Tape.build(prog)
    assert tape is not None
    for t in (0.3, 1.7):
        _, b = tape.forward(x1, np.arange(4), 4, params=(t,))
        want = np.diag(2 * np.exp(-t) * x1) + t * np.eye(4)[::-1]
        np.testing.assert_allclose(b, want, rtol=1e-14, atol=1e-14)


def test_zero_derivative_times_infinite_partial_is_zero() -> None:
    """x * sqrt(x) at 0: the mul0 convention, as in the chain engine."""
    prog = trace(lambda x: x * np.sqrt(x), np.array([1.0, 4.0]))
    tape = Tape.build(prog)
    assert tape is not None
    with np.errstate(all="ignore"):
        _, b = tape.forward(np.array([0.0, 4.0]), np.arange(2), 2)
        _, c = tape.reverse(np.array([0.0, 4.0]), np.arange(2), 2)
    np.testing.assert_array_equal(b, np.diag([0.0, 3.0]))
    np.testing.assert_array_equal(c, np.diag([0.0, 3.0]))


@pytest.mark.parametrize("f", [
    pytest.param(lambda x: np.fmax(x, 0.5), id="selection"),
    pytest.param(lambda x: np.fmod(x, 0.3), id="piecewise-constant-partial"),
    pytest.param(lambda x: x * np.floor(x), id="value-from-x-without-derivative"),
    pytest.param(lambda x: np.linalg.inv(np.eye(2) + np.outer(x, x)) @ x, id="linalg"),
])
def test_programs_outside_the_tape_are_left_to_the_chain(f: Any) -> None:
    """Exact on the chain engine; an explicit engine="tape" warns and says why."""
    x = np.array([0.7, 1.3])
    prog = trace(f, x)
    assert Tape.build(prog) is None
    assert type(choose_engine(prog, 2)).__name__ == "PreparedProgram"
    with pytest.warns(UserWarning, match=r"engine='tape' was requested.*`\w+`"):
        jac = sparsejac.SparseJacobian(f, x, engine="tape")
    assert jac.stats()["engine"]["engine"] == "chain"
    assert "not_taped" not in sparsejac.SparseJacobian(f, x).stats()["engine"]
    assert Tape.build_or_reason(prog)[1] in jac.stats()["engine"]["not_taped"]
    np.testing.assert_allclose(jac(x).toarray(), jvp(f, x, np.eye(2)), rtol=1e-12, atol=1e-12)


def test_engine_rule_reads_sizes_only() -> None:
    def kinetics(y: np.ndarray) -> np.ndarray:
        return np.array([-0.04 * y[0] + 1e4 * y[1] * y[2], 0.04 * y[0] - 3e7 * y[1] ** 2])

    prog = trace(kinetics, np.ones(3))
    assert isinstance(choose_engine(prog, 3), Tape)
    assert isinstance(choose_engine(prog, 3, "chain"), PreparedProgram)
    big = trace(lambda x: x[1:] * x[:-1] + np.sin(x[1:]), np.ones(10**5))
    work = sum(nd.out.size for nd in big.nodes) * 3
    assert work > TAPE_WORK_PER_NODE * len(big.nodes)
    assert isinstance(choose_engine(big, 2), PreparedProgram)
    assert isinstance(choose_engine(big, 2, "tape"), Tape)
    for _ in range(3):  # the same program always gets the same engine
        assert isinstance(choose_engine(trace(kinetics, np.ones(3)), 3), Tape)


def test_every_mode_through_sparse_jacobian_agrees_with_the_chain(
        rng: np.random.Generator) -> None:
    x0, x1 = rng.uniform(-1, 1, 30), rng.uniform(-1, 1, 30)

    def f(x: np.ndarray) -> np.ndarray:
        r = element_loop(x)
        return np.concatenate([r, [np.sum(x ** 2)]])  # a dense row: mixed mode is useful

    for mode in ("forward", "reverse", "mixed"):
        tape = sparsejac.SparseJacobian(f, x0, mode=mode, engine="tape")
        chain = sparsejac.SparseJacobian(f, x0, mode=mode, engine="chain")
        assert tape.stats()["engine"]["engine"] == "tape"
        assert chain.stats()["engine"]["engine"] == "chain"
        np.testing.assert_allclose(tape(x1).toarray(), chain(x1).toarray(), rtol=0,
                                   atol=1e-13)


def test_threads_share_one_tape(rng: np.random.Generator) -> None:
    jac = sparsejac.SparseJacobian(element_loop, np.ones(50), engine="tape")
    points = [rng.uniform(-1, 1, 50) for _ in range(8)]
    wrong: list[int] = []

    def work(k: int) -> None:
        for _ in range(50):
            got = jac(points[k]).toarray()
            if not np.allclose(got, element_loop_jacobian(points[k]), rtol=0, atol=1e-14):
                wrong.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def test_bad_engine_is_refused() -> None:
    expected = r"`engine` 'compiled'; expected one of \['auto', 'tape', 'chain'\]"
    with pytest.raises(ValueError, match=expected):
        sparsejac.SparseJacobian(lambda x: x, np.ones(2), engine="compiled")


EDGES = np.array([1000.0, -1.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, -8.0, np.pi / 2,
                  710.0, -1000.0, 0.5])
OTHER = np.array([2.0, 0.5, -1.0, 0.0, 3.0, -0.0, np.inf, np.nan, 1.0 / 3, -2.0, 1e300, 0.0,
                  2.0])


def _as_condition(fn: Any) -> Any:
    """``fn`` (a comparison or logical operation) as the condition of an ``np.where``."""
    if fn in (np.logical_not, np.invert):
        return lambda a: np.where(fn(a > 0.5), 2.0 * a, -a)
    if fn in (np.bitwise_and, np.bitwise_or, np.bitwise_xor):  # (of masks: a & b)
        return lambda a, b: np.where(fn(a > 0.5, b < 1.0), 2.0 * a, b * a)
    return lambda a, b: np.where(fn(a, b), 2.0 * a, b * a)


def _sign_untied(z: Any) -> Any:
    """np.sign as a Hessian's gradient records it (not f's own: that one is tie-checked)."""
    return np.sign(np.maximum(z, -1e300)) * z


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("fn", [*(f if f is not np.sign else _sign_untied for f in ARITHMETIC),
                                *(pytest.param(_as_condition(f), id=f.__name__)
                                  for f in LOGICAL)],
                         ids=lambda f: getattr(f, "__name__", ""))
def test_values_and_derivatives_at_edge_values_match_numpy_and_the_chain(fn: Any) -> None:
    """Overflow, zeros of both signs, infinities, NaN, negative bases: as numpy and the chain.

    (Ties of maximum and minimum included: halves, as the chain's partials.)
    """
    nin = fn.nin if isinstance(fn, np.ufunc) else fn.__code__.co_argcount
    if nin == 1:
        prog, x, want = trace(fn, np.ones(EDGES.size)), EDGES, fn(EDGES)
    else:
        prog = trace(lambda z: fn(z[:EDGES.size], z[EDGES.size:]), np.ones(2 * EDGES.size))
        x, want = np.concatenate([EDGES, OTHER]), fn(EDGES, OTHER)
    tape = Tape.build(prog)
    assert tape is not None
    np.testing.assert_allclose(tape.value(x), want, rtol=1e-15, atol=0, equal_nan=True)
    chain = PreparedProgram(prog, width=x.size)
    n, m = x.size, EDGES.size
    for got, ref in ((tape.forward(x, np.arange(n), n)[1], chain.forward(x, np.arange(n), n)[1]),
                     (tape.reverse(x, np.arange(m), m)[1], chain.reverse(x, np.arange(m), m)[1])):
        np.testing.assert_allclose(got, ref, rtol=1e-14, atol=0, equal_nan=True)


@pytest.mark.parametrize("f", [
    pytest.param(lambda x: _overwrite_copy(np.exp(0.3 * x), x), id="out-partial"),
    pytest.param(lambda x: _overwrite_read(x), id="reader-partial"),
])
def test_reverse_sees_values_before_a_shared_buffer_overwrote_them(f: Any,
                                                                   rng: np.random.Generator
                                                                   ) -> None:
    """A buffer written in place shares its operand's slots; the reverse pass must still read
    the operand's values where partials need them (exp's own output, a product's factor)."""
    compare(f, rng.uniform(-1, 1, 12), rng.uniform(-1, 1, 12))


def _overwrite_copy(a: Any, x: Any) -> Any:
    b = a.copy()          # b takes a's slots: a is not read again
    b[::2] *= 1.7
    b[1] += x[0]
    return b


def _overwrite_read(x: Any) -> Any:
    a = np.sin(x)
    c = a * x             # d c / d x reads a
    b = a.copy()
    b[2:5] = x[2:5] ** 2  # overwrites a's values in the shared slots
    return b + c


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_points_with_infinite_values_use_the_chain_engines_order() -> None:
    """Sums of infinite terms depend on their order: there the tape defers to the chain."""
    def f(x: Any) -> Any:
        e = np.exp(800.0 * x)
        return (e[1:] - e[:-1]) * x[1:] + np.sum(e) * x[:-1]

    x = np.array([1.0, 0.5, 2.0, -1.0])  # exp overflows
    prog = trace(f, np.zeros(4))
    tape = Tape.build(prog)
    assert tape is not None
    for width in (1, 4):
        chain = PreparedProgram(prog, width=width)
        bt, bc = tape.forward(x, np.arange(4), 4)[1], chain.forward(x, np.arange(4), 4)[1]
        np.testing.assert_array_equal(bt, bc)
    q = 3
    ct, cc = tape.reverse(x, np.arange(q), q)[1], PreparedProgram(prog, width=q).reverse(
        x, np.arange(q), q)[1]
    np.testing.assert_array_equal(ct, cc)


_MASK = np.array([True, False, True, True, False])


def _masked(x: np.ndarray) -> np.ndarray:
    """np.where with a constant condition, operands broadcast (a scalar, a row)."""
    return np.where(_MASK, x ** 2, 0.5) + np.where(_MASK[::-1], np.sin(x), x[0] * x)


def _param_in_a_buffer(x: np.ndarray, p: np.ndarray) -> np.ndarray:
    """A linear map that reads a parameter: concatenation of x's terms and p's."""
    y = np.concatenate([x ** 2, 3.0 * p, x[:1] - p[:1]])
    return y[1:] * y[:-1] + y[2:].sum()


def test_constant_selections_and_maps_of_parameters_are_encoded(
        rng: np.random.Generator) -> None:
    """np.where with a constant condition is a copy of the chosen slots, and a linear map
    reading a parameter reads its slots (both made the chain engine take a gradient
    program: Hessians of collocation code written per interval ran node by node, 70 times
    slower). Oracles: the chain engine and central differences, with the parameter's new
    values."""
    x0, x1 = rng.uniform(0.5, 1.5, 5), rng.uniform(-1, 1, 5)
    compare(_masked, x0, x1)
    for p in (np.array([0.3, -1.2]), np.array([2.0, 0.5])):
        compare(_param_in_a_buffer, x0, x1, params=(p,))
    jac = sparsejac.SparseJacobian(_param_in_a_buffer, x0, params=(np.array([0.3, -1.2]),))
    assert jac.stats()["engine"]["engine"] == "tape"
    p = np.array([2.0, 0.5])
    np.testing.assert_allclose(jac.evaluate(x1, params=(p,)).toarray(),
                               dense_fd(lambda z: _param_in_a_buffer(z, p), x1), atol=1e-8)


def _defects(z: np.ndarray, n: int = 60) -> np.ndarray:
    """A pendulum's trapezoidal collocation defects, written interval by interval."""
    X = z[:2 * (n + 1)].reshape(n + 1, 2)
    u = z[2 * (n + 1):]
    g = np.zeros(2 * n)
    for k in range(n):
        f0 = np.array([X[k, 1], -np.sin(X[k, 0]) + u[k] * X[k, 1] ** 2])
        f1 = np.array([X[k + 1, 1], -np.sin(X[k + 1, 0]) + u[k + 1] * X[k + 1, 1] ** 2])
        g[2 * k:2 * k + 2] = X[k + 1] - X[k] - 0.05 * (f0 + f1)
    return g


def test_hessians_of_element_by_element_code_take_the_tape(rng: np.random.Generator) -> None:
    """The gradient program of per-interval collocation code has thousands of nodes: its
    Hessian takes the compiled tape (it walked the chain engine in Python at every call),
    checked against differences of the exact gradient."""
    z = rng.uniform(-1, 1, 2 * 61 + 61)  # X (61 x 2), then u (61)
    lam = rng.standard_normal(120)
    hess = sparsejac.constraint_hessian(_defects, z)
    assert hess.hessian.stats()["engine"]["engine"] == "tape"
    grad = sparsejac.SparseJacobian(_defects, z)

    def gradient(q: np.ndarray) -> np.ndarray:
        return grad(q).T @ lam

    for q in (z, rng.uniform(-1, 1, z.size)):
        H = hess(q, lam).toarray()
        np.testing.assert_allclose(H, dense_fd(gradient, q), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(H, H.T, rtol=0, atol=0)


def test_single_linear_maps_are_encoded_from_their_csr_arrays(
        rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch) -> None:
    """A linear map of one operand (the gathers and scatters of element loops and of their
    gradient programs) is encoded straight from its CSR arrays: the same table, bit for bit,
    as through its local Jacobian and a sort by row."""
    from sparsejac.ad import tape_ops as tape_module
    from sparsejac.ad.second_order import trace_gradient

    z = rng.uniform(-1, 1, 2 * 11 + 11)
    lam = rng.standard_normal(20)

    def weighted(q: np.ndarray, w: np.ndarray) -> Any:
        return np.sum(w * _defects(q, 10))

    prog = trace_gradient(trace(weighted, z, params=(lam,)), z, params=(lam,))
    fast = Tape._encode(prog)
    monkeypatch.setattr(tape_module, "one_map", lambda node, s: None)
    general = Tape._encode(prog)
    assert fast.template.tobytes() == general.template.tobytes()
    for a, b in zip(fast.table, general.table, strict=True):
        assert a.dtype == b.dtype
        assert a.shape == b.shape
        assert a.tobytes() == b.tobytes()


def _switched_forcing(y: np.ndarray, t: float) -> np.ndarray:
    """A loop right-hand side whose forcing is switched on in ``t`` (the spelling the
    refusal of ``if t <= ...`` recommends), with a logical combination of conditions."""
    dy = np.zeros(y.size)
    for i in range(y.size):
        left = y[i - 1] if i > 0 else 0.0
        dy[i] = left - 2.0 * y[i] - y[i] ** 3
    on = np.logical_and(t > 0.5, np.logical_not(t > 2.0))
    dy[-1] = dy[-1] + np.where(t <= np.pi, 1.5 * np.sin(t) ** 2, 0.0)
    return dy + np.where(on, y ** 2, np.sin(y))


def test_conditions_on_a_parameter_are_chosen_at_each_call(rng: np.random.Generator) -> None:
    """np.where on t alone: the tape chooses the operand per call (it left such right-hand
    sides to the chain engine: 4.5 against 0.1 ms a Jacobian at n = 200). Oracle: the
    hand-derived Jacobian at times on both sides of each switch."""
    y0, y1 = rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6)
    tape = Tape.build(trace(_switched_forcing, y0, params=(0.1,)))
    assert tape is not None
    for t in (0.1, 0.7, 2.5, 4.0):
        want = -np.diag(2.0 + 3.0 * y1 ** 2) + np.eye(6, k=-1)
        want += np.diag(2 * y1 if 0.5 < t <= 2.0 else np.cos(y1))
        value, b = tape.forward(y1, np.arange(6), 6, params=(t,))
        np.testing.assert_allclose(b, want, rtol=1e-14, atol=1e-14)
        _, c = tape.reverse(y1, np.arange(6), 6, params=(t,))
        np.testing.assert_allclose(c, want, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(value, _switched_forcing(y1, t), rtol=1e-14, atol=1e-14)
    jac = sparsejac.ode_jacobian(lambda t, y: _switched_forcing(y, t), 0.1, y0)
    assert jac.prepared.stats()["engine"]["engine"] == "tape"


def _limited_flux(u: np.ndarray) -> np.ndarray:
    """An upwind flux with a minmod-limited reconstruction (positivity by np.maximum)."""
    du = np.diff(u)
    slope = np.maximum(0.0, np.minimum(du[1:], du[:-1])) + np.minimum(
        0.0, np.maximum(du[1:], du[:-1]))
    face = u[1:-1] + 0.5 * slope
    speed = face[1:] + face[:-1]
    flux = np.where(speed > 0, face[:-1] ** 2, face[1:] * face[:-1])
    return np.clip(flux, -0.5, 2.0) + np.maximum(u[2:-1], 1e-3) * ~(u[2:-1] < u[1:-2])


def test_conditions_moving_with_x_are_chosen_at_each_call(rng: np.random.Generator) -> None:
    """Upwind directions and limiters: a trace at one point, evaluations at points where
    every condition differs; ties of maximum and minimum (flat states) give halves, as the
    chain engine's partials. Oracles: the chain engine, central differences off ties."""
    x0 = np.linspace(0.1, 1.0, 12)
    for x1 in (rng.uniform(-1, 1, 12), rng.uniform(-1, 1, 12), rng.uniform(0, 2, 12)):
        compare(_limited_flux, x0, x1)
    prog = trace(_limited_flux, x0)
    tape, chain = Tape.build(prog), PreparedProgram(prog, width=12)
    assert tape is not None
    for tied in (np.full(12, 0.3), x0[::-1].copy()):  # slopes and limiters at ties
        np.testing.assert_array_equal(tape.forward(tied, np.arange(12), 12)[1],
                                      chain.forward(tied, np.arange(12), 12)[1])
        np.testing.assert_array_equal(tape.reverse(tied, np.arange(9), 9)[1],
                                      chain.reverse(tied, np.arange(9), 9)[1])


def _pose_residuals(z: np.ndarray, edges: np.ndarray, meas: np.ndarray) -> np.ndarray:
    """2-D pose-graph residuals written edge by edge with a rotation matrix per edge."""
    poses = z.reshape(-1, 3)
    res = np.zeros((len(edges), 3))
    for k, (i, j) in enumerate(edges):
        c, s = np.cos(poses[i, 2]), np.sin(poses[i, 2])
        rot = np.array([[c, s], [-s, c]])  # R(theta_i).T
        res[k, :2] = rot @ (poses[j, :2] - poses[i, :2]) - meas[k, :2]
        res[k, 2] = poses[j, 2] - poses[i, 2] - meas[k, 2]
    return res.ravel()


def test_products_of_moving_operands_are_encoded(rng: np.random.Generator) -> None:
    """``R @ t`` with R built from x (kinematics, pose graphs), ``np.outer``, ``x @ x`` and an
    einsum of two traced operands are sums of products over pairs of slots: on the tape,
    exact against the chain engine and central differences (a pose graph of small rotation
    products ran on the chain engine: 310 against 88 ms for finite differences)."""
    def f(x: np.ndarray) -> np.ndarray:
        c, s = np.cos(x[0]), np.sin(x[0])
        r = np.array([[c, -s], [s, c]])
        m = np.outer(x[:2], x[1:3]) + np.eye(2)
        t = r @ m @ r.T
        return np.concatenate([r @ x[1:3], t.ravel(), [x @ x], np.einsum("ij,ji->", m, r)[None],
                               np.dot(r, x[1:3]) * x[2]])

    compare(f, rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3))
    edges = np.array([[0, 1], [1, 2], [2, 3], [0, 3], [1, 3]])
    meas = rng.normal(size=(5, 3))

    def residuals(z: np.ndarray) -> np.ndarray:
        return _pose_residuals(z, edges, meas)

    z0, z1 = rng.uniform(-1, 1, 12), rng.uniform(-1, 1, 12)
    compare(residuals, z0, z1)
    jac = sparsejac.SparseJacobian(residuals, z0)
    assert jac.stats()["engine"]["engine"] == "tape"
    np.testing.assert_allclose(jac(z1).toarray(), dense_fd(residuals, z1), rtol=1e-7,
                               atol=1e-8)


def test_large_products_stay_on_the_chain_engine() -> None:
    """A product of two traced 48 x 48 matrices has 110,592 terms: BLAS on the chain."""
    prog = trace(lambda x: x.reshape(48, 48) @ x.reshape(48, 48).T, np.ones(48 * 48))
    tape, reason = Tape.build_or_reason(prog)
    assert tape is None
    assert "110,592 products" in reason


def _mass_matrix_rhs(y: np.ndarray) -> np.ndarray:
    """An N-link pendulum: a traced mass matrix, built element by element, solved."""
    n = y.size // 2
    q, p = y[:n], y[n:]
    mass = np.empty((n, n))
    rhs = np.zeros(n)
    for i in range(n):
        for j in range(n):
            mass[i, j] = (n - max(i, j)) * np.cos(q[i] - q[j])
    for i in range(n):
        s = 0.0
        for j in range(n):
            s = s - (n - max(i, j)) * np.sin(q[i] - q[j]) * p[j] ** 2
        rhs[i] = s - 9.81 * (n - i) * np.sin(q[i])
    return np.concatenate([p, np.linalg.solve(mass, rhs)])


def test_small_solves_are_encoded(rng: np.random.Generator) -> None:
    """np.linalg.solve of small systems runs on the tape (its own LU with partial pivoting):
    a traced matrix, a traced right-hand side or both, several right-hand sides, batches.
    Oracles: the chain engine (LAPACK's solve) and central differences. A 4-link pendulum's
    right-hand side ran on the chain engine at 1.85 ms a Jacobian (f: 25 µs)."""
    def f(x: np.ndarray) -> np.ndarray:
        a = np.eye(3) * 2.0 + np.outer(x[:3], x[3:6])
        b = np.stack([x[:3], x[3:6] ** 2], axis=1)
        batch = np.eye(2) + 0.3 * x[:8].reshape(2, 2, 2)
        return np.concatenate([
            np.linalg.solve(a, x[:3]), np.linalg.solve(a, b).ravel(),
            np.linalg.solve(np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 0.0, 1.0]]),
                            x[2:5]),                       # a constant matrix
            np.linalg.solve(a, np.array([1.0, -2.0, 0.5])),  # a constant right-hand side
            np.linalg.solve(batch, x[8:12].reshape(2, 2, 1)).ravel()])

    compare(f, rng.uniform(-0.5, 0.5, 12), rng.uniform(-0.5, 0.5, 12))
    y0 = np.concatenate([0.3 * np.arange(1, 5), np.zeros(4)])
    tape = compare(_mass_matrix_rhs, y0, rng.uniform(-1, 1, 8))
    assert any(row[0] == _k.SOLVE for row in tape.table[0].tolist())
    jac = sparsejac.SparseJacobian(_mass_matrix_rhs, y0)
    assert jac.stats()["engine"]["engine"] == "tape"


def test_a_singular_system_takes_the_chain_engine() -> None:
    """A zero pivot gives NaN values on the tape, so the call defers to the chain engine,
    whose solve refuses the singular matrix as f itself does."""
    def f(x: np.ndarray) -> np.ndarray:
        return np.linalg.solve(np.outer(x[:2], x[:2]) + np.diag(x[2:4]), x[:2])

    x0 = np.array([1.0, 2.0, 1.0, 1.0])
    tape = Tape.build(trace(f, x0))
    assert tape is not None
    singular = np.array([1.0, 1.0, 0.0, 0.0])  # [[1, 1], [1, 1]]
    with pytest.raises(np.linalg.LinAlgError):
        f(singular)
    with pytest.raises(np.linalg.LinAlgError), np.errstate(all="ignore"):
        tape.forward(singular, np.arange(4), 4)
    with pytest.raises(np.linalg.LinAlgError):
        sparsejac.SparseJacobian(f, x0)(singular)
    np.testing.assert_allclose(sparsejac.SparseJacobian(f, x0)(x0).toarray(),
                               dense_fd(f, x0), rtol=1e-7, atol=1e-8)


def test_large_or_scipy_solves_stay_on_the_chain_engine() -> None:
    prog = trace(lambda x: np.linalg.solve(np.eye(20) + np.outer(x, x), x), np.ones(20))
    assert "20 × 20 system" in Tape.build_or_reason(prog)[1]
    import scipy.linalg

    prog = trace(lambda x: scipy.linalg.solve(np.eye(3) + np.outer(x, x), x,
                                              assume_a="pos"), np.ones(3))
    assert "options" in Tape.build_or_reason(prog)[1]


def _sign_loop(x: Any) -> Any:
    """An odd law in an element loop: ``np.sign`` of one element at a time (tie-checked)."""
    out = np.zeros(x.size)
    for i in range(x.size):
        a = x[i] - x[i - 1]
        out[i] = np.sign(a) * np.sqrt(np.abs(a)) + 0.5 * np.sign(a) * x[i] ** 2
    return out


def test_an_element_loops_sign_is_taped_and_its_ties_refused(rng: np.random.Generator) -> None:
    """Found from outside: a limiter loop with ``np.sign`` ran on the chain engine (the
    tie-checked sign was not encoded): 0.2 s a call at n = 2,000. One element's sign is
    encoded with its tie check (NaN at exactly 0: the call declines and the chain engine
    refuses the tie by name), so the loop runs on the tape and a tie is still refused."""
    from sparsejac.errors import ConcretizationError

    x0, x1 = rng.uniform(-1.0, 1.0, 12), rng.uniform(-1.0, 1.0, 12)
    compare(_sign_loop, x0, x1)
    jac = sparsejac.SparseJacobian(_sign_loop, x0)
    assert jac.stats()["engine"]["engine"] == "tape"
    chain = sparsejac.SparseJacobian(_sign_loop, x0, engine="chain")
    np.testing.assert_array_equal(jac(x1).toarray(), chain(x1).toarray())
    tie = x1.copy()
    tie[5] = tie[4]
    for prepared in (jac, chain):
        with pytest.raises(ConcretizationError, match=r"`np\.sign` of a value depending on x"):
            prepared(tie)
    np.testing.assert_array_equal(jac(x1).toarray(), chain(x1).toarray())
