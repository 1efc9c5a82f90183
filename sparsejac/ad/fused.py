"""A tape's fused Jacobian before numba is loaded: :class:`Fused` picks how each call runs.

A process that has not imported numba computes a small tape's Jacobian in one of four ways,
all giving the compiled kernel's values bit for bit:

* the kernel's own code in the interpreter (:attr:`~sparsejac.kernels.LazyKernel.python`):
  about half a microsecond per slot and seed direction, the cheapest start for a tape of a
  few scalars;
* its numpy twin (:mod:`sparsejac.ad._tape_numpy`): a few numpy calls per instruction, the
  cheaper one for wide tapes;
* straight-line Python generated from the tape (:mod:`sparsejac.ad._tape_python`): the
  nonzero terms alone, 50 to 100 times faster than interpreting (HIRES: 2.4 against 240 µs),
  after a generation of about :data:`~sparsejac.ad._tape_python.UNITS_PER_TERM` units a
  term (:func:`~sparsejac.ad._tape_python.price`). It is generated once the interpreted or
  twin calls of this colouring have cost that much (rent, then buy: a process asking for
  one Jacobian does not pay for it, and one asking for many pays at most about twice the
  cheaper choice), for tapes of at most
  :data:`~sparsejac.ad._tape_python.MAX_TERMS` terms;
* the compiled kernel, once this process's fallback budget
  (:func:`sparsejac.kernels.use_fallback`) is spent.

The decisions depend on the tape's sizes and the number of calls alone: the same calls give
the same choices in every run. Once numba is loaded, a tape of at most
:data:`sparsejac.ad.native.MAX_TERMS` terms also gets numba code generated from it, once the
compiled kernel's calls have paid for compiling it (:class:`NativeSlot`; sooner where
numba's on-disk cache holds it from an earlier process): the same values bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sparsejac.ad import _tape_python, native
from sparsejac.ad._tape_numpy import jacobian_packed_numpy, twin_units
from sparsejac.ad._tape_python import MAX_TERMS, straight_line, terms
from sparsejac.kernels import INTERPRET_BELOW, INTERPRET_WEIGHT, LazyKernel, use_fallback

__all__ = ["Fused", "Loaded", "NativeSlot", "describe", "packed0_numpy", "shared"]

_NO_POINT = np.zeros(0)
#: per packed tape (a hash of it), ``[rent drawn, generated code or None]`` in this process
_SHARED: dict[str, list[Any]] = {}


def shared(ints: np.ndarray, floats: np.ndarray, n_x: int) -> list[Any]:
    """The rent and generated code of a packed tape, shared by its preparations.

    A program prepared again in the same process (the next solve of a parameter sweep, a
    repeated benchmark run) continues the rent its earlier preparations paid, and runs
    their generated code from its first call.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.ad.fused import shared
    >>> a = shared(np.arange(3), np.ones(2), 3)
    >>> a is shared(np.arange(3), np.ones(2), 3), a
    (True, [0, None])
    """
    key = native.tape_key(ints, floats, n_x)
    got = _SHARED.get(key)
    if got is None:
        if len(_SHARED) >= 256:
            _SHARED.clear()
        got = _SHARED[key] = [0, None]
    return got


def describe(kernels: Any) -> str:
    """How calls of a tape's fused kernels (``kernel`` and ``kernel0``) run now.

    ``"compiled"``, ``"compiled, generated"`` (the tape's own numba code:
    :mod:`sparsejac.ad.native`), ``"generated Python"`` (:mod:`sparsejac.ad._tape_python`) or
    ``"interpreted or numpy twin"`` (before numba is loaded, until calls pay for code).

    Examples
    --------
    >>> from sparsejac.ad.fused import describe
    >>> describe([len, len])   # (numba's dispatchers, once loaded)
    'compiled'
    """
    if any(isinstance(k, Fused) and k.native is not None and k.native.kernels
           for k in kernels):
        return "compiled, generated"
    fused = [k for k in kernels if isinstance(k, Fused) and k.lazy._compiled is None]
    if not fused:
        return "compiled"
    return ("generated Python" if any(k.straight for k in fused)
            else "interpreted or numpy twin")


def packed0_numpy(ints: np.ndarray, floats: np.ndarray, x: np.ndarray, data: np.ndarray,
                  fx: np.ndarray) -> bool:
    """:func:`jacobian_packed_numpy` without parameters or a second point (``kernel0``)."""
    return jacobian_packed_numpy(ints, floats, x, _NO_POINT, _NO_POINT, data, fx, _NO_POINT)


class Fused:
    """A fused Jacobian kernel before numba is loaded (see the module docstring).

    ``lazy`` is :func:`~sparsejac.ad._tape.jacobian_packed` (``packed0=False``: arguments
    ``ints, floats, x, pv, y, data, fx, fy``) or ``jacobian_packed0`` (``ints, floats, x,
    data, fx``); ``twin`` its numpy twin; ``ints`` and ``floats`` the packed tape and
    colouring it is called with, ``n_x`` the size of the flat point.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.ad import Tape
    >>> from sparsejac.ad.fused import Fused
    >>> from sparsejac.tracing import trace
    >>> f = lambda x: x[1:] * x[:-1]
    >>> x = np.array([1.0, 2.0, 3.0])
    >>> c = sparsejac.color(sparsejac.jacobian_sparsity(f, x), "column")
    >>> _, kernel0, ints, floats, _, _, _, work = Tape.build(trace(f, x)).fused_call(c)
    >>> if isinstance(kernel0, Fused):  # numba not loaded yet
    ...     kernel0 = kernel0.pick(work)
    >>> data, fx = np.empty(4), np.empty(2)
    >>> kernel0(ints, floats, x, data, fx), data
    (True, array([2., 1., 3., 2.]))
    """

    __slots__ = ("floats", "ints", "lazy", "n_code", "n_x", "native", "packed0", "share",
                 "straight", "twin", "work")

    def __init__(self, lazy: LazyKernel | Loaded, twin: Any, n_code: int, ints: np.ndarray,
                 floats: np.ndarray, n_x: int, packed0: bool,
                 native: NativeSlot | None = None) -> None:
        self.lazy: Any = lazy  # (a Loaded one only ever answers with its _compiled)
        #: the tape's generated numba code, shared by ``kernel`` and ``kernel0`` (None: the
        #: tape is too large for it)
        self.native = native
        self.twin = twin
        self.n_code = n_code
        self.ints = ints
        self.floats = floats
        self.n_x = n_x
        self.packed0 = packed0
        #: the generated code's size: slots times (seed directions + 1)
        self.work = terms(ints)
        #: ``[budget units the interpreted and twin calls of this tape have drawn, its
        #: generated code]``, shared by every preparation of the same program in the process
        #: (:func:`shared`; looked up at the first call)
        self.share: list[Any] | None = None
        #: the generated ``(jacobian, values)``; None: not yet; False: not to be
        self.straight: Any = None

    def pick(self, work: int) -> Any:
        """The callable for one call of ``work`` element operations."""
        lazy = self.lazy
        compiled = lazy._compiled
        if compiled is not None:
            native = self.native
            return compiled if native is None else native.pick(self.packed0, compiled)
        if self.straight is None:
            share = self._share()  # (another preparation of this program may have paid)
            if share[1] is not None:
                self.straight = share[1]
            elif share[0] >= _tape_python.price(self.work):
                self._generate()
        if self.straight and use_fallback(self.work):  # about a unit a term, measured
            return self.run
        return self._exact(work)

    @property
    def rent(self) -> int:
        """Budget units the interpreted and twin calls of this program have drawn."""
        return int(self._share()[0])

    @rent.setter
    def rent(self, units: int) -> None:
        self._share()[0] = units

    def _share(self) -> list[Any]:
        share = self.share
        if share is None:
            share = self.share = shared(self.ints, self.floats, self.n_x)
        return share

    def _generate(self) -> None:
        if self.work > MAX_TERMS or not use_fallback(_tape_python.price(self.work)):
            self.straight = False
            return
        got = straight_line(self.ints, self.floats, self.n_x)
        self.straight = False if got is None else got
        if got is not None:
            self._share()[1] = got

    def _exact(self, work: int) -> Any:
        """The twin, the interpreted kernel or the compiled one, as the sizes say."""
        lazy = self.lazy
        if lazy._compiled is not None:
            return lazy._compiled
        units = twin_units(self.n_code, work)
        if work > INTERPRET_BELOW or units < INTERPRET_WEIGHT * work:
            # the twin while the process's fallback budget lasts (a large tape too: a
            # few numpy calls per instruction beat numba's start for a short solve)
            if use_fallback(units):
                self.rent += units
                return lambda *args: lazy.guarded(self.twin, *args)
            return lazy.compiled
        chosen = lazy.pick(work)
        if chosen is not lazy._compiled:
            self.rent += INTERPRET_WEIGHT * work
        return chosen

    def run(self, *args: Any) -> Any:
        """One call of the generated code, with the kernel's arguments.

        Where Python raises (a division by zero, ``**`` overflowing) or a Jacobian
        entry is not finite, the kernel's own code answers this call instead.
        """
        if self.packed0:
            _, _, x, data, fx = args
            pv = y = fy = _NO_POINT
        else:
            _, _, x, pv, y, data, fx, fy = args
        jacobian, values = self.straight
        try:
            if y.size:
                values(y, pv, fy)
            ok = jacobian(x, pv, data, fx)
        except (ArithmeticError, ValueError):
            ok = None
        if ok is None:
            return self._exact(self.work)(*args)
        return ok


class NativeSlot:
    """A tape's generated numba code (:mod:`sparsejac.ad.native`), built once calls paid.

    Each call of the compiled tape kernel draws about what the generated code would save
    (:data:`~sparsejac.ad.native.RENT_PER_TERM` a term); once that reaches the price of
    compiling the code (:func:`sparsejac.ad.native.price`: less where numba's on-disk cache
    holds it from an earlier process), it is built and every later call runs it. The same
    values bit for bit either way; which code runs depends on the number of calls and on the
    disk cache.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.ad import Tape
    >>> from sparsejac.ad.fused import NativeSlot
    >>> from sparsejac.tracing import trace
    >>> f = lambda x: x[1:] * x[:-1]
    >>> x = np.array([1.0, 2.0, 3.0])
    >>> c = sparsejac.color(sparsejac.jacobian_sparsity(f, x), "column")
    >>> slot = NativeSlot(*Tape.build(trace(f, x)).fused_call(c)[2:4], 3)
    >>> slot.kernels is None                        # not built: no call has paid for it
    True
    """

    __slots__ = ("floats", "ints", "kernels", "n_x", "per_call", "price", "priced", "rent")

    def __init__(self, ints: np.ndarray, floats: np.ndarray, n_x: int) -> None:
        self.ints, self.floats, self.n_x = ints, floats, n_x
        #: ``(kernel, kernel0)`` once built; None: not yet; False: cannot be
        self.kernels: Any = None
        self.rent = 0
        self.per_call = max(1, int(native.RENT_PER_TERM * terms(ints)))
        #: budget units of building it: the least it can cost until the rent reaches that,
        #: then (``priced``) what it costs, once numba's cache was looked at
        self.price = -1
        self.priced = False

    def pick(self, packed0: bool, compiled: Any) -> Any:
        """The generated kernel (``kernel0`` for ``packed0``) if built, else ``compiled``."""
        got = self.kernels
        if got is None:
            if self.price < 0:  # the first call: built already for another plan of the tape?
                self.kernels = got = native.built(self.ints, self.floats, self.n_x)
                self.price = native.LOAD_UNITS
            else:
                self.rent += self.per_call
                if self.rent >= self.price:
                    if not self.priced:
                        self.priced = True
                        self.price = native.price(terms(self.ints), native.cached(
                            self.ints, self.floats, self.n_x))
                    if self.rent >= self.price:
                        self.kernels = got = native.build(self.ints, self.floats,
                                                          self.n_x) or False
        if got:
            return got[1] if packed0 else got[0]
        return compiled


class Loaded:
    """A kernel numba has compiled, in the shape of a loaded :class:`LazyKernel`.

    (Binding a module's kernels puts numba's dispatchers in its namespace: a tape fused
    after that finds the dispatcher, not the lazy kernel.)

    Examples
    --------
    >>> from sparsejac.ad.fused import Loaded
    >>> Loaded(len)._compiled is len
    True
    """

    __slots__ = ("_compiled",)

    def __init__(self, dispatcher: Any) -> None:
        self._compiled = dispatcher
