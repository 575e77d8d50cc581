//! Strict host-key checking against an OpenSSH known_hosts file.
//!
//! Our own matcher (on `ssh_key`'s line parser) rather than russh's
//! `check_known_hosts_path` (which, in the russh versions we measured,
//! neither matched wildcard patterns nor refused `@revoked` keys): here a
//! missing file is an error, `*`/`?`/`!` patterns and `[host]:port`
//! and hashed `|1|salt|hash` entries match, `@revoked` keys are refused,
//! several keys of one type for a host are fine if one matches, and
//! [`KnownHosts::preferred_algorithms`] lets the connection ask the server for
//! a key type the file knows (a host known only by its RSA or ECDSA key).
//!
//! As OpenSSH decides: the address and the host name are looked up
//! separately, and when one lookup finds the presented key while the other
//! lists a different key of that type, the host is refused (OpenSSH's
//! "differs from the key for the IP address" under strict checking).  The
//! file is read only when it is a regular file, opened without blocking, so
//! a FIFO, a device or a folder put in its place fails at once.
use std::path::{Path, PathBuf};

use hmac::{Hmac, KeyInit, Mac};
use russh::keys::ssh_key::known_hosts::{Entry, HostPatterns, Marker};
use russh::keys::{Algorithm, HashAlg, PublicKey};

/// Why a host key is not trusted.  Each message names the host, the key
/// type and SHA256 fingerprint, and how to trust it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HostKeyError {
    #[error(
        "read known_hosts file {path}: {reason}; create it after checking the host's \
         fingerprint out of band, e.g. `ssh-keyscan -p {port} {address} >> {path}`",
        path = .path.display()
    )]
    File {
        path: PathBuf,
        address: String,
        port: u16,
        reason: String,
    },
    #[error(
        "trust {host} ({address}:{port}): its {key_type} host key {fingerprint} is not in \
         {path}; check that fingerprint out of band (on the host: `ssh-keygen -lf \
         /etc/ssh/ssh_host_{short_type}_key.pub`), then add it with \
         `ssh-keyscan -p {port} -t {short_type} {address} >> {path}`; nothing was run on {host}",
        path = .path.display()
    )]
    Unknown {
        host: String,
        address: String,
        port: u16,
        key_type: String,
        short_type: String,
        fingerprint: String,
        path: PathBuf,
    },
    #[error(
        "trust {host} ({address}:{port}): its {key_type} host key CHANGED to {fingerprint}, \
         but {path} line(s) {lines} hold another {key_type} key for it; someone may be \
         intercepting the connection, or the host was reinstalled.  Only after checking the \
         new fingerprint out of band: `ssh-keygen -R '{lookup}' -f {path}` then \
         `ssh-keyscan -p {port} -t {short_type} {address} >> {path}`; nothing was run on {host}",
        path = .path.display()
    )]
    Changed {
        host: String,
        address: String,
        port: u16,
        lookup: String,
        key_type: String,
        short_type: String,
        fingerprint: String,
        path: PathBuf,
        lines: String,
    },
    #[error(
        "trust {host} ({address}:{port}): {path} disagrees with itself about its \
         {key_type} host key {fingerprint}: line(s) {matched_lines} (for {matched_lookup}) \
         hold that key, but line(s) {other_lines} (for {other_lookup}) hold another \
         {key_type} key; OpenSSH refuses such a host too.  Only after checking the \
         fingerprint out of band, remove the stale line(s): `ssh-keygen -R '{other_lookup}' \
         -f {path}`; nothing was run on {host}",
        path = .path.display()
    )]
    Disagree {
        host: String,
        address: String,
        port: u16,
        key_type: String,
        fingerprint: String,
        path: PathBuf,
        matched_lookup: String,
        matched_lines: String,
        other_lookup: String,
        other_lines: String,
    },
    #[error(
        "trust {host} ({address}:{port}): its {key_type} host key {fingerprint} is marked \
         @revoked in {path} line {line}; nothing was run on {host}",
        path = .path.display()
    )]
    Revoked {
        host: String,
        address: String,
        port: u16,
        key_type: String,
        fingerprint: String,
        path: PathBuf,
        line: usize,
    },
    #[error(
        "trust {host} ({address}:{port}): it presented a host certificate, which fsmatrix \
         does not check; list its plain host key in {path}",
        path = .path.display()
    )]
    Certificate {
        host: String,
        address: String,
        port: u16,
        path: PathBuf,
    },
}

/// The host being checked: the names it may be listed under, and its port.
#[derive(Debug, Clone)]
pub struct HostId {
    /// Inventory name (for messages, and also looked up in the file).
    pub name: String,
    /// The address connected to (looked up in the file).
    pub address: String,
    pub port: u16,
}

impl HostId {
    /// The strings OpenSSH would look up: `addr` on port 22, else `[addr]:port`,
    /// for the address and then the name.
    fn lookups(&self) -> Vec<String> {
        let mut out = Vec::new();
        for h in [&self.address, &self.name] {
            let l = if self.port == 22 {
                h.to_ascii_lowercase()
            } else {
                format!("[{}]:{}", h.to_ascii_lowercase(), self.port)
            };
            if !out.contains(&l) {
                out.push(l);
            }
        }
        out
    }
}

/// A parsed known_hosts file.
#[derive(Debug, Clone)]
pub struct KnownHosts {
    path: PathBuf,
    /// (1-based line number, entry).  Lines that do not parse are skipped,
    /// as OpenSSH does.
    entries: Vec<(usize, Entry)>,
}

impl KnownHosts {
    // Host-key errors are rare and rich; boxing them here buys nothing
    // (RemoteError boxes them).
    #[allow(clippy::result_large_err)]
    /// Read `path`.  A missing or unreadable file is an error (never
    /// "empty"), and so is anything but a regular file (a FIFO, a device, a
    /// folder): never blocks, whatever sits at `path`.
    pub fn read(path: &Path, host: &HostId) -> Result<KnownHosts, HostKeyError> {
        let bytes = crate::files::read_regular(path, MAX_KNOWN_HOSTS_BYTES).map_err(|reason| {
            HostKeyError::File {
                path: path.to_path_buf(),
                address: host.address.clone(),
                port: host.port,
                reason,
            }
        })?;
        // Bytes that are not UTF-8 only spoil their own line, which is then
        // skipped as unparsable.
        Ok(KnownHosts::parse(path, &String::from_utf8_lossy(&bytes)))
    }

    /// Parse known_hosts text; `path` is only used in messages.
    pub fn parse(path: &Path, text: &str) -> KnownHosts {
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            // ssh_key splits on single spaces; OpenSSH allows any blanks.
            let normal = line.split_whitespace().collect::<Vec<_>>().join(" ");
            match normal.parse::<Entry>() {
                Ok(e) => entries.push((i + 1, e)),
                Err(e) => {
                    tracing::debug!(
                        "{}:{}: skipping unparsable line: {e}",
                        path.display(),
                        i + 1
                    )
                }
            }
        }
        KnownHosts {
            path: path.to_path_buf(),
            entries,
        }
    }

    fn matching<'a>(&'a self, host: &'a HostId) -> impl Iterator<Item = &'a (usize, Entry)> + 'a {
        let lookups = host.lookups();
        self.entries
            .iter()
            .filter(move |(_, e)| lookups.iter().any(|l| patterns_match(e.host_patterns(), l)))
    }

    /// Host-key algorithms to offer the server, in our order of preference,
    /// restricted to the types this file knows for `host` (so a host known
    /// only by its RSA key is asked for that key, not reported unknown).
    /// `None` when the file knows no key for the host.
    pub fn preferred_algorithms(
        &self,
        host: &HostId,
        ours: &[Algorithm],
    ) -> Option<Vec<Algorithm>> {
        let known: Vec<Algorithm> = self
            .matching(host)
            .filter(|(_, e)| e.marker().is_none())
            .map(|(_, e)| e.public_key().algorithm())
            .collect();
        if known.is_empty() {
            return None;
        }
        let picked: Vec<Algorithm> = ours
            .iter()
            .filter(|a| known.iter().any(|k| same_family(k, a)))
            .cloned()
            .collect();
        if picked.is_empty() {
            None
        } else {
            Some(picked)
        }
    }

    #[allow(clippy::result_large_err)]
    /// Decide whether `key`, presented by `host`, is trusted.
    pub fn check(&self, host: &HostId, key: &PublicKey) -> Result<(), HostKeyError> {
        let fingerprint = key.fingerprint(HashAlg::Sha256).to_string();
        let key_type = key.algorithm().to_string();
        let short_type = short_type(&key.algorithm());
        let matching: Vec<&(usize, Entry)> = self.matching(host).collect();
        for (line, e) in &matching {
            if e.marker() == Some(&Marker::Revoked) && e.public_key().key_data() == key.key_data() {
                return Err(HostKeyError::Revoked {
                    host: host.name.clone(),
                    address: host.address.clone(),
                    port: host.port,
                    key_type,
                    fingerprint,
                    path: self.path.clone(),
                    line: *line,
                });
            }
        }
        // Each lookup (address, then name) decides on its own, as OpenSSH
        // checks the host name and the IP separately.
        let mut found: Vec<(String, Vec<usize>)> = Vec::new();
        let mut other: Vec<(String, Vec<usize>)> = Vec::new();
        for lookup in host.lookups() {
            let plain: Vec<&(usize, Entry)> = self
                .entries
                .iter()
                .filter(|(_, e)| e.marker().is_none() && patterns_match(e.host_patterns(), &lookup))
                .collect();
            let same: Vec<usize> = plain
                .iter()
                .filter(|(_, e)| e.public_key().key_data() == key.key_data())
                .map(|(l, _)| *l)
                .collect();
            if !same.is_empty() {
                found.push((lookup, same));
                continue;
            }
            let differ: Vec<usize> = plain
                .iter()
                .filter(|(_, e)| same_family(&e.public_key().algorithm(), &key.algorithm()))
                .map(|(l, _)| *l)
                .collect();
            if !differ.is_empty() {
                other.push((lookup, differ));
            }
        }
        let lines = |ls: &[usize]| {
            ls.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match (found.first(), other.first()) {
            (Some((matched_lookup, matched)), Some((other_lookup, differ))) => {
                return Err(HostKeyError::Disagree {
                    host: host.name.clone(),
                    address: host.address.clone(),
                    port: host.port,
                    key_type,
                    fingerprint,
                    path: self.path.clone(),
                    matched_lookup: matched_lookup.clone(),
                    matched_lines: lines(matched),
                    other_lookup: other_lookup.clone(),
                    other_lines: lines(differ),
                })
            }
            (Some(_), None) => return Ok(()),
            (None, Some(_)) => {
                let mut all: Vec<usize> = other.iter().flat_map(|(_, l)| l.clone()).collect();
                all.sort_unstable();
                all.dedup();
                return Err(HostKeyError::Changed {
                    host: host.name.clone(),
                    address: host.address.clone(),
                    port: host.port,
                    lookup: other[0].0.clone(),
                    key_type,
                    short_type,
                    fingerprint,
                    path: self.path.clone(),
                    lines: lines(&all),
                });
            }
            (None, None) => {}
        }
        Err(HostKeyError::Unknown {
            host: host.name.clone(),
            address: host.address.clone(),
            port: host.port,
            key_type,
            short_type,
            fingerprint,
            path: self.path.clone(),
        })
    }

    /// The refusal for a presented certificate (not supported).
    pub fn certificate_error(&self, host: &HostId) -> HostKeyError {
        HostKeyError::Certificate {
            host: host.name.clone(),
            address: host.address.clone(),
            port: host.port,
            path: self.path.clone(),
        }
    }
}

/// Larger than any real known_hosts (a line is under 1 KB): refused rather
/// than read into memory.
const MAX_KNOWN_HOSTS_BYTES: u64 = 64 << 20;

/// RSA keys are one family whatever signature hash is negotiated.
fn same_family(a: &Algorithm, b: &Algorithm) -> bool {
    match (a, b) {
        (Algorithm::Rsa { .. }, Algorithm::Rsa { .. }) => true,
        _ => a == b,
    }
}

/// The `-t` name of ssh-keyscan / the host key file's infix.
fn short_type(a: &Algorithm) -> String {
    match a {
        Algorithm::Ed25519 => "ed25519".into(),
        Algorithm::Rsa { .. } => "rsa".into(),
        Algorithm::Ecdsa { .. } => "ecdsa".into(),
        Algorithm::Dsa => "dsa".into(),
        other => other.to_string(),
    }
}

fn patterns_match(patterns: &HostPatterns, lookup: &str) -> bool {
    match patterns {
        HostPatterns::HashedName { salt, hash } => {
            let Ok(mac) = <Hmac<sha1::Sha1> as KeyInit>::new_from_slice(salt) else {
                return false;
            };
            mac.chain_update(lookup.as_bytes())
                .verify_slice(hash)
                .is_ok()
        }
        HostPatterns::Patterns(list) => {
            let mut matched = false;
            for p in list {
                let (negated, p) = match p.strip_prefix('!') {
                    Some(rest) => (true, rest),
                    None => (false, p.as_str()),
                };
                if glob_match(&p.to_ascii_lowercase(), lookup) {
                    if negated {
                        return false;
                    }
                    matched = true;
                }
            }
            matched
        }
    }
}

/// OpenSSH's `match_pattern`: `*` any run, `?` one character.  A bare
/// pattern (no brackets) only matches port-22 lookups, as in OpenSSH.
fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED_A: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBCxl+vIbt9bMeCTxXkxw41VbO4wBMWbKOJllvCdHQ/w";
    const ED_B: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO5Fc36CRhJS4+nh3rI0PGrerzBmKzJ9/dKJo4v2sxSB";

    fn key(s: &str) -> PublicKey {
        s.parse().expect("test key parses")
    }

    fn host(addr: &str, port: u16) -> HostId {
        HostId {
            name: "deb12".into(),
            address: addr.into(),
            port,
        }
    }

    fn kh(text: &str) -> KnownHosts {
        KnownHosts::parse(Path::new("/kh"), text)
    }

    #[test]
    fn globs() {
        assert!(glob_match("*", "x"));
        assert!(glob_match("10.0.*", "10.0.1.2"));
        assert!(glob_match("[10.0.0.?]:2222", "[10.0.0.5]:2222"));
        assert!(!glob_match("10.0.*", "[10.0.1.2]:2222"));
        assert!(!glob_match("a?c", "abbc"));
        assert!(glob_match("a*c", "abbc"));
    }

    #[test]
    fn plain_port_and_name_entries() {
        let k = kh(&format!("[127.0.0.1]:2222 {ED_A}\n"));
        assert!(k.check(&host("127.0.0.1", 2222), &key(ED_A)).is_ok());
        // Same address on another port is not the same host.
        assert!(matches!(
            k.check(&host("127.0.0.1", 22), &key(ED_A)),
            Err(HostKeyError::Unknown { .. })
        ));
        // Listed under its inventory name only.
        let k = kh(&format!("deb12 {ED_A}\n"));
        assert!(k.check(&host("10.0.0.1", 22), &key(ED_A)).is_ok());
    }

    #[test]
    fn changed_key_names_lines_and_fingerprint() {
        let k = kh(&format!("# c\n127.0.0.1 {ED_A}\n"));
        let err = k.check(&host("127.0.0.1", 22), &key(ED_B)).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, HostKeyError::Changed { .. }), "{msg}");
        assert!(msg.contains("line(s) 2"), "{msg}");
        assert!(
            msg.contains(&key(ED_B).fingerprint(HashAlg::Sha256).to_string()),
            "{msg}"
        );
        assert!(msg.contains("ssh-ed25519"), "{msg}");
    }

    #[test]
    fn two_keys_of_one_type_match_either() {
        let k = kh(&format!("h1 {ED_B}\n127.0.0.1 {ED_B}\n127.0.0.1 {ED_A}\n"));
        assert!(k.check(&host("127.0.0.1", 22), &key(ED_A)).is_ok());
    }

    #[test]
    fn negation_wildcards_and_revoked() {
        let k = kh(&format!("10.0.0.*,!10.0.0.9 {ED_A}\n"));
        assert!(k.check(&host("10.0.0.4", 22), &key(ED_A)).is_ok());
        assert!(k.check(&host("10.0.0.9", 22), &key(ED_A)).is_err());
        let k = kh(&format!("@revoked * {ED_A}\n10.0.0.4 {ED_A}\n"));
        assert!(matches!(
            k.check(&host("10.0.0.4", 22), &key(ED_A)),
            Err(HostKeyError::Revoked { line: 1, .. })
        ));
    }

    #[test]
    fn garbage_lines_are_skipped_and_missing_file_is_an_error() {
        let k = kh(&format!("garbage\n\tdeb12\t{ED_A}\n"));
        assert!(k.check(&host("1.2.3.4", 22), &key(ED_A)).is_ok());
        let err =
            KnownHosts::read(Path::new("/nonexistent/kh"), &host("1.2.3.4", 2222)).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("ssh-keyscan -p 2222 1.2.3.4 >> /nonexistent/kh"),
            "{msg}"
        );
    }

    #[test]
    fn address_and_name_that_disagree_refuse_the_host_naming_both_lines() {
        // The address finds the key, the name lists another ed25519 key.
        let k = kh(&format!(
            "[10.0.0.5]:2222 {ED_A}\n# x\n[deb12]:2222 {ED_B}\n"
        ));
        let err = k.check(&host("10.0.0.5", 2222), &key(ED_A)).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(
                &err,
                HostKeyError::Disagree { matched_lines, other_lines, .. }
                    if matched_lines == "1" && other_lines == "3"
            ),
            "{msg}"
        );
        assert!(
            msg.contains("[10.0.0.5]:2222") && msg.contains("[deb12]:2222"),
            "{msg}"
        );
        assert!(
            msg.contains("line(s) 1") && msg.contains("line(s) 3"),
            "{msg}"
        );
        // The other way round (port 22): the name finds it, the address not.
        let k = kh(&format!("10.0.0.5 {ED_B}\ndeb12 {ED_A}\n"));
        let err = k.check(&host("10.0.0.5", 22), &key(ED_A)).unwrap_err();
        assert!(
            matches!(&err, HostKeyError::Disagree { matched_lookup, other_lookup, .. }
                if matched_lookup == "deb12" && other_lookup == "10.0.0.5"),
            "{err}"
        );
        // A wildcard entry with another key disagrees with the exact one.
        let k = kh(&format!("10.0.0.5 {ED_A}\nde* {ED_B}\n"));
        assert!(matches!(
            k.check(&host("10.0.0.5", 22), &key(ED_A)),
            Err(HostKeyError::Disagree { .. })
        ));
        // Both list the presented key, or only one lists any key: fine.
        let k = kh(&format!("10.0.0.5 {ED_A}\ndeb12 {ED_A}\n"));
        assert!(k.check(&host("10.0.0.5", 22), &key(ED_A)).is_ok());
        let k = kh(&format!("10.0.0.5 {ED_A}\n"));
        assert!(k.check(&host("10.0.0.5", 22), &key(ED_A)).is_ok());
        // Both list another key: changed, with every line named.
        let k = kh(&format!("10.0.0.5 {ED_B}\ndeb12 {ED_B}\n"));
        let err = k.check(&host("10.0.0.5", 22), &key(ED_A)).unwrap_err();
        assert!(
            matches!(&err, HostKeyError::Changed { lines, .. } if lines == "1, 2"),
            "{err}"
        );
    }

    /// Runs `read` in a thread and requires an answer well within a
    /// connect timeout: a blocking open would hang here.
    #[allow(clippy::result_large_err)]
    fn read_bounded(path: &Path) -> Result<KnownHosts, HostKeyError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let p = path.to_owned();
        std::thread::spawn(move || {
            let _ = tx.send(KnownHosts::read(&p, &host("1.2.3.4", 22)));
        });
        rx.recv_timeout(std::time::Duration::from_secs(5))
            .expect("known_hosts read blocked")
    }

    #[test]
    fn a_known_hosts_that_is_not_a_regular_file_fails_closed_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("kh-fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        let msg = read_bounded(&fifo).unwrap_err().to_string();
        assert!(msg.contains("a FIFO, not a regular file"), "{msg}");
        let msg = read_bounded(dir.path()).unwrap_err().to_string();
        assert!(msg.contains("a folder, not a regular file"), "{msg}");
        let msg = read_bounded(Path::new("/dev/null"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("a character device"), "{msg}");
        // A link to a regular file is still read (dotfile setups do that).
        let real = dir.path().join("real");
        let mut bytes = b"\xff not utf-8\n".to_vec();
        bytes.extend_from_slice(format!("deb12 {ED_A}\n").as_bytes());
        std::fs::write(&real, bytes).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let k = read_bounded(&link).unwrap();
        assert!(k.check(&host("1.2.3.4", 22), &key(ED_A)).is_ok());
        // Unreadable: root reads anything, so only checked as another user.
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o000)).unwrap();
            assert!(matches!(
                read_bounded(&real),
                Err(HostKeyError::File { .. })
            ));
        }
    }

    #[test]
    fn preferred_algorithms_follow_the_file() {
        let rsa = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQCgnzmjUhnUkC2hIpthzvbf9fJRgz/AVDzhA2WkJ9EcoXjjsMbUTmjBBE26d2X1moqiZMGAfPJfvEpRLtRUpK/gg9YMnGvPzt9rRWGrhNlPDLrhA6E6ZtE2RCxLq5wYqdeSitbXqWOVEgrFqzs/Gl9to6m0k0CNA+hopWgpKye+fQ==";
        let k = kh(&format!("[h]:2 {rsa}\n"));
        let ours = russh::Preferred::DEFAULT.key.to_vec();
        let picked = k.preferred_algorithms(&host("h", 2), &ours).expect("known");
        assert!(!picked.is_empty());
        assert!(picked.iter().all(|a| matches!(a, Algorithm::Rsa { .. })));
        assert!(k.preferred_algorithms(&host("other", 2), &ours).is_none());
    }
}
