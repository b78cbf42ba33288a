//! Packet traces: libpcap files (nanosecond time stamps, `LINKTYPE_ETHERNET`) of the frames chosen
//! ports start transmitting in chosen time windows, for Wireshark, tcpdump or any pcap reader.
//!
//! cnsim's frames are records, not bytes; a capture writes each as the frame it stands for:
//!
//! | cnsim frame | on the wire (captured) |
//! |---|---|
//! | data, UDP transport | Ethernet + 802.1Q priority tag (PCP = the frame's priority, VID 0) + IPv4 (ECN: CE when marked; ECT(0) for ECN-capable and RoCE traffic) + UDP (5001 ← 49152 + flow) |
//! | data under DCQCN or HPCC | the same with UDP port 4791 and an InfiniBand BTH (RoCEv2, RC SEND Only, dest QP = flow, PSN = the low 24 bits of the sequence) |
//! | data, TCP / DCTCP | IPv4 (ECT(0) for DCTCP, CE when marked) + TCP (seq = byte offset mod 2³²) |
//! | TCP ACK | IPv4 + TCP ACK (ECE flag, the SACK blocks that fit in its size) |
//! | DCQCN CNP | RoCEv2 CNP: UDP 4791, BTH opcode 0x81, dest QP = the flow |
//! | HPCC ACK | RoCEv2 Acknowledge: UDP 4791, BTH opcode 0x11 + AETH (PSN = the acknowledged sequence) |
//! | QCN CNM | 802.1Qau CNM: EtherType 0x22E9, version 0, QntzFb, CPID, cnmQOffset, cnmQDelta, encapsulated priority, DA and MSDU length |
//! | BCN, ECM, FECN, BECN messages (pre-standard proposals: no EtherType was assigned) | EtherType 0x88B5 (IEEE 802 Local Experimental EtherType 1): scheme, message kind, CPID, flow, the message's three values as IEEE doubles |
//! | data frame with BCN's rate-limiter tag | an 802.1Qau CN-TAG (EtherType 0x22E9, flow id) after the priority tag |
//! | 802.3x PAUSE | MAC control, EtherType 0x8808, opcode 0x0001, pause_time, to 01-80-C2-00-00-01 |
//! | 802.1Qbb PFC | MAC control, EtherType 0x8808, opcode 0x0101, class-enable vector, 8 pause times |
//!
//! **Sizes.** A data, ACK or congestion-management frame of S bytes in cnsim (S is what occupies the
//! link and the buffer; a 1500-B data frame is a 1 460-B TCP segment with 40 bytes of TCP/IP header) is
//! written as S bytes of layer-3 packet (IP, or the CN message) behind the 18 bytes of Ethernet header
//! and 802.1Q tag — S + 18 bytes, as Wireshark shows an ns-3 frame of a 1 500-B MTU (the FCS is not
//! captured). A MAC control frame (S = 64 with its FCS) is written as its 60 bytes. Each record keeps
//! at most `snaplen` bytes (headers; payloads are zeros) and the full length as its original length.
//!
//! MAC addresses are 02:00 followed by the node's index + 1 (locally administered); IPv4 addresses
//! 10.x.y.z with the same number. Time stamps are the start of transmission, in ns (truncated).
//!
//! Cost: one `Option` test where a frame starts transmission; nothing else without captures.

use crate::frame::{tag, Frame, FrameId, FrameKind};
use crate::ids::{NodeId, PortId};
use crate::net::Network;
use crate::time::SimTime;

/// What a capture records, from the IR.
#[derive(Debug, Clone)]
pub struct CaptureSpec {
    pub name: String,
    pub port: PortId,
    pub start_ps: SimTime,
    pub end_ps: SimTime,
    pub snaplen: u32,
}

/// One capture: its window and the pcap bytes not handed out yet.
#[derive(Debug)]
pub struct Capture {
    pub spec: CaptureSpec,
    /// Next capture on the same port (`u32::MAX`: none).
    next: u32,
    buf: Vec<u8>,
    header_done: bool,
    pub frames: u64,
    pub bytes: u64,
    ip_id: u16,
}

/// How control and data frames of the run's scheme look on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// UDP data, control frames as 0x88B5 experimental messages (BCN, ECM, FECN, BECN, none).
    Plain,
    /// RoCEv2 data; control frames are DCQCN CNPs.
    Dcqcn,
    /// RoCEv2 data; control frames are HPCC's ACKs.
    Hpcc,
    /// UDP data; control frames are 802.1Qau CNMs.
    Qcn,
}

impl Wire {
    pub fn of_scheme(name: &str) -> Wire {
        match name {
            "dcqcn" => Wire::Dcqcn,
            "hpcc" => Wire::Hpcc,
            "qcn" => Wire::Qcn,
            _ => Wire::Plain,
        }
    }
    fn roce(self) -> bool {
        matches!(self, Wire::Dcqcn | Wire::Hpcc)
    }
    /// Code of the scheme in an 0x88B5 message.
    fn code(name: &str) -> u8 {
        match name {
            "bcn" => 1,
            "ecm" => 2,
            "fecn" => 3,
            "becn" => 4,
            _ => 0,
        }
    }
}

/// Every capture of a run.
#[derive(Debug)]
pub struct PcapSet {
    /// First capture of each port (`u32::MAX`: none).
    by_port: Vec<u32>,
    pub caps: Vec<Capture>,
    wire: Wire,
    scheme_code: u8,
    scratch: Vec<u8>,
}

/// Ethernet + 802.1Q tag in front of every frame but MAC control.
const L2: u32 = 18;
const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_CN: u16 = 0x22E9;
const ETH_P_EXP: u16 = 0x88B5;
const ETH_P_MACCTL: u16 = 0x8808;
const ROCE_PORT: u16 = 4791;

impl PcapSet {
    pub fn new(specs: Vec<CaptureSpec>, n_ports: usize, scheme: &str) -> Self {
        let mut by_port = vec![u32::MAX; n_ports];
        let mut caps: Vec<Capture> = Vec::with_capacity(specs.len());
        for spec in specs {
            let i = caps.len() as u32;
            let p = spec.port.idx();
            // append to the port's chain, keeping the specs' order
            if by_port[p] == u32::MAX {
                by_port[p] = i;
            } else {
                let mut last = by_port[p] as usize;
                while caps[last].next != u32::MAX {
                    last = caps[last].next as usize;
                }
                caps[last].next = i;
            }
            caps.push(Capture { spec, next: u32::MAX, buf: Vec::new(), header_done: false, frames: 0, bytes: 0, ip_id: 0 });
        }
        PcapSet { by_port, caps, wire: Wire::of_scheme(scheme), scheme_code: Wire::code(scheme), scratch: Vec::with_capacity(256) }
    }

    /// The pcap bytes written since the last call, per capture (the file header with the first).
    pub fn take(&mut self) -> Vec<(String, Vec<u8>)> {
        self.caps
            .iter_mut()
            .map(|c| {
                let mut out = Vec::new();
                if !c.header_done {
                    c.header_done = true;
                    out.extend_from_slice(&file_header(c.spec.snaplen));
                }
                out.append(&mut c.buf);
                (c.spec.name.clone(), out)
            })
            .collect()
    }
}

/// The captures of an IR's `observe.pcap` on the built network (None without captures).
pub fn build(ir: &crate::ir::Ir, net: &Network) -> Option<Box<PcapSet>> {
    if ir.observe.pcap.is_empty() {
        return None;
    }
    let specs = ir
        .observe
        .pcap
        .iter()
        .map(|c| {
            let port = net.ports.iter().position(|p| p.node.0 == c.node && p.peer_node.0 == c.peer).expect("validated: node and peer are linked");
            CaptureSpec { name: c.name.clone(), port: PortId(port as u32), start_ps: c.start_ps, end_ps: c.end_ps, snaplen: c.snaplen }
        })
        .collect();
    Some(Box::new(PcapSet::new(specs, net.ports.len(), net.scheme.name())))
}

/// The 24-byte libpcap file header: nanosecond magic, version 2.4, `LINKTYPE_ETHERNET`.
pub fn file_header(snaplen: u32) -> [u8; 24] {
    let mut h = [0u8; 24];
    h[0..4].copy_from_slice(&0xA1B2_3C4Du32.to_le_bytes());
    h[4..6].copy_from_slice(&2u16.to_le_bytes());
    h[6..8].copy_from_slice(&4u16.to_le_bytes());
    h[16..20].copy_from_slice(&snaplen.to_le_bytes());
    h[20..24].copy_from_slice(&1u32.to_le_bytes());
    h
}

fn mac(node: NodeId) -> [u8; 6] {
    let n = node.0.wrapping_add(1).to_be_bytes();
    [0x02, 0x00, n[0], n[1], n[2], n[3]]
}

fn ip(node: NodeId) -> [u8; 4] {
    let n = node.0.wrapping_add(1);
    [10, (n >> 16) as u8, (n >> 8) as u8, n as u8]
}

fn put16(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_be_bytes());
}
fn put32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_be_bytes());
}

/// Ethernet header with the 802.1Q priority tag, up to the EtherType `ethertype`.
fn l2(b: &mut Vec<u8>, dst: [u8; 6], src: [u8; 6], prio: u8, ethertype: u16) {
    b.extend_from_slice(&dst);
    b.extend_from_slice(&src);
    put16(b, ETH_P_8021Q);
    put16(b, ((prio as u16) & 7) << 13); // PCP, DEI 0, VID 0: a priority-tagged frame
    put16(b, ethertype);
}

/// IPv4 header of a packet of `total` bytes (checksum computed).
fn ipv4(b: &mut Vec<u8>, total: u16, id: u16, proto: u8, ecn: u8, src: [u8; 4], dst: [u8; 4]) {
    let at = b.len();
    b.extend_from_slice(&[0x45, ecn & 3]);
    put16(b, total);
    put16(b, id);
    put16(b, 0x4000); // don't fragment
    b.extend_from_slice(&[64, proto, 0, 0]);
    b.extend_from_slice(&src);
    b.extend_from_slice(&dst);
    let sum = checksum(&b[at..at + 20]);
    b[at + 10..at + 12].copy_from_slice(&sum.to_be_bytes());
}

/// The Internet checksum (RFC 1071) of `data`.
pub fn checksum(data: &[u8]) -> u16 {
    let mut s: u32 = data.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32).sum();
    while s > 0xFFFF {
        s = (s & 0xFFFF) + (s >> 16);
    }
    !(s as u16)
}

/// IPv4 ECN field of a frame: CE when marked, ECT(0) when ECN-capable (or RoCE).
fn ecn_bits(f: &Frame, ect: bool) -> u8 {
    if f.tag.flags & tag::CE != 0 {
        3
    } else if ect || f.tag.flags & tag::ECT != 0 {
        2
    } else {
        0
    }
}

/// InfiniBand base transport header (12 bytes).
fn bth(b: &mut Vec<u8>, opcode: u8, dest_qp: u32, psn: u32) {
    b.extend_from_slice(&[opcode, 0x40, 0xFF, 0xFF]); // opcode, migration state, P_Key 0xFFFF
    put32(b, dest_qp & 0x00FF_FFFF);
    put32(b, psn & 0x00FF_FFFF);
}

impl Network {
    /// Port `pid` starts transmitting frame `fr` (`size` bytes): record it in every capture of the
    /// port whose window holds now. Called only when captures exist.
    #[cold]
    #[inline(never)]
    pub(crate) fn pcap_capture(&mut self, pid: PortId, fr: FrameId, size: u32) {
        let now = self.now;
        let set = self.pcap.as_mut().expect("captures");
        // the first capture of the port whose window holds now
        let mut c = set.by_port[pid.idx()];
        while c != u32::MAX && !set.caps[c as usize].holds(now) {
            c = set.caps[c as usize].next;
        }
        if c == u32::MAX {
            return;
        }
        let id = set.caps[c as usize].ip_id;
        let mut scratch = std::mem::take(&mut set.scratch);
        scratch.clear();
        let len =
            if fr.is_mac_control() { mac_control(self.ports[pid.idx()].node, fr, &mut scratch) } else { encode(self, fr, size, id, &mut scratch) };
        let set = self.pcap.as_mut().expect("captures");
        set.scratch = scratch;
        record_all(set, c, now, len);
    }
}

impl Capture {
    fn holds(&self, now: SimTime) -> bool {
        now >= self.spec.start_ps && now < self.spec.end_ps
    }
}

/// Append the frame in the scratch buffer to capture `c` and to the later captures of the same port
/// whose window holds at `now`.
fn record_all(set: &mut PcapSet, first: u32, now: SimTime, wire_len: u32) {
    let mut c = first;
    while c != u32::MAX {
        let cap = &mut set.caps[c as usize];
        if cap.holds(now) {
            let keep = (wire_len as usize).min(cap.spec.snaplen as usize).min(set.scratch.len());
            let ns = now / 1_000;
            cap.buf.extend_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
            cap.buf.extend_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
            cap.buf.extend_from_slice(&(keep as u32).to_le_bytes());
            cap.buf.extend_from_slice(&wire_len.to_le_bytes());
            cap.buf.extend_from_slice(&set.scratch[..keep]);
            cap.frames += 1;
            cap.bytes += wire_len as u64;
            cap.ip_id = cap.ip_id.wrapping_add(1);
        }
        c = cap.next;
    }
}

/// Write frame `fr` of `size` bytes as it goes on the wire into `b` (headers, then zero padding up to
/// 128 bytes at most); returns its full captured length (`size` + 18). Not a MAC-control frame
/// ([`mac_control`]).
fn encode(net: &Network, fr: FrameId, size: u32, ip_id: u16, b: &mut Vec<u8>) -> u32 {
    let f = net.frames.get(fr);
    let set = net.pcap.as_ref().expect("captures");
    let total = size + L2;
    let (src, dst) = (f.src, f.dst);
    match f.kind {
        FrameKind::Data => {
            let dst_mac = mac(dst);
            if f.tag.flags & tag::RL != 0 {
                // 802.1Qau CN-TAG (the rate-limited flow's id) after the priority tag
                l2(b, dst_mac, mac(src), f.prio, ETH_P_CN);
                put16(b, f.flow.0 as u16);
                put16(b, ETH_P_IP);
            } else {
                l2(b, dst_mac, mac(src), f.prio, ETH_P_IP);
            }
            let ip_len = (total as usize).saturating_sub(b.len()) as u16;
            let tcp = net.flows[f.flow.idx()].tcp.as_ref();
            if let Some(t) = tcp {
                ipv4(b, ip_len, ip_id, 6, ecn_bits(f, t.ecn), ip(src), ip(dst));
                tcp_header(b, port_of(f.flow.0), 5001, f.seq as u32, 0, 0x18, &[]);
            } else if set.wire.roce() {
                ipv4(b, ip_len, ip_id, 17, ecn_bits(f, true), ip(src), ip(dst));
                udp(b, 0xC000 | (f.flow.0 as u16 & 0x3FFF), ROCE_PORT, ip_len - 20);
                // the PSN under RDMA loss recovery (crate::net::rdma)
                let psn = if net.rdma.is_some() { f.seq as u32 } else { (f.tag.rate as u64) as u32 };
                bth(b, 0x04, f.flow.0, psn);
            } else {
                ipv4(b, ip_len, ip_id, 17, ecn_bits(f, false), ip(src), ip(dst));
                udp(b, port_of(f.flow.0), 5001, ip_len - 20);
            }
        }
        FrameKind::Ack if net.flows[f.flow.idx()].tcp.is_none() => {
            // an RDMA ACK or NACK (crate::net::rdma): RoCEv2 Acknowledge, AETH syndrome ACK or NACK
            // (PSN sequence error), the expected PSN in the BTH
            l2(b, mac(dst), mac(src), f.prio, ETH_P_IP);
            let ip_len = size as u16;
            ipv4(b, ip_len, ip_id, 17, 0, ip(src), ip(dst));
            udp(b, 0xC000 | (f.flow.0 as u16 & 0x3FFF), ROCE_PORT, ip_len - 20);
            bth(b, 0x11, f.flow.0, f.seq as u32);
            put32(b, if f.tag.flags & crate::net::rdma::NACK != 0 { 0x60 << 24 } else { 0x1F << 24 });
        }
        FrameKind::Ack => {
            l2(b, mac(dst), mac(src), f.prio, ETH_P_IP);
            let ip_len = size as u16;
            let ece = f.tag.flags & tag::ECE != 0;
            ipv4(b, ip_len, ip_id, 6, 0, ip(src), ip(dst));
            // the SACK blocks that fit in the ACK's size (2 in a 64-B ACK: 40 + 2 + 2 + 8·n bytes)
            let room = (ip_len as usize).saturating_sub(40 + 4) / 8;
            let blocks = net.frames.sack(fr);
            let n = room.min(blocks.n as usize);
            tcp_header(b, 5001, port_of(f.flow.0), 0, f.seq as u32, 0x10 | if ece { 0x40 } else { 0 }, &blocks.blocks[..n]);
        }
        FrameKind::Control => control(net, set, fr, f, size, ip_id, b),
    }
    pad(b, total);
    total
}

fn pad(b: &mut Vec<u8>, total: u32) {
    let want = (total as usize).min(128);
    if b.len() < want {
        b.resize(want, 0);
    }
}

/// A flow's UDP/TCP source port.
fn port_of(flow: u32) -> u16 {
    0xC000 | (flow as u16 & 0x3FFF)
}

fn udp(b: &mut Vec<u8>, sport: u16, dport: u16, len: u16) {
    put16(b, sport);
    put16(b, dport);
    put16(b, len);
    put16(b, 0); // no checksum (IPv4)
}

/// TCP header with flags `flags` and SACK blocks (each as two 32-bit sequence numbers).
fn tcp_header(b: &mut Vec<u8>, sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, sack: &[(u64, u64)]) {
    let opts = if sack.is_empty() { 0 } else { 4 + 8 * sack.len() };
    put16(b, sport);
    put16(b, dport);
    put32(b, seq);
    put32(b, ack);
    b.extend_from_slice(&[(((20 + opts) / 4) as u8) << 4, flags]);
    put16(b, 0xFFFF); // window
    put16(b, 0); // checksum (payloads are not captured)
    put16(b, 0); // urgent pointer
    if !sack.is_empty() {
        b.extend_from_slice(&[1, 1, 5, (2 + 8 * sack.len()) as u8]); // NOP, NOP, SACK, length
        for &(s, e) in sack {
            put32(b, s as u32);
            put32(b, e as u32);
        }
    }
}

/// A congestion-management message of the run's scheme.
fn control(net: &Network, set: &PcapSet, fr: FrameId, f: &Frame, size: u32, ip_id: u16, b: &mut Vec<u8>) {
    let msg = net.frames.msg(fr);
    let dst_mac = if f.dst.is_none() { [0xFF; 6] } else { mac(f.dst) };
    match set.wire {
        Wire::Dcqcn | Wire::Hpcc => {
            l2(b, dst_mac, mac(f.src), f.prio, ETH_P_IP);
            let ip_len = size as u16;
            ipv4(b, ip_len, ip_id, 17, 0, ip(f.src), ip(f.dst));
            udp(b, 0xC000 | (msg.flow.0 as u16 & 0x3FFF), ROCE_PORT, ip_len - 20);
            if set.wire == Wire::Dcqcn {
                bth(b, 0x81, msg.flow.0, 0); // CNP
            } else {
                bth(b, 0x11, msg.flow.0, msg.v[0] as u64 as u32); // Acknowledge
                put32(b, 0); // AETH: ACK syndrome, MSN 0
            }
        }
        Wire::Qcn => {
            // 802.1Qau CNM PDU
            l2(b, dst_mac, mac(f.src), f.prio, ETH_P_CN);
            let fb = (msg.v[0].max(0.0) as u16) & 0x3F;
            put16(b, fb); // version 0, reserved, QntzFb
            b.extend_from_slice(&(msg.cpid as u64).to_be_bytes()); // CPID
            put16(b, msg.v[1] as i64 as i16 as u16); // cnmQOffset
            put16(b, msg.v[2] as i64 as i16 as u16); // cnmQDelta
            put16(b, f.prio as u16); // encapsulated priority
            b.extend_from_slice(&dst_mac); // encapsulated MAC DA (the sampled frame's source)
            put16(b, 0); // encapsulated MSDU length: not kept
        }
        Wire::Plain => {
            l2(b, dst_mac, mac(f.src), f.prio, ETH_P_EXP);
            b.extend_from_slice(&[set.scheme_code, msg.kind]);
            put32(b, msg.cpid);
            put32(b, msg.flow.0);
            for v in msg.v {
                b.extend_from_slice(&v.to_be_bytes());
            }
        }
    }
}

/// MAC-control frame `fr` sent by node `src`: an 802.3x PAUSE (class-enable vector 0) or an 802.1Qbb
/// PFC frame: 60 bytes.
fn mac_control(src: NodeId, fr: FrameId, b: &mut Vec<u8>) -> u32 {
    let (quanta, cev) = (fr.quanta(), fr.cev());
    b.extend_from_slice(&[0x01, 0x80, 0xC2, 0x00, 0x00, 0x01]);
    b.extend_from_slice(&mac(src));
    put16(b, ETH_P_MACCTL);
    if cev == 0 {
        put16(b, 0x0001);
        put16(b, quanta);
    } else {
        put16(b, 0x0101);
        put16(b, cev as u16);
        for k in 0..8 {
            put16(b, if cev >> k & 1 == 1 { quanta } else { 0 });
        }
    }
    b.resize(60, 0);
    60
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_and_headers_have_the_wire_layout() {
        let mut b = Vec::new();
        ipv4(&mut b, 1500, 7, 17, 3, [10, 0, 0, 1], [10, 0, 0, 2]);
        assert_eq!(b.len(), 20);
        assert_eq!(checksum(&b), 0, "a header with its checksum sums to 0");
        assert_eq!(b[1] & 3, 3, "CE in the ECN field");
        let mut e = Vec::new();
        l2(&mut e, mac(NodeId(4)), mac(NodeId(0)), 3, ETH_P_IP);
        assert_eq!(e.len() as u32, L2, "Ethernet + 802.1Q = 18 bytes");
        assert_eq!(&e[12..14], &[0x81, 0x00]);
        assert_eq!(e[14] >> 5, 3, "PCP = priority");
        assert_eq!(&e[0..6], &[2, 0, 0, 0, 0, 5]);
        let h = file_header(128);
        assert_eq!(u32::from_le_bytes(h[0..4].try_into().unwrap()), 0xA1B2_3C4D);
        assert_eq!(u32::from_le_bytes(h[20..24].try_into().unwrap()), 1, "LINKTYPE_ETHERNET");
        let mut t = Vec::new();
        tcp_header(&mut t, 1, 2, 3, 4, 0x10, &[(10, 20), (30, 40)]);
        assert_eq!(t.len(), 20 + 4 + 16);
        assert_eq!(t[12] >> 4, 10, "data offset in words");
    }
}
