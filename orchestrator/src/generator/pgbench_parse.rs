//! pgbench output parsing, PostgreSQL 9.4–17.
//!
//! Every line is recognised by its prefix (after trimming surrounding
//! blanks), never by token position, because the summary gained, lost and
//! reworded lines in 9.4, 10, 13, 14 and 15 (`tests/fixtures/pgbench/README.md`).
//! Lines are split on `\n` and `\r` alike: on a terminal `pgbench -i` ends
//! its progress lines with `\r` only.  Unknown lines are ignored, so a newer
//! pgbench that adds a line still parses.  Nothing here panics on any input
//! (a proptest in `tests/pgbench_parse.rs` holds us to it).
//!
//! The summary is on stdout and everything else (`-P` progress, errors,
//! `starting vacuum...end.`) on stderr; both parsers read both streams, so
//! output captured as one stream (as published outputs are) parses too.

use serde::{Deserialize, Serialize};

pub use crate::model::StatementLatency;

/// Everything parsed from one `pgbench` run (not `-i`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    pub exit_status: Option<i32>,
    /// True only with exit status 0, no aborted client and a tps line.
    pub valid: bool,
    /// Why the run does not count; empty when `valid`.
    pub invalid_reasons: Vec<InvalidReason>,
    pub summary: RunSummary,
    /// Distinct clients reported as aborted on stderr.
    pub aborted_clients: u32,
    /// `-P` lines, in order.
    pub progress: Vec<ProgressSample>,
    /// `-r`: the `statement latencies in milliseconds` rows (10+; 15+ with
    /// failures, and retries under `--max-tries`), every script's in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statements: Vec<StatementLatency>,
}

/// Why a run does not count.  `Display` reads after "run not valid: ".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum InvalidReason {
    /// Killed by a signal, timed out, or status not recorded.
    ExitStatusUnknown,
    /// 1: bad arguments or no connection; 2: the run was aborted.
    ExitStatus { status: i32 },
    /// stderr said "Run was aborted; the above results are incomplete."
    RunAborted,
    /// Some clients stopped on an error before the end.
    ClientsAborted { count: u32 },
    /// pgbench could not connect to the server.
    ConnectionFailed,
    /// No `tps =` line: the summary is missing.
    NoSummary,
}

impl std::fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InvalidReason::ExitStatusUnknown => {
                write!(
                    f,
                    "pgbench exit status unknown (killed or timed out); expected 0"
                )
            }
            InvalidReason::ExitStatus { status } => {
                write!(f, "pgbench exited with status {status}; expected 0")
            }
            InvalidReason::RunAborted => {
                write!(
                    f,
                    "pgbench reported the run as aborted (results incomplete)"
                )
            }
            InvalidReason::ClientsAborted { count } => {
                write!(f, "{count} pgbench client(s) aborted on an error")
            }
            InvalidReason::ConnectionFailed => write!(f, "pgbench could not connect to the server"),
            InvalidReason::NoSummary => write!(f, "pgbench printed no tps line"),
        }
    }
}

/// The summary block, every field as printed (absent lines are `None`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// From the 14+ banner `pgbench (CLIENT[, server SERVER])`.
    pub client_version: Option<String>,
    /// Only printed when it differs from the client's.
    pub server_version: Option<String>,
    /// `<builtin: TPC-B (sort of)>`, a script path, or `Custom query` (≤9.5).
    pub transaction_type: Option<String>,
    pub scaling_factor: Option<u64>,
    pub query_mode: Option<String>,
    pub clients: Option<u32>,
    pub threads: Option<u32>,
    /// 15+.
    pub max_tries: Option<u32>,
    /// `-T`: `duration: N s`.
    pub duration_s: Option<u64>,
    /// `-t`: `number of transactions per client: N`.
    pub transactions_per_client: Option<u64>,
    pub transactions_processed: Option<u64>,
    /// The `/M` of `processed: N/M` (`-t` runs).
    pub transactions_intended: Option<u64>,
    /// 15+.
    pub failed: Option<CountPct>,
    pub retried: Option<CountPct>,
    pub total_retries: Option<u64>,
    pub skipped: Option<CountPct>,
    /// `-L`: `number of transactions above the L ms latency limit: a/b (p%)`:
    /// a, the late transactions.
    pub late: Option<u64>,
    /// `-R`: `rate limit schedule lag: avg X (max Y) ms`.
    pub schedule_lag_avg_ms: Option<f64>,
    pub schedule_lag_max_ms: Option<f64>,
    pub latency_avg_ms: Option<f64>,
    /// 15+: `latency average = … ms (including failures)`.
    pub latency_includes_failures: bool,
    pub latency_stddev_ms: Option<f64>,
    /// 14+: `initial connection time = … ms`.
    pub initial_connection_ms: Option<f64>,
    /// 14+ with `-C`: `average connection time = … ms`.
    pub average_connection_ms: Option<f64>,
    /// The tps that results use: excluding/without connection time when
    /// printed, else the `-C` "including reconnection times" one, else
    /// whatever tps line there is (see [`RunSummary::tps_lines`]).
    pub tps: Option<Tps>,
    /// Every `tps =` line in order (two in ≤13).
    pub tps_lines: Vec<Tps>,
}

/// A `N (P%)` count; `pct` is `None` for `NaN%` (nothing processed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountPct {
    pub count: u64,
    pub pct: Option<f64>,
}

/// One `tps = X (…)` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tps {
    pub value: f64,
    /// The number exactly as printed, so it can be compared with the raw text.
    pub text: String,
    pub kind: TpsKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TpsKind {
    /// ≤13: `(including connections establishing)`
    IncludingConnectionsEstablishing,
    /// ≤13: `(excluding connections establishing)`
    ExcludingConnectionsEstablishing,
    /// 14+: `(without initial connection time)`
    WithoutInitialConnectionTime,
    /// 14+ with `-C`: `(including reconnection times)`
    IncludingReconnectionTimes,
    /// Any other or no suffix.
    Other,
}

/// Whether `progress:` times are seconds since start or epoch seconds
/// (`--progress-timestamp`; told apart by magnitude, ≥ 10⁹ s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProgressClock {
    Elapsed,
    Epoch,
}

/// One `-P` line: `progress: 1.0 s, 7.0 tps, lat 435.396 ms stddev 120.347[, 0 failed][, lag …]…`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressSample {
    pub t_s: f64,
    pub clock: ProgressClock,
    pub tps: f64,
    pub lat_ms: Option<f64>,
    pub stddev_ms: Option<f64>,
    pub failed: Option<u64>,
    pub lag_ms: Option<f64>,
    pub skipped: Option<u64>,
    pub retried: Option<u64>,
    pub retries: Option<u64>,
}

/// Everything parsed from `pgbench -i`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InitOutcome {
    /// Saw the final `done in …` (13+) or `done.` (≤12).  The caller still
    /// requires exit status 0.
    pub completed: bool,
    /// 13+: the `done in X s` total.
    pub total_s: Option<f64>,
    /// 13+: the phases that ran, in printed order.
    pub phases: Vec<InitPhase>,
    /// `N of M tuples (P%) [of TABLE ]done (elapsed E s, remaining R s)`.
    pub progress: Vec<InitProgress>,
}

impl InitOutcome {
    /// Seconds of a phase by its printed name, e.g. `"client-side generate"`.
    pub fn phase(&self, name: &str) -> Option<f64> {
        self.phases
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.seconds)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitPhase {
    /// As printed: `drop tables`, `create tables`, `client-side generate`,
    /// `server-side generate`, `vacuum`, `primary keys`, `foreign keys`.
    pub name: String,
    pub seconds: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitProgress {
    /// 17+ names the table being generated.
    pub table: Option<String>,
    pub done: u64,
    pub total: u64,
    pub elapsed_s: Option<f64>,
    pub remaining_s: Option<f64>,
}

/// Lines of both streams, split on `\n` and `\r`, trimmed, empty ones dropped.
fn lines<'a>(stdout: &'a str, stderr: &'a str) -> impl Iterator<Item = &'a str> {
    stdout
        .split(['\n', '\r'])
        .chain(stderr.split(['\n', '\r']))
        .map(str::trim)
        .filter(|l| !l.is_empty())
}

/// First whitespace-separated word of `s`, parsed.
fn first<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.split_whitespace().next()?.parse().ok()
}

/// A float that must be finite (pgbench prints `NaN` for 0/0).
fn finite(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// `N (P%)` → count and percentage.
fn count_pct(s: &str) -> Option<CountPct> {
    let count = first(s)?;
    let pct = s
        .split_once('(')
        .and_then(|(_, r)| r.split_once('%'))
        .and_then(|(p, _)| finite(p.trim()));
    Some(CountPct { count, pct })
}

/// `X ms…` after a `=` or `:` separator.
fn ms_after_sep(rest: &str) -> Option<f64> {
    let rest = rest.trim_start();
    let rest = rest.strip_prefix('=').or_else(|| rest.strip_prefix(':'))?;
    finite(rest.split_whitespace().next()?)
}

/// Parse one pgbench run.  `exit_status` is `None` when the process was
/// killed or the status is not known.
pub fn parse_run(stdout: &str, stderr: &str, exit_status: Option<i32>) -> RunOutcome {
    let mut s = RunSummary::default();
    let mut progress = Vec::new();
    let mut aborted_ids: Vec<&str> = Vec::new();
    let mut run_aborted = false;
    let mut connection_failed = false;
    let mut statements = Vec::new();
    // In a `statement latencies` block: (script, number of count columns).
    let mut block: Option<(u32, usize)> = None;
    let mut script = 0u32;

    for line in lines(stdout, stderr) {
        if let Some((script, counts)) = block {
            match statement_row(line, script, counts) {
                Some(st) => {
                    statements.push(st);
                    continue;
                }
                None => block = None,
            }
        }
        // Several scripts: `SQL script 2: <builtin: simple update>`.
        if let Some(n) = line
            .strip_prefix("SQL script ")
            .and_then(|r| r.split_once(':'))
            .and_then(|(n, _)| n.trim().parse::<u32>().ok())
        {
            script = n.saturating_sub(1);
            continue;
        }
        // ≤ 14 `statement latencies in milliseconds:`, 15+ `… and
        // failures:` / `…, failures and retries:`, under a script ` - `.
        if let Some(h) = line
            .trim_start_matches(['-', ' '])
            .strip_prefix("statement latencies in milliseconds")
        {
            let counts = if h.contains("retries") {
                2
            } else {
                usize::from(h.contains("failures"))
            };
            block = Some((script, counts));
            continue;
        }
        if let Some(rest) = line.strip_prefix("progress:") {
            if let Some(p) = parse_progress(rest) {
                progress.push(p);
            }
            continue;
        }
        if let Some(inner) = line
            .strip_prefix("pgbench (")
            .and_then(|r| r.strip_suffix(')'))
        {
            match inner.split_once(", server ") {
                Some((c, srv)) => {
                    s.client_version = Some(c.to_string());
                    s.server_version = Some(srv.to_string());
                }
                None => s.client_version = Some(inner.to_string()),
            }
            continue;
        }
        if let Some(v) = line.strip_prefix("transaction type:") {
            let v = v.trim();
            s.transaction_type = (!v.is_empty()).then(|| v.to_string());
        } else if let Some(v) = line.strip_prefix("scaling factor:") {
            s.scaling_factor = first(v);
        } else if let Some(v) = line.strip_prefix("query mode:") {
            s.query_mode = Some(v.trim().to_string()).filter(|v| !v.is_empty());
        } else if let Some(v) = line.strip_prefix("number of clients:") {
            s.clients = first(v);
        } else if let Some(v) = line.strip_prefix("number of threads:") {
            s.threads = first(v);
        } else if let Some(v) = line.strip_prefix("maximum number of tries:") {
            s.max_tries = first(v);
        } else if let Some(v) = line.strip_prefix("duration:") {
            s.duration_s = first(v);
        } else if let Some(v) = line.strip_prefix("number of transactions per client:") {
            s.transactions_per_client = first(v);
        } else if let Some(v) = line.strip_prefix("number of transactions actually processed:") {
            let v = v.trim();
            match v.split_once('/') {
                Some((n, m)) => {
                    s.transactions_processed = n.trim().parse().ok();
                    s.transactions_intended = first(m);
                }
                None => s.transactions_processed = first(v),
            }
        } else if let Some(v) = line.strip_prefix("number of failed transactions:") {
            s.failed = count_pct(v);
        } else if let Some(v) = line.strip_prefix("number of transactions retried:") {
            s.retried = count_pct(v);
        } else if let Some(v) = line.strip_prefix("total number of retries:") {
            s.total_retries = first(v);
        } else if let Some(v) = line.strip_prefix("number of transactions skipped:") {
            s.skipped = count_pct(v);
        } else if let Some(v) = line
            .strip_prefix("number of transactions above the ")
            .and_then(|v| v.split_once("latency limit:"))
        {
            s.late =
                v.1.trim()
                    .split('/')
                    .next()
                    .and_then(|n| n.trim().parse().ok());
        } else if let Some(v) = line.strip_prefix("rate limit schedule lag:") {
            // " avg 0.123 (max 4.567) ms"
            let words: Vec<&str> = v.split_whitespace().collect();
            if let ["avg", avg, "(max", max, "ms", ..] = words.as_slice() {
                s.schedule_lag_avg_ms = finite(avg);
                s.schedule_lag_max_ms = finite(max.trim_end_matches(')'));
            }
        } else if let Some(v) = line.strip_prefix("latency average") {
            s.latency_avg_ms = ms_after_sep(v);
            s.latency_includes_failures = v.contains("(including failures)");
        } else if let Some(v) = line.strip_prefix("latency stddev") {
            s.latency_stddev_ms = ms_after_sep(v);
        } else if let Some(v) = line.strip_prefix("initial connection time") {
            s.initial_connection_ms = ms_after_sep(v);
        } else if let Some(v) = line.strip_prefix("average connection time") {
            s.average_connection_ms = ms_after_sep(v);
        } else if let Some(v) = line.strip_prefix("tps") {
            if let Some(t) = parse_tps(v) {
                s.tps_lines.push(t);
            }
        } else {
            let msg = line
                .strip_prefix("pgbench: error:")
                .or_else(|| line.strip_prefix("pgbench:"))
                .unwrap_or(line)
                .trim_start();
            if msg.contains("Run was aborted") {
                run_aborted = true;
            } else if let Some(r) = msg.strip_prefix("client ") {
                // ≤13 "client 0 aborted in command 4 …", 14+ "client 1 script 0 aborted in …"
                if msg.contains(" aborted") {
                    if let Some(id) = r.split_whitespace().next() {
                        if !aborted_ids.contains(&id) {
                            aborted_ids.push(id);
                        }
                    }
                }
            } else if msg.contains("could not connect to server")
                || msg.contains("could not create connection")
                || (msg.starts_with("connection to server") && msg.contains("failed"))
                // ≤ 13: `connection to database "pgbench" failed:`
                || (msg.starts_with("connection to database") && msg.contains("failed"))
            {
                connection_failed = true;
            }
        }
    }

    s.tps = pick_tps(&s.tps_lines);
    let aborted_clients = u32::try_from(aborted_ids.len()).unwrap_or(u32::MAX);

    let mut invalid_reasons = Vec::new();
    match exit_status {
        None => invalid_reasons.push(InvalidReason::ExitStatusUnknown),
        Some(0) => {}
        Some(status) => invalid_reasons.push(InvalidReason::ExitStatus { status }),
    }
    if run_aborted {
        invalid_reasons.push(InvalidReason::RunAborted);
    }
    if aborted_clients > 0 {
        invalid_reasons.push(InvalidReason::ClientsAborted {
            count: aborted_clients,
        });
    }
    if connection_failed {
        invalid_reasons.push(InvalidReason::ConnectionFailed);
    }
    if s.tps.is_none() {
        invalid_reasons.push(InvalidReason::NoSummary);
    }

    RunOutcome {
        exit_status,
        valid: invalid_reasons.is_empty(),
        invalid_reasons,
        summary: s,
        aborted_clients,
        progress,
        statements,
    }
}

/// One `-r` row: `%11.3f  cmd` (≤ 14) or `%11.3f %10d [%10d]  cmd` (15+).
fn statement_row(line: &str, script: u32, counts: usize) -> Option<StatementLatency> {
    let word = |s: &str| -> Option<(String, String)> {
        let s = s.trim_start();
        let end = s.find(char::is_whitespace).unwrap_or(s.len());
        Some((s[..end].to_string(), s[end..].to_string()))
    };
    let (lat, mut rest) = word(line)?;
    let latency_ms = finite(&lat)?;
    let mut nums = Vec::new();
    for _ in 0..counts {
        let (n, r) = word(&rest)?;
        nums.push(n.parse::<u64>().ok()?);
        rest = r;
    }
    let command = rest.trim().to_string();
    if command.is_empty() {
        return None;
    }
    Some(StatementLatency {
        script,
        command,
        latency_ms,
        failures: nums.first().copied(),
        retries: nums.get(1).copied(),
    })
}

/// ` = 85.184871 (including connections establishing)` → [`Tps`].
fn parse_tps(rest: &str) -> Option<Tps> {
    let rest = rest.trim_start().strip_prefix('=')?.trim_start();
    let text = rest.split_whitespace().next()?;
    let value = finite(text)?;
    let suffix = rest[text.len()..].trim();
    let kind = match suffix {
        "(including connections establishing)" => TpsKind::IncludingConnectionsEstablishing,
        "(excluding connections establishing)" => TpsKind::ExcludingConnectionsEstablishing,
        "(without initial connection time)" => TpsKind::WithoutInitialConnectionTime,
        "(including reconnection times)" => TpsKind::IncludingReconnectionTimes,
        _ => TpsKind::Other,
    };
    Some(Tps {
        value,
        text: text.to_string(),
        kind,
    })
}

fn pick_tps(lines: &[Tps]) -> Option<Tps> {
    let rank = |k: TpsKind| match k {
        TpsKind::ExcludingConnectionsEstablishing | TpsKind::WithoutInitialConnectionTime => 0,
        TpsKind::IncludingReconnectionTimes => 1,
        TpsKind::Other => 2,
        TpsKind::IncludingConnectionsEstablishing => 3,
    };
    lines.iter().min_by_key(|t| rank(t.kind)).cloned()
}

/// The part after `progress:`, pieces told apart by their words.
pub fn parse_progress(rest: &str) -> Option<ProgressSample> {
    let mut pieces = rest.split(',').map(str::trim);
    let t_s = finite(pieces.next()?.strip_suffix(" s")?.trim())?;
    let mut p = ProgressSample {
        t_s,
        clock: if t_s >= 1e9 {
            ProgressClock::Epoch
        } else {
            ProgressClock::Elapsed
        },
        tps: f64::NAN,
        lat_ms: None,
        stddev_ms: None,
        failed: None,
        lag_ms: None,
        skipped: None,
        retried: None,
        retries: None,
    };
    let mut saw_tps = false;
    for piece in pieces {
        let words: Vec<&str> = piece.split_whitespace().collect();
        match words.as_slice() {
            [n, "tps"] => {
                p.tps = finite(n)?;
                saw_tps = true;
            }
            ["lat", n, "ms", rest @ ..] => {
                p.lat_ms = finite(n);
                if let ["stddev", sd, ..] = rest {
                    p.stddev_ms = finite(sd);
                }
            }
            // 9.3 printed "X ms lat"
            [n, "ms", "lat"] => p.lat_ms = finite(n),
            ["lag", n, "ms", ..] => p.lag_ms = finite(n),
            [n, "failed"] => p.failed = n.parse().ok(),
            [n, "skipped"] => p.skipped = n.parse().ok(),
            [n, "retried"] => p.retried = n.parse().ok(),
            [n, "retries"] => p.retries = n.parse().ok(),
            _ => {}
        }
    }
    saw_tps.then_some(p)
}

/// Parse `pgbench -i` output (all of it goes to stderr; stdout is read too).
pub fn parse_init(stdout: &str, stderr: &str) -> InitOutcome {
    let mut out = InitOutcome::default();
    for line in lines(stdout, stderr) {
        if let Some(rest) = line.strip_prefix("done in ") {
            out.completed = true;
            let (total, phases) = match rest.split_once('(') {
                Some((t, p)) => (t, Some(p)),
                None => (rest, None),
            };
            out.total_s = total
                .trim()
                .trim_end_matches('.')
                .strip_suffix(" s")
                .and_then(|n| finite(n.trim()));
            if let Some(phases) = phases {
                let phases = phases.trim_end_matches('.').trim_end_matches(')');
                out.phases = phases
                    .split(',')
                    .filter_map(|ph| {
                        let ph = ph.trim().strip_suffix(" s")?;
                        let (name, secs) = ph.rsplit_once(' ')?;
                        Some(InitPhase {
                            name: name.trim().to_string(),
                            seconds: finite(secs)?,
                        })
                    })
                    .collect();
            }
        } else if line == "done." {
            out.completed = true;
        } else if let Some(p) = parse_init_progress(line) {
            out.progress.push(p);
        }
    }
    out
}

/// `100000 of 300000 tuples (33%) [of pgbench_accounts ]done (elapsed 0.11 s, remaining 0.21 s)`
fn parse_init_progress(line: &str) -> Option<InitProgress> {
    let (done, rest) = line.split_once(" of ")?;
    let done = done.trim().parse().ok()?;
    let (total, rest) = rest.split_once(" tuples (")?;
    let total = total.trim().parse().ok()?;
    let (_pct, rest) = rest.split_once(')')?;
    let rest = rest.trim_start();
    let (table, rest) = match rest.strip_prefix("of ") {
        Some(r) => {
            let (t, r) = r.split_once(" done")?;
            (Some(t.trim().to_string()), r)
        }
        None => (None, rest.strip_prefix("done")?),
    };
    let secs_after = |key: &str| {
        rest.split_once(key)
            .and_then(|(_, r)| r.split_whitespace().next())
            .and_then(finite)
    };
    Some(InitProgress {
        table,
        done,
        total,
        elapsed_s: secs_after("elapsed "),
        remaining_s: secs_after("remaining "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line_forms() {
        let p = parse_progress(" 1.0 s, 7.0 tps, lat 435.396 ms stddev 120.347").unwrap();
        assert_eq!(
            (p.t_s, p.tps, p.lat_ms, p.stddev_ms),
            (1.0, 7.0, Some(435.396), Some(120.347))
        );
        assert_eq!(p.failed, None);
        let p = parse_progress(
            " 2.0 s, 223.0 tps, lat 0.513 ms stddev 0.591, 0 failed, lag 0.148 ms, 4 skipped",
        )
        .unwrap();
        assert_eq!(
            (p.failed, p.lag_ms, p.skipped),
            (Some(0), Some(0.148), Some(4))
        );
        let p =
            parse_progress(" 1796022534.269 s, 4071.7 tps, lat 0.489 ms stddev 0.766, 0 failed")
                .unwrap();
        assert_eq!(p.clock, ProgressClock::Epoch);
        assert!(parse_progress(" 1.0 s").is_none());
        assert!(parse_progress("garbage").is_none());
    }

    /// `-R` and `-L` summary lines as PostgreSQL 14 and 15+ print them
    /// (15 dropped the space before `%`).
    #[test]
    fn rate_limit_lag_and_late_transactions() {
        for (late_line, skipped_line) in [
            (
                "number of transactions above the 50.0 ms latency limit: 3/1234 (0.243 %)",
                "number of transactions skipped: 2 (0.162 %)",
            ),
            (
                "number of transactions above the 50.0 ms latency limit: 3/1234 (0.243%)",
                "number of transactions skipped: 2 (0.162%)",
            ),
        ] {
            let out = format!(
                "transaction type: <builtin: select only>\nscaling factor: 1\nquery mode: simple\n\
                 number of clients: 2\nnumber of threads: 2\nduration: 5 s\n\
                 number of transactions actually processed: 1234\n{skipped_line}\n{late_line}\n\
                 latency average = 0.512 ms\nlatency stddev = 0.201 ms\n\
                 rate limit schedule lag: avg 0.081 (max 4.212) ms\n\
                 initial connection time = 3.100 ms\ntps = 246.9 (without initial connection time)\n"
            );
            let r = parse_run(&out, "", Some(0));
            assert!(r.valid, "{:?}", r.invalid_reasons);
            assert_eq!(r.summary.late, Some(3));
            assert_eq!(r.summary.skipped.as_ref().map(|s| s.count), Some(2));
            assert_eq!(r.summary.schedule_lag_avg_ms, Some(0.081));
            assert_eq!(r.summary.schedule_lag_max_ms, Some(4.212));
        }
    }

    #[test]
    fn tps_kinds_and_pick() {
        let a = parse_tps(" = 85.184871 (including connections establishing)").unwrap();
        let b = parse_tps(" = 85.296346 (excluding connections establishing)").unwrap();
        assert_eq!(a.kind, TpsKind::IncludingConnectionsEstablishing);
        assert_eq!(pick_tps(&[a, b.clone()]), Some(b));
        assert!(parse_tps(" = NaN (without initial connection time)").is_none());
    }

    #[test]
    fn init_phases_any_subset() {
        let o = parse_init(
            "",
            "done in 0.25 s (drop tables 0.01 s, server-side generate 0.16 s).\n",
        );
        assert!(o.completed);
        assert_eq!(o.total_s, Some(0.25));
        assert_eq!(o.phase("server-side generate"), Some(0.16));
        assert_eq!(o.phases.len(), 2);
    }
}
