"""Seed 003 without PAUSE: dropped frames and bad flows under three switch-admission readings (issue 32).

[D]: "Switch output buffer partitioned per input port: 150 KB of space for each input -> 2.4 MB for 16 ports".
  partitioned  a frame from input i to output j is refused when the (i, j) partition holds 150 KB (spec §12 R3,
               the scenarios' preset, default)
  egress       one 2.4 MB buffer per output, no per-input limit
  shared       one 2.4 MB pool for the whole switch
The egress and shared variants are the scenario files with the cnsim_1hop preset replaced by the same topology
written out (one switch, 10 hosts, 0.1-us latency), written to a temporary folder; written out with the
partitioned buffer they give bit-identical results to the preset. Prints, per row, the mean over the seeds of
drops, bad flows, total flows and FCT mean/max; * marks a drop or bad-flow cell within the study's band
(±25 %, ±50 drops / ±10 bad flows near zero).

Usage: .venv/bin/python tools/cnsim_admission.py [partitioned,egress,shared] [--seeds 1,2,3,4]   (~2 min)
"""

import argparse
import statistics
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import cnsim

PUB = {  # [D], PAUSE disabled: dropped frames, bad flows
    ("ecm", "nohs"): (0, 0),
    ("ecm", "hs2"): (11, 7),
    ("ecm", "hs0.5"): (484, 6),
    ("ecm", "hs0"): (4917, 31),
    ("fecn", "nohs"): (19055, 192),
    ("fecn", "hs2"): (21634, 139),
    ("fecn", "hs0.5"): (13369, 115),
    ("fecn", "hs0"): (14697, 345),
    ("none", "nohs"): (158747, 200),
    ("none", "hs2"): (173277, 286),
    ("none", "hs0.5"): (182056, 1030),
    ("none", "hs0"): (185568, 1550),
}
PRESET = '[topology]\npreset = "cnsim_1hop"\nparams = { n_hosts = 10 }\n'


def written_out(policy: str, size: str) -> str:
    """The cnsim_1hop topology as explicit elements, with the given buffer."""
    t = "[topology]\n" + "".join(f'[[topology.hosts]]\nname = "h{i}"\n' for i in range(1, 11))
    t += (
        f'[[topology.switches]]\nname = "sw1"\nlatency = "0.1us"\nbuffer = {{ policy = "{policy}", size = "{size}" }}\n'
    )
    return t + "".join(f'[[topology.links]]\na = "sw1"\nb = "h{i}"\n' for i in range(1, 11))


def scenario(scheme: str, hs: str, policy: str, tmp: Path) -> str:
    base = Path(f"scenarios/seed-003/cnsim-1hop-{scheme}-{hs}-nopause.toml")
    if policy == "partitioned":
        return str(base)
    text = base.read_text()
    assert PRESET in text, base
    out = tmp / f"{scheme}-{hs}-{policy}.toml"
    out.write_text(text.replace(PRESET, written_out(policy, "2400KB")))
    return str(out)


def one(job):
    path, seed = job
    s = cnsim.run(path, seed=seed, plots=False).summary
    f = s["fct"]
    return (
        s["frames"]["dropped"],
        f["bad_flows"],
        f["count"] + f["bad_flows"] + f["unfinished"],
        f["mean_us"] or 0.0,
        f["max_us"] or 0.0,
    )


def within(v: float, p: float, rel: float, ab: float) -> str:
    return "*" if abs(v - p) <= max(rel * p, ab) else " "


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("policies", nargs="?", default="partitioned,egress,shared")
    ap.add_argument("--seeds", default="1,2,3,4")
    a = ap.parse_args()
    seeds = [int(x) for x in a.seeds.split(",")]
    with tempfile.TemporaryDirectory() as d, ProcessPoolExecutor(2) as ex:
        rows = [(sch, hs, pol) for (sch, hs) in PUB for pol in a.policies.split(",")]
        jobs = {r: [(scenario(*r, Path(d)), s) for s in seeds] for r in rows}
        res = {r: list(ex.map(one, js)) for r, js in jobs.items()}
    hits: dict[str, int] = {}
    for (sch, hs, pol), rs in res.items():
        m = [statistics.mean(x[i] for x in rs) for i in range(5)]
        pd, pb = PUB[(sch, hs)]
        wd, wb = within(m[0], pd, 0.25, 50), within(m[1], pb, 0.25, 10)
        hits[pol] = hits.get(pol, 0) + (wd == "*") + (wb == "*")
        print(
            f"{sch:5} {hs:6} {pol:12} drops {m[0]:9.0f}{wd} [D] {pd:7}  bad {m[1]:7.0f}{wb} [D] {pb:5}  "
            f"total {m[2]:7.0f}  fct avg {m[3]:7.1f} max {m[4]:8.0f}",
            flush=True,
        )
    print("cells within band (of 24):", ", ".join(f"{k} {v}" for k, v in hits.items()))


if __name__ == "__main__":
    main()
