//! The manual pages: clap_mangen renders what the CLI definition holds
//! (name, synopsis, description, options, subcommands); the sections it has
//! no source for come from the tables here, on every page: EXIT STATUS
//! (from [`Exit`], the one place for exit codes), ENVIRONMENT, FILES and
//! EXAMPLES (each page its own; every example parses as the CLI it shows,
//! `tests/pure/cli_conventions.rs`).
use std::io::Write;
use std::path::Path;

use super::Exit;

/// What fsmatrix reads from its environment.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "NO_COLOR",
        "when set (to anything but the empty string), no colour on the terminal, as no-color.org asks",
    ),
    (
        "FSMATRIX_LOG",
        "a tracing filter (e.g. fsmatrix=debug,russh=info) that overrides -v and -q",
    ),
    (
        "FSMATRIX_DB",
        "the results database's connection string, instead of --db (a password there never shows in ps)",
    ),
    (
        "PGPASSFILE",
        "the database password file (default ~/.pgpass), as libpq reads it; PGPASSWORD too",
    ),
    (
        "SSH_AUTH_SOCK",
        "the ssh-agent fsmatrix logs in with (auth = \"agent\") and signs through (sign --agent, an encrypted --sign key)",
    ),
    (
        "HOME",
        "where ~ is, for ~/.ssh/config, ~/.ssh/known_hosts and the ~/ paths of an inventory",
    ),
    (
        "XDG_RUNTIME_DIR",
        "for a user who is not root, where the sweeps' lease files are kept ($XDG_RUNTIME_DIR/fsmatrix-leases)",
    ),
    (
        "USER, LOGNAME",
        "who runs the sweep, as its host locks and the agent's leases name it",
    ),
];

/// The files fsmatrix reads or writes besides the ones named on its
/// command line.
pub const FILES: &[(&str, &str)] = &[
    (
        "~/.ssh/config",
        "read through ssh -G for the inventory's hosts (another ssh_config only when --ssh-config names it)",
    ),
    (
        "~/.ssh/known_hosts",
        "the host keys trusted by default; an unknown or changed key is refused, never accepted",
    ),
    (
        "results/",
        "where run writes a bundle by default (--out): one folder per sweep, BagIt with sha256 manifests",
    ),
    (
        "/var/lib/fsmatrix/lab",
        "the local lab's folder (lab up, lab down, lab status --dir): its hosts, key, known_hosts and inventory.toml",
    ),
    (
        "/run/fsmatrix-leases",
        "as root, one lease file per running sweep: a host lock is ended only when its lease is provably free",
    ),
    (
        "~/.pgpass",
        "the results database's password file (PGPASSFILE)",
    ),
];

/// Each page's examples: (page, command line, what it does).  The page is
/// the subcommand path (`""` for fsmatrix(1), `"lab up"` for
/// fsmatrix-lab-up(1)).
pub const EXAMPLES: &[(&str, &str, &str)] = &[
    ("", "fsmatrix lab up --install", "a local lab of throwaway hosts, its packages installed"),
    ("", "fsmatrix run -i inventory/lab.toml -m matrix/demo.toml", "the demo sweep on it, with the answer at the end"),
    ("lab", "fsmatrix lab status", "what the local lab has and whether it is up"),
    ("lab up", "fsmatrix lab up --hosts 5 --os linux,linux,linux,freebsd,dragonfly --guests 1", "the lab the tests use: three Linux hosts, the two BSD stand-ins and a guest"),
    ("lab down", "fsmatrix lab down", "take the lab down and leave the machine as it was"),
    ("lab status", "fsmatrix lab status --dir /var/lib/fsmatrix/lab", "the lab in that folder"),
    ("plan", "fsmatrix plan -i inventory/lab.toml -m matrix/quick.toml", "the cells a sweep would run, with their ETA"),
    ("plan", "fsmatrix plan -i inventory/lab.toml -m matrix/quick.toml --commands", "every command the sweep would send, quoted as it is sent"),
    ("plan", "fsmatrix plan --from results/quick-20261201T100212Z --device lab1:/dev/loop0", "what a re-run of that bundle would run, and which of its devices and consents it would use"),
    ("check", "fsmatrix check -i inventory/lab.toml -m matrix/quick.toml", "whether each host is ready for that matrix"),
    ("run", "fsmatrix run -i inventory/lab.toml -m matrix/quick.toml --out results", "run the sweep and write its bundle under results/"),
    ("run", "fsmatrix run --from results/quick-20261201T100212Z --identity-file lab/id --device lab1:/dev/loop0", "run a bundle's sweep again, naming the key and device it records"),
    ("resume", "fsmatrix resume results/quick-20261201T100212Z", "finish a sweep whose orchestrator was killed"),
    ("verify", "fsmatrix verify results/quick-20261201T100212Z", "check the bundle's completeness and checksums"),
    ("verify", "fsmatrix verify results/quick.tar.zst --allowed-signers signers --principal al", "and that al signed it"),
    ("report", "fsmatrix report results/quick-20261201T100212Z --format html --out report.html", "the report as one HTML file with its plots"),
    ("archive", "fsmatrix archive results/quick-20261201T100212Z", "pack the bundle into one .tar.zst"),
    ("sign", "fsmatrix sign --key ~/.ssh/id_ed25519 results/quick-20261201T100212Z", "sign the bundle's tagmanifest with that key"),
    ("ls", "fsmatrix ls results", "every bundle under results/, with its status and signer"),
    ("db", "fsmatrix db init --roles", "make the results database's tables and roles"),
    ("db init", "fsmatrix db init --db postgresql://fsmx@db.lab/fsmatrix --roles", "the same for that database"),
    ("db ls", "fsmatrix db ls --json", "the published sweeps, one JSON object each"),
    ("db refresh", "fsmatrix db refresh", "recompute the stored verdicts (after an upgrade)"),
    ("submit", "fsmatrix submit -i inventory/lab.toml -m matrix/quick.toml", "queue the sweep in the database; prints its id"),
    ("queue", "fsmatrix queue", "the database's sweeps, their progress and leases"),
    ("cancel", "fsmatrix cancel 42", "cancel sweep 42"),
    ("publish", "fsmatrix publish results/quick-20261201T100212Z", "import a verified bundle into the database"),
    ("agent", "fsmatrix agent --registry inventory/lab.toml", "run queued sweeps on the registry's hosts as they become free"),
    ("inventory", "fsmatrix inventory import hosts.ini --out inventory.toml", "an Ansible inventory as an fsmatrix one"),
    ("inventory import", "fsmatrix inventory import group_dir", "a directory inventory with its group_vars, to stdout"),
    ("completions", "fsmatrix completions bash", "the bash completion script"),
    ("man", "fsmatrix man --dir /usr/local/share/man/man1", "every manual page into that folder"),
];

/// `text` for roff: backslashes doubled, `-` as a hyphen-minus, and a line
/// that starts with `.` or `'` not read as a request.
fn roff_text(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

/// The sections clap_mangen has no source for, for the page of `path`.
fn extra_sections(path: &str) -> String {
    let mut s = String::from(".SH \"EXIT STATUS\"\n");
    for e in Exit::ALL {
        s.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            e.code(),
            roff_text(e.meaning())
        ));
    }
    s.push_str(&format!(
        ".PP\n{}\n",
        roff_text(
            "A closed pipe (a reader that left, as head does) ends the command quietly with \
             its own exit status, never 141."
        )
    ));
    s.push_str(".SH ENVIRONMENT\n");
    for (name, what) in ENVIRONMENT {
        s.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            roff_text(name),
            roff_text(what)
        ));
    }
    s.push_str(".SH FILES\n");
    for (name, what) in FILES {
        s.push_str(&format!(
            ".TP\n\\fI{}\\fR\n{}\n",
            roff_text(name),
            roff_text(what)
        ));
    }
    s.push_str(".SH EXAMPLES\n");
    for (_, line, what) in EXAMPLES.iter().filter(|(p, _, _)| *p == path) {
        s.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            roff_text(line),
            roff_text(what)
        ));
    }
    s
}

/// One page: clap_mangen's, then the sections above.
fn page(cmd: clap::Command, path: &str) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out)?;
    out.extend_from_slice(extra_sections(path).as_bytes());
    Ok(out)
}

/// fsmatrix(1) on `w`.
pub fn render(cmd: clap::Command, w: &mut dyn Write) -> std::io::Result<()> {
    w.write_all(&page(cmd, "")?)
}

/// `f` on every page's command and subcommand path (`""` for fsmatrix(1)),
/// subcommands first, as clap_mangen walks them: hidden subcommands and
/// `help` left out.
fn each_page(
    cmd: clap::Command,
    f: &mut dyn FnMut(clap::Command, &str) -> std::io::Result<()>,
) -> std::io::Result<()> {
    fn walk(
        cmd: clap::Command,
        path: String,
        f: &mut dyn FnMut(clap::Command, &str) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
            let p = if path.is_empty() {
                sub.get_name().to_string()
            } else {
                format!("{path} {}", sub.get_name())
            };
            walk(sub, p, f)?;
        }
        f(cmd, &path)
    }
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    walk(cmd, String::new(), f)
}

/// Every page into `dir`, as clap_mangen names them (fsmatrix.1,
/// fsmatrix-lab-up.1, …).
pub fn write_all(cmd: clap::Command, dir: &Path) -> std::io::Result<()> {
    each_page(cmd, &mut |cmd, path| {
        let name = clap_mangen::Man::new(cmd.clone()).get_filename();
        std::fs::write(dir.join(name), page(cmd, path)?)
    })
}

/// The subcommand paths that get a page (`""` for fsmatrix(1)).
pub fn pages(cmd: clap::Command) -> Vec<String> {
    let mut out = Vec::new();
    let _ = each_page(cmd, &mut |_, path| {
        out.push(path.to_string());
        Ok(())
    });
    out
}
