//! The tests that need no lab: the plan and its CLI, the pgbench parser, the
//! bundle writer, `verify`, `archive`, the reports (the HTML one in headless
//! Chromium).  One test binary: each binary links russh, tokio and
//! tokio-postgres again, and these run side by side in one process.  The lab
//! tests stay one binary per file (cargo runs binaries one after another, and
//! the lab's lifecycle test must have the machine to itself).
mod archive;
mod bundle_common;
mod bundle_fixture;
mod bundle_ls;
mod bundle_sign;
mod bundle_write;
mod cli_conventions;
mod foreign_paths;
mod fuzz;
mod linux_facts;
mod pgbench_parse;
mod plan_cli;
mod plan_errors;
mod plan_examples;
mod plan_props;
mod plan_run_same;
mod report_answer;
mod report_compared;
mod report_drift;
mod report_html;
mod report_metric;
mod sshsig_differential;
#[path = "../support/mod.rs"]
mod support;
mod tables;
mod vm_verbs;
