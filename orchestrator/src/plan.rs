//! Matrix × inventory → the plan: every cell that will run, where, in which
//! order, and how long each host will take.  Pure: no I/O, no clock.
//!
//! Order per host (the run engine keeps it): filesystem variant (one build
//! serves all its workloads and repeats), then workload (one data load
//! serves all its client counts), then client count, then repeat (a warm-up
//! run, when asked for, comes first).
use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::matrix::format_duration;
use crate::config::values::{DevicePath, HostName, Label};
use crate::config::{
    FsType, FsVariant, Host, Inventory, Length, Matrix, Os, PgSetting, Rule, Scale, Workload,
    WorkloadKind,
};

/// ETA constants.  Rough on purpose: they are only for "how long will this
/// take", shown before a run and refined by the run engine as cells finish.
pub mod eta {
    /// Per filesystem variant: mkfs + mount + initdb + start, and at the end
    /// stop + unmount + destroy.  The lab measured 3–40 s (zfs-fuse slowest);
    /// real disks with discard take longer.
    pub const FS_SETUP_SECS: u64 = 60;
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
    /// Per run that drops caches first (sync + drop + settle).
    pub const DROP_CACHES_SECS: u64 = 3;
    /// Transactions per second assumed to turn `transactions` into time.
    pub const ASSUMED_TPS: u64 = 500;
}

/// One benchmark run: everything the run engine needs, nothing it must look up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// 16 hex digits of sha256 over the cell's own parameters (see [`cell_id`]).
    pub id: String,
    pub host: HostName,
    pub os: Os,
    /// The device the variant is built on (the host's first device).
    pub device: DevicePath,
    pub fs: FsVariant,
    /// [postgres] merged with the variant's own settings (variant wins), sorted.
    pub pg_settings: Vec<PgSetting>,
    pub workload: CellWorkload,
    pub clients: u32,
    pub jobs: u32,
    /// 1-based; 0 for the warm-up run.
    pub repeat: u32,
    /// A warm-up run: executed, kept in the bundle, left out of statistics.
    pub warmup: bool,
    pub length: Length,
    pub progress: bool,
    pub drop_caches: bool,
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
    #[serde(with = "secs")]
    pub eta: Duration,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub matrix: Label,
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

/// What a cell's id hashes: its own parameters only, so an id does not change
/// when another filesystem, workload or host is added, removed or reordered.
#[derive(Serialize)]
struct IdInput<'a> {
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
    clients: u32,
    jobs: u32,
    length: Length,
    repeat: u32,
    warmup: bool,
    progress: bool,
    drop_caches: bool,
}

/// 16 hex digits of sha256 over a canonical JSON encoding of the cell's
/// parameters (the host by name: moving a host to another address keeps ids).
pub fn cell_id(c: &Cell) -> String {
    let input = IdInput {
        v: "fsmatrix-cell/1",
        host: c.host.as_str(),
        fs_name: c.fs.name.as_str(),
        fs_type: c.fs.fs_type,
        mkfs: &c.fs.mkfs_options,
        mount: &c.fs.mount_options,
        properties: &c.fs.properties,
        pool_properties: &c.fs.pool_properties,
        pg_settings: &c.pg_settings,
        workload: c.workload.name.as_str(),
        workload_kind: match &c.workload.kind {
            WorkloadKind::Builtin { builtin } => builtin.as_str().to_string(),
            WorkloadKind::PgbenchScript { sha256, .. } => format!("pgbench:{sha256}"),
            WorkloadKind::SqlScript { sha256, .. } => format!("sql:{sha256}"),
        },
        scale: c.workload.scale,
        clients: c.clients,
        jobs: c.jobs,
        length: c.length,
        repeat: c.repeat,
        warmup: c.warmup,
        progress: c.progress,
        drop_caches: c.drop_caches,
    };
    // Serializing plain data to a Vec cannot fail; fall back to Debug anyway
    // rather than panic.
    let bytes = serde_json::to_vec(&input).unwrap_or_else(|_| format!("{:?}", c).into_bytes());
    Sha256::digest(&bytes)
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
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
    match (&w.kind, w.scale) {
        (WorkloadKind::SqlScript { .. }, _) | (_, None) => 0,
        (_, Some(Scale::Factor(n))) => {
            eta::LOAD_BASE_SECS + n as u64 * eta::LOAD_MS_PER_SCALE / 1000
        }
        (_, Some(Scale::DevicePercent(p))) => {
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
        let mut secs: u64 = 0;
        for fs in &m.filesystems {
            if !fs.fs_type.runs_on(host.os) {
                let can: Vec<&str> = FsType::for_os(host.os).iter().map(|t| t.as_str()).collect();
                dropped.push(Dropped {
                    host: host.name.clone(),
                    filesystem: fs.name.clone(),
                    fs_type: fs.fs_type,
                    reason: format!(
                        "{} cannot run on {} ({} runs {})",
                        fs.fs_type.as_str(),
                        host.os.as_str(),
                        host.os.as_str(),
                        can.join(", ")
                    ),
                });
                continue;
            }
            let pg_settings = merged_settings(m, fs);
            let before_fs = cells.len();
            for wl in &m.workloads {
                let ctx = Ctx { host, fs, wl };
                let mut counts: Vec<(u32, bool)> = Vec::new();
                for &c in &wl.clients {
                    if m.exclude.iter().any(|r| matches(r, &ctx, Some(c))) {
                        excluded += (wl.repeats + wl.warmup as u32) as usize;
                    } else {
                        counts.push((c, false));
                    }
                }
                if !matches!(wl.kind, WorkloadKind::SqlScript { .. }) {
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
                secs += load_secs(wl);
                let workload = CellWorkload {
                    name: wl.name.clone(),
                    kind: wl.kind.clone(),
                    scale: wl.scale,
                };
                for (clients, included) in counts {
                    let runs = (!wl.warmup as u32)..=wl.repeats;
                    for repeat in runs {
                        let mut cell = Cell {
                            id: String::new(),
                            host: host.name.clone(),
                            os: host.os,
                            device: host.device().clone(),
                            fs: fs.clone(),
                            pg_settings: pg_settings.clone(),
                            workload: workload.clone(),
                            clients,
                            jobs: wl.jobs.for_clients(clients),
                            repeat,
                            warmup: repeat == 0,
                            length: wl.length,
                            progress: wl.progress,
                            drop_caches: wl.drop_caches,
                            included,
                        };
                        cell.id = cell_id(&cell);
                        secs += cell_secs(&cell);
                        cells.push(cell);
                    }
                }
            }
            if cells.len() > before_fs {
                variants.push(fs.name.clone());
                secs += eta::FS_SETUP_SECS;
            }
        }
        hosts.push(HostPlan {
            host: host.name.clone(),
            os: host.os,
            device: host.device().clone(),
            cells: cells[first..].iter().map(|c| c.id.clone()).collect(),
            fs_variants: variants,
            eta: Duration::from_secs(secs),
        });
    }
    let eta = hosts.iter().map(|h| h.eta).max().unwrap_or_default();
    Plan {
        matrix: m.name.clone(),
        cells,
        dropped,
        excluded,
        skipped_hosts: skipped,
        hosts,
        eta,
    }
}

fn length_str(l: &Length) -> String {
    match l {
        Length::Seconds(s) => format_duration(Duration::from_secs(*s)),
        Length::Transactions(t) => format!("{t} tx"),
        Length::ToCompletion { estimate_secs } => {
            format!(
                "to end (~{})",
                format_duration(Duration::from_secs(*estimate_secs))
            )
        }
    }
}

fn table(rows: &[Vec<String>], right: &[usize]) -> String {
    let n = rows.first().map(|r| r.len()).unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            let pad = widths[i] - cell.chars().count();
            if i > 0 {
                line.push_str("  ");
            }
            if right.contains(&i) {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                if i + 1 < r.len() {
                    line.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The readable plan: one row per host, then dropped combinations and why.
pub fn render(p: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "matrix {}: {} cells on {} hosts, ETA {} (hosts run in parallel; the slowest host)",
        p.matrix,
        p.cells.len(),
        p.hosts.len(),
        format_duration(p.eta)
    );
    out.push('\n');
    let mut rows = vec![vec![
        "HOST".to_string(),
        "OS".into(),
        "DEVICE".into(),
        "CELLS".into(),
        "ETA".into(),
        "FILESYSTEM VARIANTS".into(),
    ]];
    for h in &p.hosts {
        let variants: Vec<&str> = h.fs_variants.iter().map(|v| v.as_str()).collect();
        rows.push(vec![
            h.host.to_string(),
            h.os.as_str().into(),
            h.device.to_string(),
            h.cells.len().to_string(),
            format_duration(h.eta),
            if variants.is_empty() {
                "(none)".into()
            } else {
                variants.join(", ")
            },
        ]);
    }
    out.push_str(&table(&rows, &[3, 4]));
    if !p.dropped.is_empty() {
        let _ = writeln!(
            out,
            "\ndropped ({}): the host's OS cannot run these",
            p.dropped.len()
        );
        let rows: Vec<Vec<String>> = p
            .dropped
            .iter()
            .map(|d| {
                vec![
                    format!("  {}", d.host),
                    d.filesystem.to_string(),
                    d.reason.clone(),
                ]
            })
            .collect();
        out.push_str(&table(&rows, &[]));
    }
    if p.excluded > 0 {
        let _ = writeln!(out, "\nexcluded by rules: {} cells", p.excluded);
    }
    if !p.skipped_hosts.is_empty() {
        let _ = writeln!(out, "\nhosts left out by [hosts]:");
        for s in &p.skipped_hosts {
            let _ = writeln!(out, "  {}  {}", s.host, s.reason);
        }
    }
    out
}

/// Every cell in run order, one line each (for `--cells`-style listings and tests).
pub fn render_cells(p: &Plan) -> String {
    let mut rows = vec![vec![
        "ID".to_string(),
        "HOST".into(),
        "FILESYSTEM".into(),
        "WORKLOAD".into(),
        "SCALE".into(),
        "CLIENTS".into(),
        "JOBS".into(),
        "RUN".into(),
        "LENGTH".into(),
    ]];
    for c in &p.cells {
        rows.push(vec![
            c.id.clone(),
            c.host.to_string(),
            c.fs.name.to_string(),
            c.workload.name.to_string(),
            c.workload
                .scale
                .map(|s| s.to_string())
                .unwrap_or_else(|| "-".into()),
            format!("{}{}", c.clients, if c.included { "+" } else { "" }),
            c.jobs.to_string(),
            if c.warmup {
                "warmup".into()
            } else {
                format!("#{}", c.repeat)
            },
            length_str(&c.length),
        ]);
    }
    table(&rows, &[5, 6])
}

/// `fsmatrix plan`: load, validate, plan, print.  Contacts no host.
/// Exit 0 with a plan, 2 on bad input (every error printed).
pub fn cli(args: &crate::cli::PlanArgs) -> std::process::ExitCode {
    use std::process::ExitCode;
    if args.commands {
        eprintln!("fsmatrix: `plan --commands` is not available until the run engine lands");
        return ExitCode::from(2);
    }
    let (inv, m) = match crate::config::load(&args.inventory, &args.matrix) {
        Ok(x) => x,
        Err(errs) => {
            eprintln!("{errs}");
            eprintln!(
                "fsmatrix: failed to load the inventory and matrix: {} error{}",
                errs.len(),
                if errs.len() == 1 { "" } else { "s" }
            );
            return ExitCode::from(2);
        }
    };
    let p = plan(&inv, &m);
    if args.json {
        match serde_json::to_string_pretty(&p) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("fsmatrix: failed to serialize the plan: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        print!("{}", render(&p));
    }
    ExitCode::SUCCESS
}
