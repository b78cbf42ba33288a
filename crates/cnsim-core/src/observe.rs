//! Observation: sampled time series in columnar buffers, per-flow throughput bins, and the end-of-
//! run summary (DESIGN.md contract) with the conservation check. Plotting and analysis live in
//! Python; everything here is counting.

use crate::error::RunError;
use crate::frame::FrameKind;
use crate::ids::{NodeId, PortId};
use crate::ir::{Ir, NodeIr};
use crate::net::flow::Transfer;
use crate::net::queues::FlowTotals;
use crate::net::{Counters, Network, CLASSIC_DROP_REASONS, DROP_REASONS, HIST_BUCKET};
use crate::probe::{BinRows, FlowBins, QueueSeries};
use crate::time::{to_s, PS_PER_S};
use crate::transport::tcp::TcpStats;
use serde_json::{json, Value};

mod table;
pub use table::{Column, Results, Table};

/// Recorders filled during the run by the periodic `Sample` event (per-flow throughput bins are
/// filled by the data plane's probe, [`crate::probe::FlowBins`]).
///
/// The series hold the rows recorded since the last [`Observer::drain_series`] (all of them when
/// nothing drains, as `Simulation::run` does): a caller that drains as the run goes — the Python
/// front writing Parquet row groups — keeps memory independent of the run's length.
pub struct Observer {
    /// Interval of the `Sample` event, ps: `observe.sample_interval_ps`, or 0 when every series is off.
    pub sample_interval: u64,
    /// Which series a sample records (`observe.series`).
    pub series: crate::ir::SeriesIr,
    /// Switch ports whose queues are sampled (queue id = index here).
    pub queue_ports: Vec<PortId>,
    /// Time of every sample since the last drain, s.
    pub sample_t: Vec<f64>,
    /// Per queue: its occupancy at every sample since the last drain, stored only once the queue
    /// has been seen holding at least `q_threshold` bytes (its earlier samples of the current
    /// chunk are then filled in with zeros); `None` = never so far, `Some` stays `Some`.
    pub q_samples: Vec<Option<Vec<u64>>>,
    /// Which queues have a series and which may get one.
    q_track: QueueSeries,
    /// One largest data frame: queues that only ever hold control frames (BCN, CNM, ACK) at the
    /// sample instants are not recorded.
    pub q_threshold: u64,
    /// RP rates of flows `0..rp_of.len()` (NaN for a flow without a rate limiter) as change rows
    /// since the last drain: every flow at the run's first sample, then a flow at a sample only
    /// when its rate differs (bit for bit) from its previous sample's. A rate is a step function
    /// that moves at feedback messages, far less often than every sample (a 10-µs grid); the value
    /// at every sample follows (`cnsim.results.result.read_table` rebuilds it).
    pub r_t: Vec<f64>,
    pub r_flow: Vec<u32>,
    pub r_rate: Vec<f64>,
    /// Each flow's rate at the previous sample (bits), and this sample's (scratch).
    r_last: Vec<u64>,
    r_now: Vec<f64>,
    /// Samples taken since the run's start (drains do not reset it).
    pub samples: u64,
    /// (source host, local index) of each flow with an RP-rate series, looked up once: the first
    /// `flow_limit` flows when the network has reaction points, else none.
    rp_of: Vec<(u32, u32)>,
    /// Every RP reports its limiter's rate (`ReactionPoint::rate_is_limiter`): read `Flow::rl_rate`.
    rp_limiter: bool,
    /// Paused state of the ports as change rows since the last drain: a port at a sample where its
    /// state differs from the previous sample's (unpaused before the first sample), so a port
    /// never seen paused has no row. Under a global PAUSE every sender's link is paused at almost
    /// every sample: one row per link and sample was 10 M rows per simulated second on fan-in-100.
    pub p_t: Vec<f64>,
    pub p_link: Vec<u32>,
    pub p_on: Vec<u32>,
    /// Each port's state at the previous sample.
    p_last: Vec<u8>,
    /// The ports a PAUSE or PFC frame can reach, ascending: those whose peer is a switch (only a
    /// switch port sends MAC-control frames), so the others, never paused, are not looked at (a
    /// fan-in's switch ports: half of its links, at every sample).
    p_ports: Vec<u32>,
    /// `Network::pause_receipts` at the last look at the ports, and the earliest end of a pause then
    /// running: until one of them moves, no port's paused state can have changed (a PAUSE frame or a
    /// pause running out is the only change), and the sample need not look. Under a global PAUSE
    /// that toggles every ~40 µs, one sample in four looks.
    p_seen: (u64, u64),
    /// TCP flows (within the first `observe.flow_series` flows): window, threshold, DCTCP α.
    pub tcp_t: Vec<f64>,
    pub tcp_flow: Vec<u32>,
    pub tcp_cwnd: Vec<u64>,
    pub tcp_ssthresh: Vec<u64>,
    pub tcp_alpha: Vec<f64>,
    pub tcp_flows: Vec<u32>,
    /// Per-flow series (RP rates, TCP windows) cover the first `flow_limit` flows
    /// (`observe.flow_series`), so their cost does not grow with the number of flows.
    pub flow_limit: usize,
}

impl Observer {
    pub fn new(ir: &Ir, net: &Network) -> Self {
        let flow_limit = ir.observe.flow_series.map_or(usize::MAX, |n| n as usize);
        let series = ir.observe.series;
        let sample_interval = if series.any() { ir.observe.sample_interval_ps } else { 0 };
        let rp_flows = if net.has_rp && sample_interval > 0 && series.rp_rate { net.n_flows.min(flow_limit) } else { 0 };
        let queue_ports: Vec<PortId> = (0..net.ports.len()).filter(|&i| net.is_switch(net.ports[i].node)).map(|i| PortId(i as u32)).collect();
        Observer {
            sample_interval,
            series,
            q_samples: vec![None; queue_ports.len()],
            q_track: QueueSeries::default(),
            q_threshold: net.flows.iter().map(|f| f.frame_bytes as u64).max().unwrap_or(1).max(1),
            queue_ports,
            sample_t: Vec::new(),
            r_t: Vec::new(),
            r_flow: Vec::new(),
            r_rate: Vec::new(),
            r_last: vec![0; rp_flows],
            r_now: Vec::with_capacity(rp_flows),
            samples: 0,
            rp_of: net.flows[..rp_flows].iter().map(|f| (net.host_of[f.src.idx()], f.local)).collect(),
            rp_limiter: net.hosts.iter().filter_map(|h| h.rp.as_ref()).all(|rp| rp.rate_is_limiter()),
            p_t: Vec::new(),
            p_link: Vec::new(),
            p_on: Vec::new(),
            p_last: Vec::new(),
            p_ports: Vec::new(),
            p_seen: (u64::MAX, 0),
            tcp_t: Vec::new(),
            tcp_flow: Vec::new(),
            tcp_cwnd: Vec::new(),
            tcp_ssthresh: Vec::new(),
            tcp_alpha: Vec::new(),
            tcp_flows: if series.tcp_ts {
                (0..net.n_flows.min(flow_limit)).filter(|&i| net.flows[i].tcp.is_some()).map(|i| i as u32).collect()
            } else {
                Vec::new()
            },
            flow_limit,
        }
    }

    /// With a send queue per transfer, a flow's limiters are its transfers' queues': the sample of a
    /// flow is the lowest rate among its open queues (the most throttled of its transfers), or its own
    /// limiter's when lower, NaN when none is limited.
    fn transfer_queue_rates(&mut self, net: &Network) {
        let n = self.rp_of.len();
        for (q, m) in net.flows[net.n_flows..].iter().zip(&net.queue_meta) {
            let p = m.parent.idx();
            if m.parent.is_none() || p >= n {
                continue;
            }
            let r = if self.rp_limiter {
                q.rl_rate
            } else {
                let h = net.host_of[q.src.idx()] as usize;
                net.hosts[h].rp.as_ref().and_then(|rp| rp.rate_bps(q.local))
            };
            if let Some(r) = r {
                let cell = &mut self.r_now[p];
                *cell = if cell.is_nan() { r } else { cell.min(r) };
            }
        }
    }

    /// Record one sample of every time series.
    pub fn sample(&mut self, net: &Network) {
        let t = to_s(net.now);
        let k = self.sample_t.len();
        self.sample_t.push(t);
        if self.series.queue_ts {
            let queue_bytes = |p: PortId| net.ports[p.idx()].q_bytes;
            self.q_track.sample(k, self.q_threshold, &self.queue_ports, &net.q_watch, queue_bytes, &mut self.q_samples);
        }
        if !self.rp_of.is_empty() {
            self.sample_rates(net, t);
        }
        for &fi in &self.tcp_flows {
            let s = &net.flows[fi as usize].tcp.as_ref().expect("tcp flow").sender;
            self.tcp_t.push(t);
            self.tcp_flow.push(fi);
            self.tcp_cwnd.push(s.cwnd());
            self.tcp_ssthresh.push(s.ssthresh().min(u64::MAX >> 11));
            self.tcp_alpha.push(s.alpha());
        }
        if net.pause_enabled && self.series.pause_ts {
            if self.p_last.len() < net.ports.len() {
                self.p_last.resize(net.ports.len(), 0);
                self.p_ports = (0..net.ports.len() as u32).filter(|&i| net.ports[i as usize].peer_is_switch).collect();
            }
            if self.p_seen.0 != net.pause_receipts || self.p_seen.1 <= net.now {
                self.sample_pause(net, t);
            }
        }
        self.samples += 1;
    }

    /// The paused state of the ports a PAUSE can reach, recorded where it changed; notes when to look again.
    fn sample_pause(&mut self, net: &Network, t: f64) {
        let mut next_end = u64::MAX;
        for &pi in &self.p_ports {
            let until = net.ports[pi as usize].pause.paused_until;
            let on = (until > net.now) as u8;
            if on == 1 {
                next_end = next_end.min(until);
            }
            if on != self.p_last[pi as usize] {
                self.p_last[pi as usize] = on;
                self.p_t.push(t);
                self.p_link.push(pi);
                self.p_on.push(on as u32);
            }
        }
        self.p_seen = (net.pause_receipts, next_end);
    }

    /// The RP rates of this sample, recorded where they changed (every flow at the first sample).
    fn sample_rates(&mut self, net: &Network, t: f64) {
        self.r_now.clear();
        if self.rp_limiter {
            self.r_now.extend(net.flows[..self.rp_of.len()].iter().map(|f| f.rl_rate.unwrap_or(f64::NAN)));
        } else {
            let rate = |&(h, local): &(u32, u32)| net.hosts[h as usize].rp.as_ref().and_then(|rp| rp.rate_bps(local));
            self.r_now.extend(self.rp_of.iter().map(|x| rate(x).unwrap_or(f64::NAN)));
        }
        if net.per_transfer {
            self.transfer_queue_rates(net);
        }
        let first = self.samples == 0;
        for (i, (&r, last)) in self.r_now.iter().zip(self.r_last.iter_mut()).enumerate() {
            if first || r.to_bits() != *last {
                *last = r.to_bits();
                self.r_t.push(t);
                self.r_flow.push(i as u32);
                self.r_rate.push(r);
            }
        }
    }
}

impl Observer {
    /// Rows of the time-series tables (`queue_ts`, `rp_rate`, `tcp_ts`, `pause_ts`) recorded since
    /// the last drain.
    pub fn buffered_rows(&self) -> usize {
        let kept = self.q_samples.iter().filter(|s| s.is_some()).count();
        self.sample_t.len() * kept + self.r_t.len() + self.p_t.len() + self.tcp_t.len()
    }

    /// The time-series rows recorded since the last drain, as the tables `queue_ts`, `rp_rate`,
    /// `tcp_ts` and `pause_ts` (ids, no names: see [`static_tables`]), and forget them. The queues
    /// and links seen so far stay recorded: the next chunk has their rows from its first sample.
    /// A queue first seen in a later chunk has no rows in the earlier ones (the whole-run table
    /// has zeros there; the reader of the chunks fills them in). Concatenating every drain and
    /// the tables of [`collect`] gives the rows of an undrained run otherwise.
    pub fn drain_series(&mut self) -> Vec<Table> {
        let tables = self.series_tables();
        self.sample_t.clear();
        self.q_samples.iter_mut().flatten().for_each(Vec::clear);
        tables
    }

    fn series_tables(&mut self) -> Vec<Table> {
        // queues seen holding at least one data frame at a sample (the others stayed near empty)
        let (qt, qid, qb) = sparse_series(&self.sample_t, &self.q_samples, |v: &u64| *v);
        vec![
            Table { name: "queue_ts", columns: vec![("t_s", Column::F64(qt)), ("queue", Column::U32(qid)), ("bytes", Column::U64(qb))] },
            Table {
                name: "rp_rate",
                columns: vec![
                    ("t_s", Column::F64(std::mem::take(&mut self.r_t))),
                    ("flow", Column::U32(std::mem::take(&mut self.r_flow))),
                    ("rate_bps", Column::F64(std::mem::take(&mut self.r_rate))),
                ],
            },
            Table {
                name: "tcp_ts",
                columns: vec![
                    ("t_s", Column::F64(std::mem::take(&mut self.tcp_t))),
                    ("flow", Column::U32(std::mem::take(&mut self.tcp_flow))),
                    ("cwnd_bytes", Column::U64(std::mem::take(&mut self.tcp_cwnd))),
                    ("ssthresh_bytes", Column::U64(std::mem::take(&mut self.tcp_ssthresh))),
                    ("alpha", Column::F64(std::mem::take(&mut self.tcp_alpha))),
                ],
            },
            Table {
                name: "pause_ts",
                columns: vec![
                    ("t_s", Column::F64(std::mem::take(&mut self.p_t))),
                    ("link", Column::U32(std::mem::take(&mut self.p_link))),
                    ("paused", Column::U32(std::mem::take(&mut self.p_on))),
                ],
            },
        ]
    }
}

/// The tables naming the ids of the series, known once the network is built: `queues` (queue →
/// switch, port), `links` (link → from, to), `flows` (flow → src, dst).
pub fn static_tables(ir: &Ir, net: &Network, o: &Observer) -> Vec<Table> {
    let declared = &net.flows[..net.n_flows];
    let names = |ports: &mut dyn Iterator<Item = usize>, peer: bool| -> Column {
        Column::Str(
            ports
                .map(|i| {
                    let p = &net.ports[i];
                    node_name(ir, if peer { p.peer_node.idx() } else { p.node.idx() }).to_string()
                })
                .collect(),
        )
    };
    vec![
        Table {
            name: "queues",
            columns: vec![
                ("queue", Column::U32((0..o.queue_ports.len() as u32).collect())),
                ("switch", names(&mut o.queue_ports.iter().map(|p| p.idx()), false)),
                ("port", names(&mut o.queue_ports.iter().map(|p| p.idx()), true)),
            ],
        },
        Table {
            name: "links",
            columns: vec![
                ("link", Column::U32((0..net.ports.len() as u32).collect())),
                ("from", names(&mut (0..net.ports.len()), false)),
                ("to", names(&mut (0..net.ports.len()), true)),
            ],
        },
        Table {
            name: "flows",
            columns: vec![
                ("flow", Column::U32((0..net.n_flows as u32).collect())),
                ("src", Column::Str(declared.iter().map(|f| node_name(ir, f.src.idx()).to_string()).collect())),
                ("dst", Column::Str(declared.iter().map(|f| dst_name(ir, f.dst).to_string()).collect())),
            ],
        },
    ]
}

/// A switch port counts as stuck when, at the end of the run, it holds frames and has been paused
/// without a break for at least this long.
pub const STUCK_PS: u64 = 1_000_000_000;

/// PAUSE deadlock at the end of the run (issue 13): (number of stuck switch ports, one cycle of stuck
/// ports "switch>peer" in which each waits on the next — the peer it sends to is itself stuck sending to
/// the next — or empty). A cycle is a cyclic buffer dependency no PAUSE expiry will break.
pub fn deadlock_report(ir: &Ir, net: &Network) -> (usize, Vec<String>) {
    let end = net.now;
    let stuck: Vec<bool> = net
        .ports
        .iter()
        .map(|p| {
            net.is_switch(p.node) && !p.queue.is_empty() && p.pause.paused_until > end && p.pause.paused_since.is_some_and(|t| end >= t + STUCK_PS)
        })
        .collect();
    let n_stuck = stuck.iter().filter(|&&x| x).count();
    if n_stuck == 0 {
        return (0, Vec::new());
    }
    // wait-for graph: stuck port P (at S, toward N) -> every stuck port of N
    let mut by_node: Vec<Vec<usize>> = vec![Vec::new(); ir.nodes.len()];
    for (i, p) in net.ports.iter().enumerate() {
        if stuck[i] {
            by_node[p.node.idx()].push(i);
        }
    }
    // iterative DFS with colours; the first back edge closes a cycle
    let mut colour = vec![0u8; net.ports.len()];
    let mut parent = vec![usize::MAX; net.ports.len()];
    for start in 0..net.ports.len() {
        if !stuck[start] || colour[start] != 0 {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        colour[start] = 1;
        while let Some(&mut (u, ref mut k)) = stack.last_mut() {
            let next = by_node[net.ports[u].peer_node.idx()].get(*k).copied();
            *k += 1;
            match next {
                Some(v) if colour[v] == 0 => {
                    colour[v] = 1;
                    parent[v] = u;
                    stack.push((v, 0));
                }
                Some(v) if colour[v] == 1 => {
                    let mut cyc = vec![v];
                    let mut w = u;
                    while w != v && w != usize::MAX {
                        cyc.push(w);
                        w = parent[w];
                    }
                    cyc.reverse();
                    let name = |i: usize| {
                        let p = &net.ports[i];
                        format!("{}>{}", node_name(ir, p.node.idx()), node_name(ir, p.peer_node.idx()))
                    };
                    return (n_stuck, cyc.into_iter().map(name).collect());
                }
                Some(_) => {}
                None => {
                    colour[u] = 2;
                    stack.pop();
                }
            }
        }
    }
    (n_stuck, Vec::new())
}

fn node_name(ir: &Ir, i: usize) -> &str {
    match &ir.nodes[i] {
        NodeIr::Host { name, .. } | NodeIr::Switch { name, .. } => name,
    }
}

/// A flow's destination name; `*` for a flow whose transfers each have their own (a source's
/// `dsts`, with a send queue per transfer).
fn dst_name(ir: &Ir, dst: NodeId) -> &str {
    if dst.is_none() {
        "*"
    } else {
        node_name(ir, dst.idx())
    }
}

/// Jain's fairness index (Σx)²/(n·Σx²); 1 for an empty or all-zero set.
pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 == 0.0 {
        1.0
    } else {
        s * s / (xs.len() as f64 * s2)
    }
}

/// Frames alive at the end of the run, counted independently of the counters (for conservation).
struct Live {
    data: u64,
    data_bytes: u64,
    ctrl: u64,
    ack: u64,
    /// frames and bytes still queued at the hosts
    host_q: u64,
    host_q_bytes: u64,
}

/// Conservation: the frames alive at the end, counted independently of the counters.
fn live_frames(net: &Network) -> Live {
    let (mut live_data, mut live_data_bytes, mut live_ctrl, mut live_ack) = (0u64, 0u64, 0u64, 0u64);
    for f in net.frames.iter_live() {
        match f.kind {
            FrameKind::Data => {
                live_data += 1;
                live_data_bytes += f.size as u64;
            }
            FrameKind::Control => live_ctrl += 1,
            FrameKind::Ack => live_ack += 1,
            FrameKind::Pause => {}
        }
    }
    // the INT header bytes of the data frames in flight are not data
    live_data_bytes -= net.c.int_bytes_added - net.c.int_bytes_removed;
    let host_q: u64 = net.flows.iter().map(|f| f.backlog).sum();
    let host_q_bytes: u64 = net.flows.iter().map(|f| f.queued_bytes(&net.transfers)).sum();
    Live { data: live_data, data_bytes: live_data_bytes, ctrl: live_ctrl, ack: live_ack, host_q, host_q_bytes }
}

/// The conservation identities that fail (empty: all hold): frames and bytes generated = delivered +
/// dropped + in flight + host queued, control and ACK frames likewise, queue bytes = bytes of the
/// queued frames, Little's law per queue (debug builds), per-flow counts.
fn conservation_problems(net: &Network, live: &Live, totals: &[FlowTotals], end: u64, w: u64) -> Vec<String> {
    let (live_data, live_data_bytes, live_ctrl, live_ack, host_q, host_q_bytes) =
        (live.data, live.data_bytes, live.ctrl, live.ack, live.host_q, live.host_q_bytes);
    let c = &net.c;
    let mut problems = Vec::new();
    if c.data_generated.0 != c.data_delivered.0 + c.data_dropped.0 + live_data + host_q {
        problems.push(format!(
            "data frames: generated {} != delivered {} + dropped {} + in flight {} + host queued {}",
            c.data_generated.0, c.data_delivered.0, c.data_dropped.0, live_data, host_q
        ));
    }
    if c.data_generated.1 != c.data_delivered.1 + c.data_dropped.1 + live_data_bytes + host_q_bytes {
        problems.push(format!(
            "data bytes: generated {} != delivered {} + dropped {} + in flight {} + host queued {}",
            c.data_generated.1, c.data_delivered.1, c.data_dropped.1, live_data_bytes, host_q_bytes
        ));
    }
    if c.ctrl_generated.0 + c.ctrl_replicated != c.ctrl_delivered + c.ctrl_dropped + live_ctrl + c.ctrl_absorbed {
        problems.push(format!(
            "control frames: generated {} + broadcast copies {} != delivered {} + dropped {} + in flight {} + absorbed {}",
            c.ctrl_generated.0, c.ctrl_replicated, c.ctrl_delivered, c.ctrl_dropped, live_ctrl, c.ctrl_absorbed
        ));
    }
    if c.ack_generated.0 != c.ack_delivered + c.ack_dropped + live_ack {
        problems.push(format!(
            "TCP ACK frames: generated {} != delivered {} + dropped {} + in flight {}",
            c.ack_generated.0, c.ack_delivered, c.ack_dropped, live_ack
        ));
    }
    let queued: u64 = net.ports.iter().map(|p| p.q_bytes).sum();
    let queued_frames: u64 = net
        .ports
        .iter()
        .flat_map(|p| p.queue.iter().chain(p.pfc.iter().flat_map(|pf| pf.queues.iter().flatten())))
        .map(|&f| net.frames.get(f).size as u64)
        .sum();
    if queued != queued_frames {
        problems.push(format!("queue bytes {queued} != bytes of queued frames {queued_frames}"));
    }
    // Little's law, sample-path form (TESTING.md T7), exact in integers: the time-integral of each
    // egress queue over [warm-up, end) equals Σ size × (min(dequeue, end) − max(enqueue, warm-up))
    // over its frames (those still queued leave at `end`)
    #[cfg(debug_assertions)]
    for (i, p) in net.ports.iter().enumerate() {
        let sojourns = p.little.1 + p.q_bytes as u128 * end.max(w) as u128 - p.little.0;
        if p.q_area != sojourns {
            problems.push(format!("port {i}: queue area {} != sum of size x sojourn {sojourns} (Little's law)", p.q_area));
        }
    }
    let per_flow_ok = totals
        .iter()
        .all(|f| f.generated_frames >= f.delivered_frames + f.dropped_frames + f.backlog && f.sent_frames == f.generated_frames - f.backlog);
    if !per_flow_ok {
        problems.push("per-flow: sent != generated - host queued".into());
    }
    #[cfg(not(debug_assertions))]
    let _ = (end, w);
    problems
}

/// The per-flow rows of the summary and the TCP totals over the flows.
struct FlowRows {
    flows: Vec<Value>,
    /// each flow's throughput in the statistics window (bit/s), for Jain's index
    tputs: Vec<f64>,
    tcp_tot: TcpStats,
    n_tcp: u64,
    goodput_bytes: u64,
}

/// The summary's `flows`: a row per flow (TCP state and counters for a TCP flow), and the TCP totals.
fn flow_rows(ir: &Ir, net: &Network, totals: &[FlowTotals], window: f64) -> FlowRows {
    let mut flows = Vec::new();
    let mut tputs = Vec::new();
    let mut tcp_tot = TcpStats::default();
    let (mut n_tcp, mut goodput_bytes) = (0u64, 0u64);
    for (i, (f, tot)) in net.flows.iter().zip(totals).enumerate() {
        let tp = tot.delivered_bytes_window as f64 * 8.0 / window;
        tputs.push(tp);
        let mut row = json!({
            "id": i,
            "src": node_name(ir, f.src.idx()),
            "dst": dst_name(ir, f.dst),
            "generated_frames": tot.generated_frames,
            "sent_frames": tot.sent_frames,
            "delivered_frames": tot.delivered_frames,
            "delivered_bytes": tot.delivered_bytes,
            "dropped": tot.dropped_frames,
            "throughput_bps": tp,
        });
        if let Some(t) = &f.tcp {
            // the flow's own connection, plus those of its transfers (a connection each with a
            // send queue per transfer)
            let mut all = tot.tcp;
            all.add(t);
            let s = all.stats;
            n_tcp += 1;
            goodput_bytes += all.goodput_bytes_window;
            tcp_tot.retransmitted_segments += s.retransmitted_segments;
            tcp_tot.timeouts += s.timeouts;
            tcp_tot.fast_retransmits += s.fast_retransmits;
            tcp_tot.ecn_reductions += s.ecn_reductions;
            row["transport"] = json!(if t.ecn { "dctcp" } else { "tcp" });
            row["sack"] = json!(t.sender.config().sack);
            row["goodput_bps"] = json!(all.goodput_bytes_window as f64 * 8.0 / window);
            row["acked_bytes"] = json!(all.acked_bytes);
            if tot.tcp.connections == 0 {
                // one connection: its state at the end
                row["cwnd_bytes"] = json!(t.sender.cwnd());
                row["ssthresh_bytes"] = json!(t.sender.ssthresh().min(u64::MAX >> 11));
                row["srtt_us"] = json!(t.sender.srtt_ps().map(|r| r / 1e6));
                if t.ecn {
                    row["dctcp_alpha"] = json!(t.sender.alpha());
                }
            } else {
                row["connections"] = json!(tot.tcp.connections);
            }
            row["segments_sent"] = json!(s.segments_sent);
            row["retransmitted_segments"] = json!(s.retransmitted_segments);
            row["fast_retransmits"] = json!(s.fast_retransmits);
            row["timeouts"] = json!(s.timeouts);
            row["ecn_reductions"] = json!(s.ecn_reductions);
        }
        flows.push(row);
    }
    FlowRows { flows, tputs, tcp_tot, n_tcp, goodput_bytes }
}

/// The summary's `links` (per direction): the rows, and the paused fraction of every host's port.
fn link_rows(ir: &Ir, net: &Network, end: u64, w: u64) -> (Vec<Value>, Vec<f64>) {
    let mut links = Vec::new();
    let mut host_paused = Vec::new();
    for p in &net.ports {
        let util = p.busy_ps_window as f64 / (end - w) as f64;
        let pf = p.pause.paused_acc_ps as f64 / (end - w) as f64;
        if !net.is_switch(p.node) {
            host_paused.push(pf);
        }
        links.push(json!({
            "from": node_name(ir, p.node.idx()),
            "to": node_name(ir, p.peer_node.idx()),
            "rate_bps": p.rate_bps,
            "utilization": util,
            "paused_fraction": pf,
        }));
    }
    (links, host_paused)
}

/// The summary's `queues`: a row per observed egress queue, and the drops by reason over them.
fn queue_rows(ir: &Ir, net: &Network, obs: &Observer, end: u64, w: u64) -> (Vec<Value>, Vec<u64>) {
    let mut queues = Vec::new();
    let mut by_reason = vec![0u64; DROP_REASONS.len()];
    for &pid in &obs.queue_ports {
        let p = &net.ports[pid.idx()];
        let mean = (p.q_area as f64) / (end - w) as f64;
        let cdf = hist_quantiles(&p.q_hist, p.q_max_window);
        let p99 = cdf[QUEUE_QUANTILES.iter().position(|&q| q == 0.99).expect("0.99 listed")];
        let mut dr = serde_json::Map::new();
        for (k, name) in DROP_REASONS.iter().enumerate() {
            by_reason[k] += p.drops[k];
            if p.drops[k] > 0 {
                dr.insert(name.to_string(), json!(p.drops[k]));
            }
        }
        queues.push(json!({
            "switch": node_name(ir, p.node.idx()),
            "port": node_name(ir, p.peer_node.idx()),
            "cpid": p.cpid,
            "mean_bytes": mean,
            "max_bytes": p.q_max_window,
            "p99_bytes": p99,
            "cdf": QUEUE_QUANTILES.iter().zip(&cdf).map(|(&q, &b)| json!([q, b])).collect::<Vec<_>>(),
            "drops": p.drops.iter().sum::<u64>(),
            "drops_by_reason": dr,
            "ecn_marks": p.ecn_marks,
        }));
    }
    (queues, by_reason)
}

/// The transfers still in progress at the end that started in the window: (bad ones — a frame
/// dropped, others still in flight —, unfinished ones), beside the settled transfers' statistics.
fn transfers_open(net: &Network, w: u64) -> (u64, u64) {
    let mut bad = net.transfers.stats.bad;
    let mut unfinished = 0u64;
    for t in net.transfers.in_progress() {
        if t.start < w {
            continue;
        }
        if t.bad() {
            bad += 1;
        } else {
            unfinished += 1;
        }
    }
    (bad, unfinished)
}

/// Build the summary and the tables; check conservation. Time-weighted statistics must have
/// been closed at the end of the run ([`Network::close_statistics`]).
/// `bins`, `fct_rows`: the throughput bins and settled transfers' rows not drained yet
/// ([`crate::probe::FlowBins::drain`], [`crate::net::transfers::Transfers::drain_rows`]).
pub fn collect(ir: &Ir, net: &Network, obs: &mut Observer, bins: BinRows, fct_rows: Vec<Transfer>, events: u64) -> Result<Results, RunError> {
    let end = ir.duration_ps;
    let w = ir.warmup_ps;
    let window = (end - w) as f64 / PS_PER_S as f64;
    let live = live_frames(net);
    let (live_data, live_data_bytes, live_ack, host_q, host_q_bytes) = (live.data, live.data_bytes, live.ack, live.host_q, live.host_q_bytes);
    let c = &net.c;
    let totals = net.flow_totals();
    let problems = conservation_problems(net, &live, &totals, end, w);

    let mut fr = flow_rows(ir, net, &totals, window);
    let ecn_marks: u64 = net.ports.iter().map(|p| p.ecn_marks).sum();
    let (links, host_paused) = link_rows(ir, net, end, w);
    let (queues, by_reason) = queue_rows(ir, net, obs, end, w);
    let conservation_ok = problems.is_empty();
    let pfc_on = net.pfc_enabled;
    let name = |i: usize| node_name(ir, i).to_string();
    let deadlock = if pfc_on { crate::net::flowctl::pfc::deadlock_report(net, &name, STUCK_PS) } else { deadlock_report(ir, net) };
    let (tcp, fairness) = (tcp_summary(&fr, ecn_marks, c, live_ack, window), jain(&fr.tputs));
    let summary = json!({
        "scenario": ir.name,
        "scheme": net.scheme.name(),
        "seed": ir.seed,
        "replication": ir.replication,
        "sim_time_s": to_s(end),
        "warmup_s": to_s(w),
        "events": events,
        "frames": {
            "generated": c.data_generated.0,
            "sent": c.data_sent.0,
            "delivered": c.data_delivered.0,
            "dropped": c.data_dropped.0,
            "in_flight": live_data,
            "host_queued": host_q,
        },
        "bytes": {
            "generated": c.data_generated.1,
            "sent": c.data_sent.1,
            "delivered": c.data_delivered.1,
            "dropped": c.data_dropped.1,
            "in_flight": live_data_bytes,
            "host_queued": host_q_bytes,
        },
        "drops": drops_summary(ir, net, &by_reason, pfc_on),
        "control": control_summary(net, window),
        "nic": {
            "queue_per_transfer": net.per_transfer,
            // send-queue records the transfers ever needed at once (slots are reused)
            "transfer_queue_slots": net.flows.len() - net.n_flows,
            "transfer_queues_open": net.open_transfer_queues(),
        },
        "pause": {
            "frames_sent": c.pause_sent,
            "watchdog_trips": c.watchdog_trips,
            "stuck_ports": deadlock.0,
            "deadlock": deadlock.1,
            "host_paused_fraction": if host_paused.is_empty() { 0.0 } else { host_paused.iter().sum::<f64>() / host_paused.len() as f64 },
        },
        "fairness": { "jain": fairness },
        "tcp": tcp,
        "fct": fct_summary(net, w),
        "conservation": { "ok": conservation_ok, "problems": problems },
    });
    if !conservation_ok {
        return Err(RunError::Invariant(problems.join("; ")));
    }
    let mut summary = summary;
    // the row lists are moved in (`json!` would copy them value by value: a third of the finish of a
    // 1 000-host run)
    summary["flows"] = Value::Array(std::mem::take(&mut fr.flows));
    summary["links"] = Value::Array(links);
    summary["queues"] = Value::Array(queues);
    optional_sections(ir, net, end, &mut summary);
    if pfc_on {
        summary["pfc"] = crate::net::flowctl::pfc::summary(net, &name, end - w);
    }
    let tables = build_tables(ir, net, obs, bins, fct_rows);
    Ok(Results { summary, tables })
}

/// The summary's sections of mechanisms a run may not have: `routing` (link events), `pcap` (captures),
/// `rdma` (loss recovery), `int` (INT bytes on the wire).
fn optional_sections(ir: &Ir, net: &Network, end: u64, summary: &mut Value) {
    let c = &net.c;
    if let Some(d) = net.dynamics.as_ref() {
        let link = |l: u32| [node_name(ir, ir.links[l as usize].a as usize), node_name(ir, ir.links[l as usize].b as usize)];
        summary["routing"] = json!({
            "events": d.events.iter().map(|e| json!({ "t_s": to_s(e.t_ps), "link": link(e.link), "state": if e.up { "up" } else { "down" } }))
                .collect::<Vec<_>>(),
            "detection_s": to_s(d.detection_ps),
            "convergence_s": if d.convergence_ps == u64::MAX { Value::Null } else { json!(to_s(d.convergence_ps)) },
            "recomputations": d.recomputations,
            "link_drops": d.link_drops,
            "rerouted_frames": d.rerouted,
            "pinned_flows": ir.routing.pinned.len(),
        });
    }
    if let Some(p) = net.pcap.as_ref() {
        summary["pcap"] = p
            .caps
            .iter()
            .map(|c| {
                let port = &net.ports[c.spec.port.idx()];
                json!({ "name": c.spec.name, "node": node_name(ir, port.node.idx()), "peer": node_name(ir, port.peer_node.idx()),
                        "start_s": to_s(c.spec.start_ps), "end_s": to_s(c.spec.end_ps.min(end)), "frames": c.frames, "bytes": c.bytes })
            })
            .collect();
    }
    if let Some(r) = net.rdma.as_ref() {
        let st = r.stats;
        summary["rdma"] = json!({
            "loss_recovery": if r.selective { "selective_repeat" } else { "go_back_n" },
            "timeout_s": to_s(r.timeout_ps),
            "retransmitted_frames": st.retransmitted_frames,
            "retransmitted_bytes": st.retransmitted_bytes,
            "acks": st.acks,
            "nacks": st.nacks,
            "timeouts": st.timeouts,
            "discarded_frames": st.discarded_frames,
            "transfers_in_progress": net.transfers.in_progress().len(),
        });
    }
    if let Some(int) = net.int.as_ref() {
        let wire = int.wire();
        summary["int"] = json!({ "source_bytes": wire.source_bytes, "hop_bytes": wire.hop_bytes,
                                 "bytes_added": c.int_bytes_added });
    }
}

/// `control` of the summary: the scheme's messages by type, their overhead and counts.
fn control_summary(net: &Network, window: f64) -> Value {
    let c = &net.c;
    let names = net.scheme.message_types();
    let mut messages = serde_json::Map::new();
    for (k, name) in names.iter().enumerate() {
        messages.insert(name.to_string(), json!(c.ctrl_by_kind[k]));
    }
    let overhead_bps = (c.ctrl_bytes_window + c.extra_overhead_bytes) as f64 * 8.0 / window;
    json!({
        "overhead_bps": overhead_bps,
        "messages": messages,
        "generated": c.ctrl_generated.0,
        "bytes": c.ctrl_generated.1,
        "delivered": c.ctrl_delivered,
        "dropped": c.ctrl_dropped,
        "broadcast_copies": c.ctrl_replicated,
        "extra_overhead_bytes": c.extra_overhead_bytes,
        // delivered about a transfer's queue that had closed (ignored by the reaction point)
        "stale": c.ctrl_stale,
    })
}

/// `drops` of the summary: data and control drops, by reason (the PFC reasons only under PFC) and by switch.
fn drops_summary(ir: &Ir, net: &Network, by_reason: &[u64], pfc_on: bool) -> Value {
    let c = &net.c;
    let by_switch: serde_json::Map<String, Value> = net.switches.iter().map(|s| (node_name(ir, s.node.idx()).to_string(), json!(s.drops))).collect();
    json!({
        "total": c.data_dropped.0 + c.ctrl_dropped,
        "data": c.data_dropped.0,
        "control": c.ctrl_dropped,
        // headroom_full under PFC, link_down with link events
        "by_reason": DROP_REASONS.iter().zip(by_reason).enumerate()
            .filter(|&(k, _)| k < CLASSIC_DROP_REASONS || (k == 5 && pfc_on) || (k == 6 && net.dynamics.is_some()))
            .map(|(_, (n, v))| (n.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "by_switch": by_switch,
    })
}

/// `tcp` of the summary: totals over the TCP flows, ECN marks and the ACK frames.
fn tcp_summary(fr: &FlowRows, ecn_marks: u64, c: &Counters, live_ack: u64, window: f64) -> Value {
    let (tcp_tot, n_tcp, goodput_bytes) = (&fr.tcp_tot, fr.n_tcp, fr.goodput_bytes);
    json!({
        "flows": n_tcp,
        "goodput_bps": goodput_bytes as f64 * 8.0 / window,
        "retransmitted_segments": tcp_tot.retransmitted_segments,
        "fast_retransmits": tcp_tot.fast_retransmits,
        "timeouts": tcp_tot.timeouts,
        "ecn_reductions": tcp_tot.ecn_reductions,
        "ecn_marks": ecn_marks,
        "acks": { "generated": c.ack_generated.0, "bytes": c.ack_generated.1, "delivered": c.ack_delivered,
                  "dropped": c.ack_dropped, "in_flight": live_ack },
    })
}

/// `fct` of the summary: statistics of the transfers completed in the window, with the bad and unfinished ones.
fn fct_summary(net: &Network, w: u64) -> Value {
    let (bad, unfinished) = transfers_open(net, w);
    let st = &net.transfers.stats;
    let (fcount, fmin, fmean, fmax, fstd) = (st.count as usize, st.min_us(), st.mean_us(), st.max_us(), st.std_us());
    // with no completed transfer the statistics are empty (null), never 0, so means over runs skip them
    json!({
        "count": fcount,
        "min_us": if fcount == 0 { serde_json::Value::Null } else { json!(fmin) },
        "mean_us": if fcount == 0 { serde_json::Value::Null } else { json!(fmean) },
        "max_us": if fcount == 0 { serde_json::Value::Null } else { json!(fmax) },
        "std_us": if fcount < 2 { serde_json::Value::Null } else { json!(fstd) },
        "bad_flows": bad,
        "unfinished": unfinished,
    })
}

/// Time-major rows (t, id, value) of the series kept (`Some`), with 0 where a series had not started.
fn sparse_series<T, V: Default>(t: &[f64], series: &[Option<Vec<T>>], f: impl Fn(&T) -> V) -> (Vec<f64>, Vec<u32>, Vec<V>) {
    let keep: Vec<usize> = (0..series.len()).filter(|&i| series[i].is_some()).collect();
    let rows = t.len() * keep.len();
    let (mut ts, mut ids, mut vs) = (Vec::with_capacity(rows), Vec::with_capacity(rows), Vec::with_capacity(rows));
    for (k, &tk) in t.iter().enumerate() {
        for &i in &keep {
            ts.push(tk);
            ids.push(i as u32);
            vs.push(series[i].as_ref().and_then(|v| v.get(k)).map_or_else(V::default, &f));
        }
    }
    (ts, ids, vs)
}

/// The tables `throughput_ts` (every flow together) and `flow_tp` (the first
/// `observe.flow_series` flows, time-major: every flow of a bin, then the next bin) of the bins
/// `rows` hands over.
pub fn bin_tables(bins: &FlowBins, rows: BinRows) -> [Table; 2] {
    let bin_s = bins.bin as f64 / PS_PER_S as f64;
    let t = |b: usize| (rows.first + b) as f64 * bin_s;
    let n = rows.total.len();
    let throughput = Table {
        name: "throughput_ts",
        columns: vec![
            ("t_s", Column::F64((0..n).map(t).collect())),
            ("bps", Column::F64(rows.total.iter().map(|&x| x as f64 * 8.0 / bin_s).collect())),
        ],
    };
    let flows = rows.bytes.len().checked_div(n).unwrap_or(0);
    let flow_tp = Table {
        name: "flow_tp",
        columns: vec![
            ("t_s", Column::F64Each { values: (0..n).map(t).collect(), each: flows }),
            ("flow", Column::U32Cycle { n: flows as u32, times: n }),
            ("bps", Column::F64(rows.bytes.iter().map(|&x| x as f64 * 8.0 / bin_s).collect())),
        ],
    };
    [throughput, flow_tp]
}

/// Fractions of the statistics window at which `queues[].cdf` gives the occupancy (the queue-length
/// CDF read as quantiles: the queue held at most `bytes` for fraction `q` of the time).
pub const QUEUE_QUANTILES: [f64; 10] = [0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 1.0];

/// Occupancy at each of [`QUEUE_QUANTILES`] from a time-at-occupancy histogram of
/// [`HIST_BUCKET`]-byte buckets: the upper edge of the first bucket where the cumulative time
/// reaches the fraction, capped at the largest occupancy seen (0 for an empty histogram).
pub fn hist_quantiles(hist: &[u64], q_max: u64) -> Vec<u64> {
    let total: u64 = hist.iter().sum();
    let mut out = vec![0u64; QUEUE_QUANTILES.len()];
    if total == 0 {
        return out;
    }
    let (mut acc, mut k) = (0u64, 0usize);
    for (b, &v) in hist.iter().enumerate() {
        acc += v;
        while k < QUEUE_QUANTILES.len() && acc as f64 >= QUEUE_QUANTILES[k] * total as f64 {
            out[k] = ((b as u64 + 1) * HIST_BUCKET).min(q_max);
            k += 1;
        }
    }
    for v in out.iter_mut().skip(k) {
        *v = q_max;
    }
    out
}

/// The `fct` rows of the run's end: the transfers settled since the last drain, then (with
/// `observe.fct`) those still in progress, incomplete.
pub fn final_fct_rows(net: &mut Network) -> Vec<Transfer> {
    let mut rows = net.transfers.drain_rows();
    if net.transfers.records() {
        rows.extend(net.transfers.in_progress().into_iter().copied());
    }
    rows
}

/// The `fct` table of these transfers (the settled ones by settling time, then those in progress by
/// creation).
pub fn fct_table(net: &Network, tr: &[Transfer]) -> Table {
    Table {
        name: "fct",
        columns: vec![
            ("transfer", Column::U32(tr.iter().map(|t| t.serial).collect())),
            ("flow", Column::U32(tr.iter().map(|t| t.flow.0).collect())),
            // the destination node (index) of each transfer: its flow's, or drawn for it (a flow
            // whose `dst` is `*`); Python names it (`dst`) and reads paths from it (slowdown)
            ("dst_node", Column::U32(tr.iter().map(|t| t.dst.0).collect())),
            ("start_s", Column::F64(tr.iter().map(|t| to_s(t.start)).collect())),
            ("first_tx_s", Column::F64(tr.iter().map(|t| if t.first_tx == u64::MAX { f64::NAN } else { to_s(t.first_tx) }).collect())),
            ("end_s", Column::F64(tr.iter().map(|t| if t.end == u64::MAX { f64::NAN } else { to_s(t.end) }).collect())),
            ("frames", Column::U64(tr.iter().map(|t| t.frames).collect())),
            ("bytes", Column::U64(tr.iter().map(|t| t.bytes(net.flows[t.flow.idx()].frame_bytes)).collect())),
            ("completed", Column::U32(tr.iter().map(|t| (t.end != u64::MAX) as u32).collect())),
            ("bad", Column::U32(tr.iter().map(|t| t.bad() as u32).collect())),
        ],
    }
}

fn build_tables(ir: &Ir, net: &Network, o: &mut Observer, bins: BinRows, fct_rows: Vec<Transfer>) -> Vec<Table> {
    let mut pool = o.series_tables();
    pool.extend(static_tables(ir, net, o));
    let mut take = |name: &str| -> Table {
        let i = pool.iter().position(|t| t.name == name).expect("known table");
        pool.swap_remove(i)
    };
    let mut tables = vec![take("queue_ts"), take("queues")];
    tables.extend(bin_tables(&net.flow_bins, bins));
    tables.push(take("rp_rate"));
    tables.push(take("tcp_ts"));
    tables.push(take("pause_ts"));
    tables.push(take("links"));
    tables.push(fct_table(net, &fct_rows));
    tables.push(take("flows"));
    tables.push(series_grid(o));
    tables
}

/// `series_grid`: the sample instants of the run (one row: `sample_interval_ps`, `samples`; the
/// instants are `k · sample_interval_ps`, `k < samples`), from which the change rows of `rp_rate`
/// and `pause_ts` give the value of every series at every sample.
pub fn series_grid(o: &Observer) -> Table {
    Table {
        name: "series_grid",
        columns: vec![("sample_interval_ps", Column::U64(vec![o.sample_interval])), ("samples", Column::U64(vec![o.samples]))],
    }
}

#[cfg(test)]
mod tests;
