"""Never lose a user's data (issue 14): where `cnsim run -o` may write, checked before the run;
temporaries; file modes; names from any file name; clear errors for bad --set paths; --version, -h."""

import os
import stat

import pytest

import cnsim
from cnsim.exceptions import ConfigError

from conftest import ROOT, needs_core

pytestmark = needs_core
MD1 = ROOT / "scenarios/baseline/md1.toml"
SHORT = ["--set", "run.duration=2ms", "-q"]


def run(cli, *args):
    return cli(["run", MD1, *SHORT, *args])


def test_a_file_is_never_replaced(cli, tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("hi")
    r = run(cli, "-o", f)
    assert r.exit_code == 2 and "is a file" in r.stderr
    assert f.read_text() == "hi"


def test_the_current_directory_is_refused_and_nothing_is_left_behind(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("x")
    for target in (".", tmp_path.parent):
        r = run(cli, "-o", target)
        assert r.exit_code == 2 and "current directory" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_a_foreign_folder_needs_force(cli, tmp_path):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "thesis.tex").write_text("years of work")
    r = run(cli, "-o", d)
    assert r.exit_code == 2 and "--force" in r.stderr
    assert (d / "thesis.tex").read_text() == "years of work"
    r = run(cli, "-o", d, "--force")
    assert r.exit_code == 0 and (d / "manifest.json").exists()


def test_a_previous_result_is_replaced(cli, tmp_path):
    d = tmp_path / "res"
    assert run(cli, "-o", d).exit_code == 0
    first = (d / "manifest.json").read_text()
    assert run(cli, "-o", d, "--seed", "2").exit_code == 0
    assert (d / "manifest.json").read_text() != first


def test_a_sweep_folder_and_the_scenario_file_are_refused(cli, tmp_path):
    sw = tmp_path / "sweep"
    sw.mkdir()
    (sw / "sweep.json").write_text("{}")
    r = run(cli, "-o", sw)
    assert r.exit_code == 2 and "sweep folder" in r.stderr
    sc = tmp_path / "incast8.toml"
    sc.write_text(MD1.read_text())
    r = cli(["run", sc, *SHORT, "-o", sc])
    assert r.exit_code == 2 and sc.read_text() == MD1.read_text()


def test_an_unusable_location_fails_before_the_run(cli, tmp_path, monkeypatch):
    (tmp_path / "f2").write_text("a file")
    ran = []
    monkeypatch.setattr(cnsim.api, "core", lambda: ran.append(1) or pytest.fail("the engine ran"))
    r = cli(["run", MD1, *SHORT, "-o", tmp_path / "f2" / "out"])
    assert r.exit_code == 2 and "is a file" in r.stderr and not ran


def test_the_api_refuses_a_foreign_folder_too(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    (d / "x.csv").write_text("1,2")
    with pytest.raises(ConfigError, match="out"):
        cnsim.run(MD1, overrides={"run.duration": "2ms"}, out=d)
    assert (d / "x.csv").exists()


def test_stale_temporaries_of_dead_processes_are_removed(cli, tmp_path):
    stale = tmp_path / ".res.tmp-999999999-abcd"
    stale.mkdir()
    (stale / "half.parquet").write_text("")
    assert run(cli, "-o", tmp_path / "res").exit_code == 0
    assert not stale.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_outputs_follow_the_umask(cli, tmp_path):
    old = os.umask(0o022)
    try:
        assert run(cli, "-o", tmp_path / "res").exit_code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "res").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "res" / "summary.json").stat().st_mode) == 0o644


@pytest.mark.parametrize("fname", ["8hosts.toml", "my incast.toml", "ünïcode-näme.toml"])
def test_any_file_name_gives_a_valid_run_name(cli, tmp_path, fname):
    f = tmp_path / fname
    f.write_text(MD1.read_text())
    r = cli(["validate", f])
    assert r.exit_code == 0, r.stderr
    assert cnsim.api.resolve(f).run.name[0] in "_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def test_a_bad_set_path_names_what_exists(cli, tmp_path):
    r = run(cli, "--set", "traffic.nosuch.rate=1Gbps", "-o", tmp_path / "x")
    assert r.exit_code == 2 and "poisson" in r.stderr and "discriminator" not in r.stderr


def test_version_and_short_help(cli):
    r = cli(["--version"])
    assert r.exit_code == 0 and r.stdout.startswith("cnsim ")
    r = cli(["-h"])
    assert r.exit_code == 0 and "Usage" in r.stdout


def test_cnsim_demo_does_not_share_make_demos_folder():
    import inspect

    from cnsim import cli as cli_mod

    default = inspect.signature(cli_mod.demo).parameters["out"].default.default
    assert str(default) != "results/demo"


def test_getting_started_reads_files_cnsim_demo_writes():
    import inspect
    import re

    from cnsim import cli as cli_mod

    default = str(inspect.signature(cli_mod.demo).parameters["out"].default.default)
    text = (ROOT / "docs/getting-started.md").read_text()
    paths = re.findall(r'read_parquet\("([^"]+)"\)', text)
    assert paths and all(p.startswith(default + "/") for p in paths), (default, paths)


@pytest.mark.parametrize("field, value", [("run.duration", "1e12s"), ("traffic.0.rate", "100000000Tbps"),
                                          ("defaults.buffer.size", "1e30B")])
def test_values_beyond_the_engines_range_fail_validation_with_their_field(cli, tmp_path, field, value):
    """validate = run: a quantity the engine cannot hold (u64 of ps, bytes, bit/s) is rejected by
    `cnsim validate` naming the field, not by the engine after the fact."""
    f = tmp_path / "big.toml"
    f.write_text(MD1.read_text())
    r = cli(["validate", f, ])
    assert r.exit_code == 0
    r = cli(["run", f, "--set", f"{field}={value}", "-q", "-o", tmp_path / "out"])
    assert r.exit_code == 2 and field in r.stderr and "64-bit" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_empty_fct_statistics_are_null_not_zero(tmp_path):
    """Issue 14: a run without a completed transfer has no FCT statistics (null / NaN), not 0.0, so a
    mean over runs is not pulled down."""
    import math

    import pandas as pd

    res = cnsim.run(MD1, overrides={"run.duration": "2ms"}, out=tmp_path / "r")
    fct = res.summary["fct"]
    assert fct["count"] == 0
    assert all(fct[k] is None for k in ("min_us", "mean_us", "max_us", "std_us"))
    row = pd.read_parquet(tmp_path / "r" / "summary.parquet").iloc[0]
    assert math.isnan(row["fct.mean_us"])
    from cnsim.sweep import flat_metrics

    assert "fct.mean_us" not in flat_metrics(res.summary) and flat_metrics(res.summary)["fct.count"] == 0
