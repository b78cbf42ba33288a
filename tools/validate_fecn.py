"""Every cnsim number of docs/validation/fecn.md, next to the published one; prints Markdown.

Usage (from the repository root, after `make build`):

    .venv/bin/python tools/validate_fecn.py [-j 2] [--seeds 1,2,3] > /tmp/fecn-validation.md

Seed-000 runs are deterministic given the seed (saturated sources, no random process except the
FECN tagging draw) and are run once with seed 1. Seed-003 (CN-SIM) rows are the mean over
``--seeds`` (replications of the traffic streams), with the min–max range of the flow count.
"Paused %" is the mean over host→switch links of the fraction of time under PAUSE (spec §12 D6);
overhead is CM control bytes generated after warm-up, bit/s, counted once at the origin (§1.7).
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parents[1]
SC = ROOT / "scenarios"

BECN_T = {"30us": 30e-6, "300us": 300e-6, "3ms": 3e-3, "12ms": 12e-3}
BECN_PUBLISHED = {"30us": 1.63e9, "300us": 163e6, "3ms": 16.3e6, "12ms": 4.07e6}
HOTSPOTS = ("nohs", "hs2", "hs0.5", "hs0")
HS_LABEL = {"nohs": "none", "hs2": "2 Gb/s", "hs0.5": "0.5 Gb/s", "hs0": "0 Gb/s"}
# [D] FECN and No-CM rows: flows, bad, FCT avg, FCT max, FCT std, paused %, drops, overhead Mb/s
PUBLISHED = {
    ("fecn", "nohs", "pause"): (21916, 0, 137.7, 77514, 813, 8.1, 0, 2.5),
    ("fecn", "hs2", "pause"): (22428, 0, 188.7, 69933, 1122, 12.1, 0, 3.5),
    ("fecn", "hs0.5", "pause"): (22646, 0, 185.8, 91688, 1203, 1.2, 0, 3.6),
    ("fecn", "hs0", "pause"): (7186, 0, 2618, 82890, 13490, 72.8, 0, 1.7),
    ("fecn", "nohs", "nopause"): (21976, 192, 94.73, 13512, 942, 0, 19055, 3.0),
    ("fecn", "hs2", "nopause"): (22060, 139, 129.6, 64456, 753, 0, 21634, 3.1),
    ("fecn", "hs0.5", "nopause"): (22025, 115, 137.3, 91704, 950, 0, 13369, 3.1),
    ("fecn", "hs0", "nopause"): (20792, 345, 413, 90149, 4985, 0, 14697, 2.6),
    ("none", "nohs", "pause"): (20132, 0, 97.2, 25156, 477, 19.7, 0, 0),
    ("none", "hs2", "pause"): (15032, 0, 377.2, 79113, 1411, 65.2, 0, 0),
    ("none", "hs0.5", "pause"): (9232, 0, 1062, 81127, 3744, 52.2, 0, 0),
    ("none", "hs0", "pause"): (8636, 0, 2002, 79890, 10643, 75.3, 0, 0),
    ("none", "nohs", "nopause"): (18821, 200, 77.41, 32310, 1035, 0, 158747, 0),
    ("none", "hs2", "nopause"): (18821, 286, 132.3, 32231, 257, 0, 173277, 0),
    ("none", "hs0.5", "nopause"): (18821, 1030, 401.2, 17356, 1943, 0, 182056, 0),
    ("none", "hs0", "nopause"): (18821, 1550, 553, 79981, 6002, 0, 185568, 0),
}


def run_one(job: tuple[str, dict]) -> dict:
    import cnsim

    path, ov = job
    r = cnsim.run(SC / path, overrides=ov)
    s = r.summary
    host_links = [lk for lk in s["links"] if lk["from"].startswith("h")]
    out = {
        "overhead": s["control"]["overhead_bps"],
        "ctrl_bytes": s["control"]["bytes"],
        "messages": s["control"]["messages"],
        "flows": {f"{f['src']}->{f['dst']}": f["throughput_bps"] for f in s["flows"]},
        "jain": s["fairness"]["jain"],
        "paused": 100 * mean(lk["paused_fraction"] for lk in host_links) if host_links else 0.0,
        "drops": s["frames"]["dropped"],
        "fct": s["fct"],
        "queues": {f"{q['switch']}->{q['port']}": q["mean_bytes"] for q in s["queues"]},
        "n_hosts": len(host_links),
    }
    rr = r.tables["rp_rate"]
    if not rr.empty:
        late = rr[rr.t_s >= rr.t_s.max() / 2]
        out["late_rate"] = {f"{k}": v for k, v in late.groupby("flow")["rate_bps"].mean().items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--seeds", default="1,2,3")
    args = ap.parse_args()
    seeds = [int(x) for x in args.seeds.split(",")]

    jobs: dict[tuple, tuple[str, dict]] = {}
    for t in BECN_T:
        jobs[("becn-sym", t)] = (f"seed-000/symmetric-becn-{t}.toml", {})
    for t in ("30us", "300us"):
        jobs[("becn-asym", t)] = (f"seed-000/asymmetric-becn-{t}.toml", {"run.warmup": "20ms"})
    jobs[("park",)] = ("seed-000/parking-lot-fecn.toml", {"run.warmup": "20ms"})
    for x in (100, 10, 5, 1):
        jobs[("tag", x)] = (f"seed-000/symmetric-fecn-tag{x}.toml", {})
    for scheme in ("fecn", "none"):
        for hs in HOTSPOTS:
            for pz in ("pause", "nopause"):
                for seed in seeds:
                    jobs[("cnsim", scheme, hs, pz, seed)] = (
                        f"seed-003/cnsim-1hop-{scheme}-{hs}-{pz}.toml",
                        {"run.seed": seed},
                    )
    with ProcessPoolExecutor(args.j) as ex:
        res = dict(zip(jobs, ex.map(run_one, jobs.values())))

    print("## BECN signalling overhead, symmetric topology (seed 000)\n")
    print("| T | cnsim overhead | cnsim bytes per interval | cnsim overhead × T | published | published × T |")
    print("|---|---|---|---|---|---|")
    for t, secs in BECN_T.items():
        r = res[("becn-sym", t)]
        n_int = round(0.1 / secs - 0.5)  # ticks strictly inside [0, 100 ms)
        print(
            f"| {t} | {r['overhead'] / 1e6:.3f} Mb/s | {r['ctrl_bytes'] / n_int:.0f} B | "
            f"{r['overhead'] * secs:.0f} bit | {BECN_PUBLISHED[t] / 1e6:g} Mb/s | {BECN_PUBLISHED[t] * secs:.0f} bit |"
        )
    print("\nPer-flow throughput, symmetric BECN (Mb/s, whole run incl. the h1/h2 OFF periods):\n")
    print("| T | h1 | h2 | h3 | h4 | sum | sw1→sw2 mean queue | sw2→h5 mean queue |")
    print("|---|---|---|---|---|---|---|---|")
    for t in BECN_T:
        r = res[("becn-sym", t)]
        fl = list(r["flows"].values())
        print(
            f"| {t} | " + " | ".join(f"{x / 1e6:.0f}" for x in fl) + f" | {sum(fl) / 1e6:.0f} | "
            f"{r['queues']['sw1->sw2'] / 1e3:.1f} KB | {r['queues']['sw2->h5'] / 1e3:.1f} KB |"
        )

    print("\n## BECN asymmetric topology (seed 000), throughput after 20 ms\n")
    print("| T | h1→h5 | h2→h5 | h3→h6 | h4→h6 | overhead (all) | sw2→h5 mean queue | published |")
    print("|---|---|---|---|---|---|---|---|")
    pub = {"30us": "not reproducible: collapse", "300us": "≈ 418 Mb/s each = (1000 − 163)/2"}
    for t in ("30us", "300us"):
        r = res[("becn-asym", t)]
        print(
            f"| {t} | "
            + " | ".join(f"{x / 1e6:.1f}" for x in r["flows"].values())
            + f" | {r['overhead'] / 1e6:.1f} Mb/s | {r['queues']['sw2->h5'] / 1e3:.1f} KB | {pub[t]} |"
        )

    r = res[("park",)]
    print("\n## FECN parking lot (seed 000), throughput after 20 ms\n")
    print("| flow | cnsim | published (max-min C/5) |")
    print("|---|---|---|")
    for k, v in r["flows"].items():
        print(f"| {k} | {v / 1e9:.3f} Gb/s | 2 Gb/s |")
    print(
        f"\nJain's index {r['jain']:.5f}; L1 (sw1→sw2) mean queue {r['queues']['sw1->sw2'] / 1e3:.1f} KB, "
        f"L2 (sw2→sw3) {r['queues']['sw2->sw3'] / 1e3:.1f} KB; reply overhead {r['overhead'] / 1e6:.0f} Mb/s."
    )

    print("\n## FECN tagging rate, symmetric topology (seed 000; published: graphs only)\n")
    print("| tagging | h1 | h2 | h3 | h4 | sum (Mb/s) | Jain | replies | overhead | sw1→sw2 mean queue |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for x in (100, 10, 5, 1):
        r = res[("tag", x)]
        fl = list(r["flows"].values())
        print(
            f"| {x} % | " + " | ".join(f"{v / 1e6:.0f}" for v in fl) + f" | {sum(fl) / 1e6:.0f} | {r['jain']:.4f} | "
            f"{r['messages'].get('fecn_reply', 0)} | {r['overhead'] / 1e6:.1f} Mb/s | {r['queues']['sw1->sw2'] / 1e3:.1f} KB |"
        )

    print(f"\n## CN-SIM single hop (seed 003), mean over seeds {seeds}\n")
    for pz in ("pause", "nopause"):
        print(f"\n### PAUSE {'enabled' if pz == 'pause' else 'disabled'}\n")
        print(
            "| hotspot | scheme | | flows (range) | bad | FCT avg µs | FCT max µs | FCT std µs | paused % | "
            "drops | overhead Mb/s (total) | overhead per host |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for hs in HOTSPOTS:
            for scheme in ("fecn", "none"):
                rs = [res[("cnsim", scheme, hs, pz, s)] for s in seeds]
                n = [r["fct"]["count"] for r in rs]
                ov = mean(r["overhead"] for r in rs) / 1e6
                print(
                    f"| {HS_LABEL[hs]} | {scheme.upper() if scheme == 'fecn' else 'No CM'} | cnsim | "
                    f"{mean(n):.0f} ({min(n)}–{max(n)}) | {mean(r['fct']['bad_flows'] for r in rs):.0f} | "
                    f"{mean(r['fct']['mean_us'] for r in rs):.1f} | {mean(r['fct']['max_us'] for r in rs):.0f} | "
                    f"{mean(r['fct']['std_us'] for r in rs):.0f} | {mean(r['paused'] for r in rs):.1f} | "
                    f"{mean(r['drops'] for r in rs):.0f} | {ov:.2f} | {ov / rs[0]['n_hosts']:.2f} |"
                )
                p = PUBLISHED[(scheme, hs, pz)]
                print(f"| | | [D] | {p[0]} | {p[1]} | {p[2]} | {p[3]} | {p[4]} | {p[5]} | {p[6]} | {p[7]} | |")


if __name__ == "__main__":
    main()
