"""Traffic in the engine IR: each ``[[traffic]]`` generator's flows and sources, their transport, frame
sizes and arrival process, with the checks that span fields (frame sizes against the allowed range,
paths, loads against links). :class:`cnsim.compile.compiler.Compiler` calls :func:`traffic_ir`.
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

from cnsim import workloads
from cnsim.compile.network import Network
from cnsim.scenario import framesizes
from cnsim.scenario.framesizes import mean_size
from cnsim.scenario.spec import Bernoulli, Cbr, Incast, ParetoOnOff, Poisson, Saturated, Workload
from cnsim.scenario.units import format_quantity as fq

PS_PER_S = 10**12
MIN_FRAME, MAX_FRAME = 64, 9216
NEVER = 2**64 - 1
U64_MAX = 2**64 - 1


class Compiler(Protocol):
    """What the traffic step uses of the compiler (:class:`cnsim.compile.compiler.Compiler`)."""

    sc: Any
    net: Network
    dst_sets: Any
    pins: dict[int, list[str]]

    def error(self, path: str, message: str, *value: Any) -> None: ...
    def select(self, selector: str | list[str], path: str) -> list[str]: ...
    def check_unused_defaults(self, used: dict[str, tuple[str, bool]], by: str | None = None) -> None: ...
    def check_path(self, g: Any, path: str, src: str, dst: str) -> list[str] | None: ...


def stable_id(text: str) -> int:
    """A 56-bit id from a name (sha-256): the RNG stream of a generator never depends on order."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:7], "little")


TRANSFER_KINDS = (Workload, Incast, ParetoOnOff)
"""Generators whose traffic is transfers (FCT units), queued per transfer with ``nic.queues = "transfer"``."""


def traffic_ir(c: Compiler) -> tuple[list[dict], list[dict]]:
    run, d = c.sc.run, c.sc.defaults
    index = c.net.index()
    flows: list[dict] = []
    flow_ids: dict[tuple[str, str, int, str, int], int] = {}
    sources: list[dict] = []
    names: set[str] = set()
    per_transfer = c.sc.nic.per_transfer()
    dst_sets = c.dst_sets
    takes_default = [g.frame_size is None and _sizes_kind(g) != "mix" for g in c.sc.traffic]
    c.check_unused_defaults(
        {"frame_size": ("generator", any(takes_default) or not takes_default)},
        by="scenario (frame_size or size_mix of each [[traffic]])",
    )
    for i, g in enumerate(c.sc.traffic):
        path = f"traffic.{i}"
        name = g.name or f"{g.kind}:{_sel(g.src)}->{_sel(g.dst)}"
        if name in names:
            c.error(f"{path}.name", "duplicate generator name (give each [[traffic]] a unique name)", name)
        names.add(name)
        frame = g.frame_size if g.frame_size is not None else d.frame_size
        if not MIN_FRAME <= frame <= MAX_FRAME and _sizes_kind(g) != "mix":
            where = f"{path}.frame_size" if g.frame_size is not None else "defaults.frame_size"
            c.error(where, f"allowed: {MIN_FRAME}B to {MAX_FRAME}B", fq(frame, "size"))
        sizes = frame_sizes(c, g, path, frame)
        if sizes is not None:  # the flows carry the largest frame (buffer and headroom checks)
            frame = largest_frame(g, d)
        if g.start >= run.duration:
            c.error(f"{path}.start", f"must be < run.duration ({fq(run.duration, 'time')})", fq(g.start, "time"))
        if g.stop is not None and g.stop <= g.start:
            c.error(f"{path}.stop", f"must be > start ({fq(g.start, 'time')})", fq(g.stop, "time"))
        srcs, dsts = c.select(g.src, f"{path}.src"), c.select(g.dst, f"{path}.dst")
        named_src = not (isinstance(g.src, str) and (g.src == "all" or any(c in g.src for c in "*?[")))
        pin = None
        if g.path is not None:
            if len(srcs) != 1 or len(dsts) != 1:
                c.error(f"{path}.path", "a pinned path needs exactly one src and one dst host", g.path)
            else:
                pin = c.check_path(g, path, srcs[0], dsts[0])
        n_sources = len(sources)
        for src in srcs:
            targets = [t for t in dsts if t != src]
            if not targets:  # a host selected by 'all' or a pattern is skipped silently
                if dsts and named_src:
                    c.error(f"{path}.dst", f"host {src!r} has no destination other than itself", g.dst)
                continue
            link = c.net.link_of(src)
            if link is None:
                continue  # reported by the topology check
            process = process_ir(c, g, path, frame, link.rate_bps, sizes)
            # with a send queue per transfer, a transfer generator's destinations are drawn per
            # transfer: one flow for all of them (state and outputs grow with the hosts, not
            # with their pairs)
            wildcard = per_transfer and isinstance(g, TRANSFER_KINDS) and len(targets) > 1
            ids = []
            for t in [None] if wildcard else targets:
                key = (src, t, frame, g.transport, g.priority)
                if key not in flow_ids:
                    flow_ids[key] = len(flows)
                    flows.append(
                        {
                            "src": index[src],
                            "dst": None if t is None else index[t],
                            "frame_bytes": frame,
                            "transport": transport_ir(c, g.transport, frame, path),
                        }
                    )
                    if g.priority:  # absent = 0: the IR of every scenario without priorities is unchanged
                        flows[-1]["priority"] = g.priority
                if pin is not None:
                    if c.pins.get(flow_ids[key], pin) != pin:
                        c.error(
                            f"{path}.path",
                            "another generator pins the same flow (source, destination, "
                            "frame size, transport, priority) to another path",
                            g.path,
                        )
                    c.pins[flow_ids[key]] = pin
                ids.append(flow_ids[key])
            gate = getattr(g, "gate", None)
            sources.append(
                {
                    "stream_id": stable_id(f"{name}/{src}"),
                    "flows": ids,
                    "start_ps": g.start,
                    "stop_ps": g.stop if g.stop is not None else NEVER,
                    "gate": None if gate is None else {"on_ps": gate.on, "off_ps": gate.off, "start_on": gate.start_on},
                    "process": process,
                }
            )
            if wildcard:  # the generator's destinations, one set for all its sources
                key_ = tuple(index[t] for t in dsts)
                sources[-1]["dst_set"] = dst_sets.setdefault(key_, len(dst_sets))
        if srcs and dsts and len(sources) == n_sources and not named_src:
            c.error(path, "no (source, destination) pair: every selected source is its only destination")
    return flows, sources


def transport_ir(c: Compiler, kind: str, frame: int, path: str) -> dict[str, Any]:
    """The IR transport of a flow: udp, or TCP with every [tcp] parameter in base units."""
    if kind == "udp":
        return {"kind": "udp"}
    t = c.sc.tcp
    if frame <= t.header:
        c.error(
            f"{path}.transport",
            f"a TCP segment needs frame_size > tcp.header ({fq(t.header, 'size')})",
            fq(frame, "size"),
        )
    cc = {"kind": "new_reno"} if kind == "tcp" else {"kind": "dctcp", "g": t.dctcp_g, "alpha_init": t.dctcp_alpha_init}
    return {
        "kind": "tcp",
        "header_bytes": t.header,
        "ack_bytes": t.ack_size,
        "init_cwnd_segments": t.init_cwnd,
        "rcv_wnd_bytes": t.rcv_wnd if t.rcv_wnd is not None else U64_MAX,
        "init_ssthresh_bytes": t.init_ssthresh if t.init_ssthresh is not None else U64_MAX,
        "init_rto_ps": t.init_rto if t.init_rto is not None else t.min_rto,
        "min_rto_ps": t.min_rto,
        "max_rto_ps": t.max_rto,
        "dupack_threshold": t.dupack_threshold,
        "delayed_ack": t.delayed_ack,
        "delack_timeout_ps": t.delack_timeout,
        "cc": cc,
        "sack": t.sack,
    }


def frame_sizes(c: Compiler, g: Any, path: str, mean: int) -> dict[str, Any] | None:
    """The IR ``process.sizes`` of a Poisson generator drawing its frame sizes (None: fixed)."""

    kind = _sizes_kind(g)
    if kind == "mix":
        bad = [b for b, _ in g.size_mix if not MIN_FRAME <= b <= MAX_FRAME]
        if bad:
            c.error(f"{path}.size_mix", f"sizes allowed: {MIN_FRAME}B to {MAX_FRAME}B", fq(bad[0], "size"))
        return {"kind": "mix", "bytes": [b for b, _ in g.size_mix], "weights": [w for _, w in g.size_mix]}
    if kind != "exponential":
        return None
    lo = g.min_frame if g.min_frame is not None else MIN_FRAME
    hi = g.max_frame if g.max_frame is not None else MAX_FRAME
    if not MIN_FRAME <= lo < hi <= MAX_FRAME:
        c.error(
            f"{path}.max_frame" if g.max_frame is not None else f"{path}.min_frame",
            f"need {MIN_FRAME}B <= min_frame < max_frame <= {MAX_FRAME}B",
            f"{fq(lo, 'size')}, {fq(hi, 'size')}",
        )
        return None
    if not lo + 1 < mean < (lo + hi + 1) / 2:
        c.error(
            f"{path}.frame_size" if g.frame_size is not None else "defaults.frame_size",
            f"the mean of an exponential on [{fq(lo, 'size')}, {fq(hi, 'size')}] must lie between "
            f"{lo + 1}B and {(lo + hi + 1) / 2:g}B (exclusive)",
            fq(mean, "size"),
        )
        return None
    return {
        "kind": "exponential",
        "scale_bytes": framesizes.exponential_scale(mean, lo, hi),
        "min_bytes": lo,
        "max_bytes": hi,
    }


def process_ir(
    c: Compiler, g: Any, path: str, frame: int, line_bps: int, sizes: dict[str, Any] | None = None
) -> dict[str, Any]:
    bits_ps = frame * 8 * PS_PER_S  # frame bits x ps per s
    if sizes is not None:  # the offered rate counts the mean size
        bits_ps = mean_size(sizes) * 8 * PS_PER_S
    if isinstance(g, Saturated):
        return {"kind": "saturated"}
    if isinstance(g, Cbr):
        if g.rate > line_bps:
            c.error(
                f"{path}.rate",
                f"exceeds the source's link rate ({fq(line_bps, 'rate')}); use kind = 'saturated' for line rate",
                fq(g.rate, "rate"),
            )
        return {
            "kind": "cbr",
            "interval_ps": _div_round(bits_ps, g.rate),
            "phase_ps": g.phase,
            "random_phase": g.random_phase,
        }
    if isinstance(g, (Bernoulli, Poisson)):
        offered = g.rate if g.rate is not None else g.load * line_bps
        where = f"{path}.rate" if g.rate is not None else f"{path}.load"
        if offered > line_bps:
            c.error(
                where,
                f"offered rate exceeds the source's link rate ({fq(line_bps, 'rate')})",
                g.load if g.rate is None else fq(g.rate, "rate"),
            )
            offered = line_bps
        if isinstance(g, Poisson):
            ir = {"kind": "poisson", "mean_gap_ps": max(1, round(bits_ps / offered))}
            return {**ir, "sizes": sizes} if sizes is not None else ir
        slot = g.slot if g.slot is not None else _div_round(bits_ps, line_bps)
        p = offered * slot / bits_ps
        if p > 1:
            c.error(where, f"more than one frame per slot (p = {p:.4g} > 1); lower the load or the slot")
        return {"kind": "bernoulli", "slot_ps": slot, "p": min(p, 1.0)}
    if isinstance(g, Incast):
        ir = {"kind": "periodic_flows", "period_ps": g.period, "phase_ps": g.phase, "bytes": g.size}
        return {**ir, "partial_last": True} if g.last_frame == "partial" else ir
    if isinstance(g, Workload):
        path_ = workloads.cdf_path(g.cdf)
        try:
            cdf = workloads.read_cdf(str(path_))
        except OSError as exc:
            c.error(f"{path}.cdf", f"cannot read {path_}: {exc.strerror}", g.cdf)
            return {"kind": "saturated"}
        except ValueError as exc:
            c.error(f"{path}.cdf", f"{path_}: {exc}", g.cdf)
            return {"kind": "saturated"}
        partial = g.last_frame == "partial"
        header = c.sc.tcp.header if g.transport != "udp" else None
        mean = workloads.mean_wire_bytes(cdf, frame, partial=partial, header=header)
        gap = 8 * mean * PS_PER_S / (g.load * line_bps)
        ir = {"kind": "flow_arrivals", "mean_gap_ps": max(1, round(gap)), "cdf": [list(p_) for p_ in cdf]}
        return {**ir, "partial_last": True} if partial else ir
    assert isinstance(g, ParetoOnOff)
    xm, alpha = g.pareto()
    ir = {
        "kind": "pareto_on_off",
        "xm_ps": xm,
        "alpha": alpha,
        "off_mean_ps": g.off_mean(),
        "line_rate_bps": g.line_rate if g.line_rate is not None else line_bps,
        "cap_ps": g.max_on,
        "shifted": g.distribution == "lomax",
    }
    if g.loop == "open":
        ir["nic_buffer_frames"] = U64_MAX if g.nic_buffer is None else g.nic_buffer // frame
    elif g.loop == "rl_queue":
        ir["rl_release"] = True
    return ir


def _sizes_kind(g: Any) -> str:
    """How a generator sizes its frames: 'fixed', or a Poisson generator's 'exponential' or 'mix'."""
    return getattr(g, "frame_sizes", "fixed")


def largest_frame(g: Any, d: Any) -> int:
    """The largest frame a generator sends: its frame size, or the top of its size distribution."""
    kind = _sizes_kind(g)
    if kind == "mix":
        return max(b for b, _ in g.size_mix)
    if kind == "exponential":
        return g.max_frame if g.max_frame is not None else MAX_FRAME
    return g.frame_size if g.frame_size is not None else d.frame_size


def _div_round(num: int, den: int) -> int:
    """Integer num / den rounded to nearest (at least 1)."""
    return max(1, (num + den // 2) // den)


def _sel(selector: str | list[str]) -> str:
    return selector if isinstance(selector, str) else ",".join(selector)
