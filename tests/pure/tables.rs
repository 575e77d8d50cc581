//! The OS and filesystem rows (`config/os.rs`, `config/fs.rs`) held to the
//! remote scripts, and the scripts' hook interface (declared in `common.sh`)
//! held to every OS script and to `docs/remote-scripts.md`.
use std::collections::BTreeSet;
use std::path::PathBuf;

use fsmatrix::config::fs::FsSpec;
use fsmatrix::config::os::PROFILES;
use fsmatrix::config::FsType;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The words of `NAME="a b c"` in a script.
fn declared(script: &str, name: &str) -> BTreeSet<String> {
    let prefix = format!("{name}=\"");
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {name}= line"));
    line.trim_end_matches('"')
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The functions a script defines (`name() {` at the start of a line).
fn functions(script: &str) -> BTreeSet<String> {
    script
        .lines()
        .filter_map(|l| l.strip_suffix("() {"))
        .filter(|n| {
            n.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
        .map(str::to_string)
        .collect()
}

/// A script's code lines (no comment lines, no trailing comments).
fn code(script: &str) -> String {
    script
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| l.split(" #").next().unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

fn has_word(text: &str, word: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| w == word)
}

/// The patterns of every `case` arm in a script: `a | b)` gives a, b.
fn arm_words(script: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, l) in code(script).lines().enumerate() {
        let t = l.trim_start();
        if t.starts_with('(') {
            continue;
        }
        let Some((pats, _)) = t.split_once(')') else {
            continue;
        };
        if pats.contains(['(', '=', '"', '$', '[', ' ']) && !pats.contains(" | ") {
            continue;
        }
        for p in pats.split('|') {
            out.push((n + 1, p.trim().to_string()));
        }
    }
    out
}

#[test]
fn every_os_script_defines_each_hook_common_sh_declares() {
    let common = read("remote-scripts/common.sh");
    let hooks = declared(&common, "FSMX_HOOKS");
    let zfs_hooks = declared(&common, "FSMX_ZFS_HOOKS");
    let optional = declared(&common, "FSMX_OPTIONAL_HOOKS");
    let common_fns = functions(&common);
    let common_code = code(&common);
    for h in optional.iter() {
        assert!(common_fns.contains(h), "common.sh: no default {h}");
    }
    for h in hooks.iter().chain(&zfs_hooks) {
        assert!(
            !common_fns.contains(h),
            "common.sh defines the hook {h} itself"
        );
        assert!(
            has_word(&common_code, h)
                || h == "zfs_txg_timeout" && common_code.contains("$(zfs_txg_timeout)"),
            "common.sh never calls the hook {h}"
        );
    }
    for p in &PROFILES {
        let script = read(&format!("remote-scripts/{}", p.script));
        let fns = functions(&script);
        for h in &hooks {
            assert!(fns.contains(h), "{}: no hook {h}", p.script);
        }
        for h in &zfs_hooks {
            assert_eq!(
                fns.contains(h),
                p.offers(FsType::Zfs),
                "{}: {h} is defined exactly when its OS offers zfs",
                p.script
            );
        }
        // And nothing else of the script is called by common.sh: a function
        // common.sh calls that the OS script defines is a declared hook.
        for f in fns.difference(&common_fns) {
            if f.starts_with("verb_") {
                continue;
            }
            if has_word(&common_code, f) {
                assert!(
                    hooks.contains(f) || zfs_hooks.contains(f),
                    "{}: common.sh calls {f}, which FSMX_HOOKS does not declare",
                    p.script
                );
            }
        }
        for f in fns.intersection(&common_fns) {
            assert!(
                optional.contains(f),
                "{}: replaces common.sh's {f}, not an optional hook",
                p.script
            );
        }
    }
}

#[test]
fn the_contract_documents_exactly_the_declared_hooks() {
    let common = read("remote-scripts/common.sh");
    let mut hooks = declared(&common, "FSMX_HOOKS");
    hooks.extend(declared(&common, "FSMX_ZFS_HOOKS"));
    hooks.extend(declared(&common, "FSMX_OPTIONAL_HOOKS"));
    let doc = read("docs/remote-scripts.md");
    let section = doc
        .split("\n## Hooks\n")
        .nth(1)
        .expect("docs/remote-scripts.md has a `## Hooks` section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let listed: BTreeSet<String> = section
        .lines()
        .filter_map(|l| l.strip_prefix("- `"))
        .filter_map(|l| l.split([' ', '`']).next())
        .map(str::to_string)
        .collect();
    assert_eq!(listed, hooks);
}

#[test]
fn each_script_reports_the_tools_of_its_os_row() {
    for p in &PROFILES {
        let script = read(&format!("remote-scripts/{}", p.script));
        let line = script
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("facts_pg_tools \""))
            .unwrap_or_else(|| panic!("{}: no facts_pg_tools line", p.script));
        let reported: BTreeSet<&str> = line.split('"').next().unwrap().split_whitespace().collect();
        let mut expected: BTreeSet<&str> =
            p.filesystems.iter().map(|f| FsSpec::of(*f).tool).collect();
        expected.extend(p.extra_tools.iter().copied());
        assert_eq!(
            reported, expected,
            "{}: facts tools vs its OS row",
            p.script
        );
    }
}

#[test]
fn each_script_has_case_arms_for_exactly_its_filesystems() {
    for p in &PROFILES {
        let script = read(&format!("remote-scripts/{}", p.script));
        let offered: BTreeSet<&str> = p.filesystems.iter().map(|f| f.as_str()).collect();
        // check_fs: the arm that accepts is the OS row's filesystems.
        let body = script
            .split("\ncheck_fs() {\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{}: no check_fs", p.script));
        let body = body.split("\n}\n").next().unwrap();
        let accepted: BTreeSet<&str> = body
            .lines()
            .find(|l| l.trim_end().ends_with(") ;;") && !l.trim_start().starts_with('*'))
            .unwrap_or_else(|| panic!("{}: check_fs has no accepting arm", p.script))
            .trim()
            .trim_end_matches(") ;;")
            .split('|')
            .map(str::trim)
            .collect();
        assert_eq!(
            accepted, offered,
            "{}: check_fs arms vs its OS row",
            p.script
        );
        // No arm anywhere names a filesystem type the OS does not offer.
        for (line, w) in arm_words(&script) {
            if let Some(t) = FsType::parse(&w) {
                assert!(
                    p.offers(t),
                    "{}:{line}: a case arm for {w}, which {} does not offer",
                    p.script,
                    p.name
                );
            }
        }
        // Where a script names the making tool per type, it is the row's.
        for l in script.lines() {
            let t = l.trim();
            if let Some((fs, rest)) = t.split_once(") _mf_tool=") {
                let tool = rest.trim_end_matches(" ;;");
                let fs = FsType::parse(fs.trim()).expect("a filesystem type");
                assert_eq!(tool, FsSpec::of(fs).tool, "{}: {t}", p.script);
            }
        }
    }
}

#[test]
fn every_os_row_has_its_script() {
    for p in &PROFILES {
        let script = read(&format!("remote-scripts/{}", p.script));
        assert!(
            script.contains(". \"$(dirname \"$0\")/common.sh\"") || script.contains("common.sh"),
            "{}",
            p.script
        );
    }
}

/// The names of `docs/remote-scripts.md`'s "Arguments by name" table
/// (a row may name two: `` `clients`, `jobs` ``).
fn documented_args(doc: &str) -> BTreeSet<String> {
    let table = doc
        .split("## Arguments by name")
        .nth(1)
        .expect("docs/remote-scripts.md has an `## Arguments by name` section");
    let mut names = BTreeSet::new();
    for row in table.lines().skip_while(|l| !l.starts_with('|')) {
        let Some(cells) = row.strip_prefix('|') else {
            break;
        };
        let first = cells.split('|').next().unwrap_or("");
        for part in first.split('`').skip(1).step_by(2) {
            if part != "name" {
                names.insert(part.to_string());
            }
        }
    }
    names
}

/// Every argument name the scripts accept (`FSMX_ARG_NAMES`, which
/// `check_args` enforces) has its row in the docs and no row names another;
/// and every `name=` the orchestrator sends in the golden command logs
/// (`plan --commands`, one per OS) is one the scripts accept.
#[test]
fn argument_names_are_the_scripts_the_docs_and_the_callers_alike() {
    let accepted = declared(&read("remote-scripts/common.sh"), "FSMX_ARG_NAMES");
    let documented = documented_args(&read("docs/remote-scripts.md"));
    assert_eq!(
        accepted.difference(&documented).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "accepted by common.sh but not in the docs' table"
    );
    assert_eq!(
        documented.difference(&accepted).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "in the docs' table but refused by common.sh's check_args"
    );
    let mut sent = BTreeSet::new();
    for os in PROFILES {
        let log = read(&format!(
            "tests/pure/snapshots/pure__plan_cli__commands_{}.snap",
            os.os.as_str()
        ));
        let script = format!("/{}.sh ", os.os.as_str());
        for line in log
            .lines()
            .filter(|l| l.starts_with("$ ") && l.contains(&script))
        {
            let rest = line.split(&script).nth(1).unwrap_or("");
            // verb, then name=value words (values here hold no spaces
            // before the first `=` of the next word).
            for word in rest.split_whitespace().skip(1) {
                if let Some((name, _)) = word.split_once('=') {
                    if name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') && !name.is_empty()
                    {
                        sent.insert(name.trim_start_matches('\'').to_string());
                    }
                }
            }
        }
    }
    assert!(
        sent.len() > 20,
        "the command logs name few arguments: {sent:?}"
    );
    assert_eq!(
        sent.difference(&accepted).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "sent by the orchestrator but refused by common.sh's check_args"
    );
}
