"""Claims and R9 verdict classes (issue 15, model reference §12 R9): the verdict logic of claims, derived (multi-sweep)
cells, structural / sensitivity counting, and the time-series metrics that decide settling and stability —
each on synthetic data whose answer is known."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from cnsim.exceptions import ConfigError
from cnsim.experiments import claims as cl
from cnsim.experiments import reproduce as rp
from cnsim.experiments import series as ser


def _claim(holds: str, **terms: str) -> rp.Claim:
    return rp.Claim(
        id="X-1",
        source="[X]",
        says="s",
        criterion="c",
        holds=holds,
        terms={k: rp.Term(sweep=v, metric="m") for k, v in terms.items()},
    )


def test_claim_verdicts():
    c = _claim("a < 0.9 * b and abs(a - b) > 1", a="s1", b="s2")
    assert cl.claim_verdict(c, {"a": 5.0, "b": 10.0}) == "holds"
    assert cl.claim_verdict(c, {"a": 9.5, "b": 10.0}) == "does not hold"
    assert cl.claim_verdict(c, {"a": None, "b": 10.0}) == "not available"
    assert cl.claim_verdict(_claim("a < min(b, c)", a="s", b="s", c="s"), {"a": 1, "b": 2, "c": 3}) == "holds"
    assert cl.claim_verdict(_claim("a / b > 1", a="s", b="s"), {"a": 1, "b": 0}) == "not available"


def test_claims_need_a_margin_of_their_95_percent_ci():
    """Issue 32: a comparison holds only when its difference is at least the 95 % half-width of that difference
    (the terms' half-widths propagated in quadrature); a difference inside its CI is not a claim that holds."""
    c = _claim("a < b", a="s1", b="s2")
    assert cl.claim_verdict(c, {"a": 5.0, "b": 10.0}, {"a": 3.0, "b": 3.0}) == "holds"  # 5 >= sqrt(18) = 4.24
    assert cl.claim_verdict(c, {"a": 5.0, "b": 10.0}, {"a": 4.0, "b": 4.0}) == "does not hold"  # 5 < 5.66
    verdict, margins = cl.claim_margins(c, {"a": 5.0, "b": 10.0}, {"a": 3.0, "b": 4.0})
    assert verdict == "holds" and margins[0]["difference"] == -5.0 and margins[0]["ci95"] == pytest.approx(5.0)
    # a threshold, a ratio and a band: the half-width follows the expression (d(a/b)/da = 1/b)
    assert cl.claim_verdict(_claim("a / b >= 1.5", a="s", b="s"), {"a": 20.0, "b": 10.0}, {"a": 4.0}) == "holds"
    assert cl.claim_verdict(_claim("a / b >= 1.5", a="s", b="s"), {"a": 20.0, "b": 10.0}, {"a": 6.0}) == "does not hold"
    band = _claim("abs(r - 0.275) <= 0.025", r="s")
    assert cl.claim_verdict(band, {"r": 0.28}, {"r": 0.01}) == "holds"
    assert cl.claim_verdict(band, {"r": 0.28}, {"r": 0.03}) == "does not hold"  # the CI reaches out of the band
    # every comparison of an 'and' is recorded, and each needs its own margin
    verdict, margins = cl.claim_margins(
        _claim("a < b and b < c", a="s", b="s", c="s"), {"a": 1, "b": 2, "c": 10}, {"b": 1.2}
    )
    assert verdict == "does not hold" and [m["holds"] for m in margins] == [False, True]


@pytest.mark.parametrize(
    "expr, msg",
    [
        ("__import__('os')", "functions"),
        ("a.b > 1", "Attribute"),
        ("x > 1", "unknown term"),
        ("a >", "not an expression"),
        ("[a][0] > 1", "not allowed in a claim"),
    ],
)
def test_claim_expressions_are_checked(expr, msg):
    with pytest.raises(ValueError, match=msg):
        cl.check_claim_expr(expr, {"a"})


def test_study_file_claim_errors_name_the_field(tmp_path):
    bad = tmp_path / "x.toml"
    bad.write_text(
        'id="x"\ntitle="t"\nsource="s"\nspec="s"\n[[sweeps]]\nname="a"\nbase="b.toml"\n'
        '[[claims]]\nid="C1"\nsource="s"\nsays="s"\ncriterion="c"\nholds="q > 1"\n'
        'terms.p = { sweep = "nope", metric = "m" }\n'
    )
    with pytest.raises(ConfigError) as exc:
        rp.load_study("x", bad)
    text = str(exc.value)
    assert "claims[0].terms.p.sweep" in text and "claims[0].holds" in text and "unknown term 'q'" in text


def test_explained_needs_class_and_evidence():
    base = dict(table="t", row="r", column="c", sweep="s", metric="m", published=1.0, band={"rel": 0.1})
    with pytest.raises(ValueError, match="evidence"):
        rp.Cell(**base, explanation="why", explained_by="sweep")
    cell = rp.Cell(**base, explanation="why")  # an explanation alone is a suspicion: the cell stays open
    assert rp.verdict(cell, 2.0) == "outside band"
    cell = rp.Cell(**base, explanation="why", explained_by="inconsistent", evidence="1 + 1 = 3")
    assert rp.verdict(cell, 2.0) == "explained" and rp.verdict(cell, 1.05) == "within band"
    with pytest.raises(ValueError, match="either a sweep or terms"):
        rp.Cell(**{**base, "sweep": None})


def test_counts_split_structural_and_skip_sensitivity_rows():
    cells = [
        {"verdict": "within band", "structural": "PAUSE off"},
        {"verdict": "within band"},
        {"verdict": "outside band"},
        {"verdict": "within band", "sensitivity": True},
    ]
    c = rp.count_cells(cells)
    assert c["within band"] == 2 and c["outside band"] == 1 and c["structural"] == 1
    assert c["discriminating"] == 2 and c["discriminating within band"] == 1
    line = rp.counts_lines({"s": c}, {"s": {"holds": 1, "does not hold": 1}})[0]
    assert "discriminating within 1/2" in line and "claims hold 1/2" in line


def test_cell_from_several_sweeps():
    runs = {
        n: pd.DataFrame([{"run_id": f"{n}{i}", "status": "ok", "d": v} for i, v in enumerate(vals)])
        for n, vals in {"q5": [100.0, 110.0], "q32": [100.0, 100.0]}.items()
    }
    cell = rp.Cell(
        table="t",
        row="r",
        column="c",
        metric="q5 / q32",
        published=1.05,
        band={"abs": 0.03},
        terms={"q5": rp.Term(sweep="q5", metric="d"), "q32": rp.Term(sweep="q32", metric="d")},
    )
    res, reason = rp.evaluate_terms_cell(cell, runs, {"q5": {"reason": None}, "q32": {"reason": None}}, Path("."))
    assert reason is None and res["mean"] == pytest.approx(1.05) and res["n"] == 2
    res, reason = rp.evaluate_terms_cell(
        cell, runs, {"q5": {"reason": "scheme not available: x"}, "q32": {"reason": None}}, Path(".")
    )
    assert res["mean"] is None and "scheme not available" in reason


def _queue_run(tmp_path: Path, values_kb: list[float], dt: float = 1e-4) -> Path:
    """A run directory whose queue sw1>sw2 takes the given values (KB), one sample every dt seconds."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(values_kb)
    t = pa.table(
        {
            "t_s": [i * dt for i in range(n)],
            "queue": [0] * n,
            "bytes": [int(v * 1000) for v in values_kb],
            "switch": ["sw1"] * n,
            "port": ["sw2"] * n,
        }
    )
    pq.write_table(t, tmp_path / "queue_ts.parquet")
    return tmp_path


def test_series_metrics_on_a_known_queue(tmp_path):
    # 2 ms at 100 KB, then 24 KB for 8 ms: settles at 2 ms within 24 KB ± 50 %
    run = _queue_run(tmp_path, [100.0] * 20 + [24.0] * 80)
    m = dict(queue="sw1>sw2", level=24000, tol=0.5, bin=0.0005)
    assert ser.value(run, ser.SeriesMetric(kind="settle_ms", **m)) == pytest.approx(2.0)
    assert ser.value(run, ser.SeriesMetric(kind="in_band_fraction", **m)) == pytest.approx(16 / 20)
    assert ser.value(run, ser.SeriesMetric(kind="cv", **m, start=0.002)) == pytest.approx(0.0)
    assert ser.value(run, ser.SeriesMetric(kind="mean_bytes", **m, start=0.002)) == pytest.approx(24000)
    assert ser.value(run, ser.SeriesMetric(kind="mean_bytes", **m, end=0.002)) == pytest.approx(100000)
    # a last excursion means "not settled within the run": the run length, a lower bound
    run2 = _queue_run(tmp_path, [24.0] * 90 + [100.0] * 10)
    assert ser.value(run2, ser.SeriesMetric(kind="settle_ms", **m)) == pytest.approx(9.9)
    # an oscillating queue has cv > 0; no series for the queue gives NaN
    run3 = _queue_run(tmp_path, [10.0, 10.0, 10.0, 10.0, 10.0, 50.0, 50.0, 50.0, 50.0, 50.0] * 10)
    assert ser.value(run3, ser.SeriesMetric(kind="cv", **m)) == pytest.approx(40 / 60, rel=1e-6)
    assert math.isnan(ser.value(run3, ser.SeriesMetric(kind="cv", queue="sw9>h1")))


def test_mean_period_sets_the_off_time():
    from cnsim.scenario.spec import ParetoOnOff

    g = ParetoOnOff(kind="pareto_onoff", src="h1", dst="h2", alpha=1.5, mean_on="5ms", mean_period="100ms")
    assert g.off_mean() == 95 * 10**9
    assert ParetoOnOff(kind="pareto_onoff", src="h1", dst="h2").off_mean() == 15 * 10**6
    with pytest.raises(ValueError, match="mean_period must be > mean_on"):
        ParetoOnOff(kind="pareto_onoff", src="h1", dst="h2", alpha=1.5, mean_on="5ms", mean_period="5ms")
    with pytest.raises(ValueError, match="not both"):
        ParetoOnOff(
            kind="pareto_onoff", src="h1", dst="h2", alpha=1.5, mean_on="5ms", mean_period="9ms", mean_off="4ms"
        )


def test_extremes_and_throughput_dips(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = _queue_run(tmp_path, [24.0] * 10 + [100.0] * 10 + [2.0] * 10 + [24.0] * 10)
    m = dict(queue="sw1>sw2", bin=0.0005)
    assert ser.value(run, ser.SeriesMetric(kind="max_bytes", **m)) == pytest.approx(100000)
    assert ser.value(run, ser.SeriesMetric(kind="min_bytes", **m)) == pytest.approx(2000)
    # 10 Gb/s except one 1-ms dip to 6 Gb/s at 20-21 ms
    t = [i * 1e-4 for i in range(400)]
    bps = [6e9 if 0.020 <= x < 0.021 else 10e9 for x in t]
    pq.write_table(pa.table({"t_s": t, "bps": bps}), run / "throughput_ts.parquet")
    dip = ser.SeriesMetric(kind="tp_min_bps", bin=0.001)
    assert ser.value(run, dip) == pytest.approx(6e9)
    assert ser.value(run, ser.SeriesMetric(kind="tp_min_bps", bin=0.001, end=0.02)) == pytest.approx(10e9)
    with pytest.raises(ValueError, match="needs a queue"):
        ser.SeriesMetric(kind="cv")


def test_throttled_fraction_reads_each_transfer_at_its_own_samples(tmp_path):
    """The share of a transfer's lifetime under its pair's rate limiter, by size class: a limiter that lives only
    while a long transfer runs (ECM's byte sampling) gives the long class the larger share; a one-frame transfer
    is read at the sample at or before its start; a pair without a limiter series gives NaN."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # h1>h2: limiter from 1.0 to 2.0 ms (samples every 0.1 ms); h1>h3: never
    ts = [i * 1e-4 for i in range(40)]
    rows = [(x, 0, 5e9 if 0.001 <= x < 0.002 else float("nan"), "h1", "h2") for x in ts]
    rows += [(x, 1, float("nan"), "h1", "h3") for x in ts]
    pq.write_table(
        pa.table(dict(zip(("t_s", "flow", "rate_bps", "src", "dst"), map(list, zip(*rows))))),
        tmp_path / "rp_rate.parquet",
    )
    fct = [  # start, end, frames, src, dst
        (0.0012, 0.0016, 200, "h1", "h2"),  # long, entirely under the limiter: 1
        (0.0005, 0.0015, 400, "h1", "h2"),  # long, half under it (samples 0.5-1.5 ms: 6 of 11)
        (0.00105, 0.00106, 1, "h1", "h2"),  # one frame, read at the 1.0-ms sample: 1
        (0.00255, 0.00256, 1, "h1", "h2"),  # one frame after the limiter: 0
        (0.00105, 0.00106, 1, "h1", "h3"),  # another pair, no limiter: 0
    ]
    cols = dict(zip(("start_s", "end_s", "frames", "src", "dst"), map(list, zip(*fct))))
    pq.write_table(pa.table({**cols, "completed": [1] * 5, "bad": [0] * 5}), tmp_path / "fct.parquet")
    long = ser.SeriesMetric(kind="throttled_fraction", min_frames=101)
    short = ser.SeriesMetric(kind="throttled_fraction", max_frames=10)
    assert ser.value(tmp_path, long) == pytest.approx((1 + 6 / 11) / 2)
    assert ser.value(tmp_path, short) == pytest.approx(1 / 3)
    pq.write_table(
        pa.table(
            {k: v[:1] for k, v in dict(zip(("t_s", "flow", "rate_bps", "src", "dst"), map(list, zip(*rows)))).items()}
        ),
        tmp_path / "rp_rate.parquet",
    )  # only h1>h2 recorded (observe.flow_series too small)
    assert math.isnan(ser.value(tmp_path, short))


def test_claim_figure_shows_every_run():
    from cnsim.report import document as report

    c = {
        "id": "X-1",
        "verdict": "holds",
        "terms": {
            "a": {"sweep": "s1", "mean": 2.0, "values": [1.0, 3.0]},
            "b": {"sweep": "s2", "mean": 5.0, "values": [5.0]},
            "c": {"sweep": "s3", "mean": None, "values": []},
        },
    }
    png = report.claim_figure(c)
    assert png is not None and png[:8] == b"\x89PNG\r\n\x1a\n"
    assert report.claim_figure({"id": "X-2", "verdict": "not available", "terms": {"a": {"values": []}}}) is None
