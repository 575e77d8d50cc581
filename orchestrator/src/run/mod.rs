//! Scheduler and host workers.
pub mod events;
pub mod progress;
