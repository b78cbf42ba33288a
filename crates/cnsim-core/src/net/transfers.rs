//! The transfers of a run (Pareto ON periods, workload flows, incast responses): a slab indexed by
//! transfer id.
//!
//! A transfer is *settled* once every frame of it has been delivered or dropped (a TCP transfer:
//! once its last byte is acknowledged). It is then counted in [`FctStats`] and, with `observe.fct`
//! on, its row is kept for the `fct` table ([`Transfers::drain_rows`] hands the rows over as the
//! run goes, by settling time); either way its slot is reused, so memory follows the transfers in
//! progress (and the rows not yet drained), not the run's length. Nothing refers to a settled transfer any more: its
//! frames are gone, TCP's queues have popped it, and a source compares ids only with a transfer of
//! its own that is still in progress. A transfer's number in the `fct` table is its `serial`
//! (creation order), not its slot.

use super::flow::Transfer;
use crate::time::SimTime;

/// FCT statistics of the settled transfers that started after the warm-up, accumulated exactly
/// (integer picoseconds), so they do not depend on the order transfers settle in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FctStats {
    /// Completed good transfers.
    pub count: u64,
    sum_ps: u128,
    sum_sq_ps: u128,
    min_ps: u64,
    max_ps: u64,
    /// Transfers with at least one dropped frame.
    pub bad: u64,
}

impl FctStats {
    fn add_fct(&mut self, ps: u64) {
        if self.count == 0 {
            (self.min_ps, self.max_ps) = (ps, ps);
        } else {
            self.min_ps = self.min_ps.min(ps);
            self.max_ps = self.max_ps.max(ps);
        }
        self.count += 1;
        self.sum_ps += ps as u128;
        self.sum_sq_ps = self.sum_sq_ps.saturating_add(ps as u128 * ps as u128);
    }

    pub fn min_us(&self) -> f64 {
        if self.count == 0 {
            f64::INFINITY
        } else {
            self.min_ps as f64 / 1e6
        }
    }
    pub fn max_us(&self) -> f64 {
        self.max_ps as f64 / 1e6
    }
    pub fn mean_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ps as f64 / self.count as f64 / 1e6
        }
    }

    /// Population standard deviation: (n·Σx² − (Σx)²) / n² exactly in integers, when n·Σx² fits
    /// in 128 bits (FCTs below ≈ 1 s with 10⁶ transfers, say), else in floating point from the
    /// same sums (Σx² itself saturates only beyond 3.4·10³⁸ ps²).
    pub fn std_us(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let n = self.count as u128;
        let exact = n.checked_mul(self.sum_sq_ps).zip(self.sum_ps.checked_mul(self.sum_ps));
        let var_ps2 = match exact {
            Some((a, b)) => (a - b) as f64 / (n as f64 * n as f64),
            None => {
                let m = self.sum_ps as f64 / n as f64;
                (self.sum_sq_ps as f64 / n as f64 - m * m).max(0.0)
            }
        };
        var_ps2.sqrt() / 1e6
    }
}

/// The transfers in progress, the rows of the settled ones not yet drained, and the statistics.
#[derive(Debug, Default)]
pub struct Transfers {
    slots: Vec<Transfer>,
    /// Slots of settled transfers, reused by new ones.
    free: Vec<u32>,
    /// Keep a row per settled transfer (`observe.fct`).
    record: bool,
    /// The settled transfers' rows not drained yet, with the time each settled.
    rows: Vec<(SimTime, Transfer)>,
    /// Transfers created so far (the next one's serial).
    created: u32,
    warmup: SimTime,
    /// The settled transfers' statistics.
    pub stats: FctStats,
}

impl Transfers {
    pub fn new(record: bool, warmup: SimTime) -> Self {
        Transfers { record, warmup, ..Default::default() }
    }

    /// Store a new transfer (its `serial` is set here); its id.
    pub fn push(&mut self, mut t: Transfer) -> u32 {
        t.serial = self.created;
        self.created += 1;
        match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = t;
                id
            }
            None => {
                self.slots.push(t);
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Transfer `id` may just have settled at `at` (a frame of it was delivered or dropped, or TCP
    /// acknowledged its last byte): count it, keep its row if recording, and free its slot.
    /// Returns whether it settled.
    #[inline]
    pub fn settle(&mut self, id: u32, at: SimTime) -> bool {
        let t = &self.slots[id as usize];
        if t.delivered + t.dropped < t.frames {
            return false;
        }
        if t.start >= self.warmup {
            if t.bad() {
                self.stats.bad += 1;
            } else {
                self.stats.add_fct(t.end - t.start);
            }
        }
        if self.record {
            self.rows.push((at, *t));
        }
        self.free.push(id);
        true
    }

    /// Whether a row is kept for every transfer (`observe.fct`).
    pub fn records(&self) -> bool {
        self.record
    }

    /// Rows of settled transfers kept and not drained yet.
    pub fn buffered_rows(&self) -> usize {
        self.rows.len()
    }

    /// The settled transfers' rows kept since the last drain, by the time they settled (ties by
    /// creation); forgotten here. The engine settles a transfer at its last frame's delivery,
    /// which may be processed before its time (a delivery folded into its sending event, within
    /// the current step), so the order of processing depends on the steps; this order does not:
    /// a drain after a step with limit `L` takes exactly the transfers settled before `L`.
    pub fn drain_rows(&mut self) -> Vec<Transfer> {
        let mut rows = std::mem::take(&mut self.rows);
        rows.sort_unstable_by_key(|(at, t)| (*at, t.serial));
        rows.into_iter().map(|(_, t)| t).collect()
    }

    /// The transfers still in progress, in creation order.
    pub fn in_progress(&self) -> Vec<&Transfer> {
        let mut freed = vec![false; self.slots.len()];
        for &id in &self.free {
            freed[id as usize] = true;
        }
        let mut out: Vec<&Transfer> = self.slots.iter().enumerate().filter(|(i, _)| !freed[*i]).map(|(_, t)| t).collect();
        out.sort_by_key(|t| t.serial);
        out
    }

    /// Slots allocated (in progress + free): bounded by the transfers in progress at any time.
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}

impl std::ops::Index<u32> for Transfers {
    type Output = Transfer;
    #[inline]
    fn index(&self, id: u32) -> &Transfer {
        &self.slots[id as usize]
    }
}

impl std::ops::IndexMut<u32> for Transfers {
    #[inline]
    fn index_mut(&mut self, id: u32) -> &mut Transfer {
        &mut self.slots[id as usize]
    }
}
