//! The load generators' script readers held to the real programs: every
//! script of a corpus of tricky spellings runs through Debian's pgbench
//! against a throwaway PostgreSQL with a `\shell` (or `\setshell`) that
//! leaves a mark, and whatever pgbench ran a command for, fsmatrix's reader
//! must have named (issue 39: pgbench has no restricted mode, so its reader
//! is the barrier, and it may never be kinder than pgbench).
mod support;

// Without root the suite says so and is skipped (the cluster runs as postgres).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root;

use std::process::Command;

use fsmatrix::generator::pgbench::pgbench_script_uses;
use support::pg::{pg_bin, Postgres};

/// Scripts, `MARK` standing for the file the command touches.
const CORPUS: &[&str] = &[
    "\\shell touch MARK\n",
    "\\SHELL touch MARK\n",
    "\\  shell touch MARK\n",
    "\\\tshell touch MARK\n",
    "\\ \\\n  shell touch MARK\n",
    "\\ \\\n  setshell v touch MARK\n",
    "\\shell touch \\\nMARK\n",
    "select 1 \\\n\\shell touch MARK\n",
    "select 1;\\\n\\shell touch MARK\n",
    "select 1; -- \\\n\\shell touch MARK\n",
    "-- comment \\\n\\shell touch MARK\n",
    "select '\\' \\shell touch MARK\n",
    "select $$ \\ $$; \\shell touch MARK\n",
    "select 1 /* \\ */ \\shell touch MARK\n",
    "\\set x 1 + \\\n 2\n\\shell touch MARK\n",
    "\\set x 1 \\\n\n\\shell touch MARK\n",
    "\\sleep 1 \\\nms\n\\shell touch MARK\n",
    "\\\n\\shell touch MARK\n",
    // Ones pgbench refuses or reads as no command: nothing may run.
    "\\shel\\\nl touch MARK\n",
    "\\set x 1 \\\n\\shell touch MARK\n",
    "-- \\shell touch MARK\nselect 1;\n",
];

#[test]
fn every_command_pgbench_runs_is_one_the_reader_names() {
    let pg = Postgres::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ran = 0;
    for (i, script) in CORPUS.iter().enumerate() {
        let mark = dir.path().join(format!("mark{i}"));
        let text = script.replace("MARK", &mark.display().to_string());
        let file = dir.path().join(format!("s{i}.pgbench"));
        std::fs::write(&file, &text).expect("write");
        let out = Command::new(pg_bin().join("pgbench"))
            .args(["-n", "-t", "1", "-h"])
            .arg(pg.dir())
            .args(["-p", &pg.port.to_string(), "-U", "postgres", "-f"])
            .arg(&file)
            .arg("postgres")
            .output()
            .expect("run pgbench");
        let found = pgbench_script_uses(&text);
        let named = found.iter().any(|u| {
            u.feature.eq_ignore_ascii_case("\\shell")
                || u.feature.eq_ignore_ascii_case("\\setshell")
        });
        if mark.exists() {
            ran += 1;
            assert!(
                named,
                "pgbench ran a command the reader did not name: {text:?}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    // The corpus is worth something only if pgbench ran most of it.
    assert!(
        ran >= 15,
        "pgbench ran a command for only {ran} of {} scripts",
        CORPUS.len()
    );
    eprintln!(
        "pgbench ran a command for {ran} of {} scripts; the reader named each",
        CORPUS.len()
    );
}
