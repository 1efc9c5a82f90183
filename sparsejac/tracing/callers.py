"""Where a traced value was converted: the user's line, or the library function called.

The messages of :class:`~sparsejac.errors.ConcretizationError` and
:class:`~sparsejac.errors.TracedConversionError` name the place the user can change: the
innermost line of their own code, or the installed library function (outside numpy and
sparsejac) whose code called ``np.asarray`` on a traced array.
"""

from __future__ import annotations

import re
import sys
import threading
from typing import Any

from sparsejac.errors import TracedConversionError, UnsupportedPrimitiveError

__all__ = ["explain_failure", "library_caller", "library_message", "user_frame", "user_line"]

_OWN_PACKAGES = ("numpy", "sparsejac")

#: Packages whose code is never the traced function's own (their calls of numpy's creation
#: functions and of intercepted library functions run unchanged).
LIBRARIES = ("numpy", "scipy", "sparsejac", "numba")


def _installed(path: str) -> bool:
    return any(p in path for p in ("site-packages", "dist-packages"))


def _top(frame: Any) -> str:
    return str(frame.f_globals.get("__name__", "")).partition(".")[0]


def user_frame(frame: Any) -> bool:
    """Whether ``frame`` runs the traced function's own code, not a library's.

    Code of numpy, scipy, numba and sparsejac never is. Code of another installed package
    (``site-packages``) is a library's, unless it belongs to the package of the traced
    function itself: the outermost frame of the calls made by the traced function, outside
    sparsejac (a model installed as a package, traced as ``mymodel.rhs``).
    """
    top = _top(frame)
    if top in LIBRARIES:
        return False
    if not _installed(frame.f_code.co_filename):
        return True
    outer = None
    f = frame
    while f is not None and _top(f) != "sparsejac":
        if _top(f) not in LIBRARIES:
            outer = f
        f = f.f_back
    return outer is not None and _top(outer) == top


def library_caller() -> str | None:
    """The library function (outside numpy and sparsejac) whose code converts a traced value.

    Walks the Python stack outwards from the conversion: the last frame of an installed
    package before the user's code is the function the user called (``scipy.special.
    logsumexp`` for an ``np.asarray`` inside it). None when the user's own code converts.
    """
    frame = sys._getframe(2)
    found = None
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        top = module.partition(".")[0]
        if top in _OWN_PACKAGES:
            frame = frame.f_back  # type: ignore[assignment]
            continue
        path = frame.f_code.co_filename
        if not _installed(path) or not top:
            break  # the user's code
        found = _public_name(frame, module)
        frame = frame.f_back  # type: ignore[assignment]
    return found


def numpy_site() -> str | None:
    """``numpy.<function>`` whose own Python code converts a traced value, or None.

    The user called it with plain array arguments (np.piecewise over a plain grid with
    functions of traced values), so numpy did not hand the call to sparsejac.
    """
    frame = sys._getframe(2)
    found = None
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        top = module.partition(".")[0]
        if top not in _OWN_PACKAGES:
            return found if not _installed(frame.f_code.co_filename) else None
        if top == "numpy" and not frame.f_code.co_name.startswith("_"):
            found = f"numpy.{frame.f_code.co_name}"
        frame = frame.f_back  # type: ignore[assignment]
    return None


def array_conversion_message(shape: tuple[int, ...], dtype: Any, pickled: bool = False) -> str:
    """The error for a traced array converted to a plain one (``__array__``; or pickled)."""
    if pickled:
        return (f"a traced array ({shape}, {dtype}) was pickled{user_line()} (pickle.dumps, "
                "a cache or a hand-off to another process inside f): a pickle holds the value "
                "alone, so that would lose its dependence on x. Inside f, copy with np.copy(y) "
                "and keep values in numpy calls; for code that must pickle, pass `sparsity=` "
                "and use mode='fd' (finite differences).")
    site = numpy_site()
    if site is not None:
        return library_message(site)
    where = user_line()
    dot = ("If this is A.dot(y) with a plain ndarray A (numpy does not hand that method's "
           "argument to the tracer), write A @ y or np.dot(A, y). Otherwise: "
           if ".dot(" in where else "")
    return (
        f"a traced array ({shape}, {dtype}) was converted to a plain numpy array{where}. "
        f"{dot}it came through a call the tracer cannot follow, or assignment into a plain "
        "array: made outside f (a global buffer), a copy of one (k.copy(), k * 1.0: "
        "write np.copy(k)), a grid or index array (np.arange, np.linspace: plain), or "
        "`zeros(n)` after `from numpy import zeros` in a module f does not reach; that "
        "would lose its dependence on x. Create output arrays inside f (np.zeros(n), "
        "np.empty(n) there are traceable) or from x: out = np.zeros_like(x), "
        "np.empty_like(x), np.zeros(shape, like=x), np.arange(n, like=x). A list of traced "
        "values becomes an array with np.stack([...]) or np.array([...]) in f"
        + ("." if dot else "; for a plain ndarray A, write A @ y or np.dot(A, y) instead of "
           "A.dot(y).")
    )


def _public_name(frame: Any, module: str) -> str:
    """``package.function`` for a library frame.

    A decorator's ``wrapper`` is named after the function it wraps, a ``scipy.stats`` method
    after its distribution.
    """
    name = frame.f_code.co_name
    space = frame.f_locals
    if name == "__init__" and "self" in space:  # a constructor: the class
        name = type(space["self"]).__name__
    elif name == "__call__" and "self" in space:  # an instance called: its class (a
        name = type(space["self"]).__name__  # RegularGridInterpolator, not `__call__`)
    if name in ("wrapper", "inner", "wrapped", "decorated"):
        for key in ("f", "func", "fun", "function"):
            fn = space.get(key)
            if callable(fn) and isinstance(getattr(fn, "__qualname__", None), str):
                module, name = str(getattr(fn, "__module__", module)), fn.__qualname__
                break
    owner = space.get("self")
    dist = getattr(owner, "name", None)
    if module.startswith("scipy.stats") and not isinstance(dist, str) and owner is not None:
        kind = type(owner).__name__  # multivariate_normal_gen: the instance's public name
        dist = kind[:-4] if kind.endswith("_gen") else None
    if module.startswith("scipy.stats") and isinstance(dist, str):
        name = f"{dist}.{name}"
    public = ".".join(part for part in module.split(".") if not part.startswith("_"))
    return f"{public}.{name}"


def _at(path: str, lineno: int) -> str:
    """`` (at FILE:LINE: `source`)``."""
    import linecache

    line = linecache.getline(path, lineno).strip()
    where = f"{path.rsplit('/', 1)[-1]}:{lineno}"
    return f" (at {where}: `{line}`)" if line else f" (at {where})"


def _is_user(frame: Any) -> bool:
    top = str(frame.f_globals.get("__name__", "")).partition(".")[0]
    return top not in _OWN_PACKAGES and not _installed(frame.f_code.co_filename)


def user_line() -> str:
    """`` (at FILE:LINE: `source`)`` for the innermost frame of the user's code, or ``""``."""
    frame = sys._getframe(2)
    while frame is not None:
        if _is_user(frame):
            return _at(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back  # type: ignore[assignment]
    return ""


def raising_user_line(exc: BaseException) -> str:
    """:func:`user_line` for the innermost user frame of ``exc``'s traceback, or ``""``."""
    tb, found = exc.__traceback__, ""
    while tb is not None:
        if _is_user(tb.tb_frame):
            found = _at(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return found


#: numpy's object-dtype loop of a ufunc whose element has no method of the ufunc's name
_OBJECT_LOOP = re.compile(
    r"loop of ufunc does not support argument (\d+) of type (\w+) which has no callable "
    r"(\w+) method")


def object_loop_error(exc: BaseException) -> TracedConversionError | None:
    """The error to raise when numpy's object loop fails on an array that holds Tracers.

    ``asarray([0.0, y[0]])`` after ``from numpy import asarray`` (numpy's function, bound
    before the trace) builds an object array of a float and a Tracer; ``np.sqrt`` of it calls
    each element's ``sqrt`` method, which a float does not have. None for any other error.
    """
    m = _OBJECT_LOOP.search(str(exc))
    if m is None:
        return None
    arg, kind, method = m.groups()
    held = ("a traced value whose method numpy's object loop needs is not supported"
            if kind == "Tracer" else f"a plain {kind} next to traced values")
    return TracedConversionError(
        f"np.{method} received an object array (argument {arg} holds {held})"
        f"{raising_user_line(exc)}. numpy builds an object array when a list holding traced "
        "values becomes an array through a call the tracer cannot see: `asarray([...])` or "
        "`array([...])` after `from numpy import asarray, array`, which binds numpy's function "
        "before the trace. Write np.asarray(...) or np.array(...) in f (the tracer follows "
        "them), or build the array with np.concatenate / np.stack.")


#: sparsejac's dispatch machinery: the frames between a numpy call on a Tracer and its
#: caller (the tracer's operators, the dispatch and the elementwise handlers)
#: modules whose numpy calls stand for the user's own (np.isclose(k, 0, atol=0) is k == 0,
#: a complex z == 0 compares its parts)
_MACHINERY = ("sparsejac.tracing", "sparsejac.primitives.core", "sparsejac.primitives.elementwise",
              "sparsejac.primitives.creation", "sparsejac.primitives.complex_pairs")


def called_by_a_rule() -> bool:
    """Whether the numpy call being traced was made by one of sparsejac's own rules.

    A composite rule (``scipy.special.xlogy`` as ``np.where(x == 0, ...)``) computes with
    numpy on Tracers as the user's code does; the first frame outside numpy and the
    dispatch machinery tells which one called.
    """
    frame = sys._getframe(2)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.partition(".")[0] != "numpy" and not module.startswith(_MACHINERY):
            return module == "sparsejac" or module.startswith("sparsejac.")
        frame = frame.f_back  # type: ignore[assignment]
    return False


#: the first library refusal of the trace running in this thread (see :func:`take_refusal`)
_REFUSED = threading.local()


def take_refusal() -> str | None:
    """The first library refusal since the last call, in this thread (and forget it).

    Compiled code that calls back into Python (MINPACK's ``fsolve``: x reaches it through
    the function it solves) may swallow sparsejac's error and raise its own; the trace then
    raises this message instead.
    """
    message = getattr(_REFUSED, "message", None)
    _REFUSED.message = None
    return message


def library_message(site: str) -> str:
    """The error message for a library function that converted a traced array."""
    message = _library_message(site)
    if getattr(_REFUSED, "message", None) is None:
        _REFUSED.message = message
    return message


def _library_message(site: str) -> str:
    if site.startswith("numpy."):
        return (
            f"{site} converted a value computed from x to a plain numpy array in numpy's own "
            f"code{user_line()}: its array arguments were plain, so numpy ran its own code "
            "instead of handing the call to sparsejac, and stored the traced values (from "
            "functions, lists or arrays it was given) into a plain array it made. Pass the "
            "array argument traced: pass np.stack([a, b]) instead of a list [a, b] of traced "
            "values, np.asarray(t, like=x) for a constant; or write the step with np.where, "
            "np.concatenate and the other functions of docs/supported.md."
        )
    return (
        f"{site} received a traced array and converted it to a plain numpy array "
        "(np.asarray), which would lose its dependence on x: it is not a numpy function the "
        f"tracer can follow, and sparsejac has no rule for {site}. Write the computation "
        "with the numpy functions of docs/supported.md, or pass `sparsity=` and use "
        "mode='fd' (finite differences) for this f."
    )


def explain_failure(exc: BaseException) -> BaseException:
    """What to raise for a foreign exception that ``f`` raised while it was traced.

    * the error numpy or a library raised after a conversion sparsejac refused
      (``np.fromiter`` over a traced array: "setting an array element with a sequence"):
      sparsejac's own error, with the other as a note;
    * an error raised inside another library's Python code (``scipy.sparse.diags(y)``
      reading a traced array as a list of diagonals): ``exc`` with a note naming the
      function the traced code called, which sparsejac has no rule for.

    Anything else is returned unchanged.
    """
    own = type(exc).__module__.partition(".")[0] == "sparsejac"
    inner = None if own else (exc.__cause__ or exc.__context__)
    while inner is not None:
        if type(inner).__module__.partition(".")[0] == "sparsejac":
            inner.add_note(f"(it then surfaced as {type(exc).__name__}: {exc})")
            return inner
        inner = inner.__cause__ or inner.__context__
    tb, site, seen_user = exc.__traceback__, None, False
    while tb is not None:
        frame = tb.tb_frame
        top = _top(frame)
        if top not in _OWN_PACKAGES and _installed(frame.f_code.co_filename):
            if seen_user and site is None:
                site = _public_name(frame, str(frame.f_globals.get("__name__", "")))
        elif top not in _OWN_PACKAGES:
            seen_user, site = True, None  # the traced code again: a later call failed
        tb = tb.tb_next
    if site is not None and own:
        if isinstance(exc, UnsupportedPrimitiveError):  # a call made inside the library's code
            exc.add_note(f"sparsejac: the call was made inside {site}, which f called.")
    elif site is not None:
        exc.add_note(
            f"sparsejac: this was raised inside {site} while f was traced. sparsejac has no "
            f"rule for {site} (docs/supported.md lists the calls it follows), and its code "
            "does not work on a traced array. Write this step with the supported numpy "
            "functions, or pass `sparsity=` and use mode='fd' (finite differences) for this "
            "f.")
    return exc
