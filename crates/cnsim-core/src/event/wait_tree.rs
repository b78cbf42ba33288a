//! The tournament tree of the hosts' paced and paused wake-ups.

use super::NO_KEY;
use crate::ids::NodeId;

/// The host wake-ups that wait for a rate limiter or a pause: at most one per host slot (a newer
/// one replaces it: a host asks for a new one only when its pending one is superseded or past), in
/// a tournament tree over the slots. Each internal node holds the smallest key below it and that
/// key's slot, so the next wake-up is at the root, and a change walks one leaf-to-root path of
/// log2(slots) steps, comparing the path's winner (kept in registers) with the sibling's: paced
/// hosts' wake-ups fall due in no particular order (their rates differ), and a binary heap sifting
/// them mispredicted a branch at most levels. A pop leaves its slot's path to be walked later
/// (`stale`): the woken host mostly asks for its next wake-up at once, and one walk then serves both.
pub(super) struct WaitTree {
    /// `node[cap + s]`: slot `s`'s wake-up (key `NO_KEY`: none); `node[i]`, `1 <= i < cap`: the
    /// smallest below node `i`.
    node: Vec<Node>,
    /// The host of each slot's wake-up.
    hosts: Vec<NodeId>,
    cap: usize,
    /// A slot emptied by a pop whose path is not walked yet.
    pub(super) stale: Option<usize>,
}

/// A node of the [`WaitTree`]: a key and its slot.
#[derive(Clone, Copy)]
struct Node {
    key: u128,
    slot: u32,
}

impl Default for WaitTree {
    fn default() -> Self {
        let none = Node { key: NO_KEY, slot: 0 };
        WaitTree { node: vec![none; 2], hosts: vec![NodeId(0)], cap: 1, stale: None }
    }
}

impl WaitTree {
    /// Key of the next wake-up, or `NO_KEY` (no pop's path left to walk).
    #[inline(always)]
    pub(super) fn min(&self) -> u128 {
        debug_assert!(self.stale.is_none());
        self.node[1].key
    }
    /// Room for slot `slot` (the tree doubles; its inner nodes are recomputed).
    #[cold]
    pub(super) fn grow(&mut self, slot: usize) {
        self.settle();
        let (old, cap) = (self.cap, (slot + 1).next_power_of_two().max(2));
        let mut node: Vec<Node> = (0..2 * cap).map(|i| Node { key: NO_KEY, slot: (i % cap) as u32 }).collect();
        node[cap..cap + old].copy_from_slice(&self.node[old..2 * old]);
        for i in (1..cap).rev() {
            let (l, r) = (node[2 * i], node[2 * i + 1]);
            node[i] = if r.key < l.key { r } else { l };
        }
        self.node = node;
        self.hosts.resize(cap, NodeId(0));
        self.cap = cap;
    }
    /// Slot `slot`'s key changed: the nodes on its path to the root. The indices are masked with
    /// the tree's size less one (it is a power of two, and they are below it: no change), which
    /// lets the compiler drop their bounds checks (≈ 9 instructions a level, 1/4 of the walk).
    #[inline(always)]
    pub(super) fn update(&mut self, slot: usize) {
        let node = &mut self.node[..];
        let m = node.len() - 1;
        debug_assert!(node.len().is_power_of_two() && slot < self.cap);
        let mut i = (self.cap + slot) & m;
        let mut key = node[i].key;
        while i > 1 {
            // `node[i]` holds the current winner. Which side wins is unpredictable, so the winner
            // is loaded from an index computed from the comparison, not chosen by a branch (written
            // as masks or with `select_unpredictable`, the compiler made it a branch again: ≈ 450 k
            // mispredictions on QCN fan-in-100; a conditional move, written out level by level
            // where the compiler keeps it, was no faster and took more instructions)
            let j = i ^ (node[(i ^ 1) & m].key < key) as usize;
            let w = node[j & m];
            key = w.key;
            i >>= 1;
            node[i & m] = w;
        }
    }
    /// Walk the path a pop left.
    #[inline(always)]
    pub(super) fn settle(&mut self) {
        if let Some(s) = self.stale.take() {
            self.update(s);
        }
    }
    #[inline]
    pub(super) fn set(&mut self, slot: usize, key: u128, host: NodeId) {
        if slot >= self.cap {
            self.grow(slot);
        }
        match self.stale {
            Some(s) if s == slot => self.stale = None,
            _ => self.settle(),
        }
        self.node[self.cap + slot].key = key;
        self.hosts[slot] = host;
        self.update(slot);
    }
    /// Remove the next wake-up (the tree is settled and not empty); its path is walked by the
    /// next [`Self::set`] or [`Self::settle`].
    #[inline]
    pub(super) fn pop(&mut self) -> (u128, NodeId) {
        debug_assert!(self.stale.is_none());
        let Node { key, slot } = self.node[1];
        let s = slot as usize;
        self.node[self.cap + s].key = NO_KEY;
        self.stale = Some(s);
        (key, self.hosts[s])
    }
    pub(super) fn len(&self) -> usize {
        self.node[self.cap..].iter().filter(|n| n.key != NO_KEY).count()
    }
}
