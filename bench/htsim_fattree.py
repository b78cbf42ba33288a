#!/usr/bin/env python3
"""cnsim against htsim on htsim's own k = 8 fat-tree DCTCP permutation example, side by side.

issue 33 sets twice htsim's speed on the k = 8 fat tree as the goal. htsim is not vendored: build it from
its public source (github.com/Broadcom/csg-htsim) in a scratch folder, e.g.

    git clone https://github.com/Broadcom/csg-htsim /tmp/htsim && cd /tmp/htsim/sim && make
    cd datacenter && make && cd old_tests
    # main_dctcp_permutation.cpp defines ntoa() and itoa() at its end, which libhtsim also defines:
    # delete those two definitions, then
    make htsim_dctcp_permutation

and run `.venv/bin/python bench/htsim_fattree.py --htsim /tmp/htsim/sim`. The workload is the one
htsim's `htsim_dctcp_permutation -nodes 128 -conns 128 -ssthresh 15 -q 100` hard-codes: 128 hosts,
10 Gb/s links of 1 us, 9 000-B packets, 100-packet (900 KB) queues marking ECN at 15 packets, every host
sending one long-lived DCTCP flow to its permutation partner, 0.21 s. htsim draws its permutation and
each flow's path at random (seeded by the clock); cnsim's permutation is drawn as bench/run.py's
fat-tree workload does, with ECMP paths. The two TCPs differ, so the comparison is per data packet
delivered: packets per second of process wall time for htsim (its set-up and run: it prints no run
time of its own) against cnsim's engine `wall_s` (set-up and run) and cnsim's whole process.
Rounds alternate the two. htsim's delivered packets are read from its log with its `parse_output`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import fat_tree_scenario, write_scenario  # noqa: E402  (the same permutation and topology)

PACKET = 9000
ECN_PACKETS = 15
QUEUE_PACKETS = 100
END_S = 0.21


def scenario() -> dict:
    sc = fat_tree_scenario({"k": 8, "ms": END_S * 1e3, "perm_seed": 1})
    sc["defaults"].update(
        frame_size=f"{PACKET}B",
        ecn_threshold=f"{ECN_PACKETS * PACKET}B",
        buffer={"policy": "egress", "size": f"{QUEUE_PACKETS * PACKET}B"},
    )
    return sc


def htsim_once(sim: Path, folder: Path) -> dict:
    exe = sim / "datacenter" / "old_tests" / "htsim_dctcp_permutation"
    log = folder / "htsim.log"
    args = [str(exe), "-o", str(log), "-nodes", "128", "-conns", "128", "-ssthresh", "15", "-q", str(QUEUE_PACKETS)]
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, cwd=folder)
    wall = time.perf_counter() - t0
    text = subprocess.run(
        [str(sim / "parse_output"), str(log), "-ascii"], check=True, capture_output=True, text=True
    ).stdout
    acked: dict[str, float] = {}
    last = 0.0
    for line in text.splitlines():  # "<t> Type TCP_SINK ID <id> Ev RATE CAck <bytes> Rate <bps>"
        f = line.split()
        if len(f) > 8 and f[2] == "TCP_SINK" and f[7] == "CAck":
            acked[f[4]] = float(f[8])
            last = max(last, float(f[0]))
    # the sinks are logged every 10 ms, the last time at 0.20 s of the 0.21 s: the flows are long past
    # slow start by then, so the last 10 ms deliver at the run's mean rate
    packets = sum(acked.values()) / PACKET * END_S / last
    return {"wall_s": wall, "packets": packets, "pkts_per_s": packets / wall}


def cnsim_once(cnsim: str, path: Path, folder: Path) -> dict:
    t0 = time.perf_counter()
    out = subprocess.run(
        [cnsim, "run", str(path), "-o", str(folder / "cnsim"), "--force", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    process = time.perf_counter() - t0
    s = json.loads(out.stdout)
    packets = s["frames"]["delivered"]
    return {
        "wall_s": s["wall_s"],
        "process_s": process,
        "packets": packets,
        "pkts_per_s": packets / s["wall_s"],
        "process_pkts_per_s": packets / process,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--htsim", type=Path, required=True, help="htsim's sim/ folder, built (see above)")
    ap.add_argument("--cnsim", default=str(HERE.parent / ".venv" / "bin" / "cnsim"))
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cnsim-htsim-") as d:
        folder = Path(d)
        path = write_scenario(folder, "fat-tree-k8-htsim", scenario())
        rows = []
        for r in range(a.rounds):
            if r % 2:  # the order alternates, so the machine's drift falls on both alike
                c = cnsim_once(a.cnsim, path, folder)
                h = htsim_once(a.htsim, folder)
            else:
                h = htsim_once(a.htsim, folder)
                c = cnsim_once(a.cnsim, path, folder)
            rows.append((h, c))
            print(
                f"round {r}: htsim {h['packets']:.0f} packets in {h['wall_s']:.2f} s; cnsim {c['packets']} in "
                f"{c['wall_s']:.2f} s engine, {c['process_s']:.2f} s process; "
                f"x htsim {c['pkts_per_s'] / h['pkts_per_s']:.2f} engine, {c['process_pkts_per_s'] / h['pkts_per_s']:.2f} process",
                file=sys.stderr,
            )
    eng = statistics.median(c["pkts_per_s"] / h["pkts_per_s"] for h, c in rows)
    proc = statistics.median(c["process_pkts_per_s"] / h["pkts_per_s"] for h, c in rows)
    print(
        f"cnsim / htsim per packet delivered, median of {a.rounds} rounds: engine {eng:.2f}x, whole process {proc:.2f}x (goal 2x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
