"""T18 — front-end contract: --help for every command, schema, describe, list, docs, validate."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, SCENARIOS

FAN_IN_4 = ROOT / "scenarios" / "baseline" / "fan-in-4.toml"
COMMANDS = ["run", "validate", "describe", "list", "schema", "docs", "demo", "selftest"]


@pytest.mark.parametrize("command", [None] + COMMANDS)
def test_help(cli, command):
    r = cli(([command] if command else []) + ["--help"])
    assert r.exit_code == 0 and "Usage" in r.stdout


def test_python_dash_m():
    r = subprocess.run([sys.executable, "-m", "cnsim", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "validate" in r.stdout


def test_schema_is_json_schema(cli):
    r = cli(["schema"])
    schema = json.loads(r.stdout)
    assert schema["additionalProperties"] is False
    assert {"run", "topology", "traffic", "cm", "flow_control", "hotspot", "observe"} <= set(schema["properties"])


@pytest.mark.parametrize("topic", [None, "run", "traffic", "flow_control", "cnsim_1hop", "none", "traffic.cbr"])
def test_describe(cli, topic):
    r = cli(["describe"] + ([topic] if topic else []))
    assert r.exit_code == 0, r.output
    if topic == "flow_control":
        assert "65535" in r.stdout and "high" in r.stdout


def test_describe_unknown(cli):
    r = cli(["describe", "bogus"])
    assert r.exit_code == 2 and "topic: unknown" in r.stderr


def test_list(cli):
    r = cli(["list"])
    assert r.exit_code == 0
    for word in ("none", "cnsim_1hop", "og_multistage", "fan-in-4.toml"):
        assert word in r.stdout


def test_validate_all_shipped(cli):
    r = cli(["validate", *SCENARIOS])
    assert r.exit_code == 0 and r.stdout.count("ok ") == len(SCENARIOS)


def test_docs_generates_reference(cli, tmp_path):
    r = cli(["docs", "--out", tmp_path])
    assert r.exit_code == 0
    text = (tmp_path / "scenario.md").read_text()
    assert "## Units" in text and "`cnsim_1hop`" in text and "| `duration` | time | '100ms' |" in text


def test_committed_reference_is_current():
    from cnsim.scenario.describe import reference_markdown

    assert (ROOT / "docs/reference/scenario.md").read_text() == reference_markdown(), (
        "docs/reference/scenario.md is stale: run `cnsim docs --out docs/reference`"
    )


def test_cli_import_leaves_heavy_modules_for_later():
    """`import cnsim.cli.main` (every command's start) loads no table, plotting or console library and no
    scheme module: a short run pays only for what it uses."""
    code = (
        "import sys, cnsim.cli.main; print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pyarrow', 'numpy', 'pandas', 'polars', 'matplotlib', 'scipy', 'rich') "
        "or m.startswith('cnsim.schemes.'))))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == []


def test_import_cnsim_imports_nothing_and_keeps_its_names():
    """`import cnsim` runs before the `cnsim` command sets the collector's pace (cnsim.entry): it imports
    none of cnsim's modules, typing or dataclasses; its exceptions and submodules come on first use."""
    code = (
        "import sys; before = set(sys.modules); import cnsim; "
        "print(' '.join(sorted(set(sys.modules) - before - {'cnsim'}))); "
        "from cnsim import ConfigError; import cnsim.exceptions as e; "
        "print(ConfigError is e.ConfigError is cnsim.ConfigError, cnsim.exceptions is e, cnsim.RunInterrupted)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["", "True True <class 'cnsim.exceptions.RunInterrupted'>"]
    attr = subprocess.run(
        [sys.executable, "-c", "import cnsim; print(cnsim.exceptions.CnsimError.__name__)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert attr.stdout.strip() == "CnsimError", attr.stderr


def test_console_entry_exit_status_and_atexit():
    """main() ends the process without the interpreter's teardown but keeps what an exit does: the
    status, flushed output, atexit handlers."""
    code = (
        "import atexit, sys; atexit.register(lambda: print('atexit ran')); sys.argv = ['cnsim'] + sys.argv[1:]; "
        "from cnsim.cli.main import main; main()"
    )
    ok = subprocess.run([sys.executable, "-c", code, "--version"], capture_output=True, text=True, timeout=60)
    lines = ok.stdout.splitlines()
    assert ok.returncode == 0 and lines[0].startswith("cnsim ") and lines[1:] == ["atexit ran"]
    bad = subprocess.run(
        [sys.executable, "-c", code, "validate", str(ROOT / "no-such-file.toml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "no-such-file.toml" in bad.stderr and "Traceback" not in bad.stderr
    assert "atexit ran" in bad.stdout


def test_disabled_pydantic_plugins_skip_their_discovery():
    """With plugins disabled (the CLI's default), a run does not import importlib.metadata for
    pydantic's plugin loader; the loader still answers "no plugins" and any other name comes from
    the real module. With plugins enabled (`PYDANTIC_DISABLE_PLUGINS=` empty) the real loader is used."""
    code = (
        "import sys, os; os.environ.setdefault('PYDANTIC_DISABLE_PLUGINS', '__all__'); import cnsim.cli.main as c; "
        "c._no_plugin_discovery(); from cnsim.compile.loader import load_scenario; "
        f"load_scenario({str(ROOT / 'scenarios/baseline/fan-in-4.toml')!r}); "
        "import pydantic.plugin._loader as L; print('importlib.metadata' in sys.modules, tuple(L.get_plugins()), "
        "L.PYDANTIC_ENTRY_POINT_GROUP)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "()", "pydantic"]
    on = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYDANTIC_DISABLE_PLUGINS": ""},
    )
    assert on.returncode == 0, on.stderr
    assert on.stdout.split()[1:] == ["()", "pydantic"]


def _reporter(duration_s, terminal, **kw):
    import io

    from cnsim.cli.main import ProgressReporter
    from rich.console import Console

    sink = io.StringIO()
    console = Console(file=sink, force_terminal=terminal, width=120)
    return ProgressReporter(duration_s, True, console=console, **kw), sink


def test_progress_lines_off_a_terminal_then_the_write_phase(tmp_path, monkeypatch):
    """Off a terminal a run prints plain progress lines over simulated time, then one line when its
    outputs are written (the engine calls `writing` after the last step, before the tables). The
    engine reports back every `stream.PROGRESS_S` of wall time: 0 here, after every step."""
    import cnsim
    from cnsim.results import stream

    monkeypatch.setattr(stream, "PROGRESS_S", 0.0)
    rep, sink = _reporter(0.005, terminal=False, after_s=0.0, every_s=0.0)
    cnsim.run(FAN_IN_4, overrides={"run.duration": "5ms"}, out=tmp_path / "r", progress=rep)
    rep.close()
    lines = sink.getvalue().splitlines()
    assert len(lines) >= 3 and all(ln.startswith("simulating: ") and " / 5.0 ms (" in ln for ln in lines[:-1])
    assert lines[-2].startswith("simulating: 5.0 / 5.0 ms (100 %)")
    assert lines[-1].startswith("writing outputs (simulation took ")
    assert "\x1b" not in sink.getvalue()  # no terminal control codes in a log


def test_progress_stays_silent_for_a_short_run_and_spaces_its_lines(tmp_path):
    """Nothing before `after_s` (a short run prints nothing), and off a terminal at most one line per
    `every_s`."""
    import cnsim

    quiet, sink = _reporter(0.005, terminal=False)  # the CLI's 1.5 s
    cnsim.run(FAN_IN_4, overrides={"run.duration": "5ms"}, out=tmp_path / "a", progress=quiet)
    assert sink.getvalue() == ""
    spaced, sink = _reporter(0.005, terminal=False, after_s=0.0, every_s=3600.0)
    for t in (0.001, 0.002, 0.003):
        spaced(t)
    spaced.writing()
    assert sink.getvalue().splitlines()[0].startswith("simulating: 1.0 / 5.0 ms (20 %)")
    assert len(sink.getvalue().splitlines()) == 2


def test_progress_bar_on_a_terminal_names_the_write_phase():
    rep, _ = _reporter(0.005, terminal=True, after_s=0.0)
    rep(0.002)
    assert rep.bar is not None and rep.bar.tasks[0].description == "simulating"
    rep.writing()
    task = rep.bar.tasks[0]
    assert task.description == "writing outputs" and task.completed == task.total
    rep.close()


def test_run_no_progress_keeps_the_summary(cli, tmp_path):
    r = cli(["run", FAN_IN_4, "--set", "run.duration=1ms", "-o", tmp_path / "o", "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "outputs:" in r.stdout and (tmp_path / "o" / "summary.json").exists()
