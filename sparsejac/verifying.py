"""Whether a recorded program still computes ``f``: the check behind ``verify=True``.

A prepared Jacobian replays the program recorded at preparation. If ``f`` reads something
that has changed since (a global, a closure variable, a mutable container), the replay would
be silently wrong; :class:`Verifier` compares one real call of ``f`` with the replay at every
evaluation, and the caller prepares again when they differ.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sparsejac.errors import PreparedAgainWarning
from sparsejac.numeric import loud, quiet
from sparsejac.tracing.guards import PARAM_HINT
from sparsejac.watching import (
    WATCH_COPY_MAX,
    bind_arguments,
    changed,
    settle,
    watch,
    what_changed,
)

__all__ = ["PREPARED_AGAIN_WARN", "VERIFY_RTOL", "WATCH_COPY_MAX", "Verifier", "bind_arguments",
           "changed", "param_key", "prepared_again", "settle", "watch"]

#: Preparations that calls of one prepared Jacobian cause (new arguments, a changed value
#: ``f`` reads) after which it says so, once (:class:`~sparsejac.errors.PreparedAgainWarning`).
PREPARED_AGAIN_WARN = 10


def prepared_again(owner: Any, state: Any, new_args: bool) -> None:
    """Count a preparation a call of ``owner`` caused; warn once when they keep coming.

    ``new_args``: the call passed other argument objects; else a value ``f`` reads changed
    (named from ``state``'s watch where it can be).

    Examples
    --------
    >>> import warnings, numpy as np, sparsejac
    >>> jac = sparsejac.SparseJacobian(lambda x, c: c * x, np.ones(2), args=(1.0,))
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     for i in range(12):
    ...         _ = jac(np.ones(2), float(i))   # a new argument object at every call
    >>> [type(w.message).__name__ for w in seen]
    ['PreparedAgainWarning']
    """
    n = owner.__dict__.get("_prepared_again", 0) + 1
    owner.__dict__["_prepared_again"] = n
    if n != PREPARED_AGAIN_WARN:
        return
    from sparsejac.engines import user_stacklevel

    why = ("other argument objects were passed (arguments are compared by identity: an equal "
           "copy prepares again too)" if new_args else
           f"{what_changed(getattr(state, 'watched', ())) or 'a value f reads'} changed")
    warnings.warn(PreparedAgainWarning(
        f"this prepared Jacobian was prepared again at {n} calls, the last because {why}. "
        "Each costs a preparation: pass values that change at every call (a time loop's "
        "previous state, a sweep's parameter) as `params=` (traced: no new preparation) or "
        "in x, and keep the same argument objects between calls."),
        stacklevel=user_stacklevel())


#: Relative tolerance of ``verify``: the replayed ``f(x)`` must equal a real call to this,
#: relative to the largest |f(x)| (the replay runs the same numpy operations, so it agrees to
#: rounding; a changed constant shows far above it).
VERIFY_RTOL = 1e-9


def _values(v: Any) -> np.ndarray | None:
    if type(v) is np.ndarray and v.dtype == np.float64:
        return v if v.ndim == 1 else v.reshape(-1)
    try:
        return np.asarray(v, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        return None


def _close(real: np.ndarray, recorded: np.ndarray, allow: Any = 0.0) -> bool:
    """Whether a replayed value agrees with the real one to :data:`VERIFY_RTOL`, element-wise.

    Each element to its own magnitude (a tolerance relative to the largest row let a small
    row change unseen: a slow rate beside a fast one), plus ``allow`` (per element: the
    rounding :meth:`Verifier.tolerate_rounding` learned).
    """
    with np.errstate(invalid="ignore"):
        close = np.abs(recorded - real) <= VERIFY_RTOL * np.abs(real) + allow
    if close.all():
        return True
    return bool(np.all(close | np.isclose(recorded, real, rtol=VERIFY_RTOL, atol=0.0,
                                          equal_nan=True)))


def _magnitude(state: Any, at: np.ndarray, params: Sequence[Any]) -> float:
    """The largest finite ``|value|`` of any intermediate of ``f`` at ``at`` (a trace there)."""
    from sparsejac.tracing import trace

    try:
        with np.errstate(all="ignore"):
            prog = trace(state.call, np.array(at, copy=True), local=True, params=params)
    except Exception:  # (outside f's domain, say): no magnitude, no rounding allowed
        return 0.0
    finally:
        _settle(state)
    top = 0.0
    for var in [prog.x, *(node.out for node in prog.nodes)]:
        try:
            mag = np.abs(np.asarray(var.value, dtype=np.complex128))
        except (TypeError, ValueError):
            continue
        top = max(top, float(np.max(mag, where=np.isfinite(mag), initial=0.0)))
    return top


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
        #: (state, parameter bytes, the recorded program's value at ``y``, whether it is
        #: finite): the last one kept
        self._kept: tuple[Any, bytes, np.ndarray, bool] | None = None
        #: (state, per-element tolerance) learned by :meth:`tolerate_rounding`
        self._allow: tuple[Any, np.ndarray] | None = None
        #: (state, parameter bytes, f(y) minus the recording there) learned with it
        self._offset: tuple[Any, bytes, np.ndarray] | None = None

    def _at_y(self, state: Any, key: bytes, recorded: np.ndarray) -> tuple[np.ndarray, Any]:
        """The recording's value at ``y`` and the tolerance to compare ``f(y)`` with it.

        For the parameters :meth:`tolerate_rounding` saw, the recording plus the difference
        it learned, exactly (a scalar f whose only element cancels: any change shows);
        for others (an ODE's next ``t``), the recording and the learned allowance.
        """
        off = self._offset
        if (off is not None and off[0] is state and off[1] == key
                and off[2].size == recorded.size):
            return recorded + off[2], 0.0
        return recorded, self.allowance(state, recorded.size)

    def allowance(self, state: Any, size: int) -> Any:
        """The rounding :meth:`tolerate_rounding` allowed ``state`` at ``y``, per element."""
        allow = self._allow
        if allow is None or allow[0] is not state or allow[1].size != size:
            return 0.0
        return allow[1]

    def tolerate_rounding(self, state: Any, fx: Any, x: np.ndarray, params: Sequence[Any],
                          replay: Callable[[np.ndarray], Any] | None = None) -> bool:
        """Whether a fresh preparation's disagreement with ``f`` is rounding; allow it if so.

        Called when the program recorded a moment ago already disagrees with real calls of
        ``f``: no constant can have changed since, so either ``f`` is not deterministic, or
        the recording computes some operation with other rounding than numpy (a dot product
        as a sum, in another order) and ``f`` cancels it into a value of that size
        (``(x @ x) * 1e12 - np.sum(x * x) * 1e12``). It is taken for rounding when two real
        calls give the same bits, at ``y`` and at ``x``, and the recording's differences there
        are within :data:`VERIFY_RTOL` of the largest magnitude of any intermediate value
        (a trace at the same points). Then True is returned. Later checks of ``state`` at
        ``y`` with the same parameters compare ``f(y)`` with the recording plus the
        difference seen now, exactly; with other parameters (an ODE's ``t`` changes at every
        call), and at ``x`` where ``f`` is not finite at ``y``, each element may differ by 4
        times the larger difference seen now: only the elements that cancel get a
        tolerance, and a constant that changes any other element of ``f`` shows as before.
        False otherwise. ``fx`` is the recording's value at ``x``, or None to have
        ``replay(x)`` compute it (a Hessian's).
        """
        key = param_key(params)
        worst, top, allow = 0.0, 0.0, None
        for at, recorded in ((self.y, self.kept(state, key)), (x, fx)):
            try:
                if recorded is None and replay is not None and at is x:
                    with np.errstate(all="ignore"):
                        recorded = replay(x)
                recorded = None if recorded is None else _values(recorded)
                with np.errstate(all="ignore"):
                    one = _values(_settled(state, state.call(np.array(at, copy=True), *params)))
                    two = _values(_settled(state, state.call(np.array(at, copy=True), *params)))
            except Exception:  # outside f's domain at y
                _settle(state)
                continue
            if (one is None or two is None or recorded is None or one.size != recorded.size
                    or one.tobytes() != two.tobytes()):
                return False
            finite = np.isfinite(one)
            if not np.array_equal(finite, np.isfinite(recorded)):
                return False
            diff = np.where(finite, one - recorded, 0.0)
            worst = max(worst, float(np.max(np.abs(diff), initial=0.0)))
            top = max(top, _magnitude(state, at, params))
            tol = 4.0 * np.abs(diff)
            allow = tol if allow is None else np.maximum(allow, tol)
            if at is self.y:
                self._offset = (state, key, diff)
        if not 0.0 < worst <= VERIFY_RTOL * top:
            return False
        if allow is not None:
            self._allow = (state, allow)
        return True

    def kept(self, state: Any, key: bytes) -> np.ndarray | None:
        """The recorded value at ``y`` kept for ``state`` and parameter bytes ``key``."""
        hit = self._kept
        return hit[2] if hit is not None and hit[0] is state and hit[1] == key else None

    def keep(self, state: Any, key: bytes, value: np.ndarray) -> None:
        """Keep the recorded value at ``y`` for ``state`` and ``key`` (replacing the last)."""
        self._kept = (state, key, value, bool(np.isfinite(value).all()))

    def agrees_at_y(self, state: Any, recorded: np.ndarray, params: Sequence[Any]) -> bool:
        """Whether a real call of ``f`` at ``y`` equals ``recorded``, the program's value there.

        False also when ``f`` cannot be evaluated at ``y`` or is not finite there (NaN equals
        NaN whatever ``f``'s constants: :meth:`agrees` then decides), and when a global or
        closure value ``f`` reads was rebound (:func:`changed`).
        """
        kept = self._kept
        if not (kept[3] if kept is not None and kept[2] is recorded
                else np.isfinite(recorded).all()):
            return False
        if changed(getattr(state, "watched", ())):
            return False
        token = quiet()  # (np.errstate(all="ignore"): outside f's domain, NaN, no warnings)
        try:
            got = state.call(self.y.copy(), *params)
        except Exception:  # outside f's domain at y: the general check handles it
            return False
        finally:
            loud(token)
            _settle(state)
        if type(got) is np.ndarray and got.dtype == np.float64 and got.size <= 4096 and (
                got.size == recorded.size and got.tobytes() == recorded.tobytes()):
            return True  # the usual case: the same operations, the same bits
        real = _values(got)
        if real is None or real.size != recorded.size:
            return False
        return _close(real, *self._at_y(state, param_key(params), recorded))

    def agrees(self, state: Any, fx: Any, x: np.ndarray, params: Sequence[Any]) -> bool:
        """Whether the recorded program still computes ``f``, to rounding.

        Checked at ``y = x0 + d``, a fixed generic point near ``x0`` (``d`` is drawn once,
        relative to ``x0``'s scale), with the call's ``params``: a point where a changed
        constant shows even if ``x`` is special (``K * x`` at ``x = 0`` has the same value
        for every ``K``, not the same derivative). The recorded program's value there is
        replayed once per value of ``params`` and kept, so a call without new parameter
        values costs one evaluation of ``f``. If ``f`` cannot be evaluated at ``y`` (outside
        its domain), the check uses ``x`` itself, whose replayed value is a by-product of the
        Jacobian; where ``f`` is not finite at ``y`` (a NaN there hides any change), it checks
        at ``x`` as well. A global or closure value ``f`` reads that was rebound since the
        preparation (:func:`changed`) is a disagreement too, wherever it shows.
        """
        if changed(getattr(state, "watched", ())):
            return False
        y = self.y
        try:
            with np.errstate(all="ignore"):  # (outside f's domain: NaN, no warnings)
                real = _values(_settled(state, state.call(y.copy(), *params)))
                key = param_key(params)
                recorded = self.kept(state, key)
                if recorded is None:
                    recorded = _values(state.plan.replay_value(y, params))
                    if recorded is not None:
                        self.keep(state, key, recorded)
        except Exception:  # outside f's domain at y: check at x
            _settle(state)
            real = _values(_settled(state, state.call(np.array(x, copy=True), *params)))
            return _same(real, _values(fx), self.allowance(state, np.size(fx)))
        if recorded is None or not _same(real, *self._at_y(state, key, recorded)):
            return False
        if real is not None and not np.isfinite(real).all():  # blind there: check at x too
            with np.errstate(all="ignore"):
                real = _values(_settled(state, state.call(np.array(x, copy=True), *params)))
            return _same(real, _values(fx), self.allowance(state, np.size(fx)))
        return True

    def agrees_scalar(self, state: Any, x: np.ndarray, params: Sequence[Any],
                      replay: Callable[[np.ndarray], Any]) -> bool:
        """Whether a scalar ``f`` (a Hessian's) agrees with ``replay(point)``, its recording.

        At ``y`` (``w * x ** 2`` at ``x = 0`` is 0 for every ``w``), else at ``x``; the
        recorded value at ``y`` is kept per parameter values; a rebound global or closure
        value is a disagreement (:func:`changed`).
        """
        if changed(getattr(state, "watched", ())):
            return False
        for at in (self.y, x):
            try:
                with np.errstate(all="ignore"):
                    value = _settled(state, state.call(np.array(at, copy=True), *params))
                    real = float(np.asarray(value, dtype=np.float64).ravel()[0])
            except (TypeError, ValueError, ArithmeticError):
                _settle(state)
                if at is x:
                    return False
                continue
            if not self._scalar_agrees(state, at, real, params, replay):
                return False
            if np.isfinite(real):  # (a NaN at y equals NaN whatever f's constants: at x too)
                return True
        return True

    def _scalar_agrees(self, state: Any, at: np.ndarray, real: float, params: Sequence[Any],
                       replay: Callable[[np.ndarray], Any]) -> bool:
        """Whether the recording's value at ``at`` (``y``: kept per parameters) is ``real``."""
        key = param_key(params)
        kept = self.kept(state, key) if at is self.y else None
        if kept is None:
            with np.errstate(all="ignore"):
                kept = np.asarray(replay(at), dtype=np.float64).ravel()
            if at is self.y:
                self.keep(state, key, kept)
        rec, allow = float(kept[0]), 0.0
        if at is self.y:
            shifted, tolerance = self._at_y(state, key, kept)
            rec, allow = float(shifted[0]), float(np.max(tolerance))
        if not (np.isfinite(real) and np.isfinite(rec)):
            return bool(np.isnan(real) == np.isnan(rec) and (np.isnan(real) or real == rec))
        return abs(real - rec) <= VERIFY_RTOL * max(1.0, abs(real)) + allow


def _settle(state: Any) -> None:
    watched = getattr(state, "watched", ())
    if watched:
        settle(watched)


def _settled(state: Any, value: Any) -> Any:
    """``value`` (of a real call of ``f``), after :func:`settle` of ``state``'s watch."""
    _settle(state)
    return value


def _same(real: np.ndarray | None, recorded: np.ndarray | None, allow: Any = 0.0) -> bool:
    """Whether a real value of ``f`` equals the recorded program's, bit for bit or to rounding."""
    if real is None or recorded is None or real.size != recorded.size:
        return False
    if real.size <= 4096:  # the usual case: the same operations, the same bits
        if real.tobytes() == recorded.tobytes():
            return True
    elif np.array_equal(real, recorded):
        return True
    return _close(real, recorded, allow)


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


def _same_args(state: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``state`` was prepared with these very argument objects."""
    if not (args or kwargs or state.args or state.kwargs):  # (every call of most users)
        return True
    return len(args) == len(state.args) and all(
        a is b for a, b in zip(args, state.args, strict=True)
    ) and kwargs.keys() == state.kwargs.keys() and all(
        kwargs[k] is state.kwargs[k] for k in kwargs)


#: Preparations kept for other branches on the parameters, besides the current one
BRANCHES_KEPT = 8

#: After this many new preparations for values of a parameter read whole (``float(t)``,
#: ``math.exp(-t)``: every value is a branch of its own), or for branches in general, a
#: warning says how to avoid them
VALUE_READ_WARN_AFTER, BRANCHES_WARN_AFTER = 3, 16


def for_params(owner: Any, state: Any, params: Sequence[Any]) -> Any:
    """The preparation of ``owner`` for ``params``: ``state``, or one for their branches.

    ``f`` may branch in Python on values computed from its parameters alone (``if t < t1:``,
    :class:`~sparsejac.tracing.guards.ParamGuards`); a preparation holds for the parameter
    values that take its branches. For others, this one of the :data:`BRANCHES_KEPT` kept
    ones that holds becomes the current preparation, or a new one is made at ``params``.
    ``owner`` is a :class:`~sparsejac.SparseJacobian` or :class:`~sparsejac.SparseHessian`
    (``_state``, ``_branches``, ``_lock``, ``_prepare(args, kwargs, params)``).
    """
    guards = _guards(state)
    if guards is None or guards.holds(params):
        return state
    with owner._lock:
        kept = owner._branches
        found = next((s for s in kept if (_guards(s) is None or _guards(s).holds(params))
                      and _same_args(s, state.args, state.kwargs)), None)
        current = owner._state
        if found is not None:
            kept.remove(found)
            owner._state = found
        else:
            owner._prepare(state.args, state.kwargs, params, branch=True)
            owner._branch_preparations += 1
            count = owner._branch_preparations
            if count == (VALUE_READ_WARN_AFTER if guards.value_reads else BRANCHES_WARN_AFTER):
                from sparsejac.engines import user_stacklevel

                warnings.warn(
                    f"`{owner._name}` has needed {count} new preparations for new values of "
                    f"its parameters: it reads {guards.describe()} in Python, and each value "
                    "read anew is a branch of its own (exact, but slow). "
                    f"{PARAM_HINT}", RuntimeWarning, stacklevel=user_stacklevel())
        kept.insert(0, current)
        del kept[BRANCHES_KEPT:]
        return owner._state


def check_structure(owner: Any, pattern: Any, guards: Any, out: Any = None) -> None:
    """Refuse values in another order than ``owner.structure()``'s, or not of ``out``'s size.

    After ``f`` took another branch on its parameters (:func:`for_params`), the pattern may
    differ from the one a solver took from ``structure()`` once.
    """
    shown = owner._shown
    if (shown is not None and pattern is not shown and pattern != shown) or (
            out is not None and out.shape != (pattern.nnz,)):
        raise RuntimeError(
            f"`{owner._name}` has another sparsity pattern for these `params` ({pattern.nnz} "
            "nonzeros): it branches on them in Python"
            f"{'' if guards is None else ' (' + guards.describe() + ')'}, and values() "
            "follows the order of structure(). Pass a pattern valid for all of them as "
            "`sparsity=` (the union of the branches'), or call structure() again.")


def _guards(state: Any) -> Any:
    """The parameter branches a preparation holds on (a Hessian's are its program's)."""
    program = getattr(state, "program", None)
    return state.plan.guards if program is None else program.guards


def check_flat_x(owner: Any, x: Any, xa: np.ndarray, state: Any, params: Sequence[Any],
                 of: str) -> None:
    """Warn where reshaping a flat ``x`` to ``x0``'s shape changes what ``f`` computes.

    A flat vector of ``x0``'s size is reshaped to ``x0``'s shape
    (:func:`~sparsejac.validation.check_x`), so the derivatives are those of ``f`` at the
    reshaped point. An ``f`` written for flat vectors (as scipy's solvers pass them) but
    prepared with a multi-dimensional ``x0`` may compute something else on that shape: its
    derivatives would then be another function's. The first flat call of an object calls
    ``f`` on both (twice in all, once per object): where ``f`` takes the flat vector and
    gives other values for it, a ``RuntimeWarning`` says so (an ``f`` only ever called on
    ``x`` reshaped, by a wrapper, is then differentiated as meant: the warning cannot tell
    the two apart); where ``f`` refuses the flat vector or gives the same values, nothing.
    """
    if xa.ndim < 2 or np.ndim(x) != 1 or getattr(owner, "_flat_checked", False):
        return
    owner._flat_checked = True
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            flat = np.asarray(state.call(xa.reshape(-1).copy(), *params), dtype=float)
            shaped = np.asarray(state.call(xa.copy(), *params), dtype=float)
    except Exception:  # (f written for x0's shape: the reshape is what it means)
        return
    if flat.size == shaped.size and np.array_equal(flat.ravel(), shaped.ravel(),
                                                   equal_nan=True):
        return
    from sparsejac.engines import user_stacklevel

    warnings.warn(
        f"`x` is a flat vector and {of} was prepared for `x0` of shape {xa.shape}: its "
        "derivatives are those of f at x reshaped to that shape, and f gives other values for "
        "the flat vector itself. If f is called with flat vectors (as scipy's solvers call "
        "it), prepare with the flat vector (x0.ravel()); if f is only called on x reshaped, "
        "pass x in x0's shape.", RuntimeWarning, stacklevel=user_stacklevel())
