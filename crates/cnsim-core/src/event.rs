//! The closed set of events and the deterministic event queue.
//!
//! Events are totally ordered by (time, class, insertion sequence) — spec §11: within one instant
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
    /// A TCP timer of a flow: `which` = 0 retransmission timeout (sender), 1 delayed ACK (receiver).
    TcpTimer { flow: FlowId, which: u8 },
    /// A congestion point's periodic tick.
    CpTick { port: PortId },
    /// Re-send XOFF if still asserted (generation counter `gen`).
    PauseRefresh { port: PortId, gen: u32 },
    /// Hotspot schedule step `step` of hotspot `hotspot`.
    ServiceRate { hotspot: u32, step: u32 },
    /// Record the sampled time series.
    Sample,
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
            | Event::CpTick { .. }
            | Event::PauseRefresh { .. }
            | Event::ServiceRate { .. } => 2,
            Event::SourceFire { .. } => 3,
            Event::Sample => 4,
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

/// Event queue with a (time, class, sequence) total order, kept in two binary heaps: the link and
/// transmitter events (classes 0 and 1: frames in flight, transmissions ending, NIC and port
/// wake-ups — few pending, due soon) and everything else (traffic sources, timers, sampling — one
/// or more per source or flow, due later). The next event is the smaller of the two tops, so the
/// order is exactly that of one heap; but the frequent short-lived events sift through a heap of a
/// few entries instead of one holding every source's next firing.
#[derive(Default)]
pub struct EventQueue {
    near: BinaryHeap<Entry>,
    far: BinaryHeap<Entry>,
    seq: u64,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue { near: BinaryHeap::with_capacity(n), far: BinaryHeap::with_capacity(n), seq: 0 }
    }
    /// Schedule `ev` at `t`.
    #[inline]
    pub fn push(&mut self, t: SimTime, ev: Event) {
        self.seq += 1;
        let class = ev.class();
        let low = (class << 60) | (self.seq & ((1 << 60) - 1));
        let e = Entry { key: ((t as u128) << 64) | low as u128, ev };
        if class <= 1 {
            self.near.push(e)
        } else {
            self.far.push(e)
        }
    }
    /// Key of the next event.
    #[inline]
    fn next_key(&self) -> Option<u128> {
        match (self.near.peek(), self.far.peek()) {
            (Some(a), Some(b)) => Some(a.key.min(b.key)),
            (Some(a), None) => Some(a.key),
            (None, b) => b.map(|e| e.key),
        }
    }
    /// Time of the next event.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        self.next_key().map(|k| (k >> 64) as u64)
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let near_first = match (self.near.peek(), self.far.peek()) {
            (Some(a), Some(b)) => a.key < b.key,
            (a, _) => a.is_some(),
        };
        let e = if near_first { self.near.pop() } else { self.far.pop() };
        e.map(|e| ((e.key >> 64) as u64, e.ev))
    }
    /// The next event if its time is before `limit`.
    #[inline]
    pub fn pop_before(&mut self, limit: SimTime) -> Option<(SimTime, Event)> {
        let (near_first, key) = match (self.near.peek(), self.far.peek()) {
            (Some(a), Some(b)) => (a.key < b.key, a.key.min(b.key)),
            (Some(a), None) => (true, a.key),
            (None, Some(b)) => (false, b.key),
            (None, None) => return None,
        };
        if (key >> 64) as u64 >= limit {
            return None;
        }
        let e = if near_first { self.near.pop() } else { self.far.pop() };
        e.map(|e| ((e.key >> 64) as u64, e.ev))
    }
    pub fn len(&self) -> usize {
        self.near.len() + self.far.len()
    }
    pub fn is_empty(&self) -> bool {
        self.near.is_empty() && self.far.is_empty()
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
    fn two_heaps_pop_in_the_order_of_one() {
        // random pushes of every class interleaved with pops: the same order as a sorted list
        let mut rng = crate::rng::Stream::new(11, 0, 0);
        let mut q = EventQueue::default();
        let mut reference: Vec<(u64, u64, u64, Event)> = Vec::new(); // (time, class, seq, event)
        let (mut seq, mut now) = (0u64, 0u64);
        for i in 0..20_000u32 {
            if rng.below(3) > 0 {
                let t = now + rng.below(50);
                let ev = match rng.below(4) {
                    0 => Event::Arrive { port: PortId(i), frame: FrameId(i) },
                    1 => Event::PortTxDone { port: PortId(i) },
                    2 => Event::SourceFire { source: i },
                    _ => Event::Sample,
                };
                seq += 1;
                q.push(t, ev);
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
