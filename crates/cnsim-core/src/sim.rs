//! The simulation: compiled from the IR, run by one deterministic event loop.
//!
//! Path of a data frame: a source adds it to its flow's FIFO; the host NIC picks flows round-robin
//! among those whose rate limiter allows it, serialises the frame and schedules its arrival at the
//! switch (last bit + propagation + switch latency); the switch admits it to the egress queue (or
//! drops it), the port serialises it at its service rate, and so on until the destination host
//! delivers it. PAUSE frames bypass queues and admission.

use crate::cm::{self, CpCtx, Emit, HostCtx, HostInfo, PortInfo, RateChange, Scheme};
use crate::error::{RunError, ScenarioError};
use crate::event::{Event, EventQueue};
use crate::frame::{CmMsg, Frame, FrameId, FrameKind, FramePool, Tag};
use crate::ids::{FlowId, NodeId, PortId};
use crate::ir::{BufferIr, Ir, NodeIr, PauseIr};
use crate::net::{compute_routes, Chunk, CpSlot, DropReason, Flow, Host, Port, Switch, Transfer, HIST_BUCKET};
use crate::observe::Observer;
use crate::rng::{ns, Stream};
use crate::time::{tx_time_ps, SimTime, PS_PER_S};
use crate::traffic::{pareto_frames, Action, Source};
use std::collections::VecDeque;

const NONE_U32: u32 = u32::MAX;

/// Whole-run counters (conservation and summary).
#[derive(Debug, Default, Clone)]
pub struct Counters {
    pub data_generated: (u64, u64),
    pub data_sent: (u64, u64),
    pub data_delivered: (u64, u64),
    pub data_dropped: (u64, u64),
    pub ctrl_generated: (u64, u64),
    pub ctrl_delivered: u64,
    pub ctrl_dropped: u64,
    pub ctrl_by_kind: Vec<u64>,
    /// Control bytes generated after warm-up (overhead), plus extra tag bytes.
    pub ctrl_bytes_window: u64,
    pub extra_overhead_bytes: u64,
    pub pause_sent: u64,
}

/// A compiled, runnable simulation.
pub struct Simulation {
    pub(crate) ir: Ir,
    pub(crate) now: SimTime,
    pub(crate) events: u64,
    q: EventQueue,
    pub(crate) frames: FramePool,
    pub(crate) ports: Vec<Port>,
    cps: Vec<CpSlot>,
    cp_rngs: Vec<Stream>,
    pub(crate) switches: Vec<Switch>,
    pub(crate) switch_of: Vec<u32>,
    pub(crate) hosts: Vec<Host>,
    pub(crate) host_of: Vec<u32>,
    host_infos: Vec<HostInfo>,
    host_rngs: Vec<Stream>,
    host_nodes: Vec<NodeId>,
    pub(crate) flows: Vec<Flow>,
    sources: Vec<Source>,
    pub(crate) transfers: Vec<Transfer>,
    hotspots: Vec<(PortId, Vec<(u64, u64)>)>,
    pub(crate) scheme: Box<dyn Scheme>,
    pub(crate) has_rp: bool,
    pub(crate) pause_enabled: bool,
    pub(crate) c: Counters,
    pub(crate) obs: Observer,
    // scratch buffers reused by hooks (no allocation in the hot path)
    emits: Vec<Emit>,
    rate_changes: Vec<RateChange>,
    timers: Vec<(SimTime, u64)>,
    backlog_scratch: Vec<bool>,
    finished: bool,
}

impl Simulation {
    /// Parse, validate and compile an IR JSON string.
    pub fn from_json(json: &str) -> Result<Self, ScenarioError> {
        let ir = crate::validate::parse_ir(json)?;
        Self::new(ir)
    }

    /// Validate and compile an IR.
    pub fn new(ir: Ir) -> Result<Self, ScenarioError> {
        crate::validate::validate(&ir)?;
        let scheme = cm::registry(&ir.cm.scheme, &ir.cm.params)?;
        let n = ir.nodes.len();
        let wire = ir.wire_overhead_bytes;
        let _ = wire;
        // ports and adjacency, in link order
        let mut ports: Vec<Port> = Vec::with_capacity(2 * ir.links.len());
        let mut node_ports: Vec<Vec<PortId>> = vec![Vec::new(); n];
        let mut adj: Vec<Vec<(NodeId, PortId)>> = vec![Vec::new(); n];
        for l in &ir.links {
            let pa = PortId(ports.len() as u32);
            let pb = PortId(pa.0 + 1);
            let mut a = Port::new(NodeId(l.a), node_ports[l.a as usize].len() as u32, l.rate_bps, l.prop_ps);
            let mut b = Port::new(NodeId(l.b), node_ports[l.b as usize].len() as u32, l.rate_bps, l.prop_ps);
            a.peer = pb;
            a.peer_node = NodeId(l.b);
            b.peer = pa;
            b.peer_node = NodeId(l.a);
            ports.push(a);
            ports.push(b);
            node_ports[l.a as usize].push(pa);
            node_ports[l.b as usize].push(pb);
            adj[l.a as usize].push((NodeId(l.b), pa));
            adj[l.b as usize].push((NodeId(l.a), pb));
        }
        let is_switch: Vec<bool> = ir.nodes.iter().map(|x| matches!(x, NodeIr::Switch { .. })).collect();
        let mut routes = compute_routes(n, &is_switch, &adj);
        // switches
        let mut switches = Vec::new();
        let mut switch_of = vec![NONE_U32; n];
        let mut hosts = Vec::new();
        let mut host_of = vec![NONE_U32; n];
        let mut pause_enabled = false;
        for (i, node) in ir.nodes.iter().enumerate() {
            match node {
                NodeIr::Switch { latency_ps, buffer, pause, .. } => {
                    switch_of[i] = switches.len() as u32;
                    pause_enabled |= !matches!(pause, PauseIr::None);
                    switches.push(Switch {
                        node: NodeId(i as u32),
                        ports: node_ports[i].clone(),
                        latency_ps: *latency_ps,
                        buffer: buffer.clone(),
                        pause: pause.clone(),
                        total_bytes: 0,
                        n_high: 0,
                        n_above_low: 0,
                        xoff_global: false,
                        route: std::mem::take(&mut routes[i]),
                        drops: 0,
                    });
                }
                NodeIr::Host { response_delay_ps, .. } => {
                    host_of[i] = hosts.len() as u32;
                    hosts.push(Host {
                        node: NodeId(i as u32),
                        port: node_ports[i][0],
                        response_delay_ps: *response_delay_ps,
                        flows: Vec::new(),
                        rr_next: 0,
                        ctrl_q: VecDeque::new(),
                        wake_at: u64::MAX,
                        backlogged: 0,
                        rp: None,
                        reflector: None,
                        info_idx: 0,
                    });
                }
            }
        }
        for p in ports.iter_mut() {
            if let NodeIr::Switch { latency_ps, .. } = &ir.nodes[p.peer_node.idx()] {
                p.peer_is_switch = true;
                p.peer_latency_ps = *latency_ps;
            }
        }
        // flows
        let mut flows = Vec::with_capacity(ir.flows.len());
        for (i, f) in ir.flows.iter().enumerate() {
            let h = &mut hosts[host_of[f.src as usize] as usize];
            let local = h.flows.len() as u32;
            h.flows.push(FlowId(i as u32));
            // a flow's destination must be reachable from its source's switch
            let sw_node = ports[h.port.idx()].peer_node.idx();
            if switch_of[sw_node] == NONE_U32 || switches[switch_of[sw_node] as usize].route[f.dst as usize].is_none() {
                return Err(ScenarioError::field(format!("flows[{i}]"), "destination unreachable from source"));
            }
            flows.push(Flow {
                src: NodeId(f.src),
                dst: NodeId(f.dst),
                frame_bytes: f.frame_bytes,
                local,
                sat: 0,
                fifo: VecDeque::new(),
                backlog: 0,
                rl_rate: None,
                next_allowed: 0,
                last_start: 0,
                last_len: 0,
                closed_loop_source: NONE_U32,
                generated_frames: 0,
                sent_frames: 0,
                sent_bytes: 0,
                delivered_frames: 0,
                delivered_bytes: 0,
                delivered_bytes_window: 0,
                dropped_frames: 0,
                dropped_bytes: 0,
            });
        }
        // congestion points (one per switch egress port) with unique cpids
        let mut cps: Vec<CpSlot> = Vec::with_capacity(ports.len());
        let mut cp_rngs = Vec::with_capacity(ports.len());
        for (pi, p) in ports.iter_mut().enumerate() {
            let s = switch_of[p.node.idx()];
            if s == NONE_U32 {
                cps.push(None);
                cp_rngs.push(Stream::new(ir.seed, ir.replication, ns::CP | pi as u64));
                continue;
            }
            let sw = &switches[s as usize];
            let buffer_bytes = match sw.buffer {
                BufferIr::Egress { egress_bytes } => egress_bytes,
                BufferIr::Ingress { ingress_bytes } => ingress_bytes,
                BufferIr::Shared { shared_bytes } => shared_bytes,
            };
            p.cpid = pi as u32 + 1;
            let max_q = buffer_bytes.max(1);
            let nb = ((max_q / HIST_BUCKET) + 2).min(1 << 16) as usize;
            p.q_hist = vec![0; nb];
            let info = PortInfo {
                port: PortId(pi as u32),
                switch: p.node,
                index: p.index,
                rate_bps: p.rate_bps,
                buffer_bytes,
                cpid: p.cpid,
            };
            // stream id from the (switch node, port index): stable under unrelated changes
            cp_rngs.push(Stream::new(ir.seed, ir.replication, ns::CP | ((p.node.0 as u64) << 16) | p.index as u64));
            cps.push(scheme.congestion_point(&info));
        }
        // hosts: RP, reflector
        let mut host_infos = Vec::with_capacity(hosts.len());
        let mut host_rngs = Vec::with_capacity(hosts.len());
        let mut has_rp = false;
        for (hi, h) in hosts.iter_mut().enumerate() {
            let info = HostInfo {
                host: h.node,
                line_rate_bps: ports[h.port.idx()].rate_bps,
                flows: h.flows.clone(),
                flow_dst: h.flows.iter().map(|f| flows[f.idx()].dst).collect(),
                flow_frame_bytes: h.flows.iter().map(|f| flows[f.idx()].frame_bytes).collect(),
            };
            if !h.flows.is_empty() {
                h.rp = scheme.reaction_point(&info);
                has_rp |= h.rp.is_some();
            }
            h.reflector = scheme.reflector(&info);
            h.info_idx = hi;
            host_infos.push(info);
            host_rngs.push(Stream::new(ir.seed, ir.replication, ns::HOST | h.node.0 as u64));
        }
        let host_nodes: Vec<NodeId> = hosts.iter().map(|h| h.node).collect();
        // sources
        let mut sources = Vec::with_capacity(ir.sources.len());
        for s in &ir.sources {
            sources.push(Source {
                flows: s.flows.iter().map(|&f| FlowId(f)).collect(),
                start: s.start_ps,
                stop: s.stop_ps,
                gate: s.gate.clone(),
                process: s.process.clone(),
                rng: Stream::new(ir.seed, ir.replication, ns::SOURCE | s.stream_id),
                slot: 0,
                sat_on: false,
                busy: false,
            });
        }
        // hotspots
        let mut hotspots = Vec::new();
        for h in &ir.hotspots {
            let port = node_ports[h.switch as usize]
                .iter()
                .copied()
                .find(|p| ports[p.idx()].peer_node.0 == h.toward)
                .expect("validated: toward is a neighbour");
            hotspots.push((port, h.schedule.clone()));
        }
        let obs = Observer::new(&ir, &ports, &switch_of, flows.len());
        let n_kinds = scheme.message_types().len();
        let mut sim = Simulation {
            now: 0,
            events: 0,
            q: EventQueue::with_capacity(1024),
            frames: FramePool::default(),
            ports,
            cps,
            cp_rngs,
            switches,
            switch_of,
            hosts,
            host_of,
            host_infos,
            host_rngs,
            host_nodes,
            flows,
            sources,
            transfers: Vec::new(),
            hotspots,
            scheme,
            has_rp,
            pause_enabled,
            c: Counters { ctrl_by_kind: vec![0; n_kinds], ..Default::default() },
            obs,
            emits: Vec::new(),
            rate_changes: Vec::new(),
            timers: Vec::new(),
            backlog_scratch: Vec::new(),
            finished: false,
            ir,
        };
        sim.schedule_initial();
        Ok(sim)
    }

    fn schedule_initial(&mut self) {
        for h in 0..self.hosts.len() {
            self.rp_call(h, |rp, ctx| rp.on_start(ctx));
        }
        for i in 0..self.sources.len() {
            if let Some(t) = self.sources[i].first_time() {
                self.q.push(t, Event::SourceFire { source: i as u32 });
            }
        }
        for (pi, cp) in self.cps.iter().enumerate() {
            if let Some(period) = cp.as_ref().and_then(|c| c.tick_period_ps()) {
                if period > 0 {
                    self.q.push(period, Event::CpTick { port: PortId(pi as u32) });
                }
            }
        }
        for (hi, (_, sched)) in self.hotspots.iter().enumerate() {
            if let Some(&(t, _)) = sched.first() {
                self.q.push(t, Event::ServiceRate { hotspot: hi as u32, step: 0 });
            }
        }
        if self.obs.sample_interval > 0 {
            self.q.push(0, Event::Sample);
        }
    }

    /// Current simulated time, ps.
    pub fn now(&self) -> SimTime {
        self.now
    }
    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.events
    }
    /// End of the run, ps.
    pub fn duration(&self) -> SimTime {
        self.ir.duration_ps
    }
    pub fn ir(&self) -> &Ir {
        &self.ir
    }

    /// Process every event with time < min(t, duration). Returns true when the run has reached its end.
    pub fn run_until(&mut self, t: SimTime) -> bool {
        let limit = t.min(self.ir.duration_ps);
        while let Some(te) = self.q.peek_time() {
            if te >= limit {
                break;
            }
            let (te, ev) = self.q.pop().expect("peeked");
            debug_assert!(te >= self.now, "event in the past");
            self.now = te;
            self.events += 1;
            self.dispatch(ev);
        }
        if limit >= self.ir.duration_ps {
            self.now = self.ir.duration_ps;
            true
        } else {
            self.now = self.now.max(limit);
            false
        }
    }

    /// Run to the end and collect the results (conservation checked).
    pub fn run(mut self) -> Result<crate::observe::Results, RunError> {
        self.run_until(u64::MAX);
        self.finish()
    }

    /// Collect results after `run_until` reached the end.
    pub fn finish(&mut self) -> Result<crate::observe::Results, RunError> {
        if !self.finished {
            self.finished = true;
            self.now = self.ir.duration_ps;
        }
        crate::observe::collect(self)
    }

    #[inline]
    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::Arrive { port, frame } => {
                let node = self.ports[port.idx()].node;
                let s = self.switch_of[node.idx()];
                if s != NONE_U32 {
                    self.switch_arrive(s as usize, port, frame)
                } else {
                    self.host_arrive(self.host_of[node.idx()] as usize, port, frame)
                }
            }
            Event::PortTxDone { port } => self.port_tx_done(port),
            Event::PortWake { port } => {
                if self.ports[port.idx()].wake_at == self.now {
                    self.ports[port.idx()].wake_at = u64::MAX;
                }
                self.port_try_send(port)
            }
            Event::HostWake { host } => {
                let h = self.host_of[host.idx()] as usize;
                if self.hosts[h].wake_at == self.now {
                    self.hosts[h].wake_at = u64::MAX;
                    self.host_try_send(h);
                }
            }
            Event::SourceFire { source } => self.source_fire(source as usize),
            Event::Feedback { host, frame } => {
                let h = self.host_of[host.idx()] as usize;
                let msg = self.frames.get(frame).msg;
                self.frames.free(frame);
                self.c.ctrl_delivered += 1;
                self.rp_call(h, |rp, ctx| rp.on_feedback(ctx, &msg));
            }
            Event::RpTimer { host, token } => {
                let h = self.host_of[host.idx()] as usize;
                self.rp_call(h, |rp, ctx| rp.on_timer(ctx, token));
            }
            Event::CpTick { port } => {
                self.cp_call(port, |cp, ctx| cp.on_tick(ctx));
                if let Some(p) = self.cps[port.idx()].as_ref().and_then(|c| c.tick_period_ps()) {
                    self.q.push(self.now + p.max(1), Event::CpTick { port });
                }
            }
            Event::PauseRefresh { port, gen } => {
                let p = &self.ports[port.idx()];
                if p.pause_gen == gen {
                    let s = self.switch_of[p.node.idx()] as usize;
                    let asserted = match self.switches[s].pause {
                        PauseIr::Global { .. } => self.switches[s].xoff_global,
                        PauseIr::Selective { .. } => p.xoff,
                        PauseIr::None => false,
                    };
                    if asserted {
                        self.send_pause(port, true);
                    }
                }
            }
            Event::ServiceRate { hotspot, step } => {
                let (port, ref sched) = self.hotspots[hotspot as usize];
                let (_, rate) = sched[step as usize];
                if let Some(&(t, _)) = sched.get(step as usize + 1) {
                    self.q.push(t, Event::ServiceRate { hotspot, step: step + 1 });
                }
                let p = &mut self.ports[port.idx()];
                p.service_bps = rate;
                // re-pace the gap after the last data frame at the new rate
                if p.data_ready_at > self.now && rate > 0 {
                    let gap = tx_time_ps(p.last_data_len, rate.min(p.rate_bps));
                    p.data_ready_at = (p.last_data_start + gap).max(self.now);
                }
                self.port_try_send(port);
            }
            Event::Sample => {
                crate::observe::sample(self);
                let next = self.now + self.obs.sample_interval;
                if next < self.ir.duration_ps {
                    self.q.push(next, Event::Sample);
                }
            }
        }
    }

    // ----------------------------------------------------------------------------------------
    // traffic
    // ----------------------------------------------------------------------------------------

    fn source_fire(&mut self, si: usize) {
        let now = self.now;
        let (act, next) = self.sources[si].fire(now);
        if let Some(t) = next {
            self.q.push(t, Event::SourceFire { source: si as u32 });
        }
        match act {
            Action::Nothing => {}
            Action::Frame { flow } => {
                let fid = self.sources[si].flows[flow];
                self.enqueue_at_host(fid, 1, NONE_U32);
            }
            Action::Transfer { flow, on_bits } => {
                let fid = self.sources[si].flows[flow];
                let frames = pareto_frames(on_bits, self.flows[fid.idx()].frame_bytes);
                let tid = self.transfers.len() as u32;
                self.transfers.push(Transfer {
                    flow: fid,
                    start: now,
                    end: u64::MAX,
                    frames,
                    delivered: 0,
                    bad: false,
                    source: si as u32,
                });
                self.enqueue_at_host(fid, frames, tid);
            }
            Action::Saturate(on) => {
                if on != self.sources[si].sat_on {
                    self.sources[si].sat_on = on;
                    for k in 0..self.sources[si].flows.len() {
                        let fid = self.sources[si].flows[k];
                        let h = self.host_of[self.flows[fid.idx()].src.idx()] as usize;
                        let f = &mut self.flows[fid.idx()];
                        let had = f.has_frame();
                        if on {
                            f.sat += 1
                        } else {
                            f.sat -= 1
                        }
                        let has = f.has_frame();
                        self.adjust_backlogged(h, had, has);
                        if has {
                            self.host_try_send(h);
                        }
                    }
                }
            }
        }
    }

    #[inline]
    fn adjust_backlogged(&mut self, h: usize, had: bool, has: bool) {
        match (had, has) {
            (false, true) => self.hosts[h].backlogged += 1,
            (true, false) => self.hosts[h].backlogged -= 1,
            _ => {}
        }
    }

    fn enqueue_at_host(&mut self, fid: FlowId, frames: u64, transfer: u32) {
        let f = &mut self.flows[fid.idx()];
        let had = f.has_frame();
        match f.fifo.back_mut() {
            Some(c) if c.transfer == transfer && transfer == NONE_U32 => c.frames += frames,
            _ => f.fifo.push_back(Chunk { transfer, frames }),
        }
        f.backlog += frames;
        f.generated_frames += frames;
        self.c.data_generated.0 += frames;
        self.c.data_generated.1 += frames * f.frame_bytes as u64;
        let h = self.host_of[f.src.idx()] as usize;
        self.adjust_backlogged(h, had, true);
        self.host_try_send(h);
    }

    // ----------------------------------------------------------------------------------------
    // hosts
    // ----------------------------------------------------------------------------------------

    #[inline]
    fn ensure_host_wake(&mut self, h: usize, t: SimTime) {
        let w = self.hosts[h].wake_at;
        if w == t || (w < t && w >= self.now) {
            return;
        }
        self.hosts[h].wake_at = t;
        self.q.push(t, Event::HostWake { host: self.hosts[h].node });
    }

    fn host_try_send(&mut self, h: usize) {
        let now = self.now;
        let pid = self.hosts[h].port;
        let (busy_until, paused_until) = {
            let p = &self.ports[pid.idx()];
            (p.busy_until, p.paused_until)
        };
        if busy_until > now {
            if !self.hosts[h].ctrl_q.is_empty() || self.hosts[h].backlogged > 0 {
                self.ensure_host_wake(h, busy_until);
            }
            return;
        }
        if paused_until > now {
            if !self.hosts[h].ctrl_q.is_empty() || self.hosts[h].backlogged > 0 {
                self.ensure_host_wake(h, paused_until);
            }
            return;
        }
        if let Some(fr) = self.hosts[h].ctrl_q.pop_front() {
            self.host_transmit(h, fr);
            return;
        }
        if self.hosts[h].backlogged == 0 {
            return;
        }
        // round robin over eligible flows
        let n = self.hosts[h].flows.len();
        let start = self.hosts[h].rr_next;
        let mut pick = usize::MAX;
        let mut min_blocked = u64::MAX;
        for k in 0..n {
            let i = if start + k >= n { start + k - n } else { start + k };
            let f = &self.flows[self.hosts[h].flows[i].idx()];
            if f.has_frame() {
                if f.next_allowed <= now {
                    pick = i;
                    break;
                }
                min_blocked = min_blocked.min(f.next_allowed);
            }
        }
        if pick == usize::MAX {
            if min_blocked != u64::MAX {
                self.ensure_host_wake(h, min_blocked);
            }
            return;
        }
        self.hosts[h].rr_next = if pick + 1 == n { 0 } else { pick + 1 };
        let fid = self.hosts[h].flows[pick];
        // take one frame from the flow's FIFO
        let (transfer, size, last_of_transfer) = {
            let f = &mut self.flows[fid.idx()];
            let had = true;
            let mut transfer = NONE_U32;
            let mut last = false;
            if f.backlog > 0 {
                let c = f.fifo.front_mut().expect("backlog implies a chunk");
                transfer = c.transfer;
                c.frames -= 1;
                if c.frames == 0 {
                    f.fifo.pop_front();
                    last = transfer != NONE_U32;
                }
                f.backlog -= 1;
            } else {
                // saturated: the frame is generated as it is sent
                f.generated_frames += 1;
                self.c.data_generated.0 += 1;
                self.c.data_generated.1 += f.frame_bytes as u64;
            }
            let has = f.has_frame();
            if had != has {
                self.hosts[h].backlogged -= 1;
            }
            (transfer, f.frame_bytes, last)
        };
        let fr = self.frames.alloc(Frame {
            kind: FrameKind::Data,
            size,
            src: self.hosts[h].node,
            dst: self.flows[fid.idx()].dst,
            flow: fid,
            transfer,
            ingress: PortId::NONE,
            born: now,
            tag: Tag::default(),
            msg: CmMsg::default(),
            quanta: 0,
        });
        let local = self.flows[fid.idx()].local;
        if self.hosts[h].rp.is_some() {
            let mut rp = self.hosts[h].rp.take().expect("checked");
            {
                let mut frame = *self.frames.get(fr);
                let mut ctx = self.host_ctx(h);
                rp.on_transmit(&mut ctx, local, &mut frame);
                *self.frames.get_mut(fr) = frame;
            }
            self.hosts[h].rp = Some(rp);
        }
        let size = self.frames.get(fr).size;
        {
            let f = &mut self.flows[fid.idx()];
            f.sent_frames += 1;
            f.sent_bytes += size as u64;
            f.last_start = now;
            f.last_len = size;
            f.next_allowed = match f.rl_rate {
                Some(r) if r > 0.0 => now + rate_gap_ps(size, r),
                Some(_) => u64::MAX,
                None => now,
            };
        }
        self.c.data_sent.0 += 1;
        self.c.data_sent.1 += size as u64;
        let t_end = self.host_transmit(h, fr);
        if last_of_transfer {
            let src = self.transfers[transfer as usize].source as usize;
            if let Some(t) = self.sources[src].transfer_done(t_end) {
                self.q.push(t, Event::SourceFire { source: src as u32 });
            }
        }
        self.apply_host_effects(h, false);
    }

    /// Put frame `fr` on the host's wire now; returns the end of serialisation.
    fn host_transmit(&mut self, h: usize, fr: FrameId) -> SimTime {
        let now = self.now;
        let pid = self.hosts[h].port;
        let size = self.frames.get(fr).size;
        let wire = self.ir.wire_overhead_bytes as u64;
        let p = &mut self.ports[pid.idx()];
        let t_end = now + p.tx_ps(size as u64 + wire);
        p.busy_until = t_end;
        if now >= self.ir.warmup_ps {
            p.tx_bytes_window += size as u64 + wire;
        }
        let arrive = t_end + p.prop_ps + p.peer_latency_ps;
        let peer = p.peer;
        self.q.push(arrive, Event::Arrive { port: peer, frame: fr });
        if !self.hosts[h].ctrl_q.is_empty() || self.hosts[h].backlogged > 0 {
            self.ensure_host_wake(h, t_end);
        }
        t_end
    }

    fn host_arrive(&mut self, h: usize, port: PortId, fr: FrameId) {
        let now = self.now;
        let (kind, size, flow, transfer, quanta) = {
            let f = self.frames.get(fr);
            (f.kind, f.size, f.flow, f.transfer, f.quanta)
        };
        match kind {
            FrameKind::Pause => {
                self.frames.free(fr);
                self.pause_receive(port, quanta);
                self.host_try_send(h);
            }
            FrameKind::Control => {
                let d = self.hosts[h].response_delay_ps;
                self.q.push(now + d, Event::Feedback { host: self.hosts[h].node, frame: fr });
            }
            FrameKind::Data => {
                self.c.data_delivered.0 += 1;
                self.c.data_delivered.1 += size as u64;
                let f = &mut self.flows[flow.idx()];
                f.delivered_frames += 1;
                f.delivered_bytes += size as u64;
                if now >= self.ir.warmup_ps {
                    f.delivered_bytes_window += size as u64;
                }
                self.obs.on_delivery(flow, now, size);
                if transfer != NONE_U32 {
                    let t = &mut self.transfers[transfer as usize];
                    t.delivered += 1;
                    if t.delivered == t.frames {
                        t.end = now;
                    }
                }
                if self.hosts[h].reflector.is_some() {
                    let mut rf = self.hosts[h].reflector.take().expect("checked");
                    let frame = *self.frames.get(fr);
                    {
                        let mut ctx = self.host_ctx(h);
                        rf.on_data(&mut ctx, &frame);
                    }
                    self.hosts[h].reflector = Some(rf);
                    self.apply_host_effects(h, true);
                }
                self.frames.free(fr);
            }
        }
    }

    fn host_ctx(&mut self, h: usize) -> HostCtx<'_> {
        let hinfo = &self.host_infos[self.hosts[h].info_idx];
        self.backlog_scratch.clear();
        for f in &hinfo.flows {
            self.backlog_scratch.push(self.flows[f.idx()].has_frame());
        }
        HostCtx {
            now: self.now,
            info: hinfo,
            rng: &mut self.host_rngs[h],
            out: &mut self.emits,
            rates: &mut self.rate_changes,
            timers: &mut self.timers,
            backlog: &self.backlog_scratch,
            extra_overhead_bytes: &mut self.c.extra_overhead_bytes,
        }
    }

    fn rp_call(&mut self, h: usize, f: impl FnOnce(&mut dyn cm::ReactionPoint, &mut HostCtx)) {
        if let Some(mut rp) = self.hosts[h].rp.take() {
            {
                let mut ctx = self.host_ctx(h);
                f(rp.as_mut(), &mut ctx);
            }
            self.hosts[h].rp = Some(rp);
            self.apply_host_effects(h, true);
        }
    }

    /// Carry out what a host hook asked for.
    fn apply_host_effects(&mut self, h: usize, kick: bool) {
        let now = self.now;
        let node = self.hosts[h].node;
        for k in 0..self.timers.len() {
            let (t, token) = self.timers[k];
            self.q.push(t, Event::RpTimer { host: node, token });
        }
        self.timers.clear();
        let mut changed = false;
        for k in 0..self.rate_changes.len() {
            let rc = self.rate_changes[k];
            let fid = self.hosts[h].flows[rc.local as usize];
            let f = &mut self.flows[fid.idx()];
            let rate = rc.rate_bps.filter(|r| r.is_finite());
            f.rl_rate = rate.map(|r| r.max(0.0));
            f.next_allowed = match f.rl_rate {
                None => now,
                Some(r) if r > 0.0 => {
                    if f.last_len == 0 {
                        now
                    } else {
                        (f.last_start + rate_gap_ps(f.last_len, r)).max(now)
                    }
                }
                Some(_) => u64::MAX,
            };
            changed = true;
        }
        self.rate_changes.clear();
        let had_emits = !self.emits.is_empty();
        for k in 0..self.emits.len() {
            let e = self.emits[k];
            let fr = self.new_control_frame(node, e);
            self.hosts[h].ctrl_q.push_back(fr);
        }
        self.emits.clear();
        if kick && (changed || had_emits) {
            self.host_try_send(h);
        } else if had_emits {
            // called from inside host_try_send: the NIC is busy; make sure it wakes
            let t = self.ports[self.hosts[h].port.idx()].busy_until.max(now);
            self.ensure_host_wake(h, t);
        }
    }

    fn new_control_frame(&mut self, src: NodeId, e: Emit) -> FrameId {
        let size = self.ir.control_frame_bytes;
        self.c.ctrl_generated.0 += 1;
        self.c.ctrl_generated.1 += size as u64;
        if let Some(k) = self.c.ctrl_by_kind.get_mut(e.msg.kind as usize) {
            *k += 1;
        }
        if self.now >= self.ir.warmup_ps {
            self.c.ctrl_bytes_window += size as u64;
        }
        self.frames.alloc(Frame {
            kind: FrameKind::Control,
            size,
            src,
            dst: e.dst,
            flow: FlowId::NONE,
            transfer: NONE_U32,
            ingress: PortId::NONE,
            born: self.now,
            tag: Tag::default(),
            msg: e.msg,
            quanta: 0,
        })
    }

    // ----------------------------------------------------------------------------------------
    // switches
    // ----------------------------------------------------------------------------------------

    fn switch_arrive(&mut self, s: usize, in_port: PortId, fr: FrameId) {
        let frame = self.frames.get(fr);
        if frame.kind == FrameKind::Pause {
            let q = frame.quanta;
            self.frames.free(fr);
            self.pause_receive(in_port, q);
            self.port_try_send(in_port);
            return;
        }
        let out = self.switches[s].route[frame.dst.idx()];
        self.switch_enqueue(s, out, fr, in_port);
    }

    fn drop_frame(&mut self, s: usize, port: PortId, fr: FrameId, reason: DropReason) {
        let f = *self.frames.get(fr);
        self.frames.free(fr);
        self.switches[s].drops += 1;
        if !port.is_none() {
            self.ports[port.idx()].drops[reason as usize] += 1;
        }
        match f.kind {
            FrameKind::Data => {
                self.c.data_dropped.0 += 1;
                self.c.data_dropped.1 += f.size as u64;
                let fl = &mut self.flows[f.flow.idx()];
                fl.dropped_frames += 1;
                fl.dropped_bytes += f.size as u64;
                if f.transfer != NONE_U32 {
                    self.transfers[f.transfer as usize].bad = true;
                }
            }
            FrameKind::Control => self.c.ctrl_dropped += 1,
            FrameKind::Pause => {}
        }
    }

    /// Buffer admission, enqueue, CP hook, PAUSE check, kick the transmitter.
    fn switch_enqueue(&mut self, s: usize, out: PortId, fr: FrameId, in_port: PortId) {
        if out.is_none() {
            self.drop_frame(s, out, fr, DropReason::NoRoute);
            return;
        }
        let size = self.frames.get(fr).size as u64;
        let verdict = {
            let sw = &self.switches[s];
            match sw.buffer {
                BufferIr::Egress { egress_bytes } => {
                    (self.ports[out.idx()].q_bytes + size > egress_bytes).then_some(DropReason::EgressFull)
                }
                BufferIr::Ingress { ingress_bytes } => (!in_port.is_none()
                    && self.ports[in_port.idx()].part_bytes + size > ingress_bytes)
                    .then_some(DropReason::IngressFull),
                BufferIr::Shared { shared_bytes } => {
                    (sw.total_bytes + size > shared_bytes).then_some(DropReason::SharedFull)
                }
            }
        };
        if let Some(reason) = verdict {
            if self.cps[out.idx()].is_some() {
                let frame = *self.frames.get(fr);
                self.cp_call(out, |cp, ctx| cp.on_drop(ctx, &frame));
            }
            self.drop_frame(s, out, fr, reason);
            return;
        }
        self.frames.get_mut(fr).ingress = in_port;
        self.queue_change(out);
        {
            let p = &mut self.ports[out.idx()];
            p.queue.push_back(fr);
            p.q_bytes += size;
            p.q_max = p.q_max.max(p.q_bytes);
        }
        if !in_port.is_none() {
            self.ports[in_port.idx()].part_bytes += size;
        }
        self.switches[s].total_bytes += size;
        if self.cps[out.idx()].is_some() {
            let mut frame = *self.frames.get(fr);
            self.cp_call(out, |cp, ctx| cp.on_enqueue(ctx, &mut frame));
            *self.frames.get_mut(fr) = frame;
        }
        if self.pause_enabled {
            self.pause_check(s, out, in_port);
        }
        self.port_try_send(out);
    }

    fn cp_call(&mut self, port: PortId, f: impl FnOnce(&mut dyn cm::CongestionPoint, &mut CpCtx)) {
        if let Some(mut cp) = self.cps[port.idx()].take() {
            {
                let p = &self.ports[port.idx()];
                let mut ctx = CpCtx {
                    now: self.now,
                    queue_bytes: p.q_bytes,
                    service_rate_bps: p.service_bps,
                    rng: &mut self.cp_rngs[port.idx()],
                    out: &mut self.emits,
                    hosts: &self.host_nodes,
                };
                f(cp.as_mut(), &mut ctx);
            }
            self.cps[port.idx()] = Some(cp);
            if !self.emits.is_empty() {
                let node = self.ports[port.idx()].node;
                let s = self.switch_of[node.idx()] as usize;
                let emits = std::mem::take(&mut self.emits);
                for e in &emits {
                    let fr = self.new_control_frame(node, *e);
                    let out = self.switches[s].route[e.dst.idx()];
                    self.switch_enqueue(s, out, fr, PortId::NONE);
                }
                self.emits = emits;
                self.emits.clear();
            }
        }
    }

    /// Time-weighted queue statistics: account the interval since the last change.
    #[inline]
    fn queue_change(&mut self, port: PortId) {
        let now = self.now;
        let w = self.ir.warmup_ps;
        let p = &mut self.ports[port.idx()];
        let from = p.q_last_t.max(w);
        if now > from {
            let dt = now - from;
            p.q_area += p.q_bytes as u128 * dt as u128;
            let b = ((p.q_bytes / HIST_BUCKET) as usize).min(p.q_hist.len().saturating_sub(1));
            if let Some(x) = p.q_hist.get_mut(b) {
                *x += dt;
            }
        }
        p.q_last_t = now;
    }

    fn port_try_send(&mut self, pid: PortId) {
        let now = self.now;
        let wire = self.ir.wire_overhead_bytes as u64;
        let ctrl = self.ir.control_frame_bytes;
        let p = &mut self.ports[pid.idx()];
        if p.busy {
            return;
        }
        if let Some(quanta) = p.pending_pause.take() {
            let (src, dst) = (p.node, p.peer_node);
            let t_end = now + p.tx_ps(ctrl as u64 + wire);
            p.busy = true;
            p.busy_until = t_end;
            let fr = self.frames.alloc(Frame {
                kind: FrameKind::Pause,
                size: ctrl,
                src,
                dst,
                flow: FlowId::NONE,
                transfer: NONE_U32,
                ingress: PortId::NONE,
                born: now,
                tag: Tag::default(),
                msg: CmMsg::default(),
                quanta,
            });
            self.ports[pid.idx()].tx_frame = fr;
            self.c.pause_sent += 1;
            self.q.push(t_end, Event::PortTxDone { port: pid });
            return;
        }
        if p.paused_until > now {
            if p.wake_at != p.paused_until && !p.queue.is_empty() {
                p.wake_at = p.paused_until;
                self.q.push(p.paused_until, Event::PortWake { port: pid });
            }
            return;
        }
        if p.service_bps == 0 || p.queue.is_empty() {
            return;
        }
        if p.data_ready_at > now {
            if p.wake_at != p.data_ready_at {
                p.wake_at = p.data_ready_at;
                self.q.push(p.data_ready_at, Event::PortWake { port: pid });
            }
            return;
        }
        let head = *p.queue.front().expect("non-empty");
        let (line, service) = (p.rate_bps, p.service_bps);
        if self.cps[pid.idx()].is_some() {
            let mut frame = *self.frames.get(head);
            self.cp_call(pid, |cp, ctx| cp.on_transmit(ctx, &mut frame));
            *self.frames.get_mut(head) = frame;
        }
        let size = self.frames.get(head).size as u64;
        let p = &mut self.ports[pid.idx()];
        let t_end = now + p.tx_ps(size + wire);
        p.data_ready_at = if service < line { now + tx_time_ps(size + wire, service) } else { t_end };
        p.last_data_start = now;
        p.last_data_len = size + wire;
        p.busy = true;
        p.busy_until = t_end;
        p.tx_frame = head;
        if now >= self.ir.warmup_ps {
            p.tx_bytes_window += size + wire;
        }
        self.q.push(t_end, Event::PortTxDone { port: pid });
    }

    fn port_tx_done(&mut self, pid: PortId) {
        let now = self.now;
        let fr = {
            let p = &mut self.ports[pid.idx()];
            p.busy = false;
            p.tx_frame
        };
        let (kind, size, ingress) = {
            let f = self.frames.get(fr);
            (f.kind, f.size as u64, f.ingress)
        };
        let (peer, prop, lat) = {
            let p = &self.ports[pid.idx()];
            (p.peer, p.prop_ps, p.peer_latency_ps)
        };
        if kind == FrameKind::Pause {
            self.q.push(now + prop, Event::Arrive { port: peer, frame: fr });
        } else {
            self.queue_change(pid);
            {
                let p = &mut self.ports[pid.idx()];
                let h = p.queue.pop_front();
                debug_assert_eq!(h, Some(fr));
                p.q_bytes -= size;
            }
            if !ingress.is_none() {
                self.ports[ingress.idx()].part_bytes -= size;
            }
            let s = self.switch_of[self.ports[pid.idx()].node.idx()] as usize;
            self.switches[s].total_bytes -= size;
            if self.cps[pid.idx()].is_some() {
                let frame = *self.frames.get(fr);
                self.cp_call(pid, |cp, ctx| cp.on_dequeue(ctx, &frame));
            }
            if self.pause_enabled {
                self.pause_check(s, pid, ingress);
            }
            self.q.push(now + prop + lat, Event::Arrive { port: peer, frame: fr });
        }
        self.port_try_send(pid);
    }

    // ----------------------------------------------------------------------------------------
    // PAUSE (spec §1.4)
    // ----------------------------------------------------------------------------------------

    /// A PAUSE frame arrived on `port`: its transmitter stops until the pause time expires.
    fn pause_receive(&mut self, port: PortId, quanta: u16) {
        let now = self.now;
        let w = self.ir.warmup_ps;
        let p = &mut self.ports[port.idx()];
        // close the current paused interval at `now`
        let end = p.paused_until.min(now);
        let from = p.pause_from.max(w);
        if end > from {
            p.paused_acc_ps += end - from;
        }
        p.pause_from = now;
        p.paused_until = if quanta == 0 { now } else { now + tx_time_ps(quanta as u64 * 64, p.rate_bps) };
    }

    fn send_pause(&mut self, port: PortId, xoff: bool) {
        let (quanta, frac) = {
            let s = self.switch_of[self.ports[port.idx()].node.idx()] as usize;
            match self.switches[s].pause {
                PauseIr::Global { quanta, refresh_fraction, .. }
                | PauseIr::Selective { quanta, refresh_fraction, .. } => (quanta, refresh_fraction),
                PauseIr::None => return,
            }
        };
        let p = &mut self.ports[port.idx()];
        p.pending_pause = Some(if xoff { quanta } else { 0 });
        p.pause_gen = p.pause_gen.wrapping_add(1);
        if xoff {
            let dur = tx_time_ps(quanta as u64 * 64, p.rate_bps);
            let t = self.now + ((dur as f64 * frac) as u64).max(1);
            self.q.push(t, Event::PauseRefresh { port, gen: p.pause_gen });
        }
        self.port_try_send(port);
    }

    /// Re-evaluate the PAUSE watermarks after an occupancy change of egress `out` and input
    /// partition `inp`.
    fn pause_check(&mut self, s: usize, out: PortId, inp: PortId) {
        match self.switches[s].pause {
            PauseIr::None => {}
            PauseIr::Global { high_bytes, low_bytes, .. } => {
                let p = &mut self.ports[out.idx()];
                let hi = p.q_bytes >= high_bytes;
                let lo = p.q_bytes > low_bytes;
                let sw = &mut self.switches[s];
                if hi != p.above_high {
                    p.above_high = hi;
                    if hi { sw.n_high += 1 } else { sw.n_high -= 1 }
                }
                if lo != p.above_low {
                    p.above_low = lo;
                    if lo { sw.n_above_low += 1 } else { sw.n_above_low -= 1 }
                }
                let toggle = if !sw.xoff_global && sw.n_high > 0 {
                    Some(true)
                } else if sw.xoff_global && sw.n_above_low == 0 {
                    Some(false)
                } else {
                    None
                };
                if let Some(x) = toggle {
                    self.switches[s].xoff_global = x;
                    for k in 0..self.switches[s].ports.len() {
                        let port = self.switches[s].ports[k];
                        self.send_pause(port, x);
                    }
                }
            }
            PauseIr::Selective { high_bytes, low_bytes, .. } => {
                if inp.is_none() {
                    return;
                }
                let p = &self.ports[inp.idx()];
                if !p.xoff && p.part_bytes >= high_bytes {
                    self.ports[inp.idx()].xoff = true;
                    self.send_pause(inp, true);
                } else if p.xoff && p.part_bytes <= low_bytes {
                    self.ports[inp.idx()].xoff = false;
                    self.send_pause(inp, false);
                }
            }
        }
    }
}

/// Pacing gap of a rate limiter: time to send `bytes` at `rate` bit/s, ps (rounded up).
#[inline]
pub fn rate_gap_ps(bytes: u32, rate: f64) -> u64 {
    let g = (bytes as f64 * 8.0 * PS_PER_S as f64 / rate).ceil();
    if g >= 1.8e19 { u64::MAX / 2 } else { g as u64 }
}

#[allow(dead_code)]
fn _assert_send() {
    fn is_send<T: Send>() {}
    is_send::<Simulation>();
}
