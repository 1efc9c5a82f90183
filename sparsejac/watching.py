"""What ``f`` reads besides ``x``, watched: globals, closures, bound arguments, attributes.

A prepared Jacobian replays the program recorded at preparation, with every value ``f`` read
from elsewhere folded in as a constant. :func:`watch` lists those values as they were
(numbers and small arrays and containers by value, anything else by identity), following the
user's functions ``f`` calls, their registries and callable objects, and the attributes of
the user's object whose method ``f`` is; :func:`changed` tells whether any changed since, and
:func:`settle` stops watching what ``f``'s own call changed (a call counter). The check behind
``verify=True`` (:mod:`sparsejac.verifying`) prepares again when something changed.
"""

from __future__ import annotations

import contextlib
import dis
import functools
import inspect
import os
import site
import sys
import sysconfig
import types
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["WATCH_COPY_MAX", "bind_arguments", "changed", "settle", "watch", "what_changed"]


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


#: Arrays of at most this many elements that ``f`` reads (globals, closure variables,
#: ``args``/``kwargs``) are copied by :func:`watch`, so that :func:`changed` notices a change
#: made in place too (a threshold ``t[0] = 2.0``); larger ones only when rebound (a global
#: table of 10^5 elements compared twice per call cost 1.5 ms).
WATCH_COPY_MAX = 4096

#: Containers (tuples, lists, dicts) of at most this many items are watched item by item,
#: nested ones to :data:`_WATCH_NESTING` levels and :data:`_WATCH_NESTED_MAX` items in all per
#: watched value (a configuration dictionary of dictionaries).
_WATCH_ITEMS_MAX = 64
_WATCH_NESTING = 4
_WATCH_NESTED_MAX = 512

#: Calls deep that :func:`watch` follows the user's functions, and at most how many in all.
_WATCH_DEPTH = 8
_WATCH_FUNCTIONS_MAX = 64

_SCALARS = (int, float, complex, str, bytes, bool, np.generic, type(None))


class _Snap:
    """A watched value as it was (``then``), and a copy of it where it can change in place."""

    __slots__ = ("active", "data", "kind", "then")

    def __init__(self, kind: str, then: Any, data: Any = None) -> None:
        self.kind, self.then, self.data = kind, then, data
        #: False once ``f``'s own call changed it (a call counter): no change of ``f``
        self.active = True


def _snapshot(v: Any, depth: int = 0, budget: list[int] | None = None) -> _Snap:
    """What :func:`changed` compares a name's value with later.

    Scalars by value, small arrays and containers item by item (a copy: changes in place
    count; nested containers to :data:`_WATCH_NESTING` levels, :data:`_WATCH_NESTED_MAX`
    items in all), anything else by identity.
    """
    if isinstance(v, _SCALARS):
        return _Snap("scalar", v)
    if isinstance(v, np.ndarray) and not v.dtype.hasobject:
        return _Snap("array", v, v.copy() if v.size <= WATCH_COPY_MAX else None)
    budget = [_WATCH_NESTED_MAX] if budget is None else budget
    if (depth < _WATCH_NESTING and isinstance(v, (tuple, list, dict))
            and len(v) <= min(_WATCH_ITEMS_MAX, budget[0])):
        budget[0] -= len(v)
        items = list(dict.items(v)) if isinstance(v, dict) else enumerate(_items(v))
        return _Snap("items", v, [(k, _snapshot(item, depth + 1, budget)) for k, item in items])
    return _Snap("identity", v)


def _same_as(now: Any, snap: _Snap) -> bool:
    """Whether ``now`` (a name's current value) is what :func:`_snapshot` saw."""
    kind, then = snap.kind, snap.then
    if now is then and kind in ("identity", "scalar"):
        return True
    if kind == "identity":
        return False
    if kind == "scalar":
        if type(now) is not type(then):
            return False
        try:
            return bool(now == then) or bool(now != now and then != then)  # (NaN: the same)
        except (TypeError, ValueError):
            return False
    if kind == "array":
        ref = then if snap.data is None else snap.data
        if now is then and snap.data is None:  # large: only a rebinding is noticed
            return True
        if not (isinstance(now, np.ndarray) and now.shape == ref.shape
                and now.dtype == ref.dtype):
            return False
        if now.size <= 4096 and now.flags.c_contiguous:
            return bool(now.tobytes() == ref.tobytes())
        return bool(np.array_equal(now, ref, equal_nan=ref.dtype.kind in "fc"))
    if type(now) is not type(then) or len(now) != len(snap.data):
        return False
    for k, sub in snap.data:
        try:
            item = _item(now, k)
        except (KeyError, IndexError):
            return False
        if sub.active and not _same_as(item, sub):  # (inactive: what f changes itself)
            return False
    return True


def _item(v: Any, k: Any) -> Any:
    """``v[k]`` by the base type's own access (:func:`_items`)."""
    if isinstance(v, dict):
        return dict.__getitem__(v, k)
    return (list.__getitem__ if isinstance(v, list) else tuple.__getitem__)(v, k)


def _settle_snap(now: Any, snap: _Snap) -> None:
    """Stop watching what of ``snap`` differs from ``now``: only the items that changed."""
    if (snap.kind != "items" or type(now) is not type(snap.then)
            or len(now) != len(snap.data)):
        snap.active = _same_as(now, snap)
        return
    for k, sub in snap.data:
        if not sub.active:
            continue
        try:
            item = _item(now, k)
        except (KeyError, IndexError):
            snap.active = False
            return
        _settle_snap(item, sub)


def watch(call: Callable[..., Any]) -> tuple[tuple[Any, Any, Any, Any], ...]:
    """The values ``call``'s code reads from globals, closures and bound arguments, now.

    ``f``'s own code, its nested functions and lambdas, the user's functions it calls (by
    name, through registries and callable objects, methods through ``self``; up to
    :data:`_WATCH_DEPTH` calls deep), the ``args``/``kwargs`` bound to it, and the
    attributes those codes read of the user's objects and classes they reach (not those they
    assign: state the code keeps itself): ``(namespace, cell, bound arguments or object;
    name; value; snapshot)``. Numbers, strings and arrays are watched by value (small
    arrays, tuples, lists and dicts item by item, so a change in place counts too:
    :data:`WATCH_COPY_MAX`), functions and other objects by identity.
    :func:`changed` tells whether any changed since: a threshold ``thresh = 0.5`` set between
    calls shows there even when ``f``'s value at the check point does not change.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.verifying import changed, watch
    >>> k = np.array([2.0])
    >>> w = watch(lambda x: k[0] * x)
    >>> changed(w)
    False
    >>> k[0] = 3.0
    >>> changed(w)
    True
    """
    out: list[tuple[Any, Any, Any, Any]] = []
    seen: set[Any] = set()  # functions, containers and (object, attribute) pairs followed
    functions = [0]  # how many functions were read

    def add(space: Any, name: Any, v: Any, reads: frozenset[str], depth: int) -> None:
        out.append((space, name, v, _snapshot(v)))
        follow(v, reads, depth)

    def follow(v: Any, reads: frozenset[str], depth: int, level: int = 0) -> None:
        """What ``v`` holds that the code reads: functions (a registry), objects' attributes."""
        if isinstance(v, (tuple, list, dict)):
            if level >= _WATCH_NESTING or len(v) > _WATCH_ITEMS_MAX or id(v) in seen:
                return
            seen.add(id(v))  # (a container that holds itself)
            for item in _items(v):
                follow(item, reads, depth, level + 1)
        elif isinstance(v, types.ModuleType):
            return
        elif _users(v):
            visit(v, depth + 1)
        elif level < _WATCH_NESTING and _user_code(v if isinstance(v, type) else type(v)):
            members(v, reads, depth, level + 1)

    def members(obj: Any, reads: frozenset[str], depth: int, level: int = 0) -> None:
        """What the code reads of the user's object or class, watched or followed.

        Its attributes (``self.k``, ``self.params.k``, ``Model.K``) are watched; the methods
        it calls (``self._rate()``) and the getters of its properties are followed.
        """
        for name in sorted(reads):
            if (id(obj), name) in seen:
                continue
            seen.add((id(obj), name))
            raw = _static(obj, name)
            if raw is _MISSING:
                continue
            if isinstance(raw, (staticmethod, classmethod)):
                fn = raw.__func__
                visit(types.MethodType(fn, obj if isinstance(obj, type) else type(obj))
                      if isinstance(raw, classmethod) else fn, depth + 1)
            elif isinstance(raw, property):  # computed from what its getter reads
                if raw.fget is not None and not isinstance(obj, type):
                    visit(types.MethodType(raw.fget, obj), depth + 1)
            elif isinstance(raw, types.FunctionType):  # a method it calls: self._rate()
                visit(raw if isinstance(obj, type) else types.MethodType(raw, obj), depth + 1)
            elif _is_descriptor(raw):  # another computed attribute: not read here
                continue
            else:
                value = _current(obj, ("attr", name))
                if value is not _MISSING:
                    out.append((obj, ("attr", name), value, _snapshot(value)))
                    follow(value, reads, depth, level)

    def visit(fn: Any, depth: int) -> None:
        bound: list[Any] = []  # objects whose attributes the function's code may read
        for _ in range(_WATCH_DEPTH):  # (wrappers of wrappers; an object answering any name)
            if isinstance(fn, (_Bound, functools.partial)):  # bound args and kwargs
                kw = fn.kwargs if isinstance(fn, _Bound) else fn.keywords
                for i, a in enumerate(fn.args):
                    out.append((fn, ("args", i), a, _snapshot(a)))
                    bound.append(a)
                for k, a in kw.items():
                    out.append((fn, ("kwargs", k), a, _snapshot(a)))
                    bound.append(a)
                fn = fn.f if isinstance(fn, _Bound) else fn.func
            elif isinstance(fn, types.MethodType):
                bound.append(fn.__self__)  # (self.k in a method of the user's class)
                fn = fn.__func__
            elif not isinstance(fn, types.FunctionType) and _static(fn, "__wrapped__") \
                    is not _MISSING:
                fn = _current(fn, ("attr", "__wrapped__"))  # an adapter's wrapper
            elif _users(fn) and not isinstance(fn, types.FunctionType):
                bound.append(fn)  # a callable object of the user's class: self in __call__
                fn = type(fn).__call__
            elif type(fn).__module__.startswith("sparsejac."):  # a wrapper of this package
                for a in list(getattr(fn, "__dict__", {}).values()):
                    if _users(a) or (callable(a) and type(a).__module__.startswith("sparsejac.")):
                        visit(a, depth + 1)  # (the user's function it calls)
                return
            else:
                break
        if (not isinstance(fn, types.FunctionType) or id(fn) in seen or depth > _WATCH_DEPTH
                or functions[0] >= _WATCH_FUNCTIONS_MAX):
            return
        seen.add(id(fn))
        functions[0] += 1
        names, stored = _names(fn.__code__)
        reads = _attributes(fn.__code__)
        for obj in bound:  # (self: what the code reads of it, even if it is callable)
            follow(obj, reads, depth)
            if _users(obj) and not isinstance(obj, (types.FunctionType, types.MethodType)):
                members(obj, reads, depth)
        for i, a in enumerate(fn.__defaults__ or ()):  # mutable defaults: def f(x, th=[0.5])
            add(fn, ("defaults", i), a, reads, depth)
        for k, a in (fn.__kwdefaults__ or {}).items():
            add(fn, ("kwdefaults", k), a, reads, depth)
        space = fn.__globals__
        for name in names - stored:  # (a counter f itself updates is no change of f)
            v = space.get(name, _MISSING)
            if v is _MISSING or isinstance(v, types.ModuleType):
                continue
            if isinstance(v, type):  # a class: the attributes the code reads of it
                if _user_code(v):
                    members(v, reads, depth)
                continue
            add(space, name, v, reads, depth)
            if isinstance(v, types.FunctionType) and v.__module__ == fn.__module__:
                visit(v, depth + 1)
        cells = zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False)
        for name, cell in cells:
            if name in stored:
                continue
            try:
                v = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            add(cell, None, v, reads, depth)
            visit(v, depth + 1)

    visit(call, 0)
    return tuple(out)


_MISSING = object()
_RAISED = object()


def _items(v: Any) -> Any:
    """A tuple's, list's or dict's items by the base type's own access.

    A subclass may wrap what its ``__getitem__`` returns (a table of parameter objects).
    """
    if isinstance(v, dict):
        return list(dict.values(v))
    return list(list.__iter__(v) if isinstance(v, list) else tuple.__iter__(v))


def _static(obj: Any, name: str) -> Any:
    """``name`` of ``obj`` as stored (no property run, no ``__getattr__``), or ``_MISSING``."""
    try:
        return inspect.getattr_static(obj, name, _MISSING)
    except Exception:  # an exotic object: not followed
        return _MISSING


def _is_descriptor(raw: Any) -> bool:
    """A computed class attribute (not a slot, whose value is the instance's own)."""
    return (hasattr(type(raw), "__get__") and not isinstance(raw, types.MemberDescriptorType))


@functools.lru_cache(maxsize=1024)
def _attributes(code: types.CodeType) -> frozenset[str]:
    """The attribute names ``code`` reads and does not assign, its nested functions' too.

    ``self.k`` is read; ``self.calls += 1`` or ``self.last_t = t`` is state the code keeps
    itself, not watched.
    """
    loaded, stored = set(), set()
    todo = [code]
    while todo:
        c = todo.pop()
        for ins in dis.get_instructions(c):
            if ins.opname in ("LOAD_ATTR", "LOAD_METHOD", "LOAD_SUPER_ATTR"):
                loaded.add(ins.argval)
            elif ins.opname in ("STORE_ATTR", "DELETE_ATTR"):
                stored.add(ins.argval)
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return frozenset(loaded - stored)


def _users(v: Any) -> bool:
    """Whether ``v`` is a function or callable object of the user's code (:func:`_user_code`)."""
    if isinstance(v, (types.FunctionType, types.MethodType)):
        return _user_code(v)
    call = type(v).__call__ if callable(v) else None
    return isinstance(call, types.FunctionType) and _user_code(call)


def _user_code(obj: Any) -> bool:
    """Whether a function, method or class is defined outside the libraries.

    Not in the standard library, not in an installed package (numpy, scipy: site-packages),
    not in this package: the user's scripts and modules, whose globals ``f`` may read through
    them.
    """
    try:
        code = getattr(obj, "__func__", obj).__code__
        filename = code.co_filename
    except AttributeError:
        name = getattr(obj, "__module__", "") or ""
        if name.partition(".")[0] in sys.stdlib_module_names:  # (builtins, types ...)
            return False
        filename = getattr(sys.modules.get(name), "__file__", None) or "<unknown>"
    return _user_file(filename)


@functools.lru_cache(maxsize=1024)
def _user_file(filename: str) -> bool:
    if filename.startswith("<"):  # "<stdin>", "<string>", a notebook cell; not "<frozen ...>"
        return not filename.startswith("<frozen")
    path = os.path.realpath(filename)
    return not any(path.startswith(root) for root in _library_roots())


@functools.cache
def _library_roots() -> tuple[str, ...]:
    """Directories of the standard library, the installed packages and this package."""
    roots = {os.path.dirname(os.path.realpath(__file__))}  # sparsejac itself
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        with contextlib.suppress(KeyError):
            roots.add(os.path.realpath(sysconfig.get_paths()[key]))
    with contextlib.suppress(AttributeError):  # (absent in some virtualenvs' site module)
        roots.update(os.path.realpath(p) for p in site.getsitepackages() if p)
    return tuple(r.rstrip(os.sep) + os.sep for r in roots)


@functools.lru_cache(maxsize=1024)
def _names(code: types.CodeType) -> tuple[frozenset[str], frozenset[str]]:
    """The global names ``code`` reads, and the global and closure names it assigns.

    Read: loaded as globals (not attribute names, as ``model.T``, which ``co_names`` holds
    too: a global ``T`` changing would prepare again for nothing). Cached per code object
    (a disassembly costs about a millisecond for a kinetics right-hand side, at every
    preparation).
    """
    ins = list(dis.get_instructions(code))
    names = {i.argval for i in ins if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    stored = {i.argval for i in ins
              if i.opname in ("STORE_GLOBAL", "STORE_DEREF", "DELETE_GLOBAL")}
    for c in code.co_consts:
        if isinstance(c, types.CodeType):  # lambdas, comprehensions, nested functions
            n, st = _names(c)
            names |= n
            stored |= st
    return frozenset(names), frozenset(stored)


def _current(space: Any, name: Any) -> Any:
    if type(name) is tuple and name[0] == "attr":  # an attribute of the user's object
        try:
            return getattr(space, name[1], _MISSING)
        except Exception:  # raising now where it did not: a change
            return _RAISED
    if isinstance(space, types.FunctionType):
        kind, key = name
        if kind == "defaults":
            defaults = space.__defaults__ or ()
            return defaults[key] if key < len(defaults) else _MISSING
        return (space.__kwdefaults__ or {}).get(key, _MISSING)
    if isinstance(space, (_Bound, functools.partial)):
        kind, key = name
        if kind == "args":
            return space.args[key]
        kw = space.kwargs if isinstance(space, _Bound) else space.keywords
        return kw.get(key, _MISSING)
    if name is None:
        return space.cell_contents
    return space.get(name, _MISSING)


def changed(watched: tuple[tuple[Any, Any, Any, Any], ...]) -> bool:
    """Whether a value :func:`watch` saw has changed (an equal value rebound to it: no)."""
    for space, name, _, snap in watched:
        if not snap.active:
            continue
        try:
            now = _current_name(space, name)
        except ValueError:  # an emptied cell
            return True
        if (now is not snap.then or snap.kind not in ("identity", "scalar")) and (
                not _same_as(now, snap)):
            return True
    return False


def _current_name(space: Any, name: Any) -> Any:
    """:func:`_current`, inlined for a closure cell or a global (checked at every call)."""
    if name is None:
        return space.cell_contents
    if type(name) is str:
        return space.get(name, _MISSING)
    return _current(space, name)


def what_changed(watched: tuple[tuple[Any, Any, Any, Any], ...]) -> str | None:
    """A name for the first watched value that changed (for a message), or None.

    Examples
    --------
    >>> from sparsejac.watching import watch, what_changed
    >>> k = [2.0]
    >>> w = watch(lambda x: k[0] * x)
    >>> k[0] = 3.0
    >>> what_changed(w)
    'the global `k`'
    """
    for space, name, _, snap in watched:
        try:
            same = not snap.active or _same_as(_current(space, name), snap)
        except ValueError:
            same = False
        if same:
            continue
        if isinstance(name, tuple):
            kind, key = name
            return {"attr": f"the attribute `{key}` of a {type(space).__name__}",
                    "args": f"the argument `args[{key}]`",
                    "kwargs": f"the argument `{key}=`"}.get(kind, "a default argument")
        return "a closure variable" if name is None else f"the global `{name}`"
    return None


def settle(watched: tuple[tuple[Any, Any, Any, Any], ...]) -> None:
    """After a real call of ``f`` (no change before it): stop watching what ``f`` changed.

    What ``f`` changes itself, a call counter in a list or an array, is no change of ``f``.
    """
    for space, name, _, snap in watched:
        if snap.active:
            try:
                now = _current_name(space, name)
            except ValueError:
                snap.active = False
                continue
            if now is not snap.then or snap.kind not in ("identity", "scalar"):
                _settle_snap(now, snap)  # (a counter in a dictionary: that item only)
