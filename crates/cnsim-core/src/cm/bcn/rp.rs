//! BCN / ECM reaction point: one rate limiter per flow (model reference §2.3–§2.6, §3, §4).

use super::*;

/// Timer token layout: kind (8 bits) | local flow (24 bits) | generation (32 bits).
pub(super) const T_DRIFT: u64 = 1;
pub(super) const T_SELF_INC: u64 = 2;
pub(super) const T_RESTART: u64 = 3;
pub(super) const T_TIMEOUT: u64 = 4;

pub(super) fn token(kind: u64, local: u32, gen: u32) -> u64 {
    (kind << 56) | ((local as u64 & 0xFF_FFFF) << 32) | gen as u64
}
pub(super) fn untoken(t: u64) -> (u64, u32, u32) {
    (t >> 56, ((t >> 32) & 0xFF_FFFF) as u32, t as u32)
}

/// One rate limiter (model reference §2.3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rl {
    pub rate: f64,
    /// Owner CP (the latest congested CP).
    pub cpid: u32,
    /// Stopped by BCN(0,0), waiting for its random restart.
    pub stopped: bool,
    pub last_fb: SimTime,
}

/// Per-flow RP state; the back-off level survives the deletion of the RL (policy NEVER
/// accumulates "for the whole run", model reference §12 B2).
/// `repr(C)`: what every transmission reads and writes (the RL, the last frame's time) leads the
/// record.
#[derive(Debug, Clone, Default)]
#[repr(C)]
pub(super) struct FlowState {
    pub(super) rl: Option<Rl>,
    /// Idle timeout: a timer is pending; the last frame sent (or the RL's creation).
    pub(super) last_tx: SimTime,
    pub(super) timeout_pending: bool,
    pub(super) k_backoff: u32,
    pub(super) restart_gen: u32,
    pub(super) timeout_gen: u32,
    pub(super) restart_rate: f64,
    pub(super) last_restart: Option<SimTime>,
}

/// Reaction point of one source host. `repr(C)`: what a transmission reads comes first.
#[repr(C)]
pub struct Rp {
    pub(super) flows: Vec<FlowState>,
    /// `p.fb_at_cp`, here so that a transmission does not read the shared parameters.
    fb_at_cp: bool,
    pub(super) p: Arc<Params>,
    pub(super) line: f64,
    pub(super) drift_armed: bool,
    pub(super) self_inc_armed: bool,
    /// `drift_random_phase`: this host's drift phase, drawn at its first RL.
    pub(super) drift_phase: Option<u64>,
}

impl Rp {
    pub(super) fn new(p: Arc<Params>, host: &HostInfo) -> Self {
        Rp {
            flows: vec![FlowState::default(); host.flows.len()],
            fb_at_cp: p.fb_at_cp,
            p,
            line: host.line_rate_bps as f64,
            drift_armed: false,
            self_inc_armed: false,
            drift_phase: None,
        }
    }

    /// The RL of local flow `local`, if any (tests, rate series).
    pub fn rl(&self, local: u32) -> Option<&Rl> {
        self.flows.get(local as usize).and_then(|f| f.rl.as_ref())
    }

    fn push_rate(&self, ctx: &mut HostCtx, local: u32) {
        let r = self.flows[local as usize].rl.map(|rl| if rl.stopped { 0.0 } else { rl.rate });
        ctx.set_rate(local, r);
    }

    /// A new RL exists: make sure the periodic drift / self-increase timers run, on a global grid.
    fn arm_periodic(&mut self, ctx: &mut HostCtx) {
        if self.p.drift_bps > 0.0 && !self.drift_armed {
            self.drift_armed = true;
            let t = self.p.drift_interval_ps;
            let phase =
                if self.p.drift_random_phase { *self.drift_phase.get_or_insert_with(|| (ctx.rng.uniform() * t as f64) as u64 % t) } else { 0 };
            // the next tick of this host's grid {phase + k t} after now
            let next = if ctx.now < phase { phase } else { ((ctx.now - phase) / t + 1) * t + phase };
            ctx.set_timer(next, token(T_DRIFT, 0, 0));
        }
        if self.p.self_increase.is_some() && !self.self_inc_armed {
            self.self_inc_armed = true;
            let t = self.p.self_increase_interval_ps;
            ctx.set_timer((ctx.now / t + 1) * t, token(T_SELF_INC, 0, 0));
        }
    }

    /// A new RL at `initial_rate` (line rate by default). [C]'s 5 Gb/s on a 1 Gb/s link starts above the
    /// line rate: the limiter does not bind until decreases take it below the line rate ("it takes long
    /// time for the sources to decrease their rates to less than 1 Gbps"), and only an increase, drift
    /// or self-increase releases it (model reference §2.3).
    fn create_rl(&mut self, ctx: &mut HostCtx, local: u32, cpid: u32) {
        let rate = self.p.initial_rate_bps.unwrap_or(self.line);
        self.flows[local as usize].rl = Some(Rl { rate, cpid, stopped: false, last_fb: ctx.now });
        self.flows[local as usize].last_tx = ctx.now;
        self.arm_periodic(ctx);
    }

    /// ECM (model reference §3): every BCN reaching an RL re-arms its timeout.
    fn touch(&mut self, ctx: &mut HostCtx, local: u32) {
        let fs = &mut self.flows[local as usize];
        if let Some(rl) = fs.rl.as_mut() {
            rl.last_fb = ctx.now;
        }
        if let Some(t) = self.p.rl_timeout_ps {
            match self.p.rl_timeout_event {
                TimeoutEvent::NoFeedback => {
                    fs.timeout_gen = fs.timeout_gen.wrapping_add(1);
                    ctx.set_timer(ctx.now + t, token(T_TIMEOUT, local, fs.timeout_gen));
                }
                // feedback does not keep the RL alive; one pending timer checks for idleness
                TimeoutEvent::Idle if !fs.timeout_pending => {
                    fs.timeout_pending = true;
                    ctx.set_timer(ctx.now + t, token(T_TIMEOUT, local, fs.timeout_gen));
                }
                TimeoutEvent::Idle => {}
            }
        }
    }

    /// Delete the RL when its rate reached the line rate (model reference §2.3 "RL released"); under
    /// `reset_event = released` that is when the BCN(0,0) back-off may return to level 0.
    fn release_if_line(&mut self, local: u32, now: SimTime) {
        let fs = &mut self.flows[local as usize];
        if fs.rl.is_some_and(|rl| !rl.stopped && rl.rate >= self.line) {
            fs.rl = None;
            if backoff_resets_at(&self.p, ResetEvent::Released, now, fs.last_restart) {
                fs.k_backoff = 0;
            }
        }
    }

    /// BCN(0,0) at the RP (model reference §2.5).
    fn bcn00(&mut self, ctx: &mut HostCtx, local: u32, cpid: u32) {
        let p = self.p.clone();
        let fs = &mut self.flows[local as usize];
        let was_stopped = fs.rl.is_some_and(|rl| rl.stopped);
        if !was_stopped && backoff_resets_at(&p, ResetEvent::NewEpisode, ctx.now, fs.last_restart) {
            fs.k_backoff = 0;
        }
        let k = fs.k_backoff;
        let (tmax, rmin) = backoff(&p, k);
        fs.k_backoff = (k + 1).min(p.backoff_cap);
        fs.restart_rate = rmin;
        fs.rl = Some(Rl { rate: 0.0, cpid, stopped: true, last_fb: ctx.now });
        fs.restart_gen = fs.restart_gen.wrapping_add(1);
        let delay = (ctx.rng.uniform() * tmax as f64) as SimTime;
        ctx.set_timer(ctx.now + delay, token(T_RESTART, local, fs.restart_gen));
        self.arm_periodic(ctx);
        self.touch(ctx, local);
    }
}

impl ReactionPoint for Rp {
    fn on_feedback(&mut self, ctx: &mut HostCtx, msg: &CmMsg) {
        let Some(local) = ctx.local_of(msg.flow) else { return };
        if msg.kind == MSG_ZERO {
            self.bcn00(ctx, local, msg.cpid);
            self.push_rate(ctx, local);
            return;
        }
        let fb = if msg.kind == MSG_MAX { -self.p.fb_max() } else { msg.v[1] };
        let ru = if msg.v[2] > 0.0 { msg.v[2] } else { self.p.ru_bps };
        if self.flows[local as usize].rl.is_none() {
            if fb >= 0.0 {
                return; // positive feedback never creates an RL
            }
            self.create_rl(ctx, local, msg.cpid);
        }
        self.touch(ctx, local);
        let p = self.p.clone();
        let fs = &mut self.flows[local as usize];
        let rl = fs.rl.as_mut().expect("exists");
        if rl.stopped {
            return; // ignored while stopped by BCN(0,0) [PROPOSED]
        }
        if msg.kind != MSG_MAX && backoff_resets_at(&p, ResetEvent::Uncongested, ctx.now, fs.last_restart) {
            fs.k_backoff = 0; // §12 B2 alternative: the queue was below Qsc at this sample
        }
        if fb > 0.0 && backoff_resets_at(&p, ResetEvent::Positive, ctx.now, fs.last_restart) {
            fs.k_backoff = 0; // §12 R8: a positive BCN
        }
        if fb < 0.0 {
            rl.rate = decrease(&p, rl.rate, fb);
            rl.cpid = msg.cpid; // the latest congested CP takes ownership (§12 G9)
        } else if fb > 0.0 && (p.fb_at_cp || msg.cpid == rl.cpid) {
            rl.rate = increase(&p, rl.rate, fb, ru);
            self.release_if_line(local, ctx.now); // an increase to the line rate releases the RL (§2.3)
        } else {
            return;
        }
        self.push_rate(ctx, local);
    }

    fn on_transmit(&mut self, ctx: &mut HostCtx, local: u32, frame: &mut Frame) {
        self.flows[local as usize].last_tx = ctx.now;
        if self.fb_at_cp {
            return; // decrease-only mode needs no RL tags (model reference §4.1)
        }
        if let Some(rl) = self.flows[local as usize].rl {
            if !rl.stopped {
                frame.tag.flags |= tag::RL;
                frame.tag.cpid = rl.cpid;
            }
        }
    }

    fn on_timer(&mut self, ctx: &mut HostCtx, tok: u64) {
        let (kind, local, gen) = untoken(tok);
        match kind {
            T_DRIFT | T_SELF_INC => {
                let drift = kind == T_DRIFT;
                let period = if drift { self.p.drift_interval_ps } else { self.p.self_increase_interval_ps };
                let (d, i) = (self.p.drift_bps, self.p.self_increase.unwrap_or(0.0));
                let mut any = false;
                for l in 0..self.flows.len() as u32 {
                    let Some(rl) = self.flows[l as usize].rl.as_mut() else { continue };
                    any = true;
                    if rl.stopped {
                        continue; // "never stop drift except timeout in BCN(0,0)" [B]
                    }
                    // §2.4 drift: + R_drift; §4.3 self-increase: + R·I·τ
                    rl.rate = if drift { rl.rate + d } else { self_increase_step(rl.rate, i, period) };
                    self.release_if_line(l, ctx.now);
                    self.push_rate(ctx, l);
                }
                if any {
                    ctx.set_timer(ctx.now + period, tok);
                } else if drift {
                    self.drift_armed = false;
                } else {
                    self.self_inc_armed = false;
                }
            }
            T_RESTART => {
                let fs = &mut self.flows[local as usize];
                if fs.restart_gen != gen {
                    return;
                }
                if let Some(rl) = fs.rl.as_mut().filter(|rl| rl.stopped) {
                    rl.stopped = false;
                    rl.rate = fs.restart_rate;
                    fs.last_restart = Some(ctx.now);
                    self.release_if_line(local, ctx.now);
                    self.push_rate(ctx, local);
                }
            }
            T_TIMEOUT if self.p.rl_timeout_event == TimeoutEvent::Idle => {
                let t = self.p.rl_timeout_ps.unwrap_or(u64::MAX / 4);
                let fs = &mut self.flows[local as usize];
                if fs.timeout_gen != gen {
                    return; // armed for the flow's state before a restart
                }
                fs.timeout_pending = false;
                let Some(rl) = fs.rl else { return };
                let idle_until = fs.last_tx.saturating_add(t);
                if !rl.stopped && ctx.now >= idle_until && !ctx.has_backlog(local) {
                    fs.rl = None;
                    self.push_rate(ctx, local);
                } else {
                    let at = if ctx.now >= idle_until { ctx.now + t } else { idle_until };
                    fs.timeout_pending = true;
                    ctx.set_timer(at, token(T_TIMEOUT, local, fs.timeout_gen));
                }
            }
            T_TIMEOUT => {
                let fs = &mut self.flows[local as usize];
                // a stopped RL waits for its restart; the next BCN re-arms the timeout
                if fs.timeout_gen == gen && fs.rl.is_some_and(|rl| !rl.stopped) {
                    fs.rl = None;
                    self.push_rate(ctx, local);
                }
            }
            _ => {}
        }
    }

    fn rate_bps(&self, local: u32) -> Option<f64> {
        self.rl(local).map(|rl| if rl.stopped { 0.0 } else { rl.rate })
    }
    fn rate_is_limiter(&self) -> bool {
        true // every change of an RL (creation, rate, stop, release) is followed by push_rate
    }

    fn wants_flow_start(&self) -> bool {
        self.p.rl_scope == RlScope::Transfer
    }

    /// `rl_scope = transfer`: a new transfer on an idle pair is a new flow, with no RL and fresh state;
    /// the generations move on so the former RL's timers are ignored.
    fn on_flow_start(&mut self, ctx: &mut HostCtx, local: u32) {
        if self.restart(local) {
            self.push_rate(ctx, local);
        }
    }

    /// A transfer's own queue: no RL, fresh state (its record starts without a limiter).
    fn on_queue_open(&mut self, _ctx: &mut HostCtx, local: u32) {
        if local as usize >= self.flows.len() {
            self.flows.resize(local as usize + 1, FlowState::default());
        }
        self.restart(local);
    }
    fn on_queue_close(&mut self, _ctx: &mut HostCtx, local: u32) {
        self.restart(local);
    }
}

impl Rp {
    /// Forget local flow `local`'s RL and state; the generations move on so that its pending timers
    /// are ignored. Returns whether it had an RL.
    fn restart(&mut self, local: u32) -> bool {
        let Some(fs) = self.flows.get_mut(local as usize) else { return false };
        let had_rl = fs.rl.is_some();
        *fs = FlowState { restart_gen: fs.restart_gen.wrapping_add(1), timeout_gen: fs.timeout_gen.wrapping_add(1), ..FlowState::default() };
        had_rl
    }
}
