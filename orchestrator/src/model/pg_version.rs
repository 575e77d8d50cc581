//! A PostgreSQL version as `postgres --version` prints it (a host's facts
//! keep that line), and as a number that sorts: PostgreSQL's own
//! `server_version_num` (`150010` for 15.10, `90624` for 9.6.24), so that
//! versions compare as versions, never as text ("15.10" < "15.9").

/// The release out of a `postgres --version` line: `15.10` out of
/// `postgres (PostgreSQL) 15.10 (Debian 15.10-0+deb12u1)`, `17beta1` out of
/// `postgres (PostgreSQL) 17beta1`; a line without `(PostgreSQL) ` gives
/// its last word.
pub fn postgres_release(version: &str) -> Option<&str> {
    const TAG: &str = "(PostgreSQL) ";
    let word = match version.find(TAG) {
        Some(i) => version[i + TAG.len()..].split_whitespace().next(),
        None => version.split_whitespace().next_back(),
    }?;
    let word = word.trim_end_matches(')');
    (!word.is_empty()).then_some(word)
}

/// `server_version_num` of a `postgres --version` line ([`postgres_release`]):
/// major × 10000 + minor from 10 on, major × 10000 + minor × 100 + patch
/// before; a beta, rc or devel release counts as its `.0`.  `None` when
/// the line names no version.
pub fn postgres_version_num(version: &str) -> Option<i32> {
    let release = postgres_release(version)?;
    let numeric = release
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(release, |end| &release[..end]);
    let mut parts = numeric.split('.').map(|p| p.parse::<i32>().ok());
    let major = parts.next().flatten().filter(|m| (1..=2000).contains(m))?;
    let mut next = || parts.next().flatten().filter(|v| (0..100).contains(v));
    if major >= 10 {
        let minor = next().unwrap_or(0);
        Some(major * 10000 + minor)
    } else {
        let (minor, patch) = (next().unwrap_or(0), next().unwrap_or(0));
        Some(major * 10000 + minor * 100 + patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_become_server_version_num() {
        for (line, release, num) in [
            ("postgres (PostgreSQL) 15.4", Some("15.4"), Some(150004)),
            (
                "postgres (PostgreSQL) 15.10 (Debian 15.10-0+deb12u1)",
                Some("15.10"),
                Some(150010),
            ),
            ("postgres (PostgreSQL) 9.6.24", Some("9.6.24"), Some(90624)),
            ("postgres (PostgreSQL) 9.6", Some("9.6"), Some(90600)),
            (
                "postgres (PostgreSQL) 17beta1",
                Some("17beta1"),
                Some(170000),
            ),
            (
                "postgres (PostgreSQL) 18devel",
                Some("18devel"),
                Some(180000),
            ),
            ("postgres (PostgreSQL) 16", Some("16"), Some(160000)),
            ("p 15", Some("15"), Some(150000)),
            ("postgres (PostgreSQL) stand-in", Some("stand-in"), None),
            ("", None, None),
            (
                "postgres (PostgreSQL) 99999999999.1",
                Some("99999999999.1"),
                None,
            ),
            ("postgres (PostgreSQL) 0.1", Some("0.1"), None),
        ] {
            assert_eq!(postgres_release(line), release, "{line:?}");
            assert_eq!(postgres_version_num(line), num, "{line:?}");
        }
        // As numbers, 15.10 sorts after 15.9; as text it does not.
        assert!(
            postgres_version_num("postgres (PostgreSQL) 15.10")
                > postgres_version_num("postgres (PostgreSQL) 15.9")
        );
    }
}
