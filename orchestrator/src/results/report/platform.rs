//! Guests against bare metal (issue 26): for each filesystem variant,
//! workload and client count that ran on a physical host and on a guest of
//! it (the bundle's inventory snapshot says which host is `guest_of`
//! which: [`crate::results::bundle::read::guest_hosts`]), the guest's
//! mean of the table's [`Metric`] ÷ the physical host's, with the same
//! statistics as the variants on one host ([`compare::compare`]: the ratio
//! of means, its delta-method 95% CI, Welch's p).  This is the one
//! comparison made across hosts: the guest runs on its physical host's
//! CPU and on one of its disks, so what differs is the virtualisation.
//!
//! A guest under TCG (software emulation, the lab's guests) is a
//! stand-in: its rows are labelled as the BSD stand-ins' are
//! ([`tcg_label`], [`label_tcg_guests`]), a note says so first, and its
//! platform rows carry `standin` and say "[TCG stand-in]".
use serde::Serialize;

use super::build::BLOCKING_NOTE;
use super::{Report, Table};
use crate::config::inventory::vm::{Accel, CacheMode, DiskBus};
use crate::model::CellResult;
use crate::results::analysis::compare;
use crate::results::analysis::stats::{p_text, Metric};
use crate::results::bundle::read::GuestInfo;

/// The section's title in every format.
pub const PLATFORM_HEADING: &str = "Guests against bare metal";

/// One variant × workload × clients on a physical host and on its guest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Platform {
    pub physical_host: String,
    pub guest: String,
    pub variant: String,
    pub workload: String,
    pub clients: u32,
    /// What the ratio is of (the table's metric); `None` when neither side
    /// has a counted run, so there is no table.
    pub metric: Option<Metric>,
    /// Guest mean ÷ physical host mean; `None` when a side has no done run.
    pub ratio: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Welch's two-sided p; `None` when untestable (fewer than two runs on
    /// a side, or no spread at all).
    pub p: Option<f64>,
    /// Counted runs with a value of the metric on each side.
    pub n_metal: usize,
    pub n_guest: usize,
    pub accel: Accel,
    pub bus: DiskBus,
    pub cache: CacheMode,
    /// TCG: the numbers measure emulation, not the cost of KVM.
    pub standin: bool,
}

/// The label a TCG guest's rows carry in every format (as
/// [`super::standin_label`] does for the BSD stand-ins).
pub fn tcg_label(host: &str) -> String {
    format!("{host} [TCG stand-in]")
}

/// Relabel the cells of TCG guests ([`tcg_label`]) so that no table, plot
/// or CSV row shows them as real guests.
pub fn label_tcg_guests(cells: &mut [CellResult], guests: &[GuestInfo]) {
    for c in cells {
        if guests
            .iter()
            .any(|g| g.standin() && g.guest == c.params.host)
        {
            c.params.host = tcg_label(&c.params.host);
        }
    }
}

/// Whether `shown` (a host as the report shows it: maybe labelled as a
/// stand-in) is host `name`.  Host names have no spaces or brackets.
pub(super) fn is_host(shown: &str, name: &str) -> bool {
    shown == name
        || shown
            .strip_prefix(name)
            .is_some_and(|rest| rest.starts_with(" [") && rest.ends_with(" stand-in]"))
}

/// Compute `r.platforms` for `guests` (a guest named twice counts once)
/// and say in the notes how, and which guests are TCG stand-ins.
pub fn mark_platforms(r: &mut Report, guests: &[GuestInfo]) {
    let mut seen: Vec<&GuestInfo> = Vec::new();
    for g in guests {
        if !seen.iter().any(|s| s.guest == g.guest) {
            seen.push(g);
        }
    }
    r.platforms = seen.iter().flat_map(|g| platforms_of(r, g)).collect();
    // Stable: each (workload, clients) keeps its guests in inventory order.
    r.platforms
        .sort_by(|a, b| (&a.workload, a.clients).cmp(&(&b.workload, b.clients)));
    if r.platforms.is_empty() {
        return;
    }
    // The one exception to the blocking rule, said where the rule is.
    for n in r.notes.iter_mut().filter(|n| *n == BLOCKING_NOTE) {
        *n = format!(
            "{}, except a guest with its own physical host ({PLATFORM_HEADING}, below).",
            BLOCKING_NOTE.trim_end_matches('.')
        );
    }
    r.notes.push(format!(
        "{PLATFORM_HEADING}: the one comparison across hosts. For each variant, workload and client count that ran on a physical host and on a guest of it (the inventory's guest_of), the guest's mean ÷ the physical host's (tps; latency when rate-limited; load time for a SQL script), its 95% CI and Welch's p as for variants on one host."
    ));
    let tcg: Vec<String> = seen
        .iter()
        .filter(|g| g.standin() && r.platforms.iter().any(|p| p.guest == g.guest))
        .map(|g| tcg_label(&g.guest))
        .collect();
    if !tcg.is_empty() {
        r.notes.insert(
            0,
            format!(
                "TCG STAND-IN GUESTS: {} — guests run under QEMU's software emulation (TCG), where KVM cannot run (the lab). Their numbers and their ratios to bare metal measure emulation, not the cost of KVM: never read them as a virtualisation cost.",
                tcg.join(", ")
            ),
        );
    }
}

/// The rows of one guest, in table order (workload, clients), then the
/// physical host's variant order.
fn platforms_of(r: &Report, g: &GuestInfo) -> Vec<Platform> {
    // (workload, clients, variant) on each side, from counted runs and
    // from failed or not-run cells.
    let mut keys: Vec<(String, u32, String)> = Vec::new();
    let mut sides: Vec<((String, u32, String), bool)> = Vec::new();
    let mut add = |k: (String, u32, String), metal: bool| {
        if !keys.contains(&k) {
            keys.push(k.clone());
        }
        if !sides.contains(&(k.clone(), metal)) {
            sides.push((k, metal));
        }
    };
    // The physical host first, so its variant order leads.
    for metal in [true, false] {
        let name = if metal { &g.physical } else { &g.guest };
        for t in &r.tables {
            for hb in t.hosts.iter().filter(|h| is_host(&h.host, name)) {
                for row in &hb.rows {
                    let k = (
                        t.workload.clone(),
                        t.clients,
                        row.stats.key.filesystem.clone(),
                    );
                    add(k, metal);
                }
            }
        }
        for p in r.problems.iter().filter(|p| is_host(&p.host, name)) {
            add((p.workload.clone(), p.clients, p.filesystem.clone()), metal);
        }
    }
    keys.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    keys.into_iter()
        .filter(|k| sides.contains(&(k.clone(), true)) && sides.contains(&(k.clone(), false)))
        .map(|(workload, clients, variant)| {
            let table = r
                .tables
                .iter()
                .find(|t| t.workload == workload && t.clients == clients);
            let metric = table.map(|t| t.metric);
            let values = |name: &str| -> Vec<f64> {
                match (table, metric) {
                    (Some(t), Some(m)) => values_of(t, name, &variant, m),
                    _ => Vec::new(),
                }
            };
            let (metal, guest) = (values(&g.physical), values(&g.guest));
            let (mut ratio, mut ci, mut p) = (None, None, None);
            if let (Some(m), false, false) = (metric, metal.is_empty(), guest.is_empty()) {
                // The same statistics as a variant against its baseline.
                // Each platform ratio is its own question, at α alone.
                let c = compare::compare(&g.physical, &guest, &metal, m, Default::default());
                ratio = c.ratio.map(|x| x.ratio);
                ci = c.ratio.and_then(|x| x.ci95);
                p = c.p();
            }
            Platform {
                physical_host: g.physical.clone(),
                guest: g.guest.clone(),
                variant,
                workload,
                clients,
                metric,
                ratio,
                ci_low: ci.map(|c| c.0),
                ci_high: ci.map(|c| c.1),
                p,
                n_metal: metal.len(),
                n_guest: guest.len(),
                accel: g.accel,
                bus: g.bus,
                cache: g.cache,
                standin: g.standin(),
            }
        })
        .collect()
}

/// The counted values of `m` of `variant` on host `name` in table `t`.
fn values_of(t: &Table, name: &str, variant: &str, m: Metric) -> Vec<f64> {
    t.hosts
        .iter()
        .filter(|h| is_host(&h.host, name))
        .flat_map(|h| &h.rows)
        .filter(|row| row.stats.key.filesystem == variant)
        .flat_map(|row| row.stats.values(m).iter().copied())
        .collect()
}

/// "under KVM" or "under TCG emulation".
fn under(a: Accel) -> &'static str {
    match a {
        Accel::Kvm => "under KVM",
        Accel::Tcg => "under TCG emulation",
    }
}

/// `ext4 on metal1: under KVM (virtio-blk, cache=none) 0.62 ± 0.05 times
/// the tps of bare metal (p < 0.001)`; a side without a done run is said
/// instead of a number; a TCG guest's sentence ends `[TCG stand-in]`.
pub fn platform_sentence(p: &Platform) -> String {
    let head = format!(
        "{} on {}: {} ({}, cache={})",
        p.variant,
        p.physical_host,
        under(p.accel),
        p.bus,
        p.cache
    );
    let body = match (p.n_metal, p.n_guest, p.ratio, p.metric) {
        (0, 0, _, _) => format!(
            "{head}: no done run on bare metal nor on the guest {}, nothing to compare",
            p.guest
        ),
        (0, _, _, _) => format!("{head}: no done run on bare metal, nothing to compare"),
        (_, 0, _, _) => format!(
            "{head}: no done run on the guest {}, nothing to compare",
            p.guest
        ),
        (_, _, Some(x), Some(m)) => {
            let times = match (p.ci_low, p.ci_high) {
                (Some(lo), Some(hi)) => format!("{x:.2} ± {:.2}", (hi - lo) / 2.0),
                _ => format!("{x:.2}"),
            };
            let test =
                p.p.map_or_else(|| compare::Verdict::Untestable.text().to_owned(), p_text);
            format!(
                "{head} {times} times the {} of bare metal ({test})",
                m.name()
            )
        }
        _ => format!("{head}: no ratio (a mean of zero), nothing to compare"),
    };
    if p.standin {
        format!("{body} [TCG stand-in]")
    } else {
        body
    }
}

/// The sentence and which guest it is, with the runs on each side: one
/// line of the summary, the Markdown and the HTML list.
pub fn platform_line(p: &Platform) -> String {
    format!(
        "{} — guest {}, {} run{} vs {} on bare metal",
        platform_sentence(p),
        p.guest,
        p.n_guest,
        if p.n_guest == 1 { "" } else { "s" },
        p.n_metal
    )
}

/// The platform rows of one (workload, clients).
pub struct PlatformSection<'a> {
    pub workload: &'a str,
    pub clients: u32,
    pub rows: Vec<&'a Platform>,
}

impl PlatformSection<'_> {
    /// `tpcb with 4 clients`.
    pub fn heading(&self) -> String {
        format!(
            "{} with {} client{}",
            self.workload,
            self.clients,
            if self.clients == 1 { "" } else { "s" }
        )
    }
}

/// `r.platforms` grouped by (workload, clients), in order.
pub fn platform_sections(r: &Report) -> Vec<PlatformSection<'_>> {
    let mut out: Vec<PlatformSection> = Vec::new();
    for p in &r.platforms {
        match out.last_mut() {
            Some(s) if s.workload == p.workload && s.clients == p.clients => s.rows.push(p),
            _ => out.push(PlatformSection {
                workload: &p.workload,
                clients: p.clients,
                rows: vec![p],
            }),
        }
    }
    out
}
