//! What works on bundles: `verify` (and the signature), `report`, `archive`.
use super::{BundleArgs, CliError, CmdResult, Exit, ReportArgs, VerifyArgs};
use crate::results::analysis::stats::StatsOptions;
use crate::results::bundle::allowed_signers::{self, AllowedSigners};
use crate::results::bundle::archive::{self, ArchiveError};
use crate::results::bundle::signature::{self, SignatureCheck};
use crate::results::report::inputs::{read_bundle, ReportInputs};
use crate::results::report::ReportOptions;

/// `fsmatrix verify BUNDLE [--allowed-signers FILE]`: 0 the bag verifies
/// (and, with the flag, is signed by a key the file allows), 1 problems
/// found or the signature refused, 2 not a bag or an unreadable file.
pub fn verify(args: &VerifyArgs) -> CmdResult {
    let allowed = match &args.allowed_signers {
        Some(p) => Some(AllowedSigners::load(p).map_err(CliError::failed_to)?),
        None => None,
    };
    // ssh-keygen.c `sig_process_opts`: a verify-time of 0 is invalid.
    let now = match &args.verify_time {
        Some(t) => allowed_signers::parse_absolute_time(t)
            .filter(|&t| t != 0)
            .ok_or_else(|| {
                CliError::nothing_ran(format!(
                    "failed to use --verify-time {:?}: give YYYYMMDD, YYYYMMDDHHMM or \
                     YYYYMMDDHHMMSS, with Z or UTC for UTC (else local time), after 1970",
                    crate::text::terminal_safe(t)
                ))
            })?,
        None => signature::unix_now(),
    };
    // An archive is verified as the bag it unpacks to (the folder lives
    // until the end of this function).
    let unpacked;
    let bag = if archive::is_archive(&args.bundle) {
        unpacked = tempfile::tempdir().map_err(|e| {
            CliError::nothing_ran(format!("failed to make a temporary folder: {e}"))
        })?;
        archive::unpack(&args.bundle, unpacked.path()).map_err(CliError::failed_to)?
    } else {
        args.bundle.clone()
    };
    let r = crate::results::verify(&bag).map_err(CliError::failed_to)?;
    let sig = signature::check_signature(&bag, allowed.as_ref(), args.principal.as_deref(), now);
    if let Some(a) = &allowed {
        for line in &a.cert_authority_lines {
            crate::stdio::errln!(
                "fsmatrix: note: {}:{line}: cert-authority lines are not supported; skipped",
                a.path.display()
            );
        }
        for note in a.skipped_notes() {
            crate::stdio::errln!("fsmatrix: note: {note}");
        }
    }
    if r.is_ok() {
        let status = r
            .sweep_status
            .as_deref()
            .map_or(String::new(), |s| format!(", sweep {s}"));
        crate::stdio::outln!(
            "{} {}: {} payload files, {} bytes, {} tag files{status}",
            if sig.is_ok() { "OK" } else { "checksums OK" },
            crate::text::terminal_safe(&r.root.display().to_string()),
            r.payload_files,
            r.payload_bytes,
            r.tag_files
        );
    } else {
        for p in &r.problems {
            crate::stdio::outln!("{p}");
        }
    }
    match &sig {
        Ok(SignatureCheck::Unsigned) => {}
        Ok(SignatureCheck::Unchecked { key }) => crate::stdio::outln!(
            "signature: present, by {key}, matches the tagmanifest; NOT checked against allowed \
             signers (give --allowed-signers FILE)"
        ),
        Ok(SignatureCheck::Trusted {
            key, principals, ..
        }) => crate::stdio::outln!(
            "signature: good, by {} ({key})",
            crate::text::terminal_safe(&principals.join(", "))
        ),
        Err(p) => crate::stdio::outln!("signature refused: {p}"),
    }
    if r.is_ok() && sig.is_ok() {
        return Ok(Exit::Success);
    }
    let mut why = Vec::new();
    if !r.is_ok() {
        why.push(format!(
            "{} problem{}",
            r.problems.len(),
            if r.problems.len() == 1 { "" } else { "s" }
        ));
    }
    if sig.is_err() {
        why.push("its signature is refused".to_string());
    }
    Err(CliError::problems(format!(
        "{} does not verify: {}",
        crate::text::terminal_safe(&r.root.display().to_string()),
        why.join(", ")
    )))
}

/// `fsmatrix report BUNDLE...`: statistics and comparisons.
pub fn report(args: &ReportArgs) -> CmdResult {
    if !(args.noisy_cv_percent.is_finite() && args.noisy_cv_percent >= 0.0) {
        return Err(CliError::nothing_ran(format!(
            "failed to use --noisy-cv-percent {}: give a percentage ≥ 0",
            args.noisy_cv_percent
        )));
    }
    for (flag, v) in [
        ("--trim-start-s", args.trim_start_s),
        ("--trim-end-s", args.trim_end_s),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(CliError::nothing_ran(format!(
                "failed to use {flag} {v}: give seconds ≥ 0"
            )));
        }
    }
    let mut inputs = ReportInputs::default();
    if args.db.is_some() {
        for s in super::db::report_sources(args)? {
            inputs.add(s.gathered());
        }
    }
    for b in &args.bundles {
        let g = read_bundle(b, args.allow_unverified).map_err(|e| match e {
            e @ crate::results::BundleError::NotVerified { .. } => {
                CliError::problems(format!("failed to {e}"))
            }
            e => CliError::failed_to(e),
        })?;
        if !g.check.verified {
            crate::stdio::errln!(
                "warning: {} does not verify; reporting on it anyway (--allow-unverified), marked NOT VERIFIED",
                b.display()
            );
        }
        inputs.add(g);
    }
    let opts = ReportOptions {
        baseline: args.baseline.clone(),
        by_bundle: args.by_bundle,
        rule: None,
        stats: StatsOptions {
            cv_threshold: args.noisy_cv_percent / 100.0,
            trim_start_s: args.trim_start_s,
            trim_end_s: args.trim_end_s,
        },
    };
    let r = inputs.build(&opts).map_err(CliError::failed_to)?;
    let sources = inputs.sources();
    // The HTML plots also need the cell records (timelines, load phases).
    let width = match &args.out {
        Some(_) => super::DEFAULT_WIDTH,
        None => super::terminal_width(),
    };
    let text = args.format.render(&r, &sources, width);
    match &args.out {
        Some(path) => std::fs::write(path, text).map_err(|e| {
            CliError::nothing_ran(format!("failed to write {}: {e}", path.display()))
        })?,
        None => crate::stdio::out!("{text}"),
    }
    Ok(Exit::Success)
}

/// `fsmatrix archive BUNDLE`: one `.tar.zst` beside it; 0 written, 1 the
/// bundle does not verify or the archive exists, 2 not a bag.
pub fn archive(args: &BundleArgs) -> CmdResult {
    match archive::archive(&args.bundle, None) {
        Ok(p) => {
            crate::stdio::outln!("{}", p.display());
            Ok(Exit::Success)
        }
        Err(e @ ArchiveError::NotVerified { .. }) => {
            Err(CliError::problems(format!("failed to {e}")))
        }
        Err(e) => Err(CliError::failed_to(e)),
    }
}
