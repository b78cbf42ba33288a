"""Whole-scenario checks and compilation to the engine IR (``crates/cnsim-core/src/ir.rs``).

:func:`compile_ir` expands the preset, merges element overrides and ``[defaults]``, checks every
rule that spans fields (names, connectivity, thresholds against buffers, rates against links, ...)
collecting *all* problems, then emits the IR dict: integer ps / bytes / bit/s, indices, no
defaults left. Routes are computed by the engine.
"""

from __future__ import annotations

import fnmatch
from collections import deque
from typing import Any

from pydantic import ValidationError

from cnsim import schemes
from cnsim.compile import pfc, traffic
from cnsim.compile.errors import problems_from
from cnsim.compile.network import WIRE_OVERHEAD_BYTES, Link, Network, Node, _known, _switches
from cnsim.compile.traffic import TRANSFER_KINDS, U64_MAX, largest_frame
from cnsim.exceptions import ConfigError, ConfigWarning, Problem
from cnsim.scenario.presets import PRESETS
from cnsim.scenario.spec import ParetoOnOff, Scenario
from cnsim.scenario.topology import Elements, HostSpec, LinkSpec, SwitchSpec
from cnsim.scenario.units import format_quantity as fq

PFC_ONLY = {"priorities", "threshold", "alpha", "hysteresis", "headroom", "response_time", "scheduler", "weights"}
SAMPLED_SERIES = ("queue_ts", "rp_rate", "tcp_ts", "pause_ts")
"""The tables sampled every ``observe.sample_interval``, each with a switch of its name in ``[observe]``."""


class Compiler:
    """Resolves one scenario; problems accumulate in :attr:`problems`."""

    def __init__(self, sc: Scenario):
        self.sc = sc
        self.problems: list[Problem] = []
        self.net = Network()
        self.cm_params: tuple[schemes.Scheme, Any] | None = None  # the validated scheme parameters (cm_ir)
        self.pins: dict[int, list[str]] = {}  # flow id -> pinned node path (traffic_ir)
        self._ports: dict[str, int] | None = None  # links per node (queue_limit)
        # destination sets of generators with a flow per source (a send queue per transfer): the
        # IR's dst_sets, by their node indices
        self.dst_sets: dict[tuple[int, ...], int] = {}

    def error(self, path: str, message: str, *value: Any) -> None:
        self.problems.append(Problem(path, message, *value))

    # ---- topology ---------------------------------------------------------------------------
    def preset_elements(self) -> Elements:
        topo = self.sc.topology
        if topo.preset is None:
            if topo.params:
                self.error("topology.params", "parameters given without topology.preset", topo.params)
            return Elements()
        preset = PRESETS.get(topo.preset)
        if preset is None:
            self.error("topology.preset", f"unknown preset; known: {', '.join(PRESETS)}", topo.preset)
            return Elements()
        try:
            params = preset.params.model_validate(topo.params)
        except ValidationError as err:
            self.problems += problems_from(err, preset.params, "topology.params")
            return Elements()
        return preset.build(params)

    def resolve_topology(self) -> None:
        sc, d = self.sc, self.sc.defaults
        before = len(self.problems)
        base = self.preset_elements()
        if len(self.problems) > before:
            return
        hosts: dict[str, tuple[HostSpec, str]] = {h.name: (h, "topology.preset") for h in base.hosts}
        switches: dict[str, tuple[SwitchSpec, str]] = {s.name: (s, "topology.preset") for s in base.switches}
        for kind, items, table in (("hosts", sc.topology.hosts, hosts), ("switches", sc.topology.switches, switches)):
            seen: set[str] = set()
            for i, spec in enumerate(items):
                path = f"topology.{kind}.{i}"
                if spec.name in seen:
                    self.error(f"{path}.name", "duplicate name", spec.name)
                    continue
                seen.add(spec.name)
                if spec.name in table:  # override of a preset element: only the fields set
                    old, _ = table[spec.name]
                    spec = _merge(old, spec)
                table[spec.name] = (spec, path)
        for name in hosts.keys() & switches.keys():
            self.error(switches[name][1] + ".name", "name already used by a host", name)
        for name, (h, path) in hosts.items():
            delay = h.response_delay if h.response_delay is not None else d.response_delay
            self.net.nodes.append(Node(name, "host", path, response_delay_ps=delay))
        for name, (s, path) in switches.items():
            if name in hosts:
                continue
            buf = s.buffer
            size_path = "defaults.buffer.size"
            if buf is not None and buf.size is not None:
                size_path = f"{path}.buffer.size" if path != "topology.preset" else "topology.params.buffer"
            ecn, ecn_path = (
                (s.ecn_threshold, f"{path}.ecn_threshold")
                if s.ecn_threshold is not None
                else (d.ecn_threshold, "defaults.ecn_threshold")
            )
            self.net.nodes.append(
                Node(
                    name,
                    "switch",
                    path,
                    latency_ps=s.latency if s.latency is not None else d.switch_latency,
                    buffer_policy=(buf.policy if buf and buf.policy else d.buffer.policy),
                    buffer_bytes=(buf.size if buf and buf.size else d.buffer.size),
                    buffer_path=size_path,
                    ecn_threshold_bytes=ecn,
                    ecn_path=ecn_path,
                )
            )
        if not self.net.nodes:
            self.error("topology", "no nodes: set topology.preset or list hosts, switches and links")
            return
        self.resolve_links(base.links)
        self.check_topology()
        hs = [h for h, _ in hosts.values()]
        sw = [s for name, (s, _) in switches.items() if name not in hosts]  # a clash was reported above
        self.check_unused_defaults(
            {
                "response_delay": ("host", any(h.response_delay is None for h in hs)),
                "switch_latency": ("switch", any(s.latency is None for s in sw)),
                "buffer.size": ("switch", any(s.buffer is None or s.buffer.size is None for s in sw)),
                "buffer.policy": ("switch", any(s.buffer is None or s.buffer.policy is None for s in sw)),
                "ecn_threshold": ("switch", any(s.ecn_threshold is None for s in sw)),
            }
        )

    def check_unused_defaults(self, used: dict[str, tuple[str, bool]], by: str | None = None) -> None:
        """A ``[defaults]`` value the user set that no element takes (a preset or every element sets its
        own) changes nothing: a warning naming the field, not a silent no-op. A value equal to the
        built-in default is not counted as given: a ``resolved-config.toml`` writes every default out,
        and running it again must not warn about values nobody chose. ``by``: who sets the elements'
        own values (default: the preset, if any, or the scenario)."""
        d = self.sc.defaults

        def chosen(model: Any, names: set[str]) -> set[str]:
            fields = type(model).model_fields
            return {n for n in names if getattr(model, n) != fields[n].get_default(call_default_factory=True)}

        given = chosen(d, set(d.model_fields_set)) | {
            f"buffer.{k}" for k in chosen(d.buffer, set(d.buffer.model_fields_set)) if "buffer" in d.model_fields_set
        }
        preset = self.sc.topology.preset
        if by is None:
            by = (
                f"preset {preset!r} (its parameters: `cnsim describe {preset}`) or the scenario"
                if preset
                else "scenario"
            )
        for name, (element, is_used) in used.items():
            if name in given and not is_used:
                self.warn(f"defaults.{name}", f"not used: every {element} has its own, set by the {by}")

    def resolve_links(self, preset_links: list[LinkSpec]) -> None:
        d, names = self.sc.defaults, self.net.index()
        table: dict[frozenset[str], tuple[LinkSpec, str]] = {lk.key(): (lk, "topology.preset") for lk in preset_links}
        seen: set[frozenset[str]] = set()
        for i, lk in enumerate(self.sc.topology.links):
            path = f"topology.links.{i}"
            bad = False
            for end in ("a", "b"):
                if getattr(lk, end) not in names:
                    self.error(f"{path}.{end}", f"unknown node; known: {_known(list(names))}", getattr(lk, end))
                    bad = True
            if lk.a == lk.b:
                self.error(path, "a link needs two different end points", [lk.a, lk.b])
                bad = True
            if lk.key() in seen:
                self.error(path, "duplicate link", [lk.a, lk.b])
                bad = True
            if bad:
                continue
            seen.add(lk.key())
            if lk.key() in table:
                lk = _merge(table[lk.key()][0], lk)
            table[lk.key()] = (lk, path)
        specs = [lk for lk, _ in table.values()]
        self.check_unused_defaults(
            {
                "link_rate": ("link", any(lk.rate is None for lk in specs)),
                "link_delay": ("link", any(lk.delay is None for lk in specs)),
            }
        )
        for lk, path in table.values():
            self.net.links.append(
                Link(
                    lk.a,
                    lk.b,
                    lk.rate if lk.rate is not None else d.link_rate,
                    lk.delay if lk.delay is not None else d.link_delay,
                    path,
                )
            )

    def check_topology(self) -> None:
        adj: dict[str, set[str]] = {n.name: set() for n in self.net.nodes}
        degree: dict[str, int] = {n.name: 0 for n in self.net.nodes}
        for lk in self.net.links:
            adj[lk.a].add(lk.b)
            adj[lk.b].add(lk.a)
            degree[lk.a] += 1
            degree[lk.b] += 1
        for n in self.net.nodes:
            if n.kind == "host" and degree[n.name] > 1:
                self.error("topology.links", f"host {n.name!r} has {degree[n.name]} links; a host has one NIC")
        start = self.net.nodes[0].name
        reached, todo = {start}, deque([start])
        while todo:
            for nb in adj[todo.popleft()] - reached:
                reached.add(nb)
                todo.append(nb)
        lost = [n.name for n in self.net.nodes if n.name not in reached]
        if lost:
            self.error("topology.links", f"topology is disconnected: {_known(lost)} cannot reach {start!r}")

    # ---- run-wide rules ---------------------------------------------------------------------
    def check_run(self) -> None:
        run = self.sc.run
        if run.warmup >= run.duration:
            self.error("run.warmup", f"must be < run.duration ({fq(run.duration, 'time')})", fq(run.warmup, "time"))

    def max_frame(self) -> int:
        """The largest data frame of the scenario: of its generators (defaults.frame_size when none), with the
        INT header it can carry on the wire (HPCC)."""
        d = self.sc.defaults
        return max((largest_frame(g, d) for g in self.sc.traffic), default=d.frame_size) + self.int_bytes_bound()

    def int_bytes_bound(self) -> int:
        """The most INT header bytes a data frame carries on the wire: HPCC's source bytes plus its bytes per
        switch on the longest shortest path between two hosts (0 without INT bytes)."""
        if self.cm_params is None or self.sc.cm.scheme != "hpcc":
            return 0
        from cnsim.schemes.hpcc import int_wire  # scheme modules load when used (cnsim --help loads none)

        source, hop = int_wire(self.cm_params[1])
        if hop == 0:
            return source
        return source + hop * self._switch_diameter()

    def _switch_diameter(self) -> int:
        """Switches on the longest shortest path between two switches that have hosts (BFS over switches)."""
        kinds = {n.name: n.kind for n in self.net.nodes}
        adj: dict[str, list[str]] = {n.name: [] for n in self.net.nodes if n.kind == "switch"}
        edge: set[str] = set()
        for lk in self.net.links:
            a, b = lk.a, lk.b
            if kinds[a] == "switch" and kinds[b] == "switch":
                adj[a].append(b)
                adj[b].append(a)
            elif kinds[a] == "switch" or kinds[b] == "switch":
                edge.add(a if kinds[a] == "switch" else b)
        longest = 0
        for s in edge:
            dist, todo = {s: 1}, deque([s])
            while todo:
                u = todo.popleft()
                for v in adj[u]:
                    if v not in dist:
                        dist[v] = dist[u] + 1
                        todo.append(v)
            longest = max([longest] + [d for v, d in dist.items() if v in edge])
        return longest

    def check_buffers(self) -> None:
        frame = self.max_frame()
        for n in self.net.nodes:
            if n.kind == "switch" and n.buffer_bytes < frame:
                self.error(
                    n.buffer_path,
                    f"buffer of switch {n.name!r} is smaller than one frame "
                    f"({fq(frame, 'size')}); allowed: >= the largest frame",
                    fq(n.buffer_bytes, "size"),
                )
            if n.kind == "switch" and n.ecn_threshold_bytes is not None:
                limit, how = self.queue_limit(n)
                if n.ecn_threshold_bytes >= limit:
                    self.warn(
                        n.ecn_path,
                        f"ECN threshold of switch {n.name!r} is not below its buffer ({how}): "
                        f"frames are dropped before any is marked, so DCTCP's marking never acts",
                        fq(n.ecn_threshold_bytes, "size"),
                    )

    def queue_limit(self, n: Node) -> tuple[int, str]:
        """The longest an egress queue of switch ``n`` can grow, bytes, and how that follows from its buffer
        (for messages): the private limit ('egress') or the pool ('shared'); with 'ingress' and 'partitioned'
        each input's partition limits only what comes from that input, so a queue can hold one partition from
        every other port (``net/buffer.rs`` ``admit``)."""
        if n.buffer_policy in ("ingress", "partitioned"):
            if self._ports is None:
                self._ports = {}
                for lk in self.net.links:
                    for end in (lk.a, lk.b):
                        self._ports[end] = self._ports.get(end, 0) + 1
            inputs = self._ports.get(n.name, 0) - 1
            if inputs > 1:
                limit = inputs * n.buffer_bytes
                return limit, (
                    f"{n.buffer_policy} policy: {inputs} inputs x {n.buffer_path} "
                    f"({fq(n.buffer_bytes, 'size')}) = {fq(limit, 'size')}"
                )
        return n.buffer_bytes, f"{n.buffer_path} = {fq(n.buffer_bytes, 'size')}"

    def check_cm_thresholds(self) -> None:
        """A scheme parameter that acts only while an egress queue exceeds it (Qeq, Qsc, kmin, ...) but is not
        below the longest queue a switch can hold: that part of the scheme never acts there. One warning per
        field, naming the switches."""
        if self.cm_params is None:
            return
        scheme, params = self.cm_params
        thresholds = scheme.queue_thresholds(params)
        if not thresholds:
            return
        switches = [n for n in self.net.nodes if n.kind == "switch"]
        limits = {n.name: self.queue_limit(n) for n in switches}
        for name, value, what, effect in thresholds:
            over = [n.name for n in switches if value >= limits[n.name][0]]
            if not over:
                continue
            how = limits[over[0]][1]
            if any(limits[s][1] != how for s in over):
                top = max(over, key=lambda s: limits[s][0])
                how = f"largest at {top!r}: {limits[top][1]}"
            got = fq(value, "size") + ("" if name in params.model_fields_set else f", the {scheme.tag} default")
            self.warn(
                f"cm.params.{name}",
                f"the {what} ({scheme.tag}) is not below the longest egress queue of "
                f"{_switches(over, len(switches))} ({how}): the queue never exceeds it, so {effect}",
                got,
            )

    def warn(self, path: str, message: str, *value: Any) -> None:
        """A configuration that silently disables a mechanism: a ConfigWarning naming the field."""
        import warnings

        got = f" (got {value[0]})" if value else ""
        warnings.warn(f"{path}: {message}{got}", ConfigWarning, stacklevel=2)

    # ---- flow control -----------------------------------------------------------------------
    def pause_ir(self) -> dict[str, dict[str, Any]]:
        fc = self.sc.flow_control
        switches = [n for n in self.net.nodes if n.kind == "switch"]
        result = {n.name: {"mode": "none"} for n in switches}
        if fc.mode != "pfc":
            # a value other than the default (a dumped scenario lists every field with its default)
            for key in sorted(k for k in PFC_ONLY if getattr(fc, k) != type(fc).model_fields[k].default):
                self.error(
                    f"flow_control.{key}",
                    f"set but flow_control.mode is {fc.mode!r}; it applies to mode 'pfc'",
                    getattr(fc, key),
                )
        else:
            return pfc.pfc_ir(self, switches)
        if fc.mode == "none":
            for key in ("high", "low"):
                if getattr(fc, key) is not None:
                    self.error(
                        f"flow_control.{key}",
                        "set but flow_control.mode is 'none'; allowed modes: 'global', 'selective', 'pfc'",
                        fq(getattr(fc, key), "size"),
                    )
            return result
        high, low = fc.thresholds()
        if low >= high:
            self.error(
                "flow_control.low",
                f"de-assert threshold must be < flow_control.high ({fq(high, 'size')})",
                fq(low, "size"),
            )
        chosen = switches
        if fc.switches != "all":
            names = {n.name for n in switches}
            for i, s in enumerate(fc.switches):
                if s not in names:
                    self.error(f"flow_control.switches.{i}", f"not a switch; switches: {_known(sorted(names))}", s)
            chosen = [n for n in switches if n.name in fc.switches]
        for n in chosen:
            if high > n.buffer_bytes:
                self.error(
                    "flow_control.high",
                    f"must be <= the buffer of switch {n.name!r} ({fq(n.buffer_bytes, 'size')})",
                    fq(high, "size"),
                )
            if fc.mode == "selective" and n.buffer_policy not in ("ingress", "partitioned"):
                self.error(
                    "flow_control.mode",
                    f"selective pause acts on input partitions; switch {n.name!r} has "
                    f"buffer policy {n.buffer_policy!r} (allowed: 'ingress', 'partitioned')",
                    fc.mode,
                )
            result[n.name] = {
                "mode": fc.mode,
                "high_bytes": high,
                "low_bytes": low,
                "quanta": fc.quanta,
                "refresh_fraction": fc.refresh,
            }
        self.check_headroom(chosen, len(switches), fc.mode, high)
        return result

    def check_headroom(self, paused: list[Node], total: int, mode: str, high: int) -> None:
        """PAUSE cannot stop what is already on its way: after XOFF leaves, an input keeps delivering for
        a round trip of its link plus a frame at each end (the one the upstream is sending, the one this
        port is sending ahead of the PAUSE) plus the PAUSE frame itself:
        overshoot_i = 2 × rate_i × delay_i + 2 × largest frame + control frame.
        Selective PAUSE needs buffer − high ≥ the largest overshoot_i (one partition per input); global
        PAUSE, which stops every input at once when one egress queue passes high, needs ≥ their sum (all
        inputs may feed that queue). Less headroom warns (one warning naming every such switch of the
        ``total``): PAUSE is on but frames can still be dropped."""
        frame, ctrl = self.max_frame(), self.sc.defaults.control_frame_size
        short = []  # (switch, headroom, need, inputs)
        for n in paused:
            over = [
                2 * lk.rate_bps * lk.prop_ps // (8 * 10**12) + 2 * frame + ctrl
                for lk in self.net.links
                if n.name in (lk.a, lk.b)
            ]
            need = (max(over) if mode == "selective" else sum(over)) if over else 0
            if n.buffer_bytes - high < need:
                short.append((n, n.buffer_bytes - high, need, len(over)))
        if not short:
            return
        n, headroom, need, inputs = max(short, key=lambda x: x[2] - x[1])
        rule = "its largest input's" if mode == "selective" else f"the sum over its {inputs} inputs of the"
        formula = "2 x rate x link delay + 2 frames + the PAUSE frame"
        if len(short) == 1:
            where = (
                f"PAUSE headroom of switch {n.name!r} is {fq(headroom, 'size')} ({n.buffer_path} - "
                f"flow_control.high) but {rule} overshoot after XOFF is {fq(need, 'size')} ({formula})"
            )
        else:
            where = (
                f"PAUSE headroom of {_switches([x[0].name for x in short], total)} is below the overshoot "
                f"after XOFF ({formula}); the largest gap is at switch {n.name!r}: {fq(headroom, 'size')} "
                f"({n.buffer_path} - flow_control.high) against {rule} overshoot, {fq(need, 'size')}"
            )
        self.warn("flow_control.high", f"{where}: frames can be dropped with PAUSE on", fq(high, "size"))

    # ---- traffic ----------------------------------------------------------------------------
    def select(self, selector: str | list[str], path: str) -> list[str]:
        hosts = self.net.hosts()
        switches = {n.name for n in self.net.nodes if n.kind == "switch"}
        if isinstance(selector, str):
            if selector == "all":
                return hosts
            if any(c in selector for c in "*?["):
                found = [h for h in hosts if fnmatch.fnmatchcase(h, selector)]
                if not found:
                    self.error(path, f"pattern matches no host; hosts: {_known(hosts)}", selector)
                return found
            selector = [selector]
        out: list[str] = []
        for i, name in enumerate(selector):
            where = path if len(selector) == 1 else f"{path}.{i}"
            if name in switches:
                self.error(where, "is a switch; traffic runs between hosts", name)
            elif name not in hosts:
                self.error(where, f"unknown host; hosts: {_known(hosts)}", name)
            elif name not in out:
                out.append(name)
        return out

    # ---- timed events and pinned paths ------------------------------------------------------
    def routing_ir(self) -> dict[str, Any] | None:
        """The IR ``routing`` section (None without events and pinned paths: the IR stays as before)."""
        sc, index = self.sc, self.net.index()
        link_index = {frozenset((lk.a, lk.b)): i for i, lk in enumerate(self.net.links)}
        events = []
        for i, e in enumerate(sc.events):
            j = link_index.get(frozenset(e.link))
            if j is None:
                bad = [n for n in e.link if n not in index]
                self.error(
                    f"events.{i}.link",
                    f"unknown node; known: {_known(list(index))}" if bad else "no link between these nodes",
                    list(e.link),
                )
                continue
            if e.at >= sc.run.duration:
                self.warn(
                    f"events.{i}.at",
                    f"not before run.duration ({fq(sc.run.duration, 'time')}): the event never happens",
                    fq(e.at, "time"),
                )
            events.append({"t_ps": e.at, "link": j, "up": e.state == "up"})
        pinned = [{"flow": f, "path": [index[n] for n in path]} for f, path in sorted(self.pins.items())]
        if not events and not pinned:
            for key in ("link_detection", "route_convergence"):
                if key in sc.topology.model_fields_set and getattr(sc.topology, key) != 0:
                    self.warn(f"topology.{key}", "set but the scenario has no [[events]]: nothing to detect")
            return None
        conv = sc.topology.route_convergence
        return {
            "events": events,
            "detection_ps": sc.topology.link_detection,
            "convergence_ps": U64_MAX if conv == "never" else conv,
            "pinned": pinned,
        }

    def check_path(self, g: Any, path: str, src: str, dst: str) -> list[str] | None:
        """A generator's pinned path, checked: from its source through distinct switches to its destination,
        each hop a link (None and an error otherwise)."""
        nodes = g.path
        kinds = {n.name: n.kind for n in self.net.nodes}
        linked = {frozenset((lk.a, lk.b)) for lk in self.net.links}
        where = f"{path}.path"
        if len(nodes) < 3 or nodes[0] != src or nodes[-1] != dst:
            self.error(where, f"must run from the source {src!r} through switches to the destination {dst!r}", nodes)
            return None
        for k, n in enumerate(nodes):
            if n not in kinds:
                self.error(f"{where}.{k}", f"unknown node; known: {_known(list(kinds))}", n)
                return None
            if 0 < k < len(nodes) - 1 and (kinds[n] != "switch" or n in nodes[:k]):
                self.error(f"{where}.{k}", "inner nodes must be distinct switches", n)
                return None
        for k, (a, b) in enumerate(zip(nodes, nodes[1:])):
            if frozenset((a, b)) not in linked:
                self.error(f"{where}.{k + 1}", f"no link between {a!r} and {b!r}", b)
                return None
        return list(nodes)

    # ---- hotspots ---------------------------------------------------------------------------
    def hotspot_ir(self) -> list[dict]:
        index = self.net.index()
        kinds = {n.name: n.kind for n in self.net.nodes}
        windows: dict[tuple[str, str], list[tuple[int, int, int, str]]] = {}
        for i, h in enumerate(self.sc.hotspot):
            path = f"hotspot.{i}"
            if kinds.get(h.switch) != "switch":
                self.error(f"{path}.switch", "not a switch of the topology", h.switch)
                continue
            link = next((lk for lk in self.net.links if {lk.a, lk.b} == {h.switch, h.toward}), None)
            if link is None:
                self.error(f"{path}.toward", f"not a neighbour of {h.switch!r}", h.toward)
                continue
            duration = self.sc.run.duration
            end = h.end if h.end is not None else duration
            if h.end is None and h.start >= duration:  # the window would end (at the run's end) before it starts
                self.error(f"{path}.start", f"must be < run.duration ({fq(duration, 'time')})", fq(h.start, "time"))
            elif end <= h.start:
                self.error(f"{path}.end", f"must be > start ({fq(h.start, 'time')})", fq(end, "time"))
            elif h.start >= duration:
                self.warn(
                    f"{path}.start",
                    f"not before run.duration ({fq(duration, 'time')}): the hotspot never applies",
                    fq(h.start, "time"),
                )
            if h.rate > link.rate_bps:
                self.error(
                    f"{path}.rate", f"allowed: 0 to the link rate ({fq(link.rate_bps, 'rate')})", fq(h.rate, "rate")
                )
            windows.setdefault((h.switch, h.toward), []).append((h.start, end, h.rate, path))
        out = []
        for (sw, toward), wins in windows.items():
            wins.sort()
            line = next(lk.rate_bps for lk in self.net.links if {lk.a, lk.b} == {sw, toward})
            schedule: list[tuple[int, int]] = []
            for k, (start, end, rate, path) in enumerate(wins):
                if k and start < wins[k - 1][1]:
                    self.error(
                        f"{path}.start", f"overlaps another hotspot window on {sw} -> {toward}", fq(start, "time")
                    )
                schedule += [(start, rate), (end, line)]
            out.append({"switch": index[sw], "toward": index[toward], "schedule": schedule})
        return out

    def cm_ir(self) -> dict[str, Any]:
        cm = self.sc.cm
        try:
            scheme = schemes.get(cm.scheme)
        except KeyError:
            self.error("cm.scheme", f"unknown scheme; known: {', '.join(sorted(schemes.SCHEMES))}", cm.scheme)
            return {"scheme": cm.scheme, "params": {}}
        try:
            params = scheme.params.model_validate(cm.params)
        except ValidationError as err:
            self.problems += problems_from(err, scheme.params, "cm.params")
            return {"scheme": cm.scheme, "params": {}}
        self.cm_params = (scheme, params)
        return {"scheme": cm.scheme, "params": scheme.to_ir(params)}

    # ---- the IR -----------------------------------------------------------------------------
    def _observe(self) -> dict[str, Any]:
        o = self.sc.observe
        ir = {
            "sample_interval_ps": o.sample_interval,
            "throughput_bin_ps": o.throughput_bin,
            "fct": o.fct,
            "flow_series": None if o.flow_series == "all" else o.flow_series,
        }
        series = {k: getattr(o, k) for k in SAMPLED_SERIES}
        if not all(series.values()):  # all on is the engine's default: the IR (and config_hash) stay as before
            ir["series"] = series
        if o.pcap:
            ir["pcap"] = self.pcap_ir()
        return ir

    def pcap_ir(self) -> list[dict[str, Any]]:
        """The IR of ``[[observe.pcap]]``: node indices of each captured port, its window and file name."""
        index, out, names = self.net.index(), [], set()
        linked = {(lk.a, lk.b) for lk in self.net.links} | {(lk.b, lk.a) for lk in self.net.links}
        duration = self.sc.run.duration
        for i, c in enumerate(self.sc.observe.pcap):
            path = f"observe.pcap.{i}"
            node, peer = c.port
            if node not in index or peer not in index:
                bad = node if node not in index else peer
                self.error(f"{path}.port", f"unknown node; known: {_known(list(index))}", bad)
                continue
            if (node, peer) not in linked:
                self.error(f"{path}.port", f"{node!r} has no link to {peer!r}", list(c.port))
                continue
            end = duration if c.end is None else min(c.end, duration)
            if end <= c.start:
                self.error(
                    f"{path}.end" if c.end is not None else f"{path}.start",
                    f"the window must end after it starts and before run.duration ({fq(duration, 'time')})",
                    fq(c.start, "time"),
                )
                continue
            name = c.name or f"{node}-{peer}"
            if name in names:
                if c.name is not None:
                    self.error(f"{path}.name", "another capture has this file name", c.name)
                    continue
                name = next(f"{name}-{k}" for k in range(2, 10**6) if f"{name}-{k}" not in names)
            names.add(name)
            out.append(
                {
                    "name": name,
                    "node": index[node],
                    "peer": index[peer],
                    "start_ps": c.start,
                    "end_ps": end,
                    "snaplen": c.snaplen,
                }
            )
        return out

    def compile(self) -> dict[str, Any]:
        self.check_run()
        self.resolve_topology()
        cm = self.cm_ir()
        if self.problems:  # element references below need a sound topology
            raise ConfigError(self.problems)
        observe = self._observe()
        self.check_buffers()
        self.check_cm_thresholds()
        pause = self.pause_ir()
        flows, sources = traffic.traffic_ir(self)
        hotspots = self.hotspot_ir()
        routing = self.routing_ir()
        self.check_rdma()
        if self.problems:
            raise ConfigError(self.problems)
        index = self.net.index()
        sc, d = self.sc, self.sc.defaults
        nodes = []
        for n in self.net.nodes:
            if n.kind == "host":
                nodes.append({"kind": "host", "name": n.name, "response_delay_ps": n.response_delay_ps})
            else:
                nodes.append(
                    {
                        "kind": "switch",
                        "name": n.name,
                        "latency_ps": n.latency_ps,
                        "buffer": {"policy": n.buffer_policy, f"{n.buffer_policy}_bytes": n.buffer_bytes},
                        "pause": pause[n.name],
                        "ecn_threshold_bytes": n.ecn_threshold_bytes,
                    }
                )
        return {
            "name": sc.run.name or "scenario",
            "duration_ps": sc.run.duration,
            "warmup_ps": sc.run.warmup,
            "seed": sc.run.seed,
            "replication": sc.run.replication,
            "control_frame_bytes": d.control_frame_size,
            "wire_overhead_bytes": WIRE_OVERHEAD_BYTES if d.wire_overhead else 0,
            "nodes": nodes,
            "links": [
                {"a": index[lk.a], "b": index[lk.b], "rate_bps": lk.rate_bps, "prop_ps": lk.prop_ps}
                for lk in self.net.links
            ],
            "flows": flows,
            "sources": sources,
            "hotspots": hotspots,
            "cm": cm,
            "observe": observe,
            "ecmp": sc.topology.routing == "ecmp",
            "pause_watchdog": None
            if sc.flow_control.watchdog is None
            else {"timeout_ps": sc.flow_control.watchdog, "recovery_ps": sc.flow_control.watchdog_recovery},
            **({"routing": routing} if routing else {}),
            **self.nic_ir(),
            **self.rdma_ir(),
            **({"dst_sets": [list(k) for k in self.dst_sets]} if self.dst_sets else {}),
        }

    def rdma_ir(self) -> dict[str, Any]:
        """The IR's ``rdma`` (absent without loss recovery, so that other scenarios keep their IR)."""
        r = self.sc.rdma
        if r.loss_recovery == "none":
            return {}
        return {"rdma": {"loss_recovery": r.loss_recovery, "timeout_ps": r.timeout}}

    def check_rdma(self) -> None:
        """Loss recovery needs transfers in queues of their own (queue pairs) and no source released by
        its NIC backlog."""
        if self.sc.rdma.loss_recovery == "none":
            return
        path = "rdma.loss_recovery"
        if not self.sc.nic.per_transfer():
            self.error(
                path,
                "needs a send queue per transfer (nic.queues = 'transfer', nic.rate_limiters = 'queue')",
                self.sc.rdma.loss_recovery,
            )
        if not any(isinstance(g, TRANSFER_KINDS) and g.transport == "udp" for g in self.sc.traffic):
            self.error(
                path,
                "no traffic makes RDMA transfers (a workload, incast or pareto generator with transport = 'udp')",
                self.sc.rdma.loss_recovery,
            )
        for i, g in enumerate(self.sc.traffic):
            if isinstance(g, ParetoOnOff) and (g.loop == "rl_queue" or g.nic_buffer is not None):
                self.error(
                    f"traffic[{i}].loop",
                    "a source released by its NIC backlog cannot be combined with "
                    "rdma.loss_recovery (its retransmissions would count as backlog)",
                    g.loop,
                )

    def nic_ir(self) -> dict[str, Any]:
        """The IR's ``nic``, written only where it can matter and differs from the engine's default
        (FIFO per flow, limiters per flow): a scenario without transfers, or with the seeds' NIC, keeps
        the IR (and config hash) it had before the NIC became a choice."""
        queues, limiters = self.sc.nic.resolved()
        makes_transfers = any(isinstance(g, TRANSFER_KINDS) for g in self.sc.traffic)
        if not makes_transfers or (queues, limiters) == ("fifo", "flow"):
            return {}
        return {"nic": {"queues": queues, "rate_limiters": limiters}}


def _merge(base: Any, override: Any) -> Any:
    """``base`` with the fields explicitly set in ``override`` (nested tables merged likewise)."""

    def update(a: dict, b: dict) -> dict:
        for k, v in b.items():
            a[k] = update(a[k], v) if isinstance(v, dict) and isinstance(a.get(k), dict) else v
        return a

    merged = update(base.model_dump(exclude_none=True), override.model_dump(exclude_unset=True, exclude_none=True))
    return type(base).model_validate(merged)


def compile_ir(scenario: Scenario) -> dict[str, Any]:
    """The engine IR of a validated scenario; :class:`ConfigError` lists every problem."""
    return Compiler(scenario).compile()


# the last IR compiled by compile_ir_once, keyed by the scenario object and its content
_LAST: tuple[int, str, dict[str, Any]] | None = None


def compile_ir_once(scenario: Scenario, keep: bool = False) -> dict[str, Any]:
    """:func:`compile_ir`, reusing the previous result when called again on the same scenario with the
    same content (loading a scenario compiles it to check whole-scenario rules; a run then needs the
    same IR — on a 1 024-host fabric with 10^6 host pairs that is seconds). Only a call with ``keep``
    (the loader's) stores its result, one at a time, and a stored result is handed out once and then
    forgotten: the returned IR is the caller's to keep or modify."""
    global _LAST
    key = scenario.model_dump_json()
    if _LAST is not None and _LAST[0] == id(scenario) and _LAST[1] == key:
        ir, _LAST = _LAST[2], None
        return ir
    ir = compile_ir(scenario)
    _LAST = (id(scenario), key, ir) if keep else None
    return ir


def resolve_network(scenario: Scenario) -> Network:
    """The resolved topology (after presets, overrides and defaults)."""
    c = Compiler(scenario)
    c.resolve_topology()
    if c.problems:
        raise ConfigError(c.problems)
    return c.net
