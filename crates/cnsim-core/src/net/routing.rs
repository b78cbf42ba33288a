//! Routing: static shortest paths (spec §0), computed once at build time.

use crate::ids::{NodeId, PortId};
use crate::ir::{Ir, NodeIr};
use std::collections::VecDeque;

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

/// The node path (source host, switches, destination host) of every flow of an IR under the
/// engine's routes — for the analytical model and tools, so nothing routes a second time. A host
/// sends on its first link. An unreachable destination gives an empty path.
pub fn flow_paths(ir: &Ir) -> Vec<Vec<u32>> {
    let (is_switch, adj) = adjacency(ir);
    let routes = compute_routes(ir.nodes.len(), &is_switch, &adj);
    let peer = |port: PortId| {
        let l = &ir.links[(port.0 / 2) as usize];
        if port.0 % 2 == 0 { l.b } else { l.a }
    };
    ir.flows
        .iter()
        .map(|f| {
            let mut path = vec![f.src];
            let Some(&(first, _)) = adj[f.src as usize].first() else { return Vec::new() };
            let mut node = first.0;
            for _ in 0..ir.nodes.len() {
                path.push(node);
                if node == f.dst {
                    return path;
                }
                if !is_switch[node as usize] {
                    break;
                }
                let p = routes[node as usize][f.dst as usize];
                if p == PortId::NONE {
                    break;
                }
                node = peer(p);
            }
            Vec::new()
        })
        .collect()
}

/// Shortest-hop routes: for every switch, the egress port toward every node. BFS from each
/// destination, never transiting through hosts; ties broken by link order (deterministic).
pub fn compute_routes(
    n_nodes: usize,
    is_switch: &[bool],
    adj: &[Vec<(NodeId, PortId)>], // node -> (neighbour, own port toward it) in link order
) -> Vec<Vec<PortId>> {
    let mut routes = vec![vec![PortId::NONE; n_nodes]; n_nodes];
    let mut dist = vec![u32::MAX; n_nodes];
    let mut q = VecDeque::new();
    for dst in 0..n_nodes {
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
                    // v's next hop toward dst is u: find v's port toward u (first in link order)
                    if let Some(&(_, p)) = adj[v].iter().find(|(w, _)| w.idx() == u) {
                        routes[v][dst] = p;
                    }
                    q.push_back(v);
                }
            }
        }
    }
    routes
}
