#!/usr/bin/env python3
"""cnsim vs ns-3 3.44 on the fan-in reference workloads (`make bench`).

Runs fan-in-4 (4 x 5 Gb/s, 100 ms) and fan-in-100 (100 x 0.2 Gb/s, 200 ms) -- one switch, 10 Gb/s
links of 0.5 us, a 150 000-byte drop-tail egress, 1500-byte CBR frames with a random phase -- on

  (a) the cnsim Rust engine: `cargo build --release -p cnsim-core --example fanin`, one thread;
  (b) ns-3 3.44 in C++ (bench/fanin_ns3.cc) built against the PyPI wheel by bench/setup_ns3.sh,

each repetition a separate child process (so its peak RSS is its own, read with wait4), the
repetitions interleaved (cnsim, ns-3, ns-3, cnsim, ...) so machine drift hits both alike, and prints
medians side by side with the ratio cnsim / ns-3, plus published reference figures. The table goes
to stdout and, as JSON, to bench/results/latest.json.

Both drivers print one line of `key=value` figures. Contract (keys used here): sent, delivered,
dropped, events, run_s (seconds in the event loop), max_rss_kb; optionally delivered_gbps,
pkts_per_wall_s, events_per_s (recomputed here from the raw counts so both sides use one
definition: packets = delivered + dropped, per second of run_s).

Standard library only. Exit status: 0 when every requested simulator ran and the two agree on
delivered throughput and drop ratio; 1 otherwise.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WIRE_BYTES = 1500

# rep_factor: a row whose cnsim run lasts only ~15 ms (fan-in-4) is at the mercy of a scheduler
# hiccup on this shared 2-core machine (+-30 % between fresh processes); it gets `rep_factor` times
# --reps repetitions, for every simulator alike (cnsim, cnsim-obs and ns-3), medians as elsewhere.
WORKLOADS = {
    "fan-in-4": {"n": 4, "rate_gbps": 5.0, "ms": 100.0, "rep_factor": 3},
    "fan-in-100": {"n": 100, "rate_gbps": 0.2, "ms": 200.0},
    "fan-in-1000": {"n": 1000, "rate_gbps": 0.02, "ms": 200.0},
}
# cnsim-only rows (no ns-3 driver): a multi-switch workload and the cost of congestion management
# on fan-in-100, all through the Python API with default observation
EXTRA = {
    "parking-lot (3 switches, BCN)": {"scenario": "scenarios/seed-000/parking-lot-bcn.toml", "ms": 100.0},
    # the CM-cost rows are compared with each other: rep_factor times --reps runs each, in turn, each
    # CM row divided by the none run of the same round. 1 s of simulated time: at 200 ms the engine
    # phase (~60 ms) was short enough that one slow spell moved a row's median by 30 % (docs/performance.md)
    "fan-in-100, cm none": {"n": 100, "rate_gbps": 0.2, "ms": 1000.0, "scheme": "none", "rep_factor": 3},
    "fan-in-100, cm bcn": {"n": 100, "rate_gbps": 0.2, "ms": 1000.0, "scheme": "bcn", "rep_factor": 3},
    "fan-in-100, cm qcn": {"n": 100, "rate_gbps": 0.2, "ms": 1000.0, "scheme": "qcn", "rep_factor": 3},
    "fan-in-100, cm dcqcn": {"n": 100, "rate_gbps": 0.2, "ms": 1000.0, "scheme": "dcqcn", "rep_factor": 3},
    "incast 32, UDP CBR 2:1": {"n": 32, "rate_gbps": 0.625, "ms": 100.0},
    "incast 32, TCP NewReno": {"n": 32, "rate_gbps": 0.625, "ms": 100.0, "transport": "tcp"},
    "incast 32, DCTCP (K 97.5 KB)": {"n": 32, "rate_gbps": 0.625, "ms": 100.0, "transport": "dctcp"},
    # issue 13: the k = 8 fat tree (128 hosts, 80 switches, ECMP) with WebSearch at 50 % load under DCQCN
    "fat tree k=8, WebSearch 50 %, DCQCN": {"scenario": "scenarios/datacenter/fat-tree-k8-websearch-dcqcn.toml",
                                             "ms": 20.0},
}

# shared/bench/README.md: single thread, medians of 5-7 runs on this machine kind, wall time
# including setup. Not measured by this script.
REFERENCE = {
    "htsim (C++)": {"fan-in-4": 4.06e6, "fan-in-100": 1.94e6},
    "SimPy naive (Python)": {"fan-in-4": 126e3, "fan-in-100": 143e3},
    "ns-3 3.44 C++ (wheel libraries)": {"fan-in-4": 66e3, "fan-in-100": 29e3},
    "ns-3 3.44 Python bindings": {"fan-in-4": 43e3, "fan-in-100": 32e3},
}
# htsim / ns-3 C++ in paired runs (same README): the drift-free way to set cnsim against htsim is
# to compare the measured cnsim / ns-3 ratio with these.
REFERENCE_RATIO = {"htsim / ns-3 C++, paired runs": {"fan-in-4": 49.0, "fan-in-100": 72.0}}
TARGET = {"fan-in-4": 8e6, "fan-in-100": 4e6}  # issue 2: the core engine, single thread, release
# issue 10: cnsim with default observation at twice htsim's paired ratio to ns-3
TARGET_RATIO = {"fan-in-4": 100.0, "fan-in-100": 148.0}

SIM_LABEL = {
    "cnsim": "cnsim event loop, no observation",
    "cnsim-obs": "cnsim, default observation (API)",
    "ns3": "ns-3 3.44 C++ (PyPI wheel)",
}
CNSIM_SIMS = ("cnsim", "cnsim-obs")

# What "agree" means: both deliver the bottleneck rate and drop about half.
GBPS_MIN, GBPS_MAX, GBPS_TOL = 9.99, 10.0001, 0.01
DROP_MIN, DROP_MAX, DROP_TOL = 0.49, 0.51, 0.002


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------- preparing --

def prepare_ns3() -> list[str]:
    """Build (once) the ns-3 driver; return its command prefix."""
    proc = subprocess.run(["bash", str(HERE / "setup_ns3.sh")], stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"bench/setup_ns3.sh failed (exit {proc.returncode})")
    return [proc.stdout.strip().splitlines()[-1]]


def prepare_cnsim(cargo: str) -> list[str]:
    """Build the `fanin` example of cnsim-core in release mode; return the executable's path.

    The binary is run directly, never through `cargo run`, so no cargo time is measured."""
    cmd = [cargo, "build", "--release", "-p", "cnsim-core", "--example", "fanin",
           "--message-format=json-render-diagnostics"]
    log("building: " + " ".join(cmd))
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed (exit {proc.returncode})")
    exe = None
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("target", {}).get("name") == "fanin":
            exe = msg.get("executable") or exe
    if not exe:
        raise RuntimeError("cargo built no `fanin` executable")
    return [exe]


def sim_args(sim: str, wl: dict, seed: int) -> list[str]:
    if "scenario" in wl:
        return ["--scenario", str(ROOT / wl["scenario"]), "--ms", f"{wl['ms']:g}", "--seed", str(seed)]
    n, rate, ms = wl["n"], wl["rate_gbps"], wl["ms"]
    extra = ["--scheme", wl["scheme"]] if wl.get("scheme") else []
    extra += ["--transport", wl["transport"]] if wl.get("transport") else []
    if sim == "ns3":
        return [f"--n={n}", f"--rateGbps={rate:g}", f"--ms={ms:g}", f"--seed={seed}"]
    return ["--n", str(n), "--rate-gbps", f"{rate:g}", "--ms", f"{ms:g}", "--seed", str(seed)] + extra


# ------------------------------------------------------------------------------------- running --

def parse_kv(text: str) -> dict:
    """The last line of `key=value` tokens in `text`, numbers converted."""
    for line in reversed(text.strip().splitlines()):
        toks = [t.split("=", 1) for t in line.split() if "=" in t]
        if toks and len(toks) >= len(line.split()) // 2:
            out = {}
            for k, v in toks:
                try:
                    out[k] = int(v)
                except ValueError:
                    try:
                        out[k] = float(v)
                    except ValueError:
                        out[k] = v
            return out
    raise ValueError(f"no key=value line in output: {text[-500:]!r}")


def run_child(cmd: list[str], timeout: float) -> tuple[dict, float, int]:
    """Run one child; return (parsed figures, outside wall seconds, its own peak RSS in KiB)."""
    with tempfile.TemporaryFile("w+") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out)  # stderr passes through
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                proc.returncode = -9
                raise RuntimeError(f"timeout after {timeout:.0f} s: {shlex.join(cmd)}")
            time.sleep(0.005)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {shlex.join(cmd)}\n{text[-2000:]}")
    return parse_kv(text), wall, ru.ru_maxrss  # Linux: ru_maxrss is in KiB


def measure(sim: str, prefix: list[str], wl: dict, seed: int, timeout: float) -> dict:
    kv, outside_wall, rss_kb = run_child(prefix + sim_args(sim, wl, seed), timeout)
    for key in ("delivered", "dropped", "events", "run_s"):
        if key not in kv:
            raise RuntimeError(f"{sim}: output lacks `{key}=`: {kv}")
    pkts = kv["delivered"] + kv["dropped"]
    run_s = max(float(kv["run_s"]), 1e-9)
    gbps = kv.get("delivered_gbps")
    if gbps is None:
        gbps = kv["delivered"] * WIRE_BYTES * 8 / (wl["ms"] / 1e3) / 1e9
    outside_wall = max(outside_wall, 1e-9)
    return {
        "sent": kv.get("sent"),
        "delivered": kv["delivered"],
        "dropped": kv["dropped"],
        "packets": pkts,
        "events": kv["events"],
        "run_s": run_s,
        "process_wall_s": outside_wall,
        "pkts_per_s": pkts / run_s,
        "events_per_s": kv["events"] / run_s,
        "events_per_pkt": kv["events"] / pkts if pkts else None,
        "max_rss_kb": rss_kb,
        "process_pkts_per_s": pkts / outside_wall,
        "self_reported_max_rss_kb": kv.get("max_rss_kb"),
        "delivered_gbps": float(gbps),
        "drop_ratio": kv["dropped"] / pkts if pkts else None,
    }


def median_of(runs: list[dict]) -> dict:
    med = {}
    for key in runs[0]:
        if key == "round":
            continue
        vals = [r[key] for r in runs if isinstance(r.get(key), (int, float))]
        med[key] = statistics.median(vals) if vals else None
    return med


# ----------------------------------------------------------------------------------- reporting --

def si(x: float | None, unit: str = "") -> str:
    if x is None:
        return "-"
    for div, suf in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if abs(x) >= div:
            return f"{x / div:.3g}{suf}{unit}".rstrip()
    return f"{x:.3g} {unit}".rstrip()


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def fmt_ratio(r: float | None) -> str:
    return "-" if r is None else (f"{r:.1f}x" if r >= 10 else f"{r:.2f}x")


def render(result: dict) -> str:
    lines = []
    host = result["host"]
    longer = {w: s["reps"] for w, s in result["params"].get("reps_per_workload", {}).items()
              if s["reps"] != result["params"]["reps"]}
    more = "".join(f" ({w}: {n})" for w, n in longer.items())
    lines.append(f"cnsim vs ns-3 3.44 -- fan-in benchmark; medians of {result['params']['reps']}{more} "
                 f"interleaved runs, seed {result['params']['seed']}, "
                 f"sim-time scale {result['params']['scale']:g}")
    lines.append(f"host: {host['cpu']} ({host['cpus']} CPUs), load average "
                 f"{host['loadavg_before'][0]:.2f} before / {host['loadavg_after'][0]:.2f} after")
    lines.append("packets = delivered + dropped; rates are per second of the simulator's event "
                 "loop (run_s); peak RSS = the child process's max RSS")
    lines.append("")
    head = (f"{'workload':<11} {'simulator':<32} {'packets/s':>10} {'events/s':>10} {'ev/pkt':>7} "
            f"{'peak RSS':>9} {'Gb/s':>8} {'drops':>7} {'run s':>7}")
    lines.append(head)
    lines.append("-" * len(head))
    for name, w in result["workloads"].items():
        for sim in SIM_LABEL:
            s = w.get(sim)
            if s is None:
                continue
            if "error" in s:
                lines.append(f"{name:<11} {SIM_LABEL[sim]:<32} not measured: {s['error']}")
                continue
            m = s["median"]
            lines.append(
                f"{name:<11} {SIM_LABEL[sim]:<32} {si(m['pkts_per_s']):>10} "
                f"{si(m['events_per_s']):>10} {m['events_per_pkt']:>7.2f} "
                f"{m['max_rss_kb'] / 1024:>6.1f} MB {m['delivered_gbps']:>8.4f} "
                f"{100 * m['drop_ratio']:>6.2f}% {m['run_s']:>7.3f}")
        for sim in CNSIM_SIMS:
            r = w.get("ratio", {}).get(sim)
            if r:
                lines.append(
                    f"{name:<11} {'ratio ' + sim + ' / ns-3':<32} {fmt_ratio(r['pkts_per_s']):>10} "
                    f"{fmt_ratio(r['events_per_s']):>10} {'':>7} {fmt_ratio(r['max_rss_kb']):>9}")
        a = w.get("agreement")
        if a:
            lines.append(f"{name:<11} {'agreement':<32} {a['verdict']}: {a['detail']}")
        lines.append("")

    names = list(result["workloads"])
    head = f"{'packets per wall-second':<62}" + "".join(f"{n:>12}" for n in names)
    lines.append(head)
    lines.append("-" * len(head))

    def row(label: str, vals: dict) -> None:
        lines.append(f"{label:<62}" + "".join(f"{vals.get(n, '-'):>12}" for n in names))

    for sim in SIM_LABEL:
        vals = {}
        for n in names:
            s = result["workloads"][n].get(sim)
            if s and "median" in s:
                vals[n] = si(s["median"]["pkts_per_s"])
        if vals:
            row(SIM_LABEL[sim] + " (measured)", vals)
    for sim in CNSIM_SIMS:
        vals = {n: fmt_ratio(result["workloads"][n]["ratio"][sim]["pkts_per_s"])
                for n in names if sim in result["workloads"][n].get("ratio", {})}
        if vals:
            row(f"ratio {sim} / ns-3 (measured)", vals)
    for label, vals in result["reference"].items():
        row(f"{label}: reference (not measured here)", {n: si(vals[n]) for n in names if n in vals})
    for label, vals in result["reference_ratio"].items():
        row(f"{label}: reference (not measured here)",
            {n: fmt_ratio(vals[n]) for n in names if n in vals})
    row("cnsim target (issue 2)", {n: si(result["target"][n]) for n in names if n in result["target"]})
    row("target ratio cnsim-obs / ns-3 (issue 10: 2 x htsim)", {n: fmt_ratio(v) for n, v in TARGET_RATIO.items() if n in names})
    extra = result.get("extra", {})
    if extra:
        lines.append("")
        head = (f"{'cnsim only, default observation (API), whole process':<52} {'packets/s':>10} "
                f"{'events/s':>10} {'peak RSS':>9} {'run s':>7} {'process s':>9}")
        lines.append(head)
        lines.append("-" * len(head))
        for label, e in extra.items():
            if "median" not in e:
                lines.append(f"{label:<52} not measured: {e.get('error')}")
                continue
            m = e["median"]
            cost = ""
            c = e.get("cost")
            if c:
                cost = (f"  (run time {c['median']:.2f}x cm none: median of {c['rounds']} same-round ratios, "
                        f"range {c['min']:.2f}-{c['max']:.2f}; ratio of medians {c['of_medians']:.2f}, of the "
                        f"fastest runs {c['of_fastest']:.2f})")
            lines.append(f"{label:<52} {si(m['pkts_per_s']):>10} {si(m['events_per_s']):>10} "
                         f"{m['max_rss_kb'] / 1024:>6.1f} MB {m['run_s']:>7.3f} {m['process_wall_s']:>9.2f}{cost}")
    lines.append("(reference figures: shared/bench/README.md, wall time incl. setup, medians of "
                 "5-7 runs on this machine kind; the machine drifts by up to 25 %, so only the "
                 "measured rows above are comparable with each other)")
    return "\n".join(lines)


def cm_cost(extra: dict) -> dict:
    """Each CM row's run time over the no-CM row's, round by round (the runs of one round follow each
    other, so a slow spell of the machine falls on both): median, range, the ratio of the medians, and
    the ratio of the fastest runs (this VM runs a process in one of two speed modes about 1.5x apart,
    chosen per process, so a pair can mix modes; the fastest runs are both in the fast mode)."""
    base = {r["round"]: r["run_s"] for r in extra.get("fan-in-100, cm none", {}).get("runs", [])}
    out = {}
    for label, e in extra.items():
        if not label.startswith("fan-in-100, cm ") or label == "fan-in-100, cm none" or "runs" not in e:
            continue
        ratios = [r["run_s"] / base[r["round"]] for r in e["runs"] if r["round"] in base]
        if ratios:
            out[label] = e | {"cost": {"median": statistics.median(ratios), "min": min(ratios),
                                       "max": max(ratios), "rounds": len(ratios),
                                       "of_medians": e["median"]["run_s"] / statistics.median(base.values()),
                                       "of_fastest": min(r["run_s"] for r in e["runs"]) / min(base.values())}}
    return out


def agreement(a: dict, b: dict) -> dict:
    problems = []
    for label, m in (("cnsim", a), ("ns-3", b)):
        if not GBPS_MIN <= m["delivered_gbps"] <= GBPS_MAX:
            problems.append(f"{label} delivered {m['delivered_gbps']:.4f} Gb/s")
        if not DROP_MIN <= m["drop_ratio"] <= DROP_MAX:
            problems.append(f"{label} drop ratio {100 * m['drop_ratio']:.2f} %")
    dg = abs(a["delivered_gbps"] - b["delivered_gbps"])
    dd = abs(a["drop_ratio"] - b["drop_ratio"])
    if dg > GBPS_TOL:
        problems.append(f"delivered differs by {dg:.4f} Gb/s")
    if dd > DROP_TOL:
        problems.append(f"drop ratio differs by {100 * dd:.2f} points")
    detail = (f"delivered {a['delivered_gbps']:.4f} vs {b['delivered_gbps']:.4f} Gb/s, drops "
              f"{100 * a['drop_ratio']:.2f} vs {100 * b['drop_ratio']:.2f} %")
    return {"ok": not problems, "verdict": "OK" if not problems else "MISMATCH",
            "detail": detail + ("" if not problems else " -- " + "; ".join(problems))}


def host_info() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cpus": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version(), "loadavg_before": list(os.getloadavg())}


# ---------------------------------------------------------------------------------------- main --

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3, help="repetitions per simulator and workload "
                    "(median reported; default 3; a short row such as fan-in-4 runs rep_factor times as many)")
    ap.add_argument("--only", choices=["all", "cnsim", "cnsim-obs", "ns3"], default="all",
                    help="which simulators to run (default all)")
    ap.add_argument("--no-extra", action="store_true", help="skip the cnsim-only rows (multi-switch, CM cost)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help="comma-separated subset of " + ", ".join(WORKLOADS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply the simulated time (e.g. 0.1 for a quick smoke run)")
    ap.add_argument("--cnsim-bin", help="use this fanin executable instead of building it")
    ap.add_argument("--ns3-bin", help="use this ns-3 driver instead of bench/setup_ns3.sh")
    ap.add_argument("--cargo", default=os.environ.get("CARGO", "cargo"))
    ap.add_argument("--no-warmup", action="store_true",
                    help="skip the untimed 1-ms run of each binary (warms the page cache)")
    ap.add_argument("--timeout", type=float, default=600.0, help="per child run, seconds")
    ap.add_argument("--out", default=str(HERE / "results" / "latest.json"))
    ap.add_argument("--stream", action="store_true",
                    help="cnsim-obs writes its outputs as `cnsim run -o` does (time series streamed to Parquet "
                    "in a temporary folder) instead of keeping the tables in memory")
    args = ap.parse_args(argv)
    if args.reps < 1:
        ap.error("--reps must be >= 1")
    wl_names = [w.strip() for w in args.workloads.split(",") if w.strip()]
    for w in wl_names:
        if w not in WORKLOADS:
            ap.error(f"unknown workload {w!r}; known: {', '.join(WORKLOADS)}")
    workloads = {w: dict(WORKLOADS[w], ms=WORKLOADS[w]["ms"] * args.scale) for w in wl_names}
    reps_of = {w: args.reps * WORKLOADS[w].get("rep_factor", 1) for w in wl_names}
    sims = list(SIM_LABEL) if args.only == "all" else [args.only]

    result = {
        "schema": 1,
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "host": host_info(),
        "params": {"reps": args.reps, "seed": args.seed, "scale": args.scale,
                   "reps_per_workload": {w: {"reps": reps_of[w]} for w in wl_names},
                   "order": "interleaved, alternating which simulator goes first",
                   "rates": "per second of run_s (the event loop), packets = delivered + dropped",
                   "max_rss": "wait4() rusage of each child process, KiB"},
        "workloads": {w: {"spec": dict(workloads[w], wire_bytes=WIRE_BYTES, link_gbps=10,
                                       delay_us=0.5, buffer_bytes=150000)} for w in wl_names},
        "reference": REFERENCE,
        "reference_ratio": REFERENCE_RATIO,
        "reference_source": "shared/bench/README.md (not measured here)",
        "target": TARGET,
    }

    prefixes: dict[str, list[str]] = {}
    errors: dict[str, str] = {}
    for sim in sims:
        try:
            if sim == "ns3":
                prefixes[sim] = [args.ns3_bin] if args.ns3_bin else prepare_ns3()
            elif sim == "cnsim-obs":
                prefixes[sim] = [sys.executable, str(HERE / "cnsim_driver.py")]
                if args.stream:
                    prefixes[sim] += ["--out", str(Path(tempfile.mkdtemp(prefix="cnsim-bench-")) / "run")]
            else:
                prefixes[sim] = [args.cnsim_bin] if args.cnsim_bin else prepare_cnsim(args.cargo)
            log(f"{sim}: {shlex.join(prefixes[sim])}")
        except (RuntimeError, OSError) as e:
            errors[sim] = str(e).splitlines()[0]
            log(f"{sim}: not available: {e}")
    active = [s for s in sims if s in prefixes]

    if not args.no_warmup:
        for sim in active:
            try:
                run_child(prefixes[sim] + sim_args(sim, dict(WORKLOADS["fan-in-4"], ms=1.0),
                                                   args.seed), args.timeout)
            except (RuntimeError, ValueError, OSError) as e:
                errors[sim] = f"warm-up run failed: {str(e).splitlines()[0]}"
                log(f"{sim}: {e}")
        active = [s for s in active if s not in errors]

    runs: dict[tuple[str, str], list[dict]] = {(s, w): [] for s in active for w in wl_names}
    for rep in range(max(reps_of.values(), default=0)):
        for i, w in enumerate(wl_names):
            if rep >= reps_of[w]:
                continue
            order = active if (rep + i) % 2 == 0 else active[::-1]
            for sim in order:
                if sim in errors:
                    continue
                try:
                    r = measure(sim, prefixes[sim], workloads[w], args.seed, args.timeout)
                except (RuntimeError, ValueError, OSError) as e:
                    errors[sim] = str(e).splitlines()[0]
                    log(f"{sim} {w}: {e}")
                    continue
                runs[(sim, w)].append(r)
                log(f"rep {rep + 1}/{reps_of[w]} {w:<10} {sim:<5} {si(r['pkts_per_s']):>8} pkts/s "
                    f"run {r['run_s']:.3f} s, rss {r['max_rss_kb'] / 1024:.1f} MB")

    result["host"]["loadavg_after"] = list(os.getloadavg())
    ok = True
    for w in wl_names:
        entry = result["workloads"][w]
        for sim in sims:
            if sim in errors:
                entry[sim] = {"error": errors[sim]}
                ok = False
            elif runs.get((sim, w)):
                entry[sim] = {"median": median_of(runs[(sim, w)]), "runs": runs[(sim, w)]}
        if "median" in entry.get("ns3", {}):
            b = entry["ns3"]["median"]
            for sim in CNSIM_SIMS:
                if "median" in entry.get(sim, {}):
                    a = entry[sim]["median"]
                    entry.setdefault("ratio", {})[sim] = {
                        k: ratio(a[k], b[k]) for k in ("pkts_per_s", "events_per_s", "max_rss_kb", "events_per_pkt")}
                    if sim == "cnsim":
                        entry["agreement"] = agreement(a, b)
                        ok = ok and entry["agreement"]["ok"]
    if "cnsim-obs" in prefixes and "cnsim-obs" not in errors and not args.no_extra:
        # the rows in turn, one repetition of each per round, so that a slow spell of the machine
        # falls on every row alike (the CM-cost ratios compare rows with each other)
        result["extra"] = {}
        extra_reps = {label: args.reps * wl.get("rep_factor", 1) for label, wl in EXTRA.items()}
        extra_runs: dict[str, list[dict]] = {label: [] for label in EXTRA}
        for rep in range(max(extra_reps.values(), default=0)):
            for label, wl in EXTRA.items():
                if rep >= extra_reps[label] or label in result["extra"]:
                    continue
                wl = {k: v for k, v in wl.items() if k != "rep_factor"}
                wl["ms"] = wl["ms"] * args.scale
                try:
                    extra_runs[label].append(measure("cnsim-obs", prefixes["cnsim-obs"], wl, args.seed, args.timeout)
                                             | {"round": rep})
                except (RuntimeError, ValueError, OSError) as e:
                    result["extra"][label] = {"error": str(e).splitlines()[0]}
                    continue
                log(f"rep {rep + 1}/{extra_reps[label]} {label}: {si(extra_runs[label][-1]['pkts_per_s'])} pkts/s")
        for label, reps in extra_runs.items():
            if label not in result["extra"] and reps:
                result["extra"][label] = {"median": median_of(reps), "runs": reps}
        result["extra"].update(cm_cost(result["extra"]))
    result["ok"] = ok

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(render(result))
    print(f"\nJSON: {os.path.relpath(out, Path.cwd())}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
