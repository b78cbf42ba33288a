//! Buffer admission of a switch (model reference §1.3): which limit a frame must fit under, and why it is
//! dropped when it does not.

use super::Port;
use crate::ids::PortId;
use crate::ir::BufferIr;

/// Why a frame was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// BUF-OUT: the egress queue's private limit.
    EgressFull = 0,
    /// BUF-IN: the input partition is full.
    IngressFull = 1,
    /// Shared pool exhausted.
    SharedFull = 2,
    /// No route to the destination (cannot happen after validation; kept for conservation).
    NoRoute = 3,
    /// Partitioned output buffer: the (input, output) partition is full.
    PartitionFull = 4,
    /// PFC: a lossless priority's frame found the shared pool over its threshold and the headroom
    /// of its (input, priority) full (the headroom was too small for what was on its way).
    HeadroomFull = 5,
    /// The link failed while the frame was on it, or the frame was sent onto a dead link
    /// ([`super::dynamics`]); counted at the transmitting port.
    LinkDown = 6,
}
pub const DROP_REASONS: [&str; 7] = ["egress_full", "ingress_full", "shared_full", "no_route", "partition_full", "headroom_full", "link_down"];
/// Drop reasons listed in every summary; `headroom_full` only under PFC.
pub const CLASSIC_DROP_REASONS: usize = 5;

/// The size limit of the policy as the scheme sees it (`PortInfo::buffer_bytes`): BUF-OUT limit,
/// partition size, or pool size.
pub fn policy_bytes(policy: &BufferIr) -> u64 {
    match *policy {
        BufferIr::Egress { egress_bytes } => egress_bytes,
        BufferIr::Ingress { ingress_bytes } => ingress_bytes,
        BufferIr::Shared { shared_bytes } => shared_bytes,
        BufferIr::Partitioned { partitioned_bytes } => partitioned_bytes,
    }
}

/// Admission of a frame of `size` bytes from `in_port` (NONE for frames the switch itself
/// originates) into egress `out`: `None` = admitted, else the reason for the drop. `cell` is the
/// occupancy of the (input, output) partition (partitioned policy only).
#[inline]
pub fn admit(policy: &BufferIr, ports: &[Port], total_bytes: u64, in_port: PortId, out: PortId, size: u64, cell: u64) -> Option<DropReason> {
    match *policy {
        BufferIr::Partitioned { partitioned_bytes } => (!in_port.is_none() && cell + size > partitioned_bytes).then_some(DropReason::PartitionFull),
        BufferIr::Egress { egress_bytes } => (ports[out.idx()].q_bytes + size > egress_bytes).then_some(DropReason::EgressFull),
        BufferIr::Ingress { ingress_bytes } => {
            (!in_port.is_none() && ports[in_port.idx()].part_bytes + size > ingress_bytes).then_some(DropReason::IngressFull)
        }
        BufferIr::Shared { shared_bytes } => (total_bytes + size > shared_bytes).then_some(DropReason::SharedFull),
    }
}
