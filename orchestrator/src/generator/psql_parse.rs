//! Parsing psql's per-statement timings for SQL-script workloads.
//!
//! psql runs as the remote script's `load sql=` verb runs it (`-X -q -e -o
//! RESULTS -f FILE` with `\timing on` prepended, `LC_ALL=C`), so its stdout holds
//! only each statement as sent (`-e`) followed by its `Time:` line:
//!
//! ```text
//! create table dataload ( a bigint
//!                       , b varchar(100)
//!                       );
//! Time: 6.240 ms
//! select pg_sleep(1.1);
//! Time: 1100.547 ms (00:01.101)
//! ```
//!
//! (the `(mm:ss.fff)` part is PG 10+, only for ≥ 1 s).  A statement is the
//! text between one `Time:` line and the next.  A statement that fails also
//! gets its `Time:` line; `ON_ERROR_STOP` then ends psql with status 3.
//! Limit: a statement whose own text has a line of exactly the form
//! `Time: N ms` would be split there.

use serde::{Deserialize, Serialize};

/// One statement and how long the server took, as psql timed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimedStatement {
    /// The statement as psql echoed it (the pairing key for reports).
    pub statement: String,
    pub ms: f64,
    /// The milliseconds exactly as printed.
    pub ms_text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum PsqlInvalidReason {
    ExitStatusUnknown,
    /// 1: psql error (e.g. file not found); 2: connection lost; 3: a statement failed.
    ExitStatus {
        status: i32,
    },
    /// Exit 0 but no `Time:` line: timing was not on, or the file was empty.
    NoTimings,
}

impl std::fmt::Display for PsqlInvalidReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PsqlInvalidReason::ExitStatusUnknown => {
                write!(
                    f,
                    "psql exit status unknown (killed or timed out); expected 0"
                )
            }
            PsqlInvalidReason::ExitStatus { status: 3 } => {
                write!(
                    f,
                    "psql stopped at a failing statement (status 3); expected 0"
                )
            }
            PsqlInvalidReason::ExitStatus { status } => {
                write!(f, "psql exited with status {status}; expected 0")
            }
            PsqlInvalidReason::NoTimings => {
                write!(
                    f,
                    "psql printed no \"Time:\" line; expected one per statement"
                )
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PsqlOutcome {
    pub exit_status: Option<i32>,
    pub valid: bool,
    pub invalid_reasons: Vec<PsqlInvalidReason>,
    pub statements: Vec<TimedStatement>,
    /// Sum of the statements' times.
    pub total_ms: f64,
}

/// `Time: 123.456 ms` or `Time: 1234.567 ms (00:01.235)` → the number.
fn time_line(line: &str) -> Option<&str> {
    let rest = line.trim_end().strip_prefix("Time: ")?;
    let (n, tail) = rest.split_once(" ms")?;
    let tail = tail.trim();
    let ok_tail = tail.is_empty() || (tail.starts_with('(') && tail.ends_with(')'));
    let numeric = !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.');
    (ok_tail && numeric).then_some(n)
}

/// Parse psql's stdout (stderr holds only notices and errors; the bundle keeps it).
pub fn parse_psql(stdout: &str, exit_status: Option<i32>) -> PsqlOutcome {
    let mut statements = Vec::new();
    let mut pending: Vec<&str> = Vec::new();
    for line in stdout.lines() {
        if let Some(n) = time_line(line) {
            // Digits only, but 400 of them overflow to infinity.
            if let Some(ms) = n.parse::<f64>().ok().filter(|v| v.is_finite()) {
                statements.push(TimedStatement {
                    statement: pending.join("\n").trim().to_string(),
                    ms,
                    ms_text: n.to_string(),
                });
                pending.clear();
                continue;
            }
        }
        pending.push(line);
    }
    let mut invalid_reasons = Vec::new();
    match exit_status {
        None => invalid_reasons.push(PsqlInvalidReason::ExitStatusUnknown),
        Some(0) => {}
        Some(status) => invalid_reasons.push(PsqlInvalidReason::ExitStatus { status }),
    }
    if statements.is_empty() && exit_status == Some(0) {
        invalid_reasons.push(PsqlInvalidReason::NoTimings);
    }
    PsqlOutcome {
        exit_status,
        valid: invalid_reasons.is_empty(),
        invalid_reasons,
        total_ms: statements.iter().map(|s| s.ms).sum(),
        statements,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_line_forms() {
        assert_eq!(time_line("Time: 720.626 ms"), Some("720.626"));
        assert_eq!(time_line("Time: 1100.547 ms (00:01.101)"), Some("1100.547"));
        assert_eq!(time_line("Time: soon ms"), None);
        assert_eq!(time_line("select 'Time: 1 ms';"), None);
    }
}
