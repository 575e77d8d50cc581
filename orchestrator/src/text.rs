//! Formatting every layer shares, in one place: hex and sha256, the tail of
//! a command's output, timestamps, durations for humans, byte sizes and
//! pretty JSON files.  Pure functions.
use std::time::Duration;

use sha2::{Digest, Sha256};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Lowercase hex of `bytes` (sha2 0.11 digests no longer format with `{:x}`).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 0xf) as usize] as char);
    }
    s
}

/// Lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The last `n` lines of `text`, joined by `\n` (no trailing newline).
pub fn tail_lines(text: &str, n: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(n)..].join("\n")
}

/// `t` as RFC 3339 (UTC `Z` form for UTC times); the Unix time if it cannot
/// be formatted (years past 9999).
pub fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339)
        .unwrap_or_else(|_| t.unix_timestamp().to_string())
}

/// Now, as RFC 3339 in UTC.
pub fn now_rfc3339() -> String {
    rfc3339(OffsetDateTime::now_utc())
}

/// `1h02m03s`-style durations for humans (`5s`, `1m05s`, `2h01m05s`).
pub fn hms(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

/// "±12s", or "±<1s" where [`hms`] would say "±0s".
pub fn plus_minus(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        "±<1s".to_string()
    } else {
        format!("±{}", hms(d))
    }
}

/// `b` bytes scaled to the largest binary unit that keeps it ≥ 1:
/// (value, unit) with unit one of B, KiB, MiB, GiB, TiB.
pub fn iec_scaled(b: f64) -> (f64, &'static str) {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = b;
    let mut u = 0;
    while x.abs() >= 1024.0 && u < UNITS.len() - 1 {
        x /= 1024.0;
        u += 1;
    }
    (x, UNITS[u])
}

/// `1.5 GiB`, `512 B`: one decimal above bytes.
pub fn iec_bytes(b: f64) -> String {
    match iec_scaled(b) {
        (x, "B") => format!("{x:.0} B"),
        (x, unit) => format!("{x:.1} {unit}"),
    }
}

/// `1.5 GiB`, `40 MiB`: like [`iec_bytes`] but rounded to one decimal
/// and written without trailing zeros (plot axes, the HTML report's tables).
pub fn iec_bytes_short(b: f64) -> String {
    let (x, unit) = iec_scaled(b);
    format!("{} {unit}", fmt_g((x * 10.0).round() / 10.0))
}

/// A float with at most six decimals and no trailing zeros (5 → `5`,
/// 2.5 → `2.5`).
pub fn fmt_g(x: f64) -> String {
    let s = format!("{x:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A text cell of a CSV file made inert for spreadsheets: one that starts
/// with `=`, `+`, `-`, `@`, a tab or a CR (a formula to Excel and
/// LibreOffice; names come from other people's bundles) gets a leading `'`.
/// Numbers are written as numbers, never through this.
pub fn csv_text(s: &str) -> String {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_string()
    }
}

/// Pretty JSON with a final newline, as every JSON file of a bundle is
/// written (serialising plain data cannot fail; an empty file would show it).
pub fn json_pretty_bytes(v: &impl serde::Serialize) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(v).unwrap_or_default();
    b.push(b'\n');
    b
}

/// Text from other people (a submitter's name, a file name in a bundle, a
/// host's output) made safe to print on a terminal or in a one-line log:
/// control characters (C0, DEL, C1: escape sequences, newlines, carriage
/// returns that overwrite a line) and the Unicode bidirectional controls
/// (which reorder what a reader sees) are written as `\u{..}` escapes; a
/// backslash is doubled so an escape cannot be forged.  Nothing is cut.
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    fn unsafe_char(c: char) -> bool {
        c == '\\'
            || c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    }
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_safe_escapes_what_moves_the_cursor_or_reorders_text() {
        assert_eq!(terminal_safe("alice"), "alice");
        assert!(matches!(
            terminal_safe("plain é"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(terminal_safe("a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(terminal_safe("x\ny\rz\t"), "x\\ny\\rz\\t");
        assert_eq!(terminal_safe("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(terminal_safe("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(terminal_safe("a\\u{1b}"), "a\\\\u{1b}");
        assert_eq!(terminal_safe("\u{7f}"), "\\u{7f}");
    }

    #[test]
    fn hex_and_sha256_of_known_values() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        // `printf abc | sha256sum`
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn tails_keep_the_last_lines() {
        assert_eq!(tail_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines("a", 5), "a");
        assert_eq!(tail_lines("", 3), "");
    }

    #[test]
    fn durations_and_sizes_for_humans() {
        assert_eq!(hms(Duration::from_secs(5)), "5s");
        assert_eq!(hms(Duration::from_secs(65)), "1m05s");
        assert_eq!(hms(Duration::from_secs(7265)), "2h01m05s");
        assert_eq!(iec_bytes(512.0), "512 B");
        assert_eq!(iec_bytes(1536.0), "1.5 KiB");
        assert_eq!(iec_bytes(3.0 * (1u64 << 30) as f64), "3.0 GiB");
        assert_eq!(iec_scaled(-2048.0), (-2.0, "KiB"));
        assert_eq!(iec_bytes_short(40.0 * (1u64 << 20) as f64), "40 MiB");
        assert_eq!(iec_bytes_short(1536.0), "1.5 KiB");
        assert_eq!(iec_bytes_short(900.0), "900 B");
    }

    #[test]
    fn short_floats_drop_trailing_zeros() {
        assert_eq!(fmt_g(5.0), "5");
        assert_eq!(fmt_g(2.5), "2.5");
        assert_eq!(fmt_g(0.1234567), "0.123457");
    }

    #[test]
    fn csv_text_cells_cannot_be_formulas() {
        assert_eq!(csv_text("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
        assert_eq!(csv_text("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_text("-2+3"), "'-2+3");
        assert_eq!(csv_text("ext4"), "ext4");
        assert_eq!(csv_text(""), "");
    }

    #[test]
    fn times_are_rfc3339_utc() {
        let t = OffsetDateTime::from_unix_timestamp(0).unwrap_or(OffsetDateTime::UNIX_EPOCH);
        assert_eq!(rfc3339(t), "1970-01-01T00:00:00Z");
        assert!(now_rfc3339().ends_with('Z'));
    }
}

/// How a login user that is not root becomes root (inventory `become`).
/// Here, below both the inventory (which reads it) and the transport
/// (which wraps every command in it: `RemoteCommand::via`), so the two
/// share one enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Become {
    Sudo,
    /// doas(1): OpenBSD's, FreeBSD/DragonFly ports `security/doas`, Debian's
    /// `doas` (OpenDoas).
    Doas,
}

impl Become {
    pub const ALL: [Become; 2] = [Become::Sudo, Become::Doas];

    /// The inventory value and the program's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Become::Sudo => "sudo",
            Become::Doas => "doas",
        }
    }

    pub fn from_name(name: &str) -> Option<Become> {
        Become::ALL.into_iter().find(|b| b.as_str() == name)
    }

    /// The valid inventory values, for messages: `"sudo", "doas"`.
    pub fn valid() -> String {
        Become::ALL
            .iter()
            .map(|b| format!("{:?}", b.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
