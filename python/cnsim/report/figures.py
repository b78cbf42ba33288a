"""The report's figures: per study the plots matching the seed's figures (from the runs' Parquet
files), and per claim the runs that decide it. Drawn with matplotlib (Agg) into PNG bytes, which
:mod:`cnsim.report.document` embeds in the HTML page and writes beside the Markdown."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from cnsim.results.result import read_table  # noqa: E402


def _first_ok_run(sweep_dir: Path) -> Path | None:
    try:
        doc = json.loads((sweep_dir / "sweep.json").read_text())
    except (OSError, ValueError):
        return None
    for e in doc.get("runs", []):
        if e.get("status") == "ok" and e.get("replication", 0) == 0:
            return sweep_dir / "runs" / e["id"]
    for e in doc.get("runs", []):
        if e.get("status") == "ok":
            return sweep_dir / "runs" / e["id"]
    return None


def _read(run: Path | None, table: str) -> pd.DataFrame:
    if run is None or not (run / f"{table}.parquet").exists():
        return pd.DataFrame()
    return read_table(run / f"{table}.parquet")  # rp_rate, pause_ts: the value at every sample


def _label(study: dict, name: str) -> str:
    return study["sweeps"].get(name, {}).get("label") or name


def _draw_queue(ax, study: dict, fig: dict, sdir: Path, ran: list[str]) -> bool:
    """A ``queue`` figure: the selected queue (or the largest) over time, a line per sweep; True if drawn."""
    drew = False
    a, _, b = (fig.get("select") or "").partition(">")
    for n in ran:
        q = _read(_first_ok_run(sdir / n), "queue_ts")
        if q.empty:
            continue
        if a:
            q = q[(q["switch"].astype(str) == a) & (q["port"].astype(str) == b)]
        else:
            q = q.groupby("t_s", as_index=False)["bytes"].max()
        ax.plot(q["t_s"] * 1e3, q["bytes"] / 1e3, label=_label(study, n), lw=0.9)
        drew = drew or not q.empty
    ax.set_xlabel("time (ms)")
    ax.set_ylabel(f"queue {fig.get('select') or '(max)'} (KB)")
    return drew


def _draw_throughput(ax, study: dict, fig: dict, sdir: Path, ran: list[str], kind: str) -> bool:
    """A ``throughput`` or ``rate`` figure: per flow or aggregate, a line per sweep; True if drawn."""
    drew = False
    table, col = ("flow_tp", "bps") if kind == "throughput" else ("rp_rate", "rate_bps")
    for n in ran:
        t = _read(_first_ok_run(sdir / n), table)
        if t.empty:
            continue
        if kind == "rate" or fig.get("per_flow"):
            for (src, dst), g in t.groupby([t["src"].astype(str), t["dst"].astype(str)], sort=True):
                if g[col].notna().any():
                    ax.plot(g["t_s"] * 1e3, g[col] / 1e9, lw=0.8, label=f"{src}→{dst}")
                    drew = True
        else:
            # the aggregate series counts every flow (flow_tp holds observe.flow_series flows)
            tot = _read(_first_ok_run(sdir / n), "throughput_ts") if kind == "throughput" else t
            tot = t if tot.empty else tot
            agg = tot if "flow" not in tot else tot.groupby("t_s", as_index=False)[col].sum()
            ax.plot(agg["t_s"] * 1e3, agg[col] / 1e9, lw=0.9, label=_label(study, n))
            drew = True
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("throughput (Gb/s)" if kind == "throughput" else "RP rate (Gb/s)")
    return drew


def _draw_fct(ax, study: dict, sdir: Path, ran: list[str]) -> bool:
    """An ``fct`` figure: the CDF of completed transfers' FCT, a line per sweep; True if drawn."""
    drew = False
    for n in ran:
        t = _read(_first_ok_run(sdir / n), "fct")
        if t.empty:
            continue
        t = t[(t["completed"] == 1) & (t["bad"] == 0)]
        fct = ((t["end_s"] - t["start_s"]) * 1e6).sort_values()
        if fct.empty:
            continue
        ax.step(fct.values, (pd.RangeIndex(1, len(fct) + 1) / len(fct)), where="post", lw=0.9, label=_label(study, n))
        drew = True
    ax.set_xscale("log")
    ax.set_xlabel("flow completion time (µs)")
    ax.set_ylabel("CDF")
    return drew


def _draw_fairness(ax, study: dict, sdir: Path, ran: list[str]) -> bool:
    """A ``fairness`` figure: Jain's index per sweep, mean ± 95 % CI; True if drawn."""
    drew = False
    labels, means, errs = [], [], []
    for n in ran:
        p = sdir / n / "runs.parquet"
        if not p.exists():
            continue
        r = pd.read_parquet(p)
        v = r[r["status"] == "ok"]["fairness.jain"].dropna()
        if v.empty:
            continue
        labels.append(_label(study, n))
        means.append(v.mean())
        errs.append(_half(v))
    if labels:
        ax.bar(range(len(labels)), means, yerr=errs, color="#68a", capsize=4)
        ax.set_xticks(range(len(labels)), labels, rotation=15, ha="right", fontsize=7)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("Jain's fairness index")
        drew = True
    return drew


def _draw_cells(ax, study: dict, fig: dict) -> tuple[bool, bool]:
    """A ``cells`` figure: published values beside cnsim's per cell of a column; (drawn, cnsim values all missing)."""
    drew, missing = False, False
    cells = [c for c in study["cells"] if c["column"] == fig.get("column")]
    if cells:
        x = range(len(cells))
        pub = [c["published"] for c in cells]
        sim = [c["mean"] if c["mean"] is not None else float("nan") for c in cells]
        err = [c["ci95"] or 0 for c in cells]
        ax.bar([i - 0.2 for i in x], pub, width=0.4, label="published", color="#bbb")
        ax.bar([i + 0.2 for i in x], sim, width=0.4, yerr=err, label="cnsim (mean ± 95 % CI)", color="#47a", capsize=3)
        ax.set_xticks(list(x), [c["row"] for c in cells], rotation=20, ha="right", fontsize=7)
        ax.set_ylabel(fig.get("column"))
        if fig.get("log"):
            ax.set_yscale("log")
        drew = True
        if all(math.isnan(s) for s in sim):
            missing = True
    return drew, missing


def make_figure(study: dict, fig: dict, sdir: Path) -> tuple[bytes | None, str]:
    """(PNG bytes or None, note) for one declared figure."""
    kind = fig["kind"]
    names = fig.get("sweeps") or ([fig["sweep"]] if fig.get("sweep") else [])
    ran = [n for n in names if study["sweeps"].get(n, {}).get("status") == "ran"]
    missing = [n for n in names if n not in ran]
    note = (
        ("not available: " + "; ".join(f"{n} ({study['sweeps'].get(n, {}).get('reason')})" for n in missing))
        if missing
        else ""
    )
    if kind != "cells" and not ran:
        return None, note or "no runs"
    f, ax = plt.subplots(figsize=(6.4, 3.6), dpi=90)
    drew = False
    try:
        if kind == "queue":
            drew = _draw_queue(ax, study, fig, sdir, ran)
        elif kind in ("throughput", "rate"):
            drew = _draw_throughput(ax, study, fig, sdir, ran, kind)
        elif kind == "fct":
            drew = _draw_fct(ax, study, sdir, ran)
        elif kind == "fairness":
            drew = _draw_fairness(ax, study, sdir, ran)
        elif kind == "cells":
            drew, no_values = _draw_cells(ax, study, fig)
            if no_values:
                note = (note + "; " if note else "") + "cnsim values not available"
        if not drew:
            return None, note or "no data"
        ax.grid(alpha=0.3)
        handles, _ = ax.get_legend_handles_labels()
        if handles and len(handles) <= 12:
            ax.legend(fontsize=7)
        ax.set_title(fig["title"], fontsize=9)
        f.tight_layout()
        buf = io.BytesIO()
        f.savefig(buf, format="png")
        return buf.getvalue(), note
    finally:
        plt.close(f)


def _half(v: pd.Series) -> float:
    from scipy import stats

    n = len(v)
    return float(stats.t.ppf(0.975, n - 1) * v.std() / n**0.5) if n > 1 else 0.0


# ---- formatting ------------------------------------------------------------------------------


def claim_figure(c: dict) -> bytes | None:
    """One small panel per term: the value of every run (dots) and their mean (bar), in the term's unit —
    the runs that decide the claim."""
    terms = [(k, t) for k, t in c["terms"].items() if t.get("values")]
    if not terms:
        return None
    cols = min(len(terms), 7)
    rows = (len(terms) + cols - 1) // cols
    f, axes = plt.subplots(rows, cols, figsize=(1.5 * cols + 0.6, 2.0 * rows), dpi=80, squeeze=False)
    try:
        for ax in axes.flat[len(terms) :]:
            ax.axis("off")
        for ax, (k, t) in zip(axes.flat, terms):
            vals = t["values"]
            ax.bar([0], [t["mean"]], width=0.6, color="#ccd", edgecolor="#446")
            ax.plot([0] * len(vals), vals, "o", ms=3.5, color="#226")
            ax.set_xticks([0], [k], fontsize=8)
            ax.tick_params(axis="y", labelsize=7)
            ax.set_xlim(-0.8, 0.8)
            ax.set_title(t["sweep"], fontsize=7)
        f.suptitle(f"{c['id']}: {c['verdict']}", fontsize=9)
        f.tight_layout()
        buf = io.BytesIO()
        f.savefig(buf, format="png")
        return buf.getvalue()
    finally:
        plt.close(f)
