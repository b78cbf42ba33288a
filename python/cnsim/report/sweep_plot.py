"""Figures of a sweep: a metric's mean ± 95 % CI against a swept parameter, one line per value of a
second parameter (``cnsim plot SWEEP_DIR --x PARAM --y METRIC [--hue PARAM]``, and the figures of the
sweep report).

Parameter values are written with units in sweep files (``"100Mbps"``, ``"5ms"``); the summary table
carries, beside each such label column, its value in SI base units (``<param> [bit/s]``, ``[B]``,
``[s]``), so axes are numeric: 1, 2 and 5 Gb/s are spaced as numbers, not as labels. Axis labels get
a readable prefix (Gb/s, KB, ms) and the metric's unit from its name (``_bps``, ``_bytes``, ``_us``).
"""

from __future__ import annotations

import difflib
import math
from typing import Any

from cnsim.exceptions import ConfigError, Problem
from cnsim.scenario.units import UnitError, parse_quantity

SI_UNIT = {"rate": "bit/s", "size": "B", "time": "s"}
_TIME_S = 1e-12  # picoseconds → seconds


def si_value(label: Any) -> tuple[float, str] | None:
    """(value in SI base units, unit) of a quantity label such as ``"100Mbps"``; None if it is not one."""

    if not isinstance(label, str):
        return None
    for kind in ("rate", "size", "time"):
        try:
            v = parse_quantity(label, kind, allow_zero=True)
        except (UnitError, ValueError, TypeError):
            continue
        return (v * _TIME_S if kind == "time" else float(v)), SI_UNIT[kind]
    return None


def add_si_columns(table: Any, params: list[str]) -> Any:
    """Insert ``<param> [unit]`` (float, SI base unit) after each parameter column whose every value is a
    quantity label of one kind."""
    for p in params:
        if p not in table:
            continue
        vals = [si_value(v) for v in table[p]]
        if not vals or any(v is None for v in vals) or len({u for _, u in vals}) != 1:
            continue
        unit = vals[0][1]
        table.insert(table.columns.get_loc(p) + 1, f"{p} [{unit}]", [x for x, _ in vals])
    return table


_PREFIX = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"), (1.0, "")]
_SMALL = [(1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p")]


def scale_for(values: list[float], unit: str) -> tuple[float, str]:
    """(divisor, axis unit) giving readable numbers: bit/s → Gb/s, B → KB, s → ms."""
    finite = [abs(v) for v in values if v is not None and math.isfinite(v) and v != 0]
    top = max(finite) if finite else 1.0
    table = _SMALL if unit == "s" else _PREFIX
    for f, pre in table:  # noqa: B007 (the loop finds `pre`, used after it)
        if top >= f:
            break
    else:
        f, pre = table[-1]
    if unit == "bit/s":
        return f, f"{pre}b/s"
    return f, f"{pre}{unit}"


def metric_unit(metric: str) -> str:
    """The unit a metric's name implies (empty when none)."""
    for suffix, unit in (
        ("_bps", "bit/s"),
        ("_bytes", "B"),
        ("_us", "µs"),
        ("_s", "s"),
        ("_fraction", ""),
        ("utilization", ""),
    ):
        if metric.endswith(suffix):
            return unit
    return ""


def _param_names(table: Any) -> list[str]:
    return [c for c in table.columns if c not in ("metric", "mean", "std", "ci95", "n") and not c.endswith("]")]


def check(table: Any, x: str, y: str, hue: str | None) -> None:
    """ConfigError naming what exists when --x, --y or --hue is not in the sweep's summary."""
    params = _param_names(table)
    metrics = sorted(set(table["metric"])) if "metric" in table else []
    problems = []

    for opt, v in (("--x", x), ("--hue", hue)):
        if v is not None and v not in params:
            problems.append(Problem(opt, f"not a swept parameter; parameters: {', '.join(params) or 'none'}", v))
    if y not in metrics:
        close = difflib.get_close_matches(y, metrics, n=5, cutoff=0.5)
        hint = (
            f"did you mean {', '.join(close)}?" if close else f"{len(metrics)} metrics, e.g. {', '.join(metrics[:5])}"
        )
        problems.append(Problem("--y", f"not a metric of this sweep; {hint}", y))
    if x is not None and hue is not None and x == hue:
        problems.append(Problem("--hue", "must differ from --x", hue))
    if problems:
        raise ConfigError(problems)


def draw(table: Any, x: str, y: str, hue: str | None = None, ax: Any = None, title: str | None = None) -> Any:
    """Mean ± 95 % CI of metric ``y`` against parameter ``x`` (numeric axis when it has SI values), one
    line per value of ``hue``. Returns the Axes."""
    from matplotlib.figure import Figure

    check(table, x, y, hue)
    t = table[table["metric"] == y].copy()
    xcol = next((c for c in t.columns if c.startswith(f"{x} [")), None)
    numeric = xcol is not None or all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in t[x])
    xs_col = xcol or x
    xunit = xcol[len(x) + 2 : -1] if xcol else ""
    xdiv, xlab = scale_for([float(v) for v in t[xs_col]], xunit) if numeric and xunit else (1.0, xunit)
    yunit = metric_unit(y)
    ydiv, ylab = scale_for(list(t["mean"]), yunit) if yunit else (1.0, "")
    if ax is None:
        ax = Figure(figsize=(6.4, 4.0), dpi=100).subplots()
    groups = [(None, t)] if hue is None else list(t.groupby(hue, sort=False))
    for key, g in groups:
        if numeric:
            g = g.assign(_x=g[xs_col].astype(float)).sort_values("_x")
            xv = (g["_x"] / xdiv).tolist()
        else:
            xv = [str(v) for v in g[x]]
        err = [0.0 if (e is None or not math.isfinite(e)) else e / ydiv for e in g["ci95"]]
        ax.errorbar(
            xv,
            (g["mean"] / ydiv).tolist(),
            yerr=err,
            marker="o",
            ms=4,
            capsize=3,
            lw=1.2,
            label=None if key is None else f"{hue} = {key}",
        )
    ax.set_xlabel(f"{x} ({xlab})" if xlab else x)
    ax.set_ylabel(f"{y} ({ylab})" if ylab else y)
    if hue is not None:
        ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    ax.set_title(title or f"{y} vs {x} (mean ± 95 % CI)", fontsize=10)
    return ax


PNG_MARK = "cnsim sweep plot"
"""The PNG ``Software`` text :func:`save` writes: how ``cnsim plot -o FILE`` knows a file it may replace."""


def save(ax: Any, path: Any) -> None:
    """Write the figure of ``ax`` as a PNG marked as cnsim's (see :func:`is_own_plot`)."""
    fig = ax.figure
    fig.tight_layout()
    fig.savefig(path, format="png", metadata={"Software": PNG_MARK})


def is_own_plot(path: Any) -> bool:
    """Whether the file ``path`` is a PNG :func:`save` wrote (its text chunks precede the image data)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.startswith(b"\x89PNG") and b"Software\x00" + PNG_MARK.encode() in head
