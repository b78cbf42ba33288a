//! The simulation: a [`Network`] built from the IR ([`crate::build`]), driven by one deterministic
//! event loop, watched by an [`Observer`].
//!
//! Path of a data frame: a source adds it to its flow's FIFO; the host NIC picks flows round-robin
//! among those whose rate limiter allows it, serialises the frame and schedules its arrival at the
//! switch (last bit + propagation + switch latency); the switch admits it to the egress queue (or
//! drops it), the port serialises it at its service rate, and so on until the destination host
//! delivers it. PAUSE frames bypass queues and admission. Each step lives in its room under
//! [`crate::net`] and [`crate::net::flowctl`]; this file only pops events and dispatches them.

use crate::error::{RunError, ScenarioError};
use crate::event::Event;
use crate::ir::Ir;
use crate::net::{Network, OWNER_HOST};
use crate::observe::{Observer, Results, Table};
use crate::time::SimTime;

/// A compiled, runnable simulation.
pub struct Simulation {
    ir: Ir,
    net: Network,
    obs: Observer,
    events: u64,
    finished: bool,
    /// [`Simulation::close_series`] drained every series row, the in-progress transfers' `fct` rows included.
    series_closed: bool,
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
        let mut net = crate::build::build(&ir)?;
        // the longest reception into a host (the largest frame on the slowest host link, a bound for
        // flows whose transfers draw their destinations): the throughput bins that a delivery after
        // a step can still reach are not final at the step's end
        let frame = ir.flows.iter().map(|f| f.frame_bytes as u64).max().unwrap_or(0);
        let reach = net.hosts.iter().map(|h| net.ports[h.port.idx()].tx_ps(frame));
        net.flow_bins.set_reach(reach.max().unwrap_or(0));
        let obs = Observer::new(&ir, &net);
        if obs.sample_interval > 0 {
            if obs.series.queue_ts {
                net.q_watch.threshold = obs.q_threshold;
            }
            net.schedule(0, Event::Sample);
        }
        Ok(Simulation { ir, net, obs, events: 0, finished: false, series_closed: false })
    }

    /// Current simulated time, ps.
    pub fn now(&self) -> SimTime {
        self.net.now
    }
    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.events + self.net.folded_events
    }
    /// End of the run, ps.
    pub fn duration(&self) -> SimTime {
        self.ir.duration_ps
    }
    pub fn ir(&self) -> &Ir {
        &self.ir
    }
    /// The network's current state (read-only).
    pub fn network(&self) -> &Network {
        &self.net
    }
    /// The network, to drive it by hand in the engine's unit tests.
    #[cfg(test)]
    pub(crate) fn network_mut(&mut self) -> &mut Network {
        &mut self.net
    }

    /// Interval of the sampled series, ps (0: none).
    pub fn sample_interval(&self) -> u64 {
        self.obs.sample_interval
    }
    /// Sample instants recorded since the last [`Simulation::drain_series`].
    pub fn buffered_samples(&self) -> u64 {
        self.obs.sample_t.len() as u64
    }
    /// Rows recorded since the last [`Simulation::drain_series`]: the sampled series, the final
    /// throughput bins (a row per bin and one per flow with a series per bin) and the `fct` rows of
    /// the transfers settled since.
    pub fn buffered_rows(&self) -> usize {
        let fb = &self.net.flow_bins;
        self.obs.buffered_rows() + fb.final_bins(self.net.run_limit) * (fb.flows + 1) + self.net.transfers.buffered_rows()
    }
    /// The time-series rows recorded since the last drain (see [`Observer::drain_series`]), the
    /// throughput bins that can no longer change (`throughput_ts`, `flow_tp`: those that end by the
    /// last [`Simulation::run_until`]'s limit) and the `fct` rows of the transfers settled since
    /// (with `observe.fct`); the rest come with [`Simulation::finish`].
    pub fn drain_series(&mut self) -> Vec<Table> {
        let mut tables = self.obs.drain_series();
        let rows = self.net.flow_bins.drain(self.net.run_limit);
        tables.extend(crate::observe::bin_tables(&self.net.flow_bins, rows));
        let settled = self.net.transfers.drain_rows();
        tables.push(crate::observe::fct_table(&self.net, &settled));
        tables
    }
    /// Close the run (its statistics end at the duration) and drain every series row left: those of
    /// [`Simulation::drain_series`] plus the last throughput bins and the `fct` rows of the transfers
    /// closed with the run. [`Simulation::finish`] then returns empty series, so a caller streaming
    /// them can write these while the summary is built.
    pub fn close_series(&mut self) -> Vec<Table> {
        self.close_run();
        let mut tables = self.obs.drain_series();
        let rows = self.net.flow_bins.drain(u64::MAX);
        tables.extend(crate::observe::bin_tables(&self.net.flow_bins, rows));
        let rows = if self.series_closed { Vec::new() } else { crate::observe::final_fct_rows(&mut self.net) };
        self.series_closed = true;
        tables.push(crate::observe::fct_table(&self.net, &rows));
        tables
    }
    fn close_run(&mut self) {
        let end = self.ir.duration_ps;
        if !self.finished {
            self.finished = true;
            // the ends of transmission the run processed (events before its last limit)
            let limit = self.net.run_limit.min(end);
            self.net.release_all(limit);
            self.net.now = end;
            self.net.close_statistics(end);
        }
    }
    /// The packet-capture bytes written since the last call, per capture: (file name, pcap bytes;
    /// the first call's start with the file header). Empty without captures.
    pub fn take_pcap(&mut self) -> Vec<(String, Vec<u8>)> {
        self.net.pcap.as_mut().map(|p| p.take()).unwrap_or_default()
    }
    /// The tables naming the series' ids (`queues`, `links`, `flows`).
    pub fn static_tables(&self) -> Vec<Table> {
        crate::observe::static_tables(&self.ir, &self.net, &self.obs)
    }

    /// Process every event with time < min(t, duration). Returns true when the run has reached its end.
    pub fn run_until(&mut self, t: SimTime) -> bool {
        let limit = self.start_step(t);
        while let Some((te, ev)) = self.net.q.pop_before(limit) {
            debug_assert!(te >= self.net.now, "event in the past");
            self.net.now = te;
            self.events += 1;
            self.dispatch(ev, &mut |_| {});
        }
        self.end_step(limit)
    }

    /// [`Simulation::run_until`], showing `seen` each event (its time and itself) before it is
    /// processed: golden traces (TESTING.md T5, `golden_tests.rs`). In test builds only: a second
    /// event loop in the build, even a separate one, cost `run_until` 3–4 % more instructions
    /// (`make instructions`; the functions the dispatch calls get two call sites to inline at).
    #[cfg(test)]
    pub(crate) fn run_until_with(&mut self, t: SimTime, mut seen: impl FnMut(SimTime, &Event)) -> bool {
        let limit = self.start_step(t);
        while let Some((te, ev)) = self.net.q.pop_before(limit) {
            self.net.now = te;
            self.events += 1;
            // a batch is shown as its members, each as it is handled
            if !matches!(ev, Event::Batch { .. }) {
                seen(te, &ev);
            }
            self.dispatch(ev, &mut |m| seen(te, m));
        }
        self.end_step(limit)
    }

    /// The limit of a step towards `t` (never past the end of the run), noted for deliveries.
    fn start_step(&mut self, t: SimTime) -> SimTime {
        let limit = t.min(self.ir.duration_ps);
        self.net.run_limit = limit;
        limit
    }

    /// The clock after a step to `limit`; whether the run has reached its end.
    fn end_step(&mut self, limit: SimTime) -> bool {
        // the deferred firings this step would have handled
        self.net.catch_up_all(limit);
        if limit >= self.ir.duration_ps {
            self.net.now = self.ir.duration_ps;
            true
        } else {
            self.net.now = self.net.now.max(limit);
            false
        }
    }

    /// Run to the end and collect the results (conservation checked).
    pub fn run(mut self) -> Result<Results, RunError> {
        self.run_until(u64::MAX);
        self.finish()
    }

    /// Collect results after `run_until` reached the end.
    pub fn finish(&mut self) -> Result<Results, RunError> {
        self.close_run();
        let events = self.events();
        let bins = self.net.flow_bins.drain(u64::MAX);
        // after close_series, nothing: its in-progress transfers were reported with it
        let fct_rows = if self.series_closed { self.net.transfers.drain_rows() } else { crate::observe::final_fct_rows(&mut self.net) };
        crate::observe::collect(&self.ir, &self.net, &mut self.obs, bins, fct_rows, events)
    }

    /// Handle `ev`; `seen` is shown each member of a batch as it is handled (golden traces).
    #[inline(always)]
    fn dispatch(&mut self, ev: Event, seen: &mut impl FnMut(&Event)) {
        let net = &mut self.net;
        match ev {
            Event::Arrive { port, frame } => {
                let owner = net.port_owner[port.idx()];
                if owner & OWNER_HOST == 0 {
                    net.switch_arrive(owner as usize, port, frame)
                } else {
                    net.host_arrive((owner & !OWNER_HOST) as usize, port, frame)
                }
            }
            Event::PortTxDone { port } => net.port_tx_done(port),
            Event::PortWake { port } => net.port_wake(port),
            Event::HostWake { host } => net.host_wake(host),
            Event::SourceFire { source } => net.source_fire(source as usize),
            Event::Feedback { host, frame } => net.host_feedback(host, frame),
            Event::RpTimer { host, token } => net.rp_timer(host, token),
            Event::TcpTimer { flow, which, gen } => net.tcp_timer(flow, which, gen),
            Event::RdmaTimer { queue, gen } => net.rdma_timer(queue, gen),
            Event::CpTick { port } => net.cp_tick(port),
            Event::PauseRefresh { port, gen } => net.pause_refresh(port, gen),
            Event::ServiceRate { hotspot, step } => net.service_rate_step(hotspot, step),
            Event::LinkEvent { index, phase } => net.link_event(index, phase),
            Event::Sample => {
                // (the last event of its instant: every end of transmission up to it has happened;
                // those without an event are read as such, Network::queued_now)
                self.obs.sample(&self.net);
                let next = self.net.now + self.obs.sample_interval;
                if next < self.ir.duration_ps {
                    self.net.schedule(next, Event::Sample);
                }
            }
            Event::Batch { id, .. } => net.run_batch(id, seen),
        }
    }
}

#[allow(dead_code)]
fn _assert_send() {
    fn is_send<T: Send>() {}
    is_send::<Simulation>();
}
