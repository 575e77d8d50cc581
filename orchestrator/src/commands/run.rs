//! `fsmatrix run` and `fsmatrix resume`: 0 every cell done, 1 some failed or
//! did not run (or the sweep was interrupted), 2 nothing ran.
use std::time::Instant;

use super::{CliError, CmdResult, Exit, ResumeArgs, RunArgs};
use crate::run::{self as engine, RunError, SweepSummary};

pub fn run(args: &RunArgs) -> CmdResult {
    let rt = super::runtime()?;
    let t0 = Instant::now();
    let shown = super::display(args.json);
    let outcome = match (&args.from, &args.inventory, &args.matrix) {
        (Some(from), _, _) => rt.block_on(engine::rerun(from, &args.out, shown)),
        (None, Some(i), Some(m)) => {
            let (inv, m) = crate::config::load(i, m)?;
            rt.block_on(engine::sweep(&inv, &m, &args.out, shown))
        }
        _ => {
            return Err(CliError::nothing_ran(
                "give --inventory and --matrix, or --from BUNDLE",
            ))
        }
    };
    finish(outcome, t0, args.json)
}

pub fn resume(args: &ResumeArgs) -> CmdResult {
    let t0 = Instant::now();
    let shown = super::display(args.json);
    finish(
        super::runtime()?.block_on(engine::resume(&args.bundle, shown)),
        t0,
        args.json,
    )
}

/// Say how the sweep went, print its report (or, with `--json`, the
/// stream's last object), decide the exit code.
fn finish(outcome: Result<SweepSummary, RunError>, t0: Instant, json: bool) -> CmdResult {
    let s = outcome.map_err(CliError::failed_to)?;
    let t = s.tally;
    let exit = if s.interrupted {
        Exit::Problems
    } else if t.done == 0 {
        // Nothing ran: no host was ready, or every cell failed.
        Exit::NothingRan
    } else if t.failed + t.not_run > 0 {
        Exit::Problems
    } else {
        Exit::Success
    };
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
    // The full report goes next to the bundle (Markdown and HTML), the
    // terminal gets a summary that fits 100 columns.
    let full =
        crate::results::summary::bundle_report(&s.bundle).and_then(|(r, cells)| {
            let paths = crate::results::summary::write_full_reports(&s.bundle, &r, &cells)
                .map_err(|e| crate::results::BundleError::Io {
                    action: "write the report next to",
                    path: s.bundle.clone(),
                    source: e,
                })?;
            Ok((r, paths))
        });
    if let Err(e) = &full {
        eprintln!("fsmatrix: warning: no report written: {e}");
    }
    let paths = full.as_ref().ok().map(|(_, p)| p);
    if json {
        let last = serde_json::json!({
            "report_md": paths.map(|p| p.0.display().to_string()),
            "report_html": paths.map(|p| p.1.display().to_string()),
            "event": "sweep_ended",
            "bundle": s.bundle.display().to_string(),
            "done": t.done,
            "failed": t.failed,
            "not_run": t.not_run,
            "not_needed": t.not_needed,
            "interrupted": s.interrupted,
            "seconds": t0.elapsed().as_secs_f64(),
            "exit_code": exit.code(),
        });
        println!("{last}");
        return Ok(exit);
    }
    if let Ok((r, _)) = &full {
        print!("{}", crate::results::summary::render_summary(r, 100));
    }
    println!("bundle: {}", s.bundle.display());
    if let Some((md, html)) = paths {
        println!("report: {}", md.display());
        println!("report (HTML): {}", html.display());
    }
    Ok(exit)
}
