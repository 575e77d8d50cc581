//! A `[[workload]]` entry: what it runs (a builtin, a pgbench script, a SQL
//! script), its scale, clients, jobs and length, and pgbench's options.
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};

use super::runs::{parse_duration, workload_runs, RunKeys};
use super::types::{Builtin, Jobs, Length, SamplingRate, Scale, Workload, WorkloadKind};
use crate::config::error::Errors;
use crate::config::values::Label;
use crate::config::walk::{int_value, tables, type_name, Tbl};
use crate::text::sha256_hex;

const WL_KEYS: &[&str] = &[
    "name",
    "builtin",
    "pgbench_script",
    "sql_script",
    "scale",
    "clients",
    "jobs",
    "duration",
    "transactions",
    "estimate",
    "repeats",
    "warmup",
    "progress",
    "drop_caches",
    "run_timeout",
    "rate",
    "latency_limit",
    "latency_log",
    "sampling_rate",
    "per_statement",
];

/// ETA for a SQL script that names no `estimate`.
pub const SQL_DEFAULT_ESTIMATE_SECS: u64 = 60;

/// The largest workload script a matrix may name: the text travels in the
/// plan, the bundle and to every host.
pub const MAX_SCRIPT_BYTES: u64 = 16 * 1024 * 1024;

/// A workload script path as written → the path fsmatrix keeps: `.` parts
/// dropped (`./x.sql` is `x.sql`), `..` refused.  A bundle keeps a relative
/// script at the same path beside its matrix snapshot, so the path must
/// stay inside the matrix's folder; `run`, `resume` and `run --from` use the
/// path this returns, so what plan accepts they accept.
pub fn script_path(written: &str) -> Result<PathBuf, String> {
    use std::path::Component;
    let p = Path::new(written);
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!(
                    "script path `{}` has a `..` part; a bundle keeps scripts beside its matrix, \
                     so valid: a path inside the matrix's folder (e.g. sql/x.sql) or an absolute path",
                    crate::config::values::shown(written)
                ))
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() || written.ends_with('/') {
        return Err(format!(
            "script path `{}` names no file; valid: a file path relative to the matrix (e.g. sql/x.sql)",
            crate::config::values::shown(written)
        ));
    }
    Ok(out)
}

/// Read a workload script: a regular file (a FIFO, a device or a folder is
/// refused from its metadata, and opened non-blocking: see
/// [`crate::files::read_regular`]) of at most [`MAX_SCRIPT_BYTES`], in UTF-8.
pub fn read_script(path: &Path) -> Result<String, String> {
    let bytes = crate::files::read_regular(path, MAX_SCRIPT_BYTES)?;
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())
}

/// Every `[[workload]]`, with where it is; scripts are read relative to
/// `base`; a name given twice is an error at the later entry.
pub(super) fn workloads(
    errs: &mut Errors<'_>,
    root: &Tbl<'_, '_>,
    base: &Path,
    defaults: &RunKeys,
) -> Vec<(Workload, Range<usize>)> {
    let mut workloads: Vec<(Workload, Range<usize>)> = Vec::new();
    match root.get("workload") {
        Some(v) => {
            for (t, span) in tables(errs, v, "workload") {
                if let Some(w) = workload(errs, t, &span, base, defaults) {
                    workloads.push((w, span));
                }
            }
        }
        None => errs.push(
            &(0..0),
            "the matrix has no [[workload]]; add at least one (e.g. builtin = \"tpcb-like\")",
        ),
    }
    for i in 0..workloads.len() {
        let (w, span) = &workloads[i];
        if workloads[..i].iter().any(|(x, _)| x.name == w.name) {
            errs.push(
                span,
                format!(
                    "duplicate workload name `{}`; every [[workload]] needs its own name",
                    w.name
                ),
            );
        }
    }
    workloads
}

/// One `[[workload]]` entry, a function per key group; `None` when any of
/// its keys is wrong (every error is pushed).
fn workload(
    errs: &mut Errors<'_>,
    t: &DeTable<'_>,
    span: &Range<usize>,
    base: &Path,
    d: &RunKeys,
) -> Option<Workload> {
    let label = t
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == "name")
        .and_then(|(_, v)| v.get_ref().as_str().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    let ctx = format!("[[workload]] `{label}`");
    let w = Tbl { t, span, ctx: &ctx };
    w.check_keys(errs, WL_KEYS);
    let before = errs.list.len();
    let name = match w.get("name") {
        Some(_) => w.typed(errs, "name", Label::new),
        None => {
            errs.push(span, format!("{ctx} has no `name`"));
            None
        }
    };
    let key = kind_key(errs, &w, span, &ctx)?;
    let kind = kind(errs, &w, &ctx, key, base);
    let is_sql = matches!(kind, Some(WorkloadKind::SqlScript { .. }));
    let scale = scale(errs, &w, span, &ctx, is_sql);
    let clients = clients(errs, &w, span, &ctx, is_sql);
    let jobs = jobs(errs, &w, &ctx);
    let length = length(errs, &w, span, &ctx, is_sql);
    let runs = workload_runs(errs, &w, &ctx, d, &length);
    let (rate, latency_limit_ms) = pgbench_limits(errs, &w, &ctx, is_sql);
    let (latency_log, per_statement) = latency_keys(errs, &w, &ctx, is_sql);
    if errs.list.len() > before {
        return None;
    }
    Some(Workload {
        name: name?,
        kind: kind?,
        scale,
        clients,
        jobs,
        length: length?,
        repeats: runs.repeats,
        warmup: runs.warmup,
        progress: runs.progress,
        drop_caches: runs.drop_caches,
        run_timeout: runs.run_timeout.map(|(n, _)| n),
        rate,
        latency_limit_ms,
        latency_log,
        per_statement,
    })
}

/// Which of `builtin`, `pgbench_script` and `sql_script` the workload
/// gives: exactly one, or `None` (an error says so).
fn kind_key(
    errs: &mut Errors<'_>,
    w: &Tbl<'_, '_>,
    span: &Range<usize>,
    ctx: &str,
) -> Option<&'static str> {
    let given: Vec<&'static str> = ["builtin", "pgbench_script", "sql_script"]
        .into_iter()
        .filter(|k| w.get(k).is_some())
        .collect();
    if given.len() != 1 {
        errs.push(
            span,
            format!(
                "{ctx} needs exactly one of builtin (tpcb-like, simple-update, select-only), pgbench_script or sql_script; found {}",
                if given.is_empty() { "none".to_string() } else { given.join(" and ") }
            ),
        );
        return None;
    }
    Some(given[0])
}

/// What the workload runs: a builtin, or a script read relative to `base`.
fn kind(
    errs: &mut Errors<'_>,
    w: &Tbl<'_, '_>,
    ctx: &str,
    key: &'static str,
    base: &Path,
) -> Option<WorkloadKind> {
    match key {
        "builtin" => w.str(errs, "builtin").and_then(|s| {
            let b = match s.get_ref().as_str() {
                "tpcb-like" => Builtin::TpcbLike,
                "simple-update" => Builtin::SimpleUpdate,
                "select-only" => Builtin::SelectOnly,
                other => {
                    errs.push(
                        &s.span(),
                        format!(
                            "unknown builtin `{other}` in {ctx}; valid: tpcb-like, simple-update, select-only"
                        ),
                    );
                    return None;
                }
            };
            Some(WorkloadKind::Builtin { builtin: b })
        }),
        key => w.str(errs, key).and_then(|s| {
            let rel = match script_path(s.get_ref()) {
                Ok(rel) => rel,
                Err(e) => {
                    errs.push(&s.span(), e);
                    return None;
                }
            };
            let path = base.join(&rel);
            match read_script(&path) {
                Ok(content) => {
                    let sha256 = sha256_hex(content.as_bytes());
                    Some(if key == "sql_script" {
                        WorkloadKind::SqlScript {
                            path: rel,
                            sha256,
                            content,
                        }
                    } else {
                        WorkloadKind::PgbenchScript {
                            path: rel,
                            sha256,
                            content,
                        }
                    })
                }
                Err(e) => {
                    errs.push(
                        &s.span(),
                        format!(
                            "cannot read `{}` ({}): {e}; valid: a regular file of at most {} MiB, relative to the matrix file",
                            s.get_ref(),
                            path.display(),
                            MAX_SCRIPT_BYTES >> 20
                        ),
                    );
                    None
                }
            }
        }),
    }
}

/// `scale`: a factor or a share of the device; none for a SQL script.
fn scale(
    errs: &mut Errors<'_>,
    w: &Tbl<'_, '_>,
    span: &Range<usize>,
    ctx: &str,
    is_sql: bool,
) -> Option<Scale> {
    match w.get("scale") {
        Some(v) if is_sql => {
            errs.push(
                &v.span(),
                format!("{ctx} is a SQL script: it makes its own data, so `scale` does not apply"),
            );
            None
        }
        Some(v) => match v.get_ref() {
            DeValue::Integer(_) => int_value(errs, v, &format!("`scale` in {ctx}"), 1, 1_000_000)
                .map(|n| Scale::Factor(*n.get_ref() as u32)),
            DeValue::String(s) => match s.strip_suffix('%').and_then(|p| p.parse::<u8>().ok()) {
                Some(p) if (1..=95).contains(&p) => Some(Scale::DevicePercent(p)),
                _ => {
                    errs.push(
                            &v.span(),
                            format!(
                                "`scale` in {ctx} is \"{s}\"; valid: a number (pgbench -i -s) or a share of the device from \"1%\" to \"95%\""
                            ),
                        );
                    None
                }
            },
            other => {
                errs.push(
                    &v.span(),
                    format!(
                        "`scale` in {ctx} must be a number or a percentage string such as \"80%\", found {}",
                        type_name(other)
                    ),
                );
                None
            }
        },
        None if is_sql => None,
        None => {
            errs.push(
                span,
                format!("{ctx} has no `scale`; give a number (pgbench -i -s) or a share of the device such as \"80%\""),
            );
            None
        }
    }
}

/// `clients`: the client counts, each once; `[1]` for a SQL script.
fn clients(
    errs: &mut Errors<'_>,
    w: &Tbl<'_, '_>,
    span: &Range<usize>,
    ctx: &str,
    is_sql: bool,
) -> Vec<u32> {
    match w.get("clients") {
        Some(v) => match v.get_ref() {
            DeValue::Array(a) => {
                if a.is_empty() {
                    errs.push(
                        &v.span(),
                        format!("`clients` of {ctx} is empty; list at least one client count, e.g. [1, 4]"),
                    );
                }
                let mut out: Vec<u32> = Vec::new();
                for item in a.iter() {
                    if let Some(n) =
                        int_value(errs, item, &format!("a client count of {ctx}"), 1, 10_000)
                    {
                        let n = *n.get_ref() as u32;
                        if out.contains(&n) {
                            errs.push(
                                &item.span(),
                                format!("client count {n} is listed twice in {ctx}"),
                            );
                        }
                        out.push(n);
                    }
                }
                if is_sql && out != [1] {
                    errs.push(
                        &v.span(),
                        format!("{ctx} is a SQL script run once by psql; `clients` must be [1] or absent"),
                    );
                }
                out
            }
            other => {
                errs.push(
                    &v.span(),
                    format!(
                        "`clients` of {ctx} must be an array of integers such as [1, 4], found {}",
                        type_name(other)
                    ),
                );
                Vec::new()
            }
        },
        None if is_sql => vec![1],
        None => {
            errs.push(
                span,
                format!("{ctx} has no `clients`; list the client counts, e.g. clients = [1, 4]"),
            );
            Vec::new()
        }
    }
}

/// `jobs`: pgbench's threads, a number or one per client.
fn jobs(errs: &mut Errors<'_>, w: &Tbl<'_, '_>, ctx: &str) -> Jobs {
    match w.get("jobs") {
        Some(v) => match v.get_ref() {
            DeValue::String(s) if s.as_ref() == "clients" => Jobs::PerClient,
            DeValue::Integer(_) => int_value(errs, v, &format!("`jobs` in {ctx}"), 1, 1024)
                .map(|n| Jobs::Fixed(*n.get_ref() as u32))
                .unwrap_or(Jobs::Fixed(1)),
            other => {
                errs.push(
                    &v.span(),
                    format!(
                        "`jobs` in {ctx} must be a number or \"clients\" (one thread per client), found {}",
                        match other {
                            DeValue::String(s) => format!("\"{s}\""),
                            o => type_name(o).to_string(),
                        }
                    ),
                );
                Jobs::Fixed(1)
            }
        },
        None => Jobs::Fixed(1),
    }
}

/// How long a run lasts: `duration` or `transactions`, or for a SQL script
/// to its end (with `estimate` for the ETA).
fn length(
    errs: &mut Errors<'_>,
    w: &Tbl<'_, '_>,
    span: &Range<usize>,
    ctx: &str,
    is_sql: bool,
) -> Option<Length> {
    let duration = w.str(errs, "duration").and_then(|s| match parse_duration(s.get_ref()) {
        Some(n) => Some(n),
        None => {
            errs.push(
                &s.span(),
                format!(
                    "`duration` in {ctx} is \"{}\"; valid: a number with a unit s, m, h or d, e.g. \"10s\", \"15m\", \"2h\", \"1h30m\", at most 30d",
                    s.get_ref()
                ),
            );
            None
        }
    });
    let transactions = w
        .int(errs, "transactions", 1, 1_000_000_000)
        .map(|n| *n.get_ref() as u64);
    let estimate = w
        .str(errs, "estimate")
        .and_then(|s| match parse_duration(s.get_ref()) {
            Some(n) => Some(n),
            None => {
                errs.push(
                    &s.span(),
                    format!(
                        "`estimate` in {ctx} is \"{}\"; valid: e.g. \"90s\", \"5m\", at most 30d",
                        s.get_ref()
                    ),
                );
                None
            }
        });
    if is_sql {
        for key in ["duration", "transactions", "jobs"] {
            if let Some(v) = w.get(key) {
                errs.push(
                    &v.span(),
                    format!("{ctx} is a SQL script that runs to its end: `{key}` does not apply (use `estimate` for the ETA)"),
                );
            }
        }
        Some(Length::ToCompletion {
            estimate_secs: estimate.unwrap_or(SQL_DEFAULT_ESTIMATE_SECS),
        })
    } else {
        if let Some(v) = w.get("estimate") {
            errs.push(
                &v.span(),
                format!("`estimate` applies to SQL scripts only; {ctx} runs for its `duration`"),
            );
        }
        match (
            duration,
            transactions,
            w.get("duration").is_some() || w.get("transactions").is_some(),
        ) {
            (Some(d), None, _) => Some(Length::Seconds(d)),
            (None, Some(t), _) => Some(Length::Transactions(t)),
            (Some(_), Some(_), _) => {
                errs.push(
                    span,
                    format!("{ctx} gives both `duration` and `transactions`; give one"),
                );
                None
            }
            (None, None, true) => None,
            (None, None, false) => {
                errs.push(
                    span,
                    format!("{ctx} has no `duration` (e.g. \"60s\") or `transactions`"),
                );
                None
            }
        }
    }
}

/// `rate` and `latency_limit`: pgbench's `-R` and `-L`.
fn pgbench_limits(
    errs: &mut Errors<'_>,
    w: &Tbl<'_, '_>,
    ctx: &str,
    is_sql: bool,
) -> (Option<u32>, Option<u32>) {
    let rate = w
        .int(errs, "rate", 1, MAX_RATE)
        .map(|n| *n.get_ref() as u32);
    let latency_limit_ms = w.get("latency_limit").and_then(|v| {
        let ms = v.get_ref().as_str().and_then(parse_millis);
        if ms.is_none() {
            errs.push(
                &v.span(),
                format!(
                    "`latency_limit` in {ctx} must be a time such as \"50ms\" or \"2s\" (1 ms to 1 h): pgbench counts slower transactions apart (-L)"
                ),
            );
        }
        ms
    });
    if is_sql && (rate.is_some() || latency_limit_ms.is_some()) {
        if let Some(v) = w.get("rate").or_else(|| w.get("latency_limit")) {
            errs.push(
                &v.span(),
                format!(
                    "`rate` and `latency_limit` in {ctx} are pgbench's (-R, -L): a sql_script runs through psql; use builtin or pgbench_script"
                ),
            );
        }
    }
    (rate, latency_limit_ms)
}

/// `latency_log`, `sampling_rate` and `per_statement`: pgbench's `-l
/// --sampling-rate` and `-r`.
fn latency_keys(
    errs: &mut Errors<'_>,
    w: &Tbl<'_, '_>,
    ctx: &str,
    is_sql: bool,
) -> (Option<SamplingRate>, bool) {
    let log = w.bool(errs, "latency_log").unwrap_or(false);
    let per_statement = w.bool(errs, "per_statement").unwrap_or(false);
    let rate = w.get("sampling_rate").and_then(|v| {
        let text = match v.get_ref() {
            DeValue::Float(f) => Some(f.as_str().replace('_', "")),
            DeValue::Integer(i) if i.radix() == 10 => Some(i.as_str().replace('_', "")),
            _ => None,
        };
        let r = text
            .and_then(|t| t.parse::<f64>().ok())
            .and_then(SamplingRate::from_f64);
        if r.is_none() {
            errs.push(
                &v.span(),
                format!(
                    "`sampling_rate` in {ctx} must be a number more than 0 and at most 1 (e.g. 0.1: one transaction in ten logged), at least 0.000001; valid: 0 < sampling_rate <= 1"
                ),
            );
        }
        r.map(|r| (r, v.span()))
    });
    if let Some((_, at)) = &rate {
        if !log {
            errs.push(
                at,
                format!("`sampling_rate` in {ctx} applies to the per-transaction log: add `latency_log = true`"),
            );
        }
    }
    if is_sql && (log || per_statement) {
        if let Some(v) = w.get("latency_log").or_else(|| w.get("per_statement")) {
            errs.push(
                &v.span(),
                format!(
                    "`latency_log` and `per_statement` in {ctx} are pgbench's (-l, -r): a sql_script runs through psql, which times each statement already; use builtin or pgbench_script"
                ),
            );
        }
    }
    (
        log.then(|| rate.map_or(SamplingRate::ALL, |(r, _)| r)),
        per_statement,
    )
}

/// The highest `rate` (pgbench -R, transactions per second in all).
pub const MAX_RATE: i64 = 10_000_000;

/// "50ms" or "2s" as milliseconds, 1 ms to 1 h.
fn parse_millis(s: &str) -> Option<u32> {
    let (n, unit) = match s.strip_suffix("ms") {
        Some(n) => (n, 1),
        None => (s.strip_suffix('s')?, 1000),
    };
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) || n.len() > 7 {
        return None;
    }
    let ms = n.parse::<u32>().ok()?.checked_mul(unit)?;
    (1..=3_600_000).contains(&ms).then_some(ms)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::Matrix;
    use super::*;

    #[test]
    fn rate_and_latency_limit_are_pgbench_options_of_a_workload() {
        let fs = "[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n";
        let m = parse(&format!(
            "name = \"m\"\n{WL}rate = 200\nlatency_limit = \"50ms\"\n{fs}"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.workloads[0].rate, Some(200));
        assert_eq!(m.workloads[0].latency_limit_ms, Some(50));
        let m = parse(&format!("name = \"m\"\n{WL}latency_limit = \"2s\"\n{fs}"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (m.workloads[0].rate, m.workloads[0].latency_limit_ms),
            (None, Some(2000))
        );
        for (extra, want) in [
            ("rate = 0\n", "`rate`"),
            ("rate = \"fast\"\n", "`rate`"),
            ("latency_limit = \"50\"\n", "\"50ms\" or \"2s\""),
            ("latency_limit = \"0ms\"\n", "1 ms to 1 h"),
            ("latency_limit = \"-5ms\"\n", "1 ms to 1 h"),
            ("latency_limit = \"2h\"\n", "1 ms to 1 h"),
        ] {
            let e = parse(&format!("name = \"m\"\n{WL}{extra}{fs}"))
                .expect_err(extra)
                .to_string();
            assert!(e.contains(want), "{extra}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("load.sql"), "SELECT 1;\n").unwrap();
        let sql = "[[workload]]\nname = \"s\"\nsql_script = \"load.sql\"\nrate = 10\n";
        let e = Matrix::parse(
            &dir.path().join("m.toml"),
            format!("name = \"m\"\n{sql}{fs}"),
        )
        .expect_err("rate on a sql script")
        .to_string();
        assert!(e.contains("psql"), "{e}");
        assert_eq!(parse_millis("1500ms"), Some(1500));
        assert_eq!(parse_millis("3600s"), Some(3_600_000));
        assert_eq!(parse_millis("3601s"), None);
        assert_eq!(parse_millis("1.5s"), None);
    }

    #[test]
    fn latency_log_sampling_rate_and_per_statement_of_a_workload() {
        let fs = "[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n";
        let wl = |extra: &str| parse(&format!("name = \"m\"\n{WL}{extra}{fs}"));
        let m = wl("latency_log = true\nsampling_rate = 0.1\nper_statement = true\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let r = m.workloads[0].latency_log.expect("latency_log");
        assert_eq!((r.to_string(), r.fraction()), ("0.1".to_string(), 0.1));
        assert!(m.workloads[0].per_statement);
        let m = wl("latency_log = true\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.workloads[0].latency_log, Some(SamplingRate::ALL));
        assert_eq!(SamplingRate::ALL.to_string(), "1");
        let m = wl("latency_log = true\nsampling_rate = 1\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(m.workloads[0].latency_log.unwrap().is_all());
        let m =
            wl("latency_log = true\nsampling_rate = 0.000_001\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.workloads[0].latency_log.unwrap().to_string(), "0.000001");
        let m = wl("").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (m.workloads[0].latency_log, m.workloads[0].per_statement),
            (None, false)
        );
        for (extra, want) in [
            (
                "latency_log = true\nsampling_rate = 0\n",
                "`sampling_rate` in [[workload]]",
            ),
            (
                "latency_log = true\nsampling_rate = 0.0\n",
                "0 < sampling_rate <= 1",
            ),
            (
                "latency_log = true\nsampling_rate = 1.5\n",
                "0 < sampling_rate <= 1",
            ),
            (
                "latency_log = true\nsampling_rate = -0.1\n",
                "0 < sampling_rate <= 1",
            ),
            (
                "latency_log = true\nsampling_rate = 0.0000001\n",
                "at least 0.000001",
            ),
            (
                "latency_log = true\nsampling_rate = nan\n",
                "0 < sampling_rate <= 1",
            ),
            (
                "latency_log = true\nsampling_rate = \"0.1\"\n",
                "0 < sampling_rate <= 1",
            ),
            ("sampling_rate = 0.1\n", "add `latency_log = true`"),
            ("latency_log = 1\n", "`latency_log` in [[workload]]"),
            (
                "per_statement = \"yes\"\n",
                "`per_statement` in [[workload]]",
            ),
        ] {
            let e = wl(extra).expect_err(extra).to_string();
            assert!(e.contains(want), "{extra}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("load.sql"), "SELECT 1;\n").unwrap();
        let sql = "[[workload]]\nname = \"s\"\nsql_script = \"load.sql\"\nper_statement = true\n";
        let e = Matrix::parse(
            &dir.path().join("m.toml"),
            format!("name = \"m\"\n{sql}{fs}"),
        )
        .expect_err("-r on a sql script")
        .to_string();
        assert!(e.contains("`per_statement`") && e.contains("psql"), "{e}");
    }
}
