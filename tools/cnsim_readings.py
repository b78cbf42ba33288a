"""Seed 003 under one reading: every row of [D]'s two tables against cnsim, quickly (issue 11).

Runs the 24 scenarios scenarios/seed-003/cnsim-1hop-<scheme>-<hotspot>-<pause>.toml with the given
overrides (seeds 1-4 by default, two processes) and prints, per row, [D] / cnsim for flows, FCT mean,
max and standard deviation, paused %, dropped frames and overhead; ✓ marks a cell within the study's
band (python/cnsim/experiments/studies/seed-003.toml), (s) a structural cell. The FCT statistics are taken from
fct.parquet over completed transfers without a dropped frame, measured from the transfer's generation
(`--fct-from start`, the study's definition) or from its first transmission (`--fct-from first_tx`).
Flows: completed transfers with PAUSE on, all generated transfers with PAUSE off (as the study).
The bad-flow column is left out, so the count is of 136 discriminating cells, not the study's 148.

Usage: .venv/bin/python tools/cnsim_readings.py [--fct-from start|first_tx] [--seeds 1,2,3,4]
           [--set PATH=VALUE]... [--set-scheme SCHEME:PATH=VALUE]... [--out DIR] [--force]
e.g.   .venv/bin/python tools/cnsim_readings.py --fct-from first_tx --set traffic.flows.loop=open
"""

import argparse
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import polars as pl
from cnsim.compile.loader import parse_value
from cnsim.exceptions import CnsimError
from cnsim.experiments.reproduce import Cell, load_study

SCHEMES = ("ecm", "fecn", "none")
HOTSPOTS = ("nohs", "hs2", "hs0.5", "hs0")
# the study's column of each measured value (PAUSE off: "flows total" for "flows")
COLUMNS = ("flows", "FCT avg µs", "FCT max µs", "FCT stddev µs", "avg time paused %", "dropped frames", "overhead Mb/s")


def published_cells() -> dict[tuple[str, str], Cell]:
    """[D]'s cells from the seed-003 study (published value, band, structural), by (sweep, column)."""
    cells = {}
    for c in load_study("seed-003").cells:
        col = "flows" if c.column == "flows total" else c.column
        if c.sweep is not None and col in COLUMNS:
            cells[(c.sweep, col)] = c
    return cells


def one(job: tuple) -> tuple:
    scheme, hs, pause, seed, overrides, fct_from, out, force = job
    import cnsim

    d = Path(out) / f"{scheme}-{hs}-{pause}-{seed}"
    s = cnsim.run(
        f"scenarios/seed-003/cnsim-1hop-{scheme}-{hs}-{pause}.toml", seed=seed, overrides=overrides, out=d, force=force
    ).summary
    f = pl.read_parquet(d / "fct.parquet")
    good = f.filter(pl.col("completed").cast(pl.Boolean) & (pl.col("bad") == 0))
    fct = (good["end_s"] - good[f"{fct_from}_s"]) * 1e6
    flows = good.height if pause == "pause" else f.height
    paused = 100 * s["pause"]["host_paused_fraction"] if s.get("pause") else 0.0
    return (
        scheme,
        hs,
        pause,
        (flows, fct.mean(), fct.max(), fct.std(), paused, s["frames"]["dropped"], s["control"]["overhead_bps"] / 1e6),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fct-from", choices=("start", "first_tx"), default="start")
    ap.add_argument("--seeds", default="1,2,3,4")
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    ap.add_argument(
        "--set-scheme",
        action="append",
        default=[],
        metavar="SCHEME:PATH=VALUE",
        help="an override for one scheme's scenarios only, e.g. fecn:cm.params.probe_rule=source_periodic",
    )
    ap.add_argument("--out", default="/tmp/cnsim_readings")
    ap.add_argument(
        "--force",
        action="store_true",
        help="in run folders under --out that also hold files cnsim did not write, replace cnsim's files and keep those",
    )
    a = ap.parse_args()
    overrides = {k: parse_value(v) for k, v in (kv.split("=", 1) for kv in a.set)}
    per_scheme: dict[str, dict] = {sc: {} for sc in SCHEMES}
    for item in a.set_scheme:
        sc, _, kv = item.partition(":")
        if sc not in per_scheme or "=" not in kv:
            raise SystemExit(f"error: --set-scheme {item!r}: expected SCHEME:PATH=VALUE, SCHEME one of {SCHEMES}")
        k, v = kv.split("=", 1)
        per_scheme[sc][k] = parse_value(v)
    jobs = [
        (sc, hs, p, int(seed), overrides | per_scheme[sc], a.fct_from, a.out, a.force)
        for p in ("pause", "nopause")
        for hs in HOTSPOTS
        for sc in SCHEMES
        for seed in a.seeds.split(",")
    ]
    from cnsim.results.outdir import check

    for j in jobs:  # before any run: a folder under --out that is not a cnsim result is refused, not replaced
        check(Path(a.out) / f"{j[0]}-{j[1]}-{j[2]}-{j[3]}", force=a.force, field="--out")
    with ProcessPoolExecutor(2) as ex:
        results = list(ex.map(one, jobs))
    cells = published_cells()
    print(
        f"overrides {overrides or '(none)'}; per scheme {a.set_scheme or '(none)'}; FCT from {a.fct_from}; seeds {a.seeds}"
    )
    print("| row | " + " | ".join(COLUMNS) + " |")
    print("|---|" + "---|" * len(COLUMNS))
    n_in = n = 0
    for p in ("pause", "nopause"):
        for hs in HOTSPOTS:
            for sc in SCHEMES:
                runs = [r[3] for r in results if r[:3] == (sc, hs, p)]
                means = [statistics.mean(r[i] for r in runs) for i in range(len(COLUMNS))]
                out = []
                for col, val in zip(COLUMNS, means):
                    c = cells[(f"{sc}-{hs}-{p}", col)]
                    ok = c.band.contains(c.published, val)
                    if not c.structural:
                        n, n_in = n + 1, n_in + ok
                    out.append(f"{c.published:g} / {val:.4g}" + (" ✓" if ok else "") + (" (s)" if c.structural else ""))
                print(f"| {sc}, {hs}, {p} | " + " | ".join(out) + " |")
    print(f"discriminating cells within band: {n_in} / {n}")


if __name__ == "__main__":
    try:
        main()
    except CnsimError as exc:  # e.g. a folder under --out that is not a cnsim result
        raise SystemExit(f"error: {exc}") from None
