//! What a test suite or a test needs from the machine, and what happens without it.
//!
//! A person running `cargo test` as an ordinary user, without the local lab, gets a
//! green run: a suite that needs root (or root and the lab) prints one line,
//! `skipped: <suite> needs ...`, and runs none of its tests; a test that needs an optional
//! tool (a shell, Chromium, zstd) prints which tool is missing and passes without
//! checking anything.  `tests/run.sh` and CI set `FSMATRIX_TEST_REQUIRE_ALL=1`: there a
//! missing need fails the run, so nothing is skipped where it matters.
//!
//! A suite declares its need once, at the top of its file, as a function run before the
//! test harness starts (an ELF constructor: `.init_array`):
//! ```ignore
//! #[used]
//! #[link_section = ".init_array"]
//! static NEEDS: extern "C" fn() = support::skip::needs_root_and_lab;
//! ```
use std::io::Write;
use std::path::Path;

/// The environment variable under which a missing need fails instead of skipping.
pub const REQUIRE_ALL: &str = "FSMATRIX_TEST_REQUIRE_ALL";

/// Is `FSMATRIX_TEST_REQUIRE_ALL=1` set (tests/run.sh, CI)?
pub fn require_all() -> bool {
    std::env::var_os(REQUIRE_ALL).is_some_and(|v| v == "1")
}

/// Does this process run as root?
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Is a lab standing that this user can use (its inventory and its SSH key readable)?
pub fn lab_usable() -> bool {
    super::lab::read_inventory(&super::lab::lab_dir())
        .is_some_and(|inv| std::fs::File::open(&inv.identity_file).is_ok())
}

/// This test binary's name (`engine`, `remote_ssh`, ...).
pub fn suite() -> &'static str {
    env!("CARGO_CRATE_NAME")
}

/// Written straight to the terminal: the test harness captures `eprintln!` of tests that
/// pass, and a skip must be seen.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Ends this suite before its first test: exit 0 with "skipped: ...", or exit 1 under
/// `FSMATRIX_TEST_REQUIRE_ALL=1`.
fn skip_suite(needs: &str) -> ! {
    if require_all() {
        say(&format!(
            "FAILED: {} {needs}, and {REQUIRE_ALL}=1 forbids skipping it",
            suite()
        ));
        std::process::exit(1);
    }
    say(&format!("skipped: {} {needs} (run tests/run.sh)", suite()));
    std::process::exit(0);
}

/// A suite's start check: root, to run servers and mount filesystems.
pub extern "C" fn needs_root() {
    if !is_root() {
        skip_suite("needs root");
    }
}

/// A suite's start check for the suites that take the lab down and compare the machine
/// before and after (the lifecycle and bastion tests): root, as [`needs_root`].  Its
/// name is the mark by which tests/run.sh runs the suite alone, after the others.
pub extern "C" fn needs_root_and_the_machine_alone() {
    needs_root();
}

/// A suite's start check: root and the local lab.  As root without a lab, the suite's
/// tests bring one up themselves; without root they need one standing that this user can
/// use.
pub extern "C" fn needs_root_and_lab() {
    if !is_root() && !lab_usable() {
        skip_suite("needs root and the local lab");
    }
}

/// Is `tool` (a command name looked up in PATH, or a path) an executable file here?
pub fn have_tool(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if tool.contains('/') {
        return executable(Path::new(tool));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| executable(&d.join(tool))))
}

/// For a test that needs an optional `tool` (from the Debian package `package`): true if
/// it is here; else the test says which tool is missing and should return (false), or,
/// under `FSMATRIX_TEST_REQUIRE_ALL=1`, fails.
pub fn tool_or_skip(tool: &str, package: &str) -> bool {
    if have_tool(tool) {
        return true;
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let what =
        format!("{test} needs `{tool}` (Debian package {package}; tests/run.sh installs it)");
    assert!(
        !require_all(),
        "{what}, and {REQUIRE_ALL}=1 forbids skipping it"
    );
    say(&format!("skipped: {}: {what}", suite()));
    false
}
