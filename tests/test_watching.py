"""What ``verify`` watches besides the check point: values ``f`` reads through the user's code.

Found from outside (a hunt of the prepared call path): each scenario below prepared at
``x0 = 0`` a function ``np.where(x > 2, K * x ** 2, x)`` whose ``K`` is reached some way
other than a global of ``f``'s own code, then changed ``K``. At the check point near ``x0``
the change does not show, so only the watch can see it; each of these went unwatched and the
Jacobian at ``x = 3, 3.1, ...`` stayed ``2 x`` instead of ``2 K x`` (error 0.8), silently.
Oracle: ``2 K x`` by hand.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

import numpy as np
import pytest

import sparsejac
from sparsejac.watching import changed, settle, watch

X = 3.0 + 0.1 * np.arange(6)

_COMMON = "import numpy as np\nK = 1.0\n"

SCENARIOS: dict[str, str] = {
    # f is a callable object whose __call__ reads a module global
    "callable object": _COMMON + (
        "class Model:\n"
        "    def __call__(self, x):\n"
        "        return np.where(x > 2, K * x ** 2, x)\n"
        "f = Model()\n"
        "def change():\n    global K\n    K = 5.0\n"),
    # a global read four calls deep in f's own module
    "four calls deep": _COMMON + (
        "def h4(x):\n    return np.where(x > 2, K * x ** 2, x)\n"
        "def h3(x):\n    return h4(x)\n"
        "def h2(x):\n    return h3(x)\n"
        "def h1(x):\n    return h2(x)\n"
        "def f(x):\n    return h1(x)\n"
        "def change():\n    global K\n    K = 5.0\n"),
    # a parameter dict that f also uses as an evaluation counter
    "dict with a counter": (
        "import numpy as np\nP = {'k': 1.0, 'nfev': 0}\n"
        "def f(x):\n    P['nfev'] += 1\n    return np.where(x > 2, P['k'] * x ** 2, x)\n"
        "def change():\n    P['k'] = 5.0\n"),
    # a function reached through a registry dict, reading a module global
    "registry of functions": _COMMON + (
        "def reaction(x):\n    return np.where(x > 2, K * x ** 2, x)\n"
        "TERMS = {'reaction': reaction}\n"
        "def f(x):\n    return TERMS['reaction'](x)\n"
        "def change():\n    global K\n    K = 5.0\n"),
    # a nested configuration, three levels deep, changed in place
    "nested config": (
        "import numpy as np\nCFG = {'reactions': {'r1': {'k': 1.0}}}\n"
        "def f(x):\n    return np.where(x > 2, CFG['reactions']['r1']['k'] * x ** 2, x)\n"
        "def change():\n    CFG['reactions']['r1']['k'] = 5.0\n"),
    # a class attribute read as self.K
    "class attribute": (
        "import numpy as np\n"
        "class Model:\n    K = 1.0\n"
        "    def rhs(self, x):\n        return np.where(x > 2, self.K * x ** 2, x)\n"
        "f = Model().rhs\n"
        "def change():\n    Model.K = 5.0\n"),
    # a class with __slots__ (no instance dictionary)
    "slots": (
        "import numpy as np\n"
        "class Model:\n    __slots__ = ('k',)\n"
        "    def __init__(self):\n        self.k = 1.0\n"
        "    def rhs(self, x):\n        return np.where(x > 2, self.k * x ** 2, x)\n"
        "model = Model()\nf = model.rhs\n"
        "def change():\n    model.k = 5.0\n"),
    # a helper method reached through self, reading a module global
    "method via self": _COMMON + (
        "class Model:\n"
        "    def _rate(self):\n        return K\n"
        "    def rhs(self, x):\n        return np.where(x > 2, self._rate() * x ** 2, x)\n"
        "f = Model().rhs\n"
        "def change():\n    global K\n    K = 5.0\n"),
    # a classmethod reading cls.K
    "classmethod": (
        "import numpy as np\n"
        "class Kin:\n    K = 1.0\n"
        "    @classmethod\n    def rate(cls):\n        return cls.K\n"
        "def f(x):\n    return np.where(x > 2, Kin.rate() * x ** 2, x)\n"
        "def change():\n    Kin.K = 5.0\n"),
    # a parameter object held by the model (self.params.K)
    "parameter object": (
        "import numpy as np\n"
        "class Params:\n    def __init__(self):\n        self.K = 1.0\n"
        "class Model:\n    def __init__(self):\n        self.params = Params()\n"
        "    def rhs(self, x):\n        return np.where(x > 2, self.params.K * x ** 2, x)\n"
        "model = Model()\nf = model.rhs\n"
        "def change():\n    model.params.K = 5.0\n"),
    # a closure over the model object
    "closure over an object": (
        "import numpy as np\n"
        "class Model:\n    def __init__(self):\n        self.K = 1.0\n"
        "def make(model):\n"
        "    def f(x):\n        return np.where(x > 2, model.K * x ** 2, x)\n"
        "    return f\n"
        "model = Model()\nf = make(model)\n"
        "def change():\n    model.K = 5.0\n"),
    # a module-level list of plain objects
    "list of objects": (
        "import numpy as np\n"
        "class Reaction:\n    def __init__(self, k):\n        self.k = k\n"
        "REACTIONS = [Reaction(1.0)]\n"
        "def f(x):\n    return np.where(x > 2, REACTIONS[0].k * x ** 2, x)\n"
        "def change():\n    REACTIONS[0].k = 5.0\n"),
    # callable objects held in a list attribute, their own attribute changed in place
    "callable objects in a list": (
        "import numpy as np\n"
        "class RateLaw:\n    def __init__(self, k):\n        self.k = k\n"
        "    def __call__(self, x):\n        return np.where(x > 2, self.k * x ** 2, x)\n"
        "class Model:\n    def __init__(self):\n        self.rates = [RateLaw(1.0)]\n"
        "    def rhs(self, x):\n        return sum(r(x) for r in self.rates)\n"
        "model = Model()\nf = model.rhs\n"
        "def change():\n    model.rates[0].k = 5.0\n"),
    # a method of the user's class reading an attribute
    "method attribute": (
        "import numpy as np\n"
        "class Model:\n"
        "    def __init__(self):\n        self.k = 1.0\n        self.calls = 0\n"
        "    def rhs(self, x):\n        self.calls += 1\n"
        "        return np.where(x > 2, self.k * x ** 2, x)\n"
        "model = Model()\nf = model.rhs\n"
        "def change():\n    model.k = 5.0\n"),
}


def _module(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_change_reached_through_the_users_code_is_noticed(scenario: str) -> None:
    m = _module("user_model", SCENARIOS[scenario])
    jac = sparsejac.SparseJacobian(m.f, np.zeros(6))
    np.testing.assert_allclose(jac(X).diagonal(), 2 * X, rtol=1e-12)
    m.change()
    np.testing.assert_allclose(jac(X).diagonal(), 10 * X, rtol=1e-12)
    assert jac.stats()["preparations"] == 2
    for _ in range(3):  # and what f changes itself (a counter) prepares nothing again
        jac(X + 0.1)
    assert jac.stats()["preparations"] == 2


def test_a_helper_of_the_users_other_module_is_followed(tmp_path: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``from physics import rate``: rate reads physics.K, rebound by the user."""
    (tmp_path / "physics_model.py").write_text(
        "import numpy as np\nK = 1.0\n"
        "def rate(x):\n    return np.where(x > 2, K * x ** 2, x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    physics = importlib.import_module("physics_model")
    try:
        user = _module("user_script", "from physics_model import rate\n"
                                      "def f(x):\n    return rate(x) + 0.0\n")
        jac = sparsejac.SparseJacobian(user.f, np.zeros(6))
        np.testing.assert_allclose(jac(X).diagonal(), 2 * X, rtol=1e-12)
        setattr(physics, "K", 5.0)  # noqa: B010  (a module attribute, rebound)
        np.testing.assert_allclose(jac(X).diagonal(), 10 * X, rtol=1e-12)
    finally:
        sys.modules.pop("physics_model", None)


def test_library_code_is_not_followed() -> None:
    """numpy's and scipy's functions are watched by identity only: their module globals (a
    library's caches) are not what ``f``'s value depends on between calls."""
    import scipy.special

    def f(x: Any) -> Any:
        return scipy.special.expit(x) + np.linalg.norm(x)

    names = {(type(space).__name__, name) for space, name, _, _ in watch(f)}
    assert all(space in ("dict", "cell") for space, _ in names)
    assert len(names) <= 2


def test_settle_stops_watching_only_the_items_f_changed() -> None:
    """A counter in a dictionary of parameters: that item is no change of ``f``, the others
    stay watched (before, the whole dictionary stopped being watched)."""
    m = _module("counter_model", SCENARIOS["dict with a counter"])
    watched = watch(m.f)
    m.f(np.ones(2))  # f's own call bumps the counter
    settle(watched)
    assert not changed(watched)
    m.P["nfev"] += 5  # a counter moving between calls is no change either
    assert not changed(watched)
    m.P["k"] = 2.0
    assert changed(watched)


def test_nested_watching_is_bounded() -> None:
    """Containers are watched item by item to four levels and 512 items per value: a large
    nested structure is compared by identity below that (one call of changed stays cheap)."""
    big = {f"k{i}": {f"j{j}": [float(j)] * 4 for j in range(60)} for i in range(60)}
    small = {"a": {"b": {"c": [1.0]}}}

    def f(x: Any) -> Any:
        return x * big["k0"]["j0"][0] + small["a"]["b"]["c"][0]

    watched = watch(f)
    small["a"]["b"]["c"][0] = 2.0
    assert changed(watched)
    small["a"]["b"]["c"][0] = 1.0
    assert not changed(watched)


def test_containers_that_hold_themselves() -> None:
    """A list or dictionary that holds itself is followed once, not without end."""
    box: list[Any] = [1.0]
    box.append(box)
    cfg: dict[str, Any] = {"k": 2.0}
    cfg["self"] = cfg

    def f(x: Any) -> Any:
        return x * box[0] * cfg["k"]

    watched = watch(f)
    assert not changed(watched)
    jac = sparsejac.SparseJacobian(f, np.ones(3))
    np.testing.assert_array_equal(jac(np.ones(3)).diagonal(), [2.0] * 3)
    cfg["k"] = 3.0
    np.testing.assert_array_equal(jac(np.ones(3)).diagonal(), [3.0] * 3)


def test_an_object_that_answers_every_attribute_does_not_hang() -> None:
    """An object whose __getattr__ answers any name (a proxy, a mock) has a `__wrapped__`
    that has one too: unwrapping it went on without end; it stops after a few levels."""

    class Proxy:
        def __getattr__(self, name: str) -> Any:
            return Proxy()

        def __call__(self, x: Any) -> Any:
            return x * 2.0

    assert watch(Proxy()) == ()
    jac = sparsejac.SparseJacobian(Proxy(), np.ones(3))
    np.testing.assert_array_equal(jac(np.ones(3)).diagonal(), [2.0] * 3)


def test_what_f_does_not_read_of_its_object_prepares_nothing_again() -> None:
    """Found from outside: once the attributes of the object whose method f is were watched,
    every attribute counted, so a time loop storing self.t / self.y (never read by the
    right-hand side), a hook stored on the object, or the right-hand side's own
    self.last_t = t prepared again at every call (10-40 times slower). Only the attribute
    names f's code reads, and does not assign, are watched."""
    m = _module("loop_model", (
        "import numpy as np\n"
        "class Model:\n"
        "    def __init__(self):\n"
        "        self.k = 1.0\n        self.t = 0.0\n        self.y = None\n"
        "        self.tables = [np.zeros(4096) for _ in range(4)]\n"
        "        self.on_step = lambda: None\n        self.nfev = 0\n"
        "    def rhs(self, x):\n"
        "        self.nfev += 1\n        self.last_x = x\n"
        "        return self.k * x ** 2\n"
        "model = Model()\n"))
    jac = sparsejac.SparseJacobian(m.model.rhs, np.ones(4))
    for step in range(10):
        m.model.t += 0.1
        m.model.y = np.full(4, float(step))
        m.model.tables[0][step] = 1.0
        m.model.on_step = lambda step=step: step
        np.testing.assert_array_equal(jac(np.ones(4)).diagonal(), [2.0] * 4)
    assert jac.stats()["preparations"] == 1
    m.model.k = 3.0
    np.testing.assert_array_equal(jac(np.ones(4)).diagonal(), [6.0] * 4)
    assert jac.stats()["preparations"] == 2


def test_unusual_containers_and_objects() -> None:
    """Found from outside: an attribute-style config (``__getattr__`` answering from its
    items, raising KeyError) crashed the watch; a dict subclass whose ``__getitem__`` wraps
    its values looked changed at every call. Items are read by the base type's own access
    and attributes as stored."""

    class AttrDict(dict):  # type: ignore[type-arg]
        def __getattr__(self, name: str) -> Any:
            return self[name]

    class Param:
        def __init__(self, v: float) -> None:
            self.v = v

    class Table(dict):  # type: ignore[type-arg]
        def __getitem__(self, key: str) -> Any:
            return Param(dict.__getitem__(self, key))

    cfg = AttrDict(k=2.0)
    table = Table(k=2.0)

    def f(x: Any) -> Any:
        return x * cfg.k * table["k"].v

    jac = sparsejac.SparseJacobian(f, np.ones(3))
    for _ in range(5):
        np.testing.assert_array_equal(jac(np.ones(3)).diagonal(), [4.0] * 3)
    assert jac.stats()["preparations"] == 1
    cfg["k"] = 3.0
    np.testing.assert_array_equal(jac(np.ones(3)).diagonal(), [6.0] * 3)


def test_preparing_again_at_call_after_call_says_so_once() -> None:
    """Found from outside: an implicit Euler step whose previous state is an argument
    updated in place prepared again at every call, 50 times slower, silently. After
    PREPARED_AGAIN_WARN such preparations a PreparedAgainWarning names what changed and
    points to params=, once; params= then replays without preparing again."""
    import warnings

    from sparsejac.verifying import PREPARED_AGAIN_WARN

    m = _module("sweep_model", _COMMON + "def f(x):\n    return K * x ** 2\n")
    jac = sparsejac.SparseJacobian(m.f, np.ones(3))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for i in range(PREPARED_AGAIN_WARN + 5):
            m.K = float(i + 2)
            np.testing.assert_array_equal(jac(np.ones(3)).diagonal(), [2.0 * (i + 2)] * 3)
    again = [w for w in seen if issubclass(w.category, sparsejac.PreparedAgainWarning)]
    assert len(again) == 1
    assert "the global `K`" in str(again[0].message)
    assert "params=" in str(again[0].message)
    assert again[0].filename == __file__  # at the user's line

    def step(u: Any, uprev: Any, dt: float) -> Any:
        return u - uprev - dt * (np.roll(u, 1) - 2 * u + np.roll(u, -1))

    u = np.linspace(0.0, 1.0, 50)
    uprev = u.copy()
    traced = sparsejac.SparseJacobian(step, u, params=(uprev, 0.1))
    for _ in range(PREPARED_AGAIN_WARN + 2):
        uprev += 0.01
        J = traced.evaluate(u, params=(uprev, 0.1))
    assert traced.stats()["preparations"] == 1
    np.testing.assert_allclose(J.diagonal(), [1.2] * 50)
