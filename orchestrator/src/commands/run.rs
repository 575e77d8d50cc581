//! `fsmatrix run` and `fsmatrix resume`: 0 every cell done, 1 some failed or
//! did not run (or the sweep was interrupted), 2 nothing ran.
use std::time::Instant;

use super::{BundleArgs, CliError, CmdResult, Exit, RunArgs};
use crate::run::{self as engine, RunError, SweepSummary};

pub fn run(args: &RunArgs) -> CmdResult {
    let rt = super::runtime()?;
    let t0 = Instant::now();
    let outcome = match (&args.from, &args.inventory, &args.matrix) {
        (Some(from), _, _) => rt.block_on(engine::rerun(from, &args.out)),
        (None, Some(i), Some(m)) => {
            let (inv, m) = crate::config::load(i, m)?;
            rt.block_on(engine::sweep(&inv, &m, &args.out))
        }
        _ => {
            return Err(CliError::nothing_ran(
                "give --inventory and --matrix, or --from BUNDLE",
            ))
        }
    };
    finish(outcome, t0)
}

pub fn resume(args: &BundleArgs) -> CmdResult {
    let t0 = Instant::now();
    finish(super::runtime()?.block_on(engine::resume(&args.bundle)), t0)
}

/// Say how the sweep went, print its report, decide the exit code.
fn finish(outcome: Result<SweepSummary, RunError>, t0: Instant) -> CmdResult {
    let s = outcome.map_err(CliError::failed_to)?;
    let t = s.tally;
    eprintln!(
        "fsmatrix: {} cells done, {} failed, {} not run{} in {:.1} s{}",
        t.done,
        t.failed,
        t.not_run,
        if t.not_needed > 0 {
            format!(
                ", {} not needed (adaptive repeats met their CI target)",
                t.not_needed
            )
        } else {
            String::new()
        },
        t0.elapsed().as_secs_f64(),
        if s.interrupted {
            " (interrupted: bundle closed as incomplete)"
        } else {
            ""
        }
    );
    if let Ok(cells) = crate::results::report::load_bundle_results(&s.bundle) {
        print!("{}", crate::results::report::render_markdown(&cells));
    }
    println!("bundle: {}", s.bundle.display());
    Ok(if s.interrupted {
        Exit::Problems
    } else if t.done == 0 {
        // Nothing ran: no host was ready, or every cell failed.
        Exit::NothingRan
    } else if t.failed + t.not_run > 0 {
        Exit::Problems
    } else {
        Exit::Success
    })
}
