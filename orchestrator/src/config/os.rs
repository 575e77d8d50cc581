//! The operating systems fsmatrix runs on: one row per OS.  Everything that
//! lists OSes (validation messages, facts, the plan's drops, the lab) reads
//! them from here.
use serde::{Deserialize, Serialize};

/// Operating system of a host; checked against `uname -s` by `check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    Linux,
    Freebsd,
    Dragonfly,
}

impl Os {
    pub const ALL: [Os; 3] = [Os::Linux, Os::Freebsd, Os::Dragonfly];
    pub fn as_str(self) -> &'static str {
        match self {
            Os::Linux => "linux",
            Os::Freebsd => "freebsd",
            Os::Dragonfly => "dragonfly",
        }
    }
    pub fn parse(s: &str) -> Option<Os> {
        Os::ALL.into_iter().find(|o| o.as_str() == s)
    }
    /// Every OS's name, for messages that say what is valid: `linux,
    /// freebsd, dragonfly` (`last` joins the last two: `", "` or `" and "`).
    pub fn names(last: &str) -> String {
        let names: Vec<&str> = Os::ALL.iter().map(|o| o.as_str()).collect();
        match names.split_last() {
            Some((tail, head)) if !head.is_empty() => format!("{}{last}{tail}", head.join(", ")),
            _ => names.join(", "),
        }
    }
    /// Where PostgreSQL's binaries are looked for when `pg_bin` is not given:
    /// Debian/Ubuntu install per major version (`*` = newest found), the BSD
    /// ports/dports into /usr/local/bin.
    pub fn pg_bin_hint(self) -> &'static str {
        match self {
            Os::Linux => "/usr/lib/postgresql/*/bin",
            Os::Freebsd | Os::Dragonfly => "/usr/local/bin",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lists_every_os() {
        assert_eq!(Os::names(", "), "linux, freebsd, dragonfly");
        assert_eq!(Os::names(" and "), "linux, freebsd and dragonfly");
    }
}
