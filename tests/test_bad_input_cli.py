"""Issue 14: no traceback reaches a user from any command. Bad files, bad command lines, bad sweep files and
bad result folders give one line naming what is wrong and exit 2; an unexpected error gives one line plus a
crash log, an operating-system error one line naming the path (exit 1); Ctrl-C in a parallel sweep prints
one line. (The field-by-field validation cases are in test_bad_input.py, the output-path ones in
test_user_data.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from conftest import FOREGROUND, ROOT, needs_core

MD1 = ROOT / "scenarios/baseline/md1.toml"
FAN100 = ROOT / "scenarios/baseline/fan-in-100.toml"


def _files(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "broken.toml").write_text("run = [\n")
    (tmp_path / "unknown-param.toml").write_text(
        f'base = "{MD1}"\nreplications = 1\n[parameters]\n"traffic.nosuch.rate" = ["1Gbps"]\n'
    )
    (tmp_path / "empty-values.toml").write_text(
        f'base = "{MD1}"\nreplications = 1\n[parameters]\n"run.duration" = []\n'
    )
    (tmp_path / "no-base.toml").write_text('base = "nope.toml"\nreplications = 1\n')
    (tmp_path / "zero-reps.toml").write_text(f'base = "{MD1}"\nreplications = 0\n')
    (tmp_path / "folder").mkdir()


# (id, argv with {t} = tmp_path, exit status, fragment of stderr)
CASES = [
    ("missing-scenario", ["run", "{t}/nope.toml"], 2, "nope.toml: cannot read file: No such file or directory"),
    ("directory-as-scenario", ["run", "{t}/folder"], 2, "cannot read file: Is a directory"),
    ("text-file-as-scenario", ["run", "{t}/notes.txt"], 2, "notes.txt: TOML syntax error"),
    ("malformed-toml", ["run", "{t}/broken.toml"], 2, "broken.toml: TOML syntax error"),
    ("seed-not-a-number", ["run", str(MD1), "--seed", "abc"], 2, "Invalid value for '--seed'"),
    ("unknown-option", ["run", str(MD1), "--bogus"], 2, "No such option: --bogus"),
    ("jobs-on-run", ["run", str(MD1), "-j", "2"], 2, "No such option: -j"),
    ("validate-missing-file-named-once", ["validate", "{t}/nope.toml"], 2, "nope.toml: cannot read file"),
    (
        "sweep-unknown-parameter",
        ["sweep", "{t}/unknown-param.toml", "-o", "{t}/o1"],
        2,
        "--set traffic.nosuch.rate: no traffic element named 'nosuch'",
    ),
    ("sweep-empty-values", ["sweep", "{t}/empty-values.toml", "-o", "{t}/o2"], 2, "run.duration: empty list of values"),
    ("sweep-missing-base", ["sweep", "{t}/no-base.toml", "-o", "{t}/o3"], 2, "base: scenario file not found"),
    ("sweep-zero-replications", ["sweep", "{t}/zero-reps.toml", "-o", "{t}/o4"], 2, "replications"),
    ("sweep-without-out", ["sweep", "{t}/no-base.toml"], 2, "Missing option '--out'"),
    ("sweep-missing-spec", ["sweep", "{t}/nope.toml", "-o", "{t}/o5"], 2, "nope.toml"),
    ("report-of-a-foreign-folder", ["report", "{t}/folder"], 2, "not a result folder"),
    ("summarize-a-foreign-folder", ["summarize", "{t}/folder"], 2, "not a sweep directory"),
    ("plot-a-foreign-folder", ["plot", "{t}/folder", "--x", "a", "--y", "b"], 2, "not a sweep directory"),
    ("describe-unknown-topic", ["describe", "nosuch"], 2, "topic: unknown; known: run"),
    ("model-missing-file", ["model", "{t}/nope.toml"], 2, "nope.toml: cannot read file"),
    ("reproduce-unknown-study", ["reproduce", "seed-042", "-o", "{t}/r"], 2, "study: unknown"),
    (
        "duration-beyond-u64",
        ["run", str(MD1), "--set", "run.duration=1e12s", "-o", "{t}/o6"],
        2,
        "run.duration: too large",
    ),
    ("unknown-command", ["frobnicate"], 2, "No such command"),
]


@needs_core
@pytest.mark.parametrize("argv,code,fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_command_lines_are_one_line_and_exit_2(cli, tmp_path, argv, code, fragment):
    _files(tmp_path)
    r = cli([a.replace("{t}", str(tmp_path)) for a in argv])
    text = r.stderr + r.stdout
    assert r.exit_code == code, text
    assert fragment in text, text
    assert "Traceback" not in text
    if argv[0] == "validate":
        assert text.count("nope.toml") == 1, text


@needs_core
def test_an_unexpected_error_is_one_line_and_a_crash_log(cli, tmp_path, monkeypatch):
    import cnsim.api

    def boom(*a, **k):
        raise RuntimeError("boom in the engine glue")

    monkeypatch.setattr(cnsim.api, "run", boom)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    r = cli(["run", MD1, "--set", "run.duration=5ms", "-q", "-o", tmp_path / "out"])
    assert r.exit_code == 1
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: RuntimeError: boom in the engine glue (details in ")
    logs = list((tmp_path / "state" / "cnsim").glob("crash-*.log"))
    assert len(logs) == 1
    text = logs[0].read_text()
    assert "Traceback" in text and "boom in the engine glue" in text and "command:" in text


@needs_core
def test_an_os_error_names_the_path(cli, tmp_path, monkeypatch):
    import cnsim.api

    def full(*a, **k):
        raise OSError(28, "No space left on device", str(tmp_path / "out" / "queue_ts.parquet"))

    monkeypatch.setattr(cnsim.api, "run", full)
    r = cli(["run", MD1, "--set", "run.duration=5ms", "-q", "-o", tmp_path / "out"])
    assert r.exit_code == 1
    assert r.stderr.strip() == f"error: No space left on device: {tmp_path / 'out' / 'queue_ts.parquet'}"


@needs_core
@pytest.mark.extensive  # a long fan-in-100 sweep; make test interrupts the cluster's start-up (test_interrupt.py)
def test_ctrl_c_in_a_parallel_sweep_prints_one_line(tmp_path):
    """SIGINT to the whole process group, as a terminal's Ctrl-C does: the Dask workers ignore it, the
    sweep stops, keeps its finished runs and says so in one line (issue 14: it printed ≈ 65 lines)."""
    spec = tmp_path / "long.toml"
    # long enough that the sweep cannot finish in the second between its first result and the signal
    # (with a faster engine 20 runs of 2 s did, and the sweep then exited 0)
    spec.write_text(
        f'base = "{FAN100}"\nreplications = 40\nset = {{ "run.duration" = "4s" }}\n'
        '[parameters]\n"traffic.senders.rate" = ["0.1Gbps", "0.2Gbps"]\n'
    )
    out = tmp_path / "out"
    p = subprocess.Popen(
        [*FOREGROUND, "sweep", str(spec), "-o", str(out), "-j", "2", "--no-progress"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=tmp_path,
    )
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60 and not ((out / "runs").is_dir() and any((out / "runs").iterdir())):
        time.sleep(0.2)
    time.sleep(1.0)
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=90)
    assert p.returncode == 130, err
    lines = [x for x in err.splitlines() if x.strip()]
    assert lines == ["interrupted; finished runs are kept — rerun the same command to resume"], err


def test_flags_are_plain_in_help(cli):
    """Issue 14: boolean options read as flags (`--force`), never `<bool>`; literal brackets survive."""
    for cmd in (["run", "--help"], ["sweep", "--help"], ["reproduce", "--help"], ["model", "--help"]):
        r = cli(cmd)
        assert r.exit_code == 0 and "<bool>" not in r.stdout, cmd
    assert "[cm]" in cli(["model", "--help"]).stdout


def test_summaries_of_single_replications_raise_no_numpy_warning():
    """Issue 14: a point with one run (std undefined) used to print numpy RuntimeWarnings on stderr."""
    import warnings

    import pandas as pd
    from cnsim.experiments.sweep_summary import summarize_frame

    runs = pd.DataFrame(
        [
            {"run_id": "a", "status": "ok", "param:x": "1Gbps", "m": 1.0},
            {"run_id": "b", "status": "ok", "param:x": "2Gbps", "m": float("nan")},
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = summarize_frame(runs)
    assert list(t["n"]) == [1] and t["std"].isna().all()


@pytest.mark.parametrize("where", ["cwd", "file", "foreign"])
def test_sweep_output_must_be_new_empty_or_a_sweep(tmp_path, monkeypatch, where):
    """`cnsim sweep -o .` (or a file, or a folder of other files) is refused with exit 2 before any run,
    and nothing in it is touched."""
    from cnsim.cli.main import app
    from typer.testing import CliRunner

    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "SWEEP.toml"
    spec.write_text(
        f'base = "{ROOT / "scenarios/baseline/fan-in-4.toml"}"\nreplications = 1\n[set]\n"run.duration" = "1ms"\n'
    )
    (tmp_path / "notes.txt").write_text("mine")
    out = {"cwd": ".", "file": "notes.txt", "foreign": str(tmp_path)}[where]
    if where == "foreign":
        out = str(tmp_path / "data")
        (tmp_path / "data").mkdir()
        (tmp_path / "data" / "x.csv").write_text("1")
    r = CliRunner().invoke(app, ["sweep", str(spec), "-o", out, "--no-progress"])
    assert r.exit_code == 2, r.output
    assert "--out" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "runs").exists() and (tmp_path / "notes.txt").read_text() == "mine"
