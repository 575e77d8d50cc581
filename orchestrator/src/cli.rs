//! Command-line interface.  Exit codes (ripgrep style): 0 all good, 1 some
//! cells or hosts failed, 2 nothing ran (bad input, unusable environment).
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "fsmatrix", version, about = "Which filesystem and options make PostgreSQL fastest and smallest, on your hosts", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build, inspect or remove the local lab of throwaway hosts (Linux, root).
    Lab {
        #[command(subcommand)]
        action: LabAction,
    },
    /// Expand an inventory and a matrix into the cells that would run; contacts no host.
    Plan(PlanArgs),
    /// Connect to every host in parallel and say whether it is ready for a sweep.
    Check(CheckArgs),
    /// Run a sweep and write a result bundle.
    Run(RunArgs),
    /// Finish a sweep whose orchestrator was killed.
    Resume(BundleArgs),
    /// Check a result bundle's completeness and checksums.
    Verify(BundleArgs),
    /// Compare the results of one or more bundles.
    Report(ReportArgs),
    /// Pack a bundle into one .tar.zst.
    Archive(BundleArgs),
}

#[derive(Debug, Subcommand)]
pub enum LabAction {
    /// Build N hosts: netns + mount namespace + sshd + loop device each.
    Up(LabUpArgs),
    /// Remove every trace of the lab; safe to run twice or after a failed `up`.
    Down(LabDirArgs),
    /// Show each host: reachable over SSH, device attached, mounts.
    Status(LabDirArgs),
}

#[derive(Debug, Args)]
pub struct LabDirArgs {
    /// Folder holding the lab's state (keys, known_hosts, inventory).
    #[arg(long, default_value = crate::lab::DEFAULT_DIR)]
    pub dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct LabUpArgs {
    #[command(flatten)]
    pub dir: LabDirArgs,
    /// Number of hosts (1..=16).
    #[arg(long, default_value_t = 3)]
    pub hosts: u32,
    /// Size of each host's spare disk (sparse file), e.g. 4G, 2048M.
    #[arg(long, default_value = "4G")]
    pub disk_size: String,
    /// Install missing Debian packages with apt-get instead of only naming them.
    #[arg(long)]
    pub install: bool,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[arg(long, short)]
    pub inventory: PathBuf,
    #[arg(long, short)]
    pub matrix: PathBuf,
    /// Print the plan as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Show every remote command exactly as a run would send it.
    #[arg(long)]
    pub commands: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[arg(long, short)]
    pub inventory: PathBuf,
    /// Also check the tools each planned filesystem needs.
    #[arg(long, short)]
    pub matrix: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[arg(long, short, required_unless_present = "from")]
    pub inventory: Option<PathBuf>,
    #[arg(long, short, required_unless_present = "from")]
    pub matrix: Option<PathBuf>,
    /// Run the very same sweep again from a bundle's snapshots.
    #[arg(long, conflicts_with_all = ["inventory", "matrix"])]
    pub from: Option<PathBuf>,
    /// Folder under which the bundle is created.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct BundleArgs {
    pub bundle: PathBuf,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[arg(required = true)]
    pub bundles: Vec<PathBuf>,
    /// md, csv, json or html (one self-contained file with SVG plots).
    #[arg(long, default_value = "md")]
    pub format: String,
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Filesystem variant to compare with (default: the first in matrix order).
    #[arg(long, conflicts_with = "by_bundle")]
    pub baseline: Option<String>,
    /// Put the bundles side by side instead of pooling them: each variant of
    /// each bundle is a row, compared with the same variant of the first
    /// bundle on the same host (e.g. a `run --from` re-run and its original).
    #[arg(long)]
    pub by_bundle: bool,
    /// Flag a group as noisy when its tps CV exceeds this percentage.
    #[arg(long, default_value_t = 5.0)]
    pub noisy_cv_percent: f64,
    /// Seconds of per-second progress dropped at the start of each run.
    #[arg(long, default_value_t = 0.0)]
    pub trim_start_s: f64,
    /// Seconds of per-second progress dropped at the end of each run.
    #[arg(long, default_value_t = 0.0)]
    pub trim_end_s: f64,
}

pub fn main(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Lab { action } => crate::lab::cli(action),
        Command::Plan(args) => crate::plan::cli(&args),
        Command::Check(args) => crate::run::check_cli(&args),
        Command::Run(args) => crate::run::run_cli(&args),
        Command::Resume(args) => crate::run::resume_cli(&args),
        Command::Verify(args) => verify_cmd(&args),
        Command::Report(args) => report_cmd(&args),
        Command::Archive(args) => archive_cmd(&args),
    }
}

/// `fsmatrix verify BUNDLE`: 0 the bag verifies, 1 problems found, 2 not a bag.
fn verify_cmd(args: &BundleArgs) -> ExitCode {
    // An archive is verified as the bag it unpacks to.
    let unpacked;
    let bag = if crate::results::archive::is_archive(&args.bundle) {
        let dir = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => {
                eprintln!("fsmatrix: failed to make a temporary folder: {e}");
                return ExitCode::from(2);
            }
        };
        match crate::results::archive::unpack(&args.bundle, dir.path()) {
            Ok(p) => {
                unpacked = dir;
                let _ = &unpacked;
                p
            }
            Err(e) => {
                eprintln!("fsmatrix: failed to {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        args.bundle.clone()
    };
    match crate::results::verify(&bag) {
        Err(e) => {
            eprintln!("fsmatrix: failed to {e}");
            ExitCode::from(2)
        }
        Ok(r) if r.is_ok() => {
            let status = r
                .sweep_status
                .as_deref()
                .map_or(String::new(), |s| format!(", sweep {s}"));
            println!(
                "OK {}: {} payload files, {} bytes, {} tag files{status}",
                r.root.display(),
                r.payload_files,
                r.payload_bytes,
                r.tag_files
            );
            ExitCode::SUCCESS
        }
        Ok(r) => {
            for p in &r.problems {
                println!("{p}");
            }
            eprintln!(
                "fsmatrix: {} does not verify: {} problem{}",
                r.root.display(),
                r.problems.len(),
                if r.problems.len() == 1 { "" } else { "s" }
            );
            ExitCode::from(1)
        }
    }
}

/// `fsmatrix report BUNDLE...`: statistics and comparisons as md, csv or json.
fn report_cmd(args: &ReportArgs) -> ExitCode {
    use crate::results::report;
    // html also needs the cell records (timelines, load phases).
    let render: fn(&report::Report, &[crate::results::CellResult]) -> String =
        match args.format.as_str() {
            "md" => |r, _| report::render_markdown_report(r),
            "csv" => |r, _| report::render_csv(r),
            "json" => |r, _| report::render_json(r),
            "html" => crate::results::html::render_html,
            other => {
                eprintln!(
                "fsmatrix: failed to render format {other:?}: valid formats are md, csv, json, html"
            );
                return ExitCode::from(2);
            }
        };
    if !(args.noisy_cv_percent.is_finite() && args.noisy_cv_percent >= 0.0) {
        eprintln!(
            "fsmatrix: failed to use --noisy-cv-percent {}: give a percentage ≥ 0",
            args.noisy_cv_percent
        );
        return ExitCode::from(2);
    }
    for (flag, v) in [
        ("--trim-start-s", args.trim_start_s),
        ("--trim-end-s", args.trim_end_s),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            eprintln!("fsmatrix: failed to use {flag} {v}: give seconds ≥ 0");
            return ExitCode::from(2);
        }
    }
    let mut loaded = Vec::new();
    for b in &args.bundles {
        match report::load_bundle_results(b) {
            Ok(c) => {
                let name = b.file_name().map_or_else(
                    || b.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                );
                loaded.push((name, c));
            }
            Err(e) => {
                eprintln!("fsmatrix: failed to {e}");
                return ExitCode::from(2);
            }
        }
    }
    let sources: Vec<report::Source> = loaded
        .iter()
        .map(|(name, cells)| report::Source { name, cells })
        .collect();
    let opts = report::ReportOptions {
        baseline: args.baseline.clone(),
        by_bundle: args.by_bundle,
        stats: crate::results::stats::StatsOptions {
            cv_threshold: args.noisy_cv_percent / 100.0,
            trim_start_s: args.trim_start_s,
            trim_end_s: args.trim_end_s,
        },
    };
    let r = match report::build_report(&sources, &opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fsmatrix: failed to {e}");
            return ExitCode::from(2);
        }
    };
    let all: Vec<crate::results::CellResult> = loaded
        .iter()
        .flat_map(|(_, cells)| cells.iter().cloned())
        .collect();
    let text = render(&r, &all);
    match &args.out {
        Some(path) => {
            if let Err(e) = std::fs::write(path, text) {
                eprintln!("fsmatrix: failed to write {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
        None => print!("{text}"),
    }
    ExitCode::SUCCESS
}

/// `fsmatrix archive BUNDLE`: one `.tar.zst` beside it; 0 written, 1 the
/// bundle does not verify or the archive exists, 2 not a bag.
fn archive_cmd(args: &BundleArgs) -> ExitCode {
    use crate::results::archive::{archive, ArchiveError};
    match archive(&args.bundle, None) {
        Ok(p) => {
            println!("{}", p.display());
            ExitCode::SUCCESS
        }
        Err(e @ ArchiveError::NotVerified { .. }) => {
            eprintln!("fsmatrix: failed to {e}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("fsmatrix: failed to {e}");
            ExitCode::from(2)
        }
    }
}
