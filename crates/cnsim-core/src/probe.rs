//! Probes: counters the data plane fills as frames move (the observer reads them afterwards).
//! They know nothing of the network, so the data plane can own them without an import circle.

use crate::ids::FlowId;
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
