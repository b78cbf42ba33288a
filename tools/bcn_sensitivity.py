"""Sensitivity of the seed-001 (100 flows) and seed-003 (ECM, no PAUSE) results to the BCN/ECM
readings left open by the spec (§12 B2, B4, §2.2); results in docs/validation/bcn.md.

Each run equals ``cnsim run <scenario> --seed N --set cm.params.<k>=<v> ...``; this script only
loops and tabulates (sequential, one core).

    .venv/bin/python tools/bcn_sensitivity.py s100 [--readings default,arrival,...] [--seeds 1,2]
    .venv/bin/python tools/bcn_sensitivity.py ecm  [--seeds 1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import cnsim

ROOT = Path(__file__).resolve().parents[1]
SC = ROOT / "scenarios"

S100_VARIANTS = ("bcn95", "bcnm", "bcnm95", "bcnz", "bcnz95", "bcnzd", "bcnzp")
S100_PUBLISHED = {"bcn95": (162947, 19657), "bcnm": (137099, 5071), "bcnm95": (12363, 851), "bcnz": (39093, 6052),
                  "bcnz95": (37863, 2571), "bcnzd": (39185, 4647), "bcnzp": (37194, 2725)}
READINGS: dict[str, dict[str, str]] = {
    "default": {},
    "arrival": {"cm.params.severe_trigger": "every_arrival"},
    "arrival_h100": {"cm.params.severe_trigger": "every_arrival", "cm.params.severe_holdoff": "100us"},
    "uncongested": {"cm.params.reset_event": "uncongested"},
    "arrival_uncongested": {"cm.params.severe_trigger": "every_arrival", "cm.params.reset_event": "uncongested"},
    "refused": {"cm.params.sample_refused": "true"},
    "positive": {"cm.params.reset_event": "positive"},
    "released": {"cm.params.reset_event": "released"},
}
ECM_PUBLISHED = {"nohs": 0, "hs2": 11, "hs0.5": 484, "hs0": 4917}


def _run(path: Path, seed: int, overrides: dict[str, str]) -> dict:
    ov = {k: (v == "true" if v in ("true", "false") else v) for k, v in overrides.items()}
    return cnsim.run(path, seed=seed, overrides=ov).summary


def s100(readings: list[str], seeds: list[int]) -> dict:
    out = {}
    for r in readings:
        for v in S100_VARIANTS:
            for s in ("150k", "25k"):
                vals = []
                for seed in seeds:
                    t = time.time()
                    summ = _run(SC / f"seed-001/fan-in-100-{v}-{s}.toml", seed, READINGS[r])
                    q = next(q for q in summ["queues"] if q["switch"] == "cs" and q["port"] == "ep0")
                    m = summ["control"]["messages"]
                    vals.append({"drops": q["drops"], "mean_q": q["mean_bytes"], "msgs": m})
                    print(f"{r:20s} {v:7s} {s:4s} seed {seed}: drops {q['drops']:7d} mean q "
                          f"{q['mean_bytes'] / 1e3:6.1f} KB msgs {m} ({time.time() - t:.1f}s)", file=sys.stderr)
                out[f"{r}/{v}/{s}"] = vals
    return out


def ecm(readings: list[str], seeds: list[int]) -> dict:
    out = {}
    for r in readings:
        for hs in ECM_PUBLISHED:
            vals = []
            for seed in seeds:
                t = time.time()
                summ = _run(SC / f"seed-003/cnsim-1hop-ecm-{hs}-nopause.toml", seed, READINGS[r])
                f = summ["fct"]
                row = {"drops": summ["drops"]["data"], "overhead_mbps": round(summ["control"]["overhead_bps"] / 1e6, 2),
                       "flows": f["count"], "bad": f["bad_flows"], "fct_avg_us": round(f["mean_us"], 1)}
                vals.append(row)
                print(f"{r:12s} {hs:5s} seed {seed}: {row} ({time.time() - t:.1f}s)", file=sys.stderr)
            out[f"{r}/{hs}"] = vals
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("study", choices=("s100", "ecm"))
    ap.add_argument("--readings", default=None)
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--out", default=None, help="write the raw numbers as JSON here")
    a = ap.parse_args()
    seeds = [int(x) for x in a.seeds.split(",")]
    if a.study == "s100":
        rd = (a.readings or "default,arrival,uncongested").split(",")
        res = s100(rd, seeds)
        print("| variant | sampling | [B] | " + " | ".join(rd) + " |")
        print("|---|---|---|" + "---|" * len(rd))
        for v in S100_VARIANTS:
            for i, s in enumerate(("150k", "25k")):
                cells = [f"{statistics.median(x['drops'] for x in res[f'{r}/{v}/{s}']):,.0f}" for r in rd]
                print(f"| {v} | {s} | {S100_PUBLISHED[v][i]:,} | " + " | ".join(cells) + " |")
    else:
        rd = (a.readings or "default,refused").split(",")
        res = ecm(rd, seeds)
        print("| hotspot | [D] drops | " + " | ".join(rd) + " |")
        print("|---|---|" + "---|" * len(rd))
        for hs, pub in ECM_PUBLISHED.items():
            cells = [" / ".join(f"{x['drops']:,}" for x in res[f"{r}/{hs}"]) for r in rd]
            print(f"| {hs} | {pub:,} | " + " | ".join(cells) + " |")
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
