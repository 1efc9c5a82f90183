"""The public pipeline: detect, colour, prepare, evaluate, decompress.

This is the only module that composes the layers (shared/DESIGN.md): detection
(:mod:`sparsejac.detection`), colouring (:mod:`sparsejac.coloring`), compressed evaluation
(:mod:`sparsejac.ad`, :mod:`sparsejac.fd`) and decompression (``ColoringResult``).

* :func:`jacobian` – one Jacobian at one point;
* :class:`SparseJacobian` – prepare once, evaluate at every Newton step;
* :func:`ode_jacobian`, :func:`least_squares_jacobian`, :func:`root_jacobian` – drop-in
  ``jac=`` callables for ``scipy.integrate.solve_ivp``, ``scipy.optimize.least_squares`` and
  ``scipy.optimize.root``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from sparsejac import fd as _fd
from sparsejac.ad import PreparedProgram, program_jvp, program_vjp
from sparsejac.coloring import ColoringResult, color, color_partitions
from sparsejac.coloring.budget import prepared_effort
from sparsejac.coloring.interface import DEFAULT_REVERSE_COST, partition_cost
from sparsejac.detection import program_sparsity
from sparsejac.errors import ConcretizationError
from sparsejac.pattern import SparsityPattern, as_pattern
from sparsejac.tracing import Program, as_float_input, trace

__all__ = [
    "DEFAULT_REVERSE_COST",
    "MODES",
    "OdeJacobian",
    "RootJacobian",
    "SparseJacobian",
    "jacobian",
    "least_squares_jacobian",
    "ode_jacobian",
    "root_jacobian",
]

Mode = Literal["auto", "forward", "reverse", "mixed", "fd"]
#: The evaluation modes, in the order ``auto`` considers them.
MODES: tuple[str, ...] = ("auto", "forward", "reverse", "mixed", "fd")
#: Repeats of each candidate evaluation when ``calibrate=True`` (the minimum is kept).
CALIBRATION_REPEATS = 3
#: ``auto`` prefers forward, then reverse, then mixed, unless a later mode is faster by more
#: than this fraction when timed.
CALIBRATION_MARGIN = 0.1
#: ``auto`` times only the modes whose product count is within this factor of the fewest.
CALIBRATION_WINDOW = 4.0
#: Largest compressed matrix (``m × p`` or ``q × n`` entries) a mode may allocate (800 MB).
MAX_COMPRESSED_ENTRIES = 100_000_000


#: The colouring each mode decompresses with.
_PARTITION = {"forward": "column", "fd": "column", "reverse": "row", "mixed": "bidirectional"}


def _check_mode(mode: Any) -> str:
    if mode not in MODES:
        raise ValueError(f"Unknown `mode` {mode!r}; expected one of {list(MODES)}.")
    return str(mode)


def _check_subset(detected: sp.csr_array, user: SparsityPattern) -> None:
    """Refuse a user pattern that misses dependencies the trace found (it would be wrong)."""
    if detected.shape != user.shape:
        raise ValueError(
            f"`sparsity` has shape {user.shape} but the Jacobian of f has shape {detected.shape}"
        )
    missing = detected.astype(np.int8) - user.to_csr_array().astype(np.int8)
    missing = sp.csr_array(missing > 0)
    if missing.nnz:
        rows, cols = missing.nonzero()
        raise ValueError(
            f"`sparsity` misses {missing.nnz} entries that f depends on (the trace found them), "
            f"e.g. ({int(rows[0])}, {int(cols[0])}); a compressed Jacobian with it would be "
            "wrong. Pass a superset, or omit `sparsity` to use the detected pattern."
        )


def _fmt(n: int) -> str:
    return f"{n:,}"


def _count(k: int, what: str) -> str:
    return f"{k:,} {what}" + ("" if k == 1 else "s")


class SparseJacobian:
    """A sparse Jacobian prepared once and evaluated at many points.

    Preparation traces ``f`` at ``x0`` (sparsity detection), colours the pattern, chooses
    the mode and records the program; each call then only evaluates and decompresses. The
    object is a drop-in ``jac=`` for ``scipy.optimize.least_squares`` and ``root`` (called
    as ``jac(x, *args)``); see :func:`ode_jacobian` for ``solve_ivp``.

    Parameters
    ----------
    f : callable
        ``f(x, *args, **kwargs)`` written with numpy; ``x`` may have any shape.
    x0 : array_like
        A representative point (every later ``x`` must have its shape).
    sparsity : sparse matrix, array_like or path, optional
        The pattern to use, shape ``(f(x).size, x.size)``. By default it is detected. A given
        pattern must contain the detected one (checked); for ``mode="fd"`` it is trusted.
    mode : {"auto", "forward", "reverse", "mixed", "fd"}
        ``forward``: column colouring, ``B = J @ S``; ``reverse``: row colouring,
        ``C = W @ J``; ``mixed``: bidirectional colouring, both; ``fd``: compressed finite
        differences (approximate, for black-box ``f``); ``auto``: the cheapest exact mode,
        by measured time (``calibrate=True``) or by colour counts.
    order : str or callable
        Vertex order for :func:`sparsejac.color` (default ``"best"``).
    time_budget : float, optional
        An opt-in wall-clock limit (seconds) on the ``"best"`` colouring search per candidate
        mode, beyond its mandatory greedy passes. By default the search is bounded by work
        (:func:`sparsejac.coloring.budget.prepared_effort`: a function of the pattern's
        size), so the colouring and the mode are the same on every machine.
    args, kwargs : optional
        Further arguments of ``f``, constants of the preparation. Calls may pass the same
        objects again (as scipy's solvers do); other objects trigger a new preparation.
    fd_method : {"2-point", "3-point", "cs"}
        Finite-difference scheme for ``mode="fd"``.
    calibrate : bool
        For ``mode="auto"``: time each candidate mode at ``x0`` and keep the fastest. With
        False, cost = forward products + ``reverse_cost`` × reverse products.
    reverse_cost : float
        Cost of a reverse product relative to a forward one, when not calibrating.

    Attributes
    ----------
    sparsity : scipy.sparse.csr_array of bool
        The pattern used (feed it to scipy's ``jac_sparsity=`` if you like).
    coloring : ColoringResult
        The colouring of the chosen mode.
    mode : str
        The chosen mode (never ``"auto"``).
    n_products : int
        Compressed products per Jacobian (JVPs, VJPs, both, or f evaluations for fd).

    Raises
    ------
    ValueError
        A bad ``mode``, ``fd_method``, ``x0``, or a ``sparsity`` missing detected entries.
    ConcretizationError
        ``f`` branches on values and no ``sparsity`` was given (see the message).

    See Also
    --------
    jacobian : a single Jacobian.
    ode_jacobian : the adapter for ``solve_ivp``.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def f(x):
    ...     return x[1:] ** 2 - x[:-1]
    >>> jac = sparsejac.SparseJacobian(f, np.ones(5), mode="forward")
    >>> jac
    SparseJacobian(f, shape=(4, 5), nnz=8, mode='forward': 2 JVPs instead of 5)
    >>> jac(np.arange(5.0)).toarray()
    array([[-1.,  2.,  0.,  0.,  0.],
           [ 0., -1.,  4.,  0.,  0.],
           [ 0.,  0., -1.,  6.,  0.],
           [ 0.,  0.,  0., -1.,  8.]])
    """

    def __init__(
        self,
        f: Callable[..., Any],
        x0: Any,
        *,
        sparsity: Any = None,
        mode: Mode = "auto",
        order: Any = "best",
        time_budget: float | None = None,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        fd_method: str = "2-point",
        calibrate: bool = True,
        reverse_cost: float = DEFAULT_REVERSE_COST,
        _params: Sequence[Any] = (),
        _name: str = "f",
    ) -> None:
        if not callable(f):
            raise TypeError(f"`f` must be callable; got {type(f).__name__}")
        self._requested_mode = _check_mode(mode)
        _fd.check_method(fd_method)
        if not (isinstance(reverse_cost, (int, float)) and reverse_cost > 0):
            raise ValueError(f"`reverse_cost` must be a positive number; got {reverse_cost!r}")
        self._f = f
        self._name = _name
        self._order = order
        self._time_budget_asked = time_budget
        self._fd_method = fd_method
        self._calibrate = bool(calibrate)
        self._reverse_cost = float(reverse_cost)
        self._user_sparsity = sparsity
        self._x0 = as_float_input(x0, "x0")
        self._params0 = tuple(_params)
        self._n_prepared = 0
        self._prepare(tuple(args), dict(kwargs or {}))

    # -- preparation ----------------------------------------------------------------------

    def _call_f(self, x: Any, *params: Any) -> Any:
        return self._f(x, *params, *self._args, **self._kwargs)

    def _prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._args, self._kwargs = args, kwargs
        self._n_prepared += 1
        timings: dict[str, Any] = {}
        mode = self._requested_mode
        self._program: Program | None = None
        self._retrace = False
        t0 = time.perf_counter()
        if self._user_sparsity is not None and mode == "fd":
            pattern = as_pattern(self._user_sparsity, name="sparsity")
        else:
            try:
                self._program = trace(self._call_f, self._x0, params=self._params0,
                                      name=self._name)
            except ConcretizationError as exc:
                if self._user_sparsity is None:
                    raise ConcretizationError(
                        f"{exc} To prepare a Jacobian for such an f anyway, pass "
                        "`sparsity=` (a pattern valid at every x you will evaluate, e.g. "
                        "sparsejac.jacobian_sparsity(f, x, local=True) when the branches do "
                        "not change it); f is then traced again at every call."
                    ) from exc
                self._retrace = True
            if self._program is not None:
                detected = program_sparsity(self._program)
                if self._user_sparsity is None:
                    pattern = as_pattern(detected, name="sparsity") if detected.nnz else \
                        SparsityPattern(detected.shape, [], [])
                else:
                    pattern = as_pattern(self._user_sparsity, name="sparsity")
                    _check_subset(detected, pattern)
            else:
                pattern = as_pattern(self._user_sparsity, name="sparsity")
        timings["detection"] = time.perf_counter() - t0
        self._pattern = pattern
        self.sparsity: sp.csr_array = pattern.to_csr_array()
        self._shape_out = pattern.shape[0]

        # colourings of every candidate mode
        t0 = time.perf_counter()
        wanted = self._candidate_modes(mode)
        partitions = {m: _PARTITION[m] for m in wanted}
        effort = prepared_effort(pattern.nnz)
        by_partition = color_partitions(pattern, sorted(set(partitions.values())),
                                        order=self._order, effort=effort,
                                        time_budget=self._time_budget_asked)
        self._coloring_budget = float(effort)
        colorings = {m: by_partition[part] for m, part in partitions.items()}
        timings["coloring"] = time.perf_counter() - t0
        self._colorings = colorings

        # prepared programs and the choice
        t0 = time.perf_counter()
        self._prepared: PreparedProgram | None = None
        if self._program is not None and not self._retrace and any(m != "fd" for m in wanted):
            width = min(c.n_colors for m, c in colorings.items() if m != "fd")
            self._prepared = PreparedProgram(self._program, width=max(width, 1))
        timings["preparation"] = time.perf_counter() - t0
        chosen, reason, costs = self._choose(wanted, colorings)
        timings["calibration"] = costs
        self.mode: str = chosen
        self.reason: str = reason
        self.coloring: ColoringResult = colorings[chosen]
        self.n_products: int = self._products(chosen, self.coloring)
        self._timings = timings
        self._template = self._new_matrix(np.zeros(pattern.nnz))

    def _candidate_modes(self, mode: str) -> list[str]:
        match mode:
            case "auto":
                return ["forward", "reverse", "mixed"]
            case "forward" | "reverse" | "mixed" | "fd":
                return [mode]
            case _ as unreachable:  # pragma: no cover - _check_mode rejected it
                raise AssertionError(unreachable)

    @staticmethod
    def _products(mode: str, c: ColoringResult) -> int:
        return int(c.n_colors)

    def _static_cost(self, mode: str, c: ColoringResult) -> float:
        """Forward products + ``reverse_cost`` × reverse products."""
        return partition_cost(c, self._reverse_cost)

    def _fits(self, c: ColoringResult) -> bool:
        _, p, _, q = self._groups(c)
        m, n = c.pattern.shape
        return m * p <= MAX_COMPRESSED_ENTRIES and q * n <= MAX_COMPRESSED_ENTRIES

    def _choose(self, wanted: list[str], colorings: dict[str, ColoringResult]
                ) -> tuple[str, str, dict[str, float]]:
        if len(wanted) == 1:
            return wanted[0], f"mode={wanted[0]!r} was requested", {}
        note = ""
        if "mixed" in wanted:  # a one-sided bicolouring is forward or reverse mode itself
            bi = colorings["mixed"]
            for side, same in (("forward", bi.n_reverse == 0), ("reverse", bi.n_forward == 0)):
                if same and side in colorings and colorings[side].n_colors <= bi.n_colors:
                    wanted = [m for m in wanted if m != "mixed"]
                    note = f"; the mixed colouring is one-sided ({side} mode)"
                    break
        static = {m: self._static_cost(m, colorings[m]) for m in wanted}
        if self._calibrate and (self._prepared is not None or self._retrace):
            # time only the candidates that could win: a mode needing many times more
            # products than another (a dense row in forward mode) is not worth running
            floor = min(static.values())
            timed = [m for m in wanted if static[m] <= CALIBRATION_WINDOW * floor
                     and self._fits(colorings[m])] or [min(wanted, key=lambda m: static[m])]
            costs: dict[str, float] = {}
            for m in timed:
                best = math.inf
                for _ in range(CALIBRATION_REPEATS):
                    t0 = time.perf_counter()
                    self._evaluate_mode(m, colorings[m], self._x0, self._params0)
                    best = min(best, time.perf_counter() - t0)
                costs[m] = best
            # the earliest of forward, reverse, mixed unless a later one is clearly faster
            # (timings of near-equal modes flip with the machine's load)
            chosen = timed[0]
            for m in timed[1:]:
                if costs[m] < costs[chosen] / (1.0 + CALIBRATION_MARGIN):
                    chosen = m
            detail = ", ".join(f"{m} {costs[m] * 1e3:.3g} ms" if m in costs else
                               f"{m} not timed ({colorings[m].n_colors} products)"
                               for m in wanted)
            return chosen, f"fastest when timed at x0 ({detail}){note}", costs
        chosen = min(wanted, key=lambda m: (static[m], wanted.index(m)))
        detail = ", ".join(f"{m} {static[m]:.3g}" for m in wanted)
        return chosen, (f"lowest cost = forward products + {self._reverse_cost:g} x reverse "
                        f"products ({detail}){note}"), static

    # -- evaluation ----------------------------------------------------------------------

    def _new_matrix(self, data: np.ndarray) -> sp.csr_array:
        pat = self._pattern
        out = sp.csr_array((data, pat.indices, pat.indptr), shape=pat.shape, copy=False)
        out.has_sorted_indices = True
        out.has_canonical_format = True
        return out

    def _check_x(self, x: Any) -> np.ndarray:
        arr = as_float_input(x, "x")
        if arr.shape != self._x0.shape:
            if arr.size == self._x0.size and arr.ndim == 1:
                return arr.reshape(self._x0.shape)
            raise ValueError(
                f"`x` has shape {arr.shape} but this Jacobian was prepared for `x0` of shape "
                f"{self._x0.shape}"
            )
        return arr

    @staticmethod
    def _groups(c: ColoringResult) -> tuple[np.ndarray, int, np.ndarray, int]:
        """Column groups, forward products, row groups, reverse products (-1: not seeded)."""
        m, n = c.pattern.shape
        cg = c.column_groups if c.column_groups is not None else np.full(n, -1)
        rg = c.row_groups if c.row_groups is not None else np.full(m, -1)
        return cg, c.n_forward, rg, c.n_reverse

    def _evaluate_mode(self, mode: str, c: ColoringResult, x: np.ndarray,
                       params: Sequence[Any], out: np.ndarray | None = None) -> np.ndarray:
        """Nonzero values of J(x) in CSR order, by ``mode`` with colouring ``c``."""
        if mode == "fd":
            return _fd.fd_jacobian_data(
                lambda z: self._call_f(z, *params), x, c, method=self._fd_method,
                n_out=self._shape_out, out=out)
        cg, p, rg, q = self._groups(c)
        m, n = c.pattern.shape
        if m * p > MAX_COMPRESSED_ENTRIES or q * n > MAX_COMPRESSED_ENTRIES:
            raise MemoryError(
                f"mode={mode!r} would allocate a compressed matrix of {max(m * p, q * n):,} "
                f"entries ({p} forward and {q} reverse products on a {m}x{n} Jacobian); use "
                "mode='auto' or another mode (a dense row needs reverse or mixed mode, a dense "
                "column forward or mixed mode)"
            )
        if self._retrace:
            return self._evaluate_retrace(mode, c, x, params, out)
        assert self._prepared is not None
        b = cmat = None
        if mode == "mixed" and p and q:
            _, b, cmat = self._prepared.mixed(x, cg, p, rg, q, params=params)
        elif mode in ("forward", "mixed") and p:
            _, b = self._prepared.forward(x, cg, p, params=params)
        elif mode in ("reverse", "mixed") and q:
            _, cmat = self._prepared.reverse(x, rg, q, params=params)
        return _decompress(c, b, cmat, out)

    def _evaluate_retrace(self, mode: str, c: ColoringResult, x: np.ndarray,
                          params: Sequence[Any], out: np.ndarray | None) -> np.ndarray:
        """Value-dependent f: trace again at x (local), check the pattern, eager products."""
        prog = trace(self._call_f, x, local=True, params=params, name=self._name)
        local = program_sparsity(prog, local=True)
        _check_subset(local, self._pattern)
        return _eager_data(prog, c, out)

    def __call__(self, x: Any, *args: Any, out: sp.csr_array | None = None,
                 **kwargs: Any) -> sp.csr_array:
        """The Jacobian at ``x`` as a ``csr_array`` (same index arrays every call).

        Parameters
        ----------
        x : array_like
            Same shape as ``x0`` (a flat vector of the same size is accepted too).
        *args, **kwargs
            Passed to ``f`` (as scipy's solvers do). The same objects as at preparation
            reuse it; other objects prepare again.
        out : csr_array, optional
            A matrix returned by an earlier call, refilled in place.

        Returns
        -------
        scipy.sparse.csr_array of float64
        """
        if args or kwargs:
            self._use_args(args, kwargs)
        return self._evaluate(x, self._params0, out)

    def _use_args(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Prepare again unless ``args``/``kwargs`` are the preparation's own objects."""
        same = len(args) == len(self._args) and all(
            a is b for a, b in zip(args, self._args, strict=True)
        ) and kwargs.keys() == self._kwargs.keys() and all(
            kwargs[k] is self._kwargs[k] for k in kwargs)
        if not same:
            self._prepare(tuple(args), dict(kwargs))

    def _evaluate(self, x: Any, params: Sequence[Any], out: sp.csr_array | None = None
                  ) -> sp.csr_array:
        xa = self._check_x(x)
        if out is not None:
            if not (isinstance(out, sp.csr_array) and out.shape == self._pattern.shape
                    and out.nnz == self._pattern.nnz and out.data.dtype == np.float64):
                raise ValueError(
                    "`out` must be a csr_array returned by this SparseJacobian (shape "
                    f"{self._pattern.shape}, nnz {self._pattern.nnz}, float64)"
                )
            self._evaluate_mode(self.mode, self.coloring, xa, params, out=out.data)
            return out
        data = self._evaluate_mode(self.mode, self.coloring, xa, params)
        return self._new_matrix(data)

    # -- introspection -------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Figures of the preparation: sizes, colours per mode, the choice and timings.

        Returns
        -------
        dict
            JSON-ready: ``shape``, ``nnz``, ``mode``, ``reason``, ``n_products``, ``exact``,
            ``colors`` (per candidate mode), ``lower_bound`` (column and row),
            ``coloring_budget`` (the search effort allowed per candidate), ``seconds``
            (detection, coloring, preparation, calibration per mode) and ``engine``.
        """
        m, n = self._pattern.shape
        row_counts = self._pattern.row_counts
        col_counts = self._pattern.col_counts
        return {
            "shape": [m, n],
            "nnz": int(self._pattern.nnz),
            "mode": self.mode,
            "reason": self.reason,
            "n_products": self.n_products,
            "exact": self.mode != "fd",
            "retraced_each_call": self._retrace,
            "colors": {md: int(c.n_colors) for md, c in self._colorings.items()},
            "lower_bound": {
                "column": int(row_counts.max()) if row_counts.size else 0,
                "row": int(col_counts.max()) if col_counts.size else 0,
            },
            "coloring_budget": self._coloring_budget,
            "seconds": dict(self._timings),
            "engine": None if self._prepared is None else self._prepared.stats(),
            "preparations": self._n_prepared,
        }

    def __repr__(self) -> str:
        m, n = self._pattern.shape
        c = self.coloring
        match self.mode:
            case "forward":
                work = _count(c.n_forward, "JVP")
            case "reverse":
                work = _count(c.n_reverse, "VJP")
            case "mixed":
                work = f"{_count(c.n_forward, 'JVP')} + {_count(c.n_reverse, 'VJP')}"
            case _:
                work = _count(c.n_colors, "f evaluation")
        full = m if self.mode == "reverse" else (min(m, n) if self.mode == "mixed" else n)
        note = ", approximate" if self.mode == "fd" else ""
        return (f"SparseJacobian({self._name}, shape=({m}, {n}), nnz={_fmt(self._pattern.nnz)}, "
                f"mode={self.mode!r}: {work} instead of {_fmt(full)}{note})")


def _decompress(c: ColoringResult, b: np.ndarray | None, cmat: np.ndarray | None,
                out: np.ndarray | None) -> np.ndarray:
    match c.partition:
        case "column":
            return c.decompress_data(B=b if b is not None else np.zeros(c.compressed_shape),
                                     out=out)
        case "row":
            return c.decompress_data(C=cmat if cmat is not None else
                                     np.zeros(c.compressed_shape), out=out)
        case _:
            return c.decompress_data(B=b, C=cmat, out=out)


def _eager_data(prog: Program, c: ColoringResult, out: np.ndarray | None = None) -> np.ndarray:
    """J's nonzeros at the trace point, by the eager interpreters and colouring ``c``."""
    s, w = c.seed_matrices()
    b = cmat = None
    if s is not None and s.shape[1]:
        p = s.shape[1]
        _, t = program_jvp(prog, np.ascontiguousarray(s.T).reshape((p, *prog.x.shape)))
        b = np.ascontiguousarray(t.reshape(p, -1).T)
    if w is not None and w.shape[0]:
        q = w.shape[0]
        _, ct = program_vjp(prog, w.reshape((q, *prog.out.shape)))
        cmat = ct.reshape(q, -1)
    return _decompress(c, b, cmat, out)


def jacobian(
    f: Callable[..., Any],
    x: Any,
    *,
    sparsity: Any = None,
    mode: Mode = "auto",
    order: Any = "best",
    args: tuple[Any, ...] = (),
    fd_method: str = "2-point",
    time_budget: float | None = None,
) -> sp.csr_array:
    """The sparse Jacobian of ``f`` at ``x``, exactly (or by finite differences if asked).

    Detection, colouring, one compressed evaluation and decompression. To evaluate at many
    points, prepare once with :class:`SparseJacobian` instead.

    Parameters
    ----------
    f : callable
        ``f(x, *args)`` written with numpy; ``x`` may have any shape (flattened in C order).
    x : array_like
        The point.
    sparsity : sparse matrix, array_like or path, optional
        Pattern to use instead of the detected one (must contain it, except for ``fd``).
    mode : {"auto", "forward", "reverse", "mixed", "fd"}
        As for :class:`SparseJacobian`; ``auto`` picks the fewest products here (no timing).
    order : str or callable
        Vertex order of the colouring (default ``"best"``).
    args : tuple
        Further arguments of ``f``.
    fd_method : {"2-point", "3-point", "cs"}
        Finite-difference scheme for ``mode="fd"`` (approximate).
    time_budget : float, optional
        An opt-in wall-clock limit; a one-off Jacobian runs only the mandatory greedy passes
        of ``order="best"`` (one Jacobian does not repay a long search, a prepared
        :class:`SparseJacobian` does).

    Returns
    -------
    scipy.sparse.csr_array of float64, shape (f(x).size, x.size)

    Raises
    ------
    UnsupportedPrimitiveError
        ``f`` calls a numpy function sparsejac cannot trace (use ``mode="fd"`` with
        ``sparsity=``).

    See Also
    --------
    SparseJacobian : prepare once, evaluate many times.
    jacobian_sparsity : the pattern alone.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def f(x):
    ...     return np.array([x[0] * x[1], np.sin(x[2]), x[1] ** 2], like=x)
    >>> sparsejac.jacobian(f, np.array([1.0, 2.0, 0.0])).toarray()
    array([[2., 1., 0.],
           [0., 0., 1.],
           [0., 4., 0.]])
    """
    mode = _check_mode(mode)  # type: ignore[assignment]
    x = as_float_input(x, "x")  # errors name `x` (SparseJacobian would say `x0`)
    budget = time_budget
    if mode == "fd":
        return SparseJacobian(f, x, sparsity=sparsity, mode="fd", order=order, args=args,
                              fd_method=fd_method, time_budget=budget)(x)
    _fd.check_method(fd_method)
    call = (lambda xt: f(xt, *args)) if args else f
    local = False
    try:
        prog = trace(call, x)
    except ConcretizationError:
        prog = trace(call, x, local=True)  # exact at this x: the branches taken here
        local = True
    detected = program_sparsity(prog, local=local)
    if sparsity is None:
        pattern = as_pattern(detected) if detected.nnz else \
            SparsityPattern(detected.shape, [], [])
    else:
        pattern = as_pattern(sparsity, name="sparsity")
        _check_subset(detected, pattern)
    # mode is an exact mode here ("fd" returned above); auto colours every partition
    c = color(pattern, _PARTITION.get(mode, "auto"), order=order, effort=0.0,
              time_budget=budget)
    data = _eager_data(prog, c)
    out = sp.csr_array((data, pattern.indices, pattern.indptr), shape=pattern.shape)
    out.has_sorted_indices = True
    return out


# ---------------------------------------------------------------------------------------
# solver adapters
# ---------------------------------------------------------------------------------------


class OdeJacobian:
    """``jac(t, y)`` for ``scipy.integrate.solve_ivp``, prepared once.

    Build it with :func:`ode_jacobian`. ``t`` is traced as a parameter (not baked in), so
    one preparation serves the whole integration.

    Attributes
    ----------
    sparsity : scipy.sparse.csr_array of bool
        The pattern, for ``solve_ivp(..., jac_sparsity=...)`` if you compare.
    prepared : SparseJacobian
        The underlying prepared Jacobian (``stats()``, ``mode``, ``n_products``).

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def rhs(t, y):
    ...     return -y + np.cos(t) * np.roll(y, 1)
    >>> jac = sparsejac.ode_jacobian(rhs, 0.0, np.ones(4), mode="forward")
    >>> jac
    OdeJacobian(SparseJacobian(rhs, shape=(4, 4), nnz=8, mode='forward': 2 JVPs instead of 4))
    >>> jac(np.pi, np.ones(4)).toarray()        # t is traced: cos(pi) = -1 here
    array([[-1.,  0.,  0., -1.],
           [-1., -1.,  0.,  0.],
           [ 0., -1., -1.,  0.],
           [ 0.,  0., -1., -1.]])
    """

    def __init__(self, fun: Callable[..., Any], t0: float, y0: Any, args: tuple[Any, ...] = (),
                 **options: Any) -> None:
        self._fun = fun
        self.prepared = SparseJacobian(
            lambda y, t, *a: fun(t, y, *a), y0, args=tuple(args), _params=(float(t0),),
            _name=getattr(fun, "__name__", "fun"), **options)
        self.sparsity = self.prepared.sparsity

    def __call__(self, t: float, y: Any, *args: Any) -> sp.csr_array:
        """The Jacobian ``d fun(t, y, *args) / dy``.

        ``solve_ivp(..., args=args)`` passes its ``args`` here too: the preparation's own
        objects reuse it, other objects prepare again.
        """
        if args:
            self.prepared._use_args(args, {})
        return self.prepared._evaluate(y, (float(t),))

    def __repr__(self) -> str:
        return f"OdeJacobian({self.prepared!r})"


def ode_jacobian(fun: Callable[..., Any], t0: float, y0: Any, args: tuple[Any, ...] = (),
                 **options: Any) -> OdeJacobian:
    """An exact sparse ``jac(t, y)`` for ``scipy.integrate.solve_ivp``.

    Parameters
    ----------
    fun : callable
        The right-hand side ``fun(t, y, *args)``, written with numpy.
    t0 : float
        Initial time (a representative value of ``t``).
    y0 : array_like
        Initial state.
    args : tuple
        Extra arguments, as given to ``solve_ivp(..., args=args)``.
    **options
        Passed to :class:`SparseJacobian` (``mode``, ``order``, ``sparsity`` ...).

    Returns
    -------
    OdeJacobian
        Callable ``(t, y) -> csr_array``, with a ``sparsity`` attribute.

    Notes
    -----
    ``t`` is traced: the right-hand side may use it in numpy expressions (``np.where(t > 1,
    ...)``) but not in Python ``if`` statements (that would make the pattern depend on t).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.integrate import solve_ivp
    >>> import sparsejac
    >>> def rhs(t, y):
    ...     dy = -y ** 3
    ...     dy[1:] += y[:-1]
    ...     return dy
    >>> jac = sparsejac.ode_jacobian(rhs, 0.0, np.ones(50))
    >>> sol = solve_ivp(rhs, (0, 1), np.ones(50), method="BDF", jac=jac)
    >>> sol.success, sol.njev >= 1
    (True, True)
    """
    return OdeJacobian(fun, t0, y0, args, **options)


def least_squares_jacobian(fun: Callable[..., Any], x0: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None,
                           **options: Any) -> SparseJacobian:
    """An exact sparse ``jac(x, *args, **kwargs)`` for ``scipy.optimize.least_squares``.

    Parameters
    ----------
    fun : callable
        Residuals ``fun(x, *args, **kwargs)``, written with numpy.
    x0 : array_like
        Initial guess.
    args, kwargs : optional
        As given to ``least_squares``.
    **options
        Passed to :class:`SparseJacobian`.

    Returns
    -------
    SparseJacobian

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import least_squares
    >>> import sparsejac
    >>> def broyden(x):  # Broyden's tridiagonal function
    ...     r = (3 - 2 * x) * x + 1
    ...     r[1:] -= x[:-1]
    ...     r[:-1] -= 2 * x[1:]
    ...     return r
    >>> jac = sparsejac.least_squares_jacobian(broyden, -np.ones(20))
    >>> jac.n_products
    3
    >>> res = least_squares(broyden, -np.ones(20), jac=jac)
    >>> bool(res.success), bool(np.abs(broyden(res.x)).max() < 1e-8)
    (True, True)
    """
    return SparseJacobian(fun, x0, args=tuple(args), kwargs=kwargs,
                          _name=getattr(fun, "__name__", "fun"), **options)


class RootJacobian:
    """``jac(x, *args)`` for ``scipy.optimize.root``, prepared once, returning a dense array.

    Build it with :func:`root_jacobian`. The methods of ``root`` that use a Jacobian
    (``hybr``, ``lm``: MINPACK) need a dense ``ndarray``, so each call evaluates the sparse
    Jacobian and densifies it.

    Attributes
    ----------
    sparsity : scipy.sparse.csr_array of bool
        The pattern.
    prepared : SparseJacobian
        The underlying prepared Jacobian (``stats()``, ``mode``, ``n_products``); call it for
        the sparse matrix.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def fun(x):
    ...     return x ** 2 - np.roll(x, 1)
    >>> jac = sparsejac.root_jacobian(fun, np.ones(3))
    >>> jac(np.arange(3.0))                       # dense, as MINPACK needs
    array([[ 0.,  0., -1.],
           [-1.,  2.,  0.],
           [ 0., -1.,  4.]])
    >>> jac.prepared(np.arange(3.0)).nnz          # the sparse matrix
    6
    """

    def __init__(self, prepared: SparseJacobian) -> None:
        self.prepared = prepared
        self.sparsity = prepared.sparsity

    def __call__(self, x: Any, *args: Any) -> np.ndarray:
        """The Jacobian at ``x`` as a dense array (``args`` as for :class:`SparseJacobian`)."""
        dense: np.ndarray = self.prepared(x, *args).toarray()
        return dense

    def __repr__(self) -> str:
        return f"RootJacobian({self.prepared!r})"


def root_jacobian(fun: Callable[..., Any], x0: Any, args: tuple[Any, ...] = (),
                  **options: Any) -> RootJacobian:
    """An exact ``jac(x, *args)`` for ``scipy.optimize.root``.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args)``, written with numpy.
    x0 : array_like
        Initial guess.
    args : tuple
        As given to ``root``.
    **options
        Passed to :class:`SparseJacobian`.

    Returns
    -------
    RootJacobian
        Callable ``(x, *args) -> ndarray``: ``root``'s ``hybr`` and ``lm`` methods (the ones
        that use ``jac``) need a dense matrix; the sparse one is ``jac.prepared(x, *args)``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import root
    >>> import sparsejac
    >>> def fun(x, c):
    ...     return x ** 3 + np.roll(x, 1) - c
    >>> jac = sparsejac.root_jacobian(fun, np.ones(8), args=(2.0,))
    >>> sol = root(fun, np.zeros(8), args=(2.0,), jac=jac)
    >>> bool(sol.success), bool(np.allclose(sol.x, 1.0))
    (True, True)
    """
    return RootJacobian(SparseJacobian(fun, x0, args=tuple(args),
                                       _name=getattr(fun, "__name__", "fun"), **options))


# ---------------------------------------------------------------------------------------
# reports
# ---------------------------------------------------------------------------------------


def _min_time(fn: Callable[[], Any], repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def jacobian_report(
    f: Callable[..., Any], x0: Any, *, order: Any = "best", args: tuple[Any, ...] = (),
    repeats: int = 5, return_jacobian: bool = False,
) -> Any:
    """Figures of a function's Jacobian: pattern, colours per mode, the mode ``auto`` picks.

    What ``sparsejac report --function`` prints. It prepares a :class:`SparseJacobian`
    (``mode="auto"``) and times ``f`` and one prepared Jacobian (minimum of ``repeats``).

    Parameters
    ----------
    f : callable
        ``f(x, *args)`` written with numpy.
    x0 : array_like
        The point.
    order : str or callable
        Colouring order (default ``"best"``).
    args : tuple
        Further arguments of ``f``.
    repeats : int
        Timing repeats.
    return_jacobian : bool
        Also return the prepared :class:`SparseJacobian` (as ``(report, jac)``).

    Returns
    -------
    dict
        JSON-ready: ``shape``, ``nnz``, ``density``, ``lower_bound`` (column/row),
        ``detection_seconds``, ``colors`` (forward, reverse and, when available, mixed
        products), ``auto`` (``mode``, ``reason``, ``n_products``, ``seconds`` per Jacobian),
        ``f_seconds`` and ``preparation_seconds``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.api import jacobian_report
    >>> rep = jacobian_report(lambda x: x[1:] * x[:-1], np.ones(6), repeats=1)
    >>> rep["shape"], rep["nnz"], rep["colors"]["forward"], rep["auto"]["n_products"] <= 3
    ([5, 6], 10, 2, True)
    """
    t0 = time.perf_counter()
    jac = SparseJacobian(f, x0, order=order, args=args)
    prep = time.perf_counter() - t0
    st = jac.stats()
    x = jac._x0
    m, n = st["shape"]
    rep = {
        "shape": [m, n],
        "nnz": st["nnz"],
        "density": st["nnz"] / (m * n) if m * n else 0.0,
        "lower_bound": st["lower_bound"],
        "detection_seconds": st["seconds"]["detection"],
        "coloring_seconds": st["seconds"]["coloring"],
        "colors": st["colors"],
        "auto": {
            "mode": jac.mode,
            "reason": jac.reason,
            "n_products": jac.n_products,
            "seconds": _min_time(lambda: jac(x), repeats),
        },
        "f_seconds": _min_time(lambda: jac._call_f(x, *jac._params0), repeats),
        "preparation_seconds": prep,
    }
    return (rep, jac) if return_jacobian else rep
