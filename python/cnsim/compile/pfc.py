"""PFC (IEEE 802.1Qbb) in the scenario: checks, the headroom formula and the engine IR of ``flow_control.mode =
"pfc"`` (``crates/cnsim-core/src/net/flowctl/pfc.rs`` runs it).

Headroom of an (input port, lossless priority): what can still arrive on the input once XOFF is decided,
in bytes (docs/datacenter.md, "PFC headroom")::

    headroom = rate x (2 x link delay + response time + switch latency) / 8
               + 3 x (largest frame + wire overhead) + (PFC frame + wire overhead)

The components are those of IEEE 802.1Qbb's headroom budget as laid out in Cisco's white paper "Priority
Flow Control: Build Reliable Layer 2 Infrastructure" (c11-542809): the frame this port is sending when XOFF
is decided, the PFC frame, the cable both ways, the peer's response time and the frame the peer is sending
when the PFC frame arrives. cnsim adds the switch latency (frames between the wire and the buffer are
already on their way) and one more frame for the trigger's granularity (the first frame admitted after XOFF
may have started before the window the other terms cover). Interface (PHY) delays are 0 in cnsim.
"""

from __future__ import annotations

from typing import Any, Protocol

from cnsim.compile.network import WIRE_OVERHEAD_BYTES, Link, Network, Node, _switches
from cnsim.scenario.units import format_quantity as fq


class Compiler(Protocol):
    """What the PFC step uses of the compiler (:class:`cnsim.compile.compiler.Compiler`): the scenario, the
    resolved network, the largest frame, and where problems and warnings go."""

    sc: Any
    net: Network

    def max_frame(self) -> int: ...
    def error(self, path: str, message: str, *value: Any) -> None: ...
    def warn(self, path: str, message: str, *value: Any) -> None: ...


PS_PER_S = 10**12


def headroom_bytes(
    rate_bps: int, delay_ps: int, response_ps: int, latency_ps: int, mtu: int, pfc_frame: int, wire: int
) -> int:
    """The PFC headroom formula (module docstring) for one input port, bytes (rounded up)."""
    in_flight = -(-rate_bps * (2 * delay_ps + response_ps + latency_ps) // (8 * PS_PER_S))
    return in_flight + 3 * (mtu + wire) + pfc_frame + wire


def ports_of(c: Compiler, n: Node) -> list[Link]:
    """The links of switch ``n`` in the engine's port order (IR link order)."""
    return [lk for lk in c.net.links if n.name in (lk.a, lk.b)]


def pfc_ir(c: Compiler, switches: list[Node]) -> dict[str, dict[str, Any]]:
    """The ``pause`` IR of every switch under PFC; problems and warnings go to the compiler."""
    fc, d = c.sc.flow_control, c.sc.defaults
    if fc.switches != "all":
        c.error(
            "flow_control.switches",
            "PFC runs on every switch (a PFC frame must reach a PFC port); allowed: 'all'",
            fc.switches,
        )
    if fc.low is not None:
        c.error("flow_control.low", "not used with mode 'pfc': XON is hysteresis below XOFF", fq(fc.low, "size"))
    mtu = c.max_frame()
    hysteresis = fc.hysteresis if fc.hysteresis is not None else mtu
    if fc.threshold == "static":
        if fc.high is None:
            c.error(
                "flow_control.high",
                "threshold = 'static' needs high: the XOFF level of one (input, priority) in the shared pool",
            )
            threshold: dict[str, Any] = {"kind": "static", "xoff_bytes": 0}
        else:
            if fc.high < mtu + hysteresis:
                c.error(
                    "flow_control.high",
                    f"must be >= the largest frame + hysteresis ({fq(mtu + hysteresis, 'size')})",
                    fq(fc.high, "size"),
                )
            threshold = {"kind": "static", "xoff_bytes": fc.high}
    else:
        if fc.high is not None:
            c.error(
                "flow_control.high",
                "set but flow_control.threshold is 'dynamic' (alpha x free pool); use threshold = 'static'",
                fq(fc.high, "size"),
            )
        threshold = {"kind": "dynamic", "alpha": fc.alpha}
    lossless = sorted(set(fc.priorities if fc.priorities is not None else [g.priority for g in c.sc.traffic]))
    if not lossless:
        c.error("flow_control.priorities", "at least one lossless priority (0-7)", fc.priorities)
    wire = WIRE_OVERHEAD_BYTES if d.wire_overhead else 0
    scheduler = (
        {"kind": "strict"}
        if fc.scheduler == "strict"
        else {"kind": "dwrr", "quantum_bytes": [w * mtu for w in fc.weights]}
    )
    out = {}
    short_at: list[tuple[str, int, int, str, int]] = []  # (switch, ports short, ports, worst peer, its formula)
    for n in switches:
        if n.buffer_policy != "shared":
            c.error(
                "flow_control.mode",
                f"PFC accounts per (input, priority) in one shared buffer; switch {n.name!r} "
                f"has buffer policy {n.buffer_policy!r} (allowed: 'shared')",
                fc.mode,
            )
        links = ports_of(c, n)
        need = [
            headroom_bytes(lk.rate_bps, lk.prop_ps, fc.response_time, n.latency_ps, mtu, d.control_frame_size, wire)
            for lk in links
        ]
        if fc.headroom == "auto":
            head = need
        else:
            head = [fc.headroom] * len(links)
            short = [(lk, h) for lk, h in zip(links, need) if fc.headroom < h]
            if short:
                lk, h = max(short, key=lambda x: x[1])
                short_at.append((n.name, len(short), len(links), lk.b if lk.a == n.name else lk.a, h))
        reserved = sum(head) * len(lossless)
        if reserved >= n.buffer_bytes:
            c.error(
                "flow_control.headroom",
                f"switch {n.name!r} reserves {fq(reserved, 'size')} of headroom "
                f"({len(links)} ports x {len(lossless)} lossless priorities), which leaves no shared pool in "
                f"its buffer ({n.buffer_path} = {fq(n.buffer_bytes, 'size')})",
                fc.headroom,
            )
        out[n.name] = {
            "mode": "pfc",
            "enabled": sum(1 << k for k in lossless),
            "threshold": threshold,
            "hysteresis_bytes": hysteresis,
            "headroom_bytes": head,
            "mtu_bytes": mtu,
            "quanta": fc.quanta,
            "refresh_fraction": fc.refresh,
            "response_ps": fc.response_time,
            "scheduler": scheduler,
        }
    if short_at:  # one warning for the field, not one per switch
        formula = (
            "2 x rate x link delay + rate x (flow_control.response_time + switch latency) + 3 frames + the PFC frame"
        )
        name, n_short, n_ports, peer, h = max(short_at, key=lambda x: x[4])
        if len(short_at) == 1:
            where = (
                f"PFC headroom of switch {name!r} is below the formula on {n_short} of its {n_ports} ports "
                f"(toward {peer!r}: {fq(h, 'size')} = {formula})"
            )
        else:
            where = (
                f"PFC headroom of {_switches([x[0] for x in short_at], len(switches))} is below the formula "
                f"on {sum(x[1] for x in short_at)} of their {sum(x[2] for x in short_at)} ports (largest: "
                f"switch {name!r} toward {peer!r}: {fq(h, 'size')} = {formula})"
            )
        c.warn("flow_control.headroom", f"{where}: lossless priorities can drop frames", fq(fc.headroom, "size"))
    return out
