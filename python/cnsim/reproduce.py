"""Reproduction studies: declarative study files (``cnsim/studies/seed-00X.toml``) run as sweeps and
compared cell by cell with the published numbers (spec §9).

A study file holds: ``id``, ``title``, ``source``, ``spec``, ``replications``, ``quick`` (reduced
configuration: ``replications`` and ``set`` overrides), ``[[sweeps]]`` (``name``, ``scheme``, ``base``
relative to ``scenarios/``, optional ``set``, ``parameters``, ``replications``, ``label``),
``[[cells]]`` (``table``, ``row``, ``column``, ``sweep``, optional ``where`` on swept parameters,
``metric`` — a metric name of :func:`cnsim.sweep.flat_metrics` or an arithmetic expression of them —
``scale``, ``published``, ``band`` = ``{rel, abs}`` (the larger applies), ``note``, ``explanation``)
and ``[[figures]]`` (see :mod:`cnsim.report`). Adding a study = adding a file.

Verdicts: ``within band`` (cnsim mean inside published ± band), ``outside band``, ``explained``
(outside, with an ``explanation`` in the study), ``not available`` (scheme not registered, scenario
file missing, or no successful run).
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cnsim.exceptions import CnsimError, ConfigError, Problem

STUDIES_DIR = Path(__file__).resolve().parent / "studies"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Quick(_Strict):
    replications: int | None = Field(None, ge=1)
    set: dict[str, Any] = Field(default_factory=dict)


class StudySweep(_Strict):
    name: str
    scheme: str | None = None
    base: str
    label: str | None = None
    replications: int | None = Field(None, ge=1)
    set: dict[str, Any] = Field(default_factory=dict)
    parameters: dict[str, Any] = Field(default_factory=dict)
    quick: Quick | None = None


class Band(_Strict):
    rel: float = Field(0.0, ge=0)
    abs: float = Field(0.0, ge=0)
    decades: float = Field(0.0, ge=0, description="logarithmic band: within when |log10(mean / published)| <= "
                           "decades (spec §12 R6: '≈ 3 orders of magnitude' = ±0.5 decade)")

    def half_width(self, published: float) -> float:
        """Half-width of a linear band (for a logarithmic one: the upper distance, for display)."""
        if self.decades:
            return abs(published) * (10 ** self.decades - 1)
        return max(self.rel * abs(published), self.abs)

    def contains(self, published: float, mean: float) -> bool:
        if self.decades:
            return mean > 0 and published > 0 and abs(math.log10(mean / published)) <= self.decades + 1e-12
        return abs(mean - published) <= self.half_width(published) + 1e-12


class Cell(_Strict):
    table: str
    row: str
    column: str
    sweep: str
    where: dict[str, Any] = Field(default_factory=dict)
    metric: str
    scale: float = 1.0
    published: float
    band: Band
    note: str | None = None
    explanation: str | None = None


class Figure(_Strict):
    title: str
    seed_figure: str | None = None
    kind: str = Field(pattern="^(queue|throughput|rate|fairness|fct|cells|param)$")
    sweep: str | None = None
    sweeps: list[str] = Field(default_factory=list)
    select: str | None = None
    per_flow: bool = False
    column: str | None = None
    metric: str | None = None
    log: bool = False

    def sweep_names(self) -> list[str]:
        return self.sweeps or ([self.sweep] if self.sweep else [])


class Study(_Strict):
    id: str
    title: str
    source: str
    spec: str
    replications: int = Field(3, ge=1)
    quick: Quick = Field(default_factory=Quick)
    sweeps: list[StudySweep]
    cells: list[Cell] = Field(default_factory=list)
    figures: list[Figure] = Field(default_factory=list)

    def sweep(self, name: str) -> StudySweep:
        for s in self.sweeps:
            if s.name == name:
                return s
        raise KeyError(name)


def study_ids() -> list[str]:
    return sorted(p.stem for p in STUDIES_DIR.glob("*.toml"))


def load_study(study_id: str, path: Path | None = None) -> Study:
    """Read and validate one study file (cells and figures must name declared sweeps)."""
    from cnsim.loader import read_toml

    path = path or STUDIES_DIR / f"{study_id}.toml"
    if not path.is_file():
        raise ConfigError.single("study", f"unknown; known: {', '.join(study_ids())}, all", study_id)
    try:
        study = Study.model_validate(read_toml(path))
    except ValidationError as err:
        raise ConfigError([Problem(f"{path.name}: " + ".".join(str(x) for x in e["loc"]), e["msg"])
                           for e in err.errors()]) from None
    names = {s.name for s in study.sweeps}
    bad = [Problem(f"{path.name}: cells[{i}].sweep", "not a declared sweep", c.sweep)
           for i, c in enumerate(study.cells) if c.sweep not in names]
    bad += [Problem(f"{path.name}: figures[{i}]", "names an undeclared sweep", n)
            for i, f in enumerate(study.figures) for n in f.sweep_names() if n not in names]
    if bad:
        raise ConfigError(bad)
    return study


def scenarios_root() -> Path:
    for candidate in (Path.cwd() / "scenarios", Path(__file__).resolve().parents[2] / "scenarios"):
        if candidate.is_dir():
            return candidate
    raise CnsimError("scenarios/ directory not found; run from the repository root")


def available_schemes() -> set[str]:
    """Schemes registered in both the engine (``_core.schemes()``) and ``cnsim.schemes.SCHEMES``."""
    from cnsim import api, schemes

    try:
        engine = set(api.core().schemes())
    except CnsimError:
        engine = set()
    return engine & set(schemes.SCHEMES)


def sweep_status(sw: StudySweep, root: Path, schemes: set[str]) -> tuple[str | None, str | None]:
    """(scheme, reason it cannot run or None)."""
    path = root / sw.base
    scheme = sw.scheme
    if not path.is_file():
        return scheme, f"scenario file missing: scenarios/{sw.base}"
    try:
        from cnsim.loader import read_toml

        scheme = (read_toml(path).get("cm") or {}).get("scheme", "none")
    except ConfigError:
        pass
    if scheme not in schemes:
        return scheme, f"scheme not available: {scheme}"
    return scheme, None


# ---- metric expressions ----------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][\w.]*(?:\[[^\]]+\][\w.]*)?")
_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Name, ast.Load, ast.Constant, ast.Add, ast.Sub, ast.Mult,
            ast.Div, ast.Pow, ast.USub, ast.UAdd)


def metric_value(expr: str, metrics: Mapping[str, float]) -> float:
    """Evaluate a metric name or arithmetic expression of metric names (``a + b``, ``2 * (a) / b``)."""
    if expr in metrics:
        return float(metrics[expr])
    names: dict[str, str] = {}

    def sub(m: re.Match) -> str:
        key = f"_m{len(names)}"
        names[key] = m.group(0)
        return key

    code = _NAME.sub(sub, expr)
    tree = ast.parse(code, mode="eval")
    if not all(isinstance(n, _ALLOWED) for n in ast.walk(tree)):
        raise ValueError(f"unsupported metric expression: {expr}")
    env = {}
    for k, name in names.items():
        if name not in metrics:
            return math.nan
        env[k] = float(metrics[name])
    try:
        return float(eval(compile(tree, "<metric>", "eval"), {"__builtins__": {}}, env))  # noqa: S307 — AST checked
    except ZeroDivisionError:
        return math.nan


def evaluate_cell(cell: Cell, runs: Any) -> dict[str, Any]:
    """cnsim mean, std, 95 % half-width and n of a cell over the matching ok runs, and the verdict."""
    from scipy import stats

    out: dict[str, Any] = {"mean": None, "std": None, "ci95": None, "n": 0}
    if runs is None or runs.empty:
        return out
    sel = runs[runs["status"] == "ok"]
    for k, v in cell.where.items():
        col = f"param:{k}"
        if col not in sel:
            return out
        sel = sel[sel[col].astype(str) == str(v)]
    values = []
    for _, row in sel.iterrows():
        metrics = {k: v for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        val = metric_value(cell.metric, metrics) * cell.scale
        if not math.isnan(val):
            values.append(val)
    n = len(values)
    if n == 0:
        return out
    mean = sum(values) / n
    std = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5 if n > 1 else None
    ci = float(stats.t.ppf(0.975, n - 1) * std / n ** 0.5) if n > 1 else None
    out.update(mean=mean, std=std, ci95=ci, n=n, values=values)
    return out


def verdict(cell: Cell, mean: float | None) -> str:
    if mean is None:
        return "not available"
    if cell.band.contains(cell.published, mean):
        return "within band"
    return "explained" if cell.explanation else "outside band"


# ---- running ---------------------------------------------------------------------------------


def sweep_spec(study: Study, sw: StudySweep, root: Path, quick: bool, overrides: Mapping[str, Any] | None = None,
               replications: int | None = None) -> Any:
    from cnsim.sweep import SweepSpec

    reps = sw.replications or study.replications
    sets = dict(sw.set)
    if quick:
        q = sw.quick or Quick()
        reps = q.replications or study.quick.replications or reps
        sets.update(study.quick.set)
        sets.update(q.set)
    sets.update(overrides or {})
    reps = replications or reps
    # a steady-state window (run.warmup, spec §12 R5) longer than a reduced run (quick form, tests)
    # cannot be kept: the reduced run then measures over its whole length
    if "run.warmup" in sets and "run.duration" in sets:
        from cnsim.units import time_ps

        try:
            if time_ps(sets["run.warmup"]) >= time_ps(sets["run.duration"], allow_zero=False):
                del sets["run.warmup"]
        except (TypeError, ValueError):
            pass  # reported by the scenario validation
    return SweepSpec.model_validate({"name": f"{study.id}/{sw.name}", "base": str(root / sw.base),
                                     "replications": reps, "set": sets, "parameters": sw.parameters})


def run_study(study: Study, out: Path, executor: Any = None, jobs: int = 1, scheduler: str | None = None,
              quick: bool = False, force: bool = False, progress: bool = True,
              log: Callable[[str], None] = lambda s: None, overrides: Mapping[str, Any] | None = None,
              replications: int | None = None) -> dict[str, Any]:
    """Run every available sweep of a study into ``out/<study>/<sweep>/``; write ``study.json``."""
    from cnsim import sweep as swp

    root = scenarios_root()
    schemes = available_schemes()
    sdir = out / study.id
    sdir.mkdir(parents=True, exist_ok=True)
    sweeps: dict[str, Any] = {}
    runs: dict[str, Any] = {}
    failed = 0
    for sw in study.sweeps:
        scheme, reason = sweep_status(sw, root, schemes)
        entry: dict[str, Any] = {"name": sw.name, "label": sw.label or sw.name, "base": f"scenarios/{sw.base}",
                                 "scheme": scheme, "status": "not available" if reason else "ran", "reason": reason}
        if reason is None:
            spec = sweep_spec(study, sw, root, quick, overrides, replications)
            t0 = time.monotonic()
            try:
                outcome = swp.run_sweep(spec, sdir / sw.name, root, jobs=jobs, scheduler=scheduler, force=force,
                                        progress=progress, executor=executor, label=f"{study.id} {sw.name}")
            except ConfigError as exc:  # an invalid scenario is reported, the study goes on
                entry.update(status="invalid", reason=f"invalid configuration: {exc.problems[0]}")
                sweeps[sw.name] = entry
                failed += 1
                log(f"{study.id} {sw.name}: {entry['reason']}")
                continue
            runs[sw.name], _ = swp.summarize_with_runs(sdir / sw.name)
            entry.update(replications=spec.replications, set=spec.set, parameters=spec.model_dump()["parameters"],
                         total=outcome.total, failed=outcome.failed, executed=outcome.executed,
                         seed=sorted({r.get("seed") for r in outcome.runs}), wall_s=time.monotonic() - t0)
            failed += outcome.failed
            log(f"{study.id} {sw.name}: {outcome.total} runs ({outcome.executed} executed, {outcome.failed} failed)")
        else:
            log(f"{study.id} {sw.name}: {reason}")
        sweeps[sw.name] = entry
    cells = []
    for c in study.cells:
        st = sweeps[c.sweep]
        res = evaluate_cell(c, runs.get(c.sweep))
        res.pop("values", None)
        v = verdict(c, res["mean"])
        reason = st["reason"] if st["reason"] else (None if res["mean"] is not None else "no successful run")
        cells.append({**c.model_dump(), **res, "verdict": v, "reason": reason,
                      "band_half": c.band.half_width(c.published)})
    counts: dict[str, int] = {}
    for c in cells:
        counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
    doc = {"id": study.id, "title": study.title, "source": study.source, "spec": study.spec, "quick": quick,
           "sweeps": sweeps, "cells": cells, "counts": counts, "figures": [f.model_dump() for f in study.figures],
           "failed": failed}
    from cnsim.sweep import atomic_write_text

    atomic_write_text(sdir / "study.json", json.dumps(doc, indent=2, default=_json_default) + "\n")
    return doc


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    return str(o)


def reproduce(which: str, out: str | os.PathLike[str], jobs: int = 1, quick: bool = False,
              scheduler: str | None = None, force: bool = False, progress: bool = True,
              log: Callable[[str], None] = lambda s: None, overrides: Mapping[str, Any] | None = None,
              replications: int | None = None) -> dict[str, Any]:
    """Run one study (``seed-00X``) or ``all``, then write the report into ``out``.

    ``overrides`` (dotted path → value) and ``replications`` replace the study's settings for every sweep
    (used by the tests to make runs tiny; the CLI's ``--set`` / ``--replications``).
    """
    from cnsim import report, sweep as swp
    from cnsim.api import git_describe

    ids = study_ids() if which == "all" else [which]
    studies = [load_study(i) for i in ids]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    executor = None
    if jobs > 1 or scheduler:
        # one cluster for every sweep of every study; only if something can run
        root = scenarios_root()
        schemes = available_schemes()
        if any(sweep_status(sw, root, schemes)[1] is None for st in studies for sw in st.sweeps):
            executor = swp.DaskExecutor(jobs, scheduler)
    docs = []
    try:
        for st in studies:
            docs.append(run_study(st, out, executor=executor, quick=quick, force=force, progress=progress, log=log,
                                  overrides=overrides, replications=replications))
    finally:
        if executor is not None:
            executor.close()
    from cnsim import __version__

    index = {"studies": [d["id"] for d in docs], "quick": quick, "tool_version": __version__,
             "git_describe": git_describe(), "counts": {d["id"]: d["counts"] for d in docs}}
    prev = {}
    try:
        prev = json.loads((out / "reproduce.json").read_text())
    except (OSError, ValueError):
        pass
    index["studies"] = sorted(set(prev.get("studies", [])) | set(index["studies"]))
    index["counts"] = {**prev.get("counts", {}), **index["counts"]}
    swp.atomic_write_text(out / "reproduce.json", json.dumps(index, indent=2) + "\n")
    html, md = report.write_report(out)
    return {"studies": docs, "report_html": html, "report_md": md, "failed": sum(d["failed"] for d in docs)}
