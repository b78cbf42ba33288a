"""A configuration that silently disables a mechanism gets a ConfigWarning naming the field (compile.py):
queue thresholds of the congestion-management schemes that the egress queue can never exceed, a hotspot that
starts at or after the end of the run, PFC headroom below the formula on several switches (one warning), a
[defaults] value that no element takes."""

from __future__ import annotations

import warnings

import pytest
from cnsim.compile.compiler import compile_ir
from cnsim.compile.loader import load_scenario
from cnsim.exceptions import ConfigError, ConfigWarning
from conftest import ROOT

BASE = ROOT / "scenarios/baseline/fan-in-4.toml"  # one switch 'sw1', 150 KB egress buffers, 100 ms
PARKING = ROOT / "scenarios/seed-000/parking-lot-qcn.toml"  # three switches sw1..sw3 with 5, 3 and 2 inputs
NO_PAUSE = {"flow_control.mode": "none"}


def scenario(scheme: str | None = None, params: dict | None = None, path=BASE, **overrides):
    """The scenario at ``path`` with ``cm.scheme = scheme``, ``cm.params = params`` and dotted overrides."""
    sets = dict(overrides)
    if scheme is not None:
        sets["cm.scheme"] = scheme
        sets["cm.params"] = params or {}
    return load_scenario(path, {k.replace("__", "."): v for k, v in sets.items()})


def config_warnings(sc) -> list[str]:
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        compile_ir(sc)
    return sorted({str(w.message) for w in got if issubclass(w.category, ConfigWarning)})


@pytest.mark.parametrize(
    "scheme,params,field",
    [
        ("bcn", {"qeq": "10MB"}, "cm.params.qeq"),
        ("bcn", {"severe": "max", "qsc": "200KB"}, "cm.params.qsc"),
        ("ecm", {"qeq": "150KB", "qsc": "1MB"}, "cm.params.qeq"),
        ("qcn", {"qeq": "1MB"}, "cm.params.qeq"),
        ("becn", {"qeq": "150KB"}, "cm.params.qeq"),
        ("fecn", {"qeq": "200KB"}, "cm.params.qeq"),
        ("fecn", {"efecn": True, "qsc": "300KB"}, "cm.params.qsc"),
        ("dcqcn", {"kmin": "500KB", "kmax": "900KB"}, "cm.params.kmin"),
    ],
    ids=["bcn-qeq", "bcn-qsc", "ecm-qeq", "qcn-qeq", "becn-qeq", "fecn-qeq", "fecn-qsc", "dcqcn-kmin"],
)
def test_unreachable_queue_threshold_warns_naming_the_field(scheme, params, field):
    sc = scenario(scheme, params)  # loading compiles too: warnings counted below are those of one compile
    with pytest.warns(
        ConfigWarning,
        match=rf"^{field}: .* is not below the longest egress queue of switch "
        r"'sw1' \(defaults\.buffer\.size = 150KB\): the queue never exceeds it",
    ) as got:
        compile_ir(sc)
    # one warning per field, and only for the fields that cannot be reached
    fields = sorted(str(w.message).split(":")[0] for w in got if issubclass(w.category, ConfigWarning))
    assert fields.count(field) == 1
    assert all(f.startswith("cm.params.") and f[len("cm.params.") :] in params for f in fields), fields


def test_threshold_warning_says_what_stops_acting():
    (msg,) = config_warnings(scenario("dcqcn", {"kmin": "500KB", "kmax": "900KB"}))
    assert msg.endswith("no frame is ever ECN-marked and DCQCN never slows a source (got 500KB)")
    (msg,) = config_warnings(scenario("bcn", {"severe": "zero", "qsc": "150KB"}))
    assert "cm.params.severe = 'zero': BCN(0,0) above Qsc) never fires" in msg


def test_a_threshold_of_an_unused_rule_does_not_warn():
    # Qsc only matters with severe on (bcn) or efecn on (fecn); kmax above the buffer only flattens the
    # marking curve (marking still happens between kmin and the buffer)
    assert config_warnings(scenario("bcn", {"severe": "none", "qsc": "10MB"})) == []
    assert config_warnings(scenario("fecn", {"efecn": False, "qsc": "10MB"})) == []
    assert config_warnings(scenario("dcqcn", {"kmin": "5KB", "kmax": "900KB"})) == []


def test_a_scheme_default_can_warn_and_says_so():
    """ECM's default Qmc (qsc = 83.2KB) with a 64-KB buffer: BCN-MAX never fires; the value is the default."""
    (msg,) = config_warnings(scenario("ecm", {}, defaults__buffer__size="64KB"))
    assert msg.startswith("cm.params.qsc: the severe-congestion threshold Qsc (ecm) is not below")
    assert msg.endswith("(got 83.2KB, the ecm default)")


def test_several_switches_share_one_warning():
    """Partitioned buffers: an egress queue holds one 150-KB partition per other port, so sw1 (5 inputs) can
    queue 750 KB, sw2 (3) 450 KB and sw3 (2) 300 KB; Qeq = 400KB is out of reach at sw3 only, 1MB at all."""
    msgs = config_warnings(
        scenario("qcn", {"qeq": "400KB"}, PARKING, defaults__buffer__policy="partitioned", **NO_PAUSE)
    )
    assert msgs == [
        "cm.params.qeq: the equilibrium queue Qeq (qcn) is not below the longest egress queue of 1 of 3 switches "
        "(sw3) (partitioned policy: 2 inputs x defaults.buffer.size (150KB) = 300KB): the queue never exceeds "
        "it, so Qoff = Q - Qeq stays negative and a CNM is sent only while the queue grows fast "
        "(w x Qdelta > Qeq - Q) (got 400KB)"
    ]
    (msg,) = config_warnings(
        scenario("qcn", {"qeq": "1MB"}, PARKING, defaults__buffer__policy="partitioned", **NO_PAUSE)
    )
    assert "of all 3 switches (sw1, sw2, sw3) (largest at 'sw1': partitioned policy: 5 inputs x" in msg
    # an egress buffer: every queue is limited by the buffer itself
    (msg,) = config_warnings(scenario("qcn", {"qeq": "150KB"}, PARKING, **NO_PAUSE))
    assert "of all 3 switches (sw1, sw2, sw3) (defaults.buffer.size = 150KB)" in msg


def test_hotspot_starting_after_the_run_warns_on_start():
    sc = scenario(hotspot=[{"switch": "sw1", "toward": "sink", "start": "200ms", "end": "300ms", "rate": "1Gbps"}])
    assert config_warnings(sc) == [
        "hotspot.0.start: not before run.duration (100ms): the hotspot never applies (got 200ms)"
    ]


def test_hotspot_without_end_starting_after_the_run_is_an_error_on_start():
    """Without end the window ends with the run: an empty window, an error as for traffic.N.start, on the
    field the user set (not hotspot.N.end)."""
    with pytest.raises(ConfigError) as err:
        scenario(hotspot=[{"switch": "sw1", "toward": "sink", "start": "200ms", "rate": "1Gbps"}])
    assert [str(p) for p in err.value.problems] == ["hotspot.0.start: must be < run.duration (100ms) (got '200ms')"]


def test_pfc_headroom_warning_is_one_line_for_many_switches():
    sc = load_scenario(
        ROOT / "scenarios/datacenter/fat-tree-k4-websearch-dcqcn-pfc.toml", {"flow_control.headroom": "3KB"}
    )
    (msg,) = config_warnings(sc)
    assert msg.startswith(
        "flow_control.headroom: PFC headroom of all 20 switches is below the formula on 80 of "
        "their 80 ports (largest: switch "
    )
    assert msg.endswith("lossless priorities can drop frames (got 3KB)")


def test_pause_headroom_warning_is_one_line_for_many_switches():
    """The seed-000 parking lot (global PAUSE, 10 KB of headroom) is short at all three switches: one
    warning naming them and the largest gap; a single short switch keeps its own wording."""
    (msg,) = config_warnings(load_scenario(ROOT / "scenarios/seed-000/parking-lot-bcn.toml"))
    assert msg.startswith(
        "flow_control.high: PAUSE headroom of all 3 switches (sw1, sw2, sw3) is below the "
        "overshoot after XOFF (2 x rate x link delay + 2 frames + the PAUSE frame); the largest "
        "gap is at switch 'sw1': 10KB (defaults.buffer.size - flow_control.high) against the sum "
        "over its 6 inputs of the overshoot, 25.884KB"
    ), msg
    assert msg.endswith("frames can be dropped with PAUSE on (got 140KB)")
    (one,) = config_warnings(load_scenario(ROOT / "scenarios/seed-000/symmetric-bcn.toml"))
    assert one.startswith("flow_control.high: PAUSE headroom of switch 'sw1' is 10KB"), one
    (two,) = config_warnings(load_scenario(ROOT / "scenarios/seed-000/asymmetric-bcn.toml"))
    assert "PAUSE headroom of both switches (sw1, sw2) is below" in two, two


@pytest.mark.parametrize(
    "scheme,params",
    [
        ("bcn", {"severe": "max", "oversampling": "thresh"}),
        ("ecm", {}),
        ("qcn", {}),
        ("becn", {}),
        ("fecn", {"efecn": True}),
        ("dcqcn", {}),
        ("hpcc", {}),
        ("none", {}),
    ],
)
def test_a_correct_configuration_gives_no_warning(scheme, params):
    sc = scenario(scheme, params, hotspot=[{"switch": "sw1", "toward": "sink", "start": "20ms", "rate": "1Gbps"}])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfigWarning)
        compile_ir(sc)


CNSIM_1HOP = ROOT / "scenarios/seed-003/cnsim-1hop-none-hs0.5-pause.toml"  # the preset sets buffer and latency
MULTISTAGE = ROOT / "scenarios/seed-004/og-multistage-bcn.toml"  # the preset sets buffers and link delays


@pytest.mark.parametrize(
    "path,field,element,preset",
    [
        (CNSIM_1HOP, "buffer.size", "switch", "cnsim_1hop"),
        (CNSIM_1HOP, "switch_latency", "switch", "cnsim_1hop"),
        (MULTISTAGE, "buffer.size", "switch", "og_multistage"),
        (MULTISTAGE, "link_delay", "link", "og_multistage"),
    ],
    ids=["1hop-buffer", "1hop-latency", "multistage-buffer", "multistage-delay"],
)
def test_a_default_that_no_element_takes_warns(path, field, element, preset):
    """`--set defaults.buffer.size=...` on a preset that sizes every buffer itself would change nothing:
    the warning names the default and where the elements' own values come from."""
    value = "2us" if field in ("switch_latency", "link_delay") else "100KB"
    (msg,) = config_warnings(load_scenario(path, {f"defaults.{field}": value}))
    assert msg == (
        f"defaults.{field}: not used: every {element} has its own, set by the preset {preset!r} "
        f"(its parameters: `cnsim describe {preset}`) or the scenario"
    )


def test_a_default_some_element_takes_does_not_warn():
    """fan-in-4 leaves its switch's buffer and its links to [defaults]; one switch or link of a scenario
    with its own value does not make the default unused while others take it."""
    assert (
        config_warnings(
            scenario(
                **{"defaults.buffer.size": "100KB", "defaults.link_delay": "2us", "defaults.switch_latency": "2us"}
            )
        )
        == []
    )
    assert (
        config_warnings(
            scenario(**{"defaults.link_delay": "2us", "topology.links": [{"a": "h1", "b": "sw1", "delay": "1us"}]})
        )
        == []
    )


def test_a_frame_size_default_no_generator_takes_warns_and_does_not_size_the_buffer_check():
    """Every generator of fan-in-4 given its own 1500-B frames: a 9000-B defaults.frame_size is sent by
    nobody, so it warns and does not make the 5-KB buffer 'smaller than one frame'."""
    sc = scenario(**{"defaults.frame_size": "9000B", "traffic.0.frame_size": "1500B", "defaults.buffer.size": "5KB"})
    assert config_warnings(sc) == [
        "defaults.frame_size: not used: every generator has its own, set by the "
        "scenario (frame_size or size_mix of each [[traffic]])"
    ]


def test_a_sweep_or_a_rerun_of_a_resolved_scenario_does_not_invent_defaults():
    """A sweep re-resolves its base scenario for every point, and `cnsim.run(scenario_object, seed=…)`
    re-resolves the object, both from a dump with every default written out: the built-in values a
    preset overrides are not taken for the user's choice, so nothing warns (before, every sweep of a
    cnsim_1hop or og_multistage scenario printed three 'not used' warnings)."""
    import cnsim.api as api
    from cnsim.experiments.sweep import SweepSpec, expand

    for path in (CNSIM_1HOP, MULTISTAGE):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            sc = api.resolve(path)
            again = api.resolve(sc, seed=7, overrides={"run.name": "again"})
            runs = expand(
                SweepSpec(
                    base=str(path.relative_to(ROOT / "scenarios")), replications=2, parameters={"run.name": ["a", "b"]}
                ),
                root=ROOT / "scenarios",
            )
        assert [str(w.message) for w in got if issubclass(w.category, ConfigWarning)] == []
        assert again.defaults == sc.defaults and again.run.seed == 7
        assert len(runs) == 4
    # what the user did set is still carried over (and still warns when a preset overrides it)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        sc = api.resolve(CNSIM_1HOP, overrides={"defaults.buffer.size": "100KB"})
        assert api.resolve(sc, seed=3).defaults.buffer.size == 100_000
    assert sum("defaults.buffer.size: not used" in str(w.message) for w in got) == 2


def test_running_a_resolved_config_again_does_not_warn():
    """`resolved-config.toml` writes every default out; run again, the built-in values of a preset
    scenario's [defaults] are not taken for the user's choice (no 'not used' warning), while a value the
    user did choose still warns from the resolved file."""
    import tomllib

    from cnsim.compile.loader import dump_toml

    for path in (CNSIM_1HOP, MULTISTAGE):
        text = dump_toml(load_scenario(path))
        assert "[defaults.buffer]" in text
        assert config_warnings(load_scenario(tomllib.loads(text))) == []
    chosen = dump_toml(load_scenario(CNSIM_1HOP, {"defaults.buffer.size": "100KB"}))
    assert [m.split(":")[0] for m in config_warnings(load_scenario(tomllib.loads(chosen)))] == ["defaults.buffer.size"]
