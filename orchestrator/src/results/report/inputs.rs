//! What one report is built from, and the one sequence that builds it:
//! every bundle read the same way (checksums first, then its cells with
//! stand-in hosts and TCG guests labelled, then what it recorded of what it
//! compared), and every report marked the same way (definitions pooled or
//! side by side, systems and variants, stand-ins, platforms, checksums).
//! `run`'s own report, `fsmatrix report` over bundles and over the results
//! database, and the comparisons the database stores all come from here.
use std::collections::BTreeMap;
use std::path::Path;

use super::{
    build_report, check_pooling, label_standins, label_tcg_guests, mark_checksums, mark_compared,
    mark_differences, mark_platforms, mark_standins, Report, ReportError, ReportOptions, Source,
};
use crate::config::VerdictRule;
use crate::results::bundle::definitions::{read_recorded, Recorded};
use crate::results::bundle::read::{
    check_checksums, guest_hosts, load_bundle_results, standin_hosts, ChecksumCheck, GuestInfo,
};
use crate::results::{BundleError, CellResult};

/// One bundle as a report takes it (a folder, or one published in the
/// results database): its cells as recorded, not yet labelled.
#[derive(Debug, Clone)]
pub struct Gathered {
    /// The bundle's name as the report shows it.
    pub name: String,
    pub cells: Vec<CellResult>,
    pub check: ChecksumCheck,
    /// Host → the OS a stand-in host was dressed as.
    pub standins: BTreeMap<String, String>,
    /// The guests of its inventory, compared with their physical hosts.
    pub guests: Vec<GuestInfo>,
    /// Its definitions (none for a published bundle) and hosts' facts.
    pub recorded: Recorded,
}

/// Read the bundle folder `dir`: checksums first (numbers from a bundle
/// that does not verify are not the ones measured: refused, unless
/// `allow_unverified`, when its check says so), then its cells and what it
/// recorded.
pub fn read_bundle(dir: &Path, allow_unverified: bool) -> Result<Gathered, BundleError> {
    let name = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let check = check_checksums(dir, &name, allow_unverified)?;
    let cells = load_bundle_results(dir)?;
    let recorded = read_recorded(dir, &name)?;
    Ok(Gathered {
        cells,
        check,
        standins: standin_hosts(dir),
        guests: guest_hosts(dir),
        recorded,
        name,
    })
}

/// The bundles of one report, their cells labelled.
#[derive(Debug, Default)]
pub struct ReportInputs {
    loaded: Vec<(String, Vec<CellResult>)>,
    checks: Vec<ChecksumCheck>,
    standins: BTreeMap<String, String>,
    guests: Vec<GuestInfo>,
    recorded: Vec<Recorded>,
}

impl ReportInputs {
    /// Add `g`: a stand-in host's and a TCG guest's rows carry their labels
    /// (no table, plot or CSV row shows them as real hosts).
    pub fn add(&mut self, g: Gathered) {
        let Gathered {
            name,
            mut cells,
            check,
            standins,
            guests,
            recorded,
        } = g;
        label_standins(&mut cells, &standins);
        label_tcg_guests(&mut cells, &guests);
        self.loaded.push((name, cells));
        self.checks.push(check);
        self.standins.extend(standins);
        self.guests.extend(guests);
        self.recorded.push(recorded);
    }

    /// The labelled cells of each bundle, as the renderers take them.
    pub fn sources(&self) -> Vec<Source<'_>> {
        self.loaded
            .iter()
            .map(|(name, cells)| Source { name, cells })
            .collect()
    }

    /// Every bundle's labelled cells, in order.
    pub fn into_cells(self) -> Vec<CellResult> {
        self.loaded.into_iter().flat_map(|(_, c)| c).collect()
    }

    /// The report: bundles whose definitions differ are refused unless
    /// `opts.by_bundle` puts them side by side (then the notes say first
    /// what differs); then what was compared, stand-ins, guests against
    /// their physical hosts and the checksums are marked.
    pub fn build(&self, opts: &ReportOptions) -> Result<Report, ReportError> {
        let differences = check_pooling(&self.recorded, opts.by_bundle)?;
        let (rule, rule_note) = match opts.rule {
            Some(rule) => (Some(rule), None),
            None => recorded_rule(&self.recorded),
        };
        let opts = ReportOptions {
            rule,
            ..opts.clone()
        };
        let mut r = build_report(&self.sources(), &opts)?;
        if let Some(note) = rule_note {
            r.notes.insert(0, note);
        }
        mark_compared(&mut r, &self.recorded);
        mark_differences(&mut r, &self.recorded, differences);
        mark_standins(&mut r, &self.standins);
        mark_platforms(&mut r, &self.guests);
        mark_checksums(&mut r, &self.checks);
        Ok(r)
    }
}

/// The rule the bundles recorded (the first bundle's that did), and a note
/// when some bundle's plan predates the rule (its report now decides with
/// the first's, or the defaults) or two bundles recorded different rules.
fn recorded_rule(recorded: &[Recorded]) -> (Option<VerdictRule>, Option<String>) {
    let rules: Vec<(&str, Option<VerdictRule>)> = recorded
        .iter()
        .filter_map(|r| r.definitions.as_ref().map(|d| (r.bundle.as_str(), d.rule)))
        .collect();
    let first = rules.iter().find_map(|(b, r)| r.map(|r| (*b, r)));
    let rule = first.map_or_else(VerdictRule::default, |(_, r)| r);
    let older: Vec<&str> = rules
        .iter()
        .filter(|(_, r)| r.is_none())
        .map(|(b, _)| *b)
        .collect();
    let differ: Vec<String> = rules
        .iter()
        .filter_map(|(b, r)| {
            r.filter(|r| *r != rule)
                .map(|r| format!("{b} ({}, {})", r.margin, r.correction))
        })
        .collect();
    let mut said = Vec::new();
    if !older.is_empty() {
        said.push(format!(
            "Predates decided verdicts: {} recorded no margin or correction (made before fsmatrix decided faster, slower, equivalent or inconclusive at a family's error rate); decided here with margin {} and correction {}.",
            older.join(", "),
            rule.margin,
            rule.correction
        ));
    }
    if !differ.is_empty() {
        said.push(format!(
            "Bundles recorded other verdict rules: {}; decided here with {}'s (margin {}, correction {}).",
            differ.join(", "),
            first.map_or("the first", |(b, _)| b),
            rule.margin,
            rule.correction
        ));
    }
    (Some(rule), (!said.is_empty()).then(|| said.join(" ")))
}
