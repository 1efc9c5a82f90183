"""Exceptions raised by sparsejac's tracing, detection and differentiation.

Each message names the numpy call (or the Python operation) that failed and says how to fix
it, so a user never has to read sparsejac's source to get going again.
"""

from __future__ import annotations

__all__ = [
    "SUPPORTED_FUNCTIONS_DOC",
    "ConcretizationError",
    "KernelCompilationWarning",
    "PreparedAgainWarning",
    "TracedConversionError",
    "UnsupportedPrimitiveError",
    "with_hint",
]

#: Where the list of supported numpy functions lives (generated from the registry).
SUPPORTED_FUNCTIONS_DOC = "docs/supported.md"


class UnsupportedPrimitiveError(NotImplementedError):
    """A numpy function (or a form of a call) that sparsejac has no rule for.

    sparsejac never guesses a rule: an unknown function stops the trace. The message names
    the function and points at the list of supported functions.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> sparsejac.jacobian_sparsity(lambda x: np.nonzero(x), np.ones(3))
    Traceback (most recent call last):
        ...
    sparsejac.errors.UnsupportedPrimitiveError: numpy.nonzero is not supported by sparsejac's...
    """

    def __init__(self, name: str, detail: str = "", *,
                 problem: str = "is not supported by sparsejac's tracer") -> None:
        self.function = name
        msg = f"{name} {problem}"
        if detail:
            msg += f" ({detail})"
        msg += (
            f". The supported numpy functions are listed in {SUPPORTED_FUNCTIONS_DOC}; "
            "rewrite the call with supported ones, or pass `sparsity=` and use mode='fd' "
            "for a black-box function (to add a rule: docs/adding_a_primitive.md)."
        )
        super().__init__(msg)


class ConcretizationError(TypeError):
    """A traced value was needed as a plain Python value in global (value-free) mode.

    A global sparsity pattern must hold for every ``x``, so it cannot depend on a branch
    taken by ``if traced > 0:``. The message says which operation asked for the value.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def f(x):
    ...     return x if x[0] > 0 else -x
    >>> sparsejac.jacobian_sparsity(f, np.ones(2))
    Traceback (most recent call last):
        ...
    sparsejac.errors.ConcretizationError: bool() of a traced array (at ...): ...
    >>> sparsejac.jacobian_sparsity(f, np.ones(2), local=True).toarray()
    array([[ True, False],
           [False,  True]])
    """


class TracedConversionError(TypeError):
    """A traced array was converted to a plain numpy array or Python number.

    That conversion would lose the dependence on ``x``, so it is refused in every mode. It
    happens with ``float(y)``, ``np.asarray(y)``, ``y.tolist()``, and when a traced value is
    assigned into an array made by ``np.zeros(shape)`` (numpy gives such arrays no hook).

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> sparsejac.jacobian_sparsity(lambda x: float(x[0]) * x, np.ones(2))
    Traceback (most recent call last):
        ...
    sparsejac.errors.TracedConversionError: float() of a traced array that depends on x ...
    >>> sparsejac.jacobian_sparsity(lambda x: x[0] * x, np.ones(2)).toarray()  # stay in numpy
    array([[ True, False],
           [ True,  True]])
    """


class TraceMismatchError(RuntimeError):
    """``f`` computed other values when traced than when called with a numpy array.

    sparsejac differentiates what ``f`` does with its traced input. Code that branches on
    the input's type (``isinstance(y, np.ndarray)``, ``np.isscalar(y[0])``) takes another
    path under the tracer, and state that changes between calls (unseeded random numbers)
    gives other values: either way the recorded program is not ``f``, and its Jacobian would
    be wrong. Tracing compares the traced value with one real call of ``f`` at the same
    point, to rounding, and raises this error when they differ.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def f(y):
    ...     return y ** 2 if isinstance(y, np.ndarray) else 0.0 * y
    >>> sparsejac.jacobian(f, np.ones(2))
    Traceback (most recent call last):
        ...
    sparsejac.errors.TraceMismatchError: `f` computes other values when traced than when called ...
    """


def with_hint(exc: Exception, hint: str) -> Exception:
    """A copy of ``exc`` (same type and attributes) whose message ends with ``hint``.

    Examples
    --------
    >>> from sparsejac.errors import UnsupportedPrimitiveError, with_hint
    >>> e = with_hint(UnsupportedPrimitiveError("numpy.sort"), " Pass `sparsity=`.")
    >>> type(e).__name__, e.function, str(e).endswith("Pass `sparsity=`.")
    ('UnsupportedPrimitiveError', 'numpy.sort', True)
    """
    new = type(exc).__new__(type(exc))
    new.__dict__.update(exc.__dict__)
    Exception.__init__(new, str(exc) + hint)
    return new


class KernelCompilationWarning(UserWarning):
    """sparsejac is compiling its numba kernels for this machine (once, after installing).

    Issued at most once per process, when a kernel about to be used has no up-to-date copy
    in numba's on-disk cache: that first use takes seconds longer, later processes load the
    kernels in a fraction of a second. ``sparsejac warm-up`` (or
    :func:`sparsejac.warm_up`) compiles the kernels of the common paths ahead of time.
    Silence it with ``warnings.filterwarnings("ignore", category=KernelCompilationWarning)``.

    Examples
    --------
    >>> from sparsejac import KernelCompilationWarning
    >>> issubclass(KernelCompilationWarning, UserWarning)
    True
    """


class PreparedAgainWarning(UserWarning):
    """A prepared Jacobian keeps preparing again at calls: what ``f`` reads keeps changing.

    Issued once per prepared object, when calls have made it prepare again
    :data:`sparsejac.verifying.PREPARED_AGAIN_WARN` times: new argument objects at every call
    (arguments are compared by identity), or a value ``f`` reads (an argument array updated
    in place, a global) changed between calls. Each such call costs a preparation. Values
    that change at every call, such as a time loop's previous state or a sweep's parameter,
    belong in ``params=`` (traced: the recording replays with their new values) or in ``x``.

    Examples
    --------
    >>> from sparsejac import PreparedAgainWarning
    >>> issubclass(PreparedAgainWarning, UserWarning)
    True
    """
