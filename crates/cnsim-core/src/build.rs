//! IR → network: ports in link order, switches and hosts, routes, flows, congestion points and
//! reaction points (one per scheme registry entry), sources, hotspots, and the first events.

use crate::cm::{self, HostInfo, PortInfo};
use crate::error::ScenarioError;
use crate::event::{Event, EventQueue};
use crate::frame::FramePool;
use crate::ids::{FlowId, NodeId, PortId};
use crate::int::IntTable;
use crate::ir::{BufferIr, Ir, NodeIr, PauseIr, ProcessIr, TransportIr};
use crate::net::buffer::policy_bytes;
use crate::net::flowctl::SwitchPause;
use crate::net::port::port_hooks;
use crate::net::tcp::TcpFlow;
use crate::net::{
    adjacency, compute_ecmp, compute_routes, ecmp_salt, flow_paths, next_hop_table, Counters, Flow, Host, NetConfig, Network, Port, Switch, NONE_U32,
    OWNER_HOST,
};
use crate::probe::FlowBins;
use crate::rng::{ns, Stream};
use crate::time::tx_time_ps;
use crate::traffic::Source;
use std::collections::VecDeque;

/// Build the network of a validated IR and schedule its first events.
pub fn build(ir: &Ir) -> Result<Network, ScenarioError> {
    let scheme = cm::registry(&ir.cm.scheme, &ir.cm.params)?;
    let mut nodes = Nodes::new(ir);
    let flows = nodes.add_flows(ir)?;
    nodes.check_destination_sets(ir)?;
    let (cps, cp_rngs) = nodes.congestion_points(ir, scheme.as_ref());
    let (host_infos, host_rngs, has_rp) = nodes.attach_hosts(ir, scheme.as_ref(), &flows);
    let hotspots = nodes.hotspots(ir);
    let Nodes { ports, switches, switch_of, hosts, host_of, pause_enabled, .. } = nodes;
    let host_nodes: Vec<NodeId> = hosts.iter().map(|h| h.node).collect();
    let source_nodes: Vec<NodeId> = hosts.iter().filter(|h| !h.flows.is_empty()).map(|h| h.node).collect();
    let flow_tcp: Vec<Option<crate::ir::TcpIr>> =
        ir.flows.iter().map(|f| if let TransportIr::Tcp(t) = &f.transport { Some(t.clone()) } else { None }).collect();
    let mut sources = make_sources(ir);
    let deferrable = crate::net::deferred::deferrable_sources(ir, &host_of, hosts.len());
    for (h, &si) in deferrable.iter().enumerate() {
        if si != NONE_U32 {
            sources[si as usize].defer_host = h as u32;
        }
    }
    let n_kinds = scheme.message_types().len();
    let (scheme_wants_int, n_ports, int_wire) = (scheme.wants_int(), ports.len(), scheme.int_wire());
    let series = ir.observe.flow_series.map_or(flows.len(), |n| (n as usize).min(flows.len()));
    let flow_bins = FlowBins::new(ir.observe.throughput_bin_ps, ir.duration_ps, series);
    let (reach_ps, spacing_ps) = link_timing(ir, &ports);
    let q = EventQueue::for_links(1024, reach_ps, spacing_ps);
    let owner = |n: NodeId| if switch_of[n.idx()] != NONE_U32 { switch_of[n.idx()] } else { host_of[n.idx()] | OWNER_HOST };
    let port_owner = ports.iter().map(|p| owner(p.node)).collect();
    let mut net = Network {
        cfg: NetConfig {
            duration_ps: ir.duration_ps,
            warmup_ps: ir.warmup_ps,
            control_frame_bytes: ir.control_frame_bytes,
            wire_overhead_bytes: ir.wire_overhead_bytes,
        },
        now: 0,
        run_limit: 0,
        folded_events: 0,
        lazy_ends: vec![0; ports.len().div_ceil(64)],
        deferrable,
        deferred: vec![crate::net::deferred::NO_FIRING; hosts.len()],
        deferring: false,
        q,
        frames: FramePool::default(),
        ports,
        cps,
        cp_rngs,
        switches,
        port_owner,
        switch_of,
        hosts,
        host_of,
        host_infos,
        host_rngs,
        host_nodes,
        source_nodes,
        n_flows: flows.len(),
        tcp_closed: vec![Default::default(); if ir.nic.per_transfer() { flows.len() } else { 0 }],
        flows,
        per_transfer: ir.nic.per_transfer(),
        rotate: ir.nic.rotates(),
        free_queues: Default::default(),
        queue_meta: Vec::new(),
        flow_tcp,
        sources,
        transfers: crate::net::transfers::Transfers::new(ir.observe.fct, ir.warmup_ps),
        release_checks: ir.sources.iter().any(|s| {
            matches!(s.process, ProcessIr::ParetoOnOff { nic_buffer_frames: Some(_), .. } | ProcessIr::ParetoOnOff { rl_release: true, .. })
        }),
        hotspots,
        scheme,
        has_rp,
        pause_enabled,
        pause_receipts: 0,
        pfc_enabled: ir.nodes.iter().any(|n| matches!(n, NodeIr::Switch { pause: PauseIr::Pfc(_), .. })),
        ecmp_salt: ecmp_salt(ir.seed),
        watchdog: ir.pause_watchdog,
        pfc_cycles: Default::default(),
        c: Counters { ctrl_by_kind: vec![0; n_kinds], ..Default::default() },
        flow_bins,
        q_watch: Default::default(),
        int: scheme_wants_int.then(|| IntTable::new(n_ports, int_wire)),
        pcap: None,
        dynamics: None,
        rdma: crate::net::rdma::Rdma::new(&ir.rdma),
        tx_hook: false,
        arrive_hook: false,
        egress_hook: false,
        emits: Vec::new(),
        rate_changes: Vec::new(),
        limit_changes: Vec::new(),
        timers: Vec::new(),
    };
    net.pcap = crate::net::pcap::build(ir, &net);
    net.dynamics = crate::net::dynamics::Dynamics::new(ir, &net.switch_of, net.switches.len());
    crate::net::dynamics::schedule(&mut net);
    let (int, dynamics) = (net.int.is_some(), net.dynamics.is_some());
    let int_source = net.int.as_ref().is_some_and(|t| t.wire().source_bytes > 0);
    net.tx_hook = net.pcap.is_some() || dynamics || int_source;
    net.arrive_hook = int || dynamics;
    net.egress_hook = int || dynamics;
    // each switch port's optional data-path steps (crate::net::port::port_hooks); PAUSE's and
    // PFC's state is network-wide (a PAUSE or PFC frame may reach any port)
    let wire = if int || dynamics || net.pcap.is_some() { port_hooks::WIRE } else { 0 };
    let pause = if net.pfc_enabled {
        port_hooks::PFC
    } else if net.pause_enabled {
        port_hooks::PAUSE
    } else {
        0
    };
    for sw in &net.switches {
        let cells = if sw.cells.is_empty() { 0 } else { port_hooks::CELLS };
        for &p in &sw.ports {
            let cp = net.cps[p.idx()].as_ref().map_or(0, |cp| cp.hooks() & crate::cm::cp_hooks::ALL);
            net.ports[p.idx()].hooks = cp | wire | pause | cells;
        }
    }
    // a switch none of whose steps has a hook, with egress buffers, hands frames to the link as
    // they start and ends them without an event when none waits
    // (crate::net::port::Network::port_hand_over): an arrival reads the state of its egress only,
    // which it brings up to date (a shared or per-input buffer reads the other ports')
    for sw in &net.switches {
        let egress = matches!(sw.buffer, BufferIr::Egress { .. });
        if egress && !net.arrive_hook && sw.ports.iter().all(|p| net.ports[p.idx()].hooks == 0) {
            for p in &sw.ports {
                net.ports[p.idx()].lazy_ok = true;
            }
        }
    }
    // whether a host's pauses end by an XON or a refresh (Network::pause_guarded), by the longest
    // frame on a wire: a flow's, a control frame, or a congestion message of its own size (BECN's,
    // at most 9 216 B)
    let longest =
        ir.flows.iter().map(|f| f.frame_bytes).max().unwrap_or(0).max(ir.control_frame_bytes).max(9_216) as u64 + ir.wire_overhead_bytes as u64;
    for h in 0..net.hosts.len() {
        let pid = net.hosts[h].port;
        net.ports[pid.idx()].pause_guarded = net.pause_guarded(pid, longest);
    }
    schedule_initial(&mut net);
    Ok(net)
}

/// How far ahead a link event is scheduled at most: a transmission's end, the largest frame's
/// serialisation time (data or control frame, with the wire overhead) after its start, and an
/// arrival, the link's delay and the far end's latency after that (a host schedules it at the
/// start), on the port where this is longest. The event queue's calendar spans it, so that these
/// events, most of a run's, are sorted in its buckets rather than in its overflow heap. And how
/// far apart link events fall due on average with every transmitter sending such frames back to
/// back: the width of the calendar's slices follows it.
fn link_timing(ir: &Ir, ports: &[Port]) -> (u64, u64) {
    let frame = ir.flows.iter().map(|f| f.frame_bytes).max().unwrap_or(0).max(ir.control_frame_bytes) as u64;
    let bytes = frame + ir.wire_overhead_bytes as u64;
    let reach = ports.iter().map(|p| p.tx_ps(bytes) + p.prop_ps + p.peer_latency_ps).max().unwrap_or(0);
    // each busy transmitter: a transmission's end and an arrival per frame
    let per_ps: f64 = ports.iter().map(|p| 2.0 / p.tx_ps(bytes).max(1) as f64).sum();
    let spacing = if per_ps > 0.0 { (1.0 / per_ps) as u64 } else { u64::MAX };
    (reach, spacing)
}

/// Ports, switches and hosts as they are built, before the network takes them.
struct Nodes {
    ports: Vec<Port>,
    /// Each node's ports, in link order.
    node_ports: Vec<Vec<PortId>>,
    switches: Vec<Switch>,
    switch_of: Vec<u32>,
    hosts: Vec<Host>,
    host_of: Vec<u32>,
    pause_enabled: bool,
}

impl Nodes {
    /// Ports in link order (link j: ports 2j, 2j + 1, as `routing::adjacency` numbers them), the
    /// switches with their routes and buffers, the hosts, and what each port knows of its peer.
    fn new(ir: &Ir) -> Self {
        let n = ir.nodes.len();
        // ports and adjacency, in link order
        let mut ports: Vec<Port> = Vec::with_capacity(2 * ir.links.len());
        let mut node_ports: Vec<Vec<PortId>> = vec![Vec::new(); n];
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
        }
        // the same port numbering (link j: ports 2j, 2j + 1) as routing::adjacency
        let (is_switch, adj) = adjacency(ir);
        let routes = compute_routes(n, &is_switch, &adj);
        let ecmp = if ir.ecmp { compute_ecmp(n, &is_switch, &adj, &routes) } else { vec![(Vec::new(), Vec::new()); n] };
        let mut switches = Vec::new();
        let mut switch_of = vec![NONE_U32; n];
        let mut hosts = Vec::new();
        let mut host_of = vec![NONE_U32; n];
        let mut pause_enabled = false;
        for (i, node) in ir.nodes.iter().enumerate() {
            match node {
                NodeIr::Switch { latency_ps, buffer, pause, ecn_threshold_bytes, .. } => {
                    switch_of[i] = switches.len() as u32;
                    let (next_hops, hops) = next_hop_table(&routes[i], &ecmp[i]);
                    pause_enabled |= !matches!(pause, PauseIr::None);
                    switches.push(Switch {
                        node: NodeId(i as u32),
                        ports: node_ports[i].clone(),
                        latency_ps: *latency_ps,
                        buffer: buffer.clone(),
                        pause: SwitchPause::new(pause.clone(), policy_bytes(buffer)),
                        total_bytes: 0,
                        next_hops,
                        hops,
                        ecn_threshold: *ecn_threshold_bytes,
                        cells: if matches!(buffer, BufferIr::Partitioned { .. }) {
                            vec![0; node_ports[i].len() * node_ports[i].len()]
                        } else {
                            Vec::new()
                        },
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
                        first_flow: FlowId::NONE,
                        rr_next: 0,
                        ctrl_q: VecDeque::new(),
                        wake_at: u64::MAX,
                        backlogged: 0,
                        active: Vec::new(),
                        rp: None,
                        reflector: None,
                        info_idx: 0,
                        free_locals: Vec::new(),
                        prio0: 0,
                        prio_mixed: false,
                    });
                }
            }
        }
        let mut nodes = Nodes { ports, node_ports, switches, switch_of, hosts, host_of, pause_enabled };
        nodes.attach_peers(ir);
        nodes
    }

    /// Each port's view of its peer (a switch's latency, whether it sends PFC) and, at a PFC
    /// switch, its headroom.
    fn attach_peers(&mut self, ir: &Ir) {
        for p in self.ports.iter_mut() {
            if let NodeIr::Switch { latency_ps, pause, .. } = &ir.nodes[p.peer_node.idx()] {
                p.peer_is_switch = true;
                p.peer_latency_ps = *latency_ps;
                if matches!(pause, PauseIr::Pfc(_)) {
                    p.pfc = Some(Box::default()); // the port honours PFC from its peer
                }
            }
            if let NodeIr::Switch { pause: PauseIr::Pfc(c), .. } = &ir.nodes[p.node.idx()] {
                let mut pf = p.pfc.take().unwrap_or_default();
                pf.headroom = c.headroom_bytes[p.index as usize];
                p.pfc = Some(pf);
            }
        }
    }

    /// The declared flows, each in its source host's round robin; a destination must be reachable.
    fn add_flows(&mut self, ir: &Ir) -> Result<Vec<Flow>, ScenarioError> {
        let Nodes { ports, switches, switch_of, hosts, host_of, .. } = self;
        let mut flows = Vec::with_capacity(ir.flows.len());
        for (i, f) in ir.flows.iter().enumerate() {
            let h = &mut hosts[host_of[f.src as usize] as usize];
            let local = h.flows.len() as u32;
            h.flows.push(FlowId(i as u32));
            if local == 0 {
                h.first_flow = FlowId(i as u32);
            }
            if h.flows.len() > 64 * h.active.len() {
                h.active.push(0);
            }
            if local == 0 {
                h.prio0 = f.priority;
            }
            h.prio_mixed |= f.priority != h.prio0;
            // a flow's destination must be reachable from its source's switch (a flow without one: each
            // destination of its sources, below)
            if let Some(d) = f.dst {
                if !reachable(ports, switch_of, switches, h.port, d) {
                    return Err(ScenarioError::field(format!("flows[{i}]"), "destination unreachable from source"));
                }
            }
            let mut flow = Flow::new(NodeId(f.src), f.dst.map_or(NodeId::NONE, NodeId), f.frame_bytes, local);
            flow.prio = f.priority;
            if let TransportIr::Tcp(t) = &f.transport {
                flow.tcp = Some(Box::new(TcpFlow::new(t, f.frame_bytes)));
            }
            flows.push(flow);
        }
        Ok(flows)
    }

    /// Every destination of a source's set (a flow without one of its own) is reachable from it.
    fn check_destination_sets(&self, ir: &Ir) -> Result<(), ScenarioError> {
        for (i, s) in ir.sources.iter().enumerate() {
            let (Some(k), Some(&f)) = (s.dst_set, s.flows.first()) else { continue };
            let src = ir.flows[f as usize].src;
            let port = self.hosts[self.host_of[src as usize] as usize].port;
            if let Some(j) =
                ir.dst_sets[k as usize].iter().position(|&d| d != src && !reachable(&self.ports, &self.switch_of, &self.switches, port, d))
            {
                return Err(ScenarioError::field(format!("dst_sets[{k}][{j}]"), format!("destination unreachable from sources[{i}]")));
            }
        }
        Ok(())
    }

    /// A congestion point (and its random stream) per switch egress port, with unique cpids.
    fn congestion_points(&mut self, ir: &Ir, scheme: &dyn cm::Scheme) -> (Vec<crate::net::CpSlot>, Vec<Stream>) {
        let mut cps = Vec::with_capacity(self.ports.len());
        let mut cp_rngs = Vec::with_capacity(self.ports.len());
        for (pi, p) in self.ports.iter_mut().enumerate() {
            let s = self.switch_of[p.node.idx()];
            if s == NONE_U32 {
                cps.push(None);
                cp_rngs.push(Stream::new(ir.seed, ir.replication, ns::CP | pi as u64));
                continue;
            }
            let sw = &self.switches[s as usize];
            let buffer_bytes = policy_bytes(&sw.buffer);
            p.cpid = pi as u32 + 1;
            p.q_hist = Box::new([0]); // grows with the occupancy (net::port::Port::account_queue)
            let info = PortInfo { port: PortId(pi as u32), switch: p.node, index: p.index, rate_bps: p.rate_bps, buffer_bytes, cpid: p.cpid };
            // stream id from the (switch node, port index): stable under unrelated changes
            cp_rngs.push(Stream::new(ir.seed, ir.replication, ns::CP | ((p.node.0 as u64) << 16) | p.index as u64));
            cps.push(scheme.congestion_point(&info));
        }
        (cps, cp_rngs)
    }

    /// Each host's [`HostInfo`], reaction point (if it sends), reflector and random stream.
    fn attach_hosts(&mut self, ir: &Ir, scheme: &dyn cm::Scheme, flows: &[Flow]) -> (Vec<HostInfo>, Vec<Stream>, bool) {
        let rtts = base_rtts(ir);
        let max_base_rtt_ps = rtts.iter().copied().max().unwrap_or(0).max(max_transfer_rtt(ir));
        let mut host_infos = Vec::with_capacity(self.hosts.len());
        let mut host_rngs = Vec::with_capacity(self.hosts.len());
        let mut has_rp = false;
        for (hi, h) in self.hosts.iter_mut().enumerate() {
            let info = HostInfo {
                host: h.node,
                line_rate_bps: self.ports[h.port.idx()].rate_bps,
                flows: h.flows.clone(),
                flow_dst: h.flows.iter().map(|f| flows[f.idx()].dst).collect(),
                flow_frame_bytes: h.flows.iter().map(|f| flows[f.idx()].frame_bytes).collect(),
                flow_base_rtt_ps: h.flows.iter().map(|f| rtts[f.idx()]).collect(),
                max_base_rtt_ps,
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
        (host_infos, host_rngs, has_rp)
    }

    /// Output-generated hotspots: (egress port, schedule).
    fn hotspots(&self, ir: &Ir) -> Vec<(PortId, Vec<(u64, u64)>)> {
        let mut hotspots = Vec::new();
        for h in &ir.hotspots {
            let port = self.node_ports[h.switch as usize]
                .iter()
                .copied()
                .find(|p| self.ports[p.idx()].peer_node.0 == h.toward)
                .expect("validated: toward is a neighbour");
            hotspots.push((port, h.schedule.clone()));
        }
        hotspots
    }
}

/// The traffic sources, each with its own random stream (and a source's destination set).
fn make_sources(ir: &Ir) -> Vec<Source> {
    let dst_sets: Vec<std::sync::Arc<[NodeId]>> = ir.dst_sets.iter().map(|set| set.iter().map(|&d| NodeId(d)).collect()).collect();
    ir.sources
        .iter()
        .map(|s| {
            let flows = s.flows.iter().map(|&f| FlowId(f)).collect();
            let rng = Stream::new(ir.seed, ir.replication, ns::SOURCE | s.stream_id);
            let own = s.flows.first().map_or(NodeId::NONE, |&f| NodeId(ir.flows[f as usize].src));
            let mut src = Source::new(flows, s.start_ps, s.stop_ps, s.gate.clone(), s.process.clone(), rng);
            if let Some(k) = s.dst_set {
                src.set_destinations(dst_sets[k as usize].clone(), own);
            }
            src
        })
        .collect()
}

/// Whether host port `port`'s switch has a route toward node `dst`.
fn reachable(ports: &[Port], switch_of: &[u32], switches: &[Switch], port: PortId, dst: u32) -> bool {
    let sw = switch_of[ports[port.idx()].peer_node.idx()];
    sw != NONE_U32 && {
        let h = switches[sw as usize].next_hops[dst as usize];
        h.n > 1 || !PortId(h.at).is_none()
    }
}

/// Base RTT of every flow, ps: along the path the flow is forwarded on, twice the propagation and
/// switch latencies plus one data frame serialised out and one control frame back on every link
/// (the ns-3 HPCC reference's `2 × delay + txDelay`, scratch/third.cc, with the ACK's own
/// serialisation), plus the source's response delay (feedback acts after it). 0 for a flow without
/// a path (rejected later by the build); a flow without a destination of its own gets its
/// transfers' RTTs as they start ([`crate::net::Network::path_base_rtt`]).
fn base_rtts(ir: &Ir) -> Vec<u64> {
    let links = LinkOf::new(ir);
    flow_paths(ir).iter().zip(&ir.flows).map(|(path, f)| links.path_rtt(ir, path, f.src, f.frame_bytes)).collect()
}

/// The largest base RTT of a transfer of a flow without a destination of its own, ps (over its
/// sources' destinations, on the single route: the equal-cost paths of the fabrics cnsim builds
/// have the same latencies), 0 without such flows.
fn max_transfer_rtt(ir: &Ir) -> u64 {
    if ir.sources.iter().all(|s| s.dst_set.is_none()) {
        return 0;
    }
    let (links, tables) = (LinkOf::new(ir), crate::net::routing::PathTables::new(ir, false));
    let mut max = 0;
    for s in ir.sources.iter().filter(|s| s.dst_set.is_some()) {
        let f = &ir.flows[s.flows[0] as usize];
        for &d in ir.dst_sets[s.dst_set.unwrap_or(0) as usize].iter().filter(|&&d| d != f.src) {
            max = max.max(links.path_rtt(ir, &tables.path(ir, f.src, d, 0), f.src, f.frame_bytes));
        }
    }
    max
}

/// The link between two adjacent nodes.
struct LinkOf(std::collections::HashMap<(u32, u32), usize>);

impl LinkOf {
    fn new(ir: &Ir) -> Self {
        LinkOf(ir.links.iter().enumerate().flat_map(|(i, l)| [((l.a, l.b), i), ((l.b, l.a), i)]).collect())
    }

    /// Base RTT along `path` from host `src` with frames of `frame_bytes` ([`base_rtts`]).
    fn path_rtt(&self, ir: &Ir, path: &[u32], src: u32, frame_bytes: u32) -> u64 {
        let wire = ir.wire_overhead_bytes as u64;
        let mut rtt = match &ir.nodes[src as usize] {
            NodeIr::Host { response_delay_ps, .. } => *response_delay_ps,
            NodeIr::Switch { .. } => 0,
        };
        for w in path.windows(2) {
            let Some(&li) = self.0.get(&(w[0], w[1])) else { return 0 };
            let l = &ir.links[li];
            // saturating: a hand-made IR may carry absurd delays (the RTT is only a TCP/HPCC base)
            rtt = rtt
                .saturating_add(l.prop_ps.saturating_mul(2))
                .saturating_add(tx_time_ps(frame_bytes as u64 + wire, l.rate_bps))
                .saturating_add(tx_time_ps(ir.control_frame_bytes as u64 + wire, l.rate_bps));
            if let NodeIr::Switch { latency_ps, .. } = &ir.nodes[w[1] as usize] {
                rtt = rtt.saturating_add(latency_ps.saturating_mul(2));
            }
        }
        rtt
    }
}

/// RP start hooks, first source firings, CP ticks and hotspot steps.
fn schedule_initial(net: &mut Network) {
    for h in 0..net.hosts.len() {
        net.rp_call(h, |rp, ctx| rp.on_start(ctx));
    }
    for i in 0..net.sources.len() {
        if let Some(t) = net.sources[i].first_time() {
            net.schedule_fire(t, i);
        }
    }
    for pi in 0..net.cps.len() {
        if let Some(period) = net.cps[pi].as_ref().and_then(|c| c.tick_period_ps()) {
            if period > 0 {
                net.schedule(period, Event::CpTick { port: PortId(pi as u32) });
            }
        }
    }
    for hi in 0..net.hotspots.len() {
        if let Some(&(t, _)) = net.hotspots[hi].1.first() {
            net.schedule(t, Event::ServiceRate { hotspot: hi as u32, step: 0 });
        }
    }
}
