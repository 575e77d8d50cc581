//! Matrix × inventory → the plan: every cell that will run, where, in which
//! order, and how long each host will take.  Pure: no I/O, no clock.
//!
//! Order per host (the run engine keeps it): filesystem variant (one build
//! serves all its workloads and repeats), then workload (one data load
//! serves all its client counts), then client count, then repeat (a warm-up
//! run, when asked for, comes first).
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::values::{DevicePath, HostName, Label};
use crate::config::{
    FsType, FsVariant, GuestOrder, Host, Inventory, Length, Matrix, Order, Os, PgSetting, Repeats,
    Rule, SamplingRate, Scale, VerdictRule, Workload, WorkloadKind,
};
use crate::text::hms as format_duration;

/// ETA constants.  Rough on purpose: they are only for "how long will this
/// take", shown before a run and refined by the run engine as cells finish.
mod order;
mod render;
pub mod work;

pub use order::order_runs;
use order::schedule;
pub use render::{render, render_cells, render_order, table};

pub mod eta {
    /// Per filesystem variant: mkfs + mount + initdb + start, and at the end
    /// stop + unmount + destroy.  The lab measured 3–40 s (zfs-fuse slowest);
    /// real disks with discard take longer.
    pub const FS_SETUP_SECS: u64 = FS_BUILD_SECS + FS_TEARDOWN_SECS;
    /// The set-up part of [`FS_SETUP_SECS`].
    pub const FS_BUILD_SECS: u64 = 45;
    /// The tear-down part of [`FS_SETUP_SECS`].
    pub const FS_TEARDOWN_SECS: u64 = 15;
    /// Per (variant, pgbench workload): fixed part of `pgbench -i`.
    pub const LOAD_BASE_SECS: u64 = 10;
    /// Per scale unit of `pgbench -i -s N`, in milliseconds: the zfs-vs-ext4
    /// study measured 268–383 s for scale 1000 on a cloud volume.
    pub const LOAD_MS_PER_SCALE: u64 = 400;
    /// Per percent of the device when the scale is a share of it (the size is
    /// unknown at plan time): 80% ≈ 27 min, the order of the ext3/ext4/xfs study.
    pub const LOAD_SECS_PER_DEVICE_PERCENT: u64 = 20;
    /// Per measured run: connect, checkpoint, collect output and counters.
    pub const RUN_OVERHEAD_SECS: u64 = 5;
    /// Per run that drops caches first: PostgreSQL stopped, caches dropped
    /// (sync, drop, or unmount/export and back), PostgreSQL started.
    pub const DROP_CACHES_SECS: u64 = 6;
    /// Transactions per second assumed to turn `transactions` into time.
    pub const ASSUMED_TPS: u64 = 500;
    /// A guest's start to its SSH (and its ACPI shutdown), per variant: a
    /// KVM guest's boot takes tens of seconds; the lab's TCG guest about
    /// a minute to SSH (docs/lab.md).
    pub fn guest_boot_secs(accel: crate::config::inventory::vm::Accel) -> u64 {
        match accel {
            crate::config::inventory::vm::Accel::Kvm => 45,
            crate::config::inventory::vm::Accel::Tcg => 120,
        }
    }
}

/// One benchmark run: everything the run engine needs, nothing it must look up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// 16 hex digits of sha256 over the cell's own parameters (see [`cell_id`]).
    pub id: String,
    pub host: HostName,
    pub os: Os,
    /// The device the variant is built on (the host's first device; with
    /// `order = "interleaved"`/`"random"`, the device of its batch slot).
    pub device: DevicePath,
    /// Shared by all cells of the variant on this host (cheap clones).
    pub fs: Arc<FsVariant>,
    /// [postgres] merged with the variant's own settings (variant wins), sorted.
    pub pg_settings: Arc<Vec<PgSetting>>,
    pub workload: Arc<CellWorkload>,
    pub clients: u32,
    pub jobs: u32,
    /// 1-based, counted separately for warm-up runs and counted repeats.
    pub repeat: u32,
    /// A warm-up run: executed, kept in the bundle, left out of statistics.
    pub warmup: bool,
    /// The workload's adaptive repeats, on its counted cells: a repeat past
    /// `min` runs only while the 95% CI of the repeats before it is wider
    /// than the target.  Not part of the id (it does not change what a run
    /// measures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<Repeats>,
    pub length: Length,
    pub progress: bool,
    pub drop_caches: bool,
    /// The workload's `run_timeout` in seconds, if it names one.  Not part
    /// of the id: it only limits how long a stuck run is waited for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_timeout: Option<u64>,
    /// Added by an `include` rule (a client count beyond the workload's list).
    pub included: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellWorkload {
    pub name: Label,
    #[serde(flatten)]
    pub kind: WorkloadKind,
    /// Kept symbolic: "80% of device" is resolved by the run engine.
    pub scale: Option<Scale>,
    /// pgbench `-R` (transactions per second in all), if the workload sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u32>,
    /// pgbench `-L` in milliseconds, if the workload sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_limit_ms: Option<u32>,
    /// pgbench `-l --sampling-rate`: the per-transaction log, if asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_log: Option<SamplingRate>,
    /// pgbench `-r`: per-statement latencies.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_statement: bool,
}

/// A host × filesystem combination the host's OS cannot run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    pub host: HostName,
    pub filesystem: Label,
    pub fs_type: FsType,
    pub reason: String,
}

/// A host of the inventory the matrix's [hosts] filter leaves out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub host: HostName,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPlan {
    pub host: HostName,
    pub os: Os,
    pub device: DevicePath,
    /// Ids of this host's cells, in run order.
    pub cells: Vec<String>,
    pub fs_variants: Vec<Label>,
    /// Every planned cell run (with adaptive repeats: every repeat up to `max`).
    #[serde(with = "secs")]
    pub eta: Duration,
    /// Adaptive repeats that reach their target at `min`: the shortest sweep.
    #[serde(with = "secs")]
    pub eta_min: Duration,
    /// `order = "interleaved"` or `"random"`: the variants set up at the
    /// same time, one per device, and the order of their runs.  Empty when
    /// sequential (and in bundles written before orders existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batches: Vec<Batch>,
    /// A guest (`guest_of`): the accelerator it boots with, once per
    /// variant (its ETA counts the boots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_accel: Option<crate::config::inventory::vm::Accel>,
}

/// Variants set up at the same time on one host, each on its own device
/// with its own PostgreSQL cluster and port, and the order of their runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    pub slots: Vec<Slot>,
    /// The index in `slots` of each run, in run order (its cells are the
    /// host's `cells` in the same order).
    pub runs: Vec<u32>,
}

/// One variant of a [`Batch`]: where it is built.  Derived, never taken
/// from the matrix: the device is the host's `devices[index]` (one the
/// inventory names), the port `pg_port + index`, and the mount point and
/// socket folder under `work_dir` are named by the index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    pub index: u32,
    pub device: DevicePath,
    pub port: u16,
    pub variant: Label,
}

/// A workload script's text, kept once per plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Script {
    pub path: std::path::PathBuf,
    pub content: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "PlanJson")]
pub struct Plan {
    pub matrix: Label,
    /// Every workload script's text by its sha256, once: cells name their
    /// script by path and sha256 only (a 16 MiB script in 100 000 cells
    /// would otherwise make plan.json 1.6 TB).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub scripts: std::collections::BTreeMap<String, Script>,
    /// Every cell; one host's cells are contiguous, hosts in inventory order.
    pub cells: Vec<Cell>,
    pub dropped: Vec<Dropped>,
    /// Cells removed by `exclude` rules.
    pub excluded: usize,
    pub skipped_hosts: Vec<Skipped>,
    pub hosts: Vec<HostPlan>,
    /// Hosts run in parallel: the slowest host's ETA.
    #[serde(with = "secs")]
    pub eta: Duration,
    /// As `eta` when every adaptive repeat stops at its `min`.
    #[serde(with = "secs")]
    pub eta_min: Duration,
    /// The order of each host's runs (absent: sequential).
    #[serde(default, skip_serializing_if = "Order::is_sequential")]
    pub order: Order,
    /// `order = "random"`: the seed of every host's shuffle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The seed was drawn for this plan (the matrix names none).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub seed_drawn: bool,
    /// How a physical host and its guests take turns on their disk
    /// (absent: alternate per variant).
    #[serde(default, skip_serializing_if = "GuestOrder::is_default")]
    pub guest_order: GuestOrder,
    /// How the report decides its comparisons: the matrix's `margin` and
    /// `correction`, always written (a plan without them, from before the
    /// keys, reads as the defaults).
    #[serde(flatten)]
    pub verdicts: VerdictRule,
}

/// plan.json as written: the cells without their scripts' texts (bundles
/// before the texts moved to `scripts` kept them in every cell, and still
/// read back).
#[derive(Deserialize)]
struct PlanJson {
    matrix: Label,
    #[serde(default)]
    scripts: std::collections::BTreeMap<String, Script>,
    cells: Vec<Cell>,
    dropped: Vec<Dropped>,
    excluded: usize,
    skipped_hosts: Vec<Skipped>,
    hosts: Vec<HostPlan>,
    #[serde(with = "secs")]
    eta: Duration,
    #[serde(with = "secs")]
    eta_min: Duration,
    #[serde(default)]
    order: Order,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    seed_drawn: bool,
    #[serde(default)]
    guest_order: GuestOrder,
    #[serde(flatten)]
    verdicts: VerdictRule,
}

impl From<PlanJson> for Plan {
    fn from(p: PlanJson) -> Plan {
        let mut cells = p.cells;
        for c in &mut cells {
            let mut w = (*c.workload).clone();
            if let Some((sha256, content)) = w.kind.script_text_mut() {
                if content.is_empty() {
                    if let Some(s) = p.scripts.get(sha256) {
                        content.clone_from(&s.content);
                    }
                }
            }
            c.workload = Arc::new(w);
        }
        Plan {
            matrix: p.matrix,
            scripts: p.scripts,
            cells,
            dropped: p.dropped,
            excluded: p.excluded,
            skipped_hosts: p.skipped_hosts,
            hosts: p.hosts,
            eta: p.eta,
            eta_min: p.eta_min,
            order: p.order,
            seed: p.seed,
            seed_drawn: p.seed_drawn,
            guest_order: p.guest_order,
            verdicts: p.verdicts,
        }
    }
}

impl Cell {
    /// The cell's parameters as its result records them (and the lab-wide
    /// queue stores them).
    pub fn params(&self) -> crate::model::CellParams {
        crate::model::CellParams {
            host: self.host.as_str().to_string(),
            filesystem: self.fs.name.as_str().to_string(),
            fs_type: self.fs.fs_type.as_str().to_string(),
            workload: self.workload.name.as_str().to_string(),
            clients: self.clients,
            jobs: self.jobs,
            repeat: self.repeat,
            warmup: self.warmup,
            rate: self.workload.rate,
            // Recorded so that the results compare such rows on their load time.
            sql_script: crate::generator::for_workload(&self.workload.kind)
                .compared_on(self.workload.rate)
                == crate::generator::Compared::LoadTime,
        }
    }

    /// A counted repeat past an adaptive `min`: it runs only if the repeats
    /// before it have not yet narrowed the CI to the target.
    pub fn is_conditional(&self) -> bool {
        self.adaptive.is_some_and(|a| self.repeat > a.min)
    }
}

mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_secs)
    }
}

/// The part of a cell's id input shared by all cells of one (host, variant,
/// workload): hashed once, then cloned per cell (planning 100 000 cells
/// stays well under a second even in a debug build).
#[derive(Serialize)]
struct IdPrefix<'a> {
    v: &'static str,
    host: &'a str,
    fs_name: &'a str,
    fs_type: FsType,
    mkfs: &'a [crate::config::values::MkfsOption],
    mount: &'a [crate::config::values::MountOption],
    properties: &'a [crate::config::ZfsProperty],
    pool_properties: &'a [crate::config::ZfsProperty],
    pg_settings: &'a [PgSetting],
    workload: &'a str,
    /// The builtin name, or "pgbench:<sha256>" / "sql:<sha256>" of the script.
    workload_kind: String,
    scale: Option<Scale>,
    /// Absent unless set, so that the ids of cells without them stay what
    /// they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_limit_ms: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_log: Option<SamplingRate>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    per_statement: bool,
}

fn id_prefix(host: &str, fs: &FsVariant, pg_settings: &[PgSetting], w: &CellWorkload) -> Sha256 {
    let input = IdPrefix {
        v: "fsmatrix-cell/1",
        host,
        fs_name: fs.name.as_str(),
        fs_type: fs.fs_type,
        mkfs: &fs.mkfs_options,
        mount: &fs.mount_options,
        properties: &fs.properties,
        pool_properties: &fs.pool_properties,
        pg_settings,
        workload: w.name.as_str(),
        workload_kind: w.kind.identity(),
        scale: w.scale,
        rate: w.rate,
        latency_limit_ms: w.latency_limit_ms,
        latency_log: w.latency_log,
        per_statement: w.per_statement,
    };
    let mut h = Sha256::new();
    // Serializing plain data into a Vec cannot fail; were it to, the Debug
    // form is just as canonical, and nothing panics.
    match serde_json::to_vec(&input) {
        Ok(b) => h.update(&b),
        Err(_) => h.update(format!("{:?}", (host, fs, pg_settings, w)).as_bytes()),
    }
    h
}

#[allow(clippy::too_many_arguments)]
fn id_finish(
    mut h: Sha256,
    clients: u32,
    jobs: u32,
    length: Length,
    repeat: u32,
    warmup: bool,
    progress: bool,
    drop_caches: bool,
) -> String {
    let (tag, n) = match length {
        Length::Seconds(s) => (b'T', s),
        Length::Transactions(t) => (b'X', t),
        Length::ToCompletion { estimate_secs } => (b'E', estimate_secs),
    };
    // Fixed-width binary suffix: no formatting per cell.
    let mut suffix = [0u8; 4 + 4 + 1 + 8 + 4 + 3];
    suffix[0..4].copy_from_slice(&clients.to_be_bytes());
    suffix[4..8].copy_from_slice(&jobs.to_be_bytes());
    suffix[8] = tag;
    suffix[9..17].copy_from_slice(&n.to_be_bytes());
    suffix[17..21].copy_from_slice(&repeat.to_be_bytes());
    suffix[21] = warmup as u8;
    suffix[22] = progress as u8;
    suffix[23] = drop_caches as u8;
    h.update(suffix);
    let digest = h.finalize();
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(16);
    for b in digest.iter().take(8) {
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 15) as usize] as char);
    }
    out
}

/// 16 hex digits of sha256 over a canonical encoding of the cell's own
/// parameters: host (by name: moving a host to another address keeps ids),
/// variant (name, type, options, properties), merged settings, workload (name,
/// builtin or script hash, scale), clients, jobs, length, repeat, warm-up,
/// progress, drop_caches.  Nothing about other cells enters it.
pub fn cell_id(c: &Cell) -> String {
    id_finish(
        id_prefix(c.host.as_str(), &c.fs, &c.pg_settings, &c.workload),
        c.clients,
        c.jobs,
        c.length,
        c.repeat,
        c.warmup,
        c.progress,
        c.drop_caches,
    )
}

/// The facts a rule is matched against.
struct Ctx<'a> {
    host: &'a Host,
    fs: &'a FsVariant,
    wl: &'a Workload,
}

fn matches(r: &Rule, c: &Ctx<'_>, clients: Option<u32>) -> bool {
    (r.host.is_empty() || r.host.iter().any(|h| h == c.host.name.as_str()))
        && (r.host_os.is_empty() || r.host_os.contains(&c.host.os))
        && (r.host_tag.is_empty()
            || c.host
                .tags
                .iter()
                .any(|t| r.host_tag.iter().any(|x| x == t.as_str())))
        && (r.filesystem.is_empty() || r.filesystem.iter().any(|f| f == c.fs.name.as_str()))
        && (r.fs_type.is_empty() || r.fs_type.contains(&c.fs.fs_type))
        && (r.workload.is_empty() || r.workload.iter().any(|w| w == c.wl.name.as_str()))
        && match clients {
            Some(n) => r.clients.is_empty() || r.clients.contains(&n),
            None => true,
        }
}

fn host_selected(m: &Matrix, h: &Host) -> Result<(), String> {
    let Some(f) = &m.hosts else { return Ok(()) };
    if !f.names.is_empty() && !f.names.iter().any(|n| n == h.name.as_str()) {
        return Err(format!("not in [hosts] names ({})", f.names.join(", ")));
    }
    if !f.tags.is_empty()
        && !h
            .tags
            .iter()
            .any(|t| f.tags.iter().any(|x| x == t.as_str()))
    {
        return Err(format!(
            "has none of the [hosts] tags ({})",
            f.tags.join(", ")
        ));
    }
    if !f.os.is_empty() && !f.os.contains(&h.os) {
        let os: Vec<&str> = f.os.iter().map(|o| o.as_str()).collect();
        return Err(format!(
            "{} is not a [hosts] os ({})",
            h.os.as_str(),
            os.join(", ")
        ));
    }
    Ok(())
}

fn merged_settings(m: &Matrix, fs: &FsVariant) -> Vec<PgSetting> {
    let mut out: Vec<PgSetting> = m
        .postgres
        .iter()
        .filter(|g| {
            !fs.postgres
                .iter()
                .any(|s| s.name.as_str().eq_ignore_ascii_case(g.name.as_str()))
        })
        .cloned()
        .collect();
    out.extend(fs.postgres.iter().cloned());
    out.sort_by_key(|s| s.name.as_str().to_ascii_lowercase());
    out
}

/// Seconds one run of a cell is expected to take, overheads included.
pub fn cell_secs(c: &Cell) -> u64 {
    let run = match c.length {
        Length::Seconds(s) => s,
        Length::Transactions(t) => t.saturating_mul(c.clients as u64) / eta::ASSUMED_TPS,
        Length::ToCompletion { estimate_secs } => estimate_secs,
    };
    run + eta::RUN_OVERHEAD_SECS
        + if c.drop_caches {
            eta::DROP_CACHES_SECS
        } else {
            0
        }
}

/// Seconds to load a workload's data once on a fresh variant.
pub fn load_secs(w: &Workload) -> u64 {
    load_secs_of(&w.kind, w.scale)
}

/// [`load_secs`] of a workload of `kind` at `scale`.
/// A generator whose runs load their own data (a SQL script) has no load
/// phase: 0.
pub fn load_secs_of(kind: &WorkloadKind, scale: Option<Scale>) -> u64 {
    if crate::generator::for_workload(kind).loads_in_run() {
        return 0;
    }
    match scale {
        None => 0,
        Some(Scale::Factor(n)) => eta::LOAD_BASE_SECS + n as u64 * eta::LOAD_MS_PER_SCALE / 1000,
        Some(Scale::DevicePercent(p)) => {
            eta::LOAD_BASE_SECS + p as u64 * eta::LOAD_SECS_PER_DEVICE_PERCENT
        }
    }
}

/// Expand a validated inventory and matrix into the plan.  Pure.
pub fn plan(inv: &Inventory, m: &Matrix) -> Plan {
    let mut cells = Vec::new();
    let mut dropped = Vec::new();
    let mut skipped = Vec::new();
    let mut hosts = Vec::new();
    let mut excluded = 0usize;
    for host in &inv.hosts {
        if let Err(reason) = host_selected(m, host) {
            skipped.push(Skipped {
                host: host.name.clone(),
                reason,
            });
            continue;
        }
        let first = cells.len();
        let mut variants = Vec::new();
        for fs in &m.filesystems {
            let os = host.os.profile();
            if !os.offers(fs.fs_type) {
                dropped.push(Dropped {
                    host: host.name.clone(),
                    filesystem: fs.name.clone(),
                    fs_type: fs.fs_type,
                    reason: format!(
                        "{} cannot run on {} ({} runs {})",
                        fs.fs_type.as_str(),
                        os.name,
                        os.name,
                        os.fs_names()
                    ),
                });
                continue;
            }
            if let Some(reason) =
                crate::config::fsopts::os_refuses(fs.fs_type, host.os, &fs.mkfs_options)
            {
                dropped.push(Dropped {
                    host: host.name.clone(),
                    filesystem: fs.name.clone(),
                    fs_type: fs.fs_type,
                    reason,
                });
                continue;
            }
            let pg_settings = Arc::new(merged_settings(m, fs));
            let fs_shared = Arc::new(fs.clone());
            let before_fs = cells.len();
            for wl in &m.workloads {
                let ctx = Ctx { host, fs, wl };
                let mut counts: Vec<(u32, bool)> = Vec::new();
                for &c in &wl.clients {
                    if m.exclude.iter().any(|r| matches(r, &ctx, Some(c))) {
                        excluded += (wl.repeats.max + wl.warmup) as usize;
                    } else {
                        counts.push((c, false));
                    }
                }
                if !wl.kind.runs_once() {
                    let mut extra: Vec<u32> = m
                        .include
                        .iter()
                        .filter(|r| matches(r, &ctx, None))
                        .flat_map(|r| r.clients.iter().copied())
                        .filter(|c| !wl.clients.contains(c))
                        .collect();
                    extra.sort_unstable();
                    extra.dedup();
                    counts.extend(extra.into_iter().map(|c| (c, true)));
                }
                if counts.is_empty() {
                    continue;
                }
                let workload = Arc::new(CellWorkload {
                    name: wl.name.clone(),
                    kind: wl.kind.clone(),
                    scale: wl.scale,
                    rate: wl.rate,
                    latency_limit_ms: wl.latency_limit_ms,
                    latency_log: wl.latency_log,
                    per_statement: wl.per_statement,
                });
                let prefix = id_prefix(host.name.as_str(), fs, &pg_settings, &workload);
                for (clients, included) in counts {
                    let jobs = wl.jobs.for_clients(clients);
                    let warmups = (1..=wl.warmup).map(|r| (r, true));
                    let counted = (1..=wl.repeats.max).map(|r| (r, false));
                    for (repeat, warmup) in warmups.chain(counted) {
                        let mut cell = Cell {
                            id: String::new(),
                            host: host.name.clone(),
                            os: host.os,
                            device: host.device().clone(),
                            fs: fs_shared.clone(),
                            pg_settings: pg_settings.clone(),
                            workload: workload.clone(),
                            clients,
                            jobs,
                            repeat,
                            warmup,
                            adaptive: (!warmup && wl.repeats.is_adaptive()).then_some(wl.repeats),
                            length: wl.length,
                            progress: wl.progress,
                            drop_caches: wl.drop_caches,
                            run_timeout: wl.run_timeout,
                            included,
                        };
                        cell.id = id_finish(
                            prefix.clone(),
                            clients,
                            jobs,
                            wl.length,
                            repeat,
                            warmup,
                            wl.progress,
                            wl.drop_caches,
                        );
                        cells.push(cell);
                    }
                }
            }
            if cells.len() > before_fs {
                variants.push(fs.name.clone());
            }
        }
        let batches = if m.order.is_sequential() {
            Vec::new()
        } else {
            let (order, batches) = schedule(
                m.order,
                m.seed.unwrap_or(0),
                host,
                &variants,
                &cells[first..],
            );
            let mut taken: Vec<Option<Cell>> = cells.drain(first..).map(Some).collect();
            cells.extend(order.into_iter().filter_map(|i| taken[i].take()));
            // Each cell names the device its variant is built on.
            for c in &mut cells[first..] {
                let slot = batches
                    .iter()
                    .flat_map(|b| &b.slots)
                    .find(|s| s.variant == c.fs.name);
                if let Some(s) = slot {
                    c.device = s.device.clone();
                }
            }
            batches
        };
        // The ETA's one arithmetic: the defaults of the run engine's
        // estimator (secs_min: without the repeats adaptive repeats may
        // not need).
        let host_cells: Vec<&Cell> = cells[first..].iter().collect();
        // A guest boots once per variant (metal and guest alternate per
        // variant on one disk: crate::run::guest::segments).
        let guest_accel = host.vm.as_ref().map(|vm| vm.accel);
        let (secs, secs_min) = work::prior_total(&work::work_of_host(&host_cells, guest_accel));
        hosts.push(HostPlan {
            host: host.name.clone(),
            os: host.os,
            device: host.device().clone(),
            cells: cells[first..].iter().map(|c| c.id.clone()).collect(),
            fs_variants: variants,
            eta: Duration::from_secs(secs),
            eta_min: Duration::from_secs(secs_min),
            batches,
            guest_accel,
        });
    }
    // Machines run in parallel; a physical host and its guests one after
    // the other (one disk).
    let machine_of = |h: &HostName| -> HostName {
        inv.hosts
            .iter()
            .find(|x| &x.name == h)
            .and_then(|x| x.guest_of.clone())
            .unwrap_or_else(|| h.clone())
    };
    let mut machines: Vec<(HostName, Duration, Duration)> = Vec::new();
    for h in &hosts {
        let m = machine_of(&h.host);
        match machines.iter_mut().find(|(n, _, _)| *n == m) {
            Some((_, e, e_min)) => {
                *e += h.eta;
                *e_min += h.eta_min;
            }
            None => machines.push((m, h.eta, h.eta_min)),
        }
    }
    let eta = machines.iter().map(|m| m.1).max().unwrap_or_default();
    let eta_min = machines.iter().map(|m| m.2).max().unwrap_or_default();
    let scripts = m
        .workloads
        .iter()
        .filter_map(|w| w.kind.script())
        .map(|(path, sha256, content)| {
            (
                sha256.to_string(),
                Script {
                    path: path.to_path_buf(),
                    content: content.to_string(),
                },
            )
        })
        .collect();
    Plan {
        matrix: m.name.clone(),
        scripts,
        cells,
        dropped,
        excluded,
        skipped_hosts: skipped,
        hosts,
        eta,
        eta_min,
        order: m.order,
        seed: (m.order == Order::Random).then_some(m.seed).flatten(),
        seed_drawn: m.order == Order::Random && m.seed_drawn,
        guest_order: m.guest_order,
        verdicts: m.verdicts,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const INV: &str = r#"
[defaults]
os = "linux"
identity_file = "/k"
known_hosts = "/kh"
[[host]]
name = "l1"
address = "10.203.0.11"
devices = ["/dev/vdb"]
tags = ["a"]
[[host]]
name = "f1"
address = "10.203.0.12"
os = "freebsd"
devices = ["/dev/ada1"]
tags = ["b"]
[[host]]
name = "d1"
address = "10.203.0.13"
os = "dragonfly"
devices = ["/dev/da1"]
"#;

    fn inv(text: &str) -> Inventory {
        match Inventory::parse(Path::new("inv.toml"), text.to_string()) {
            Ok(i) => i,
            Err(e) => panic!("inventory: {e}"),
        }
    }
    fn mat(text: &str) -> Matrix {
        match Matrix::parse(Path::new("m.toml"), text.to_string()) {
            Ok(m) => m,
            Err(e) => panic!("matrix: {e}"),
        }
    }

    const BASE: &str = r#"
name = "t"
repeats = 2
[postgres]
shared_buffers = "128MB"
[[filesystem]]
name = "ext4"
type = "ext4"
mount_options = ["noatime"]
[[filesystem]]
name = "zfs-{compression}"
type = "zfs"
vary = { compression = ["off", "lz4"] }
postgres = { full_page_writes = "off", shared_buffers = "64MB" }
[[workload]]
name = "tpcb"
builtin = "tpcb-like"
scale = 10
clients = [1, 4]
jobs = "clients"
duration = "10s"
warmup = true
[[workload]]
name = "ro"
builtin = "select-only"
scale = "80%"
clients = [2]
jobs = 4
duration = "1m"
"#;

    #[test]
    fn expansion_order_is_variant_workload_clients_repeat() {
        let p = plan(
            &inv(INV),
            &mat(&format!("{BASE}\n[hosts]\nnames = [\"l1\"]\n")),
        );
        let order: Vec<(String, String, u32, bool, u32)> = p
            .cells
            .iter()
            .map(|c| {
                (
                    c.fs.name.to_string(),
                    c.workload.name.to_string(),
                    c.clients,
                    c.warmup,
                    c.repeat,
                )
            })
            .collect();
        let mut want = Vec::new();
        for fs in ["ext4", "zfs-off", "zfs-lz4"] {
            for (wl, clients, warmups) in [("tpcb", vec![1, 4], 1), ("ro", vec![2], 0)] {
                for c in clients {
                    for w in 1..=warmups {
                        want.push((fs.to_string(), wl.to_string(), c, true, w));
                    }
                    for r in 1..=2 {
                        want.push((fs.to_string(), wl.to_string(), c, false, r));
                    }
                }
            }
        }
        assert_eq!(order, want);
        // jobs: "clients" follows clients; a fixed 4 is capped at 2 clients.
        assert!(p.cells.iter().all(|c| match c.workload.name.as_str() {
            "tpcb" => c.jobs == c.clients,
            _ => c.jobs == 2,
        }));
        // The variant's settings override [postgres].
        let z = p
            .cells
            .iter()
            .find(|c| c.fs.name.as_str() == "zfs-lz4")
            .map(|c| {
                c.pg_settings
                    .iter()
                    .map(|s| format!("{}={}", s.name, s.value))
                    .collect::<Vec<_>>()
            });
        assert_eq!(
            z,
            Some(vec![
                "full_page_writes=off".into(),
                "shared_buffers=64MB".into()
            ])
        );
        insta::assert_snapshot!("expansion_order", render_cells(&p));
    }

    #[test]
    fn vary_include_exclude_table() {
        // (extra matrix text, expected cells on l1, expected excluded)
        let cases: &[(&str, usize, usize)] = &[
            ("", 24, 0),
            ("[[exclude]]\nfilesystem = \"zfs-off\"\n", 16, 8),
            ("[[exclude]]\nfs_type = \"zfs\"\nclients = 4\n", 18, 6),
            ("[[exclude]]\nworkload = [\"ro\", \"tpcb\"]\nhost_tag = \"a\"\n", 0, 24),
            ("[[exclude]]\nhost_os = \"freebsd\"\n", 24, 0),
            // include adds a client count (warm-up + 2 repeats) to matching combinations.
            ("[[include]]\nworkload = \"tpcb\"\nfilesystem = \"ext4\"\nclients = [16, 4]\n", 27, 0),
            ("[[include]]\nfs_type = \"zfs\"\nclients = 64\n[[exclude]]\nfs_type = \"zfs\"\nclients = 1\n", 28, 6),
        ];
        let mut out = String::new();
        for (extra, cells, excluded) in cases {
            let m = mat(&format!("{BASE}\n{extra}\n[hosts]\nnames = [\"l1\"]\n"));
            let p = plan(&inv(INV), &m);
            assert_eq!(p.cells.len(), *cells, "{extra}");
            assert_eq!(p.excluded, *excluded, "{extra}");
            out.push_str(&format!(
                "--- {}\n{}",
                extra.replace('\n', "; "),
                render_cells(&p)
            ));
        }
        insta::assert_snapshot!("vary_include_exclude", out);
    }

    #[test]
    fn os_compat_drops_with_reasons() {
        let mut m = String::from("name = \"all\"\n");
        for t in FsType::ALL {
            m.push_str(&format!(
                "[[filesystem]]\nname = \"{0}\"\ntype = \"{0}\"\n",
                t.as_str()
            ));
        }
        m.push_str("[[workload]]\nname = \"w\"\nbuiltin = \"tpcb-like\"\nscale = 1\nclients = [1]\nduration = \"5s\"\n");
        let p = plan(&inv(INV), &mat(&m));
        let kept: Vec<(String, Vec<String>)> = p
            .hosts
            .iter()
            .map(|h| {
                (
                    h.host.to_string(),
                    h.fs_variants.iter().map(|v| v.to_string()).collect(),
                )
            })
            .collect();
        assert_eq!(
            kept,
            vec![
                (
                    "l1".into(),
                    vec![
                        "ext3".into(),
                        "ext4".into(),
                        "xfs".into(),
                        "btrfs".into(),
                        "zfs".into()
                    ]
                ),
                ("f1".into(), vec!["zfs".into(), "ufs".into()]),
                (
                    "d1".into(),
                    vec!["ufs".into(), "hammer".into(), "hammer2".into()]
                ),
            ]
        );
        assert_eq!(p.dropped.len(), 3 + 6 + 5);
        let ufs_on_linux = p
            .dropped
            .iter()
            .find(|d| d.host.as_str() == "l1" && d.fs_type == FsType::Ufs)
            .map(|d| d.reason.clone());
        assert_eq!(
            ufs_on_linux.as_deref(),
            Some("ufs cannot run on linux (linux runs ext3, ext4, xfs, btrfs, zfs)")
        );
        insta::assert_snapshot!("os_compat", render(&p));
    }

    fn ids_by_key(p: &Plan) -> std::collections::BTreeMap<String, String> {
        p.cells
            .iter()
            .map(|c| {
                (
                    format!(
                        "{}/{}/{}/{}/{}{}",
                        c.host,
                        c.fs.name,
                        c.workload.name,
                        c.clients,
                        if c.warmup { "warmup" } else { "" },
                        c.repeat
                    ),
                    c.id.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn ids_are_stable_and_unique() {
        let i = inv(INV);
        let p = plan(&i, &mat(BASE));
        let ids = ids_by_key(&p);
        let mut uniq: Vec<&String> = ids.values().collect();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), p.cells.len());
        assert!(p
            .cells
            .iter()
            .all(|c| c.id.len() == 16 && c.id.chars().all(|c| c.is_ascii_hexdigit())));

        // Unrelated changes: another filesystem, another workload, a rule
        // that excludes other cells, another host, reordered entries.
        let more = format!(
            "{BASE}\n[[filesystem]]\nname = \"xfs\"\ntype = \"xfs\"\n[[workload]]\nname = \"su\"\nbuiltin = \"simple-update\"\nscale = 5\nclients = [8]\nduration = \"5s\"\n[[exclude]]\nworkload = \"su\"\nclients = 8\nfilesystem = \"xfs\"\n"
        );
        let i2 = inv(&format!(
            "{INV}\n[[host]]\nname = \"l2\"\naddress = \"10.203.0.14\"\ndevices = [\"/dev/vdc\"]\n"
        ));
        let p2 = plan(&i2, &mat(&more));
        let ids2 = ids_by_key(&p2);
        for (k, id) in &ids {
            assert_eq!(ids2.get(k), Some(id), "{k}");
        }
        let reordered = BASE.replacen(
            "name = \"ext4\"\ntype = \"ext4\"\nmount_options = [\"noatime\"]\n[[filesystem]]\n",
            "",
            1,
        )
            + "[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\nmount_options = [\"noatime\"]\n";
        assert_eq!(ids_by_key(&plan(&i, &mat(&reordered))), ids);

        // A change of the cell's own parameters changes its id.
        for (from, to) in [
            (
                "mount_options = [\"noatime\"]",
                "mount_options = [\"relatime\"]",
            ),
            ("shared_buffers = \"128MB\"", "shared_buffers = \"256MB\""),
            ("duration = \"10s\"", "duration = \"11s\""),
            ("scale = 10", "scale = 11"),
        ] {
            let changed = plan(&i, &mat(&BASE.replacen(from, to, 1)));
            let c = ids_by_key(&changed);
            assert_ne!(
                c.get("l1/ext4/tpcb/1/1"),
                ids.get("l1/ext4/tpcb/1/1"),
                "{to}"
            );
        }
    }

    #[test]
    fn scale_percent_stays_symbolic() {
        let p = plan(&inv(INV), &mat(BASE));
        let ro = p.cells.iter().find(|c| c.workload.name.as_str() == "ro");
        assert_eq!(
            ro.and_then(|c| c.workload.scale),
            Some(Scale::DevicePercent(80))
        );
        assert!(render_cells(&p).contains("80% of device"));
        let json = serde_json::to_value(&p).unwrap_or_default();
        let scale = json["cells"]
            .as_array()
            .and_then(|a| a.iter().find(|c| c["workload"]["name"] == "ro"))
            .map(|c| c["workload"]["scale"].clone());
        assert_eq!(scale, Some(serde_json::json!({"device_percent": 80})));
    }

    #[test]
    fn eta_arithmetic() {
        let p = plan(
            &inv(INV),
            &mat(&format!("{BASE}\n[hosts]\nnames = [\"l1\"]\n")),
        );
        // Per variant: setup 60 + loads (tpcb: 10 + 10*0.4 = 14; ro: 10 + 80*20 = 1610)
        // + runs (tpcb: 2 clients × 3 runs × (10 + 5); ro: 1 × 2 × (60 + 5)).
        let per_variant = 60 + 14 + 1610 + 2 * 3 * 15 + 2 * 65;
        assert_eq!(p.hosts[0].eta, Duration::from_secs(3 * per_variant));
        assert_eq!(p.eta, p.hosts[0].eta);
        // drop_caches and transactions
        let tx = BASE
            .replacen("duration = \"10s\"", "transactions = 1000", 1)
            .replacen("repeats = 2", "repeats = 2\ndrop_caches = true", 1);
        let p = plan(
            &inv(INV),
            &mat(&format!("{tx}\n[hosts]\nnames = [\"l1\"]\n")),
        );
        // 1000 tx × clients / 500 tps: 2 s at 1 client, 8 s at 4; +5 overhead +6 drop.
        let tpcb = 3 * (2 + 8) + 2 * 3 * 11;
        let per_variant = 60 + 14 + 1610 + tpcb + 2 * (65 + 6);
        assert_eq!(p.hosts[0].eta, Duration::from_secs(3 * per_variant));
    }

    #[test]
    fn warmups_and_adaptive_repeats() {
        let m = mat(&format!(
            "{}\n[hosts]\nnames = [\"l1\"]\n",
            BASE.replace(
                "warmup = true",
                "warmup = 2\nrepeats = { min = 2, max = 4, target_ci = \"2.5%\" }"
            )
        ));
        let tpcb = &m.workloads[0];
        assert_eq!(tpcb.warmup, 2);
        assert_eq!(tpcb.repeats.to_string(), "2..4 until 95% CI within ±2.5%");
        let p = plan(&inv(INV), &m);
        // Per variant and client count of tpcb: warm-ups 1, 2, then repeats 1..=4.
        let runs: Vec<(bool, u32, bool)> = p
            .cells
            .iter()
            .filter(|c| {
                c.fs.name.as_str() == "ext4" && c.workload.name.as_str() == "tpcb" && c.clients == 4
            })
            .map(|c| (c.warmup, c.repeat, c.is_conditional()))
            .collect();
        assert_eq!(
            runs,
            [
                (true, 1, false),
                (true, 2, false),
                (false, 1, false),
                (false, 2, false),
                (false, 3, true),
                (false, 4, true)
            ]
        );
        // Warm-ups carry no adaptive rule; the fixed-repeat workload neither.
        assert!(p
            .cells
            .iter()
            .all(|c| c.adaptive.is_some() == (!c.warmup && c.workload.name.as_str() == "tpcb")));
        // Every id is distinct (warm-up n and repeat n differ by the flag).
        let ids: std::collections::HashSet<&str> = p.cells.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), p.cells.len());
        // 3 variants × 2 client counts × (2 + 4) tpcb + 3 × 2 ro.
        assert_eq!(p.cells.len(), 3 * 2 * 6 + 3 * 2);
        // The ETA is a range: without the conditional repeats, to all of them.
        let conditional: u64 = p
            .cells
            .iter()
            .filter(|c| c.is_conditional())
            .map(cell_secs)
            .sum();
        assert_eq!(conditional, 3 * 2 * 2 * (10 + 5));
        assert_eq!(p.eta - p.eta_min, Duration::from_secs(conditional));
        let text = render(&p);
        assert!(
            text.contains("12 of them adaptive repeats that run only until the CI target is met"),
            "{text}"
        );
        assert!(render_cells(&p).contains("#3 if CI > ±2.5%"));
        // A fixed repeat count keeps a single ETA.
        let fixed = plan(&inv(INV), &mat(BASE));
        assert_eq!(fixed.eta, fixed.eta_min);
        assert!(!render(&fixed).contains("adaptive"));
    }

    const INV2: &str = r#"
[defaults]
os = "linux"
identity_file = "/k"
known_hosts = "/kh"
[[host]]
name = "l1"
address = "10.203.0.11"
devices = ["/dev/vdb", "/dev/vdc"]
"#;

    fn ordered(order: &str) -> String {
        format!("order = {order:?}\n{BASE}")
    }

    fn run_keys(p: &Plan) -> Vec<(String, String, u32, bool, u32)> {
        p.cells
            .iter()
            .map(|c| {
                (
                    c.fs.name.to_string(),
                    c.workload.name.to_string(),
                    c.clients,
                    c.warmup,
                    c.repeat,
                )
            })
            .collect()
    }

    #[test]
    fn order_runs_interleaves_and_shuffles_reproducibly() {
        let a = vec![1, 2, 3];
        let b = vec![11, 12, 13];
        let c = vec![21];
        let lists = [a.clone(), b.clone(), c.clone()];
        assert_eq!(
            order_runs(Order::Sequential, 0, &lists),
            [1, 2, 3, 11, 12, 13, 21]
        );
        // Round-robin by index; an exhausted list is skipped.
        assert_eq!(
            order_runs(Order::Interleaved, 0, &lists),
            [1, 11, 21, 2, 12, 3, 13]
        );
        let mut seen = std::collections::HashSet::new();
        for seed in 0..50u64 {
            let r = order_runs(Order::Random, seed, &lists);
            // A permutation of every run …
            let mut sorted = r.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [1, 2, 3, 11, 12, 13, 21], "seed {seed}");
            // … in which each list keeps its own order …
            for l in &lists {
                let pos: Vec<usize> = l
                    .iter()
                    .map(|x| r.iter().position(|y| y == x).unwrap_or(usize::MAX))
                    .collect();
                assert!(pos.windows(2).all(|w| w[0] < w[1]), "seed {seed}: {r:?}");
            }
            // … the same for the same seed.
            assert_eq!(order_runs(Order::Random, seed, &lists), r);
            seen.insert(r);
        }
        // Different seeds give different orders (7!/(3!3!1!) = 140 exist).
        assert!(seen.len() > 20, "{} distinct orders of 50", seen.len());
        // Fixed forever by the seed: a recorded seed replays this very order.
        assert_eq!(
            order_runs(Order::Random, 42, &[a, b]),
            order_runs(Order::Random, 42, &[vec![1, 2, 3], vec![11, 12, 13]])
        );
    }

    #[test]
    fn interleaved_sets_up_one_variant_per_device_and_alternates() {
        let seq = plan(&inv(INV2), &mat(BASE));
        let p = plan(&inv(INV2), &mat(&ordered("interleaved")));
        assert_eq!(p.order, Order::Interleaved);
        // The same cells and ETA as sequential: only the order changes.
        let ids = |p: &Plan| {
            let mut v: Vec<String> = p.cells.iter().map(|c| c.id.clone()).collect();
            v.sort();
            v
        };
        assert_eq!(ids(&p), ids(&seq));
        assert_eq!(p.eta, seq.eta);
        let h = &p.hosts[0];
        assert_eq!(
            h.cells,
            p.cells.iter().map(|c| c.id.clone()).collect::<Vec<_>>()
        );
        // 3 variants on 2 devices: two batches.
        let slots: Vec<Vec<(u32, String, u16, String)>> = h
            .batches
            .iter()
            .map(|b| {
                b.slots
                    .iter()
                    .map(|s| (s.index, s.device.to_string(), s.port, s.variant.to_string()))
                    .collect()
            })
            .collect();
        assert_eq!(
            slots,
            vec![
                vec![
                    (0, "/dev/vdb".into(), 5432, "ext4".into()),
                    (1, "/dev/vdc".into(), 5433, "zfs-off".into())
                ],
                vec![(0, "/dev/vdb".into(), 5432, "zfs-lz4".into())],
            ]
        );
        // Batch 1: per workload, the runs of ext4 and zfs-off alternate,
        // warm-up with warm-up, repeat with repeat.
        let keys = run_keys(&p);
        let tpcb: Vec<_> = keys
            .iter()
            .filter(|k| k.0 != "zfs-lz4" && k.1 == "tpcb")
            .cloned()
            .collect();
        let mut want = Vec::new();
        for c in [1, 4] {
            for (w, r) in [(true, 1), (false, 1), (false, 2)] {
                for fs in ["ext4", "zfs-off"] {
                    want.push((fs.to_string(), "tpcb".to_string(), c, w, r));
                }
            }
        }
        assert_eq!(tpcb, want);
        assert_eq!(
            h.batches[0].runs,
            [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]
        );
        assert!(p.cells.iter().all(|c| c.device.as_str()
            == if c.fs.name.as_str() == "zfs-off" {
                "/dev/vdc"
            } else {
                "/dev/vdb"
            }));
        // The second batch is zfs-lz4 alone, after the first.
        assert!(keys[16..].iter().all(|k| k.0 == "zfs-lz4"));
        let text = render(&p);
        assert!(text.contains("order: interleaved"), "{text}");
        assert!(
            text.contains(
                "batch 1: A = ext4 on /dev/vdb (port 5432), B = zfs-off on /dev/vdc (port 5433)"
            ),
            "{text}"
        );
        assert!(text.contains("runs: A B A B A B"), "{text}");
        // Sequential plans say nothing of an order, and keep plan order.
        assert!(!render(&seq).contains("order:"));
        assert!(seq.hosts[0].batches.is_empty());
    }

    #[test]
    fn random_order_is_a_seeded_reproducible_shuffle() {
        let m7 = mat(&ordered("random").replacen("name = \"t\"", "name = \"t\"\nseed = 7", 1));
        let p = plan(&inv(INV2), &m7);
        assert_eq!(
            (p.order, p.seed, p.seed_drawn),
            (Order::Random, Some(7), false)
        );
        assert_eq!(run_keys(&plan(&inv(INV2), &m7)), run_keys(&p));
        let m8 = mat(&ordered("random").replacen("name = \"t\"", "name = \"t\"\nseed = 8", 1));
        assert_ne!(run_keys(&plan(&inv(INV2), &m8)), run_keys(&p));
        // Each (variant, workload, clients) keeps its own order: warm-ups
        // first, repeats ascending.
        let keys = run_keys(&p);
        for k in &keys {
            let same: Vec<_> = keys
                .iter()
                .filter(|x| (x.0.as_str(), x.1.as_str(), x.2) == (k.0.as_str(), k.1.as_str(), k.2))
                .map(|x| (!x.3, x.4))
                .collect();
            assert!(same.windows(2).all(|w| w[0] < w[1]), "{same:?}");
        }
        // Batches still hold the workloads one after the other.
        let batch1: Vec<&str> = keys[..16].iter().map(|k| k.1.as_str()).collect();
        assert_eq!(batch1.iter().filter(|w| **w == "tpcb").count(), 12);
        assert!(batch1[..12].iter().all(|w| *w == "tpcb"));
        // Recorded in plan.json, and read back; a plan.json of before
        // orders existed reads as sequential.
        let json = serde_json::to_value(&p).unwrap_or_default();
        assert_eq!(json["order"], "random");
        assert_eq!(json["seed"], 7);
        assert_eq!(
            json["hosts"][0]["batches"][0]["runs"]
                .as_array()
                .map(Vec::len),
            Some(16)
        );
        let back: Plan = serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, p);
        let mut old = serde_json::to_value(plan(&inv(INV2), &mat(BASE))).unwrap_or_default();
        assert!(old.get("order").is_none() && old["hosts"][0].get("batches").is_none());
        old.as_object_mut().map(|o| o.remove("eta_min"));
        old["eta_min"] = serde_json::json!(0);
        let back: Plan = serde_json::from_value(old).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.order, Order::Sequential);
        // Without a seed one is drawn, and said.
        let mut drawn = mat(&ordered("random"));
        assert_eq!(drawn.seed, None);
        drawn.draw_seed();
        let p = plan(&inv(INV2), &drawn);
        assert!(p.seed.is_some() && p.seed_drawn);
        let text = render(&p);
        assert!(
            text.contains(&format!(
                "order: random, seed {} (drawn now",
                p.seed.unwrap_or(0)
            )),
            "{text}"
        );
        // A recorded seed replaces a drawn one (resume, run --from).
        drawn.use_recorded_seed(Some(7));
        assert_eq!(
            run_keys(&plan(&inv(INV2), &drawn)),
            run_keys(&plan(&inv(INV2), &m7))
        );
    }

    #[test]
    fn interleaving_one_device_is_refused_and_seed_needs_random() {
        let m = mat(&ordered("interleaved"));
        let e = m
            .check_against(&inv(INV), crate::generator::script_uses)
            .expect_err("l1 has one device for 3 variants")
            .to_string();
        assert!(
            e.contains("m.toml:1:9: error: order = \"interleaved\" needs one device per variant"),
            "{e}"
        );
        assert!(
            e.contains("host l1 of inv.toml lists one device (/dev/vdb) for 3 variants"),
            "{e}"
        );
        assert!(
            e.contains("list more devices on host l1 (devices = [...] in the inventory) or use order = \"sequential\""),
            "{e}"
        );
        // f1 (freebsd) runs the two zfs variants; d1 (dragonfly) none of them.
        assert!(
            e.contains("host f1 of inv.toml lists one device (/dev/ada1) for 2 variants"),
            "{e}"
        );
        assert!(!e.contains("host d1"), "{e}");
        assert!(m
            .check_against(&inv(INV2), crate::generator::script_uses)
            .is_ok());
        assert!(mat(BASE)
            .check_against(&inv(INV), crate::generator::script_uses)
            .is_ok());
        for (text, want) in [
            (
                ordered("shuffled"),
                "unknown order `shuffled`; valid: sequential, interleaved, random",
            ),
            (
                format!("seed = 3\n{BASE}"),
                "`seed` is for order = \"random\" only",
            ),
            (format!("seed = -1\n{}", ordered("random")), "`seed`"),
        ] {
            let e = Matrix::parse(Path::new("m.toml"), text)
                .expect_err("refused")
                .to_string();
            assert!(e.contains(want), "{e}");
        }
        // The ports derived per device must exist.
        let high = INV2.replace("os = \"linux\"", "os = \"linux\"\npg_port = 65535");
        let e = m
            .check_against(&inv(&high), crate::generator::script_uses)
            .expect_err("65536")
            .to_string();
        assert!(e.contains("pg_port = 65535 + 1 is beyond 65535"), "{e}");
    }
}
