//! Re-checks of the IR invariants on the Rust side. Python validates the user's scenario first;
//! this is the defensive second check so that a direct Rust user (or a bug in the front-end) gets a
//! path-naming error instead of a panic.

use crate::error::ScenarioError;
use crate::ir::{BufferIr, CcIr, FrameSizesIr, Ir, NodeIr, PauseIr, PfcIr, PfcThresholdIr, ProcessIr, SchedulerIr, TcpIr, TransportIr};

fn err(path: String, msg: impl Into<String>) -> ScenarioError {
    ScenarioError::field(path, msg)
}

/// Parse IR JSON with path-precise errors. A valid IR is parsed once, without tracking the path
/// (which doubles the parse of a 1 000-host IR); an invalid one again, to name where it fails.
pub fn parse_ir(json: &str) -> Result<Ir, ScenarioError> {
    if let Ok(ir) = serde_json::from_str(json) {
        return Ok(ir);
    }
    let de = &mut serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(de).map_err(|e| ScenarioError::Json { path: e.path().to_string(), message: e.inner().to_string() })
}

/// Check every invariant the engine relies on.
pub fn validate(ir: &Ir) -> Result<(), ScenarioError> {
    validate_run(ir)?;
    validate_nodes(ir)?;
    let is_host: Vec<bool> = ir.nodes.iter().map(|x| matches!(x, NodeIr::Host { .. })).collect();
    validate_links(ir, &is_host)?;
    let adj = connected(ir)?;
    let n = ir.nodes.len();
    let host_index = |path: String, v: u32| -> Result<(), ScenarioError> {
        if v as usize >= n || !is_host[v as usize] {
            return Err(err(path, format!("{v} is not a host index")));
        }
        Ok(())
    };
    validate_flows(ir, &host_index)?;
    validate_dst_sets(ir, &host_index)?;
    for (i, s) in ir.sources.iter().enumerate() {
        validate_source(ir, i, s)?;
    }
    validate_observe(ir)?;
    validate_rdma(ir)?;
    validate_routing(ir, &is_host, &adj)?;
    validate_pcap(ir, &adj)?;
    validate_hotspots(ir, &is_host, &adj)
}

/// The run's own numbers: nodes present, duration, warm-up, control frames.
fn validate_run(ir: &Ir) -> Result<(), ScenarioError> {
    let n = ir.nodes.len();
    if n == 0 {
        return Err(err("nodes".into(), "at least one host and one switch are required"));
    }
    if ir.duration_ps == 0 {
        return Err(err("duration_ps".into(), "must be > 0"));
    }
    if ir.warmup_ps >= ir.duration_ps {
        return Err(err("warmup_ps".into(), format!("must be < duration_ps ({}), got {}", ir.duration_ps, ir.warmup_ps)));
    }
    if ir.control_frame_bytes < 1 {
        return Err(err("control_frame_bytes".into(), "must be >= 1"));
    }
    Ok(())
}

/// Names, buffers and PAUSE / PFC configuration of every node.
fn validate_nodes(ir: &Ir) -> Result<(), ScenarioError> {
    let mut names = std::collections::BTreeSet::new();
    let max_frame = ir.flows.iter().map(|f| f.frame_bytes as u64).max().unwrap_or(0);
    for (i, node) in ir.nodes.iter().enumerate() {
        let name = match node {
            NodeIr::Host { name, .. } => name,
            NodeIr::Switch { name, buffer, pause, .. } => {
                let limit = match buffer {
                    BufferIr::Egress { egress_bytes } => *egress_bytes,
                    BufferIr::Ingress { ingress_bytes } => *ingress_bytes,
                    BufferIr::Shared { shared_bytes } => *shared_bytes,
                    BufferIr::Partitioned { partitioned_bytes } => *partitioned_bytes,
                };
                if limit < max_frame.max(ir.control_frame_bytes as u64) {
                    return Err(err(format!("nodes[{i}].buffer"), format!("buffer of {limit} B is smaller than one frame ({max_frame} B)")));
                }
                match pause {
                    PauseIr::None => {}
                    PauseIr::Pfc(c) => {
                        let ports = ir.links.iter().filter(|l| l.a as usize == i || l.b as usize == i).count();
                        validate_pfc(&format!("nodes[{i}]"), c, buffer, ports, max_frame)?;
                    }
                    PauseIr::Global { high_bytes, low_bytes, quanta, refresh_fraction }
                    | PauseIr::Selective { high_bytes, low_bytes, quanta, refresh_fraction } => {
                        if low_bytes >= high_bytes {
                            return Err(err(
                                format!("nodes[{i}].pause.low_bytes"),
                                format!("de-assert ({low_bytes}) must be < assert ({high_bytes})"),
                            ));
                        }
                        if *high_bytes > limit {
                            return Err(err(
                                format!("nodes[{i}].pause.high_bytes"),
                                format!("assert threshold {high_bytes} exceeds the buffer ({limit})"),
                            ));
                        }
                        if *quanta == 0 {
                            return Err(err(format!("nodes[{i}].pause.quanta"), "must be in 1..=65535"));
                        }
                        if !(*refresh_fraction > 0.0 && *refresh_fraction <= 1.0) {
                            return Err(err(format!("nodes[{i}].pause.refresh_fraction"), "must be in (0, 1]"));
                        }
                    }
                }
                name
            }
        };
        if !names.insert(name.clone()) {
            return Err(err(format!("nodes[{i}].name"), format!("duplicate node name '{name}'")));
        }
    }
    let pfc = ir.nodes.iter().filter(|x| matches!(x, NodeIr::Switch { pause: PauseIr::Pfc(_), .. })).count();
    let switches = ir.nodes.iter().filter(|x| matches!(x, NodeIr::Switch { .. })).count();
    if pfc > 0 && pfc < switches {
        return Err(err("nodes".into(), format!("PFC runs on {pfc} of {switches} switches; it must run on all or none")));
    }
    Ok(())
}

/// Links: ends in range, no self-loop, hosts on switches, no parallel link, a rate; each host on one link.
fn validate_links(ir: &Ir, is_host: &[bool]) -> Result<(), ScenarioError> {
    let n = ir.nodes.len();
    let mut degree = vec![0usize; n];
    let mut pairs = std::collections::BTreeSet::new();
    for (i, l) in ir.links.iter().enumerate() {
        for (end, v) in [("a", l.a), ("b", l.b)] {
            if v as usize >= n {
                return Err(err(format!("links[{i}].{end}"), format!("node index {v} out of range 0..{n}")));
            }
        }
        if l.a == l.b {
            return Err(err(format!("links[{i}]"), "a link cannot connect a node to itself"));
        }
        if is_host[l.a as usize] && is_host[l.b as usize] {
            return Err(err(format!("links[{i}]"), "hosts must connect to switches"));
        }
        if !pairs.insert((l.a.min(l.b), l.a.max(l.b))) {
            return Err(err(format!("links[{i}]"), "parallel links between the same nodes are not supported"));
        }
        if l.rate_bps == 0 {
            return Err(err(format!("links[{i}].rate_bps"), "must be > 0"));
        }
        degree[l.a as usize] += 1;
        degree[l.b as usize] += 1;
    }
    for (i, &h) in is_host.iter().enumerate() {
        if h && degree[i] != 1 {
            return Err(err(format!("nodes[{i}]"), format!("a host needs exactly one link, has {}", degree[i])));
        }
    }
    Ok(())
}

/// Every node reachable from node 0; the adjacency lists.
fn connected(ir: &Ir) -> Result<Vec<Vec<usize>>, ScenarioError> {
    let n = ir.nodes.len();
    // connectivity: every node reachable from node 0 (switch-transit only matters for flows,
    // and hosts have exactly one link, so plain connectivity is equivalent)
    let mut adj = vec![Vec::new(); n];
    for l in &ir.links {
        adj[l.a as usize].push(l.b as usize);
        adj[l.b as usize].push(l.a as usize);
    }
    let mut seen = vec![false; n];
    let mut stack = vec![0usize];
    seen[0] = true;
    while let Some(u) = stack.pop() {
        for &v in &adj[u] {
            if !seen[v] {
                seen[v] = true;
                stack.push(v);
            }
        }
    }
    if let Some(i) = seen.iter().position(|s| !s) {
        return Err(err(format!("nodes[{i}]"), "topology is disconnected: node unreachable"));
    }
    Ok(adj)
}

/// Flows: hosts at both ends (a null destination only with a send queue per transfer), priority,
/// frame size, TCP parameters.
fn validate_flows(ir: &Ir, host_index: &dyn Fn(String, u32) -> Result<(), ScenarioError>) -> Result<(), ScenarioError> {
    for (i, f) in ir.flows.iter().enumerate() {
        host_index(format!("flows[{i}].src"), f.src)?;
        match f.dst {
            Some(d) => host_index(format!("flows[{i}].dst"), d)?,
            None if !ir.nic.per_transfer() => {
                return Err(err(
                    format!("flows[{i}].dst"),
                    "null (a destination per transfer) needs nic.queues = transfer and nic.rate_limiters = queue",
                ));
            }
            None => {}
        }
        if f.dst == Some(f.src) {
            return Err(err(format!("flows[{i}]"), "source and destination must differ"));
        }
        if f.priority > 7 {
            return Err(err(format!("flows[{i}].priority"), format!("must be in 0..=7, got {}", f.priority)));
        }
        if f.frame_bytes < 64 || f.frame_bytes > 9216 {
            return Err(err(format!("flows[{i}].frame_bytes"), format!("must be in 64..=9216, got {}", f.frame_bytes)));
        }
        if let TransportIr::Tcp(t) = &f.transport {
            validate_tcp(&format!("flows[{i}].transport"), t, f.frame_bytes)?;
        }
    }
    Ok(())
}

/// Source `i`: its flows, destinations, timing, gate and arrival process.
fn validate_source(ir: &Ir, i: usize, s: &crate::ir::SourceIr) -> Result<(), ScenarioError> {
    let p = |f: &str| format!("sources[{i}].{f}");
    if s.flows.is_empty() {
        return Err(err(p("flows"), "at least one flow"));
    }
    for &f in &s.flows {
        if f as usize >= ir.flows.len() {
            return Err(err(p("flows"), format!("flow index {f} out of range")));
        }
        if ir.flows[f as usize].src != ir.flows[s.flows[0] as usize].src {
            return Err(err(p("flows"), "all flows of a source must share its source host"));
        }
    }
    validate_dsts(ir, i, s)?;
    if s.stop_ps <= s.start_ps {
        return Err(err(p("stop_ps"), "must be > start_ps"));
    }
    if let Some(g) = &s.gate {
        if g.on_ps == 0 || g.off_ps == 0 {
            return Err(err(p("gate"), "on and off periods must be > 0"));
        }
    }
    match &s.process {
        ProcessIr::Saturated => {}
        ProcessIr::Cbr { interval_ps, .. } if *interval_ps == 0 => return Err(err(p("process.interval_ps"), "must be > 0")),
        ProcessIr::Bernoulli { slot_ps, p: prob } => {
            if *slot_ps == 0 {
                return Err(err(p("process.slot_ps"), "must be > 0"));
            }
            if !(*prob > 0.0 && *prob <= 1.0) {
                return Err(err(p("process.p"), format!("must be in (0, 1], got {prob}")));
            }
        }
        ProcessIr::Poisson { mean_gap_ps, sizes } => {
            if *mean_gap_ps == 0 {
                return Err(err(p("process.mean_gap_ps"), "must be > 0"));
            }
            if let Some(d) = sizes {
                validate_sizes(&p("process.sizes"), d)?;
                for &f in &s.flows {
                    let flow = &ir.flows[f as usize];
                    if !matches!(flow.transport, TransportIr::Udp) {
                        return Err(err(p("process.sizes"), "a frame-size distribution needs UDP flows (TCP segments are MSS-sized)"));
                    }
                    if flow.frame_bytes < d.max_bytes() {
                        return Err(err(
                            format!("flows[{f}].frame_bytes"),
                            format!("must be >= the largest size of sources[{i}].process.sizes ({}), got {}", d.max_bytes(), flow.frame_bytes),
                        ));
                    }
                }
            }
        }
        ProcessIr::PeriodicFlows { period_ps, bytes, .. } if *period_ps == 0 || *bytes == 0 => {
            return Err(err(p("process"), "period_ps and bytes must be > 0"));
        }
        ProcessIr::FlowArrivals { mean_gap_ps, cdf, .. } => {
            if *mean_gap_ps == 0 {
                return Err(err(p("process.mean_gap_ps"), "must be > 0"));
            }
            let ok = cdf.len() >= 2
                && cdf.windows(2).all(|w| w[1].0 >= w[0].0 && w[1].1 >= w[0].1)
                && cdf[0].1 == 0.0
                && (cdf[cdf.len() - 1].1 - 1.0).abs() < 1e-9
                && cdf.iter().all(|&(x, q)| x >= 0.0 && x.is_finite() && (0.0..=1.0).contains(&q));
            if !ok {
                return Err(err(p("process.cdf"), "needs >= 2 points (bytes, probability), both non-decreasing, from probability 0 to 1"));
            }
        }
        ProcessIr::ParetoOnOff { xm_ps, alpha, line_rate_bps, cap_ps, .. } => {
            if *xm_ps == 0 || *line_rate_bps == 0 {
                return Err(err(p("process"), "xm_ps and line_rate_bps must be > 0"));
            }
            match cap_ps {
                None if !(*alpha > 1.0 && alpha.is_finite()) => {
                    return Err(err(p("process.alpha"), format!("must be > 1 (finite mean) without a cap, got {alpha}")));
                }
                Some(_) if !(*alpha > 0.0 && alpha.is_finite()) => {
                    return Err(err(p("process.alpha"), format!("must be > 0, got {alpha}")));
                }
                Some(c) if *c <= *xm_ps => {
                    return Err(err(p("process.cap_ps"), format!("must be > xm_ps ({xm_ps}), got {c}")));
                }
                _ => {}
            }
        }
        _ => {}
    }
    Ok(())
}

/// Observation buffers stay bounded (a 1-ps bin would ask for billions of cells).
fn validate_observe(ir: &Ir) -> Result<(), ScenarioError> {
    const MAX_CELLS: u64 = 50_000_000;
    let o = &ir.observe;
    // per-flow series exist only for the first `observe.flow_series` flows (plus one aggregate)
    let observed_flows = o.flow_series.map_or(ir.flows.len(), |k| ir.flows.len().min(k as usize)) as u64 + 1;
    if o.throughput_bin_ps > 0 {
        let bins = ir.duration_ps.div_ceil(o.throughput_bin_ps);
        let flows = observed_flows;
        if bins.saturating_mul(flows) > MAX_CELLS {
            let min_bin = ir.duration_ps.saturating_mul(flows).div_ceil(MAX_CELLS);
            return Err(err(
                "observe.throughput_bin_ps".into(),
                format!("{bins} bins × {flows} flows exceeds {MAX_CELLS} cells; use a bin of at least {min_bin} ps"),
            ));
        }
    }
    if o.sample_interval_ps > 0 && o.series.any() {
        let samples = ir.duration_ps.div_ceil(o.sample_interval_ps);
        // at most one series per port (queue; pause where a switch pauses) and per observed flow (RP
        // rate where a scheme is on; TCP window where a flow is TCP)
        let (ports, s) = (2 * ir.links.len() as u64, o.series);
        let pauses = ir.nodes.iter().any(|x| matches!(x, NodeIr::Switch { pause, .. } if !matches!(pause, PauseIr::None)));
        let tcp = ir.flows.iter().any(|f| matches!(f.transport, TransportIr::Tcp(_)));
        let series = ports * (s.queue_ts as u64 + (s.pause_ts && pauses) as u64)
            + observed_flows * ((s.rp_rate && ir.cm.scheme != "none") as u64 + (s.tcp_ts && tcp) as u64);
        if samples.saturating_mul(series) > 4 * MAX_CELLS {
            let min_iv = ir.duration_ps.saturating_mul(series).div_ceil(4 * MAX_CELLS);
            return Err(err(
                "observe.sample_interval_ps".into(),
                format!(
                    "{samples} samples × {series} series is too many; use an interval of at least {min_iv} ps, \
                     or record fewer series (observe.series)"
                ),
            ));
        }
    }
    Ok(())
}

/// Timed link events (a link index each) and pinned paths (a flow's source host, distinct switches
/// linked in turn, its destination host).
fn validate_routing(ir: &Ir, is_host: &[bool], adj: &[Vec<usize>]) -> Result<(), ScenarioError> {
    let n = ir.nodes.len();
    let r = &ir.routing;
    for (i, e) in r.events.iter().enumerate() {
        if e.link as usize >= ir.links.len() {
            return Err(err(format!("routing.events[{i}].link"), format!("must be a link index < {}", ir.links.len())));
        }
    }
    let mut pinned = std::collections::BTreeSet::new();
    for (i, p) in r.pinned.iter().enumerate() {
        let path = |f: &str| format!("routing.pinned[{i}].{f}");
        let Some(f) = ir.flows.get(p.flow as usize) else {
            return Err(err(path("flow"), format!("must be a flow index < {}", ir.flows.len())));
        };
        if !pinned.insert(p.flow) {
            return Err(err(path("flow"), "flow pinned twice"));
        }
        if p.path.len() < 3 || p.path[0] != f.src || f.dst != p.path.last().copied() {
            return Err(err(path("path"), "must run from the flow's source host through switches to its destination host"));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (k, w) in p.path.windows(2).enumerate() {
            if w[1] as usize >= n || !adj[w[0] as usize].contains(&(w[1] as usize)) {
                return Err(err(path("path"), format!("nodes {} and {} (positions {k}, {}) are not linked", w[0], w[1], k + 1)));
            }
        }
        for &v in &p.path[1..p.path.len() - 1] {
            if is_host[v as usize] || !seen.insert(v) {
                return Err(err(path("path"), format!("node {v}: inner nodes must be distinct switches")));
            }
        }
    }
    Ok(())
}

/// RDMA loss recovery: a send queue per transfer (the queue pair its PSNs and timer belong to), a
/// timeout, and no source released by its NIC backlog (retransmissions would count as its backlog).
fn validate_rdma(ir: &Ir) -> Result<(), ScenarioError> {
    let Some(r) = ir.rdma.as_ref().filter(|r| r.loss_recovery != crate::ir::LossRecoveryIr::None) else { return Ok(()) };
    if !ir.nic.per_transfer() {
        return Err(err("rdma.loss_recovery".into(), "needs a send queue per transfer (nic.queues = 'transfer', nic.rate_limiters = 'queue')"));
    }
    if r.timeout_ps == 0 {
        return Err(err("rdma.timeout_ps".into(), "must be > 0"));
    }
    if ir
        .sources
        .iter()
        .any(|s| matches!(s.process, ProcessIr::ParetoOnOff { nic_buffer_frames: Some(_), .. } | ProcessIr::ParetoOnOff { rl_release: true, .. }))
    {
        return Err(err("rdma.loss_recovery".into(), "not with a Pareto source released by its NIC buffer or rate limiter"));
    }
    Ok(())
}

/// Packet captures: a node's port toward a neighbour, a window, a snap length, a file name.
fn validate_pcap(ir: &Ir, adj: &[Vec<usize>]) -> Result<(), ScenarioError> {
    let (n, o) = (ir.nodes.len(), &ir.observe);
    let mut names = std::collections::BTreeSet::new();
    for (i, c) in o.pcap.iter().enumerate() {
        let path = |f: &str| format!("observe.pcap[{i}].{f}");
        if c.node as usize >= n || c.peer as usize >= n || !adj[c.node as usize].contains(&(c.peer as usize)) {
            return Err(err(path("peer"), "must be a neighbour of node (the capture is of node's port toward peer)"));
        }
        if c.start_ps >= c.end_ps {
            return Err(err(path("end_ps"), format!("must be > start_ps ({})", c.start_ps)));
        }
        if !(64..=262_144).contains(&c.snaplen) {
            return Err(err(path("snaplen"), "must be in 64..=262144 bytes"));
        }
        if c.name.is_empty() || c.name.contains(['/', '\\']) || !names.insert(c.name.as_str()) {
            return Err(err(path("name"), "must be a unique file name (no path separator)"));
        }
    }
    Ok(())
}

/// Hotspots: a switch's port toward a neighbour, steps in time order.
fn validate_hotspots(ir: &Ir, is_host: &[bool], adj: &[Vec<usize>]) -> Result<(), ScenarioError> {
    let n = ir.nodes.len();
    for (i, h) in ir.hotspots.iter().enumerate() {
        if h.switch as usize >= n || is_host[h.switch as usize] {
            return Err(err(format!("hotspots[{i}].switch"), "must be a switch index"));
        }
        if !adj[h.switch as usize].contains(&(h.toward as usize)) {
            return Err(err(format!("hotspots[{i}].toward"), "must be a neighbour of the switch"));
        }
        if h.schedule.windows(2).any(|w| w[0].0 > w[1].0) {
            return Err(err(format!("hotspots[{i}].schedule"), "steps must be time-ordered"));
        }
    }
    Ok(())
}

/// PFC configuration of a switch (`path` names the node) with `ports` ports.
fn validate_pfc(path: &str, c: &PfcIr, buffer: &BufferIr, ports: usize, max_frame: u64) -> Result<(), ScenarioError> {
    let p = |f: &str| format!("{path}.pause.{f}");
    let BufferIr::Shared { shared_bytes } = *buffer else {
        return Err(err(format!("{path}.buffer"), "PFC accounts per (input, priority) in one shared buffer: policy must be 'shared'"));
    };
    if c.enabled == 0 {
        return Err(err(p("enabled"), "at least one lossless priority"));
    }
    if c.headroom_bytes.len() != ports {
        return Err(err(p("headroom_bytes"), format!("one value per port ({ports}), got {}", c.headroom_bytes.len())));
    }
    let reserved: u64 = c.headroom_bytes.iter().map(|h| h * c.enabled.count_ones() as u64).sum();
    if reserved >= shared_bytes {
        return Err(err(p("headroom_bytes"), format!("headroom reserved ({reserved} B) leaves no shared pool in the buffer ({shared_bytes} B)")));
    }
    if (c.mtu_bytes as u64) < max_frame {
        return Err(err(p("mtu_bytes"), format!("must be >= the largest frame ({max_frame}), got {}", c.mtu_bytes)));
    }
    if c.quanta == 0 {
        return Err(err(p("quanta"), "must be in 1..=65535"));
    }
    if !(c.refresh_fraction > 0.0 && c.refresh_fraction <= 1.0) {
        return Err(err(p("refresh_fraction"), "must be in (0, 1]"));
    }
    match c.threshold {
        PfcThresholdIr::Static { xoff_bytes } if xoff_bytes < c.mtu_bytes as u64 + c.hysteresis_bytes => {
            return Err(err(p("threshold.xoff_bytes"), format!("must be >= mtu_bytes + hysteresis_bytes, got {xoff_bytes}")));
        }
        PfcThresholdIr::Dynamic { alpha } if !(alpha > 0.0 && alpha.is_finite()) => {
            return Err(err(p("threshold.alpha"), format!("must be > 0, got {alpha}")));
        }
        _ => {}
    }
    if let SchedulerIr::Dwrr { quantum_bytes } = &c.scheduler {
        if let Some(q) = quantum_bytes.iter().find(|&&q| (q as u64) < max_frame.max(1)) {
            return Err(err(p("scheduler.quantum_bytes"), format!("every quantum must be >= the largest frame ({max_frame}), got {q}")));
        }
    }
    Ok(())
}

/// A frame-size distribution: sizes in 64..=9216 bytes, a positive scale, positive weights.
fn validate_sizes(path: &str, d: &FrameSizesIr) -> Result<(), ScenarioError> {
    let in_range = |b: u32| (64..=9216).contains(&b);
    match d {
        FrameSizesIr::Exponential { scale_bytes, min_bytes, max_bytes } => {
            if !(in_range(*min_bytes) && in_range(*max_bytes) && min_bytes < max_bytes) {
                return Err(err(format!("{path}.min_bytes"), format!("need 64 <= min_bytes < max_bytes <= 9216, got {min_bytes}, {max_bytes}")));
            }
            if !(scale_bytes.is_finite() && *scale_bytes > 0.0) {
                return Err(err(format!("{path}.scale_bytes"), format!("must be finite and > 0, got {scale_bytes}")));
            }
        }
        FrameSizesIr::Mix { bytes, weights } => {
            if bytes.is_empty() || bytes.len() != weights.len() {
                return Err(err(format!("{path}.bytes"), "one weight per size, at least one size"));
            }
            if let Some(b) = bytes.iter().find(|b| !in_range(**b)) {
                return Err(err(format!("{path}.bytes"), format!("sizes must be in 64..=9216, got {b}")));
            }
            if let Some(w) = weights.iter().find(|w| !(w.is_finite() && **w > 0.0)) {
                return Err(err(format!("{path}.weights"), format!("weights must be finite and > 0, got {w}")));
            }
        }
    }
    Ok(())
}

/// TCP parameters of one flow (`path` names the flow's transport).
fn validate_tcp(path: &str, t: &TcpIr, frame_bytes: u32) -> Result<(), ScenarioError> {
    if t.header_bytes >= frame_bytes {
        return Err(err(format!("{path}.header_bytes"), format!("must be < frame_bytes ({frame_bytes}), got {}", t.header_bytes)));
    }
    if t.ack_bytes < 1 || t.ack_bytes > 9216 {
        return Err(err(format!("{path}.ack_bytes"), format!("must be in 1..=9216, got {}", t.ack_bytes)));
    }
    if t.init_cwnd_segments < 1 {
        return Err(err(format!("{path}.init_cwnd_segments"), "must be >= 1"));
    }
    if t.rcv_wnd_bytes < (frame_bytes - t.header_bytes) as u64 {
        return Err(err(format!("{path}.rcv_wnd_bytes"), format!("must hold at least one segment, got {}", t.rcv_wnd_bytes)));
    }
    if t.min_rto_ps < 1 || t.max_rto_ps < t.min_rto_ps {
        return Err(err(format!("{path}.min_rto_ps"), format!("need 1 <= min_rto_ps <= max_rto_ps, got {} and {}", t.min_rto_ps, t.max_rto_ps)));
    }
    if t.dupack_threshold < 1 {
        return Err(err(format!("{path}.dupack_threshold"), "must be >= 1"));
    }
    if t.delayed_ack && t.delack_timeout_ps < 1 {
        return Err(err(format!("{path}.delack_timeout_ps"), "must be >= 1 with delayed ACKs"));
    }
    if let CcIr::Dctcp { g, alpha_init } = t.cc {
        if !(g > 0.0 && g <= 1.0) {
            return Err(err(format!("{path}.cc.g"), format!("must be in (0, 1], got {g}")));
        }
        if !(0.0..=1.0).contains(&alpha_init) {
            return Err(err(format!("{path}.cc.alpha_init"), format!("must be in [0, 1], got {alpha_init}")));
        }
    }
    Ok(())
}

/// A source's per-transfer destinations (`dst_set`): only for one flow with a null `dst`, whose
/// transfers they are; a set of hosts with at least one other than the source; and such a flow
/// always has them.
fn validate_dsts(ir: &Ir, i: usize, s: &crate::ir::SourceIr) -> Result<(), ScenarioError> {
    let p = |f: &str| format!("sources[{i}].{f}");
    let wildcard = s.flows.iter().any(|&f| ir.flows[f as usize].dst.is_none());
    let Some(k) = s.dst_set else {
        if wildcard {
            return Err(err(p("dst_set"), "a flow with a null dst needs the source's dst_set"));
        }
        return Ok(());
    };
    if !wildcard || s.flows.len() != 1 {
        return Err(err(p("dst_set"), "only for a source of exactly one flow whose dst is null"));
    }
    if !matches!(s.process, ProcessIr::FlowArrivals { .. } | ProcessIr::PeriodicFlows { .. } | ProcessIr::ParetoOnOff { .. }) {
        return Err(err(p("dst_set"), "only for sources of transfers (flow_arrivals, periodic_flows, pareto_on_off)"));
    }
    let Some(set) = ir.dst_sets.get(k as usize) else {
        return Err(err(p("dst_set"), format!("{k} is not an index of dst_sets ({} sets)", ir.dst_sets.len())));
    };
    let src = ir.flows[s.flows[0] as usize].src;
    if !set.iter().any(|&d| d != src) {
        return Err(err(format!("dst_sets[{k}]"), format!("no destination other than the source host {src} of sources[{i}]")));
    }
    Ok(())
}

/// Every destination set is a list of distinct host indices.
fn validate_dst_sets(ir: &Ir, host_index: &dyn Fn(String, u32) -> Result<(), ScenarioError>) -> Result<(), ScenarioError> {
    for (k, set) in ir.dst_sets.iter().enumerate() {
        let mut seen = std::collections::HashSet::with_capacity(set.len());
        for (j, &d) in set.iter().enumerate() {
            host_index(format!("dst_sets[{k}][{j}]"), d)?;
            if !seen.insert(d) {
                return Err(err(format!("dst_sets[{k}][{j}]"), format!("host {d} listed twice")));
            }
        }
    }
    Ok(())
}
