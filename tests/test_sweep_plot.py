"""Sweeps end in a figure (issue 14): parameter labels with units get numeric SI columns, `cnsim plot`
draws mean ± 95 % CI on numeric axes, bad --x/--y name what exists, the sweep report embeds figures."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import tomli_w
from cnsim.report import sweep_plot
from conftest import ROOT, needs_core

BASE = ROOT / "scenarios" / "baseline" / "fan-in-4.toml"


def test_quantity_labels_become_si_values():
    assert sweep_plot.si_value("100Mbps") == (1e8, "bit/s")
    assert sweep_plot.si_value("5ms") == pytest.approx((0.005, "s"))
    assert sweep_plot.si_value("150KB") == (150000.0, "B")
    assert sweep_plot.si_value("fast") is None and sweep_plot.si_value(3) is None
    t = pd.DataFrame({"rate": ["1Gbps", "2Gbps", "5Gbps"], "metric": "m", "mean": [1, 2, 3]})
    t = sweep_plot.add_si_columns(t, ["rate"])
    assert list(t.columns[:2]) == ["rate", "rate [bit/s]"] and list(t["rate [bit/s]"]) == [1e9, 2e9, 5e9]
    mixed = sweep_plot.add_si_columns(pd.DataFrame({"p": ["1Gbps", "5ms"]}), ["p"])
    assert list(mixed.columns) == ["p"]  # different kinds: no SI column
    assert sweep_plot.scale_for([1e9, 5e9], "bit/s") == (1e9, "Gb/s")
    assert sweep_plot.scale_for([0.002], "s") == (1e-3, "ms")
    assert sweep_plot.metric_unit("throughput.aggregate_bps") == "bit/s"


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    from cnsim.experiments import sweep as sw

    d = tmp_path_factory.mktemp("plot")
    spec = d / "SWEEP.toml"
    spec.write_text(
        tomli_w.dumps(
            {
                "base": str(BASE),
                "replications": 2,
                "set": {"run.duration": "1ms"},
                "parameters": {"traffic.senders.rate": ["1Gbps", "2Gbps", "5Gbps"]},
            }
        )
    )
    s, root = sw.load_spec(spec)
    sw.run_sweep(s, d / "out", root, progress=False)
    return d / "out"


@needs_core
def test_summary_has_numeric_parameter_columns(sweep_dir):
    from cnsim.experiments.sweep_summary import summarize

    _, _, t = summarize(sweep_dir)
    assert "traffic.senders.rate [bit/s]" in t.columns
    row = t[(t["metric"] == "throughput.aggregate_bps") & (t["traffic.senders.rate [bit/s]"] == 5e9)]
    assert len(row) == 1 and row["traffic.senders.rate"].iloc[0] == "5Gbps"


@needs_core
def test_cnsim_plot_draws_numeric_axes(cli, sweep_dir, tmp_path):
    r = cli(["plot", sweep_dir, "--x", "traffic.senders.rate", "--y", "throughput.aggregate_bps"])
    assert r.exit_code == 0, r.stderr
    png = sweep_dir / "plots" / "throughput.aggregate_bps-vs-traffic.senders.rate.png"
    assert png.read_bytes()[:4] == b"\x89PNG"
    ax = sweep_plot.draw(
        __import__("cnsim.experiments.sweep_summary", fromlist=["x"]).summarize(sweep_dir)[2],
        "traffic.senders.rate",
        "throughput.aggregate_bps",
    )
    xs = list(ax.lines[0].get_xdata())
    assert xs == [1.0, 2.0, 5.0] and "Gb/s" in ax.get_xlabel() and "Gb/s" in ax.get_ylabel()
    out = tmp_path / "mine.png"
    out.write_text("keep me")
    r = cli(["plot", sweep_dir, "--x", "traffic.senders.rate", "--y", "frames.dropped", "-o", out])
    assert r.exit_code == 2 and "--out" in r.stderr and out.read_text() == "keep me"


@needs_core
@pytest.mark.parametrize(
    "args, needle",
    [
        (["--x", "nosuch", "--y", "frames.dropped"], "--x"),
        (["--x", "traffic.senders.rate", "--y", "throughput.agregate_bps"], "did you mean throughput.aggregate_bps"),
        (["--x", "traffic.senders.rate", "--y", "frames.dropped", "--hue", "traffic.senders.rate"], "--hue"),
    ],
)
def test_cnsim_plot_names_what_exists(cli, sweep_dir, args, needle):
    r = cli(["plot", sweep_dir, *args])
    assert r.exit_code == 2 and needle in r.stderr and "Traceback" not in r.stderr


@needs_core
def test_plot_of_a_folder_that_is_not_a_sweep(cli, tmp_path):
    r = cli(["plot", tmp_path, "--x", "a", "--y", "b"])
    assert r.exit_code == 2 and "not a sweep directory" in r.stderr


@needs_core
def test_sweep_report_embeds_figures(cli, sweep_dir):
    r = cli(["report", sweep_dir])
    assert r.exit_code == 0, r.stderr
    html = (sweep_dir / "report" / "report.html").read_text()
    assert "<h2 id='figures'>" in html and html.count("data:image/png;base64,") >= 3
    assert any(Path(sweep_dir / "report" / "figures").glob("*.png"))
