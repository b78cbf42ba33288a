//! Observation: sampled time series in columnar buffers, per-flow throughput bins, the result
//! tables, and the end-of-run summary (DESIGN.md contract) with the conservation check
//! ([`summary`]). Plotting and analysis live in Python; everything here is counting.

use crate::ids::{NodeId, PortId};
use crate::ir::{Ir, NodeIr};
use crate::net::flow::Transfer;
use crate::net::Network;
use crate::probe::{BinRows, FlowBins, QueueSeries};
use crate::time::{to_s, PS_PER_S};

mod summary;
mod table;

pub use summary::{collect, deadlock_report, hist_quantiles, jain, QUEUE_QUANTILES, STUCK_PS};
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
    /// Which queues have a series (from the first sample at which a queue is seen holding at least
    /// `q_threshold` bytes; its earlier samples of the current chunk are zeros) and their rows.
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
            let queue_bytes = |p: PortId| net.queued_now(p);
            self.q_track.sample(k, self.q_threshold, &self.queue_ports, &net.q_watch, queue_bytes);
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
        self.sample_t.len() * self.q_track.kept() + self.r_t.len() + self.p_t.len() + self.tcp_t.len()
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
        tables
    }

    fn series_tables(&mut self) -> Vec<Table> {
        // queues seen holding at least one data frame at a sample (the others stayed near empty)
        let (qt, qid, qb) = self.q_track.drain(&self.sample_t);
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
