//! HTTP/3 over QUIC (RFC 9114, RFC 9204, RFC 9000) for the load engine.
//!
//! QUIC's state machine is quinn-proto's, which does no I/O of its own:
//! the load threads drive it from their epoll loop and clock, as they
//! drive the HTTP/2 client ([`quic`]). What HTTP/3 adds on top is the
//! engine's own: framing ([`varint`], [`frame`]), QPACK with a
//! zero-capacity dynamic table ([`table`], [`qpack`]), and one
//! connection's streams ([`conn`]), and the load threads that drive them
//! with the engine's schedule and ledger (`load`, [`run`]).

pub(crate) mod conn;
pub mod fetch;
pub(crate) mod frame;
mod load;
pub(crate) mod qpack;
pub(crate) mod quic;
mod report;
pub(crate) mod run;
pub(crate) mod table;
mod tickets;
pub(crate) mod udp;
pub(crate) mod varint;

pub use frame::error_name;
pub use report::{H3Report, QuicPath, SendWait, UdpCalls, ZeroRtt};
