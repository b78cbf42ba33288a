//! The end-of-run summary (`summary.json`): per-flow, per-link and per-queue rows, the
//! conservation check, drops, control traffic, TCP and FCT statistics, PAUSE deadlock.

use super::{build_tables, dst_name, node_name, Observer, Results};
use crate::error::RunError;
use crate::frame::FrameKind;
use crate::ir::Ir;
use crate::net::flow::Transfer;
use crate::net::queues::FlowTotals;
use crate::net::{Counters, Network, CLASSIC_DROP_REASONS, DROP_REASONS, HIST_BUCKET};
use crate::probe::BinRows;
use crate::time::{to_s, PS_PER_S};
use crate::transport::tcp::TcpStats;
use serde_json::{json, Value};

/// A switch port counts as stuck when, at the end of the run, it holds frames and has been paused
/// without a break for at least this long.
pub const STUCK_PS: u64 = 1_000_000_000;

/// PAUSE deadlock at the end of the run (issue 13): (number of stuck switch ports, one cycle of stuck
/// ports "switch>peer" in which each waits on the next — the peer it sends to is itself stuck sending to
/// the next — or empty). A cycle is a cyclic buffer dependency no PAUSE expiry will break.
pub fn deadlock_report(ir: &Ir, net: &Network) -> (usize, Vec<String>) {
    let end = net.now;
    let stuck: Vec<bool> = net
        .ports
        .iter()
        .map(|p| {
            net.is_switch(p.node) && !p.queue.is_empty() && p.pause.paused_until > end && p.pause.paused_since.is_some_and(|t| end >= t + STUCK_PS)
        })
        .collect();
    let n_stuck = stuck.iter().filter(|&&x| x).count();
    if n_stuck == 0 {
        return (0, Vec::new());
    }
    // wait-for graph: stuck port P (at S, toward N) -> every stuck port of N
    let mut by_node: Vec<Vec<usize>> = vec![Vec::new(); ir.nodes.len()];
    for (i, p) in net.ports.iter().enumerate() {
        if stuck[i] {
            by_node[p.node.idx()].push(i);
        }
    }
    // iterative DFS with colours; the first back edge closes a cycle
    let mut colour = vec![0u8; net.ports.len()];
    let mut parent = vec![usize::MAX; net.ports.len()];
    for start in 0..net.ports.len() {
        if !stuck[start] || colour[start] != 0 {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        colour[start] = 1;
        while let Some(&mut (u, ref mut k)) = stack.last_mut() {
            let next = by_node[net.ports[u].peer_node.idx()].get(*k).copied();
            *k += 1;
            match next {
                Some(v) if colour[v] == 0 => {
                    colour[v] = 1;
                    parent[v] = u;
                    stack.push((v, 0));
                }
                Some(v) if colour[v] == 1 => {
                    let mut cyc = vec![v];
                    let mut w = u;
                    while w != v && w != usize::MAX {
                        cyc.push(w);
                        w = parent[w];
                    }
                    cyc.reverse();
                    let name = |i: usize| {
                        let p = &net.ports[i];
                        format!("{}>{}", node_name(ir, p.node.idx()), node_name(ir, p.peer_node.idx()))
                    };
                    return (n_stuck, cyc.into_iter().map(name).collect());
                }
                Some(_) => {}
                None => {
                    colour[u] = 2;
                    stack.pop();
                }
            }
        }
    }
    (n_stuck, Vec::new())
}

/// Jain's fairness index (Σx)²/(n·Σx²); 1 for an empty or all-zero set.
pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 == 0.0 {
        1.0
    } else {
        s * s / (xs.len() as f64 * s2)
    }
}

/// Frames alive at the end of the run, counted independently of the counters (for conservation).
struct Live {
    data: u64,
    data_bytes: u64,
    ctrl: u64,
    ack: u64,
    /// frames and bytes still queued at the hosts
    host_q: u64,
    host_q_bytes: u64,
}

/// Conservation: the frames alive at the end, counted independently of the counters.
fn live_frames(net: &Network) -> Live {
    let (mut live_data, mut live_data_bytes, mut live_ctrl, mut live_ack) = (0u64, 0u64, 0u64, 0u64);
    for f in net.frames.iter_live() {
        match f.kind {
            FrameKind::Data => {
                live_data += 1;
                live_data_bytes += f.size as u64;
            }
            FrameKind::Control => live_ctrl += 1,
            FrameKind::Ack => live_ack += 1,
        }
    }
    // the INT header bytes of the data frames in flight are not data
    live_data_bytes -= net.c.int_bytes_added - net.c.int_bytes_removed;
    let host_q: u64 = net.flows.iter().map(|f| f.backlog).sum();
    let host_q_bytes: u64 = net.flows.iter().map(|f| f.queued_bytes(&net.transfers)).sum();
    Live { data: live_data, data_bytes: live_data_bytes, ctrl: live_ctrl, ack: live_ack, host_q, host_q_bytes }
}

/// The conservation identities that fail (empty: all hold): frames and bytes generated = delivered +
/// dropped + in flight + host queued, control and ACK frames likewise, queue bytes = bytes of the
/// queued frames, Little's law per queue (debug builds), per-flow counts.
fn conservation_problems(net: &Network, live: &Live, totals: &[FlowTotals], end: u64, w: u64) -> Vec<String> {
    let (live_data, live_data_bytes, live_ctrl, live_ack, host_q, host_q_bytes) =
        (live.data, live.data_bytes, live.ctrl, live.ack, live.host_q, live.host_q_bytes);
    let c = &net.c;
    let mut problems = Vec::new();
    if c.data_generated.0 != c.data_delivered.0 + c.data_dropped.0 + live_data + host_q {
        problems.push(format!(
            "data frames: generated {} != delivered {} + dropped {} + in flight {} + host queued {}",
            c.data_generated.0, c.data_delivered.0, c.data_dropped.0, live_data, host_q
        ));
    }
    if c.data_generated.1 != c.data_delivered.1 + c.data_dropped.1 + live_data_bytes + host_q_bytes {
        problems.push(format!(
            "data bytes: generated {} != delivered {} + dropped {} + in flight {} + host queued {}",
            c.data_generated.1, c.data_delivered.1, c.data_dropped.1, live_data_bytes, host_q_bytes
        ));
    }
    if c.ctrl_generated.0 + c.ctrl_replicated != c.ctrl_delivered + c.ctrl_dropped + live_ctrl + c.ctrl_absorbed {
        problems.push(format!(
            "control frames: generated {} + broadcast copies {} != delivered {} + dropped {} + in flight {} + absorbed {}",
            c.ctrl_generated.0, c.ctrl_replicated, c.ctrl_delivered, c.ctrl_dropped, live_ctrl, c.ctrl_absorbed
        ));
    }
    if c.ack_generated.0 != c.ack_delivered + c.ack_dropped + live_ack {
        problems.push(format!(
            "TCP ACK frames: generated {} != delivered {} + dropped {} + in flight {}",
            c.ack_generated.0, c.ack_delivered, c.ack_dropped, live_ack
        ));
    }
    let queued: u64 = net.ports.iter().map(|p| p.q_bytes).sum();
    let queued_frames: u64 = net
        .ports
        .iter()
        .flat_map(|p| p.queue.iter().chain(p.pfc.iter().flat_map(|pf| pf.queues.iter().flatten())))
        .map(|&f| net.frames.get(f).size as u64)
        .sum();
    if queued != queued_frames {
        problems.push(format!("queue bytes {queued} != bytes of queued frames {queued_frames}"));
    }
    // Little's law, sample-path form (TESTING.md T7), exact in integers: the time-integral of each
    // egress queue over [warm-up, end) equals Σ size × (min(dequeue, end) − max(enqueue, warm-up))
    // over its frames (those still queued leave at `end`)
    #[cfg(debug_assertions)]
    for (i, p) in net.ports.iter().enumerate() {
        let sojourns = p.little.1 + p.q_bytes as u128 * end.max(w) as u128 - p.little.0;
        if p.q_area != sojourns {
            problems.push(format!("port {i}: queue area {} != sum of size x sojourn {sojourns} (Little's law)", p.q_area));
        }
    }
    let per_flow_ok = totals
        .iter()
        .all(|f| f.generated_frames >= f.delivered_frames + f.dropped_frames + f.backlog && f.sent_frames == f.generated_frames - f.backlog);
    if !per_flow_ok {
        problems.push("per-flow: sent != generated - host queued".into());
    }
    #[cfg(not(debug_assertions))]
    let _ = (end, w);
    problems
}

/// The per-flow rows of the summary and the TCP totals over the flows.
struct FlowRows {
    flows: Vec<Value>,
    /// each flow's throughput in the statistics window (bit/s), for Jain's index
    tputs: Vec<f64>,
    tcp_tot: TcpStats,
    n_tcp: u64,
    goodput_bytes: u64,
}

/// The summary's `flows`: a row per flow (TCP state and counters for a TCP flow), and the TCP totals.
fn flow_rows(ir: &Ir, net: &Network, totals: &[FlowTotals], window: f64) -> FlowRows {
    let mut flows = Vec::new();
    let mut tputs = Vec::new();
    let mut tcp_tot = TcpStats::default();
    let (mut n_tcp, mut goodput_bytes) = (0u64, 0u64);
    for (i, (f, tot)) in net.flows.iter().zip(totals).enumerate() {
        let tp = tot.delivered_bytes_window as f64 * 8.0 / window;
        tputs.push(tp);
        let mut row = json!({
            "id": i,
            "src": node_name(ir, f.src.idx()),
            "dst": dst_name(ir, f.dst),
            "generated_frames": tot.generated_frames,
            "sent_frames": tot.sent_frames,
            "delivered_frames": tot.delivered_frames,
            "delivered_bytes": tot.delivered_bytes,
            "dropped": tot.dropped_frames,
            "throughput_bps": tp,
        });
        if let Some(t) = &f.tcp {
            // the flow's own connection, plus those of its transfers (a connection each with a
            // send queue per transfer)
            let mut all = tot.tcp;
            all.add(t);
            let s = all.stats;
            n_tcp += 1;
            goodput_bytes += all.goodput_bytes_window;
            tcp_tot.retransmitted_segments += s.retransmitted_segments;
            tcp_tot.timeouts += s.timeouts;
            tcp_tot.fast_retransmits += s.fast_retransmits;
            tcp_tot.ecn_reductions += s.ecn_reductions;
            row["transport"] = json!(if t.ecn { "dctcp" } else { "tcp" });
            row["sack"] = json!(t.sender.config().sack);
            row["goodput_bps"] = json!(all.goodput_bytes_window as f64 * 8.0 / window);
            row["acked_bytes"] = json!(all.acked_bytes);
            if tot.tcp.connections == 0 {
                // one connection: its state at the end
                row["cwnd_bytes"] = json!(t.sender.cwnd());
                row["ssthresh_bytes"] = json!(t.sender.ssthresh().min(u64::MAX >> 11));
                row["srtt_us"] = json!(t.sender.srtt_ps().map(|r| r / 1e6));
                if t.ecn {
                    row["dctcp_alpha"] = json!(t.sender.alpha());
                }
            } else {
                row["connections"] = json!(tot.tcp.connections);
            }
            row["segments_sent"] = json!(s.segments_sent);
            row["retransmitted_segments"] = json!(s.retransmitted_segments);
            row["fast_retransmits"] = json!(s.fast_retransmits);
            row["timeouts"] = json!(s.timeouts);
            row["ecn_reductions"] = json!(s.ecn_reductions);
        }
        flows.push(row);
    }
    FlowRows { flows, tputs, tcp_tot, n_tcp, goodput_bytes }
}

/// The summary's `links` (per direction): the rows, and the paused fraction of every host's port.
fn link_rows(ir: &Ir, net: &Network, end: u64, w: u64) -> (Vec<Value>, Vec<f64>) {
    let mut links = Vec::new();
    let mut host_paused = Vec::new();
    for p in &net.ports {
        let util = p.busy_ps_window as f64 / (end - w) as f64;
        let pf = p.pause.paused_acc_ps as f64 / (end - w) as f64;
        if !net.is_switch(p.node) {
            host_paused.push(pf);
        }
        links.push(json!({
            "from": node_name(ir, p.node.idx()),
            "to": node_name(ir, p.peer_node.idx()),
            "rate_bps": p.rate_bps,
            "utilization": util,
            "paused_fraction": pf,
        }));
    }
    (links, host_paused)
}

/// The summary's `queues`: a row per observed egress queue, and the drops by reason over them.
fn queue_rows(ir: &Ir, net: &Network, obs: &Observer, end: u64, w: u64) -> (Vec<Value>, Vec<u64>) {
    let mut queues = Vec::new();
    let mut by_reason = vec![0u64; DROP_REASONS.len()];
    for &pid in &obs.queue_ports {
        let p = &net.ports[pid.idx()];
        let mean = (p.q_area as f64) / (end - w) as f64;
        let cdf = hist_quantiles(&p.q_hist, p.q_max_window);
        let p99 = cdf[QUEUE_QUANTILES.iter().position(|&q| q == 0.99).expect("0.99 listed")];
        let mut dr = serde_json::Map::new();
        for (k, name) in DROP_REASONS.iter().enumerate() {
            by_reason[k] += p.drops[k];
            if p.drops[k] > 0 {
                dr.insert(name.to_string(), json!(p.drops[k]));
            }
        }
        queues.push(json!({
            "switch": node_name(ir, p.node.idx()),
            "port": node_name(ir, p.peer_node.idx()),
            "cpid": p.cpid,
            "mean_bytes": mean,
            "max_bytes": p.q_max_window,
            "p99_bytes": p99,
            "cdf": QUEUE_QUANTILES.iter().zip(&cdf).map(|(&q, &b)| json!([q, b])).collect::<Vec<_>>(),
            "drops": p.drops.iter().sum::<u64>(),
            "drops_by_reason": dr,
            "ecn_marks": p.ecn_marks,
        }));
    }
    (queues, by_reason)
}

/// The transfers still in progress at the end that started in the window: (bad ones — a frame
/// dropped, others still in flight —, unfinished ones), beside the settled transfers' statistics.
fn transfers_open(net: &Network, w: u64) -> (u64, u64) {
    let mut bad = net.transfers.stats.bad;
    let mut unfinished = 0u64;
    for t in net.transfers.in_progress() {
        if t.start < w {
            continue;
        }
        if t.bad() {
            bad += 1;
        } else {
            unfinished += 1;
        }
    }
    (bad, unfinished)
}

/// Build the summary and the tables; check conservation. Time-weighted statistics must have
/// been closed at the end of the run ([`Network::close_statistics`]).
/// `bins`, `fct_rows`: the throughput bins and settled transfers' rows not drained yet
/// ([`crate::probe::FlowBins::drain`], [`crate::net::transfers::Transfers::drain_rows`]).
pub fn collect(ir: &Ir, net: &Network, obs: &mut Observer, bins: BinRows, fct_rows: Vec<Transfer>, events: u64) -> Result<Results, RunError> {
    let end = ir.duration_ps;
    let w = ir.warmup_ps;
    let window = (end - w) as f64 / PS_PER_S as f64;
    let live = live_frames(net);
    let (live_data, live_data_bytes, live_ack, host_q, host_q_bytes) = (live.data, live.data_bytes, live.ack, live.host_q, live.host_q_bytes);
    let c = &net.c;
    let totals = net.flow_totals();
    let problems = conservation_problems(net, &live, &totals, end, w);

    let mut fr = flow_rows(ir, net, &totals, window);
    let ecn_marks: u64 = net.ports.iter().map(|p| p.ecn_marks).sum();
    let (links, host_paused) = link_rows(ir, net, end, w);
    let (queues, by_reason) = queue_rows(ir, net, obs, end, w);
    let conservation_ok = problems.is_empty();
    let pfc_on = net.pfc_enabled;
    let name = |i: usize| node_name(ir, i).to_string();
    let deadlock = if pfc_on { crate::net::flowctl::pfc::deadlock_report(net, &name, STUCK_PS) } else { deadlock_report(ir, net) };
    let (tcp, fairness) = (tcp_summary(&fr, ecn_marks, c, live_ack, window), jain(&fr.tputs));
    let summary = json!({
        "scenario": ir.name,
        "scheme": net.scheme.name(),
        "seed": ir.seed,
        "replication": ir.replication,
        "sim_time_s": to_s(end),
        "warmup_s": to_s(w),
        "events": events,
        "frames": {
            "generated": c.data_generated.0,
            "sent": c.data_sent.0,
            "delivered": c.data_delivered.0,
            "dropped": c.data_dropped.0,
            "in_flight": live_data,
            "host_queued": host_q,
        },
        "bytes": {
            "generated": c.data_generated.1,
            "sent": c.data_sent.1,
            "delivered": c.data_delivered.1,
            "dropped": c.data_dropped.1,
            "in_flight": live_data_bytes,
            "host_queued": host_q_bytes,
        },
        "drops": drops_summary(ir, net, &by_reason, pfc_on),
        "control": control_summary(net, window),
        "nic": {
            "queue_per_transfer": net.per_transfer,
            // send-queue records the transfers ever needed at once (slots are reused)
            "transfer_queue_slots": net.flows.len() - net.n_flows,
            "transfer_queues_open": net.open_transfer_queues(),
        },
        "pause": {
            "frames_sent": c.pause_sent,
            "watchdog_trips": c.watchdog_trips,
            "stuck_ports": deadlock.0,
            "deadlock": deadlock.1,
            "host_paused_fraction": if host_paused.is_empty() { 0.0 } else { host_paused.iter().sum::<f64>() / host_paused.len() as f64 },
        },
        "fairness": { "jain": fairness },
        "tcp": tcp,
        "fct": fct_summary(net, w),
        "conservation": { "ok": conservation_ok, "problems": problems },
    });
    if !conservation_ok {
        return Err(RunError::Invariant(problems.join("; ")));
    }
    let mut summary = summary;
    // the row lists are moved in (`json!` would copy them value by value: a third of the finish of a
    // 1 000-host run)
    summary["flows"] = Value::Array(std::mem::take(&mut fr.flows));
    summary["links"] = Value::Array(links);
    summary["queues"] = Value::Array(queues);
    optional_sections(ir, net, end, &mut summary);
    if pfc_on {
        summary["pfc"] = crate::net::flowctl::pfc::summary(net, &name, end - w);
    }
    let tables = build_tables(ir, net, obs, bins, fct_rows);
    Ok(Results { summary, tables })
}

/// The summary's sections of mechanisms a run may not have: `routing` (link events), `pcap` (captures),
/// `rdma` (loss recovery), `int` (INT bytes on the wire).
fn optional_sections(ir: &Ir, net: &Network, end: u64, summary: &mut Value) {
    let c = &net.c;
    if let Some(d) = net.dynamics.as_ref() {
        let link = |l: u32| [node_name(ir, ir.links[l as usize].a as usize), node_name(ir, ir.links[l as usize].b as usize)];
        summary["routing"] = json!({
            "events": d.events.iter().map(|e| json!({ "t_s": to_s(e.t_ps), "link": link(e.link), "state": if e.up { "up" } else { "down" } }))
                .collect::<Vec<_>>(),
            "detection_s": to_s(d.detection_ps),
            "convergence_s": if d.convergence_ps == u64::MAX { Value::Null } else { json!(to_s(d.convergence_ps)) },
            "recomputations": d.recomputations,
            "link_drops": d.link_drops,
            "rerouted_frames": d.rerouted,
            "pinned_flows": ir.routing.pinned.len(),
        });
    }
    if let Some(p) = net.pcap.as_ref() {
        summary["pcap"] = p
            .caps
            .iter()
            .map(|c| {
                let port = &net.ports[c.spec.port.idx()];
                json!({ "name": c.spec.name, "node": node_name(ir, port.node.idx()), "peer": node_name(ir, port.peer_node.idx()),
                        "start_s": to_s(c.spec.start_ps), "end_s": to_s(c.spec.end_ps.min(end)), "frames": c.frames, "bytes": c.bytes })
            })
            .collect();
    }
    if let Some(r) = net.rdma.as_ref() {
        let st = r.stats;
        summary["rdma"] = json!({
            "loss_recovery": if r.selective { "selective_repeat" } else { "go_back_n" },
            "timeout_s": to_s(r.timeout_ps),
            "retransmitted_frames": st.retransmitted_frames,
            "retransmitted_bytes": st.retransmitted_bytes,
            "acks": st.acks,
            "nacks": st.nacks,
            "timeouts": st.timeouts,
            "discarded_frames": st.discarded_frames,
            "transfers_in_progress": net.transfers.in_progress().len(),
        });
    }
    if let Some(int) = net.int.as_ref() {
        let wire = int.wire();
        summary["int"] = json!({ "source_bytes": wire.source_bytes, "hop_bytes": wire.hop_bytes,
                                 "bytes_added": c.int_bytes_added });
    }
}

/// `control` of the summary: the scheme's messages by type, their overhead and counts.
fn control_summary(net: &Network, window: f64) -> Value {
    let c = &net.c;
    let names = net.scheme.message_types();
    let mut messages = serde_json::Map::new();
    for (k, name) in names.iter().enumerate() {
        messages.insert(name.to_string(), json!(c.ctrl_by_kind[k]));
    }
    let overhead_bps = (c.ctrl_bytes_window + c.extra_overhead_bytes) as f64 * 8.0 / window;
    json!({
        "overhead_bps": overhead_bps,
        "messages": messages,
        "generated": c.ctrl_generated.0,
        "bytes": c.ctrl_generated.1,
        "delivered": c.ctrl_delivered,
        "dropped": c.ctrl_dropped,
        "broadcast_copies": c.ctrl_replicated,
        "extra_overhead_bytes": c.extra_overhead_bytes,
        // delivered about a transfer's queue that had closed (ignored by the reaction point)
        "stale": c.ctrl_stale,
    })
}

/// `drops` of the summary: data and control drops, by reason (the PFC reasons only under PFC) and by switch.
fn drops_summary(ir: &Ir, net: &Network, by_reason: &[u64], pfc_on: bool) -> Value {
    let c = &net.c;
    let by_switch: serde_json::Map<String, Value> = net.switches.iter().map(|s| (node_name(ir, s.node.idx()).to_string(), json!(s.drops))).collect();
    json!({
        "total": c.data_dropped.0 + c.ctrl_dropped,
        "data": c.data_dropped.0,
        "control": c.ctrl_dropped,
        // headroom_full under PFC, link_down with link events
        "by_reason": DROP_REASONS.iter().zip(by_reason).enumerate()
            .filter(|&(k, _)| k < CLASSIC_DROP_REASONS || (k == 5 && pfc_on) || (k == 6 && net.dynamics.is_some()))
            .map(|(_, (n, v))| (n.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "by_switch": by_switch,
    })
}

/// `tcp` of the summary: totals over the TCP flows, ECN marks and the ACK frames.
fn tcp_summary(fr: &FlowRows, ecn_marks: u64, c: &Counters, live_ack: u64, window: f64) -> Value {
    let (tcp_tot, n_tcp, goodput_bytes) = (&fr.tcp_tot, fr.n_tcp, fr.goodput_bytes);
    json!({
        "flows": n_tcp,
        "goodput_bps": goodput_bytes as f64 * 8.0 / window,
        "retransmitted_segments": tcp_tot.retransmitted_segments,
        "fast_retransmits": tcp_tot.fast_retransmits,
        "timeouts": tcp_tot.timeouts,
        "ecn_reductions": tcp_tot.ecn_reductions,
        "ecn_marks": ecn_marks,
        "acks": { "generated": c.ack_generated.0, "bytes": c.ack_generated.1, "delivered": c.ack_delivered,
                  "dropped": c.ack_dropped, "in_flight": live_ack },
    })
}

/// `fct` of the summary: statistics of the transfers completed in the window, with the bad and unfinished ones.
fn fct_summary(net: &Network, w: u64) -> Value {
    let (bad, unfinished) = transfers_open(net, w);
    let st = &net.transfers.stats;
    let (fcount, fmin, fmean, fmax, fstd) = (st.count as usize, st.min_us(), st.mean_us(), st.max_us(), st.std_us());
    // with no completed transfer the statistics are empty (null), never 0, so means over runs skip them
    json!({
        "count": fcount,
        "min_us": if fcount == 0 { serde_json::Value::Null } else { json!(fmin) },
        "mean_us": if fcount == 0 { serde_json::Value::Null } else { json!(fmean) },
        "max_us": if fcount == 0 { serde_json::Value::Null } else { json!(fmax) },
        "std_us": if fcount < 2 { serde_json::Value::Null } else { json!(fstd) },
        "bad_flows": bad,
        "unfinished": unfinished,
    })
}

/// Fractions of the statistics window at which `queues[].cdf` gives the occupancy (the queue-length
/// CDF read as quantiles: the queue held at most `bytes` for fraction `q` of the time).
pub const QUEUE_QUANTILES: [f64; 10] = [0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 1.0];

/// Occupancy at each of [`QUEUE_QUANTILES`] from a time-at-occupancy histogram of
/// [`HIST_BUCKET`]-byte buckets: the upper edge of the first bucket where the cumulative time
/// reaches the fraction, capped at the largest occupancy seen (0 for an empty histogram).
pub fn hist_quantiles(hist: &[u64], q_max: u64) -> Vec<u64> {
    let total: u64 = hist.iter().sum();
    let mut out = vec![0u64; QUEUE_QUANTILES.len()];
    if total == 0 {
        return out;
    }
    // (each fraction's time computed once, not at every bucket; the scan ends at the last
    // fraction's bucket: 24 000 instructions per queue of a k = 8 fat tree's summary before)
    let at = QUEUE_QUANTILES.map(|q| q * total as f64);
    let (mut acc, mut k) = (0u64, 0usize);
    for (b, &v) in hist.iter().enumerate() {
        acc += v;
        while k < at.len() && acc as f64 >= at[k] {
            out[k] = ((b as u64 + 1) * HIST_BUCKET).min(q_max);
            k += 1;
        }
        if k == at.len() {
            break;
        }
    }
    for v in out.iter_mut().skip(k) {
        *v = q_max;
    }
    out
}
