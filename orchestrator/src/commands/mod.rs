//! The commands layer: the CLI's types (clap) live here and only here.  Each
//! command turns its arguments into the library's own options, calls the
//! stage, and prints its output; errors come back as a [`CliError`], printed
//! in one place, and exit codes are decided in one place ([`Exit`]):
//! ripgrep style, 0 all good, 1 some cells or hosts failed, 2 nothing ran
//! (bad input, an unusable environment).
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod bundle;
mod check;
mod db;
mod lab;
mod ls;
pub mod manual;
mod plan;
mod run;
mod sign;

#[derive(Debug, Parser)]
#[command(name = "fsmatrix", version, about = "Which filesystem and options make PostgreSQL fastest and smallest, on your hosts", long_about = None)]
pub struct Cli {
    /// Say more: -v logs every remote command as it is sent, -vv also the
    /// SSH layer's steps.  Of the commands that contact no host only `plan
    /// --commands` logs with -v (what a run would send, as `run -v` logs
    /// it); the others print the same with -v as without.  Warnings show
    /// without it.
    ///
    /// Only check, run, resume and agent send commands to hosts.  Every
    /// other command (plan, verify, report, ls, sign, archive, inventory,
    /// completions, man, and lab, whose script reaches the lab's hosts
    /// itself) prints exactly the same with -v, but for `plan --commands`;
    /// -vv adds only the debug lines of the libraries a command uses, such
    /// as the database client's for db, submit, queue, cancel and publish.
    /// FSMATRIX_LOG (a tracing filter, e.g. `fsmatrix=debug,russh=info`)
    /// overrides both.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    pub verbose: u8,
    /// Say less: no progress, only warnings, notes and failed cells.
    #[arg(short, long, global = true)]
    pub quiet: bool,
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
    Resume(ResumeArgs),
    /// Check a result bundle's completeness and checksums, and its signature.
    Verify(VerifyArgs),
    /// Compare the results of one or more bundles.
    Report(ReportArgs),
    /// Pack a bundle into one .tar.zst.
    Archive(BundleArgs),
    /// Sign a bundle: an SSH signature of its tagmanifest, as `ssh-keygen -Y
    /// sign -n fsmatrix` makes it, in tagmanifest-sha256.txt.sig.
    Sign(SignArgs),
    /// List the bundles and archives under a folder: matrix, hosts, start,
    /// status, cells done and failed, size, signer, what each re-ran.
    Ls(LsArgs),
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
    /// Inventories from elsewhere.
    Inventory {
        #[command(subcommand)]
        action: InventoryCommand,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell the script is for.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), generated from this CLI's definition;
    /// with --dir, write every page: fsmatrix.1 and one per subcommand.
    Man {
        /// Write fsmatrix.1 and every subcommand's page (fsmatrix-plan.1,
        /// fsmatrix-lab-up.1, …) into this existing folder, as `man -l` or
        /// MANPATH reads them.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum InventoryCommand {
    /// Read an Ansible inventory (INI, YAML, or `ansible-inventory --list`
    /// JSON) and print an fsmatrix inventory; devices cannot be guessed, so
    /// `check` refuses each host until its `devices` are filled in.
    Import(ImportArgs),
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The Ansible inventory: a file (INI, YAML or `ansible-inventory --list` JSON)
    /// with the group_vars/ and host_vars/ beside it, a directory of inventory
    /// files, or `-` for standard input.
    pub file: PathBuf,
    /// Write the inventory here instead of stdout (refused if it exists).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The operator's host registry: an inventory of the hosts this agent
    /// may run sweeps on, with their addresses, credentials, known hosts,
    /// devices and every consent.  A submission only names its hosts and
    /// narrows what this allows (docs/trust.md).
    #[arg(long)]
    pub registry: PathBuf,
    /// The ssh config the registry resolves its aliases through, when the
    /// registry names one (`ssh_config = PATH`): the same path, given here.
    #[arg(long)]
    pub ssh_config: Option<PathBuf>,
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
    Init(DbInitArgs),
    /// The published matrices: bundles, hosts, cells, when published, and
    /// the comparisons the view fsmatrix_verdicts holds of each.
    Ls(DbLsArgs),
    /// Compute the stored comparisons (fsmatrix_verdicts) again, as
    /// `report --db --matrix` computes them: after upgrading fsmatrix, or
    /// for a matrix whose report refused.
    Refresh(DbRefreshArgs),
}

#[derive(Debug, Args)]
pub struct DbLsArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// One JSON object per matrix and line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DbRefreshArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Only this matrix (default: every published one).
    #[arg(long)]
    pub matrix: Option<String>,
}

#[derive(Debug, Args)]
pub struct DbInitArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Also create the roles fsmatrix_submitter (queue sweeps, cancel its
    /// own) and fsmatrix_agent (lease, run, publish), without LOGIN: grant
    /// them to people's and agents' login roles.
    #[arg(long)]
    pub roles: bool,
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
    /// The inventory (TOML): the hosts, their devices and the owners' consent (docs/formats.md).
    #[arg(long, short)]
    pub inventory: PathBuf,
    /// The matrix (TOML): filesystem variants, workloads, repeats (docs/formats.md).
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
    /// The bundle's folder, as `run` wrote it.
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
    /// Make host 1 a bastion: the other hosts sit on an inner network
    /// (10.203.1.0/24) reachable only through it, their inventory entries
    /// with `proxy_jump` (a sweep through a jump host).
    #[arg(long)]
    pub bastion: bool,
    /// Give hosts 1..=N a guest each (`labI-vm`, guest_of = "labI"): a
    /// Debian 12 image (debootstrap, built once and cached in the state
    /// dir) that a sweep boots under qemu with TCG (no KVM in the lab:
    /// its numbers mean nothing), with the host's disk as its disk.
    /// Hosts 1..=N must be Linux hosts; not with --bastion.
    #[arg(long, default_value_t = 0)]
    pub guests: u32,
}

/// What a bundle records that `plan --from`, `run --from` and `resume` use
/// only when named: its paths, devices and consents (a bundle may come
/// from someone else).  One set of flags for the three.
#[derive(Debug, Args, Default)]
pub struct RecordedArgs {
    /// A key file the bundle's inventory names (`identity_file`) that may
    /// be used; once per file.  A bundle may come from someone else: the
    /// paths it records are used only when you name them.
    #[arg(long, value_name = "FILE")]
    pub identity_file: Vec<PathBuf>,
    /// A known_hosts file the bundle's inventory names that may be used
    /// (the host keys it trusts); once per file.
    #[arg(long, value_name = "FILE")]
    pub known_hosts: Vec<PathBuf>,
    /// A device the bundle's inventory lists that may be destroyed, as
    /// HOST:DEVICE (`*:DEVICE` for its [defaults]); once per device.  A
    /// bundle's devices and consents are its host owner's, not yours: each
    /// is used only when you name it.
    #[arg(long, value_name = "HOST:DEVICE")]
    pub device: Vec<String>,
    /// A consent the bundle's inventory records that holds: HOST:allow_script_commands,
    /// HOST:consent_foreign=DEVICE or HOST:allow_postgres_settings=NAME (`*:` for its
    /// [defaults]); once per consent.
    #[arg(long, value_name = "HOST:CONSENT")]
    pub consent: Vec<String>,
}

impl RecordedArgs {
    /// What a re-run may use of the bundle's recording, with the ssh
    /// config named on the command line.
    pub fn given(&self, ssh_config: &Option<PathBuf>) -> crate::config::GivenPaths {
        crate::config::GivenPaths {
            ssh_config: ssh_config.clone(),
            recorded: Some(crate::config::RecordedPaths {
                identity_files: self.identity_file.clone(),
                known_hosts: self.known_hosts.clone(),
                devices: self.device.clone(),
                consents: self.consent.clone(),
            }),
        }
    }

    /// Refused without `--from BUNDLE`: the flags name what a bundle
    /// records, and an inventory given with -i has its own (checked here,
    /// not by clap: its `requires` does not hold against `from`'s
    /// conflicts, and a sweep must never start on a misread flag).
    pub fn only_with_from(&self, from: &Option<PathBuf>) -> Result<(), CliError> {
        let none = self.identity_file.is_empty()
            && self.known_hosts.is_empty()
            && self.device.is_empty()
            && self.consent.is_empty();
        if from.is_none() && !none {
            return Err(CliError::nothing_ran(
                "--identity-file, --known-hosts, --device and --consent name what a bundle's \
                 inventory records: give them with --from BUNDLE (an inventory you give with -i \
                 uses its own paths, devices and consents)",
            ));
        }
        Ok(())
    }
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The inventory (TOML): the hosts, their devices and the owners' consent (docs/formats.md).
    #[arg(long, short, required_unless_present = "from", conflicts_with = "from")]
    pub inventory: Option<PathBuf>,
    /// The matrix (TOML): filesystem variants, workloads, repeats (docs/formats.md).
    #[arg(long, short, required_unless_present = "from", conflicts_with = "from")]
    pub matrix: Option<PathBuf>,
    /// Plan a bundle's sweep again, as `run --from BUNDLE` would run it: with the paths,
    /// devices and consents it records that you name (--identity-file, --known-hosts,
    /// --device, --consent), and saying which of the bundle's it would use.
    #[arg(long, value_name = "BUNDLE")]
    pub from: Option<PathBuf>,
    #[command(flatten)]
    pub recorded: RecordedArgs,
    /// Print the plan as JSON instead of a table.
    #[arg(long, conflicts_with = "commands")]
    pub json: bool,
    /// Show every remote command a run sends, in order: the host worker
    /// itself, driven against a stand-in host.
    #[arg(long)]
    pub commands: bool,
    /// Estimate the ETA from the timings of earlier bundles under DIR (a
    /// bundle, or a folder of them, searched recursively) for the same
    /// hosts, instead of from the defaults alone.
    #[arg(long, value_name = "DIR", conflicts_with = "commands")]
    pub history: Option<PathBuf>,
    /// The ssh config the inventory's `ssh_config` names: it is read (and
    /// `ssh -G` runs its `Match exec` commands, as you) only when you name
    /// the same file here; your own ~/.ssh/config needs no flag.
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The inventory (TOML): the hosts, their devices and the owners' consent (docs/formats.md).
    #[arg(long, short)]
    pub inventory: PathBuf,
    /// Also check the tools each planned filesystem needs.
    #[arg(long, short)]
    pub matrix: Option<PathBuf>,
    /// One JSON object per line on stdout: each host's report
    /// (`host_checked`), then `check_finished`.
    #[arg(long)]
    pub json: bool,
    /// The ssh config the inventory's `ssh_config` names: it is read (and
    /// `ssh -G` runs its `Match exec` commands, as you) only when you name
    /// the same file here; your own ~/.ssh/config needs no flag.
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The inventory (TOML); not with --from, which takes the bundle's.
    #[arg(long, short, required_unless_present = "from")]
    pub inventory: Option<PathBuf>,
    /// The matrix (TOML); not with --from, which takes the bundle's.
    #[arg(long, short, required_unless_present = "from")]
    pub matrix: Option<PathBuf>,
    /// Run the very same sweep again from a bundle's snapshots.
    #[arg(long, conflicts_with_all = ["inventory", "matrix"])]
    pub from: Option<PathBuf>,
    /// Folder under which the bundle is created.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Progress as a stream of JSON objects on stdout, one per line
    /// (sweep_started, host_started, step, cell_ended, note, host_finished,
    /// sweep_ended), instead of bars and the report.
    #[arg(long)]
    pub json: bool,
    /// Sign the bundle when the sweep ends, as `fsmatrix sign --key KEY`
    /// (an encrypted key: through ssh-agent at SSH_AUTH_SOCK).
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,
    /// Start each host's ETA from the timings of earlier bundles under DIR
    /// (as `plan --history`); it learns from this sweep as it goes either way.
    #[arg(long, value_name = "DIR")]
    pub history: Option<PathBuf>,
    /// The ssh config the inventory's `ssh_config` names: it is read (and
    /// `ssh -G` runs its `Match exec` commands, as you) only when you name
    /// the same file here; your own ~/.ssh/config needs no flag.
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    #[command(flatten)]
    pub recorded: RecordedArgs,
}

#[derive(Debug, Args)]
pub struct BundleArgs {
    /// The bundle's folder.
    pub bundle: PathBuf,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// The folder searched, recursively (default: `run`'s --out); a bundle
    /// folder or archive lists just itself.
    #[arg(default_value = "results")]
    pub dir: PathBuf,
    /// One JSON object per bundle and line, with every field in full.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The bundle of the sweep to finish (its journal says what is left).
    pub bundle: PathBuf,
    /// Progress as JSON lines on stdout, as `run --json`.
    #[arg(long)]
    pub json: bool,
    /// Sign the bundle once closed, as `run --sign` (closing it again
    /// removes an earlier signature).
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,
    /// The ssh config the inventory's `ssh_config` names: it is read (and
    /// `ssh -G` runs its `Match exec` commands, as you) only when you name
    /// the same file here; your own ~/.ssh/config needs no flag.
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    #[command(flatten)]
    pub recorded: RecordedArgs,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The bundle's folder, or its .tar.zst archive.
    pub bundle: PathBuf,
    /// Also require a signature by a key this file allows (ssh-keygen's
    /// allowed_signers format: `principals [options] keytype base64`), and
    /// name its signer.
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: Option<PathBuf>,
    /// With --allowed-signers: the signer must be allowed as this
    /// principal (`ssh-keygen -Y verify -I NAME`).  Without it, any
    /// principal a line names will do.
    #[arg(long, value_name = "NAME", requires = "allowed_signers")]
    pub principal: Option<String>,
    /// With --allowed-signers: judge valid-after / valid-before at this
    /// time instead of now (`ssh-keygen -Overify-time=`): YYYYMMDD,
    /// YYYYMMDDHHMM or YYYYMMDDHHMMSS, with Z or UTC for UTC, else local.
    #[arg(long, value_name = "TIME", requires = "allowed_signers")]
    pub verify_time: Option<String>,
}

#[derive(Debug, Args)]
pub struct SignArgs {
    /// The bundle's folder (sign it before archiving it).
    pub bundle: PathBuf,
    /// The private key file (OpenSSH, PEM or PKCS#8; an encrypted one only
    /// if ssh-agent at SSH_AUTH_SOCK holds it).  With --agent: the key
    /// ssh-agent signs with (its .pub file, or the private key file).
    #[arg(long, value_name = "FILE", required_unless_present = "agent")]
    pub key: Option<PathBuf>,
    /// Sign with ssh-agent at SSH_AUTH_SOCK: the key --key names, else the
    /// only (or the first) key it holds.
    #[arg(long)]
    pub agent: bool,
}

/// What `report` writes: one table of the formats, with the renderers.
pub use crate::results::report::Format as ReportFormat;

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
    /// What to write: Markdown, CSV, JSON, one HTML file, or the terminal summary.
    #[arg(long, value_enum, default_value_t = ReportFormat::Md)]
    pub format: ReportFormat,
    /// Write the report to this file instead of stdout.
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

impl Exit {
    /// Every exit status, in order (the man pages' EXIT STATUS).
    pub const ALL: [Exit; 3] = [Exit::Success, Exit::Problems, Exit::NothingRan];

    /// What the status means, as the man pages say it.
    pub fn meaning(self) -> &'static str {
        match self {
            Exit::Success => "everything asked for was done",
            Exit::Problems => {
                "some cells failed or did not run, a host is not ready, or a bundle does not \
                 verify: the work that could be done was done, and what was not is said"
            }
            Exit::NothingRan => {
                "nothing ran: bad input (every error with its file:line:col and what would be \
                 valid) or an unusable environment"
            }
        }
    }

    /// The process's exit status.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Problems => 1,
            Exit::NothingRan => 2,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e.code())
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

/// `--history DIR`: the timings of the bundles under it for `hosts`
/// (`None`: every host), with a line on stderr saying what was found.
pub fn history(
    dir: Option<&std::path::Path>,
    hosts: Option<&std::collections::BTreeSet<String>>,
) -> Result<crate::results::bundle::timings::History, CliError> {
    let Some(dir) = dir else {
        return Ok(Default::default());
    };
    let h = crate::results::bundle::timings::history(dir, hosts)
        .map_err(|e| CliError::nothing_ran(format!("--history: {e}")))?;
    for w in &h.warnings {
        crate::stdio::errln!("fsmatrix: --history: {w}");
    }
    let timings: usize = h.by_host.values().map(Vec::len).sum();
    crate::stdio::errln!(
        "fsmatrix: --history {}: {} bundle(s), {timings} timing(s) of {} host(s){}",
        dir.display(),
        h.bundles,
        h.by_host.len(),
        if h.archives_skipped > 0 {
            format!(
                "; {} archive(s) not read (unpack them to learn from them)",
                h.archives_skipped
            )
        } else {
            String::new()
        }
    );
    Ok(h)
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
    // SIGPIPE stays ignored (Rust's default) for every command: a closed
    // pipe is handled by `crate::stdio`, never by the signal (141).
    let cli = Cli::parse();
    init_tracing(cli.verbose, cli.quiet);
    QUIET.store(cli.quiet, std::sync::atomic::Ordering::Relaxed);
    let result = dispatch(cli.command).and_then(|exit| match crate::stdio::stdout_error() {
        // The reader leaving is no failure; any other error writing stdout
        // means the output asked for is not all there.
        Some(e) if exit == Exit::Success => Err(CliError::problems(format!(
            "failed to write standard output: {e}"
        ))),
        _ => Ok(exit),
    });
    match result {
        Ok(exit) => exit.into(),
        Err(e) => {
            if let Some(d) = &e.detail {
                crate::stdio::errln!("{}", d.trim_end());
            }
            crate::stdio::errln!("fsmatrix: {}", e.message);
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
        Command::Sign(args) => sign::sign(&args),
        Command::Report(args) => bundle::report(&args),
        Command::Archive(args) => bundle::archive(&args),
        Command::Ls(args) => ls::ls(&args),
        Command::Db {
            action: DbCommand::Init(args),
        } => db::init(&args),
        Command::Db {
            action: DbCommand::Ls(args),
        } => db::ls(&args),
        Command::Db {
            action: DbCommand::Refresh(args),
        } => db::refresh(&args),
        Command::Submit(args) => db::submit(&args),
        Command::Queue(args) => db::list(&args),
        Command::Cancel(args) => db::cancel(&args),
        Command::Publish(args) => db::publish(&args),
        Command::Agent(args) => db::agent(&args),
        Command::Inventory {
            action: InventoryCommand::Import(args),
        } => inventory_import(&args),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "fsmatrix", &mut crate::stdio::Stdout);
            Ok(Exit::Success)
        }
        Command::Man { dir } => {
            let cmd = <Cli as clap::CommandFactory>::command();
            match dir {
                Some(dir) => {
                    if !dir.is_dir() {
                        return Err(CliError::nothing_ran(format!(
                            "failed to write the manual pages into {}: not a folder; give an existing folder",
                            crate::text::terminal_safe(&dir.display().to_string())
                        )));
                    }
                    manual::write_all(cmd, &dir).map_err(|e| {
                        CliError::problems(format!(
                            "failed to write the manual pages into {}: {e}",
                            crate::text::terminal_safe(&dir.display().to_string())
                        ))
                    })?;
                }
                None => manual::render(cmd, &mut crate::stdio::Stdout).map_err(|e| {
                    CliError::problems(format!("failed to write the manual page: {e}"))
                })?,
            }
            Ok(Exit::Success)
        }
    }
}

/// Warnings (a dropped connection, a reconnect) and notes always reach the
/// user on stderr; `-v` adds every remote command, `-vv` the SSH layer's
/// steps.  `FSMATRIX_LOG` (an `EnvFilter` directive) overrides.
fn init_tracing(verbose: u8, quiet: bool) {
    let default = match verbose {
        _ if quiet => "warn",
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
        .with_writer(|| crate::stdio::Stderr)
        .with_ansi(color_on_stderr())
        .without_time()
        .with_target(verbose > 1)
        .try_init();
}

/// `fsmatrix inventory import`: the Ansible inventory as an fsmatrix one,
/// its warnings on stderr.
fn inventory_import(args: &ImportArgs) -> CmdResult {
    let imported = if args.file.as_os_str() == "-" {
        crate::config::ansible::import_reader(
            std::path::Path::new("(standard input)"),
            std::io::stdin().lock(),
        )
    } else {
        crate::config::ansible::import_path(&args.file)
    }
    .map_err(|e| CliError::nothing_ran(e.to_string()))?;
    for w in &imported.warnings {
        crate::stdio::errln!("fsmatrix: warning: {w}");
    }
    match &args.out {
        Some(out) => {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(out)
                .map_err(|e| {
                    CliError::nothing_ran(format!("cannot create {}: {e}", out.display()))
                })?;
            f.write_all(imported.toml.as_bytes())
                .map_err(|e| CliError::problems(format!("cannot write {}: {e}", out.display())))?;
        }
        None => crate::stdio::out!("{}", imported.toml),
    }
    let skipped = match imported.skipped {
        0 => String::new(),
        n => format!(", {n} skipped (each named above)"),
    };
    crate::stdio::errln!(
        "fsmatrix: {} hosts imported from {}{skipped}; fill in each host's `devices` (the only devices fsmatrix may destroy), then `fsmatrix check -i`",
        imported.hosts,
        args.file.display()
    );
    Ok(Exit::Success)
}

/// `-q` was given (set once in [`main`]).
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// How a sweep shows its progress: `--json`, `-q`, else bars or lines.
/// The columns text is wrapped at when stdout is not a terminal (a file, a
/// pipe): what the reports written to files use too.
pub(crate) const DEFAULT_WIDTH: usize = 100;

/// The terminal's width when stdout is one (at least 40 columns), else
/// [`DEFAULT_WIDTH`].
pub(crate) fn terminal_width() -> usize {
    console::Term::stdout()
        .size_checked()
        .map_or(DEFAULT_WIDTH, |(_, cols)| usize::from(cols).max(40))
}

fn display(json: bool) -> crate::run::Display {
    if json {
        crate::run::Display::Json
    } else if QUIET.load(std::sync::atomic::Ordering::Relaxed) {
        crate::run::Display::Quiet
    } else {
        crate::run::Display::Auto
    }
}

/// Colour on stderr only on a terminal and when `NO_COLOR` is unset or
/// empty (no-color.org).
fn color_on_stderr() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::IsTerminal::is_terminal(&std::io::stderr())
}

/// The async runtime of the commands that talk to hosts.
fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::nothing_ran(format!("failed to start the async runtime: {e}")))
}

#[cfg(test)]
mod tests {
    use super::Cli;

    /// Every argument of every command, with the path of commands to it,
    /// that has no help text (clap's own --help and --version aside).
    fn without_help(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            let id = a.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            let has = a
                .get_help()
                .is_some_and(|h| !h.to_string().trim().is_empty())
                || a.get_long_help()
                    .is_some_and(|h| !h.to_string().trim().is_empty());
            if !has {
                out.push(format!("{path} {id}"));
            }
        }
        for sub in cmd.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            without_help(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_argument_has_help_text() {
        let cmd = <Cli as clap::CommandFactory>::command();
        let mut missing = Vec::new();
        without_help(&cmd, "fsmatrix", &mut missing);
        assert!(missing.is_empty(), "arguments without help: {missing:#?}");
    }
}
