//! The transfers of a run (Pareto ON periods, workload flows, incast responses): a slab indexed by
//! transfer id.
//!
//! With `observe.fct` on every transfer stays to the end (the `fct` table lists them all, by id).
//! With it off a transfer is folded into [`FctStats`] as soon as it is *settled* — every frame
//! delivered or dropped (a TCP transfer: its last byte acknowledged) — and its slot is reused, so
//! memory follows the transfers in progress, not the run's length. Nothing refers to a settled
//! transfer any more: its frames are gone, TCP's queues have popped it, and a source compares ids
//! only with a transfer of its own that is still in progress.

use super::flow::Transfer;
use crate::time::SimTime;

/// FCT statistics of the settled transfers that started after the warm-up, accumulated as they
/// settle (Welford's mean and variance, in settling order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FctStats {
    /// Completed good transfers.
    pub count: u64,
    pub mean_us: f64,
    m2: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Transfers with at least one dropped frame.
    pub bad: u64,
}

impl FctStats {
    fn add_fct(&mut self, us: f64) {
        self.count += 1;
        if self.count == 1 {
            (self.min_us, self.max_us) = (us, us);
        } else {
            self.min_us = self.min_us.min(us);
            self.max_us = self.max_us.max(us);
        }
        let d = us - self.mean_us;
        self.mean_us += d / self.count as f64;
        self.m2 += d * (us - self.mean_us);
    }

    /// Population standard deviation (as `observe::mean_std`).
    pub fn std_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            (self.m2 / self.count as f64).sqrt()
        }
    }
}

/// Every transfer of the run, or (FCT rows not recorded) those in progress.
#[derive(Debug, Default)]
pub struct Transfers {
    slots: Vec<Transfer>,
    /// Slots of settled transfers, reused by new ones (only when `fold` is on).
    free: Vec<u32>,
    /// Fold settled transfers into `stats` and free their slots (`observe.fct` off).
    fold: bool,
    warmup: SimTime,
    /// The folded transfers' statistics.
    pub stats: FctStats,
}

impl Transfers {
    pub fn new(fold: bool, warmup: SimTime) -> Self {
        Transfers { fold, warmup, ..Default::default() }
    }

    /// Store a new transfer; its id.
    pub fn push(&mut self, t: Transfer) -> u32 {
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

    /// Whether transfers are folded as they settle (their FCT rows are not kept).
    pub fn folds(&self) -> bool {
        self.fold
    }

    /// Transfer `id` may just have settled (a frame of it was delivered or dropped, or TCP
    /// acknowledged its last byte): fold it and free its slot when it has and folding is on.
    #[inline]
    pub fn settle(&mut self, id: u32) {
        if !self.fold {
            return;
        }
        let t = &self.slots[id as usize];
        if t.delivered + t.dropped < t.frames {
            return;
        }
        if t.start >= self.warmup {
            if t.bad() {
                self.stats.bad += 1;
            } else {
                self.stats.add_fct((t.end - t.start) as f64 / 1e6);
            }
        }
        self.free.push(id);
    }

    /// The transfers still held, with their ids, in id order: all of them when nothing is folded,
    /// else those in progress.
    pub fn held(&self) -> impl Iterator<Item = (u32, &Transfer)> {
        let mut freed = vec![false; if self.fold { self.slots.len() } else { 0 }];
        for &id in &self.free {
            freed[id as usize] = true;
        }
        self.slots.iter().enumerate().filter(move |(i, _)| !freed.get(*i).copied().unwrap_or(false)).map(|(i, t)| (i as u32, t))
    }

    /// Slots allocated (held + free): bounded by the transfers in progress when folding.
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
