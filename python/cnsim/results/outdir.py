"""Where cnsim may write: only over what cnsim wrote, never over a user's files.

Every writer of a run's folder (``cnsim run -o DIR``, ``cnsim.run(out=DIR)``, ``Result.save(DIR)``, the
runs of a sweep) replaces DIR only when it does not exist, is empty, or is a previous cnsim result —
recognised by the ``manifest.json`` cnsim writes last — holding nothing cnsim did not write. A previous
result the user has added files to is refused with the files named; ``--force`` (``force=True``) then
replaces cnsim's own files and keeps the others where they are. A file, a non-empty folder that is not
a cnsim result, the current directory or one of its parents, a sweep folder, the scenario file and a
folder that holds it are refused, ``--force`` included; all of this before the simulation starts, in one
line naming the path. A symbolic link to a previous result is followed (the result is replaced where it
lives, the link stays); a link to nothing is refused. Temporary folders of a run carry its process id,
so a later run removes those whose process is gone (killed with SIGKILL, say).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from cnsim.exceptions import CnsimError, ConfigError, OutputError

TMP_RE = re.compile(r"^\.(?P<name>.+)\.(tmp|old)-(?P<pid>\d+)-")

RESULT_FILES = frozenset(
    {
        "manifest.json",
        "summary.json",
        "summary.parquet",
        "resolved-config.toml",
        "plots/queue.png",
        "plots/throughput.png",
    }
)
"""What a run writes besides its tables (``TABLES``); the manifest lists them too."""
TABLES = ("queue_ts", "throughput_ts", "flow_tp", "rp_rate", "tcp_ts", "pause_ts", "fct", "flows", "queue_cdf")
"""Tables of a result, each written as ``<name>.parquet``."""


def umask() -> int:
    """The process's file-mode creation mask."""
    m = os.umask(0)
    os.umask(m)
    return m


def followed(out: str | os.PathLike[str], field: str = "out") -> Path:
    """Where outputs for ``out`` go: the folder a symbolic link ``out`` points to (so a result is replaced
    where it lives and the link stays), else ``out``. A link to nothing (or a loop) is a ConfigError."""
    out = Path(out)
    if not out.is_symlink():
        return out
    try:
        return out.resolve(strict=True)
    except (OSError, RuntimeError):
        raise ConfigError.single(
            field,
            f"is a symbolic link to {os.readlink(out)}, which does not exist; "
            "nothing was run: point it at a folder or remove it",
            str(out),
        ) from None


def is_result(folder: Path) -> bool:
    """Whether ``folder`` holds a cnsim result: a ``manifest.json`` that cnsim wrote (a JSON object with
    the ``tool_version`` and ``status`` every run's and sweep run's manifest has)."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and "tool_version" in manifest and "status" in manifest


def _own_names(folder: Path) -> set[str]:
    """Relative paths a result in ``folder`` may hold as its own: what every run writes and what its
    manifest lists."""
    own = set(RESULT_FILES) | {f"{t}.parquet" for t in TABLES}
    try:
        own |= set(json.loads((folder / "manifest.json").read_text(encoding="utf-8")).get("files", {}))
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    return own


def foreign_files(folder: Path) -> list[str]:
    """Entries of a previous result ``folder`` that cnsim did not write (neither listed in its manifest's
    ``files`` nor a run's own file), as sorted relative paths; a folder's contents are named, not the folder."""
    own = _own_names(folder)
    dirs = {str(d) for f in own for d in PurePosixPath(f).parents if str(d) != "."}
    found = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if rel in own or rel in dirs or (p.is_dir() and not p.is_symlink() and any(p.iterdir())):
            continue
        found.append(rel + ("/" if p.is_dir() else ""))
    return found


def replaceable(folder: Path, force: bool, field: str, shown: str | None = None) -> list[str]:
    """The files a write into the existing folder ``folder`` must keep (none unless ``force``); a
    ConfigError naming ``field`` when cnsim may not write there: a non-empty folder that is not a cnsim
    result (``force`` or not), or a result holding files cnsim did not write (unless ``force``)."""
    shown = shown or str(folder)
    if not any(folder.iterdir()):
        return []
    if not is_result(folder):
        raise ConfigError.single(
            field,
            "is a non-empty folder that is not a cnsim result (no manifest.json of "
            "cnsim's); nothing in it is replaced, --force included: choose a new or empty "
            "folder",
            shown,
        )
    others = foreign_files(folder)
    if others and not force:
        listed = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise ConfigError.single(
            field,
            f"is a previous cnsim result that also holds files cnsim did not write "
            f"({listed}); move them or choose another folder, or add --force to replace "
            "cnsim's files and keep these",
            shown,
        )
    return others


def _neither_cwd_nor_file(out: Path, field: str, kind: str, shown: str) -> Path:
    """``out`` resolved, after refusing the current directory, its parents and a file (``kind``: what
    folder the message suggests instead)."""
    target = out.resolve()
    cwd = Path.cwd().resolve()
    if target == cwd or target in cwd.parents:
        raise ConfigError.single(
            field, f"is the current directory or one of its parents; give a new or {kind} folder", shown
        )
    if out.exists() and not out.is_dir():
        raise ConfigError.single(field, "is a file, not a directory; nothing was overwritten", shown)
    return target


def _writable(target: Path, field: str, shown: str) -> None:
    """The folder ``target`` can be created or written: the nearest existing ancestor is a writable
    directory (and ``target`` itself, if it exists)."""
    parent = target.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError.single(field, f"cannot be created: {parent} is a file", shown)
    if not os.access(parent, os.W_OK | os.X_OK) or (target.is_dir() and not os.access(target, os.W_OK | os.X_OK)):
        raise ConfigError.single(field, "is not writable", shown)


def check(
    out: str | os.PathLike[str],
    force: bool = False,
    scenario: str | os.PathLike[str] | None = None,
    field: str = "--out",
) -> Path:
    """Raise a :class:`ConfigError` naming ``field`` unless ``out`` may receive a run's outputs (see the
    module's rules); ``force`` lets a previous result holding other files be written, keeping them."""
    out = Path(out)
    shown = str(out)
    dest = followed(out, field)
    if scenario is not None:
        where = Path(scenario).resolve()
        if where == dest.resolve():
            raise ConfigError.single(field, "is the scenario file itself", shown)
        if dest.resolve() in where.parents:
            raise ConfigError.single(
                field,
                f"holds the scenario file ({scenario}), which replacing the folder "
                "would delete; write the outputs elsewhere",
                shown,
            )
    target = _neither_cwd_nor_file(dest, field, "previous-result", shown)
    if dest.is_dir():
        if (dest / "sweep.json").exists():
            raise ConfigError.single(field, "is a sweep folder; write single runs elsewhere", shown)
        replaceable(dest, force, field, shown)
    _writable(target, field, shown)
    return out


def write_failure(exc: BaseException, out: str | os.PathLike[str]) -> OutputError | None:
    """For an operating-system error ``exc`` met while writing outputs into ``out``: an :class:`OutputError`
    naming ``out`` and the cause in words (pyarrow's errors carry it only in their text: "Error writing
    bytes to file. Detail: [errno 28] No space left"); None for any other exception (raised as it is)."""
    if not isinstance(exc, OSError) or isinstance(exc, CnsimError):
        return None
    errno = exc.errno
    if errno is None:
        m = re.search(r"\[errno (\d+)\]", str(exc), re.IGNORECASE)
        errno = int(m[1]) if m else None
    cause = os.strerror(errno) if errno else (exc.strerror or str(exc).splitlines()[0] or type(exc).__name__)
    return OutputError(
        f"cannot write the outputs into {out}: {cause}; nothing was written there (a previous result is kept)"
    )


def open_output(out: str | os.PathLike[str]) -> Path:
    """A new temporary folder beside where ``out`` lives (the folder a link points to) for a run's
    outputs (see :func:`commit_output`)."""
    dest = followed(out)
    dest.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(dest.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-{os.getpid()}-", dir=dest.parent))
    os.chmod(tmp, 0o777 & ~umask())  # mkdtemp makes 0700: follow the user's umask
    return tmp


def commit_output(tmp: Path, out: str | os.PathLike[str], force: bool = False, field: str = "out") -> Path:
    """Move the finished folder ``tmp`` to ``out`` (where a link ``out`` points): all or nothing when
    ``out`` is new, empty or a previous result of cnsim's files only; cnsim's files replaced one by one
    and the user's kept when it is a result also holding other files (``force``); refused (ConfigError,
    ``tmp`` left to the caller) over anything else, checked again here as the folder may have changed
    during the run."""
    dest = followed(out, field)
    if dest.exists() and not dest.is_dir():
        raise ConfigError.single(field, "is a file, not a directory; nothing was overwritten", str(out))
    keep = replaceable(dest, force, field, str(out)) if dest.exists() else []
    if keep:
        _merge(tmp, dest)
    elif dest.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-{os.getpid()}-", dir=dest.parent))
        os.replace(dest, old / "previous")
        os.replace(tmp, dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, dest)
    return Path(out)


def _merge(tmp: Path, dest: Path) -> None:
    """Replace the previous result in ``dest`` by the one in ``tmp`` file by file, leaving every file
    cnsim did not write where it is. The old manifest goes first and the new one comes last, so a folder
    left half-way (a crash) is not taken for a result — and, holding other files, is never replaced."""
    own = _own_names(dest)
    old = {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()} & own
    (dest / "manifest.json").unlink()
    new = sorted(
        (p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file()), key=lambda rel: rel == "manifest.json"
    )
    for rel in new:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp / rel, dest / rel)
    for rel in sorted(old - set(new), reverse=True):
        (dest / rel).unlink(missing_ok=True)
        parent = (dest / rel).parent
        if parent != dest and not any(parent.iterdir()):
            parent.rmdir()
    shutil.rmtree(tmp, ignore_errors=True)


def remove_result(folder: Path, field: str = "--out") -> None:
    """Delete the previous cnsim result ``folder`` (a sweep rerunning a run with ``--force``); a folder
    that is not one, or holds other files too, is a ConfigError and stays."""
    if folder.exists() or folder.is_symlink():
        if folder.is_symlink() or not folder.is_dir():
            raise ConfigError.single(field, "is not a cnsim run folder; nothing was deleted", str(folder))
        replaceable(folder, False, field)
        shutil.rmtree(folder)


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


SWEEP_MARKS = frozenset({"sweep.json", "sweep.lock", "sweep.lock.owner", "runs"})
"""What a sweep folder holds before its first ``sweep.json`` (one interrupted at once)."""


def is_sweep(folder: Path) -> bool:
    """Whether ``folder`` is a cnsim sweep's: its ``sweep.json`` is one cnsim wrote (``spec`` and ``runs``),
    or it holds nothing but a sweep's lock and ``runs/`` (interrupted before its first ``sweep.json``)."""
    try:
        doc = json.loads((folder / "sweep.json").read_text(encoding="utf-8"))
        return isinstance(doc, dict) and "spec" in doc and "runs" in doc
    except (OSError, ValueError):
        return {p.name for p in folder.iterdir()} <= SWEEP_MARKS


def usable_folder(out: Path, field: str, kind: str) -> Path:
    """Where a folder of outputs ``out`` lives (a link followed), after refusing a link to nothing, the
    current directory, one of its parents and a file (``kind``: what folder the message suggests)."""
    dest = followed(out, field)
    _neither_cwd_nor_file(dest, field, kind, str(out))
    return dest


def check_sweep(out: str | os.PathLike[str], field: str = "--out") -> Path:
    """Raise a :class:`ConfigError` naming ``field`` unless ``out`` may receive a sweep: a new folder,
    an empty one or a previous sweep's — never the current directory, one of its parents, a file, a link
    to nothing or a folder of other files (a sweep writes ``runs/`` and ``sweep.json`` into it)."""
    out = Path(out)
    dest = usable_folder(out, field, "previous-sweep")
    if dest.is_dir() and any(dest.iterdir()) and not is_sweep(dest):
        raise ConfigError.single(
            field, "is a non-empty folder that is not a cnsim sweep; choose another folder", str(out)
        )
    return out
