"""Compare QCN (and DCQCN) with BCN / ECM and no CM on the seed scenarios; print Markdown tables.

Usage (from the repository root, after `make build`):

    .venv/bin/python tools/compare_qcn.py [-j 2] [--seeds 1,2,3] > /tmp/qcn-compare.md

Every number in docs/validation/qcn.md comes from this script. Each row is the mean over the given
seeds (replications of the traffic and sampler random streams). Queue statistics are those of the
named bottleneck egress queue; "paused %" is the mean over host→switch links of the time under PAUSE.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parents[1]
SC = ROOT / "scenarios"

# (table, row label, scenario path, overrides, bottleneck (switch, port))
RUNS: list[tuple[str, str, str, dict, tuple[str, str]]] = []


def add(table, label, path, bottleneck, **ov):
    RUNS.append((table, label, path, {k.replace("__", "."): v for k, v in ov.items()}, bottleneck))


for s in ("none", "bcn", "qcn", "dcqcn"):
    add("S-SYM", s, f"seed-000/symmetric-{s}.toml", ("sw1", "sw2"))
add("S-SYM", "qcn T=1.5ms", "seed-000/symmetric-qcn.toml", ("sw1", "sw2"), cm__params__timer_period="1.5ms")
add("S-SYM", "dcqcn mellanox", "seed-000/symmetric-dcqcn.toml", ("sw1", "sw2"), cm__params__variant="mellanox")
for s in ("none", "bcn", "qcn", "dcqcn"):
    add("S-PARK", s, f"seed-000/parking-lot-{s}.toml", ("sw1", "sw2"))
add("S-PARK", "qcn T=1.5ms", "seed-000/parking-lot-qcn.toml", ("sw1", "sw2"), cm__params__timer_period="1.5ms")
for s in ("none", "bcn95-150k", "bcnm-150k", "bcnm95-25k", "bcnzp-25k", "qcn", "dcqcn"):
    add("S-100", s, f"seed-001/fan-in-100-{s}.toml", ("cs", "ep0"))
add("S-100", "qcn T=1.5ms", "seed-001/fan-in-100-qcn.toml", ("cs", "ep0"), cm__params__timer_period="1.5ms")
for pause in ("pause", "nopause"):
    for hs in ("nohs", "hs2", "hs0.5", "hs0"):
        for s in ("none", "ecm", "qcn", "dcqcn"):
            add(f"S-CNSIM-1HOP {pause}", f"{hs} {s}", f"seed-003/cnsim-1hop-{s}-{hs}-{pause}.toml", ("sw1", "h1"))
for s in ("none", "bcn", "bcn-q5", "qcn", "dcqcn"):
    add("S-OGMS", s, f"seed-004/og-multistage-{s}.toml", ("e3", "n7"))


def one(job):
    table, label, path, ov, (sw, port), seed = job
    import cnsim

    r = cnsim.run(SC / path, seed=seed, overrides=ov, plots=False).summary
    q = next(x for x in r["queues"] if x["switch"] == sw and x["port"] == port)
    hosts = {f["src"] for f in r["flows"]} | {f["dst"] for f in r["flows"]}
    paused = [ln["paused_fraction"] for ln in r["links"] if ln["from"] in hosts]
    tp = {(f["src"], f["dst"]): f["throughput_bps"] for f in r["flows"]}
    return (
        table,
        label,
        {
            "q_mean": q["mean_bytes"] / 1e3,
            "q_p99": q["p99_bytes"] / 1e3,
            "q_max": q["max_bytes"] / 1e3,
            "drops": r["frames"]["dropped"],
            "ovh": r["control"]["overhead_bps"] / 1e6,
            "msgs": sum(r["control"]["messages"].values()),
            "jain": r["fairness"]["jain"],
            "agg": sum(tp.values()) / 1e9,
            "paused": 100 * mean(paused) if paused else 0.0,
            "flows": r["fct"]["count"],
            "bad": r["fct"]["bad_flows"],
            "fct_mean": r["fct"]["mean_us"],
            "fct_max": r["fct"]["max_us"],
            "tp": tp,
        },
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--seeds", default="1")
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    jobs = [(*run, seed) for run in RUNS for seed in seeds]
    with ProcessPoolExecutor(a.j) as ex:
        out = list(ex.map(one, jobs))
    rows: dict[tuple[str, str], list[dict]] = {}
    for table, label, m in out:
        rows.setdefault((table, label), []).append(m)
    tables: dict[str, list[tuple[str, dict]]] = {}
    for (table, label), ms in rows.items():
        avg = {k: mean(m[k] for m in ms) for k in ms[0] if k != "tp"}
        avg["tp"] = {k: mean(m["tp"][k] for m in ms) for k in ms[0]["tp"]}
        tables.setdefault(table, []).append((label, avg))
    print(f"<!-- tools/compare_qcn.py -j {a.j} --seeds {a.seeds} -->")
    for table, lines in tables.items():
        print(f"\n### {table}\n")
        if table.startswith("S-CNSIM"):
            print(
                "| hotspot / scheme | flows | bad | FCT mean µs | FCT max µs | paused % | drops | overhead Mb/s | HS queue mean / max KB |"
            )
            print("|---|---|---|---|---|---|---|---|---|")
            for label, m in lines:
                print(
                    f"| {label} | {m['flows']:.0f} | {m['bad']:.0f} | {m['fct_mean']:.1f} | {m['fct_max']:.0f} | "
                    f"{m['paused']:.1f} | {m['drops']:.0f} | {m['ovh']:.2f} | {m['q_mean']:.1f} / {m['q_max']:.1f} |"
                )
            continue
        extra = " 2(R1+R2)/ΣR0i |" if table == "S-PARK" else ""
        print(
            f"| scheme | queue mean / p99 / max KB | drops | messages | overhead Mb/s | aggregate Gb/s | Jain |{extra}"
        )
        print("|---|---|---|---|---|---|---|" + ("---|" if extra else ""))
        for label, m in lines:
            ratio = ""
            if extra:
                tp = m["tp"]
                short = tp.get(("h5", "h7"), 0) + tp.get(("h6", "h8"), 0)
                long_ = sum(v for (s, d), v in tp.items() if d == "h9")
                ratio = f" {2 * short / long_:.2f} |" if long_ else " — |"
            print(
                f"| {label} | {m['q_mean']:.1f} / {m['q_p99']:.1f} / {m['q_max']:.1f} | {m['drops']:.0f} | "
                f"{m['msgs']:.0f} | {m['ovh']:.2f} | {m['agg']:.2f} | {m['jain']:.3f} |{ratio}"
            )


if __name__ == "__main__":
    main()
