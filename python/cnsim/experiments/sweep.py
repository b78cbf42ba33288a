"""Parameter sweeps with replications: spec, expansion, content-addressed runs, execution on Dask.

A sweep file (``SWEEP.toml``)::

    base = "../scenarios/baseline/fan-in-4.toml"   # relative to the sweep file
    replications = 3                                # replication k = 0 .. N-1
    seed = 1                                        # optional; default: the base scenario's run.seed
    [set]                                           # fixed overrides applied to every run
    "run.duration" = "5ms"
    [parameters]                                    # full factorial over these dotted paths
    "traffic.senders.rate" = ["2Gbps", "5Gbps"]
    "defaults.buffer.size" = { from = 50000, to = 150000, step = 50000 }
    "defaults.link_delay" = { values = ["0.5us", "9.5us"] }

Seeds (common random numbers): every parameter point uses the same ``run.seed`` and replication k
sets ``run.replication = k``, which the engine mixes into every random stream. Replication k thus
sees the same traffic realisation at every point (what differs is only the swept parameter).

Layout of an output directory::

    sweep.json           spec, runs (id, parameters, replication, status, error), counts
    sweep.lock           filelock while a sweep runs (+ sweep.lock.owner: PID and host)
    runs/<run-id>/       Result.save layout; manifest.json last (status ok) — or only
                         manifest.json with status "failed" and the error

The run id is the sha-256 (first 20 hex digits) of the canonical JSON of the resolved scenario
(seed and replication included) and the cnsim version: the same run in two sweeps has the same id,
and a rerun skips every run whose ``manifest.json`` says ``ok``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import itertools
import json
import math
import os
import shutil
import socket
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cnsim import api
from cnsim.api import resolve
from cnsim.compile.compiler import compile_ir_once
from cnsim.compile.loader import read_toml
from cnsim.exceptions import CnsimError, ConfigError, ConfigWarning, Problem
from cnsim.experiments.progress import SweepProgress
from cnsim.results.outdir import check_sweep, commit_output, remove_result

RUN_ID_LEN = 20
SWEEP_FILE = "sweep.json"
LOCK_FILE = "sweep.lock"
OWNER_FILE = "sweep.lock.owner"


class SweepLocked(CnsimError):
    """The output directory is locked by another sweep (CLI exit status 2)."""

    exit_code = 2


# ---- spec ------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, allow_inf_nan=False)


class Range(_Strict):
    """``{from, to, step[, unit]}``: from, from+step, ... up to and including ``to``.

    With ``unit`` (e.g. ``"KB"``, ``"us"``, ``"Gbps"``) each value is written as a quantity string.
    """

    from_: float = Field(alias="from")
    to: float
    step: float
    unit: str | None = None

    @model_validator(mode="after")
    def _check(self):
        if self.step == 0:
            raise ValueError("step must not be 0")
        if (self.to - self.from_) * self.step < 0:
            raise ValueError("step goes away from 'to' (sign of step)")
        if abs(self.to - self.from_) / abs(self.step) > 100_000:
            raise ValueError("more than 100000 values")
        return self

    def values(self) -> list[Any]:
        n = int(math.floor((self.to - self.from_) / self.step + 1e-9)) + 1
        out = [self.from_ + i * self.step for i in range(n)]
        ints = all(float(v).is_integer() for v in (self.from_, self.to, self.step))
        vals = [int(round(v)) if ints else round(v, 12) for v in out]
        return [f"{v}{self.unit}" for v in vals] if self.unit else vals


class Values(_Strict):
    """``{values = [...]}``: an explicit list."""

    values: list[Any] = Field(min_length=1)


class SweepSpec(_Strict):
    """A sweep: base scenario, fixed overrides, swept parameters (full factorial), replications."""

    name: str | None = Field(None, description="sweep name (default: the sweep file's name)")
    base: str = Field(description="base scenario TOML, relative to the sweep file")
    seed: int | None = Field(None, ge=0, lt=2**64, description="master seed (default: the base scenario's run.seed)")
    replications: int = Field(1, ge=1, le=10_000, description="replications per parameter point")
    set: dict[str, Any] = Field(default_factory=dict, description="overrides applied to every run")
    parameters: dict[str, list[Any] | Range | Values] = Field(
        default_factory=dict, description="dotted path -> values (full factorial)"
    )

    @field_validator("parameters", mode="before")
    @classmethod
    def _one_kind_each(cls, v: Any) -> Any:
        """Each parameter as the one kind its form names — a list, ``{values}`` or ``{from, to, step}`` —
        so that a mistake gets that kind's one message, not one per kind it might have been."""
        if not isinstance(v, Mapping):
            return v
        out = {}
        for k, vals in v.items():
            if isinstance(vals, list) and not vals:
                raise ValueError(f"{k}: empty list of values")
            if isinstance(vals, Mapping):
                kind = Values if "values" in vals else Range
                try:
                    vals = kind.model_validate(vals)
                except ValidationError as err:
                    e = err.errors()[0]
                    where = ".".join(str(x) for x in e["loc"])
                    msg = e["msg"].removeprefix("Value error, ")
                    raise ValueError(
                        f"{k}{'.' + where if where else ''}: {msg}"
                        + (f" (got {e['input']!r})" if where and e["type"] != "missing" else "")
                    ) from None
            elif not isinstance(vals, list):
                raise ValueError(f"{k}: expected a list, {{from, to, step}} or {{values}}, got {vals!r}")
            out[k] = vals
        return out

    @model_validator(mode="after")
    def _no_reserved(self):
        for key in self.parameters:
            if key in ("run.seed", "run.replication"):
                raise ValueError(f"{key} is set per replication; use 'seed' and 'replications'")
            if key in self.set:
                raise ValueError(f"{key} is both in [set] and in [parameters]")
        return self

    def axes(self) -> dict[str, list[Any]]:
        """Parameter path → its list of values, in file order."""
        out: dict[str, list[Any]] = {}
        for key, vals in self.parameters.items():
            out[key] = (
                vals.values() if isinstance(vals, Range) else (vals.values if isinstance(vals, Values) else list(vals))
            )
        return out

    def points(self) -> list[dict[str, Any]]:
        """Every parameter point of the full factorial (the first parameter varies slowest)."""
        return list(self.iter_points())

    def iter_points(self) -> Iterator[dict[str, Any]]:
        """:meth:`points` one at a time."""
        axes = self.axes()
        keys = list(axes)
        return (dict(zip(keys, combo)) for combo in itertools.product(*(axes[k] for k in keys)))

    def n_points(self) -> int:
        """How many points :meth:`points` gives (without making them)."""
        return math.prod(len(v) for v in self.axes().values())


def load_spec(path: str | os.PathLike[str]) -> tuple[SweepSpec, Path]:
    """Read and validate a sweep file; returns (spec, directory relative paths are resolved from)."""

    path = Path(path)
    data = read_toml(path)
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_sweep_problems(err, path)) from None
    if spec.name is None:
        spec.name = path.stem
    return spec, path.parent


def _sweep_problems(err: ValidationError, path: Path) -> list[Problem]:
    out = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"] if not str(p).startswith(("list[", "function-", "Range", "Values")))
        msg = e["msg"].removeprefix("Value error, ")
        out.append(
            Problem(f"{path.name}: {loc}" if loc else path.name, msg, e.get("input"))
            if e["type"] != "missing"
            else Problem(f"{path.name}: {loc}", "required")
        )
    return out


# ---- runs ------------------------------------------------------------------------------------


@dataclass
class RunSpec:
    """One run of a sweep: what the worker needs (small, picklable)."""

    run_id: str
    parameters: dict[str, Any]
    replication: int
    seed: int
    scenario: dict[str, Any]  # the resolved scenario (every default filled in)
    sweep: str = ""
    plots: bool = False

    def brief(self) -> dict[str, Any]:
        return {"id": self.run_id, "parameters": self.parameters, "replication": self.replication, "seed": self.seed}


def tool_version() -> str:
    from cnsim import __version__  # on first use: the version comes from the installed dist-info (cnsim/__init__.py)

    return __version__


def engine_build() -> str:
    """Identity of the engine that will run: the sha-256 (16 hex) of the ``cnsim._core`` extension file,
    so a rebuilt engine never reuses runs of another build ('' when the extension is not built)."""
    global _ENGINE_BUILD
    if _ENGINE_BUILD is None:
        try:
            import importlib.util

            spec = importlib.util.find_spec("cnsim._core")
            data = Path(spec.origin).read_bytes() if spec and spec.origin else b""
            _ENGINE_BUILD = hashlib.sha256(data).hexdigest()[:16] if data else ""
        except (OSError, ImportError, ValueError):
            _ENGINE_BUILD = ""
    return _ENGINE_BUILD


_ENGINE_BUILD: str | None = None


def run_id(
    scenario: Mapping[str, Any], seed: int, replication: int, version: str | None = None, ir_digest: str = ""
) -> str:
    """Content address of a run: sha-256 of canonical JSON of config + seed + replication + version, plus
    the digest of the compiled engine input (every default resolved) and the engine build, so a changed
    default or a rebuilt engine gives new runs instead of reusing stale ones."""
    payload = {"config": scenario, "seed": seed, "replication": replication, "version": version or tool_version()}
    if ir_digest:
        payload["ir"] = ir_digest
        payload["engine"] = engine_build()
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:RUN_ID_LEN]


def expand(spec: SweepSpec, root: Path | str = ".", plots: bool = False) -> list[RunSpec]:
    """Every run of the sweep: points × replications, each resolved and validated.

    Invalid points are collected into one ConfigError naming the point.
    """
    runs: list[RunSpec] = []
    problems: list[Problem] = []
    for point_runs, point_problems in iter_expand(spec, root, plots):
        runs += point_runs
        problems += point_problems
    if problems:
        raise ConfigError(problems)
    return runs


def iter_expand(
    spec: SweepSpec, root: Path | str = ".", plots: bool = False
) -> Iterator[tuple[list[RunSpec], list[Problem]]]:
    """:func:`expand` one point at a time: its runs, or the problems that make it invalid (a sweep of
    10⁶ runs is listed as it goes instead of after minutes of silence)."""

    base = Path(root) / spec.base
    if not base.is_file():
        raise ConfigError.single("base", f"scenario file not found: {base}", spec.base)
    base_sc = resolve(base, None, spec.set)
    seed = spec.seed if spec.seed is not None else base_sc.run.seed
    base_data = base_sc.model_dump(mode="json", exclude_none=True)
    for point in spec.iter_points():
        where = ", ".join(f"{k}={v}" for k, v in point.items())
        try:
            sc = resolve(base_data, seed, {**point, "run.replication": 0})
            # the engine input with every default resolved (seed and replication hashed apart)
            ir = compile_ir_once(sc)
            _engine_check(ir)  # limits only the engine knows (observation size) fail here, not in every run
        except ConfigError as exc:
            yield [], [Problem(f"[{where}] {p.path}", p.message, p.value) for p in exc.problems]
            continue
        ir.pop("seed", None), ir.pop("replication", None)
        digest = hashlib.sha256(json.dumps(ir, sort_keys=True, default=str).encode()).hexdigest()
        data = sc.model_dump(mode="json", exclude_none=True)
        runs = []
        for k in range(spec.replications):
            d = json.loads(json.dumps(data))
            d["run"]["seed"], d["run"]["replication"] = seed, k
            runs.append(RunSpec(run_id(d, seed, k, ir_digest=digest), dict(point), k, seed, d, spec.name or "", plots))
        yield runs, []


def _engine_check(ir: Mapping[str, Any]) -> None:
    """The engine's own validation of one point's IR, as a ConfigError naming the field."""

    api.core()  # a clear error when the engine is not built
    api.engine_check(ir)


def run_dir(runs_dir: Path | str, rid: str) -> Path:
    return Path(runs_dir) / rid


def read_manifest(d: Path) -> dict[str, Any] | None:
    try:
        return json.loads((d / "manifest.json").read_text())
    except (OSError, ValueError):
        return None


def is_done(runs_dir: Path | str, rid: str) -> bool:
    m = read_manifest(run_dir(runs_dir, rid))
    return bool(m) and m.get("status") == "ok"


def write_failed(runs_dir: Path | str, spec: RunSpec | Mapping[str, Any], error: str, status: str = "failed") -> None:
    """Record a failed run: a directory holding only ``manifest.json`` (written atomically)."""
    brief = spec.brief() if isinstance(spec, RunSpec) else dict(spec)
    manifest = {
        "run_id": brief["id"],
        "status": status,
        "error": error,
        "parameters": brief["parameters"],
        "replication": brief["replication"],
        "seed": brief["seed"],
        "tool_version": tool_version(),
        "sweep": getattr(spec, "sweep", None),
        "finished_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    out = run_dir(runs_dir, brief["id"])
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        atomic_write_text(tmp / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        commit_output(tmp, out, field=f"runs/{out.name}")  # never over a folder cnsim did not write
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def execute_run(spec: RunSpec, runs_dir: str) -> dict[str, Any]:
    """Run one sweep run and write its directory (in the worker). Returns a small status dict."""

    t0 = time.perf_counter()
    if is_done(runs_dir, spec.run_id):
        return {"id": spec.run_id, "status": "skipped", "wall_s": 0.0}

    try:
        with warnings.catch_warnings():
            # configuration warnings were shown once when the sweep was expanded; not again per run/worker
            warnings.simplefilter("ignore", ConfigWarning)
            result = api.run(spec.scenario)
        result.manifest.update(run_id=spec.run_id, parameters=spec.parameters, sweep=spec.sweep)
        result.save(run_dir(runs_dir, spec.run_id), plots=spec.plots)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 — a failing run is recorded, the sweep goes on
        error = f"{type(exc).__name__}: {exc}"
        status = "invariant_violation" if type(exc).__name__ == "InvariantError" else "failed"
        write_failed(runs_dir, spec, error + "\n" + traceback.format_exc(limit=3), status)
        return {"id": spec.run_id, "status": status, "error": error, "wall_s": time.perf_counter() - t0}
    return {"id": spec.run_id, "status": "ok", "wall_s": time.perf_counter() - t0}


@contextlib.contextmanager
def atomic_path(path: Path):
    """Yield a temporary path beside ``path``; on success ``os.replace`` it onto ``path``, on any
    failure remove it — so no partial file is ever readable under the final name."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (fsynced before the rename)."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


# ---- lock ------------------------------------------------------------------------------------


class OutputLock:
    """Exclusive lock of an output directory (``filelock``), with the owner's PID and host recorded."""

    def __init__(self, out: Path):
        from filelock import FileLock

        self.out = out
        self.lock = FileLock(str(out / LOCK_FILE), timeout=0)

    def __enter__(self) -> "OutputLock":
        from filelock import Timeout

        self.out.mkdir(parents=True, exist_ok=True)
        try:
            self.lock.acquire()
        except Timeout:
            owner = {}
            try:
                owner = json.loads((self.out / OWNER_FILE).read_text())
            except (OSError, ValueError):
                pass
            raise SweepLocked(
                f"output directory locked by PID {owner.get('pid', '?')} on host "
                f"{owner.get('host', '?')} (since {owner.get('since', '?')}): {self.out}"
            ) from None
        atomic_write_text(
            self.out / OWNER_FILE,
            json.dumps(
                {
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "since": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                }
            )
            + "\n",
        )
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            (self.out / OWNER_FILE).unlink()
        except OSError:
            pass
        self.lock.release()


# ---- executors -------------------------------------------------------------------------------

Task = Callable[[RunSpec, str], dict[str, Any]]


class InProcessExecutor:
    """``-j 1``: runs one after another in this process, no Dask."""

    def __init__(self) -> None:
        self.description = "in-process"

    def map(self, task: Task, specs: list[RunSpec], runs_dir: str) -> Iterable[tuple[RunSpec, dict[str, Any]]]:
        for s in specs:
            try:
                res = task(s, runs_dir)
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # noqa: BLE001 — recorded, the sweep goes on
                error = f"{type(exc).__name__}: {exc}"
                write_failed(runs_dir, s, error)
                res = {"id": s.run_id, "status": "failed", "error": error, "wall_s": 0.0}
            yield s, res

    def close(self) -> None:
        pass


SCHEDULER_TIMEOUT_S = 5
"""How long ``--scheduler ADDRESS`` may take to answer before the sweep stops with one line."""


def _connect(client_class: Any, address: str) -> Any:
    """A Dask client of the scheduler at ``address``; a ConfigError naming ``--scheduler``, the address and
    the cause (the deepest one distributed chained: connection refused, unknown host, ...) when it cannot
    be reached within :data:`SCHEDULER_TIMEOUT_S` or what answers is not a Dask scheduler."""
    try:
        return client_class(address, timeout=f"{SCHEDULER_TIMEOUT_S}s")
    except Exception as exc:  # noqa: BLE001 — whatever the connection attempt raised: one line
        root = exc
        while (root.__cause__ or root.__context__) is not None:
            root = root.__cause__ or root.__context__
        if isinstance(root, OSError) and root.strerror:
            cause = f"{root.strerror} (tried for {SCHEDULER_TIMEOUT_S} s)"
        elif isinstance(exc, (OSError, TimeoutError)):
            cause = f"no answer within {SCHEDULER_TIMEOUT_S} s"
        elif isinstance(exc, (ValueError, TypeError)):
            cause = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        else:
            cause = f"what answered is not a Dask scheduler ({type(exc).__name__})"
        raise ConfigError.single("--scheduler", f"cannot reach a Dask scheduler there: {cause}", address) from None


@contextlib.contextmanager
def _interrupts_held() -> Iterator[list[int]]:
    """Hold Ctrl-C while a Dask cluster starts; yields the list that records one that came meanwhile.

    Ctrl-C reaches the whole process group: the worker processes must not act on it (each would print
    a page of tracebacks) and let this process shut them down. SIGINT is blocked in this thread before
    distributed is imported, so every thread distributed starts — those that spawn the worker
    processes among them — blocks it too, and the workers inherit the blocked signal, for ever pending
    in them. Here a recording handler replaces KeyboardInterrupt meanwhile (a thread that existed
    before, e.g. a math library's, may still take the signal): the caller stops once the cluster is
    up and can be closed, instead of losing the interrupt and running on.

    multiprocessing's resource tracker is started first, here: started later from distributed's
    thread, its launch unblocks SIGINT in that thread (it blocks and then *unblocks* the signals it
    ignores rather than restoring the mask), and every worker process would inherit that."""
    import signal
    import threading
    from multiprocessing import resource_tracker

    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    resource_tracker.ensure_running()
    seen: list[int] = []
    handler = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield seen
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a pending Ctrl-C is recorded here
        signal.signal(signal.SIGINT, handler)


class DaskExecutor:
    """``-j N`` (LocalCluster on 127.0.0.1, N processes × 1 thread) or ``--scheduler ADDRESS``.

    One task per run (``pure=False``); results come back through ``as_completed``. A task whose
    worker dies is retried once (``distributed.scheduler.allowed-failures = 1``) and then recorded
    as failed (``KilledWorker``). Workers hold only the task they run
    (``worker-saturation = 1.0``), so a dying worker takes no innocent queued run down with it.
    """

    def __init__(self, jobs: int = 2, scheduler: str | None = None, allowed_failures: int = 1):
        self.cluster = self.client = None
        if scheduler:
            self._configure(allowed_failures)
            from distributed import Client

            self.client = _connect(Client, scheduler)
            self.description = f"Dask scheduler {scheduler}"
            return
        try:
            with _interrupts_held() as interrupted:  # before distributed starts its first thread
                self._configure(allowed_failures)
                from distributed import Client, LocalCluster

                # no fixed port; logs at CRITICAL only: a worker busy with a run when the sweep stops logs an
                # ERROR with a traceback for the heartbeat it could not send (a failed run is recorded
                # from the task's own exception, not from logs)
                self.cluster = LocalCluster(
                    n_workers=jobs,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=":0",
                    silence_logs=50,
                )
                self.client = Client(self.cluster)
            if interrupted:
                raise KeyboardInterrupt
        except BaseException:  # Ctrl-C during the start-up: the workers must not outlive the sweep
            self.close()
            raise
        self.description = f"Dask LocalCluster, {jobs} workers on 127.0.0.1"

    @staticmethod
    def _configure(allowed_failures: int) -> None:
        import dask

        dask.config.set(
            {
                "distributed.scheduler.allowed-failures": allowed_failures,
                "distributed.scheduler.worker-saturation": 1.0,
                "distributed.worker.daemon": False,
                "distributed.admin.tick.limit": "60s",
            }
        )

    def map(self, task: Task, specs: list[RunSpec], runs_dir: str) -> Iterable[tuple[RunSpec, dict[str, Any]]]:
        from distributed import as_completed

        futures = {}
        for s in specs:
            fut = self.client.submit(task, s, runs_dir, pure=False, key=f"cnsim-run-{s.run_id}-{time.monotonic_ns()}")
            futures[fut] = s
        try:
            for fut in as_completed(futures):
                s = futures[fut]
                try:
                    res = fut.result()
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:  # noqa: BLE001 — KilledWorker, CommClosedError, ...
                    error = f"{type(exc).__name__}: {exc}"
                    if type(exc).__name__ == "KilledWorker":
                        error = f"worker process died while running this run ({error})"
                    write_failed(runs_dir, s, error)
                    res = {"id": s.run_id, "status": "failed", "error": error, "wall_s": 0.0}
                yield s, res
        finally:
            for fut in futures:
                if not fut.done():
                    fut.cancel()

    def close(self) -> None:
        try:
            if self.client is not None:
                self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


# ---- the sweep -------------------------------------------------------------------------------


@dataclass
class SweepOutcome:
    """What a sweep did: counts by status and the per-run statuses."""

    out: Path
    total: int
    executed: int = 0
    skipped: int = 0
    ok: int = 0
    failed: int = 0
    runs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0


def plan(runs: list[RunSpec], runs_dir: Path, force: bool = False) -> list[tuple[RunSpec, str]]:
    """(run, reason) for every run that would execute: missing, failed before, or forced."""
    todo = []
    for r in runs:
        m = read_manifest(run_dir(runs_dir, r.run_id))
        if force:
            todo.append((r, "forced"))
        elif m is None:
            todo.append((r, "missing"))
        elif m.get("status") != "ok":
            todo.append((r, f"previous status {m.get('status')}"))
    return todo


def _clean_temporaries(runs_dir: Path) -> None:
    if runs_dir.is_dir():
        for p in runs_dir.glob(".*.tmp-*"):
            shutil.rmtree(p, ignore_errors=True)
        for p in runs_dir.glob(".*.old-*"):
            shutil.rmtree(p, ignore_errors=True)


def _status_of(runs_dir: Path, r: RunSpec) -> dict[str, Any]:
    m = read_manifest(run_dir(runs_dir, r.run_id))
    entry = r.brief()
    entry["status"] = m.get("status", "pending") if m else "pending"
    if m and m.get("error"):
        entry["error"] = m["error"].splitlines()[0]
    if m and m.get("wall_s") is not None:
        entry["wall_s"] = m["wall_s"]
    return entry


def write_sweep_json(
    out: Path,
    spec: SweepSpec,
    runs: list[RunSpec],
    statuses: dict[str, dict[str, Any]],
    extra: Mapping[str, Any] | None = None,
) -> None:
    """``sweep.json``: the sweep's spec, every run with its status, counts; rewritten atomically."""
    entries = []
    counts: dict[str, int] = {}
    for r in runs:
        e = statuses.get(r.run_id) or {**r.brief(), "status": "pending"}
        entries.append(e)
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    doc = {
        "name": spec.name,
        "spec": spec.model_dump(mode="json", by_alias=True),
        "tool_version": tool_version(),
        "updated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "parameter_order": list(spec.parameters),
        "total": len(runs),
        "counts": counts,
        "runs": entries,
        **(extra or {}),
    }
    atomic_write_text(out / SWEEP_FILE, json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")


def run_sweep(
    spec: SweepSpec,
    out: str | os.PathLike[str],
    root: Path | str = ".",
    jobs: int = 1,
    scheduler: str | None = None,
    force: bool = False,
    progress: bool = True,
    task: Task | None = None,
    plots: bool = False,
    executor: Any = None,
    label: str | None = None,
) -> SweepOutcome:
    """Run a sweep into ``out`` (locked meanwhile); finished runs are skipped unless ``force``.

    ``jobs == 1`` and no ``scheduler``: in-process. Otherwise Dask (LocalCluster or ``scheduler``),
    or the given ``executor`` (anything with ``map(task, specs, runs_dir)`` and ``close()``).
    Failing runs are recorded and counted; the outcome's ``exit_code`` is 1 if any failed.
    """
    out = check_sweep(out)
    runs = expand(spec, root, plots=plots)
    runs_dir = out / "runs"
    with OutputLock(out):
        runs_dir.mkdir(parents=True, exist_ok=True)
        _clean_temporaries(runs_dir)
        todo = [r for r, _ in plan(runs, runs_dir, force)]
        statuses = {r.run_id: _status_of(runs_dir, r) for r in runs}
        if force:
            for r in todo:
                statuses[r.run_id]["status"] = "pending"
        outcome = SweepOutcome(out, len(runs), skipped=len(runs) - len(todo))
        extra: dict[str, Any] = {"executor": None}
        write_sweep_json(out, spec, runs, statuses, extra)
        if force:
            for r in todo:  # a folder the user put there (or added files to) stays: one line names it
                remove_result(run_dir(runs_dir, r.run_id), field=f"runs/{r.run_id}")
        own_executor = executor is None and bool(todo)
        if executor is None and todo:
            executor = InProcessExecutor() if jobs <= 1 and not scheduler else DaskExecutor(jobs, scheduler)
        if executor is not None:
            extra["executor"] = executor.description
        bar = SweepProgress(len(todo), label or spec.name or "sweep", enabled=progress)
        last_write = time.monotonic()
        try:
            for r, res in executor.map(task or execute_run, todo, str(runs_dir)) if todo else ():
                status = res.get("status", "failed")
                if status == "skipped":
                    status = "ok"
                outcome.executed += 1
                outcome.ok += status == "ok"
                outcome.failed += status != "ok"
                entry = r.brief()
                entry.update(status=status, wall_s=res.get("wall_s"))
                if res.get("error"):
                    entry["error"] = str(res["error"]).splitlines()[0]
                statuses[r.run_id] = entry
                bar.advance(status)
                if time.monotonic() - last_write > 2.0:
                    write_sweep_json(out, spec, runs, statuses, extra)
                    last_write = time.monotonic()
        finally:
            bar.close()
            write_sweep_json(out, spec, runs, statuses, extra)
            if own_executor and executor is not None:
                executor.close()
        outcome.runs = [statuses[r.run_id] for r in runs]
        outcome.failed = sum(1 for e in outcome.runs if e["status"] not in ("ok",))
        return outcome
