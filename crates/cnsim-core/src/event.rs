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

/// Binary-heap event queue with a (time, class, sequence) total order.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(n), seq: 0 }
    }
    /// Schedule `ev` at `t`.
    #[inline]
    pub fn push(&mut self, t: SimTime, ev: Event) {
        self.seq += 1;
        let low = (ev.class() << 60) | (self.seq & ((1 << 60) - 1));
        self.heap.push(Entry { key: ((t as u128) << 64) | low as u128, ev });
    }
    /// Time of the next event.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| (e.key >> 64) as u64)
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        self.heap.pop().map(|e| ((e.key >> 64) as u64, e.ev))
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
}
