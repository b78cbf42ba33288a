"""BCN family (issue 3): gains, parameters, and the effects the seeds report.

Quick tier (default): gain rule, parameter docs, every BCN/ECM scenario compiles, the symmetric
equilibrium with the N/(5+N) check, all 14 runs of the seed-001 100-flow study (full length, one
seed), shortened seed-004 and seed-003 runs. ``-m extensive``: several seeds and full lengths.
Measured numbers beside the published ones are in docs/validation/bcn.md.
"""

from __future__ import annotations

import statistics
import tomllib
from pathlib import Path

import cnsim
import pytest
from cnsim import schemes
from cnsim.compile.compiler import compile_ir
from cnsim.compile.loader import load_scenario
from cnsim.scenario import describe
from cnsim.schemes import bcn, ecm

ROOT = Path(__file__).resolve().parents[1]
SC = ROOT / "scenarios"
BCN_FILES = sorted(
    [p for p in SC.glob("seed-00*/*.toml") if "-bcn" in p.name or "-ecm-" in p.name or "qcn-selfinc" in p.name]
)


def _queue(summary: dict, switch: str, port: str) -> dict:
    return next(q for q in summary["queues"] if q["switch"] == switch and q["port"] == port)


# ------------------------------------------------------------------------------- gains (§2.1, §10)


def test_gain_rule_spec_10():
    """Gi·Fb_max·Ru = 1 Gb/s; 1 − Gd·Fb_max = 0.5 (0.05 for 95 %) with the derived gains."""
    p = bcn.Params()
    gi, gd = bcn.gains(p)
    fm = bcn.fb_max(p)
    assert fm == pytest.approx(1875.0)
    assert gi == pytest.approx(0.533333, rel=1e-5) and gd == pytest.approx(2.66667e-4, rel=1e-5)
    assert gi * fm * p.ru == pytest.approx(1e9)
    assert 1 - gd * fm == pytest.approx(0.5)
    p95 = bcn.Params(max_decrease=0.95)
    assert 1 - bcn.gains(p95)[1] * fm == pytest.approx(0.05)
    # [E]: Qeq = B/4 = 150 KB = 2343.75 pages ⇒ Gi = 0.085333, Gd = 4.2667e-5 (model reference §12 E2)
    pe = bcn.Params(qeq="150KB")
    assert bcn.gains(pe) == pytest.approx((0.085333, 4.2667e-5), rel=1e-4)
    # [B] in frame units: Gi = 1000/80 = 12.5 per 1500-B frame (the slide rounds to 12.42)
    assert bcn.gains(p)[0] * 1500 / 64 == pytest.approx(12.5)
    # ECM's printed raw gains equal the derived ones
    e = ecm.Params()
    assert bcn.gains(e) == pytest.approx(bcn.derived_gains(e), rel=1e-8)
    assert "derived by model reference §2.1" in bcn.describe_gains(e)


def test_raw_gains_need_both_values():
    with pytest.raises(ValueError):
        bcn.Params(gains="raw", gi=0.5)
    with pytest.raises(ValueError):
        bcn.Params(gi=0.5)  # gi only with gains = 'raw'
    with pytest.raises(ValueError):
        bcn.Params(bogus=1)


def test_describe_documents_every_parameter():
    for tag in ("bcn", "ecm"):
        s = schemes.get(tag)
        rows = describe.rows(s.params)
        names = {r[0] for r in rows}
        assert {
            "sampling",
            "qeq",
            "w",
            "gains",
            "gi",
            "gd",
            "ru",
            "severe",
            "qsc",
            "reset",
            "drift",
            "rl_timeout",
            "fb_at_cp",
            "quant_bits",
            "self_increase",
            "oversampling",
        } <= names
        assert all(r[3] for r in rows), "every parameter has a description"
    ecm_rows = {r[0]: r[2] for r in describe.rows(ecm.Params)}
    assert ecm_rows["rl_timeout"] == "'2ms'" and ecm_rows["sampling"] == "'periodic'"


def test_ir_is_complete_and_accepted_by_the_engine():
    ir = bcn.to_ir(bcn.Params())
    assert ir["qeq_bytes"] == 24_000 and ir["tmax_ps"] == 100_000_000 and ir["initial_rate_bps"] is None
    core = cnsim.api.core()
    assert {"bcn", "ecm"} <= set(core.schemes())


@pytest.mark.parametrize("path", BCN_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_bcn_scenario_compiles(path):
    assert path.read_text().startswith("#"), "opens with a comment block holding the drawing"
    compile_ir(load_scenario(path))


# ------------------------------------------------------------------------------- S-SYM (§9.1, §8)


def test_symmetric_equilibrium_and_negative_fraction():
    """4 greedy flows: aggregate ≈ 10 Gb/s, queue near Qeq, negative share beside N/(5+N) = 0.444.

    Measured (seeds 1–3, 100 ms, 20-ms warm-up): 10.0 Gb/s, 22.8 KB, 0.47–0.48 negative.
    The excess over the fluid model's 0.444 comes from the positive-message rule: an RL released at
    line rate gets no positive messages (its frames are untagged) while negatives always flow.
    """
    sc = tomllib.loads((SC / "seed-000/symmetric-bcn.toml").read_text())
    sc["traffic"] = [{"name": "all", "kind": "saturated", "src": ["h1", "h2", "h3", "h4"], "dst": "h5"}]
    shares = []
    for seed in (1, 2):
        r = cnsim.run(sc, seed=seed, overrides={"run.duration": "100ms", "run.warmup": "20ms"})
        s = r.summary
        agg = sum(f["throughput_bps"] for f in s["flows"])
        assert agg == pytest.approx(10e9, rel=0.02)
        q = _queue(s, "sw1", "sw2")["mean_bytes"]
        assert 0.5 * 24_000 < q < 1.5 * 24_000, q
        m = s["control"]["messages"]
        shares.append(m["negative"] / (m["negative"] + m["positive"]))
        assert m["max"] == m["zero"] == 0
    n = 4
    assert statistics.mean(shares) == pytest.approx(n / (5 + n), abs=0.08), shares


def test_legacy_bcn00_encoding_lowers_throughput_at_equilibrium():
    """[C] §8: with BCN(0,0) coded as a normal message with Qoff = Qdelta = 0, samples at equilibrium
    (exactly 16 frames = Qeq, queue unchanged since the last sample) stop their source, which restarts
    at C/100: lower throughput than with an explicit message type, where BCN(0,0) is sent only above Qsc.

    Measured (30 ms, seeds 1–2): explicit 9.88 / 9.99 Gb/s with 3 BCN(0,0) each (the start-up overshoot
    above Qsc), legacy 9.67 / 9.23 Gb/s with 16 / 23; at 100 ms over 3 seeds 9.96 vs 9.49 Gb/s and a
    queue cv of 0.035 vs 0.49 (the seed-002 claims C-bcn00-low-throughput and C-bcn00-oscillation).
    """
    tp, zeros = {}, {}
    for enc in ("explicit", "legacy"):
        for seed in (1, 2):
            s = cnsim.run(
                SC / "seed-002/symmetric-10g-bcn-c.toml",
                seed=seed,
                overrides={
                    "run.duration": "30ms",
                    "cm.params.severe": "zero",
                    "cm.params.rmin": "100Mbps",
                    "cm.params.zero_encoding": enc,
                },
            ).summary
            tp.setdefault(enc, []).append(sum(f["throughput_bps"] for f in s["flows"]))
            zeros.setdefault(enc, []).append(s["control"]["messages"]["zero"])
    assert max(zeros["explicit"]) <= 5 < 10 <= min(zeros["legacy"]), zeros
    assert statistics.mean(tp["explicit"]) > 0.985 * 10e9, tp
    assert statistics.mean(tp["legacy"]) < 0.98 * statistics.mean(tp["explicit"]), tp


def test_symmetric_onoff_overhead_three_orders_below_becn():
    """[A]: BCN overhead ≈ 3 orders of magnitude below BECN's 1.63 Gb/s (T = 30 µs)."""
    s = cnsim.run(SC / "seed-000/symmetric-bcn.toml").summary
    assert 1e6 < s["control"]["overhead_bps"] < 1.63e9 / 100
    assert sum(f["throughput_bps"] for f in s["flows"]) > 9.5e9


# ------------------------------------------------------------------------------- S-100 (§9.4)

S100_PUBLISHED = {
    "bcn95": (162947, 19657),
    "bcnm": (137099, 5071),
    "bcnm95": (12363, 851),
    "bcnz": (39093, 6052),
    "bcnz95": (37863, 2571),
    "bcnzd": (39185, 4647),
    "bcnzp": (37194, 2725),
}
WORKING = ("bcn95", "bcnm", "bcnm95", "bcnzp")
"""Variants whose loss the reset event does not touch (no BCN(0,0), or reset NEVER)."""


def _s100(variant: str, sampling: str, seed: int = 1) -> int:
    r = cnsim.run(SC / f"seed-001/fan-in-100-{variant}-{sampling}.toml", seed=seed)
    return _queue(r.summary, "cs", "ep0")["drops"]


@pytest.fixture(scope="module")
def s100_drops() -> dict[tuple[str, str], int]:
    """All 14 runs, full length (200 ms), seed 1: about 15 s."""
    return {(v, s): _s100(v, s) for v in S100_PUBLISHED for s in ("150k", "25k")}


def test_s100_25k_sampling_drops_fewer_than_150k(s100_drops):
    for v in WORKING:
        assert s100_drops[(v, "25k")] < 0.5 * s100_drops[(v, "150k")], (v, s100_drops)


def test_s100_bcnm95_lowest(s100_drops):
    for s in ("150k", "25k"):
        col = {v: s100_drops[(v, s)] for v in S100_PUBLISHED}
        assert min(col, key=col.get) == "bcnm95", col


def test_s100_close_to_published_where_the_loop_works(s100_drops):
    """Bands: 150 KB within ±30 % of [B] (bcnm95 is +25 %); 25 KB within a factor 2.5 (cnsim drops more, see docs)."""
    for v in WORKING:
        p150, p25 = S100_PUBLISHED[v]
        assert s100_drops[(v, "150k")] == pytest.approx(p150, rel=0.30), v
        assert p25 / 2.5 < s100_drops[(v, "25k")] < p25 * 2.5, v


def test_s100_bcnz_always_and_delayed_control_the_queue(s100_drops):
    """Model reference §12 R8: with the back-off reset by a positive BCN (the default reset event), ALWAYS and DELAYED
    control the queue like [B]'s rows (≈ 39 k at 150 KB, within 10 %), not like no control (163 k, the
    §12 B2 reading); BCNz at 25 KB within 25 % of [B]'s 6 052; [B]'s order never < delayed < always at 25 KB."""
    for v in ("bcnz", "bcnz95", "bcnzd"):
        assert s100_drops[(v, "150k")] == pytest.approx(S100_PUBLISHED[v][0], rel=0.10), v
    assert s100_drops[("bcnz", "25k")] == pytest.approx(6052, rel=0.25)
    assert s100_drops[("bcnzp", "25k")] < s100_drops[("bcnzd", "25k")] < s100_drops[("bcnz", "25k")]


# Alternative readings (docs/validation/bcn.md, "Sensitivity to the open readings"). The reset event
# 'positive' (model reference §12 R8) is the default; 'uncongested' (back-off reset by any normal BCN, i.e. once the
# queue was seen below Qsc) also reproduces the 150 KB column of the BCNz family but not the 25 KB one.
UNCONGESTED = {"cm.params.reset_event": "uncongested"}
BCNZ_FAMILY = ("bcnz", "bcnz95", "bcnzd", "bcnzp")


def _s100_with(variant: str, sampling: str, overrides: dict, seed: int = 1) -> int:
    r = cnsim.run(SC / f"seed-001/fan-in-100-{variant}-{sampling}.toml", seed=seed, overrides=overrides)
    return _queue(r.summary, "cs", "ep0")["drops"]


def test_alternative_readings_are_parameters_with_spec_defaults():
    for P in (bcn.Params, ecm.Params):
        ir = bcn.to_ir(P())
        assert (ir["severe_trigger"], ir["severe_holdoff_ps"], ir["sample_refused"], ir["reset_event"]) == (
            "sample",
            0,
            False,
            "positive",
        ), "defaults: the spec's readings (§12 B4, §2.2) and §12 R8's reset event"
    ir = bcn.to_ir(
        bcn.Params(
            severe_trigger="every_arrival", severe_holdoff="100us", sample_refused=True, reset_event="uncongested"
        )
    )
    assert ir["severe_holdoff_ps"] == 100_000_000 and ir["sample_refused"] is True
    with pytest.raises(ValueError):
        bcn.Params(reset_event="sometimes")


def test_s100_bcnz_family_150k_under_uncongested_reset():
    """reset_event = 'uncongested', 150 KB sampling, seed 1 (4 runs, ~5 s): every BCNz variant now
    controls the queue, within ±45 % of [B]'s 37–39 k, and BCNzp (reset never) drops least, as in [B].
    Measured: z 49 349, z95 53 236, zd 47 489, zp 37 802."""
    d = {v: _s100_with(v, "150k", UNCONGESTED) for v in BCNZ_FAMILY}
    for v in BCNZ_FAMILY:
        assert d[v] < 0.5 * 162_947, (v, d)
        assert d[v] == pytest.approx(S100_PUBLISHED[v][0], rel=0.45), (v, d)
    assert min(d, key=d.get) == "bcnzp", d


@pytest.mark.xfail(
    strict=True,
    reason="known discrepancy: under reset_event = 'uncongested' the 25 KB sampling "
    "sends more normal BCNs, which reset the back-off more often, so BCNz/BCNz_95%/BCNzd drop "
    "~50 k at 25 KB (as many as at 150 KB) while [B] reports 2.5-6 k (docs/validation/bcn.md)",
)
def test_s100_bcnz_family_25k_under_uncongested_reset():
    for v in ("bcnz", "bcnz95", "bcnzd"):
        assert _s100_with(v, "25k", UNCONGESTED) < 2.5 * S100_PUBLISHED[v][1], v


@pytest.mark.extensive
def test_s100_alternative_readings_full():
    """Seeds 1–3, all 14 runs: the 'uncongested' reset reading keeps the four non-BCN(0,0) rows
    unchanged and brings the BCNz family's 150 KB column within ±50 % of [B]; the
    'every_arrival' trigger (§12 B4 alternative) contradicts [B]'s BCNm rows (≥ 10× too few drops)."""
    for seed in (1, 2, 3):
        for v in ("bcn95", "bcnm", "bcnm95", "bcnzp"):
            for s in ("150k", "25k"):
                assert _s100_with(v, s, UNCONGESTED, seed) == _s100(v, s, seed), (seed, v, s)
        for v in BCNZ_FAMILY:
            assert _s100_with(v, "150k", UNCONGESTED, seed) == pytest.approx(S100_PUBLISHED[v][0], rel=0.5), (seed, v)
        arrival = {"cm.params.severe_trigger": "every_arrival"}
        assert _s100_with("bcnm", "150k", arrival, seed) < 0.1 * S100_PUBLISHED["bcnm"][0], seed


@pytest.mark.extensive
def test_s100_orderings_hold_over_seeds():
    for seed in (2, 3, 4):
        d = {(v, s): _s100(v, s, seed) for v in S100_PUBLISHED for s in ("150k", "25k")}
        for v in WORKING:
            assert d[(v, "25k")] < d[(v, "150k")], (seed, v)
        for s in ("150k", "25k"):
            assert min((d[(v, s)], v) for v in S100_PUBLISHED)[1] == "bcnm95", (seed, s)


# ------------------------------------------------------------------------------- S-OGMS (§9.6)


def _ogms(name: str, seed: int = 1, duration: str | None = None) -> dict:
    ov = {"run.duration": duration} if duration else {}
    return cnsim.run(SC / f"seed-004/og-multistage-{name}.toml", seed=seed, overrides=ov).summary


def test_ogms_quantisation_barely_changes_drops_short():
    """[E]: 9 010 / 9 112 / 9 320 drops at 32 / 5 / 3 bits (within 3.5 %). Shortened to 150 ms (the
    drops happen in the first ~50 ms of the hotspot); band ±15 % around the 32-bit run."""
    d = {b: _ogms(f"bcn-q{b}", duration="150ms")["drops"]["data"] for b in (32, 5, 3)}
    base = _ogms("bcn", duration="150ms")["drops"]["data"]
    assert d[32] == pytest.approx(base, rel=0.01), "32 bits ≈ unquantised"
    for b in (5, 3):
        assert d[b] == pytest.approx(d[32], rel=0.15), d


@pytest.mark.extensive
def test_ogms_full_quantisation_and_self_increase():
    """Full 1.1-s runs, seeds 1–3: drops at 5 and 3 bits within ±15 % of 32 bits; the QCN
    enhancements (decrease-only + self-increase) cut control messages."""
    for seed in (1, 2, 3):
        s = {n: _ogms(n, seed) for n in ("bcn", "bcn-q32", "bcn-q5", "bcn-q3", "qcn-selfinc")}
        d32 = s["bcn-q32"]["drops"]["data"]
        for n in ("bcn-q5", "bcn-q3"):
            assert s[n]["drops"]["data"] == pytest.approx(d32, rel=0.15), (seed, n)
        assert s["qcn-selfinc"]["control"]["generated"] < s["bcn"]["control"]["generated"], seed


# ------------------------------------------------------------------------------- S-CNSIM-1HOP (§9.5)


def test_ecm_cnsim_with_pause_is_lossless_and_signals():
    """ECM with selective PAUSE: no drops, overhead of the order of [D]'s 27-29 Mb/s (tens of Mb/s)."""
    for hs in ("nohs", "hs2"):
        s = cnsim.run(SC / f"seed-003/cnsim-1hop-ecm-{hs}-pause.toml", overrides={"run.duration": "40ms"}).summary
        assert s["drops"]["data"] == 0
        assert 3e6 < s["control"]["overhead_bps"] < 100e6, s["control"]
        assert s["fct"]["count"] > 1000


@pytest.mark.extensive
def test_ecm_cnsim_full_runs():
    """All 8 ECM runs at full length; with PAUSE no drops; ECM pauses hosts less than no CM at 2 Gb/s."""
    for hs in ("nohs", "hs2", "hs0.5", "hs0"):
        s = cnsim.run(SC / f"seed-003/cnsim-1hop-ecm-{hs}-pause.toml").summary
        assert s["drops"]["data"] == 0, hs
        cnsim.run(SC / f"seed-003/cnsim-1hop-ecm-{hs}-nopause.toml")
    e = cnsim.run(SC / "seed-003/cnsim-1hop-ecm-hs2-pause.toml").summary
    n = cnsim.run(SC / "seed-003/cnsim-1hop-none-hs2-pause.toml").summary
    assert e["pause"]["host_paused_fraction"] < n["pause"]["host_paused_fraction"]
