"""Python API: ``cnsim.run(scenario, seed=..., overrides=..., out=...) -> Result``.

The CLI is a thin layer over these functions.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from cnsim import schemes
from cnsim.compile.compiler import compile_ir_once
from cnsim.compile.engine import core
from cnsim.compile.loader import dump_toml, load_scenario
from cnsim.exceptions import ConfigError, ConfigWarning, InvariantError, Problem, RunInterrupted
from cnsim.results import notes
from cnsim.results.outdir import check, commit_output, open_output, write_failure
from cnsim.results.result import Result, TablesOnDisk, _write_parquet, frames_from_core, queue_cdf_table  # noqa: F401 — frames_from_core: part of the API
from cnsim.scenario.spec import Scenario
from cnsim.scenario.units import format_quantity

ScenarioLike = str | os.PathLike[str] | Mapping[str, Any] | Scenario
Progress = Callable[[float], None]
"""Called with the simulated time (s) between chunks of a run. With ``out``, an object that also has a
``writing()`` method is told when the simulation has ended and its outputs are being written."""


def resolve(scenario: ScenarioLike, seed: int | None = None, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """A validated :class:`Scenario` from a path, dict or Scenario, with overrides and seed applied."""
    overrides = dict(overrides or {})
    if seed is not None:
        overrides["run.seed"] = seed
    if isinstance(scenario, Scenario):
        if not overrides:
            return scenario
        scenario = scenario.model_dump(mode="json", exclude_none=True)
    return load_scenario(scenario, overrides)


def config_hash(ir: Mapping[str, Any]) -> str:
    """sha-256 of the canonical JSON of the IR (sorted keys, no spaces)."""
    canonical = json.dumps(ir, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def git_describe() -> str | None:
    """``git describe --always --dirty`` of the source tree the package runs from, if any."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _provenance_in_background() -> Callable[[], dict[str, Any]]:
    """``git_describe()`` and ``platform.platform()`` (each runs a subprocess: ``git describe``,
    ``uname -p``) in a thread while the results are prepared; the returned function waits for them."""
    import threading

    found: dict[str, Any] = {}

    def work() -> None:
        found["git_describe"] = git_describe()
        found["platform"] = platform.platform()

    thread = threading.Thread(target=work, name="cnsim-provenance", daemon=True)
    thread.start()

    def result() -> dict[str, Any]:
        thread.join()
        if len(found) < 2:  # the thread failed: the same calls here, where an error is seen
            return {"git_describe": git_describe(), "platform": platform.platform()}
        return found

    return result


_prefetched: Callable[[], dict[str, Any]] | None = None
"""Provenance started by :func:`prefetch_provenance` for the next :func:`run`."""


def prefetch_provenance() -> None:
    """Start finding the manifest's provenance (``git describe``, ``platform.platform()``) now, in the
    background, for the next :func:`run` of this process.

    For a process that makes one run (``cnsim run``): its two subprocesses then overlap the scenario's
    validation and the import of pyarrow (≈ 0.1 s, one core busy) instead of being waited for at the end
    (≈ 20 ms of a 1-ms run). Without it a run starts them after its simulation, as before."""
    global _prefetched
    _prefetched = _provenance_in_background()


def _take_provenance() -> Callable[[], dict[str, Any]]:
    """The prefetched provenance (once), else started now."""
    global _prefetched
    found, _prefetched = _prefetched, None
    return found if found is not None else _provenance_in_background()


_SCENARIO_TIMES = {
    "observe.sample_interval_ps": "observe.sample_interval",
    "observe.throughput_bin_ps": "observe.throughput_bin",
}
"""Engine fields that are a scenario field in picoseconds: their errors name the scenario field."""


def _scheme_names(scheme: str | None) -> dict[str, str]:
    """The engine's name of each of ``scheme``'s parameters (a scenario field ``kmin`` is ``kmin_bytes``
    in base units) → the scenario's name, by the one naming rule (:func:`cnsim.schemes.engine_names`)."""
    if scheme is None or scheme not in schemes.SCHEMES:
        return {}
    return schemes.SCHEMES[scheme].engine_names()


def _scenario_error(exc: Exception, ir: Mapping[str, Any] | None = None) -> ConfigError:
    """The engine's ``ScenarioError("path: message")`` as a ConfigError: the scenario's own field where
    the engine's is one in base units (``observe.sample_interval_ps``, ``cm.params.kmin_bytes`` of the
    IR's scheme), with times in the scenario's units; ``ir.<path>`` otherwise."""
    import re

    params = _scheme_names((ir or {}).get("cm", {}).get("scheme"))
    problems = []
    for line in str(exc).splitlines() or [str(exc)]:
        path, sep, message = line.partition(": ")
        if sep and path in _SCENARIO_TIMES:
            message = re.sub(r"\b(\d+) ps\b", lambda m: format_quantity(int(m.group(1)), "time"), message)
            message = message.replace("observe.series", "observe.queue_ts / rp_rate / tcp_ts / pause_ts = false")
            problems.append(Problem(_SCENARIO_TIMES[path], message))
        elif sep and path.startswith("cm.params.") and path[len("cm.params.") :] in params:
            words = {k.rpartition(".")[2]: v for k, v in params.items()}
            message = re.sub(r"\b\w+\b", lambda m, words=words: words.get(m.group(0), m.group(0)), message)
            problems.append(Problem("cm.params." + params[path[len("cm.params.") :]], message))
        else:
            problems.append(Problem("ir." + path if sep else "ir", message if sep else line))
    return ConfigError(problems)


def engine_check(ir: Mapping[str, Any]) -> None:
    """The engine's own validation of an IR (what a run would refuse), as a ConfigError naming the
    scenario's fields; nothing when the engine is not built."""
    try:
        from cnsim import _core as engine  # the extension, optional here: validate without it when not built
    except ImportError:
        return
    try:
        engine.validate(json.dumps(ir))
    except engine.ScenarioError as exc:
        raise _scenario_error(exc, ir) from None


def run(
    scenario: ScenarioLike,
    seed: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    out: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    plots: bool = True,
    force: bool = False,
) -> Result:
    """Run one scenario and return its :class:`Result` (also saved into ``out`` when given).

    ``seed`` replaces ``run.seed``; ``overrides`` maps dotted paths to values as ``--set`` does.
    ``out`` must be new, empty or a previous cnsim result (a symbolic link to one is followed); a previous
    result holding files cnsim did not write needs ``force=True``, which replaces cnsim's files and keeps
    the others (see :mod:`cnsim.results.outdir`).
    ``progress`` is called with the simulated time in seconds between chunks of the run (and its
    ``writing()``, if it has one, when a run with ``out`` starts writing; see :data:`Progress`).
    The time series and FCT rows go to Parquet as the run goes, written by a thread beside the engine:
    into ``out``, or without it into a temporary folder removed with the Result. ``Result.tables``
    reads a table when it is first used, so no series is held whole in memory unless asked for.
    Raises :class:`ConfigError` (invalid input), :class:`InvariantError` (a model bug was
    detected), :class:`RunInterrupted` (Ctrl-C; nothing is written).
    """
    sc = resolve(scenario, seed, overrides)
    ir = compile_ir_once(sc)
    if out is not None:  # before the run: a bad location fails at once, a user's folder is never replaced
        check(out, force=force, scenario=scenario if isinstance(scenario, (str, os.PathLike)) else None, field="out")
    engine = core()
    if sc.cm.scheme not in engine.schemes():
        raise ConfigError.single(
            "cm.scheme", f"not available in this engine build; known: {', '.join(engine.schemes())}", sc.cm.scheme
        )
    if out is None and sc.observe.pcap:
        import warnings

        warnings.warn(
            "observe.pcap: packet traces are written only into an output directory (cnsim run, or "
            "cnsim.run(..., out=...)); this run records none",
            ConfigWarning,
            stacklevel=2,
        )
        sc = sc.model_copy(update={"observe": sc.observe.model_copy(update={"pcap": []})})
        ir = compile_ir_once(sc)
    # the time series go to Parquet as the run goes, written beside the engine (memory independent of
    # the run's length); without `out`, into a temporary folder the Result reads its tables from
    from cnsim.results import stream  # pyarrow and numpy: imported before the clock of wall_s starts

    ir_json = json.dumps(ir)  # the compiled IR as the engine takes it (5 ms for 1 000 hosts): compiling is not the run
    started = _dt.datetime.now(_dt.timezone.utc)
    t0 = time.perf_counter()
    tmp = None
    try:
        tmp = open_output(out) if out is not None else Path(tempfile.mkdtemp(prefix="cnsim-run-"))
        summary_json, tables = stream.run(engine, ir_json, tmp, progress, ir=ir)
    except BaseException as exc:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, KeyboardInterrupt):
            raise RunInterrupted("interrupted; no output written") from None
        if isinstance(exc, engine.ScenarioError):
            raise _scenario_error(exc, ir) from None
        if isinstance(exc, engine.InvariantError):
            raise InvariantError(str(exc)) from None
        if out is not None:
            if (failure := write_failure(exc, out)) is not None:
                raise failure from None
        raise
    wall = time.perf_counter() - t0
    # after the run, not during it (unless prefetched before it): the subprocesses would compete with
    # the engine (wall_s)
    provenance = _take_provenance()
    summary = json.loads(summary_json)
    summary["wall_s"] = wall

    notes.add(summary, ir, sc.cm.params)
    from cnsim import __version__  # on first use: the version comes from the installed dist-info (cnsim/__init__.py)

    manifest = {
        "status": "ok",
        "scenario": sc.model_dump(mode="json", exclude_none=True),
        "config_hash": config_hash(ir),
        "seed": sc.run.seed,
        "replication": sc.run.replication,
        "tool_version": __version__,
        "core_version": engine.version(),
        "git_describe": provenance()["git_describe"],
        "python": sys.version.split()[0],
        "platform": provenance()["platform"],
        "started_at": started.isoformat(timespec="seconds"),
        "wall_s": wall,
        "events": summary.get("events"),
        "sim_time_s": summary.get("sim_time_s"),
    }
    try:
        return _save_streamed(tmp, out, tables, Result(summary, manifest, {}, dump_toml(sc)), plots, force)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)

        if out is not None and (failure := write_failure(exc, out)) is not None:
            raise failure from None
        raise


def _save_streamed(
    tmp: Path,
    out: str | os.PathLike[str] | None,
    tables: Mapping[str, Any],
    result: Result,
    plots: bool,
    force: bool = False,
) -> Result:
    """Write the tables the engine returned at the end of a streamed run beside its series and FCT
    rows, then the summary, plots and manifest, and move the folder to ``out``; the Result reads its
    tables from there."""
    import numpy as np

    from cnsim.results import slowdown, stream  # pyarrow and numpy: only when a run writes its tables

    stream.write_parquet(queue_cdf_table(result.summary), tmp / "queue_cdf.parquet")
    # without pandas (a short run starts and ends fast) unless the flow rows are uneven
    flows = stream.flows_table(tables["flows"], result.summary.get("flows", []))
    if flows is not None:
        stream.write_parquet(flows, tmp / "flows.parquet")
    else:
        _write_parquet(frames_from_core({"flows": tables["flows"]}, result.summary)["flows"], tmp / "flows.parquet")
    # the FCT rows were streamed with their slowdown; the summary's percentiles read two columns back
    fct = stream.ParquetFile(tmp / "fct.parquet")
    if fct.metadata.num_rows and "slowdown" in fct.schema_arrow.names:
        cols = fct.read(columns=["slowdown", "bytes"])
        result.summary["fct_slowdown"] = slowdown.summary_of(
            stream.numbers_of(cols["slowdown"], np.float64), stream.numbers_of(cols["bytes"], np.uint64)
        )
    fct.close()
    result.tables = TablesOnDisk(tmp)  # plots read what was written
    if out is None:  # the API without a folder: the tables are read from the temporary one when used
        import weakref

        weakref.finalize(result.tables, shutil.rmtree, str(tmp), True)  # with the last reader of the folder
        return result
    result.write_rest(tmp, plots)
    result.tables = TablesOnDisk(commit_output(tmp, out, force))
    return result
