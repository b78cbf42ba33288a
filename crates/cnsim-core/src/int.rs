//! In-band network telemetry (INT) for schemes that ask for it (HPCC).
//!
//! Every switch egress appends one [`IntHop`] — queue length, bytes transmitted so far, time stamp
//! and line rate — to each data frame when the frame starts transmission (HPCC, Li et al.,
//! SIGCOMM 2019, §3.2; the ns-3 reference stamps in `SwitchNode::SwitchNotifyDequeue`,
//! alibaba-edu/High-Precision-Congestion-Control `simulation/src/point-to-point/model/switch-node.cc`).
//!
//! The stacks do not live in [`crate::frame::Frame`]: they sit in an [`IntTable`] parallel to the
//! frame arena, indexed by the frame's slot ([`FrameId`]), and the table exists only when the
//! scheme says it wants INT ([`crate::cm::Scheme::wants_int`]). Schemes without INT pay one
//! `Option` test per transmission and nothing else. A data frame's stack is cleared when the host
//! creates the frame; a reflector that echoes the stack in a control frame
//! ([`crate::cm::HostCtx::send_int`]) has it copied into the control frame's slot, where the
//! source's reaction point reads it ([`crate::cm::HostCtx::int`]).
//!
//! **INT on the wire** ([`IntWire`], the scheme's choice): the source NIC adds `source_bytes` to every
//! data frame (HPCC: the 2-byte hop count) and every switch `hop_bytes` (HPCC: 8 per hop — the
//! paper's 42 B on a 5-switch path), so the frame occupies the link and the buffer with its
//! telemetry. A switch grows the frame as it admits it (the hop is written at dequeue in the
//! reference: the buffer holds it 8 B earlier here). The bytes are stripped when the frame leaves its
//! last switch toward the destination host; the data bytes the outputs count (delivered, dropped,
//! in flight, throughput) never include them: `summary.int.bytes_added` does.

use crate::frame::FrameId;
use crate::ids::PortId;
use crate::time::SimTime;

/// Most hops a stack records; further switches on a longer path are not recorded (a k-ary fat
/// tree has at most 5 switches on a path, the reference code's `IntHeader::maxHop`).
pub const MAX_HOPS: usize = 8;

/// One switch egress's record, taken when a data frame starts transmission.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntHop {
    /// Egress queue left behind by the frame, bytes (the queue without the departing frame).
    pub qlen: u64,
    /// Bytes the port put on the wire before this frame (frame sizes plus wire overhead).
    pub tx_bytes: u64,
    /// Time stamp, ps.
    pub ts: SimTime,
    /// Line rate of the port, bit/s.
    pub rate_bps: u64,
}

/// The INT stack of one frame: the hops in path order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntStack {
    pub n: u8,
    pub hops: [IntHop; MAX_HOPS],
}

impl IntStack {
    /// The recorded hops.
    pub fn hops(&self) -> &[IntHop] {
        &self.hops[..self.n as usize]
    }
    /// Append a hop (ignored beyond [`MAX_HOPS`]).
    pub fn push(&mut self, hop: IntHop) {
        if (self.n as usize) < MAX_HOPS {
            self.hops[self.n as usize] = hop;
            self.n += 1;
        }
    }
}

/// INT header bytes a data frame carries on the wire: added by its source NIC and by each switch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntWire {
    pub source_bytes: u32,
    pub hop_bytes: u32,
}

/// Per-frame-slot INT stacks plus the per-port transmitted-byte counters the hops report.
#[derive(Debug, Default)]
pub struct IntTable {
    stacks: Vec<IntStack>,
    /// INT bytes on the wire of the data frame in each slot ([`IntWire`]).
    extra: Vec<u32>,
    pub(crate) wire: IntWire,
    /// Bytes transmitted by each port (all frames, with wire overhead), indexed by port.
    port_tx_bytes: Vec<u64>,
    /// The frame whose stack hooks see through `HostCtx::int` (the data frame being delivered to
    /// a reflector, or the control frame being fed back to an RP); `None` between hooks.
    pub(crate) current: Option<FrameId>,
}

impl IntTable {
    pub fn new(ports: usize, wire: IntWire) -> Self {
        IntTable { stacks: Vec::new(), extra: Vec::new(), wire, port_tx_bytes: vec![0; ports], current: None }
    }

    /// The INT bytes frames carry on the wire.
    pub fn wire(&self) -> IntWire {
        self.wire
    }

    pub(crate) fn extra_slot(&mut self, fr: FrameId) -> &mut u32 {
        let i = fr.0 as usize;
        if i >= self.extra.len() {
            self.extra.resize(i + 1, 0);
        }
        &mut self.extra[i]
    }

    /// INT bytes data frame `fr` carries now.
    pub fn extra(&self, fr: FrameId) -> u32 {
        self.extra.get(fr.0 as usize).copied().unwrap_or(0)
    }

    fn slot(&mut self, fr: FrameId) -> &mut IntStack {
        let i = fr.0 as usize;
        if i >= self.stacks.len() {
            self.stacks.resize(i + 1, IntStack::default());
        }
        &mut self.stacks[i]
    }

    /// A new frame in slot `fr`: empty stack.
    #[inline]
    pub fn reset(&mut self, fr: FrameId) {
        self.slot(fr).n = 0;
    }

    /// Port `port` starts transmitting a frame of `wire_bytes`: returns the bytes it sent before.
    #[inline]
    pub fn count_tx(&mut self, port: PortId, wire_bytes: u64) -> u64 {
        let tx = &mut self.port_tx_bytes[port.idx()];
        *tx += wire_bytes;
        *tx - wire_bytes
    }

    /// Append `hop` to the stack of frame `fr` (a data frame starting transmission at a switch).
    #[inline]
    pub fn push(&mut self, fr: FrameId, hop: IntHop) {
        self.slot(fr).push(hop);
    }

    /// The stack of frame `fr` (empty if it was never stamped).
    pub fn get(&self, fr: FrameId) -> &IntStack {
        const EMPTY: IntStack = IntStack { n: 0, hops: [IntHop { qlen: 0, tx_bytes: 0, ts: 0, rate_bps: 0 }; MAX_HOPS] };
        self.stacks.get(fr.0 as usize).unwrap_or(&EMPTY)
    }

    /// The stack of the frame hooks currently see.
    pub fn current(&self) -> Option<&IntStack> {
        self.current.map(|fr| self.get(fr))
    }

    /// Copy the current frame's stack into frame `to` (a reflector's echo).
    pub fn echo_into(&mut self, to: FrameId) {
        let s = self.current().copied().unwrap_or_default();
        *self.slot(to) = s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_data_frames_counts_every_frame_and_echoes() {
        let mut t = IntTable::new(4, IntWire::default());
        let (a, b, c) = (FrameId(0), FrameId(3), FrameId(5));
        t.reset(a);
        t.reset(b);
        // port 2 sends a (data, 1520 wire bytes), then a control frame, then b; b then leaves port 1
        let send = |t: &mut IntTable, fr: FrameId, data: bool, port: u32, ts: u64, qlen: u64, wire: u64, rate_bps: u64| {
            let tx_bytes = t.count_tx(PortId(port), wire);
            if data {
                t.push(fr, IntHop { qlen, tx_bytes, ts, rate_bps });
            }
        };
        send(&mut t, a, true, 2, 100, 3_000, 1_520, 10_000_000_000);
        send(&mut t, c, false, 2, 200, 1_500, 84, 10_000_000_000);
        send(&mut t, b, true, 2, 300, 0, 1_520, 10_000_000_000);
        send(&mut t, b, true, 1, 400, 64, 1_520, 40_000_000_000);
        assert_eq!(t.get(a).hops(), &[IntHop { qlen: 3_000, tx_bytes: 0, ts: 100, rate_bps: 10_000_000_000 }]);
        assert_eq!(t.get(c).n, 0, "control frames are not stamped");
        assert_eq!(t.get(b).n, 2);
        assert_eq!(t.get(b).hops()[0].tx_bytes, 1_604, "bytes of every frame the port sent before");
        assert_eq!(t.get(b).hops()[1], IntHop { qlen: 64, tx_bytes: 0, ts: 400, rate_bps: 40_000_000_000 });
        // a reused slot starts empty; the echo copies the current frame's stack
        t.current = Some(b);
        t.echo_into(FrameId(7));
        assert_eq!(t.get(FrameId(7)), t.get(b));
        t.reset(b);
        assert_eq!(t.get(b).n, 0);
        // more hops than MAX_HOPS are not recorded
        for k in 0..MAX_HOPS as u64 + 2 {
            send(&mut t, a, true, 0, k, 0, 1, 1);
        }
        assert_eq!(t.get(a).n as usize, MAX_HOPS);
    }
}
