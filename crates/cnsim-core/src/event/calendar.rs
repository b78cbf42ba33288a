//! The calendar queue of the event queue's near lane (the link events of many ports).

use super::{Entry, Spill, NO_KEY};
use std::collections::BinaryHeap;

/// Time slice of a [`Calendar`] bucket built without knowing its network: 2^12 ps ≈ 4.1 ns.
pub(super) const SLICE_BITS: u32 = 12;
/// Narrowest and widest slices a network gets ([`Calendar::shift_for`]): 2^10 ps ≈ 1 ns to
/// 2^16 ps ≈ 66 ns.
pub(super) const MIN_SLICE_BITS: u32 = 10;
pub(super) const MAX_SLICE_BITS: u32 = 16;
/// Link events a slice is sized to hold at full load ([`Calendar::shift_for`]).
const EVENTS_PER_SLICE: u64 = 6;
/// Most buckets a [`Calendar`] has (its `filled` words are 64). Longer spans are for slower links,
/// whose events are fewer: their overflow heap stays small.
pub(super) const MAX_SLICES: usize = 4096;
/// Fewest buckets: one `filled` word.
pub(super) const MIN_SLICES: usize = 64;
/// Buckets of a queue built without knowing its network ([`EventQueue::with_capacity`]): 2.1 µs.
pub(super) const DEFAULT_SLICES: usize = 512;

/// A calendar queue for events due soon in no particular order (the link events of many ports:
/// each port's arrivals and transmission ends come in order, but the ports' interleave). Events
/// due in the current slice are in `bottom`, sorted (the next one first); those of the next
/// `slices - 1` slices in unsorted buckets, one per slice; later ones in a binary heap. A bucket is
/// sorted once, when its slice comes up: a few compares per event instead of a heap's sift down
/// and up over every pending event (k = 8 fat tree: the binary heap's pops were 24 % of the
/// engine's instructions). The order is the keys' order, exactly as a heap's.
///
/// The slice and the span are fitted to the network when it is built. The slice
/// ([`Calendar::shift_for`]) holds a few link events at full load: one bucket sorted and one
/// refill per few events, not per one or two (a fixed 4.1-ns slice held 1.6 events on htsim's
/// k = 8 fat tree with 9 000-B frames, where 33 ns holds about six: 5 % fewer instructions; and
/// 4.1 ns is right for the same fabric with 1 500-B frames, where 16 ns cost 3 % more). The span
/// (`slices`, [`Calendar::slices_for`]) covers the longest interval at which link events are
/// scheduled, so that they all go to the buckets, and no more, so that a sparse calendar has few
/// `filled` words to scan. A fixed span of 512 slices of 4.1 ns sent every transmission end of
/// 9 000-B frames at 10 Gb/s (7.2 µs) to the overflow heap (htsim's k = 8 fat-tree workload: 11 %
/// more instructions), and a fixed 2 048 made fan-in-100 0.9 % slower (32 words to scan where 8
/// do).
pub(super) struct Calendar {
    /// Events of slices up to `cur`, sorted by key, ascending: `bottom[taken..]` (the entries
    /// before `taken` have been popped). A new event due after them all (a burst due at one instant
    /// — an XOFF or XON sent on every port of a switch at once, scheduled in key order) is pushed at
    /// the end, one due before them all into the slot of the last one taken, each in O(1) (an
    /// insertion before all the others, 100 ports' PAUSE frames: 9 % of a run). A refill swaps a
    /// bucket's storage in (no copy; a ring's conversions from and to a vector cost a copy call).
    bottom: Vec<Entry>,
    taken: usize,
    /// `buckets[s % slices]`: the events of slice `s`, `cur < s < cur + slices`, unsorted.
    buckets: Vec<Vec<Entry>>,
    /// The number of buckets, `slices` (a power of two from `MIN_SLICES` to `MAX_SLICES`), less one.
    mask: u64,
    /// `cur + slices`: the first slice of the overflow's events (kept, not added on each push).
    end: u64,
    /// Which buckets hold events (bit `i` of word `i / 64`; the first `slices / 64` words are used).
    filled: [u64; MAX_SLICES / 64],
    /// Events of slices from `cur + slices` on.
    overflow: BinaryHeap<Entry>,
    /// The current slice: `bottom` holds every event of slices up to it.
    cur: u64,
    /// A slice is 2^`shift` ps.
    shift: u32,
}

impl Default for Calendar {
    fn default() -> Self {
        Calendar::new(DEFAULT_SLICES, SLICE_BITS)
    }
}

impl Calendar {
    /// `slices` buckets of 2^`shift` ps.
    pub(super) fn new(slices: usize, shift: u32) -> Self {
        debug_assert!(slices.is_power_of_two() && (MIN_SLICES..=MAX_SLICES).contains(&slices));
        debug_assert!(shift < 64);
        Calendar {
            bottom: Vec::new(),
            taken: 0,
            buckets: (0..slices).map(|_| Vec::new()).collect(),
            mask: slices as u64 - 1,
            end: slices as u64,
            filled: [0; MAX_SLICES / 64],
            overflow: BinaryHeap::new(),
            cur: 0,
            shift,
        }
    }
    /// Slice width (its log2, ps) for link events due on average `spacing_ps` apart at full load:
    /// the power of two nearest [`EVENTS_PER_SLICE`] of them, within
    /// `MIN_SLICE_BITS..=MAX_SLICE_BITS`.
    pub(super) fn shift_for(spacing_ps: u64) -> u32 {
        let width = spacing_ps.saturating_mul(EVENTS_PER_SLICE).max(1);
        // nearest power of two: the floor's log2, plus one if the width is nearer the next one
        let floor = 63 - width.leading_zeros();
        let bits = if floor < 63 && width - (1 << floor) > (2 << floor) - width { floor + 1 } else { floor };
        bits.clamp(MIN_SLICE_BITS, MAX_SLICE_BITS)
    }
    /// Buckets of 2^`shift` ps for link events scheduled at most `reach_ps` ahead: an event
    /// `reach_ps` after the current time falls at most `reach_ps / slice + 1` slices after the
    /// current one, so the span must exceed that; the next power of two, within
    /// `MIN_SLICES..=MAX_SLICES`.
    pub(super) fn slices_for(reach_ps: u64, shift: u32) -> usize {
        let need = (reach_ps >> shift).saturating_add(2).min(MAX_SLICES as u64) as usize;
        need.next_power_of_two().clamp(MIN_SLICES, MAX_SLICES)
    }
    #[inline(always)]
    pub(super) fn slice(&self, key: u128) -> u64 {
        ((key >> 64) as u64) >> self.shift
    }
    /// Bucket of slice `s` (below `MAX_SLICES`, as the compiler sees: no bounds check on `filled`).
    #[inline(always)]
    pub(super) fn bucket(&self, s: u64) -> usize {
        (s & self.mask) as usize % MAX_SLICES
    }
    /// Put `e`, of slice `s`, `cur < s < cur + slices`, in its bucket.
    #[inline(always)]
    pub(super) fn fill(&mut self, s: u64, e: Entry) {
        let b = self.bucket(s);
        self.buckets[b].push(e);
        self.filled[b / 64] |= 1 << (b % 64);
    }
    /// An event of a slice up to `cur`: into `bottom` at its place (usually an end: after the events
    /// being taken, or before them all).
    #[inline(always)]
    pub(super) fn insert_bottom(&mut self, e: Entry) {
        match self.bottom.last() {
            Some(last) if last.key > e.key => {}
            _ => return self.bottom.push(e),
        }
        // not empty: `taken < bottom.len()`
        if self.bottom[self.taken].key > e.key && self.taken > 0 {
            self.taken -= 1;
            self.bottom[self.taken] = e;
            return;
        }
        let i = self.taken + self.bottom[self.taken..].partition_point(|x| x.key < e.key);
        self.bottom.insert(i, e);
    }
    /// `bottom` is empty: move on to the next slice holding events, sort its bucket into `bottom`,
    /// and bring the overflow's events that now fall within the buckets' span into them.
    #[cold]
    #[inline(never)]
    pub(super) fn refill(&mut self) {
        debug_assert!(self.bottom.is_empty());
        let next = match (self.next_filled(), self.overflow.peek()) {
            (Some(s), _) => s,
            (None, Some(e)) => self.slice(e.key),
            (None, None) => return, // no event
        };
        self.cur = next;
        self.end = next + self.mask + 1;
        while self.overflow.peek().is_some_and(|e| self.slice(e.key) < self.end) {
            let e = self.overflow.pop().expect("peeked");
            self.fill(self.slice(e.key), e);
        }
        let b = self.bucket(next);
        self.filled[b / 64] &= !(1 << (b % 64));
        // the bucket's storage becomes `bottom`'s, `bottom`'s (empty) the bucket's
        std::mem::swap(&mut self.bottom, &mut self.buckets[b]);
        self.bottom.sort_unstable_by_key(|x| x.key);
    }
    /// The first slice after `cur` whose bucket holds events.
    #[inline]
    pub(super) fn next_filled(&self) -> Option<u64> {
        let words = (self.mask as usize + 1) / 64; // a power of two
        let start = self.bucket(self.cur + 1);
        for step in 0..=words {
            let w = (start / 64 + step) & (words - 1);
            let mut word = self.filled[w % (MAX_SLICES / 64)];
            if step == 0 {
                word &= !0u64 << (start % 64);
            } else if step == words {
                word &= (1u64 << (start % 64)).wrapping_sub(1);
            }
            if word != 0 {
                let b = w * 64 + word.trailing_zeros() as usize;
                let ahead = self.bucket((b + words * 64 - start) as u64) + 1;
                return Some(self.cur + ahead as u64);
            }
        }
        None
    }
}

impl Spill for Calendar {
    const ADAPTIVE: bool = true;
    #[inline(always)]
    fn push(&mut self, e: Entry) {
        let s = self.slice(e.key);
        if s <= self.cur {
            self.insert_bottom(e)
        } else if s < self.end {
            self.fill(s, e);
        } else {
            self.overflow.push(e)
        }
        if self.bottom.is_empty() {
            self.refill();
        }
    }
    #[inline(always)]
    fn pop(&mut self) -> Option<Entry> {
        let x = self.bottom.get(self.taken)?;
        let e = Entry { key: x.key, ev: x.ev };
        self.taken += 1;
        if self.taken == self.bottom.len() {
            self.bottom.clear();
            self.taken = 0;
            self.refill();
        }
        Some(e)
    }
    #[inline(always)]
    fn min_key(&self) -> u128 {
        self.bottom.get(self.taken).map_or(NO_KEY, |e| e.key)
    }
    /// Counted, not kept (the tests' check): a count kept on every push and pop cost 0.7 % of a
    /// fat tree's instructions.
    fn len(&self) -> usize {
        self.bottom.len() - self.taken + self.buckets.iter().map(Vec::len).sum::<usize>() + self.overflow.len()
    }
}
