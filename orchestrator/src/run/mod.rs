//! Scheduler and host workers.
