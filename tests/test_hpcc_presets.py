"""The HPCC paper's baselines (issue 36): the DCQCN baseline preset, HPCC's paper and reference presets, INT
bytes on the wire, and the run-end note of a link held far below its capacity."""

from __future__ import annotations

import warnings

import cnsim
import pytest
from cnsim import schemes
from cnsim.compile.compiler import compile_ir
from cnsim.compile.loader import load_scenario
from cnsim.exceptions import ConfigWarning, RunWarning
from conftest import ROOT, needs_core

DC = ROOT / "scenarios/datacenter"
SIGCOMM = DC / "dcqcn-incast-100g-sigcomm2015.toml"
BASELINE = DC / "dcqcn-incast-100g-hpcc-paper.toml"
REFERENCE = DC / "hpcc-incast-100g-reference.toml"


def run(sc, **overrides):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        s = cnsim.run(sc, overrides=overrides, plots=False).summary
    return s, [w for w in seen if issubclass(w.category, RunWarning)]


def sink_utilisation(s):
    return next(lk["utilization"] for lk in s["links"] if lk["to"] == "sink")


def test_the_dcqcn_baseline_of_the_hpcc_paper():
    s = schemes.get("dcqcn")
    ir = s.to_ir(s.params(variant="hpcc_paper"))
    # simulation/run.py --cc dcqcn of the HPCC authors: the Mellanox machine, settings per 25 Gb/s
    assert ir["variant"] == "mellanox" and ir["rate_reference_bps"] == 25e9
    assert (ir["g"], ir["alpha_resume_ps"], ir["rate_timer_ps"], ir["fast_recovery_th"]) == (
        1 / 256,
        10**6,
        300 * 10**6,
        1,
    )
    assert (ir["r_ai_bps"], ir["r_hai_bps"], ir["min_rate_bps"]) == (5e6, 50e6, 1e9)
    assert (ir["kmin_bytes"], ir["kmax_bytes"], ir["pmax"], ir["cnp_interval_ps"]) == (100_000, 400_000, 0.2, 0)
    assert ir["byte_counter_bytes"] == 0 and ir["rate_decrease_interval_ps"] == 4 * 10**6
    # a field set by the user wins over the variant; the other variants' IRs carry no reference rate
    assert s.to_ir(s.params(variant="hpcc_paper", kmin="50KB"))["kmin_bytes"] == 50_000
    assert "rate_reference_bps" not in s.to_ir(s.params()) and s.to_ir(s.params())["kmin_bytes"] == 5_000


def test_the_hpcc_presets_state_max_stage_and_w_ai():
    s = schemes.get("hpcc")
    paper, ref = s.to_ir(s.params()), s.to_ir(s.params(preset="reference"))
    # the paper: Algorithm 1 with maxStage 5, W_AI = W_init (1 - eta) / N, INT 2 + 8 per hop
    assert (paper["max_stage"], paper["w_ai_bytes"], paper["min_rate_bps"]) == (5, 0.0, 100e6)
    assert (paper["int_base_bytes"], paper["int_hop_bytes"]) == (2, 8) and "rate_ai_bps" not in paper
    # the reference simulation: MI_THRESH 0, RATE_AI 10 Mb/s per 25 Gb/s, MIN_RATE 1 Gb/s, the 42-B IntHeader
    assert (ref["max_stage"], ref["rate_ai_bps"], ref["rate_reference_bps"], ref["min_rate_bps"]) == (
        0,
        10e6,
        25e9,
        1e9,
    )
    assert (ref["int_base_bytes"], ref["int_hop_bytes"]) == (42, 0)
    # a user's rate_ai is absolute; int_header = 'off' puts no INT bytes on the wire
    mine = s.to_ir(s.params(rate_ai="40Mbps", int_header="off"))
    assert mine["rate_ai_bps"] == 40e6 and "rate_reference_bps" not in mine
    assert (mine["int_base_bytes"], mine["int_hop_bytes"]) == (0, 0)


@needs_core
def test_sigcomm2015_parameters_hold_a_100g_incast_far_below_and_the_run_says_so():
    s, notes = run(SIGCOMM)
    assert sink_utilisation(s) < 0.3
    [note] = s["notes"]
    assert (note["from"], note["to"], note["scheme"]) == ("sw1", "sink", "dcqcn")
    assert note["offered_bps"] == pytest.approx(800e9) and note["utilization"] == sink_utilisation(s)
    assert {"r_ai", "rate_timer", "byte_counter", "min_rate", "g"} <= set(note["parameters"])
    assert note["parameters"]["r_ai"] == "40Mbps" and note["parameters"]["variant"] == "paper"
    assert len(notes) == 1 and "sw1 → sink" in str(notes[0].message) and "r_ai = 40Mbps" in str(notes[0].message)
    # the HPCC paper's baseline scales with the link and fills it: no note
    s, notes = run(BASELINE)
    assert sink_utilisation(s) > 0.8 and s["notes"] == [] and notes == []
    assert s["control"]["messages"]["cnp"] > 10 * 80


@needs_core
def test_no_note_without_cm_or_when_the_link_is_used():
    s, notes = run(SIGCOMM, **{"cm.scheme": "none", "cm.params": {}})
    assert s["notes"] == [] and notes == [] and sink_utilisation(s) > 0.99


@needs_core
def test_hpcc_reference_preset_carries_42_bytes_of_int_per_frame():
    s, _ = run(REFERENCE)
    assert s["int"] == {"source_bytes": 42, "hop_bytes": 0, "bytes_added": s["int"]["bytes_added"]}
    assert 0.9 < sink_utilisation(s) < 0.97 and s["frames"]["dropped"] == 0
    assert s["conservation"]["ok"]


def lone_hpcc(int_header: str, **extra) -> dict:
    """One HPCC flow h1 → h3 over two switches at 2 Gb/s for 1 ms (everything delivered by the end)."""
    return {
        "run": {"duration": "2ms"},
        "topology": {"preset": "symmetric", "params": {"n_sources": 2}},
        "traffic": [{"name": "cbr", "kind": "cbr", "rate": "2Gbps", "src": "h1", "dst": "h3", "stop": "1ms"}],
        "cm": {"scheme": "hpcc", "params": {"int_header": int_header, **extra}},
    }


@needs_core
@pytest.mark.parametrize("header, per_frame", [("per_hop", 2 + 8 * 2), ("fixed", 42), ("off", 0)])
def test_int_bytes_are_on_the_wire_and_not_in_the_data(header, per_frame):
    ir = compile_ir(load_scenario(lone_hpcc(header)))
    path = [n["name"] for n in ir["nodes"]]
    assert {"sw1", "sw2"} <= set(path)
    s, _ = run(lone_hpcc(header))
    frames = s["frames"]["delivered"]
    assert frames == s["frames"]["generated"] and s["frames"]["in_flight"] == 0
    # exactly the header bytes of every frame, none counted as data
    assert s["int"]["bytes_added"] == frames * per_frame
    assert s["bytes"]["delivered"] == frames * 1500
    # the last link's busy time is the frames with their INT bytes (per hop: 2 + 8 + 8 B after sw2)
    last = next(lk for lk in s["links"] if lk["from"] == "sw2" and lk["to"] == "h3")
    busy_s = last["utilization"] * 2e-3
    assert busy_s == pytest.approx(frames * (1500 + per_frame) * 8 / 10e9, rel=1e-9)


def test_int_bytes_enter_the_largest_frame_of_buffer_and_headroom_checks():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        sc = load_scenario(lone_hpcc("per_hop"))
    from cnsim.compile.compiler import Compiler

    c = Compiler(sc)
    c.compile()
    assert c.max_frame() == 1500 + 2 + 8 * 2  # two switches between the hosts
    sc = load_scenario(lone_hpcc("fixed"))
    c = Compiler(sc)
    c.compile()
    assert c.max_frame() == 1500 + 42
