//! The paced send: a frame that a reaction point's rate limiter held in its flow's FIFO, sent at
//! the host's wake-up when the limiter lets it go (a flow paced below its source's rate: under
//! QCN on fan-in-100, every frame is queued when its source fires and sent here).

use super::host::lone_frame_started;
use super::Network;
use crate::cm::HostCtx;
use crate::frame::Frame;

impl Network {
    /// Host `h`, which has a reaction point, looks for work at its wake-up: a paced frame sent
    /// here, else the general look. Out of line: inlined into the event loop, it changed the
    /// loop's code for every scheme (fan-in-100 without CM +0.2 % instructions).
    #[inline(never)]
    pub(super) fn host_wake_send(&mut self, h: usize) {
        #[cfg(test)]
        if tests::GENERAL_ONLY.with(|g| g.get()) {
            return self.host_try_send(h);
        }
        if !self.host_send_paced(h) {
            self.host_try_send(h);
        }
    }

    /// [`Network::host_try_send`] at host `h`'s wake-up in its common case under a scheme with a
    /// reaction point: one flow, a UDP flow declared (not a transfer's queue), its next frame a
    /// lone one (no chunk in its FIFO), no control frame, the NIC idle and not paused, no PFC, INT,
    /// capture or link events, and the flow's window and limiter open. The same steps as
    /// `host_try_send`, `host_send_data` and `host_start_frame` take for that frame, in their
    /// order (the same frame, counters, events and hook call), with each record read once and
    /// none of their tests for other cases (QCN fan-in-100, 59 k such frames in 100 ms: 196.3 ->
    /// 191.8 M instructions). Returns whether it sent (else nothing was changed).
    #[inline(always)]
    fn host_send_paced(&mut self, h: usize) -> bool {
        let now = self.now;
        let host = &self.hosts[h];
        let (pid, fid) = (host.port, host.first_flow);
        if host.flows.len() != 1
            || !host.ctrl_q.is_empty()
            || host.backlogged == 0
            || self.pfc_enabled
            || self.tx_hook
            || self.int.is_some()
            || self.is_transfer_queue(fid)
        {
            return false;
        }
        let p = &self.ports[pid.idx()];
        let f = &self.flows[fid.idx()];
        if p.busy_until > now
            || p.pause.paused_until > now
            || f.sent_bytes >= f.send_limit
            || f.next_allowed > now
            || f.tcp.is_some()
            || !(f.lone_tail > 0 && f.backlog == f.lone_tail)
        {
            return false;
        }
        let (dst, prio, local) = (f.dst, f.prio, f.local);
        let (src, info_idx) = (host.node, host.info_idx);
        self.hosts[h].rr_next = 0;
        let size = self.take_lone(h, fid);
        // from here each record through the network's fields, borrowed apart: looked up once
        let Network { hosts, flows, ports, frames, c, q, cfg, host_infos, host_rngs, emits, rate_changes, limit_changes, timers, .. } = self;
        let fr = frames.alloc_made(|| Frame::lone_data(src, dst, fid, prio, size, now));
        let Some(rp) = hosts[h].rp.as_mut() else { unreachable!("host_wake_send's host has a reaction point") };
        let frame = frames.get_mut(fr);
        // host_ctx!'s context, from the fields borrowed apart (no INT here: the hook sees none)
        let mut ctx = HostCtx {
            now,
            info: &host_infos[info_idx],
            rng: &mut host_rngs[h],
            int: None,
            out: emits,
            rates: rate_changes,
            limits: limit_changes,
            timers,
            backlog: flows,
            extra_overhead_bytes: &mut c.extra_overhead_bytes,
        };
        rp.on_transmit(&mut ctx, local, frame);
        let size = frame.size;
        let t_end = lone_frame_started(&mut flows[fid.idx()], c, &mut ports[pid.idx()], q, cfg, (now, size, fr));
        if !(self.timers.is_empty() && self.rate_changes.is_empty() && self.limit_changes.is_empty() && self.emits.is_empty()) {
            // the hook asked for something: carried out, and the look of `host_start_frame`
            self.apply_host_effects_slow(h, false);
            let host = &self.hosts[h];
            if !host.ctrl_q.is_empty() || host.backlogged > 0 {
                let (t, wait) = self.host_next_look(h, t_end);
                self.ensure_host_wake(h, t, wait);
            }
        } else if self.hosts[h].backlogged > 0 {
            // nothing changed since the tests above (one flow, no control frame, no PFC): the
            // look of `host_next_look` for that case
            let f = &self.flows[fid.idx()];
            let (t, wait) = if f.next_allowed > t_end && f.sent_bytes < f.send_limit { (f.next_allowed, true) } else { (t_end, false) };
            self.ensure_host_wake(h, t, wait);
        }
        true
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::ir::*;
    use crate::Simulation;
    use serde_json::json;

    thread_local! {
        /// Every paced host's wake-up takes the general look (`host_try_send`), to compare with.
        pub(super) static GENERAL_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    pub(crate) const US: u64 = 1_000_000;

    /// A run of `ir` in steps of `step` ps (the end of each catches up deferred firings, ...): its
    /// event count and results.
    pub(crate) fn run_in_steps(ir: Ir, step: u64) -> (u64, crate::Results) {
        let mut sim = Simulation::new(ir).unwrap();
        let mut t = step;
        while !sim.run_until(t) {
            t += step;
        }
        (sim.events(), sim.finish().unwrap())
    }

    /// What two ways of running one scenario must agree on: the summary but for its wall time and
    /// event count, and the tables.
    pub(crate) fn comparable(r: crate::Results) -> (serde_json::Value, String) {
        let mut s = r.summary;
        let o = s.as_object_mut().unwrap();
        o.remove("wall_s");
        o.remove("events");
        (s, format!("{:?}", r.tables))
    }

    /// Eight senders, each on its own 10-Gb/s link into one 10-Gb/s port under QCN (150-KB egress
    /// buffer, the switch's PAUSE `pause`), 20 ms: sender `i`'s source has the process, gate, start
    /// and stop `source(i)` gives.
    pub(crate) fn qcn_fan_in_of(source: impl Fn(u32) -> (ProcessIr, Option<GateIr>, u64, u64), pause: PauseIr, seed: u64) -> Ir {
        let host = |n: &str| NodeIr::Host { name: n.into(), response_delay_ps: US };
        let mut nodes = vec![
            NodeIr::Switch { name: "sw".into(), latency_ps: 0, buffer: BufferIr::Egress { egress_bytes: 150_000 }, pause, ecn_threshold_bytes: None },
            host("rx"),
        ];
        let link = |a, b| LinkIr { a, b, rate_bps: 10_000_000_000, prop_ps: US / 2 };
        let (mut links, mut flows, mut sources) = (vec![link(0, 1)], vec![], vec![]);
        for i in 0..8u32 {
            nodes.push(host(&format!("s{i}")));
            links.push(link(2 + i, 0));
            flows.push(FlowIr { src: 2 + i, dst: Some(1), frame_bytes: 1500, transport: TransportIr::Udp, priority: 0 });
            let (process, gate, start_ps, stop_ps) = source(i);
            sources.push(SourceIr { stream_id: i as u64, flows: vec![i], start_ps, stop_ps, gate, process, dst_set: None });
        }
        let params = json!({
            "qeq_bytes": 26_000, "w": 2.0, "fb_bits": 6, "sample_jitter": 0.15, "rp_jitter": 0.15,
            "mark_table_bytes": [150_000.0, 75_000.0, 50_000.0, 37_500.0, 30_000.0, 25_000.0, 21_500.0, 18_500.0],
            "gd": 0.0078125, "min_dec_factor": 0.5, "min_rate_bps": 1e7, "bc_limit_bytes": 150_000.0,
            "fast_recovery_th": 5, "r_ai_bps": 5e6, "r_hai_bps": 5e7, "timer_period_ps": 15_000_000_000u64,
            "stage_boundary": "gt"
        });
        let cm = CmIr { scheme: "qcn".into(), params };
        Ir { seed, cm, observe: ObserveIr::sampled(10 * US, 100 * US), ..Ir::new("qcn-fan-in", 20_000 * US, nodes, links, flows, sources) }
    }

    /// Eight 5-Gb/s CBR senders into one 10-Gb/s port under QCN: the limiters hold most frames,
    /// sent at the hosts' wake-ups.
    fn qcn_fan_in() -> Ir {
        let cbr = ProcessIr::Cbr { interval_ps: 2_400_000, phase_ps: 0, random_phase: true };
        qcn_fan_in_of(|_| (cbr.clone(), None, 0, u64::MAX), PauseIr::None, 5)
    }

    #[test]
    fn the_paced_send_gives_the_general_paths_results() {
        let lean = Simulation::new(qcn_fan_in()).unwrap().run().unwrap();
        GENERAL_ONLY.with(|g| g.set(true));
        let general = Simulation::new(qcn_fan_in()).unwrap().run().unwrap();
        GENERAL_ONLY.with(|g| g.set(false));
        let bytes = |k: &str| lean.summary["bytes"][k].as_u64().unwrap();
        assert!(bytes("sent") < bytes("generated") * 3 / 4, "QCN holds frames at the hosts");
        let strip = |mut s: serde_json::Value| {
            s.as_object_mut().unwrap().remove("wall_s");
            s
        };
        assert_eq!(strip(lean.summary), strip(general.summary));
        assert_eq!(format!("{:?}", lean.tables), format!("{:?}", general.tables));
    }
}
