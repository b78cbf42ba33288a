"""Where a run may write: never over a user's files.

``cnsim run -o DIR`` (and ``cnsim.run(out=DIR)``) replaces DIR only when it is a previous cnsim result
(it holds ``manifest.json`` and nothing its manifest does not list), is empty, or does not exist
yet — or when the user says ``--force``. It refuses, even with ``--force``, a file, the current
directory or one of its parents, a sweep folder, the scenario file and a folder that holds it, and
a location that cannot be written; all of this before the simulation starts. Temporary folders
of a run carry its process id, so a later run removes those whose process is gone (killed with
SIGKILL, say).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path, PurePosixPath

from cnsim.exceptions import ConfigError

TMP_RE = re.compile(r"^\.(?P<name>.+)\.(tmp|old)-(?P<pid>\d+)-")


def umask() -> int:
    """The process's file-mode creation mask."""
    m = os.umask(0)
    os.umask(m)
    return m


def _neither_cwd_nor_file(out: Path, field: str, kind: str) -> Path:
    """``out`` resolved, after refusing the current directory, its parents and a file (``kind``: what
    folder the message suggests instead)."""
    target = out.resolve()
    cwd = Path.cwd().resolve()
    if target == cwd or target in cwd.parents:
        raise ConfigError.single(field, f"is the current directory or one of its parents; give a new or "
                                 f"{kind} folder", str(out))
    if out.exists() and not out.is_dir():
        raise ConfigError.single(field, "is a file, not a directory; nothing was overwritten", str(out))
    return target


def check(out: str | os.PathLike[str], force: bool = False, scenario: str | os.PathLike[str] | None = None,
          field: str = "--out") -> Path:
    """Raise a :class:`ConfigError` naming ``field`` unless ``out`` may receive a run's outputs."""
    out = Path(out)
    if scenario is not None:
        where = Path(scenario).resolve()
        if where == out.resolve():
            raise ConfigError.single(field, "is the scenario file itself", str(out))
        if out.resolve() in where.parents:
            raise ConfigError.single(field, f"holds the scenario file ({scenario}), which replacing the folder "
                                     "would delete; write the outputs elsewhere", str(out))
    target = _neither_cwd_nor_file(out, field, "previous-result")
    if out.is_dir():
        if (out / "sweep.json").exists():
            raise ConfigError.single(field, "is a sweep folder; write single runs elsewhere", str(out))
        previous = (out / "manifest.json").exists()
        if not previous and any(out.iterdir()) and not force:
            raise ConfigError.single(field, "is a non-empty folder that is not a cnsim result; choose another "
                                     "folder or add --force to replace it", str(out))
        others = foreign_files(out) if previous and not force else []
        if others:
            shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
            raise ConfigError.single(field, f"is a previous cnsim result that also holds files cnsim did not write "
                                     f"({shown}); move them, choose another folder or add --force to replace "
                                     "it", str(out))
    # the nearest existing ancestor must be a writable directory
    parent = target.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError.single(field, f"cannot be created: {parent} is a file", str(out))
    if not os.access(parent, os.W_OK | os.X_OK) or (out.is_dir() and not os.access(out, os.W_OK | os.X_OK)):
        raise ConfigError.single(field, "is not writable", str(out))
    return out


RESULT_FILES = frozenset({"manifest.json", "summary.json", "summary.parquet", "resolved-config.toml",
                          "plots/queue.png", "plots/throughput.png"})
"""What a run writes besides its tables (``results.TABLES``); the manifest lists them too."""


def foreign_files(folder: Path) -> list[str]:
    """Entries of a previous result ``folder`` that cnsim did not write (neither listed in its manifest's
    ``files`` nor a run's own file), as sorted relative paths; a folder's contents are named, not the folder."""
    from cnsim.results import TABLES

    own = set(RESULT_FILES) | {f"{t}.parquet" for t in TABLES}
    try:
        own |= set(json.loads((folder / "manifest.json").read_text(encoding="utf-8")).get("files", {}))
    except (OSError, ValueError, AttributeError):
        pass
    dirs = {str(d) for f in own for d in PurePosixPath(f).parents if str(d) != "."}
    found = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if rel in own or rel in dirs or (p.is_dir() and not p.is_symlink() and any(p.iterdir())):
            continue
        found.append(rel + ("/" if p.is_dir() else ""))
    return found


def remove_stale_temporaries(parent: Path) -> None:
    """Delete ``.NAME.tmp-PID-*`` / ``.NAME.old-PID-*`` folders in ``parent`` whose process is gone."""
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for p in entries:
        m = TMP_RE.match(p.name)
        if m and p.is_dir() and not _alive(int(m["pid"])):
            shutil.rmtree(p, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_sweep(out: str | os.PathLike[str], field: str = "--out") -> Path:
    """Raise a :class:`ConfigError` naming ``field`` unless ``out`` may receive a sweep: a new folder,
    an empty one or a previous sweep's (``sweep.json``) — never the current directory, one of its
    parents, a file or a folder of other files (a sweep writes ``runs/`` and ``sweep.json`` into it)."""
    out = Path(out)
    _neither_cwd_nor_file(out, field, "previous-sweep")
    marks = ("sweep.json", "sweep.lock", "runs")  # a sweep folder, also one interrupted before sweep.json
    if out.is_dir() and not any((out / m).exists() for m in marks) and any(out.iterdir()):
        raise ConfigError.single(field, "is a non-empty folder that is not a cnsim sweep; choose another folder",
                                 str(out))
    return out
