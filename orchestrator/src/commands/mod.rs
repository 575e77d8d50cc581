//! The commands layer: the CLI's types (clap) live here and only here.  Each
//! command turns its arguments into the library's own options, calls the
//! stage, and prints its output; errors come back as a [`CliError`], printed
//! in one place, and exit codes are decided in one place ([`Exit`]):
//! ripgrep style, 0 all good, 1 some cells or hosts failed, 2 nothing ran
//! (bad input, an unusable environment).
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod bundle;
mod check;
mod db;
mod lab;
mod plan;
mod run;

#[derive(Debug, Parser)]
#[command(name = "fsmatrix", version, about = "Which filesystem and options make PostgreSQL fastest and smallest, on your hosts", long_about = None)]
pub struct Cli {
    /// Say more of what fsmatrix does: -v every remote command as it is
    /// sent, -vv the SSH layer's own steps.  Warnings show without it.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build, inspect or remove the local lab of throwaway hosts (Linux, root).
    Lab {
        #[command(subcommand)]
        action: LabCommand,
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
    /// The results database that holds the lab's queue and every result.
    Db {
        #[command(subcommand)]
        action: DbCommand,
    },
    /// Validate and plan a sweep exactly as `plan` does, and queue it in the
    /// database; prints its id.
    Submit(SubmitArgs),
    /// The database's sweeps: state, progress, hosts leased and by whom, ETA.
    Queue(QueueArgs),
    /// Cancel a queued or running sweep.
    Cancel(CancelArgs),
    /// Verify a bundle made by `run` and import it into the database
    /// (publishing it twice changes nothing).
    Publish(PublishArgs),
    /// Take queued sweeps whose hosts can be leased and run them as `run`
    /// does, publishing every cell as it ends.
    Agent(AgentArgs),
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Folder under which each sweep's bundle is created.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Exit after this many seconds with nothing to lease (default: never).
    #[arg(long)]
    pub idle_exit: Option<u64>,
    /// Seconds a host lease lives without a heartbeat (renewed every third).
    #[arg(long, default_value_t = 60)]
    pub lease_ttl: u64,
}

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Create the schema, or migrate it to this fsmatrix's version.
    Init(DbArgs),
}

/// Where the results database is.
#[derive(Debug, Args)]
pub struct DbArgs {
    /// A postgres:// URL or a libpq key=value string; what it leaves out
    /// comes from PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD and
    /// ~/.pgpass (PGPASSFILE).  Put a password in FSMATRIX_DB or the
    /// password file, not on the command line (`ps` shows it).
    #[arg(long, env = "FSMATRIX_DB", hide_env_values = true)]
    pub db: Option<String>,
}

#[derive(Debug, Args)]
pub struct SubmitArgs {
    #[arg(long, short)]
    pub inventory: PathBuf,
    #[arg(long, short)]
    pub matrix: PathBuf,
    /// Higher runs first; equal priorities run oldest first.
    #[arg(long, default_value_t = 0)]
    pub priority: i32,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Args)]
pub struct QueueArgs {
    /// Also show this many of the last finished sweeps.
    #[arg(long, default_value_t = 5)]
    pub recent: i64,
    /// One JSON object per sweep and line.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The sweep's id (from `submit` or `queue`).
    pub id: i64,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Args)]
pub struct PublishArgs {
    pub bundle: PathBuf,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
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
    /// The OS of each host, comma-separated: host i gets the i-th, the last
    /// one repeats (`linux,freebsd`: lab1 Linux, the others FreeBSD
    /// stand-ins: Linux hosts dressed as FreeBSD, see docs/standin-hosts.md).
    #[arg(long, value_delimiter = ',', default_value = "linux")]
    pub os: Vec<String>,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[arg(long, short)]
    pub inventory: PathBuf,
    #[arg(long, short)]
    pub matrix: PathBuf,
    /// Print the plan as JSON instead of a table.
    #[arg(long, conflicts_with = "commands")]
    pub json: bool,
    /// Show every remote command a run sends, in order: the host worker
    /// itself, driven against a stand-in host.
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

/// What `report` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Markdown tables.
    Md,
    Csv,
    Json,
    /// One self-contained file with SVG plots.
    Html,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Bundle folders (or, with --db, nothing: the database's published results).
    #[arg(required_unless_present = "db")]
    pub bundles: Vec<PathBuf>,
    /// Report from the results database instead of bundles (every bundle
    /// published for --matrix NAME, or the bundles of --sweep ID): a URL, or
    /// `--db` alone for FSMATRIX_DB and the PG* variables.
    #[arg(long, num_args = 0..=1, default_missing_value = "", conflicts_with = "bundles")]
    pub db: Option<String>,
    /// With --db: the matrix whose published bundles are reported on.
    #[arg(long, requires = "db", required_unless_present_any = ["sweep", "bundles"])]
    pub matrix: Option<String>,
    /// With --db: the sweeps (ids from `submit`) whose bundles are reported on.
    #[arg(long, requires = "db", conflicts_with = "matrix")]
    pub sweep: Vec<i64>,
    #[arg(long, value_enum, default_value_t = ReportFormat::Md)]
    pub format: ReportFormat,
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
    /// Report on a bundle whose checksums do not verify (each bundle is
    /// verified first and refused otherwise); the report then says plainly
    /// which bundles were not verified and why.
    #[arg(long)]
    pub allow_unverified: bool,
}

/// How a command ended; the only place exit codes are decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: everything asked for was done.
    Success,
    /// 1: some cells failed or did not run, a host is not ready, a bundle
    /// does not verify.
    Problems,
    /// 2: nothing ran: bad input, an unusable environment.
    NothingRan,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        match e {
            Exit::Success => ExitCode::SUCCESS,
            Exit::Problems => ExitCode::from(1),
            Exit::NothingRan => ExitCode::from(2),
        }
    }
}

/// A command that could not do what it was asked.
#[derive(Debug)]
pub struct CliError {
    pub exit: Exit,
    /// Printed as is before the message (every error of a config file).
    pub detail: Option<String>,
    /// One line, printed as `fsmatrix: <message>`.
    pub message: String,
}

impl CliError {
    /// Bad input or environment: nothing ran (exit 2).
    pub fn nothing_ran(message: impl Into<String>) -> CliError {
        CliError {
            exit: Exit::NothingRan,
            detail: None,
            message: message.into(),
        }
    }

    /// A failure after some work (exit 1).
    pub fn problems(message: impl Into<String>) -> CliError {
        CliError {
            exit: Exit::Problems,
            detail: None,
            message: message.into(),
        }
    }

    /// `failed to <e>` for a library error whose message reads after it.
    pub fn failed_to(e: impl std::fmt::Display) -> CliError {
        CliError::nothing_ran(format!("failed to {e}"))
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> CliError {
        self.detail = Some(detail.into());
        self
    }
}

impl From<crate::config::ConfigErrors> for CliError {
    fn from(errs: crate::config::ConfigErrors) -> CliError {
        let n = errs.len();
        CliError::nothing_ran(format!(
            "failed to load the inputs: {n} error{}",
            if n == 1 { "" } else { "s" }
        ))
        .with_detail(errs.to_string())
    }
}

type CmdResult = Result<Exit, CliError>;

/// The program: parse the command line, say what the command says, exit.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose);
    match dispatch(cli.command) {
        Ok(exit) => exit.into(),
        Err(e) => {
            if let Some(d) = &e.detail {
                eprintln!("{}", d.trim_end());
            }
            eprintln!("fsmatrix: {}", e.message);
            e.exit.into()
        }
    }
}

fn dispatch(command: Command) -> CmdResult {
    match command {
        Command::Lab { action } => lab::lab(action),
        Command::Plan(args) => plan::plan(&args),
        Command::Check(args) => check::check(&args),
        Command::Run(args) => run::run(&args),
        Command::Resume(args) => run::resume(&args),
        Command::Verify(args) => bundle::verify(&args),
        Command::Report(args) => bundle::report(&args),
        Command::Archive(args) => bundle::archive(&args),
        Command::Db {
            action: DbCommand::Init(args),
        } => db::init(&args),
        Command::Submit(args) => db::submit(&args),
        Command::Queue(args) => db::list(&args),
        Command::Cancel(args) => db::cancel(&args),
        Command::Publish(args) => db::publish(&args),
        Command::Agent(args) => db::agent(&args),
    }
}

/// Warnings (a dropped connection, a reconnect) and notes always reach the
/// user on stderr; `-v` adds every remote command, `-vv` the SSH layer's
/// steps.  `FSMATRIX_LOG` (an `EnvFilter` directive) overrides.
fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn,fsmatrix=info",
        1 => "warn,fsmatrix=debug",
        _ => "debug,fsmatrix=trace",
    };
    let filter = std::env::var("FSMATRIX_LOG")
        .ok()
        .and_then(|v| tracing_subscriber::EnvFilter::try_new(v).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .with_target(verbose > 1)
        .try_init();
}

/// The async runtime of the commands that talk to hosts.
fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::nothing_ran(format!("failed to start the async runtime: {e}")))
}
