"""Whether a recorded program still computes ``f``: the check behind ``verify=True``.

A prepared Jacobian replays the program recorded at preparation. If ``f`` reads something
that has changed since (a global, a closure variable, a mutable container), the replay would
be silently wrong; :class:`Verifier` compares one real call of ``f`` with the replay at every
evaluation, and the caller prepares again when they differ.
"""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["VERIFY_RTOL", "Verifier", "bind_arguments", "changed", "param_key", "watch"]

#: Relative tolerance of ``verify``: the replayed ``f(x)`` must equal a real call to this,
#: relative to the largest |f(x)| (the replay runs the same numpy operations, so it agrees to
#: rounding; a changed constant shows far above it).
VERIFY_RTOL = 1e-9


def bind_arguments(f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
                   ) -> Callable[..., Any]:
    """``call(x, *params) = f(x, *params, *args, **kwargs)`` (``f`` itself without them).

    Examples
    --------
    >>> from sparsejac.verifying import bind_arguments
    >>> bind_arguments(lambda x, a, b=0: x + a + b, (1,), {"b": 2})(10)
    13
    """
    if not args and not kwargs:
        return f
    return _Bound(f, args, kwargs)


class _Bound:
    """``f`` with its trailing arguments (a class, so that it pickles for worker processes)."""

    def __init__(self, f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> None:
        self.f, self.args, self.kwargs = f, args, kwargs

    def __call__(self, x: Any, *params: Any) -> Any:
        return self.f(x, *params, *self.args, **self.kwargs)


#: Values of globals and closure variables whose rebinding :func:`changed` notices.
_WATCHED = (int, float, complex, str, np.generic, np.ndarray)


def watch(call: Callable[..., Any]) -> tuple[tuple[Any, Any, Any], ...]:
    """The scalars, strings and arrays ``call``'s code reads from globals and closures, now.

    ``f``'s own code, its nested functions and lambdas, and the plain functions of its own
    module it calls by global name (three levels): ``(namespace or cell, name, value)``.
    :func:`changed` tells whether any was rebound since: a threshold ``thresh = 0.5`` set
    between calls shows there even when ``f``'s value at the check point does not change.

    Examples
    --------
    >>> from sparsejac.verifying import changed, watch
    >>> k = 2.0
    >>> w = watch(lambda x: k * x)
    >>> changed(w)
    False
    """
    out: list[tuple[Any, Any, Any]] = []
    seen: set[int] = set()

    def visit(fn: Any, depth: int) -> None:
        while isinstance(fn, (functools.partial, _Bound, types.MethodType)):
            fn = (fn.func if isinstance(fn, functools.partial) else
                  fn.__func__ if isinstance(fn, types.MethodType) else fn.f)
        if not isinstance(fn, types.FunctionType) or id(fn) in seen or depth > 3:
            return
        seen.add(id(fn))
        space = fn.__globals__
        names, stored = _names(fn.__code__)
        for name in names - stored:  # (a counter f itself updates is no change of f)
            v = space.get(name, _MISSING)
            if isinstance(v, _WATCHED):
                out.append((space, name, v))
            elif isinstance(v, types.FunctionType) and v.__module__ == fn.__module__:
                visit(v, depth + 1)
        cells = zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False)
        for name, cell in cells:
            if name in stored:
                continue
            try:
                v = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if isinstance(v, _WATCHED):
                out.append((cell, None, v))
            else:
                visit(v, depth + 1)

    visit(call, 0)
    return tuple(out)


_MISSING = object()


def _names(code: types.CodeType) -> tuple[set[str], set[str]]:
    """The global names ``code`` reads, and the global and closure names it assigns."""
    names = set(code.co_names)
    stored = {i.argval for i in dis.get_instructions(code)
              if i.opname in ("STORE_GLOBAL", "STORE_DEREF", "DELETE_GLOBAL")}
    for c in code.co_consts:
        if isinstance(c, types.CodeType):  # lambdas, comprehensions, nested functions
            n, st = _names(c)
            names |= n
            stored |= st
    return names, stored


def changed(watched: tuple[tuple[Any, Any, Any], ...]) -> bool:
    """Whether a value :func:`watch` saw was rebound (or an equal scalar replaced it: no)."""
    for space, name, v in watched:
        try:
            now = space.get(name, _MISSING) if name is not None else space.cell_contents
        except ValueError:
            return True
        if now is v:
            continue
        if isinstance(v, np.ndarray):  # rebound: to an array of the same values is no change
            if not (isinstance(now, np.ndarray) and now.shape == v.shape
                    and now.dtype == v.dtype and np.array_equal(now, v, equal_nan=True)):
                return True
            continue
        if type(now) is not type(v):
            return True
        try:
            if not bool(now == v):
                return True
        except (TypeError, ValueError):
            return True
    return False


def _values(v: Any) -> np.ndarray | None:
    if type(v) is np.ndarray and v.dtype == np.float64:
        return v if v.ndim == 1 else v.reshape(-1)
    try:
        return np.asarray(v, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        return None


def _close(real: np.ndarray, recorded: np.ndarray) -> bool:
    """Whether a replayed value agrees with the real one to :data:`VERIFY_RTOL`."""
    mag = np.abs(real)
    scale = float(mag.max(initial=0.0))
    if np.isfinite(scale):  # the usual case, without np.allclose's overhead
        with np.errstate(invalid="ignore"):
            close = np.abs(recorded - real) <= VERIFY_RTOL * (scale + mag)
        if close.all():
            return True
    scale = float(np.max(mag[np.isfinite(real)], initial=0.0))
    return bool(np.allclose(recorded, real, rtol=VERIFY_RTOL, atol=VERIFY_RTOL * scale,
                            equal_nan=True))


class Verifier:
    """Compares real calls of ``f`` with the recorded program at a fixed point near ``x0``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.verifying import Verifier
    >>> v = Verifier(np.zeros(3))
    >>> bool(np.all(v.y != 0))   # a generic point: K * x at x = 0 would hide a changed K
    True
    """

    def __init__(self, x0: np.ndarray) -> None:
        # a fixed, generic offset, large enough that a changed coefficient of a cubic term
        # shows at x0 = 0 (1e-3 hid it below the tolerance), and upwards: states that are
        # concentrations or densities stay in f's domain
        rng = np.random.default_rng(20261124)
        offset = 0.05 * (1.0 + np.abs(x0)) * rng.uniform(0.5, 1.0, x0.shape)
        #: where the check compares f with the recording
        self.y = x0 + offset
        #: ``y`` flat (what the fused tape call replays the program at)
        self.y_flat = self.y.reshape(-1)
        #: (state, parameter bytes, the recorded program's value at ``y``): the last one kept
        self._kept: tuple[Any, bytes, np.ndarray] | None = None

    def kept(self, state: Any, key: bytes) -> np.ndarray | None:
        """The recorded value at ``y`` kept for ``state`` and parameter bytes ``key``."""
        hit = self._kept
        return hit[2] if hit is not None and hit[0] is state and hit[1] == key else None

    def keep(self, state: Any, key: bytes, value: np.ndarray) -> None:
        """Keep the recorded value at ``y`` for ``state`` and ``key`` (replacing the last)."""
        self._kept = (state, key, value)

    def agrees_at_y(self, state: Any, recorded: np.ndarray, params: Sequence[Any]) -> bool:
        """Whether a real call of ``f`` at ``y`` equals ``recorded``, the program's value there.

        False also when ``f`` cannot be evaluated at ``y``: :meth:`agrees` then decides, and
        when a global or closure value ``f`` reads was rebound (:func:`changed`).
        """
        if changed(getattr(state, "watched", ())):
            return False
        try:
            with np.errstate(all="ignore"):  # (outside f's domain: NaN, no warnings)
                got = state.call(self.y.copy(), *params)
        except Exception:  # outside f's domain at y: the general check handles it
            return False
        if type(got) is np.ndarray and got.dtype == np.float64 and got.size <= 4096 and (
                got.size == recorded.size and got.tobytes() == recorded.tobytes()):
            return True  # the usual case: the same operations, the same bits
        real = _values(got)
        if real is None or real.size != recorded.size:
            return False
        return _close(real, recorded)

    def agrees(self, state: Any, fx: Any, x: np.ndarray, params: Sequence[Any]) -> bool:
        """Whether the recorded program still computes ``f``, to rounding.

        Checked at ``y = x0 + d``, a fixed generic point near ``x0`` (``d`` is drawn once,
        relative to ``x0``'s scale), with the call's ``params``: a point where a changed
        constant shows even if ``x`` is special (``K * x`` at ``x = 0`` has the same value
        for every ``K``, not the same derivative). The recorded program's value there is
        replayed once per value of ``params`` and kept, so a call without new parameter
        values costs one evaluation of ``f``. If ``f`` cannot be evaluated at ``y`` (outside
        its domain), the check uses ``x`` itself, whose replayed value is a by-product of the
        Jacobian. A global or closure value ``f`` reads that was rebound since the
        preparation (:func:`changed`) is a disagreement too, wherever it shows.
        """
        if changed(getattr(state, "watched", ())):
            return False
        y = self.y
        try:
            with np.errstate(all="ignore"):  # (outside f's domain: NaN, no warnings)
                real = _values(state.call(y.copy(), *params))
                key = param_key(params)
                recorded = self.kept(state, key)
                if recorded is None:
                    recorded = _values(state.plan.replay_value(y, params))
                    if recorded is not None:
                        self.keep(state, key, recorded)
        except Exception:  # outside f's domain at y: check at x
            real = _values(state.call(np.array(x, copy=True), *params))
            recorded = _values(fx)
        if real is None or recorded is None or real.size != recorded.size:
            return False
        if real.size <= 4096:  # the usual case: the same operations, the same bits
            if real.tobytes() == recorded.tobytes():
                return True
        elif np.array_equal(real, recorded):
            return True
        return _close(real, recorded)

    def agrees_scalar(self, state: Any, x: np.ndarray, params: Sequence[Any],
                      replay: Callable[[np.ndarray], Any]) -> bool:
        """Whether a scalar ``f`` (a Hessian's) agrees with ``replay(point)``, its recording.

        At ``y`` (``w * x ** 2`` at ``x = 0`` is 0 for every ``w``), else at ``x``; the
        recorded value at ``y`` is kept per parameter values; a rebound global or closure
        value is a disagreement (:func:`changed`).
        """
        if changed(getattr(state, "watched", ())):
            return False
        at = self.y
        for point in (self.y, x):
            try:
                with np.errstate(all="ignore"):
                    real = float(np.asarray(state.call(np.array(point, copy=True), *params),
                                            dtype=np.float64).ravel()[0])
                break
            except (TypeError, ValueError, ArithmeticError):
                if point is x:
                    return False
                at = x
        key = param_key(params)
        kept = self.kept(state, key) if at is self.y else None
        if kept is None:
            with np.errstate(all="ignore"):
                kept = np.asarray(replay(at), dtype=np.float64).ravel()
            if at is self.y:
                self.keep(state, key, kept)
        rec = float(kept[0])
        if not (np.isfinite(real) and np.isfinite(rec)):
            return bool(np.isnan(real) == np.isnan(rec) and (np.isnan(real) or real == rec))
        return abs(real - rec) <= VERIFY_RTOL * max(1.0, abs(real))


def param_key(params: Sequence[Any]) -> bytes:
    """The bytes of the parameters' values: what the recorded value at ``y`` is kept under.

    Float parameters give the bytes of the vector :meth:`~sparsejac.ad.tape.Tape.param_vector`
    packs, so the fused call and the general path share what they keep.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.verifying import param_key
    >>> param_key((0.5, [1.0, 2.0])) == np.array([0.5, 1.0, 2.0]).tobytes()
    True
    """
    return b"".join(np.asarray(p).tobytes() for p in params) if params else b""
