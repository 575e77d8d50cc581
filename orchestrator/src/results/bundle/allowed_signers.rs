//! `allowed_signers` files, as `ssh-keygen -Y verify` and git read them
//! (ssh-keygen(1), "ALLOWED SIGNERS"):
//!
//! ```text
//! # comment
//! alice@example.com ssh-ed25519 AAAAC3Nza... alice's laptop
//! bob@example.com,ci@example.com namespaces="fsmatrix",valid-before="20271231Z" ecdsa-sha2-nistp256 AAAA...
//! ```
//!
//! Each line: principals (comma-separated patterns), optional options, key
//! type, base64 key, optional comment.  Options: `namespaces="list"` (a
//! pattern list the signature's namespace must match), `valid-after` /
//! `valid-before` (`YYYYMMDD[HHMM[SS]]`, with `Z` or `UTC` for UTC, else
//! local time, as ssh-keygen reads them) and `cert-authority`, which
//! fsmatrix does not support: such lines are kept apart and never vouch for
//! a signature.  A file is other people's input: any line ssh-keygen would
//! refuse (an unknown option, a bad key, a bad time) refuses the whole file,
//! with its file:line, as ssh-keygen stops at it.
use std::fmt;
use std::path::{Path, PathBuf};

use russh::keys::ssh_key::public::KeyData;
use russh::keys::PublicKey;

/// The largest allowed-signers file read (a team's file is a few KiB).
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// One key line of an allowed-signers file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedSigner {
    /// 1-based line number in the file.
    pub line: usize,
    /// The principals field as written (comma-separated patterns).
    pub principals: String,
    pub key: PublicKey,
    /// `namespaces="..."`: a pattern list; `None` allows every namespace.
    pub namespaces: Option<String>,
    /// `valid-after` / `valid-before`, in Unix seconds.
    pub valid_after: Option<i64>,
    pub valid_before: Option<i64>,
}

/// A parsed allowed-signers file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedSigners {
    pub path: PathBuf,
    /// Key lines, in file order.
    pub signers: Vec<AllowedSigner>,
    /// Lines with `cert-authority` (not supported; never used).
    pub cert_authority_lines: Vec<usize>,
}

/// Why an allowed-signers file is refused; `line` 0 is the file as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct AllowedSignersError {
    pub path: PathBuf,
    pub line: usize,
    pub what: String,
}

impl fmt::Display for AllowedSignersError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(
                f,
                "read the allowed signers file {}: {}",
                self.path.display(),
                self.what
            )
        } else {
            write!(
                f,
                "read the allowed signers file {}:{}: {}",
                self.path.display(),
                self.line,
                self.what
            )
        }
    }
}

/// Why a listed key may not vouch for a signature in `namespace` at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotAllowed {
    Namespace { namespaces: String },
    NotYetValid { valid_after: i64 },
    Expired { valid_before: i64 },
}

impl fmt::Display for NotAllowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotAllowed::Namespace { namespaces } => {
                write!(f, "its namespaces={namespaces:?} do not include it")
            }
            NotAllowed::NotYetValid { valid_after } => {
                write!(f, "it is valid only after {}", unix_text(*valid_after))
            }
            NotAllowed::Expired { valid_before } => {
                write!(f, "it was valid only before {}", unix_text(*valid_before))
            }
        }
    }
}

fn unix_text(t: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(t)
        .ok()
        .and_then(|d| {
            d.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| format!("{t} (Unix time)"))
}

impl AllowedSigner {
    /// `Ok` if this line lets its key sign in `namespace` at `now` (Unix
    /// seconds), as ssh-keygen decides it.
    pub fn allows(&self, namespace: &str, now: i64) -> Result<(), NotAllowed> {
        if let Some(ns) = &self.namespaces {
            if !match_pattern_list(namespace, ns) {
                return Err(NotAllowed::Namespace {
                    namespaces: ns.clone(),
                });
            }
        }
        if let Some(t) = self.valid_after {
            if now < t {
                return Err(NotAllowed::NotYetValid { valid_after: t });
            }
        }
        if let Some(t) = self.valid_before {
            if now > t {
                return Err(NotAllowed::Expired { valid_before: t });
            }
        }
        Ok(())
    }
}

impl AllowedSigners {
    /// Read and parse `path` (a regular file of at most [`MAX_FILE_BYTES`]).
    pub fn load(path: &Path) -> Result<AllowedSigners, AllowedSignersError> {
        let bytes = crate::files::read_regular(path, MAX_FILE_BYTES).map_err(|what| {
            AllowedSignersError {
                path: path.to_owned(),
                line: 0,
                what,
            }
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let upto = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            AllowedSignersError {
                path: path.to_owned(),
                line: upto.iter().filter(|&&b| b == b'\n').count() + 1,
                what: "not UTF-8 text".into(),
            }
        })?;
        AllowedSigners::parse(path, &text)
    }

    /// Parse the text of an allowed-signers file (`path` for messages).
    pub fn parse(path: &Path, text: &str) -> Result<AllowedSigners, AllowedSignersError> {
        let mut out = AllowedSigners {
            path: path.to_owned(),
            signers: Vec::new(),
            cert_authority_lines: Vec::new(),
        };
        for (i, line) in text.lines().enumerate() {
            let bad = |what: String| AllowedSignersError {
                path: path.to_owned(),
                line: i + 1,
                what,
            };
            match parse_line(line).map_err(bad)? {
                Line::Blank => {}
                Line::CertAuthority => out.cert_authority_lines.push(i + 1),
                Line::Signer {
                    principals,
                    key,
                    options,
                } => out.signers.push(AllowedSigner {
                    line: i + 1,
                    principals,
                    key: *key,
                    namespaces: options.namespaces,
                    valid_after: options.valid_after,
                    valid_before: options.valid_before,
                }),
            }
        }
        Ok(out)
    }

    /// The lines that list `key` (plain keys; certificates are never listed).
    pub fn lines_for<'a>(&'a self, key: &'a KeyData) -> impl Iterator<Item = &'a AllowedSigner> {
        self.signers.iter().filter(move |s| s.key.key_data() == key)
    }
}

enum Line {
    Blank,
    CertAuthority,
    Signer {
        principals: String,
        key: Box<PublicKey>,
        options: Options,
    },
}

#[derive(Default)]
struct Options {
    namespaces: Option<String>,
    valid_after: Option<i64>,
    valid_before: Option<i64>,
    cert_authority: bool,
}

/// The key types a key field may start with (what tells options and key
/// apart, as ssh-keygen tries a key first).
const KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ssh-rsa",
    "ssh-dss",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
];

fn is_key_type(word: &str) -> bool {
    KEY_TYPES.contains(&word) || word.ends_with("-cert-v01@openssh.com")
}

/// Split off the first field: up to whitespace outside double quotes (as
/// OpenSSH's `sshkey_advance_past_options`).  `Err` on an unclosed quote.
fn take_field(s: &str) -> Result<(&str, &str), String> {
    let b = s.as_bytes();
    let mut quoted = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' if !quoted => {
                return Ok((&s[..i], s[i..].trim_start_matches([' ', '\t'])));
            }
            b'\\' if b.get(i + 1) == Some(&b'"') => i += 1,
            b'"' => quoted = !quoted,
            _ => {}
        }
        i += 1;
    }
    if quoted {
        return Err("a quote is not closed".into());
    }
    Ok((s, ""))
}

fn parse_line(line: &str) -> Result<Line, String> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let rest = line.trim_start_matches([' ', '\t']);
    if rest.is_empty() || rest.starts_with('#') {
        return Ok(Line::Blank);
    }
    let (principals, rest) = take_field(rest)?;
    if principals.is_empty() || principals.starts_with(',') || principals.ends_with(',') {
        return Err(format!("bad principals field {principals:?}"));
    }
    let (first, after_first) = take_field(rest)?;
    let (options, key_type, rest) = if is_key_type(first) {
        (Options::default(), first, after_first)
    } else if first.is_empty() {
        return Err(
            "no key after the principals (expected `principals [options] keytype base64`)".into(),
        );
    } else {
        let options = parse_options(first)?;
        let (key_type, rest) = take_field(after_first)?;
        if !is_key_type(key_type) {
            return Err(if key_type.is_empty() {
                "no key after the options".to_string()
            } else {
                format!(
                    "{key_type:?} is not a key type ({}, ...)",
                    KEY_TYPES[..3].join(", ")
                )
            });
        }
        (options, key_type, rest)
    };
    if options.cert_authority {
        return Ok(Line::CertAuthority);
    }
    if key_type.ends_with("-cert-v01@openssh.com") {
        return Err(format!(
            "a certificate ({key_type}) is not supported as a signer key; list the plain key"
        ));
    }
    let (base64, _comment) = take_field(rest)?;
    if base64.is_empty() {
        return Err(format!("no base64 key data after {key_type}"));
    }
    let key = PublicKey::from_openssh(&format!("{key_type} {base64}"))
        .map_err(|e| format!("not a valid {key_type} public key: {e}"))?;
    if key.algorithm().as_str() != key_type {
        return Err(format!(
            "the key data is a {} key, the line says {key_type}",
            key.algorithm()
        ));
    }
    Ok(Line::Signer {
        principals: principals.to_owned(),
        key: Box::new(key),
        options,
    })
}

/// `cert-authority,namespaces="a,b",valid-after="20260101Z"`, as OpenSSH's
/// `sshsigopt_parse`: names case-insensitive, values in double quotes,
/// each at most once, anything else refused.
fn parse_options(s: &str) -> Result<Options, String> {
    let mut o = Options::default();
    let mut rest = s;
    loop {
        let lower = rest.to_ascii_lowercase();
        if lower.starts_with("cert-authority")
            && matches!(rest.as_bytes().get(14), None | Some(b','))
        {
            o.cert_authority = true;
            rest = &rest[14..];
        } else if let Some(name) = ["namespaces", "valid-after", "valid-before"]
            .into_iter()
            .find(|n| lower.starts_with(&format!("{n}=")))
        {
            let (value, after) =
                dequote(&rest[name.len() + 1..]).map_err(|why| format!("option {name}: {why}"))?;
            rest = after;
            let twice = || format!("option {name} is given twice");
            match name {
                "namespaces" => {
                    if o.namespaces.is_some() {
                        return Err(twice());
                    }
                    o.namespaces = Some(value);
                }
                _ => {
                    let t = parse_time(&value).ok_or_else(|| {
                        format!(
                            "option {name}: {value:?} is not a time (YYYYMMDD, YYYYMMDDHHMM or \
                             YYYYMMDDHHMMSS, with Z or UTC for UTC)"
                        )
                    })?;
                    let slot = if name == "valid-after" {
                        &mut o.valid_after
                    } else {
                        &mut o.valid_before
                    };
                    if slot.is_some() {
                        return Err(twice());
                    }
                    *slot = Some(t);
                }
            }
        } else {
            let name = rest.split([',', '=']).next().unwrap_or(rest);
            return Err(format!(
                "{name:?} is neither a key type nor a known option (namespaces, valid-after, \
                 valid-before, cert-authority)"
            ));
        }
        match rest.strip_prefix(',') {
            Some("") => return Err("the options end with a comma".into()),
            Some(r) => rest = r,
            None if rest.is_empty() => break,
            None => return Err(format!("unexpected {rest:?} after an option")),
        }
    }
    if let (Some(a), Some(b)) = (o.valid_after, o.valid_before) {
        if b <= a {
            return Err("valid-before is not after valid-after".into());
        }
    }
    Ok(o)
}

/// A `"..."` value (`\"` is a quote); returns it and what follows.
fn dequote(s: &str) -> Result<(String, &str), String> {
    let Some(body) = s.strip_prefix('"') else {
        return Err("the value must be in double quotes".into());
    };
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if body[i + 1..].starts_with('"') => {
                out.push('"');
                chars.next();
            }
            '"' => return Ok((out, &body[i + 1..])),
            _ => out.push(c),
        }
    }
    Err("the value's closing quote is missing".into())
}

/// `YYYYMMDD`, `YYYYMMDDHHMM` or `YYYYMMDDHHMMSS`, with a `Z` or `UTC`
/// suffix for UTC, else local time (OpenSSH's `parse_absolute_time`).
pub fn parse_time(s: &str) -> Option<i64> {
    let upper = s.to_ascii_uppercase();
    let (digits, utc) = if let Some(d) = upper.strip_suffix("UTC") {
        (d, true)
    } else if let Some(d) = upper.strip_suffix('Z') {
        (d, true)
    } else {
        (upper.as_str(), false)
    };
    if !matches!(digits.len(), 8 | 12 | 14) || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = |a: usize, b: usize| digits.get(a..b).and_then(|x| x.parse::<u32>().ok());
    let year = i32::try_from(n(0, 4)?).ok()?;
    let month = time::Month::try_from(u8::try_from(n(4, 6)?).ok()?).ok()?;
    let day = u8::try_from(n(6, 8)?).ok()?;
    let (hour, minute, second) = match digits.len() {
        8 => (0, 0, 0),
        12 => (n(8, 10)?, n(10, 12)?, 0),
        _ => (n(8, 10)?, n(10, 12)?, n(12, 14)?),
    };
    let date = time::Date::from_calendar_date(year, month, day).ok()?;
    let t = time::Time::from_hms(
        u8::try_from(hour).ok()?,
        u8::try_from(minute).ok()?,
        u8::try_from(second).ok()?,
    )
    .ok()?;
    let naive = time::PrimitiveDateTime::new(date, t);
    if utc {
        return Some(naive.assume_utc().unix_timestamp());
    }
    local_to_unix(naive)
}

/// A local wall-clock time as Unix seconds, through the C library's
/// `mktime` (the time zone rules ssh-keygen uses too).
fn local_to_unix(t: time::PrimitiveDateTime) -> Option<i64> {
    // SAFETY: `tm` is a plain C struct; all-zero is a valid value (a null
    // `tm_zone` is allowed), and mktime only reads and normalises it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    tm.tm_year = t.year() - 1900;
    tm.tm_mon = i32::from(u8::from(t.month())) - 1;
    tm.tm_mday = i32::from(t.day());
    tm.tm_hour = i32::from(t.hour());
    tm.tm_min = i32::from(t.minute());
    tm.tm_sec = i32::from(t.second());
    tm.tm_isdst = -1;
    // SAFETY: `tm` is a valid, exclusively borrowed `struct tm`.
    let secs = unsafe { libc::mktime(&mut tm) };
    // time_t is 32 bits on some targets.
    #[allow(clippy::useless_conversion)]
    let secs = i64::from(secs);
    (secs != -1).then_some(secs)
}

/// OpenSSH's `match_pattern`: `*` any run, `?` any one character.
pub fn match_pattern(s: &str, pattern: &str) -> bool {
    let s: Vec<char> = s.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    // Iterative wildcard match with backtracking to the last `*`.
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if j < p.len() && (p[j] == '?' || p[j] == s[i]) {
            i += 1;
            j += 1;
        } else if j < p.len() && p[j] == '*' {
            star = Some((j, i));
            j += 1;
        } else if let Some((sj, si)) = star {
            j = sj + 1;
            i = si + 1;
            star = Some((sj, si + 1));
        } else {
            return false;
        }
    }
    while j < p.len() && p[j] == '*' {
        j += 1;
    }
    j == p.len()
}

/// OpenSSH's `match_pattern_list`: comma-separated patterns, `!` negates;
/// true if some pattern matches and no negated one does.
pub fn match_pattern_list(s: &str, list: &str) -> bool {
    let mut matched = false;
    for pat in list.split(',') {
        let (negated, pat) = match pat.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, pat),
        };
        if match_pattern(s, pat) {
            if negated {
                return false;
            }
            matched = true;
        }
    }
    matched
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILM+rvN+ot98qgEN796jTiQfZfG1KaT0PtFDJ/XFSqti";

    fn parse(text: &str) -> Result<AllowedSigners, AllowedSignersError> {
        AllowedSigners::parse(Path::new("allowed_signers"), text)
    }

    #[test]
    fn lines_with_and_without_options() {
        let text = format!(
            "# team\n\n  alice@example.com {ED} alice's laptop\n\
             bob@x,ci@x namespaces=\"git,fsmatrix\",valid-after=\"20260101Z\",VALID-BEFORE=\"20270101000000UTC\" {ED}\n\
             ca@x cert-authority {ED}\n"
        );
        let a = parse(&text).unwrap();
        assert_eq!(a.signers.len(), 2);
        assert_eq!(a.signers[0].line, 3);
        assert_eq!(a.signers[0].principals, "alice@example.com");
        assert_eq!(a.signers[0].namespaces, None);
        let b = &a.signers[1];
        assert_eq!(b.principals, "bob@x,ci@x");
        assert_eq!(b.namespaces.as_deref(), Some("git,fsmatrix"));
        assert_eq!(b.valid_after, Some(1_767_225_600));
        assert_eq!(b.valid_before, Some(1_798_761_600));
        assert_eq!(a.cert_authority_lines, vec![5]);
        assert!(b.allows("fsmatrix", 1_780_000_000).is_ok());
        assert!(matches!(
            b.allows("file", 1_780_000_000),
            Err(NotAllowed::Namespace { .. })
        ));
        assert!(matches!(
            b.allows("fsmatrix", 1_700_000_000),
            Err(NotAllowed::NotYetValid { .. })
        ));
        assert!(matches!(
            b.allows("fsmatrix", 1_800_000_000),
            Err(NotAllowed::Expired { .. })
        ));
    }

    #[test]
    fn bad_lines_are_refused_with_their_line() {
        for (text, what) in [
            (format!("a@x bogus=\"1\" {ED}"), "known option"),
            (format!("a@x namespaces=fsmatrix {ED}"), "double quotes"),
            (format!("a@x namespaces=\"fsmatrix {ED}"), "quote"),
            (format!("a@x valid-after=\"2026\" {ED}"), "not a time"),
            (format!("a@x valid-after=\"20261301\" {ED}"), "not a time"),
            (
                format!("a@x valid-after=\"20270101Z\",valid-before=\"20260101Z\" {ED}"),
                "not after",
            ),
            (
                format!("a@x namespaces=\"a\",namespaces=\"b\" {ED}"),
                "twice",
            ),
            (format!("a@x namespaces=\"a\", {ED}"), "comma"),
            ("a@x ssh-ed25519 AAAA!!".to_string(), "not a valid"),
            ("a@x ssh-ed25519".to_string(), "no base64"),
            ("a@x".to_string(), "no key"),
            (
                "a@x ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAILM+rvN+ot98qgEN796jTiQfZfG1KaT0PtFDJ/XFSqti"
                    .to_string(),
                "",
            ),
        ] {
            let e = parse(&format!("# ok\n{text}\n")).unwrap_err();
            assert_eq!(e.line, 2, "{text}: {e}");
            assert!(e.to_string().contains(what), "{text}: {e}");
            assert!(e.to_string().contains("allowed_signers:2:"), "{e}");
        }
    }

    #[test]
    fn patterns_as_openssh_matches_them() {
        assert!(match_pattern("fsmatrix", "fsmatrix"));
        assert!(match_pattern("fsmatrix", "fs*"));
        assert!(match_pattern("fsmatrix", "*"));
        assert!(match_pattern("fsmatrix", "f?matri?"));
        assert!(match_pattern("fsmatrix", "*m*x"));
        assert!(!match_pattern("fsmatrix", "git"));
        assert!(!match_pattern("fsmatrix", "fsmatri"));
        assert!(match_pattern_list("fsmatrix", "git,fsmatrix"));
        assert!(match_pattern_list("fsmatrix", "*,!git"));
        assert!(!match_pattern_list("fsmatrix", "*,!fs*"));
        assert!(!match_pattern_list("fsmatrix", "git,file"));
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("20260101Z"), Some(1_767_225_600));
        assert_eq!(parse_time("202601010000z"), Some(1_767_225_600));
        assert_eq!(parse_time("20260101000001UTC"), Some(1_767_225_601));
        assert!(parse_time("20260101").is_some());
        for bad in [
            "2026010",
            "2026010100",
            "20260230Z",
            "20260101246000Z",
            "x0260101",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }
}
