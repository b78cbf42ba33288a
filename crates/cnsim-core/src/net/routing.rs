//! Routing: static shortest paths (spec §0), computed once at build time.

use crate::ids::{NodeId, PortId};
use std::collections::VecDeque;

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
