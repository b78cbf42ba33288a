//! Probes: counters the data plane fills as frames move (the observer reads them afterwards).
//! They know nothing of the network, so the data plane can own them without an import circle.

use crate::ids::{FlowId, PortId};
use crate::time::SimTime;

/// Delivered bytes per time bin (`bin` ps wide, `n_bins` bins over the run; none when off): of
/// every flow together, and of each of the first `flows` flows.
///
/// A frame's bytes go to the bins its reception spans: a delivery at `t` whose last link
/// serialised it in `span` ps arrived over `[t - span, t)`, and each bin gets the bytes of its
/// share of that interval (whole bytes, rounded so that the shares add up to the frame). The
/// frames of one link arrive over disjoint intervals, so no bin of one destination's flows can
/// read more than its link's line rate — as a frame counted whole in the bin of its last bit
/// could (a bin of 100 µs at 10 Gb/s holds 83.3 frames of 1 500 B: whole frames read up to
/// 10.08 Gb/s).
///
/// Only the bins from `base` on are held, time-major; [`FlowBins::drain`] hands over the bins
/// that can no longer change and forgets them, so a streamed run holds the bins since its last
/// drain, not the whole run's. A delivery is stamped with a time no earlier than the event being
/// processed (`t >= now`) and before the current step's limit, and its span reaches back at most
/// `reach` ps: every bin that ends by the limit minus `reach` is final once the step is over.
#[derive(Debug, Clone, Default)]
pub struct FlowBins {
    pub bin: u64,
    pub n_bins: usize,
    /// Flows with a series: ids `0..flows`.
    pub flows: usize,
    /// The longest reception a delivery can span, ps (see [`FlowBins::set_reach`]).
    reach: u64,
    /// The first bin held (the earlier ones were drained).
    base: usize,
    /// Every flow's bytes per held bin (bin `base + i` at `i`).
    total: Vec<u64>,
    /// The first `flows` flows' bytes per held bin: bin `base + i`, flow `f` at `i * flows + f`.
    bytes: Vec<u64>,
    /// The bin of the last delivery and its span `[lo, hi)`: deliveries mostly come in time
    /// order and within one bin, so the next one is found by two comparisons instead of a division.
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

    /// The longest `span` a delivery will have, ps (the serialisation of the largest data frame on
    /// the slowest link into a host): [`FlowBins::drain`] keeps the bins it may still reach.
    pub fn set_reach(&mut self, ps: u64) {
        self.reach = ps;
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

    /// `bytes` of `flow` delivered at `t`, received over the `span` ps before it (0: at `t`).
    #[inline(always)]
    pub fn on_delivery(&mut self, flow: FlowId, t: SimTime, bytes: u32, span: u64) {
        if self.n_bins > 0 {
            // the reception's first and last picosecond
            let (first, last) = if span > 0 { (t - span, t - 1) } else { (t, t) };
            if first >= self.lo && last < self.hi {
                self.add(self.cur, flow, bytes as u64);
            } else {
                self.spread(flow, first, last, bytes);
            }
        }
    }

    #[inline(always)]
    fn add(&mut self, b: usize, flow: FlowId, bytes: u64) {
        let i = b - self.base;
        self.total[i] += bytes;
        if flow.idx() < self.flows {
            self.bytes[i * self.flows + flow.idx()] += bytes;
        }
    }

    /// [`FlowBins::on_delivery`] of a reception `[first, last]` (ps, inclusive) that leaves the
    /// remembered bin: each bin it overlaps gets `bytes × overlap / span`, rounded down on the
    /// running sum so that the parts add up to `bytes` and none exceeds its exact share by a byte.
    #[cold]
    fn spread(&mut self, flow: FlowId, first: SimTime, last: SimTime, bytes: u32) {
        let end_bin = self.locate(last);
        let start_bin = self.locate(first);
        if start_bin == end_bin {
            return self.add(start_bin, flow, bytes as u64);
        }
        let span = (last + 1 - first) as u128;
        let upto = |x: SimTime| (bytes as u128 * (x - first) as u128 / span) as u64;
        let mut given = 0u64;
        for b in start_bin..=end_bin {
            let edge = if b == end_bin { last + 1 } else { (b as u64 + 1) * self.bin };
            let now = upto(edge);
            self.add(b, flow, now - given);
            given = now;
        }
        self.locate(last); // the next delivery most likely falls where this one ended
    }

    /// Bins held that end by `limit` ps minus the reach of a delivery (all of them with `limit` =
    /// `u64::MAX`, including the bins never reached, as zeros).
    pub fn final_bins(&self, limit: SimTime) -> usize {
        let end = if limit == SimTime::MAX {
            self.n_bins
        } else {
            ((limit.saturating_sub(self.reach) / self.bin.max(1)) as usize).min(self.n_bins.saturating_sub(1))
        };
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

/// The observer's side of [`QueueWatch`]: the queues with a series and those that have reached
/// the threshold at some time but not yet at a sample, and the series' rows since the last drain.
///
/// The rows are kept time-major, as the `queue_ts` table has them: at each sample, the occupancy of
/// every queue with a series at that sample, by ascending id. A series per queue, transposed at
/// each drain, wrote a cache line of its own per queue and sample and read them all again: on
/// htsim's k = 8 fat tree (458 queues sampled every 10 µs) the run took 8 % longer with the queue
/// series than without; time-major, 6 % less than before (paired runs of 20 ms).
#[derive(Debug, Clone, Default)]
pub struct QueueSeries {
    /// The queues with a series, by ascending id.
    live: Vec<u32>,
    waiting: Vec<u32>,
    /// Entries of the watch list taken so far.
    seen: usize,
    /// The rows since the last drain, time-major; a queue whose series began at a later sample has
    /// no row at the earlier ones yet (its zeros are put in at the drain).
    rows: Vec<u64>,
    /// Per queue id with a series: the first sample since the last drain at which it has a row.
    since: Vec<u32>,
    /// Some series began after the first sample since the last drain.
    late: bool,
}

impl QueueSeries {
    /// Sample `k` since the last drain of the queues (queue id = index into `queue_ports`,
    /// ascending port ids): a queue with a series records its occupancy; one without gets a series
    /// (earlier samples since the drain zero) when seen holding at least `threshold` bytes — only a
    /// queue on the watch list can be.
    pub fn sample(&mut self, k: usize, threshold: u64, queue_ports: &[PortId], watch: &QueueWatch, queue_bytes: impl Fn(PortId) -> u64) {
        let start = self.rows.len();
        self.rows.extend(self.live.iter().map(|&qid| queue_bytes(queue_ports[qid as usize])));
        let ids = watch.crossed[self.seen..].iter().map(|p| queue_ports.binary_search(p).expect("a switch queue") as u32);
        self.waiting.extend(ids);
        self.seen = watch.crossed.len();
        let mut i = 0;
        while i < self.waiting.len() {
            let qid = self.waiting[i];
            let q = queue_bytes(queue_ports[qid as usize]);
            if q >= threshold {
                // in its place among this sample's rows
                let at = self.live.partition_point(|&x| x < qid);
                self.live.insert(at, qid);
                self.rows.insert(start + at, q);
                if self.since.len() <= qid as usize {
                    self.since.resize(queue_ports.len(), 0);
                }
                self.since[qid as usize] = k as u32;
                self.late |= k > 0;
                self.waiting.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Queues with a series.
    pub fn kept(&self) -> usize {
        self.live.len()
    }

    /// The rows (t, queue id, bytes) since the last drain, at the sample times `t` (a row for every
    /// queue with a series at every sample, 0 before its series began), and forget them.
    pub fn drain(&mut self, t: &[f64]) -> (Vec<f64>, Vec<u32>, Vec<u64>) {
        let kept = self.live.len();
        // (each sample's row written whole: `extend` of an iterator of known length, or a copy,
        // not a push per value — k = 8 fat tree: 26 instructions per value, 1.9 % of the run)
        let bytes = if self.late {
            let mut out = Vec::with_capacity(t.len() * kept);
            let mut rows = self.rows.iter();
            for k in 0..t.len() {
                let since = &self.since;
                out.extend(self.live.iter().map(|&q| {
                    if since[q as usize] as usize <= k {
                        *rows.next().expect("a row per queue with a series")
                    } else {
                        0
                    }
                }));
            }
            self.rows.clear();
            out
        } else {
            std::mem::take(&mut self.rows)
        };
        for &q in &self.live {
            self.since[q as usize] = 0;
        }
        self.late = false;
        let (mut ids, mut ts) = (Vec::with_capacity(t.len() * kept), Vec::with_capacity(t.len() * kept));
        for &x in t {
            ids.extend_from_slice(&self.live);
            ts.extend(std::iter::repeat_n(x, kept));
        }
        (ts, ids, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::{FlowBins, QueueSeries, QueueWatch};
    use crate::ids::{FlowId, PortId};

    /// The time-major rows give, chunk by chunk, what a series per queue would: a row at every
    /// sample of the chunk for each queue with a series by the chunk's end, by ascending id, zero
    /// before its series began. Queues reach the threshold in no particular order, several at one
    /// sample, and at samples before and after drains.
    #[test]
    fn queue_rows_are_the_per_queue_series_time_major() {
        let (n, threshold) = (9usize, 100u64);
        let ports: Vec<PortId> = (0..n as u32).map(|i| PortId(3 * i + 1)).collect();
        let mut rng = crate::rng::Stream::new(4, 0, 0);
        let (mut series, mut watch) = (QueueSeries::default(), QueueWatch { threshold, crossed: Vec::new() });
        // the reference: per queue, its value at each sample of the chunk, once it has a series
        let mut per_queue: Vec<Option<Vec<u64>>> = vec![None; n];
        let (mut t, mut k, mut chunks, mut late_seen) = (Vec::new(), 0usize, 0, false);
        for sample in 0..300u32 {
            let occupancy: Vec<u64> = (0..n).map(|_| rng.below(2 * threshold)).collect();
            for (q, &b) in occupancy.iter().enumerate() {
                if b >= threshold && rng.below(8) == 0 && !watch.crossed.contains(&ports[q]) {
                    watch.crossed.push(ports[q]);
                }
            }
            let bytes = |p: PortId| occupancy[ports.iter().position(|&x| x == p).unwrap()];
            series.sample(k, threshold, &ports, &watch, bytes);
            t.push(sample as f64);
            for q in 0..n {
                if let Some(v) = per_queue[q].as_mut() {
                    v.push(occupancy[q]);
                } else if watch.crossed.contains(&ports[q]) && occupancy[q] >= threshold {
                    late_seen |= k > 0;
                    let mut v = vec![0; k];
                    v.push(occupancy[q]);
                    per_queue[q] = Some(v);
                }
            }
            k += 1;
            if rng.below(40) == 0 || sample == 299 {
                let (ts, ids, got) = series.drain(&t);
                let (mut wt, mut wid, mut want) = (Vec::new(), Vec::new(), Vec::new());
                for (j, &tj) in t.iter().enumerate() {
                    for q in (0..n).filter(|&q| per_queue[q].is_some()) {
                        wt.push(tj);
                        wid.push(q as u32);
                        want.push(per_queue[q].as_ref().unwrap()[j]);
                    }
                }
                assert_eq!((ts, ids, got), (wt, wid, want), "chunk {chunks}");
                per_queue.iter_mut().flatten().for_each(Vec::clear);
                (t, k) = (Vec::new(), 0);
                chunks += 1;
            }
        }
        assert!(chunks > 3 && late_seen, "drains and series begun within a chunk");
        assert_eq!(series.kept(), n, "every queue got a series");
    }

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
            got.on_delivery(flow, at, bytes, 0);
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
    /// them, its reception reaching back up to the reach), the bins come out as the undrained
    /// run's, and only the bins since the last drain that a reception can still reach are held.
    #[test]
    fn drained_bins_join_into_the_whole_run() {
        let (bin, duration, flows, reach) = (1_000u64, 20_500u64, 2usize, 2_500u64);
        let mut drained = FlowBins::new(bin, duration, flows);
        let mut whole = FlowBins::new(bin, duration, flows);
        drained.set_reach(reach);
        let mut rng = crate::rng::Stream::new(4, 0, 0);
        let (mut limit, mut parts) = (0u64, Vec::new());
        while limit < duration {
            let next = (limit + 1 + rng.below(3 * bin)).min(duration);
            for _ in 0..rng.below(40) {
                let at = (limit + rng.below(next - limit)).max(reach);
                let (flow, bytes) = (FlowId(rng.below(flows as u64 + 1) as u32), 1 + rng.below(1500) as u32);
                let span = rng.below(reach + 1);
                drained.on_delivery(flow, at, bytes, span);
                whole.on_delivery(flow, at, bytes, span);
            }
            limit = next;
            let part = drained.drain(limit);
            let want_end = ((limit.saturating_sub(reach) / bin) as usize).min(whole.n_bins - 1).max(part.first);
            assert_eq!(part.first + part.total.len(), want_end);
            assert!(drained.total.len() <= 2 + (reach / bin) as usize, "at most the bins a reception can reach are held");
            parts.push(part);
        }
        parts.push(drained.drain(u64::MAX));
        let all = whole.drain(u64::MAX);
        assert_eq!(parts.iter().flat_map(|p| p.total.clone()).collect::<Vec<_>>(), all.total);
        assert_eq!(parts.iter().flat_map(|p| p.bytes.clone()).collect::<Vec<_>>(), all.bytes);
        assert_eq!(all.total.len(), 21);
        assert!(all.total.iter().filter(|&&x| x > 0).count() > 15);
    }

    /// Frames received back to back on one 10 Gb/s link (800 ps a byte), of any size, with idle
    /// gaps or none: every bin holds the bytes of its exact share of the receptions, rounded down
    /// (less than one byte apart), no bin more than the line rate allows, and every byte is in
    /// some bin — where counting a frame whole in the bin of its last bit fills a 100 µs bin with
    /// up to 84 frames of 1 500 B (10.08 Gb/s).
    #[test]
    fn spread_receptions_never_exceed_the_line_rate() {
        let (bin, duration, per_byte) = (100_000_000u64, 3_000_000_000u64, 800u64);
        let mut bins = FlowBins::new(bin, duration, 2);
        bins.set_reach(9216 * per_byte);
        let mut rng = crate::rng::Stream::new(7, 0, 0);
        let (mut t, mut sent, mut exact) = (0u64, 0u64, vec![0f64; 30]);
        while t < duration - 9216 * per_byte {
            t += if rng.below(4) == 0 { rng.below(50_000) } else { 0 };
            let size = 64 + rng.below(9216 - 63);
            let span = size * per_byte;
            bins.on_delivery(FlowId(rng.below(2) as u32), t + span, size as u32, span);
            for b in (t / bin)..=((t + span - 1) / bin) {
                let overlap = (t + span).min((b + 1) * bin) - t.max(b * bin);
                exact[b as usize] += size as f64 * overlap as f64 / span as f64;
            }
            (t, sent) = (t + span, sent + size);
        }
        let rows = bins.drain(u64::MAX);
        assert_eq!(rows.total.iter().sum::<u64>(), sent);
        for (b, (&got, &want)) in rows.total.iter().zip(&exact).enumerate() {
            assert!(got <= bin / per_byte, "bin {b}: {got} B > the line rate's {} B", bin / per_byte);
            assert!((got as f64 - want).abs() < 1.0, "bin {b}: {got} B, exact share {want}");
            assert_eq!(got, rows.bytes[2 * b] + rows.bytes[2 * b + 1]);
        }
    }
}
