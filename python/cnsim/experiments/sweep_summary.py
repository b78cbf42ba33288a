"""Sweep summaries: the metrics of every finished run of a sweep folder as one table, and the
per-point mean, standard deviation and confidence interval over replications.

Used by ``cnsim sweep`` / ``cnsim summarize`` and the reproduction studies; split from
:mod:`cnsim.experiments.sweep` (which re-exports every name here) so each file holds one concern.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any, Mapping

from cnsim.exceptions import ConfigError
from cnsim.experiments.sweep import SWEEP_FILE, atomic_path, read_manifest
from cnsim.report.sweep_plot import add_si_columns

NON_METRICS = {"seed", "replication", "wall_s", "scenario", "scheme", "sim_time_s", "warmup_s", "conservation.ok"}


def _numbers(value: Any) -> bool:
    """A non-empty list of plain numbers (PFC's per-priority counters)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    )


def flat_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """Every numeric metric of a ``summary.json`` as ``name → value``.

    Scalars keep their dotted names (``fct.mean_us``); list entries are keyed by their names:
    ``flows[h1>h9].throughput_bps``, ``queues[sw1>sw2].mean_bytes``, ``links[h1>sw1].paused_fraction``;
    lists of numbers by index: ``pfc.pause_sent[3]`` (priority 3).
    Derived: ``throughput.aggregate_bps`` (sum over flows), ``throughput.min_bps``, ``throughput.max_bps``.
    """
    out: dict[str, float] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, bool):
            out[prefix] = float(value)
        elif isinstance(value, (int, float)):
            out[prefix] = float(value)
        elif _numbers(value):  # per-priority counters (pfc.pause_sent[3])
            for i, v in enumerate(value):
                out[f"{prefix}[{i}]"] = float(v)

    for key, value in summary.items():
        if key in ("flows", "queues", "links") and isinstance(value, list):
            a, b = {"flows": ("src", "dst"), "queues": ("switch", "port"), "links": ("from", "to")}[key]
            for item in value:
                name = f"{key}[{item.get(a)}>{item.get(b)}]"
                for k, v in item.items():
                    if k not in (a, b, "id"):
                        walk(f"{name}.{k}", v)
        else:
            walk(key, value)
    tps = [float(f.get("throughput_bps", 0.0)) for f in summary.get("flows", []) or []]
    if tps:
        out["throughput.aggregate_bps"] = sum(tps)
        out["throughput.min_bps"] = min(tps)
        out["throughput.max_bps"] = max(tps)
    for k in NON_METRICS:
        out.pop(k, None)
    return out


def collect_runs(out: str | os.PathLike[str]) -> "Any":
    """One row per run of a sweep directory: ``run_id``, ``status``, ``replication``, ``seed``,
    ``param:<path>`` columns and every metric of :func:`flat_metrics` (ok runs only have metrics)."""
    import pandas as pd

    out = Path(out)
    rows = []
    order: dict[str, int] = {}
    param_order: list[str] = []
    try:  # the sweep's own order (points in file order, then replications)
        doc = json.loads((out / SWEEP_FILE).read_text())
        order = {e["id"]: i for i, e in enumerate(doc["runs"])}
        param_order = list(doc.get("parameter_order") or doc["spec"].get("parameters", {}))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    dirs = (
        sorted((out / "runs").iterdir(), key=lambda d: (order.get(d.name, len(order)), d.name))
        if (out / "runs").is_dir()
        else []
    )
    if order:  # exactly the runs of the current sweep.json (issue 14): older runs in the folder are left out
        dirs = [d for d in dirs if d.name in order]
    for d in dirs:
        if d.name.startswith("."):
            continue
        m = read_manifest(d)
        if m is None:
            continue
        row: dict[str, Any] = {
            "run_id": m.get("run_id", d.name),
            "status": m.get("status"),
            "replication": m.get("replication"),
            "seed": m.get("seed"),
            "sweep": m.get("sweep"),
        }
        params = m.get("parameters") or {}
        for k in [*[p for p in param_order if p in params], *[p for p in params if p not in param_order]]:
            row[f"param:{k}"] = params[k]
        if m.get("status") == "ok":
            try:
                row.update(flat_metrics(json.loads((d / "summary.json").read_text())))
            except (OSError, ValueError):
                row["status"] = "unreadable"
        rows.append(row)
    return pd.DataFrame(rows)


def param_columns(df: "Any") -> list[str]:
    return [c for c in df.columns if str(c).startswith("param:")]


def summarize_frame(runs: "Any", confidence: float = 0.95) -> "Any":
    """Tidy table: parameters, ``metric``, ``mean``, ``std``, ``ci95`` (Student-t half-width), ``n``."""
    import numpy as np
    import pandas as pd
    from scipy import stats

    if runs.empty:
        return pd.DataFrame(columns=["metric", "mean", "std", "ci95", "n"])
    ok = runs[runs["status"] == "ok"]
    params = param_columns(runs)
    meta = {"run_id", "status", "replication", "seed", "sweep", *params}
    metrics = [c for c in ok.columns if c not in meta]
    if ok.empty or not metrics:
        return pd.DataFrame(columns=[*params, "metric", "mean", "std", "ci95", "n"])
    keyed = ok[[*params, *metrics]].copy()
    for p in params:  # group keys must be hashable and stable (lists, units as strings)
        keyed[p] = keyed[p].map(lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
    arr = keyed[metrics].to_numpy(dtype=float, na_value=np.nan)
    if params:
        codes, uniques = pd.MultiIndex.from_frame(keyed[params].astype(object)).factorize()
    else:
        codes, uniques = np.zeros(len(keyed), dtype=int), [()]
    frames = []
    for g in range(len(uniques)):
        block = arr[codes == g]
        n = np.sum(~np.isnan(block), axis=0)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            # a metric with one value (or none) in a group: std is undefined and set to NaN below
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(block, axis=0) if len(block) else np.full(len(metrics), np.nan)
            std = np.nanstd(block, axis=0, ddof=1) if len(block) > 1 else np.full(len(metrics), np.nan)
        key = uniques[g] if params else ()
        part = pd.DataFrame({"metric": metrics, "mean": mean, "std": np.where(n > 1, std, np.nan), "n": n})
        for p, v in zip(params, key if isinstance(key, tuple) else (key,)):
            part.insert(len(part.columns) - 4, p, v)
        frames.append(part)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        agg = pd.concat(frames, ignore_index=True)
    agg = agg[agg["n"] > 0]
    agg["n"] = agg["n"].astype(int)
    q = stats.t.ppf(0.5 + confidence / 2, np.maximum(agg["n"] - 1, 1))
    agg["ci95"] = np.where(agg["n"] > 1, q * agg["std"] / np.sqrt(agg["n"]), np.nan)
    agg = agg[[*params, "metric", "mean", "std", "ci95", "n"]].reset_index(drop=True)
    agg = agg.rename(columns={p: p.removeprefix("param:") for p in params})

    # beside each label column ("100Mbps"), its value in SI base units ("<param> [bit/s]") for numeric axes
    return add_si_columns(agg, [p.removeprefix("param:") for p in params])


def run_problems(out: str | os.PathLike[str]) -> list[str]:
    """Warnings about a sweep folder: runs on disk that the current sweep.json does not list (stale:
    left out of the summary), and listed runs that are missing or did not finish ok."""
    out = Path(out)
    try:
        doc = json.loads((out / SWEEP_FILE).read_text())
        listed = [e["id"] for e in doc["runs"]]
    except (OSError, ValueError, KeyError, TypeError):
        return ["no readable sweep.json: every run under runs/ is summarised"]
    on_disk = (
        {d.name for d in (out / "runs").iterdir() if not d.name.startswith(".")} if (out / "runs").is_dir() else set()
    )
    stale = sorted(on_disk - set(listed))
    missing = [i for i in listed if i not in on_disk]
    bad = []
    for i in listed:
        if i in on_disk:
            m = read_manifest(out / "runs" / i)
            if m is None or m.get("status") != "ok":
                bad.append(i)
    msgs = []
    if stale:
        msgs.append(
            f"{len(stale)} run(s) under runs/ are not in the current sweep.json (an earlier sweep into "
            f"this folder) and are left out: {', '.join(stale[:5])}{' …' if len(stale) > 5 else ''}"
        )
    if missing:
        msgs.append(
            f"{len(missing)} run(s) of the sweep have not run yet: {', '.join(missing[:5])}"
            f"{' …' if len(missing) > 5 else ''} (rerun the sweep to finish them)"
        )
    if bad:
        msgs.append(f"{len(bad)} run(s) failed or did not finish: {', '.join(bad[:5])}{' …' if len(bad) > 5 else ''}")
    return msgs


def summarize(out: str | os.PathLike[str]) -> tuple[Path, Path, "Any"]:
    """Write ``summary.parquet`` and ``summary.csv`` (tidy) and ``runs.parquet`` (one row per run)."""
    out = Path(out)
    if not (out / "runs").is_dir():
        raise ConfigError.single(str(out), "not a sweep directory (no runs/); run `cnsim sweep` first")
    runs = collect_runs(out)
    table = summarize_frame(runs)
    pq, csv = out / "summary.parquet", out / "summary.csv"
    _atomic_frame(runs.rename(columns={p: p for p in runs.columns}), out / "runs.parquet")
    _atomic_frame(table, pq)
    _atomic_frame(table, csv, csv=True)
    return pq, csv, table


def summarize_with_runs(out: str | os.PathLike[str]) -> tuple["Any", "Any"]:
    """Like :func:`summarize`, returning (runs frame, tidy table)."""
    out = Path(out)
    runs = collect_runs(out)
    table = summarize_frame(runs)
    _atomic_frame(runs, out / "runs.parquet")
    _atomic_frame(table, out / "summary.parquet")
    _atomic_frame(table, out / "summary.csv", csv=True)
    return runs, table


def _atomic_frame(df: "Any", path: Path, csv: bool = False) -> None:
    with atomic_path(path) as tmp:
        if csv:
            df.to_csv(tmp, index=False)
        else:
            obj = df.copy()
            for c in obj.columns:  # mixed-type parameter columns (e.g. "5ms" and 0.005) as strings
                if (str(c).startswith("param:") or c in ("run_id", "status", "sweep")) and obj[c].dtype == object:
                    obj[c] = obj[c].map(lambda v: v if v is None or isinstance(v, str) else json.dumps(v))
            obj.to_parquet(tmp, index=False)
