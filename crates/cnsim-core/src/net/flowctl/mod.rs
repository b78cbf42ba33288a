//! Link-level flow control: a port/buffer policy that combines with any congestion-management
//! scheme (including none): IEEE 802.3x PAUSE, global and selective ([`pause`]), and IEEE 802.1Qbb
//! priority-based flow control with 8 priorities ([`pfc`]).

pub mod pause;
pub mod pfc;

pub use pause::{PortPause, SwitchPause};
pub use pfc::{PfcPort, PfcSwitch, PRIORITIES};
