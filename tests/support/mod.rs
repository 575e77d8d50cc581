//! The one test-support tree, shared by the integration test binaries (and, by path, by
//! the benchmarks that stand on the lab):
//! - [`skip`]: what a suite or a test needs (root, the local lab, an optional tool), and
//!   the skip (or, under `FSMATRIX_TEST_REQUIRE_ALL=1`, the failure) when it is missing;
//! - [`lab`]: the local lab (`fsmatrix lab up`): its hosts, plain OpenSSH to them, a guard;
//! - [`pg`]: a throwaway PostgreSQL from Debian's packages;
//! - [`sshd`]: a throwaway OpenSSH server (and ssh-agent) on 127.0.0.1.
#![allow(dead_code, unused_imports)] // each test binary uses its own part

pub mod lab;
pub mod pg;
pub mod skip;
pub mod sshd;

pub use lab::*;
