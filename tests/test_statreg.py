"""TESTING.md T13, statistical regression: Holm's correction, Welch / Levene on synthetic samples, the
reference runs of one engine on disjoint seeds (same) and with a changed model (flagged), the samples
file and the `cnsim statreg` command.

The runs are deterministic for a given engine build, so every verdict here is fixed; the docstrings say
why it stays the same after a change that legitimately re-draws the random trajectories (the reason T13
exists): under the null the family-wise false-alarm rate is ≤ α = 1 %, and the flagged effects are
several standard errors beyond the Holm threshold.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from cnsim.cli.statreg import main as statreg_main
from cnsim.exceptions import ConfigError
from cnsim.experiments import statreg
from conftest import ROOT, needs_core

FAN_IN = statreg.REFERENCE[0]
assert FAN_IN.name == "fan-in-100-qcn"


def by_key(result: statreg.Comparison) -> dict[tuple[str, str], statreg.Row]:
    return {(r.metric, r.test): r for r in result.rows}


# ---------------------------------------------------------------------------------------------- Holm


def test_holm_adjusted_values_by_hand():
    """p = (0.01, 0.04, 0.03, 0.005), m = 4. Sorted: 0.005, 0.01, 0.03, 0.04, times 4, 3, 2, 1 →
    0.02, 0.03, 0.06, 0.04; monotonicity raises the last to 0.06. At α = 0.05 the step-down rejects
    0.005 (≤ 0.05/4) and 0.01 (≤ 0.05/3), stops at 0.03 (> 0.05/2) — so 0.04 is kept although
    0.04 ≤ 0.05/1: exactly the hypotheses with adjusted p ≤ α."""
    adjusted = statreg.holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert [a <= 0.05 for a in adjusted] == [True, False, False, True]
    assert statreg.holm([0.5, 0.6]) == [1.0, 1.0]  # 2 x 0.5 capped at 1, and 0.6 raised to it
    assert statreg.holm([0.02, 0.02, 0.9]) == pytest.approx([0.06, 0.06, 0.9])  # ties
    assert statreg.holm([0.003]) == [0.003] and statreg.holm([]) == []


def step_down(pvalues: list[float], alpha: float) -> set[int]:
    """The textbook procedure: reject the k-th smallest p while p ≤ α / (m − k), stop at the first that is not."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    rejected: set[int] = set()
    for k, i in enumerate(order):
        if pvalues[i] > alpha / (len(pvalues) - k):
            break
        rejected.add(i)
    return rejected


def test_holm_rejections_equal_the_step_down_procedure():
    rng = np.random.default_rng(7)
    for _ in range(500):
        p = list(rng.uniform(0, 0.03, rng.integers(1, 12)) ** rng.uniform(0.5, 2))
        adjusted = statreg.holm(p)
        assert {i for i, a in enumerate(adjusted) if a <= 0.01} == step_down(p, 0.01), p
        assert all(a >= x for a, x in zip(adjusted, p))


# --------------------------------------------------------------------------------- synthetic samples


def test_same_distribution_is_ok():
    """Five metrics (normal, skewed log-normal, Poisson counts), R = 20 each side, drawn from the same
    distributions: nothing is flagged (under the null the chance of any flag is ≤ α = 1 %)."""
    rng = np.random.default_rng(1)
    draw = {
        "normal": lambda: rng.normal(100, 10, 20),
        "lognormal": lambda: rng.lognormal(3, 1, 20),
        "poisson": lambda: rng.poisson(50, 20),
        "tiny-sd": lambda: rng.normal(1e5, 1e-3, 20),
        "counts": lambda: rng.poisson(2, 20),
    }
    result = statreg.compare({k: f() for k, f in draw.items()}, {k: f() for k, f in draw.items()})
    assert result.ok, result.table()
    assert len(result.rows) == 10 and all(r.p_holm is not None and r.p_holm > 0.01 for r in result.rows)


def test_mean_shift_of_two_sd_is_flagged_by_welch():
    """A shift of 2 sd at R = 20 gives t ≈ 2 / √(2/20) = 6.3 (p ≈ 1e-7), far beyond the Holm threshold
    0.01/2; the spread is the same, so only the mean row differs."""
    rng = np.random.default_rng(2)
    result = statreg.compare({"x": rng.normal(100, 10, 20)}, {"x": rng.normal(120, 10, 20)})
    rows = by_key(result)
    assert not result.ok
    assert rows["x", "mean"].differs and rows["x", "mean"].p_holm < 1e-4
    assert not rows["x", "spread"].differs


def test_fourfold_variance_is_flagged_by_levene():
    """Same mean, variance × 4 (sd × 2). Levene is weak at R = 20 (by simulation it flags a doubled sd
    only 28 % of the time at α = 0.01: docs/statreg.md), so this uses R = 100, where it flags it in
    > 99.9 % of draws; the means are equal, so only the spread row differs."""
    rng = np.random.default_rng(3)
    result = statreg.compare({"x": rng.normal(100, 10, 100)}, {"x": rng.normal(100, 20, 100)})
    rows = by_key(result)
    assert rows["x", "spread"].differs and rows["x", "spread"].p_holm < 1e-4
    assert not rows["x", "mean"].differs


def test_constant_metrics_are_compared_exactly_and_left_out_of_the_family():
    """Welch and Levene are undefined (0/0) when both samples are constant: equal constants are the
    same, different ones differ, with no p-value; they do not enlarge the Holm family."""
    rng = np.random.default_rng(4)
    a, b = rng.normal(0, 1, 20), rng.normal(0, 1, 20)
    result = statreg.compare({"zero": [0] * 20, "five": [5] * 20, "x": a}, {"zero": [0] * 20, "five": [6] * 20, "x": b})
    rows = by_key(result)
    assert not rows["zero", "mean"].differs and not rows["zero", "spread"].differs
    assert rows["five", "mean"].differs and not rows["five", "spread"].differs
    constant = [rows[k, t] for k in ("zero", "five") for t in ("mean", "spread")]
    assert all(r.p is None and r.p_holm is None and r.note == "constant" for r in constant)
    x = [rows["x", "mean"], rows["x", "spread"]]
    assert [r.p_holm for r in x] == statreg.holm([r.p for r in x])  # a family of 2, not 6
    assert not result.ok
    # a constant sample against a varying one is an ordinary test
    one_constant = by_key(statreg.compare({"y": [5] * 20}, {"y": [5] * 10 + [6] * 10}))
    assert one_constant["y", "mean"].p is not None
    # every deviation from the median equal in both samples: Levene is 0/0, the spreads are the same
    same_spread = by_key(statreg.compare({"z": [1, 1, 3, 3] * 5}, {"z": [5, 5, 7, 7] * 5}))
    assert same_spread["z", "spread"].p == 1.0 and same_spread["z", "mean"].differs


def test_compare_refuses_unmatched_metrics_and_single_values():
    with pytest.raises(ConfigError, match="different metrics"):
        statreg.compare({"a": [1, 2]}, {"b": [1, 2]})
    with pytest.raises(ConfigError, match="at least two"):
        statreg.compare({"a": [1]}, {"a": [1, 2]})


@pytest.mark.extensive
def test_false_alarm_rate_is_at_most_alpha():
    """Holm controls the family-wise error: 1000 checks of 10 skewed (log-normal σ = 1) metrics,
    R = 20, before and after from the same distribution. Expected ≤ 1 % of checks flagged, i.e. ≤ 10
    (binomial sd ≈ 3), allowed ≤ 20; without the correction (raw p ≤ 0.01 over 20 tests) several
    times as many checks would fail (measured ≈ 8 %), which the test also shows."""
    rng = np.random.default_rng(2024)
    flagged = uncorrected = 0
    for _ in range(1000):
        result = statreg.compare(
            {f"m{i}": rng.lognormal(0, 1, 20) for i in range(10)}, {f"m{i}": rng.lognormal(0, 1, 20) for i in range(10)}
        )
        flagged += not result.ok
        uncorrected += any(r.p <= 0.01 for r in result.rows)
    assert flagged <= 20, flagged
    assert uncorrected >= 40, uncorrected


# ------------------------------------------------------------------------------ metrics and the file


SUMMARY = {
    "fct": {"mean_us": 12.5, "count": 3},
    "fairness": {"jain": None},
    "flag": True,
    "queues": [{"switch": "sw1", "port": "h1", "mean_bytes": 10}, {"switch": "sw1", "port": "h2", "mean_bytes": 20}],
}


def test_metric_paths():
    assert statreg.metric(SUMMARY, "fct.mean_us") == 12.5
    assert statreg.metric(SUMMARY, "queues[switch=sw1,port=h2].mean_bytes") == 20.0
    for path, why in (
        ("fct.p99", "no key 'p99'"),
        ("queues[switch=sw1].mean_bytes", "2 elements"),
        ("queues[port=h9].mean_bytes", "0 elements"),
        ("fairness.jain", "not a number"),
        ("flag", "not a number"),
        ("fct", "not a number"),
    ):
        with pytest.raises(ConfigError, match=why):
            statreg.metric(SUMMARY, path)


def test_samples_file_round_trip(tmp_path):
    samples = statreg.Samples(
        statreg.REFERENCE,
        [1, 2, 3],
        {"fan-in-100-qcn:fct.count": [1.0, 2.0, 3.5]},
        {"defaults.buffer.size": "140KB"},
        "abc123",
    )
    samples.save(tmp_path / "s.json")
    assert statreg.Samples.load(tmp_path / "s.json") == samples
    (tmp_path / "bad.json").write_text("[1, 2")
    with pytest.raises(ConfigError, match="not a JSON file"):
        statreg.Samples.load(tmp_path / "bad.json")
    (tmp_path / "binary.json").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")  # e.g. a plot passed by mistake
    with pytest.raises(ConfigError, match="not a JSON file"):
        statreg.Samples.load(tmp_path / "binary.json")
    (tmp_path / "other.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ConfigError, match="not a statreg samples file"):
        statreg.Samples.load(tmp_path / "other.json")
    (tmp_path / "cut.json").write_text(json.dumps({"format": statreg.FORMAT, "cases": []}))
    with pytest.raises(ConfigError, match="incomplete"):
        statreg.Samples.load(tmp_path / "cut.json")


def tool(*args: object) -> subprocess.CompletedProcess[str]:
    """`cnsim statreg` as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "cnsim", "statreg", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def tool_main(capsys):
    """`cnsim statreg`'s ``main`` in-process (no interpreter start-up): ``(*args) -> (status, stderr)``."""

    def call(*args: object) -> tuple[int, str]:
        capsys.readouterr()
        try:
            status = statreg_main([str(a) for a in args])
        except SystemExit as exc:  # argparse's usage errors
            status = exc.code
        return status, capsys.readouterr().err

    return call


def test_tool_bad_input_exits_2_without_traceback(tmp_path, tool_main):
    p = tool("check", tmp_path / "missing.json")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "missing.json: No such file" in p.stderr
    (tmp_path / "bad.json").write_text("{")
    assert tool_main("check", tmp_path / "bad.json") == (
        2,
        f"error: {tmp_path / 'bad.json'}: not a JSON file "
        "(Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1))\n",
    )
    status, err = tool_main("record", tmp_path / "x.json", "--replications", "1")
    assert status == 2 and "at least 2" in err
    assert not (tmp_path / "x.json").exists()
    (tmp_path / "mine.json").write_text("a user's file")
    for extra in ([], ["--force"]):  # a file that is not a samples file is never replaced (issue 34)
        assert tool_main("record", tmp_path / "mine.json", *extra) == (
            2,
            f"error: {tmp_path / 'mine.json'}: exists and is not a statreg samples file; nothing was replaced: "
            "choose another file name\n",
        )
    assert (tmp_path / "mine.json").read_text() == "a user's file"


# ----------------------------------------------------------------------------------------- real runs


@pytest.fixture(scope="module")
def before() -> statreg.Samples:
    return statreg.collect(statreg.REFERENCE, 20, 1)


@pytest.fixture(scope="module")
def after(before) -> statreg.Samples:
    return statreg.collect(statreg.REFERENCE, 20, 1001)


@pytest.mark.extensive  # 20 replications of the statistical reference
@needs_core
def test_every_reference_metric_varies_with_the_seed(before):
    """Every reference metric varies with the seed (a constant one would test nothing)."""
    assert set(before.values) == {f"{c.name}:{m}" for c in statreg.REFERENCE for m in c.metrics}
    assert all(len(v) == 20 and np.ptp(v) > 0 for v in before.values.values())
    assert before.build


@pytest.mark.extensive  # 20 replications of the statistical reference
@needs_core
def test_same_engine_on_disjoint_seeds_is_ok(before, after):
    """The same engine on seeds 1..20 and 1001..1020: the two samples of every metric come from one
    distribution, so no test may be flagged (a false alarm after a trajectory-changing commit has
    probability ≤ α = 1 % by Holm; if this fails, look at the flagged metric before suspecting that)."""
    result = statreg.compare(before.values, after.values)
    assert result.ok, result.table()
    assert len(result.rows) == 2 * len(before.values) and all(r.p is not None for r in result.rows)


@pytest.mark.extensive  # 20 replications of the statistical reference
@needs_core
def test_changed_cm_gain_is_flagged(before, after):
    """QCN's decrease gain Gd from 1/128 to 0.01 (+28 %) in fan-in-100-qcn only, everything else as in
    the same-engine check. Measured at R = 20: drops 7436 ± 188 → 6991 ± 189 (−6 %, t = −7.5), the
    bottleneck queue 98372 ± 64 → 98210 ± 82 B (t = −7.0); the Holm threshold over 30 tests,
    p ≤ 0.01/30, is |t| ≈ 3.9, more than 3 (the sd of t) below either — a stable verdict. The other
    cases' samples are those of the same-engine check (not flagged)."""
    changed = replace(FAN_IN, overrides={**FAN_IN.overrides, "cm.params.gd": 0.01})
    result = statreg.compare(before.values, {**after.values, **statreg.collect([changed], 20, 1001).values})
    rows = by_key(result)
    assert not result.ok
    dropped = rows["fan-in-100-qcn:frames.dropped", "mean"]
    assert dropped.differs and 0.9 < dropped.after_mean / dropped.before_mean < 0.97, result.table()
    assert rows["fan-in-100-qcn:queues[switch=cs,port=ep0].mean_bytes", "mean"].differs, result.table()
    assert all(r.metric.startswith("fan-in-100-qcn:") for r in result.rows if r.differs), result.table()


@pytest.mark.extensive  # 20 replications of the statistical reference
@needs_core
def test_tool_check_exit_status(before, tmp_path, tool_main):
    """`cnsim statreg check` on the fan-in-100-qcn case (R = 20 recorded, 10 new): exit 0 for the same
    engine (a false alarm has probability ≤ 1 %), exit 1 when the buffer shrinks from 150 to 140 KB —
    measured at R = 20 the CNM count falls 646 ± 2 → 569 ± 3 (t ≈ −110) and the queue 98372 → 91406 B
    (t ≈ −300): no sampling noise can hide that."""
    keys = {k: v for k, v in before.values.items() if k.startswith(FAN_IN.name + ":")}
    statreg.Samples((FAN_IN,), before.seeds, keys, build=before.build).save(tmp_path / "before.json")
    same = tool("check", tmp_path / "before.json", "--replications", 10)
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout.splitlines()[-1].startswith("OK: 0 of 8 tests flagged"), same.stdout
    changed = tool("check", tmp_path / "before.json", "--replications", 10, "--set", "defaults.buffer.size=140KB")
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "DIFFERS" in changed.stdout.splitlines()[-1]
    flagged = [line.split()[0] for line in changed.stdout.splitlines() if line.rstrip().endswith("DIFFERS")]
    assert "fan-in-100-qcn:control.generated" in flagged, changed.stdout
    # seeds overlapping the recorded ones and an unknown key are bad input
    for args, why in (
        (["--first-seed", 5], "overlap the recorded seeds 1..20"),
        (["--set", "defaults.no_such_key=1"], "defaults.no_such_key"),
    ):
        status, err = tool_main("check", tmp_path / "before.json", "--replications", 2, *args)
        assert status == 2 and why in err, (args, err)


@needs_core
@pytest.mark.extensive
def test_tool_record_and_check_the_whole_reference(tmp_path):
    """docs/statreg.md's example end to end: record R = 20, check the same engine (exit 0) and with
    defaults.buffer.size = 140KB (exit 1; only fan-in-100-qcn uses the default buffer, the other
    presets set their own, so only its metrics may be flagged)."""
    assert tool("record", tmp_path / "before.json").returncode == 0
    same = tool("check", tmp_path / "before.json")
    assert same.returncode == 0, same.stdout
    changed = tool("check", tmp_path / "before.json", "--set", "defaults.buffer.size=140KB")
    assert changed.returncode == 1, changed.stdout
    flagged = [line.split()[0] for line in changed.stdout.splitlines() if line.rstrip().endswith("DIFFERS")]
    assert flagged and all(m.startswith("fan-in-100-qcn:") for m in flagged), changed.stdout
