"""A small tape's Jacobian as numba code generated from it, cached on disk: :func:`build`.

The compiled tape kernel (:func:`~sparsejac.ad._tape.jacobian_packed`) interprets the tape:
at every call it walks the instructions, tests each tangent for zero and loops over the seed
directions, about 1.6 µs for HIRES (8 unknowns) where ``f`` itself takes 2 µs. For a tape
that keeps being called, the statements :mod:`sparsejac.ad._tape_python` writes (one per
value, one term per nonzero tangent or cotangent, constants folded) are compiled by numba
instead: 0.3 µs for HIRES, the dispatch included. They are the kernel's arithmetic
operation for operation and in the same order, with the kernel's own scalar functions and
IEEE division (``error_model="numpy"``), so the values, the Jacobian and the verdict (False
where a value or an entry is not finite: the caller then takes its general path) are the
kernel's bit for bit.

The generated module is written once into the cache directory (:func:`cache_dir`) under a
hash of its source, the library's kernel sources and numba's version, and compiled with
``cache=True``: another process running the same program loads it (milliseconds) instead
of compiling it (0.2 to 1 s). Where no directory is writable it is compiled in memory.
:class:`~sparsejac.ad.fused.Fused` builds it once the calls' savings have paid for it
(rent, then buy: :func:`price`), so a process asking for a few Jacobians never does.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from sparsejac.ad import _tape as k
from sparsejac.ad._tape import _binary, _dbinary, _dunary, _unary
from sparsejac.ad._tape_python import Parts, parts, terms
from sparsejac.kernels import ForkSafeLock, typed_kernel

__all__ = ["MAX_TERMS", "build", "built", "cache_dir", "cached", "compile_scalars", "namespace",
           "price", "scalars_missing", "source", "tape_key"]

#: the largest tape (slots times seed directions plus one) compiled this way: numba's
#: compilation grows with the function's length (about 2.5 s at this size)
MAX_TERMS = 5_000
#: budget units (about 10 ns) of compiling the module: a base and a cost per term, measured
#: (0.49 s for HIRES' 600 terms, 1.1 s for POLLU's 2,310, 3.4 s for 4,780 terms calling the
#: kernel's scalar functions)
BASE_UNITS, UNITS_PER_TERM = 30_000_000, 60_000
#: budget units of loading it from numba's on-disk cache instead (20 ms at most, measured)
LOAD_UNITS = 2_000_000
#: budget units of compiling the kernel's scalar functions for it, once per installation
#: (about 10 s; ``sparsejac warm-up`` does it ahead)
SCALAR_UNITS = 1_000_000_000
#: budget units a call of the interpreting kernel draws per term: about what the generated
#: code saves (1.2 µs of 1.6 for HIRES' 600 terms, 1.9 of 2.4 for POLLU's 2,310)
RENT_PER_TERM = 0.125
#: the most terms of one sum in one statement
_CHUNK = 64

_LOCK = ForkSafeLock()
#: the kernels built in this process, by a hash of their tape
_BUILT: dict[str, tuple[Any, Any]] = {}
#: the module sources generated in this process, by the same hash (None: none can be)
_TEXTS: dict[str, str | None] = {}


@typed_kernel()
def tie(a: float) -> float:  # pragma: no cover - compiled
    """``np.sign`` of a tie-checked element: NaN at a tie, so that the call declines."""
    if a == 0.0:
        return math.nan
    return 1.0 if a > 0.0 else -1.0 if a < 0.0 else a


# The kernel's scalar functions, each compiled once as a function of its own (the kernel's
# are inlined into every call site, which for a few hundred call sites takes minutes).

@typed_kernel()
def unary(op: int, a: float) -> float:  # pragma: no cover - compiled
    """The kernel's ``_unary``."""
    return _unary(op, a)


@typed_kernel()
def binary(op: int, a: float, b: float) -> float:  # pragma: no cover - compiled
    """The kernel's ``_binary``."""
    return _binary(op, a, b)


@typed_kernel()
def dunary(op: int, a: float, out: float) -> float:  # pragma: no cover - compiled
    """The kernel's ``_dunary``."""
    return _dunary(op, a, out)


@typed_kernel()
def dbinary(op: int, a: float, b: float, out: float) -> tuple[float, float]:  # pragma: no cover
    """The kernel's ``_dbinary``."""
    return _dbinary(op, a, b, out)


def namespace() -> dict[str, Any]:
    """The names the generated code calls: math's functions and the kernel's own."""
    def compiled(fn: Any) -> Any:
        return getattr(fn, "compiled", fn)

    return {"exp": math.exp, "sin": math.sin, "cos": math.cos, "sqrt": math.sqrt,
            "isfinite": math.isfinite, "inf": math.inf, "nan": math.nan,
            "EXP_MAX": k.EXP_MAX, "U": compiled(unary), "B": compiled(binary),
            "DU": compiled(dunary), "DB": compiled(dbinary), "TIE": compiled(tie)}


def _chunks(names: list[str]) -> list[list[str]]:
    return [names[i:i + _CHUNK] for i in range(0, len(names), _CHUNK)]


def _finite_check(names: list[str]) -> list[str]:
    """Return False unless every name is finite.

    ``a - a`` is 0 for a finite ``a`` and NaN otherwise: their sum is 0 exactly when every
    one is finite (it cannot overflow), one test and no branch per name.
    """
    if not names:
        return []
    lines = [f"s{i} = {' + '.join(f'({n} - {n})' for n in c)}"
             for i, c in enumerate(_chunks(names))]
    sums = " + ".join(f"s{i}" for i in range(len(lines)))
    return [*lines, f"if {sums} != 0.0:", "    return False"]


#: a float literal of the generated statements (``_lit``: negative ones in parentheses)
_LITERAL = re.compile(r"\(-(?:\d+\.\d*(?:e[+-]?\d+)?|\d+e[+-]?\d+)\)"
                      r"|(?<![\w.\[])(?:\d+\.\d*(?:e[+-]?\d+)?|\d+e[+-]?\d+)")


def _from_floats(lines: list[str], floats: np.ndarray) -> list[str]:
    """The statements with each constant read from the tape's ``floats`` where it is one.

    Read at run time, as the interpreting kernel reads it, a constant cannot be folded into
    the code by LLVM: ``pow(y, 2.0)`` would become ``y * y``, ``pow(y, 0.5)`` ``sqrt(y)``,
    which differ from the C library's ``pow`` in the last bit now and then.
    """
    index: dict[str, int] = {}
    for i, v in enumerate(floats.tolist()):
        index.setdefault(float(v).hex(), i)

    def load(m: re.Match[str]) -> str:
        at = index.get(float(m.group(0).strip("()")).hex())
        return m.group(0) if at is None else f"K[{at}]"

    return [_LITERAL.sub(load, line) for line in lines]


def source(got: Parts, floats: np.ndarray) -> str:
    """The module's source: ``kernel`` and ``kernel0`` with the tape kernel's arguments.

    ``floats``: the packed tape's constants (the kernels read theirs from it at run time).

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.ad import Tape
    >>> from sparsejac.ad._tape_python import parts
    >>> from sparsejac.ad.native import source
    >>> from sparsejac.tracing import trace
    >>> f = lambda x: x[1:] * x[:-1]
    >>> x = np.array([1.0, 2.0, 3.0])
    >>> c = sparsejac.color(sparsejac.jacobian_sparsity(f, x), "column")
    >>> ints, floats = Tape.build(trace(f, x)).fused_call(c)[2:4]
    >>> text = source(parts(ints, floats, 3), floats)
    >>> "def kernel0(ints, floats, x, data, fx):" in text
    True
    """
    head = [f"{n} = x[{i}]" for i, n in enumerate(got.x_names)]
    head += ["pl = pv"] if got.reads_pv else []
    values = _from_floats(got.values, floats)
    outs = _from_floats(got.outs, floats)
    jac = [*head, *values, *_finite_check(got.runtime), *_from_floats(got.derivatives, floats)]
    jac += [f"fx[{i}] = {v}" for i, v in enumerate(outs)]
    jac += [f"data[{i}] = {v}" for i, v in enumerate(_from_floats(got.entries, floats))]
    jac += ["acc = 0.0", "for i in range(data.size):", "    acc += data[i]",
            "if not isfinite(acc):", "    for i in range(data.size):",
            "        if not isfinite(data[i]):", "            return False",
            "return True"]
    val = [*head, *values, *(f"fy[{i}] = {v}" for i, v in enumerate(outs)), "return"]
    jit = "@numba.njit(cache=CACHE, error_model='numpy', nogil=True)"

    def body(lines: list[str]) -> str:
        return "".join(f"    {line}\n".replace("\n", "\n    ").rstrip(" ") for line in lines)

    return (
        '"""A tape\'s Jacobian, generated by sparsejac.ad.native (do not edit)."""\n'
        "import numba\n\nfrom sparsejac.ad.native import namespace\n\n"
        "globals().update(namespace())\nCACHE = True\n\n\n"
        f"{jit}\ndef _jac(x, pv, data, fx, K):\n{body(jac)}\n\n"
        f"{jit}\ndef _val(x, pv, fy, K):\n{body(val)}\n\n"
        "@numba.njit(cache=CACHE, nogil=True)\n"
        "def kernel(ints, floats, x, pv, y, data, fx, fy):\n"
        "    if y.size:\n        _val(y, pv, fy, floats)\n"
        "    return _jac(x, pv, data, fx, floats)\n\n\n"
        "@numba.njit(cache=CACHE, nogil=True)\n"
        "def kernel0(ints, floats, x, data, fx):\n    return _jac(x, fx[:0], data, fx, floats)\n")


def cache_dir() -> Path | None:
    """Where generated modules are kept, or None where it cannot be created or written.

    ``$SPARSEJAC_CACHE_DIR/native``, by default in the user's cache directory
    (``$XDG_CACHE_HOME`` or ``~/.cache``, then ``sparsejac``).

    Examples
    --------
    >>> from sparsejac.ad.native import cache_dir
    >>> path = cache_dir()
    >>> path is None or path.name == "native"
    True
    """
    root = os.environ.get("SPARSEJAC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "sparsejac")
    path = Path(root) / "native"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


@functools.cache
def _stamp() -> str:
    """What a generated module's compiled code depends on besides its source (read once)."""
    import numba

    here = Path(__file__).resolve().parent
    texts = [(here / name).read_bytes() for name in ("_tape.py", "native.py")]
    return hashlib.sha256(b"\0".join([*texts, numba.__version__.encode()])).hexdigest()


def _module_path(text: str) -> tuple[str, Path | None]:
    digest = hashlib.sha256((text + _stamp()).encode()).hexdigest()[:24]
    folder = cache_dir()
    return f"sparsejac_native_{digest}", None if folder is None else folder / f"{digest}.py"


def cached(ints: np.ndarray, floats: np.ndarray, n_x: int) -> bool:
    """Whether an earlier process built this tape's module (a load, not a build, now).

    A marker file next to the module says so (numba's own cache may be elsewhere:
    ``NUMBA_CACHE_DIR``).
    """
    text = _text(ints, floats, n_x)
    if text is None:
        return False
    _, path = _module_path(text)
    return path is not None and path.exists() and path.with_suffix(".built").exists()


def _text(ints: np.ndarray, floats: np.ndarray, n_x: int) -> str | None:
    """The tape's module source (generated once: :func:`cached` prices, :func:`build` builds)."""
    key = tape_key(ints, floats, n_x)
    if key not in _TEXTS:
        got = parts(ints, floats, n_x) if terms(ints) <= MAX_TERMS else None
        if len(_TEXTS) >= 64:
            _TEXTS.clear()
        _TEXTS[key] = None if got is None else source(got, floats)
    return _TEXTS[key]


def price(n_terms: int, in_cache: bool) -> int:
    """Budget units of building (or loading) the module of a tape of ``n_terms`` terms.

    More where numba's cache lacks the kernel's scalar functions (:data:`SCALAR_UNITS`).

    Examples
    --------
    >>> from sparsejac.ad.native import SCALAR_UNITS, price, scalars_missing
    >>> price(600, False) - scalars_missing() * SCALAR_UNITS
    66000000
    """
    units = LOAD_UNITS if in_cache else BASE_UNITS + UNITS_PER_TERM * n_terms
    return units + SCALAR_UNITS * scalars_missing()


def compile_scalars() -> None:
    """Compile (or load from numba's cache) the scalar functions the generated code calls."""
    unary(k.NEG, 1.0)
    binary(k.ADD, 1.0, 2.0)
    dunary(k.NEG, 1.0, -1.0)
    dbinary(k.ADD, 1.0, 2.0, 3.0)
    tie(1.0)


def scalars_missing() -> bool:
    """Whether numba's on-disk cache lacks the compiled scalar functions the modules call."""
    from sparsejac.kernels import cache_missing

    return any(cache_missing(getattr(fn, "compiled", fn))
               for fn in (unary, binary, dunary, dbinary, tie))


def tape_key(ints: np.ndarray, floats: np.ndarray, n_x: int) -> str:
    """A hash of a packed tape (what the kernels it is compiled into depend on).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.ad.native import tape_key
    >>> tape_key(np.arange(3), np.ones(2), 3) == tape_key(np.arange(3), np.ones(2), 3)
    True
    """
    return hashlib.sha256(b"\0".join([ints.tobytes(), floats.tobytes(), str(n_x).encode()])
                          ).hexdigest()


def built(ints: np.ndarray, floats: np.ndarray, n_x: int) -> tuple[Any, Any] | None:
    """The tape's kernels if this process built them already (for another plan), else None."""
    return _BUILT.get(tape_key(ints, floats, n_x))


def build(ints: np.ndarray, floats: np.ndarray, n_x: int) -> tuple[Any, Any] | None:
    """``(kernel, kernel0)`` compiled from the tape, or None where it cannot be generated.

    Their arguments and results are :func:`~sparsejac.ad._tape.jacobian_packed`'s and
    ``jacobian_packed0``'s. Needs numba (call it once numba is loaded).
    """
    key = tape_key(ints, floats, n_x)
    with _LOCK:
        hit = _BUILT.get(key)
        if hit is not None:
            return hit
        text = _text(ints, floats, n_x)
        if text is None:
            return None
        compile_scalars()  # (all of them: what the next tapes call is cached too)
        name, path = _module_path(text)
        try:
            pair = _loaded(name, path, text, ints, floats, n_x)
        except Exception:  # a damaged module or numba cache file: written and compiled again
            _remove(path)
            try:
                pair = _loaded(name, path, text, ints, floats, n_x)
            except Exception:  # still: compiled in memory
                pair = _loaded(name, None, text, ints, floats, n_x)
        if len(_BUILT) >= 64:
            _BUILT.clear()
        _BUILT[key] = pair
        return pair


def _loaded(name: str, path: Path | None, text: str, ints: np.ndarray, floats: np.ndarray,
            n_x: int) -> tuple[Any, Any]:
    """The module's two kernels, each called once on the tape (compiled or loaded now)."""
    module = _load(name, path, text)
    h = 6
    pslots = ints[ints[h + 14]:ints[h + 14] + ints[h + 15]]
    m, nnz = int(ints[2]), int(ints[h + 13])
    x = np.zeros(n_x)
    with np.errstate(all="ignore"):
        module.kernel(ints, floats, x, np.zeros(int(pslots[1::2].sum())), x.copy(),
                      np.empty(nnz), np.empty(m), np.empty(m))
        module.kernel0(ints, floats, x, np.empty(nnz), np.empty(m))
    if path is not None:
        with contextlib.suppress(OSError):
            path.with_suffix(".built").touch()
    return module.kernel, module.kernel0


def _remove(path: Path | None) -> None:
    """Delete a generated module, its marker and numba's cache files of it."""
    if path is None:
        return
    for stale in (path, path.with_suffix(".built"),
                  *(path.parent / "__pycache__").glob(f"{path.stem}.*")):
        with contextlib.suppress(OSError):
            stale.unlink()


def _load(name: str, path: Path | None, text: str) -> Any:
    """The generated module, from its file (written once, atomically) or in memory."""
    if path is not None:
        try:
            if not path.exists():
                fd, tmp = tempfile.mkstemp(suffix=".py", dir=path.parent)
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    out.write(text)
                os.replace(tmp, path)
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
                return module
        except OSError:
            pass
    module = type(sys)(name)
    space = module.__dict__
    exec(compile(text.replace("CACHE = True", "CACHE = False"), f"<{name}>", "exec"),
         space)  # the code generated here
    return module
