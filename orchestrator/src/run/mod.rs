//! The run engine: `check` (is every host ready?), the sweep, and its
//! `resume` and re-run.
//!
//! - [`verb`]: the typed contract with the remote scripts; [`calls`] builds
//!   every call of a sweep; [`facts`] reads what the verbs print.
//! - [`check`]: a host's readiness; [`worker`]: one host's step sequence;
//!   [`sweep`]: hosts in parallel, resume and re-run; [`snapshot`]: what a
//!   bundle keeps of its inputs; [`sink`]: where results and events go;
//!   [`adaptive`]: adaptive repeats.
//! - [`lock`]: one sweep per host at a time.
//! - [`logged`]: every command sent, logged; [`dry`]: `plan --commands`,
//!   the same worker against a stand-in host.
//! - [`events`] and [`progress`]: what workers report and its display;
//!   [`counters`]: PostgreSQL's own counters through a tunnel.
pub mod adaptive;
pub mod calls;
pub mod check;
pub mod counters;
pub mod dry;
pub mod error;
pub mod events;
pub mod facts;
pub mod guest;
pub mod lock;
pub mod logged;
pub mod pgsettings;
pub mod progress;
pub mod sink;
pub mod snapshot;
pub mod sweep;
pub mod verb;
pub mod worker;

pub use check::{prepare, ssh_target, HostReport};
pub use error::{RunError, StepError};
pub use progress::Display;
pub use sink::HostTally;
pub use sweep::{rerun, resume, sweep, Hooks, SweepSummary};
pub use verb::{Step, Verb};

#[cfg(test)]
mod worker_tests;
