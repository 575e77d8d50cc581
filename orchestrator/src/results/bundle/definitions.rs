//! What a bundle's workloads and filesystem variants were, as they ran:
//! read from its resolved plan (`data/plan.json`), one flat map of dotted
//! keys per workload and per variant, so that two bundles can be compared
//! key by key as data (`results::report::pooling`) and a report can say
//! what each variant was (`results::report::compared`).
//!
//! A bundle is someone else's input: the plan is read bounded, never
//! through a link, and only what the definitions need is taken from it.
//! A key that a bundle from before it existed does not have reads as its
//! default (the value the tool used before the key was added: no rate, no
//! latency limit, no per-statement latencies, no pool properties), so it
//! differs from a newer bundle only where that one sets something else.
use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::BundleError;
use crate::config::{Correction, Length, Margin, SamplingRate, Scale, VerdictRule};

/// The most bytes of a bundle's plan.json read (100 000 cells take tens of
/// MB).
pub const MAX_PLAN_BYTES: u64 = 1 << 30;

/// One value of a definition, typed so that two are compared as data.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum DefValue {
    /// The plan does not set it (the tool's default).
    NotSet,
    Text(String),
    Count(u64),
    Seconds(u64),
    /// Numbers in order (client counts, and the jobs of each).
    Counts(Vec<u64>),
    Flag(bool),
}

impl std::fmt::Display for DefValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DefValue::NotSet => f.write_str("not set"),
            DefValue::Text(s) => f.write_str(s),
            DefValue::Count(n) => write!(f, "{n}"),
            DefValue::Seconds(n) => write!(f, "{n} s"),
            DefValue::Counts(v) => {
                let s: Vec<String> = v.iter().map(u64::to_string).collect();
                f.write_str(&s.join(", "))
            }
            DefValue::Flag(b) => f.write_str(if *b { "on" } else { "off" }),
        }
    }
}

/// A serialised value is its text ("10 s", "not set").
impl Serialize for DefValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One workload's or variant's definition: dotted key → value.  Scalar
/// keys are always there ([`DefValue::NotSet`] when not set); keys under a
/// prefix (`properties.`, `pool_properties.`, `postgres.`) only when set.
pub type Definition = BTreeMap<String, DefValue>;

/// A bundle's workloads and variants by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Definitions {
    pub workloads: BTreeMap<String, Definition>,
    pub variants: BTreeMap<String, Definition>,
    /// How its report decides comparisons (the matrix's `margin` and
    /// `correction`); `None`: the plan predates them.
    pub rule: Option<VerdictRule>,
}

#[derive(Deserialize)]
struct PlanJson {
    #[serde(default)]
    cells: Vec<CellJson>,
    #[serde(default)]
    margin: Option<Margin>,
    #[serde(default)]
    correction: Option<Correction>,
    #[serde(default)]
    sequential: Option<crate::config::Looks>,
}

#[derive(Deserialize)]
struct CellJson {
    fs: FsJson,
    #[serde(default)]
    pg_settings: Vec<NameValue>,
    workload: WorkloadJson,
    clients: u32,
    jobs: u32,
    length: Length,
    progress: bool,
    drop_caches: bool,
}

#[derive(Deserialize)]
struct NameValue {
    name: String,
    value: String,
}

#[derive(Deserialize)]
struct FsJson {
    name: String,
    #[serde(rename = "type")]
    fs_type: String,
    #[serde(default)]
    mkfs_options: Vec<String>,
    #[serde(default)]
    mount_options: Vec<String>,
    #[serde(default)]
    properties: Vec<NameValue>,
    #[serde(default)]
    pool_properties: Vec<NameValue>,
}

#[derive(Deserialize)]
struct WorkloadJson {
    name: String,
    kind: String,
    #[serde(default)]
    builtin: Option<String>,
    #[serde(default)]
    sha256: Option<String>,
    #[serde(default)]
    scale: Option<Scale>,
    #[serde(default)]
    rate: Option<u32>,
    #[serde(default)]
    latency_limit_ms: Option<u32>,
    #[serde(default)]
    latency_log: Option<SamplingRate>,
    #[serde(default)]
    per_statement: bool,
}

fn text(s: Option<&str>) -> DefValue {
    s.map_or(DefValue::NotSet, |s| DefValue::Text(s.to_owned()))
}

fn count(n: Option<u32>) -> DefValue {
    n.map_or(DefValue::NotSet, |n| DefValue::Count(n.into()))
}

fn workload_definition(c: &CellJson) -> Definition {
    let w = &c.workload;
    let (duration, transactions) = match c.length {
        Length::Seconds(s) => (DefValue::Seconds(s), DefValue::NotSet),
        Length::Transactions(t) => (DefValue::NotSet, DefValue::Count(t)),
        // A SQL script runs to its end; the estimate is only the ETA's.
        Length::ToCompletion { .. } => (DefValue::NotSet, DefValue::NotSet),
    };
    let scale = match w.scale {
        Some(Scale::Factor(n)) => DefValue::Count(n.into()),
        Some(s @ Scale::DevicePercent(_)) => DefValue::Text(s.to_string()),
        None => DefValue::NotSet,
    };
    [
        ("kind", DefValue::Text(w.kind.clone())),
        ("builtin", text(w.builtin.as_deref())),
        ("script.sha256", text(w.sha256.as_deref())),
        ("scale", scale),
        ("duration", duration),
        ("transactions", transactions),
        ("rate", count(w.rate)),
        ("latency_limit_ms", count(w.latency_limit_ms)),
        (
            "latency_log",
            w.latency_log.map_or(DefValue::NotSet, |r| {
                DefValue::Text(format!("sampling rate {r}"))
            }),
        ),
        ("per_statement", DefValue::Flag(w.per_statement)),
        ("progress", DefValue::Flag(c.progress)),
        ("drop_caches", DefValue::Flag(c.drop_caches)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

fn variant_definition(c: &CellJson) -> Definition {
    let fs = &c.fs;
    let list = |v: &[String], sep: &str| {
        if v.is_empty() {
            DefValue::NotSet
        } else {
            DefValue::Text(v.join(sep))
        }
    };
    let mut d: Definition = [
        ("type", DefValue::Text(fs.fs_type.clone())),
        ("mkfs_options", list(&fs.mkfs_options, " ")),
        ("mount_options", list(&fs.mount_options, ",")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    for (prefix, pairs) in [
        ("properties", &fs.properties),
        ("pool_properties", &fs.pool_properties),
        // [postgres] merged with the variant's own: what the cells ran with.
        ("postgres", &c.pg_settings),
    ] {
        for p in pairs {
            d.insert(
                format!("{prefix}.{}", p.name),
                DefValue::Text(p.value.clone()),
            );
        }
    }
    d
}

/// The definitions in a plan's JSON text.  Client counts (and the jobs of
/// each) are gathered over the workload's cells; every other key is the
/// first cell's (one plan defines a workload and a variant once).
pub fn definitions_of_plan(json: &[u8]) -> Result<Definitions, String> {
    let plan: PlanJson = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    let mut out = Definitions {
        rule: (plan.margin.is_some() || plan.correction.is_some()).then(|| VerdictRule {
            margin: plan.margin.unwrap_or_default(),
            correction: plan.correction.unwrap_or_default(),
            // A bundle is someone else's file: looks a matrix could not
            // have made (min below 2, max below min or past the matrix's
            // bound) are not a design, and the comparisons are decided
            // once over every repeat instead.
            sequential: plan.sequential.filter(|l| {
                l.min >= 2
                    && l.max >= l.min
                    && i64::from(l.max) <= crate::config::matrix::MAX_REPEATS
            }),
        }),
        ..Definitions::default()
    };
    let mut clients: BTreeMap<String, BTreeMap<u32, u32>> = BTreeMap::new();
    for c in &plan.cells {
        out.workloads
            .entry(c.workload.name.clone())
            .or_insert_with(|| workload_definition(c));
        out.variants
            .entry(c.fs.name.clone())
            .or_insert_with(|| variant_definition(c));
        clients
            .entry(c.workload.name.clone())
            .or_default()
            .insert(c.clients, c.jobs);
    }
    for (name, by_clients) in clients {
        if let Some(d) = out.workloads.get_mut(&name) {
            d.insert(
                "clients".into(),
                DefValue::Counts(by_clients.keys().map(|&n| n.into()).collect()),
            );
            d.insert(
                "jobs".into(),
                DefValue::Counts(by_clients.values().map(|&n| n.into()).collect()),
            );
        }
    }
    Ok(out)
}

/// The definitions of bundle `dir` from its `data/plan.json`: `None` when
/// it has none (a bundle written before the plan was kept); an error when
/// it is there but not a regular file of at most [`MAX_PLAN_BYTES`] or not
/// a plan.
pub fn read_definitions(dir: &Path) -> Result<Option<Definitions>, BundleError> {
    let path = dir.join("data").join("plan.json");
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    let bad = |why: String| BundleError::NotABundle {
        path: dir.to_owned(),
        why: format!("its data/plan.json cannot be read as a plan: {why}"),
    };
    let bytes = crate::files::read_regular_no_link(&path, MAX_PLAN_BYTES).map_err(bad)?;
    definitions_of_plan(&bytes).map(Some).map_err(bad)
}

/// What one bundle recorded of what it compared: its definitions (`None`:
/// it kept no plan) and every host's facts (real host name → key → value).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorded {
    /// The bundle's name as the report shows it.
    pub bundle: String,
    pub definitions: Option<Definitions>,
    pub facts: BTreeMap<String, BTreeMap<String, String>>,
}

/// Read what bundle `dir` (shown as `name`) recorded: [`read_definitions`]
/// and [`super::read::hosts_facts`].
pub fn read_recorded(dir: &Path, name: &str) -> Result<Recorded, BundleError> {
    Ok(Recorded {
        bundle: name.to_owned(),
        definitions: read_definitions(dir)?,
        facts: super::read::hosts_facts(dir),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(clients: u32, extra_workload: &str) -> String {
        format!(
            r#"{{"id":"x","host":"lab1","os":"linux","device":"/dev/loop0",
            "fs":{{"name":"zfs-lz4","type":"zfs","mkfs_options":[],"mount_options":[],
                  "properties":[{{"name":"compression","value":"lz4"}}],"postgres":[],"varied":[]}},
            "pg_settings":[{{"name":"shared_buffers","value":"32MB"}}],
            "workload":{{"name":"tpcb","kind":"builtin","builtin":"tpcb-like","scale":{{"factor":10}}{extra_workload}}},
            "clients":{clients},"jobs":{clients},"repeat":1,"warmup":false,
            "length":{{"seconds":30}},"progress":true,"drop_caches":false,"included":false}}"#
        )
    }

    #[test]
    fn a_sequential_design_is_read_only_when_a_matrix_could_have_made_it() {
        for (looks, kept) in [
            (r#"{"min":2,"max":10}"#, true),
            (r#"{"min":0,"max":10}"#, false),
            (r#"{"min":5,"max":3}"#, false),
            (r#"{"min":2,"max":4000000000}"#, false),
        ] {
            let json = format!(
                r#"{{"cells":[{}],"margin":"5%","sequential":{looks}}}"#,
                cell(4, "")
            );
            let d = definitions_of_plan(json.as_bytes()).unwrap();
            let rule = d.rule.unwrap();
            assert_eq!(rule.sequential.is_some(), kept, "{looks}");
        }
    }

    #[test]
    fn a_plan_gives_each_workload_and_variant_as_dotted_keys() {
        let json = format!(r#"{{"cells":[{},{}]}}"#, cell(4, ""), cell(1, ""));
        let d = definitions_of_plan(json.as_bytes()).unwrap();
        let w = &d.workloads["tpcb"];
        assert_eq!(w["duration"], DefValue::Seconds(30));
        assert_eq!(w["transactions"], DefValue::NotSet);
        assert_eq!(w["scale"], DefValue::Count(10));
        assert_eq!(w["builtin"], DefValue::Text("tpcb-like".into()));
        assert_eq!(w["clients"], DefValue::Counts(vec![1, 4]));
        assert_eq!(w["jobs"], DefValue::Counts(vec![1, 4]));
        // Keys a plan from before they existed lacks read as their defaults.
        assert_eq!(w["rate"], DefValue::NotSet);
        assert_eq!(w["per_statement"], DefValue::Flag(false));
        let v = &d.variants["zfs-lz4"];
        assert_eq!(v["type"], DefValue::Text("zfs".into()));
        assert_eq!(v["properties.compression"], DefValue::Text("lz4".into()));
        assert_eq!(v["postgres.shared_buffers"], DefValue::Text("32MB".into()));
        assert_eq!(v["mount_options"], DefValue::NotSet);
        assert!(!v.contains_key("pool_properties.ashift"));
        // A plan that sets them says so.
        let json = format!(
            r#"{{"cells":[{}]}}"#,
            cell(4, r#","rate":500,"per_statement":true"#)
        );
        let w = &definitions_of_plan(json.as_bytes()).unwrap().workloads["tpcb"];
        assert_eq!(w["rate"], DefValue::Count(500));
        assert_eq!(w["per_statement"], DefValue::Flag(true));
        assert!(definitions_of_plan(b"{\"cells\":[{\"fs\":1}]}").is_err());
    }
}
