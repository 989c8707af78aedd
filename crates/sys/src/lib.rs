//! What fairbench needs of the machine it runs on, below any idea of a
//! server, a scenario or a load: the plumbing the zoo (its servers and the
//! database), the runner and the load generator all share.
//!
//! - [`process`]: a process started in a control group of its own (else its
//!   own process group), pinned, logged, polled until it answers, always
//!   stopped whole.
//! - [`containment`]: the control groups themselves (cgroup v2 or the v1
//!   hierarchies mounted), their CPU and memory counters, their removal
//!   and the sweep of groups a dead fairbench left.
//! - [`procfs`]: reading /proc entries, here or as text fetched from
//!   another host.
//! - [`flock`]: advisory file locks that die with their holder.
//! - [`listener`]: whether the socket on a server's port is the server's.
//! - [`port`]: ports for servers, chosen where the kernel picks none.
//! - [`pressure`]: how long the machine stalled on memory (PSI).
//! - [`text`]: the one rule that makes foreign bytes (a server's log, its
//!   headers, a manifest's strings) visible and inert before any output.

pub mod containment;
pub mod flock;
pub mod listener;
pub mod port;
pub mod pressure;
pub mod process;
pub mod procfs;
pub mod text;
