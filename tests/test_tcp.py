"""TCP and DCTCP through the scenario front end: the shipped baselines, the [tcp] section, ECN
thresholds, bad input and the warning for a threshold that can never act."""

import warnings

import cnsim
import pytest
from cnsim.exceptions import ConfigError, ConfigWarning
from conftest import ROOT, needs_core

pytestmark = needs_core
NEWRENO = ROOT / "scenarios/baseline/tcp-newreno-4.toml"
DCTCP = ROOT / "scenarios/baseline/dctcp-4.toml"
SHORT = {"run.duration": "30ms", "run.warmup": "10ms"}


def _bottleneck(s):
    return next(q for q in s["queues"] if q["port"] == "sink")


def test_newreno_baseline_fills_the_bottleneck_and_repairs_losses():
    s = cnsim.run(NEWRENO, overrides=SHORT, plots=False).summary
    agg = sum(f["throughput_bps"] for f in s["flows"])
    assert agg > 0.95 * 10e9
    assert s["fairness"]["jain"] > 0.9
    assert s["tcp"]["flows"] == 4 and all(f["transport"] == "tcp" for f in s["flows"])
    assert s["tcp"]["fast_retransmits"] > 0 and s["tcp"]["timeouts"] == 0
    # goodput counts payload once: at most 1460/1500 of the line, below the frame throughput — plus
    # what the receiver held out of order when the window opened (SACK: up to a buffer, 150 KB over
    # the 20-ms window = 60 Mb/s)
    assert s["tcp"]["goodput_bps"] <= agg * 1460 / 1500 + 150_000 * 8 / 0.02


def test_dctcp_baseline_keeps_the_queue_at_k_and_echoes_marks():
    r = cnsim.run(DCTCP, overrides=SHORT, plots=False)
    s = r.summary
    q = _bottleneck(s)
    k = 97_500
    assert 0.6 * k < q["mean_bytes"] < 1.1 * k, q
    assert q["ecn_marks"] > 0 and s["tcp"]["ecn_reductions"] > 0
    assert all(0.05 < f["dctcp_alpha"] < 0.6 for f in s["flows"])
    # the sampled window series exists for every flow, with alpha in [0, 1]
    ts = r.tcp_ts
    assert set(ts["flow"]) == {0, 1, 2, 3} and ts["alpha"].between(0, 1).all()


def test_newreno_ignores_ecn_marks():
    s = cnsim.run(NEWRENO, overrides=dict(SHORT, **{"defaults.ecn_threshold": "20KB"}), plots=False).summary
    # NewReno frames are not ECN-capable: nothing is marked, the queue still fills to loss
    assert _bottleneck(s)["ecn_marks"] == 0
    assert s["frames"]["dropped"] > 0


def test_tcp_under_a_rate_limiting_scheme_is_capped_by_the_rl():
    # QCN samples TCP segments and its rate limiters pace them: messages flow, the link stays full
    s = cnsim.run(NEWRENO, overrides=dict(SHORT, **{"cm.scheme": "qcn"}), plots=False).summary
    assert s["control"]["messages"]["cnm"] > 0
    assert s["conservation"]["ok"]
    assert sum(f["throughput_bps"] for f in s["flows"]) > 0.8 * 10e9


def test_threshold_at_or_above_the_buffer_warns_naming_the_fields():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cnsim.run(
            DCTCP, overrides={"run.duration": "2ms", "run.warmup": 0, "defaults.ecn_threshold": "150KB"}, plots=False
        )
    msgs = [str(x.message) for x in w if issubclass(x.category, ConfigWarning)]
    assert msgs and "defaults.ecn_threshold" in msgs[0] and "defaults.buffer.size" in msgs[0]


@pytest.mark.parametrize(
    "overrides, path",
    [
        ({"traffic.0.frame_size": "40B", "tcp.header": "40B"}, "traffic.0"),
        ({"tcp.min_rto": "0s"}, "tcp"),
        ({"tcp.max_rto": "100us", "tcp.min_rto": "1ms"}, "tcp"),
        ({"tcp.init_cwnd": 0}, "tcp.init_cwnd"),
        ({"tcp.dctcp_g": 0}, "tcp.dctcp_g"),
        ({"traffic.0.transport": "quic"}, "traffic.0"),
    ],
)
def test_bad_tcp_input_names_the_field(overrides, path):
    with pytest.raises(ConfigError) as e:
        cnsim.run(DCTCP, overrides=dict(overrides, **{"run.duration": "1ms", "run.warmup": 0}), plots=False)
    assert path in str(e.value), str(e.value)


def test_describe_knows_tcp_and_dctcp(cli):
    for topic in ("tcp", "dctcp"):
        res = cli(["describe", topic])
        assert res.exit_code == 0, res.output
        assert "min_rto" in res.output and "[tcp]" in res.output


def test_pause_headroom_below_the_overshoot_warns_naming_the_field():
    """A PAUSE configuration whose headroom (buffer − high) cannot absorb what the inputs deliver after XOFF
    (2 × rate × delay + 2 frames + the PAUSE frame, summed over the inputs for global PAUSE) warns; the
    seed-000 symmetric scenario ([A]'s 140 KB of 150 KB) is one, and it does drop frames with PAUSE on."""
    import warnings

    from cnsim.compile.compiler import compile_ir
    from cnsim.compile.loader import load_scenario
    from cnsim.exceptions import ConfigWarning

    def warned(path, overrides=None):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            compile_ir(load_scenario(path, overrides or {}))
        return sorted({str(x.message) for x in w if issubclass(x.category, ConfigWarning)})  # load + compile

    sym = ROOT / "scenarios/seed-000/symmetric-none.toml"
    msgs = warned(sym)
    assert len(msgs) == 1 and msgs[0].startswith("flow_control.high: PAUSE headroom of switch 'sw1' is 10KB")
    assert cnsim.run(sym, overrides={"run.duration": "20ms"}).summary["frames"]["dropped"] > 0
    # enough headroom: no warning
    assert warned(sym, {"flow_control.high": "100KB", "flow_control.low": "90KB"}) == []
