//! Argument vectors for pgbench and psql.
//!
//! Every builder returns the arguments *without* the program name: the remote
//! script prepends the binary it found for the host's PostgreSQL version
//! (e.g. `/usr/lib/postgresql/15/bin/pgbench`).  The vectors are data, never
//! a shell string; whoever sends them to a host quotes each element with the
//! one quoting function of the remote layer.  Run them with `LC_ALL=C` so the
//! messages the parsers match are not translated.

use serde::{Deserialize, Serialize};

/// Where pgbench/psql connect: the cell's own PostgreSQL on its unix socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnArgs {
    /// Socket directory (or host name); passed as `-h`.
    pub host: String,
    pub port: u16,
    /// Role to connect as (`-U`); `None` leaves libpq's default (the OS user).
    pub user: Option<String>,
    pub dbname: String,
}

impl ConnArgs {
    fn push(&self, out: &mut Vec<String>) {
        out.push("-h".into());
        out.push(self.host.clone());
        out.push("-p".into());
        out.push(self.port.to_string());
        if let Some(user) = &self.user {
            out.push("-U".into());
            out.push(user.clone());
        }
    }
}

/// pgbench's built-in scripts (`-b NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Builtin {
    TpcbLike,
    SimpleUpdate,
    SelectOnly,
}

impl Builtin {
    /// The name pgbench's `-b` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Builtin::TpcbLike => "tpcb-like",
            Builtin::SimpleUpdate => "simple-update",
            Builtin::SelectOnly => "select-only",
        }
    }
}

/// What one pgbench run executes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    Builtin(Builtin),
    /// A custom pgbench script already on the host (`-f PATH`).  pgbench is
    /// then run with `-n`: its pre-run vacuum of the pgbench_* tables would
    /// only print errors when the script does not use them.
    Script(String),
}

/// How long a run lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunLimit {
    /// `-T SECONDS`
    Duration { seconds: u64 },
    /// `-t COUNT` transactions per client
    TransactionsPerClient { count: u64 },
}

/// `pgbench -i` options beyond the scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InitOptions {
    /// Generate data on the server (`-I dtGvp`) instead of streaming it
    /// from the client (PG 13+).
    pub server_side: bool,
    /// `-q`: one progress line every 5 s instead of one per 100 000 rows.
    pub quiet: bool,
}

/// `pgbench -i -s SCALE [-q] [-I dtGvp] -h … -p … [-U …] DBNAME`.
pub fn pgbench_init_args(scale: u32, opts: InitOptions, conn: &ConnArgs) -> Vec<String> {
    let mut out = vec!["-i".to_string(), "-s".to_string(), scale.to_string()];
    if opts.quiet {
        out.push("-q".into());
    }
    if opts.server_side {
        out.push("-I".into());
        out.push("dtGvp".into());
    }
    conn.push(&mut out);
    out.push(conn.dbname.clone());
    out
}

/// `pgbench (-b NAME | -n -f PATH) -c C -j J (-T S | -t N) [-P 1] -h … -p … DBNAME`.
///
/// `progress` adds `-P 1`: one line per second on stderr, parsed into
/// [`crate::load::ProgressSample`]s.  The summary goes to stdout.
pub fn pgbench_run_args(
    workload: &Workload,
    clients: u32,
    jobs: u32,
    limit: RunLimit,
    progress: bool,
    conn: &ConnArgs,
) -> Vec<String> {
    let mut out = Vec::new();
    match workload {
        Workload::Builtin(b) => {
            out.push("-b".into());
            out.push(b.as_str().into());
        }
        Workload::Script(path) => {
            out.push("-n".into());
            out.push("-f".into());
            out.push(path.clone());
        }
    }
    out.push("-c".into());
    out.push(clients.to_string());
    out.push("-j".into());
    out.push(jobs.to_string());
    match limit {
        RunLimit::Duration { seconds } => {
            out.push("-T".into());
            out.push(seconds.to_string());
        }
        RunLimit::TransactionsPerClient { count } => {
            out.push("-t".into());
            out.push(count.to_string());
        }
    }
    if progress {
        out.push("-P".into());
        out.push("1".into());
    }
    conn.push(&mut out);
    out.push(conn.dbname.clone());
    out
}

/// psql running a SQL-script workload, timed statement by statement:
///
/// ```text
/// LC_ALL=C psql -X -q -v ON_ERROR_STOP=1 -e -o RESULTS_OUT -h … -p … [-U …] -d DBNAME -c '\timing on' -f FILE
/// ```
///
/// Why each flag (the remote script must use exactly this, with `LC_ALL=C`
/// because "Time:" is a translated message):
/// - `-X`: no `~/.psqlrc` (it could turn timing off or change the echo);
/// - `-q`: no "Timing is on." and no "You are now connected…" after `\c`;
/// - `-v ON_ERROR_STOP=1`: the first failing statement ends the script with
///   exit status 3 (a partial load is not a result);
/// - `-e`: each statement is echoed on stdout as sent to the server, just
///   before its `Time:` line;
/// - `-o RESULTS_OUT`: query results and command tags go to that file (use
///   `/dev/null` or a file in the cell folder), so stdout holds only the
///   echoed statements and their `Time:` lines — the pairing
///   [`crate::load::parse_psql`] relies on;
/// - `-c '\timing on' -f FILE`: both run in order in one session (psql 9.6+;
///   for an older psql the remote script must instead prepend `\timing on`
///   to a copy of FILE).
///
/// Statements in FILE may use `\c` to switch databases; notices and errors
/// go to stderr.
pub fn psql_script_args(file: &str, results_out: &str, conn: &ConnArgs) -> Vec<String> {
    let mut out: Vec<String> = ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-e", "-o", results_out]
        .iter()
        .map(|s| s.to_string())
        .collect();
    conn.push(&mut out);
    out.push("-d".into());
    out.push(conn.dbname.clone());
    out.push("-c".into());
    out.push("\\timing on".into());
    out.push("-f".into());
    out.push(file.into());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> ConnArgs {
        ConnArgs {
            host: "/srv/fsmx/cell 1/run".into(),
            port: 55432,
            user: Some("postgres".into()),
            dbname: "bench".into(),
        }
    }

    #[test]
    fn run_args_builtin_duration_progress() {
        let a = pgbench_run_args(
            &Workload::Builtin(Builtin::SelectOnly),
            4,
            2,
            RunLimit::Duration { seconds: 10 },
            true,
            &conn(),
        );
        assert_eq!(
            a,
            [
                "-b",
                "select-only",
                "-c",
                "4",
                "-j",
                "2",
                "-T",
                "10",
                "-P",
                "1",
                "-h",
                "/srv/fsmx/cell 1/run",
                "-p",
                "55432",
                "-U",
                "postgres",
                "bench"
            ]
        );
    }

    #[test]
    fn run_args_script_transactions_no_progress() {
        let mut c = conn();
        c.user = None;
        let a = pgbench_run_args(
            &Workload::Script("/w/x.sql".into()),
            1,
            1,
            RunLimit::TransactionsPerClient { count: 500 },
            false,
            &c,
        );
        assert_eq!(
            a,
            [
                "-n",
                "-f",
                "/w/x.sql",
                "-c",
                "1",
                "-j",
                "1",
                "-t",
                "500",
                "-h",
                "/srv/fsmx/cell 1/run",
                "-p",
                "55432",
                "bench"
            ]
        );
    }

    #[test]
    fn init_args() {
        let a = pgbench_init_args(
            1000,
            InitOptions {
                server_side: true,
                quiet: true,
            },
            &conn(),
        );
        assert_eq!(
            a,
            [
                "-i",
                "-s",
                "1000",
                "-q",
                "-I",
                "dtGvp",
                "-h",
                "/srv/fsmx/cell 1/run",
                "-p",
                "55432",
                "-U",
                "postgres",
                "bench"
            ]
        );
        let b = pgbench_init_args(2, InitOptions::default(), &conn());
        assert_eq!(&b[..3], ["-i", "-s", "2"]);
        assert!(!b.contains(&"-I".to_string()));
    }

    #[test]
    fn psql_args_timing_before_file() {
        let a = psql_script_args("/w/load.sql", "/dev/null", &conn());
        let c = a.iter().position(|s| s == "\\timing on").unwrap();
        let f = a.iter().position(|s| s == "/w/load.sql").unwrap();
        assert!(c < f);
        assert_eq!(
            a[..7],
            ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-e", "-o", "/dev/null"]
        );
    }
}
