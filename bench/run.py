#!/usr/bin/env python3
"""`make bench`: cnsim as users run it, side by side with ns-3 3.44 (the PyPI wheel, in C++).

Rows, each repetition its own process started by bench/spawn (so its whole-process figures -- wall,
CPU, peak resident set -- are its own and not the Python parent's), the rows of a workload taking turns
round by round (the order alternating) so that the machine's drift falls on every row alike:

  run     `cnsim run SCENARIO -o DIR -q`: the default observation, time series streamed to Parquet
  api     `cnsim.run(scenario)`: the Python API, tables in memory (bench/cnsim_driver.py)
  engine  the Rust engine alone, no observation (the `fanin` example of cnsim-core)
  ns3     ns-3 3.44 in C++ against the wheel's libraries (bench/fanin_ns3.cc, bench/fattree_ns3.cc)
  peers   any other simulator given with --peer LABEL=EXE (ns-3's arguments and output contract)

Workloads: fan-in-4 / 100 / 1000 (N CBR senders into one 10 Gb/s port, twice its rate) and the k = 8
fat tree with DCTCP permutation traffic (every host sends to one other, on the paths cnsim's ECMP gives
each flow; ns-3 is handed those paths).

Engine seconds: cnsim's summary `wall_s` (building the network, the run, observation, the tables handed
over or written) and ns-3's setup + Simulator::Run(): building the network is counted on both sides.
Ratios are cnsim over ns-3 in packets per second, taken round by round (the two runs of a round
follow each other) and their median printed; the whole-process ratio the same with the process's wall.

cnsim-only rows, all through `cnsim run` unless said: the cost of congestion management and of global
PAUSE on fan-in-100 for 1 s (same-round ratios to the run without), the API under PAUSE, memory over a
long run (fan-in-4 for 5 s), and process overhead (a 1-ms run, `cnsim --version`).

Run with the project's virtualenv (`make bench`): it imports cnsim to write the scenarios. Output: the
table on stdout, progress on stderr, every run as JSON in bench/results/latest.json (--out). Exit 1
when a simulator could not be built or run, or when cnsim and ns-3 disagree on the fan-in results.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import platform
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WIRE_BYTES = 1500
MSS = 1460

# rep_factor: a row whose cnsim run lasts only ~20 ms (fan-in-4) is at the mercy of a scheduler hiccup
# on this shared 2-core machine; it gets rep_factor times --reps rounds, every row alike.
FANIN = {
    "fan-in-4": {"n": 4, "rate_gbps": 5.0, "ms": 100.0, "rep_factor": 3},
    "fan-in-100": {"n": 100, "rate_gbps": 0.2, "ms": 200.0},
    "fan-in-1000": {"n": 1000, "rate_gbps": 0.02, "ms": 200.0},
}
FAT_TREE = {"fat-tree-k8": {"k": 8, "ms": 5.0, "perm_seed": 1}}
# issue 33: `cnsim run` with its default observation at twice htsim's paired ratio to ns-3 (htsim: 50x /
# 81x / 286x ns-3 on this machine kind)
TARGET_RATIO = {"fan-in-4": 100.0, "fan-in-100": 162.0, "fan-in-1000": 572.0}
CM_ROWS = {
    "none": [],
    "bcn": ["--set", "cm.scheme=bcn"],
    "qcn": ["--set", "cm.scheme=qcn"],
    "dcqcn": ["--set", "cm.scheme=dcqcn"],
    "pause": [
        "--set",
        "flow_control.mode=global",
        "--set",
        "flow_control.high=100KB",
        "--set",
        "flow_control.low=50KB",
    ],
}
CM_BOUND = {"bcn": 1.5, "qcn": 1.5, "dcqcn": 1.5, "pause": 2.0}
MEMORY_BOUND_MIB = 160
ONE_MS_BOUND_S = 0.25

LABEL = {
    "run": "cnsim run (default observation, Parquet)",
    "api": "cnsim API (default observation, memory)",
    "engine": "cnsim engine alone (Rust, no observation)",
    "ns3": "ns-3 3.44 C++ (PyPI wheel)",
}
GBPS_MIN, GBPS_MAX, GBPS_TOL = 9.99, 10.0001, 0.01
DROP_MIN, DROP_MAX, DROP_TOL = 0.49, 0.51, 0.002


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------- preparing --


def bench_dir() -> Path:
    return Path(os.environ.get("CNSIM_BENCH_DIR", Path.home() / ".cache" / "cnsim-bench"))


def prepare_spawn() -> str:
    """Compile bench/spawn.c (statically where the C library allows: a smaller floor) once per source."""
    src = HERE / "spawn.c"
    out = bench_dir() / "spawn"
    stamp = out.with_suffix(".stamp")
    key = hashlib.sha256(src.read_bytes()).hexdigest()
    if out.exists() and stamp.exists() and stamp.read_text() == key:
        return str(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cc = os.environ.get("CC", "cc")
    for extra in (["-static"], []):
        if subprocess.run([cc, "-O2", *extra, "-o", str(out), str(src)], stderr=subprocess.DEVNULL).returncode == 0:
            stamp.write_text(key)
            return str(out)
    raise RuntimeError(f"could not compile {src} with {cc}")


def prepare_ns3() -> dict[str, str]:
    """Build (once) the ns-3 drivers; their paths."""
    proc = subprocess.run(["bash", str(HERE / "setup_ns3.sh")], stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"bench/setup_ns3.sh failed (exit {proc.returncode})")
    lines = proc.stdout.strip().splitlines()
    return {"fanin": lines[-2], "fattree": lines[-1]}


def prepare_engine(cargo: str) -> str:
    """The `fanin` example of cnsim-core in release mode, run directly (never through `cargo run`)."""
    cmd = [
        cargo,
        "build",
        "--release",
        "-p",
        "cnsim-core",
        "--example",
        "fanin",
        "--message-format=json-render-diagnostics",
    ]
    log("building: " + " ".join(cmd))
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed (exit {proc.returncode})")
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if (
            msg.get("reason") == "compiler-artifact"
            and msg.get("target", {}).get("name") == "fanin"
            and msg.get("executable")
        ):
            return msg["executable"]
    raise RuntimeError("cargo built no `fanin` executable")


# ----------------------------------------------------------------------------------- scenarios --


def fanin_scenario(wl: dict) -> dict:
    sys.path.insert(0, str(HERE))
    from cnsim_driver import fan_in

    return fan_in(wl["n"], wl["rate_gbps"], wl["ms"])


def permutation(n: int, seed: int) -> list[tuple[int, int]]:
    """Host pairs of a permutation as htsim's connection_matrices/gen_permutation.py draws them: both
    lists shuffled by Python's generator, a host paired with itself swapped with the next pair."""
    srcs, dsts = list(range(n)), list(range(n))
    rng = random.Random(seed)
    rng.shuffle(srcs)
    rng.shuffle(dsts)
    for i in range(n):
        if srcs[i] == dsts[i]:
            j = (i + 1) % n
            dsts[i], dsts[j] = dsts[j], dsts[i]
    return list(zip(srcs, dsts))


def fat_tree_scenario(wl: dict) -> dict:
    """k-ary fat tree (10 Gb/s, 1 us links, 150 KB egress, ECN at K = 97.5 KB), one long-lived DCTCP
    flow per host to its permutation partner; 1-ms minimum RTO."""
    hosts = wl["k"] ** 3 // 4
    return {
        "run": {"name": f"fat-tree-k{wl['k']}-dctcp-permutation", "duration": f"{wl['ms']:g}ms"},
        "topology": {"preset": "fat_tree", "params": {"k": wl["k"]}},
        "defaults": {
            "link_rate": "10Gbps",
            "link_delay": "1us",
            "frame_size": f"{MSS + 40}B",
            "buffer": {"policy": "egress", "size": "150KB"},
            "ecn_threshold": "97.5KB",
        },
        "traffic": [
            {"name": f"p{s + 1}", "kind": "saturated", "src": f"h{s + 1}", "dst": f"h{d + 1}", "transport": "dctcp"}
            for s, d in permutation(hosts, wl["perm_seed"])
        ],
        "tcp": {"min_rto": "1ms"},
    }


def write_scenario(folder: Path, name: str, scenario: dict) -> Path:
    import tomli_w

    path = folder / f"{name}.toml"
    path.write_text(tomli_w.dumps(scenario))
    return path


def write_paths(folder: Path, name: str, scenario: dict) -> Path:
    """The topology and every flow's node path, data and ACKs, under cnsim's routes (ns-3's input)."""
    import warnings

    from cnsim import _core, api
    from cnsim.exceptions import ConfigWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        ir = api.compile_ir_once(api.resolve(scenario))
    data = _core.flow_paths(json.dumps(ir))
    # an ACK is hashed with its flow's key: the paths of the same flows reversed
    acks = _core.flow_paths(json.dumps(dict(ir, flows=[dict(f, src=f["dst"], dst=f["src"]) for f in ir["flows"]])))
    lines = [f"node {i} {n['kind']}" for i, n in enumerate(ir["nodes"])]
    lines += [f"link {x['a']} {x['b']}" for x in ir["links"]]
    lines += [
        f"flow {f['src']} {f['dst']} path {' '.join(map(str, p))} ack {' '.join(map(str, a))}"
        for f, p, a in zip(ir["flows"], data, acks)
    ]
    path = folder / f"{name}.paths"
    path.write_text("\n".join(lines) + "\n")
    return path


# ------------------------------------------------------------------------------------- running --


def parse_kv(text: str) -> dict:
    """The last line of `key=value` tokens in `text`, numbers converted."""
    for line in reversed(text.strip().splitlines()):
        toks = [t.split("=", 1) for t in line.split() if "=" in t]
        if toks and len(toks) >= len(line.split()) // 2:
            out = {}
            for k, v in toks:
                for conv in (int, float, str):
                    try:
                        out[k] = conv(v)
                        break
                    except ValueError:
                        continue
            return out
    raise ValueError(f"no key=value line in output: {text[-500:]!r}")


class Runner:
    """Starts commands through bench/spawn and reads their output and whole-process figures."""

    def __init__(self, spawn: str, timeout: float, scratch: Path):
        self.spawn, self.timeout, self.scratch = spawn, timeout, scratch
        self.count = 0

    def __call__(self, cmd: list[str]) -> tuple[str, dict]:
        self.count += 1
        figures = self.scratch / f"spawn-{self.count}.txt"
        with tempfile.TemporaryFile("w+") as out:
            proc = subprocess.Popen(
                [self.spawn, str(figures), *cmd], stdout=out, stderr=subprocess.PIPE, text=True, start_new_session=True
            )
            try:
                _, err = proc.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                raise RuntimeError(f"timeout after {self.timeout:.0f} s: {shlex.join(cmd)}") from None
            out.seek(0)
            text = out.read()
        if proc.returncode != 0:
            raise RuntimeError(f"exit {proc.returncode}: {shlex.join(cmd)}\n{(err or text)[-2000:]}")
        p = parse_kv(figures.read_text())
        figures.unlink()
        return text, {
            "process_wall_s": p["wall_s"],
            "cpu_s": p["user_s"] + p["sys_s"],
            "peak_mib": p["max_rss_kb"] / 1024,
        }


def cnsim_run(runner: Runner, cnsim: str, scenario: Path, extra: list[str], seed: int) -> dict:
    """`cnsim run` into a fresh folder: the summary's figures and the process's."""
    out = runner.scratch / f"out-{runner.count + 1}"
    _, proc = runner([cnsim, "run", str(scenario), "-o", str(out), "-q", "--seed", str(seed), *extra])
    s = json.loads((out / "summary.json").read_text())
    shutil.rmtree(out, ignore_errors=True)
    return proc | summary_figures(s)


def summary_figures(s: dict) -> dict:
    f = s["frames"]
    return {
        "engine_s": s["wall_s"],
        "events": s["events"],
        "delivered": f["delivered"],
        "dropped": f["dropped"],
        "delivered_gbps": s["bytes"]["delivered"] * 8 / s["sim_time_s"] / 1e9,
        "goodput_gbps": s["tcp"]["goodput_bps"] / 1e9,
    }


def kv_figures(kv: dict, engine_s: float) -> dict:
    delivered = kv["delivered"]
    return {
        "engine_s": engine_s,
        "events": kv.get("events"),
        "delivered": delivered,
        "dropped": kv.get("dropped", 0),
        "delivered_gbps": kv.get("delivered_gbps"),
        "goodput_gbps": kv.get("goodput_gbps"),
    }


def with_rates(r: dict) -> dict:
    """Packets (delivered + dropped data frames) per engine second and per process second."""
    pk = r["delivered"] + r["dropped"]
    r["packets"] = pk
    r["pkts_per_s"] = pk / max(r["engine_s"], 1e-9)
    r["process_pkts_per_s"] = pk / max(r["process_wall_s"], 1e-9)
    r["drop_ratio"] = r["dropped"] / pk if pk else None
    return r


class Sims:
    """How each row runs a workload."""

    def __init__(
        self, runner: Runner, cnsim: str, python: str, ns3: dict, engine: str | None, peers: dict[str, str], seed: int
    ):
        self.runner, self.cnsim, self.python, self.ns3 = runner, cnsim, python, ns3
        self.engine, self.peers, self.seed = engine, peers, seed

    def measure(self, sim: str, wl: dict) -> dict:
        seed = self.seed
        if sim == "run":
            return with_rates(cnsim_run(self.runner, self.cnsim, wl["toml"], [], seed))
        if sim == "api":
            text, proc = self.runner(
                [self.python, str(HERE / "cnsim_driver.py"), "--scenario", str(wl["toml"]), "--seed", str(seed)]
            )
            kv = parse_kv(text)
            return with_rates(proc | kv_figures(kv, kv["run_s"]))
        if sim == "engine":
            text, proc = self.runner(
                [
                    self.engine,
                    "--n",
                    str(wl["n"]),
                    "--rate-gbps",
                    f"{wl['rate_gbps']:g}",
                    "--ms",
                    f"{wl['ms']:g}",
                    "--seed",
                    str(seed),
                ]
            )
            kv = parse_kv(text)
            return with_rates(proc | kv_figures(kv, kv["run_s"]))
        exe = self.ns3[wl["kind"]] if sim == "ns3" else self.peers[sim]
        if wl["kind"] == "fanin":
            args = [f"--n={wl['n']}", f"--rateGbps={wl['rate_gbps']:g}", f"--ms={wl['ms']:g}", f"--seed={seed}"]
        else:
            args = [f"--topo={wl['paths']}", f"--ms={wl['ms']:g}", f"--seed={seed}"]
        text, proc = self.runner([exe, *args])
        kv = parse_kv(text)
        return with_rates(proc | kv_figures(kv, kv["wall_s"]))


def rounds(sims: Sims, rows: list[str], workloads: dict[str, dict], reps: dict[str, int], results: dict) -> None:
    """Every row of every workload, round by round, the order alternating."""
    for rep in range(max(reps.values(), default=0)):
        for i, (name, wl) in enumerate(workloads.items()):
            if rep >= reps[name]:
                continue
            order = rows if (rep + i) % 2 == 0 else rows[::-1]
            for sim in order:
                if sim not in wl["rows"]:
                    continue
                entry = results[name].setdefault(sim, {"runs": []})
                if "error" in entry:
                    continue
                try:
                    r = sims.measure(sim, wl) | {"round": rep}
                except (RuntimeError, ValueError, OSError, KeyError) as e:
                    entry["error"] = str(e).splitlines()[0]
                    log(f"{sim} {name}: {e}")
                    continue
                entry["runs"].append(r)
                log(
                    f"rep {rep + 1}/{reps[name]} {name:<11} {sim:<6} {si(r['pkts_per_s']):>8} pkts/s, engine "
                    f"{r['engine_s']:.3f} s, process {r['process_wall_s']:.2f} s, {r['peak_mib']:.1f} MiB"
                )


# ----------------------------------------------------------------------------------- summaries --


def median_of(runs: list[dict]) -> dict:
    med = {}
    for key in runs[0]:
        vals = [r[key] for r in runs if isinstance(r.get(key), (int, float)) and key != "round"]
        if vals:
            med[key] = statistics.median(vals)
    return med


def paired(a: list[dict], b: list[dict], key: str) -> dict | None:
    """a / b in `key`, round by round: median, range, rounds."""
    by_round = {r["round"]: r[key] for r in b}
    ratios = [r[key] / by_round[r["round"]] for r in a if r["round"] in by_round and by_round[r["round"]]]
    if not ratios:
        return None
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios), "rounds": len(ratios)}


def agreement(a: dict, b: dict) -> dict:
    problems = []
    for label, m in (("cnsim", a), ("ns-3", b)):
        if not GBPS_MIN <= m["delivered_gbps"] <= GBPS_MAX:
            problems.append(f"{label} delivered {m['delivered_gbps']:.4f} Gb/s")
        if not DROP_MIN <= m["drop_ratio"] <= DROP_MAX:
            problems.append(f"{label} drop ratio {100 * m['drop_ratio']:.2f} %")
    if abs(a["delivered_gbps"] - b["delivered_gbps"]) > GBPS_TOL:
        problems.append("delivered rates differ")
    if abs(a["drop_ratio"] - b["drop_ratio"]) > DROP_TOL:
        problems.append("drop ratios differ")
    detail = (
        f"delivered {a['delivered_gbps']:.4f} vs {b['delivered_gbps']:.4f} Gb/s, drops "
        f"{100 * a['drop_ratio']:.2f} vs {100 * b['drop_ratio']:.2f} %"
    )
    return {"ok": not problems, "detail": detail + ("" if not problems else " -- " + "; ".join(problems))}


def summarise(results: dict, workloads: dict) -> bool:
    """Medians, ratios to ns-3 and agreement per workload; False when a row failed or the fan-in results differ."""
    ok = True
    for name, entry in results.items():
        for e in list(entry.values()):
            if not isinstance(e, dict) or "runs" not in e:
                continue
            if "error" in e:
                ok = False
            if e["runs"]:
                e["median"] = median_of(e["runs"])
        ns3 = entry.get("ns3", {})
        if not ns3.get("runs"):
            continue
        entry["ratio"] = {
            sim: {
                "engine": paired(e["runs"], ns3["runs"], "pkts_per_s"),
                "process": paired(e["runs"], ns3["runs"], "process_pkts_per_s"),
            }
            for sim, e in entry.items()
            if isinstance(e, dict) and e.get("runs") and sim != "ns3"
        }
        if workloads[name]["kind"] == "fanin" and "median" in entry.get("run", {}):
            entry["agreement"] = agreement(entry["run"]["median"], ns3["median"])
            ok = ok and entry["agreement"]["ok"]
    return ok


# --------------------------------------------------------------------------- cnsim-only rows --


def extra_rows(sims: Sims, folder: Path, reps: int) -> dict:
    """CM and PAUSE cost (same-round ratios to CM off), the API under PAUSE, a long run's memory,
    process overhead."""
    f100 = write_scenario(folder, "fan-in-100-1s", fanin_scenario({"n": 100, "rate_gbps": 0.2, "ms": 1000.0}))
    f4long = write_scenario(folder, "fan-in-4-5s", fanin_scenario({"n": 4, "rate_gbps": 5.0, "ms": 5000.0}))
    f4ms = write_scenario(folder, "fan-in-4-1ms", fanin_scenario({"n": 4, "rate_gbps": 5.0, "ms": 1.0}))
    pause_api = folder / "fan-in-100-1s-pause.json"
    pause_api.write_text(
        json.dumps({"flow_control.mode": "global", "flow_control.high": "100KB", "flow_control.low": "50KB"})
    )
    jobs = {f"cm {c}": (lambda c=c: cnsim_run(sims.runner, sims.cnsim, f100, CM_ROWS[c], sims.seed)) for c in CM_ROWS}
    jobs["api, global PAUSE"] = lambda: api_run(sims, f100, pause_api)
    jobs["fan-in-4 for 5 s"] = lambda: cnsim_run(sims.runner, sims.cnsim, f4long, [], sims.seed)
    jobs["1-ms run"] = lambda: cnsim_run(sims.runner, sims.cnsim, f4ms, [], sims.seed)
    jobs["cnsim --version"] = lambda: sims.runner([sims.cnsim, "--version"])[1]
    counts = {k: 3 * reps if k.startswith("cm ") or k in ("1-ms run", "cnsim --version") else reps for k in jobs}
    out: dict = {k: {"runs": []} for k in jobs}
    for rep in range(max(counts.values())):
        for label, job in jobs.items():
            if rep >= counts[label] or "error" in out[label]:
                continue
            try:
                out[label]["runs"].append(job() | {"round": rep})
            except (RuntimeError, ValueError, OSError, KeyError) as e:
                out[label]["error"] = str(e).splitlines()[0]
                log(f"{label}: {e}")
                continue
            r = out[label]["runs"][-1]
            log(
                f"rep {rep + 1}/{counts[label]} {label}: engine {r.get('engine_s', float('nan')):.3f} s, "
                f"process {r['process_wall_s']:.2f} s, {r['peak_mib']:.1f} MiB"
            )
    for label, e in out.items():
        if e["runs"]:
            e["median"] = median_of(e["runs"])
        if label.startswith("cm ") and label != "cm none" and e["runs"] and out["cm none"]["runs"]:
            e["cost"] = paired(e["runs"], out["cm none"]["runs"], "engine_s")
    return out


def api_run(sims: Sims, scenario: Path, overrides: Path) -> dict:
    text, proc = sims.runner(
        [
            sims.python,
            str(HERE / "cnsim_driver.py"),
            "--scenario",
            str(scenario),
            "--overrides",
            str(overrides),
            "--seed",
            str(sims.seed),
        ]
    )
    return proc | {"engine_s": parse_kv(text)["run_s"]}


# ----------------------------------------------------------------------------------- reporting --


def si(x: float | None) -> str:
    if x is None:
        return "-"
    for div, suf in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if abs(x) >= div:
            return f"{x / div:.3g}{suf}"
    return f"{x:.3g}"


def fmt_ratio(r: dict | None) -> str:
    """A paired ratio: its median and range."""
    if not r:
        return "-"
    f = (lambda x: f"{x:.1f}") if r["median"] >= 10 else (lambda x: f"{x:.2f}")
    return f"{f(r['median'])}x ({f(r['min'])}-{f(r['max'])})"


def render(result: dict) -> str:
    host, p = result["host"], result["params"]
    lines = [
        f"cnsim vs ns-3 3.44 -- medians of {p['reps']} interleaved rounds ({p['reps_fan_in_4']} on fan-in-4), "
        f"seed {p['seed']}, sim-time scale {p['scale']:g}",
        f"host: {host['cpu']} ({host['cpus']} CPUs), load average {host['loadavg_before'][0]:.2f} before / "
        f"{host['loadavg_after'][0]:.2f} after",
        "packets = data frames delivered + dropped; engine s: cnsim's summary wall_s, ns-3's setup + run;",
        "process: the whole process (bench/spawn: wall, CPU of it and its children, largest resident set);",
        "ratio: cnsim / ns-3 in packets per second, round by round, median (range)",
        "",
    ]
    head = (
        f"{'workload':<12} {'row':<42} {'pkts/s':>8} {'engine s':>9} {'process s':>9} {'CPU s':>7} "
        f"{'peak MiB':>8} {'Gb/s':>8} {'drops':>7}"
    )
    lines += [head, "-" * len(head)]
    for name, entry in result["workloads"].items():
        for sim, e in entry.items():
            if not isinstance(e, dict) or ("runs" not in e and "error" not in e):
                continue
            label = LABEL.get(sim, sim)
            if "median" not in e:
                lines.append(f"{name:<12} {label:<42} not measured: {e.get('error')}")
                continue
            m = e["median"]
            gbps = m.get("goodput_gbps") if result["spec"][name]["kind"] == "fattree" else m.get("delivered_gbps")
            lines.append(
                f"{name:<12} {label:<42} {si(m['pkts_per_s']):>8} {m['engine_s']:>9.3f} "
                f"{m['process_wall_s']:>9.2f} {m['cpu_s']:>7.2f} {m['peak_mib']:>8.1f} "
                f"{gbps if gbps is not None else float('nan'):>8.3f} "
                f"{100 * (m.get('drop_ratio') or 0):>6.2f}%"
            )
        for sim, r in entry.get("ratio", {}).items():
            eng, proc = r["engine"], r["process"]
            if eng:
                target = TARGET_RATIO.get(name) if sim == "run" else None
                lines.append(
                    f"{name:<12} {'ratio ' + sim + ' / ns-3':<42} engine {fmt_ratio(eng)}, "
                    f"process {fmt_ratio(proc)}" + (f"; target {target:g}x" if target else "")
                )
        if "agreement" in entry:
            a = entry["agreement"]
            lines.append(f"{name:<12} {'agreement':<42} {'OK' if a['ok'] else 'MISMATCH'}: {a['detail']}")
        lines.append("")
    extra = result.get("extra")
    if extra:
        head = (
            f"{'cnsim only (cnsim run unless said)':<40} {'engine s':>9} {'process s':>9} {'CPU s':>7} {'peak MiB':>8}"
        )
        lines += [head, "-" * len(head)]
        for label, e in extra.items():
            if "median" not in e:
                lines.append(f"{label:<40} not measured: {e.get('error')}")
                continue
            m, c = e["median"], e.get("cost")
            eng = f"{m['engine_s']:>9.3f}" if "engine_s" in m else f"{'-':>9}"
            note = ""
            if c:
                note = (
                    f"  cost {c['median']:.2f}x cm none (same-round ratios, {c['rounds']} rounds, "
                    f"{c['min']:.2f}-{c['max']:.2f}; bound {CM_BOUND[label[3:]]:g}x)"
                )
            lines.append(
                f"{label:<40} {eng} {m['process_wall_s']:>9.2f} {m['cpu_s']:>7.2f} {m['peak_mib']:>8.1f}{note}"
            )
        lines.append(f"(bounds: peak <= {MEMORY_BOUND_MIB} MiB for any run; a 1-ms run <= {ONE_MS_BOUND_S:g} s)")
    return "\n".join(lines)


def host_info() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "loadavg_before": list(os.getloadavg()),
    }


# ---------------------------------------------------------------------------------------- main --


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--reps", type=int, default=3, help="rounds per workload (fan-in-4: 3 times as many); default 3")
    ap.add_argument("--rows", default="run,api,engine,ns3", help="comma-separated rows (default run,api,engine,ns3)")
    ap.add_argument(
        "--workloads",
        default=",".join([*FANIN, *FAT_TREE]),
        help="comma-separated subset of " + ", ".join([*FANIN, *FAT_TREE]),
    )
    ap.add_argument("--no-extra", action="store_true", help="skip the cnsim-only rows (CM cost, memory, overhead)")
    ap.add_argument(
        "--peer",
        action="append",
        default=[],
        metavar="LABEL=EXE",
        help="another simulator run like the ns-3 drivers (same arguments, same key=value output)",
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the simulated times (0.1: a quick smoke run)")
    ap.add_argument("--cargo", default=os.environ.get("CARGO", "cargo"))
    ap.add_argument("--timeout", type=float, default=900.0, help="per run, seconds")
    ap.add_argument("--out", default=str(HERE / "results" / "latest.json"))
    args = ap.parse_args(argv)
    if args.reps < 1:
        ap.error("--reps must be >= 1")
    for w in args.workloads.split(","):
        if w not in FANIN and w not in FAT_TREE:
            ap.error(f"unknown workload {w!r}")
    return args


def workloads_of(args: argparse.Namespace, folder: Path, rows: list[str], peers: dict) -> dict[str, dict]:
    out = {}
    for name in args.workloads.split(","):
        if name in FANIN:
            wl = dict(FANIN[name], kind="fanin", ms=FANIN[name]["ms"] * args.scale)
            wl["toml"] = write_scenario(folder, name, fanin_scenario(wl))
            wl["rows"] = [r for r in rows if r in ("run", "api", "engine", "ns3") or r in peers]
        else:
            wl = dict(FAT_TREE[name], kind="fattree", ms=FAT_TREE[name]["ms"] * args.scale)
            scenario = fat_tree_scenario(wl)
            wl["toml"] = write_scenario(folder, name, scenario)
            wl["paths"] = write_paths(folder, name, scenario)
            wl["rows"] = [r for r in rows if r in ("run", "ns3") or r in peers]
        out[name] = wl
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    peers = dict(p.split("=", 1) for p in args.peer)
    rows = [r.strip() for r in args.rows.split(",") if r.strip()] + list(peers)
    scratch = Path(tempfile.mkdtemp(prefix="cnsim-bench-"))
    try:
        spawn = prepare_spawn()
        ns3 = prepare_ns3() if "ns3" in rows else {}
        engine = prepare_engine(args.cargo) if "engine" in rows else None
        bindir = Path(sys.executable).parent
        cnsim = str(bindir / "cnsim") if (bindir / "cnsim").exists() else shutil.which("cnsim") or "cnsim"
        sims = Sims(Runner(spawn, args.timeout, scratch), cnsim, sys.executable, ns3, engine, peers, args.seed)
        workloads = workloads_of(args, scratch, rows, peers)
        reps = {w: args.reps * wl.get("rep_factor", 1) for w, wl in workloads.items()}
        result = {
            "schema": 2,
            "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "host": host_info(),
            "params": {
                "reps": args.reps,
                "reps_fan_in_4": args.reps * FANIN["fan-in-4"]["rep_factor"],
                "seed": args.seed,
                "scale": args.scale,
                "rows": rows,
                "peers": peers,
            },
            "spec": {
                w: {k: v for k, v in wl.items() if k not in ("toml", "paths", "rows")} for w, wl in workloads.items()
            },
            "workloads": {w: {} for w in workloads},
        }
        rounds(sims, rows, workloads, reps, result["workloads"])
        ok = summarise(result["workloads"], workloads)
        if not args.no_extra:
            result["extra"] = extra_rows(sims, scratch, args.reps)
        result["host"]["loadavg_after"] = list(os.getloadavg())
        result["ok"] = ok
    except RuntimeError as e:
        log(str(e))
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(render(result))
    print(f"\nJSON: {os.path.relpath(out, Path.cwd())}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
