//! Links that fail and recover during a run, routes that follow, and flows pinned to a path (issue 36).
//!
//! * **A link fails** at its event's time: a frame that is on it at any instant while it is down —
//!   from its first bit leaving one end to its last bit reaching the other — is lost
//!   (`drops.by_reason.link_down`, counted at the transmitting port when its transmission ends).
//!   The events are known from the scenario, so this is decided as the frame leaves its transmitter,
//!   exactly. Transmitters keep sending into a dead link until their switch knows: hardware sees the
//!   loss of signal only after the **detection** delay.
//! * **Detection** (`detection_ps` after the change): the two switches at the link's ends stop (or
//!   start) routing over it: their tables — single routes and ECMP sets — are recomputed without the
//!   links they know to be down, and the frames queued for a dead port are moved to the new routes
//!   (admitted again like arriving frames). **Convergence** (`convergence_ps` later, `u64::MAX`: never)
//!   every other switch learns it and recomputes. Between the two, switches route on different views:
//!   a failed core link of a fat tree can send frames back and forth between a core switch that rerouted
//!   and an aggregation switch that did not — a routing loop, which PFC turns into a cyclic buffer
//!   dependency ([`crate::net::flowctl::pfc`] finds it).
//! * **Pinned paths**: a flow given its node path is forwarded along it whatever the tables say (its TCP
//!   ACKs along the reverse); a pinned flow whose path crosses a dead link loses its frames there.
//!
//! Nothing here runs without events or pins (`Network::dynamics` is `None`); the hot paths test one
//! flag each (`Network::tx_hook`, `arrive_hook`, `egress_hook`).

use super::{compute_ecmp, compute_routes, next_hop_table, DropReason, Network, NONE_U32};
use crate::event::Event;
use crate::frame::{FrameId, FrameKind};
use crate::ids::{NodeId, PortId};
use crate::ir::{Ir, LinkEventIr};
use crate::time::SimTime;

/// The single route of every switch toward every destination (`routing::compute_routes`).
type Routes = Vec<Vec<PortId>>;
/// Per switch, the equal-cost next hops toward every destination as (offsets, ports) (`routing::compute_ecmp`).
type EcmpSets = Vec<(Vec<u32>, Vec<PortId>)>;

/// Phases of one link event ([`Event::LinkEvent`]): its detection at the link's ends, its
/// convergence everywhere else (the change on the wire needs no event: see [`Dynamics::lost`]).
pub const DETECTED: u8 = 1;
pub const CONVERGED: u8 = 2;

/// The link-state and routing side of a network with events or pinned paths.
#[derive(Debug)]
pub struct Dynamics {
    pub events: Vec<LinkEventIr>,
    pub detection_ps: u64,
    pub convergence_ps: u64,
    /// Whole topology: which nodes are switches, every node's (neighbour, own port) in link order.
    is_switch: Vec<bool>,
    adj: Vec<Vec<(NodeId, PortId)>>,
    ecmp: bool,
    /// Per link: its state changes on the wire, (time, up), time-ordered (the IR's order at equal times).
    timeline: Vec<Vec<(SimTime, bool)>>,
    /// Frames a host sent that the link will lose, by frame slot (a bit set): dropped as they reach
    /// the switch, so that the host's send path only marks them.
    condemned: Vec<u64>,
    /// Per switch (index into `Network::switches`): the links it routes around.
    view: Vec<Vec<bool>>,
    /// Per switch: pinned next hops, sorted by key (flow << 1 | reverse).
    pins: Vec<Vec<(u64, PortId)>>,
    pub has_pins: bool,
    /// Route recomputations (one per switch table rebuilt), frames lost on dead links, frames moved
    /// from a dead port's queue to new routes.
    pub recomputations: u64,
    pub link_drops: u64,
    pub rerouted: u64,
}

impl Dynamics {
    /// The dynamics of an IR (None without events and pinned paths); `switch_of`: each node's index
    /// among the switches (`NONE_U32` for hosts).
    pub fn new(ir: &Ir, switch_of: &[u32], n_switches: usize) -> Option<Box<Dynamics>> {
        let r = &ir.routing;
        if r.is_static() {
            return None;
        }
        let (is_switch, adj) = super::adjacency(ir);
        let n_links = ir.links.len();
        let mut timeline = vec![Vec::new(); n_links];
        for e in &r.events {
            timeline[e.link as usize].push((e.t_ps, e.up));
        }
        for t in &mut timeline {
            t.sort_by_key(|e| e.0); // stable: equal times keep the IR's order
        }
        let mut pins = vec![Vec::new(); n_switches];
        for p in &r.pinned {
            for w in p.path.windows(2) {
                // forward: at w[0] toward w[1]; reverse (ACKs): at w[1] toward w[0]; hosts send on their link
                for (at, to, rev) in [(w[0], w[1], 0u64), (w[1], w[0], 1)] {
                    let s = switch_of[at as usize];
                    if s == NONE_U32 {
                        continue;
                    }
                    let port = adj[at as usize].iter().find(|(n, _)| n.0 == to).expect("validated: linked").1;
                    pins[s as usize].push(((p.flow as u64) << 1 | rev, port));
                }
            }
        }
        for v in &mut pins {
            v.sort_unstable_by_key(|e| e.0);
        }
        Some(Box::new(Dynamics {
            events: r.events.clone(),
            detection_ps: r.detection_ps,
            convergence_ps: r.convergence_ps,
            is_switch,
            adj,
            ecmp: ir.ecmp,
            timeline,
            condemned: Vec::new(),
            view: vec![vec![false; n_links]; n_switches],
            has_pins: !r.pinned.is_empty(),
            pins,
            recomputations: 0,
            link_drops: 0,
            rerouted: 0,
        }))
    }

    /// Whether a frame on link `l` over `[from, to]` (first bit out to last bit in) is lost: the link
    /// is down at `from`, or goes down before `to`.
    fn lost(&self, l: usize, from: SimTime, to: SimTime) -> bool {
        let t = &self.timeline[l];
        if t.is_empty() {
            return false;
        }
        // the state at `from`: the last change at or before it (up before the first)
        let k = t.partition_point(|e| e.0 <= from);
        if k > 0 && !t[k - 1].1 {
            return true;
        }
        t[k..].iter().take_while(|e| e.0 <= to).any(|e| !e.1)
    }

    /// The pinned egress of switch `s` for a frame of `flow` going `reverse` (None: not pinned).
    #[inline]
    fn pinned(&self, s: usize, flow: u32, reverse: bool) -> Option<PortId> {
        let key = (flow as u64) << 1 | reverse as u64;
        let v = &self.pins[s];
        v.binary_search_by_key(&key, |e| e.0).ok().map(|i| v[i].1)
    }

    /// Single routes and ECMP sets of every node for the view `down` (links routed around).
    fn tables(&self, down: &[bool]) -> (Routes, EcmpSets) {
        let adj: Vec<Vec<(NodeId, PortId)>> =
            self.adj.iter().map(|v| v.iter().copied().filter(|&(_, p)| !down[(p.0 / 2) as usize]).collect()).collect();
        let n = adj.len();
        let routes = compute_routes(n, &self.is_switch, &adj);
        let ecmp = if self.ecmp { compute_ecmp(n, &self.is_switch, &adj, &routes) } else { vec![(Vec::new(), Vec::new()); n] };
        (routes, ecmp)
    }
}

/// The first events of the dynamics: each link change's detection at the link's ends.
pub fn schedule(net: &mut Network) {
    let times: Vec<SimTime> =
        net.dynamics.as_ref().map(|d| d.events.iter().map(|e| e.t_ps.saturating_add(d.detection_ps)).collect()).unwrap_or_default();
    for (i, t) in times.into_iter().enumerate() {
        net.schedule(t, Event::LinkEvent { index: i as u32, phase: DETECTED });
    }
}

impl Network {
    /// Phase `phase` of link event `index`: its detection at the link's ends, or its convergence
    /// everywhere else. (Cold: kept out of the event loop.)
    #[cold]
    #[inline(never)]
    pub(crate) fn link_event(&mut self, index: u32, phase: u8) {
        let now = self.now;
        self.catch_up_all(now); // (a host's link may go down)
        let d = self.dynamics.as_mut().expect("link events need dynamics");
        let ev = d.events[index as usize].clone();
        let l = ev.link as usize;
        match phase {
            DETECTED => {
                let ends = [self.ports[2 * l].node, self.ports[2 * l + 1].node];
                let switches: Vec<usize> = ends.iter().map(|n| self.switch_of[n.idx()]).filter(|&s| s != NONE_U32).map(|s| s as usize).collect();
                self.learn(&switches, l, ev.up);
                if d_conv(self) != u64::MAX {
                    let t = now.saturating_add(d_conv(self));
                    self.schedule(t, Event::LinkEvent { index, phase: CONVERGED });
                }
            }
            _ => {
                let others: Vec<usize> = (0..self.switches.len()).collect();
                self.learn(&others, l, ev.up);
            }
        }
    }

    /// Switches `who` learn that link `l` is up (`up`) or down: their tables are rebuilt for their new
    /// views and the frames queued for ports they no longer use are moved.
    fn learn(&mut self, who: &[usize], l: usize, up: bool) {
        let d = self.dynamics.as_mut().expect("dynamics");
        let changed: Vec<usize> = who.iter().copied().filter(|&s| d.view[s][l] == up).collect();
        for &s in &changed {
            d.view[s][l] = !up;
        }
        // one computation per distinct view among the switches that changed
        let mut done: Vec<(Vec<bool>, Vec<usize>)> = Vec::new();
        for &s in &changed {
            match done.iter_mut().find(|(v, _)| *v == d.view[s]) {
                Some((_, list)) => list.push(s),
                None => done.push((d.view[s].clone(), vec![s])),
            }
        }
        for (view, list) in done {
            let d = self.dynamics.as_mut().expect("dynamics");
            let (routes, ecmp) = d.tables(&view);
            d.recomputations += list.len() as u64;
            for s in list {
                let node = self.switches[s].node.idx();
                let sw = &mut self.switches[s];
                (sw.next_hops, sw.hops) = next_hop_table(&routes[node], &ecmp[node]);
                if !up {
                    let dead = if self.ports[2 * l].node.idx() == node { 2 * l } else { 2 * l + 1 };
                    if self.ports[dead].node.idx() == node {
                        self.reroute_queue(s, PortId(dead as u32));
                    }
                }
            }
        }
    }

    /// Move the frames queued at port `pid` of switch `s` (but the one being transmitted) to the
    /// switch's current routes, in queue order: released as if sent, then admitted again.
    fn reroute_queue(&mut self, s: usize, pid: PortId) {
        let moved = self.take_queued(s, pid);
        for fr in moved {
            let f = self.frames.get(fr);
            if f.dst.is_none() {
                // a broadcast's copy for the neighbour behind the dead link: lost with it
                self.link_drop(pid, fr);
                continue;
            }
            let ingress = f.ingress;
            let out = self.forward_port(s, fr);
            self.dynamics.as_mut().expect("dynamics").rerouted += 1;
            self.switch_enqueue(s, out, fr, ingress);
        }
    }

    /// Remove every frame queued at port `pid` but the one on the wire, releasing its buffer as a
    /// transmission would; returns them in queue order (priority by priority under PFC).
    fn take_queued(&mut self, s: usize, pid: PortId) -> Vec<FrameId> {
        let (now, w) = (self.now, self.cfg.warmup_ps);
        self.queue_change(pid);
        let p = &mut self.ports[pid.idx()];
        let on_wire = p.busy.then_some(p.tx_frame);
        let mut taken = Vec::new();
        if let Some(pf) = p.pfc.as_mut() {
            for k in 0..crate::net::flowctl::PRIORITIES {
                let keep = usize::from(pf.queues[k].front().copied() == on_wire && on_wire.is_some());
                taken.extend(pf.queues[k].drain(keep..));
            }
        } else {
            let keep = usize::from(p.queue.front().copied() == on_wire && on_wire.is_some());
            taken.extend(p.queue.drain(keep..));
        }
        for &fr in &taken {
            let (size, ingress, prio) = {
                let f = self.frames.get(fr);
                (f.size as u64, f.ingress, f.prio as usize)
            };
            let p = &mut self.ports[pid.idx()];
            p.q_bytes -= size;
            if let Some(pf) = p.pfc.as_mut() {
                pf.q_bytes[prio] -= size;
            }
            #[cfg(debug_assertions)]
            {
                p.little.1 += size as u128 * now.max(w) as u128;
            }
            let _ = (now, w);
            if !ingress.is_none() {
                self.ports[ingress.idx()].part_bytes -= size;
            }
            if let Some(c) = self.cell(s, ingress, pid) {
                self.switches[s].cells[c] -= size;
            }
            self.switches[s].total_bytes -= size;
            if self.pfc_enabled {
                self.pfc_dequeued(s, ingress, prio, size);
            } else if self.pause_enabled {
                self.pause_check(s, pid, ingress);
            }
        }
        taken
    }

    /// The egress of switch `s` for frame `fr`: its pinned next hop, else the routes (ECMP).
    #[inline]
    pub(crate) fn forward_port(&self, s: usize, fr: FrameId) -> PortId {
        let f = self.frames.get(fr);
        if !f.flow.is_none() {
            if let Some(d) = self.dynamics.as_ref().filter(|d| d.has_pins) {
                let reverse = f.kind == FrameKind::Ack;
                if let Some(p) = d.pinned(s, self.stat_flow(f.flow).0, reverse) {
                    return p;
                }
            }
        }
        let key = if f.flow.is_none() { ((f.src.0 as u64) << 32) | f.dst.0 as u64 | 1 << 63 } else { f.flow.0 as u64 };
        self.out_port(s, f.dst, key)
    }

    /// Frame `fr` ends its transmission at switch port `pid` now and its last bit reaches the far end
    /// at `to`: true (and the frame is gone, a `link_down` drop) when the link is down at any instant
    /// from its first bit out to then.
    #[cold]
    #[inline(never)]
    pub(crate) fn lost_on_link(&mut self, pid: PortId, fr: FrameId, to: SimTime) -> bool {
        let wire = self.cfg.wire_overhead_bytes as u64;
        let p = &self.ports[pid.idx()];
        let size = if fr.is_mac_control() { self.cfg.control_frame_bytes } else { self.frames.get(fr).size };
        let from = self.now.saturating_sub(p.tx_ps(size as u64 + wire));
        let d = self.dynamics.as_ref().expect("dynamics");
        if !d.lost(pid.idx() / 2, from, to) {
            return false;
        }
        self.link_drop(pid, fr);
        true
    }

    /// A host starts transmitting frame `fr` (`size` bytes) on port `pid`: a data frame gets the INT
    /// header's source bytes ([`crate::int`]); the capture records it; if a failing link will lose it,
    /// it is marked, and dropped where it arrives (a switch, [`Self::switch_arrive_hooked`]). Returns
    /// the frame's size on the wire.
    #[cold]
    #[inline(never)]
    pub(crate) fn host_tx_hook(&mut self, pid: PortId, fr: FrameId, size: u32) -> u32 {
        let size = if self.frames.get(fr).kind == FrameKind::Data { self.int_at_source(fr, size) } else { size };
        if self.pcap.is_some() {
            self.pcap_capture(pid, fr, size);
        }
        let wire = self.cfg.wire_overhead_bytes as u64;
        let p = &self.ports[pid.idx()];
        let to = self.now + p.tx_ps(size as u64 + wire) + p.prop_ps;
        let now = self.now;
        let Some(d) = self.dynamics.as_mut() else { return size };
        let (w, bit) = (fr.0 as usize / 64, 1u64 << (fr.0 % 64));
        if w >= d.condemned.len() {
            d.condemned.resize(w + 1, 0);
        }
        if d.lost(pid.idx() / 2, now, to) {
            d.condemned[w] |= bit;
        } else {
            d.condemned[w] &= !bit;
        }
        size
    }

    /// Frame `fr` ends its transmission at switch port `pid`, its last bit reaching the far end at
    /// `to`: the last switch strips the INT bytes ([`crate::int`]); true (the frame is gone) when a
    /// failing link loses it.
    #[cold]
    #[inline(never)]
    pub(crate) fn egress_hooked(&mut self, pid: PortId, fr: FrameId, to: SimTime) -> bool {
        // the loss first: its first bit left with the frame's INT bytes (a lost frame is stripped
        // as it is counted)
        if self.dynamics.is_some() && self.lost_on_link(pid, fr, to) {
            return true;
        }
        if self.frames.get(fr).kind == FrameKind::Data && !self.ports[pid.idx()].peer_is_switch {
            self.int_strip(fr);
        }
        false
    }

    /// A frame arrives at switch `s` on `in_port` when an optional mechanism is on: dropped if the link
    /// lost it, else its INT hop bytes added ([`crate::int`]) and forwarded (pinned or routed).
    #[cold]
    #[inline(never)]
    pub(crate) fn switch_arrive_hooked(&mut self, s: usize, in_port: PortId, fr: FrameId) {
        if let Some(d) = self.dynamics.as_mut() {
            let (w, bit) = (fr.0 as usize / 64, 1u64 << (fr.0 % 64));
            if d.condemned.get(w).is_some_and(|x| x & bit != 0) {
                d.condemned[w] &= !bit;
                let from = self.ports[in_port.idx()].peer;
                return self.link_drop(from, fr);
            }
        }
        self.int_at_switch(fr);
        let out = self.forward_port(s, fr);
        self.switch_enqueue(s, out, fr, in_port);
    }

    /// Count and free frame `fr` lost on the link of `from` (its transmitting port).
    fn link_drop(&mut self, from: PortId, fr: FrameId) {
        self.ports[from.idx()].drops[DropReason::LinkDown as usize] += 1;
        let s = self.switch_of[self.ports[from.idx()].node.idx()];
        if s != NONE_U32 {
            self.switches[s as usize].drops += 1;
        }
        self.dynamics.as_mut().expect("dynamics").link_drops += 1;
        self.frame_lost(fr);
    }
}

fn d_conv(net: &Network) -> u64 {
    net.dynamics.as_ref().map_or(u64::MAX, |d| d.convergence_ps)
}
