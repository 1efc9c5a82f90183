"""Sparsity detection (``sparsejac.detection``): exact patterns on the scenario catalogue, local
patterns of value-dependent code, random compositions (hypothesis), and the contract of
``jacobian_sparsity`` (inputs of any shape, outputs, mutation, exceptions)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import sparsejac
from sparsejac.ad import jvp
from sparsejac.detection import program_sparsity
from sparsejac.tracing import trace
from tests.scenarios import SCENARIOS, Scenario, fd_jacobian, random_point, scenario_params

# ---------------------------------------------------------------------------------------------
# the scenario catalogue: exact global patterns
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("s", scenario_params())
def test_scenario_pattern_is_exact(s: Scenario) -> None:
    """The detected global pattern equals the scenario's analytic pattern exactly."""
    pat = sparsejac.jacobian_sparsity(s.f, s.x0)
    assert isinstance(pat, sp.csr_array)
    assert pat.dtype == bool
    assert pat.shape == (s.m, s.n)
    np.testing.assert_array_equal(pat.toarray(), s.pattern)


@pytest.mark.parametrize("s", scenario_params())
def test_scenario_pattern_is_point_independent(s: Scenario, rng: np.random.Generator) -> None:
    """The global pattern is the same at another point, and covers the Jacobian's nonzeros."""
    x = random_point(s, rng)
    pat = sparsejac.jacobian_sparsity(s.f, x).toarray()
    np.testing.assert_array_equal(pat, s.pattern)
    np.testing.assert_array_equal(s.jacobian(x) != 0, s.pattern)  # a generic point


@pytest.mark.parametrize("s", scenario_params())
def test_scenario_local_pattern_equals_global(s: Scenario) -> None:
    """Without value-dependent choices the local pattern is the global one."""
    local = sparsejac.jacobian_sparsity(s.f, s.x0, local=True).toarray()
    np.testing.assert_array_equal(local, s.pattern)


def test_pattern_output_is_canonical() -> None:
    """The result is a canonical boolean csr_array (sorted indices, only True entries)."""
    s = SCENARIOS[0]
    pat = sparsejac.jacobian_sparsity(s.f, s.x0)
    assert pat.has_sorted_indices
    assert pat.nnz == int(s.pattern.sum())
    assert np.all(pat.data)


def test_args_are_passed_through() -> None:
    """``args=`` reaches ``f`` unchanged and is treated as constant."""
    c = np.array([0.0, 1.0, 2.0])
    pat = sparsejac.jacobian_sparsity(lambda x, c: x * c, np.ones(3), args=(c,))
    np.testing.assert_array_equal(pat.toarray(), np.diag([False, True, True]))


def test_program_sparsity_matches() -> None:
    """``program_sparsity`` of a traced program equals ``jacobian_sparsity``."""
    s = SCENARIOS[4]
    prog = trace(s.f, s.x0)
    np.testing.assert_array_equal(program_sparsity(prog).toarray(), s.pattern)


# ---------------------------------------------------------------------------------------------
# local patterns of value-dependent code
# ---------------------------------------------------------------------------------------------

X6 = np.array([1.0, 5.0, -3.0, 2.0, 0.5, -4.0])


def _python_if(x: Any) -> Any:
    if x[0] > 1.5:
        return x * x[1]
    return x


LOCAL_CASES = [
    # (id, f, x, global pattern, local pattern), patterns as dense 0/1 lists
    pytest.param(lambda x: np.maximum(x[:3], x[3:]), X6,
                 [[1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 1, 0], [0, 0, 1, 0, 0, 1]],
                 [[0, 0, 0, 1, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0]], id="maximum"),
    pytest.param(lambda x: np.minimum(x[:3], 0.0), X6,
                 [[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0]],
                 [[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0]],
                 id="minimum_constant"),
    pytest.param(lambda x: np.where(x[:3] > 0, x[:3] ** 2, x[3:]), X6,
                 [[1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 1, 0], [0, 0, 1, 0, 0, 1]],
                 [[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1]],
                 id="where_traced_condition"),
    pytest.param(lambda x: np.abs(x[:3]) * x[3], X6,
                 [[1, 0, 0, 1, 0, 0], [0, 1, 0, 1, 0, 0], [0, 0, 1, 1, 0, 0]],
                 [[1, 0, 0, 1, 0, 0], [0, 1, 0, 1, 0, 0], [0, 0, 1, 1, 0, 0]],
                 id="abs_both_branches_depend"),
    pytest.param(lambda x: np.max(x.reshape(2, 3), axis=1), X6,
                 [[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]],
                 [[0, 1, 0, 0, 0, 0], [0, 0, 0, 1, 0, 0]], id="max_reduction"),
    pytest.param(lambda x: np.min(x.reshape(2, 3), axis=0, keepdims=True), X6,
                 [[1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 1, 0], [0, 0, 1, 0, 0, 1]],
                 [[1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 1]],
                 id="min_reduction_keepdims"),
    pytest.param(lambda x: np.clip(x[:3], -1.0, 2.0), X6,
                 [[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0]],
                 [[1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]], id="clip"),
]


@pytest.mark.parametrize(("f", "x", "glob", "loc"), LOCAL_CASES)
def test_local_pattern_keeps_the_chosen_operand(f: Callable[[Any], Any], x: np.ndarray,
                                                glob: list[list[int]],
                                                loc: list[list[int]]) -> None:
    """Global patterns keep every candidate; local ones only the operand chosen at x."""
    np.testing.assert_array_equal(sparsejac.jacobian_sparsity(f, x).toarray(),
                                  np.array(glob, dtype=bool))
    local = sparsejac.jacobian_sparsity(f, x, local=True).toarray()
    np.testing.assert_array_equal(local, np.array(loc, dtype=bool))
    numeric = fd_jacobian(f, x) != 0
    assert not (numeric & ~local).any()


def test_local_pattern_follows_python_branch() -> None:
    """A Python ``if`` on a value is allowed locally and follows the branch taken."""
    taken = sparsejac.jacobian_sparsity(_python_if, np.array([2.0, 3.0, 4.0]), local=True)
    skipped = sparsejac.jacobian_sparsity(_python_if, np.array([1.0, 3.0, 4.0]), local=True)
    np.testing.assert_array_equal(taken.toarray(), [[1, 1, 0], [0, 1, 0], [0, 1, 1]])
    np.testing.assert_array_equal(skipped.toarray(), np.eye(3, dtype=bool))


def test_local_program_is_marked_value_dependent() -> None:
    """A local trace that read a value is marked value-dependent (valid at x only)."""
    assert trace(_python_if, np.array([2.0, 3.0, 4.0]), local=True).value_dependent
    assert not trace(np.sin, np.array([2.0, 3.0]), local=True).value_dependent


# ---------------------------------------------------------------------------------------------
# random compositions (hypothesis): the pattern contains every numerical nonzero
# ---------------------------------------------------------------------------------------------

MAX_SIZE = 48
_C = np.array([[1.0, 0.0, -2.0], [0.0, 0.5, 0.0], [3.0, 0.0, 1.0], [0.0, 0.0, 2.0]])


@dataclass(frozen=True)
class Op:
    """One step of a random program: ``apply(a, b, params)`` on numpy or traced arrays."""

    name: str
    apply: Callable[[Any, Any, Any], Any]
    params: Callable[[st.DataObject, tuple[int, ...], tuple[int, ...]], Any]
    binary: bool = False

    def __repr__(self) -> str:
        return self.name


def _none(data: st.DataObject, sa: tuple[int, ...], sb: tuple[int, ...]) -> Any:
    return None


def _axis(data: st.DataObject, sa: tuple[int, ...], sb: tuple[int, ...]) -> Any:
    if not sa:
        return None
    return data.draw(st.integers(-len(sa), len(sa) - 1), label="axis")


def _axis_keep(data: st.DataObject, sa: tuple[int, ...], sb: tuple[int, ...]) -> Any:
    axis = data.draw(st.one_of(st.none(), st.integers(-len(sa), len(sa) - 1)) if sa
                     else st.none(), label="axis")
    return axis, data.draw(st.booleans(), label="keepdims")


def _roll_params(data: st.DataObject, sa: tuple[int, ...], sb: tuple[int, ...]) -> Any:
    return data.draw(st.integers(-3, 3), label="shift"), _axis(data, sa, sb)


def _slice_params(data: st.DataObject, sa: tuple[int, ...], sb: tuple[int, ...]) -> Any:
    if not sa or sa[0] == 0:
        return None
    start = data.draw(st.integers(-sa[0], sa[0] - 1), label="start")
    step = data.draw(st.sampled_from([1, 2, -1, -2]), label="step")
    return slice(start, None, step)


def _fancy_params(data: st.DataObject, sa: tuple[int, ...], sb: tuple[int, ...]) -> Any:
    if not sa or sa[-1] == 0:
        return None
    idx = data.draw(st.lists(st.integers(-sa[-1], sa[-1] - 1), min_size=1, max_size=5),
                    label="index")
    return np.array(idx)


def _mask_params(data: st.DataObject, sa: tuple[int, ...], sb: tuple[int, ...]) -> Any:
    size = int(np.prod(sa, dtype=int))
    if size == 0:
        return None
    bits = data.draw(st.lists(st.booleans(), min_size=size, max_size=size), label="mask")
    return np.array(bits).reshape(sa)


def _pad_params(data: st.DataObject, sa: tuple[int, ...], sb: tuple[int, ...]) -> Any:
    mode = data.draw(st.sampled_from(["constant", "wrap", "edge", "reflect"]), label="mode")
    if mode == "reflect" and any(s < 2 for s in sa):
        mode = "edge"
    if any(s == 0 for s in sa):
        mode = "constant"
    return mode


def _perm_params(data: st.DataObject, sa: tuple[int, ...], sb: tuple[int, ...]) -> Any:
    return tuple(data.draw(st.permutations(range(len(sa))), label="axes"))


def _scatter_params(data: st.DataObject, sa: tuple[int, ...], sb: tuple[int, ...]) -> Any:
    size = int(np.prod(sa, dtype=int))
    k = data.draw(st.integers(1, 5), label="bins")
    idx = data.draw(st.lists(st.integers(0, k - 1), min_size=size, max_size=size), label="to")
    return k, np.array(idx, dtype=np.intp)


def _bcast(a: Any, b: Any) -> Any:
    """``b``, or its sum when its shape does not broadcast against ``a``."""
    try:
        np.broadcast_shapes(np.shape(a), np.shape(b))
    except ValueError:
        return np.sum(b)
    return b


def _reduce(fn: Callable[..., Any]) -> Callable[[Any, Any, Any], Any]:
    def apply(a: Any, b: Any, p: Any) -> Any:
        axis, keepdims = p
        return fn(a, axis=axis, keepdims=keepdims)

    return apply


def _cum(fn: Callable[..., Any]) -> Callable[[Any, Any, Any], Any]:
    def apply(a: Any, b: Any, p: Any) -> Any:
        return fn(a, axis=p)

    return apply


def _set_slice(a: Any, b: Any, p: Any) -> Any:
    out = np.zeros_like(a)
    out[p] = np.sin(a[p])[::-1]
    return out


def _write_through_view(a: Any, b: Any, p: Any) -> Any:
    out = a * 1.0
    view = out[p]  # a numpy view: writing into it changes out
    view *= np.cos(view)
    return out


def _scatter(a: Any, b: Any, p: Any) -> Any:
    k, idx = p
    out = np.zeros(k, like=a)
    np.add.at(out, idx, np.ravel(a) ** 2)
    return out


def _matmul_const(a: Any, b: Any, p: Any) -> Any:
    c = np.resize(_C, (np.shape(a)[-1], 3))
    return a @ c


def _gram(a: Any, b: Any, p: Any) -> Any:
    m = np.reshape(a, (np.shape(a)[0], -1))
    return m @ m.T


OPS = [
    Op("sin", lambda a, b, p: np.sin(a), _none),
    Op("tanh", lambda a, b, p: np.tanh(a), _none),
    Op("square", lambda a, b, p: a**2, _none),
    Op("abs", lambda a, b, p: np.abs(a), _none),
    Op("neg_exp", lambda a, b, p: -np.exp(np.cos(a)), _none),
    Op("log1p_sq", lambda a, b, p: np.log1p(a * a), _none),
    Op("add", lambda a, b, p: a + _bcast(a, b), _none, binary=True),
    Op("sub_r", lambda a, b, p: 2.0 - a * _bcast(a, b), _none, binary=True),
    Op("mul", lambda a, b, p: a * _bcast(a, b), _none, binary=True),
    Op("div", lambda a, b, p: a / (1.0 + _bcast(a, b) ** 2), _none, binary=True),
    Op("maximum", lambda a, b, p: np.maximum(a, _bcast(a, b)), _none, binary=True),
    Op("minimum", lambda a, b, p: np.minimum(0.3, a), _none),
    Op("where", lambda a, b, p: np.where(a > 0.2, a, _bcast(a, b) * 2), _none, binary=True),
    Op("transpose", lambda a, b, p: np.transpose(a, p), _perm_params),
    Op("flip", lambda a, b, p: np.flip(a, p), _axis),
    Op("roll", lambda a, b, p: np.roll(a, p[0], axis=p[1]), _roll_params),
    Op("ravel", lambda a, b, p: np.ravel(a), _none),
    Op("expand", lambda a, b, p: np.expand_dims(a, 0), _none),
    Op("concat", lambda a, b, p: np.concatenate([np.ravel(a), np.ravel(b)]), _none,
       binary=True),
    Op("stack", lambda a, b, p: np.stack([a, a**2], axis=-1), _none),
    Op("pad", lambda a, b, p: np.pad(a, 1, mode=p), _pad_params),
    Op("repeat", lambda a, b, p: np.repeat(a, 2, axis=p), _axis),
    Op("broadcast", lambda a, b, p: np.broadcast_to(a, (2, *np.shape(a))), _none),
    Op("slice", lambda a, b, p: a[p], _slice_params),
    Op("fancy", lambda a, b, p: a[..., p], _fancy_params),
    Op("mask", lambda a, b, p: a[p], _mask_params),
    Op("setitem", _set_slice, _slice_params),
    Op("view_write", _write_through_view, _slice_params),
    Op("sum", _reduce(np.sum), _axis_keep),
    Op("prod", _reduce(np.prod), _axis_keep),
    Op("max", _reduce(np.max), _axis_keep),
    Op("mean", _reduce(np.mean), _axis_keep),
    Op("cumsum", _cum(np.cumsum), _axis),
    Op("cumprod", _cum(np.cumprod), _axis),
    Op("diff", lambda a, b, p: np.diff(a, axis=p), _axis),
    Op("matmul_const", _matmul_const, _none),
    Op("gram", _gram, _none),
    Op("scatter_add", _scatter, _scatter_params),
]


@dataclass(frozen=True)
class Program:
    """A straight-line program over ``OPS``: step k reads values ``i`` and ``j``."""

    steps: tuple[tuple[Op, int, int, Any], ...]

    def __call__(self, x: Any) -> Any:
        env = [x]
        for op, i, j, p in self.steps:
            env.append(op.apply(env[i], env[j], p))
        return env[-1]


@st.composite
def programs(draw: Any) -> tuple[Program, np.ndarray]:
    """A random small program and a random point (values away from 0)."""
    data = draw(st.data())
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3), label="shape"))
    seed = draw(st.integers(0, 2**31 - 1), label="seed")
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.3, 1.3, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    env = [x]
    steps = []
    for _ in range(draw(st.integers(2, 7), label="length")):
        op = draw(st.sampled_from(OPS), label="op")
        i = draw(st.integers(0, len(env) - 1), label="i")
        j = draw(st.integers(0, len(env) - 1), label="j") if op.binary else i
        a = env[i]
        if op.name in ("diff", "repeat", "cumsum", "cumprod", "flip", "roll") and not a.ndim:
            continue
        if op.name in ("matmul_const", "gram", "scatter_add") and (not a.ndim or not a.size):
            continue
        p = op.params(data, a.shape, env[j].shape)
        if p is None and op.params not in (_none, _axis):
            continue
        with np.errstate(all="ignore"):
            val = np.asarray(op.apply(a, env[j], p))
        if val.size > MAX_SIZE or val.size == 0:
            continue
        env.append(val)
        steps.append((op, i, j, p))
    assume(steps)
    return Program(tuple(steps)), x


@settings(max_examples=150)
@given(programs())
def test_random_composition_pattern_contains_nonzeros(case: tuple[Program, np.ndarray]) -> None:
    """Global and local patterns of a random program contain every numerical nonzero."""
    f, x = case
    with np.errstate(all="ignore"):
        y = np.asarray(f(x), dtype=np.float64)
    assume(np.all(np.isfinite(y)) and np.abs(y).max(initial=0.0) < 1e6)
    jac = fd_jacobian(f, x)
    assume(np.all(np.isfinite(jac)))
    numeric = np.abs(jac) > 1e-6 * (1.0 + np.abs(jac).max(initial=0.0))
    glob = sparsejac.jacobian_sparsity(f, x).toarray()
    loc = sparsejac.jacobian_sparsity(f, x, local=True).toarray()
    assert glob.shape == loc.shape == jac.shape
    assert not (numeric & ~glob).any(), f"global pattern misses {np.argwhere(numeric & ~glob)}"
    assert not (numeric & ~loc).any(), f"local pattern misses {np.argwhere(numeric & ~loc)}"
    assert not (loc & ~glob).any(), "local pattern outside the global one"
    exact = jvp(f, x, np.eye(x.size))
    assert not ((exact != 0) & ~loc).any(), "a forward-mode nonzero outside the local pattern"


# ---------------------------------------------------------------------------------------------
# the contract: inputs, outputs, mutation, exceptions
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [pytest.param(s, id=str(s)) for s in
                                   [(), (1,), (5,), (3, 4), (2, 3, 4), (1, 4, 1)]])
def test_input_of_any_shape_is_flattened_in_c_order(shape: tuple[int, ...]) -> None:
    """x of any shape: columns follow x.ravel() (C order), rows follow f(x).ravel()."""
    x = np.arange(1.0, 1.0 + int(np.prod(shape, dtype=int))).reshape(shape)

    def f(t: Any) -> Any:
        return np.transpose(t) * 2.0  # output element k = x.T.flat[k]

    pat = sparsejac.jacobian_sparsity(f, x).toarray()
    perm = np.transpose(np.arange(x.size).reshape(shape)).ravel()
    np.testing.assert_array_equal(pat, np.eye(x.size, dtype=bool)[perm])


@pytest.mark.parametrize("x", [pytest.param([1.0, 2.0, 3.0], id="list"),
                               pytest.param(np.arange(3), id="int"),
                               pytest.param(np.array([True, False, True]), id="bool"),
                               pytest.param(2.5, id="python_float")])
def test_input_is_converted_to_float(x: Any) -> None:
    """Lists, integer, boolean and scalar inputs are traced as float64 arrays."""
    pat = sparsejac.jacobian_sparsity(lambda t: t * 0.5, x)
    n = np.size(x)
    np.testing.assert_array_equal(pat.toarray(), np.eye(n, dtype=bool))


def test_mutating_f_does_not_change_caller_x() -> None:
    """``f`` that assigns into and updates its argument in place leaves the caller's x alone."""
    x = np.array([1.0, 2.0, 3.0, 4.0])
    before = x.copy()

    def f(t: Any) -> Any:
        t[0] = 5.0  # element 0 no longer depends on x
        t += 1.0
        t *= t[1]
        t[2:] = t[:2] ** 2
        return t

    pat = sparsejac.jacobian_sparsity(f, x).toarray()
    np.testing.assert_array_equal(x, before)
    expected = np.array([[0, 1, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0]], dtype=bool)
    np.testing.assert_array_equal(pat, expected)
    sparsejac.jacobian_sparsity(f, x, local=True)
    np.testing.assert_array_equal(x, before)


class _Boom(Exception):
    pass


def test_exception_in_f_propagates_unchanged() -> None:
    """An exception raised by ``f`` reaches the caller as the very same object."""
    err = _Boom("from f")

    def f(t: Any) -> Any:
        y = np.sin(t) * 2
        if y.shape:  # a shape query is fine in global mode
            raise err
        return y

    with pytest.raises(_Boom) as info:
        sparsejac.jacobian_sparsity(f, np.ones(3))
    assert info.value is err


@pytest.mark.parametrize("exc", [pytest.param(KeyError("k"), id="KeyError"),
                                 pytest.param(ValueError("v"), id="ValueError"),
                                 pytest.param(ZeroDivisionError("z"), id="ZeroDivisionError"),
                                 pytest.param(NotImplementedError("n"),
                                              id="NotImplementedError")])
def test_builtin_exceptions_propagate_unchanged(exc: Exception) -> None:
    """Built-in exceptions (even NotImplementedError) are neither wrapped nor replaced."""
    def f(t: Any) -> Any:
        raise exc

    with pytest.raises(type(exc)) as info:
        sparsejac.jacobian_sparsity(f, np.ones(2), local=True)
    assert info.value is exc


def test_tracer_leaked_from_f_is_refused_later() -> None:
    """A traced array kept after the trace ended cannot be used to record more."""
    leaked = []

    def f(t: Any) -> Any:
        leaked.append(t)
        return t * 2

    sparsejac.jacobian_sparsity(f, np.ones(2))
    with pytest.raises(RuntimeError, match="after its trace ended"):
        leaked[0] + 1


OUTPUTS = [
    # (id, f, expected pattern)
    pytest.param(lambda x: 1.5, np.zeros((1, 3), dtype=bool), id="python_float"),
    pytest.param(lambda x: 7, np.zeros((1, 3), dtype=bool), id="python_int"),
    pytest.param(lambda x: np.arange(4.0), np.zeros((4, 3), dtype=bool), id="constant_array"),
    pytest.param(lambda x: np.sum(x), np.ones((1, 3), dtype=bool), id="traced_scalar"),
    pytest.param(lambda x: x[1], np.array([[0, 1, 0]], dtype=bool), id="traced_0d"),
    pytest.param(lambda x: [x[0], x[2] ** 2], np.array([[1, 0, 0], [0, 0, 1]], dtype=bool),
                 id="list_of_traced"),
    pytest.param(lambda x: (x[2], 2.0), np.array([[0, 0, 1], [0, 0, 0]], dtype=bool),
                 id="tuple_with_constant"),
    pytest.param(lambda x: [[x[0], x[1]], [x[2], x[0]]],
                 np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=bool),
                 id="nested_list"),
    pytest.param(lambda x: (x > 1).astype(float), np.zeros((3, 3), dtype=bool),
                 id="zero_derivative_output"),
    pytest.param(lambda x: x[:0], np.zeros((0, 3), dtype=bool), id="empty_output"),
]


@pytest.mark.parametrize(("f", "expected"), OUTPUTS)
def test_output_forms(f: Callable[[Any], Any], expected: np.ndarray) -> None:
    """Scalars, lists, constants and empty arrays are accepted as outputs (flattened)."""
    pat = sparsejac.jacobian_sparsity(f, np.array([1.0, 2.0, 3.0]))
    assert pat.shape == expected.shape
    np.testing.assert_array_equal(pat.toarray(), expected)


BAD_OUTPUTS = [
    pytest.param(lambda x: None, TypeError, "must return an array of numbers.*got NoneType",
                 id="None"),
    pytest.param(lambda x: "abc", TypeError, "got str", id="str"),
    pytest.param(lambda x: {"y": x}, TypeError, "got dict", id="dict"),
    pytest.param(lambda x: x > 0, TypeError, r"boolean array.*astype\(float\)", id="boolean"),
    pytest.param(lambda x: x * 1j, TypeError, "must return real numbers.*complex numbers",
                 id="complex"),
    pytest.param(lambda x: np.array(["a", "b"]), TypeError, "dtype <U1", id="strings"),
]


@pytest.mark.parametrize(("f", "exc", "match"), BAD_OUTPUTS)
def test_bad_outputs_are_rejected_clearly(f: Callable[[Any], Any], exc: type[Exception],
                                         match: str) -> None:
    """Non-numeric, boolean and None outputs are refused with a message naming what came."""
    with pytest.raises(exc, match=match):
        sparsejac.jacobian_sparsity(f, np.ones(2))


BAD_INPUTS = [
    pytest.param(np.zeros(0), ValueError, "at least one element", id="empty"),
    pytest.param(np.array([1.0, np.nan]), ValueError, "must be finite; element 1", id="nan"),
    pytest.param(np.array([1j]), TypeError, "complex numbers", id="complex"),
    pytest.param("abc", TypeError, "real numbers", id="string"),
]


@pytest.mark.parametrize(("x", "exc", "match"), BAD_INPUTS)
def test_bad_inputs_are_rejected_clearly(x: Any, exc: type[Exception], match: str) -> None:
    """Empty, non-finite, complex and non-numeric ``x`` are refused before ``f`` runs."""
    with pytest.raises(exc, match=match):
        sparsejac.jacobian_sparsity(lambda t: t, x)


def test_large_tridiagonal_is_fast_and_exact() -> None:
    """A 1e5-variable tridiagonal problem is detected exactly (vectorised rules)."""
    n = 100_000
    s = next(s for s in SCENARIOS if s.name == "burgers_zeros_like")
    pat = sparsejac.jacobian_sparsity(s.f, np.linspace(0.5, 1.5, n))
    assert pat.shape == (n, n)
    assert pat.nnz == 3 * (n - 2) + 2
    rows = np.repeat(np.arange(n), np.diff(pat.indptr))
    assert np.all(np.abs(pat.indices - rows) <= 1)


def test_a_pattern_too_dense_for_memory_names_the_call_and_the_way_out(monkeypatch):
    """A dependency set that does not fit raised numpy's bare MemoryError (np.cumsum over
    2·10⁵ elements asks for 37 GiB); the error names the call, the sizes and KrylovMethod."""
    from sparsejac.detection import program_sparsity
    from sparsejac.tracing import trace

    prog = trace(lambda x: np.cumsum(np.sin(x)), np.ones(7))
    node = next(nd for nd in prog.nodes if nd.prim.name == "cumsum")

    def out_of_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 37.3 GiB")

    monkeypatch.setattr(node.prim, "pattern", out_of_memory)
    with pytest.raises(MemoryError, match=r"`cumsum` \(7 elements, each on up to 7 elements "
                       r"of x\).*37.3 GiB.*KrylovMethod"):
        program_sparsity(prog)


def test_zero_exponents_carry_no_dependence() -> None:
    """x ** 0 is 1 for every x (numpy), so c ** nu with an order matrix of mostly zeros
    (mass-action rates k * prod(c ** nu, axis=1)) depends on the species with nonzero
    orders only: the pattern was dense. Oracle: the masked spelling, whose pattern and
    Jacobian it must equal, and 0 * x's empty pattern."""
    import sparsejac

    rng = np.random.default_rng(3)
    nu = (rng.random((12, 7)) < 0.2) * rng.integers(1, 3, (12, 7)).astype(float)
    c = rng.uniform(0.5, 1.5, 7)

    def textbook(x):
        return np.prod(x ** nu, axis=1)

    def masked(x):
        return np.prod(np.where(nu > 0, x ** nu, 1.0), axis=1)

    P, Q = sparsejac.jacobian_sparsity(textbook, c), sparsejac.jacobian_sparsity(masked, c)
    np.testing.assert_array_equal(P.toarray(), Q.toarray())
    np.testing.assert_array_equal(P.toarray(), (nu != 0).astype(P.dtype))
    for mode in ("forward", "reverse"):
        np.testing.assert_allclose(sparsejac.jacobian(textbook, c, mode=mode).toarray(),
                                   sparsejac.jacobian(masked, c, mode=mode).toarray(),
                                   rtol=1e-15)
    assert sparsejac.jacobian_sparsity(lambda x: x ** 0.0, c).nnz == 0
    np.testing.assert_array_equal(textbook(np.zeros(7)), (nu == 0).all(axis=1) * 1.0)


def test_a_dense_output_pattern_too_large_says_so(monkeypatch: Any) -> None:
    """Found from outside: ``x - np.mean(x)`` at n = 10^5 failed with numpy's raw "Unable to
    allocate 74.5 GiB" when the output's pattern was converted; it gets detection's own
    message naming the operation and the way out."""
    from sparsejac.detection import program_sparsity
    from sparsejac.tracing import trace

    prog = trace(lambda x: x - np.mean(x), np.ones(5))
    detected = program_sparsity(prog)
    assert detected.nnz == 25

    def no_memory(self: Any) -> Any:
        raise MemoryError("Unable to allocate 74.5 GiB")

    from sparsejac.primitives import depsets

    for cls in {type(depsets.identity(5)), depsets.DepSet}:
        monkeypatch.setattr(cls, "tocsr", no_memory)
    with pytest.raises(MemoryError, match=r"sparsity pattern of `subtract`.*KrylovMethod"):
        program_sparsity(prog)
