"""Named topologies: every seed topology of model reference §9 plus the benchmark fan-in and an M/D/1 port.

A preset turns a few parameters (``[topology.params]``) into explicit hosts, switches and links.
It sets only what the seed fixes for that topology (the CN-SIM switch latency and BUF-IN buffer,
the 1 Gb/s link of the asymmetric topology, ...); everything else falls back to ``[defaults]``,
and any element can still be overridden by name (``--set topology.switches.sw1.latency=1us``).
"""

# No `from __future__ import annotations` in the modules of pydantic models: pydantic would evaluate each
# field's annotation from its string when it creates the class and again when it builds the schema
# (15 M instructions, ≈ 3 ms, of a 1-ms run).

from dataclasses import dataclass
from typing import Callable, Literal

from pydantic import BaseModel, Field

from cnsim.scenario.quantities import Rate, Size, Time
from cnsim.scenario.topology import BufferSpec, Elements, HostSpec, LinkSpec, Strict, SwitchSpec
from cnsim.scenario.units import format_quantity


@dataclass(frozen=True)
class Preset:
    """A registered topology: name, provenance, parameter model and builder."""

    name: str
    summary: str
    params: type[BaseModel]
    build: Callable[[BaseModel], Elements]


def _q(value: int | None, kind: str) -> str | None:
    """A base-unit value as the unit string element models accept (None stays None)."""
    return None if value is None else format_quantity(value, kind)


def _hosts(prefix: str, first: int, last: int) -> list[HostSpec]:
    return [HostSpec(name=f"{prefix}{i}") for i in range(first, last + 1)]


def _star(switch: str, hosts: list[HostSpec]) -> list[LinkSpec]:
    return [LinkSpec(a=h.name, b=switch) for h in hosts]


# --- §9.1 S-SYM ------------------------------------------------------------------------------
class SymmetricParams(Strict):
    """Parameters of ``symmetric``."""

    n_sources: int = Field(4, ge=1, le=1000, description="hosts h1..hN on sw1 (the seed has 4)")


def symmetric(p: SymmetricParams) -> Elements:
    """``h1..hN —— sw1 —— sw2 —— h(N+1)`` (T1): the bottleneck is sw1 → sw2."""
    sources = _hosts("h", 1, p.n_sources)
    sink = HostSpec(name=f"h{p.n_sources + 1}")
    links = _star("sw1", sources) + [LinkSpec(a="sw1", b="sw2"), LinkSpec(a="sw2", b=sink.name)]
    return Elements(hosts=sources + [sink], switches=[SwitchSpec(name="sw1"), SwitchSpec(name="sw2")], links=links)


# --- §9.2 S-ASYM -----------------------------------------------------------------------------
class AsymmetricParams(Strict):
    """Parameters of ``asymmetric``."""

    slow_rate: Rate = Field(1_000_000_000, description="rate of the sw2 — h5 link (the only slow link)")


def asymmetric(p: AsymmetricParams) -> Elements:
    """``h1..h4 —— sw1 —— sw2 —— {h5 at 1 Gb/s, h6}`` (T2)."""
    sources = _hosts("h", 1, 4)
    links = _star("sw1", sources) + [
        LinkSpec(a="sw1", b="sw2"),
        LinkSpec(a="sw2", b="h5", rate=_q(p.slow_rate, "rate")),
        LinkSpec(a="sw2", b="h6"),
    ]
    hosts = sources + _hosts("h", 5, 6)
    return Elements(hosts=hosts, switches=[SwitchSpec(name="sw1"), SwitchSpec(name="sw2")], links=links)


# --- §9.3 S-PARK -----------------------------------------------------------------------------
class ParkingLotParams(Strict):
    """Parameters of ``parking_lot``."""

    trunk_delay: Time | None = Field(
        None, description="propagation delay of L1 and L2 (default [defaults].link_delay; 9.5us for 'BCN + Delay')"
    )


def parking_lot(p: ParkingLotParams) -> Elements:
    """``sw1(h1..h5) —L1— sw2(h6, h7) —L2— sw3(h8, h9)`` (T3)."""
    g1, g2, g3 = _hosts("h", 1, 5), _hosts("h", 6, 7), _hosts("h", 8, 9)
    links = (
        _star("sw1", g1)
        + _star("sw2", g2)
        + _star("sw3", g3)
        + [
            LinkSpec(a="sw1", b="sw2", delay=_q(p.trunk_delay, "time")),
            LinkSpec(a="sw2", b="sw3", delay=_q(p.trunk_delay, "time")),
        ]
    )
    switches = [SwitchSpec(name=f"sw{i}") for i in (1, 2, 3)]
    return Elements(hosts=g1 + g2 + g3, switches=switches, links=links)


# --- §9.4 S-100 ------------------------------------------------------------------------------
class FanIn100Params(Strict):
    """Parameters of ``fan_in_100``."""

    groups: int = Field(4, ge=1, le=64, description="edge switches esw1..eswG under the core switch cs")
    hosts_per_group: int = Field(25, ge=1, le=1000, description="hosts per edge switch (the seed's N = 25)")


def fan_in_100(p: FanIn100Params) -> Elements:
    """``ep1..ep100`` in groups of 25 on ``esw1..esw4``; each ``esw —— cs``; ``cs —— ep0`` (T4)."""
    hosts: list[HostSpec] = []
    links: list[LinkSpec] = []
    switches = [SwitchSpec(name=f"esw{g}") for g in range(1, p.groups + 1)] + [SwitchSpec(name="cs")]
    for g in range(p.groups):
        group = _hosts("ep", g * p.hosts_per_group + 1, (g + 1) * p.hosts_per_group)
        hosts += group
        links += _star(f"esw{g + 1}", group) + [LinkSpec(a=f"esw{g + 1}", b="cs")]
    hosts.append(HostSpec(name="ep0"))
    links.append(LinkSpec(a="cs", b="ep0"))
    return Elements(hosts=hosts, switches=switches, links=links)


# --- §9.5 S-CNSIM-1HOP -----------------------------------------------------------------------
class CnsimOneHopParams(Strict):
    """Parameters of ``cnsim_1hop``."""

    n_hosts: int = Field(
        10, ge=2, le=16, description="hosts on the 16-port switch (10: HS degree 9; 16 the alternative)"
    )
    buffer: Size = Field(
        150_000,
        description="partition per (input, output) pair: each output buffer holds one per "
        "input, 16 x 150KB = 2.4MB (model reference §12 R3)",
    )
    buffer_policy: Literal["partitioned", "ingress"] = Field(
        "partitioned",
        description="partitioned: [D]'s output buffer partitioned per input (model reference §12 R3); ingress: "
        "the earlier BUF-IN reading (one partition per input across all outputs)",
    )
    latency: Time = Field(
        100_000, description="switch latency (0.1us, from the 3.5-us minimum FCT, model reference §12 D8)"
    )


def cnsim_1hop(p: CnsimOneHopParams) -> Elements:
    """``h1..hN`` all on one switch ``sw1`` with the CN-SIM bridge model (T5)."""
    hosts = _hosts("h", 1, p.n_hosts)
    sw = SwitchSpec(
        name="sw1", latency=_q(p.latency, "time"), buffer=BufferSpec(policy=p.buffer_policy, size=_q(p.buffer, "size"))
    )
    return Elements(hosts=hosts, switches=[sw], links=_star("sw1", hosts))


# --- §9.6 S-OGMS -----------------------------------------------------------------------------
class OgMultistageParams(Strict):
    """Parameters of ``og_multistage``."""

    buffer: Size = Field(600_000, description="BUF-OUT limit per egress port (600KB; 4 ports = 2.4MB)")
    buffer_policy: Literal["egress", "shared"] = Field(
        "egress",
        description="egress: a static 600-KB limit per egress port (model reference §12 E1); shared: the "
        "alternative reading of [E]'s 'shared memory, total = 4·B', one pool of 4 × buffer per switch",
    )
    link_delay: Time = Field(
        1_000_000, description="propagation delay of every link (1us: 16-us loop, model reference §12 E8)"
    )


def og_multistage(p: OgMultistageParams) -> Elements:
    """Edges ``e1{n1-n3}``, ``e2{n4-n6}``, ``e3{n7-n9}`` under core ``s0`` which also holds ``n10`` (T6)."""
    size = p.buffer if p.buffer_policy == "egress" else 4 * p.buffer
    buffer = BufferSpec(policy=p.buffer_policy, size=_q(size, "size"))
    switches = [SwitchSpec(name=n, buffer=buffer) for n in ("e1", "e2", "e3", "s0")]
    hosts = _hosts("n", 1, 10)
    links: list[LinkSpec] = []
    for e in range(3):
        for h in hosts[3 * e : 3 * e + 3]:
            links.append(LinkSpec(a=h.name, b=f"e{e + 1}", delay=_q(p.link_delay, "time")))
        links.append(LinkSpec(a=f"e{e + 1}", b="s0", delay=_q(p.link_delay, "time")))
    links.append(LinkSpec(a="n10", b="s0", delay=_q(p.link_delay, "time")))
    return Elements(hosts=hosts, switches=switches, links=links)


# --- benchmark and queueing-theory topologies --------------------------------------------------
class FanInParams(Strict):
    """Parameters of ``fan_in``."""

    n_senders: int = Field(4, ge=1, le=10_000, description="senders h1..hN")


def fan_in(p: FanInParams) -> Elements:
    """``h1..hN —— sw1 —— sink``: the fan-in benchmark workload."""
    senders = _hosts("h", 1, p.n_senders)
    links = _star("sw1", senders) + [LinkSpec(a="sw1", b="sink")]
    return Elements(hosts=senders + [HostSpec(name="sink")], switches=[SwitchSpec(name="sw1")], links=links)


class SinglePortParams(Strict):
    """Parameters of ``single_port``."""

    n_senders: int = Field(1, ge=1, le=10_000, description="senders h1..hN")
    sender_rate: Rate | None = Field(
        None,
        description="rate of the sender links (default [defaults].link_rate); make it much faster than "
        "the sink link so that arrivals at the port keep their own process (M/D/1)",
    )


def single_port(p: SinglePortParams) -> Elements:
    """``h1..hN —— sw1 —— sink``: one switch egress port (sw1 → sink) studied in isolation."""
    senders = _hosts("h", 1, p.n_senders)
    links = [LinkSpec(a=h.name, b="sw1", rate=_q(p.sender_rate, "rate")) for h in senders]
    links.append(LinkSpec(a="sw1", b="sink"))
    return Elements(hosts=senders + [HostSpec(name="sink")], switches=[SwitchSpec(name="sw1")], links=links)


# --- data-center fabrics (issue 13) -----------------------------------------------------------
class FatTreeParams(Strict):
    """Parameters of ``fat_tree``."""

    k: int = Field(
        4,
        ge=2,
        le=32,
        description="switch radix (even): k pods of k/2 edge and k/2 aggregation "
        "switches, (k/2)^2 core switches, k^3/4 hosts (k = 4: 16, 8: 128, 16: 1024)",
    )
    host_rate: Rate | None = Field(None, description="host - edge links (default [defaults].link_rate)")
    fabric_rate: Rate | None = Field(None, description="edge - aggregation - core links (default: host_rate)")
    host_delay: Time | None = Field(None, description="host - edge propagation (default [defaults].link_delay)")
    fabric_delay: Time | None = Field(None, description="fabric propagation (default [defaults].link_delay)")


def fat_tree(p: FatTreeParams) -> Elements:
    """The k-ary fat tree (Al-Fares et al., SIGCOMM 2008): pods ``p0..``, edge ``e<pod>_<i>``, aggregation
    ``a<pod>_<i>``, core ``c<j>_<i>``; hosts ``h1..h(k^3/4)``, k/2 per edge switch. Every edge switch links
    to every aggregation switch of its pod; aggregation switch i of a pod links to core switches c<i>_*.
    Paths between pods have (k/2)^2 equal-cost choices (routing = 'ecmp')."""
    if p.k % 2:
        raise ValueError(f"k must be even, got {p.k}")
    h = p.k // 2
    hr, fr = _q(p.host_rate, "rate"), _q(p.fabric_rate if p.fabric_rate is not None else p.host_rate, "rate")
    hd, fd = _q(p.host_delay, "time"), _q(p.fabric_delay, "time")
    hosts: list[HostSpec] = []
    switches: list[SwitchSpec] = []
    links: list[LinkSpec] = []
    n = 0
    for pod in range(p.k):
        for i in range(h):
            edge = f"e{pod}_{i}"
            switches.append(SwitchSpec(name=edge))
            for _ in range(h):
                n += 1
                hosts.append(HostSpec(name=f"h{n}"))
                links.append(LinkSpec(a=f"h{n}", b=edge, rate=hr, delay=hd))
        for i in range(h):
            switches.append(SwitchSpec(name=f"a{pod}_{i}"))
        for i in range(h):
            for j in range(h):
                links.append(LinkSpec(a=f"e{pod}_{i}", b=f"a{pod}_{j}", rate=fr, delay=fd))
    for i in range(h):
        for j in range(h):
            core = f"c{i}_{j}"
            switches.append(SwitchSpec(name=core))
            for pod in range(p.k):
                links.append(LinkSpec(a=f"a{pod}_{i}", b=core, rate=fr, delay=fd))
    return Elements(hosts=hosts, switches=switches, links=links)


class LeafSpineParams(Strict):
    """Parameters of ``leaf_spine``."""

    leaves: int = Field(4, ge=1, le=256, description="leaf (top-of-rack) switches l1..lL")
    spines: int = Field(2, ge=1, le=64, description="spine switches s1..sS; every leaf links to every spine")
    hosts_per_leaf: int = Field(8, ge=1, le=256, description="hosts per leaf (h1.. in leaf order)")
    host_rate: Rate | None = Field(None, description="host - leaf links (default [defaults].link_rate)")
    fabric_rate: Rate | None = Field(
        None,
        description="leaf - spine links (default: host_rate); oversubscription "
        "= hosts_per_leaf x host_rate / (spines x fabric_rate)",
    )
    host_delay: Time | None = Field(None, description="host - leaf propagation (default [defaults].link_delay)")
    fabric_delay: Time | None = Field(None, description="leaf - spine propagation (default [defaults].link_delay)")


def leaf_spine(p: LeafSpineParams) -> Elements:
    """Two-tier Clos: leaves ``l1..`` with ``hosts_per_leaf`` hosts each, every leaf linked to every spine
    ``s1..``; traffic between leaves has ``spines`` equal-cost paths (routing = 'ecmp')."""
    hr, fr = _q(p.host_rate, "rate"), _q(p.fabric_rate if p.fabric_rate is not None else p.host_rate, "rate")
    hd, fd = _q(p.host_delay, "time"), _q(p.fabric_delay, "time")
    hosts, links = [], []
    switches = [SwitchSpec(name=f"l{i}") for i in range(1, p.leaves + 1)]
    switches += [SwitchSpec(name=f"s{j}") for j in range(1, p.spines + 1)]
    n = 0
    for i in range(1, p.leaves + 1):
        for _ in range(p.hosts_per_leaf):
            n += 1
            hosts.append(HostSpec(name=f"h{n}"))
            links.append(LinkSpec(a=f"h{n}", b=f"l{i}", rate=hr, delay=hd))
        for j in range(1, p.spines + 1):
            links.append(LinkSpec(a=f"l{i}", b=f"s{j}", rate=fr, delay=fd))
    return Elements(hosts=hosts, switches=switches, links=links)


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "symmetric", "model reference §9.1 S-SYM (seed 000): h1..h4 - sw1 - sw2 - h5", SymmetricParams, symmetric
        ),
        Preset(
            "asymmetric",
            "model reference §9.2 S-ASYM (seed 000): h1..h4 - sw1 - sw2 - {h5 @1G, h6}",
            AsymmetricParams,
            asymmetric,
        ),
        Preset(
            "parking_lot",
            "model reference §9.3 S-PARK (seeds 000/002): sw1(h1-h5) - sw2(h6,h7) - sw3(h8,h9)",
            ParkingLotParams,
            parking_lot,
        ),
        Preset(
            "fan_in_100",
            "model reference §9.4 S-100 (seed 001): 4 edge switches x 25 hosts - core cs - ep0",
            FanIn100Params,
            fan_in_100,
        ),
        Preset(
            "cnsim_1hop",
            "model reference §9.5 S-CNSIM-1HOP (seed 003): 10 hosts on one 16-port BUF-IN switch",
            CnsimOneHopParams,
            cnsim_1hop,
        ),
        Preset(
            "og_multistage",
            "model reference §9.6 S-OGMS (seed 004): edges e1-e3 (3 hosts each) under core s0 + n10",
            OgMultistageParams,
            og_multistage,
        ),
        Preset("fan_in", "benchmark fan-in: h1..hN - sw1 - sink", FanInParams, fan_in),
        Preset(
            "single_port",
            "one egress port sw1 -> sink fed by h1..hN (M/D/1 and similar)",
            SinglePortParams,
            single_port,
        ),
        Preset("fat_tree", "k-ary fat tree (k = 4, 8, 16: 16, 128, 1024 hosts) with ECMP", FatTreeParams, fat_tree),
        Preset("leaf_spine", "leaves x spines Clos, hosts_per_leaf per leaf, with ECMP", LeafSpineParams, leaf_spine),
    )
}
