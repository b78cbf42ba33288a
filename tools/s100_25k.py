"""Issue 11 item 7: what moves seed 001's 25-KB column? Each reading against [B], mean ± sd of seeds 1-5.

Usage: .venv/bin/python tools/s100_25k.py [readings] [columns]
  readings: default, drift0, drift_random, gi_frames, one_switch, refused (comma-separated; default: all)
  columns:  25k (default) or 150k,25k — the 150 KB column shows what a reading does to the cells that fit
A cell is marked ✓ when the mean is within the study's ±25 % band.
"""

import statistics
import sys

import cnsim

PUBLISHED = {  # [B]'s CS packet loss: (150 KB sampling, 25 KB sampling)
    "bcn95": (162947, 19657), "bcnm": (137099, 5071), "bcnm95": (12363, 851), "bcnz": (39093, 6052),
    "bcnz95": (37863, 2571), "bcnzd": (39185, 4647), "bcnzp": (37194, 2725),
}
COLUMNS = ("150k", "25k")
SEEDS = (1, 2, 3, 4, 5)
# [B] prints Gi = 12.42 per 1500-B frame (23.4375 pages): 0.52992 per page; Gd as derived (max_decrease / Fb_max)
READINGS = {
    "default": {},
    "drift0": {"cm.params.drift": 0},
    "drift_random": {"cm.params.drift_random_phase": True},
    "gi_frames": {"cm.params.gains": "raw", "cm.params.gi": 12.42 / 23.4375},
    "one_switch": {"topology.preset": "fan_in", "topology.params": {"n_senders": 100}, "traffic.eps.dst": "sink"},
    # spec §2.2's alternative: frames refused by the full buffer are counted and sampled too
    "refused": {"cm.params.sample_refused": True},
}


def gd_for(variant: str) -> float:
    md = 0.95 if "95" in variant else 0.5
    return md / (5 * 375)


def main(readings: list[str], columns: list[str]) -> None:
    heads = [f"{r} {c}" for r in readings for c in columns]
    print("| variant | " + " | ".join(f"[B] {c}" for c in columns) + " | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * (len(columns) + len(heads)))
    within = {h: 0 for h in heads}
    for v, pub in PUBLISHED.items():
        cells = []
        for r in readings:
            for c in columns:
                ov = dict(READINGS[r])
                if r == "gi_frames":
                    ov["cm.params.gd"] = gd_for(v)
                queue = ("sw1", "sink") if r == "one_switch" else ("cs", "ep0")
                drops = []
                for seed in SEEDS:
                    s = cnsim.run(f"scenarios/seed-001/fan-in-100-{v}-{c}.toml", seed=seed, overrides=ov).summary
                    q = next(q for q in s["queues"] if (q["switch"], q["port"]) == queue)
                    drops.append(q["drops"])
                mean, p = statistics.mean(drops), pub[COLUMNS.index(c)]
                ok = abs(mean - p) <= 0.25 * p
                within[f"{r} {c}"] += ok
                cells.append(f"{mean:,.0f} ± {statistics.stdev(drops):,.0f}{' ✓' if ok else ''}")
        print(f"| {v} | " + " | ".join(f"{pub[COLUMNS.index(c)]:,}" for c in columns) + " | "
              + " | ".join(cells) + " |", flush=True)
    print("| within ±25 % | " + " | ".join("" for _ in columns) + " | "
          + " | ".join(f"{within[h]} / {len(PUBLISHED)}" for h in heads) + " |")


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else list(READINGS),
         sys.argv[2].split(",") if len(sys.argv) > 2 else ["25k"])
