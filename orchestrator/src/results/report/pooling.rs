//! Never pool what differs: two bundles pool only where each workload and
//! each variant of the same name is defined identically (their
//! [`Definitions`], read by `results::bundle::definitions`, compared key by
//! key as data).  Otherwise `report` refuses ([`check_pooling`]), unless
//! the bundles are put side by side, where the report says what differs
//! ([`mark_differences`]: [`Report::definition_differences`] and a note).
//!
//! A key that a bundle from before it existed lacks reads as its default
//! (the bundle reader's rule), so it is a difference only where the other
//! bundle sets another value.  A bundle without a plan (`data/plan.json`)
//! has no recorded definitions: it is pooled, and a note says that it was
//! not checked.
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{Report, ReportError};
use crate::results::bundle::definitions::{DefValue, Definition, Definitions, Recorded};

/// One key whose values differ: (first bundle's, other bundle's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyDifference {
    /// Dotted: `duration`, `properties.compression`, `postgres.fsync`.
    pub key: String,
    pub values: [DefValue; 2],
}

/// The keys of `a` and `b` whose values differ, sorted; a key one lacks
/// counts as [`DefValue::NotSet`] there.
pub fn differing_keys(a: &Definition, b: &Definition) -> Vec<KeyDifference> {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let va = a.get(k).unwrap_or(&DefValue::NotSet);
            let vb = b.get(k).unwrap_or(&DefValue::NotSet);
            (va != vb).then(|| KeyDifference {
                key: k.clone(),
                values: [va.clone(), vb.clone()],
            })
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DefinitionKind {
    Workload,
    Variant,
}

/// A workload or variant defined otherwise in two bundles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DefinitionDifference {
    pub kind: DefinitionKind,
    pub name: String,
    /// The first bundle that defines it, and the other one.
    pub bundles: [String; 2],
    pub keys: Vec<KeyDifference>,
}

/// `workload "tpcb" differs between a and b in duration (10 s vs 8 s)`.
impl std::fmt::Display for DefinitionDifference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<String> = self
            .keys
            .iter()
            .map(|k| format!("{} ({} vs {})", k.key, k.values[0], k.values[1]))
            .collect();
        write!(
            f,
            "{} {:?} differs between {} and {} in {}",
            match self.kind {
                DefinitionKind::Workload => "workload",
                DefinitionKind::Variant => "variant",
            },
            self.name,
            self.bundles[0],
            self.bundles[1],
            keys.join(", ")
        )
    }
}

/// Every workload and variant that a bundle defines otherwise than the
/// first bundle (in the order given) that defines the same name; bundles
/// without recorded definitions are left out.
pub fn definition_differences(recorded: &[Recorded]) -> Vec<DefinitionDifference> {
    fn part(d: &Definitions, kind: DefinitionKind) -> &BTreeMap<String, Definition> {
        match kind {
            DefinitionKind::Workload => &d.workloads,
            DefinitionKind::Variant => &d.variants,
        }
    }
    let with: Vec<(&str, &Definitions)> = recorded
        .iter()
        .filter_map(|r| r.definitions.as_ref().map(|d| (r.bundle.as_str(), d)))
        .collect();
    let mut out = Vec::new();
    for kind in [DefinitionKind::Workload, DefinitionKind::Variant] {
        for (i, (bundle, defs)) in with.iter().enumerate() {
            for (name, def) in part(defs, kind) {
                let first = with[..i]
                    .iter()
                    .find_map(|(b, d)| part(d, kind).get(name).map(|x| (*b, x)));
                let Some((first_bundle, first_def)) = first else {
                    continue;
                };
                let keys = differing_keys(first_def, def);
                if !keys.is_empty() {
                    out.push(DefinitionDifference {
                        kind,
                        name: name.clone(),
                        bundles: [first_bundle.to_owned(), (*bundle).to_owned()],
                        keys,
                    });
                }
            }
        }
    }
    out
}

/// Whether the bundles may be pooled: their differences, or, unless they
/// are put side by side (`by_bundle`), an error naming each.
pub fn check_pooling(
    recorded: &[Recorded],
    by_bundle: bool,
) -> Result<Vec<DefinitionDifference>, ReportError> {
    let diffs = definition_differences(recorded);
    if diffs.is_empty() || by_bundle {
        return Ok(diffs);
    }
    // The values are the bundles' (other people's text): said with their
    // control characters escaped, never sent to the terminal raw.
    let said: Vec<String> = diffs
        .iter()
        .map(|d| crate::text::terminal_safe(&d.to_string()).into_owned())
        .collect();
    Err(ReportError::DefinitionsDiffer {
        differences: said.join("; "),
    })
}

/// Record `diffs` in `r` and say first in its notes what differs; with
/// more than one bundle, say which bundles had no definitions to check.
pub fn mark_differences(r: &mut Report, recorded: &[Recorded], diffs: Vec<DefinitionDifference>) {
    let mut said: Vec<String> = diffs
        .iter()
        .map(|d| format!("DEFINITIONS DIFFER: {d}; the bundles are side by side, never pooled, and their rows compare different things."))
        .collect();
    if recorded.len() > 1 {
        for b in recorded.iter().filter(|b| b.definitions.is_none()) {
            said.push(format!(
                "Definitions of bundle {} not recorded (it has no data/plan.json): whether its workloads and variants equal the other bundles' was not checked.",
                b.bundle
            ));
        }
    }
    r.notes.splice(0..0, said);
    r.definition_differences = diffs;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(pairs: &[(&str, DefValue)]) -> Definition {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn differing_keys_names_each_key_with_both_values_and_a_missing_key_as_not_set() {
        let a = def(&[
            ("duration", DefValue::Seconds(10)),
            ("scale", DefValue::Count(1)),
            ("clients", DefValue::Counts(vec![1, 4])),
            ("properties.compression", DefValue::Text("lz4".into())),
            ("rate", DefValue::NotSet),
        ]);
        let b = def(&[
            ("duration", DefValue::Seconds(8)),
            ("scale", DefValue::Count(1)),
            ("clients", DefValue::Counts(vec![1, 4])),
            ("postgres.fsync", DefValue::Text("off".into())),
        ]);
        let d = differing_keys(&a, &b);
        let said: Vec<String> = d
            .iter()
            .map(|k| format!("{}: {} vs {}", k.key, k.values[0], k.values[1]))
            .collect();
        // `rate` is not set in a and absent in b: the same (a key an older
        // bundle lacks is its default).
        assert_eq!(
            said,
            [
                "duration: 10 s vs 8 s",
                "postgres.fsync: not set vs off",
                "properties.compression: lz4 vs not set",
            ]
        );
        assert!(differing_keys(&a, &a).is_empty());
        assert_eq!(differing_keys(&b, &a).len(), 3);
    }

    /// Issue 39: a bundle's escape sequence in a value reaches the refusal
    /// escaped, not raw.
    #[test]
    fn the_pooling_refusal_escapes_what_the_bundles_wrote() {
        let defs = |v: &str| Definitions {
            workloads: [(
                "w".to_string(),
                def(&[("postgres.work_mem", DefValue::Text(v.into()))]),
            )]
            .into(),
            variants: BTreeMap::new(),
            rule: None,
        };
        let rec = |b: &str, v: &str| Recorded {
            bundle: b.into(),
            definitions: Some(defs(v)),
            facts: BTreeMap::new(),
        };
        let e = check_pooling(
            &[rec("a", "4MB"), rec("b", "\x1b[2J\x1b]0;owned\x07")],
            false,
        )
        .expect_err("they differ")
        .to_string();
        assert!(!e.contains('\x1b') && !e.contains('\x07'), "{e:?}");
        assert!(e.contains("\\u{1b}[2J"), "{e}");
    }

    #[test]
    fn a_difference_reads_as_the_issue_writes_it() {
        let d = DefinitionDifference {
            kind: DefinitionKind::Workload,
            name: "tpcb".into(),
            bundles: ["a".into(), "b".into()],
            keys: vec![KeyDifference {
                key: "duration".into(),
                values: [DefValue::Seconds(10), DefValue::Seconds(8)],
            }],
        };
        assert_eq!(
            d.to_string(),
            "workload \"tpcb\" differs between a and b in duration (10 s vs 8 s)"
        );
    }
}
