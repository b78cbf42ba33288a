//! Tests of the event queue: its order against a sorted reference, lanes, calendar, batches, wait tree.

use super::calendar::{DEFAULT_SLICES, MAX_SLICES, MAX_SLICE_BITS, MIN_SLICES, MIN_SLICE_BITS, SLICE_BITS};
use super::*;

#[test]
fn orders_by_time_then_class_then_insertion() {
    let mut q = EventQueue::default();
    q.push(10, Event::Sample);
    q.push(10, Event::SourceFire { source: 1 });
    q.push(10, Event::HostWake { host: NodeId(1) });
    q.push(5, Event::Sample);
    q.push(10, Event::Arrive { port: PortId(0), frame: FrameId(0) });
    q.push(10, Event::HostWake { host: NodeId(2) });
    let got: Vec<(u64, Event)> = std::iter::from_fn(|| q.pop()).collect();
    assert_eq!(
        got,
        vec![
            (5, Event::Sample),
            (10, Event::Arrive { port: PortId(0), frame: FrameId(0) }),
            (10, Event::HostWake { host: NodeId(1) }),
            (10, Event::HostWake { host: NodeId(2) }),
            (10, Event::SourceFire { source: 1 }),
            (10, Event::Sample),
        ]
    );
}

#[test]
fn equal_keys_are_fifo_for_many_events() {
    let mut q = EventQueue::default();
    for i in 0..1000u32 {
        q.push(7, Event::SourceFire { source: i });
    }
    for i in 0..1000u32 {
        assert_eq!(q.pop(), Some((7, Event::SourceFire { source: i })));
    }
    assert!(q.is_empty());
}

#[test]
fn a_host_wait_replaces_its_previous_one_and_the_tree_pops_in_key_order() {
    // reference: each slot's latest wake-up; the queue must pop the smallest (time, seq)
    let mut rng = crate::rng::Stream::new(5, 0, 0);
    let mut q = EventQueue::default();
    let mut latest: Vec<Option<(u64, u64)>> = vec![None; 37]; // (time, seq) per slot
    let (mut seq, mut now) = (0u64, 0u64);
    let mut woken: Option<usize> = None;
    for _ in 0..50_000 {
        // the woken host mostly asks again at once (the pop's path is walked once), else any slot
        let slot = match woken.take() {
            Some(s) if rng.below(4) > 0 => s,
            _ => rng.below(37) as usize,
        };
        if rng.below(3) > 0 {
            let t = now + rng.below(1_000);
            seq += 1;
            q.push_wait(t, slot, NodeId(1000 + slot as u32));
            latest[slot] = Some((t, seq));
        } else {
            let want = latest.iter().enumerate().filter_map(|(s, k)| k.map(|k| (k, s))).min();
            match (q.pop(), want) {
                (Some((t, ev)), Some(((wt, _), s))) => {
                    assert_eq!((t, ev), (wt, Event::HostWake { host: NodeId(1000 + s as u32) }));
                    latest[s] = None;
                    now = t;
                    woken = Some(s);
                }
                (None, None) => {}
                (got, want) => panic!("popped {got:?}, wanted {want:?}"),
            }
        }
        assert_eq!(q.len(), latest.iter().flatten().count());
    }
}

#[test]
fn the_calendar_pops_in_key_order_across_slices_buckets_and_overflow() {
    // every span a network may get, shortest, default and longest
    for (slices, steps) in [(MIN_SLICES, 10_000), (DEFAULT_SLICES, 60_000), (MAX_SLICES, 10_000)] {
        assert_eq!(Calendar::slices_for((slices as u64 - 2) << SLICE_BITS, SLICE_BITS), slices);
        calendar_pops_in_key_order(slices, SLICE_BITS, steps);
    }
    // the narrowest and the widest slice a network gets
    for shift in [MIN_SLICE_BITS, MAX_SLICE_BITS] {
        calendar_pops_in_key_order(DEFAULT_SLICES, shift, 20_000);
    }
    assert_eq!(Calendar::slices_for(u64::MAX, SLICE_BITS), MAX_SLICES);
}

#[test]
fn a_slice_holds_a_few_link_events_at_full_load() {
    // six events 4.7 ns apart: 28 ns, nearest 2^15 ps; 0.78 ns apart: 4.7 ns, nearest 2^12 ps
    assert_eq!(Calendar::shift_for(4_700), 15);
    assert_eq!(Calendar::shift_for(780), 12);
    // a power of two itself, and the bounds
    assert_eq!(Calendar::shift_for((1 << 13) / 6 + 1), 13);
    assert_eq!(Calendar::shift_for(0), MIN_SLICE_BITS);
    assert_eq!(Calendar::shift_for(u64::MAX), MAX_SLICE_BITS);
}

fn calendar_pops_in_key_order(slices: usize, shift: u32, steps: u32) {
    // link events due anywhere from the current slice to well past the buckets' span, pushed
    // and popped in turn, a few in bursts due at one instant: the order of one sorted list, ties
    // by insertion
    let mut rng = crate::rng::Stream::new(23, 0, 0);
    let mut q = EventQueue::with_calendar(0, Calendar::new(slices, shift));
    let mut reference: Vec<(u64, u64, Event)> = Vec::new(); // (time, seq, event)
    let (mut seq, mut now) = (0u64, 0u64);
    let span = (slices as u64) << shift;
    for i in 0..steps {
        if rng.below(5) < 3 {
            let ahead = match rng.below(4) {
                0 => rng.below(1 << shift),
                1 => rng.below(span),
                2 => span + rng.below(4 * span),
                _ => 0,
            };
            // now and then a burst due at one instant (a PAUSE frame on each of 100 ports)
            let burst = if rng.below(100) == 0 { 100 } else { 1 };
            for b in 0..burst {
                let ev = if (i + b) % 2 == 0 { Event::Arrive { port: PortId(i), frame: FrameId(b) } } else { Event::PortTxDone { port: PortId(b) } };
                seq += 1;
                q.push(now + ahead, ev);
                reference.push((now + ahead, ev.class() << 60 | seq, ev));
            }
        } else if let Some((t, ev)) = q.pop() {
            let k = (0..reference.len()).min_by_key(|&k| (reference[k].0, reference[k].1)).expect("same length");
            let r = reference.swap_remove(k);
            assert_eq!((t, ev), (r.0, r.2));
            now = t;
        }
        assert_eq!(q.len(), reference.len());
    }
}

#[test]
fn a_run_that_never_empties_stays_small() {
    // a CBR source's lane: always one or two firings pending, never empty, for 200 000 events;
    // the run drops its taken entries when it fills, so its storage does not grow with the run
    let mut q = EventQueue::default();
    q.push(0, Event::SourceFire { source: 0 });
    for i in 1..200_000u64 {
        q.push(10 * i, Event::SourceFire { source: 0 });
        let (t, _) = q.pop().expect("pending");
        assert_eq!(t, 10 * (i - 1));
    }
    assert_eq!(q.len(), 1);
    assert!(q.far.run.capacity() <= 4096, "run capacity {}", q.far.run.capacity());
}

#[test]
fn batched_pushes_are_taken_in_the_order_of_single_pushes() {
    // bursts of same-instant events pushed with push_batched (some one right after another:
    // batches), others pushed alone in between, and events pushed while a batch's members are
    // handled, among them some of the same instant and a lower class (which must go before the
    // rest of the batch, as Network::run_batch does it): the order of one sorted list, ties by
    // insertion
    let mut rng = crate::rng::Stream::new(31, 0, 0);
    let mut q = EventQueue::default();
    let mut reference: Vec<(u64, u64, u64, Event)> = Vec::new(); // (time, class, seq, event)
    let (mut seq, mut now, mut id) = (0u64, 0u64, 0u32);
    // the batch being handled: key, members, next member
    let mut taking: Option<(u128, Vec<Event>, usize)> = None;
    let mut batches_seen = 0;
    for _ in 0..40_000 {
        if rng.below(2) == 0 {
            // a burst of 1-4 pushes at one instant (now and then the current one) and class
            let t = now + if rng.below(4) == 0 { 0 } else { rng.below(3) * 1_000 };
            let class = rng.below(2);
            let batched = rng.below(3) > 0;
            for _ in 0..1 + rng.below(4) {
                id += 1;
                let ev = if class == 0 { Event::Arrive { port: PortId(id), frame: FrameId(id) } } else { Event::PortTxDone { port: PortId(id) } };
                seq += 1;
                reference.push((t, class, seq, ev));
                if batched {
                    q.push_batched(t, ev)
                } else {
                    q.push(t, ev)
                }
            }
            if rng.below(5) == 0 {
                // something else in between (another class)
                id += 1;
                seq += 1;
                reference.push((t, 3, seq, Event::SourceFire { source: id }));
                q.push(t, Event::SourceFire { source: id });
            }
            continue;
        }
        // the next event: the next member of the batch being handled (unless an event pushed
        // meanwhile goes first) or the queue's next
        let got = match taking.take() {
            Some((key, members, i)) if i < members.len() && ((key as u64) >> 60 == 0 || !q.has_before(key)) => {
                let ev = members[i];
                taking = Some((key, members, i + 1));
                Some(((key >> 64) as u64, ev))
            }
            Some((key, members, i)) => {
                if i < members.len() {
                    q.push_rest(key, &members[i..]);
                }
                taking = None;
                None
            }
            None => match q.pop() {
                Some((t, Event::Batch { id, .. })) => {
                    batches_seen += 1;
                    let (key, members) = q.take_batch(id);
                    assert_eq!((key >> 64) as u64, t);
                    q.recycle(id, Vec::new());
                    taking = Some((key, members, 0));
                    now = t;
                    None
                }
                other => other,
            },
        };
        if let Some((t, ev)) = got {
            let k = (0..reference.len()).min_by_key(|&k| (reference[k].0, reference[k].1, reference[k].2)).expect("pending");
            let r = reference.swap_remove(k);
            assert_eq!((t, ev), (r.0, r.3));
            now = t;
        }
    }
    assert!(batches_seen > 1_000, "{batches_seen} batches");
}

#[test]
fn the_lanes_pop_in_the_order_of_one_heap() {
    // random pushes of every class interleaved with pops: the same order as a sorted list
    let mut rng = crate::rng::Stream::new(11, 0, 0);
    let mut q = EventQueue::default();
    let mut reference: Vec<(u64, u64, u64, Event)> = Vec::new(); // (time, class, seq, event)
    let (mut seq, mut now) = (0u64, 0u64);
    for i in 0..20_000u32 {
        if rng.below(3) > 0 {
            // mostly in about the order they fall due (the runs), some anywhere (the heaps)
            let t = if rng.below(4) == 0 { now + rng.below(50) } else { now + 40 + i as u64 / 4 - rng.below(6).min(i as u64 / 4) };
            let ev = match rng.below(6) {
                5 => Event::RpTimer { host: NodeId(i), token: i as u64 },
                0 => Event::Arrive { port: PortId(i), frame: FrameId(i) },
                1 => Event::PortTxDone { port: PortId(i) },
                4 => Event::HostWake { host: NodeId(i) },
                2 => Event::SourceFire { source: i },
                _ => Event::Sample,
            };
            seq += 1;
            match ev {
                // the wait tree: one per host (this test's hosts are all distinct)
                Event::HostWake { host } if i % 2 == 0 => q.push_wait(t, i as usize, host),
                _ => q.push(t, ev),
            }
            reference.push((t, ev.class(), seq, ev));
        } else if let Some((t, ev)) = q.pop_before(now + 25) {
            reference.sort_by_key(|r| std::cmp::Reverse((r.0, r.1, r.2)));
            let r = reference.pop().expect("same length");
            assert_eq!((t, ev), (r.0, r.3));
            now = t;
        }
    }
    assert_eq!(q.len(), reference.len());
    reference.sort_by_key(|r| std::cmp::Reverse((r.0, r.1, r.2)));
    while let Some((t, ev)) = q.pop() {
        let r = reference.pop().expect("same length");
        assert_eq!((t, ev), (r.0, r.3));
    }
    assert!(reference.is_empty());
}

/// Link events of `ports` ports, each port's in order of time, pushed and popped in turn (as a
/// network's transmissions end and frames arrive), the ports in turn (`in_turn`) or at random; the
/// pops are checked against one heap of the same keys. Returns whether the near lane gave up its run.
fn near_lane_on(ports: u32, in_turn: bool, events: u32) -> bool {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut rng = crate::rng::Stream::new(31, 0, 0);
    let mut q = EventQueue::for_links(64, 20_000, 1_000);
    let mut reference = BinaryHeap::new();
    let (mut seq, mut now) = (0u64, 0u64);
    // each port's next event: its last one plus a frame's time, give or take
    let mut next: Vec<u64> = (0..ports as u64).map(|p| p * 997 % 1_200).collect();
    for i in 0..events {
        let p = if in_turn { (i % ports) as usize } else { rng.below(ports as u64) as usize };
        let t = next[p].max(now);
        // (ports in turn keep a fixed pace: a random one drifts, and two drifted ports no longer
        // come in order)
        next[p] = t + 1_200 + if in_turn { 0 } else { rng.below(50) };
        let ev = if i % 2 == 0 { Event::Arrive { port: PortId(p as u32), frame: FrameId(i) } } else { Event::PortTxDone { port: PortId(p as u32) } };
        seq += 1;
        q.push(t, ev);
        reference.push(Reverse((t, ev.class(), seq, i)));
        if i % 2 == 1 {
            let (t, _) = q.pop().expect("pending");
            let Reverse((rt, ..)) = reference.pop().expect("same length");
            assert_eq!(t, rt, "event {i}");
            now = t;
        }
    }
    assert_eq!(q.len(), reference.len());
    while let Some((t, _)) = q.pop() {
        let Reverse((rt, ..)) = reference.pop().expect("same length");
        assert_eq!(t, rt);
    }
    assert!(reference.is_empty());
    q.near.bypass
}

#[test]
fn the_near_lane_gives_up_its_run_only_where_most_link_events_miss_it() {
    // one port: every event falls due after the run's last (a fan-in's bottleneck): the run stays
    assert!(!near_lane_on(1, true, 60_000));
    // two ports in turn: each event falls due among the run's last two, which take it
    assert!(!near_lane_on(2, true, 60_000));
    // many ports at random (a fabric): most events fall due before the run's last two; the
    // calendar takes them all, in the same order
    assert!(near_lane_on(64, false, 60_000));
}
