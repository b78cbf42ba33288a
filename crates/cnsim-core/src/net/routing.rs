//! Routing: static shortest paths (model reference §0), computed once at build time.

use crate::ids::{NodeId, PortId};
use crate::ir::{Ir, NodeIr};
use std::collections::{HashMap, VecDeque};

/// The seed-derived salt of the ECMP hash.
pub fn ecmp_salt(seed: u64) -> u64 {
    seed.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ 0x6563_6d70 // "ecmp"
}

/// Which nodes are switches, and every node's (neighbour, own port) list in link order. Link `j`
/// gives port `2j` at its end `a` and `2j + 1` at its end `b` — the numbering of the build.
pub fn adjacency(ir: &Ir) -> (Vec<bool>, Vec<Vec<(NodeId, PortId)>>) {
    let n = ir.nodes.len();
    let mut adj: Vec<Vec<(NodeId, PortId)>> = vec![Vec::new(); n];
    for (j, l) in ir.links.iter().enumerate() {
        adj[l.a as usize].push((NodeId(l.b), PortId(2 * j as u32)));
        adj[l.b as usize].push((NodeId(l.a), PortId(2 * j as u32 + 1)));
    }
    let is_switch = ir.nodes.iter().map(|x| matches!(x, NodeIr::Switch { .. })).collect();
    (is_switch, adj)
}

/// Equal-cost next hops of every switch: for switch node `v`, `(offsets, ports)` with the ports
/// toward destination `d` in `ports[offsets[d]..offsets[d + 1]]` — the single route first, then
/// the other neighbours one hop closer to `d`, in link order. Nodes that are not switches get
/// empty tables; so does a switch with one next hop toward every destination (no choice to make).
pub fn compute_ecmp(n_nodes: usize, is_switch: &[bool], adj: &[Vec<(NodeId, PortId)>], routes: &[Vec<PortId>]) -> Vec<(Vec<u32>, Vec<PortId>)> {
    let mut out: Vec<(Vec<u32>, Vec<PortId>)> = vec![(Vec::new(), Vec::new()); n_nodes];
    let mut sets: Vec<Vec<Vec<PortId>>> = (0..n_nodes).map(|v| if is_switch[v] { vec![Vec::new(); n_nodes] } else { Vec::new() }).collect();
    let mut dist = vec![u32::MAX; n_nodes];
    let mut q = VecDeque::new();
    let stubs = stub_hosts(is_switch, adj);
    for dst in 0..n_nodes {
        if stubs[dst] != NONE {
            continue; // below, from its switch's sets
        }
        bfs_to(dst, is_switch, adj, &mut dist, &mut q, |_, _| {});
        for v in 0..n_nodes {
            if !is_switch[v] || v == dst || routes[v][dst] == PortId::NONE {
                continue;
            }
            let first = routes[v][dst];
            let mut set = vec![first];
            for &(w, p) in &adj[v] {
                let w = w.idx();
                let forwards = w == dst || is_switch[w];
                if p != first && forwards && dist[w] != u32::MAX && dist[w] + 1 == dist[v] {
                    set.push(p);
                }
            }
            sets[v][dst] = set;
        }
    }
    // toward a host on one link to switch s: every other switch's choices toward s (its distances
    // are s's plus one), and s's single port toward it
    let switches: Vec<usize> = (0..n_nodes).filter(|&v| is_switch[v]).collect();
    for dst in (0..n_nodes).filter(|&d| stubs[d] != NONE) {
        let s = stubs[dst];
        for &v in switches.iter().filter(|&&v| v != s) {
            sets[v][dst] = sets[v][s].clone();
        }
        sets[s][dst] = vec![routes[s][dst]];
    }
    for v in 0..n_nodes {
        if !is_switch[v] || sets[v].iter().all(|s| s.len() <= 1) {
            continue;
        }
        let mut offsets = Vec::with_capacity(n_nodes + 1);
        let mut ports = Vec::new();
        for set in &sets[v] {
            offsets.push(ports.len() as u32);
            ports.extend_from_slice(set);
        }
        offsets.push(ports.len() as u32);
        out[v] = (offsets, ports);
    }
    out
}

/// A switch's next hops toward one node: with `n` ≤ 1 its single egress port (`at`, a [`PortId`]'s
/// number; `PortId::NONE`: unreachable), read without a second look-up; with `n` > 1 the `n`
/// equal-cost choices from `hops[at]` on, among which ECMP chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextHops {
    pub at: u32,
    pub n: u32,
}

/// A switch's next-hop table from its routes (`route`, by node) and its ECMP choices
/// (`compute_ecmp`'s pair for it; empty without ECMP): toward each node its equal-cost choices
/// where it has more than one, else its single route; each distinct list of choices stored once in
/// the returned hops.
pub fn next_hop_table(route: &[PortId], (offsets, ports): &(Vec<u32>, Vec<PortId>)) -> (Vec<NextHops>, Vec<PortId>) {
    let mut hops = Vec::new();
    let mut stored: HashMap<&[PortId], u32> = HashMap::new();
    let table = (0..route.len())
        .map(|d| match offsets.get(d..d + 2) {
            Some(&[a, b]) if b - a > 1 => {
                let list = &ports[a as usize..b as usize];
                let at = *stored.entry(list).or_insert_with(|| {
                    hops.extend_from_slice(list);
                    (hops.len() - list.len()) as u32
                });
                NextHops { at, n: list.len() as u32 }
            }
            _ => NextHops { at: route[d].0, n: 1 },
        })
        .collect();
    (table, hops)
}

/// The ECMP choice among `k` equal-cost next hops at switch `node` for a frame with flow key
/// `key`: a seeded 64-bit mix (SplitMix64 finaliser), so a flow keeps its path and different
/// switches choose independently.
#[inline]
pub fn ecmp_index(salt: u64, node: u32, key: u64, k: u32) -> u32 {
    let mut z = salt ^ key.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((node as u64) << 40);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (((z >> 32) * k as u64) >> 32) as u32
}

/// The node path (source host, switches, destination host) of every flow of an IR under the
/// engine's routes at the start of the run (a pinned flow's own path) — for the analytical model and
/// tools, so nothing routes a second time. A host sends on its first link. An unreachable
/// destination gives an empty path.
pub fn flow_paths(ir: &Ir) -> Vec<Vec<u32>> {
    let t = PathTables::new(ir, ir.ecmp);
    let mut paths: Vec<Vec<u32>> =
        ir.flows.iter().enumerate().map(|(fi, f)| f.dst.map_or_else(Vec::new, |d| t.path(ir, f.src, d, fi as u64))).collect();
    for p in &ir.routing.pinned {
        if let Some(slot) = paths.get_mut(p.flow as usize) {
            *slot = p.path.clone();
        }
    }
    paths
}

/// The path of a frame from host `src` to host `dst` for each pair, on the single route (ECMP's
/// hash depends on the send queue a transfer gets during the run; on the fabrics cnsim builds the
/// equal-cost paths have the same links, so the single route's latency and rates are theirs).
pub fn pair_paths(ir: &Ir, pairs: &[(u32, u32)]) -> Vec<Vec<u32>> {
    let t = PathTables::new(ir, false);
    pairs.iter().map(|&(s, d)| t.path(ir, s, d, 0)).collect()
}

/// Routes (and ECMP choices) of an IR, for walking paths outside a run.
pub(crate) struct PathTables {
    is_switch: Vec<bool>,
    adj: Vec<Vec<(NodeId, PortId)>>,
    routes: Vec<Vec<PortId>>,
    ecmp: Vec<(Vec<u32>, Vec<PortId>)>,
    salt: u64,
}

impl PathTables {
    pub(crate) fn new(ir: &Ir, ecmp: bool) -> Self {
        let (is_switch, adj) = adjacency(ir);
        let routes = compute_routes(ir.nodes.len(), &is_switch, &adj);
        let ecmp = if ecmp { compute_ecmp(ir.nodes.len(), &is_switch, &adj, &routes) } else { Vec::new() };
        PathTables { is_switch, adj, routes, ecmp, salt: ecmp_salt(ir.seed) }
    }

    /// Nodes from `src` to `dst` for ECMP key `key` (empty: unreachable).
    pub(crate) fn path(&self, ir: &Ir, src: u32, dst: u32, key: u64) -> Vec<u32> {
        let peer = |port: PortId| {
            let l = &ir.links[(port.0 / 2) as usize];
            if port.0 % 2 == 0 {
                l.b
            } else {
                l.a
            }
        };
        let mut path = vec![src];
        let Some(&(first, _)) = self.adj[src as usize].first() else { return Vec::new() };
        let mut node = first.0;
        for _ in 0..ir.nodes.len() {
            path.push(node);
            if node == dst {
                return path;
            }
            if !self.is_switch[node as usize] {
                break;
            }
            let mut p = self.routes[node as usize][dst as usize];
            if p == PortId::NONE {
                break;
            }
            if let Some((offs, ports)) = self.ecmp.get(node as usize).filter(|(o, _)| !o.is_empty()) {
                let (a, b) = (offs[dst as usize], offs[dst as usize + 1]);
                if b - a > 1 {
                    p = ports[(a + ecmp_index(self.salt, node, key, b - a)) as usize];
                }
            }
            node = peer(p);
        }
        Vec::new()
    }
}

/// Shortest-hop routes: for every switch, the egress port toward every node (a host's row is empty:
/// a host sends on its first link, and the rows of a 1 000-host fan-in would be 4 MB). BFS from each
/// destination, never transiting through hosts; ties broken by link order (deterministic).
pub fn compute_routes(
    n_nodes: usize,
    is_switch: &[bool],
    adj: &[Vec<(NodeId, PortId)>], // node -> (neighbour, own port toward it) in link order
) -> Vec<Vec<PortId>> {
    let mut routes: Vec<Vec<PortId>> = is_switch.iter().map(|&sw| if sw { vec![PortId::NONE; n_nodes] } else { Vec::new() }).collect();
    let mut dist = vec![u32::MAX; n_nodes];
    let mut q = VecDeque::new();
    let stubs = stub_hosts(is_switch, adj);
    for dst in 0..n_nodes {
        if stubs[dst] != NONE {
            continue; // below, from its switch's routes
        }
        bfs_to(dst, is_switch, adj, &mut dist, &mut q, |v, u| {
            // v's next hop toward dst is u: v's port toward u (first in link order)
            if !is_switch[v] {
                return;
            }
            if let Some(&(_, p)) = adj[v].iter().find(|(w, _)| w.idx() == u) {
                routes[v][dst] = p;
            }
        });
    }
    // Toward a host on one link to switch s, the search from the host reaches s first and then
    // runs exactly as the search from s (the host never forwards): every node but the two routes
    // as toward s, and s takes its first port toward the host.
    let switches: Vec<usize> = (0..n_nodes).filter(|&v| is_switch[v]).collect();
    for dst in (0..n_nodes).filter(|&d| stubs[d] != NONE) {
        let s = stubs[dst];
        for &v in switches.iter().filter(|&&v| v != s) {
            routes[v][dst] = routes[v][s];
        }
        routes[s][dst] = adj[s].iter().find(|(w, _)| w.idx() == dst).expect("linked").1;
    }
    routes
}

const NONE: usize = usize::MAX;

/// For every node: the switch it hangs off if it is a host with exactly one link, to a switch
/// (routes toward it follow from that switch's), else `NONE`.
fn stub_hosts(is_switch: &[bool], adj: &[Vec<(NodeId, PortId)>]) -> Vec<usize> {
    (0..adj.len())
        .map(|d| match adj[d].as_slice() {
            [(s, _)] if !is_switch[d] && is_switch[s.idx()] => s.idx(),
            _ => NONE,
        })
        .collect()
}

/// Breadth-first search from `dst` over the links, never through hosts (they do not forward):
/// fills `dist` (hops to `dst`, u32::MAX = unreachable) and calls `discovered(v, u)` when node `v`
/// is first reached from `u` (so `u` is a next hop of `v` toward `dst`).
fn bfs_to(
    dst: usize,
    is_switch: &[bool],
    adj: &[Vec<(NodeId, PortId)>],
    dist: &mut [u32],
    q: &mut VecDeque<usize>,
    mut discovered: impl FnMut(usize, usize),
) {
    dist.iter_mut().for_each(|d| *d = u32::MAX);
    dist[dst] = 0;
    q.clear();
    q.push_back(dst);
    while let Some(u) = q.pop_front() {
        if u != dst && !is_switch[u] {
            continue; // hosts do not forward
        }
        for &(v, _) in &adj[u] {
            let v = v.idx();
            if dist[v] == u32::MAX {
                dist[v] = dist[u] + 1;
                discovered(v, u);
                q.push_back(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_toward_stub_hosts_equal_a_search_from_each_host() {
        // two switches (0, 1) linked twice; hosts 2, 3 on switch 0, host 4 on both switches,
        // host 5 on switch 1, host 6 linked only to host 5
        let links = [(0, 1), (0, 2), (3, 0), (1, 0), (4, 0), (4, 1), (1, 5), (5, 6)];
        let n = 7;
        let mut adj: Vec<Vec<(NodeId, PortId)>> = vec![Vec::new(); n];
        for (j, &(a, b)) in links.iter().enumerate() {
            adj[a].push((NodeId(b as u32), PortId(2 * j as u32)));
            adj[b].push((NodeId(a as u32), PortId(2 * j as u32 + 1)));
        }
        let is_switch: Vec<bool> = (0..n).map(|v| v < 2).collect();
        let routes = compute_routes(n, &is_switch, &adj);
        let (mut dist, mut q) = (vec![0; n], VecDeque::new());
        for dst in 0..n {
            let mut want = vec![PortId::NONE; n];
            bfs_to(dst, &is_switch, &adj, &mut dist, &mut q, |v, u| {
                want[v] = adj[v].iter().find(|(w, _)| w.idx() == u).expect("linked").1;
            });
            for v in 0..n {
                if is_switch[v] {
                    assert_eq!(routes[v][dst], want[v], "switch {v} toward {dst}");
                } else {
                    assert!(routes[v].is_empty(), "host {v} has no routes");
                }
            }
        }
        assert_eq!(stub_hosts(&is_switch, &adj), vec![NONE, NONE, 0, 0, NONE, NONE, NONE]);
        // 4, 5: two links; 6: to a host
    }

    fn hop(at: u32, n: u32) -> NextHops {
        NextHops { at, n }
    }

    #[test]
    fn next_hops_are_the_route_or_the_ecmp_choices_each_list_stored_once() {
        let (p0, p1, p2, p3, none) = (PortId(0), PortId(1), PortId(2), PortId(3), PortId::NONE);
        // toward nodes 0 and 3 two choices (the same list), toward 1 one, toward 2 none (unreachable)
        let route = [p0, p1, none, p0];
        let ecmp = (vec![0, 2, 3, 3, 5], vec![p0, p3, p2, p0, p3]);
        let (table, hops) = next_hop_table(&route, &ecmp);
        // a single choice is the route (toward 1 another port than the ECMP list's), as before ECMP
        assert_eq!(table, [hop(0, 2), hop(1, 1), hop(none.0, 1), hop(0, 2)]);
        assert_eq!(hops, [p0, p3]);
        // without ECMP: the routes
        let (table, hops) = next_hop_table(&[p1, p1, none], &(Vec::new(), Vec::new()));
        assert_eq!(table, [hop(1, 1), hop(1, 1), hop(none.0, 1)]);
        assert!(hops.is_empty());
    }
}
