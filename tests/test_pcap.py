"""Packet traces (issue 36): libpcap files of chosen ports and windows, read back with a real pcap reader
(scapy) — exactly the frames the port transmitted, with their sizes, priorities, ECN marks and the MAC control,
RoCEv2 and 802.1Qau frames of docs/pcap.md."""

from __future__ import annotations

import struct
import warnings

import cnsim
import pytest
from cnsim.compile.compiler import compile_ir
from cnsim.compile.loader import load_scenario
from cnsim.exceptions import ConfigError, ConfigWarning
from conftest import ROOT, needs_core

scapy_all = pytest.importorskip("scapy.all")
rdpcap, Dot1Q, IP, TCP, UDP, Ether = (
    scapy_all.rdpcap,
    scapy_all.Dot1Q,
    scapy_all.IP,
    scapy_all.TCP,
    scapy_all.UDP,
    scapy_all.Ether,
)
pytestmark = needs_core
SHIPPED = ROOT / "scenarios/datacenter/incast-dcqcn-pfc-pcap.toml"
FRAME_TIME = 1500 * 8 / 10e9


def run(sc, tmp_path, **overrides):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        return cnsim.run(sc, overrides=overrides, out=tmp_path / "out", plots=False).summary


def read(tmp_path, name):
    return rdpcap(str(tmp_path / "out" / "pcap" / f"{name}.pcap"))


def dctcp(**extra) -> dict:
    """3 DCTCP senders of priority 5 writing 5 Gb/s each into sink, marking at 15 KB; they stop writing at 0.5 ms,
    so every frame
    is delivered within the 5-ms run (a loss of the first slow start waits for a 1-ms timeout at most)."""
    sc = {
        "run": {"duration": "5ms"},
        "topology": {"preset": "fan_in", "params": {"n_senders": 3}},
        "defaults": {"ecn_threshold": "15KB"},
        "traffic": [
            {
                "name": "t",
                "kind": "cbr",
                "rate": "5Gbps",
                "src": "all",
                "dst": "sink",
                "transport": "dctcp",
                "priority": 5,
                "stop": "0.5ms",
            }
        ],
        "observe": {
            "pcap": [
                {"port": ["sw1", "sink"]},
                {"port": ["sink", "sw1"]},
                {"port": ["sw1", "sink"], "start": "100us", "end": "200us", "name": "window"},
            ]
        },
    }
    sc.update(extra)
    return sc


def test_a_port_trace_holds_exactly_its_frames_with_sizes_priorities_and_marks(tmp_path):
    s = run(dctcp(), tmp_path)
    assert s["frames"]["in_flight"] == 0 and s["frames"]["delivered"] == s["frames"]["generated"]
    data = read(tmp_path, "sw1-sink")
    # every data frame crossed sw1 → sink: the trace has exactly them, in order of transmission
    assert len(data) == s["frames"]["delivered"] == next(p["frames"] for p in s["pcap"] if p["name"] == "sw1-sink")
    assert all(p.haslayer(Dot1Q) and p[Dot1Q].prio == 5 and p.haslayer(TCP) for p in data)
    assert {p.wirelen for p in data} == {1500 + 18} and all(p[IP].len == 1500 for p in data)
    # ECN: CE exactly on the frames the switch marked, ECT(0) on the others (DCTCP is ECN-capable)
    q = next(q for q in s["queues"] if q["port"] == "sink")
    ce = sum(p[IP].tos & 3 == 3 for p in data)
    assert ce == q["ecn_marks"] > 0
    assert all(p[IP].tos & 3 in (2, 3) for p in data)
    # stamps: transmission starts, one frame time apart at least
    t = [float(p.time) for p in data]
    assert all(b - a >= FRAME_TIME - 1e-12 for a, b in zip(t, t[1:]))
    # TCP sequence numbers are the byte offsets: each flow's first segments are 0, 1460, 2920, ...
    first = [p for p in data if p[TCP].sport == data[0][TCP].sport][:3]
    assert [p[TCP].seq for p in first] == [0, 1460, 2920]
    # the receiver's ACKs: 64-B IP packets, ECE echoed, priority 5, one per delivered segment
    acks = read(tmp_path, "sink-sw1")
    assert len(acks) == s["tcp"]["acks"]["generated"]
    assert {p.wirelen for p in acks} == {64 + 18} and all(p[Dot1Q].prio == 5 and p[TCP].flags & 0x10 for p in acks)
    assert sum(bool(p[TCP].flags & 0x40) for p in acks) > 0
    # a window keeps exactly the frames that started in it
    win = read(tmp_path, "window")
    assert len(win) == sum(100e-6 <= x < 200e-6 for x in t) > 0


def test_the_shipped_scenario_traces_roce_data_cnps_and_pfc(tmp_path):
    s = run(SHIPPED, tmp_path)
    files = {p["name"]: p for p in s["pcap"]}
    assert set(files) == {"sw1-sink", "sink-sw1", "sw1-h1"}
    data = read(tmp_path, "sw1-sink")
    assert len(data) == files["sw1-sink"]["frames"] > 100
    for p in data:
        assert p[Dot1Q].prio == 3 and p[UDP].dport == 4791 and p.wirelen == 1518
        bth = bytes(p[UDP].payload)
        assert bth[0] == 0x04 and p[IP].tos & 3 in (2, 3)  # RC SEND Only; RoCE is ECN-capable
    assert any(p[IP].tos & 3 == 3 for p in data), "DCQCN marked some frames CE"
    cnps = read(tmp_path, "sink-sw1")
    assert len(cnps) == s["control"]["messages"]["cnp"] > 0  # every CNP fell in the 300-us window
    assert all(bytes(p[UDP].payload)[0] == 0x81 and p[UDP].dport == 4791 and p.wirelen == 64 + 18 for p in cnps)
    # sw1 → h1: the CNPs for h1 and the PFC frames, MAC control with opcode 0x0101
    to_h1 = read(tmp_path, "sw1-h1")
    pfc = [p for p in to_h1 if p[Ether].type == 0x8808]
    assert pfc and all(p.wirelen == 60 and p[Ether].dst == "01:80:c2:00:00:01" for p in pfc)
    for p in pfc:
        opcode, cev = struct.unpack("!HH", bytes(p[Ether].payload)[:4])
        times = struct.unpack("!8H", bytes(p[Ether].payload)[4:20])
        assert opcode == 0x0101 and cev == 1 << 3 and all(times[k] == 0 for k in range(8) if k != 3)
    port = next(x for x in s["pfc"]["ports"] if x["node"] == "sw1" and x["peer"] == "h1")
    assert len(pfc) <= port["pause_sent"][3]


def test_pause_and_cnm_frames_have_their_own_ethertypes(tmp_path):
    sc = {
        "run": {"duration": "1ms"},
        "topology": {"preset": "fan_in", "params": {"n_senders": 2}},
        "traffic": [{"name": "t", "kind": "saturated", "src": "all", "dst": "sink"}],
        "cm": {"scheme": "qcn"},
        "flow_control": {"mode": "global", "high": "40KB", "low": "30KB"},
        "observe": {"pcap": [{"port": ["sw1", "h1"]}, {"port": ["sw1", "h2"]}, {"port": ["sw1", "sink"]}]},
    }
    s = run(sc, tmp_path)
    frames = [p for n in ("sw1-h1", "sw1-h2", "sw1-sink") for p in read(tmp_path, n)]
    pause = [p for p in frames if p[Ether].type == 0x8808]
    # every PAUSE the switch sent, 802.3x: opcode 1, 60 bytes
    assert len(pause) == s["pause"]["frames_sent"] > 0
    assert all(struct.unpack("!H", bytes(p[Ether].payload)[:2])[0] == 1 and p.wirelen == 60 for p in pause)
    cnm = [p for p in frames if p.haslayer(Dot1Q) and p[Dot1Q].type == 0x22E9]
    assert len(cnm) == s["control"]["messages"]["cnm"] > 0
    # CNM PDU: version 0 with QntzFb in the low 6 bits, then the CPID of an egress port of sw1
    cpids = {q["cpid"] for q in s["queues"]}
    for p in cnm:
        pdu = bytes(p[Dot1Q].payload)
        assert pdu[0] >> 4 == 0 and struct.unpack("!Q", pdu[2:10])[0] in cpids


def test_bad_captures_are_field_errors():
    base = dctcp()
    for pcap, field in (
        ([{"port": ["sw1", "nosuch"]}], "observe.pcap.0.port"),
        ([{"port": ["h1", "sink"]}], "observe.pcap.0.port"),
        ([{"port": ["sw1", "sink"], "start": "1ms", "end": "1ms"}], "observe.pcap.0.end"),
        ([{"port": ["sw1", "sink"], "name": "a"}, {"port": ["sink", "sw1"], "name": "a"}], "observe.pcap.1.name"),
    ):
        with pytest.raises(ConfigError) as e:
            compile_ir(load_scenario({**base, "observe": {"pcap": pcap}}))
        assert field in str(e.value)
    with pytest.raises(ConfigError, match="observe.pcap.0.snaplen"):
        load_scenario({**base, "observe": {"pcap": [{"port": ["sw1", "sink"], "snaplen": 10}]}})


def test_no_capture_leaves_the_ir_and_the_outputs_as_they_were(tmp_path):
    ir = compile_ir(load_scenario({**dctcp(), "observe": {}}))
    assert "pcap" not in ir["observe"]
    s = run({**dctcp(), "observe": {}}, tmp_path)
    assert "pcap" not in s and not (tmp_path / "out" / "pcap").exists()
    # in memory (no output folder) a capture cannot be written: a warning says so
    with pytest.warns(ConfigWarning, match="observe.pcap"):
        r = cnsim.run(dctcp(), plots=False)
    assert "pcap" not in r.summary
