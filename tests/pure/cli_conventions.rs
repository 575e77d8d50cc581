//! The CLI's conventions: `inventory import` end to end (an Ansible
//! inventory in, an fsmatrix inventory out that `plan` refuses until its
//! devices are filled in), shell completions and the man page generated
//! from the CLI definition, `-q` and `-v` together refused.
use std::path::PathBuf;

use assert_cmd::Command;
use predicates::prelude::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fsmatrix() -> Command {
    let mut c = Command::cargo_bin("fsmatrix").expect("binary built");
    c.current_dir(root());
    c
}

#[test]
fn each_ansible_format_imports_to_an_inventory_refused_until_devices_are_filled_in() {
    let tmp = tempfile::tempdir().unwrap();
    for fixture in ["hosts.ini", "hosts.yml", "list.json"] {
        let out = tmp.path().join(format!("{fixture}.toml"));
        let o = fsmatrix()
            .args(["inventory", "import"])
            .arg(format!("tests/fixtures/ansible/{fixture}"))
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{fixture}: {err}");
        assert!(err.contains("4 hosts imported"), "{fixture}: {err}");
        // The control node (ansible_connection=local) is skipped, said so.
        assert!(err.contains("localhost"), "{fixture}: {err}");
        let text = std::fs::read_to_string(&out).unwrap();
        for host in ["deb12-kvm", "deb12-metal", "alma9", "fbsd14"] {
            assert!(
                text.contains(&format!("name = \"{host}\"")),
                "{fixture}: {text}"
            );
        }
        assert!(text.contains("os = \"freebsd\""), "{fixture}: {text}");
        // As imported, the plan refuses it: no device is named.
        fsmatrix()
            .args(["plan", "-i"])
            .arg(&out)
            .args(["-m", "matrix/quick.toml"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("devices"));
        // Devices filled in: it plans.
        let filled = text.replace("devices = []", "devices = [\"/dev/vdb\"]");
        assert_ne!(filled, text, "{fixture}: no `devices = []` placeholder");
        std::fs::write(&out, filled).unwrap();
        fsmatrix()
            .args(["plan", "-i"])
            .arg(&out)
            .args(["-m", "matrix/quick.toml"])
            .assert()
            .success()
            .stdout(predicate::str::contains("on 4 hosts"));
        // An existing file is never overwritten.
        fsmatrix()
            .args(["inventory", "import"])
            .arg(format!("tests/fixtures/ansible/{fixture}"))
            .arg("--out")
            .arg(&out)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("cannot create"));
    }
    fsmatrix()
        .args(["inventory", "import", "tests/fixtures/ansible/nosuch.ini"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot read"));
}

#[test]
fn completions_and_the_man_page_come_from_the_cli_definition() {
    for (shell, needle) in [
        ("bash", "_fsmatrix()"),
        ("zsh", "#compdef fsmatrix"),
        ("fish", "complete -c fsmatrix"),
    ] {
        let o = fsmatrix().args(["completions", shell]).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{shell}");
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains(needle), "{shell}: {text}");
        // Every subcommand is completed.
        for sub in ["plan", "run", "resume", "submit", "agent", "inventory"] {
            assert!(text.contains(sub), "{shell}: {sub} missing");
        }
    }
    fsmatrix()
        .args(["completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("possible values"));
    let o = fsmatrix().arg("man").output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let man = String::from_utf8_lossy(&o.stdout);
    assert!(
        man.starts_with(".ie") || man.contains(".TH fsmatrix"),
        "{man}"
    );
    assert!(
        man.contains("fsmatrix\\-run") || man.contains("run"),
        "{man}"
    );
}

/// Every manual page has EXIT STATUS (each of `Exit`'s codes with its
/// meaning), ENVIRONMENT (NO_COLOR, FSMATRIX_LOG, FSMATRIX_DB, …), FILES and
/// EXAMPLES sections, from one source (`commands::manual`); every page has
/// examples of its own, and each example parses as the command it shows.
#[test]
fn every_man_page_has_exit_status_environment_files_and_examples() {
    use clap::{CommandFactory, Parser};
    use fsmatrix::commands::{manual, Cli, Exit};
    let tmp = tempfile::tempdir().expect("tempdir");
    fsmatrix()
        .args(["man", "--dir"])
        .arg(tmp.path())
        .assert()
        .code(0);
    let pages = manual::pages(Cli::command());
    assert!(pages.len() > 20, "{pages:?}");
    for path in &pages {
        let file = if path.is_empty() {
            "fsmatrix.1".to_string()
        } else {
            format!("fsmatrix-{}.1", path.replace(' ', "-"))
        };
        let text = std::fs::read_to_string(tmp.path().join(&file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut at = 0;
        for section in [
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH FILES",
            ".SH EXAMPLES",
        ] {
            let i = text[at..]
                .find(section)
                .unwrap_or_else(|| panic!("{file}: no {section} after the others"));
            at += i + section.len();
        }
        for e in Exit::ALL {
            assert!(
                text.contains(&format!(".TP\n\\fB{}\\fR\n", e.code())),
                "{file}: exit status {}",
                e.code()
            );
        }
        for var in ["NO_COLOR", "FSMATRIX_LOG", "FSMATRIX_DB", "SSH_AUTH_SOCK"] {
            assert!(text.contains(&format!("\\fB{var}\\fR")), "{file}: {var}");
        }
        let examples: Vec<&str> = manual::EXAMPLES
            .iter()
            .filter(|(p, _, _)| p == path)
            .map(|(_, line, _)| *line)
            .collect();
        assert!(!examples.is_empty(), "{file}: no example of its own");
        for line in examples {
            let words: Vec<&str> = line.split_whitespace().collect();
            let prefix: Vec<&str> = std::iter::once("fsmatrix")
                .chain(path.split_whitespace())
                .collect();
            assert!(
                words.starts_with(&prefix),
                "{file}: `{line}` is not `{}`",
                prefix.join(" ")
            );
            if let Err(e) = Cli::try_parse_from(&words) {
                panic!("{file}: the example `{line}` does not parse: {e}");
            }
            assert!(
                text.contains(&line.replace('-', "\\-")),
                "{file}: `{line}` is not on the page"
            );
        }
    }
    // fsmatrix(1) on stdout is the same page.
    let o = fsmatrix().arg("man").output().expect("man");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(".SH EXAMPLES") && text.contains("lab up \\-\\-install"),
        "{text}"
    );
    // Every environment variable the program reads is in the table.
    let named: Vec<&str> = manual::ENVIRONMENT
        .iter()
        .flat_map(|(n, _)| n.split(", "))
        .collect();
    for v in [
        "NO_COLOR",
        "FSMATRIX_LOG",
        "FSMATRIX_DB",
        "PGPASSFILE",
        "SSH_AUTH_SOCK",
        "HOME",
        "XDG_RUNTIME_DIR",
        "USER",
        "LOGNAME",
    ] {
        assert!(
            named.contains(&v),
            "{v} missing from commands::manual::ENVIRONMENT"
        );
    }
}

#[test]
fn quiet_and_verbose_together_are_refused() {
    fsmatrix()
        .args([
            "-q",
            "-v",
            "plan",
            "-i",
            "inventory/lab.toml",
            "-m",
            "matrix/quick.toml",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
}

/// `run` says where each value it took from an ssh config came from, as
/// `plan` and `check` do, before it connects (here to a closed port on
/// loopback: nothing runs, exit 2).
#[test]
fn run_says_where_its_ssh_config_values_came_from() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("ssh_config");
    std::fs::write(
        &config,
        "Host bench-closed\n    HostName 127.0.0.1\n    Port 1\n    User root\n",
    )
    .unwrap();
    let known = tmp.path().join("known_hosts");
    std::fs::write(&known, "").unwrap();
    let key = tmp.path().join("id_ed25519");
    std::fs::write(&key, "").unwrap();
    let inv = tmp.path().join("inventory.toml");
    std::fs::write(
        &inv,
        format!(
            "ssh_config = {:?}\n[defaults]\nos = \"linux\"\nknown_hosts = {:?}\nidentity_file = {:?}\n\
             [[host]]\nname = \"one\"\naddress = \"bench-closed\"\ndevices = [\"/dev/vdb\"]\n",
            config.display(),
            known.display(),
            key.display()
        ),
    )
    .unwrap();
    let o = fsmatrix()
        .args(["run", "-i"])
        .arg(&inv)
        .arg("--ssh-config")
        .arg(&config)
        .args(["-m", "matrix/quick.toml", "--out"])
        .arg(tmp.path().join("out"))
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("one: address 127.0.0.1"), "{err}");
    assert!(err.contains("HostName"), "{err}");
    assert!(err.contains("port 1"), "{err}");
}

/// `fsmatrix man --dir D` writes the top page and one page per subcommand
/// (nested ones too), and every page the top page names exists.
#[test]
fn man_writes_every_page() {
    let dir = tempfile::tempdir().unwrap();
    fsmatrix()
        .args(["man", "--dir"])
        .arg(dir.path())
        .assert()
        .success();
    let top = std::fs::read_to_string(dir.path().join("fsmatrix.1")).expect("fsmatrix.1");
    let cmd = <fsmatrix::commands::Cli as clap::CommandFactory>::command();
    let mut want = Vec::new();
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        want.push(format!("fsmatrix-{}.1", sub.get_name()));
        for nested in sub.get_subcommands().filter(|s| s.get_name() != "help") {
            want.push(format!(
                "fsmatrix-{}-{}.1",
                sub.get_name(),
                nested.get_name()
            ));
        }
    }
    assert!(want.len() > 20, "{want:?}");
    for page in &want {
        let text = std::fs::read_to_string(dir.path().join(page))
            .unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH "), "{page} is not a manual page");
    }
    // The top page names the subcommand pages it has.
    assert!(top.contains("fsmatrix\\-report(1)"), "{top}");
    assert!(dir.path().join("fsmatrix-lab-up.1").is_file());
    // Not a folder: refused with exit 2, nothing written.
    fsmatrix()
        .args(["man", "--dir"])
        .arg(dir.path().join("nosuch"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("give an existing folder"));
}

/// A pipe whose reader has already gone: every write to it fails with
/// EPIPE (or raises SIGPIPE), whatever the timing.
fn closed_pipe() -> std::process::Stdio {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills both descriptors, each owned once below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe(2)");
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    writer.into()
}

/// Every command that can run here, with what it prints on stdout, and its
/// exit code when the output is read: `check` of a host whose port is
/// closed stands for the commands that contact a host and fail (1: not
/// ready).
fn commands_that_print(tmp: &std::path::Path) -> Vec<(Vec<String>, i32)> {
    let bundle = "tests/fixtures/bundle-v1";
    let plan = [
        "plan",
        "-i",
        "inventory/lab.toml",
        "-m",
        "matrix/quick.toml",
    ];
    let closed = tmp.join("closed.toml");
    std::fs::write(
        &closed,
        "[defaults]\nos = \"linux\"\n[[host]]\nname = \"one\"\naddress = \"127.0.0.1\"\n\
         port = 1\ndevices = [\"/dev/vdb\"]\n",
    )
    .unwrap();
    let mut rows: Vec<(Vec<&str>, i32)> = vec![
        (plan.to_vec(), 0),
        ([&plan[..], &["--json"]].concat(), 0),
        ([&plan[..], &["--commands"]].concat(), 0),
        (vec!["verify", bundle], 0),
        (vec!["ls", "tests/fixtures"], 0),
        (vec!["completions", "bash"], 0),
        (vec!["man"], 0),
        (
            vec!["inventory", "import", "tests/fixtures/ansible/hosts.ini"],
            0,
        ),
        (vec!["--help"], 0),
        (vec!["report", "--help"], 0),
        (vec!["--version"], 0),
    ];
    for format in ["md", "json", "csv", "summary", "html"] {
        rows.push((vec!["report", "--format", format, bundle], 0));
    }
    let mut rows: Vec<(Vec<String>, i32)> = rows
        .into_iter()
        .map(|(a, c)| (a.into_iter().map(String::from).collect(), c))
        .collect();
    rows.push((
        vec![
            "check".into(),
            "-i".into(),
            closed.display().to_string(),
            "-m".into(),
            "matrix/quick.toml".into(),
        ],
        1,
    ));
    rows
}

/// `fsmatrix … | head -1` (issue 38): a closed pipe ends every command
/// quietly with the exit code it has when its output is read, 0 for one
/// that did what it was asked, as ripgrep does; never 141 (SIGPIPE, which
/// fails a `set -o pipefail` pipeline by timing alone), 1 or a panic.
/// Standard error closed as well (`2>&1 | head -1`) changes nothing either.
#[test]
fn a_closed_pipe_ends_every_command_quietly_with_its_own_exit_code() {
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().unwrap();
    let std_fsmatrix = || {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("fsmatrix"));
        c.current_dir(root());
        c
    };
    for (args, code) in commands_that_print(tmp.path()) {
        let read = fsmatrix().args(&args).output().unwrap();
        assert_eq!(
            read.status.code(),
            Some(code),
            "{args:?} read: {}",
            String::from_utf8_lossy(&read.stderr)
        );
        assert!(!read.stdout.is_empty(), "{args:?} prints nothing");
        let gone = std_fsmatrix()
            .args(&args)
            .stdout(closed_pipe())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&gone.stderr);
        assert_eq!(gone.status.signal(), None, "{args:?}: {err}");
        assert_eq!(gone.status.code(), Some(code), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("failed to write"), "{args:?}: {err}");
        if code == 0 {
            assert_eq!(err, String::from_utf8_lossy(&read.stderr), "{args:?}");
        }
        let both = std_fsmatrix()
            .args(&args)
            .stdout(closed_pipe())
            .stderr(closed_pipe())
            .status()
            .unwrap();
        assert_eq!(both.signal(), None, "{args:?} without stderr");
        assert_eq!(both.code(), Some(code), "{args:?} without stderr");
    }
}

/// The same through a real pipeline under `set -o pipefail`: `head -c1`
/// leaves after one byte of an output larger than a pipe holds, so the
/// writes after it fail whatever the timing; the pipeline passes.
#[test]
fn a_pipefail_pipeline_through_head_passes() {
    for args in [
        "report --format html tests/fixtures/bundle-v1",
        "plan -i inventory/lab.toml -m matrix/quick.toml --commands",
    ] {
        let o = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "set -o pipefail; \"$0\" {args} | head -c1 >/dev/null; echo \"exit ${{PIPESTATUS[0]}}\""
            ))
            .arg(assert_cmd::cargo::cargo_bin("fsmatrix"))
            .current_dir(root())
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(out.trim(), "exit 0", "{args}: {err}");
        assert!(o.status.success(), "{args}: {err}");
        assert!(!err.contains("panicked"), "{args}: {err}");
    }
}

/// `-v`'s help says what it does where no host is contacted, and it holds:
/// each such command prints exactly the same with `-v`, on both streams,
/// but `plan --commands`, which logs each command it prints.
#[test]
fn verbose_says_what_it_does_on_the_commands_that_contact_no_host() {
    let short = fsmatrix().args(["plan", "-h"]).output().unwrap();
    let short = String::from_utf8_lossy(&short.stdout);
    let short = short.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        short.contains("the others print the same with -v as without"),
        "{short}"
    );
    let long = fsmatrix().args(["report", "--help"]).output().unwrap();
    let long = String::from_utf8_lossy(&long.stdout);
    assert!(long.contains("Only check, run, resume and agent"), "{long}");
    let tmp = tempfile::tempdir().unwrap();
    let mut compared = 0;
    for (args, code) in commands_that_print(tmp.path()) {
        if args[0] == "check" || args[0].starts_with('-') || args.contains(&"--help".into()) {
            continue;
        }
        let plain = fsmatrix().args(&args).output().unwrap();
        let verbose = fsmatrix().arg("-v").args(&args).output().unwrap();
        assert_eq!(plain.status.code(), Some(code), "{args:?}");
        assert_eq!(verbose.status.code(), Some(code), "-v {args:?}");
        assert!(
            verbose.stdout == plain.stdout,
            "-v {args:?}: stdout differs"
        );
        if args.contains(&"--commands".into()) {
            // The one exception the help names: each command it prints is
            // logged as `run -v` logs it.
            let printed = String::from_utf8_lossy(&plain.stdout);
            let logged = String::from_utf8_lossy(&verbose.stderr);
            let logged: Vec<&str> = logged
                .lines()
                .filter_map(|l| l.strip_prefix("DEBUG $ "))
                .collect();
            assert!(logged.len() > 10, "{logged:?}");
            for l in logged {
                let command = l.rsplit_once(" host=").map_or(l, |(c, _)| c);
                let command = command.split("  # ").next().unwrap();
                assert!(printed.contains(command), "logged, not printed: {command}");
            }
            continue;
        }
        assert_eq!(
            String::from_utf8_lossy(&verbose.stderr),
            String::from_utf8_lossy(&plain.stderr),
            "-v {args:?}"
        );
        assert!(
            verbose.stdout == plain.stdout,
            "-v {args:?}: stdout differs"
        );
        compared += 1;
    }
    assert!(compared >= 10, "{compared}");
}

/// `inventory import` of a folder where one host's name cannot be an
/// fsmatrix host (a placeholder beside the real hosts, as a public
/// playbook ships its inventory): the others are imported, and each one
/// skipped is named with its file and line and what would be valid.
#[test]
fn a_folder_with_a_name_fsmatrix_cannot_take_imports_the_other_hosts() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("imported.toml");
    let dir = "tests/fixtures/ansible/dir_placeholder";
    let o = fsmatrix()
        .args(["inventory", "import", dir, "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("4 hosts imported from {dir}, 2 skipped")),
        "{err}"
    );
    for (place, what) in [
        (
            "01-hosts.ini:6: host `your_db_host` skipped",
            "address `your_db_host` contains `_`",
        ),
        (
            "02-web.yml:7: host `-replace-me-` skipped",
            "valid: letters, digits and . _ - not starting with -",
        ),
    ] {
        let line = err
            .lines()
            .find(|l| l.contains(place))
            .unwrap_or_else(|| panic!("{place} not named: {err}"));
        assert!(line.contains(what), "{line}");
        assert!(
            line.contains("rename") || line.contains("set ansible_host"),
            "{line}"
        );
    }
    let text = std::fs::read_to_string(&out).unwrap();
    let filled = text.replace("devices = []", "devices = [\"/dev/vdb\"]");
    std::fs::write(&out, filled).unwrap();
    let o = fsmatrix()
        .args(["plan", "-i"])
        .arg(&out)
        .args(["-m", "matrix/quick.toml"])
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(plan.contains("on 4 hosts"), "{plan}");
    for host in ["db1", "db2", "web1", "web2"] {
        assert!(text.contains(&format!("name = \"{host}\"")), "{text}");
    }
}

/// Each imported host against `ansible-inventory --list`'s merged
/// `_meta.hostvars`: the same hosts, and field by field the address, port,
/// user, key and become.
fn matches_ansible_list(what: &str, toml_text: &str, list: &serde_json::Value) {
    let doc: toml::Table = toml::from_str(toml_text).expect("the import is TOML");
    let hosts = doc["host"].as_array().expect("[[host]]");
    let hostvars = list["_meta"]["hostvars"]
        .as_object()
        .expect("_meta.hostvars");
    assert_eq!(hosts.len(), hostvars.len(), "{what}: {toml_text}");
    for (name, vars) in hostvars {
        let h = hosts
            .iter()
            .find(|h| h["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("{what}: no host {name}: {toml_text}"));
        let s = |k: &str| vars.get(k).and_then(|v| v.as_str());
        assert_eq!(
            h["address"].as_str(),
            Some(s("ansible_host").unwrap_or(name)),
            "{what}: {name}"
        );
        assert_eq!(
            h.get("port").and_then(|p| p.as_integer()),
            vars.get("ansible_port").and_then(|p| p.as_i64()),
            "{what}: {name}"
        );
        assert_eq!(
            h.get("user").and_then(|u| u.as_str()),
            s("ansible_user"),
            "{what}: {name}"
        );
        assert_eq!(
            h.get("identity_file").and_then(|u| u.as_str()),
            s("ansible_ssh_private_key_file"),
            "{what}: {name}"
        );
        let becomes = match vars.get("ansible_become") {
            Some(serde_json::Value::Bool(b)) => *b,
            Some(serde_json::Value::String(v)) => ["yes", "true", "on", "1"].contains(&v.as_str()),
            _ => false,
        };
        assert_eq!(h.get("become").is_some(), becomes, "{what}: {name}");
    }
}

#[test]
fn ansible_vars_folders_and_directory_inventories_import_as_ansible_inventory_lists_them() {
    let fixtures = root().join("tests/fixtures/ansible");
    // ansible-inventory reads group_vars/ beside the playbook directory (its
    // working directory) too: run it where there is none.
    let elsewhere = tempfile::tempdir().unwrap();
    let live = crate::support::skip::tool_or_skip("ansible-inventory", "ansible-core");
    for (source, expected) in [
        ("vars_ini/hosts.ini", "vars_ini/expected.json"),
        ("vars_yaml/inventory.yml", "vars_yaml/expected.json"),
        ("dir_inventory", "dir_inventory.expected.json"),
    ] {
        let o = fsmatrix()
            .args(["inventory", "import"])
            .arg(fixtures.join(source))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{source}: {err}");
        let text = String::from_utf8(o.stdout).unwrap();
        let recorded: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fixtures.join(expected)).unwrap())
                .unwrap();
        matches_ansible_list(&format!("{source} (recorded)"), &text, &recorded);
        if live {
            let o = std::process::Command::new("ansible-inventory")
                .arg("-i")
                .arg(fixtures.join(source))
                .arg("--list")
                .current_dir(elsewhere.path())
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{source}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let now: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            matches_ansible_list(&format!("{source} (ansible-inventory)"), &text, &now);
        }
        // Every caveat is on stderr and a `# CHECK:` line of the inventory.
        for w in err
            .lines()
            .filter_map(|l| l.strip_prefix("fsmatrix: warning: "))
        {
            let as_check = text.lines().any(|l| {
                l.strip_prefix("# CHECK: ")
                    .is_some_and(|c| w.ends_with(c) || c == w)
            });
            assert!(as_check, "{source}: `{w}` is no CHECK line:\n{text}");
        }
    }
    // The misspelt group_vars file is named, on stderr and in the inventory.
    let o = fsmatrix()
        .args(["inventory", "import"])
        .arg(fixtures.join("vars_ini/hosts.ini"))
        .output()
        .unwrap();
    let caveat = "group_vars/databases.yml: names no group of the inventory (no group `databases`)";
    assert!(String::from_utf8_lossy(&o.stderr).contains(caveat));
    assert!(String::from_utf8_lossy(&o.stdout).contains(caveat));
    // `-` reads standard input (no folder beside it: the file's own vars).
    fsmatrix()
        .args(["inventory", "import", "-"])
        .write_stdin(std::fs::read_to_string(fixtures.join("hosts.ini")).unwrap())
        .assert()
        .success()
        .stdout(predicate::str::contains("name = \"deb12-kvm\""))
        .stdout(predicate::str::contains(
            "# CHECK: (standard input):3: host `localhost` skipped",
        ));
}
