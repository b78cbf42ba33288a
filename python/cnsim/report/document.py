"""``cnsim report DIR``: a self-contained HTML page (plots as base64 PNG, no external resource) and a
Markdown version (PNG files beside it) for a directory written by ``cnsim reproduce`` — or for a single
sweep directory (its summary table and a plot per metric family).

Per study: the published tables side by side with cnsim's mean ± 95 % CI and a verdict, the plots
matching the seed's figures (from the runs' Parquet files), the sweeps (scheme, replications, seeds,
overrides, status) and the provenance (cnsim version, git commit, engine version).
"""

from __future__ import annotations

import base64
import datetime as _dt
import html as _html
import io
import json
import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from cnsim.api import git_describe
from cnsim.exceptions import ConfigError
from cnsim.experiments.sweep import atomic_write_text
from cnsim.experiments.sweep_summary import summarize
from cnsim.experiments.verdicts import count_cells
from cnsim.report import sweep_plot
from cnsim.report.figures import claim_figure, make_figure

VERDICT_CLASS = {
    "within band": "ok",
    "outside band": "bad",
    "explained": "expl",
    "not available": "na",
    "holds": "ok",
    "does not hold": "bad",
}

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1200px;
color:#222;line-height:1.4;padding:0 1em}
h1{border-bottom:2px solid #446}h2{border-bottom:1px solid #aab;margin-top:2em}
table{border-collapse:collapse;margin:0.6em 0;font-size:0.88em}
th,td{border:1px solid #ccd;padding:3px 7px;text-align:right}th{background:#eef}
td.l,th.l{text-align:left}
.ok{background:#dfd}.bad{background:#fdd}.expl{background:#ffd}.na{background:#eee;color:#777}
figure{display:inline-block;margin:0.5em;vertical-align:top;max-width:560px}
figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:0.85em;color:#444}
.prov{font-size:0.85em;color:#444}.legend{font-size:0.9em;max-width:60em}code{background:#f4f4f8;padding:0 3px}
"""


def fmt(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    x = float(x)
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}".replace(",", " ")
    if a >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}"


def cell_rows(study: dict) -> dict[str, list[dict]]:
    tables: dict[str, list[dict]] = {}
    for c in study["cells"]:
        tables.setdefault(c["table"], []).append(c)
    return tables


def sim_text(c: dict) -> str:
    if c["mean"] is None:
        return "–"
    return fmt(c["mean"]) + (f" ± {fmt(c['ci95'])}" if c.get("ci95") is not None else "") + f" (n={c['n']})"


def comment(c: dict) -> str:
    expl = c.get("explanation")
    if expl and c.get("verdict") == "outside band":
        expl = "suspected (not established under model reference §12 R9): " + expl
    elif expl and c.get("explained_by"):
        expl = f"explained ({c['explained_by']}): {expl} Evidence: {c.get('evidence')}"
    struct = f"structural: {c['structural']}" if c.get("structural") else None
    rep = f"counted once: the same measurement as {c['same_as']}" if c.get("same_as") else None
    bits = [x for x in (c.get("reason"), struct, rep, expl, c.get("note")) if x]
    return "; ".join(bits)


def term_text(name: str, t: dict) -> str:
    val = (
        "–"
        if t.get("mean") is None
        else fmt(t["mean"]) + (f" ± {fmt(t['ci95'])}" if t.get("ci95") is not None else "") + f" (n={t['n']})"
    )
    where = ", ".join(f"{k}={v}" for k, v in (t.get("where") or {}).items())
    return f"{name} = {val} [{t['sweep']}{' ' + where if where else ''}: {t.get('describe')}]"


def claims_section(s: dict, h: list[str], m: list[str], figdir: Path | None = None) -> None:
    """The study's claims: what the seed says, the criterion, the measured terms, the verdict, and a figure
    of the runs that decide each claim."""
    claims = s.get("claims") or []
    sid = s["id"]
    h.append(f"<h3 id='{sid}-claims'>Claims</h3>")
    m.append("### Claims\n")
    if not claims:
        h.append("<p>No qualitative claims recorded for this study.</p>")
        m.append("No qualitative claims recorded for this study.\n")
        return
    h.append(
        "<table><tr><th class='l'>claim</th><th class='l'>the seed says</th><th class='l'>criterion</th>"
        "<th class='l'>measured</th><th>verdict</th><th class='l'>note</th></tr>"
    )
    m.append("| claim | the seed says | criterion | measured | verdict | note |\n|---|---|---|---|---|---|")
    for c in claims:
        cls = VERDICT_CLASS.get(c["verdict"], "na")
        terms = [term_text(k, t) for k, t in c["terms"].items()]
        note = "; ".join(
            x
            for x in (
                c.get("reason"),
                ("suspected: " + c["suspect"]) if c.get("suspect") and c["verdict"] == "does not hold" else None,
            )
            if x
        )
        h.append(
            f"<tr class='{cls}'><td class='l'>{_html.escape(c['id'])}</td><td class='l'>"
            f"{_html.escape(c['source'])}: “{_html.escape(c['says'])}”</td><td class='l'>"
            f"{_html.escape(c['criterion'])}<br><code>{_html.escape(c['holds'])}</code></td><td class='l'>"
            + "<br>".join(_html.escape(x) for x in terms)
            + f"</td><td class='verdict'>{c['verdict']}</td><td class='l'>{_html.escape(note)}</td></tr>"
        )
        m.append(
            f"| {c['id']} | {c['source']}: “{c['says']}” | {c['criterion']} `{c['holds']}` | "
            + "<br>".join(terms).replace("|", "\\|")
            + f" | {c['verdict']} | {note} |"
        )
    h.append("</table>")
    m.append("")
    for c in claims:
        png = claim_figure(c)
        if png is None:
            continue
        cap = f"{c['id']} — the value of every run (dots) and the mean (bar) of each term"
        b64 = base64.b64encode(png).decode()
        h.append(
            f"<figure><img alt='{_html.escape(c['id'])}' src='data:image/png;base64,{b64}'>"
            f"<figcaption>{_html.escape(cap)}</figcaption></figure>"
        )
        if figdir is not None:
            name = f"{sid}-claim-{c['id']}.png"
            (figdir / name).write_bytes(png)
            m.append(f"![{c['id']}](figures/{name})\n\n*{cap}*\n")


# ---- report ----------------------------------------------------------------------------------


def _provenance(out: Path) -> dict[str, Any]:
    from cnsim import __version__  # on first use: the version comes from the installed dist-info (cnsim/__init__.py)

    prov = {
        "cnsim": __version__,
        "git": git_describe(),
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    try:
        from cnsim import _core  # the extension, optional here: a report of results needs no engine

        prov["core"] = _core.version()
    except Exception:  # noqa: BLE001
        prov["core"] = None
    try:
        idx = json.loads((out / "reproduce.json").read_text())
        prov["run_with"] = {
            "tool_version": idx.get("tool_version"),
            "git_describe": idx.get("git_describe"),
            "quick": idx.get("quick"),
        }
    except (OSError, ValueError):
        pass
    return prov


def load_studies(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*/study.json"))]


def replications_of(study: dict, only: set[str] | None = None) -> list[int]:
    """The replication counts of the sweeps that ran in ``study`` (study.json), ascending; ``only``: of
    these sweeps only."""
    return sorted(
        {
            int(e["replications"])
            for name, e in study.get("sweeps", {}).items()
            if e.get("replications") and (only is None or name in only)
        }
    )


def _sweeps_read(items: list[dict]) -> set[str]:
    """The sweeps the cells or claims ``items`` read (their own sweep and their terms')."""
    names: set[str] = set()
    for item in items:
        if item.get("sweep"):
            names.add(item["sweep"])
        names.update(t["sweep"] for t in (item.get("terms") or {}).values() if t.get("sweep"))
    return names


def verdict_sweeps(study: dict) -> set[str]:
    """The sweeps a verdict reads: those of the cells that are not sensitivity rows, and of the claims."""
    return _sweeps_read([c for c in study.get("cells", []) if not c.get("sensitivity")] + study.get("claims", []))


def _span(reps: list[int]) -> str:
    return str(reps[0]) if len(reps) == 1 else f"{reps[0]}–{reps[-1]}"


def replications_text(study: dict) -> str:
    """``"20 replications"``, ``"2–5 replications"``, or that none ran."""
    reps = replications_of(study)
    if not reps:
        return "no replication (nothing ran)"
    return f"{_span(reps)} replication{'s' if reps[-1] > 1 else ''}"


def _verdict_replications_text(study: dict) -> str:
    """As :func:`replications_text`, for the sweeps the verdicts read; the sensitivity rows' counts beside
    it where they differ."""
    read = verdict_sweeps(study)
    verdicts = replications_of(study, read)
    rows = _sweeps_read([c for c in study.get("cells", []) if c.get("sensitivity")]) - read
    rest = replications_of(study, rows)
    if not verdicts or not rest or rest == verdicts:
        return replications_text(study)
    return f"{_span(verdicts)} replication{'s' if verdicts[-1] > 1 else ''} (sensitivity rows {_span(rest)})"


def verdict_legend(studies: list[dict]) -> str:
    """What the overview's verdicts mean and how many replications each study's means rest on, placed
    beside the table (a reader of "claims hold 4/8" on 2 replications must see the 2 there). A study is
    named as resting on fewer than 5 replications by the sweeps its verdicts read: sensitivity rows are
    never a verdict."""
    few = [s["id"] for s in studies if (r := replications_of(s, verdict_sweeps(s))) and r[0] < 5]
    reps = "; ".join(f"{s['id']} {_verdict_replications_text(s)}" for s in studies)
    return (
        "**Legend.** A cell is *within band* when cnsim's mean lies within the published value ± its band "
        "(from the study file); *explained* when outside and the study shows the seed's own numbers "
        "inconsistent, or an unprinted value swept over its plausible range without reaching the band "
        "(model reference §12 R9); *open (outside band)* otherwise; *not available* when the scheme or "
        "scenario is missing or no run succeeded. *Structural* cells (fixed by construction) are counted "
        "apart from the discriminating ones. A claim *holds* when its criterion, written in the study file, "
        f"is true of the terms' means. Means over: {reps}."
        + (
            f" With fewer than 5 replications ({', '.join(few)}) the confidence intervals are wide and a "
            "verdict can flip between runs: read those counts as a smoke test, not a result."
            if few
            else ""
        )
    )


OVERVIEW_COLS = [
    "cells",
    "structural (within band)",
    "discriminating",
    "discriminating within band",
    "explained",
    "open (outside band)",
    "not available",
    "claims hold",
]


def overview(studies: list[dict], h: list[str], m: list[str]) -> None:
    """The counts per study: structural cells (fixed by construction, model reference §12 R9, R11) apart, then the verdicts of
    the discriminating cells, then the claims. Sensitivity rows are not cells; a repeated measurement counts once."""

    h.append(
        "<h2 id='overview'>Overview</h2><table><tr><th class='l' rowspan='2'>study</th><th rowspan='2'>cells</th>"
        "<th rowspan='2'>structural (within band)</th><th colspan='5'>discriminating cells</th>"
        "<th rowspan='2'>claims hold</th></tr><tr>" + "".join(f"<th>{c}</th>" for c in OVERVIEW_COLS[2:7]) + "</tr>"
    )
    m.append("## Overview\n\n| study | " + " | ".join(OVERVIEW_COLS) + " |\n|" + "---|" * (len(OVERVIEW_COLS) + 1))
    keys = [
        "cells",
        "structural",
        "structural within band",
        "discriminating",
        "discriminating within band",
        "discriminating explained",
        "discriminating outside band",
        "discriminating not available",
        "holds",
        "claims",
    ]
    tot = dict.fromkeys(keys, 0)
    repeated = 0
    for s in studies:
        c = count_cells(s["cells"])  # recounted: a study.json of an older cnsim lacks the newer keys
        vals = {
            **c,
            "cells": c["structural"] + c["discriminating"],
            "holds": s.get("claim_counts", {}).get("holds", 0),
            "claims": len(s.get("claims", [])),
        }
        repeated += c["repeated"]
        for k in keys:
            tot[k] += vals.get(k, 0)
        txt = _overview_row(vals)
        h.append(
            f"<tr><td class='l'><a href='#{s['id']}'>{s['id']}</a> {_html.escape(s['title'])}</td>"
            + "".join(f"<td>{v}</td>" for v in txt)
            + "</tr>"
        )
        m.append(f"| {s['id']} {_md_cell(s['title'])} | " + " | ".join(txt) + " |")
    txt = _overview_row(tot)
    h.append("<tr><th class='l'>total</th>" + "".join(f"<th>{v}</th>" for v in txt) + "</tr></table>")
    m.append("| total | " + " | ".join(txt) + " |")
    note = (
        "Structural cells are fixed by construction (a zero with the mechanism off, a value a parameter was "
        "derived from, a band the scenario pins) and cannot fail; they are counted apart. Explained, open and "
        "not available count discriminating cells only. Sensitivity rows are not cells"
        + (
            f"; {repeated} published number(s) repeating another cell's measurement are shown but counted once"
            if repeated
            else ""
        )
        + "."
    )
    h.append(f"<p>{_html.escape(note)}</p>")
    m.append(f"\n{note}\n")


def _md_cell(text: str) -> str:
    """Text for a Markdown table cell: a '|' (seed 000's "[B|F]ECN") would split it."""
    return text.replace("|", "\\|")


def _overview_row(v: dict) -> list[str]:
    return [
        str(v["cells"]),
        f"{v['structural']} ({v['structural within band']})",
        str(v["discriminating"]),
        f"{v['discriminating within band']} / {v['discriminating']}",
        str(v["discriminating explained"]),
        str(v["discriminating outside band"]),
        str(v["discriminating not available"]),
        f"{v['holds']} / {v['claims']}",
    ]


def _report_head(studies: list[dict], prov: dict, h: list[str], m: list[str]) -> None:
    """Title, provenance, the overview of every study and the verdict legend."""
    title = "cnsim — reproduction of the 802.1Qau seed studies"
    h.append(
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{CSS}</style></head><body>"
    )
    h.append(f"<h1>{title}</h1>")
    m.append(f"# {title}\n")
    prov_line = (
        f"cnsim {prov['cnsim']}, engine {prov.get('core')}, git {prov.get('git')}, generated "
        f"{prov['generated']}"
        + (", **quick (reduced) configuration**" if prov.get("run_with", {}).get("quick") else "")
    )
    h.append(f"<p class='prov' id='provenance'>Provenance: {_html.escape(prov_line).replace('**', '')}</p>")
    m.append(f"Provenance: {prov_line}\n")
    overview(studies, h, m)
    legend = verdict_legend(studies)
    h.append(f"<p class='legend' id='legend'>{_html.escape(legend).replace('**', '')}</p>")
    m.append(legend + "\n")


def _study_tables(s: dict, h: list[str], m: list[str]) -> None:
    """A study's published numbers beside cnsim's, a table per published table."""
    sid = s["id"]
    reps = f"cnsim: mean ± 95 % CI over {replications_text(s)}"
    h.append(
        f"<h3 id='{sid}-tables'>Published vs cnsim</h3><p class='legend'>{_html.escape(reps)}; "
        "verdicts as in the <a href='#legend'>legend</a>.</p>"
    )
    m.append(f"### Published vs cnsim\n\n{reps}; verdicts as in the legend under the overview.\n")
    if not s["cells"]:
        h.append("<p>No published numbers (graphs only).</p>")
        m.append("No published numbers (graphs only).\n")
    for tname, cells in cell_rows(s).items():
        h.append(
            f"<h4>{_html.escape(tname)}</h4><table><tr><th class='l'>row</th><th class='l'>column</th>"
            "<th>published</th><th>band ±</th><th>cnsim mean ± 95 % CI</th><th>verdict</th>"
            "<th class='l'>note</th></tr>"
        )
        m.append(
            f"#### {tname}\n\n| row | column | published | band ± | cnsim mean ± 95 % CI | verdict | note |\n"
            "|---|---|---|---|---|---|---|"
        )
        for c in cells:
            cls = VERDICT_CLASS.get(c["verdict"], "na")
            h.append(
                f"<tr class='{cls}'><td class='l'>{_html.escape(c['row'])}</td><td class='l'>"
                f"{_html.escape(c['column'])}</td><td>{fmt(c['published'])}</td><td>{fmt(c['band_half'])}</td>"
                f"<td>{sim_text(c)}</td><td class='verdict'>{c['verdict']}</td><td class='l'>"
                f"{_html.escape(comment(c))}</td></tr>"
            )
            m.append(
                f"| {c['row']} | {c['column']} | {fmt(c['published'])} | {fmt(c['band_half'])} | "
                f"{sim_text(c)} | {c['verdict']} | {comment(c)} |"
            )
        h.append("</table>")
        m.append("")


def _study_figures(s: dict, sdir: Path, figdir: Path, h: list[str], m: list[str]) -> None:
    """A study's declared figures, embedded in the HTML and written beside the Markdown."""
    sid = s["id"]
    h.append(f"<h3 id='{sid}-figures'>Figures</h3>")
    m.append("### Figures\n")
    for i, fig in enumerate(s.get("figures", [])):
        png, note = make_figure(s, fig, sdir)
        cap = fig["title"] + (f" — cf. {fig['seed_figure']}" if fig.get("seed_figure") else "")
        if png is None:
            h.append(f"<figure><figcaption>{_html.escape(cap)} — {_html.escape(note)}</figcaption></figure>")
            m.append(f"- {cap}: {note}\n")
            continue
        name = f"{sid}-{i:02d}-{fig['kind']}.png"
        (figdir / name).write_bytes(png)
        b64 = base64.b64encode(png).decode()
        h.append(
            f"<figure><img alt='{_html.escape(fig['title'])}' src='data:image/png;base64,{b64}'>"
            f"<figcaption>{_html.escape(cap)}{(' — ' + _html.escape(note)) if note else ''}</figcaption></figure>"
        )
        m.append(f"![{fig['title']}](figures/{name})\n\n*{cap}*{(' — ' + note) if note else ''}\n")


def _study_sweeps(s: dict, h: list[str], m: list[str]) -> None:
    """A study's sweeps: scenario, scheme, replications, seeds, overrides and status."""
    sid = s["id"]
    h.append(
        f"<h3 id='{sid}-parameters'>Sweeps, parameters and seeds</h3><table><tr><th class='l'>sweep</th>"
        "<th class='l'>scenario</th><th class='l'>scheme</th><th>replications</th><th>seed</th>"
        "<th class='l'>overrides</th><th class='l'>status</th></tr>"
    )
    m.append(
        "### Sweeps, parameters and seeds\n\n| sweep | scenario | scheme | replications | seed | overrides | status |\n"
        "|---|---|---|---|---|---|---|"
    )
    for name, e in s["sweeps"].items():
        over = ", ".join(f"{k}={v}" for k, v in {**(e.get("set") or {}), **(e.get("parameters") or {})}.items())
        status = e["reason"] or f"ran: {e.get('total', 0)} runs, {e.get('failed', 0)} failed"
        seeds = ", ".join(str(x) for x in e.get("seed", []) or [])
        cls = "na" if e["reason"] else ("bad" if e.get("failed") else "")
        h.append(
            f"<tr class='{cls}'><td class='l'>{_html.escape(name)}</td><td class='l'><code>{_html.escape(e['base'])}"
            f"</code></td><td class='l'>{e.get('scheme')}</td><td>{e.get('replications', '–')}</td>"
            f"<td>{seeds or '–'}</td><td class='l'>{_html.escape(over)}</td><td class='l'>"
            f"{_html.escape(status)}</td></tr>"
        )
        m.append(
            f"| {name} | `{e['base']}` | {e.get('scheme')} | {e.get('replications', '–')} | {seeds or '–'} | "
            f"{over} | {status} |"
        )
    h.append("</table>")
    m.append("")


def _report_method(h: list[str], m: list[str]) -> None:
    """The closing section: how the means, intervals and seeds are made."""
    h.append(
        "<h2 id='method'>Method</h2><p>Each cnsim value is the mean over the replications of the sweep; "
        "± is the 95 % Student-t half-width. Replication k uses the same master seed with "
        "<code>run.replication = k</code> at every configuration (common random numbers). The verdicts "
        "are defined in the <a href='#legend'>legend</a> under the overview.</p></body></html>"
    )
    m.append(
        "## Method\n\nEach cnsim value is the mean over the replications; ± is the 95 % Student-t half-width. "
        "Replication k uses the same master seed with `run.replication = k` at every configuration (common "
        "random numbers). The verdicts are defined in the legend under the overview.\n"
    )


def write_report(out: str | Path) -> tuple[Path, Path]:
    """Write ``DIR/report/report.html`` and ``DIR/report/report.md`` (+ ``DIR/report/figures/*.png``)."""

    out = Path(out)
    studies = load_studies(out)
    if not studies:
        if (out / "sweep.json").exists():
            return write_sweep_report(out)
        raise ConfigError.single(
            str(out), "not a result folder: no study.json (run `cnsim reproduce`) and no sweep.json (run `cnsim sweep`)"
        )
    rdir = out / "report"
    figdir = rdir / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    prov = _provenance(out)
    h: list[str] = []
    m: list[str] = []
    _report_head(studies, prov, h, m)
    for s in studies:
        sid = s["id"]
        sdir = out / sid
        h.append(f"<h2 id='{sid}' class='study'>{sid}: {_html.escape(s['title'])}</h2>")
        h.append(
            f"<p>Source: {_html.escape(s['source'])}. Model: model reference {_html.escape(s['spec'])} (docs/model-reference.md).</p>"
        )
        m.append(
            f"## {sid}: {s['title']}\n\nSource: {s['source']}. Model: model reference {s['spec']} (docs/model-reference.md).\n"
        )
        _study_tables(s, h, m)
        claims_section(s, h, m, figdir)
        _study_figures(s, sdir, figdir, h, m)
        _study_sweeps(s, h, m)
    _report_method(h, m)

    html_path, md_path = rdir / "report.html", rdir / "report.md"
    atomic_write_text(html_path, "\n".join(h) + "\n")
    atomic_write_text(md_path, "\n".join(m) + "\n")
    return html_path, md_path


def sweep_figures(table: pd.DataFrame, params: list[str], metrics: list[str]) -> list[tuple[str, str, bytes]]:
    """(file name, caption, PNG) per headline metric against the first swept parameter (one line per
    value of the second), mean ± 95 % CI with numeric axes (:mod:`cnsim.report.sweep_plot`)."""

    labels = [p for p in params if not p.endswith("]")]
    if table.empty or not labels:
        return []
    x = labels[0]
    hue = labels[1] if len(labels) > 1 else None
    out = []
    for metric in metrics:
        if metric not in set(table["metric"]):
            continue
        f, ax = plt.subplots(figsize=(6.4, 4.0), dpi=90)
        try:
            sweep_plot.draw(table, x, metric, hue, ax=ax)
            f.tight_layout()
            buf = io.BytesIO()
            f.savefig(buf, format="png")
        finally:
            plt.close(f)
        safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in f"{metric}-vs-{x}")
        out.append(
            (f"{safe}.png", f"{metric} vs {x}" + (f" by {hue}" if hue else "") + " (mean ± 95 % CI)", buf.getvalue())
        )
    return out


def write_sweep_report(out: Path) -> tuple[Path, Path]:
    """Report of a plain sweep directory: the summary table (mean ± CI per point) of headline metrics."""

    _, _, table = summarize(out)
    rdir = out / "report"
    rdir.mkdir(parents=True, exist_ok=True)
    prov = _provenance(out)
    doc = json.loads((out / "sweep.json").read_text())
    head = [
        "throughput.aggregate_bps",
        "fairness.jain",
        "frames.dropped",
        "fct.mean_us",
        "control.overhead_bps",
        "pause.host_paused_fraction",
    ]
    t = table[table["metric"].isin(head)] if not table.empty else table
    params = [c for c in t.columns if c not in ("metric", "mean", "std", "ci95", "n")]
    title = f"cnsim sweep {doc.get('name')}"
    h = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{_html.escape(title)}</h1>",
        f"<p class='prov' id='provenance'>cnsim {prov['cnsim']}, git {prov.get('git')}, {doc.get('total')} runs, "
        f"counts {_html.escape(json.dumps(doc.get('counts')))}</p><h2 id='summary'>Summary</h2><table><tr>"
        + "".join(f"<th class='l'>{_html.escape(p)}</th>" for p in params)
        + "<th class='l'>metric</th><th>mean ± 95 % CI</th><th>n</th></tr>",
    ]
    m = [
        f"# {title}\n",
        f"cnsim {prov['cnsim']}, git {prov.get('git')}, {doc.get('total')} runs\n",
        "| " + " | ".join([*params, "metric", "mean ± 95 % CI", "n"]) + " |",
        "|" + "---|" * (len(params) + 3),
    ]
    for _, r in t.iterrows():
        ci = f"{fmt(r['mean'])} ± {fmt(r['ci95'])}"
        h.append(
            "<tr>"
            + "".join(f"<td class='l'>{_html.escape(str(r[p]))}</td>" for p in params)
            + f"<td class='l'>{r['metric']}</td><td>{ci}</td><td>{r['n']}</td></tr>"
        )
        m.append("| " + " | ".join([*(str(r[p]) for p in params), r["metric"], ci, str(r["n"])]) + " |")
    h.append("</table>")
    figs = sweep_figures(table, params, head)
    if figs:
        figdir = rdir / "figures"
        figdir.mkdir(exist_ok=True)
        h.append("<h2 id='figures'>Figures</h2>")
        m.append("\n## Figures\n")
        for name, cap, png in figs:
            (figdir / name).write_bytes(png)
            b64 = base64.b64encode(png).decode()
            h.append(
                f"<figure><img alt='{_html.escape(cap)}' src='data:image/png;base64,{b64}'>"
                f"<figcaption>{_html.escape(cap)}</figcaption></figure>"
            )
            m.append(f"![{cap}](figures/{name})\n")
    h.append("</body></html>")

    atomic_write_text(rdir / "report.html", "\n".join(h) + "\n")
    atomic_write_text(rdir / "report.md", "\n".join(m) + "\n")
    return rdir / "report.html", rdir / "report.md"
