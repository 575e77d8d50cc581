//! For the crate's own unit tests: a test that needs an optional program (a shell such as
//! posh, csh) says which one is missing and is skipped when a person runs `cargo test`;
//! under tests/run.sh and CI (`FSMATRIX_TEST_REQUIRE_ALL=1`) a missing one fails the test.
//! The integration tests have the same helper in tests/support/skip.rs.
use std::io::Write;
use std::path::Path;

/// The environment variable under which a missing program fails instead of skipping.
pub(crate) const REQUIRE_ALL: &str = "FSMATRIX_TEST_REQUIRE_ALL";

/// Is `tool` (a command name looked up in PATH, or a path) an executable file here?
pub(crate) fn have_tool(tool: &str) -> bool {
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

/// True if `tool` (from the Debian package `package`) is here.  Else the test says so
/// (straight to stderr: the harness hides a passing test's `eprintln!`) and should skip
/// what needs it (false), or, under `FSMATRIX_TEST_REQUIRE_ALL=1`, fails.
pub(crate) fn tool_or_skip(tool: &str, package: &str) -> bool {
    if have_tool(tool) {
        return true;
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let what =
        format!("{test} needs `{tool}` (Debian package {package}; tests/run.sh installs it)");
    let require_all = std::env::var_os(REQUIRE_ALL).is_some_and(|v| v == "1");
    assert!(
        !require_all,
        "{what}, and {REQUIRE_ALL}=1 forbids skipping it"
    );
    let _ = writeln!(std::io::stderr(), "skipped: {what}");
    false
}
