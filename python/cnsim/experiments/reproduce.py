"""Reproduction studies: declarative study files (``cnsim/experiments/studies/seed-00X.toml``) run as sweeps and
compared cell by cell with the published numbers (model reference §9).

A study file holds: ``id``, ``title``, ``source``, ``spec``, ``replications``, ``quick`` (reduced
configuration: ``replications`` and ``set`` overrides), ``[[sweeps]]`` (``name``, ``scheme``, ``base``
relative to ``scenarios/``, optional ``set``, ``parameters``, ``replications``, ``label``),
``[[cells]]`` (``table``, ``row``, ``column``, ``sweep``, optional ``where`` on swept parameters,
``metric`` — a metric name of :func:`cnsim.experiments.sweep_summary.flat_metrics` or an arithmetic expression of them —
``series`` — a metric of each run's queue time series, :mod:`cnsim.experiments.series` — ``scale``, ``published``,
``band`` = ``{rel, abs, decades}``, ``note``, ``structural``, ``same_as``, ``sensitivity``, ``explanation``,
``explained_by``, ``evidence``),
``[[claims]]`` (the seed's qualitative statements: ``id``, ``source``, ``says``, ``criterion``, ``terms`` —
named values measured like cells — and ``holds``, a comparison of the terms) and ``[[figures]]`` (see
:mod:`cnsim.report.document`). Adding a study = adding a file.

Cell verdicts (model reference §12 R9): ``within band`` (cnsim mean inside published ± band), ``outside band`` (open),
``explained`` (outside, and the study shows either that the seed's own numbers are inconsistent —
``explained_by = "inconsistent"``, the arithmetic in ``evidence`` — or that an unprinted value swept over its
plausible range never reaches the band — ``explained_by = "sweep"``, the sweep named in ``evidence``),
``not available`` (scheme not registered, scenario file missing, or no successful run). A cell whose value
is fixed by construction (a zero with the mechanism off, a value a parameter was derived from, a band too
wide to fail) carries ``structural`` (the reason) and is counted apart from the discriminating cells.
A cell with ``same_as`` repeats another cell's measurement (model reference §12 R11 d): shown, counted once. A
``sensitivity`` row (a swept unprinted value) is shown and never counted.
Claim verdicts: ``holds`` (every comparison true of the terms' means by at least the 95 % CI of its difference),
``does not hold``, ``not available``.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import time
from pathlib import Path
from typing import Any, Callable, Collection, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cnsim import api, schemes
from cnsim.api import git_describe
from cnsim.compile.loader import read_toml
from cnsim.exceptions import CnsimError, ConfigError, Problem
from cnsim.experiments import series as ser
from cnsim.experiments import sweep as swp
from cnsim.experiments import sweep_summary
from cnsim.experiments.claims import check_claim_expr, claim_margins
from cnsim.experiments.series import SeriesMetric
from cnsim.experiments.sweep import SweepSpec, atomic_write_text
from cnsim.experiments.verdicts import VERDICTS, count_cells
from cnsim.results.outdir import usable_folder
from cnsim.scenario.units import time_ps

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
    decades: float = Field(
        0.0,
        ge=0,
        description="logarithmic band: within when |log10(mean / published)| <= "
        "decades (model reference §12 R6: '≈ 3 orders of magnitude' = ±0.5 decade)",
    )

    def half_width(self, published: float) -> float:
        """Half-width of a linear band (for a logarithmic one: the upper distance, for display)."""
        if self.decades:
            return abs(published) * (10**self.decades - 1)
        return max(self.rel * abs(published), self.abs)

    def contains(self, published: float, mean: float) -> bool:
        if self.decades:
            return mean > 0 and published > 0 and abs(math.log10(mean / published)) <= self.decades + 1e-12
        return abs(mean - published) <= self.half_width(published) + 1e-12


class Term(_Strict):
    """One value a claim compares: the mean over the replications of a metric of one sweep."""

    sweep: str
    where: dict[str, Any] = Field(default_factory=dict)
    metric: str = ""
    series: SeriesMetric | None = None
    scale: float = 1.0

    @model_validator(mode="after")
    def _metric(self):
        if not self.metric and self.series is None:
            raise ValueError("a term needs a metric or a series")
        return self


class Cell(_Strict):
    table: str
    row: str
    column: str
    sweep: str | None = None
    where: dict[str, Any] = Field(default_factory=dict)
    terms: dict[str, Term] = Field(
        default_factory=dict,
        description="values of other sweeps; metric is then an arithmetic expression of the term names (their means)",
    )
    metric: str
    series: SeriesMetric | None = None
    scale: float = 1.0
    published: float
    band: Band
    note: str | None = None
    structural: str | None = Field(None, description="why the value is fixed by construction (model reference §12 R9)")
    explanation: str | None = None
    explained_by: Literal["inconsistent", "sweep"] | None = None
    evidence: str | None = None
    sensitivity: bool = Field(False, description="a sensitivity row (a swept unprinted value), not counted as a cell")
    same_as: str | None = Field(
        None,
        description="the published number repeats another cell's measurement (model reference §12 "
        "R11 d): shown with its verdict, counted once — as that cell; names it",
    )

    @model_validator(mode="after")
    def _r9(self):
        if (self.sweep is None) == (not self.terms):
            raise ValueError("a cell has either a sweep or terms (values of several sweeps)")
        if self.explained_by and not (self.explanation and self.evidence):
            raise ValueError("explained_by needs an explanation and its evidence (the arithmetic, or the sweep)")
        return self


class Claim(_Strict):
    """A qualitative statement of a seed, decided by a criterion over measured terms."""

    id: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    source: str
    says: str
    criterion: str
    terms: dict[str, Term]
    holds: str
    suspect: str | None = Field(None, description="the reading or mechanism suspected when the claim fails")


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
    claims: list[Claim] = Field(default_factory=list)
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

    path = path or STUDIES_DIR / f"{study_id}.toml"
    if not path.is_file():
        raise ConfigError.single("study", f"unknown; known: {', '.join(study_ids())}, all", study_id)
    try:
        study = Study.model_validate(read_toml(path))
    except ValidationError as err:
        raise ConfigError(
            [Problem(f"{path.name}: " + ".".join(str(x) for x in e["loc"]), e["msg"]) for e in err.errors()]
        ) from None
    names = {s.name for s in study.sweeps}
    bad = [
        Problem(f"{path.name}: cells[{i}].sweep", "not a declared sweep", c.sweep)
        for i, c in enumerate(study.cells)
        if c.sweep is not None and c.sweep not in names
    ]
    bad += [
        Problem(f"{path.name}: cells[{i}].terms.{k}.sweep", "not a declared sweep", t.sweep)
        for i, c in enumerate(study.cells)
        for k, t in c.terms.items()
        if t.sweep not in names
    ]
    bad += [
        Problem(f"{path.name}: figures[{i}]", "names an undeclared sweep", n)
        for i, f in enumerate(study.figures)
        for n in f.sweep_names()
        if n not in names
    ]
    bad += [
        Problem(f"{path.name}: claims[{i}].terms.{k}.sweep", "not a declared sweep", t.sweep)
        for i, c in enumerate(study.claims)
        for k, t in c.terms.items()
        if t.sweep not in names
    ]
    for i, c in enumerate(study.claims):
        try:
            check_claim_expr(c.holds, set(c.terms))
        except ValueError as exc:
            bad.append(Problem(f"{path.name}: claims[{i}].holds", str(exc), c.holds))
    ids = [c.id for c in study.claims]
    bad += [Problem(f"{path.name}: claims", "duplicate id", i) for i in sorted({i for i in ids if ids.count(i) > 1})]
    if bad:
        raise ConfigError(bad)
    return study


def scenarios_root() -> Path:
    for candidate in (Path.cwd() / "scenarios", Path(__file__).resolve().parents[3] / "scenarios"):
        if candidate.is_dir():
            return candidate
    raise CnsimError("scenarios/ directory not found; run from the repository root")


def available_schemes() -> set[str]:
    """Schemes registered in both the engine (``_core.schemes()``) and ``cnsim.schemes.SCHEMES``."""

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
        scheme = (read_toml(path).get("cm") or {}).get("scheme", "none")
    except ConfigError:
        pass
    if scheme not in schemes:
        return scheme, f"scheme not available: {scheme}"
    return scheme, None


# ---- metric expressions ----------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][\w.]*(?:\[[^\]]+\][\w.]*)?")
_ALLOWED = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.Name,
    ast.Load,
    ast.Constant,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.Pow,
    ast.USub,
    ast.UAdd,
)


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


def evaluate_cell(cell: Cell | Term, runs: Any, sweep_dir: Path | None = None) -> dict[str, Any]:
    """cnsim mean, std, 95 % half-width and n of a cell (or claim term) over the matching ok runs.

    A ``series`` metric is computed from each run's Parquet files under ``sweep_dir/runs/<run_id>``."""
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
        if cell.series is not None:
            if sweep_dir is None:
                continue
            val = ser.value(sweep_dir / "runs" / str(row["run_id"]), cell.series) * cell.scale
        else:
            metrics = {k: v for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            val = metric_value(cell.metric, metrics) * cell.scale
        if not math.isnan(val):
            values.append(val)
    n = len(values)
    if n == 0:
        return out
    mean = sum(values) / n
    std = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5 if n > 1 else None
    ci = float(stats.t.ppf(0.975, n - 1) * std / n**0.5) if n > 1 else None
    out.update(mean=mean, std=std, ci95=ci, n=n, values=values)
    return out


def verdict(cell: Cell, mean: float | None) -> str:
    if mean is None:
        return "not available"
    if cell.band.contains(cell.published, mean):
        return "within band"
    return "explained" if cell.explained_by else "outside band"


# ---- claims ----------------------------------------------------------------------------------


def evaluate_claim(claim: Claim, runs: Mapping[str, Any], sweeps: Mapping[str, dict], sdir: Path) -> dict[str, Any]:
    """The claim with each term's mean ± CI (n), its per-run values (for the report's figure) and the verdict."""
    terms: dict[str, dict[str, Any]] = {}
    reasons = []
    for name, t in claim.terms.items():
        res = evaluate_cell(t, runs.get(t.sweep), sdir / t.sweep)
        res.setdefault("values", [])
        st = sweeps.get(t.sweep, {})
        if st.get("reason"):
            reasons.append(f"{t.sweep}: {st['reason']}")
        elif res["mean"] is None:
            reasons.append(f"{name}: no value")
        terms[name] = {
            **t.model_dump(exclude_defaults=True),
            **res,
            "describe": t.series.describe() if t.series else t.metric,
        }
    v, margins = claim_margins(
        claim, {k: x["mean"] for k, x in terms.items()}, {k: x["ci95"] for k, x in terms.items()}
    )
    return {
        **claim.model_dump(exclude={"terms"}),
        "criterion": claim.criterion + CLAIM_MARGIN_RULE,
        "terms": terms,
        "verdict": v,
        "margins": margins,
        "reason": "; ".join(reasons) or None,
    }


CLAIM_MARGIN_RULE = " (every comparison must hold by at least the 95 % CI of its difference)"


def evaluate_terms_cell(
    cell: Cell, runs: Mapping[str, Any], sweeps: Mapping[str, dict], sdir: Path
) -> tuple[dict[str, Any], str | None]:
    """A cell computed from the means of several sweeps (``terms``): its value, n = the smallest n."""
    means: dict[str, float] = {}
    ns = []
    reasons = []
    for name, t in cell.terms.items():
        st = sweeps.get(t.sweep, {})
        r = evaluate_cell(t, runs.get(t.sweep), sdir / t.sweep)
        if st.get("reason"):
            reasons.append(f"{t.sweep}: {st['reason']}")
        elif r["mean"] is None:
            reasons.append(f"{t.sweep}: no successful run")
        else:
            means[name] = r["mean"]
            ns.append(r["n"])
    out: dict[str, Any] = {"mean": None, "std": None, "ci95": None, "n": 0}
    if reasons:
        return out, "; ".join(reasons)
    val = metric_value(cell.metric, means) * cell.scale
    if math.isnan(val):
        return out, "undefined (division by zero)"
    out.update(mean=val, n=min(ns), term_means=means)
    return out, None


# ---- running ---------------------------------------------------------------------------------


def sweep_spec(
    study: Study,
    sw: StudySweep,
    root: Path,
    quick: bool,
    overrides: Mapping[str, Any] | None = None,
    replications: int | None = None,
) -> Any:
    reps = sw.replications or study.replications
    sets = dict(sw.set)
    if quick:
        q = sw.quick or Quick()
        reps = q.replications or study.quick.replications or reps
        sets.update(study.quick.set)
        sets.update(q.set)
    sets.update(overrides or {})
    reps = replications or reps
    # a steady-state window (run.warmup, model reference §12 R5) longer than a reduced run (quick form, tests)
    # cannot be kept: the reduced run then measures over its whole length
    if "run.warmup" in sets and "run.duration" in sets:
        try:
            if time_ps(sets["run.warmup"]) >= time_ps(sets["run.duration"], allow_zero=False):
                del sets["run.warmup"]
        except (TypeError, ValueError):
            pass  # reported by the scenario validation
    return SweepSpec.model_validate(
        {
            "name": f"{study.id}/{sw.name}",
            "base": str(root / sw.base),
            "replications": reps,
            "set": sets,
            "parameters": sw.parameters,
        }
    )


def overrides_for(
    scheme: str | None, overrides: Mapping[str, Any] | None, override_schemes: Collection[str] | None
) -> Mapping[str, Any] | None:
    """The overrides a sweep of ``scheme`` takes: all of them, or none when ``override_schemes`` (case-insensitive
    scheme tags) does not list its scheme."""
    if override_schemes is None or (scheme or "").lower() in {s.lower() for s in override_schemes}:
        return overrides
    return None


def run_study(
    study: Study,
    out: Path,
    executor: Any = None,
    jobs: int = 1,
    scheduler: str | None = None,
    quick: bool = False,
    force: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = lambda s: None,
    overrides: Mapping[str, Any] | None = None,
    replications: int | None = None,
    override_schemes: Collection[str] | None = None,
) -> dict[str, Any]:
    """Run every available sweep of a study into ``out/<study>/<sweep>/``; write ``study.json``.
    ``override_schemes``: apply ``overrides`` to the sweeps of these schemes only (None: to every sweep)."""

    root = scenarios_root()
    schemes = available_schemes()
    sdir = out / study.id
    sdir.mkdir(parents=True, exist_ok=True)
    sweeps: dict[str, Any] = {}
    runs: dict[str, Any] = {}
    failed = 0
    for sw in study.sweeps:
        scheme, reason = sweep_status(sw, root, schemes)
        entry: dict[str, Any] = {
            "name": sw.name,
            "label": sw.label or sw.name,
            "base": f"scenarios/{sw.base}",
            "scheme": scheme,
            "status": "not available" if reason else "ran",
            "reason": reason,
        }
        if reason is None:
            spec = sweep_spec(study, sw, root, quick, overrides_for(scheme, overrides, override_schemes), replications)
            t0 = time.monotonic()
            try:
                outcome = swp.run_sweep(
                    spec,
                    sdir / sw.name,
                    root,
                    jobs=jobs,
                    scheduler=scheduler,
                    force=force,
                    progress=progress,
                    executor=executor,
                    label=f"{study.id} {sw.name}",
                )
            except ConfigError as exc:  # an invalid scenario is reported, the study goes on
                entry.update(status="invalid", reason=f"invalid configuration: {exc.problems[0]}")
                sweeps[sw.name] = entry
                failed += 1
                log(f"{study.id} {sw.name}: {entry['reason']}")
                continue
            runs[sw.name], _ = sweep_summary.summarize_with_runs(sdir / sw.name)
            entry.update(
                replications=spec.replications,
                set=spec.set,
                parameters=spec.model_dump()["parameters"],
                total=outcome.total,
                failed=outcome.failed,
                executed=outcome.executed,
                seed=sorted({r.get("seed") for r in outcome.runs}),
                wall_s=time.monotonic() - t0,
            )
            failed += outcome.failed
            log(f"{study.id} {sw.name}: {outcome.total} runs ({outcome.executed} executed, {outcome.failed} failed)")
        else:
            log(f"{study.id} {sw.name}: {reason}")
        sweeps[sw.name] = entry
    cells = []
    for c in study.cells:
        if c.terms:
            res, reason = evaluate_terms_cell(c, runs, sweeps, sdir)
        else:
            st = sweeps[c.sweep]
            res = evaluate_cell(c, runs.get(c.sweep), sdir / c.sweep)
            reason = st["reason"] if st["reason"] else (None if res["mean"] is not None else "no successful run")
        res.pop("values", None)
        v = verdict(c, res["mean"])
        cells.append(
            {**c.model_dump(), **res, "verdict": v, "reason": reason, "band_half": c.band.half_width(c.published)}
        )
    counts = count_cells(cells)
    claims = [evaluate_claim(c, runs, sweeps, sdir) for c in study.claims]
    ccounts: dict[str, int] = {}
    for c in claims:
        ccounts[c["verdict"]] = ccounts.get(c["verdict"], 0) + 1
    doc = {
        "id": study.id,
        "title": study.title,
        "source": study.source,
        "spec": study.spec,
        "quick": quick,
        "sweeps": sweeps,
        "cells": cells,
        "counts": counts,
        "claims": claims,
        "claim_counts": ccounts,
        "figures": [f.model_dump() for f in study.figures],
        "failed": failed,
    }

    atomic_write_text(sdir / "study.json", json.dumps(doc, indent=2, default=_json_default) + "\n")
    return doc


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    return str(o)


def check_reproduction(out: str | os.PathLike[str], field: str = "--out") -> Path:
    """``out`` if a reproduction may write there — a new or empty folder, or one holding only what
    ``cnsim reproduce`` writes (``reproduce.json``, ``report/``, a folder per study); a ConfigError
    naming ``field`` otherwise (a file, a folder holding anything else, a link to nothing, the current
    directory or one of its parents), before anything runs."""

    out = Path(out)
    dest = usable_folder(out, field, "previous-reproduction")
    if dest.is_dir():
        own = {"reproduce.json", "report", *study_ids()}
        others = sorted(p.name for p in dest.iterdir() if p.name not in own)
        if others:
            raise ConfigError.single(
                field,
                f"holds {', '.join(others[:3])}{' …' if len(others) > 3 else ''}, "
                "which cnsim reproduce did not write; choose a new or empty folder",
                str(out),
            )
    return out


def reproduce(
    which: str,
    out: str | os.PathLike[str],
    jobs: int = 1,
    quick: bool = False,
    scheduler: str | None = None,
    force: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = lambda s: None,
    overrides: Mapping[str, Any] | None = None,
    replications: int | None = None,
    override_schemes: Collection[str] | None = None,
) -> dict[str, Any]:
    """Run one study (``seed-00X``) or ``all``, then write the report into ``out``.

    ``overrides`` (dotted path → value) and ``replications`` replace the study's settings for every sweep
    (the CLI's ``--set`` / ``--replications``; the tests use them to make runs tiny); with ``override_schemes``
    (``--schemes``) the overrides reach only the sweeps of those schemes, so that a scheme parameter
    (``cm.params.X``) can be changed in a study that also runs other schemes.
    """
    from cnsim.report import document as report  # matplotlib and pandas: only when the report is written

    ids = study_ids() if which == "all" else [which]
    studies = [load_study(i) for i in ids]
    out = check_reproduction(out)
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
            docs.append(
                run_study(
                    st,
                    out,
                    executor=executor,
                    quick=quick,
                    force=force,
                    progress=progress,
                    log=log,
                    overrides=overrides,
                    replications=replications,
                    override_schemes=override_schemes,
                )
            )
    finally:
        if executor is not None:
            executor.close()
    from cnsim import __version__  # on first use: the version comes from the installed dist-info (cnsim/__init__.py)

    index = {
        "studies": [d["id"] for d in docs],
        "quick": quick,
        "tool_version": __version__,
        "git_describe": git_describe(),
        "counts": {d["id"]: d["counts"] for d in docs},
        "claim_counts": {d["id"]: d["claim_counts"] for d in docs},
    }
    prev = {}
    try:
        prev = json.loads((out / "reproduce.json").read_text())
    except (OSError, ValueError):
        pass
    index["studies"] = sorted(set(prev.get("studies", [])) | set(index["studies"]))
    index["counts"] = {**prev.get("counts", {}), **index["counts"]}
    index["claim_counts"] = {**prev.get("claim_counts", {}), **index["claim_counts"]}
    swp.atomic_write_text(out / "reproduce.json", json.dumps(index, indent=2) + "\n")
    html, md = report.write_report(out)
    return {
        "studies": docs,
        "report_html": html,
        "report_md": md,
        "failed": sum(d["failed"] for d in docs),
        "counts": index["counts"],
        "claim_counts": index["claim_counts"],
    }


def counts_lines(counts: Mapping[str, Mapping[str, int]], claim_counts: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The verdict counts per study and in total, as printed at the end of ``cnsim reproduce``."""
    tot: dict[str, int] = {}
    lines = []
    for sid in sorted(counts):
        c = counts[sid]
        cl = claim_counts.get(sid, {})
        for k, v in c.items():
            tot[k] = tot.get(k, 0) + v
        for k, v in cl.items():
            tot["claims " + k] = tot.get("claims " + k, 0) + v
        lines.append(_count_line(sid, c, cl))
    lines.append(_count_line("total", tot, {k[7:]: v for k, v in tot.items() if k.startswith("claims ")}))
    return lines


def _count_line(sid: str, c: Mapping[str, int], cl: Mapping[str, int]) -> str:
    """Structural cells apart from the discriminating ones, whose verdicts follow (model reference §12 R9, R11)."""
    cells = sum(c.get(k, 0) for k in VERDICTS)
    disc = c.get("discriminating", cells)

    def d(v: str) -> int:
        return c.get(f"discriminating {v}", c.get(v, 0))

    claims = sum(cl.values())
    rep = f", {c['repeated']} repeated measurement(s) counted once" if c.get("repeated") else ""
    return (
        f"{sid}: cells {cells} — structural {c.get('structural', 0)} ({c.get('structural within band', 0)} "
        f"within){rep}; discriminating within {d('within band')}/{disc}, explained {d('explained')}, open "
        f"{d('outside band')}, n/a {d('not available')}; claims hold {cl.get('holds', 0)}/{claims}"
    )
