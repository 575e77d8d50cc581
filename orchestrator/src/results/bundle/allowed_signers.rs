//! `allowed_signers` files, read as `ssh-keygen -Y verify` of OpenSSH 9.2p1
//! (Debian 12's, the one the differential test runs) reads them
//! (ssh-keygen(1), "ALLOWED SIGNERS"):
//!
//! ```text
//! # comment
//! alice@example.com ssh-ed25519 AAAAC3Nza... alice's laptop
//! bob@example.com,ci@example.com namespaces="fsmatrix",valid-before="20271231Z" ecdsa-sha2-nistp256 AAAA...
//! ```
//!
//! Each line: principals (a pattern list), optional options, key type,
//! base64 key, optional comment.  Every rule below is ported from OpenSSH's
//! sources and cites the function it follows; where OpenSSH versions
//! differ, 9.2p1's rule is the one kept (and said so).
//!
//! A line that ssh-keygen cannot read (bad key, unknown option, bad time,
//! missing key) is **skipped**, as 9.2p1's `check_allowed_keys_line`
//! (sshsig.c) turns every parse error into "key not found" and goes on to
//! the next line: a bad line can only take trust away, never add it.
//! fsmatrix keeps each skipped line with its reason so that `verify` can
//! name it (file:line), which ssh-keygen prints to stderr too.
//! `cert-authority` lines vouch only for certificate signatures, which
//! fsmatrix does not accept; for a plain key's signature they never match
//! (sshsig.c `check_allowed_keys_line`: `sigopts->ca && sshkey_is_cert()`),
//! so they are kept apart and named.
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
    /// The principals field as ssh-keygen reads it (a pattern list, quotes
    /// removed as misc.c `strdelimw` removes them).
    pub principals: String,
    pub key: PublicKey,
    /// `namespaces="..."`: a pattern list; `None` allows every namespace.
    pub namespaces: Option<String>,
    /// `valid-after` / `valid-before`, in Unix seconds (never 0: OpenSSH
    /// refuses a time of 0, sshsig.c `sshsigopt_parse`).
    pub valid_after: Option<i64>,
    pub valid_before: Option<i64>,
}

/// A parsed allowed-signers file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedSigners {
    pub path: PathBuf,
    /// Key lines, in file order.
    pub signers: Vec<AllowedSigner>,
    /// Lines with `cert-authority` (they vouch only for certificates).
    pub cert_authority_lines: Vec<usize>,
    /// Lines ssh-keygen cannot read either, with why: skipped, as it skips them.
    pub skipped: Vec<(usize, String)>,
}

/// Why an allowed-signers file cannot be read at all (missing, not a
/// regular file, too large); `line` 0 is the file as a whole.
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

/// Why a listed key may not vouch for a signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotAllowed {
    /// The principal asked for (`--principal`) is not one the line names.
    Principal {
        principal: String,
    },
    /// No principal was asked for, and the line's principals field names
    /// nobody (only negations, or `alice,!alice`).
    NamesNobody,
    Namespace {
        namespaces: String,
    },
    NotYetValid {
        valid_after: i64,
    },
    Expired {
        valid_before: i64,
    },
}

impl fmt::Display for NotAllowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotAllowed::Principal { principal } => write!(
                f,
                "its principals do not include {:?}",
                crate::text::terminal_safe(principal)
            ),
            NotAllowed::NamesNobody => write!(
                f,
                "its principals name nobody (a list of only negations never matches, as in \
                 ssh-keygen)"
            ),
            NotAllowed::Namespace { namespaces } => write!(
                f,
                "its namespaces={:?} do not include it",
                crate::text::terminal_safe(namespaces)
            ),
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
    /// `Ok` if this line lets its key sign for `principal` in `namespace`
    /// at `now` (Unix seconds), in the order ssh-keygen checks it
    /// (sshsig.c `parse_principals_key_and_options`, then
    /// `check_allowed_keys_line`): the principal against the principals
    /// pattern list, the namespace against `namespaces=`, then
    /// `now < valid-after` is too early and `now > valid-before` too late
    /// (both edges are valid).  Without a principal (`ssh-keygen -Y
    /// find-principals` does not match one), the line must still name
    /// somebody: see [`names_somebody`].
    pub fn allows(
        &self,
        principal: Option<&str>,
        namespace: &str,
        now: i64,
    ) -> Result<(), NotAllowed> {
        match principal {
            Some(p) => {
                if !match_pattern_list(p, &self.principals) {
                    return Err(NotAllowed::Principal {
                        principal: p.to_owned(),
                    });
                }
            }
            None => {
                if !names_somebody(&self.principals) {
                    return Err(NotAllowed::NamesNobody);
                }
            }
        }
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

/// How many positive patterns [`names_somebody`] tries.
pub const WITNESS_PATTERNS: usize = 64;

/// Does the principals pattern list `list` match at least one name?  Sound,
/// not complete: it tries names built from each positive pattern (its `*`
/// as nothing or one character, its `?` as one character) and says yes only
/// for a name `ssh-keygen -Y verify -I NAME` would accept.  A list of only
/// negations (`!alice`, `!*`) or one that takes back what it gives
/// (`alice,!alice`) names nobody.  Only the first [`WITNESS_PATTERNS`]
/// positive patterns are tried (each try reads the whole list), so a line
/// of a million patterns costs linear time, not quadratic; past them the
/// answer is no, which only takes trust away.
pub fn names_somebody(list: &str) -> bool {
    for pat in list
        .split(',')
        .filter(|p| !p.starts_with('!'))
        .take(WITNESS_PATTERNS)
    {
        for fill in ["", "a", "0", "_", "."] {
            let one = if fill.is_empty() { "a" } else { fill };
            let name: String = pat
                .chars()
                .map(|c| match c {
                    '*' => fill.to_string(),
                    '?' => one.to_string(),
                    c => c.to_string(),
                })
                .collect();
            if match_pattern_list(&name, list) {
                return true;
            }
        }
    }
    false
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
        Ok(AllowedSigners::parse_bytes(path, &bytes))
    }

    /// Parse the text of an allowed-signers file (`path` for messages).
    pub fn parse(path: &Path, text: &str) -> AllowedSigners {
        AllowedSigners::parse_bytes(path, text.as_bytes())
    }

    /// Parse the bytes of an allowed-signers file, line by line as
    /// `getline(3)` splits it in sshsig.c `sshsig_check_allowed_keys` (each
    /// line keeps its `\n`; a last line without one counts).
    pub fn parse_bytes(path: &Path, bytes: &[u8]) -> AllowedSigners {
        let mut out = AllowedSigners {
            path: path.to_owned(),
            signers: Vec::new(),
            cert_authority_lines: Vec::new(),
            skipped: Vec::new(),
        };
        for (i, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
            let n = i + 1;
            // ssh-keygen reads bytes; a line that is not UTF-8 is skipped
            // here (it could only match a principal given in the same
            // bytes, which `--principal` cannot be).
            let Ok(line) = std::str::from_utf8(line) else {
                out.skipped.push((n, "not UTF-8 text".into()));
                continue;
            };
            match parse_line(line) {
                Ok(Line::Blank) => {}
                Ok(Line::Signer {
                    principals,
                    key,
                    options,
                }) => {
                    if options.cert_authority {
                        out.cert_authority_lines.push(n);
                    } else {
                        out.signers.push(AllowedSigner {
                            line: n,
                            principals,
                            key: *key,
                            namespaces: options.namespaces,
                            valid_after: options.valid_after,
                            valid_before: options.valid_before,
                        });
                    }
                }
                Err(why) => out.skipped.push((n, why)),
            }
        }
        out
    }

    /// The lines that list `key` (plain keys; certificates are never listed).
    pub fn lines_for<'a>(&'a self, key: &'a KeyData) -> impl Iterator<Item = &'a AllowedSigner> {
        self.signers.iter().filter(move |s| s.key.key_data() == key)
    }

    /// The skipped lines as `FILE:LINE: why`, for notes.
    pub fn skipped_notes(&self) -> Vec<String> {
        self.skipped
            .iter()
            .map(|(n, why)| {
                format!(
                    "{}:{n}: skipped, as ssh-keygen skips it: {}",
                    self.path.display(),
                    crate::text::terminal_safe(why)
                )
            })
            .collect()
    }
}

enum Line {
    Blank,
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

/// misc.c's `WHITESPACE` (`" \t\r\n"`).
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// misc.c `strdelim_internal(s, 0)` (`strdelimw`): the next token, up to
/// whitespace; a `"` removes itself and quotes up to the next `"` (which
/// ends the token).  Returns the token and what follows (`None`: there was
/// no delimiter at all, OpenSSH's `*s == NULL`), or `Err` for an unclosed
/// quote.
fn strdelimw(s: &str) -> Result<(String, Option<&str>), ()> {
    let b = s.as_bytes();
    let Some(d) = b.iter().position(|&c| is_ws(c) || c == b'"') else {
        return Ok((s.to_owned(), None));
    };
    let skip_ws = |from: usize| {
        let mut j = from;
        while j < b.len() && is_ws(b[j]) {
            j += 1;
        }
        &s[j..]
    };
    if b[d] == b'"' {
        let Some(q) = b[d + 1..].iter().position(|&c| c == b'"') else {
            return Err(());
        };
        let q = d + 1 + q;
        let token = format!("{}{}", &s[..d], &s[d + 1..q]);
        return Ok((token, Some(skip_ws(q + 1))));
    }
    Ok((s[..d].to_owned(), Some(skip_ws(d + 1))))
}

/// sshkey.c `peek_type_nid`: the key type names OpenSSH 9.2p1 knows (its
/// `keyimpls`, signature-only RSA names included: they read as RSA keys).
/// Certificates are known to OpenSSH but never vouch for a plain key's
/// signature here, so they are not read.
fn plain_type_matches(name: &str, key: &PublicKey) -> bool {
    let alg = key.algorithm();
    match name {
        "rsa-sha2-256" | "rsa-sha2-512" => key.key_data().is_rsa(),
        _ => alg.as_str() == name,
    }
}

/// sshkey.c `sshkey_read`: `TYPE BASE64` at the start of `cp` (the type
/// must be followed by a space or tab; the base64 runs to the next space
/// or tab, so a line's `\r\n` is in it, and `b64_pton` skips it).  Returns
/// the key and the rest (the comment).
fn sshkey_read(cp: &str) -> Result<(PublicKey, &str), String> {
    let b = cp.as_bytes();
    let space = b
        .iter()
        .position(|&c| c == b' ' || c == b'\t')
        .ok_or_else(|| "no key (a key type and its base64)".to_string())?;
    let name = &cp[..space];
    let mut i = space;
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    if i == b.len() {
        return Err(format!("no base64 key data after {name:?}"));
    }
    let end = b[i..]
        .iter()
        .position(|&c| c == b' ' || c == b'\t')
        .map_or(b.len(), |e| i + e);
    let blob = b64_pton(&b[i..end]).ok_or_else(|| format!("{name:?}: the key is not base64"))?;
    let key = PublicKey::from_bytes(&blob)
        .map_err(|e| format!("{name:?}: not a public key fsmatrix can use ({e})"))?;
    if !plain_type_matches(name, &key) {
        return Err(format!(
            "the key data is a {} key, the line says {name:?}",
            key.algorithm()
        ));
    }
    let mut j = end;
    while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
        j += 1;
    }
    Ok((key, &cp[j..]))
}

/// authfile.c `sshkey_advance_past_options`: the options run to the first
/// space or tab outside double quotes (`\"` is skipped); `Err` when a
/// quote is left open.
fn advance_past_options(cp: &str) -> Result<usize, ()> {
    let b = cp.as_bytes();
    let mut quoted = false;
    let mut i = 0;
    while i < b.len() && (quoted || (b[i] != b' ' && b[i] != b'\t')) {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'"') {
            i += 1;
        } else if b[i] == b'"' {
            quoted = !quoted;
        }
        i += 1;
    }
    if i == b.len() && quoted {
        return Err(());
    }
    Ok(i)
}

/// One line, as sshsig.c `parse_principals_key_and_options` (9.2p1).
fn parse_line(line: &str) -> Result<Line, String> {
    // Leading spaces and tabs only (10.0 also skips \r and \n here).
    let cp = line.trim_start_matches([' ', '\t']);
    if cp.is_empty() || cp.starts_with('#') {
        return Ok(Line::Blank);
    }
    let (principals, rest) = strdelimw(cp)
        .map_err(|()| "invalid line: a quote in the principals is not closed".to_string())?;
    // An empty principals field (a line of whitespace) matches no
    // principal: `match_pattern_list(principal, "")` is 0.
    if principals.is_empty() {
        return Ok(Line::Blank);
    }
    let Some(cp) = rest else {
        return Err("invalid line: only a principals field".into());
    };
    let (key, options) = match sshkey_read(cp) {
        Ok((key, _comment)) => (key, Options::default()),
        Err(first) => {
            // Not a key: options, then the key.
            let end = advance_past_options(cp)
                .map_err(|()| "invalid options: a quote is not closed".to_string())?;
            let opts = &cp[..end];
            if end == cp.len() {
                return Err(format!(
                    "missing key (expected `principals [options] keytype base64`; {first})"
                ));
            }
            let rest = cp[end + 1..].trim_start_matches([' ', '\t']);
            let (key, _comment) = sshkey_read(rest).map_err(|e| format!("invalid key: {e}"))?;
            let options = parse_options(opts).map_err(|e| format!("bad options: {e}"))?;
            (key, options)
        }
    };
    Ok(Line::Signer {
        principals,
        key: Box::new(key),
        options,
    })
}

/// Does `s` start with `term` (ASCII case-insensitive)?  misc.c's
/// `strncasecmp` in `opt_flag` / `opt_match`.
fn starts_with_nocase(s: &str, term: &str) -> bool {
    s.len() >= term.len() && s.as_bytes()[..term.len()].eq_ignore_ascii_case(term.as_bytes())
}

/// sshsig.c `sshsigopt_parse` (9.2p1): `cert-authority` (misc.c
/// `opt_flag`: a prefix, case-insensitive), `namespaces=`, `valid-after=`,
/// `valid-before=` (misc.c `opt_match`, then `opt_dequote`); after each, a
/// comma or the end; a time of 0 is invalid; a clause given twice is
/// refused; `valid-before` must be after `valid-after`.
fn parse_options(s: &str) -> Result<Options, String> {
    let mut o = Options::default();
    let mut rest = s;
    while !rest.is_empty() {
        if starts_with_nocase(rest, "cert-authority") {
            o.cert_authority = true;
            rest = &rest["cert-authority".len()..];
        } else if let Some(name) = ["namespaces", "valid-after", "valid-before"]
            .into_iter()
            .find(|n| starts_with_nocase(rest, n) && rest.as_bytes().get(n.len()) == Some(&b'='))
        {
            // "multiple clauses": 9.2p1 tests `valid_after != 0`, and 0 is
            // never stored (it is refused below).
            let twice = match name {
                "namespaces" => o.namespaces.is_some(),
                "valid-after" => o.valid_after.is_some(),
                _ => o.valid_before.is_some(),
            };
            if twice {
                return Err(format!("multiple \"{name}\" clauses"));
            }
            let (value, after) = opt_dequote(&rest[name.len() + 1..])?;
            rest = after;
            if name == "namespaces" {
                o.namespaces = Some(value);
            } else {
                let t = parse_absolute_time(&value)
                    .filter(|&t| t != 0)
                    .ok_or_else(|| {
                        format!(
                            "invalid \"{name}\" time {value:?} (YYYYMMDD, YYYYMMDDHHMM or \
                         YYYYMMDDHHMMSS, with Z or UTC for UTC, after 1970-01-01T00:00:00)"
                        )
                    })?;
                if name == "valid-after" {
                    o.valid_after = Some(t);
                } else {
                    o.valid_before = Some(t);
                }
            }
        }
        if rest.is_empty() {
            break;
        }
        match rest.strip_prefix(',') {
            Some("") => return Err("unexpected end-of-options (a trailing comma)".into()),
            Some(r) => rest = r,
            None => {
                let name = rest.split([',', '=']).next().unwrap_or(rest);
                return Err(format!(
                    "unknown key option {name:?} (known: namespaces, valid-after, \
                     valid-before, cert-authority)"
                ));
            }
        }
    }
    if let (Some(a), Some(b)) = (o.valid_after, o.valid_before) {
        if b <= a {
            return Err("\"valid-before\" time is before \"valid-after\"".into());
        }
    }
    Ok(o)
}

/// misc.c `opt_dequote`: a `"..."` value (`\"` is a quote, any other
/// backslash is itself); returns it and what follows.
fn opt_dequote(s: &str) -> Result<(String, &str), String> {
    let Some(body) = s.strip_prefix('"') else {
        return Err("missing start quote".into());
    };
    let b = body.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() && b[i] != b'"' {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'"') {
            i += 1;
        }
        out.push(b[i]);
        i += 1;
    }
    if i == b.len() {
        return Err("missing end quote".into());
    }
    // Only ASCII was split on, so the bytes are UTF-8.
    Ok((String::from_utf8_lossy(&out).into_owned(), &body[i + 1..]))
}

/// misc.c `parse_absolute_time` (9.2p1): `YYYYMMDD`, `YYYYMMDDHHMM` or
/// `YYYYMMDDHHMMSS`, a `Z` or `UTC` suffix (any case) for UTC, else local
/// time; the fields go through glibc's `strptime` (leading white space
/// before a number is skipped, `%d` is 1–31 in any month, `%S` up to 61)
/// and then `timegm` / `mktime` (which carry an overflow on: 30 February is
/// 2 March); a time before 1970 is refused.  Unix seconds.
pub fn parse_absolute_time(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let mut l = b.len();
    let utc = if l > 1 && b[l - 1].eq_ignore_ascii_case(&b'z') {
        l -= 1;
        true
    } else if l > 3 && b[l - 3..].eq_ignore_ascii_case(b"UTC") {
        l -= 3;
        true
    } else {
        false
    };
    // snprintf("%.4s-%.2s-%.2s...") of the string's bytes, then strptime.
    let p = |from: usize, n: usize| &b[from..from + n];
    let (buf, fmt): (Vec<u8>, &[u8]) = match l {
        8 => ([p(0, 4), b"-", p(4, 2), b"-", p(6, 2)].concat(), b"Y-m-d"),
        12 => (
            [
                p(0, 4),
                b"-",
                p(4, 2),
                b"-",
                p(6, 2),
                b"T",
                p(8, 2),
                b":",
                p(10, 2),
            ]
            .concat(),
            b"Y-m-dTH:M",
        ),
        14 => (
            [
                p(0, 4),
                b"-",
                p(4, 2),
                b"-",
                p(6, 2),
                b"T",
                p(8, 2),
                b":",
                p(10, 2),
                b":",
                p(12, 2),
            ]
            .concat(),
            b"Y-m-dTH:M:S",
        ),
        _ => return None,
    };
    let f = strptime(&buf, fmt)?;
    let t = if utc { timegm(&f) } else { local_mktime(&f)? };
    (t >= 0).then_some(t)
}

/// The fields glibc's `strptime` fills for [`parse_absolute_time`].
#[derive(Default)]
struct Tm {
    year: i64,
    mon: i64,
    mday: i64,
    hour: i64,
    min: i64,
    sec: i64,
}

/// glibc's `strptime` for the formats of [`parse_absolute_time`] (`Y` is
/// `%Y`, …): a number skips leading white space, reads up to its width of
/// digits while the value can still grow within range (glibc's
/// `get_number`), and must be in range; any other format character must
/// match itself; nothing may follow.
fn strptime(input: &[u8], fmt: &[u8]) -> Option<Tm> {
    let mut tm = Tm::default();
    let mut i = 0;
    let get_number = |i: &mut usize, from: i64, to: i64, width: usize| -> Option<i64> {
        while *i < input.len() && matches!(input[*i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
            *i += 1;
        }
        if *i >= input.len() || !input[*i].is_ascii_digit() {
            return None;
        }
        let mut val: i64 = 0;
        let mut n = width;
        loop {
            val = val * 10 + i64::from(input[*i] - b'0');
            *i += 1;
            n -= 1;
            if !(n > 0 && val * 10 <= to && *i < input.len() && input[*i].is_ascii_digit()) {
                break;
            }
        }
        (from..=to).contains(&val).then_some(val)
    };
    for &c in fmt {
        match c {
            b'Y' => tm.year = get_number(&mut i, 0, 9999, 4)?,
            b'm' => tm.mon = get_number(&mut i, 1, 12, 2)? - 1,
            b'd' => tm.mday = get_number(&mut i, 1, 31, 2)?,
            b'H' => tm.hour = get_number(&mut i, 0, 23, 2)?,
            b'M' => tm.min = get_number(&mut i, 0, 59, 2)?,
            b'S' => tm.sec = get_number(&mut i, 0, 61, 2)?,
            lit => {
                if input.get(i) != Some(&lit) {
                    return None;
                }
                i += 1;
            }
        }
    }
    (i == input.len()).then_some(tm)
}

/// Days from 1970-01-01 to the first of `month0` (0-based) of `year`
/// (proleptic Gregorian; H. Hinnant's `days_from_civil`).
fn days_to_month(year: i64, month0: i64) -> i64 {
    let m = month0 + 1;
    let y = if m <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// glibc `timegm`: the fields as UTC, an overflowing day, hour, minute or
/// second carried into the next.
fn timegm(t: &Tm) -> i64 {
    (days_to_month(t.year, t.mon) + t.mday - 1) * 86_400 + t.hour * 3_600 + t.min * 60 + t.sec
}

/// `mktime` of the fields as local time, with `tm_isdst` 0 as OpenSSH
/// leaves it (`memset(&tm, 0, ...)` before `strptime`, which does not set
/// it): the C library's time zone rules, as ssh-keygen uses them.
fn local_mktime(t: &Tm) -> Option<i64> {
    // SAFETY: `tm` is a plain C struct; all-zero is a valid value (a null
    // `tm_zone` is allowed), and mktime only reads and normalises it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    tm.tm_year = i32::try_from(t.year - 1900).ok()?;
    tm.tm_mon = i32::try_from(t.mon).ok()?;
    tm.tm_mday = i32::try_from(t.mday).ok()?;
    tm.tm_hour = i32::try_from(t.hour).ok()?;
    tm.tm_min = i32::try_from(t.min).ok()?;
    tm.tm_sec = i32::try_from(t.sec).ok()?;
    tm.tm_isdst = 0;
    // SAFETY: `tm` is a valid, exclusively borrowed `struct tm`.
    let secs = unsafe { libc::mktime(&mut tm) };
    // time_t is 32 bits on some targets.
    #[allow(clippy::useless_conversion)]
    Some(i64::from(secs))
}

/// The old name of [`parse_absolute_time`].
pub fn parse_time(s: &str) -> Option<i64> {
    parse_absolute_time(s)
}

/// match.c `match_pattern`: `*` any run, `?` any one byte (bytes, not
/// characters: OpenSSH compares C strings).
pub fn match_pattern(s: &str, pattern: &str) -> bool {
    let s = s.as_bytes();
    let p = pattern.as_bytes();
    // Iterative wildcard match with backtracking to the last `*`: the same
    // answers as match.c's recursion, without its exponential worst case.
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if j < p.len() && p[j] == b'*' {
            star = Some((j, i));
            j += 1;
        } else if j < p.len() && (p[j] == b'?' || p[j] == s[i]) {
            i += 1;
            j += 1;
        } else if let Some((sj, si)) = star {
            j = sj + 1;
            i = si + 1;
            star = Some((sj, si + 1));
        } else {
            return false;
        }
    }
    while j < p.len() && p[j] == b'*' {
        j += 1;
    }
    j == p.len()
}

/// match.c `match_pattern_list` (9.2p1) is 1: comma-separated patterns, a
/// leading `!` negates; a negated pattern that matches fails the whole list
/// (-1) whatever else matched, and a list with no positive match (one of
/// only negations, say) is 0.  A subpattern of 1023 bytes or more fails the
/// list, as OpenSSH's fixed buffer does.  Empty subpatterns (`a,,b`) match
/// only the empty string; a trailing comma adds nothing.
pub fn match_pattern_list(s: &str, list: &str) -> bool {
    const SUB_MAX: usize = 1024;
    let b = list.as_bytes();
    let mut got_positive = false;
    let mut i = 0;
    while i < b.len() {
        let negated = b[i] == b'!';
        if negated {
            i += 1;
        }
        let start = i;
        while i < b.len() && i - start < SUB_MAX - 1 && b[i] != b',' {
            i += 1;
        }
        if i - start >= SUB_MAX - 1 {
            return false;
        }
        let sub = &list[start..i];
        if i < b.len() && b[i] == b',' {
            i += 1;
        }
        if match_pattern(s, sub) {
            if negated {
                return false;
            }
            got_positive = true;
        }
    }
    got_positive
}

/// base64 as OpenSSH's `b64_pton` (openbsd-compat/base64.c) decodes it:
/// white space anywhere is skipped; after `=` padding only white space; the
/// unused bits of the last character must be zero; no partial byte.
pub fn b64_pton(src: &[u8]) -> Option<Vec<u8>> {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let is_space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let mut out: Vec<u8> = Vec::with_capacity(src.len() * 3 / 4 + 1);
    let mut state = 0;
    let mut i = 0;
    let mut pad = false;
    // `next` holds the bits of a byte begun but not finished.
    let mut next: u8 = 0;
    while i < src.len() {
        let c = src[i];
        i += 1;
        if c == 0 {
            break;
        }
        if is_space(c) {
            continue;
        }
        if c == b'=' {
            pad = true;
            break;
        }
        let v = B64.iter().position(|&x| x == c)? as u8;
        match state {
            0 => {
                next = v << 2;
                state = 1;
            }
            1 => {
                out.push(next | (v >> 4));
                next = (v & 0x0f) << 4;
                state = 2;
            }
            2 => {
                out.push(next | (v >> 2));
                next = (v & 0x03) << 6;
                state = 3;
            }
            _ => {
                out.push(next | v);
                next = 0;
                state = 0;
            }
        }
    }
    if pad {
        match state {
            0 | 1 => return None,
            2 => {
                // Another `=` must follow, after any white space.
                while i < src.len() && src[i] != 0 && is_space(src[i]) {
                    i += 1;
                }
                if src.get(i) != Some(&b'=') {
                    return None;
                }
                i += 1;
            }
            _ => {}
        }
        while i < src.len() && src[i] != 0 {
            if !is_space(src[i]) {
                return None;
            }
            i += 1;
        }
        if next != 0 {
            return None;
        }
    } else if state != 0 {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILM+rvN+ot98qgEN796jTiQfZfG1KaT0PtFDJ/XFSqti";

    fn parse(text: &str) -> AllowedSigners {
        AllowedSigners::parse(Path::new("allowed_signers"), text)
    }

    #[test]
    fn lines_with_and_without_options() {
        let text = format!(
            "# team\n\n  alice@example.com {ED} alice's laptop\n\
             bob@x,ci@x namespaces=\"git,fsmatrix\",valid-after=\"20260101Z\",VALID-BEFORE=\"20270101000000UTC\" {ED}\n\
             ca@x cert-authority {ED}\n\
             \"carol smith,dave\" {ED}\r\n"
        );
        let a = parse(&text);
        assert_eq!(a.skipped, vec![]);
        assert_eq!(a.signers.len(), 3);
        assert_eq!(a.signers[0].line, 3);
        assert_eq!(a.signers[0].principals, "alice@example.com");
        assert_eq!(a.signers[0].namespaces, None);
        let b = &a.signers[1];
        assert_eq!(b.principals, "bob@x,ci@x");
        assert_eq!(b.namespaces.as_deref(), Some("git,fsmatrix"));
        assert_eq!(b.valid_after, Some(1_767_225_600));
        assert_eq!(b.valid_before, Some(1_798_761_600));
        assert_eq!(a.cert_authority_lines, vec![5]);
        // strdelimw takes the quotes out; a CRLF line reads as its LF twin.
        assert_eq!(a.signers[2].principals, "carol smith,dave");
        assert!(a.signers[2].allows(Some("carol smith"), "x", 0).is_ok());
        assert!(b.allows(Some("ci@x"), "fsmatrix", 1_780_000_000).is_ok());
        assert!(b.allows(None, "fsmatrix", 1_780_000_000).is_ok());
        assert!(matches!(
            b.allows(Some("alice@example.com"), "fsmatrix", 1_780_000_000),
            Err(NotAllowed::Principal { .. })
        ));
        assert!(matches!(
            b.allows(None, "file", 1_780_000_000),
            Err(NotAllowed::Namespace { .. })
        ));
        assert!(matches!(
            b.allows(None, "fsmatrix", 1_700_000_000),
            Err(NotAllowed::NotYetValid { .. })
        ));
        assert!(matches!(
            b.allows(None, "fsmatrix", 1_800_000_000),
            Err(NotAllowed::Expired { .. })
        ));
        // Both edges are inside (sshsig.c: `<` valid-after, `>` valid-before).
        assert!(b.allows(None, "fsmatrix", 1_767_225_600).is_ok());
        assert!(b.allows(None, "fsmatrix", 1_798_761_600).is_ok());
        assert!(b.allows(None, "fsmatrix", 1_767_225_599).is_err());
        assert!(b.allows(None, "fsmatrix", 1_798_761_601).is_err());
    }

    #[test]
    fn bad_lines_are_skipped_with_their_line_and_reason() {
        for (text, what) in [
            (format!("a@x bogus=\"1\" {ED}"), "unknown key option"),
            (
                format!("a@x namespaces=fsmatrix {ED}"),
                "missing start quote",
            ),
            (format!("a@x namespaces=\"fsmatrix {ED}"), "quote"),
            (
                format!("a@x valid-after=\"2026\" {ED}"),
                "invalid \"valid-after\"",
            ),
            (format!("a@x valid-after=\"20261301\" {ED}"), "invalid"),
            (format!("a@x valid-after=\"19700101Z\" {ED}"), "invalid"),
            (
                format!("a@x valid-after=\"20270101Z\",valid-before=\"20260101Z\" {ED}"),
                "before",
            ),
            (
                format!("a@x namespaces=\"a\",namespaces=\"b\" {ED}"),
                "multiple",
            ),
            (format!("a@x namespaces=\"a\", {ED}"), "end-of-options"),
            ("a@x ssh-ed25519 AAAA!!".to_string(), "invalid key"),
            ("a@x ssh-ed25519".to_string(), "missing key"),
            ("a@x".to_string(), "missing key"),
            ("\"a@x ssh-ed25519".to_string(), "quote"),
            (
                "a@x ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAILM+rvN+ot98qgEN796jTiQfZfG1KaT0PtFDJ/XFSqti"
                    .to_string(),
                "invalid key",
            ),
        ] {
            let a = parse(&format!("# ok\n{text}\nb@x {ED}\n"));
            assert_eq!(a.skipped.len(), 1, "{text}: {a:?}");
            assert_eq!(a.skipped[0].0, 2, "{text}");
            assert!(a.skipped[0].1.contains(what), "{text}: {:?}", a.skipped);
            assert!(
                a.skipped_notes()[0].starts_with("allowed_signers:2: skipped"),
                "{:?}",
                a.skipped_notes()
            );
            // The good line after it still counts, as in ssh-keygen.
            assert_eq!(a.signers.len(), 1, "{text}");
            assert_eq!(a.signers[0].line, 3);
        }
    }

    #[test]
    fn patterns_as_openssh_matches_them() {
        assert!(match_pattern("fsmatrix", "fsmatrix"));
        assert!(match_pattern("fsmatrix", "fs*"));
        assert!(match_pattern("fsmatrix", "*"));
        assert!(match_pattern("fsmatrix", "f?matri?"));
        assert!(match_pattern("fsmatrix", "*m*x"));
        assert!(match_pattern("a*b", "a*b"));
        assert!(match_pattern("", "*"));
        assert!(!match_pattern("fsmatrix", "git"));
        assert!(!match_pattern("fsmatrix", "fsmatri"));
        // `?` is one byte, as in C: a two-byte character needs two.
        assert!(!match_pattern("é", "?"));
        assert!(match_pattern("é", "??"));
        assert!(match_pattern_list("fsmatrix", "git,fsmatrix"));
        assert!(match_pattern_list("fsmatrix", "*,!git"));
        assert!(match_pattern_list("fsmatrix", "fsmatrix,"));
        assert!(!match_pattern_list("fsmatrix", "*,!fs*"));
        assert!(!match_pattern_list("fsmatrix", "git,file"));
        // Only negations never match; a negation takes back a match.
        for list in ["!alice", "!*", "alice,!alice", "!bob", "!alice,!bob"] {
            assert!(!match_pattern_list("alice", list), "{list}");
            assert!(!names_somebody(list), "{list}");
        }
        assert!(names_somebody("alice"));
        assert!(names_somebody("*,!alice"));
        assert!(names_somebody("a*,!a"));
        assert!(names_somebody("?,!a"));
        // A huge list is answered in linear time (this would take hours
        // if every pattern were tried against the whole list).
        let huge: Vec<String> = (0..20_000).map(|i| format!("p{i}")).collect();
        assert!(!names_somebody(&format!("{},!*", huge.join(","))));
        assert!(names_somebody(&huge.join(",")));
        // A subpattern of 1023 bytes fails the list (OpenSSH's buffer).
        let long = "a".repeat(1023);
        assert!(!match_pattern_list(&long, &format!("*,{long}")));
        assert!(match_pattern_list(&long[1..], &long[1..]));
    }

    #[test]
    fn times_as_openssh_parses_them() {
        assert_eq!(parse_absolute_time("20260101Z"), Some(1_767_225_600));
        assert_eq!(parse_absolute_time("202601010000z"), Some(1_767_225_600));
        assert_eq!(
            parse_absolute_time("20260101000001UTC"),
            Some(1_767_225_601)
        );
        assert_eq!(
            parse_absolute_time("20260101000001utc"),
            Some(1_767_225_601)
        );
        assert!(parse_absolute_time("20260101").is_some());
        // glibc strptime takes 30 February and second 60; timegm carries.
        assert_eq!(
            parse_absolute_time("20260230Z"),
            parse_absolute_time("20260302Z")
        );
        assert_eq!(parse_absolute_time("20260101000060Z"), Some(1_767_225_660));
        assert_eq!(parse_absolute_time("19700101Z"), Some(0));
        for bad in [
            "2026010",
            "2026010100",
            "20261301Z",
            "20260132Z",
            "20260101246000Z",
            "20260101006000Z",
            "x0260101",
            "19691231Z",
            "Z",
            "20260101ZZ",
        ] {
            assert_eq!(parse_absolute_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn base64_as_openssh_decodes_it() {
        assert_eq!(b64_pton(b"QUJD").as_deref(), Some(&b"ABC"[..]));
        assert_eq!(b64_pton(b" QU\r\nJD \n").as_deref(), Some(&b"ABC"[..]));
        assert_eq!(b64_pton(b"QUI=").as_deref(), Some(&b"AB"[..]));
        assert_eq!(b64_pton(b"QQ==").as_deref(), Some(&b"A"[..]));
        assert_eq!(b64_pton(b"QQ= =\n").as_deref(), Some(&b"A"[..]));
        assert_eq!(b64_pton(b"").as_deref(), Some(&b""[..]));
        for bad in [&b"QUJ"[..], b"QQ=", b"QR==", b"QUI=x", b"Q===", b"QUJD!"] {
            assert_eq!(b64_pton(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
