"""Code that the standard library compiles from strings while a ``cnsim`` command starts, kept from one
``cnsim`` process to the next.

The standard library makes some classes and annotations by compiling text: a dataclass's ``__init__``,
``__repr__``, ``__eq__``, ... (``dataclasses``, through ``exec``), a named tuple's ``__new__``
(``collections``, through ``eval``), the code of a string annotation (``typing.ForwardRef``, through
``compile``; pydantic_core's ``TypedDict`` schemas make 600). A 1-ms ``cnsim run`` compiled some 1 000 texts
(450 distinct) in 135 M instructions, 13 % of the run. The text is the same in every process, and so is the
code the compiler makes of it: here those three modules' ``exec``, ``eval`` and ``compile`` take it from a
file the previous ``cnsim`` process left (``$XDG_CACHE_HOME/cnsim``, else ``~/.cache/cnsim``), compiling
each text once otherwise, and a process that compiled something new writes the file again. The file holds
code objects as ``marshal`` writes them (as ``.pyc`` files do), one file per bytecode version; anything
wrong with it (missing, unreadable, not written here) is the same as no file.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys
from types import CodeType

TYPE_CHECKING = False  # typing's own; typing is imported by install(), once it has replaced collections.eval
if TYPE_CHECKING:
    from typing import Any

MAX_ENTRIES = 5_000
"""A file holding more entries (libraries upgraded many times; the test suite's commands ask for 1 100) is
started afresh with this process's."""


class CodeCache:
    """The code of each text compiled so far: (mode, text) → code. The file's entries are read as the
    ``marshal`` bytes of their code, turned into code when first asked for (a file holds what every
    ``cnsim`` command asked for; a run takes some 450 of them)."""

    def __init__(self, path: str):
        self.path = path
        self.code: dict[tuple[str, str], CodeType] = {}
        self.new = 0
        try:
            with open(path, "rb") as f:
                entries = marshal.loads(f.read())  # marshal.load would read the file object by object
            self.kept: dict[tuple[str, str], bytes] = {(mode, text): data for mode, text, data in entries}
        except (OSError, EOFError, ValueError, TypeError):  # no file, or not one written here
            self.kept = {}

    def compiled(self, text: str, mode: str) -> CodeType:
        """The code of ``text`` (filename ``<string>``, no inherited future flags: as ``exec``, ``eval`` and
        ``compile`` make it when called from the modules patched here, which have none)."""
        key = (mode, text)
        code = self.code.get(key)
        if code is None:
            try:
                code = marshal.loads(self.kept[key])
            except (KeyError, EOFError, ValueError, TypeError):
                code = None
            if not isinstance(code, CodeType):
                code = builtins.compile(text, "<string>", mode, dont_inherit=True)
                self.kept[key] = marshal.dumps(code)
                self.new += 1
            self.code[key] = code
        return code

    def save(self) -> None:
        """Write the file again if this process compiled something it did not hold (atomically; errors
        ignored: the next process compiles again). A file grown past :data:`MAX_ENTRIES` keeps this
        process's entries only."""
        if not self.new:
            return
        keys = self.kept if len(self.kept) <= MAX_ENTRIES else self.code
        data = marshal.dumps([(mode, text, self.kept[(mode, text)]) for mode, text in keys])
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, self.path)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self.new = 0


def cache_path() -> str | None:
    """The file for this interpreter (its version: the code's format); None without a home folder to put
    it in."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(root):  # no home folder (`~` left as it is) or a relative XDG_CACHE_HOME: none
        return None
    return os.path.join(root, "cnsim", f"code-{sys.implementation.cache_tag}-{sys.hexversion:x}.marshal")


def keep() -> None:
    """:func:`install` for this process, the file saved at its exit if it compiled something new."""
    import atexit

    cache = install()
    if cache is not None:
        atexit.register(cache.save)


def install() -> CodeCache | None:
    """Make ``dataclasses``, ``collections`` and ``typing`` take their compiled text from the cache (once per
    process; None when already done or without a place for the file). The caller saves it
    (:meth:`CodeCache.save`) before the process ends."""
    import collections

    path = cache_path()
    if path is None or "eval" in vars(collections):
        return None
    cache = CodeCache(path)

    def namespaces(globals: Any, locals: Any) -> tuple[Any, Any]:
        """exec's and eval's: without ``globals``, their caller's (dataclasses and collections pass theirs)."""
        if globals is not None:
            return globals, locals
        caller = sys._getframe(2)
        return caller.f_globals, caller.f_locals if locals is None else locals

    def run(text: Any, globals: Any = None, locals: Any = None) -> Any:
        code = cache.compiled(text, "exec") if isinstance(text, str) else text
        return builtins.exec(code, *namespaces(globals, locals))

    def evaluate(text: Any, globals: Any = None, locals: Any = None) -> Any:
        code = cache.compiled(text, "eval") if isinstance(text, str) else text
        return builtins.eval(code, *namespaces(globals, locals))

    def compile(text: Any, filename: str, mode: str, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs or not isinstance(text, str) or filename != "<string>":
            return builtins.compile(text, filename, mode, *args, **kwargs)
        return cache.compiled(text, mode)

    collections.eval = evaluate  # type: ignore[attr-defined]  # first: the imports below make named tuples
    import dataclasses
    import typing

    dataclasses.exec = run  # type: ignore[attr-defined]
    typing.compile = compile  # type: ignore[attr-defined]
    return cache
