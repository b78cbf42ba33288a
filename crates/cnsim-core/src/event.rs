//! The closed set of events and the deterministic event queue.
//!
//! Events are totally ordered by (time, class, insertion sequence) — model reference §11: within one instant
//! link arrivals (incl. PAUSE) come first, then transmitter activity, then timers, then traffic
//! generation, then observation. The heap can therefore never decide a tie.

use crate::frame::FrameId;
use crate::ids::{FlowId, NodeId, PortId};
use crate::time::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Every event of the engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event {
    /// A frame is available at node of `port` (last bit arrived + switch latency at switches).
    Arrive { port: PortId, frame: FrameId },
    /// A switch port finished transmitting its current frame.
    PortTxDone { port: PortId },
    /// A switch port may be able to transmit again (pause expired).
    PortWake { port: PortId },
    /// A host NIC may be able to transmit (NIC free, pause expired, rate limiter ready).
    HostWake { host: NodeId },
    /// A traffic source's next action.
    SourceFire { source: u32 },
    /// A control frame delivered to a host takes effect (after the response delay).
    Feedback { host: NodeId, frame: FrameId },
    /// A reaction-point timer.
    RpTimer { host: NodeId, token: u64 },
    /// A TCP timer of a flow: `which` = 0 retransmission timeout (sender), 1 delayed ACK (receiver);
    /// `gen`: the generation of the flow's send queue (a transfer's queue closed since: stale).
    TcpTimer { flow: FlowId, which: u8, gen: u32 },
    /// The retransmission timeout of an RDMA send queue ([`crate::net::rdma`]; `gen` as `TcpTimer`'s).
    RdmaTimer { queue: FlowId, gen: u32 },
    /// A congestion point's periodic tick.
    CpTick { port: PortId },
    /// Re-send XOFF if still asserted (generation counter `gen`).
    PauseRefresh { port: PortId, gen: u32 },
    /// Hotspot schedule step `step` of hotspot `hotspot`.
    ServiceRate { hotspot: u32, step: u32 },
    /// Phase `phase` (on the wire, detected, converged) of link event `index` ([`crate::net::dynamics`]).
    LinkEvent { index: u32, phase: u8 },
    /// Record the sampled time series.
    Sample,
    /// Events of one instant and class pushed one right after another, with no other event pushed
    /// between them ([`EventQueue::push_batched`]): one entry of the queue instead of one each;
    /// `class` is theirs. The network handles the members in their order
    /// ([`crate::net::Network::run_batch`]).
    Batch { id: u32, class: u8 },
}

impl Event {
    /// Class priority within one instant (lower first).
    fn class(&self) -> u64 {
        match self {
            Event::Arrive { .. } => 0,
            Event::PortTxDone { .. } | Event::PortWake { .. } | Event::HostWake { .. } => 1,
            Event::Feedback { .. }
            | Event::RpTimer { .. }
            | Event::TcpTimer { .. }
            | Event::RdmaTimer { .. }
            | Event::CpTick { .. }
            | Event::PauseRefresh { .. }
            | Event::ServiceRate { .. }
            | Event::LinkEvent { .. } => 2,
            Event::SourceFire { .. } => 3,
            Event::Sample => 4,
            Event::Batch { class, .. } => *class as u64,
        }
    }
}

struct Entry {
    key: u128,
    ev: Event,
}
impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        o.key.cmp(&self.key) // min-heap
    }
}

/// New events are placed into a lane's sorted run when their key falls among its last two
/// entries (an insertion moves at most two, [`Lane::insert`]); the others go to its heap.
/// "No event" (no real key is this large: classes stop at 4).
const NO_KEY: u128 = u128::MAX;

/// Pending events of one group: a sorted run (keys ascending) holding the events scheduled in
/// about the order they fall due — a CBR source's next firing, a transmission ending after the
/// frames already in flight — at O(1) per event, and a binary heap for the others. The smallest
/// key is kept at hand (`min`), so choosing between lanes reads two numbers.
struct Lane<H: Spill = BinaryHeap<Entry>> {
    /// The run is `run[head..]`; the entries before `head` have been taken.
    run: Vec<Entry>,
    head: usize,
    heap: H,
    /// Key of the lane's next event, or `NO_KEY`.
    min: u128,
}

impl<H: Spill> Default for Lane<H> {
    fn default() -> Self {
        Lane { run: Vec::new(), head: 0, heap: H::default(), min: NO_KEY }
    }
}

/// Where a [`Lane`] keeps the events that do not fit its sorted run: any priority queue of entries.
trait Spill: Default {
    fn push(&mut self, e: Entry);
    fn pop(&mut self) -> Option<Entry>;
    /// Key of the smallest entry, or `NO_KEY`.
    fn min_key(&self) -> u128;
    fn len(&self) -> usize;
}

impl Spill for BinaryHeap<Entry> {
    #[inline(always)]
    fn push(&mut self, e: Entry) {
        BinaryHeap::push(self, e)
    }
    #[inline(always)]
    fn pop(&mut self) -> Option<Entry> {
        BinaryHeap::pop(self)
    }
    #[inline(always)]
    fn min_key(&self) -> u128 {
        self.peek().map_or(NO_KEY, |e| e.key)
    }
    fn len(&self) -> usize {
        BinaryHeap::len(self)
    }
}

/// Time slice of a [`Calendar`] bucket: 2^12 ps ≈ 4.1 ns (a k = 8 fat tree at 10 Gb/s schedules
/// about 4.6 link events in one; 2^13: 0.3 % fewer instructions, 2^14: 2 % more).
const SLICE_BITS: u32 = 12;
/// Most buckets a [`Calendar`] has: 4 096 slices ≈ 16.8 µs ahead (a 9 000-B frame at 10 Gb/s and
/// two 1-µs delays after it; its `filled` words are 64). Longer spans are for slower links, whose
/// events are fewer: their overflow heap stays small.
const MAX_SLICES: usize = 4096;
/// Fewest buckets: one `filled` word.
const MIN_SLICES: usize = 64;
/// Buckets of a queue built without knowing its network ([`EventQueue::with_capacity`]): 2.1 µs.
const DEFAULT_SLICES: usize = 512;

/// A calendar queue for events due soon in no particular order (the link events of many ports:
/// each port's arrivals and transmission ends come in order, but the ports' interleave). Events
/// due in the current slice are in `bottom`, sorted (the next one first); those of the next
/// `slices - 1` slices in unsorted buckets, one per slice; later ones in a binary heap. A bucket is
/// sorted once, when its slice comes up: a few compares per event instead of a heap's sift down
/// and up over every pending event (k = 8 fat tree: the binary heap's pops were 24 % of the
/// engine's instructions). The order is the keys' order, exactly as a heap's.
///
/// The span (`slices`) is fitted to the network when it is built ([`Calendar::slices_for`]): it
/// covers the longest interval at which link events are scheduled, so that they all go to the
/// buckets, and no more, so that a sparse calendar has few `filled` words to scan. A fixed span of
/// 512 slices (2.1 µs) sent every transmission end of 9 000-B frames at 10 Gb/s (7.2 µs) to the
/// overflow heap (htsim's k = 8 fat-tree workload: 11 % more instructions), and a fixed 2 048
/// made fan-in-100 0.9 % slower (32 words to scan where 8 do).
struct Calendar {
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
}

impl Default for Calendar {
    fn default() -> Self {
        Calendar::new(DEFAULT_SLICES)
    }
}

impl Calendar {
    fn new(slices: usize) -> Self {
        debug_assert!(slices.is_power_of_two() && (MIN_SLICES..=MAX_SLICES).contains(&slices));
        Calendar {
            bottom: Vec::new(),
            taken: 0,
            buckets: (0..slices).map(|_| Vec::new()).collect(),
            mask: slices as u64 - 1,
            end: slices as u64,
            filled: [0; MAX_SLICES / 64],
            overflow: BinaryHeap::new(),
            cur: 0,
        }
    }
    /// Buckets for link events scheduled at most `reach_ps` ahead: an event `reach_ps` after the
    /// current time falls at most `reach_ps / slice + 1` slices after the current one, so the span
    /// must exceed that; the next power of two, within `MIN_SLICES..=MAX_SLICES`.
    fn slices_for(reach_ps: u64) -> usize {
        let need = (reach_ps >> SLICE_BITS).saturating_add(2).min(MAX_SLICES as u64) as usize;
        need.next_power_of_two().clamp(MIN_SLICES, MAX_SLICES)
    }
    #[inline(always)]
    fn slice(key: u128) -> u64 {
        ((key >> 64) as u64) >> SLICE_BITS
    }
    /// Bucket of slice `s` (below `MAX_SLICES`, as the compiler sees: no bounds check on `filled`).
    #[inline(always)]
    fn bucket(&self, s: u64) -> usize {
        (s & self.mask) as usize % MAX_SLICES
    }
    /// Put `e`, of slice `s`, `cur < s < cur + slices`, in its bucket.
    #[inline(always)]
    fn fill(&mut self, s: u64, e: Entry) {
        let b = self.bucket(s);
        self.buckets[b].push(e);
        self.filled[b / 64] |= 1 << (b % 64);
    }
    /// An event of a slice up to `cur`: into `bottom` at its place (usually an end: after the events
    /// being taken, or before them all).
    #[inline(always)]
    fn insert_bottom(&mut self, e: Entry) {
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
    fn refill(&mut self) {
        debug_assert!(self.bottom.is_empty());
        let next = match (self.next_filled(), self.overflow.peek()) {
            (Some(s), _) => s,
            (None, Some(e)) => Self::slice(e.key),
            (None, None) => return, // no event
        };
        self.cur = next;
        self.end = next + self.mask + 1;
        while self.overflow.peek().is_some_and(|e| Self::slice(e.key) < self.end) {
            let e = self.overflow.pop().expect("peeked");
            self.fill(Self::slice(e.key), e);
        }
        let b = self.bucket(next);
        self.filled[b / 64] &= !(1 << (b % 64));
        // the bucket's storage becomes `bottom`'s, `bottom`'s (empty) the bucket's
        std::mem::swap(&mut self.bottom, &mut self.buckets[b]);
        self.bottom.sort_unstable_by_key(|x| x.key);
    }
    /// The first slice after `cur` whose bucket holds events.
    #[inline]
    fn next_filled(&self) -> Option<u64> {
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
    #[inline(always)]
    fn push(&mut self, e: Entry) {
        let s = Self::slice(e.key);
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

impl<H: Spill> Lane<H> {
    /// The key and the event come apart rather than as one 32-byte `Entry` built on the caller's
    /// stack, and the push is inlined where the event is made, so the entry is written straight
    /// into the run: an out-of-line push reloaded the key the caller had just stored as two 8-byte
    /// words with one 16-byte load (a store-forwarding stall on every scheduled event).
    #[inline(always)]
    fn push(&mut self, key: u128, ev: Event) {
        if key < self.min {
            self.min = key;
        }
        if self.run.len() == self.run.capacity() {
            self.compact();
        }
        // the common case: due after every event of the run (or the run is empty)
        if self.run.last().is_none_or(|l| l.key < key) {
            return self.run.push(Entry { key, ev });
        }
        self.insert(Entry { key, ev })
    }
    /// The run is full: drop the entries already taken if they are at least 1 024 and at least
    /// half of it, rather than let it grow (a run that never empties stays small; each move is
    /// paid for by 1 024 pops). Done here, once per filling, not checked on every pop (fan-in-4:
    /// 1.9 % of instructions).
    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        if self.head >= 1024 && 2 * self.head >= self.run.len() {
            self.run.drain(..self.head);
            self.head = 0;
        }
    }
    /// [`Lane::push`] of an event due before the run's last one: into the run before its last
    /// entry or the one before, else into the heap. Written out rather than as a loop over a
    /// window (k = 8 fat tree: 95 % of the link events miss the run, and the loop's bounds and
    /// 128-bit compares cost ≈ 17 instructions each).
    #[inline(always)]
    fn insert(&mut self, e: Entry) {
        let (n, head) = (self.run.len(), self.head);
        if n - 1 > head && self.run[n - 2].key > e.key {
            if n - 2 > head && self.run[n - 3].key > e.key {
                return self.heap.push(e); // belongs before the last two
            }
            return self.run.insert(n - 2, e);
        }
        self.run.insert(n - 1, e)
    }
    /// Key of the run's first event, or `NO_KEY`.
    #[inline]
    fn run_key(&self) -> u128 {
        self.run.get(self.head).map_or(NO_KEY, |e| e.key)
    }
    /// Remove the lane's next event (the lane is not empty).
    #[inline(always)]
    fn pop(&mut self) -> Entry {
        let e = if self.run_key() == self.min {
            let e = Entry { key: self.run[self.head].key, ev: self.run[self.head].ev };
            self.head += 1;
            if self.head == self.run.len() {
                self.run.clear();
                self.head = 0;
            }
            e
        } else {
            self.heap.pop().expect("a pending event")
        };
        self.min = self.run_key().min(self.heap.min_key());
        e
    }
    fn len(&self) -> usize {
        self.run.len() - self.head + self.heap.len()
    }
}

/// The host wake-ups that wait for a rate limiter or a pause: at most one per host slot (a newer
/// one replaces it: a host asks for a new one only when its pending one is superseded or past), in
/// a tournament tree over the slots. Each internal node holds the smallest key below it and that
/// key's slot, so the next wake-up is at the root, and a change walks one leaf-to-root path of
/// log2(slots) steps, comparing the path's winner (kept in registers) with the sibling's: paced
/// hosts' wake-ups fall due in no particular order (their rates differ), and a binary heap sifting
/// them mispredicted a branch at most levels. A pop leaves its slot's path to be walked later
/// (`stale`): the woken host mostly asks for its next wake-up at once, and one walk then serves both.
struct WaitTree {
    /// `node[cap + s]`: slot `s`'s wake-up (key `NO_KEY`: none); `node[i]`, `1 <= i < cap`: the
    /// smallest below node `i`.
    node: Vec<Node>,
    /// The host of each slot's wake-up.
    hosts: Vec<NodeId>,
    cap: usize,
    /// A slot emptied by a pop whose path is not walked yet.
    stale: Option<usize>,
}

/// A node of the [`WaitTree`]: a key and its slot.
#[derive(Clone, Copy)]
struct Node {
    key: u128,
    slot: u32,
}

impl Default for WaitTree {
    fn default() -> Self {
        let none = Node { key: NO_KEY, slot: 0 };
        WaitTree { node: vec![none; 2], hosts: vec![NodeId(0)], cap: 1, stale: None }
    }
}

impl WaitTree {
    /// Key of the next wake-up, or `NO_KEY` (no pop's path left to walk).
    #[inline(always)]
    fn min(&self) -> u128 {
        debug_assert!(self.stale.is_none());
        self.node[1].key
    }
    /// Room for slot `slot` (the tree doubles; its inner nodes are recomputed).
    #[cold]
    fn grow(&mut self, slot: usize) {
        self.settle();
        let (old, cap) = (self.cap, (slot + 1).next_power_of_two().max(2));
        let mut node: Vec<Node> = (0..2 * cap).map(|i| Node { key: NO_KEY, slot: (i % cap) as u32 }).collect();
        node[cap..cap + old].copy_from_slice(&self.node[old..2 * old]);
        for i in (1..cap).rev() {
            let (l, r) = (node[2 * i], node[2 * i + 1]);
            node[i] = if r.key < l.key { r } else { l };
        }
        self.node = node;
        self.hosts.resize(cap, NodeId(0));
        self.cap = cap;
    }
    /// Slot `slot`'s key changed: the nodes on its path to the root.
    #[inline(always)]
    fn update(&mut self, slot: usize) {
        let mut i = self.cap + slot;
        let mut key = self.node[i].key;
        while i > 1 {
            // `node[i]` holds the current winner. Which side wins is unpredictable, so the winner
            // is loaded from an index computed from the comparison, not chosen by a branch (written
            // as masks or with `select_unpredictable`, the compiler made it a branch again: ≈ 450 k
            // mispredictions on QCN fan-in-100)
            let j = i ^ (self.node[i ^ 1].key < key) as usize;
            let w = self.node[j];
            key = w.key;
            i >>= 1;
            self.node[i] = w;
        }
    }
    /// Walk the path a pop left.
    #[inline(always)]
    fn settle(&mut self) {
        if let Some(s) = self.stale.take() {
            self.update(s);
        }
    }
    #[inline]
    fn set(&mut self, slot: usize, key: u128, host: NodeId) {
        if slot >= self.cap {
            self.grow(slot);
        }
        match self.stale {
            Some(s) if s == slot => self.stale = None,
            _ => self.settle(),
        }
        self.node[self.cap + slot].key = key;
        self.hosts[slot] = host;
        self.update(slot);
    }
    /// Remove the next wake-up (the tree is settled and not empty); its path is walked by the
    /// next [`Self::set`] or [`Self::settle`].
    #[inline]
    fn pop(&mut self) -> (u128, NodeId) {
        debug_assert!(self.stale.is_none());
        let Node { key, slot } = self.node[1];
        let s = slot as usize;
        self.node[self.cap + s].key = NO_KEY;
        self.stale = Some(s);
        (key, self.hosts[s])
    }
    fn len(&self) -> usize {
        self.node[self.cap..].iter().filter(|n| n.key != NO_KEY).count()
    }
}

/// Which part of the [`EventQueue`] holds its next event.
#[derive(Clone, Copy)]
enum Front {
    Near,
    Odd,
    Far,
}

/// Event queue with a (time, class, sequence) total order, in three lanes, each holding events
/// that are mostly scheduled in the order they fall due:
/// * `near`: the link and transmitter events (classes 0 and 1: frames in flight, transmissions
///   ending, port and NIC wake-ups — few pending, due soon);
/// * `far`: traffic sources (class 3: one or more per source, periodic);
/// * `odd`: the rest, each due at its own pace: the timers, feedback and ticks of class 2;
///
/// the next sampling of the time series (class 4; one is pending at a time) in a slot of its own
/// (10 µs ahead at the end of the far lane's run, it sent most source firings due before it into
/// an insertion: fan-in-4 +5 % instructions; in the odd lane it went into QCN's timers' heap),
/// and the host wake-ups that wait for a rate limiter or a pause ([`EventQueue::push_wait`],
/// class 1 too), one per host, in a tournament tree ([`WaitTree`]).
///
/// Each lane is a sorted run plus a priority queue for the rest ([`Lane`]): a binary heap, or for
/// the near lane a [`Calendar`] (many ports' link events interleave: in a fabric most of them miss
/// the run); the next event is the smallest of the four fronts, so the order is exactly that of one heap (whichever lane an event is put in), but most
/// events are neither sifted in nor out of one. The odd lane and the wait tree keep the others'
/// runs in order: a rate limiter's wake-up a pacing gap ahead (≈ 100 µs at 0.1 Gb/s) at the end
/// of the near lane's run, or a QCN/DCQCN timer milliseconds ahead at the end of the far lane's,
/// would send every event scheduled after it, due sooner, into that lane's heap (QCN on
/// fan-in-100: +25 % instructions).
pub struct EventQueue {
    near: Lane<Calendar>,
    odd: Lane,
    far: Lane,
    wait: WaitTree,
    /// Key of the pending [`Event::Sample`], or `NO_KEY`.
    sample: u128,
    /// The smallest of `odd.min`, `wait.min()` and `sample`, so that choosing the next event
    /// compares three numbers, as without the tree and the slot (a run without paced hosts or
    /// sampling pays nothing for them).
    odd_min: u128,
    seq: u64,
    /// The batches ([`Event::Batch`]) by id: key and members; the ids free for reuse.
    batches: Vec<(u128, Vec<Event>)>,
    free_batches: Vec<u32>,
    /// The last event [`EventQueue::push_batched`] pushed, which the next one may join.
    open: OpenRun,
}

/// The last event pushed by [`EventQueue::push_batched`]: its time and class, the queue's `seq`
/// after it (`u64::MAX`: none), and the batch it is in (`NO_BATCH`: it was pushed alone).
#[derive(Clone, Copy)]
struct OpenRun {
    seq: u64,
    t: SimTime,
    class: u64,
    id: u32,
}

const NO_BATCH: u32 = u32::MAX;
const NO_RUN: OpenRun = OpenRun { seq: u64::MAX, t: 0, class: 0, id: NO_BATCH };

impl Default for EventQueue {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl EventQueue {
    /// A queue for `n` or so pending events per lane, its calendar of the default span.
    pub fn with_capacity(n: usize) -> Self {
        Self::for_links(n, (DEFAULT_SLICES as u64 - 2) << SLICE_BITS)
    }
    /// A queue whose link events are scheduled at most `reach_ps` ahead (the longest frame's
    /// serialisation plus the link's delay and the far end's latency, on the slowest link): the
    /// near lane's calendar spans that ([`Calendar::slices_for`]).
    pub fn for_links(n: usize, reach_ps: u64) -> Self {
        let lane = || Lane { run: Vec::with_capacity(n), head: 0, heap: BinaryHeap::with_capacity(n), min: NO_KEY };
        let near = Lane { run: Vec::with_capacity(n), head: 0, heap: Calendar::new(Calendar::slices_for(reach_ps)), min: NO_KEY };
        EventQueue {
            near,
            odd: lane(),
            far: lane(),
            wait: WaitTree::default(),
            sample: NO_KEY,
            odd_min: NO_KEY,
            seq: 0,
            batches: Vec::new(),
            free_batches: Vec::new(),
            open: NO_RUN,
        }
    }
    /// Schedule `ev` at `t`.
    #[inline(always)]
    pub fn push(&mut self, t: SimTime, ev: Event) {
        let key = self.next_key(t, ev.class());
        self.push_key(key, ev)
    }
    /// The key `ev` would get if it were pushed now to fall due at `t`, without pushing it: an event
    /// that may turn out not to be needed (a PAUSE refresh superseded before it falls due) keeps its
    /// place among the events of its instant when it is pushed later with
    /// [`EventQueue::push_key`], as if it had been pushed now.
    #[inline]
    pub fn reserve(&mut self, t: SimTime, ev: &Event) -> u128 {
        self.next_key(t, ev.class())
    }
    /// Push `ev` with a key from [`EventQueue::reserve`] for an event of its class, due after the
    /// event being processed.
    #[inline(always)]
    pub fn push_key(&mut self, key: u128, ev: Event) {
        let class = ev.class();
        debug_assert_eq!((key as u64) >> 60, class, "a key of the event's class");
        // the variant is known where an event is made: the compiler folds this choice away
        match class {
            0 | 1 => self.near.push(key, ev),
            2 => {
                self.odd.push(key, ev);
                self.odd_min = self.odd_min.min(key);
            }
            3 => self.far.push(key, ev),
            _ => {
                // the engine keeps one pending; any more wait in the odd lane
                if self.sample == NO_KEY {
                    self.sample = key;
                } else {
                    self.odd.push(key, ev);
                }
                self.odd_min = self.odd_min.min(key);
            }
        }
    }
    /// Schedule `ev` at `t` as [`EventQueue::push`] does, but if the last event pushed was also
    /// pushed here, at `t` and of `ev`'s class, with nothing pushed since, as the next member of
    /// its batch ([`Event::Batch`]): the events of a burst (a PAUSE frame sent on every port of a
    /// switch at once: their transmissions ending, then their arrivals) are one entry of the
    /// queue. The order is the keys' order still: no event pushed before the first member or
    /// after the last falls between two members, and the taker asks [`EventQueue::has_before`]
    /// between members whether one pushed meanwhile goes first (of the same instant and a lower
    /// class).
    #[inline(always)]
    pub fn push_batched(&mut self, t: SimTime, ev: Event) {
        let class = ev.class();
        let o = self.open;
        if o.seq == self.seq && o.t == t && o.class == class {
            // the open run's batch, made at its second event (the first was pushed alone)
            let id = if o.id == NO_BATCH { self.open_batch() } else { o.id };
            return self.batches[id as usize].1.push(ev);
        }
        let key = self.next_key(t, class);
        self.push_key(key, ev);
        self.open = OpenRun { seq: self.seq, t, class, id: NO_BATCH };
    }
    /// The batch of the open run, with the key its second event would have had (pushed).
    #[cold]
    #[inline(never)]
    fn open_batch(&mut self) -> u32 {
        let (t, class) = (self.open.t, self.open.class);
        let key = self.next_key(t, class);
        let id = self.new_batch(key);
        self.push_key(key, Event::Batch { id, class: class as u8 });
        self.open.id = id;
        self.open.seq = self.seq;
        id
    }
    fn new_batch(&mut self, key: u128) -> u32 {
        let id = self.free_batches.pop().unwrap_or_else(|| {
            self.batches.push((0, Vec::new()));
            (self.batches.len() - 1) as u32
        });
        self.batches[id as usize].0 = key;
        id
    }
    /// The sequence number of the last key handed out: unchanged, nothing was pushed (or reserved)
    /// since it was read ([`Network::run_batch`](crate::net::Network::run_batch): no event pushed
    /// since the last look can be due before the next member).
    #[inline(always)]
    pub fn seq(&self) -> u64 {
        self.seq
    }
    /// An unused batch id and its (empty) storage, for events of one instant and class that the
    /// caller gathers itself, one right after another, and then hands to
    /// [`EventQueue::push_batch`] (a PAUSE frame started on every port of a switch at once).
    #[inline]
    pub fn batch_storage(&mut self) -> (u32, Vec<Event>) {
        let id = self.new_batch(NO_KEY);
        (id, std::mem::take(&mut self.batches[id as usize].1))
    }
    /// Schedule `members`, of one class, due at `t` one right after another, as batch `id` (from
    /// [`EventQueue::batch_storage`]) under the key the first would get if it were pushed now: the
    /// order of as many pushes, one entry of the queue (no entry: none; a lone member is pushed alone).
    #[inline]
    pub fn push_batch(&mut self, id: u32, t: SimTime, members: Vec<Event>) {
        let Some(first) = members.first() else { return self.recycle(id, members) };
        let key = self.next_key(t, first.class());
        self.push_batch_key(id, key, members)
    }
    /// [`EventQueue::push_batch`] under `key` (from [`EventQueue::reserve`]).
    #[inline]
    pub fn push_batch_key(&mut self, id: u32, key: u128, members: Vec<Event>) {
        match members[..] {
            [] => self.recycle(id, members),
            [ev] => {
                self.recycle(id, members);
                self.push_key(key, ev)
            }
            _ => {
                let class = ((key as u64) >> 60) as u8;
                self.batches[id as usize] = (key, members);
                self.push_key(key, Event::Batch { id, class })
            }
        }
    }
    /// The key and the members of batch `id`, just popped (none joins it from now on); hand the
    /// members back with [`EventQueue::recycle`].
    pub fn take_batch(&mut self, id: u32) -> (u128, Vec<Event>) {
        if self.open.id == id {
            self.open = NO_RUN;
        }
        let (key, members) = &mut self.batches[id as usize];
        (*key, std::mem::take(members))
    }
    /// Batch `id`'s members are handled: its id and storage are free again.
    pub fn recycle(&mut self, id: u32, mut members: Vec<Event>) {
        members.clear();
        self.batches[id as usize].1 = members;
        self.free_batches.push(id);
    }
    /// Whether an event due before `key` is pending: pushed while the members of the batch of
    /// key `key` are handled (of its instant, a lower class), it goes before the rest of them.
    #[inline]
    pub fn has_before(&mut self, key: u128) -> bool {
        self.front().1 < key
    }
    /// Push `rest`, the members of a batch not handled yet, again under the batch's key `key`
    /// (popped, so no other event has it; the events pushed since are due after it but those
    /// that made the rest wait).
    pub fn push_rest(&mut self, key: u128, rest: &[Event]) {
        let id = self.new_batch(key);
        self.batches[id as usize].1.extend_from_slice(rest);
        let class = ((key as u64) >> 60) as u8;
        self.push_key(key, Event::Batch { id, class });
    }
    /// Schedule the wake-up at `t` of host `host` (slot `slot`: the host's index among the hosts)
    /// that waits for its rate limiter or a pause; it replaces the host's previous one of this
    /// kind, which the host no longer waits for ([`Self::push`] puts one in the near lane, e.g. the
    /// end of the NIC's transmission).
    #[inline]
    pub fn push_wait(&mut self, t: SimTime, slot: usize, host: NodeId) {
        let key = self.next_key(t, Event::HostWake { host }.class());
        self.wait.set(slot, key, host);
        self.odd_min = self.odd_front();
    }
    /// The smallest key of the odd lane, the wait tree and the sampling slot.
    #[inline(always)]
    fn odd_front(&self) -> u128 {
        self.odd.min.min(self.wait.min()).min(self.sample)
    }
    /// The (time, class, sequence) key of the next event scheduled at `t`.
    #[inline(always)]
    fn next_key(&mut self, t: SimTime, class: u64) -> u128 {
        self.seq += 1;
        let low = (class << 60) | (self.seq & ((1 << 60) - 1));
        ((t as u128) << 64) | low as u128
    }
    /// Walk the path the wait tree's last pop left, if the woken host asked for no new wake-up.
    #[inline(always)]
    fn settle_wait(&mut self) {
        if self.wait.stale.is_some() {
            self.wait.settle();
            self.odd_min = self.odd_front();
        }
    }
    /// Where the next event is ([`Front::Odd`]: the odd lane, the wait tree or the sampling slot)
    /// and its key (`NO_KEY`: the queue is empty).
    #[inline(always)]
    fn front(&mut self) -> (Front, u128) {
        self.settle_wait();
        let (a, b, c) = (self.near.min, self.odd_min, self.far.min);
        if b < a.min(c) {
            (Front::Odd, b)
        } else if a < c {
            (Front::Near, a)
        } else {
            (Front::Far, c)
        }
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        self.pop_before(SimTime::MAX)
    }
    /// The next event if its time is before `limit`.
    #[inline]
    pub fn pop_before(&mut self, limit: SimTime) -> Option<(SimTime, Event)> {
        let (front, key) = self.front();
        if key == NO_KEY || (key >> 64) as u64 >= limit {
            return None;
        }
        let e = match front {
            Front::Near => self.near.pop(),
            Front::Far => self.far.pop(),
            Front::Odd if self.wait.min() < self.odd.min.min(self.sample) => {
                // odd_min is renewed when the tree's path is walked: by the woken host's next
                // push_wait or the next front
                let (key, host) = self.wait.pop();
                Entry { key, ev: Event::HostWake { host } }
            }
            Front::Odd if self.sample < self.odd.min => {
                let key = std::mem::replace(&mut self.sample, NO_KEY);
                self.odd_min = self.odd_front();
                Entry { key, ev: Event::Sample }
            }
            Front::Odd => {
                let e = self.odd.pop();
                self.odd_min = self.odd_front();
                e
            }
        };
        Some(((e.key >> 64) as u64, e.ev))
    }
    /// Pending events (a batch's members each).
    pub fn len(&self) -> usize {
        let batched: usize = self.batches.iter().map(|b| b.1.len().saturating_sub(1)).sum();
        self.near.len() + self.odd.len() + self.far.len() + self.wait.len() + (self.sample != NO_KEY) as usize + batched
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_class_then_insertion() {
        let mut q = EventQueue::default();
        q.push(10, Event::Sample);
        q.push(10, Event::SourceFire { source: 1 });
        q.push(10, Event::HostWake { host: NodeId(1) });
        q.push(5, Event::Sample);
        q.push(10, Event::Arrive { port: PortId(0), frame: FrameId(0) });
        q.push(10, Event::HostWake { host: NodeId(2) });
        let got: Vec<(u64, Event)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            got,
            vec![
                (5, Event::Sample),
                (10, Event::Arrive { port: PortId(0), frame: FrameId(0) }),
                (10, Event::HostWake { host: NodeId(1) }),
                (10, Event::HostWake { host: NodeId(2) }),
                (10, Event::SourceFire { source: 1 }),
                (10, Event::Sample),
            ]
        );
    }

    #[test]
    fn equal_keys_are_fifo_for_many_events() {
        let mut q = EventQueue::default();
        for i in 0..1000u32 {
            q.push(7, Event::SourceFire { source: i });
        }
        for i in 0..1000u32 {
            assert_eq!(q.pop(), Some((7, Event::SourceFire { source: i })));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn a_host_wait_replaces_its_previous_one_and_the_tree_pops_in_key_order() {
        // reference: each slot's latest wake-up; the queue must pop the smallest (time, seq)
        let mut rng = crate::rng::Stream::new(5, 0, 0);
        let mut q = EventQueue::default();
        let mut latest: Vec<Option<(u64, u64)>> = vec![None; 37]; // (time, seq) per slot
        let (mut seq, mut now) = (0u64, 0u64);
        let mut woken: Option<usize> = None;
        for _ in 0..50_000 {
            // the woken host mostly asks again at once (the pop's path is walked once), else any slot
            let slot = match woken.take() {
                Some(s) if rng.below(4) > 0 => s,
                _ => rng.below(37) as usize,
            };
            if rng.below(3) > 0 {
                let t = now + rng.below(1_000);
                seq += 1;
                q.push_wait(t, slot, NodeId(1000 + slot as u32));
                latest[slot] = Some((t, seq));
            } else {
                let want = latest.iter().enumerate().filter_map(|(s, k)| k.map(|k| (k, s))).min();
                match (q.pop(), want) {
                    (Some((t, ev)), Some(((wt, _), s))) => {
                        assert_eq!((t, ev), (wt, Event::HostWake { host: NodeId(1000 + s as u32) }));
                        latest[s] = None;
                        now = t;
                        woken = Some(s);
                    }
                    (None, None) => {}
                    (got, want) => panic!("popped {got:?}, wanted {want:?}"),
                }
            }
            assert_eq!(q.len(), latest.iter().flatten().count());
        }
    }

    #[test]
    fn the_calendar_pops_in_key_order_across_slices_buckets_and_overflow() {
        // every span a network may get, shortest, default and longest
        for (slices, steps) in [(MIN_SLICES, 10_000), (DEFAULT_SLICES, 60_000), (MAX_SLICES, 10_000)] {
            assert_eq!(Calendar::slices_for((slices as u64 - 2) << SLICE_BITS), slices);
            calendar_pops_in_key_order(slices, steps);
        }
        assert_eq!(Calendar::slices_for(u64::MAX), MAX_SLICES);
    }

    fn calendar_pops_in_key_order(slices: usize, steps: u32) {
        // link events due anywhere from the current slice to well past the buckets' span, pushed
        // and popped in turn, a few in bursts due at one instant: the order of one sorted list, ties
        // by insertion
        let mut rng = crate::rng::Stream::new(23, 0, 0);
        let mut q = EventQueue::for_links(0, (slices as u64 - 2) << SLICE_BITS);
        let mut reference: Vec<(u64, u64, Event)> = Vec::new(); // (time, seq, event)
        let (mut seq, mut now) = (0u64, 0u64);
        let span = (slices as u64) << SLICE_BITS;
        for i in 0..steps {
            if rng.below(5) < 3 {
                let ahead = match rng.below(4) {
                    0 => rng.below(1 << SLICE_BITS),
                    1 => rng.below(span),
                    2 => span + rng.below(4 * span),
                    _ => 0,
                };
                // now and then a burst due at one instant (a PAUSE frame on each of 100 ports)
                let burst = if rng.below(100) == 0 { 100 } else { 1 };
                for b in 0..burst {
                    let ev =
                        if (i + b) % 2 == 0 { Event::Arrive { port: PortId(i), frame: FrameId(b) } } else { Event::PortTxDone { port: PortId(b) } };
                    seq += 1;
                    q.push(now + ahead, ev);
                    reference.push((now + ahead, ev.class() << 60 | seq, ev));
                }
            } else if let Some((t, ev)) = q.pop() {
                let k = (0..reference.len()).min_by_key(|&k| (reference[k].0, reference[k].1)).expect("same length");
                let r = reference.swap_remove(k);
                assert_eq!((t, ev), (r.0, r.2));
                now = t;
            }
            assert_eq!(q.len(), reference.len());
        }
    }

    #[test]
    fn a_run_that_never_empties_stays_small() {
        // a CBR source's lane: always one or two firings pending, never empty, for 200 000 events;
        // the run drops its taken entries when it fills, so its storage does not grow with the run
        let mut q = EventQueue::default();
        q.push(0, Event::SourceFire { source: 0 });
        for i in 1..200_000u64 {
            q.push(10 * i, Event::SourceFire { source: 0 });
            let (t, _) = q.pop().expect("pending");
            assert_eq!(t, 10 * (i - 1));
        }
        assert_eq!(q.len(), 1);
        assert!(q.far.run.capacity() <= 4096, "run capacity {}", q.far.run.capacity());
    }

    #[test]
    fn batched_pushes_are_taken_in_the_order_of_single_pushes() {
        // bursts of same-instant events pushed with push_batched (some one right after another:
        // batches), others pushed alone in between, and events pushed while a batch's members are
        // handled, among them some of the same instant and a lower class (which must go before the
        // rest of the batch, as Network::run_batch does it): the order of one sorted list, ties by
        // insertion
        let mut rng = crate::rng::Stream::new(31, 0, 0);
        let mut q = EventQueue::default();
        let mut reference: Vec<(u64, u64, u64, Event)> = Vec::new(); // (time, class, seq, event)
        let (mut seq, mut now, mut id) = (0u64, 0u64, 0u32);
        // the batch being handled: key, members, next member
        let mut taking: Option<(u128, Vec<Event>, usize)> = None;
        let mut batches_seen = 0;
        for _ in 0..40_000 {
            if rng.below(2) == 0 {
                // a burst of 1-4 pushes at one instant (now and then the current one) and class
                let t = now + if rng.below(4) == 0 { 0 } else { rng.below(3) * 1_000 };
                let class = rng.below(2);
                let batched = rng.below(3) > 0;
                for _ in 0..1 + rng.below(4) {
                    id += 1;
                    let ev = if class == 0 { Event::Arrive { port: PortId(id), frame: FrameId(id) } } else { Event::PortTxDone { port: PortId(id) } };
                    seq += 1;
                    reference.push((t, class, seq, ev));
                    if batched {
                        q.push_batched(t, ev)
                    } else {
                        q.push(t, ev)
                    }
                }
                if rng.below(5) == 0 {
                    // something else in between (another class)
                    id += 1;
                    seq += 1;
                    reference.push((t, 3, seq, Event::SourceFire { source: id }));
                    q.push(t, Event::SourceFire { source: id });
                }
                continue;
            }
            // the next event: the next member of the batch being handled (unless an event pushed
            // meanwhile goes first) or the queue's next
            let got = match taking.take() {
                Some((key, members, i)) if i < members.len() && ((key as u64) >> 60 == 0 || !q.has_before(key)) => {
                    let ev = members[i];
                    taking = Some((key, members, i + 1));
                    Some(((key >> 64) as u64, ev))
                }
                Some((key, members, i)) => {
                    if i < members.len() {
                        q.push_rest(key, &members[i..]);
                    }
                    taking = None;
                    None
                }
                None => match q.pop() {
                    Some((t, Event::Batch { id, .. })) => {
                        batches_seen += 1;
                        let (key, members) = q.take_batch(id);
                        assert_eq!((key >> 64) as u64, t);
                        q.recycle(id, Vec::new());
                        taking = Some((key, members, 0));
                        now = t;
                        None
                    }
                    other => other,
                },
            };
            if let Some((t, ev)) = got {
                let k = (0..reference.len()).min_by_key(|&k| (reference[k].0, reference[k].1, reference[k].2)).expect("pending");
                let r = reference.swap_remove(k);
                assert_eq!((t, ev), (r.0, r.3));
                now = t;
            }
        }
        assert!(batches_seen > 1_000, "{batches_seen} batches");
    }

    #[test]
    fn the_lanes_pop_in_the_order_of_one_heap() {
        // random pushes of every class interleaved with pops: the same order as a sorted list
        let mut rng = crate::rng::Stream::new(11, 0, 0);
        let mut q = EventQueue::default();
        let mut reference: Vec<(u64, u64, u64, Event)> = Vec::new(); // (time, class, seq, event)
        let (mut seq, mut now) = (0u64, 0u64);
        for i in 0..20_000u32 {
            if rng.below(3) > 0 {
                // mostly in about the order they fall due (the runs), some anywhere (the heaps)
                let t = if rng.below(4) == 0 { now + rng.below(50) } else { now + 40 + i as u64 / 4 - rng.below(6).min(i as u64 / 4) };
                let ev = match rng.below(6) {
                    5 => Event::RpTimer { host: NodeId(i), token: i as u64 },
                    0 => Event::Arrive { port: PortId(i), frame: FrameId(i) },
                    1 => Event::PortTxDone { port: PortId(i) },
                    4 => Event::HostWake { host: NodeId(i) },
                    2 => Event::SourceFire { source: i },
                    _ => Event::Sample,
                };
                seq += 1;
                match ev {
                    // the wait tree: one per host (this test's hosts are all distinct)
                    Event::HostWake { host } if i % 2 == 0 => q.push_wait(t, i as usize, host),
                    _ => q.push(t, ev),
                }
                reference.push((t, ev.class(), seq, ev));
            } else if let Some((t, ev)) = q.pop_before(now + 25) {
                reference.sort_by_key(|r| std::cmp::Reverse((r.0, r.1, r.2)));
                let r = reference.pop().expect("same length");
                assert_eq!((t, ev), (r.0, r.3));
                now = t;
            }
        }
        assert_eq!(q.len(), reference.len());
        reference.sort_by_key(|r| std::cmp::Reverse((r.0, r.1, r.2)));
        while let Some((t, ev)) = q.pop() {
            let r = reference.pop().expect("same length");
            assert_eq!((t, ev), (r.0, r.3));
        }
        assert!(reference.is_empty());
    }
}
