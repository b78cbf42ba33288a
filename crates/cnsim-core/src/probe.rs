//! Probes: counters the data plane fills as frames move (the observer reads them afterwards).
//! They know nothing of the network, so the data plane can own them without an import circle.

use crate::ids::{FlowId, PortId};
use crate::time::SimTime;

/// Delivered bytes per time bin (`bin` ps wide, `n_bins` bins over the run; none when off): of
/// every flow together, and of each of the first `flows` flows.
///
/// Only the bins from `base` on are held, time-major; [`FlowBins::drain`] hands over the bins
/// that can no longer change and forgets them, so a streamed run holds the bins since its last
/// drain, not the whole run's. A delivery is stamped with a time no earlier than the event being
/// processed (`t >= now`) and before the current step's limit, so every bin that ends by that
/// limit is final once the step is over.
#[derive(Debug, Clone, Default)]
pub struct FlowBins {
    pub bin: u64,
    pub n_bins: usize,
    /// Flows with a series: ids `0..flows`.
    pub flows: usize,
    /// The first bin held (the earlier ones were drained).
    base: usize,
    /// Every flow's bytes per held bin (bin `base + i` at `i`).
    total: Vec<u64>,
    /// The first `flows` flows' bytes per held bin: bin `base + i`, flow `f` at `i * flows + f`.
    bytes: Vec<u64>,
    /// The bin of the last delivery and its span `[lo, hi)`: deliveries mostly come in time
    /// order, so the next one is found by two comparisons instead of a division.
    cur: usize,
    lo: SimTime,
    hi: SimTime,
}

/// Bins handed over by [`FlowBins::drain`]: bins `first..first + total.len()`.
#[derive(Debug, Clone, PartialEq)]
pub struct BinRows {
    pub first: usize,
    pub total: Vec<u64>,
    /// Bin-major, `flows` per bin.
    pub bytes: Vec<u64>,
}

impl FlowBins {
    /// Bins of `bin_ps` over `[0, duration_ps)` for the first `flows` flows (`bin_ps` = 0: off).
    pub fn new(bin_ps: u64, duration_ps: u64, flows: usize) -> Self {
        let n_bins = if bin_ps > 0 { duration_ps.div_ceil(bin_ps) as usize } else { 0 };
        FlowBins { bin: bin_ps, n_bins, flows, hi: 0, ..Default::default() }
    }

    /// The bin of time `t` (the last bin takes every later time), remembered with its span, and
    /// held from now on.
    #[cold]
    fn locate(&mut self, t: SimTime) -> usize {
        let b = ((t / self.bin) as usize).min(self.n_bins - 1);
        debug_assert!(b >= self.base, "a delivery in a drained bin");
        let b = b.max(self.base);
        if b - self.base >= self.total.len() {
            self.total.resize(b - self.base + 1, 0);
            self.bytes.resize((b - self.base + 1) * self.flows, 0);
        }
        self.cur = b;
        self.lo = b as u64 * self.bin;
        self.hi = if b + 1 == self.n_bins { SimTime::MAX } else { self.lo + self.bin };
        b
    }

    #[inline]
    pub fn on_delivery(&mut self, flow: FlowId, t: SimTime, bytes: u32) {
        if self.n_bins > 0 {
            let b = (if t >= self.lo && t < self.hi { self.cur } else { self.locate(t) }) - self.base;
            self.total[b] += bytes as u64;
            if flow.idx() < self.flows {
                self.bytes[b * self.flows + flow.idx()] += bytes as u64;
            }
        }
    }

    /// Bins held that end by `limit` ps (all of them with `limit` = `u64::MAX`, including the
    /// bins never reached, as zeros).
    pub fn final_bins(&self, limit: SimTime) -> usize {
        let end = if limit == SimTime::MAX { self.n_bins } else { ((limit / self.bin.max(1)) as usize).min(self.n_bins.saturating_sub(1)) };
        end.saturating_sub(self.base)
    }

    /// Hand over the bins that end by `limit` ps (see [`FlowBins::final_bins`]) and forget them.
    pub fn drain(&mut self, limit: SimTime) -> BinRows {
        let n = self.final_bins(limit);
        let held = n.min(self.total.len());
        let mut total: Vec<u64> = self.total.drain(..held).collect();
        let mut bytes: Vec<u64> = self.bytes.drain(..held * self.flows).collect();
        total.resize(n, 0);
        bytes.resize(n * self.flows, 0);
        let first = self.base;
        self.base += n;
        // the remembered bin may have been drained: find the next one afresh
        (self.lo, self.hi) = (0, 0);
        BinRows { first, total, bytes }
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

#[cfg(test)]
mod tests {
    use super::FlowBins;
    use crate::ids::FlowId;

    /// The remembered bin gives the bin of `t / bin` (the last one for later times) whatever the
    /// order of the deliveries: mostly in time order, sometimes ahead (a delivery folded into its
    /// sending event) or behind, sometimes past the end.
    #[test]
    fn flow_bins_match_the_division() {
        let (bin, duration, flows) = (1_000u64, 10_500u64, 3usize);
        let mut got = FlowBins::new(bin, duration, flows);
        let mut want = FlowBins::new(bin, duration, flows);
        let mut rng = crate::rng::Stream::new(9, 0, 0);
        let mut t = 0u64;
        for i in 0..20_000u32 {
            let at = match rng.below(10) {
                0 => t + rng.below(3 * bin),               // ahead
                1 => t.saturating_sub(rng.below(3 * bin)), // behind
                2 => duration + rng.below(5 * bin),        // past the end
                3 => (t / bin + 1) * bin - rng.below(2),   // the next bin's edge, or just before it
                _ => {
                    t += rng.below(bin / 4);
                    t
                }
            };
            let (flow, bytes) = (FlowId(rng.below(flows as u64 + 1) as u32), 1 + i % 1500);
            got.on_delivery(flow, at, bytes);
            let b = ((at / bin) as usize).min(want.n_bins - 1);
            want.locate(b as u64 * bin);
            want.total[b] += bytes as u64;
            if flow.idx() < flows {
                want.bytes[b * flows + flow.idx()] += bytes as u64;
            }
        }
        let (got, want) = (got.drain(u64::MAX), want.drain(u64::MAX));
        assert_eq!(got, want);
        assert!(got.total.iter().all(|&x| x > 0), "every bin was hit");
    }

    /// Drained between steps (every delivery at or after the step's limit, as the engine stamps
    /// them), the bins come out as the undrained run's, and only the bins since the last drain
    /// are held.
    #[test]
    fn drained_bins_join_into_the_whole_run() {
        let (bin, duration, flows) = (1_000u64, 20_500u64, 2usize);
        let mut drained = FlowBins::new(bin, duration, flows);
        let mut whole = FlowBins::new(bin, duration, flows);
        let mut rng = crate::rng::Stream::new(4, 0, 0);
        let (mut limit, mut parts) = (0u64, Vec::new());
        while limit < duration {
            let next = (limit + 1 + rng.below(3 * bin)).min(duration);
            for _ in 0..rng.below(40) {
                let at = limit + rng.below(next - limit);
                let (flow, bytes) = (FlowId(rng.below(flows as u64 + 1) as u32), 1 + rng.below(1500) as u32);
                drained.on_delivery(flow, at, bytes);
                whole.on_delivery(flow, at, bytes);
            }
            limit = next;
            let part = drained.drain(limit);
            assert_eq!(part.first + part.total.len(), ((limit / bin) as usize).min(whole.n_bins - 1).max(part.first));
            assert!(drained.total.len() <= 1, "at most the bin under way is held");
            parts.push(part);
        }
        parts.push(drained.drain(u64::MAX));
        let all = whole.drain(u64::MAX);
        assert_eq!(parts.iter().flat_map(|p| p.total.clone()).collect::<Vec<_>>(), all.total);
        assert_eq!(parts.iter().flat_map(|p| p.bytes.clone()).collect::<Vec<_>>(), all.bytes);
        assert_eq!(all.total.len(), 21);
        assert!(all.total.iter().filter(|&&x| x > 0).count() > 15);
    }
}
