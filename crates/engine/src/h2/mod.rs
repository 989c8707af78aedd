//! HTTP/2 (RFC 9113) for the load engine: framing, the request's header
//! block, one connection's protocol state, and what a run reports of it.
//!
//! The load threads drive HTTP/2 connections in the same epoll loop, with
//! the same ledger, schedule and timeouts as HTTP/1.1 ones (see
//! `worker::h2`); only what is on the wire differs. A connection carries up
//! to `streams` requests at once (fewer if the server says so), each its
//! own stream, answered in any order.

pub mod dump;
pub mod frame;
pub(crate) mod hpack;
pub(crate) mod huffman;
pub(crate) mod probe;
mod report;
pub(crate) mod request;
pub(crate) mod session;

pub use report::H2Report;
