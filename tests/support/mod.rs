//! Fixtures shared by integration tests.
pub mod sshd;
