//! PostgreSQL settings the host's own server would refuse, found by `check`
//! (and every sweep's preparation) before any disk is formatted: a misspelt
//! name or a bad value used to surface only when `pg-start` failed, after
//! mkfs and initdb, for every variant.
//!
//! The verdict is the host's PostgreSQL's, not a copy of its rules: the
//! `pg-check-settings` verb hands each setting alone to `postgres -c`
//! (`docs/remote-scripts.md`).  Judging in Rust from `postgres
//! --describe-config` alone falls short: its lines (PostgreSQL's
//! `src/backend/utils/misc/help_config.c`: name, context, group, type,
//! reset, min, max, descriptions) give no unit (`shared_buffers` min 16 is
//! in 8 kB blocks, `work_mem`'s in kB; nothing says so) and no enum values
//! (PostgreSQL 15 prints only the reset value), so `128MB` could not be
//! range-checked and `wal_level = "maximal"` not refused.  Its line is used
//! here to say what would be valid, and its names to suggest one for a typo.
//!
//! This module is pure: which settings a plan sets on a host, and the
//! problems the verb's answer means.
use std::collections::{BTreeMap, BTreeSet};

use super::facts::Kv;
use crate::plan::Plan;

/// One setting (name and value) the plan sets on a host, and where it
/// comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettingUse {
    pub name: String,
    pub value: String,
    /// Variants (filesystem names) whose cells get it from `[postgres]`.
    pub from_matrix: BTreeSet<String>,
    /// Variants that set it in their own `postgres = {…}`.
    pub from_variant: BTreeSet<String>,
}

impl SettingUse {
    /// `from [postgres] (variants ext4, xfs)` / `from filesystem xfs-a's postgres`.
    fn origin(&self) -> String {
        let list = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
        let mut parts = Vec::new();
        if !self.from_matrix.is_empty() {
            parts.push(format!(
                "from [postgres], for {}",
                plural("variant", &self.from_matrix, list)
            ));
        }
        if !self.from_variant.is_empty() {
            parts.push(format!(
                "from the postgres = {{…}} of {}",
                plural("filesystem variant", &self.from_variant, list)
            ));
        }
        parts.join("; ")
    }
}

fn plural(word: &str, s: &BTreeSet<String>, list: impl Fn(&BTreeSet<String>) -> String) -> String {
    format!("{word}{} {}", if s.len() == 1 { "" } else { "s" }, list(s))
}

/// Every distinct setting the plan's cells on `host` would set, in a fixed
/// order (by name, then value): what `pg-check-settings` is asked about.
pub fn uses(plan: &Plan, host: &str) -> Vec<SettingUse> {
    let mut by: BTreeMap<(String, String), SettingUse> = BTreeMap::new();
    for c in plan.cells.iter().filter(|c| c.host.as_str() == host) {
        let variant = c.fs.name.as_str().to_string();
        for s in c.pg_settings.iter() {
            let (name, value) = (s.name.as_str().to_string(), s.value.as_str().to_string());
            let own = c.fs.postgres.iter().any(|o| o.name == s.name);
            let u = by
                .entry((name.clone(), value.clone()))
                .or_insert_with(|| SettingUse {
                    name,
                    value,
                    ..SettingUse::default()
                });
            if own {
                u.from_variant.insert(variant.clone());
            } else {
                u.from_matrix.insert(variant.clone());
            }
        }
    }
    by.into_values().collect()
}

/// The problems in `pg-check-settings`' answer `kv` for `uses` (asked in
/// that order), on a host whose PostgreSQL is `release` (e.g. `15.8`).
/// An answer that did not check every setting is a problem too: a setting
/// never asked about is not known to be accepted.
pub fn problems(uses: &[SettingUse], kv: &Kv, release: &str) -> Vec<String> {
    let mut out = Vec::new();
    let checked = kv.u64("checked");
    if checked != Some(uses.len() as u64) {
        out.push(format!(
            "pg-check-settings answered for {} of {} PostgreSQL settings: the rest are not known to be accepted",
            checked.map_or_else(|| "none".to_string(), |n| n.to_string()),
            uses.len()
        ));
    }
    let names: Vec<&str> = kv
        .get("names")
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    for (i, u) in uses.iter().enumerate() {
        let Some(error) = kv.get(&format!("refused.{i}.error")) else {
            continue;
        };
        let hint = kv.get(&format!("refused.{i}.hint"));
        let valid = match kv.get(&format!("refused.{i}.describe")) {
            Some(line) => valid_form(&Describe::parse(line), hint),
            // Not in --describe-config: unknown, or internal (block_size,
            // server_version: fixed when PostgreSQL is built).
            None if error.starts_with("unrecognized configuration parameter") => {
                match nearest(&u.name, &names) {
                    Some(n) => format!("no setting of that name; did you mean `{n}`?"),
                    None => "no setting of that name".to_string(),
                }
            }
            None => match hint {
                Some(h) => h.trim_end_matches('.').to_string(),
                None => "nothing: it cannot be set in a configuration file".to_string(),
            },
        };
        out.push(format!(
            "PostgreSQL {release} on this host refuses {} = {:?} ({}): {error}; valid: {valid}",
            u.name,
            u.value,
            u.origin()
        ));
    }
    out
}

/// One line of `postgres --describe-config`, the columns this module uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Describe {
    pub name: String,
    pub context: String,
    /// `BOOLEAN`, `INTEGER`, `REAL`, `STRING` or `ENUM`.
    pub vartype: String,
    pub min: String,
    pub max: String,
    pub short_desc: String,
}

impl Describe {
    /// Tab-separated, as help_config.c's `printMixedStruct` prints it; a
    /// short line leaves the missing columns empty.
    pub fn parse(line: &str) -> Describe {
        let mut f = line.split('\t').map(str::to_string);
        let mut next = || f.next().unwrap_or_default();
        let (name, context, _group, vartype, _reset, min, max, short_desc) = (
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
        );
        Describe {
            name,
            context,
            vartype,
            min,
            max,
            short_desc,
        }
    }
}

/// What the setting accepts, in words: PostgreSQL's hint when it gave one
/// (enum values, valid units), else the type and range.
fn valid_form(d: &Describe, hint: Option<&str>) -> String {
    let what = match d.vartype.as_str() {
        // guc.c parse_bool: these and their unique prefixes, any case.
        "BOOLEAN" => "on, off, true, false, yes, no, 1 or 0".to_string(),
        // The range is in the setting's base unit, which describe-config
        // does not print (8 kB blocks, kB, ms, s, min…).
        "INTEGER" => format!(
            "an integer from {} to {} in the setting's own unit, or with a unit \
             (memory: B, kB, MB, GB, TB; time: us, ms, s, min, h, d)",
            d.min, d.max
        ),
        "REAL" => format!(
            "a number from {} to {} (a unit as for integers)",
            d.min, d.max
        ),
        "ENUM" => "one of its named values".to_string(),
        "STRING" => "a string PostgreSQL accepts for it".to_string(),
        other => format!("a {} value", other.to_lowercase()),
    };
    let mut s = match hint {
        Some(h) => format!("{what} ({})", h.trim_end_matches('.')),
        None => what,
    };
    if d.context == "internal" {
        s = "nothing: it is fixed when PostgreSQL is built or the cluster is made".to_string();
    }
    if !d.short_desc.is_empty() {
        s.push_str(&format!(" — {}", d.short_desc.trim_end_matches('.')));
    }
    s
}

/// The known name closest to a misspelt one (at most 3 edits, or one that
/// contains it), if any.
fn nearest<'a>(name: &str, names: &[&'a str]) -> Option<&'a str> {
    names
        .iter()
        .map(|n| (edits(name, n), *n))
        .filter(|(d, n)| *d <= 3.min(name.len() / 2) || (name.len() >= 4 && n.contains(name)))
        .min()
        .map(|(_, n)| n)
}

/// Levenshtein distance (names are short ASCII).
fn edits(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// PostgreSQL's `shared_buffers` when nothing sets it (initdb writes
/// 128MB where the kernel allows it, as every supported release does).
pub const DEFAULT_SHARED_BUFFERS: u64 = 128 << 20;

/// The most of a host's memory the shared buffers of the clusters that run
/// at once may take.  PostgreSQL's own advice is ~25% for one dedicated
/// server; past three quarters the operating system and its page cache
/// (half of what a filesystem comparison measures) are starved, and a
/// cluster fails to start or the host swaps mid-run.
pub const SHARED_BUFFERS_SHARE: f64 = 0.75;

/// A memory setting's value in bytes as PostgreSQL reads it (guc.c
/// `parse_int`/`convert_to_base_unit`): a number, optionally fractional
/// (PostgreSQL 12+), optional spaces, then one of the memory units `B`,
/// `kB`, `MB`, `GB`, `TB` (case matters) or none, meaning the setting's
/// base unit of `base_bytes` (8192 for `shared_buffers`).  `None` for
/// anything else: the host's PostgreSQL judges such a value
/// (`pg-check-settings`).
pub fn memory_bytes(value: &str, base_bytes: u64) -> Option<u64> {
    let v = value.trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: f64 = num.parse().ok().filter(|n: &f64| n.is_finite())?;
    let unit_bytes = match unit.trim_start() {
        "" => base_bytes,
        "B" => 1,
        "kB" => 1 << 10,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        "TB" => 1 << 40,
        _ => return None,
    };
    let b = n * unit_bytes as f64;
    (b < u64::MAX as f64).then_some(b as u64)
}

/// The most `shared_buffers` a plan has running at once on one host: one
/// variant's under `order = "sequential"`, a batch's sum under
/// `"interleaved"`/`"random"` (one cluster per device, all running).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedPeak {
    pub bytes: u64,
    /// The variants whose clusters run together then, and each one's
    /// `shared_buffers` as written (or PostgreSQL's default).
    pub clusters: Vec<(String, String)>,
}

/// [`SharedPeak`] of `host` in `plan`; `None` when the host has no cells
/// or a value is not one [`memory_bytes`] reads (the host's PostgreSQL
/// refuses or reads it; `check` asks it).
pub fn shared_peak(plan: &Plan, host: &str) -> Option<SharedPeak> {
    let hp = plan.hosts.iter().find(|h| h.host.as_str() == host)?;
    let of = |variant: &str| -> Option<(u64, String)> {
        let c = plan
            .cells
            .iter()
            .find(|c| c.host.as_str() == host && c.fs.name.as_str() == variant)?;
        match c
            .pg_settings
            .iter()
            .find(|s| s.name.as_str() == "shared_buffers")
        {
            Some(s) => Some((
                memory_bytes(s.value.as_str(), 8192)?,
                s.value.as_str().to_string(),
            )),
            None => Some((DEFAULT_SHARED_BUFFERS, "128MB (default)".to_string())),
        }
    };
    let groups: Vec<Vec<String>> = if hp.batches.is_empty() {
        hp.fs_variants
            .iter()
            .map(|v| vec![v.as_str().to_string()])
            .collect()
    } else {
        hp.batches
            .iter()
            .map(|b| {
                b.slots
                    .iter()
                    .map(|s| s.variant.as_str().to_string())
                    .collect()
            })
            .collect()
    };
    let mut best: Option<SharedPeak> = None;
    for g in groups {
        let mut peak = SharedPeak {
            bytes: 0,
            clusters: Vec::new(),
        };
        for v in g {
            let (b, text) = of(&v)?;
            peak.bytes = peak.bytes.saturating_add(b);
            peak.clusters.push((v, text));
        }
        if best.as_ref().is_none_or(|b| peak.bytes > b.bytes) {
            best = Some(peak);
        }
    }
    best
}

/// Why `peak` does not fit a host with `mem_bytes` of memory, if it does
/// not (more than [`SHARED_BUFFERS_SHARE`] of it).
pub fn memory_problem(peak: &SharedPeak, mem_bytes: u64) -> Option<String> {
    if (peak.bytes as f64) <= SHARED_BUFFERS_SHARE * mem_bytes as f64 {
        return None;
    }
    let list = peak
        .clusters
        .iter()
        .map(|(v, b)| format!("{v} {b}"))
        .collect::<Vec<_>>()
        .join(", ");
    let (what, valid) = if peak.clusters.len() > 1 {
        (
            format!(
                "{} PostgreSQL clusters run at once here (one per device, order interleaved or random), and their shared_buffers ({list}) add up to {}",
                peak.clusters.len(),
                crate::text::iec_bytes(peak.bytes as f64)
            ),
            "lower shared_buffers ([postgres] or the variants' postgres = {…}), or list fewer devices for this host so fewer variants are set up at a time",
        )
    } else {
        (
            format!(
                "shared_buffers of {list} is {}",
                crate::text::iec_bytes(peak.bytes as f64)
            ),
            "lower shared_buffers ([postgres] or the variant's postgres = {…})",
        )
    };
    Some(format!(
        "{what}: more than {:.0}% of the host's {} of memory, which leaves too little for the operating system and the page cache (a cluster would fail to start, or the host swap mid-run); valid: {valid}",
        SHARED_BUFFERS_SHARE * 100.0,
        crate::text::iec_bytes(mem_bytes as f64)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PostgreSQL's own readings (SHOW shared_buffers after `-c`, PostgreSQL
    /// 15): 1.5GB = 1536MB, 100 blocks = 800kB, 1 GB with a space.
    #[test]
    fn memory_values_read_as_postgres_reads_them() {
        let b = |v: &str| memory_bytes(v, 8192);
        assert_eq!(b("128MB"), Some(128 << 20));
        assert_eq!(b("1.5GB"), Some(1536 << 20));
        assert_eq!(b("1 GB"), Some(1 << 30));
        assert_eq!(b("100"), Some(819_200));
        assert_eq!(b("64kB"), Some(65_536));
        assert_eq!(b("2TB"), Some(2 << 40));
        assert_eq!(b("8192B"), Some(8192));
        for bad in [
            "1gb", "1 GiB", "-1", "", "MB", "0x10", "1e3MB", "1.2.3MB", "NaN",
        ] {
            assert_eq!(b(bad), None, "{bad}");
        }
    }

    fn planned(devices: &str, order: &str, pg: &str) -> Plan {
        let inv = crate::config::Inventory::parse(
            std::path::Path::new("inv.toml"),
            format!(
                "[[host]]\nname = \"h\"\naddress = \"127.0.0.1\"\nos = \"linux\"\ndevices = {devices}\n"
            ),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let m = crate::config::Matrix::parse(
            std::path::Path::new("m.toml"),
            format!(
                "name = \"m\"\norder = \"{order}\"\n{pg}\n\
                 [[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n\
                 [[filesystem]]\nname = \"x\"\ntype = \"xfs\"\npostgres = {{ shared_buffers = \"3GB\" }}\n\
                 [[filesystem]]\nname = \"b\"\ntype = \"btrfs\"\n\
                 [[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"5s\"\n"
            ),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        m.check_against(&inv, crate::generator::script_uses)
            .unwrap_or_else(|e| panic!("{e}"));
        crate::plan::plan(&inv, &m)
    }

    #[test]
    fn the_clusters_running_at_once_must_fit_the_hosts_memory() {
        const GIB: u64 = 1 << 30;
        // Sequential: one cluster at a time, the largest variant's.
        let p = planned(
            r#"["/dev/sdb"]"#,
            "sequential",
            "[postgres]\nshared_buffers = \"2GB\"",
        );
        let peak = shared_peak(&p, "h").expect("peak");
        assert_eq!(peak.bytes, 3 * GIB);
        assert_eq!(peak.clusters, vec![("x".to_string(), "3GB".to_string())]);
        assert_eq!(
            memory_problem(&peak, 4 * GIB),
            None,
            "3 of 4 GiB: 75%, the limit"
        );
        let why = memory_problem(&peak, 4 * GIB - 1).expect("past 75%");
        assert!(
            why.starts_with(
                "shared_buffers of x 3GB is 3.0 GiB: more than 75% of the host's 4.0 GiB"
            ),
            "{why}"
        );
        assert!(why.contains("valid: lower shared_buffers"), "{why}");
        // Interleaved over three devices: all three run at once.
        let p = planned(
            r#"["/dev/sdb", "/dev/sdc", "/dev/sdd"]"#,
            "interleaved",
            "[postgres]\nshared_buffers = \"2GB\"",
        );
        let peak = shared_peak(&p, "h").expect("peak");
        assert_eq!(peak.bytes, 7 * GIB);
        assert_eq!(peak.clusters.len(), 3);
        assert_eq!(memory_problem(&peak, 10 * GIB), None);
        let why = memory_problem(&peak, 8 * GIB).expect("7 of 8 GiB");
        assert!(
            why.starts_with("3 PostgreSQL clusters run at once here"),
            "{why}"
        );
        assert!(
            why.contains("(e 2GB, x 3GB, b 2GB) add up to 7.0 GiB"),
            "{why}"
        );
        assert!(why.contains("list fewer devices"), "{why}");
        // Two devices for three variants: batches of two; the peak is the
        // batch with the 3GB variant.  Unset: PostgreSQL's 128MB.
        let p = planned(r#"["/dev/sdb", "/dev/sdc"]"#, "interleaved", "");
        let peak = shared_peak(&p, "h").expect("peak");
        assert_eq!(peak.bytes, 3 * GIB + DEFAULT_SHARED_BUFFERS);
        assert!(
            peak.clusters.iter().any(|(_, b)| b == "128MB (default)"),
            "{peak:?}"
        );
        // A value only the host's PostgreSQL can judge: no verdict here.
        let p = planned(
            r#"["/dev/sdb"]"#,
            "sequential",
            "[postgres]\nshared_buffers = \"2 gigs\"",
        );
        assert_eq!(shared_peak(&p, "h"), None);
        assert_eq!(shared_peak(&p, "other"), None);
    }

    fn use_of(name: &str, value: &str) -> SettingUse {
        SettingUse {
            name: name.into(),
            value: value.into(),
            from_matrix: ["ext4".to_string(), "xfs".to_string()].into(),
            from_variant: BTreeSet::new(),
        }
    }

    #[test]
    fn describe_lines_parse_short_and_odd_lines_without_panicking() {
        let d = Describe::parse(
            "max_connections\tpostmaster\tConnections\tINTEGER\t0\t1\t262143\tSets the maximum.\t",
        );
        assert_eq!(
            (
                d.name.as_str(),
                d.vartype.as_str(),
                d.min.as_str(),
                d.max.as_str()
            ),
            ("max_connections", "INTEGER", "1", "262143")
        );
        assert_eq!(Describe::parse(""), Describe::default());
        assert_eq!(Describe::parse("x\ty").context, "y");
    }

    #[test]
    fn a_misspelt_name_gets_the_nearest_real_one() {
        let names = ["shared_buffers", "work_mem", "wal_buffers", "fsync"];
        assert_eq!(nearest("shared_bufers", &names), Some("shared_buffers"));
        assert_eq!(nearest("work_mme", &names), Some("work_mem"));
        assert_eq!(nearest("buffers", &names), Some("wal_buffers"));
        assert_eq!(nearest("zzzzzzzzzz", &names), None);
        assert_eq!(nearest("", &names), None);
    }

    #[test]
    fn an_answer_that_misses_settings_fails_closed() {
        let uses = [use_of("fsync", "off"), use_of("work_mem", "4MB")];
        let p = problems(&uses, &Kv::parse("checked=1\n"), "15.8");
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains("answered for 1 of 2"), "{p:?}");
        let p = problems(&uses, &Kv::parse(""), "15.8");
        assert!(p[0].contains("answered for none of 2"), "{p:?}");
        assert!(problems(&uses, &Kv::parse("checked=2\n"), "15.8").is_empty());
        assert!(problems(&[], &Kv::parse("checked=0\n"), "15.8").is_empty());
    }

    #[test]
    fn a_problem_names_setting_value_origin_error_and_what_is_valid() {
        let mut u = use_of("wal_level", "maximal");
        u.from_matrix.clear();
        u.from_variant.insert("xfs-nobarrier".into());
        let kv = Kv::parse(
            "refused.0.error=invalid value for parameter \"wal_level\": \"maximal\"\n\
             refused.0.hint=Available values: minimal, replica, logical.\n\
             refused.0.describe=wal_level\tpostmaster\tWAL\tENUM\treplica\t\t\tSets the level of information written to the WAL.\n\
             checked=1\n",
        );
        let p = problems(&[u], &kv, "15.8");
        assert_eq!(
            p,
            [
                "PostgreSQL 15.8 on this host refuses wal_level = \"maximal\" (from the postgres = {…} of \
                 filesystem variant xfs-nobarrier): invalid value for parameter \"wal_level\": \"maximal\"; \
                 valid: one of its named values (Available values: minimal, replica, logical) — \
                 Sets the level of information written to the WAL"
            ]
        );
    }

    #[test]
    fn internal_settings_say_they_cannot_be_set() {
        let d = Describe::parse(
            "block_size\tinternal\tPreset\tINTEGER\t0\t8192\t8192\tShows the block size.",
        );
        assert!(valid_form(&d, None).starts_with("nothing: it is fixed"));
    }

    /// The real thing: the verb run here against the local PostgreSQL (as
    /// root, through runuser as `postgres`), and its answer judged.
    #[test]
    fn the_local_postgres_refuses_bad_names_and_values_and_accepts_the_rest() {
        let Some(pg_bin) = local_pg_bin() else {
            eprintln!("skipped: no local PostgreSQL with a `postgres` user to run as (needs root and /usr/lib/postgresql/*/bin/postgres)");
            return;
        };
        let uses = [
            use_of("shared_bufers", "1"),
            use_of("shared_buffers", "lots"),
            use_of("wal_level", "maximal"),
            use_of("max_connections", "0"),
            use_of("fsync", "perhaps"),
            use_of("block_size", "4096"),
            use_of("search_path", "'; rm -rf / #"),
            use_of("shared_buffers", "128MB"),
            // Within range (134217728 blocks): only start-up would fail, on memory.
            use_of("shared_buffers", "1TB"),
            use_of("shared_buffers", "9TB"),
            use_of("fsync", "OF"),
            use_of("fsync", "o"),
            use_of("work_mem", "64kB"),
            use_of("work_mem", "63kB"),
            use_of("work_mem", "4 MB"),
            use_of("work_mem", "4mb"),
            use_of("checkpoint_timeout", "15min"),
            use_of("checkpoint_timeout", "2d"),
            use_of("random_page_cost", "1.1"),
            use_of("random_page_cost", "-1"),
            use_of("wal_level", "Logical"),
            use_of("synchronous_commit", "of"),
            use_of("synchronous_commit", "off"),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in [
            ("common.sh", super::super::verb::COMMON_SH),
            ("linux.sh", super::super::verb::LINUX_SH),
        ] {
            std::fs::write(dir.path().join(name), body).unwrap();
        }
        let out = std::process::Command::new("/bin/sh")
            .arg(dir.path().join("linux.sh"))
            .arg("pg-check-settings")
            .arg(format!("pg_bin={pg_bin}"))
            .args(
                uses.iter()
                    .map(|u| format!("pg_set={}={}", u.name, u.value)),
            )
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let p = problems(&uses, &Kv::parse(&stdout), "local");
        let refused: Vec<String> = p
            .iter()
            .map(|l| {
                let (_, rest) = l.split_once(" refuses ").unwrap();
                rest.split_once(" (from").unwrap().0.to_string()
            })
            .collect();
        // PostgreSQL's own rules: the unit table is case-sensitive (no
        // "mb"), spaces before a unit are fine, a bool prefix must be
        // unique ("o" is on or off; "OF" is off), a range is checked after
        // the unit is applied (63kB < work_mem's 64kB; 2d > 1 day), enum
        // names are compared without case.
        assert_eq!(
            refused,
            [
                "shared_bufers = \"1\"",
                "shared_buffers = \"lots\"",
                "wal_level = \"maximal\"",
                "max_connections = \"0\"",
                "fsync = \"perhaps\"",
                "block_size = \"4096\"",
                "search_path = \"'; rm -rf / #\"",
                "shared_buffers = \"9TB\"",
                "fsync = \"o\"",
                "work_mem = \"63kB\"",
                "work_mem = \"4mb\"",
                "checkpoint_timeout = \"2d\"",
                "random_page_cost = \"-1\"",
                "synchronous_commit = \"of\"",
            ],
            "{p:#?}"
        );
        assert!(p[0].contains("did you mean `shared_buffers`?"), "{}", p[0]);
        assert!(
            p[2].contains("Available values: minimal, replica, logical"),
            "{}",
            p[2]
        );
        assert!(p[3].contains("from 1 to 262143"), "{}", p[3]);
        assert!(p[4].contains("on, off, true"), "{}", p[4]);
        assert!(
            p[0].contains("from [postgres], for variants ext4, xfs"),
            "{}",
            p[0]
        );
        assert!(p[5].contains("cannot be set"), "{}", p[5]);
    }

    /// The newest local PostgreSQL, when this test can run it as `postgres`.
    fn local_pg_bin() -> Option<String> {
        let root = std::process::Command::new("id").arg("-u").output().ok()?;
        if String::from_utf8_lossy(&root.stdout).trim() != "0" {
            return None;
        }
        let mut bins: Vec<_> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("bin"))
            .filter(|p| p.join("postgres").is_file())
            .collect();
        bins.sort();
        let bin = bins.pop()?;
        let ok = std::process::Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(bin.join("postgres"))
            .arg("--version")
            .output()
            .ok()?
            .status
            .success();
        ok.then(|| bin.display().to_string())
    }
}
