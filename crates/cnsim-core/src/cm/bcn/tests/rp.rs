//! Reaction-point tests of `bcn` (the shared helpers are in `tests.rs`).

use super::*;

// ---------------------------------------------------------------- RP: AIMD, floor, ownership

#[test]
fn gain_rule_of_spec_10() {
    // [A]/[D] gains: Gi·Fb_max·Ru = 1 Gb/s; 1 − Gd·Fb_max = 0.5 (0.05 with the 95 % gain)
    let p = base();
    assert!((p.gi * p.fb_max() * p.ru_bps - 1e9).abs() < 1.0);
    assert!(close(1.0 - p.gd * p.fb_max(), 0.5));
    let p95 = params_with(json!({"gd": 0.95 / 1875.0}));
    assert!(close(1.0 - p95.gd * p95.fb_max(), 0.05));
    // and at the RP: a maximal negative halves (×0.05), a maximal positive adds 1 Gb/s
    let mut h = RpH::new(base(), 1);
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
    assert!(close(h.rate(0).unwrap(), 5e9), "RL created at line rate, then halved");
    h.msg(MSG_POSITIVE, 0, CPID, 1875.0);
    assert!(close(h.rate(0).unwrap(), 6e9));
    let mut h = RpH::new(p95, 1);
    h.msg(MSG_MAX, 0, CPID, 0.0);
    assert!(close(h.rate(0).unwrap(), 0.5e9));
}

#[test]
fn positive_never_creates_an_rl_and_non_owner_positive_is_ignored() {
    let mut h = RpH::new(base(), 2);
    h.msg(MSG_POSITIVE, 0, CPID, 500.0);
    assert_eq!(h.rate(0), None);
    assert!(h.rates.is_empty());
    h.msg(MSG_NEGATIVE, 1, CPID, -100.0);
    let r = h.rate(1).unwrap();
    h.msg(MSG_POSITIVE, 1, CPID + 1, 500.0); // not the owner
    assert_eq!(h.rate(1), Some(r));
    // a negative from another CP transfers ownership; then its positives apply
    h.msg(MSG_NEGATIVE, 1, CPID + 1, -100.0);
    let r2 = h.rate(1).unwrap();
    assert!(r2 < r);
    h.msg(MSG_POSITIVE, 1, CPID + 1, 100.0);
    assert!(close(h.rate(1).unwrap(), r2 + h.rp.p.gi * 100.0 * 1e6));
    h.msg(MSG_POSITIVE, 1, CPID, 100.0); // the old owner no longer counts
    assert!(close(h.rate(1).unwrap(), r2 + h.rp.p.gi * 100.0 * 1e6));
    // data frames carry the owner's id in the RL tag
    let mut f = data_frame(0, 1, 1500);
    h.with(|rp, ctx| rp.on_transmit(ctx, 1, &mut f));
    assert_eq!((f.tag.flags & tag::RL, f.tag.cpid), (tag::RL, CPID + 1));
    let mut g = data_frame(0, 0, 1500);
    h.with(|rp, ctx| rp.on_transmit(ctx, 0, &mut g));
    assert_eq!(g.tag.flags, 0, "flows without an RL are untagged");
}

#[test]
fn increase_to_line_rate_releases_the_rl() {
    let mut h = RpH::new(base(), 1);
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0); // 5 Gb/s
    for _ in 0..4 {
        h.msg(MSG_POSITIVE, 0, CPID, 1875.0);
    }
    assert!(close(h.rate(0).unwrap(), 9e9));
    h.msg(MSG_POSITIVE, 0, CPID, 1875.0);
    assert_eq!(h.rate(0), None);
    assert_eq!(h.last_set(0), Some(None), "limiter removed: line rate, untagged");
}

#[test]
fn rate_floor_holds() {
    // 95 % decreases from 10 Gb/s: 10G·0.05^k reaches the 1 Mb/s floor at k = 4
    let mut h = RpH::new(params_with(json!({"gd": 0.95 / 1875.0})), 1);
    for _ in 0..10 {
        h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
    }
    assert_eq!(h.rate(0), Some(1e6));
    // Gd·|fb| > 1 would make the rate negative: the floor applies
    let mut h = RpH::new(params_with(json!({"gd": 1e-3, "rate_floor_bps": 0.0})), 1);
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
    assert_eq!(h.rate(0), Some(0.0));
}

#[test]
fn initial_rate_option() {
    let mut h = RpH::new(params_with(json!({"initial_rate_bps": 5e9})), 1);
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
    assert!(close(h.rate(0).unwrap(), 2.5e9));
}

#[test]
fn an_rl_started_above_the_line_rate_binds_only_once_decreases_take_it_below() {
    // [C]: "sets 5 Gbps as the initial rate for rate limiter. If congested link capacity (1 Gbps) is
    // not known at the source, it takes long time for the sources to decrease their rates to less
    // than 1 Gbps" — here a 5·LINE start: decreases keep the RL (it does not bind yet), and an
    // increase back to the line rate releases it
    let mut h = RpH::new(params_with(json!({"initial_rate_bps": 5.0 * LINE})), 1);
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0); // ×0.5
    assert!(close(h.rate(0).unwrap(), 2.5 * LINE), "kept above the line rate after a decrease");
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
    assert!(close(h.rate(0).unwrap(), 0.625 * LINE), "three halvings to bind");
    assert_eq!(h.last_set(0), Some(Some(0.625 * LINE)));
    for _ in 0..3 {
        h.msg(MSG_POSITIVE, 0, CPID, 1875.0); // + LINE/10 each
    }
    assert!(close(h.rate(0).unwrap(), 0.925 * LINE));
    h.msg(MSG_POSITIVE, 0, CPID, 1875.0);
    assert_eq!(h.rate(0), None, "an increase to the line rate releases it");
    assert_eq!(h.last_set(0), Some(None));
}

// ---------------------------------------------------------------- BCN(0,0) (§2.5)

#[test]
fn bcn00_stops_restarts_randomly_within_tmax_at_rmin() {
    let mut h = RpH::new(params_with(json!({"severe": "zero"})), 1);
    h.msg(MSG_ZERO, 0, CPID, 0.0);
    assert_eq!(h.rate(0), Some(0.0));
    assert_eq!(h.last_set(0), Some(Some(0.0)), "Some(0) stops the flow");
    // a normal negative while stopped is ignored
    h.msg(MSG_NEGATIVE, 0, CPID, -100.0);
    assert_eq!(h.rate(0), Some(0.0));
    let (at, _) = *h.timers.iter().find(|t| untoken(t.1).0 == T_RESTART).unwrap();
    assert!(at <= 100 * PS_PER_US);
    h.advance(at);
    assert_eq!(h.rate(0), Some(1e9));
    assert!(h.rp.flows[0].last_restart == Some(at));
}

/// Drive `n` stop episodes (each: ZERO, then restart) and return the back-off levels used.
fn episodes(reset: &str, gaps_ps: &[u64]) -> Vec<u32> {
    let mut h = RpH::new(params_with(json!({"severe": "zero", "reset": reset, "backoff_cap": 3})), 1);
    let mut used = vec![];
    for &gap in gaps_ps {
        h.advance(h.now + gap);
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        let rmin = h.rp.flows[0].restart_rate;
        let k = (1e9 / rmin).log2().round() as u32;
        used.push(k);
        h.advance(h.now + 2_000 * PS_PER_MS); // let it restart
    }
    used
}

#[test]
fn bcn00_reset_policies_and_backoff_cap() {
    let gaps = [0, 10 * PS_PER_US, 10 * PS_PER_US, 10 * PS_PER_US, 10 * PS_PER_US];
    // ALWAYS: every new episode starts at (Tmax0, Rmin0)
    assert_eq!(episodes("always", &gaps), vec![0, 0, 0, 0, 0]);
    // NEVER: accumulates, capped at K_CAP = 3
    assert_eq!(episodes("never", &gaps), vec![0, 1, 2, 3, 3]);
    // DELAYED: episodes come 2 s after the restart here (≥ 1 ms) ⇒ reset
    assert_eq!(episodes("delayed", &gaps), vec![0, 0, 0, 0, 0]);
    // DELAYED with a ZERO < 1 ms after the last restart: no reset
    let mut h = RpH::new(params_with(json!({"severe": "zero", "reset": "delayed"})), 1);
    h.msg(MSG_ZERO, 0, CPID, 0.0);
    h.advance(200 * PS_PER_US); // restarted (Tmax0 = 100 µs)
    let t_restart = h.rp.flows[0].last_restart.unwrap();
    h.advance(t_restart + 500 * PS_PER_US);
    h.msg(MSG_ZERO, 0, CPID, 0.0);
    assert!(close(h.rp.flows[0].restart_rate, 0.5e9), "level 1: Rmin halved");
    h.advance(h.now + 10 * PS_PER_MS);
    let t_restart = h.rp.flows[0].last_restart.unwrap();
    h.advance(t_restart + PS_PER_MS); // exactly 1 ms later: reset
    h.msg(MSG_ZERO, 0, CPID, 0.0);
    assert!(close(h.rp.flows[0].restart_rate, 1e9));
}

#[test]
fn bcn00_reset_event_positive_and_released() {
    // reset_event = positive (model reference §12 R8): episodes accumulate through negative BCNs; the first
    // positive BCN reaching the running RL applies the policy.
    let mk = |reset: &str, ev: &str| RpH::new(params_with(json!({"severe": "zero", "reset": reset, "reset_event": ev})), 1);
    for (reset, after_positive) in [("always", 1e9), ("never", 0.25e9)] {
        let mut h = mk(reset, "positive");
        for want in [1e9, 0.5e9] {
            h.msg(MSG_ZERO, 0, CPID, 0.0);
            assert!(close(h.rp.flows[0].restart_rate, want), "{reset}: episodes accumulate");
            h.advance(h.now + 50 * PS_PER_MS); // restarted
        }
        h.msg(MSG_NEGATIVE, 0, CPID, -10.0); // a negative BCN is no reset event
        h.msg(MSG_POSITIVE, 0, CPID, 10.0);
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        assert!(close(h.rp.flows[0].restart_rate, after_positive), "{reset}");
    }
    // with a negative BCN only, the level keeps growing under always
    let mut h = mk("always", "positive");
    h.msg(MSG_ZERO, 0, CPID, 0.0);
    h.advance(h.now + 50 * PS_PER_MS);
    h.msg(MSG_NEGATIVE, 0, CPID, -10.0);
    h.msg(MSG_ZERO, 0, CPID, 0.0);
    assert!(close(h.rp.flows[0].restart_rate, 0.5e9));
    // reset_event = released: a positive BCN does nothing; the RL released at line rate resets
    let mut h = mk("always", "released");
    h.msg(MSG_ZERO, 0, CPID, 0.0);
    h.advance(h.now + 50 * PS_PER_MS);
    h.msg(MSG_POSITIVE, 0, CPID, 10.0);
    h.msg(MSG_ZERO, 0, CPID, 0.0);
    assert!(close(h.rp.flows[0].restart_rate, 0.5e9), "a positive BCN is no reset event here");
    h.advance(h.now + 50 * PS_PER_MS);
    for _ in 0..10_000 {
        if h.rp.flows[0].rl.is_none() {
            break;
        }
        h.msg(MSG_POSITIVE, 0, CPID, 1e6); // large increases up to the line rate
    }
    assert!(h.rp.flows[0].rl.is_none(), "released at line rate");
    h.msg(MSG_ZERO, 0, CPID, 0.0);
    assert!(close(h.rp.flows[0].restart_rate, 1e9), "the release reset the back-off");
}

#[test]
fn bcn00_reset_event_uncongested() {
    // reset_event = uncongested: a new stop episode keeps the level; a normal BCN to a running
    // RL applies the policy (always: reset; delayed: reset if >= 1 ms after the restart; never: no).
    let mk = |reset: &str| RpH::new(params_with(json!({"severe": "zero", "reset": reset, "reset_event": "uncongested"})), 1);
    for (reset, after_normal) in [("always", 1e9), ("delayed", 0.25e9), ("never", 0.25e9)] {
        let mut h = mk(reset);
        for want in [1e9, 0.5e9] {
            h.msg(MSG_ZERO, 0, CPID, 0.0);
            assert!(close(h.rp.flows[0].restart_rate, want), "{reset}: episodes accumulate");
            h.advance(h.now + 50 * PS_PER_MS); // restarted
        }
        // a normal BCN 50 ms after the restart... but delayed looks at the restart time:
        let t_restart = h.rp.flows[0].last_restart.unwrap();
        h.advance(t_restart + 500 * PS_PER_US); // < 1 ms after the restart
        h.msg(MSG_NEGATIVE, 0, CPID, -10.0);
        h.msg(MSG_ZERO, 0, CPID, 0.0);
        assert!(close(h.rp.flows[0].restart_rate, after_normal), "{reset}");
    }
    // delayed: a normal BCN >= 1 ms after the restart resets
    let mut h = mk("delayed");
    h.msg(MSG_ZERO, 0, CPID, 0.0);
    h.advance(h.now + 50 * PS_PER_MS);
    h.advance(h.rp.flows[0].last_restart.unwrap() + PS_PER_MS);
    h.msg(MSG_POSITIVE, 0, CPID, 10.0);
    h.msg(MSG_ZERO, 0, CPID, 0.0);
    assert!(close(h.rp.flows[0].restart_rate, 1e9));
    // BCN-MAX is a severe message: no reset; a normal BCN while stopped is ignored
    let mut h = mk("always");
    h.msg(MSG_ZERO, 0, CPID, 0.0);
    h.advance(h.now + 50 * PS_PER_MS);
    h.msg(MSG_MAX, 0, CPID, 0.0);
    h.msg(MSG_ZERO, 0, CPID, 0.0);
    assert!(close(h.rp.flows[0].restart_rate, 0.5e9));
    h.msg(MSG_NEGATIVE, 0, CPID, -10.0); // stopped: ignored
    h.msg(MSG_ZERO, 0, CPID, 0.0);
    assert!(close(h.rp.flows[0].restart_rate, 0.25e9));
}

#[test]
fn bcn00_while_stopped_rearms_with_doubled_tmax_and_halved_rmin() {
    let p = params_with(json!({"severe": "zero", "backoff_cap": 2}));
    assert_eq!(backoff(&p, 0), (100 * PS_PER_US, 1e9));
    assert_eq!(backoff(&p, 1), (200 * PS_PER_US, 0.5e9));
    let mut h = RpH::new(p, 1);
    for want in [1e9, 0.5e9, 0.25e9, 0.25e9] {
        h.msg(MSG_ZERO, 0, CPID, 0.0); // still stopped: no reset, level grows to the cap
        assert!(close(h.rp.flows[0].restart_rate, want));
    }
    // only the latest restart timer counts
    let gens: Vec<u32> = h.timers.iter().filter(|t| untoken(t.1).0 == T_RESTART).map(|t| untoken(t.1).2).collect();
    assert_eq!(gens.len(), 4);
    h.advance(h.now + 10 * PS_PER_MS);
    assert_eq!(h.rate(0), Some(0.25e9));
    let restarts = h.rates.iter().filter(|r| r.rate_bps == Some(0.25e9)).count();
    assert_eq!(restarts, 1, "stale restart tokens ignored");
}

// ---------------------------------------------------------------- drift (§2.4)

#[test]
fn drift_adds_ru_every_interval_except_while_stopped() {
    let mut h = RpH::new(params_with(json!({"drift_bps": 1e6, "severe": "zero"})), 2);
    h.now = 50 * PS_PER_US;
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0); // 5 Gb/s
    h.msg(MSG_ZERO, 1, CPID, 0.0); // stopped
                                   // the drift grid is global: ticks at 100, 200, ... µs
    let first = h.timers.iter().find(|t| untoken(t.1).0 == T_DRIFT).unwrap().0;
    assert_eq!(first, 100 * PS_PER_US);
    h.rp.flows[1].restart_gen += 1; // keep flow 1 stopped for this test
    h.advance(1_000 * PS_PER_US);
    assert!(close(h.rate(0).unwrap(), 5e9 + 10.0 * 1e6));
    assert_eq!(h.rate(1), Some(0.0));
    // drift releases the RL at line rate, then stops ticking when no RL is left
    let mut h = RpH::new(params_with(json!({"drift_bps": 1e9})), 1);
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
    h.advance(PS_PER_MS);
    assert_eq!(h.rate(0), None);
    assert!(h.timers.is_empty());
    assert!(!h.rp.drift_armed);
}

#[test]
fn drift_with_a_random_phase_ticks_on_the_hosts_own_grid() {
    // drift_random_phase: the first tick is at phase + k T for a phase drawn per host in [0, T), and
    // the ticks stay T apart; different hosts (streams) get different phases
    let tick_of = |stream: u64| {
        let mut h = RpH::new(params_with(json!({"drift_bps": 1e6, "drift_random_phase": true})), 1);
        h.rng = Stream::new(1, 0, stream);
        h.now = 50 * PS_PER_US;
        h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
        let first = h.timers.iter().find(|t| untoken(t.1).0 == T_DRIFT).unwrap().0;
        assert!(first > h.now && first <= h.now + 100 * PS_PER_US, "{first}");
        h.advance(first);
        let second = h.timers.iter().find(|t| untoken(t.1).0 == T_DRIFT).unwrap().0;
        assert_eq!(second, first + 100 * PS_PER_US);
        first % (100 * PS_PER_US)
    };
    let phases: Vec<u64> = (1..6).map(tick_of).collect();
    assert!(phases.iter().any(|&p| p != 0), "off the global grid: {phases:?}");
    assert!(phases.windows(2).any(|w| w[0] != w[1]), "a phase per host: {phases:?}");
}

// ---------------------------------------------------------------- ECM timeout (§3)

#[test]
fn ecm_rl_timeout_two_ms_after_the_last_bcn() {
    let mut h = RpH::new(params_with(json!({"rl_timeout_ps": 2 * PS_PER_MS})), 1);
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
    h.advance(PS_PER_MS);
    h.msg(MSG_NEGATIVE, 0, CPID, -10.0); // re-arms: deadline now 3 ms
    h.advance(2 * PS_PER_MS + PS_PER_US);
    assert!(h.rate(0).is_some(), "the first timer is stale");
    h.advance(3 * PS_PER_MS - 1);
    assert!(h.rate(0).is_some());
    h.advance(3 * PS_PER_MS);
    assert_eq!(h.rate(0), None);
    assert_eq!(h.last_set(0), Some(None));
}

#[test]
fn ecm_idle_timeout_keeps_a_sending_rl_and_deletes_an_idle_one() {
    let mut h = RpH::new(params_with(json!({"rl_timeout_ps": 2 * PS_PER_MS, "rl_timeout_event": "idle"})), 1);
    h.backlog = vec![false]; // nothing waits at the host between frames
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
    // no further feedback, but the flow keeps sending: the RL lives on
    for k in 1..=5 {
        h.transmit_at(0, k * PS_PER_MS);
    }
    h.advance(6 * PS_PER_MS);
    assert!(h.rate(0).is_some(), "an RL that sends is not idle, feedback or not");
    // silence: deleted 2 ms after the last frame (5 ms), at the first check after it
    h.advance(8 * PS_PER_MS);
    assert_eq!(h.rate(0), None);
    assert_eq!(h.last_set(0), Some(None));
}

#[test]
fn rl_per_transfer_starts_each_transfer_unregulated_and_ignores_the_old_timer() {
    // pair scope (default): the engine is not asked, the RL outlives the transfer
    let h = RpH::new(params_with(json!({"rl_timeout_ps": 2 * PS_PER_MS})), 1);
    assert!(!h.rp.wants_flow_start());
    // transfer scope: a new transfer on the idle pair deletes the RL and tells the host
    let mut h = RpH::new(params_with(json!({"rl_timeout_ps": 2 * PS_PER_MS, "rl_scope": "transfer"})), 2);
    assert!(h.rp.wants_flow_start());
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
    h.msg(MSG_NEGATIVE, 1, CPID, -1875.0);
    assert!(close(h.rate(0).unwrap(), 5e9));
    h.with(|rp, ctx| rp.on_flow_start(ctx, 0));
    assert_eq!(h.rate(0), None);
    assert_eq!(h.last_set(0), Some(None));
    assert!(h.rate(1).is_some(), "only the pair whose transfer starts");
    // negative feedback creates a fresh RL; the first RL's timeout (due at 2 ms) must not delete it
    h.advance(PS_PER_MS);
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0);
    h.advance(2 * PS_PER_MS + PS_PER_US);
    assert!(h.rate(0).is_some(), "the former RL's timer is stale");
    h.advance(3 * PS_PER_MS + PS_PER_US);
    assert_eq!(h.rate(0), None, "the new RL's own timeout still works");
}

// ---------------------------------------------------------------- self-increase (§4.3)

#[test]
fn self_increase_r_plus_r_i_tau() {
    let mut h = RpH::new(params_with(json!({"fb_at_cp": true, "self_increase": 2.0, "self_increase_interval_ps": PS_PER_MS})), 1);
    h.msg(MSG_NEGATIVE, 0, CPID, -1875.0); // 5 Gb/s
    h.advance(3 * PS_PER_MS);
    let want = 5e9 * (1.0 + 2.0 * 1e-3f64).powi(3);
    assert!(close(h.rate(0).unwrap(), want), "{} vs {want}", h.rate(0).unwrap());
    assert!(close(self_increase_step(1e9, 1.0, PS_PER_MS), 1.001e9));
}

// ---------------------------------------------------------------- parameters

#[test]
fn params_are_strict() {
    let mut v = base_json();
    v["bogus"] = json!(1);
    let e = parse_params::<Params>("bcn", &v).err().unwrap().to_string();
    assert!(e.contains("bogus"), "{e}");
    let mut v = base_json();
    v.as_object_mut().unwrap().remove("gi");
    assert!(parse_params::<Params>("bcn", &v).is_err(), "no defaults in the IR");
    assert!(build(&json!({"qeq_bytes": 0})).is_err());
    let mut v = base_json();
    v["quant_bits"] = json!(0);
    assert!(build(&v).err().unwrap().to_string().contains("quant_bits"));
    let s = build_ecm(&base_json()).ok().unwrap();
    assert_eq!(s.name(), "ecm");
    assert_eq!(s.message_types(), &["positive", "negative", "max", "zero"]);
}
