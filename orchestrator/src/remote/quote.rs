//! THE quoting function for POSIX sh, and the command builder that uses it.
//!
//! Every value that reaches a remote shell goes through [`sh_quote`], via
//! [`RemoteCommand::arg`].  Constant shell fragments (pipes, redirections,
//! `&&`) go through [`RemoteCommand::raw_arg`], which only takes a
//! `&'static str`: a value computed at run time cannot be passed there.
//!
//! [`login_shell_safe`] then wraps a finished command so that it runs under
//! `/bin/sh` whatever the user's login shell is (FreeBSD root had csh before
//! 14; csh breaks on newlines inside quotes and expands `!`).
use crate::text::Become;
use std::fmt;

/// A value that cannot be put on a shell command line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuoteError {
    /// POSIX shells cannot carry a NUL byte in an argument at all.
    #[error("quote {value:?} for the remote shell: it holds a NUL byte, which no shell argument can carry")]
    Nul { value: String },
}

/// Characters that never need quoting in any POSIX sh position
/// (also not in csh, which matters for [`login_shell_safe`]'s outer layer).
fn is_plain(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(c, '_' | '-' | '.' | '/' | ',' | ':' | '@' | '%' | '+' | '=')
}

/// Quote `value` as one word for POSIX sh (dash, bash, FreeBSD/DragonFly sh).
///
/// Plain words (`[A-Za-z0-9_./,:@%+=-]`, not empty) are returned as they
/// are; anything else is put in single quotes, with each `'` written as
/// `'\''`.  Inside single quotes sh interprets nothing (`$`, backticks, `\`,
/// `!`, newlines are literal), so the shell hands the program exactly
/// `value`.  A leading `-` is kept: quoting cannot stop a program from
/// reading a value as an option; callers put `--` before such values.
pub fn sh_quote(value: &str) -> Result<String, QuoteError> {
    if value.contains('\0') {
        return Err(QuoteError::Nul {
            value: value.to_string(),
        });
    }
    if !value.is_empty() && value.chars().all(is_plain) {
        return Ok(value.to_string());
    }
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    Ok(out)
}

/// A command line for a remote POSIX sh, built so that every value is quoted.
///
/// ```
/// use fsmatrix::remote::RemoteCommand;
/// let cmd = RemoteCommand::new("printf").arg("%s").arg("a b; rm -rf /");
/// assert_eq!(cmd.to_shell().unwrap(), "printf %s 'a b; rm -rf /'");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteCommand {
    text: String,
    /// The first value that could not be quoted; reported by [`Self::to_shell`].
    error: Option<QuoteError>,
}

impl RemoteCommand {
    /// Start a command with `program` (quoted like any argument).
    pub fn new(program: impl AsRef<str>) -> Self {
        let mut cmd = RemoteCommand {
            text: String::new(),
            error: None,
        };
        cmd.push_quoted(program.as_ref());
        cmd
    }

    /// Start from a constant shell fragment, e.g. `RemoteCommand::raw("uname -s")`.
    pub fn raw(fragment: &'static str) -> Self {
        RemoteCommand {
            text: fragment.to_string(),
            error: None,
        }
    }

    /// Append one argument, quoted.
    pub fn arg(mut self, value: impl AsRef<str>) -> Self {
        self.push_quoted(value.as_ref());
        self
    }

    /// Append several arguments, each quoted.
    pub fn args<I, S>(mut self, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for v in values {
            self.push_quoted(v.as_ref());
        }
        self
    }

    /// Append a constant shell fragment unquoted (`|`, `&&`, `2>&1`, a
    /// fixed redirection).  Only `'static` strings: never a value.
    pub fn raw_arg(mut self, fragment: &'static str) -> Self {
        self.push_word(fragment);
        self
    }

    /// `self && other`: both already quoted, so no value is re-parsed.
    pub fn and_then(mut self, other: &RemoteCommand) -> Self {
        if self.error.is_none() {
            self.error = other.error.clone();
        }
        self.push_word("&&");
        self.push_word(&other.text);
        self
    }

    /// The same command run as root through `how` (inventory `become`), the
    /// one place that wraps: `sudo -n /bin/sh -c '<command>'` or
    /// `doas -n /bin/sh -c '<command>'`.  `-n`: never wait for a password
    /// (a host that asks for one fails at once, with the tool's own
    /// message).  sudo: sudo(8) `-n, --non-interactive`.  doas: OpenBSD
    /// doas.1 and OpenDoas 6.8.2 doas.1 (Debian 12 `opendoas`): "-n Non
    /// interactive mode, fail if the matching rule doesn't have the nopass
    /// option"; `-u` is not given: "The default is root" (both doas.1).
    /// Only these fixed words reach the shell besides the quoted command.
    pub fn via(&self, how: Become) -> RemoteCommand {
        let wrapper = match how {
            Become::Sudo => "sudo -n /bin/sh -c",
            Become::Doas => "doas -n /bin/sh -c",
        };
        let mut cmd = RemoteCommand::raw(wrapper).arg(&self.text);
        if cmd.error.is_none() {
            cmd.error = self.error.clone();
        }
        cmd
    }

    /// The command as sh source text, or the first value that could not be quoted.
    pub fn to_shell(&self) -> Result<&str, QuoteError> {
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(&self.text),
        }
    }

    fn push_quoted(&mut self, value: &str) {
        match sh_quote(value) {
            Ok(q) => self.push_word(&q),
            Err(e) => {
                if self.error.is_none() {
                    self.error = Some(e);
                }
            }
        }
    }

    fn push_word(&mut self, word: &str) {
        if !self.text.is_empty() {
            self.text.push(' ');
        }
        self.text.push_str(word);
    }
}

/// Shows the command as the remote sh would read it (for `plan --commands`);
/// a command holding an unquotable value shows the error instead.
impl fmt::Display for RemoteCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_shell() {
            Ok(s) => f.write_str(s),
            Err(e) => write!(f, "<invalid command: failed to {e}>"),
        }
    }
}

/// Wrap sh source text `script` into the command string sent in an SSH
/// `exec` request, so that it runs under `/bin/sh` whatever the login shell.
///
/// sshd runs the exec string with the user's login shell (`$SHELL -c`).
/// The string made here holds only `/bin/sh -c '...'` around a `printf` of
/// octal escapes, characters that mean the same in sh, bash, zsh and csh
/// (no newline, no `!`, no `$` outside single quotes); `/bin/sh` decodes the
/// script and `eval`s it, so `$$` inside the script is that `/bin/sh`.
pub fn login_shell_safe(script: &str) -> String {
    let mut encoded = String::with_capacity(script.len() * 4 + 40);
    encoded.push_str("/bin/sh -c 'eval \"$(printf \"");
    for b in script.bytes() {
        encoded.push_str(&format!("\\{b:03o}"));
    }
    encoded.push_str("\")\"'");
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::process::Command;

    const HOSTILE: &[&str] = &[
        "'; rm -rf / #",
        "$(id)",
        "`id`",
        "a\nb",
        "\n",
        "trailing newline\n",
        "!",
        "!!",
        "-n",
        "--help",
        "-",
        "héllo wörld ✓ 日本",
        "",
        " ",
        "\t",
        "'",
        "''",
        "\"",
        "\\",
        "\\'",
        "${HOME}",
        "$HOME",
        "a*b?[c]",
        "~root",
        "#comment",
        "x; echo pwned > /tmp/fsmatrix-pwned",
        "a|b&c>d<e",
        "%s%n",
        "\u{7f}\u{1}\u{1b}[31m",
    ];

    /// Run `printf '%s' ARG` through a real shell and return what it printed.
    fn echo_through(shell: &str, value: &str) -> Vec<u8> {
        let cmd = RemoteCommand::new("printf").arg("%s").arg(value);
        let text = cmd.to_shell().expect("value without NUL quotes");
        let out = Command::new(shell)
            .arg("-c")
            .arg(text)
            .output()
            .expect("the shell runs");
        assert!(out.status.success(), "{shell} failed on {text:?}: {out:?}");
        out.stdout
    }

    #[test]
    fn hostile_values_round_trip_through_dash_and_bin_sh() {
        // posh (Debian's strict POSIX shell) is optional: a person's `cargo test` skips it.
        let posh = crate::testing::tool_or_skip("posh", "posh");
        for shell in ["dash", "/bin/sh", "bash", "posh"] {
            if shell == "posh" && !posh {
                continue;
            }
            for v in HOSTILE {
                assert_eq!(
                    echo_through(shell, v),
                    v.as_bytes(),
                    "{shell} changed {v:?}"
                );
            }
        }
    }

    #[test]
    fn login_shell_safe_runs_under_bin_sh_from_any_login_shell() {
        // sshd hands the exec string to the login shell; FreeBSD root had
        // csh (Debian: the tcsh package).  posh and csh are optional: a
        // person's `cargo test` skips them, tests/run.sh installs them.
        let mut logins = vec!["bash", "dash"];
        if crate::testing::tool_or_skip("posh", "posh") {
            logins.push("posh");
        }
        if crate::testing::tool_or_skip("csh", "tcsh") {
            logins.push("csh");
        }
        for v in HOSTILE {
            let script = RemoteCommand::new("printf").arg("%s").arg(v);
            let wrapped = login_shell_safe(script.to_shell().unwrap());
            assert!(!wrapped.contains('\n') && !wrapped.contains('!'));
            for login in &logins {
                let out = Command::new(login)
                    .arg("-c")
                    .arg(&wrapped)
                    .output()
                    .expect("shell runs");
                assert_eq!(out.stdout, v.as_bytes(), "{login} changed {v:?}");
            }
        }
    }

    #[test]
    fn via_sudo_and_doas_keep_every_hostile_value_one_argument() {
        for how in Become::ALL {
            // A stand-in sudo/doas that insists on -n and runs the rest as given.
            let dir = tempfile::tempdir().expect("tempdir");
            let fake = dir.path().join(how.as_str());
            std::fs::write(
                &fake,
                "#!/bin/sh\n[ \"$1\" = -n ] || exit 9\nshift\nexec \"$@\"\n",
            )
            .expect("write the stand-in");
            let chmod = Command::new("chmod").arg("755").arg(&fake).status();
            assert!(chmod.is_ok_and(|s| s.success()));
            let path = format!(
                "{}:{}",
                dir.path().display(),
                std::env::var("PATH").unwrap_or_default()
            );
            for v in HOSTILE {
                let cmd = RemoteCommand::new("printf").arg("%s").arg(v).via(how);
                let text = cmd.to_shell().expect("quotes");
                let want = format!("{} -n /bin/sh -c ", how.as_str());
                assert!(text.starts_with(&want), "{text}");
                let out = Command::new("dash")
                    .arg("-c")
                    .arg(text)
                    .env("PATH", &path)
                    .output()
                    .expect("dash runs");
                assert!(out.status.success(), "{text:?}: {out:?}");
                assert_eq!(out.stdout, v.as_bytes(), "{text}");
            }
            // A value that cannot be quoted stays an error through the wrap.
            assert!(RemoteCommand::new("echo")
                .arg("a\0b")
                .via(how)
                .to_shell()
                .is_err());
        }
        // The exact wrapper text: what `plan --commands` shows is what runs.
        assert_eq!(
            RemoteCommand::raw("id -u")
                .via(Become::Doas)
                .to_shell()
                .ok(),
            Some("doas -n /bin/sh -c 'id -u'")
        );
        assert_eq!(
            RemoteCommand::raw("id -u")
                .via(Become::Sudo)
                .to_shell()
                .ok(),
            Some("sudo -n /bin/sh -c 'id -u'")
        );
    }

    #[test]
    fn nul_is_an_error_not_a_truncation() {
        let err = sh_quote("a\0b").unwrap_err();
        assert!(err.to_string().contains("NUL"));
        let cmd = RemoteCommand::new("echo").arg("ok").arg("x\0y").arg("z");
        assert!(cmd.to_shell().is_err());
        assert!(cmd.to_string().contains("invalid command"));
    }

    #[test]
    fn plain_words_stay_readable() {
        assert_eq!(sh_quote("/dev/vdb").unwrap(), "/dev/vdb");
        assert_eq!(
            sh_quote("noatime,compress=zstd").unwrap(),
            "noatime,compress=zstd"
        );
        assert_eq!(sh_quote("").unwrap(), "''");
        assert_eq!(sh_quote("it's").unwrap(), "'it'\\''s'");
        let cmd = RemoteCommand::raw("cat >")
            .arg("/tmp/a b")
            .raw_arg("&&")
            .arg("x");
        assert_eq!(cmd.to_shell().unwrap(), "cat > '/tmp/a b' && x");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn any_string_round_trips_through_dash(v in "[^\u{0}]{0,40}") {
            prop_assert_eq!(echo_through("dash", &v), v.as_bytes());
        }

        #[test]
        fn shell_metacharacters_round_trip_through_bin_sh(
            v in proptest::collection::vec(
                prop_oneof![
                    Just("'"), Just("\""), Just("$"), Just("`"), Just("\\"), Just("\n"),
                    Just("!"), Just(";"), Just("&"), Just("|"), Just("("), Just(")"),
                    Just("*"), Just("?"), Just("["), Just("~"), Just("#"), Just(" "),
                    Just("-"), Just("é"), Just("a"), Just("%"), Just("{"), Just("}"),
                ],
                0..24,
            ).prop_map(|parts| parts.concat())
        ) {
            prop_assert_eq!(echo_through("/bin/sh", &v), v.as_bytes());
            let wrapped = login_shell_safe(
                RemoteCommand::new("printf").arg("%s").arg(&v).to_shell().unwrap(),
            );
            let out = Command::new("bash").arg("-c").arg(&wrapped).output().unwrap();
            prop_assert_eq!(out.stdout, v.as_bytes());
        }
    }
}
