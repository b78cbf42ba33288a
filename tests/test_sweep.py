"""Sweeps (T3, T16): expansion and seeds, -j1 vs -j2, a dying worker, interrupt + resume, lock,
summarize, and an external Dask scheduler + worker on loopback."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cnsim.exceptions import ConfigError
from cnsim.experiments import sweep as sw

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "scenarios" / "baseline" / "fan-in-4.toml"
CNSIM = [sys.executable, "-m", "cnsim"]
pytestmark = pytest.mark.skipif(
    __import__("importlib").util.find_spec("cnsim._core") is None, reason="cnsim._core is not built (make build)"
)


def spec(**kw) -> sw.SweepSpec:
    data = {
        "base": str(BASE),
        "replications": 2,
        "set": {"run.duration": "1ms"},
        "parameters": {"traffic.senders.rate": ["2Gbps", "5Gbps"]},
    }
    data.update(kw)
    return sw.SweepSpec.model_validate(data)


def write_sweep(d: Path, **kw) -> Path:
    import tomli_w

    data = {
        "base": str(BASE),
        "replications": 2,
        "set": {"run.duration": "1ms"},
        "parameters": {"traffic.senders.rate": ["2Gbps", "5Gbps"]},
    }
    data.update(kw)
    p = d / "SWEEP.toml"
    p.write_text(tomli_w.dumps(data))
    return p


def result_set(out: Path) -> dict[str, dict]:
    """run id → (summary without wall time, sha256 of every table): what must be identical."""
    res = {}
    for d in sorted((out / "runs").iterdir()):
        if d.name.startswith("."):
            continue
        m = json.loads((d / "manifest.json").read_text())
        summary = json.loads((d / "summary.json").read_text()) if m["status"] == "ok" else None
        if summary:
            summary.pop("wall_s")
        files = {k: v["sha256"] for k, v in m.get("files", {}).items() if k not in ("summary.json", "summary.parquet")}
        res[d.name] = {"status": m["status"], "summary": summary, "files": files}
    return res


# ---- expansion and seeds ---------------------------------------------------------------------


def test_expansion_lists_ranges_values_replications():
    s = spec(
        replications=3,
        parameters={
            "traffic.senders.rate": ["2Gbps", "5Gbps"],
            "defaults.buffer.size": {"from": 50, "to": 150, "step": 50, "unit": "KB"},
            "defaults.link_delay": {"values": ["0.5us", "1us"]},
        },
    )
    assert s.axes()["defaults.buffer.size"] == ["50KB", "100KB", "150KB"]
    assert len(s.points()) == 2 * 3 * 2
    assert s.points()[0] == {
        "traffic.senders.rate": "2Gbps",
        "defaults.buffer.size": "50KB",
        "defaults.link_delay": "0.5us",
    }
    runs = sw.expand(s)
    assert len(runs) == 12 * 3 and len({r.run_id for r in runs}) == 36
    # common random numbers: one seed, replication k at every point
    assert {r.seed for r in runs} == {1}
    for point in s.points():
        mine = [r for r in runs if r.parameters == point]
        assert [r.replication for r in mine] == [0, 1, 2]
        assert [(r.scenario["run"]["seed"], r.scenario["run"]["replication"]) for r in mine] == [(1, 0), (1, 1), (1, 2)]
    # content-addressed and stable
    assert [r.run_id for r in sw.expand(s)] == [r.run_id for r in runs]
    assert sw.expand(spec(seed=7))[0].run_id != sw.expand(spec())[0].run_id


def test_float_range_inclusive():
    r = sw.Range.model_validate({"from": 0.1, "to": 0.3, "step": 0.1})
    assert r.values() == [0.1, 0.2, 0.3]
    assert sw.Range.model_validate({"from": 3, "to": 1, "step": -1}).values() == [3, 2, 1]


@pytest.mark.parametrize(
    "bad, needle",
    [
        ({"replications": 0}, "replications"),
        ({"parameters": {"run.seed": [1, 2]}}, "run.seed"),
        ({"parameters": {"a.b": []}}, "empty list"),
        ({"parameters": {"a.b": {"from": 1, "to": 0, "step": 1}}}, "sign of step"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_bad_spec_is_a_clear_error(tmp_path, bad, needle):
    p = write_sweep(tmp_path, **bad)
    with pytest.raises(ConfigError) as err:
        sw.load_spec(p)
    assert needle in str(err.value)


def test_invalid_point_names_the_point(tmp_path):
    with pytest.raises(ConfigError) as err:
        sw.expand(spec(parameters={"defaults.buffer.size": [100, "100KB"]}))
    assert "defaults.buffer.size=100" in str(err.value) and "unit" in str(err.value)


def test_a_point_over_an_engine_limit_is_refused_before_the_sweep_runs():
    """The observation-size bound lives in the engine: a point that asks for 10^8 samples of 10 queues is
    named at expansion (exit 2 before anything runs), not found failing in every one of its runs."""
    with pytest.raises(ConfigError) as err:
        sw.expand(spec(set={"run.duration": "100ms"}, parameters={"observe.sample_interval": ["10us", "1ns"]}))
    msg = str(err.value)
    assert "observe.sample_interval=1ns" in msg and "10us" not in msg
    # the engine's field (ps) is named as the scenario's, with its value in the scenario's units
    assert "observe.sample_interval: " in msg and "at least 5ns" in msg and "_ps" not in msg


def test_cli_dry_run_and_exit_2(tmp_path, cli):
    p = write_sweep(tmp_path)
    r = cli(["sweep", p, "-o", tmp_path / "out", "--dry-run"])
    assert r.exit_code == 0 and "4 of 4 runs would execute" in r.stdout and "(missing)" in r.stdout
    assert not (tmp_path / "out" / "runs").exists()
    bad = write_sweep(tmp_path, replications=-1)
    r = cli(["sweep", bad, "-o", tmp_path / "out"])
    assert r.exit_code == 2 and "replications" in r.stderr


# ---- running, resume, summarize --------------------------------------------------------------


def test_sweep_in_process_resume_and_summarize(tmp_path, cli):
    p = write_sweep(tmp_path, replications=3)
    out = tmp_path / "out"
    r = cli(["sweep", p, "-o", out])
    assert r.exit_code == 0, r.stderr
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["total"] == 6 and doc["counts"] == {"ok": 6}
    first = result_set(out)
    mtimes = {d.name: (d / "manifest.json").stat().st_mtime_ns for d in (out / "runs").iterdir()}
    r = cli(["sweep", p, "-o", out])
    assert r.exit_code == 0 and "0 executed, 6 already done" in r.stdout
    assert mtimes == {d.name: (d / "manifest.json").stat().st_mtime_ns for d in (out / "runs").iterdir()}
    r = cli(["sweep", p, "-o", out, "--force"])
    assert "6 executed" in r.stdout and result_set(out) == first

    r = cli(["summarize", out])
    assert r.exit_code == 0, r.stderr
    import pandas as pd

    t = pd.read_parquet(out / "summary.parquet")
    assert list(t.columns) == [
        "traffic.senders.rate",
        "traffic.senders.rate [bit/s]",
        "metric",
        "mean",
        "std",
        "ci95",
        "n",
    ]
    assert pd.read_csv(out / "summary.csv").shape == t.shape
    row = t[(t.metric == "frames.generated") & (t["traffic.senders.rate"] == "2Gbps")].iloc[0]
    assert row.n == 3 and row.ci95 >= 0
    runs = pd.read_parquet(out / "runs.parquet")
    vals = runs[runs["param:traffic.senders.rate"] == "2Gbps"]["frames.generated"]
    from scipy import stats

    half = stats.t.ppf(0.975, 2) * vals.std() / 3**0.5
    assert row["mean"] == pytest.approx(vals.mean()) and row.ci95 == pytest.approx(half)
    assert "throughput.aggregate_bps" in set(t.metric) and any(m.startswith("flows[h1>sink]") for m in t.metric)


def test_failing_run_is_recorded_and_the_sweep_goes_on(tmp_path):
    def task(s, runs_dir):
        if s.parameters["traffic.senders.rate"] == "5Gbps" and s.replication == 1:
            raise RuntimeError("boom")
        return sw.execute_run(s, runs_dir)

    out = tmp_path / "out"
    outcome = sw.run_sweep(spec(), out, task=_wrap_errors(task), progress=False)
    assert outcome.exit_code == 1 and outcome.failed == 1
    statuses = sorted(e["status"] for e in outcome.runs)
    assert statuses == ["failed", "ok", "ok", "ok"]
    failed = [e for e in outcome.runs if e["status"] == "failed"][0]
    m = json.loads((out / "runs" / failed["id"] / "manifest.json").read_text())
    assert m["status"] == "failed" and "boom" in m["error"]
    # a rerun retries only the failed run
    outcome = sw.run_sweep(spec(), out, progress=False)
    assert outcome.executed == 1 and outcome.exit_code == 0


def _wrap_errors(task):
    def wrapped(s, runs_dir):
        try:
            return task(s, runs_dir)
        except RuntimeError as exc:
            sw.write_failed(runs_dir, s, f"RuntimeError: {exc}")
            return {"id": s.run_id, "status": "failed", "error": str(exc)}

    return wrapped


def test_interrupted_then_resumed_equals_uninterrupted(tmp_path):
    p = write_sweep(
        tmp_path,
        replications=4,
        set={"run.duration": "20ms"},
        parameters={"traffic.senders.rate": ["1Gbps", "2Gbps", "3Gbps", "4Gbps", "5Gbps"]},
    )
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    subprocess.run([*CNSIM, "sweep", p, "-o", whole, "--no-progress"], check=True, capture_output=True)
    proc = subprocess.Popen(
        [*CNSIM, "sweep", str(p), "-o", str(broken), "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = [d for d in (broken / "runs").glob("*/manifest.json")] if (broken / "runs").exists() else []
        if len(done) >= 3:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = len(list((broken / "runs").glob("*/manifest.json")))
    assert 3 <= partial < 20, "the sweep should have been killed part-way"
    r = subprocess.run([*CNSIM, "sweep", p, "-o", broken, "--no-progress"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"{20 - partial} executed" in r.stdout or f"{20 - partial + 1} executed" in r.stdout
    assert result_set(broken) == result_set(whole)
    assert not list((broken / "runs").glob(".*")), "no temporaries left"


def test_locked_output_directory_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; from pathlib import Path; from cnsim.experiments.sweep import OutputLock\n"
                f"with OutputLock(Path({str(out)!r})):\n    print('locked', flush=True); time.sleep(60)\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        p = write_sweep(tmp_path)
        r = subprocess.run([*CNSIM, "sweep", p, "-o", out], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2
        assert f"output directory locked by PID {holder.pid} on host {socket.gethostname()}" in r.stderr
        assert not (out / "runs").exists()
    finally:
        holder.kill()
        holder.wait()
    r = subprocess.run([*CNSIM, "sweep", p, "-o", out, "--no-progress"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr  # a dead holder's lock is gone


# ---- Dask ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dask_executor():
    ex = sw.DaskExecutor(jobs=2)
    yield ex
    ex.close()


def _crashing_task(s, runs_dir):
    """Kills its worker process for one run (a segfault / OOM stand-in)."""
    if s.parameters.get("traffic.senders.rate") == "5Gbps" and s.replication == 0:
        os._exit(13)
    return sw.execute_run(s, runs_dir)


def test_j1_and_j2_give_identical_results(tmp_path, dask_executor):
    one, two = tmp_path / "j1", tmp_path / "j2"
    s = spec(replications=2, parameters={"traffic.senders.rate": ["2Gbps", "3Gbps", "5Gbps"]})
    assert sw.run_sweep(s, one, jobs=1, progress=False).exit_code == 0
    assert sw.run_sweep(s, two, executor=dask_executor, progress=False).exit_code == 0
    assert result_set(one) == result_set(two) and len(result_set(one)) == 6


def test_worker_killed_mid_sweep_is_recorded_and_sweep_finishes(tmp_path, dask_executor):
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        out = tmp_path / "out"
        s = spec(replications=2, parameters={"traffic.senders.rate": ["2Gbps", "3Gbps", "5Gbps"]})
        outcome = sw.run_sweep(s, out, executor=dask_executor, task=_crashing_task, progress=False)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert outcome.exit_code == 1 and outcome.failed == 1 and outcome.total == 6
    bad = [e for e in outcome.runs if e["status"] == "failed"]
    assert bad[0]["parameters"] == {"traffic.senders.rate": "5Gbps"} and bad[0]["replication"] == 0
    m = json.loads((out / "runs" / bad[0]["id"] / "manifest.json").read_text())
    assert "worker process died" in m["error"]
    assert json.loads((out / "sweep.json").read_text())["counts"] == {"ok": 5, "failed": 1}
    # the cluster is still usable: resume with the real task completes the failed run
    outcome = sw.run_sweep(s, out, executor=dask_executor, progress=False)
    assert outcome.executed == 1 and outcome.exit_code == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.extensive  # starts a Dask scheduler and a worker process
def test_external_scheduler_and_worker_on_loopback(tmp_path):
    dask = str(Path(sys.executable).parent / "dask")
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES="1")
    sched = subprocess.Popen(
        [dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
    )
    worker = subprocess.Popen(
        [dask, "worker", addr, "--nworkers", "1", "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
    )
    try:
        p = write_sweep(tmp_path)
        r = subprocess.run(
            [*CNSIM, "sweep", p, "-o", tmp_path / "out", "--scheduler", addr, "--no-progress"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        assert json.loads((tmp_path / "out" / "sweep.json").read_text())["executor"] == f"Dask scheduler {addr}"
        one = tmp_path / "one"
        subprocess.run([*CNSIM, "sweep", p, "-o", one, "--no-progress"], check=True, capture_output=True)
        assert result_set(tmp_path / "out") == result_set(one)
    finally:
        for proc in (worker, sched):
            proc.terminate()
        for proc in (worker, sched):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_summarize_uses_only_the_current_sweeps_runs(tmp_path, cli):
    """Issue 14: rerunning a sweep with a changed value into the same folder must not mix old points into
    the summary; the old runs are named in a warning."""
    import pandas as pd

    out = tmp_path / "out"
    assert cli(["sweep", write_sweep(tmp_path, replications=1), "-o", out]).exit_code == 0
    p2 = write_sweep(tmp_path, replications=1, parameters={"traffic.senders.rate": ["3Gbps"]})
    r = cli(["sweep", p2, "-o", out])
    assert r.exit_code == 0, r.stderr
    r = cli(["summarize", out])
    assert r.exit_code == 0, r.stderr
    assert "2 run(s) under runs/ are not in the current sweep.json" in r.stderr
    t = pd.read_parquet(out / "summary.parquet")
    assert set(t["traffic.senders.rate"]) == {"3Gbps"}
    assert set(pd.read_parquet(out / "runs.parquet")["param:traffic.senders.rate"]) == {"3Gbps"}
