//! End-to-end transports run by hosts over the layer-2 network.
//!
//! `udp` flows (the default) are open loop: frames leave as the source generates them, subject to
//! the rate limiter and PAUSE. [`tcp`] holds the TCP NewReno and DCTCP state machines, written as
//! pure functions of (state, event, time) so that they are tested without a network.

pub mod tcp;
