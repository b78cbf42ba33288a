//! Typed ids into the simulation's arenas.

macro_rules! id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub u32);
        impl $name {
            /// Sentinel for "none".
            pub const NONE: $name = $name(u32::MAX);
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
            #[inline]
            pub fn is_none(self) -> bool {
                self.0 == u32::MAX
            }
        }
    };
}

id!(
    /// A host or a switch.
    NodeId
);
id!(
    /// A port = one end of a link; owns the transmitter (and, at switches, the egress queue).
    PortId
);
id!(
    /// A (source, destination) flow with its FIFO and rate limiter.
    FlowId
);
