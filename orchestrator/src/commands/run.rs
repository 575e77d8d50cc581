//! `fsmatrix run` and `fsmatrix resume`: 0 every cell done, 1 some failed or
//! did not run (or the sweep was interrupted), 2 nothing ran.
use std::time::Instant;

use super::{CliError, CmdResult, Exit, ResumeArgs, RunArgs};
use crate::results::bundle::signature::Signer;
use crate::run::{self as engine, RunError, SweepSummary};

/// `--sign KEY`: the key is read (and ssh-agent asked) before the sweep, so
/// that a wrong key fails before any host is touched.
fn signer(
    rt: &tokio::runtime::Runtime,
    key: Option<&std::path::Path>,
) -> Result<Option<Signer>, CliError> {
    key.map(|k| rt.block_on(super::sign::signer(Some(k), false)))
        .transpose()
}

pub fn run(args: &RunArgs) -> CmdResult {
    let rt = super::runtime()?;
    let t0 = Instant::now();
    let shown = super::display(args.json);
    let hooks = |history| engine::Hooks {
        display: shown,
        history,
        ..Default::default()
    };
    args.recorded.only_with_from(&args.from)?;
    let outcome = match (&args.from, &args.inventory, &args.matrix) {
        (Some(from), _, _) => {
            let sign = signer(&rt, args.sign.as_deref())?;
            let history = super::history(args.history.as_deref(), None)?;
            let given = args.recorded.given(&args.ssh_config);
            (
                rt.block_on(engine::rerun(from, &args.out, &given, hooks(history))),
                sign,
            )
        }
        (None, Some(i), Some(m)) => {
            let given = crate::config::GivenPaths {
                ssh_config: args.ssh_config.clone(),
                recorded: None,
            };
            let (inv, m) = crate::config::load_given(i, m, &given, crate::generator::script_uses)?;
            // Where each ssh-config value came from, as plan and check say.
            crate::stdio::err!("{}", crate::config::ssh_config::report(&inv));
            let sign = signer(&rt, args.sign.as_deref())?;
            let names = inv
                .hosts
                .iter()
                .map(|h| h.name.as_str().to_string())
                .collect();
            let history = super::history(args.history.as_deref(), Some(&names))?;
            (
                rt.block_on(engine::sweep(&inv, &m, &args.out, hooks(history))),
                sign,
            )
        }
        _ => {
            return Err(CliError::nothing_ran(
                "give --inventory and --matrix, or --from BUNDLE",
            ))
        }
    };
    let (outcome, sign) = outcome;
    finish(outcome, t0, args.json, sign.as_ref().map(|s| (&rt, s)))
}

pub fn resume(args: &ResumeArgs) -> CmdResult {
    let t0 = Instant::now();
    let shown = super::display(args.json);
    let rt = super::runtime()?;
    let sign = signer(&rt, args.sign.as_deref())?;
    let given = args.recorded.given(&args.ssh_config);
    let outcome = rt.block_on(engine::resume(&args.bundle, &given, shown));
    finish(outcome, t0, args.json, sign.as_ref().map(|s| (&rt, s)))
}

/// Say how the sweep went, print its report (or, with `--json`, the
/// stream's last object), decide the exit code; with `sign`, sign the
/// bundle first (a failure to sign is exit 1 at least).
fn finish(
    outcome: Result<SweepSummary, RunError>,
    t0: Instant,
    json: bool,
    sign: Option<(&tokio::runtime::Runtime, &Signer)>,
) -> CmdResult {
    let s = outcome.map_err(CliError::failed_to)?;
    let t = s.tally;
    let mut exit = if s.interrupted {
        Exit::Problems
    } else if t.done == 0 {
        // Nothing ran: no host was ready, or every cell failed.
        Exit::NothingRan
    } else if t.failed + t.not_run > 0 {
        Exit::Problems
    } else {
        Exit::Success
    };
    crate::stdio::errln!(
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
    let signature = sign.map(|(rt, signer)| {
        super::sign::sign_bundle(rt, &s.bundle, signer)
            .map(|signed| signed.path)
            .map_err(|e| {
                crate::stdio::errln!(
                    "fsmatrix: {}; the bundle is not signed: sign it with `fsmatrix sign {} \
                     --key KEY`",
                    e.message,
                    s.bundle.display()
                );
                if exit == Exit::Success {
                    exit = Exit::Problems;
                }
            })
            .ok()
    });
    // The full report goes next to the bundle (Markdown and HTML), the
    // terminal gets a summary that fits 100 columns.
    let full = crate::results::report::summary::bundle_report(&s.bundle).and_then(|(r, cells)| {
        let paths = crate::results::report::summary::write_full_reports(&s.bundle, &r, &cells)
            .map_err(|e| crate::results::BundleError::Io {
                action: "write the report next to",
                path: s.bundle.clone(),
                source: e,
            })?;
        Ok((r, paths))
    });
    if let Err(e) = &full {
        crate::stdio::errln!("fsmatrix: warning: no report written: {e}");
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
        let mut last = last;
        if let Some(sig) = &signature {
            last["signature"] = serde_json::json!(sig.as_ref().map(|p| p.display().to_string()));
        }
        crate::stdio::outln!("{last}");
        return Ok(exit);
    }
    if let Ok((r, _)) = &full {
        crate::stdio::out!(
            "{}",
            crate::results::report::summary::render_summary(r, super::terminal_width())
        );
    }
    crate::stdio::outln!("bundle: {}", s.bundle.display());
    if let Some(Some(sig)) = &signature {
        crate::stdio::outln!("signature: {}", sig.display());
    }
    if let Some((md, html)) = paths {
        crate::stdio::outln!("report: {}", md.display());
        crate::stdio::outln!("report (HTML): {}", html.display());
    }
    Ok(exit)
}
