"""Reproduction studies: every study file validates, and a tiny version of each runs end to end (schemes
that have not landed are reported "scheme not available", never faked)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cnsim.exceptions import ConfigError
from cnsim.experiments import reproduce as rp

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    __import__("importlib").util.find_spec("cnsim._core") is None, reason="cnsim._core is not built (make build)"
)
STUDIES = ["seed-000", "seed-001", "seed-002", "seed-003", "seed-004"]


def test_every_seed_has_a_valid_study():
    assert rp.study_ids() == STUDIES
    for sid in STUDIES:
        st = rp.load_study(sid)
        assert st.id == sid and st.sweeps
        for c in st.cells:
            assert c.band.half_width(c.published) >= 0


def test_unknown_study_and_bad_reference(tmp_path):
    with pytest.raises(ConfigError, match="unknown"):
        rp.load_study("seed-999")
    bad = tmp_path / "x.toml"
    bad.write_text(
        'id="x"\ntitle="t"\nsource="s"\nspec="s"\n[[sweeps]]\nname="a"\nbase="b.toml"\n'
        '[[cells]]\ntable="t"\nrow="r"\ncolumn="c"\nsweep="nope"\nmetric="m"\npublished=1\nband={rel=0.1}\n'
    )
    with pytest.raises(ConfigError, match="not a declared sweep"):
        rp.load_study("x", bad)


def test_metric_expressions():
    m = {"a.b": 2.0, "flows[h1>h9].throughput_bps": 3.0, "c": 0.0}
    assert rp.metric_value("a.b", m) == 2.0
    assert rp.metric_value("2 * (a.b + flows[h1>h9].throughput_bps) / a.b", m) == 5.0
    assert rp.metric_value("a.b / c", m) != rp.metric_value("a.b / c", m)  # NaN
    with pytest.raises(ValueError):
        rp.metric_value("__import__('os')", {"x": 1})


@pytest.mark.parametrize("sid", STUDIES)
def test_every_sweep_a_verdict_reads_runs_at_least_10_replications(sid):
    """Issue 32 (2026-12-06): a claim holds only by the 95 % CI of its difference, and with 3 replications
    Student's t is 4.30, so every sweep a cell or claim reads runs at least 10; sensitivity rows, never a
    verdict, may run fewer. A sweep added with the study's old default, or a claim put on a sensitivity
    sweep, fails here."""
    from cnsim.report.document import verdict_sweeps

    study = rp.load_study(sid)
    read = verdict_sweeps(study.model_dump())
    few = {s.name: s.replications or study.replications for s in study.sweeps if s.name in read}
    assert read and {n: r for n, r in few.items() if r < 10} == {}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    result = rp.reproduce("all", out, quick=True, progress=False, overrides={"run.duration": "8ms"}, replications=1)
    return out, result


@pytest.mark.extensive  # every study reproduced (tiny): a reproduction run
def test_tiny_reproduction_of_every_study(tiny):
    out, result = tiny
    schemes = rp.available_schemes()
    assert result["failed"] == 0
    for sid in STUDIES:
        doc = json.loads((out / sid / "study.json").read_text())
        for name, sw in doc["sweeps"].items():
            if sw["scheme"] in schemes and sw["reason"] is None:
                assert sw["status"] == "ran" and sw["failed"] == 0 and sw["total"] >= 1
                assert (out / sid / name / "summary.parquet").exists()
            else:
                assert sw["status"] == "not available"
                assert sw["reason"].startswith(("scheme not available", "scenario file missing"))
        for c in doc["cells"]:
            assert c["verdict"] in ("within band", "outside band", "explained", "not available")
            names = [c["sweep"]] if c["sweep"] else [t["sweep"] for t in c["terms"].values()]
            if any(doc["sweeps"][n]["status"] != "ran" for n in names):
                assert c["verdict"] == "not available" and c["mean"] is None
        for c in doc["claims"]:
            assert c["verdict"] in ("holds", "does not hold", "not available")
            assert c["terms"] and c["criterion"] and c["says"]
            if c["verdict"] != "not available":
                assert all(t["mean"] is not None for t in c["terms"].values())
        assert sum(doc["claim_counts"].values()) == len(doc["claims"])
    # the no-CM rows of seed 003 always run (scheme "none" is the foundation's)
    d3 = json.loads((out / "seed-003" / "study.json").read_text())
    none_cells = [c for c in d3["cells"] if (c["sweep"] or "").startswith("none-")]
    assert none_cells and all(c["mean"] is not None for c in none_cells)
    assert Path(result["report_html"]).exists() and Path(result["report_md"]).exists()


def test_cli_reproduce_unknown_study_exit_2(cli, tmp_path):
    r = cli(["reproduce", "seed-042", "-o", tmp_path])
    assert r.exit_code == 2 and "unknown" in r.stderr


def test_overrides_reach_the_sweeps_of_the_listed_schemes_only():
    """`cnsim reproduce --schemes ecm --set cm.params.X=...`: ECM's sweeps take the override, FECN's and the
    sweeps without a scheme run as the study says (a scheme parameter would not validate there)."""
    sets = {"cm.params.ru": 1e6}
    assert rp.overrides_for("ecm", sets, None) is sets and rp.overrides_for("none", sets, None) is sets
    assert rp.overrides_for("ecm", sets, {"ECM", "qcn"}) is sets
    assert rp.overrides_for("fecn", sets, {"ecm"}) is None and rp.overrides_for(None, sets, {"ecm"}) is None


def test_cli_reproduce_schemes_without_set_exit_2(cli, tmp_path):
    r = cli(["reproduce", "seed-003", "--schemes", "ecm", "-o", tmp_path / "r"])
    assert r.exit_code == 2 and "--schemes: needs --set" in r.stderr, r.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.extensive  # reads the tiny reproduction of every study
def test_explained_cells_carry_their_explanation(tiny):
    """Model reference §12 R9: a cell is 'explained' only with an explanation, its class (inconsistent seed
    numbers or a sweep of an unprinted value) and the evidence."""
    out, _ = tiny
    for sid in STUDIES:
        doc = json.loads((out / sid / "study.json").read_text())
        for c in doc["cells"]:
            if c["verdict"] == "explained":
                assert (c.get("explanation") or "").strip(), (sid, c["row"], c["column"])
                assert c["explained_by"] in ("inconsistent", "sweep") and c["evidence"], (sid, c["row"])


def test_every_explanation_names_its_doc_section():
    for sid in STUDIES:
        for c in rp.load_study(sid).cells:
            if c.explanation is not None:
                assert c.explanation.strip() and "docs/" in c.explanation, (sid, c.row, c.column)


def test_logarithmic_band_and_reduced_runs_without_their_window():
    """Model reference §12 R6: '≈ 3 orders of magnitude' is ± half a decade; a steady-state window (R5) longer
    than a reduced run is dropped rather than making the run invalid."""
    band = rp.Band(decades=0.5)
    assert band.contains(1.63, 3.6) and band.contains(1.63, 0.6)
    assert not band.contains(1.63, 5.3) and not band.contains(1.63, 0.5) and not band.contains(1.63, 0.0)
    assert rp.Band(rel=0.05).contains(100, 104.9) and not rp.Band(rel=0.05).contains(100, 105.1)
    study = rp.load_study("seed-000")
    sw = next(s for s in study.sweeps if s.name == "asym-becn-300us")
    full = rp.sweep_spec(study, sw, ROOT / "scenarios", quick=False)
    assert full.set["run.warmup"] == "50ms"
    tiny = rp.sweep_spec(study, sw, ROOT / "scenarios", quick=True, overrides={"run.duration": "8ms"})
    assert "run.warmup" not in tiny.set
