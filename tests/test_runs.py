"""Runs through the engine: conservation, determinism, M/D/1, fan-in, PAUSE, hotspot, CLI outputs."""

import json
import re
import tomllib

import cnsim
import numpy as np
import pytest
from cnsim.exceptions import RunInterrupted
from conftest import ROOT, SCENARIOS, needs_core

pytestmark = needs_core
SC = ROOT / "scenarios"
FAN_IN_4 = SC / "baseline/fan-in-4.toml"
CNSIM = SC / "seed-003/cnsim-1hop-none-hs0.5-pause.toml"


def conserved(s: dict) -> None:
    for unit in ("frames", "bytes"):
        c = s[unit]
        assert c["generated"] == c["delivered"] + c["dropped"] + c["in_flight"] + c["host_queued"], (unit, c)
    assert s["conservation"]["ok"], s["conservation"]


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_conservation_every_scenario(path):
    r = cnsim.run(path, overrides={"run.duration": "3ms", "run.warmup": 0, "traffic.0.start": 0})
    conserved(r.summary)
    assert r.summary["frames"]["generated"] > 0


def _strip(s: dict) -> dict:
    return {k: v for k, v in s.items() if k != "wall_s"}


@pytest.mark.parametrize("path", [FAN_IN_4, CNSIM], ids=["fan-in-4", "cnsim-1hop"])
def test_determinism(path, tmp_path):
    ov = {"run.duration": "5ms"}
    a = cnsim.run(path, seed=7, overrides=ov, out=tmp_path / "a", plots=False)
    b = cnsim.run(path, seed=7, overrides=ov, out=tmp_path / "b", plots=False)
    assert _strip(a.summary) == _strip(b.summary)
    for f in sorted((tmp_path / "a").glob("*.parquet")):
        if f.name != "summary.parquet":  # holds wall_s
            assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), f.name
    assert a.manifest["config_hash"] == b.manifest["config_hash"]
    c = cnsim.run(path, seed=8, overrides=ov, plots=False)
    assert _strip(c.summary) != _strip(a.summary)


@pytest.mark.parametrize("rho,tol", [(0.5, 0.01), (0.8, 0.03)])
def test_md1_mean_queue_and_busy_fraction_match_theory(rho, tol):
    """TESTING.md T8 for M/D/1 (Poisson arrivals, 1500-B frames): over R = 10 replications of 200 ms with
    the first 10 % discarded, the Pollaczek-Khinchine mean queue L = rho + rho^2 / (2 (1 - rho)) frames
    (the frame in service counted) and the server's busy fraction rho each lie inside the 99 % CI of the
    replication mean and within 1 % (rho = 0.5) or 3 % (rho = 0.8) of theory."""
    from scipy import stats

    runs = [
        cnsim.run(
            SC / "baseline/md1.toml",
            plots=False,
            overrides={"run.replication": k, "run.warmup": "20ms", "traffic.0.rate": f"{rho * 10:g}Gbps"},
        ).summary
        for k in range(10)
    ]
    assert sum(s["frames"]["dropped"] for s in runs) == 0
    lq = rho**2 / (2 * (1 - rho))
    for name, theory, per_run in (
        ("mean queue", (rho + lq) * 1500, [bottleneck(s)["mean_bytes"] for s in runs]),
        ("busy fraction", rho, [next(lk for lk in s["links"] if lk["to"] == "sink")["utilization"] for s in runs]),
    ):
        x = np.array(per_run)
        half = stats.t.ppf(0.995, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
        assert abs(x.mean() - theory) <= half, (name, x.mean(), theory, half)
        assert abs(x.mean() - theory) / theory <= tol, (name, x.mean(), theory)


@pytest.mark.parametrize("rho,tol", [(0.5, 0.01), (0.8, 0.03)])
def test_mg1_exponential_sizes_mean_queue_and_busy_fraction_match_pollaczek_khinchine(rho, tol):
    """TESTING.md T8 with exponential frame sizes (M/M/1 truncated to Ethernet's 64-9216 B, so M/G/1):
    over R = 10 replications of 200 ms with the first 10 % discarded, the time-average bytes in the
    system B = (E[S^2]/E[S]) (rho + rho^2 / (2 (1 - rho))) with the exact moments of the sizes drawn
    (cnsim.scenario.framesizes), and the busy fraction rho, each inside the 99 % CI of the replication mean and
    within 1 % (rho = 0.5) or 3 % (rho = 0.8) of theory. Fixed-size frames would give 2 250 / 3 600 B,
    the unbounded M/M/1 1 500 (2 rho + rho^2/(1 - rho)) = 2 250 / 7 200 B: the truncation's 6.5 % smaller
    E[S^2] is what separates 6 728 from 7 200 at rho = 0.8, so the test also checks the sizes' tail."""
    from cnsim.api import resolve
    from cnsim.compile.compiler import compile_ir
    from cnsim.scenario import framesizes
    from scipy import stats

    path = SC / "baseline/mg1-exponential.toml"
    ov = {"run.warmup": "20ms", "traffic.0.rate": f"{rho * 10:g}Gbps"}
    sizes = compile_ir(resolve(path, overrides=ov))["sources"][0]["process"]["sizes"]
    m1, m2 = framesizes.moments(sizes)
    assert m1 == pytest.approx(1500, rel=1e-9)
    runs = [cnsim.run(path, plots=False, overrides={**ov, "run.replication": k}).summary for k in range(10)]
    assert sum(s["frames"]["dropped"] for s in runs) == 0
    for name, theory, per_run in (
        ("mean bytes", m2 / m1 * (rho + rho**2 / (2 * (1 - rho))), [bottleneck(s)["mean_bytes"] for s in runs]),
        ("busy fraction", rho, [next(lk for lk in s["links"] if lk["to"] == "sink")["utilization"] for s in runs]),
        ("mean size", m1, [s["bytes"]["generated"] / s["frames"]["generated"] for s in runs]),
    ):
        x = np.array(per_run)
        half = stats.t.ppf(0.995, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
        assert abs(x.mean() - theory) <= half, (name, x.mean(), theory, half)
        assert abs(x.mean() - theory) / theory <= tol, (name, x.mean(), theory)


def test_imix_sizes_come_in_their_proportions_and_the_rate_counts_their_mean():
    """A Poisson generator with an IMIX mix (64 / 594 / 1518 B as 7 : 4 : 1, mean 4 342/12 = 361.8 B) at
    2 Gb/s: the frames' mean size is the mix's, the delivered rate is the offered 2 Gb/s (the gap is
    set from the mean size), and bytes are conserved with frames of three sizes in the host FIFO."""
    mix = [["64B", 7], ["594B", 4], ["1518B", 1]]
    r = cnsim.run(
        SC / "baseline/md1.toml",
        plots=False,
        overrides={
            "run.duration": "50ms",
            "traffic.0.rate": "2Gbps",
            "traffic.0.frame_sizes": "mix",
            "traffic.0.size_mix": mix,
        },
    )
    s = r.summary
    conserved(s)
    mean = (64 * 7 + 594 * 4 + 1518) / 12
    n = s["frames"]["generated"]
    # sd of one size ≈ 420 B: the standard error of the mean over n ≈ 3.4e4 frames is ≈ 2.3 B
    assert s["bytes"]["generated"] / n == pytest.approx(mean, abs=9)
    # Poisson counts over 49 ms: the rate's relative standard error is ≈ 1.5 × 1/sqrt(n) ≈ 0.8 %
    assert s["flows"][0]["throughput_bps"] == pytest.approx(2e9, rel=0.03)


def test_md1_queue_length_cdf_follows_the_queue_length_distribution():
    """M/D/1 at rho = 0.8 (the queue counts the frame in service): P(N = 0) = 1 - rho = 0.2,
    P(N <= 1) = (1 - rho) e^rho = 0.445, P(N <= 2) = 0.634 — so the 10 % quantile is the empty bucket
    (0–64 B), the 25 % one a single frame (1 500 B, bucket edge 1 536) and the median two (3 008); the
    table and the summary agree, and the 99 % point is the summary's p99."""
    r = cnsim.run(SC / "baseline/md1.toml", plots=False)
    q = bottleneck(r.summary)
    cdf = dict((f, b) for f, b in q["cdf"])
    assert (cdf[0.1], cdf[0.25], cdf[0.5]) == (64, 1536, 3008), cdf
    assert cdf[0.99] == q["p99_bytes"] and cdf[1.0] == q["max_bytes"]
    t = r.tables["queue_cdf"]
    mine = t[(t["switch"] == q["switch"]) & (t["port"] == "sink")]
    assert list(mine["quantile"]) == list(cdf) and list(mine["bytes"]) == list(cdf.values())
    assert all((g["bytes"].diff().dropna() >= 0).all() for _, g in t.groupby(["switch", "port"]))


def bottleneck(s: dict) -> dict:
    return next(q for q in s["queues"] if q["port"] == "sink")


def test_fan_in_4_saturates_and_drops_half():
    s = cnsim.run(FAN_IN_4, plots=False).summary
    conserved(s)
    assert sum(f["throughput_bps"] for f in s["flows"]) >= 9.99e9
    ratio = s["frames"]["dropped"] / s["frames"]["generated"]
    assert abs(ratio - 0.5) < 0.01, ratio


def test_fan_in_4_global_pause_no_drops_half_paused():
    """Lossless with 50 KB of headroom. The 4 senders need only C / (4 C) = 25 % unpaused time to keep
    the port busy (while unpaused they drain their backlog at line rate), so they are paused 75 % of
    the time — not the 50 % one might guess from the 2:1 overload. XOFF/XON frames also go out on
    the sw1 → sink link (global pause addresses every input), costing it about 0.5 % of its time."""
    s = cnsim.run(
        FAN_IN_4,
        overrides={"flow_control.mode": "global", "flow_control.high": "100KB", "flow_control.low": "90KB"},
        plots=False,
    ).summary
    conserved(s)
    assert s["frames"]["dropped"] == 0
    assert sum(f["throughput_bps"] for f in s["flows"]) >= 9.9e9
    assert s["pause"]["host_paused_fraction"] == pytest.approx(0.75, abs=0.03)


def victim_scenario(mode: str) -> dict:
    """a1, a2 → x congest sw1 → x; victim v → y uses an uncongested port of the same switch."""
    policy = "ingress" if mode == "selective" else "egress"
    return {
        "run": {"name": f"victim-{mode}", "duration": "20ms"},
        "topology": {
            "hosts": ["a1", "a2", "v", "x", "y"],
            "switches": ["sw1"],
            "links": [[h, "sw1"] for h in ("a1", "a2", "v", "x", "y")],
        },
        "defaults": {"buffer": {"policy": policy, "size": "150KB"}},
        "traffic": [
            {"name": "aggressors", "kind": "saturated", "src": ["a1", "a2"], "dst": "x"},
            {"name": "victim", "kind": "saturated", "src": "v", "dst": "y"},
        ],
        "flow_control": {"mode": mode, "high": "130KB", "low": "120KB"},
    }


def test_selective_pause_spares_the_victim_global_does_not():
    flows = {}
    for mode in ("global", "selective"):
        s = cnsim.run(victim_scenario(mode), plots=False).summary
        conserved(s)
        assert s["frames"]["dropped"] == 0, mode
        flows[mode] = next(f["throughput_bps"] for f in s["flows"] if f["src"] == "v")
    assert flows["selective"] >= 9.9e9
    assert flows["global"] < 0.9 * flows["selective"], flows


def test_hotspot_port_serves_exactly_its_reduced_rate():
    bin_s, rate = 600e-6, 2e9
    sc = {
        "run": {"name": "hotspot", "duration": "12ms"},
        "topology": {"preset": "fan_in", "params": {"n_senders": 1}},
        "traffic": [{"name": "sat", "kind": "saturated", "src": "h1", "dst": "sink"}],
        "hotspot": [{"switch": "sw1", "toward": "sink", "start": "2.4ms", "end": "9.6ms", "rate": "2Gbps"}],
        "observe": {"throughput_bin": "600us"},
    }
    r = cnsim.run(sc, plots=False)
    conserved(r.summary)
    tp = r.flow_tp
    inside = tp[(tp["t_s"] >= 3.0e-3 - 1e-12) & (tp["t_s"] < 9.0e-3 - 1e-12)]
    assert len(inside) == 10
    one_frame = 1500 * 8 / bin_s
    assert np.all(np.abs(inside["bps"] - rate) <= one_frame), inside["bps"].tolist()
    assert inside["bps"].sum() * bin_s == pytest.approx(rate * len(inside) * bin_s, rel=0.01)
    before = tp[(tp["t_s"] >= 0.6e-3) & (tp["t_s"] < 1.8e-3)]
    assert np.all(before["bps"] > 9.9e9)


def test_cli_run_writes_every_output(cli, tmp_path):
    out = tmp_path / "res"
    r = cli(["run", FAN_IN_4, "--set", "run.duration=2ms", "--out", out, "--json", "--plots"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    for name in (
        "summary.json",
        "manifest.json",
        "resolved-config.toml",
        "queue_ts.parquet",
        "flow_tp.parquet",
        "rp_rate.parquet",
        "pause_ts.parquet",
        "fct.parquet",
        "flows.parquet",
        "summary.parquet",
        "plots/queue.png",
        "plots/throughput.png",
    ):
        assert (out / name).is_file(), name
    m = json.loads((out / "manifest.json").read_text())
    for key in (
        "scenario",
        "seed",
        "tool_version",
        "core_version",
        "git_describe",
        "events",
        "wall_s",
        "config_hash",
        "status",
        "files",
    ):
        assert key in m
    assert m["status"] == "ok" and "manifest.json" not in m["files"]
    loaded = cnsim.Result.load(out)
    assert loaded.summary == summary
    assert not list(tmp_path.glob(".res*"))
    assert cnsim.load_scenario(out / "resolved-config.toml") is not None


def test_interrupt_writes_nothing(tmp_path):
    def stop(_sim_s: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(RunInterrupted):
        cnsim.run(FAN_IN_4, out=tmp_path / "x", progress=stop)
    assert not (tmp_path / "x").exists() and not list(tmp_path.iterdir())


def test_result_frames_and_polars():
    r = cnsim.run(CNSIM, overrides={"run.duration": "3ms"}, plots=False)
    assert {"t_s", "queue", "bytes", "switch", "port"} <= set(r.queue_ts.columns)
    assert {"flow", "src", "dst", "delivered_bytes"} <= set(r.flows.columns)
    assert len(r.fct) > 0 and {"start_s", "end_s", "completed", "bad"} <= set(r.fct.columns)
    assert r.to_polars("flows").height == len(r.flows)
    assert r.summary_frame().shape[0] == 1


def test_cli_run_draws_plots_only_on_request(cli, tmp_path):
    """Plots cost a matplotlib import and two renders: `cnsim run` draws them with --plots only."""
    out = tmp_path / "res"
    r = cli(["run", FAN_IN_4, "--set", "run.duration=2ms", "--out", out, "-q"])
    assert r.exit_code == 0, r.output
    assert (out / "queue_ts.parquet").is_file() and not (out / "plots").exists()


def test_none_override_inside_scheme_params_means_the_default():
    # TOML has no null: a None in the free-form cm.params is left out of resolved-config.toml (the
    # scheme's default), instead of failing to serialise after the run
    from cnsim.compile.loader import load_scenario

    path = ROOT / "scenarios" / "seed-002" / "symmetric-10g-bcn-c.toml"  # sets initial_rate = "5Gbps"
    assert "initial_rate" in path.read_text()
    r = cnsim.run(path, seed=1, overrides={"run.duration": "2ms", "cm.params.initial_rate": None})
    assert "initial_rate" not in r.config_toml
    again = load_scenario(tomllib.loads(r.config_toml))
    assert again.cm.params.get("initial_rate") is None


ECM_PAUSE = SC / "seed-003/cnsim-1hop-ecm-hs0.5-pause.toml"
GLOBAL_PAUSE = {"flow_control.mode": "global", "flow_control.high": "100KB", "flow_control.low": "90KB"}
SERIES = {
    "queue_ts": (ECM_PAUSE, {}),
    "rp_rate": (ECM_PAUSE, {}),
    "pause_ts": (FAN_IN_4, GLOBAL_PAUSE),
    "tcp_ts": (SC / "baseline/dctcp-4.toml", {"run.warmup": 0}),
}
"""Each sampled series and a scenario that records it within 3 ms."""


@pytest.mark.parametrize("series", SERIES)
def test_a_series_switched_off_is_empty_and_changes_nothing_else(series):
    """`observe.<series> = false` empties that table only: the others and the summary are those of the
    run that records it (observation never feeds back into the model)."""
    path, ov = SERIES[series]
    ov = {**ov, "run.duration": "3ms"}
    on = cnsim.run(path, overrides=ov, plots=False)
    off = cnsim.run(path, overrides={**ov, f"observe.{series}": False}, plots=False)
    assert len(getattr(on, series)) > 0 and len(getattr(off, series)) == 0
    assert _strip(on.summary) == _strip(off.summary)
    for name in SERIES:
        if name != series:
            assert getattr(on, name).equals(getattr(off, name)), name


def test_every_series_off_writes_empty_tables_and_allows_a_finer_interval(tmp_path):
    """With every sampled series off nothing is sampled: the files are still written (empty), and the
    engine's bound on samples × series no longer refuses an interval it refuses with the series on."""
    off = {f"observe.{s}": False for s in SERIES}
    ov = {"run.duration": "40ms", "observe.sample_interval": "1ns"}
    with pytest.raises(cnsim.ConfigError) as err:
        cnsim.run(FAN_IN_4, overrides=ov, plots=False)
    assert err.value.problems[0].path == "observe.sample_interval"
    assert re.search(
        r"use an interval of at least \d+(\.\d+)?ns, or record fewer series \(observe\.queue_ts", str(err.value)
    ), str(err.value)
    r = cnsim.run(FAN_IN_4, overrides={**ov, **off, "run.duration": "1ms"}, out=tmp_path / "o", plots=False)
    for name in SERIES:
        assert (tmp_path / "o" / f"{name}.parquet").exists() and len(getattr(r, name)) == 0


def test_api_and_cli_in_a_fresh_process_write_the_same_files(tmp_path):
    """TESTING.md T3: the Python API in this (reused) process and the CLI in a fresh one give byte-identical
    result files for the same scenario and seed (summary.parquet and the JSON files hold wall-clock
    fields and are compared without them)."""
    import subprocess
    import sys

    ov = {"run.duration": "5ms"}
    cnsim.run(CNSIM, seed=3, overrides=ov, out=tmp_path / "api", plots=False)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cnsim",
            "run",
            str(CNSIM),
            "--seed",
            "3",
            "--set",
            "run.duration=5ms",
            "-o",
            str(tmp_path / "cli"),
            "-q",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    files = sorted(p.name for p in (tmp_path / "api").glob("*.parquet"))
    assert files == sorted(p.name for p in (tmp_path / "cli").glob("*.parquet")) and len(files) >= 9
    for name in files:
        if name != "summary.parquet":
            assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    a, b = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("api", "cli"))
    assert _strip(a) == _strip(b)
