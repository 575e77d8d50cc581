//! A SQL script as a load generator: psql runs it once per cell, timing
//! each statement (`\timing`).  The script is the data load, so there is no
//! separate load phase and the sizes follow each run; its cells are
//! compared on the total load time.  The parser is [`super::psql_parse`].
use super::measures::{measure_psql, Measured};
use super::{Compared, Invocation, LoadGenerator, RunPrior, RunShape, ScriptVerb};
use crate::config::Length;
use crate::model::InitTimings;

/// `psql -f <script>`.
pub struct SqlScript;

impl LoadGenerator for SqlScript {
    fn script_ext(&self) -> &'static str {
        "sql"
    }

    fn loads_in_run(&self) -> bool {
        true
    }

    /// Never called (each run loads its own data); the bare verb.
    fn load(&self, _scale: Option<u64>) -> Invocation {
        Invocation::new(ScriptVerb::Load)
    }

    fn measure_load(&self, _stdout: &str, _stderr: &str) -> Option<InitTimings> {
        None
    }

    /// The script verb `load` with `sql=`: the run is the data load.
    fn run(&self, r: &RunShape) -> Invocation {
        let call = Invocation::new(ScriptVerb::Load);
        match r.script {
            Some(s) => call.arg("sql", s),
            None => call,
        }
    }

    fn measure(
        &self,
        stdout: &str,
        _stderr: &str,
        status: Option<i32>,
        _length: Length,
    ) -> Measured {
        measure_psql(stdout, status)
    }

    fn compared_on(&self, _rate: Option<u32>) -> Compared {
        Compared::LoadTime
    }

    fn run_prior(&self, _length: Length) -> RunPrior {
        RunPrior::Open
    }
}
