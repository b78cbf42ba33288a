"""Seed 003 under one reading: every row of [D]'s two tables against cnsim, quickly (issue 11).

Runs the 24 scenarios scenarios/seed-003/cnsim-1hop-<scheme>-<hotspot>-<pause>.toml with the given
overrides (seeds 1-4 by default, two processes) and prints, per row, [D] / cnsim for flows, FCT mean,
max and standard deviation, paused %, dropped frames and overhead; ✓ marks a cell within the study's
band (python/cnsim/studies/seed-003.toml), (s) a structural cell. The FCT statistics are taken from
fct.parquet over completed transfers without a dropped frame, measured from the transfer's generation
(`--fct-from start`, the study's definition) or from its first transmission (`--fct-from first_tx`).
Flows: completed transfers with PAUSE on, all generated transfers with PAUSE off (as the study).
The bad-flow column is left out, so the count is of 136 discriminating cells, not the study's 148.

Usage: .venv/bin/python tools/cnsim_readings.py [--fct-from start|first_tx] [--seeds 1,2,3,4]
           [--set PATH=VALUE]... [--out DIR]
e.g.   .venv/bin/python tools/cnsim_readings.py --fct-from first_tx --set traffic.flows.loop=open
"""

import argparse
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import polars as pl

from cnsim.loader import parse_value

SCHEMES = ("ecm", "fecn", "none")
HOTSPOTS = ("nohs", "hs2", "hs0.5", "hs0")
COLUMNS = ("flows", "FCT avg µs", "FCT max µs", "FCT std µs", "paused %", "drops", "overhead Mb/s")
# [D]'s tables: (flows, FCT avg, max, stddev µs, paused %, dropped frames, overhead Mb/s) per (scheme, hotspot)
D = {
    "pause": {
        ("ecm", "nohs"): (22413, 66.4, 69880, 718, 0, 0, 28.2),
        ("fecn", "nohs"): (21916, 137.7, 77514, 813, 8.1, 0, 2.5),
        ("none", "nohs"): (20132, 97.2, 25156, 477, 19.7, 0, 0),
        ("ecm", "hs2"): (20386, 80.4, 51297, 750, 0, 0, 26.7),
        ("fecn", "hs2"): (22428, 188.7, 69933, 1122, 12.1, 0, 3.5),
        ("none", "hs2"): (15032, 377.2, 79113, 1411, 65.2, 0, 0),
        ("ecm", "hs0.5"): (21104, 114.4, 86295, 1268, 11.1, 0, 29.3),
        ("fecn", "hs0.5"): (22646, 185.8, 91688, 1203, 1.2, 0, 3.6),
        ("none", "hs0.5"): (9232, 1062, 81127, 3744, 52.2, 0, 0),
        ("ecm", "hs0"): (15123, 784, 72467, 7309, 50.2, 0, 15.2),
        ("fecn", "hs0"): (7186, 2618, 82890, 13490, 72.8, 0, 1.7),
        ("none", "hs0"): (8636, 2002, 79890, 10643, 75.3, 0, 0),
    },
    "nopause": {
        ("ecm", "nohs"): (20399, 70.3, 76210, 925, 0, 0, 29.11),
        ("fecn", "nohs"): (21976, 94.73, 13512, 942, 0, 19055, 3.0),
        ("none", "nohs"): (18821, 77.41, 32310, 1035, 0, 158747, 0),
        ("ecm", "hs2"): (18760, 113.4, 80024, 1590, 0, 11, 30.6),
        ("fecn", "hs2"): (22060, 129.6, 64456, 753, 0, 21634, 3.1),
        ("none", "hs2"): (18821, 132.3, 32231, 257, 0, 173277, 0),
        ("ecm", "hs0.5"): (22654, 126.4, 86278, 1484, 0, 484, 30.5),
        ("fecn", "hs0.5"): (22025, 137.3, 91704, 950, 0, 13369, 3.1),
        ("none", "hs0.5"): (18821, 401.2, 17356, 1943, 0, 182056, 0),
        ("ecm", "hs0"): (21191, 293, 83983, 3726, 0, 4917, 31.1),
        ("fecn", "hs0"): (20792, 413, 90149, 4985, 0, 14697, 2.6),
        ("none", "hs0"): (18821, 553, 79981, 6002, 0, 185568, 0),
    },
}


def within(i: int, pub: float, val: float) -> bool:
    """The study's bands: counts ±15 %, FCT mean/std ±30 %, max ±50 %, paused ±5 points, drops ±25 %
    (±50 frames near zero), overhead ±15 % (±0.5 Mb/s near zero)."""
    if i in (0, 1, 2, 3):
        return abs(val - pub) <= (0.15, 0.30, 0.50, 0.30)[i] * pub
    if i == 4:
        return abs(val - pub) <= 5
    if i == 5:
        return abs(val - pub) <= max(50, 0.25 * pub)
    return abs(val - pub) <= max(0.5, 0.15 * pub)


def structural(i: int, scheme: str, pause: str) -> bool:
    return (i == 4 and pause == "nopause") or (i == 5 and pause == "pause") or (i == 6 and scheme == "none")


def one(job: tuple) -> tuple:
    scheme, hs, pause, seed, overrides, fct_from, out = job
    import cnsim

    d = Path(out) / f"{scheme}-{hs}-{pause}-{seed}"
    s = cnsim.run(f"scenarios/seed-003/cnsim-1hop-{scheme}-{hs}-{pause}.toml", seed=seed, overrides=overrides,
                  out=d, force=True).summary
    f = pl.read_parquet(d / "fct.parquet")
    good = f.filter(pl.col("completed").cast(pl.Boolean) & (pl.col("bad") == 0))
    fct = (good["end_s"] - good[f"{fct_from}_s"]) * 1e6
    flows = good.height if pause == "pause" else f.height
    paused = 100 * s["pause"]["host_paused_fraction"] if s.get("pause") else 0.0
    return (scheme, hs, pause, (flows, fct.mean(), fct.max(), fct.std(), paused, s["frames"]["dropped"],
                                s["control"]["overhead_bps"] / 1e6))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fct-from", choices=("start", "first_tx"), default="start")
    ap.add_argument("--seeds", default="1,2,3,4")
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    ap.add_argument("--out", default="/tmp/cnsim_readings")
    a = ap.parse_args()
    overrides = {k: parse_value(v) for k, v in (kv.split("=", 1) for kv in a.set)}
    jobs = [(sc, hs, p, int(seed), overrides, a.fct_from, a.out)
            for p in ("pause", "nopause") for hs in HOTSPOTS for sc in SCHEMES for seed in a.seeds.split(",")]
    with ProcessPoolExecutor(2) as ex:
        results = list(ex.map(one, jobs))
    print(f"overrides {overrides or '(none)'}; FCT from {a.fct_from}; seeds {a.seeds}")
    print("| row | " + " | ".join(COLUMNS) + " |")
    print("|---|" + "---|" * len(COLUMNS))
    n_in = n = 0
    for p in ("pause", "nopause"):
        for hs in HOTSPOTS:
            for sc in SCHEMES:
                runs = [r[3] for r in results if r[:3] == (sc, hs, p)]
                means = [statistics.mean(r[i] for r in runs) for i in range(len(COLUMNS))]
                cells = []
                for i, (pub, val) in enumerate(zip(D[p][(sc, hs)], means)):
                    ok, st = within(i, pub, val), structural(i, sc, p)
                    if not st:
                        n, n_in = n + 1, n_in + ok
                    cells.append(f"{pub:g} / {val:.4g}" + (" ✓" if ok else "") + (" (s)" if st else ""))
                print(f"| {sc}, {hs}, {p} | " + " | ".join(cells) + " |")
    print(f"discriminating cells within band: {n_in} / {n}")


if __name__ == "__main__":
    main()
