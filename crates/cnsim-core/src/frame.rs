//! Frames: fixed-size records in an arena, addressed by [`FrameId`]; no allocation per frame.

use crate::ids::{FlowId, NodeId, PortId};
use crate::net::NONE_U32;
use crate::time::SimTime;
use crate::transport::tcp::SackBlocks;

/// What a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    Data,
    /// Congestion-management control frame (BCN, CNM, FECN reply, BECN, CNP...).
    Control,
    /// A TCP acknowledgement (queued like any frame; not data, not congestion management).
    Ack,
}

/// Tag bits carried by data frames.
pub mod tag {
    /// BCN rate-limiter tag: `Tag::cpid` holds the owning CP.
    pub const RL: u8 = 1;
    /// FECN rate-discovery tag: `Tag::rate` holds the path minimum (-1 = not stamped yet).
    pub const RD: u8 = 2;
    /// ECN congestion experienced (DCQCN, DCTCP).
    pub const CE: u8 = 4;
    /// ECN-capable transport (DCTCP data): switches with an ECN threshold may mark it CE.
    pub const ECT: u8 = 8;
    /// TCP ECN-Echo, on ACK frames.
    pub const ECE: u8 = 16;
}

/// Congestion-management fields carried forward by a data frame.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tag {
    pub flags: u8,
    pub cpid: u32,
    pub rate: f64,
}

/// The payload of a control frame. The meaning of `kind` and of the fields is the scheme's own
/// (its `message_types()` names the kinds); the engine only routes and counts it.
#[derive(Debug, Clone, Copy, Default)]
pub struct CmMsg {
    /// Index into the scheme's message-type names.
    pub kind: u8,
    /// Flow the message is about (the sampled frame's flow), or `FlowId::NONE`.
    pub flow: FlowId,
    /// Originating congestion point id (0 = not from a CP).
    pub cpid: u32,
    /// Scheme-defined values (e.g. BCN: qoff, qdelta, fb; FECN: rate).
    pub v: [f64; 3],
    /// Generation of `flow`'s send queue when the message was made (set by the engine): feedback
    /// about a transfer's queue that has closed since, its slot perhaps reused, is stale.
    pub gen: u32,
}

/// One frame in flight or queued: a 64-byte record (a control frame's [`CmMsg`] is kept beside
/// it in the pool, [`FramePool::msg`]), aligned to a cache line so that it lies on one.
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
pub struct Frame {
    pub kind: FrameKind,
    /// Size in bytes (occupies buffer and link).
    pub size: u32,
    pub src: NodeId,
    pub dst: NodeId,
    /// Data frames: the flow. Control frames: `FlowId::NONE`.
    pub flow: FlowId,
    /// Transfer (FCT unit) the data frame belongs to, or `u32::MAX`.
    pub transfer: u32,
    /// Input port at the switch currently holding the frame (BUF-IN accounting).
    pub ingress: PortId,
    /// Time the frame started transmission at its source.
    pub born: SimTime,
    pub tag: Tag,
    /// 802.1p priority (0–7) of a data, ACK or control frame (its flow's).
    pub prio: u8,
    /// TCP: sequence number of a data segment's first payload byte, or an ACK's cumulative
    /// acknowledgement. 0 otherwise.
    pub seq: u64,
}

// the record stays one cache line (the control message lives in the pool)
const _: () = assert!(std::mem::size_of::<Frame>() == 64);

impl Frame {
    /// A data frame of declared flow `flow` outside any transfer (no tag, no sequence number), born
    /// `now`: what a host's lean starts send (`host_start_plain`, the paced send).
    #[inline(always)]
    pub fn lone_data(src: NodeId, dst: NodeId, flow: FlowId, prio: u8, size: u32, now: SimTime) -> Frame {
        Frame { kind: FrameKind::Data, size, src, dst, flow, transfer: NONE_U32, ingress: PortId::NONE, born: now, tag: Tag::default(), prio, seq: 0 }
    }
    pub fn is_data(&self) -> bool {
        self.kind == FrameKind::Data
    }
}

/// Typed index into the frame arena, or a MAC-control frame, which has no slot.
///
/// An 802.3x PAUSE or an 802.1Qbb PFC frame is never queued, never sampled and carries only its
/// pause time and class-enable vector: its id holds them ([`FrameId::mac_control`]), so that a
/// switch's global XOFF/XON, which sends one on each of its ports at once, writes and reads no
/// frame record (fan-in-100 under global PAUSE: a cache miss per frame each way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameId(pub u32);

impl FrameId {
    /// The bit of a MAC-control frame's id (no arena slot has it).
    const MAC_CONTROL: u32 = 1 << 31;

    /// A MAC-control frame: pause time `quanta` (0 = XON) of an 802.3x PAUSE (`cev` = 0), or of
    /// each class a PFC frame enables (`cev` bit p: priority p).
    #[inline(always)]
    pub fn mac_control(quanta: u16, cev: u8) -> FrameId {
        FrameId(Self::MAC_CONTROL | (cev as u32) << 16 | quanta as u32)
    }
    /// Whether this is a MAC-control frame ([`FrameId::mac_control`]), not a slot of the arena.
    #[inline(always)]
    pub fn is_mac_control(self) -> bool {
        self.0 & Self::MAC_CONTROL != 0
    }
    /// A MAC-control frame's pause time, quanta (0 = XON).
    #[inline(always)]
    pub fn quanta(self) -> u16 {
        debug_assert!(self.is_mac_control());
        self.0 as u16
    }
    /// A MAC-control frame's class-enable vector (0: an 802.3x PAUSE).
    #[inline(always)]
    pub fn cev(self) -> u8 {
        debug_assert!(self.is_mac_control());
        (self.0 >> 16) as u8
    }
}

/// Arena of frames with a free list: slots are reused, so the steady state allocates nothing.
#[derive(Default)]
pub struct FramePool {
    slots: Vec<Frame>,
    /// The message of the control frame in the same slot (stale for other frames).
    msgs: Vec<CmMsg>,
    /// The SACK blocks of the TCP ACK in the same slot (grown on first use: empty unless a flow
    /// uses SACK; stale for other frames).
    sacks: Vec<SackBlocks>,
    alive: Vec<bool>,
    free: Vec<u32>,
    live: usize,
}

impl FramePool {
    #[inline(always)]
    pub fn alloc(&mut self, f: Frame) -> FrameId {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = f;
            self.alive[i as usize] = true;
            FrameId(i)
        } else {
            self.grow(f)
        }
    }
    /// [`FramePool::alloc`] of the frame `make` makes, written straight into its slot rather than
    /// made beside and copied there (a PAUSE frame started on every port of a switch at once).
    #[inline(always)]
    pub fn alloc_made(&mut self, make: impl Fn() -> Frame) -> FrameId {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = make();
            self.alive[i as usize] = true;
            FrameId(i)
        } else {
            self.grow(make())
        }
    }
    /// [`FramePool::alloc`] with no free slot.
    #[inline(never)]
    fn grow(&mut self, f: Frame) -> FrameId {
        debug_assert!(self.slots.len() < FrameId::MAC_CONTROL as usize, "the arena's ids reach the MAC-control bit");
        self.slots.push(f);
        self.msgs.push(CmMsg::default());
        self.alive.push(true);
        FrameId((self.slots.len() - 1) as u32)
    }
    /// A control frame carrying `msg`.
    pub fn alloc_control(&mut self, f: Frame, msg: CmMsg) -> FrameId {
        let id = self.alloc(f);
        self.msgs[id.0 as usize] = msg;
        id
    }
    /// A copy of frame `id` (with its message).
    pub fn alloc_copy(&mut self, id: FrameId) -> FrameId {
        let (f, msg) = (self.slots[id.0 as usize], self.msgs[id.0 as usize]);
        self.alloc_control(f, msg)
    }
    /// The message of control frame `id`.
    pub fn msg(&self, id: FrameId) -> CmMsg {
        self.msgs[id.0 as usize]
    }
    /// Attach SACK blocks to ACK frame `id`.
    pub fn set_sack(&mut self, id: FrameId, blocks: SackBlocks) {
        let i = id.0 as usize;
        if i >= self.sacks.len() {
            self.sacks.resize(i + 1, SackBlocks::default());
        }
        self.sacks[i] = blocks;
    }
    /// The SACK blocks attached to ACK frame `id` by [`Self::set_sack`].
    pub fn sack(&self, id: FrameId) -> SackBlocks {
        self.sacks.get(id.0 as usize).copied().unwrap_or_default()
    }
    /// The message of control frame `id`, to change in the engine's tests.
    #[cfg(test)]
    pub(crate) fn msgs_mut(&mut self, id: FrameId) -> &mut CmMsg {
        &mut self.msgs[id.0 as usize]
    }
    #[inline(always)]
    pub fn free(&mut self, id: FrameId) {
        debug_assert!(self.alive[id.0 as usize], "double free of frame {id:?}");
        self.alive[id.0 as usize] = false;
        self.live -= 1;
        self.free.push(id.0);
    }
    /// Frames currently allocated, in slot order.
    pub fn iter_live(&self) -> impl Iterator<Item = &Frame> {
        self.slots.iter().zip(&self.alive).filter(|(_, a)| **a).map(|(f, _)| f)
    }
    #[inline]
    pub fn get(&self, id: FrameId) -> &Frame {
        &self.slots[id.0 as usize]
    }
    #[inline]
    pub fn get_mut(&mut self, id: FrameId) -> &mut Frame {
        &mut self.slots[id.0 as usize]
    }
    /// Frames currently allocated (queued or in flight).
    pub fn live(&self) -> usize {
        self.live
    }
}
