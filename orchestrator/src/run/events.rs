//! What host workers report while a sweep runs.  Workers emit [`RunEvent`]s;
//! the progress display and the log consume them (nextest's runner/reporter
//! split): nothing else touches the terminal.
use std::time::Duration;

use serde::Serialize;

use super::verb::Step;
use crate::eta::Estimate;
use crate::results::CellStatus;

/// One thing that happened on one host.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RunEvent {
    /// The worker for `host` starts; `eta` comes from the plan's durations.
    HostStarted {
        host: String,
        cells: usize,
        #[serde(with = "secs")]
        eta: Duration,
    },
    /// A step starts on something (`make-fs` on `ext4`, `run` on
    /// `ext4 tpcb c=4 r=2`).
    Step {
        host: String,
        step: Step,
        on: String,
    },
    /// A cell ended, in any way.
    CellEnded {
        host: String,
        cell: String,
        outcome: Outcome,
        /// Time the plan expected this cell to take: lets the display
        /// recompute the time left from the plan, not from the wall clock.
        #[serde(with = "secs")]
        planned: Duration,
    },
    /// The host's remaining time, re-estimated as its work starts and ends
    /// ([`crate::eta`]); `remaining_s` 0 once the host is done.
    Eta {
        host: String,
        #[serde(flatten)]
        estimate: Estimate,
        /// Since the host's worker started.
        elapsed_s: f64,
        /// Since the sweep started.
        at_s: f64,
    },
    /// pgbench's `-P 1` line of a run under way, as it is printed.
    Tps {
        host: String,
        cell: String,
        /// Seconds into the run.
        t_s: f64,
        tps: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        lat_ms: Option<f64>,
    },
    /// Something the user should see (a refused device, a retry).
    Note { host: String, message: String },
    /// The worker is done with `host` (cells left were not run).
    HostFinished {
        host: String,
        done: usize,
        failed: usize,
        not_run: usize,
        /// Adaptive repeats left out once the CI target was met.
        not_needed: usize,
    },
}

impl RunEvent {
    pub fn host(&self) -> &str {
        match self {
            RunEvent::HostStarted { host, .. }
            | RunEvent::Step { host, .. }
            | RunEvent::CellEnded { host, .. }
            | RunEvent::Note { host, .. }
            | RunEvent::Eta { host, .. }
            | RunEvent::Tps { host, .. }
            | RunEvent::HostFinished { host, .. } => host,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Done,
    Failed,
    NotRun,
    /// An adaptive repeat the CI target made unnecessary.
    NotNeeded,
}

impl Outcome {
    pub fn of(status: &CellStatus) -> Outcome {
        match status {
            CellStatus::Done { .. } => Outcome::Done,
            CellStatus::Failed { .. } => Outcome::Failed,
            CellStatus::NotRun { .. } => Outcome::NotRun,
            CellStatus::NotNeeded { .. } => Outcome::NotNeeded,
        }
    }
}

mod secs {
    use std::time::Duration;

    use serde::Serializer;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}
