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

mod calendar;
mod wait_tree;
use calendar::Calendar;
use wait_tree::WaitTree;

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
    /// An adaptive lane's events that missed the run since its last judgement, and the sequence
    /// number then ([`Lane::judge_run`]); `bypass`: the run is given up, every event goes to `heap`.
    missed: u32,
    window_seq: u64,
    bypass: bool,
}

impl<H: Spill> Default for Lane<H> {
    fn default() -> Self {
        Lane::with(Vec::new(), H::default())
    }
}

/// Misses of an adaptive lane's run between two judgements ([`Lane::judge_run`]).
const RUN_WINDOW: u32 = 1 << 14;

/// Where a [`Lane`] keeps the events that do not fit its sorted run: any priority queue of entries.
trait Spill: Default {
    /// Whether the lane gives up its sorted run when many of its events miss it
    /// ([`Lane::judge_run`]).
    const ADAPTIVE: bool = false;
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

impl<H: Spill> Lane<H> {
    /// A lane of `run` (empty, its capacity reserved) and `heap`.
    fn with(run: Vec<Entry>, heap: H) -> Self {
        Lane { run, head: 0, heap, min: NO_KEY, missed: 0, window_seq: 0, bypass: false }
    }
    /// The key and the event come apart rather than as one 32-byte `Entry` built on the caller's
    /// stack, and the push is inlined where the event is made, so the entry is written straight
    /// into the run: an out-of-line push reloaded the key the caller had just stored as two 8-byte
    /// words with one 16-byte load (a store-forwarding stall on every scheduled event).
    #[inline(always)]
    fn push(&mut self, key: u128, ev: Event) {
        if key < self.min {
            self.min = key;
        }
        if H::ADAPTIVE && self.bypass {
            return self.heap.push(Entry { key, ev });
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
                if H::ADAPTIVE {
                    self.missed_run(e.key);
                }
                return self.heap.push(e); // belongs before the last two
            }
            return self.run.insert(n - 2, e);
        }
        self.run.insert(n - 1, e)
    }
    /// An event of key `key` missed the run (an adaptive lane; counted here, judged every
    /// [`RUN_WINDOW`] misses by [`Lane::judge_run`]).
    #[inline(always)]
    fn missed_run(&mut self, key: u128) {
        self.missed += 1;
        if self.missed == RUN_WINDOW {
            self.judge_run(key);
        }
    }
    /// The run of an adaptive lane is given up if the last [`RUN_WINDOW`] misses (the last of key
    /// `key`) were more than two fifths of the events scheduled meanwhile, in all lanes (the keys'
    /// sequence numbers). A run takes an event in O(1) when it falls due after the run's last two;
    /// a miss pays three compares before the calendar's own push, and every pop a choice between
    /// run and calendar. Where one egress port's link events come in order (a fan-in: ≥ 97 % hit)
    /// the run is the cheaper way; where many ports' interleave it is not (misses / events
    /// scheduled, and the run given up from the start against kept, in instructions: k = 8 fat tree
    /// 0.65, −6.4 %; k = 16 0.44, −1.6 %; seed 004's multistage 0.56, −5 %; seed 003's one hop
    /// with a stopped hotspot 0.32, +3 %; fan-in-100 MD1 +56 %). Once given up, for the rest of the
    /// run: its events go to the calendar. The order of events is the keys' either way.
    #[cold]
    #[inline(never)]
    fn judge_run(&mut self, key: u128) {
        let seq = key as u64 & ((1 << 60) - 1);
        let scheduled = seq.saturating_sub(std::mem::replace(&mut self.window_seq, seq));
        self.missed = 0;
        if 5 * RUN_WINDOW as u64 > 2 * scheduled {
            self.bypass = true;
            for e in std::mem::take(&mut self.run).drain(self.head..) {
                self.heap.push(e);
            }
            self.head = 0;
        }
    }
    /// Key of the run's first event, or `NO_KEY`.
    #[inline]
    fn run_key(&self) -> u128 {
        self.run.get(self.head).map_or(NO_KEY, |e| e.key)
    }
    /// Remove the lane's next event (the lane is not empty).
    #[inline(always)]
    fn pop(&mut self) -> Entry {
        if H::ADAPTIVE && self.bypass {
            let e = self.heap.pop().expect("a pending event");
            self.min = self.heap.min_key();
            return e;
        }
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
    /// A queue for `n` or so pending events per lane, its calendar of the default slice and span.
    pub fn with_capacity(n: usize) -> Self {
        Self::with_calendar(n, Calendar::default())
    }
    /// A queue whose link events are scheduled at most `reach_ps` ahead (the longest frame's
    /// serialisation plus the link's delay and the far end's latency, on the slowest link) and
    /// fall due `spacing_ps` apart on average when every transmitter is busy: the near lane's
    /// calendar has slices of a few such events ([`Calendar::shift_for`]) and spans `reach_ps`
    /// ([`Calendar::slices_for`]).
    pub fn for_links(n: usize, reach_ps: u64, spacing_ps: u64) -> Self {
        let shift = Calendar::shift_for(spacing_ps);
        Self::with_calendar(n, Calendar::new(Calendar::slices_for(reach_ps, shift), shift))
    }
    fn with_calendar(n: usize, calendar: Calendar) -> Self {
        let lane = || Lane::with(Vec::with_capacity(n), BinaryHeap::with_capacity(n));
        let near = Lane::with(Vec::with_capacity(n), calendar);
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
mod tests;
