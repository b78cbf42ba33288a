//! IEEE 802.1Qbb priority-based flow control (PFC): 802.3x PAUSE per priority.
//!
//! With `PauseIr::Pfc` every switch port keeps one egress FIFO per priority (0–7) served by strict
//! priority or DWRR, and accounts the bytes it received per priority as an *input* in the switch's
//! shared buffer (the ingress "priority group" of shared-buffer ASICs):
//!
//! * the shared pool is the buffer minus the headroom reserved for every (ingress port, lossless
//!   priority); a frame of priority p arriving on input i goes to the shared pool while the
//!   counter `shared[i][p]` stays under the threshold — a static number of bytes, or the dynamic
//!   α × (shared pool − shared bytes used) —, else, for a lossless priority, into the headroom of
//!   (i, p); when that is full too, or for a lossy priority over its threshold, it is dropped;
//! * XOFF for (i, p) is sent on input i when one more largest frame would not fit under the
//!   threshold (or a frame went to the headroom); XON when the headroom of (i, p) is empty and the
//!   counter is `hysteresis` below the XOFF level. The headroom absorbs what is already on its way
//!   when XOFF leaves (`docs/datacenter.md`, "PFC headroom");
//! * a PFC frame carries a class-enable vector (`Frame::prio`) and one pause time for the classes it
//!   enables (0 = XON); XOFF is refreshed at a fraction of its pause time for all asserted classes;
//! * the receiver's per-priority state is one 802.3x [`PortPause`] per priority (paused time,
//!   unbroken-pause start, watchdog), so the port-level `PortPause` only aggregates "any priority
//!   paused" for the link statistics and the pause series.
//!
//! Only built when PFC is configured: the single-class PAUSE and no-PAUSE paths are unchanged.

use super::PortPause;
use crate::event::Event;
use crate::frame::FrameId;
use crate::ids::PortId;
use crate::ir::{PfcIr, PfcThresholdIr, SchedulerIr};
use crate::net::{DropReason, Network};
use crate::time::{tx_time_ps, SimTime};
use serde_json::{json, Value};
use std::collections::VecDeque;

/// Number of 802.1p priorities.
pub const PRIORITIES: usize = 8;

/// PFC state of one port: per-priority egress queues and scheduler, per-priority ingress counters
/// and XOFF state (switch ports), the per-priority receiver state (every port facing a PFC switch).
#[derive(Debug, Clone, Default)]
pub struct PfcPort {
    /// As a transmitter: PFC received per priority (paused time, watchdog).
    pub rx: [PortPause; PRIORITIES],
    /// Egress FIFO per priority (switch ports); `Port::q_bytes` is their sum.
    pub queues: [VecDeque<FrameId>; PRIORITIES],
    pub q_bytes: [u64; PRIORITIES],
    deficit: [u64; PRIORITIES],
    /// DWRR: queue whose turn it is, and whether its quantum was already added this turn.
    rr: u8,
    turn: bool,
    /// As an input: bytes it brought that are still queued, in the shared pool and in the headroom.
    pub shared: [u64; PRIORITIES],
    pub head: [u64; PRIORITIES],
    /// Largest headroom occupancy seen per priority.
    pub head_max: [u64; PRIORITIES],
    /// Headroom reserved per lossless priority, bytes.
    pub headroom: u64,
    /// Priorities with XOFF asserted toward the peer; PFC frames waiting to go out.
    pub xoff: u8,
    pending_xoff: u8,
    pending_xon: u8,
    /// Generation of the last XOFF sent (stale refresh events are ignored).
    gen: u32,
    /// PFC frames sent / received that enable each priority (XOFF, refresh or XON).
    pub sent: [u64; PRIORITIES],
    pub received: [u64; PRIORITIES],
    /// Frames of each priority dropped at this input because its headroom was full.
    pub headroom_drops: [u64; PRIORITIES],
}

impl PfcPort {
    /// Is priority `k` held by PFC at `now` (and not overridden by the watchdog)?
    #[inline]
    pub fn holds(&self, k: usize, now: u64) -> bool {
        self.rx[k].holds(now)
    }

    /// The priority to serve among `eligible` (a non-empty mask of non-empty, unpaused queues).
    fn pick(&mut self, eligible: u8, sched: &SchedulerIr, head_size: impl Fn(FrameId) -> u64) -> usize {
        match sched {
            SchedulerIr::Strict => 7 - eligible.leading_zeros() as usize,
            SchedulerIr::Dwrr { quantum_bytes } => loop {
                // DRR (Shreedhar & Varghese): a queue gets its quantum once per turn and sends while
                // its deficit covers the head; every quantum ≥ the largest frame, so this ends
                // within one round
                let k = self.rr as usize;
                if eligible >> k & 1 == 1 {
                    if !self.turn {
                        self.deficit[k] += quantum_bytes[k] as u64;
                        self.turn = true;
                    }
                    let size = head_size(*self.queues[k].front().expect("eligible queue"));
                    if size <= self.deficit[k] {
                        self.deficit[k] -= size;
                        return k;
                    }
                } else if self.queues[k].is_empty() {
                    self.deficit[k] = 0;
                }
                self.rr = (self.rr + 1) % PRIORITIES as u8;
                self.turn = false;
            },
        }
    }

    /// Remove the head of queue `k` (its transmission ended).
    pub fn pop(&mut self, k: usize, size: u64) -> Option<FrameId> {
        self.q_bytes[k] -= size;
        let h = self.queues[k].pop_front();
        if self.queues[k].is_empty() {
            self.deficit[k] = 0;
        }
        h
    }
}

/// Wait-for cycles of paused PFC queues seen forming during the run (`Network::pfc_cycles`).
#[derive(Debug, Default, Clone)]
pub struct CycleLog {
    /// Cycles found (a cycle found again after it dissolved counts again).
    pub detected: u64,
    /// The first one: when, and its (port, priority) queues in wait-for order.
    pub first: Option<(SimTime, Vec<(usize, usize)>)>,
}

/// PFC state of one switch: its configuration and the shared-pool counters.
#[derive(Debug, Clone)]
pub struct PfcSwitch {
    pub cfg: PfcIr,
    /// Buffer minus every headroom reservation.
    pub shared_size: u64,
    /// Bytes queued in headrooms (the rest of `Switch::total_bytes` is in the shared pool).
    pub head_total: u64,
    /// (input, priority) pairs with XOFF asserted.
    pub n_xoff: u32,
}

impl PfcSwitch {
    pub fn new(cfg: PfcIr, buffer_bytes: u64) -> Self {
        let lossless = cfg.enabled.count_ones() as u64;
        let reserved: u64 = cfg.headroom_bytes.iter().map(|h| h * lossless).sum();
        PfcSwitch { shared_size: buffer_bytes.saturating_sub(reserved), cfg, head_total: 0, n_xoff: 0 }
    }
    /// Threshold of an (input, priority) counter when `used` bytes of the shared pool are taken.
    #[inline]
    fn limit(&self, used: u64) -> u64 {
        match self.cfg.threshold {
            PfcThresholdIr::Static { xoff_bytes } => xoff_bytes,
            PfcThresholdIr::Dynamic { alpha } => (alpha * self.shared_size.saturating_sub(used) as f64) as u64,
        }
    }
    #[inline]
    fn lossless(&self, k: usize) -> bool {
        self.cfg.enabled >> k & 1 == 1
    }
}

impl Network {
    #[inline]
    fn pfc_sw(&self, s: usize) -> &PfcSwitch {
        self.switches[s].pause.pfc.as_ref().expect("PFC switch")
    }
    #[inline]
    fn pfc_port(&mut self, port: PortId) -> &mut PfcPort {
        self.ports[port.idx()].pfc.as_mut().expect("PFC port")
    }

    /// Until when PFC holds priority `k` of PFC port `port`.
    #[inline(never)] // off the one-FIFO hot paths that call it behind `pfc_enabled`
    pub(crate) fn pfc_paused_until(&self, port: PortId, k: u8) -> u64 {
        self.ports[port.idx()].pfc.as_ref().expect("PFC port").rx[k as usize].paused_until
    }

    /// The response time of the peer of PFC switch port `port` (its PFC frames take effect this late).
    #[inline(never)] // off the one-FIFO hot paths that call it behind `pfc_enabled`
    pub(crate) fn pfc_response_ps(&self, port: PortId) -> u64 {
        let s = self.switch_of[self.ports[port.idx()].node.idx()] as usize;
        self.pfc_sw(s).cfg.response_ps
    }

    /// Admission of a frame of priority `k` and `size` bytes from `in_port` (NONE: the switch's own
    /// frame, shared pool only): `Ok(true)` into the headroom, `Ok(false)` into the shared pool.
    #[inline(never)] // off the one-FIFO hot paths that call it behind `pfc_enabled`
    pub(crate) fn pfc_admit(&self, s: usize, in_port: PortId, k: usize, size: u64) -> Result<bool, DropReason> {
        let sw = self.pfc_sw(s);
        let used = self.switches[s].total_bytes - sw.head_total;
        let fits_pool = used + size <= sw.shared_size;
        if in_port.is_none() {
            return if fits_pool { Ok(false) } else { Err(DropReason::SharedFull) };
        }
        let ip = self.ports[in_port.idx()].pfc.as_ref().expect("PFC port");
        if fits_pool && ip.shared[k] + size <= sw.limit(used) {
            Ok(false)
        } else if !sw.lossless(k) {
            Err(DropReason::SharedFull)
        } else if ip.head[k] + size <= ip.headroom {
            Ok(true)
        } else {
            Err(DropReason::HeadroomFull)
        }
    }

    /// A frame of priority `k` from `in_port` was dropped by PFC admission for lack of headroom.
    #[inline(never)] // off the one-FIFO hot paths that call it behind `pfc_enabled`
    pub(crate) fn pfc_headroom_drop(&mut self, in_port: PortId, k: usize) {
        if !in_port.is_none() {
            self.pfc_port(in_port).headroom_drops[k] += 1;
        }
    }

    /// Account an admitted frame (already in `Switch::total_bytes`) at its input; assert XOFF for
    /// (input, priority) when one more largest frame would not fit under the threshold.
    #[inline(never)] // off the one-FIFO hot paths that call it behind `pfc_enabled`
    pub(crate) fn pfc_enqueued(&mut self, s: usize, in_port: PortId, out: PortId, k: usize, size: u64, head: bool) {
        let total = self.switches[s].total_bytes;
        let sw = self.switches[s].pause.pfc.as_mut().expect("PFC switch");
        if head {
            sw.head_total += size;
        }
        if in_port.is_none() {
            return;
        }
        let (lim, mtu, lossless) = (sw.limit(total - sw.head_total), sw.cfg.mtu_bytes as u64, sw.lossless(k));
        let ip = self.ports[in_port.idx()].pfc.as_mut().expect("PFC port");
        if head {
            ip.head[k] += size;
            ip.head_max[k] = ip.head_max[k].max(ip.head[k]);
        } else {
            ip.shared[k] += size;
        }
        if lossless && ip.xoff >> k & 1 == 0 && (head || ip.shared[k] + mtu > lim) {
            self.pfc_set_xoff(s, in_port, k, true);
        }
        // a new wait-for edge (upstream queue → this queue) between two blocked queues may close a cycle
        let up = self.ports[in_port.idx()].peer.idx();
        if self.is_switch(self.ports[up].node) && self.pfc_blocked(out.idx(), k) && self.pfc_blocked(up, k) {
            self.pfc_detect_cycle(up, k);
        }
    }

    /// A frame of priority `k` from `in_port` left the switch (already out of `total_bytes`):
    /// release its bytes (headroom first) and send XON where a counter fell below XOFF − hysteresis.
    /// With the dynamic threshold every asserted pair of the switch is re-checked (the free pool grew).
    #[inline(never)] // off the one-FIFO hot paths that call it behind `pfc_enabled`
    pub(crate) fn pfc_dequeued(&mut self, s: usize, in_port: PortId, k: usize, size: u64) {
        if !in_port.is_none() {
            let ip = self.pfc_port(in_port);
            let from_head = ip.head[k].min(size);
            ip.head[k] -= from_head;
            ip.shared[k] -= size - from_head;
            self.switches[s].pause.pfc.as_mut().expect("PFC switch").head_total -= from_head;
        }
        let sw = self.pfc_sw(s);
        if sw.n_xoff == 0 {
            return;
        }
        if matches!(sw.cfg.threshold, PfcThresholdIr::Static { .. }) {
            if !in_port.is_none() {
                self.pfc_check_xon(s, in_port, k);
            }
            return;
        }
        for j in 0..self.switches[s].ports.len() {
            let port = self.switches[s].ports[j];
            let mut mask = self.ports[port.idx()].pfc.as_ref().expect("PFC port").xoff;
            while mask != 0 {
                let kk = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                self.pfc_check_xon(s, port, kk);
            }
        }
    }

    fn pfc_check_xon(&mut self, s: usize, port: PortId, k: usize) {
        let total = self.switches[s].total_bytes;
        let sw = self.pfc_sw(s);
        let (lim, margin) = (sw.limit(total - sw.head_total), sw.cfg.mtu_bytes as u64 + sw.cfg.hysteresis_bytes);
        let ip = self.ports[port.idx()].pfc.as_ref().expect("PFC port");
        if ip.xoff >> k & 1 == 1 && ip.head[k] == 0 && ip.shared[k] + margin <= lim {
            self.pfc_set_xoff(s, port, k, false);
        }
    }

    /// Assert (XOFF) or release (XON) priority `k` toward the peer of switch port `port`.
    fn pfc_set_xoff(&mut self, s: usize, port: PortId, k: usize, on: bool) {
        let bit = 1u8 << k;
        let sw = self.switches[s].pause.pfc.as_mut().expect("PFC switch");
        if on {
            sw.n_xoff += 1;
        } else {
            sw.n_xoff -= 1;
        }
        let pf = self.pfc_port(port);
        if on {
            pf.xoff |= bit;
            pf.pending_xon &= !bit;
            self.pfc_send_xoff(s, port);
        } else {
            pf.xoff &= !bit;
            pf.pending_xoff &= !bit;
            pf.pending_xon |= bit;
            self.port_try_send(port);
        }
    }

    /// Queue one XOFF for every asserted priority of `port` (a new XOFF refreshes the others) and
    /// schedule its refresh.
    fn pfc_send_xoff(&mut self, s: usize, port: PortId) {
        let (quanta, frac) = {
            let c = &self.pfc_sw(s).cfg;
            (c.quanta, c.refresh_fraction)
        };
        let now = self.now;
        let rate = self.ports[port.idx()].rate_bps;
        let pf = self.pfc_port(port);
        pf.pending_xoff = pf.xoff;
        pf.pending_xon &= !pf.xoff;
        pf.gen = pf.gen.wrapping_add(1);
        let gen = pf.gen;
        let dur = tx_time_ps(quanta as u64 * 64, rate);
        self.schedule(now + ((dur as f64 * frac) as u64).max(1), Event::PauseRefresh { port, gen });
        self.port_try_send(port);
    }

    /// XOFF refresh of `port` (generation `gen`): re-send if still asserted.
    pub(crate) fn pfc_refresh(&mut self, port: PortId, gen: u32) {
        let pf = self.pfc_port(port);
        if pf.gen == gen && pf.xoff != 0 {
            let s = self.switch_of[self.ports[port.idx()].node.idx()] as usize;
            self.pfc_send_xoff(s, port);
        }
    }

    /// A PFC frame (class-enable vector `cev`, pause time `quanta`, 0 = XON) arrived on `port`.
    #[inline(never)] // off the one-FIFO hot paths that call it behind `pfc_enabled`
    pub(crate) fn pfc_receive(&mut self, port: PortId, cev: u8, quanta: u16) {
        let (now, w) = (self.now, self.cfg.warmup_ps);
        let p = &mut self.ports[port.idx()];
        let rate = p.rate_bps;
        let Some(pf) = p.pfc.as_mut() else { return };
        let (mut until, mut newly) = (0, 0u8);
        let dur = tx_time_ps(quanta as u64 * 64, rate);
        for k in 0..PRIORITIES {
            if cev >> k & 1 == 1 {
                if !pf.rx[k].holds(now) && quanta > 0 && !pf.queues[k].is_empty() {
                    newly |= 1 << k;
                }
                pf.rx[k].receive(now, w, dur);
                pf.received[k] += 1;
            }
            until = until.max(pf.rx[k].paused_until);
        }
        p.pause.track(now, w, until);
        self.pause_receipts += 1;
        if self.is_switch(self.ports[port.idx()].node) {
            while newly != 0 {
                let k = newly.trailing_zeros() as usize;
                newly &= newly - 1;
                self.pfc_detect_cycle(port.idx(), k);
            }
        }
    }

    /// Is switch port `port`'s priority `k` blocked: frames queued and held by PFC?
    fn pfc_blocked(&self, port: usize, k: usize) -> bool {
        let pf = self.ports[port].pfc.as_ref().expect("PFC port");
        !pf.queues[k].is_empty() && pf.holds(k, self.now)
    }

    /// The blocked queues that blocked queue (`port`, `k`) waits on: at the peer switch, those holding
    /// priority-`k` frames that came in from `port`'s link.
    fn pfc_waits_on(&self, port: usize, k: usize) -> Vec<usize> {
        let p = &self.ports[port];
        let s = self.switch_of[p.peer_node.idx()];
        if s == u32::MAX {
            return Vec::new();
        }
        self.switches[s as usize]
            .ports
            .iter()
            .map(|q| q.idx())
            .filter(|&q| {
                self.pfc_blocked(q, k)
                    && self.ports[q].pfc.as_ref().expect("PFC port").queues[k].iter().any(|&f| self.frames.get(f).ingress == p.peer)
            })
            .collect()
    }

    /// Deadlock detection when queue (`port`, `k`) became blocked or gained a frame from a blocked
    /// upstream: a path of the wait-for graph over blocked queues back to it closes a cycle. A cycle
    /// of blocked queues can still dissolve (a counter may drain through queues outside it); the
    /// end-of-run report says which persisted.
    pub(crate) fn pfc_detect_cycle(&mut self, port: usize, k: usize) {
        const MAX_VISITS: usize = 4096;
        let start = port;
        let mut parent: Vec<(usize, usize)> = vec![(start, usize::MAX)];
        let mut stack = vec![start];
        while let Some(u) = stack.pop() {
            for v in self.pfc_waits_on(u, k) {
                if v == start {
                    let mut cyc = vec![(u, k)];
                    let mut w = u;
                    while w != start {
                        w = parent.iter().find(|e| e.0 == w).expect("visited").1;
                        cyc.push((w, k));
                    }
                    cyc.reverse();
                    let log = &mut self.pfc_cycles;
                    log.detected += 1;
                    if log.first.is_none() {
                        log.first = Some((self.now, cyc));
                    }
                    return;
                }
                if parent.len() < MAX_VISITS && !parent.iter().any(|e| e.0 == v) {
                    parent.push((v, u));
                    stack.push(v);
                }
            }
        }
    }

    /// The transmitter of PFC switch port `pid` looks for work: a pending PFC frame first, then the
    /// head of the queue its scheduler picks among the priorities not held by PFC (the watchdog
    /// may release a priority paused too long).
    #[inline(never)] // off the one-FIFO hot paths that call it behind `pfc_enabled`
    pub(crate) fn pfc_try_send(&mut self, pid: PortId) {
        let now = self.now;
        let p = &mut self.ports[pid.idx()];
        let pf = p.pfc.as_mut().expect("PFC port");
        let (cev, quanta) = if pf.pending_xoff != 0 {
            let s = self.switch_of[p.node.idx()] as usize;
            (std::mem::take(&mut pf.pending_xoff), self.switches[s].pause.pfc.as_ref().expect("PFC switch").cfg.quanta)
        } else {
            (std::mem::take(&mut pf.pending_xon), 0)
        };
        if cev != 0 {
            for k in 0..PRIORITIES {
                pf.sent[k] += (cev >> k & 1) as u64;
            }
            return self.port_send_pause_frame(pid, quanta, cev);
        }
        if p.service_bps == 0 || p.q_bytes == 0 || self.in_pacing_gap(pid) {
            return;
        }
        let p = &mut self.ports[pid.idx()];
        let pf = p.pfc.as_mut().expect("PFC port");
        let (mut eligible, mut wake, mut trips) = (0u8, u64::MAX, 0);
        for k in 0..PRIORITIES {
            if pf.queues[k].is_empty() {
                continue;
            }
            let r = &mut pf.rx[k];
            if !r.holds(now) {
                if r.paused_until <= now {
                    r.paused_since = None;
                }
                eligible |= 1 << k;
                continue;
            }
            if let (Some(wd), Some(since)) = (self.watchdog, r.paused_since) {
                if now >= since + wd.timeout_ps {
                    // the watchdog trips: this priority ignores PFC for the recovery time
                    r.ignore_until = now + wd.recovery_ps;
                    r.watchdog_trips += 1;
                    r.paused_since = None;
                    trips += 1;
                    eligible |= 1 << k;
                    continue;
                }
                wake = wake.min(since + wd.timeout_ps);
            }
            wake = wake.min(r.paused_until);
        }
        self.c.watchdog_trips += trips;
        if eligible == 0 {
            if wake != u64::MAX && p.wake_at != wake {
                p.wake_at = wake;
                self.schedule(wake, Event::PortWake { port: pid });
            }
            return;
        }
        let s = self.switch_of[p.node.idx()] as usize;
        let sched = &self.switches[s].pause.pfc.as_ref().expect("PFC switch").cfg.scheduler;
        let frames = &self.frames;
        let k = pf.pick(eligible, sched, |f| frames.get(f).size as u64);
        let head = *pf.queues[k].front().expect("picked queue");
        self.port_start_data(pid, head);
    }
}

/// Per-(port, priority) PFC counters for `summary.json` `pfc` (ports of switches, and hosts facing
/// them), with the totals per priority. `name(node)` names a node; `window_ps` is the statistics
/// window.
pub fn summary(net: &Network, name: &dyn Fn(usize) -> String, window_ps: u64) -> Value {
    let (mut sent, mut received, mut paused, mut trips, mut hdrops) = ([0u64; 8], [0u64; 8], [0f64; 8], 0u64, 0u64);
    let mut ports = Vec::new();
    for p in &net.ports {
        let Some(pf) = p.pfc.as_ref() else { continue };
        let frac: Vec<f64> = pf.rx.iter().map(|r| r.paused_acc_ps as f64 / window_ps as f64).collect();
        let wd: Vec<u32> = pf.rx.iter().map(|r| r.watchdog_trips).collect();
        for k in 0..PRIORITIES {
            sent[k] += pf.sent[k];
            received[k] += pf.received[k];
            paused[k] = paused[k].max(frac[k]);
            trips += wd[k] as u64;
            hdrops += pf.headroom_drops[k];
        }
        ports.push(json!({
            "node": name(p.node.idx()),
            "peer": name(p.peer_node.idx()),
            "pause_sent": pf.sent,
            "pause_received": pf.received,
            "paused_fraction": frac,
            "watchdog_trips": wd,
            "headroom_bytes": pf.headroom,
            "headroom_max_bytes": pf.head_max,
            "headroom_drops": pf.headroom_drops,
        }));
    }
    let first = net.pfc_cycles.first.as_ref().map(|(t, cyc)| {
        let label = |&(port, k): &(usize, usize)| {
            let p = &net.ports[port];
            format!("{}>{}:p{}", name(p.node.idx()), name(p.peer_node.idx()), k)
        };
        json!({ "t_s": crate::time::to_s(*t), "queues": cyc.iter().map(label).collect::<Vec<_>>() })
    });
    json!({
        "cycles_detected": net.pfc_cycles.detected,
        "first_cycle": first,
        "pause_sent": sent,
        "pause_received": received,
        "max_paused_fraction": paused,
        "watchdog_trips": trips,
        "headroom_drops": hdrops,
        "ports": ports,
    })
}

/// PFC deadlock at the end of the run: (number of stuck (port, priority) queues, one cycle of them
/// as "switch>peer:pK", each waiting on the next, or empty). A switch queue is stuck when it holds
/// frames and its priority has been paused without a break for at least `stuck_ps`; queue (P, k) at
/// switch S toward N waits on queue (Q, k) of N when Q is stuck and holds priority-k frames that
/// came in from S — the frames whose counter at N keeps XOFF asserted toward S.
pub fn deadlock_report(net: &Network, name: &dyn Fn(usize) -> String, stuck_ps: u64) -> (usize, Vec<String>) {
    let end = net.now;
    let id = |port: usize, k: usize| port * PRIORITIES + k;
    let n = net.ports.len() * PRIORITIES;
    let mut stuck = vec![false; n];
    for (i, p) in net.ports.iter().enumerate() {
        let Some(pf) = p.pfc.as_ref().filter(|_| net.is_switch(p.node)) else { continue };
        for k in 0..PRIORITIES {
            let r = &pf.rx[k];
            stuck[id(i, k)] = !pf.queues[k].is_empty() && r.paused_until > end && r.paused_since.is_some_and(|t| end >= t + stuck_ps);
        }
    }
    let n_stuck = stuck.iter().filter(|&&x| x).count();
    if n_stuck == 0 {
        return (0, Vec::new());
    }
    let mut by_node: Vec<Vec<usize>> = vec![Vec::new(); net.switch_of.len()];
    for (i, p) in net.ports.iter().enumerate() {
        if (0..PRIORITIES).any(|k| stuck[id(i, k)]) {
            by_node[p.node.idx()].push(i);
        }
    }
    let succ = |v: usize| -> Vec<usize> {
        let (port, k) = (v / PRIORITIES, v % PRIORITIES);
        let p = &net.ports[port];
        by_node[p.peer_node.idx()]
            .iter()
            .filter(|&&q| {
                stuck[id(q, k)] && net.ports[q].pfc.as_ref().expect("PFC port").queues[k].iter().any(|&f| net.frames.get(f).ingress == p.peer)
            })
            .map(|&q| id(q, k))
            .collect()
    };
    let cycle = find_cycle(n, &stuck, succ).unwrap_or_default();
    let label = |v: usize| {
        let p = &net.ports[v / PRIORITIES];
        format!("{}>{}:p{}", name(p.node.idx()), name(p.peer_node.idx()), v % PRIORITIES)
    };
    (n_stuck, cycle.into_iter().map(label).collect())
}

/// One cycle of the graph restricted to `on` vertices (iterative DFS with colours; the first back
/// edge closes it), in edge order.
fn find_cycle(n: usize, on: &[bool], succ: impl Fn(usize) -> Vec<usize>) -> Option<Vec<usize>> {
    let mut colour = vec![0u8; n];
    let mut parent = vec![usize::MAX; n];
    for start in 0..n {
        if !on[start] || colour[start] != 0 {
            continue;
        }
        colour[start] = 1;
        let mut stack = vec![(start, succ(start), 0usize)];
        while let Some((u, next, k)) = stack.last_mut() {
            let Some(&v) = next.get(*k) else {
                colour[*u] = 2;
                stack.pop();
                continue;
            };
            *k += 1;
            let u = *u;
            if !on[v] {
                continue;
            }
            if colour[v] == 0 {
                colour[v] = 1;
                parent[v] = u;
                stack.push((v, succ(v), 0));
            } else if colour[v] == 1 {
                let mut cyc = vec![u];
                let mut w = u;
                while w != v {
                    w = parent[w];
                    cyc.push(w);
                }
                cyc.reverse();
                return Some(cyc);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_cycle_returns_a_cycle_in_edge_order() {
        // 0 -> 1 -> 2 -> 0, 3 -> 1
        let adj = [vec![1], vec![2], vec![0], vec![1]];
        let cyc = find_cycle(4, &[true; 4], |v| adj[v].clone()).expect("cycle");
        assert_eq!(cyc.len(), 3);
        for (a, b) in cyc.iter().zip(cyc.iter().cycle().skip(1)) {
            assert!(adj[*a].contains(b), "{cyc:?}");
        }
        assert!(find_cycle(4, &[true, true, false, true], |v| adj[v].clone()).is_none());
    }

    #[test]
    fn strict_priority_serves_the_highest_and_dwrr_shares_by_quantum() {
        let mut pf = PfcPort::default();
        for k in [1usize, 3] {
            for i in 0..100 {
                pf.queues[k].push_back(FrameId(i));
            }
        }
        assert_eq!(pf.pick(0b1010, &SchedulerIr::Strict, |_| 1500), 3);
        // DWRR with quanta 3000 (priority 3) and 1500 (priority 1): 2:1 in frames of 1500 B
        let mut q = [1500u32; 8];
        q[3] = 3000;
        let sched = SchedulerIr::Dwrr { quantum_bytes: q };
        let mut served = [0u32; 8];
        for _ in 0..60 {
            let k = pf.pick(0b1010, &sched, |_| 1500);
            served[k] += 1;
            pf.pop(k, 0);
        }
        assert_eq!((served[3], served[1]), (40, 20));
    }
}
