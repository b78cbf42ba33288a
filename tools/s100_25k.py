"""Issue 11 item 7: what moves seed 001's 25-KB column? Each reading against [B], mean of seeds 1-5.

Usage: .venv/bin/python tools/s100_25k.py [readings] ; readings: default, drift0, gi_frames, one_switch
"""

import statistics
import sys

import cnsim

PUBLISHED_25K = {"bcn95": 19657, "bcnm": 5071, "bcnm95": 851, "bcnz": 6052, "bcnz95": 2571, "bcnzd": 4647,
                 "bcnzp": 2725}
SEEDS = (1, 2, 3, 4, 5)
# [B] prints Gi = 12.42 per 1500-B frame (23.4375 pages): 0.52992 per page; Gd as derived (max_decrease / Fb_max)
READINGS = {
    "default": {},
    "drift0": {"cm.params.drift": 0},
    "drift_random": {"cm.params.drift_random_phase": True},
    "gi_frames": {"cm.params.gains": "raw", "cm.params.gi": 12.42 / 23.4375},
    "one_switch": {"topology.preset": "fan_in", "topology.params": {"n_senders": 100}, "traffic.eps.dst": "sink"},
}


def gd_for(variant: str) -> float:
    md = 0.95 if "95" in variant else 0.5
    return md / (5 * 375)


def main(readings: list[str]) -> None:
    print("| variant | [B] 25 KB | " + " | ".join(readings) + " |")
    print("|---|---|" + "---|" * len(readings))
    for v, pub in PUBLISHED_25K.items():
        cells = []
        for r in readings:
            ov = dict(READINGS[r])
            if r == "gi_frames":
                ov["cm.params.gd"] = gd_for(v)
            queue = ("sw1", "sink") if r == "one_switch" else ("cs", "ep0")
            drops = []
            for seed in SEEDS:
                s = cnsim.run(f"scenarios/seed-001/fan-in-100-{v}-25k.toml", seed=seed, overrides=ov).summary
                q = next(q for q in s["queues"] if (q["switch"], q["port"]) == queue)
                drops.append(q["drops"])
            cells.append(f"{statistics.mean(drops):,.0f} ± {statistics.stdev(drops):,.0f}")
        print(f"| {v} | {pub:,} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else list(READINGS))
