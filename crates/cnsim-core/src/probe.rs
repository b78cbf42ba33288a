//! Probes: counters the data plane fills as frames move (the observer reads them afterwards).
//! They know nothing of the network, so the data plane can own them without an import circle.

use crate::ids::{FlowId, PortId};
use crate::time::SimTime;

/// Delivered bytes per flow per time bin (`bin` ps wide, `n_bins` bins; empty when off), for
/// the first `flows` flows only.
#[derive(Debug, Clone, Default)]
pub struct FlowBins {
    pub bin: u64,
    pub n_bins: usize,
    /// Flows with a series: ids `0..flows`.
    pub flows: usize,
    /// flows × bins, row-major by flow.
    pub bytes: Vec<u64>,
    /// Every flow's bytes per bin (the aggregate series; n_bins long).
    pub total: Vec<u64>,
}

impl FlowBins {
    /// Bins of `bin_ps` over `[0, duration_ps)` for the first `flows` flows (`bin_ps` = 0: off).
    pub fn new(bin_ps: u64, duration_ps: u64, flows: usize) -> Self {
        let n_bins = if bin_ps > 0 { duration_ps.div_ceil(bin_ps) as usize } else { 0 };
        FlowBins { bin: bin_ps, n_bins, flows, bytes: vec![0; flows * n_bins], total: vec![0; n_bins] }
    }

    #[inline]
    pub fn on_delivery(&mut self, flow: FlowId, t: SimTime, bytes: u32) {
        if self.n_bins > 0 {
            let b = ((t / self.bin) as usize).min(self.n_bins - 1);
            self.total[b] += bytes as u64;
            if flow.idx() < self.flows {
                self.bytes[flow.idx() * self.n_bins + b] += bytes as u64;
            }
        }
    }
}

/// Switch queues whose occupancy first reached `threshold` bytes, in the order they did (the
/// observer records the series of a queue once it is seen holding that much at a sample, so it
/// only looks at these instead of every queue at every sample). Off (`u64::MAX`) by default.
#[derive(Debug, Clone)]
pub struct QueueWatch {
    pub threshold: u64,
    pub crossed: Vec<PortId>,
}

impl Default for QueueWatch {
    fn default() -> Self {
        QueueWatch { threshold: u64::MAX, crossed: Vec::new() }
    }
}

impl QueueWatch {
    /// The largest occupancy of `port` went from `before` to `after` bytes.
    #[inline]
    pub fn on_max(&mut self, port: PortId, before: u64, after: u64) {
        if before < self.threshold && after >= self.threshold {
            self.crossed.push(port);
        }
    }
}

/// The observer's side of [`QueueWatch`]: the queues with a series (`Some` in the observer's
/// samples) and those that have reached the threshold at some time but not yet at a sample.
#[derive(Debug, Clone, Default)]
pub struct QueueSeries {
    live: Vec<u32>,
    waiting: Vec<u32>,
    /// Entries of the watch list taken so far.
    seen: usize,
}

impl QueueSeries {
    /// Sample `k` of the queues (queue id = index into `queue_ports`, ascending port ids): a queue
    /// with a series records its occupancy; one without gets a series (earlier samples zero) when
    /// seen holding at least `threshold` bytes — only a queue on the watch list can be.
    pub fn sample(
        &mut self,
        k: usize,
        threshold: u64,
        queue_ports: &[PortId],
        watch: &QueueWatch,
        queue_bytes: impl Fn(PortId) -> u64,
        samples: &mut [Option<Vec<u64>>],
    ) {
        for &qid in &self.live {
            samples[qid as usize].as_mut().expect("a live series").push(queue_bytes(queue_ports[qid as usize]));
        }
        let ids = watch.crossed[self.seen..].iter().map(|p| queue_ports.binary_search(p).expect("a switch queue") as u32);
        self.waiting.extend(ids);
        self.seen = watch.crossed.len();
        let mut i = 0;
        while i < self.waiting.len() {
            let qid = self.waiting[i];
            let q = queue_bytes(queue_ports[qid as usize]);
            if q >= threshold {
                let mut v = vec![0; k];
                v.push(q);
                samples[qid as usize] = Some(v);
                self.live.push(qid);
                self.waiting.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }
}
