//! A SQL script as a load generator: psql runs it once per cell, timing
//! each statement (`\timing`).  The script is the data load, so there is no
//! separate load phase and the sizes follow each run; its cells are
//! compared on the total load time.  The parser is [`super::psql_parse`].
use super::measures::{measure_psql, Measured};
use super::scan::{backquoted, lex, meta_use, sql_uses, CopyData, Tok};
use super::{Compared, Invocation, LoadGenerator, RunPrior, RunShape, ScriptVerb};
use crate::config::{Length, ScriptUse};
use crate::model::InitTimings;

/// `psql -f <script>`.
pub struct SqlScript;

impl LoadGenerator for SqlScript {
    fn script_ext(&self) -> &'static str {
        "sql"
    }

    fn loads_in_run(&self) -> bool {
        true
    }

    /// Never called (each run loads its own data); the bare verb.
    fn load(&self, _scale: Option<u64>) -> Invocation {
        Invocation::new(ScriptVerb::Load)
    }

    fn measure_load(&self, _stdout: &str, _stderr: &str) -> Option<InitTimings> {
        None
    }

    /// The script verb `load` with `sql=`: the run is the data load.
    fn run(&self, r: &RunShape) -> Invocation {
        let call = Invocation::new(ScriptVerb::Load);
        match r.script {
            Some(s) => call.arg("sql", s),
            None => call,
        }
    }

    fn measure(
        &self,
        stdout: &str,
        _stderr: &str,
        status: Option<i32>,
        wall_ms: Option<f64>,
        _length: Length,
    ) -> Measured {
        measure_psql(stdout, status, wall_ms)
    }

    fn compared_on(&self, _rate: Option<u32>) -> Compared {
        Compared::LoadTime
    }

    fn run_prior(&self, _length: Length) -> RunPrior {
        RunPrior::Open
    }

    fn script_uses(&self, text: &str) -> Vec<ScriptUse> {
        psql_script_uses(text)
    }
}

/// What the host refuses in a psql script its owner has not allowed to run
/// commands: psql runs such a script under `\restrict` (common.sh
/// `sql_run`), which refuses every backslash command however it is spelled
/// or built, so every meta-command is named here, as an early warning with
/// its file:line:col (the barrier is psql's, not this scan).
const RESTRICTED: &str = "is a psql backslash command: on a host whose owner has not allowed \
                          script commands psql runs the script under \\restrict, which \
                          refuses every one";

/// What a psql script does beyond its queries: every meta-command (what
/// the dangerous ones do: run a program, reach a file, connect elsewhere or
/// run SQL no scanner reads, psql(1) of PostgreSQL 15, "Meta-Commands"; the
/// others are refused by `\restrict` all the same), text in backquotes in
/// any meta-command's argument (given to the shell), and the server-side
/// SQL features of [`super::scan::sql_uses`].
pub fn psql_script_uses(text: &str) -> Vec<ScriptUse> {
    let toks = lex(text, CopyData::Inline);
    let mut out = Vec::new();
    for l in &toks {
        let Tok::Meta { name, args } = &l.tok else {
            continue;
        };
        if let Some(u) = backquoted(l, args) {
            out.push(u);
        }
        out.push(meta_use(
            l,
            name,
            psql_meta(name, args).unwrap_or(RESTRICTED),
        ));
    }
    out.extend(sql_uses(&toks));
    out.sort_by_key(|u| (u.line, u.column));
    out
}

/// What the psql meta-command `\name args` does beyond psql itself, if
/// anything.
fn psql_meta(name: &str, args: &str) -> Option<&'static str> {
    let args = args.trim();
    const SHELL: &str = "runs a shell command on the host";
    const FILE: &str = "reads or writes a file on the host";
    // `\g (format=csv) file`: the options first.
    let target = |a: &str| -> String {
        let a = a.trim();
        match a.strip_prefix('(') {
            Some(rest) => rest
                .split_once(')')
                .map(|(_, t)| t)
                .unwrap_or("")
                .trim()
                .to_string(),
            None => a.to_string(),
        }
    };
    match name {
        "!" => Some(SHELL),
        "copy" => {
            let lower = args.to_ascii_lowercase();
            let words: Vec<&str> = lower
                .split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
                .filter(|w| !w.is_empty())
                .collect();
            if words.contains(&"program") {
                return Some(SHELL);
            }
            // `\copy t from|to WHERE`: stdin, stdout, pstdin, pstdout stay psql's own.
            let place = words
                .iter()
                .rposition(|w| *w == "from" || *w == "to")
                .and_then(|i| words.get(i + 1));
            match place {
                Some(p) if ["stdin", "stdout", "pstdin", "pstdout"].contains(p) => None,
                _ => Some(FILE),
            }
        }
        "o" | "out" | "g" | "gx" | "w" | "write" => {
            let t = target(args);
            if t.starts_with('|') {
                Some(SHELL)
            } else if t.is_empty() {
                None
            } else {
                Some(FILE)
            }
        }
        "s" if !args.is_empty() => Some(FILE),
        "i" | "include" | "ir" | "include_relative" => {
            Some("reads another file as SQL (which is not scanned)")
        }
        "lo_import" | "lo_export" => Some(FILE),
        "cd" => Some("changes psql's folder on the host"),
        "e" | "edit" | "ef" | "ev" => Some("runs an editor on the host"),
        "setenv" => Some("sets the environment of the programs psql runs"),
        "gexec" => Some("runs each result as SQL (which no scanner reads)"),
        "c" | "connect" => Some("connects as another role or to another server"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(text: &str) -> Vec<(usize, String)> {
        psql_script_uses(text)
            .into_iter()
            .map(|u| (u.line, u.feature))
            .collect()
    }

    #[test]
    fn every_psql_meta_command_is_found_with_its_line_and_what_the_dangerous_ones_do() {
        let text = "\\timing on\n\
                    select 1;\n\
                    \\! id -u > /tmp/x\n\
                    \\copy t to program 'gzip > x'\n\
                    \\copy t from '/etc/passwd'\n\
                    \\copy t from stdin\n\
                    \\o |cat\n\
                    \\o /tmp/out\n\
                    \\o\n\
                    select 2 \\g (format=csv) |sh\n\
                    select 3 \\gx\n\
                    \\set x `id`\n\
                    \\i other.sql\n\
                    \\lo_import /etc/shadow\n\
                    \\cd /\n\
                    \\setenv PAGER x\n\
                    select 'x' \\gexec\n\
                    \\c - postgres\n\
                    \\w /tmp/q\n\
                    \\e\n\
                    -- \\! not this\n\
                    select '\\! nor this';\n\
                    COPY t TO PROGRAM 'x';\n";
        let got = features(text);
        let got: Vec<(usize, &str)> = got.iter().map(|(l, f)| (*l, f.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (1, "\\timing"),
                (3, "\\!"),
                (4, "\\copy"),
                (5, "\\copy"),
                (6, "\\copy"),
                (7, "\\o"),
                (8, "\\o"),
                (9, "\\o"),
                (10, "\\g"),
                (11, "\\gx"),
                (12, "`…` in a meta-command's argument"),
                (12, "\\set"),
                (13, "\\i"),
                (14, "\\lo_import"),
                (15, "\\cd"),
                (16, "\\setenv"),
                (17, "\\gexec"),
                (18, "\\c"),
                (19, "\\w"),
                (20, "\\e"),
                (23, "COPY … PROGRAM"),
            ]
        );
        let u = &psql_script_uses("select 1;\n  \\! true\n")[0];
        assert_eq!(
            (u.line, u.column, u.what),
            (2, 3, "runs a shell command on the host")
        );
        // A harmless one is named for what \restrict does to it.
        let u = &psql_script_uses("select 1 \\gset\n")[0];
        assert_eq!((u.line, u.what), (1, RESTRICTED));
    }

    #[test]
    fn the_example_scripts_use_nothing_that_needs_consent() {
        // (Every meta-command needs it: matrix/sql/dataload.sql leaves
        // `\timing on` to fsmatrix.)
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix/sql");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).expect("matrix/sql").flatten() {
            let text = std::fs::read_to_string(e.path()).expect("a script");
            let uses = if e.path().extension().is_some_and(|x| x == "sql") {
                psql_script_uses(&text)
            } else {
                super::super::pgbench::pgbench_script_uses(&text)
            };
            assert_eq!(uses, vec![], "{}", e.path().display());
            n += 1;
        }
        assert!(n > 0);
    }
}
