//! pgbench as a load generator: `pgbench -i` loads the tables once per
//! variant and workload, each cell runs `pgbench -b <builtin>` or
//! `pgbench -f <script>`; compared on tps, or under a fixed rate (`-R`)
//! on latency.  The parsers are [`super::pgbench_parse`] and
//! [`super::pgbench_log`].
use super::measures::{init_timings, measure_pgbench, Measured};
use super::scan::{lex, meta_use, sql_uses, CopyData, Tok};
use super::{Compared, Invocation, LiveSample, LoadGenerator, RunPrior, RunShape, ScriptVerb};
use crate::config::{Length, ScriptUse, WorkloadKind};
use crate::model::InitTimings;

/// pgbench, builtin or with a custom script.
pub struct Pgbench;

impl LoadGenerator for Pgbench {
    fn script_ext(&self) -> &'static str {
        "pgbench"
    }

    fn loads_in_run(&self) -> bool {
        false
    }

    fn load(&self, scale: Option<u64>) -> Invocation {
        let call = Invocation::new(ScriptVerb::Load);
        match scale {
            Some(s) => call.arg("scale", s.to_string()),
            None => call,
        }
    }

    fn measure_load(&self, stdout: &str, stderr: &str) -> Option<InitTimings> {
        init_timings(stdout, stderr)
    }

    fn run(&self, r: &RunShape) -> Invocation {
        let mut call = Invocation::new(ScriptVerb::Run);
        call = match (r.kind, r.script) {
            (WorkloadKind::Builtin { builtin }, _) => call.arg("builtin", builtin.as_str()),
            (_, Some(s)) => call.arg("script", s),
            (_, None) => call,
        };
        call = call
            .arg("clients", r.clients.to_string())
            .arg("jobs", r.jobs.to_string());
        call = match r.length {
            Length::Seconds(s) => call.arg("duration", s.to_string()),
            Length::Transactions(t) => call.arg("transactions", t.to_string()),
            Length::ToCompletion { .. } => call,
        };
        if let Some(rate) = r.rate {
            call = call.arg("rate", rate.to_string());
        }
        if let Some(ms) = r.latency_limit_ms {
            call = call.arg("latency_limit", ms.to_string());
        }
        // -l --sampling-rate: the log goes to <out>/txlog, the script's.
        if let Some(rate) = r.latency_log {
            call = call.arg("txlog", "1");
            if !rate.is_all() {
                call = call.arg("sampling_rate", rate.to_string());
            }
        }
        if r.per_statement {
            call = call.arg("per_statement", "1");
        }
        // Always -P 1 for the live view; kept in the bundle only when the
        // matrix asks for progress.
        call.arg("progress", if r.progress { "1" } else { "live" })
    }

    fn measure(
        &self,
        stdout: &str,
        stderr: &str,
        status: Option<i32>,
        _wall_ms: Option<f64>,
        length: Length,
    ) -> Measured {
        measure_pgbench(stdout, stderr, status, length)
    }

    fn live_sample(&self, line: &str) -> Option<LiveSample> {
        let rest = line.trim().strip_prefix("progress:")?;
        let p = super::pgbench_parse::parse_progress(rest)?;
        Some(LiveSample {
            t_s: p.t_s,
            tps: p.tps,
            lat_ms: p.lat_ms,
        })
    }

    fn compared_on(&self, rate: Option<u32>) -> Compared {
        // At a fixed rate the tps is the rate whatever the filesystem: the
        // latency under that load says what differs.
        if rate.is_some() {
            Compared::Latency
        } else {
            Compared::Throughput
        }
    }

    fn run_prior(&self, length: Length) -> RunPrior {
        match length {
            Length::Seconds(s) => RunPrior::Timed(s),
            _ => RunPrior::Open,
        }
    }

    fn script_uses(&self, text: &str) -> Vec<ScriptUse> {
        pgbench_script_uses(text)
    }
}

/// What a pgbench script does beyond its queries: `\shell` and
/// `\setshell` (pgbench(1) of PostgreSQL 15, "Meta Commands": the only two
/// that run a program; `\set`, `\sleep`, `\gset`, `\aset`, `\if` and the
/// pipeline commands stay inside pgbench), and the server-side SQL
/// features of [`super::scan::sql_uses`].
pub fn pgbench_script_uses(text: &str) -> Vec<ScriptUse> {
    let toks = lex(text, CopyData::None);
    let mut out: Vec<ScriptUse> = toks
        .iter()
        .filter_map(|l| {
            let Tok::Meta { name, .. } = &l.tok else {
                return None;
            };
            // The command pgbench itself reads there, not the lexer's name.
            let name = pgbench_command_name(text, l.line, l.column).unwrap_or(name.to_string());
            match name.to_ascii_lowercase().as_str() {
                "shell" => Some(meta_use(l, &name, "runs a shell command on the host")),
                "setshell" => Some(meta_use(
                    l,
                    &name,
                    "runs a shell command on the host (its output into a variable)",
                )),
                _ => None,
            }
        })
        .collect();
    out.extend(sql_uses(&toks));
    out.sort_by_key(|u| (u.line, u.column));
    out
}

/// The command pgbench runs for the meta-command whose backslash is at
/// `line`:`column` (1-based, columns in characters) of `text`, as pgbench
/// reads it: its backslash-command scanner takes the first word after the
/// backslash, skipping blanks and backslash-newline continuations first
/// (src/bin/pgbench/exprscan.l, INITIAL state; tried against pgbench 15:
/// `\  shell`, `\<tab>shell` and `\ \<newline> setshell` all run a shell
/// command), and compares it case-blind.  `None` when no backslash is there.
fn pgbench_command_name(text: &str, line: usize, column: usize) -> Option<String> {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.checked_sub(1)?)
        .map(str::len)
        .sum();
    let rest = text.get(start..)?;
    let off = rest.char_indices().nth(column.checked_sub(1)?)?.0;
    let b = &rest.as_bytes()[off..];
    if b.first() != Some(&b'\\') {
        return None;
    }
    let mut i = 1;
    loop {
        while b
            .get(i)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c'))
        {
            i += 1;
        }
        if b[i..].starts_with(b"\\\n") {
            i += 2;
        } else if b[i..].starts_with(b"\\\r\n") {
            i += 3;
        } else {
            break;
        }
    }
    let j = i + b[i..]
        .iter()
        .take_while(|c| !c.is_ascii_whitespace() && **c != b'\\')
        .count();
    Some(String::from_utf8_lossy(&b[i..j]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spellings pgbench 15 itself runs as `\shell` or `\setshell` (each
    /// tried with a command that leaves a mark): blanks or a continuation
    /// between the backslash and the name, another case.
    #[test]
    fn pgbench_reads_the_command_name_past_blanks_and_continuations() {
        for (text, line, want) in [
            ("\\  shell touch x\n", 1, "\\shell"),
            ("\\\tshell touch x\n", 1, "\\shell"),
            ("\\ \\\n  setshell v touch x\n", 1, "\\setshell"),
            ("\\ \\\r\n shell touch x\n", 1, "\\shell"),
            ("select 1;\n\\SHELL touch x\n", 2, "\\SHELL"),
        ] {
            let got: Vec<(usize, String)> = pgbench_script_uses(text)
                .into_iter()
                .map(|u| (u.line, u.feature))
                .collect();
            assert_eq!(got, vec![(line, want.to_string())], "{text:?}");
        }
        // Not a command: in a comment, or a name pgbench does not run.
        assert!(pgbench_script_uses("-- \\  shell x\nselect 1;\n").is_empty());
        assert!(pgbench_script_uses("\\ sleep 1 ms\n").is_empty());
    }

    #[test]
    fn pgbench_shell_and_setshell_and_server_features_are_found_with_their_line() {
        let text = "\\set aid random(1, 100000 * :scale)\n\
                    \\shell touch /tmp/x\n\
                    \\setshell v echo 1\n\
                    SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
                    -- \\shell not this\n\
                    select lo_export(1, '/tmp/y') \\gset\n\
                    \\sleep 1 ms\n";
        let got: Vec<(usize, String)> = pgbench_script_uses(text)
            .into_iter()
            .map(|u| (u.line, u.feature))
            .collect();
        assert_eq!(
            got,
            vec![
                (2, "\\shell".to_string()),
                (3, "\\setshell".to_string()),
                (6, "lo_export()".to_string()),
            ]
        );
        // pgbench reads no inline COPY data: what follows stays commands.
        let hidden = "copy t from stdin;\n\\shell id\n";
        assert_eq!(pgbench_script_uses(hidden).len(), 1);
    }
}
