"""Issue 34 (reliability and docs, round 3): each defect of the issue as its reproduction.

Writers replace only what cnsim wrote (Result.save, -o, --force, symlinks, plot, docs, reproduce);
binned throughput never exceeds the line rate; queue statistics exclude the warm-up; the summary
table adds up; messages name the field, value, address or path in one line, within seconds; piped
output is not wrapped; the project cites nothing it does not contain.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time

import cnsim
import pytest
from cnsim.exceptions import ConfigError
from conftest import ROOT, needs_core

pytestmark = needs_core
MD1 = ROOT / "scenarios/baseline/md1.toml"
SHORT = {"run.duration": "3ms", "run.warmup": "1ms"}
CLI_SHORT = ["--set", "run.duration=3ms", "--set", "run.warmup=1ms", "-q"]
CNSIM = [sys.executable, "-m", "cnsim"]


def run_cli(cli, *args):
    return cli(["run", MD1, *CLI_SHORT, *args])


def one_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text
    return lines[0]


# ---- writers ----------------------------------------------------------------------------------


def test_result_save_keeps_a_users_folder(tmp_path):
    """`r.save(DIR)` onto a folder holding the user's notes replaced it silently: now refused."""
    d = tmp_path / "mine"
    d.mkdir()
    (d / "notes.txt").write_text("precious")
    r = cnsim.run(MD1, seed=1, overrides=SHORT)
    with pytest.raises(ConfigError, match="not a cnsim result") as err:
        r.save(d)
    assert (d / "notes.txt").read_text() == "precious" and sorted(p.name for p in d.iterdir()) == ["notes.txt"]
    assert len(str(err.value).splitlines()) == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary left behind"
    r.save(tmp_path / "res")  # a new folder, then the previous result: both written
    r.save(tmp_path / "res")
    assert (tmp_path / "res" / "manifest.json").exists()


def test_force_never_deletes_what_cnsim_did_not_write(cli, tmp_path):
    """`cnsim run -o DIR --force` removed every file in DIR: a folder that is not a cnsim result is
    refused with --force too, in one line."""
    d = tmp_path / "home"
    (d / "docs").mkdir(parents=True)
    (d / "notes.txt").write_text("precious")
    (d / "docs" / "thesis.tex").write_text("years")
    r = run_cli(cli, "-o", d, "--force")
    assert r.exit_code == 2 and "not a cnsim result" in one_line(r.stderr) and "--force included" in r.stderr
    assert (d / "notes.txt").read_text() == "precious" and (d / "docs" / "thesis.tex").read_text() == "years"
    with pytest.raises(ConfigError):
        cnsim.run(MD1, overrides=SHORT, out=d, force=True)
    assert sorted(p.name for p in d.iterdir()) == ["docs", "notes.txt"]


def test_force_on_a_result_with_user_files_replaces_cnsims_files_and_keeps_the_users(cli, tmp_path):
    d = tmp_path / "res"
    assert run_cli(cli, "-o", d, "--plots").exit_code == 0
    first = json.loads((d / "manifest.json").read_text())
    (d / "notes.txt").write_text("what I saw")
    (d / "plots" / "my-fit.png").write_bytes(b"mine")
    r = run_cli(cli, "-o", d, "--seed", "2")
    assert r.exit_code == 2 and "notes.txt" in r.stderr and "--force" in r.stderr
    assert run_cli(cli, "-o", d, "--seed", "2", "--force").exit_code == 0
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["seed"] == 2 and manifest != first
    assert (d / "notes.txt").read_text() == "what I saw" and (d / "plots" / "my-fit.png").read_bytes() == b"mine"
    # the previous run's plots (not drawn this time) are gone, the new run's files all listed
    assert not (d / "plots" / "queue.png").exists()
    for name in manifest["files"]:
        assert (d / name).is_file(), name
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_symlink_to_a_previous_result_is_followed(cli, tmp_path):
    """`-o LINK`: the result is replaced where the link points and LINK stays a link (it became a
    folder, the target kept the old result)."""
    target, link = tmp_path / "prev", tmp_path / "link"
    assert run_cli(cli, "-o", target).exit_code == 0
    link.symlink_to(target)
    assert run_cli(cli, "-o", link, "--seed", "5").exit_code == 0
    assert link.is_symlink() and json.loads((target / "manifest.json").read_text())["seed"] == 5
    cnsim.run(MD1, seed=6, overrides=SHORT, out=link)
    assert link.is_symlink() and json.loads((target / "manifest.json").read_text())["seed"] == 6
    cnsim.run(MD1, seed=7, overrides=SHORT).save(link)
    assert link.is_symlink() and json.loads((target / "manifest.json").read_text())["seed"] == 7
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "prev"]


def test_a_broken_symlink_is_refused_before_the_simulation(cli, tmp_path, monkeypatch):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "gone")
    ran = []
    monkeypatch.setattr(cnsim.api, "core", lambda: ran.append(1) or pytest.fail("the engine ran"))
    r = run_cli(cli, "-o", link)
    assert r.exit_code == 2 and "symbolic link" in one_line(r.stderr) and "gone" in r.stderr and not ran
    assert link.is_symlink() and not (tmp_path / "gone").exists()


def test_sweep_and_reproduce_refuse_a_broken_link_and_a_foreign_folder(cli, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "gone")
    sweep = ROOT / "sweeps" / "fan-in-4-rates.toml"
    r = cli(["sweep", sweep, "-o", link])
    assert r.exit_code == 2 and "symbolic link" in one_line(r.stderr)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("x")
    r = cli(["reproduce", "seed-000", "--quick", "-o", mine])
    assert r.exit_code == 2 and "notes.txt" in one_line(r.stderr)
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


def test_plot_and_docs_replace_only_their_own_files(cli, tmp_path):
    f = tmp_path / "figure.png"
    f.write_bytes(b"\x89PNG my own figure")
    (tmp_path / "sw").mkdir()
    (tmp_path / "sw" / "sweep.json").write_text("{}")
    r = cli(["plot", tmp_path / "sw", "--x", "a", "--y", "b", "-o", f])
    assert r.exit_code == 2 and "not a plot cnsim drew" in one_line(r.stderr)
    assert f.read_bytes() == b"\x89PNG my own figure"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "scenario.md").write_text("# mine")
    r = cli(["docs", "--out", notes])
    assert r.exit_code == 2 and "did not generate" in one_line(r.stderr)
    assert cli(["docs", "--out", notes, "--force"]).exit_code == 2  # no --force over a user's file
    assert (notes / "scenario.md").read_text() == "# mine"


def test_a_sweep_rerun_with_force_leaves_a_users_folder_in_runs(tmp_path):
    from cnsim.experiments import sweep as sw

    spec = sw.SweepSpec.model_validate({"base": str(MD1), "set": {"run.duration": "2ms"}, "replications": 1})
    out = tmp_path / "out"
    sw.run_sweep(spec, out, ROOT, progress=False)
    (run_dir,) = (out / "runs").iterdir()
    (run_dir / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="notes.txt"):
        sw.run_sweep(spec, out, ROOT, progress=False, force=True)
    assert (run_dir / "notes.txt").read_text() == "mine" and (run_dir / "manifest.json").exists()


# ---- figures that cannot exceed physics ------------------------------------------------------


def test_no_throughput_bin_exceeds_the_line_rate_on_fan_in_4(tmp_path):
    """flow_tp bins of fan-in-4 read 10.08 Gb/s on a 10 Gb/s link (whole frames counted in the bin
    of their start): each frame's bits now go to the bins its reception spans."""
    import pandas as pd

    out = tmp_path / "f4"
    r = cnsim.run(
        ROOT / "scenarios/baseline/fan-in-4.toml", overrides={"run.duration": "30ms", "run.warmup": "5ms"}, out=out
    )
    tp = pd.read_parquet(out / "flow_tp.parquet")
    per_bin = tp.groupby("t_s").bps.sum()
    total = pd.read_parquet(out / "throughput_ts.parquet").set_index("t_s").bps
    assert per_bin.max() <= 10e9 and total.max() <= 10e9
    assert per_bin.iloc[5:-1].min() > 9.99e9, "the bottleneck is busy: every full bin near the line rate"
    assert (total * 1e-4 / 8).sum() == pytest.approx(r.summary["bytes"]["delivered"], abs=1)  # bytes conserved
    assert (per_bin - total.loc[per_bin.index]).abs().max() < 1.0


def test_queue_statistics_exclude_the_warm_up(tmp_path):
    """dctcp-4: slow start fills the 150 KB buffer, then the queue sits near K = 97.5 KB; max_bytes
    reported 150 KB (the warm-up's peak) though queue statistics exclude the warm-up."""
    import pandas as pd

    out = tmp_path / "dc"
    r = cnsim.run(ROOT / "scenarios/baseline/dctcp-4.toml", overrides={"run.duration": "50ms"}, out=out)
    q = pd.read_parquet(out / "queue_ts.parquet")
    warm = r.summary["warmup_s"]
    in_window = q[q.t_s >= warm].groupby(["switch", "port"], observed=True).bytes.max()
    before = q[q.t_s < warm].bytes.max()
    for s in r.summary["queues"]:
        key = (s["switch"], s["port"])
        if key in in_window.index:
            assert in_window[key] <= s["max_bytes"] <= 1.2 * in_window[key], (key, s["max_bytes"], in_window[key])
            assert s["cdf"][-1][1] == s["max_bytes"] and s["p99_bytes"] <= s["max_bytes"]
    assert before > 1.3 * max(s["max_bytes"] for s in r.summary["queues"]), "the warm-up's peak is higher"


def test_the_summary_table_adds_up(tmp_path):
    """The table printed by `cnsim run` left out frames still queued at hosts: its frame rows now add
    up to the frames generated."""
    r = subprocess.run(
        [
            *CNSIM,
            "run",
            str(ROOT / "scenarios/baseline/fan-in-4.toml"),
            "--set",
            "run.duration=5ms",
            "--set",
            "flow_control.mode=global",
            "-o",
            str(tmp_path / "s"),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )  # paused hosts queue CBR frames
    assert r.returncode == 0, r.stderr
    text = r.stdout

    def numbers(label):
        line = next(ln for ln in text.splitlines() if label in ln)
        return [int(x.replace(",", "")) for x in re.findall(r"\d[\d,]*", line.split(label, 1)[1])]

    generated, delivered = numbers("frames generated / delivered")
    dropped, in_flight, queued = numbers("frames dropped / in flight / queued at hosts")
    assert queued > 0 and generated == delivered + dropped + in_flight + queued


# ---- messages ---------------------------------------------------------------------------------


def test_an_unreachable_scheduler_is_one_line_within_seconds(cli, tmp_path):
    t0 = time.monotonic()
    r = cli(["sweep", ROOT / "sweeps/fan-in-4-rates.toml", "-o", tmp_path / "sw", "--scheduler", "tcp://127.0.0.1:9"])
    took = time.monotonic() - t0
    assert r.exit_code == 2 and took < 15, took
    line = one_line(r.stderr)
    assert "--scheduler" in line and "tcp://127.0.0.1:9" in line and "OSError" not in line


BCN = ROOT / "scenarios/seed-000/symmetric-bcn.toml"


@pytest.mark.parametrize(
    "scenario, field, value",
    [
        (BCN, "cm.params.gi", "inf"),
        (BCN, "cm.params.gd", "-inf"),
        (BCN, "cm.params.ru", "nan"),
        (MD1, "traffic.0.rate", "inf"),
        (MD1, "defaults.link_delay", "inf"),
        (MD1, "run.seed", "nan"),
    ],
)
def test_an_infinite_parameter_value_names_the_field(cli, tmp_path, scenario, field, value):
    r = cli(["run", scenario, "--set", f"{field}={value}", "-q", "-o", tmp_path / "o"])
    assert r.exit_code == 2, r.stderr
    line = one_line(r.stderr)
    assert field in line and "IR" not in line and "JSON" not in line and "ir." not in line, line


def test_a_full_disk_names_the_path(tmp_path):
    """Writing the outputs fails (a file-size limit stands in for a full disk): one line naming the
    output folder and the cause, exit 1, no traceback, nothing left behind."""
    out = tmp_path / "res"

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    p = subprocess.run(
        [
            *CNSIM,
            "run",
            str(ROOT / "scenarios/baseline/fan-in-4.toml"),
            "--set",
            "run.duration=20ms",
            "-o",
            str(out),
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=small_files,
    )
    assert p.returncode == 1, p.stderr
    line = one_line(p.stderr)
    assert str(out) in line and "File too large" in line and "Traceback" not in p.stderr
    assert not out.exists() and not [x for x in tmp_path.iterdir() if x.name.startswith(".")]


def test_a_range_with_step_0_is_one_line(cli, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(f'base = "{MD1}"\n[parameters]\n"run.duration" = {{ from = 1, to = 5, step = 0, unit = "ms" }}\n')
    r = cli(["sweep", f, "-o", tmp_path / "o", "--dry-run"])
    assert r.exit_code == 2
    line = one_line(r.stderr)
    assert "run.duration" in line and "step" in line and "0" in line


def test_a_million_run_dry_run_prints_at_once(tmp_path):
    """A 10⁶-run --dry-run printed nothing for over two minutes: it now says how many runs there are
    and lists them as it goes."""
    f = tmp_path / "big.toml"
    f.write_text(
        f'base = "{MD1}"\nreplications = 1000\n[set]\n"run.duration" = "2ms"\n[parameters]\n'
        '"traffic.0.rate" = { from = 0.001, to = 0.999, step = 0.001, unit = "Gbps" }\n'
    )
    p = subprocess.Popen(
        [*CNSIM, "sweep", str(f), "-o", str(tmp_path / "o"), "--dry-run"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        t0 = time.monotonic()
        first = p.stdout.readline()
        second = p.stdout.readline()
        took = time.monotonic() - t0
    finally:
        p.kill()
        p.wait()
    assert first.startswith("999000 runs (999 points × 1000 replications)"), first
    assert "rep 0" in second and "(missing)" in second and took < 20, (second, took)


# ---- output and docs --------------------------------------------------------------------------


def test_piped_output_is_not_wrapped(tmp_path):
    """Piped, output wrapped at 80 columns (paths split across lines, `cnsim model`'s headers cut); an
    inherited COLUMNS describes a terminal, not the pipe."""
    out = tmp_path / ("a-rather-long-folder-name-" * 4) / "result"
    p = subprocess.run(
        [*CNSIM, "run", str(MD1), "--set", "run.duration=2ms", "-o", str(out), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert p.returncode == 0, p.stderr
    assert f"outputs: {out}" in p.stdout.splitlines()
    p = subprocess.run(
        [*CNSIM, "describe", "bcn"], capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "80"}
    )
    assert "model reference §2.1" in p.stdout and max(len(ln) for ln in p.stdout.splitlines()) > 120
    p = subprocess.run(
        [
            *CNSIM,
            "model",
            str(ROOT / "scenarios/seed-000/parking-lot-bcn.toml"),
            "--no-sim",
            "--set",
            "run.duration=5ms",
            "-o",
            str(tmp_path / "m"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "80"},
    )
    header = next(ln for ln in p.stdout.splitlines() if "quantity" in ln)
    assert all(c in header for c in ("bcn_closed_form", "fluid", "max_min", "proportional", "simulation")), header


def test_the_project_cites_nothing_it_does_not_contain():
    pattern = re.compile(r"ALGORITHMS\.md|\.\./shared/|shared/(spec|seeds|workloads|bench)|TESTING\.md|DESIGN\.md")
    bad = []
    for top in ("README.md", "docs", "python", "scenarios"):
        base = ROOT / top
        for p in [base] if base.is_file() else base.rglob("*"):
            if p.is_file() and p.suffix in (".md", ".py", ".toml", ".pyi", ".txt"):
                if pattern.search(p.read_text(encoding="utf-8", errors="replace")):
                    bad.append(str(p.relative_to(ROOT)))
    assert not bad, bad


def test_every_reference_anchor_exists():
    """Links into the model reference land on an anchor it defines."""
    ref = (ROOT / "docs/model-reference.md").read_text()
    defined = set(re.findall(r'id="([a-z0-9-]+)"', ref))
    used = set()
    for p in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]:
        used |= set(re.findall(r"model-reference\.md#([a-z0-9-]+)", p.read_text()))
    assert used and used <= defined, used - defined


def test_no_scenario_says_pfc_is_not_modelled():
    """Three data-center scenarios said per-priority PFC was "not modelled yet" after it was built."""
    stale = [p.name for p in (ROOT / "scenarios").rglob("*.toml") if "not modelled yet" in p.read_text()]
    assert not stale, stale
    for p in (ROOT / "scenarios/datacenter").glob("*.toml"):
        for name in re.findall(r"(fat-tree-[\w-]+\.toml)", p.read_text()):
            assert (p.parent / name).exists(), (p.name, name)
