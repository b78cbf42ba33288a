"""Issue 33: the plain forms of `cnsim run` run without typer (cnsim.cli.quickrun); every other form goes
to the typer app. The two must not differ in what they accept, print, write or exit with."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cnsim.cli import quickrun
from conftest import ROOT, needs_core

MD1 = ROOT / "scenarios/baseline/md1.toml"

TYPER_ROUTE = "import sys; sys.argv = ['cnsim'] + sys.argv[1:]; from cnsim.cli.main import main; main()"
"""`cnsim ARGS` through the typer app whatever ARGS are (as before quickrun)."""


@pytest.mark.parametrize(
    "args,expected",
    [
        (["s.toml"], {"scenario": Path("s.toml"), "sets": []}),
        (
            ["-q", "s.toml", "--seed", "7", "--set", "a=1", "-o", "out", "--set", "b=2", "--json"],
            {"scenario": Path("s.toml"), "sets": ["a=1", "b=2"], "quiet": True, "seed": 7, "out": Path("out")}
            | {"as_json": True},
        ),
        (
            ["s.toml", "--out", "o", "--quiet", "--no-progress", "--force", "--plots"],
            {"scenario": Path("s.toml"), "sets": [], "out": Path("o"), "quiet": True}
            | {"no_progress": True, "force": True, "plots": True},
        ),
    ],
)
def test_plain_forms_are_parsed(args, expected):
    assert quickrun.plain_run(args) == expected


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--help"],
        ["s.toml", "-h"],
        ["s.toml", "t.toml"],
        ["s.toml", "--out=o"],
        ["s.toml", "-oo"],
        ["s.toml", "-qo", "o"],
        ["s.toml", "-o"],
        ["s.toml", "-o", "o", "-o", "p"],
        ["s.toml", "--seed", "abc"],
        ["s.toml", "--seed", "-1"],
        ["s.toml", "--seed", "1", "--seed", "2"],
        ["s.toml", "--seed", "²"],
        ["s.toml", "--set", "--quiet"],
        ["s.toml", "--bogus"],
        ["s.toml", "--"],
        ["-", "-q"],
        [""],
    ],
)
def test_other_forms_go_to_typer(args):
    assert quickrun.plain_run(args) is None


def test_plain_options_are_the_run_commands():
    """quickrun reads exactly `cnsim run`'s options, each of the same kind (flag, value, repeatable value)
    and for the same parameter: an option added, renamed or changed in cnsim.cli.main must be added or
    changed here too."""
    import typer.main
    from cnsim.cli.main import app

    run = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    options = {name: p for p in run.params if type(p).__name__ == "TyperOption" for name in p.opts}
    assert set(options) == set(quickrun.VALUE_OPTIONS) | set(quickrun.FLAGS)
    keyword = {"set_": "sets"}
    for option, p in options.items():
        if p.is_flag:
            assert quickrun.FLAGS[option] == p.name
        else:
            assert quickrun.VALUE_OPTIONS[option] == keyword.get(p.name, p.name)
            assert p.multiple == (option == "--set")
    assert [p.name for p in run.params if type(p).__name__ == "TyperArgument"] == ["scenario"]


def _both(args: list[str], cwd: Path) -> list[subprocess.CompletedProcess[str]]:
    routes = ([sys.executable, "-m", "cnsim"], [sys.executable, "-c", TYPER_ROUTE])
    return [subprocess.run([*r, *args], capture_output=True, text=True, timeout=120, cwd=cwd) for r in routes]


@needs_core
@pytest.mark.parametrize(
    "args",
    [
        ["run", "{t}/nope.toml"],
        ["run", "{t}/broken.toml", "-q"],
        ["run", str(MD1), "--set", "run.duration=1e12s", "-o", "{t}/o"],
        ["run", str(MD1), "--set", "run.duration", "-q"],
        ["run", str(MD1), "-q", "-o", "{t}/notes.txt"],
    ],
    ids=["missing", "broken", "too-long", "bad-set", "out-is-a-file"],
)
def test_bad_input_reads_the_same_on_both_routes(tmp_path, args):
    (tmp_path / "broken.toml").write_text("run = [\n")
    (tmp_path / "notes.txt").write_text("mine\n")
    args = [a.replace("{t}", str(tmp_path)) for a in args]
    assert quickrun.plain_run(args[1:]) is not None  # the first route is quickrun's
    quick, typed = _both(args, tmp_path)
    assert quick.returncode == typed.returncode == 2, quick.stderr + typed.stderr
    assert (quick.stdout, quick.stderr) == (typed.stdout, typed.stderr)
    assert "Traceback" not in quick.stderr and (tmp_path / "notes.txt").read_text() == "mine\n"


@needs_core
def test_a_run_writes_and_prints_the_same_on_both_routes(tmp_path):
    """The same folder of files (contents apart from timings) and the same summary on stdout."""
    outs = [tmp_path / "quick", tmp_path / "typer"]
    routes = ([sys.executable, "-m", "cnsim"], [sys.executable, "-c", TYPER_ROUTE])
    printed = []
    for route, out in zip(routes, outs):
        args = ["run", str(MD1), "--set", "run.duration=5ms", "-o", str(out), "--json"]
        r = subprocess.run([*route, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        printed.append({k: v for k, v in json.loads(r.stdout).items() if k != "wall_s"})
    assert printed[0] == printed[1]
    names = [sorted(p.relative_to(o).as_posix() for p in o.rglob("*")) for o in outs]
    assert names[0] == names[1]
    for name in names[0]:
        if name.endswith(".parquet") and name != "summary.parquet":  # summary.parquet holds wall_s
            assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    assert (outs[0] / "resolved-config.toml").read_text() == (outs[1] / "resolved-config.toml").read_text()


@needs_core
def test_a_plain_run_loads_neither_typer_nor_rich(tmp_path):
    code = (
        "import atexit, sys; atexit.register(lambda: print(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('typer', 'click', 'rich')))); "
        f"sys.argv = ['cnsim', 'run', {str(MD1)!r}, '--set', 'run.duration=5ms', '-q', '-o', {str(tmp_path / 'o')!r}]; "
        "from cnsim.entry import main; main()"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr
