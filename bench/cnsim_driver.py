#!/usr/bin/env python3
"""cnsim through its Python API with the DEFAULT observation a user's `cnsim run` records (queue,
RP-rate and pause series, per-flow totals, binned series of the first flows, the aggregate series,
FCT rows), for `bench/run.py`. One run per process, so the peak RSS is the whole process's:
interpreter, imports, engine, tables handed to pandas.

  python bench/cnsim_driver.py --n 100 --rate-gbps 0.2 --ms 200 --seed 1 [--scheme qcn]
  python bench/cnsim_driver.py --scenario scenarios/seed-000/parking-lot-bcn.toml --ms 100
  python bench/cnsim_driver.py --scenario f.toml --overrides pause.json     # its own duration, overrides
  python bench/cnsim_driver.py --n 1000 --rate-gbps 0.02 --ms 200 --out /tmp/f1000   # streamed to Parquet

Prints one line of key=value figures (the bench/run.py contract). `run_s` is the summary's
`wall_s`: the engine's run, observation and the hand-over of every table to Python.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import warnings
from pathlib import Path

import cnsim
from cnsim.exceptions import ConfigWarning


def fan_in(n: int, rate_gbps: float, ms: float, transport: str = "udp") -> dict:
    """The fan-in reference workload (scenarios/baseline/fan-in-*.toml with N senders); with a TCP
    transport the senders are saturated (long-lived flows) and DCTCP marks at K = 97.5 KB."""
    if transport != "udp":
        return {
            "run": {"name": f"incast-{n}-{transport}", "duration": f"{ms:g}ms"},
            "topology": {"preset": "fan_in", "params": {"n_senders": n}},
            "defaults": {
                "link_rate": "10Gbps",
                "link_delay": "0.5us",
                "switch_latency": 0,
                "buffer": {"policy": "egress", "size": "150KB"},
                "frame_size": "1500B",
                **({"ecn_threshold": "97.5KB"} if transport == "dctcp" else {}),
            },
            "traffic": [{"name": "senders", "kind": "saturated", "src": "all", "dst": "sink", "transport": transport}],
            "tcp": {"min_rto": "1ms"},
        }
    return {
        "run": {"name": f"fan-in-{n}", "duration": f"{ms:g}ms"},
        "topology": {"preset": "fan_in", "params": {"n_senders": n}},
        "defaults": {
            "link_rate": "10Gbps",
            "link_delay": "0.5us",
            "switch_latency": 0,
            "buffer": {"policy": "egress", "size": "150KB"},
            "frame_size": "1500B",
        },
        "traffic": [
            {
                "name": "senders",
                "kind": "cbr",
                "src": "all",
                "dst": "sink",
                "rate": f"{rate_gbps:g}Gbps",
                "random_phase": True,
            }
        ],
    }


def main() -> None:
    # the parking-lot row's PAUSE-headroom warning is the scenario's, not the benchmark's: keep the table readable
    warnings.simplefilter("ignore", ConfigWarning)
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--rate-gbps", type=float, default=5.0)
    ap.add_argument("--ms", type=float, default=100.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scheme", default=None, help="congestion management (default: none / the file's)")
    ap.add_argument("--transport", default="udp", choices=["udp", "tcp", "dctcp"])
    ap.add_argument("--scenario", default=None, help="a scenario file instead of the fan-in workload")
    ap.add_argument("--overrides", default=None, help="a JSON file of overrides (dotted path: value, as --set)")
    ap.add_argument(
        "--out",
        default=None,
        help="write the outputs into this folder as `cnsim run -o` does "
        "(time series streamed to Parquet as the run goes); the folder is replaced",
    )
    a = ap.parse_args()
    # a scenario file keeps its own duration unless --ms is given
    overrides = {} if a.scenario and "--ms" not in sys.argv else {"run.duration": f"{a.ms:g}ms"}
    if a.overrides:
        overrides.update(json.loads(Path(a.overrides).read_text()))
    if a.scheme:
        overrides["cm.scheme"] = a.scheme
    sc = a.scenario or fan_in(a.n, a.rate_gbps, a.ms, a.transport)
    r = cnsim.run(sc, seed=a.seed, overrides=overrides, plots=False, out=a.out, force=a.out is not None)
    s = r.summary
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # counted from the files' metadata: loading the tables would change the peak measured
    import pyarrow.parquet as pq
    from cnsim.results.result import TABLES

    folder = Path(a.out) if a.out is not None else r.tables.folder
    rows = sum(pq.ParquetFile(folder / f"{n}.parquet").metadata.num_rows for n in TABLES)
    gbps = s["bytes"]["delivered"] * 8 / s["sim_time_s"] / 1e9
    print(
        f"sim=cnsim-obs sent={s['frames']['sent']} delivered={s['frames']['delivered']} "
        f"dropped={s['frames']['dropped']} events={s['events']} run_s={s['wall_s']:.4f} "
        f"max_rss_kb={rss_kb} delivered_gbps={gbps:.4f} "
        f"rows={rows}"
    )


if __name__ == "__main__":
    main()
