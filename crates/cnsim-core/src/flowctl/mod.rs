//! Link-level flow control: a port/buffer policy that combines with any congestion-management
//! scheme (including none). Today: IEEE 802.3x PAUSE, global and selective ([`pause`]).

pub mod pause;

pub use pause::{PortPause, SwitchPause};
