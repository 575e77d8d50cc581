//! The stand-in conformance table (docs/standin-hosts.md, "Conformance table"), held
//! to the emulators: every emulator has a row, every row's emulator names the row's
//! source in its header (`# Revision: <repo> <path>@<rev>`), and every emulator parses
//! options as the row's getopt string says (run locally, no lab, no root needed).
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::STANDIN_FILES;

/// The docs page holding the table.
const DOC: &str = include_str!("../../../docs/standin-hosts.md");
const TABLE_HEADING: &str = "## Conformance table";
/// The repositories a row may cite.
const REPOS: &[&str] = &[
    "freebsd/freebsd-src",
    "openzfs/zfs",
    "DragonFlyBSD/DragonFlyBSD",
    "lileding/DragonFlyBSD",
];

/// Where an emulator today is looser or stricter than the real getopt string: (os,
/// command as in the table, the letters, what the emulator does with them, the audit id
/// or "conformance" for a difference this table found).  The behavioural test skips
/// those letters for that row AND checks that the difference is still there, so an entry
/// must go when its fix merges (the list must be empty for issue 25's final merge).
type Known = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);
#[rustfmt::skip]
const KNOWN_DIFFERENCES: &[Known] = &[
];

/// One row of the table.
#[derive(Debug, Clone)]
struct Row {
    os: String,
    /// Program and subcommand words, e.g. `zpool create`.
    command: String,
    /// `os/name` under src/lab/standin/.
    emulator: String,
    /// The real getopt string, or None when the program has no getopt (`—`).
    getopt: Option<String>,
    /// What the real program prints for an unknown letter; `%c` is the letter.
    diagnostic: String,
    /// Operands appended after the option, or Err(reason) to skip the probe.
    probe: Result<Vec<String>, String>,
    /// `repo path@rev` of every source the row follows (the source cell's backticked
    /// spans; the first holds the getopt string).
    sources: Vec<String>,
    line: usize,
}

/// The backticked spans of a cell.
fn ticks(cell: &str) -> Vec<String> {
    cell.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

fn one_tick(cell: &str, what: &str, line: usize) -> String {
    let t = ticks(cell);
    assert!(
        t.len() == 1,
        "docs/standin-hosts.md:{line}: the {what} cell must hold exactly one `backticked` value, not {cell:?}"
    );
    t[0].clone()
}

/// The table's rows, checked for form (each error names the docs line).
fn rows() -> Vec<Row> {
    let start = DOC
        .lines()
        .position(|l| l.trim() == TABLE_HEADING)
        .unwrap_or_else(|| panic!("docs/standin-hosts.md has no {TABLE_HEADING:?} section"));
    let mut out = Vec::new();
    let mut header_seen = false;
    for (i, l) in DOC.lines().enumerate().skip(start + 1) {
        let line = i + 1;
        if l.starts_with("## ") {
            break;
        }
        if !l.starts_with('|') {
            continue;
        }
        if l.chars().all(|ch| matches!(ch, '|' | '-' | ':' | ' ')) {
            continue;
        }
        let cells: Vec<&str> = l
            .trim()
            .trim_matches('|')
            .split(" | ")
            .map(str::trim)
            .collect();
        if !header_seen {
            assert_eq!(
                cells,
                [
                    "os",
                    "command",
                    "emulator",
                    "getopt",
                    "unknown option",
                    "probe",
                    "output format",
                    "exit codes",
                    "source@revision:line"
                ],
                "docs/standin-hosts.md:{line}: the conformance table's header"
            );
            header_seen = true;
            continue;
        }
        assert_eq!(
            cells.len(),
            9,
            "docs/standin-hosts.md:{line}: 9 cells, not {}: {l}",
            cells.len()
        );
        let getopt = if cells[3] == "—" {
            None
        } else {
            Some(one_tick(cells[3], "getopt", line))
        };
        let probe = if let Some(reason) = cells[5].strip_prefix("skip:") {
            assert!(
                reason.trim().len() > 10,
                "docs/standin-hosts.md:{line}: a skipped probe needs its reason"
            );
            Err(reason.trim().to_string())
        } else if cells[5] == "—" {
            Ok(Vec::new())
        } else {
            Ok(one_tick(cells[5], "probe", line)
                .split_whitespace()
                .map(str::to_string)
                .collect())
        };
        // The cell's `repo path@rev` spans are its sources (the first holds the getopt
        // string); other backticked words there are notes.
        let sources: Vec<String> = ticks(cells[8])
            .into_iter()
            .filter(|t| {
                t.split_once(' ')
                    .is_some_and(|(repo, _)| REPOS.contains(&repo))
            })
            .collect();
        assert!(
            ticks(cells[8]).first() == sources.first() && !sources.is_empty(),
            "docs/standin-hosts.md:{line}: the source cell must start with `repo path@rev` (repo one of {REPOS:?})"
        );
        for source in &sources {
            let rev = source.rsplit_once('@').map(|(_, r)| r).unwrap_or_default();
            assert!(
                rev.len() >= 8 && rev.bytes().all(|b| b.is_ascii_hexdigit())
                    || rev.starts_with("zfs-")
                    || rev.starts_with("release/"),
                "docs/standin-hosts.md:{line}: the revision of {source:?} must be a commit (8+ hex digits) or a release tag (zfs-X.Y.Z, release/X.Y.Z)"
            );
        }
        out.push(Row {
            os: cells[0].to_string(),
            command: one_tick(cells[1], "command", line),
            emulator: one_tick(cells[2], "emulator", line),
            getopt,
            diagnostic: one_tick(cells[4], "unknown option", line),
            probe,
            sources,
            line,
        });
    }
    assert!(!out.is_empty(), "the conformance table has no rows");
    out
}

/// The emulator's top comment block (the lines before the first non-comment line).
fn header(body: &str) -> Vec<&str> {
    body.lines().take_while(|l| l.starts_with('#')).collect()
}

fn emulator_body(name: &str) -> Option<&'static str> {
    STANDIN_FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, b)| *b)
}

#[test]
fn every_row_names_a_shipped_emulator_whose_header_cites_the_row_s_source() {
    let mut bad = Vec::new();
    for r in rows() {
        let Some(body) = emulator_body(&r.emulator) else {
            bad.push(format!(
                ":{} {} {}: no shipped emulator {:?}",
                r.line, r.os, r.command, r.emulator
            ));
            continue;
        };
        for source in &r.sources {
            let want = format!("# Revision: {source}");
            if !header(body).iter().any(|l| l.trim_end() == want) {
                bad.push(format!(
                    ":{} {} {}: {}'s header lacks {want:?}",
                    r.line, r.os, r.command, r.emulator
                ));
            }
        }
        if !r.emulator.starts_with(&format!("{}/", r.os)) && r.os != "dragonfly" {
            bad.push(format!(
                ":{} {}: a {} row uses {}",
                r.line, r.command, r.os, r.emulator
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "docs/standin-hosts.md conformance table:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_emulator_has_a_row_and_every_revision_line_a_row() {
    let rows = rows();
    let named: BTreeSet<&str> = rows.iter().map(|r| r.emulator.as_str()).collect();
    let mut missing = Vec::new();
    let mut stray = Vec::new();
    for (name, body) in STANDIN_FILES.iter().filter(|(n, _)| n.contains('/')) {
        if !named.contains(name) {
            missing.push(*name);
        }
        // A `# Revision:` line no row cites is a claim the table does not check.
        for l in header(body) {
            if let Some(src) = l.strip_prefix("# Revision: ") {
                if !rows
                    .iter()
                    .any(|r| r.emulator == *name && r.sources.iter().any(|s| s == src.trim_end()))
                {
                    stray.push(format!("{name}: {l}"));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "emulators without a conformance row: {missing:?}"
    );
    assert!(
        stray.is_empty(),
        "Revision lines no conformance row cites:\n{}",
        stray.join("\n")
    );
    let mut seen = BTreeSet::new();
    for r in &rows {
        assert!(
            seen.insert((r.os.clone(), r.command.clone())),
            "docs/standin-hosts.md:{}: {} {} twice",
            r.line,
            r.os,
            r.command
        );
    }
}

/// Runs `argv` with the emulators' real tools at /usr (FSMX_STANDIN_REAL), as nobody
/// when the test runs as root (an emulator given a valid flag may go on to act), with a
/// time limit; returns (exit code, stdout + stderr).
fn run(dir: &Path, argv: &[String]) -> (Option<i32>, String) {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false);
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "2", "20"]);
    if root {
        cmd.args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ]);
    }
    let out = cmd
        .args(argv)
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("HOME", dir)
        .env("LC_ALL", "C")
        .env("FSMX_STANDIN_REAL", "/usr")
        .env("FSMX_STANDIN_STATE", dir.join("state"))
        .stdin(Stdio::null())
        .output()
        .expect("run timeout(1) (coreutils) and setpriv(1) (util-linux)");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

/// A folder nobody can read holding `state/os` = OS and the emulators under their
/// BSD names (`bin/<command>` links: some read their name from $0).
fn sandbox(os: &str) -> (tempfile::TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("fsmx-conformance-")
        .tempdir()
        .expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let st = dir.path().join("state");
    std::fs::create_dir(&st).expect("state");
    std::fs::write(st.join("os"), format!("{os}\n")).expect("os");
    let emu = dir.path().join("emu");
    for (name, body) in STANDIN_FILES.iter().filter(|(n, _)| n.contains('/')) {
        let p = emu.join(name);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, body).expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    (dir, bin)
}

/// Letters a probe tries: every ASCII letter.
fn letters() -> impl Iterator<Item = char> {
    ('a'..='z').chain('A'..='Z')
}

#[test]
fn every_emulator_parses_options_as_the_real_getopt_string() {
    let rows = rows();
    for (os, cmd, letters, _, id) in KNOWN_DIFFERENCES {
        assert!(
            rows.iter().any(|r| r.os == *os && r.command == *cmd),
            "KNOWN_DIFFERENCES ({id}): no row {os} {cmd}"
        );
        assert!(!letters.is_empty(), "KNOWN_DIFFERENCES ({id}): no letters");
    }
    let mut skipped = Vec::new();
    let mut boxes = std::collections::BTreeMap::new();
    let mut probes = Vec::new();
    for r in &rows {
        let operands = match (&r.getopt, &r.probe) {
            (_, Err(reason)) => {
                skipped.push(format!("{} {}: {reason}", r.os, r.command));
                continue;
            }
            (None, Ok(_)) => {
                skipped.push(format!("{} {}: no getopt in the source", r.os, r.command));
                continue;
            }
            (Some(_), Ok(o)) => o.clone(),
        };
        let (dir, bin) = boxes.entry(r.os.clone()).or_insert_with(|| sandbox(&r.os));
        let prog = r.command.split_whitespace().next().expect("a command");
        let link = bin.join(prog);
        if !link.exists() {
            std::os::unix::fs::symlink(dir.path().join("emu").join(&r.emulator), &link)
                .expect("link");
        }
        probes.push((r, dir.path().to_path_buf(), link, operands));
    }
    // A skip is said, never silent.
    eprintln!("conformance probes skipped:\n  {}", skipped.join("\n  "));
    // Four rows at a time: some 3000 short runs in all.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some((r, dir, link, operands)) = probes.get(i) else {
                    break;
                };
                let found = probe_row(r, dir, link, operands);
                failures.lock().expect("lock").extend(found);
            });
        }
    });
    let mut failures = failures.into_inner().expect("lock");
    failures.sort();
    assert!(
        failures.is_empty(),
        "{} row(s) not as the real getopt:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every letter through one row's emulator: what differs from the row, one line.
fn probe_row(r: &Row, dir: &Path, link: &Path, operands: &[String]) -> Vec<String> {
    let mut failures = Vec::new();
    let getopt = r.getopt.as_deref().expect("probed rows have a getopt");
    // getopt's own prefix characters ('-', '+', ':') are not letters.
    let spec = getopt.trim_start_matches(['-', '+', ':']);
    let words = r.command.split_whitespace().skip(1);
    let known: Vec<&Known> = KNOWN_DIFFERENCES
        .iter()
        .filter(|(os, cmd, ..)| *os == r.os && *cmd == r.command)
        .collect();
    // Letters the emulator refuses though the source accepts them, and accepts
    // though the source refuses them (with the first such answer, for the message).
    let (mut stricter, mut looser, mut sample) = (String::new(), String::new(), String::new());
    for c in letters() {
        let pos = spec.find(c);
        let takes_arg = pos.is_some_and(|p| spec[p + c.len_utf8()..].starts_with(':'));
        let mut argv = vec![link.to_string_lossy().into_owned()];
        argv.extend(words.clone().map(str::to_string));
        argv.push(format!("-{c}"));
        if takes_arg {
            argv.push("fsmx-conformance-arg".into());
        }
        argv.extend(operands.iter().cloned());
        let (code, text) = run(dir, &argv);
        let diag = r.diagnostic.replace("%c", &c.to_string());
        let said = text.contains(&diag);
        let conforms = if pos.is_some() {
            !said
        } else {
            said && code != Some(0)
        };
        match (conforms, known.iter().find(|k| k.2.contains(c))) {
            (true, None) | (false, Some(_)) => {}
            (true, Some(k)) => failures.push(format!(
                "{} {} -{c}: the KNOWN_DIFFERENCES entry ({}) no longer holds: remove it",
                r.os, r.command, k.4
            )),
            (false, None) => {
                if pos.is_some() {
                    stricter.push(c)
                } else {
                    looser.push(c)
                }
                if sample.is_empty() {
                    sample = format!(
                        "-{c}: exit {code:?}: {}",
                        text.lines().take(2).collect::<Vec<_>>().join(" / ")
                    );
                }
            }
        }
    }
    if !stricter.is_empty() || !looser.is_empty() {
        failures.push(format!(
            "{} {} (docs/standin-hosts.md:{}, getopt {getopt:?}, unknown option {:?}): refuses what the source accepts: [{stricter}]; does not refuse as the source does: [{looser}]; e.g. {sample}",
            r.os, r.command, r.line, r.diagnostic
        ));
    }
    failures
}
