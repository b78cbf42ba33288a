"""Tables of docs/validation/cnsim-traffic.md from the sweeps in this directory.

    .venv/bin/python sweeps/seed-003-sensitivity/analyze.py results/seed-003-sensitivity > /tmp/tables.md

Reads DIR/none-<hs>-<pause>/runs.parquet (written by `cnsim summarize`) and every run's fct.parquet
(realised transfer sizes); prints Markdown tables of mean ± 95 % CI (Student t) per point beside [D]'s
published No-CM values (spec §9.5).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

HS = [("nohs", "none"), ("hs2", "2 Gb/s"), ("hs0.5", "0.5 Gb/s"), ("hs0", "0 Gb/s")]
XM_ALPHA = {"1.2us": "1.027", "4.090909us": "1.1", "15us": "1.5"}
# [D] No-CM rows (spec §9.5): flows, bad, FCT min/avg/max/std, paused %, drops
PUB = {
    ("nohs", "pause"): (20132, 0, 3.5, 97.2, 25156, 477, 19.7, 0),
    ("hs2", "pause"): (15032, 0, 3.5, 377.2, 79113, 1411, 65.2, 0),
    ("hs0.5", "pause"): (9232, 0, 3.5, 1062, 81127, 3744, 52.2, 0),
    ("hs0", "pause"): (8636, 0, 3.5, 2002, 79890, 10643, 75.3, 0),
    ("nohs", "nopause"): (18821, 200, 3.5, 77.41, 32310, 1035, 0, 158747),
    ("hs2", "nopause"): (18821, 286, 3.5, 132.3, 32231, 257, 0, 173277),
    ("hs0.5", "nopause"): (18821, 1030, 3.5, 401.2, 17356, 1943, 0, 182056),
    ("hs0", "nopause"): (18821, 1550, 3.5, 553, 79981, 6002, 0, 185568),
}


def ci(x: pd.Series) -> tuple[float, float]:
    x = x.dropna().astype(float)
    n = len(x)
    if n < 2:
        return float(x.mean()), float("nan")
    return float(x.mean()), float(stats.t.ppf(0.975, n - 1) * x.std(ddof=1) / np.sqrt(n))


def fmt(m: float, h: float, nd: int = 0) -> str:
    if np.isnan(h):
        return f"{m:,.{nd}f}".replace(",", " ")
    return f"{m:,.{nd}f} ± {h:,.{nd}f}".replace(",", " ")


def load(root: Path) -> pd.DataFrame:
    frames = []
    for hs, _ in HS:
        for p in ("pause", "nopause"):
            d = root / f"none-{hs}-{p}"
            r = pd.read_parquet(d / "runs.parquet")
            r = r[r.status == "ok"].copy()
            r["hs"], r["pause_mode"] = hs, p
            sizes = []
            for rid in r.run_id:
                f = pd.read_parquet(d / "runs" / rid / "fct.parquet", columns=["frames", "completed", "bad"])
                # transfers fully transmitted in the run (completed or bad); the one still in progress at
                # the end is length-biased (a huge draw) and would dominate the mean
                done = f[(f.completed == 1) | (f.bad == 1)]
                sizes.append((done.frames.mean(), f.frames.mean(), f.frames.max()))
            r = r.copy()
            r["mean_frames"] = [x[0] for x in sizes]
            r["mean_frames_all"] = [x[1] for x in sizes]
            r["max_frames"] = [x[2] for x in sizes]
            frames.append(r)
    df = pd.concat(frames, ignore_index=True).copy()
    df["alpha"] = df["param:traffic.flows.xm"].map(XM_ALPHA)
    df["n_hosts"] = df["param:topology.params.n_hosts"].astype(int)
    df["flows_total"] = df["fct.count"] + df["fct.bad_flows"] + df["fct.unfinished"]
    df["paused_pct"] = 100 * df["pause.host_paused_fraction"]
    df["mean_on_us"] = df["mean_frames"] * 1.2
    return df


def main(root: Path) -> None:
    df = load(root)
    nrep = df.groupby(["hs", "pause_mode", "alpha", "n_hosts"]).size()
    print(f"<!-- replications per point: {nrep.min()}–{nrep.max()} -->\n")

    # realised flow size / ON time per alpha (PAUSE off, no hotspot: the generator is never blocked)
    print("### Realised flow size per α (no hotspot, PAUSE off)\n")
    print(
        "| α | x_m µs | n_hosts | mean frames / transmitted flow | realised mean ON µs | median over runs µs | "
        "largest flow drawn (frames, median) | offered load % | transfers / host | "
        "flows total (min–max over runs) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    sub = df[(df.hs == "nohs") & (df.pause_mode == "nopause")]
    for (a, n), g in sub.groupby(["alpha", "n_hosts"]):
        xm = {"1.027": 1.2, "1.1": 4.0909, "1.5": 15.0}[a]
        mf, hf = ci(g.mean_frames)
        mo, ho = ci(g.mean_on_us)
        load_ = g.mean_on_us / (g.mean_on_us + 15.0) * 100
        ml, hl = ci(load_)
        mt, ht = ci(g.flows_total / n)
        print(
            f"| {a} | {xm:g} | {n} | {fmt(mf, hf, 1)} | {fmt(mo, ho, 1)} | {g.mean_on_us.median():.1f} | "
            f"{g.max_frames.median():,.0f} | {fmt(ml, hl, 0)} | {fmt(mt, ht, 0)} | "
            f"{int(g.flows_total.min()):,}–{int(g.flows_total.max()):,} |".replace(",", " ")
        )
    print()

    cols = [
        ("flows_total", 0),
        ("fct.count", 0),
        ("fct.bad_flows", 0),
        ("fct.min_us", 1),
        ("fct.mean_us", 0),
        ("fct.max_us", 0),
        ("fct.std_us", 0),
        ("paused_pct", 1),
        ("frames.dropped", 0),
    ]
    for p, title in (("pause", "PAUSE enabled"), ("nopause", "PAUSE disabled")):
        print(f"### No CM, {title}\n")
        print(
            "| hotspot | α | hosts | flows total | completed | bad | FCT min µs | FCT mean µs | FCT max µs | "
            "FCT std µs | paused % | dropped frames |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for hs, label in HS:
            pub = PUB[(hs, p)]
            flows_pub = f"**{pub[0]:,}**".replace(",", " ")
            print(
                f"| {label} | **[D]** | | {flows_pub} | | **{pub[1]}** | **{pub[2]}** | **{pub[3]}** | "
                f"**{pub[4]:,}** | **{pub[5]:,}** | **{pub[6]}** | **{pub[7]:,}** |".replace(",", " ")
            )
            g0 = df[(df.hs == hs) & (df.pause_mode == p)]
            for (a, n), g in g0.groupby(["alpha", "n_hosts"]):
                cells = [fmt(*ci(g[c]), nd) for c, nd in cols]
                print(f"| | {a} | {n} | " + " | ".join(cells) + " |")
        print()

    # ratios hotspot / no hotspot of flows (closed-loop collapse under PAUSE)
    print("### Flow count relative to the no-hotspot run (same α, hosts, replication), PAUSE enabled\n")
    print("| α | hosts | 2 Gb/s | 0.5 Gb/s | 0 Gb/s |")
    print("|---|---|---|---|---|")
    base = df[(df.hs == "nohs") & (df.pause_mode == "pause")].set_index(["alpha", "n_hosts", "replication"])
    pub0 = PUB[("nohs", "pause")][0]
    print("| **[D]** | | " + " | ".join(f"**{PUB[(h, 'pause')][0] / pub0:.2f}**" for h, _ in HS[1:]) + " |")
    for (a, n), _ in base.groupby(level=[0, 1]):
        cells = []
        for hs, _ in HS[1:]:
            g = df[(df.hs == hs) & (df.pause_mode == "pause") & (df.alpha == a) & (df.n_hosts == n)]
            g = g.set_index(["alpha", "n_hosts", "replication"])
            ratio = g["fct.count"] / base.loc[g.index, "fct.count"]
            cells.append(fmt(*ci(ratio), 2))
        print(f"| {a} | {n} | " + " | ".join(cells) + " |")
    print()

    # distance to [D] on flows (log ratio), per (alpha, n_hosts)
    print("### Distance to [D] per (α, hosts): mean |log(cnsim / [D])| over the eight rows\n")
    print("| α | hosts | flows | FCT mean | FCT std | paused % (PAUSE on) | drops (PAUSE off) |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for (a, n), g0 in df.groupby(["alpha", "n_hosts"]):
        d = {"flows": [], "fct": [], "std": [], "paused": [], "drops": []}
        for (hs, p), g in g0.groupby(["hs", "pause_mode"]):
            pub = PUB[(hs, p)]
            d["flows"].append(abs(np.log(g.flows_total.mean() / pub[0])))
            d["fct"].append(abs(np.log(g["fct.mean_us"].mean() / pub[3])))
            d["std"].append(abs(np.log(g["fct.std_us"].mean() / pub[5])))
            if p == "pause":
                d["paused"].append(abs(np.log(g.paused_pct.mean() / pub[6])))
            else:
                d["drops"].append(abs(np.log(g["frames.dropped"].mean() / pub[7])))
        rows.append((a, n, *(np.mean(v) for v in d.values())))
    for a, n, *v in rows:
        print(f"| {a} | {n} | " + " | ".join(f"{x:.2f}" for x in v) + " |")
    print()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "results/seed-003-sensitivity"))
