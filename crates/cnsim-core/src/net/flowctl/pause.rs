//! IEEE 802.3x PAUSE (model reference §1.4): the receiver side (a transmitter that stops until its pause
//! time expires) and the generator side (watermarks on a switch's buffers: GLOBAL — any egress
//! queue ≥ HIGH pauses every input, XON when all ≤ LOW — or SELECTIVE — an input partition ≥ HIGH
//! pauses that input only). XOFF is refreshed at a fraction of its pause time while asserted.
//!
//! The per-port state is one [`PortPause`] and the per-switch state one [`SwitchPause`]; per-
//! priority PFC (802.1Qbb, [`super::pfc`]) holds one `PortPause` per priority.

use super::PfcSwitch;
use crate::event::Event;
use crate::frame::FrameId;
use crate::ids::{NodeId, PortId};
use crate::ir::PauseIr;
use crate::net::{Network, NONE_U32};
use crate::time::SimTime;

/// PAUSE state of one port: as a paused transmitter, and as the switch port that sends XOFF/XON
/// toward its peer.
///
/// `repr(C)`, by use: `paused_until` ends `Port`'s first cache line, with `busy_until`; the next
/// 64 bytes (`Port`'s second line) hold all that a PAUSE's receipt and a switch's XOFF/XON write,
/// so that a global toggle, which touches every port of the switch and every host, reads one line
/// of each port beyond the first; the watchdog's fields, read only while a switch port is paused,
/// come after.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct PortPause {
    /// Set by PAUSE frames received on this port: no new frame starts before it.
    pub paused_until: SimTime,
    // (second line)
    /// Start of the current (possibly open) paused interval, for the paused-time statistic.
    pub pause_from: SimTime,
    /// Time paused within the statistics window, ps.
    pub paused_acc_ps: u64,
    /// Start of the current unbroken paused period (XOFF refreshes do not break it), if paused
    /// (read only while the port is paused: after a pause has run out it may still hold its start,
    /// and the next PAUSE received sets it anew).
    pub paused_since: Option<SimTime>,
    /// The refresh of an XOFF sent while one was pending (the latest such XOFF): its event's
    /// reserved key, in halves (`refresh_t` = `NO_REFRESH`: none; a `u128` would align this
    /// record, and `Port`'s first line with it, to 16 bytes), and generation.
    refresh_t: u64,
    refresh_low: u64,
    refresh_gen: u32,
    /// Generation of the last PAUSE sent (stale refresh events are ignored).
    pub gen: u32,
    /// A PAUSE (quanta; 0 = XON) waiting to go out ahead of the queue.
    pub pending: Option<u16>,
    /// Selective mode: XOFF currently asserted toward the peer through this port.
    pub xoff: bool,
    /// Global mode: this egress queue is ≥ HIGH / > LOW.
    pub above_high: bool,
    pub above_low: bool,
    /// A `PauseRefresh` event of this port is pending (one at a time: [`Network::send_pause`]).
    pub refresh_pending: bool,
    // (third line)
    /// Watchdog: PAUSE is ignored until this instant.
    pub ignore_until: SimTime,
    /// Watchdog: times this port stopped honouring PAUSE.
    pub watchdog_trips: u32,
    /// (`Port`'s later fields keep their cache lines)
    _spare: u32,
    _spare2: u64,
}

/// `PortPause::refresh_t` when no later XOFF's refresh is noted.
const NO_REFRESH: u64 = u64::MAX;

impl Default for PortPause {
    fn default() -> Self {
        PortPause {
            paused_until: 0,
            pause_from: 0,
            paused_acc_ps: 0,
            paused_since: None,
            refresh_t: NO_REFRESH,
            refresh_low: 0,
            refresh_gen: 0,
            gen: 0,
            pending: None,
            xoff: false,
            above_high: false,
            above_low: false,
            refresh_pending: false,
            ignore_until: 0,
            watchdog_trips: 0,
            _spare: 0,
            _spare2: 0,
        }
    }
}

// the second line's fields fill it exactly; the record keeps its size (`Port`'s layout)
const _: () = assert!(std::mem::offset_of!(PortPause, ignore_until) == 72);
const _: () = assert!(std::mem::size_of::<PortPause>() == 96);

impl PortPause {
    /// A PAUSE of `pause_ps` (its quanta's time at the link's rate; 0 = XON) arrived at `now`;
    /// paused time is accounted after the warm-up `w`.
    #[inline]
    pub fn receive(&mut self, now: SimTime, w: SimTime, pause_ps: u64) {
        self.close(now, w);
        let was_paused = self.paused_until > now;
        self.paused_until = now + pause_ps;
        if pause_ps == 0 {
            self.paused_since = None;
        } else if !was_paused || self.paused_since.is_none() {
            self.paused_since = Some(now);
        }
    }

    /// Is the transmitter held by PAUSE at `now` (and not overriding it by its watchdog)?
    #[inline]
    pub fn holds(&self, now: SimTime) -> bool {
        self.paused_until > now && now >= self.ignore_until
    }

    /// PFC port: the aggregate "some priority paused" state is now paused until `until` (the
    /// latest of its priorities'); the paused-time statistic closes its interval at `now`.
    pub fn track(&mut self, now: SimTime, w: SimTime, until: SimTime) {
        self.close(now, w);
        self.paused_until = until;
    }

    /// Close the paused-time statistic's current interval at `at` (a PAUSE's arrival, or the end of
    /// the run); the paused time counts after the warm-up `w`.
    #[inline]
    pub fn close(&mut self, at: SimTime, w: SimTime) {
        let end = self.paused_until.min(at);
        let from = self.pause_from.max(w);
        if end > from {
            self.paused_acc_ps += end - from;
        }
        self.pause_from = at;
    }
}

/// The delay of the refresh of an XOFF of `quanta` sent on port `p`: `frac` of its pause time.
#[inline]
fn refresh_delay(p: &crate::net::Port, quanta: u16, frac: f64) -> u64 {
    ((p.tx_ps(quanta as u64 * 64) as f64 * frac) as u64).max(1)
}

/// PAUSE generation of one switch.
#[derive(Debug, Clone)]
pub struct SwitchPause {
    pub cfg: PauseIr,
    /// Global mode: number of egress queues at or above HIGH / above LOW.
    pub n_high: u32,
    pub n_above_low: u32,
    pub xoff_global: bool,
    /// PFC mode: configuration and shared-pool state (None in the other modes).
    pub pfc: Option<Box<PfcSwitch>>,
}

impl SwitchPause {
    /// The PAUSE generator of a switch whose buffer holds `buffer_bytes`.
    pub fn new(cfg: PauseIr, buffer_bytes: u64) -> Self {
        let pfc = match &cfg {
            PauseIr::Pfc(c) => Some(Box::new(PfcSwitch::new(c.clone(), buffer_bytes))),
            _ => None,
        };
        SwitchPause { cfg, n_high: 0, n_above_low: 0, xoff_global: false, pfc }
    }
    pub fn enabled(&self) -> bool {
        !matches!(self.cfg, PauseIr::None)
    }
}

impl Network {
    /// MAC-control frame `fr` arrived on `port` (a switch's or a host's, not in a batch): a PFC
    /// frame's classes, or an 802.3x PAUSE the whole transmitter, stop for its pause time (XON: go on).
    pub(crate) fn mac_control_receive(&mut self, port: PortId, fr: FrameId) {
        match fr.cev() {
            0 => self.pause_receive(port, fr.quanta()),
            cev => self.pfc_receive(port, cev, fr.quanta()),
        }
    }

    /// A PAUSE frame arrived on `port`: its transmitter stops until the pause time expires.
    pub(crate) fn pause_receive(&mut self, port: PortId, quanta: u16) {
        self.pause_receive_inline(port, quanta);
    }

    /// [`Network::pause_receive`], inlined where a batch's arrivals are handled; returns the port's
    /// end of transmission, end of pause, node and [`crate::net::Port::pause_guarded`], read with it.
    #[inline(always)]
    fn pause_receive_inline(&mut self, port: PortId, quanta: u16) -> (SimTime, SimTime, NodeId, bool) {
        let (now, w) = (self.now, self.cfg.warmup_ps);
        let p = &mut self.ports[port.idx()];
        // a quantum is 512 bit times: a multiply at the usual rates (`Port::tx_ps`)
        let dur = p.tx_ps(quanta as u64 * 64);
        p.pause.receive(now, w, dur);
        let nic = (p.busy_until, p.pause.paused_until, p.node, p.pause_guarded);
        self.pause_receipts += 1;
        nic
    }

    /// The pause time and refresh fraction of switch `s`'s 802.3x PAUSE (None: not this mode).
    fn pause_params(&self, s: usize) -> Option<(u16, f64)> {
        match self.switches[s].pause.cfg {
            PauseIr::Global { quanta, refresh_fraction, .. } | PauseIr::Selective { quanta, refresh_fraction, .. } => {
                Some((quanta, refresh_fraction))
            }
            PauseIr::None | PauseIr::Pfc(_) => None,
        }
    }

    /// Queue an XOFF (or XON) on switch port `port`, ahead of its data; schedule the refresh.
    fn send_pause(&mut self, port: PortId, xoff: bool) {
        let s = self.switch_of[self.ports[port.idx()].node.idx()] as usize;
        let Some((quanta, frac)) = self.pause_params(s) else { return };
        self.queue_pause(port, if xoff { quanta } else { 0 });
        if xoff {
            self.schedule_refresh(port, quanta, frac);
        }
        self.port_try_send(port);
    }

    /// Note a PAUSE of `quanta` (0 = XON) for port `port` to send ahead of its data.
    #[inline]
    fn queue_pause(&mut self, port: PortId, quanta: u16) {
        let p = &mut self.ports[port.idx()];
        p.pause.pending = Some(quanta);
        p.pause.gen = p.pause.gen.wrapping_add(1);
    }

    /// The refresh of the XOFF of `quanta` just queued on `port`, due `frac` of its pause time later.
    ///
    /// A port has one refresh event pending at a time: each XOFF used to schedule one, and under
    /// a global PAUSE, with a cycle far shorter than the refresh time, all but the last were stale
    /// when they fell due (100 senders: a stale event per sender per XOFF). An XOFF sent while one
    /// is pending (due sooner: a refresh falls due a fixed time after its XOFF) only notes its
    /// own; the pending event moves there when it falls due, with the key reserved now, so it
    /// runs where it would have.
    #[inline]
    fn schedule_refresh(&mut self, port: PortId, quanta: u16, frac: f64) {
        let t = self.now + refresh_delay(&self.ports[port.idx()], quanta, frac);
        self.schedule_refresh_at(port, t);
    }

    /// [`Network::schedule_refresh`] of the refresh due at `t` (inlined in a global XOFF's loop).
    #[inline(always)]
    fn schedule_refresh_at(&mut self, port: PortId, t: SimTime) {
        let Network { ports, q, .. } = self;
        let p = &mut ports[port.idx()];
        let ev = Event::PauseRefresh { port, gen: p.pause.gen };
        let key = q.reserve(t, &ev);
        if p.pause.refresh_pending {
            (p.pause.refresh_t, p.pause.refresh_low, p.pause.refresh_gen) = ((key >> 64) as u64, key as u64, p.pause.gen);
        } else {
            p.pause.refresh_pending = true;
            q.push_key(key, ev);
        }
    }

    /// Global PAUSE: switch `s` sends XOFF (`xoff`) or XON on every port. The frames start (on
    /// the idle ports) one after another with no other event scheduled between them. Without link
    /// events each is handed to the link as it starts: the arrivals are gathered in one batch
    /// ([`crate::event::EventQueue::push_batch`]; one per instant, should the ports' rates differ),
    /// in port order, as as many pushes one right after another would have them, and a frame's end
    /// is an event only where the port will have something to look at then (a frame queued, a
    /// pause running: `Port::ctrl_arrival_due`; else `Port::ctrl_handed`). The ends that are events
    /// are a batch too; with link events (a frame may be lost at its end) every end is, and
    /// schedules its arrival ([`Network::run_batch`]). The XOFFs' refreshes are scheduled after them
    /// all, in the same port order (a refresh is of another class than a frame's end or arrival:
    /// which takes its key first changes no order). Out of line: [`Network::pause_check`] runs on
    /// every enqueue and dequeue, this on few.
    #[inline(never)]
    fn send_pause_all(&mut self, s: usize, xoff: bool) {
        let Some((quanta, frac)) = self.pause_params(s) else { return };
        let n = self.switches[s].ports.len();
        let q = if xoff { quanta } else { 0 };
        if self.pfc_enabled {
            // (PFC on another switch: the general way)
            for k in 0..n {
                let port = self.switches[s].ports[k];
                self.queue_pause(port, q);
                self.port_try_send(port);
            }
            if xoff {
                let ports = std::mem::take(&mut self.switches[s].ports);
                self.schedule_refreshes(&ports, quanta, frac);
                self.switches[s].ports = ports;
            }
        } else {
            // the list of the switch's ports held here while it is walked (nothing called below
            // reads it), so that it is not looked up again after each port's writes
            let ports = std::mem::take(&mut self.switches[s].ports);
            // (the frames' ends that remain events, and their instant; the arrivals, and theirs)
            let (mut id, mut ends) = self.q.batch_storage();
            let (mut aid, mut arrivals) = self.q.batch_storage();
            let (now, mut t, mut ta) = (self.now, 0, 0);
            // a frame on a link that may fail is handed over at its end (crate::net::dynamics)
            let hand_over = self.dynamics.is_none();
            #[cfg(test)]
            let hand_over = hand_over && !tests::NO_HAND_OVER.with(|n| n.get());
            for &port in &ports {
                // queue_pause, then what port_try_send does first (on a busy port it would find
                // nothing else to do: the PAUSE waits for the end of its frame)
                let p = &mut self.ports[port.idx()];
                p.pause.gen = p.pause.gen.wrapping_add(1);
                if p.busy && !(p.ctrl_handed && p.busy_until <= now) {
                    p.pause.pending = Some(q);
                    if p.ctrl_handed {
                        // (the end of its frame handed over is no event: a look then)
                        self.port_handed_free(port);
                    }
                    continue;
                }
                p.ctrl_handed = false;
                p.pause.pending = None;
                let t_end = self.start_pause_frame(port, q, 0);
                if hand_over {
                    let p = &mut self.ports[port.idx()];
                    let (t_arr, arrive) = (t_end + p.prop_ps, Event::Arrive { port: p.peer, frame: p.tx_frame });
                    if t_arr != ta && !arrivals.is_empty() {
                        self.q.push_batch(aid, ta, arrivals);
                        (aid, arrivals) = self.q.batch_storage();
                    }
                    ta = t_arr;
                    arrivals.push(arrive);
                    if p.queue.is_empty() && p.pause.paused_until <= t_end {
                        // nothing for the port to look at when the frame ends: no event then
                        // (it counts as the one it replaces)
                        p.ctrl_handed = true;
                        self.folded_events += 1;
                        #[cfg(test)]
                        tests::HANDED.with(|n| n.set(n.get() + 1));
                        continue;
                    }
                    p.ctrl_arrival_due = true;
                }
                if t_end != t && !ends.is_empty() {
                    self.q.push_batch(id, t, ends);
                    (id, ends) = self.q.batch_storage();
                }
                t = t_end;
                ends.push(Event::PortTxDone { port });
            }
            self.q.push_batch(id, t, ends);
            self.q.push_batch(aid, ta, arrivals);
            if xoff {
                self.schedule_refreshes(&ports, quanta, frac);
            }
            self.switches[s].ports = ports;
        }
    }

    /// The refreshes of an XOFF of `quanta` just sent on each of `ports`, in their order.
    #[inline(always)]
    fn schedule_refreshes(&mut self, ports: &[PortId], quanta: u16, frac: f64) {
        // the refresh delay of the ports' common rate, computed once (0: none yet)
        let (mut ps_per_byte, mut delay) = (0, 0);
        for &port in ports {
            let p = &self.ports[port.idx()];
            if p.ps_per_byte == 0 || p.ps_per_byte != ps_per_byte {
                (ps_per_byte, delay) = (p.ps_per_byte, refresh_delay(p, quanta, frac));
            }
            self.schedule_refresh_at(port, self.now + delay);
        }
    }

    /// The members of batch `id` ([`Event::Batch`]: MAC-control frames ending their transmission
    /// at one instant, or arriving), each handled as its own event would have been and counted
    /// as one, in their order; `seen` is shown each (golden traces).
    #[inline(never)]
    pub(crate) fn run_batch(&mut self, id: u32, seen: &mut impl FnMut(&Event)) {
        let (key, members) = self.q.take_batch(id);
        if (key as u64) >> 60 == 0 {
            self.run_arrivals(id, members, seen)
        } else {
            self.run_ends(id, key, members, seen)
        }
    }

    /// The members of a batch of arrivals (nothing pushed while one is handled goes before the
    /// next: a lower class).
    #[inline(always)]
    fn run_arrivals(&mut self, id: u32, members: Vec<Event>, seen: &mut impl FnMut(&Event)) {
        self.folded_events += members.len() as u64 - 1;
        for ev in &members {
            seen(ev);
            let Event::Arrive { port, frame } = *ev else { unreachable!("a batch of arrivals") };
            self.control_frame_arrive(port, frame);
        }
        self.q.recycle(id, members);
    }

    /// The members of a batch of MAC-control frames' ends (key `key`). The frames' arrivals, due
    /// one instant later one right after another (a frame's end schedules its arrival and looks
    /// for work on its port, which schedules nothing of their class), are written over the
    /// members already handled and scheduled as one batch under the key the first took when it
    /// was handled: the order of as many pushes. An arrival due at another instant (another
    /// link's delay or PFC response time) is scheduled by itself ([`EventQueue::push_batched`]).
    /// If handling a member pushed an event due before the next (of the instant, a lower class:
    /// an arrival over a link without delay), the rest go back to the queue, behind it; nothing
    /// pushed since the last look (the queue's `seq` unchanged): nothing to look at.
    ///
    /// [`EventQueue::push_batched`]: crate::event::EventQueue::push_batched
    #[inline(always)]
    fn run_ends(&mut self, id: u32, key: u128, mut members: Vec<Event>, seen: &mut impl FnMut(&Event)) {
        let now = self.now;
        // the arrivals: members[..w], due at `at` under `akey`
        let (mut w, mut at, mut akey) = (0, 0, 0);
        let mut quiet = self.q.seq();
        // the members handled (the others, if any, went back to the queue)
        let mut handled = members.len();
        for i in 0..members.len() {
            if i > 0 && self.q.seq() != quiet {
                if self.q.has_before(key) {
                    self.q.push_rest(key, &members[i..]);
                    handled = i;
                    break;
                }
                quiet = self.q.seq();
            }
            let ev = members[i];
            seen(&ev);
            let Event::PortTxDone { port } = ev else { unreachable!("only MAC-control frames' ends and arrivals are batched") };
            let Some((t, arrive, work)) = self.control_frame_done(port) else { continue };
            if t > now && (w == 0 || t == at) {
                if w == 0 {
                    let seq = self.q.seq();
                    (at, akey) = (t, self.q.reserve(t, &arrive));
                    if quiet == seq {
                        quiet = self.q.seq(); // (a reservation pushes nothing)
                    }
                }
                members[w] = arrive;
                w += 1;
            } else {
                self.q.push_batched(t, arrive);
            }
            if work {
                self.port_try_send(port);
            }
        }
        self.folded_events += handled as u64 - 1;
        members.truncate(w);
        self.q.push_batch_key(id, akey, members);
    }

    /// The transmission of the MAC-control frame on `port` ended (a batch's `PortTxDone`): the
    /// frame's arrival at the peer and when it is due (a PFC frame takes effect after the peer's
    /// response time), and whether `port_try_send` on the port, free now, may find something to
    /// do — a PAUSE waiting, a pause running (the watchdog may act), a frame queued, or PFC (its
    /// queues are elsewhere): a switch's ports toward its hosts, which a global XOFF/XON reaches
    /// with the others, have none, and the call and its look at the port's queue are saved (the
    /// caller calls it after the arrival is scheduled, which changes none of these). None: the
    /// link lost the frame ([`crate::net::dynamics`]), or its arrival was scheduled at its start
    /// ([`Port::ctrl_arrival_due`]), and the port has looked for work.
    ///
    /// [`Port::ctrl_arrival_due`]: crate::net::Port::ctrl_arrival_due
    #[inline(always)]
    fn control_frame_done(&mut self, port: PortId) -> Option<(SimTime, Event, bool)> {
        let now = self.now;
        let p = &mut self.ports[port.idx()];
        p.busy = false;
        if p.ctrl_arrival_due {
            // its arrival was scheduled at its start: the port looks for work
            p.ctrl_arrival_due = false;
            self.port_try_send(port);
            return None;
        }
        let (fr, peer, prop) = (p.tx_frame, p.peer, p.prop_ps);
        let work = self.pfc_enabled || p.pause.pending.is_some() || p.pause.paused_until > now || !p.queue.is_empty();
        let cev = fr.cev();
        let response = if cev != 0 { self.pfc_response_ps(port) } else { 0 };
        if self.dynamics.is_some() && self.lost_on_link(port, fr, now + prop) {
            self.port_try_send(port);
            return None;
        }
        Some((now + prop + response, Event::Arrive { port: peer, frame: fr }, work))
    }

    /// A PAUSE or PFC frame `fr` arrived on `port` (a host's or a switch's): its transmitter
    /// stops for the pause time, or goes on (XON). An 802.3x PAUSE's port is looked up once.
    #[inline(always)]
    fn control_frame_arrive(&mut self, port: PortId, fr: FrameId) {
        if self.deferring {
            // a host's deferred firings, before the pause changes what its NIC would do
            let h = self.host_of[self.ports[port.idx()].node.idx()];
            if h != NONE_U32 {
                self.catch_up(h as usize);
            }
        }
        let (quanta, cev) = (fr.quanta(), fr.cev());
        let (busy_until, until, node, guarded) = if cev != 0 {
            self.pfc_receive(port, cev, quanta);
            let p = &self.ports[port.idx()];
            (p.busy_until, p.pause.paused_until, p.node, p.pause_guarded)
        } else {
            self.pause_receive_inline(port, quanta)
        };
        // (a switch is no host: one look-up tells which)
        let h = self.host_of[node.idx()];
        if h == NONE_U32 {
            self.port_try_send(port);
        } else {
            self.pause_reached_nic(h as usize, busy_until, until, guarded);
        }
    }

    /// Host `h`'s NIC (port `port`) just received a PAUSE or PFC frame: it looks for work, unless it
    /// is serialising a frame. Then a pause changes nothing before the frame ends, and its NIC
    /// looks again then: the wake-up `host_try_send` would ask for is the one asked for when the
    /// frame started (or since, by whatever gave the host work while it was busy), so the host's
    /// and its flow's records are not read (under a global PAUSE most hosts are mid-frame when an
    /// XOFF reaches them). An idle NIC that an 802.3x pause now holds only waits for its end, if it
    /// has work: what `host_try_send` would do there, done here (under a global PAUSE, each XOFF
    /// to an idle NIC).
    #[inline]
    pub(crate) fn pause_reached_host(&mut self, h: usize, port: PortId) {
        let p = &self.ports[port.idx()];
        self.pause_reached_nic(h, p.busy_until, p.pause.paused_until, p.pause_guarded)
    }

    /// [`Network::pause_reached_host`] of a NIC busy until `busy_until`, paused until `until`, and
    /// guarded (`guarded`: [`crate::net::Port::pause_guarded`]).
    #[inline(always)]
    fn pause_reached_nic(&mut self, h: usize, busy_until: SimTime, until: SimTime, guarded: bool) {
        let now = self.now;
        if self.deferring && until > now {
            // a source's next firing deferred behind the limiter goes back to the event queue: the
            // NIC now waits for the pause's end, which may come before the limiter's
            self.resume_firing(h);
        }
        if busy_until > now {
            return;
        }
        if until > now && !self.pfc_enabled {
            // a guarded NIC asks for no wake-up (Network::ensure_host_pause_wake), whatever its
            // host has to send: the host's record is not read (under a global PAUSE, each XOFF to
            // an idle NIC)
            if guarded {
                #[cfg(test)]
                if !self.hosts[h].ctrl_q.is_empty() || self.hosts[h].backlogged > 0 {
                    tests::GUARDED.with(|n| n.set(n.get() + 1));
                }
                return;
            }
            let host = &self.hosts[h];
            if !host.ctrl_q.is_empty() || host.backlogged > 0 {
                self.ensure_host_wake(h, until, true);
            }
            return;
        }
        self.host_try_send(h);
    }

    /// Whether every 802.3x pause host NIC `pid` receives ends with an XON, or is extended by a
    /// refresh, before it runs out ([`crate::net::Port::pause_guarded`]). Its peer is a switch port
    /// that sends global or selective PAUSE, which sends XON when it de-asserts and re-sends XOFF
    /// `refresh_fraction` of the pause time after each while asserted; either waits at most for the
    /// end of the frame on the wire (the longest that may be: data, control or a congestion
    /// message), and arrives over the link an
    /// XOFF takes: before the pause runs out if the refresh's delay and that frame's time are
    /// shorter than the pause. Not where a frame may be lost (link events), nor under PFC (its own
    /// scheme), nor with INT (headers lengthen frames). A pause that may run out is woken at its end.
    /// `longest` is the longest frame that may be on a wire, with its wire overhead, bytes
    /// ([`crate::build`]: a flow's, a control frame, or a congestion message of its own size —
    /// BECN's, at most 9 216 B).
    pub(crate) fn pause_guarded(&self, pid: PortId, longest: u64) -> bool {
        if self.dynamics.is_some() || self.pfc_enabled || self.int.is_some() {
            return false;
        }
        #[cfg(test)]
        if tests::UNGUARDED.with(|n| n.get()) {
            return false;
        }
        let p = &self.ports[pid.idx()];
        let peer = &self.ports[p.peer.idx()];
        let s = self.switch_of[peer.node.idx()];
        if s == NONE_U32 {
            return false;
        }
        let (PauseIr::Global { quanta, refresh_fraction, .. } | PauseIr::Selective { quanta, refresh_fraction, .. }) =
            self.switches[s as usize].pause.cfg
        else {
            return false;
        };
        let pause = p.tx_ps(quanta as u64 * 64);
        refresh_delay(peer, quanta, refresh_fraction) + peer.tx_ps(longest) < pause
    }

    /// Re-send XOFF on `port` if it is still asserted and `gen` is the latest PAUSE sent there.
    pub(crate) fn pause_refresh(&mut self, port: PortId, gen: u32) {
        let p = &mut self.ports[port.idx()];
        if p.pfc.is_some() {
            return self.pfc_refresh(port, gen);
        }
        p.pause.refresh_pending = false;
        if p.pause.refresh_t != NO_REFRESH {
            // a later XOFF was sent (so `gen` is stale): on to its refresh
            let (t, low, next) = (p.pause.refresh_t, p.pause.refresh_low, p.pause.refresh_gen);
            p.pause.refresh_t = NO_REFRESH;
            p.pause.refresh_pending = true;
            let key = ((t as u128) << 64) | low as u128;
            return self.q.push_key(key, Event::PauseRefresh { port, gen: next });
        }
        let p = &self.ports[port.idx()];
        if p.pause.gen == gen {
            let s = self.switch_of[p.node.idx()] as usize;
            let asserted = match self.switches[s].pause.cfg {
                PauseIr::Global { .. } => self.switches[s].pause.xoff_global,
                PauseIr::Selective { .. } => p.pause.xoff,
                PauseIr::None | PauseIr::Pfc(_) => false,
            };
            if asserted {
                self.send_pause(port, true);
            }
        }
    }

    /// Re-evaluate the PAUSE watermarks of switch `s` after an occupancy change of egress `out`
    /// and input partition `inp`. Inlined in the switch's enqueue and dequeue hooks: in global
    /// mode a look at the egress's two watermarks; what follows a crossing (few changes cross
    /// one) and the selective mode's look at an input are out of line.
    #[inline(always)]
    pub(crate) fn pause_check(&mut self, s: usize, out: PortId, inp: PortId) {
        match self.switches[s].pause.cfg {
            PauseIr::None | PauseIr::Pfc(_) => {}
            PauseIr::Global { high_bytes, low_bytes, .. } => {
                let p = &self.ports[out.idx()];
                let (hi, lo) = (p.q_bytes >= high_bytes, p.q_bytes > low_bytes);
                // unchanged, the counts and so the switch's state are too (no toggle is ever left
                // due: the counts change only here)
                if hi != p.pause.above_high || lo != p.pause.above_low {
                    self.global_watermark_crossed(s, out, hi, lo);
                }
            }
            PauseIr::Selective { high_bytes, low_bytes, .. } => self.selective_check(s, out, inp, high_bytes, low_bytes),
        }
    }

    /// Selective mode: [`Network::pause_check`] of input `inp` (its partition toward `out`).
    #[inline(never)]
    fn selective_check(&mut self, s: usize, out: PortId, inp: PortId, high_bytes: u64, low_bytes: u64) {
        if inp.is_none() {
            return;
        }
        if let Some(c) = self.cell(s, inp, out) {
            // partitioned output buffers (model reference §12 R3): partition (i, j) >= HIGH pauses input
            // i; XON when every partition of input i is <= LOW
            let xoff = self.ports[inp.idx()].pause.xoff;
            let n = self.switches[s].ports.len();
            let row = c / n * n;
            if !xoff && self.switches[s].cells[c] >= high_bytes {
                self.ports[inp.idx()].pause.xoff = true;
                self.send_pause(inp, true);
            } else if xoff && self.switches[s].cells[row..row + n].iter().all(|&b| b <= low_bytes) {
                self.ports[inp.idx()].pause.xoff = false;
                self.send_pause(inp, false);
            }
            return;
        }
        let p = &self.ports[inp.idx()];
        if !p.pause.xoff && p.part_bytes >= high_bytes {
            self.ports[inp.idx()].pause.xoff = true;
            self.send_pause(inp, true);
        } else if p.pause.xoff && p.part_bytes <= low_bytes {
            self.ports[inp.idx()].pause.xoff = false;
            self.send_pause(inp, false);
        }
    }

    /// Global mode: egress `out` of switch `s` is now at or above HIGH (`hi`) and above LOW
    /// (`lo`), and one of them changed: the switch's counts, and its XOFF or XON on every port
    /// when they call for one.
    #[inline(never)]
    fn global_watermark_crossed(&mut self, s: usize, out: PortId, hi: bool, lo: bool) {
        let p = &mut self.ports[out.idx()];
        let sw = &mut self.switches[s].pause;
        if hi != p.pause.above_high {
            p.pause.above_high = hi;
            if hi {
                sw.n_high += 1
            } else {
                sw.n_high -= 1
            }
        }
        if lo != p.pause.above_low {
            p.pause.above_low = lo;
            if lo {
                sw.n_above_low += 1
            } else {
                sw.n_above_low -= 1
            }
        }
        let toggle = if !sw.xoff_global && sw.n_high > 0 {
            Some(true)
        } else if sw.xoff_global && sw.n_above_low == 0 {
            Some(false)
        } else {
            None
        };
        if let Some(x) = toggle {
            self.switches[s].pause.xoff_global = x;
            self.send_pause_all(s, x);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::ir::*;
    use crate::net::paced::tests::{comparable, qcn_fan_in_of, run_in_steps, US};

    thread_local! {
        /// A global XOFF/XON hands no PAUSE frame over at its start, to compare with.
        pub(super) static NO_HAND_OVER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        /// PAUSE frames handed over with no end event, and the looks at such a port before its
        /// frame ended (`Network::port_handed_free`).
        pub(super) static HANDED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        pub(crate) static LOOKED_EARLY: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// Every host NIC held by a pause asks for a wake-up at its end, to compare with; the
        /// wake-ups not asked for (`Network::ensure_host_pause_wake`).
        pub(crate) static UNGUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        pub(crate) static GUARDED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// QCN fan-ins ([`qcn_fan_in_of`]) of CBR sources with random phases and Poisson sources (no
    /// two events of theirs in one picosecond but by chance) under a global PAUSE of `high` / `low`
    /// bytes: the switch sends its congestion messages to the senders through the ports its
    /// XOFFs and XONs go out on.
    fn qcn_paused(high: u64, low: u64, seed: u64) -> Ir {
        let pause = PauseIr::Global { high_bytes: high, low_bytes: low, quanta: 65535, refresh_fraction: 0.8 };
        qcn_fan_in_with(pause, seed)
    }

    /// [`qcn_paused`] under PAUSE `pause`.
    fn qcn_fan_in_with(pause: PauseIr, seed: u64) -> Ir {
        let source = |i: u32| match i % 2 {
            0 => (ProcessIr::Cbr { interval_ps: 2_000_000, phase_ps: 0, random_phase: true }, None, i as u64 * US, u64::MAX),
            _ => (ProcessIr::Poisson { mean_gap_ps: 1_800_000, sizes: None }, None, i as u64 * US, u64::MAX),
        };
        qcn_fan_in_of(source, pause, seed)
    }

    /// The results of `ir`, run in steps of `step` ps, as compared ([`comparable`]: a look at a
    /// port before its frame handed over ends, or a wake-up at a pause's end, is an event of its own).
    fn results(ir: Ir, step: u64) -> (serde_json::Value, String) {
        comparable(run_in_steps(ir, step).1)
    }

    #[test]
    fn a_pause_that_an_xon_or_a_refresh_ends_asks_for_no_wake_up_and_gives_the_same_runs() {
        // global and selective PAUSE; long pauses (guarded) and 4-quanta ones (205 ns: a frame
        // on the wire outlasts them, so their ends are woken); a refresh that comes late (0.99
        // of 3.4 ms: 34 µs before the end, more than the longest frame's 7.4 µs: guarded) and
        // one too late (0.99995: 170 ns)
        let cases = [
            (PauseIr::Global { high_bytes: 60_000, low_bytes: 20_000, quanta: 65535, refresh_fraction: 0.8 }, true),
            (PauseIr::Selective { high_bytes: 20_000, low_bytes: 5_000, quanta: 65535, refresh_fraction: 0.99 }, true),
            (PauseIr::Global { high_bytes: 60_000, low_bytes: 20_000, quanta: 65535, refresh_fraction: 0.99995 }, false),
            (PauseIr::Global { high_bytes: 30_000, low_bytes: 10_000, quanta: 4, refresh_fraction: 0.8 }, false),
        ];
        for (k, (pause, guarded)) in cases.into_iter().enumerate() {
            let step = if k % 2 == 0 { u64::MAX } else { 700 * US + 3 };
            GUARDED.with(|n| n.set(0));
            let with = results(qcn_fan_in_with(pause.clone(), 11 + k as u64), step);
            let skipped = GUARDED.with(|n| n.get());
            assert_eq!(skipped > 100, guarded, "case {k}: {skipped} wake-ups not asked for");
            UNGUARDED.with(|n| n.set(true));
            let without = results(qcn_fan_in_with(pause, 11 + k as u64), step);
            UNGUARDED.with(|n| n.set(false));
            assert!(with.0["pause"]["frames_sent"].as_u64().unwrap() > 100, "case {k}: the switch pauses the hosts");
            assert_eq!(with, without, "case {k}");
        }
    }

    #[test]
    fn pause_frames_handed_over_at_their_start_give_the_same_runs() {
        let (mut handed, mut early) = (0, 0);
        for (high, low, seed, step) in [(100_000, 50_000, 3, u64::MAX), (30_000, 20_000, 4, 900 * US + 7), (60_000, 10_000, 5, u64::MAX)] {
            HANDED.with(|n| n.set(0));
            LOOKED_EARLY.with(|n| n.set(0));
            let with = results(qcn_paused(high, low, seed), step);
            handed += HANDED.with(|n| n.get());
            early += LOOKED_EARLY.with(|n| n.get());
            NO_HAND_OVER.with(|n| n.set(true));
            let without = results(qcn_paused(high, low, seed), step);
            NO_HAND_OVER.with(|n| n.set(false));
            assert!(with.0["pause"]["frames_sent"].as_u64().unwrap() > 1_000, "the switch pauses the hosts");
            assert_eq!(with, without);
        }
        assert!(handed > 10_000, "{handed} PAUSE frames handed over");
        assert!(early > 0, "no port looked at before its frame handed over ended");
    }
}
