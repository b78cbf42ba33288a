//! Deferred firings of backlogged sources.
//!
//! A source of lone frames (CBR with a random phase, Poisson) faster than its flow's rate limiter
//! fires once per frame, and each firing only adds a frame to a queue that already has some: the
//! host's NIC looks at the queue when the limiter lets it, whatever the firing does. Such firings
//! are not queued as events. The time of the source's next firing is kept with its host
//! (`Network::deferred`), and the firings are carried out, each at its own time, when the host next
//! has an event (those due before it) and at the end of each step of the run. When the NIC takes
//! the queue's last frame, the next firing goes back to the event queue (it will find the queue
//! empty). Nothing but the host's own events reads or changes the queue and what its NIC would do,
//! so the results are those of the firings as events (an engine test compares the two, and in test
//! builds each deferred firing checks that its NIC would have done nothing), but for one order: a
//! firing put back in the event queue is scheduled then, not when its source last fired, so a firing
//! of another source in the same picosecond, scheduled in between, would go first. Sources on a
//! common grid (Bernoulli slots, CBR without a random phase), which fire together, are not
//! deferred; the others fall in one picosecond only by chance (phases and gaps are drawn in
//! picoseconds). QCN on the bench's fan-in-100 holds every frame at the hosts: a third of its
//! events were such firings.

use super::{Network, NONE_U32};
use crate::event::Event;
use crate::ids::FlowId;
use crate::ir::{Ir, ProcessIr, TransportIr};
use crate::time::SimTime;
use crate::traffic::Action;

/// "No deferred firing".
pub(crate) const NO_FIRING: SimTime = SimTime::MAX;

/// For each host, the source whose firings may be deferred (`NONE_U32`: none): the only source of
/// the host's only flow, a UDP flow of lone frames (CBR with a random phase, or Poisson, with no
/// destination set), on a host that receives no TCP or RDMA flow (their acknowledgements queue at
/// the host between its events).
pub(crate) fn deferrable_sources(ir: &Ir, host_of: &[u32], n_hosts: usize) -> Vec<u32> {
    let mut src = vec![NONE_U32; n_hosts];
    #[cfg(test)]
    if tests::NEVER.with(|n| n.get()) {
        return src;
    }
    if ir.rdma.is_some() {
        return src; // acknowledgements of RDMA transfers
    }
    let mut feeds = vec![0u32; ir.flows.len()];
    for s in &ir.sources {
        for &f in &s.flows {
            feeds[f as usize] += 1;
        }
    }
    let mut flows_of = vec![0u32; n_hosts];
    let mut receives_acks = vec![false; n_hosts];
    for f in &ir.flows {
        flows_of[host_of[f.src as usize] as usize] += 1;
        if !matches!(f.transport, TransportIr::Udp) {
            match f.dst {
                Some(d) => receives_acks[host_of[d as usize] as usize] = true,
                None => return src, // its transfers' destinations are drawn: any host may be one
            }
        }
    }
    for (i, s) in ir.sources.iter().enumerate() {
        let frames = matches!(s.process, ProcessIr::Cbr { random_phase: true, .. } | ProcessIr::Poisson { .. });
        let [f] = s.flows[..] else { continue };
        let h = host_of[ir.flows[f as usize].src as usize] as usize;
        if frames
            && s.dst_set.is_none()
            && feeds[f as usize] == 1
            && flows_of[h] == 1
            && !receives_acks[h]
            && matches!(ir.flows[f as usize].transport, TransportIr::Udp)
        {
            src[h] = i as u32;
        }
    }
    src
}

impl Network {
    /// Deferrable source `si`'s frame joined frames waiting for flow `fid`'s rate limiter, the
    /// host's NIC doing nothing now (`enqueue_at_host`): its next firing, due at `next`, is deferred
    /// if the NIC waits for the limiter past it (true returned). Else it is scheduled: a queue
    /// drained at the NIC's next look would bring it back to the event queue at more cost than its
    /// event (a pause ends early at an XON, and a global PAUSE on fan-in-100 holds a host's frames
    /// for less than a source's interval). A NIC a pause holds is not waiting for its limiter,
    /// whatever its wake-up (one held by a pause that an XON or a refresh ends asks for none:
    /// `Port::pause_guarded`).
    #[inline(never)]
    pub(crate) fn defer_firing(&mut self, si: usize, fid: FlowId, next: Option<SimTime>) -> bool {
        let h = self.sources[si].defer_host as usize;
        debug_assert_eq!(self.deferrable[h], si as u32);
        let wake = self.hosts[h].wake_at;
        if wake != self.flows[fid.idx()].next_allowed
            || next.is_some_and(|t| t >= wake)
            || self.ports[self.hosts[h].port.idx()].pause.paused_until > self.now
        {
            return false;
        }
        self.deferred[h] = next.unwrap_or(NO_FIRING);
        self.deferring = true;
        true
    }

    /// Host `h` has an event now: its deferred firings due before now happen first.
    #[inline(always)]
    pub(crate) fn catch_up(&mut self, h: usize) {
        if self.deferring && self.deferred[h] < self.now {
            self.catch_up_to(h, self.now);
        }
    }

    /// Host `h`'s deferred firings due before `t`, each at its time.
    #[cold]
    #[inline(never)]
    pub(crate) fn catch_up_to(&mut self, h: usize, t: SimTime) {
        let (si, fid) = (self.deferrable[h] as usize, self.hosts[h].first_flow);
        while self.deferred[h] < t {
            let at = self.deferred[h];
            #[cfg(test)]
            self.check_deferred(h, fid, at);
            let (act, next) = self.sources[si].fire(at);
            self.deferred[h] = next.unwrap_or(NO_FIRING);
            match act {
                Action::Frame { size, .. } => self.queue_generated(fid, 1, NONE_U32, size),
                Action::Nothing => {}
                _ => unreachable!("a deferrable source sends frames"),
            }
        }
    }

    /// Every host's deferred firings due before `t` (the end of a step of the run).
    pub(crate) fn catch_up_all(&mut self, t: SimTime) {
        if !self.deferring {
            return;
        }
        for h in 0..self.deferred.len() {
            if self.deferred[h] < t {
                self.catch_up_to(h, t);
            }
        }
    }

    /// Host `h`'s NIC took its flow's last frame: its deferred firing, if any, happens as an event
    /// (it will find the queue empty). The host's firings due before now have happened.
    #[inline(always)]
    pub(crate) fn resume_firing(&mut self, h: usize) {
        if !self.deferring {
            return;
        }
        let t = self.deferred[h];
        if t != NO_FIRING {
            self.deferred[h] = NO_FIRING;
            debug_assert!(t >= self.now);
            self.q.push(t, Event::SourceFire { source: self.deferrable[h] });
        }
    }

    /// (Tests.) A deferred firing at `at` would have done nothing but queue its frame: the host's
    /// NIC would not send at `at` (`host_try_send_idle`).
    #[cfg(test)]
    fn check_deferred(&mut self, h: usize, fid: FlowId, at: SimTime) {
        let now = std::mem::replace(&mut self.now, at);
        assert!(self.flows[fid.idx()].has_frame() && self.host_try_send_idle(h, fid), "a deferred firing at {at} would have acted");
        self.now = now;
    }
}

#[cfg(test)]
mod tests {
    use crate::ir::*;
    use crate::net::paced::tests::{comparable, qcn_fan_in_of, run_in_steps, US};

    thread_local! {
        /// No firing is deferred, to compare with.
        pub(super) static NEVER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// QCN fan-ins ([`qcn_fan_in_of`]) with every deferrable kind of source — CBR with a random
    /// phase, Poisson, a gated CBR, one that stops midway — and a Bernoulli source, never deferred;
    /// with 802.3x PAUSE at the switch (`pause`), or without.
    fn qcn_mixed(pause: bool) -> Ir {
        let source = |i: u32| match i % 4 {
            0 => (ProcessIr::Cbr { interval_ps: 2_400_000, phase_ps: 0, random_phase: true }, None, i as u64 * US, u64::MAX),
            1 => (ProcessIr::Poisson { mean_gap_ps: 2_400_000, sizes: None }, None, i as u64 * US, 9_000 * US),
            2 => (ProcessIr::Bernoulli { slot_ps: 1_200_000, p: 0.5 }, None, i as u64 * US, u64::MAX),
            _ => (
                ProcessIr::Cbr { interval_ps: 2_000_000, phase_ps: 0, random_phase: true },
                Some(GateIr { on_ps: 3_000 * US, off_ps: 1_000 * US, start_on: true }),
                i as u64 * US,
                u64::MAX,
            ),
        };
        let pause =
            if pause { PauseIr::Global { high_bytes: 100_000, low_bytes: 50_000, quanta: 65535, refresh_fraction: 0.8 } } else { PauseIr::None };
        qcn_fan_in_of(source, pause, 9)
    }

    #[test]
    fn deferred_firings_give_the_results_of_firings_as_events() {
        for (pause, step) in [(false, u64::MAX), (false, 700 * US + 1), (true, u64::MAX)] {
            // (the end of each step catches up the deferred firings)
            let (events, deferred) = run_in_steps(qcn_mixed(pause), step);
            NEVER.with(|n| n.set(true));
            let (all_events, plain) = run_in_steps(qcn_mixed(pause), step);
            NEVER.with(|n| n.set(false));
            assert!(events < all_events * 9 / 10, "firings deferred: {events} events against {all_events}");
            assert_eq!(deferred.summary["pause"]["frames_sent"].as_u64().unwrap() > 0, pause, "the switch pauses the hosts");
            let host_queued = deferred.summary["bytes"]["host_queued"].as_u64().unwrap();
            assert!(host_queued > 1_000_000, "QCN holds frames at the hosts: {host_queued} B");
            assert_eq!(comparable(deferred), comparable(plain));
        }
    }
}
