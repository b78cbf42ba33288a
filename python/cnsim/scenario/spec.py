"""The scenario schema: one pydantic model per TOML section — the single source of truth.

Field names, units, defaults (the seeds' baseline, model reference §0/§1/§9) and descriptions live here;
``cnsim describe``, ``cnsim schema`` and ``docs/reference/scenario.md`` are generated from these
models. Checks that need the whole scenario (names, connectivity, thresholds against buffers) are
in :mod:`cnsim.compile.compiler`, which also turns a scenario into the engine IR.
"""

# No `from __future__ import annotations` in the modules of pydantic models: pydantic would evaluate each
# field's annotation from its string when it creates the class and again when it builds the schema
# (15 M instructions, ≈ 3 ms, of a 1-ms run).

import math
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, model_validator

from cnsim.scenario.quantities import Duration, Name, Rate, RateOrZero, Size, Time
from cnsim.scenario.topology import (
    BufferPolicy,
    BufferSpec,
    Elements,
    HostSpec,
    LinkSpec,
    Strict,
    SwitchSpec,
    empty_dict,
    empty_list,
)
from cnsim.scenario.units import format_quantity
from cnsim.workloads import BUNDLED

HostSelector = Union[str, list[Name]]
DEFAULT_XM_PS = 1_200_000
"""Pareto scale of CN-SIM ON periods: one frame time (1500 B at 10 Gb/s), model reference §12 D2."""


class RunSection(Strict):
    """``[run]``: what to simulate for how long, and with which randomness."""

    name: Name | None = Field(
        None, description="scenario name for reports and the default output dir (default: file name)"
    )
    duration: Duration = Field(100 * 10**9, description="simulated time; the run stops at this instant")
    warmup: Time = Field(0, description="statistics (throughput, queues, FCT, pause %) exclude [0, warmup)")
    seed: int = Field(1, ge=0, lt=2**64, description="master seed; every random process has its own stream")
    replication: int = Field(0, ge=0, lt=2**64, description="replication index mixed into every stream")


class BufferDefaults(Strict):
    """Default buffer admission of every switch (model reference §1.3)."""

    policy: BufferPolicy = Field(
        "egress",
        description="'egress' (BUF-OUT), 'ingress' (BUF-IN), 'shared' or "
        "'partitioned' (per (input, output), CN-SIM model reference §12 R3)",
    )
    size: Size = Field(150_000, description="limit per egress queue / input partition / shared pool")


class Defaults(Strict):
    """``[defaults]``: values used by every element that does not set its own (model reference §0, §9)."""

    link_rate: Rate = Field(10 * 10**9, description="link rate per direction")
    link_delay: Time = Field(500_000, description="link propagation delay (100 m = 0.5us)")
    switch_latency: Time = Field(10**6, description="switch latency, last-bit arrival to egress enqueue")
    response_delay: Time = Field(10**6, description="endpoint response time to feedback")
    buffer: BufferDefaults = Field(default_factory=BufferDefaults, description="switch buffer admission")
    frame_size: Size = Field(1500, description="data frame size (each generator may override)")
    control_frame_size: Size = Field(64, description="size of congestion-management and PAUSE frames")
    wire_overhead: bool = Field(False, description="add preamble + SFD + IFG (20 B) of link time to every frame")
    ecn_threshold: Size | None = Field(
        None,
        description="ECN step marking at every switch egress (DCTCP's K): an "
        "ECN-capable frame finding more than this many bytes queued is marked CE "
        "(default: no marking)",
    )


class TopologySection(Strict):
    """``[topology]``: a preset with parameters, explicit elements, or a preset plus overrides."""

    preset: str | None = Field(None, description="named topology (see `cnsim list`); its elements come first")
    params: dict[str, Any] = Field(
        default_factory=empty_dict, description="parameters of the preset (`cnsim describe <preset>`)"
    )
    hosts: list[HostSpec] = Field(default_factory=empty_list, description="hosts (a name string or a table)")
    switches: list[SwitchSpec] = Field(default_factory=empty_list, description="switches")
    links: list[LinkSpec] = Field(default_factory=empty_list, description="links ([a, b] or a table)")
    routing: Literal["ecmp", "single"] = Field(
        "ecmp",
        description="'ecmp': where a switch has several shortest next hops toward a destination, each "
        "flow takes one by a seeded hash and keeps it (fat trees, leaf-spine); 'single': the one route of the "
        "shortest-path computation (ties by link order). Topologies with one shortest path are the same either way",
    )
    link_detection: Time = Field(
        0,
        description="[[events]]: time from a link's failure (or recovery) until the two "
        "switches at its ends stop (or start) routing over it and recompute their routes",
    )
    route_convergence: Union[Time, Literal["never"]] = Field(
        0,
        description="[[events]]: further time until every other switch recomputes its routes; 'never': they "
        "keep their old tables (between the two, switches route on different views: loops can form)",
    )


class LinkEvent(Strict):
    """``[[events]]``: a link goes down or comes back up at a given time (docs/events.md)."""

    at: Time = Field(description="when the link changes state")
    link: tuple[Name, Name] = Field(description="[a, b]: the link between nodes a and b (both directions)")
    state: Literal["down", "up"] = Field(
        description="'down': every frame on it or sent onto it is lost until it is "
        "up again; routes avoid it after topology.link_detection"
    )


class Gate(Strict):
    """Deterministic ON/OFF gating (ONOFF-DET, model reference §1.5), repeating from the generator's start."""

    on: Duration = Field(description="ON period")
    off: Duration = Field(description="OFF period")
    start_on: bool = Field(True, description="begin in the ON state (model reference §12 A4)")


class _Generator(Strict):
    name: Name | None = Field(
        None, description="unique name; seeds the generator's random stream (default: derived from kind, src and dst)"
    )
    src: HostSelector = Field(description="source host(s): a name, a list, a glob ('ep*') or 'all'")
    dst: HostSelector = Field(
        description="destination host(s), same forms; a host never sends to itself; "
        "with several, each frame (or Pareto flow) picks one uniformly"
    )
    start: Time = Field(0, description="first instant the generator may send")
    stop: Time | None = Field(None, description="instant after which it sends nothing (default: never)")
    frame_size: Size | None = Field(None, description="data frame size (default [defaults].frame_size)")
    priority: int = Field(
        0,
        ge=0,
        le=7,
        description="802.1p priority (0-7) of the generator's frames, and of the "
        "ACKs and congestion-management messages about its flows; PFC pauses per priority",
    )
    transport: Literal["udp", "tcp", "dctcp"] = Field(
        "udp",
        description="udp: open loop, frames leave as generated; tcp: TCP NewReno, dctcp: DCTCP (RFC 8257) — "
        "the generator is the application writing data, segments leave as the window allows, ACKs are frames "
        "([tcp] sets the parameters)",
    )
    path: list[Name] | None = Field(
        None,
        description="pin the flow to this node path [src, switch, ..., dst] "
        "instead of the routes (one src and one dst; TCP ACKs take it back); a pinned "
        "flow keeps its path when a link on it fails",
    )


class _Gated(_Generator):
    gate: Gate | None = Field(None, description="optional deterministic ON/OFF gate")


class _Offered(_Gated):
    load: float | None = Field(None, gt=0, le=1, description="offered load as a fraction of the source's link rate")
    rate: Rate | None = Field(None, description="offered rate (instead of load)")

    @model_validator(mode="after")
    def _load_xor_rate(self):
        if (self.load is None) == (self.rate is None):
            raise ValueError("give exactly one of 'load' or 'rate'")
        return self


class Saturated(_Gated):
    """SAT: always backlogged at line rate (model reference §1.5)."""

    kind: Literal["saturated"]


class Cbr(_Gated):
    """Constant bit rate: one frame every frame_size/rate (rounded to the picosecond)."""

    kind: Literal["cbr"]
    rate: Rate = Field(description="sending rate")
    phase: Time = Field(0, description="offset of the first frame after start")
    random_phase: bool = Field(False, description="add a phase drawn uniformly in [0, interval)")


class Bernoulli(_Offered):
    """BERNOULLI: slotted; in each slot a frame with probability p = offered rate x slot / frame bits."""

    kind: Literal["bernoulli"]
    slot: Duration | None = Field(None, description="slot length (default: one frame time at the source's line rate)")


class Poisson(_Offered):
    """Poisson arrivals of frames (exponential gaps) at the offered rate, of a fixed or a drawn size (frame_sizes)."""

    kind: Literal["poisson"]
    frame_sizes: Literal["fixed", "exponential", "mix"] = Field(
        "fixed",
        description="fixed: every frame is frame_size; exponential: sizes drawn per frame from an "
        "exponential truncated to [min_frame, max_frame] whose mean is frame_size (M/G/1 service at a port, "
        "M/M/1 in the limit); mix: sizes from size_mix. The offered rate counts the mean size",
    )
    min_frame: Size | None = Field(None, description="with frame_sizes = 'exponential': smallest size (default 64B)")
    max_frame: Size | None = Field(None, description="with frame_sizes = 'exponential': largest size (default 9216B)")
    size_mix: list[tuple[Size, Annotated[float, Field(gt=0, allow_inf_nan=False)]]] | None = Field(
        None,
        min_length=1,
        description="with frame_sizes = 'mix': [[size, weight], ...], e.g. IMIX "
        "[['64B', 7], ['594B', 4], ['1518B', 1]]; a frame takes a size with probability weight / sum of weights",
    )

    @model_validator(mode="after")
    def _sizes(self):
        exponential, mix = self.frame_sizes == "exponential", self.frame_sizes == "mix"
        if not exponential and (self.min_frame is not None or self.max_frame is not None):
            raise ValueError("min_frame and max_frame need frame_sizes = 'exponential'")
        if mix != (self.size_mix is not None):
            raise ValueError("frame_sizes = 'mix' needs size_mix, and size_mix needs frame_sizes = 'mix'")
        if mix and self.frame_size is not None:
            raise ValueError("with frame_sizes = 'mix' the sizes come from size_mix: leave frame_size out")
        if self.frame_sizes != "fixed" and self.transport != "udp":
            raise ValueError("frame_sizes other than 'fixed' needs transport = 'udp' (TCP segments are MSS-sized)")
        return self


DEFAULT_MEAN_OFF_PS = 15 * 10**6
"""Mean OFF period of CN-SIM sources (15 us, model reference §9.5)."""


class ParetoOnOff(_Generator):
    """PARETO-ONOFF-FLOWS (CN-SIM, model reference §1.5, §12 D2/D9): flows of Pareto ON length, closed loop by default."""

    kind: Literal["pareto_onoff"]
    mean_on: Duration = Field(45 * 10**6, description="mean ON period; fixes alpha from xm (or xm from alpha)")
    xm: Duration | None = Field(None, description="Pareto scale (default 1.2us, so one-frame flows exist)")
    alpha: float | None = Field(
        None, gt=0, le=100, description="Pareto shape (default mean_on / (mean_on - xm)); > 1 unless max_on is set"
    )
    max_on: Duration | None = Field(
        None,
        description="cap of the ON period: ON = min(Pareto, max_on), which allows alpha <= 1. Not in the "
        "seeds or the model reference: an option for the model reference §12 D2 sensitivity study "
        "(docs/validation/cnsim-traffic.md); default none (plain Pareto)",
    )
    mean_off: Duration | None = Field(None, description="mean of the exponential OFF period (default 15us)")
    mean_period: Duration | None = Field(
        None,
        description="mean burst period (mean ON + mean OFF at line rate, [C] §7's 'average burst period'); "
        "sets mean_off = mean_period - mean_on. Under a rate limiter a burst takes longer, so "
        "the realised period is longer",
    )
    line_rate: Rate | None = Field(None, description="rate converting ON time to bytes (default: source link rate)")
    distribution: Literal["pareto", "lomax"] = Field(
        "pareto",
        description="pareto: ON >= xm (model reference §12 D2); lomax: shifted Pareto ON = lambda (U^(-1/alpha) - 1) "
        "with lambda = mean_on (alpha - 1), ON times from 0 (model reference §12 R2; flows stay whole frames >= 1)",
    )
    loop: Literal["closed", "open", "rl_queue"] = Field(
        "closed",
        description="closed: the OFF period starts when the transfer has left the NIC (model reference §12 D9); "
        "open: it starts when the ON period has passed in time and the source's frames waiting in the host fit "
        "nic_buffer (unbounded by default: a pure open loop); rl_queue: closed on the NIC's default queue only — "
        "a transfer whose flow has an active rate limiter waits in that RL's queue and the source goes on "
        "after its ON time (the BCN/ECM NIC of default and RL queues)",
    )
    nic_buffer: Size | None = Field(
        None,
        description="with loop = 'open': the source's NIC transmit buffer; the generator waits while more "
        "of its frames than fit wait in the host (back-pressure). Default none = unbounded",
    )

    @model_validator(mode="after")
    def _loop(self):
        if self.nic_buffer is not None and self.loop != "open":
            raise ValueError("nic_buffer needs loop = 'open' (a closed loop waits for the whole transfer)")
        return self

    @model_validator(mode="after")
    def _shape(self):
        if self.mean_period is not None:
            if self.mean_period <= self.mean_on:
                raise ValueError(f"mean_period must be > mean_on ({format_quantity(self.mean_on, 'time')})")
            if self.mean_off is not None:
                raise ValueError("give mean_off or mean_period, not both (mean_off = mean_period - mean_on)")
        if self.distribution == "lomax":
            if self.xm is not None or self.max_on is not None:
                raise ValueError(
                    "distribution = 'lomax' takes mean_on and alpha (its scale is mean_on (alpha - 1)); "
                    "xm and max_on belong to 'pareto'"
                )
            if self.alpha is None or self.alpha <= 1:
                raise ValueError("distribution = 'lomax' needs alpha > 1 (model reference §12 R2: 1.2-1.3)")
            return self
        if self.xm is not None and self.alpha is not None and "mean_on" in self.model_fields_set:
            raise ValueError("give at most two of mean_on, xm, alpha (the third follows)")
        if self.max_on is not None:
            xm = self.xm if self.xm is not None else DEFAULT_XM_PS
            if self.max_on <= xm:
                raise ValueError(f"max_on must be > xm ({format_quantity(xm, 'time')})")
            if self.alpha is None and not xm < self.mean_on < self.max_on:
                raise ValueError("with max_on, mean_on must lie between xm and max_on")
            return self
        if self.alpha is not None and self.alpha <= 1:
            raise ValueError(f"alpha must be > 1 without max_on (a plain Pareto needs a finite mean), got {self.alpha}")
        if self.alpha is None and (self.xm or DEFAULT_XM_PS) >= self.mean_on:
            raise ValueError(f"xm must be < mean_on ({format_quantity(self.mean_on, 'time')})")
        return self

    def off_mean(self) -> int:
        """Mean OFF period in ps (from ``mean_period`` when given)."""
        if self.mean_period is not None:
            return self.mean_period - self.mean_on
        return self.mean_off if self.mean_off is not None else DEFAULT_MEAN_OFF_PS

    def pareto(self) -> tuple[int, float]:
        """(x_m in ps, alpha) after filling the missing one from ``mean_on`` = alpha x_m / (alpha - 1)
        (or, with ``max_on``, from the capped mean :func:`capped_pareto_mean`)."""
        if self.distribution == "lomax":
            return round(self.mean_on * (self.alpha - 1)), self.alpha
        if self.max_on is not None:
            return self._capped()
        if self.alpha is None:
            xm = self.xm if self.xm is not None else DEFAULT_XM_PS
            return xm, self.mean_on / (self.mean_on - xm)
        if self.xm is None:
            return round(self.mean_on * (self.alpha - 1) / self.alpha), self.alpha
        return self.xm, self.alpha

    def _capped(self) -> tuple[int, float]:
        from scipy.optimize import brentq

        cap = float(self.max_on)
        if self.alpha is None:
            xm = float(self.xm if self.xm is not None else DEFAULT_XM_PS)
            return round(xm), brentq(lambda a: capped_pareto_mean(xm, a, cap) - self.mean_on, 1e-3, 100.0)
        if self.xm is None:
            a = self.alpha
            return round(brentq(lambda x: capped_pareto_mean(x, a, cap) - self.mean_on, 1e-6, cap * (1 - 1e-9))), a
        return self.xm, self.alpha


def capped_pareto_mean(xm: float, alpha: float, cap: float) -> float:
    """E[min(X, cap)] for X ~ Pareto(x_m, alpha): x_m + ∫_{x_m}^{cap} (x_m/t)^alpha dt."""
    if abs(alpha - 1.0) < 1e-12:
        return xm + xm * math.log(cap / xm)
    return xm + xm * ((cap / xm) ** (1 - alpha) - 1) / (1 - alpha)  # = x_m^α (c^(1-α) - x_m^(1-α)) / (1-α)


LAST_FRAME_DOC = (
    "whole: a flow of S bytes is ceil(S / frame) frames of frame_size (its size rounded up to whole "
    "frames); partial: S bytes, the last frame carrying the remainder (at least 64 B; a TCP segment is "
    "its header and payload), as ns-3 or htsim send a flow"
)


class Workload(_Generator):
    """Open-loop flows of a published flow-size distribution (issue 13): Poisson arrivals per source at the
    rate giving ``load`` of its link (λ = load × link rate / (8 × mean size in whole frames)), each flow to a
    destination drawn uniformly from ``dst``, its size from the CDF, sent as ceil(size / frame) frames (the last
    one full or carrying the remainder: last_frame)."""

    kind: Literal["workload"]
    cdf: str = Field(
        description="'websearch' or 'fb_hadoop' (bundled, see cnsim/workloads/README.md) or the path "
        "of a file of 'flow_size_bytes cumulative_percent' lines (relative to the working directory)"
    )
    load: float = Field(gt=0, le=1, description="offered load, fraction of each source's link rate")
    last_frame: Literal["whole", "partial"] = Field("whole", description=LAST_FRAME_DOC)

    @model_validator(mode="after")
    def _cdf(self):
        if self.cdf not in BUNDLED and not self.cdf.endswith(".cdf") and "/" not in self.cdf:
            raise ValueError(
                f"cdf: unknown workload {self.cdf!r}; bundled: {', '.join(BUNDLED)}, or a path to a .cdf file"
            )
        return self


class Incast(_Generator):
    """Incast rounds (issue 13): every ``period`` (from ``start`` + ``phase``) each source starts one flow of
    ``size`` bytes to ``dst`` (one receiver, or one chosen uniformly per round and sender) — N senders at
    once, the partition-aggregate pattern; sent as ceil(size / frame) frames (last_frame as for workloads)."""

    kind: Literal["incast"]
    size: Size = Field(description="bytes per sender and round")
    period: Duration = Field(description="time between rounds")
    phase: Time = Field(0, description="first round at start + phase")
    last_frame: Literal["whole", "partial"] = Field("whole", description=LAST_FRAME_DOC)


Traffic = Annotated[
    Union[Saturated, Cbr, Bernoulli, Poisson, ParetoOnOff, Workload, Incast], Field(discriminator="kind")
]
TRAFFIC_KINDS: dict[str, type[_Generator]] = {
    "saturated": Saturated,
    "cbr": Cbr,
    "bernoulli": Bernoulli,
    "poisson": Poisson,
    "pareto_onoff": ParetoOnOff,
    "workload": Workload,
    "incast": Incast,
}


class CmSection(Strict):
    """``[cm]``: the congestion-management scheme and its parameters (`cnsim describe <scheme>`)."""

    scheme: str = Field("none", description="registry tag (see `cnsim list`)")
    params: dict[str, Any] = Field(default_factory=empty_dict, description="scheme parameters, with units")


PAUSE_DEFAULTS: dict[str, tuple[int, int]] = {"global": (140_000, 130_000), "selective": (130_000, 120_000)}
"""(high, low) thresholds in bytes per mode: seed 000 (global) and seed 003 (selective)."""


class FlowControlSection(Strict):
    """``[flow_control]``: IEEE 802.3x PAUSE (model reference §1.4) or 802.1Qbb PFC generated by switches."""

    mode: Literal["none", "global", "selective", "pfc"] = Field(
        "none",
        description="'global': any egress queue >= high pauses every input; 'selective': input "
        "partition i >= high pauses input i (needs buffer policy 'ingress' or 'partitioned'); 'pfc': 802.1Qbb "
        "per-priority pause with per-(input, priority) accounting in a shared buffer (needs buffer policy "
        "'shared'; docs/datacenter.md)",
    )
    high: Size | None = Field(
        None,
        description="assert (XOFF) threshold (default 140KB global, 130KB selective); "
        "pfc with threshold = 'static': bytes of one (input, priority) in the shared pool",
    )
    low: Size | None = Field(
        None,
        description="de-assert (XON) threshold, < high (default 130KB global, 120KB selective; pfc: use hysteresis)",
    )
    priorities: list[Annotated[int, Field(ge=0, le=7)]] | None = Field(
        None,
        description="pfc: the lossless priorities, each with headroom (default: the priorities of the "
        "[[traffic]] generators); the others are lossy (dropped over their threshold, never paused)",
    )
    threshold: Literal["dynamic", "static"] = Field(
        "dynamic",
        description="pfc: XOFF of an (input, priority) when its bytes in the shared pool reach "
        "alpha x the free shared pool ('dynamic', as shared-buffer switch ASICs) or high ('static')",
    )
    alpha: float = Field(1.0, gt=0, le=64, description="pfc: the dynamic threshold's alpha")
    hysteresis: Size | None = Field(
        None,
        description="pfc: XON when the (input, priority) is this far below its XOFF level (default: the largest frame)",
    )
    headroom: Union[Literal["auto"], Size] = Field(
        "auto",
        description="pfc: buffer reserved per (input port, lossless priority) for what arrives after XOFF; "
        "'auto' = the formula of each port (2 x rate x link delay + rate x (response_time + switch latency) + "
        "3 frames + the PFC frame, docs/datacenter.md); a size below it warns",
    )
    response_time: Time = Field(
        0,
        description="pfc: the peer's response time (a PFC frame takes effect this long "
        "after it arrived; 802.1Qbb bounds it per link speed)",
    )
    scheduler: Literal["strict", "dwrr"] = Field(
        "strict",
        description="pfc: egress scheduling of the 8 priority queues: 'strict' (7 first) or 'dwrr' "
        "(deficit weighted round robin, quantum = weight x the largest frame)",
    )
    weights: list[Annotated[int, Field(ge=1, le=64)]] = Field(
        [1] * 8, min_length=8, max_length=8, description="pfc with scheduler = 'dwrr': weight of priority 0..7"
    )
    quanta: int = Field(65535, ge=1, le=65535, description="pause_time of XOFF, in quanta of 512 bit times")
    refresh: float = Field(0.8, gt=0, le=1, description="re-send XOFF after this fraction of the pause time")
    switches: Union[Literal["all"], list[Name]] = Field("all", description="switches that generate PAUSE")
    watchdog: Duration | None = Field(
        None,
        description="PAUSE watchdog of every switch port (issue 13, as production switches' PFC watchdog): a "
        "port (pfc: a port's priority) paused without a break for this long ignores PAUSE for watchdog_recovery "
        "(it may then overflow its peer's buffer); counted in summary pause.watchdog_trips. Default: off",
    )
    watchdog_recovery: Duration = Field(100 * 10**6, description="how long a tripped port ignores PAUSE (100us)")

    def thresholds(self) -> tuple[int, int]:
        """(high, low) in bytes with the mode's defaults filled in."""
        high, low = PAUSE_DEFAULTS.get(self.mode, (0, 0))
        return (self.high if self.high is not None else high, self.low if self.low is not None else low)


class HotspotSection(Strict):
    """``[[hotspot]]``: output-generated hotspot (OG-LINK, model reference §1.6): a port serves slower for a while."""

    switch: Name = Field(description="the switch owning the port")
    toward: Name = Field(description="neighbour the port leads to (the hotspot node)")
    start: Time = Field(0, description="start of the reduced service rate")
    end: Time | None = Field(None, description="end of the window, line rate again (default: end of run)")
    rate: RateOrZero = Field(description="service rate during the window (0 = port stopped)")


class PcapCapture(Strict):
    """One packet trace (``[[observe.pcap]]``): a libpcap file of the frames one port starts transmitting in a
    time window, for Wireshark (``pcap/<name>.pcap`` in the output directory; docs/pcap.md)."""

    port: tuple[Name, Name] = Field(
        description="[node, peer]: the port of node (switch or host) toward peer, the direction captured"
    )
    start: Time = Field(0, description="first instant captured")
    end: Time | None = Field(None, description="end of the window, excluded (default: end of the run)")
    snaplen: int = Field(
        128,
        ge=64,
        le=262_144,
        description="bytes kept of each frame (headers; payloads are zeros); the full length is in each record",
    )
    name: Name | None = Field(None, description="file name without .pcap (default: node-peer)")


class ObserveSection(Strict):
    """``[observe]``: what to record."""

    sample_interval: Time = Field(
        10 * 10**6, description="sampling interval of queues, RP rates, pause state (0 = off)"
    )
    throughput_bin: Time = Field(100 * 10**6, description="bin of per-flow throughput series (0 = off)")
    flow_series: Annotated[int, Field(ge=0, le=2**32 - 1)] | Literal["all"] = Field(
        16,
        description="flows with a binned throughput series (table flow_tp): the first N flows in traffic order, "
        'or "all" (costs flows × bins rows; per-flow totals are always in summary.json)',
    )
    fct: bool = Field(
        True,
        description="record one row per transfer (table fct); off: the summary's FCT "
        "statistics are kept as running totals, so memory follows the transfers in progress, "
        "not the run's length",
    )
    queue_ts: bool = Field(True, description="sample switch queue lengths (table queue_ts) every sample_interval")
    rp_rate: bool = Field(
        True, description="sample the reaction-point rates of the first flow_series flows (table rp_rate)"
    )
    tcp_ts: bool = Field(
        True, description="sample TCP window, threshold and DCTCP alpha of the first flow_series flows (table tcp_ts)"
    )
    pause_ts: bool = Field(True, description="sample the paused state of links that pause (table pause_ts)")
    pcap: list[PcapCapture] = Field(
        default_factory=empty_list,
        description="packet traces: libpcap files of chosen "
        "ports and time windows ([[observe.pcap]]), written into the output directory",
    )


NIC_QUEUES_DOC = (
    "how a host queues the transfers of workload, incast and Pareto generators and TCP transfers: "
    "'transfer' (default) gives each transfer a send queue of its own - an RDMA queue pair, a TCP "
    "connection - opened when it starts and closed when it completes, the NIC serving its queues round robin "
    "(strict 802.1p priority between classes), so a throttled or window-limited transfer never delays "
    "another's frames; 'fifo' keeps one FIFO per (source, destination, priority) flow, a flow's transfers "
    "leaving in arrival order - the host of the 2006-07 802.1Qau studies (Bergamasco's and Jain's "
    "simulations, CN-SIM)"
)
RATE_LIMITERS_DOC = (
    "where rate limiters, windows and congestion-control state live: 'queue' (default with queues = "
    "'transfer') gives each send queue its own - per transfer, as an RDMA NIC keeps DCQCN/HPCC state per "
    "QP; 'flow' (default and only choice with queues = 'fifo') keeps one per (source, destination, "
    "priority) flow, 802.1Qau's per-flow reaction point; with queues = 'transfer' the flow's transfers then "
    "share its limiter and are served round robin, a frame each"
)


class NicSection(Strict):
    """[nic]: the host NIC - how transfers queue, and where rate limiters and congestion-control state live."""

    queues: Literal["transfer", "fifo"] = Field("transfer", description=NIC_QUEUES_DOC)
    rate_limiters: Literal["queue", "flow"] | None = Field(None, description=RATE_LIMITERS_DOC)

    @model_validator(mode="after")
    def _combination(self):
        if self.queues == "fifo" and self.rate_limiters == "queue":
            raise ValueError(
                "rate_limiters = 'queue' needs queues = 'transfer' (a FIFO sends a flow's transfers "
                "one after another under the flow's one limiter)"
            )
        return self

    def resolved(self) -> tuple[str, str]:
        """(queues, rate_limiters) with the default of rate_limiters filled in."""
        return self.queues, self.rate_limiters or ("queue" if self.queues == "transfer" else "flow")

    def per_transfer(self) -> bool:
        """Each transfer its own queue, limiter and CC state (flows may then omit their destination)."""
        return self.resolved() == ("transfer", "queue")


class RdmaSection(Strict):
    """``[rdma]``: loss recovery of RDMA transfers (UDP-transport workload, incast and Pareto traffic, each
    transfer a queue pair) on fabrics without PFC (docs/rdma.md)."""

    loss_recovery: Literal["none", "go_back_n", "selective_repeat"] = Field(
        "none",
        description="none: a lost frame stays lost (the transfer never completes); go_back_n: the receiver "
        "discards a frame beyond the one it expects and NACKs that one, the sender resends everything from it (RoCE "
        "NICs, the HPCC authors' simulator); selective_repeat: the receiver keeps frames beyond a hole and the sender "
        "resends only the missing one (IRN)",
    )
    timeout: Time = Field(
        10**9,
        description="retransmission timeout: with frames unacknowledged and no ACK for this long, the sender "
        "resends from its oldest unacknowledged frame (a lost tail, a lost NACK)",
    )

    @model_validator(mode="after")
    def _timeout(self):
        if self.timeout <= 0:
            raise ValueError("timeout must be > 0")
        return self


class TcpSection(Strict):
    """``[tcp]``: parameters of every TCP / DCTCP flow (transport = "tcp" or "dctcp" in [[traffic]])."""

    header: Size = Field(40, description="TCP/IP header bytes per segment; MSS = frame_size - header")
    ack_size: Size = Field(64, description="size of an ACK frame")
    init_cwnd: int = Field(10, ge=1, le=10_000, description="initial congestion window, segments (RFC 6928)")
    rcv_wnd: Size | None = Field(None, description="receive window (default: unlimited)")
    init_ssthresh: Size | None = Field(None, description="initial slow-start threshold (default: unlimited)")
    min_rto: Time = Field(
        10**9,
        description="lower bound of the retransmission timeout (data centres: 1ms or less; RFC 6298: 1s; Linux: 200ms)",
    )
    init_rto: Time | None = Field(None, description="RTO before the first RTT sample (default: min_rto)")
    max_rto: Time = Field(60 * 10**12, description="upper bound of the RTO after back-off")
    dupack_threshold: int = Field(3, ge=1, le=100, description="duplicate ACKs that trigger fast retransmit")
    sack: bool = Field(
        True,
        description="selective acknowledgements (RFC 2018) and SACK-based loss recovery "
        "(RFC 6675), as every current TCP stack; false: NewReno's partial ACKs (RFC 6582), one "
        "hole repaired per round trip",
    )
    delayed_ack: bool = Field(False, description="ACK every second segment or after delack_timeout")
    delack_timeout: Time = Field(40 * 10**6, description="delayed-ACK timer")
    dctcp_g: float = Field(1 / 16, gt=0, le=1, description="DCTCP estimation gain g (RFC 8257: 1/16)")
    dctcp_alpha_init: float = Field(1.0, ge=0, le=1, description="DCTCP initial alpha (RFC 8257: 1)")

    @model_validator(mode="after")
    def _rto_order(self):
        if self.min_rto <= 0:
            raise ValueError("min_rto must be > 0")
        if self.max_rto < self.min_rto:
            raise ValueError("max_rto must be >= min_rto")
        return self


class Scenario(Strict):
    """A complete scenario file."""

    run: RunSection = Field(default_factory=RunSection, description="duration, seed, warm-up")
    topology: TopologySection = Field(description="network: preset and/or explicit elements")
    defaults: Defaults = Field(default_factory=Defaults, description="element defaults")
    traffic: list[Traffic] = Field(min_length=1, description="traffic generators ([[traffic]])")
    cm: CmSection = Field(default_factory=CmSection, description="congestion management")
    flow_control: FlowControlSection = Field(default_factory=FlowControlSection, description="PAUSE")
    hotspot: list[HotspotSection] = Field(default_factory=empty_list, description="output-generated hotspots")
    observe: ObserveSection = Field(default_factory=ObserveSection, description="recording")
    tcp: TcpSection = Field(default_factory=TcpSection, description="TCP / DCTCP parameters")
    events: list[LinkEvent] = Field(
        default_factory=empty_list, description="timed link failures and recoveries ([[events]])"
    )
    nic: NicSection = Field(default_factory=NicSection, description="host NIC: transfer queues, rate limiters")
    rdma: RdmaSection = Field(
        default_factory=RdmaSection, description="RDMA loss recovery (go-back-N, selective repeat)"
    )


BUILT_FIRST: tuple[type[BaseModel], ...] = (
    BufferSpec,
    HostSpec,
    SwitchSpec,
    LinkSpec,
    Elements,
    RunSection,
    BufferDefaults,
    Defaults,
    CmSection,
    FlowControlSection,
    ObserveSection,
    TcpSection,
    NicSection,
    RdmaSection,
)
"""Models that a run also builds on their own, not only inside Scenario: sections made by their
``default_factory`` when a scenario leaves them out, topology elements made by presets. Leaves first."""


def build_validators() -> None:
    """Build the validators of :data:`BUILT_FIRST`, then Scenario's (once per process; the models defer
    theirs to first use, ``defer_build``). Scenario's then takes their schemas as they are; built in the
    other order, each of them would be generated twice, inside Scenario and again on its own when first
    made (13 M instructions, ≈ 3 ms, of a 1-ms run)."""
    if Scenario.__pydantic_complete__:
        return
    for model in BUILT_FIRST:
        model.model_rebuild()
    Scenario.model_rebuild()


SECTIONS: dict[str, type[Strict]] = {
    "run": RunSection,
    "topology": TopologySection,
    "topology.hosts": HostSpec,
    "topology.switches": SwitchSpec,
    "topology.links": LinkSpec,
    "defaults": Defaults,
    "defaults.buffer": BufferDefaults,
    "traffic.gate": Gate,
    **{f"traffic.{k}": m for k, m in TRAFFIC_KINDS.items()},
    "cm": CmSection,
    "flow_control": FlowControlSection,
    "hotspot": HotspotSection,
    "observe": ObserveSection,
    "observe.pcap": PcapCapture,
    "events": LinkEvent,
    "tcp": TcpSection,
    "nic": NicSection,
    "rdma": RdmaSection,
}
"""Every section model by its TOML path (for `cnsim describe` and the docs)."""
