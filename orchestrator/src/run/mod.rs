//! The run engine: `check` (is every host ready?) and `run` (the sweep).
//!
//! One tokio task per host, hosts in parallel, cells of one host in plan
//! order; workers emit [`events::RunEvent`]s that the progress display
//! consumes, and write results into one [`Bundle`] shared behind a mutex
//! (writes are small and fsync'd; the lock is never held across an await).
pub mod counters;
pub mod events;
pub mod progress;
pub mod script;
pub mod worker;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::{mpsc, watch};

use crate::config::inventory::expand_tilde;
use crate::config::values::AbsPath;
use crate::config::values::HostName;
use crate::config::{Auth, FsType, Host, Inventory, Matrix};
use crate::plan::{plan, Cell, Plan};
use crate::remote::{ExecOptions, Remote, RemoteCommand, SshRemote, SshTarget};
use crate::results::bundle::Bundle;
use crate::results::journal::SweepStatus;
use events::RunEvent;
use script::{os_name, Call, Kv};
use worker::{record_not_run, Counted, FsCalls, HostPaths, HostTally, Sink, Worker};

/// How long to wait for a host's SSH server before calling it unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// `~/x` is the user's home; a relative path is relative to the inventory.
fn resolve_path(inv_path: &Path, p: &Path) -> PathBuf {
    let p = expand_tilde(p);
    if p.is_relative() {
        inv_path.parent().unwrap_or(Path::new(".")).join(p)
    } else {
        p
    }
}

/// Reach a host as the inventory says.
pub fn ssh_target(inv_path: &Path, host: &Host) -> SshTarget {
    let identity_file = match &host.auth {
        Auth::IdentityFile(p) => Some(resolve_path(inv_path, p)),
        Auth::Agent => None,
    };
    SshTarget {
        host_name: host.name.as_str().to_string(),
        address: host.address.as_str().to_string(),
        port: host.port,
        user: host.user.as_str().to_string(),
        identity_file,
        known_hosts: resolve_path(inv_path, &host.known_hosts),
        connect_timeout: CONNECT_TIMEOUT,
        sudo: host.uses_sudo(),
    }
}

/// What `check` found on one host (also written to the bundle by `run`).
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    pub host: String,
    pub ready: bool,
    /// Why not, when not ready.
    pub problems: Vec<String>,
    pub facts: BTreeMap<String, String>,
    pub guard: BTreeMap<String, String>,
    pub elapsed_ms: u128,
}

/// Tools a filesystem type needs on Linux (named as `facts` lists them).
fn tool_for(fs: FsType) -> &'static str {
    match fs {
        FsType::Ext3 => "mkfs.ext3",
        FsType::Ext4 => "mkfs.ext4",
        FsType::Xfs => "mkfs.xfs",
        FsType::Btrfs => "mkfs.btrfs",
        FsType::Zfs => "zpool",
        FsType::Ufs => "newfs",
        FsType::Hammer => "newfs_hammer",
        FsType::Hammer2 => "newfs_hammer2",
    }
}

/// Find PostgreSQL's binaries when the inventory gives no pg_bin: the
/// newest `/usr/lib/postgresql/<v>/bin` on Debian-likes, else the BSD path.
async fn detect_pg_bin<R: Remote>(remote: &R) -> Option<String> {
    let cmd = RemoteCommand::raw(
        "for d in /usr/lib/postgresql/*/bin /usr/pgsql-*/bin /usr/local/bin /usr/bin; do \
         if [ -x \"$d/pg_ctl\" ]; then echo \"$d\"; fi; done | sort -V | tail -n 1",
    );
    let out = remote
        .exec(&cmd, ExecOptions::with_timeout(Duration::from_secs(30)))
        .await
        .ok()?;
    let p = out.stdout_lossy().trim().to_string();
    (!p.is_empty()).then_some(p)
}

/// Connect, upload the scripts, read facts and run the device guard
/// (read-only).  The host is ready when all of it passes.
pub async fn prepare(
    inv_path: &Path,
    host: &Host,
    needs: &[FsType],
    pre_clean: bool,
) -> (HostReport, Option<(SshRemote, Host, HostPaths)>) {
    let t0 = Instant::now();
    let mut report = HostReport {
        host: host.name.as_str().to_string(),
        ready: false,
        problems: Vec::new(),
        facts: BTreeMap::new(),
        guard: BTreeMap::new(),
        elapsed_ms: 0,
    };
    let Some(paths) = HostPaths::new(host) else {
        report.problems.push(format!(
            "fsmatrix has no remote script for {} yet",
            os_name(host.os)
        ));
        return (report, None);
    };
    let remote = match SshRemote::connect(&ssh_target(inv_path, host)).await {
        Ok(r) => r,
        Err(e) => {
            report.problems.push(format!("failed to {e}"));
            report.elapsed_ms = t0.elapsed().as_millis();
            return (report, None);
        }
    };
    let mut host = host.clone();
    if host.pg_bin.is_none() {
        match detect_pg_bin(&remote).await.map(|p| AbsPath::new(&p)) {
            Some(Ok(p)) => host.pg_bin = Some(p),
            _ => report
                .problems
                .push("no PostgreSQL binaries found (set pg_bin in the inventory)".into()),
        }
    }
    let (tx, _rx) = mpsc::unbounded_channel();
    let (_ctx, crx) = watch::channel(false);
    let scratch = Sink {
        bundle: None,
        events: tx,
    };
    let w = Worker {
        remote: &remote,
        host: &host,
        paths: paths.clone(),
        sink: &scratch,
        cancel: crx,
        counted: Counted::default(),
    };
    if pre_clean {
        // What a killed run left (a mount, postgres, a pool) would make the
        // guard refuse the device: tear down first.
        if let Err(e) = w.upload_scripts().await {
            report.problems.push(upload_problem(&remote, &e).await);
            report.elapsed_ms = t0.elapsed().as_millis();
            return (report, None);
        }
        let mut log = String::new();
        w.teardown(None, &mut log).await;
    }
    // One round trip when the scripts are already there (the usual case).
    let facts_and_guard = match w.facts_and_guard().await {
        Ok(Some((facts, guard))) => (Ok(facts), guard),
        Err(e) => (Err(e), guard(&w).await),
        Ok(None) => {
            if let Err(e) = w.upload_scripts().await {
                report.problems.push(upload_problem(&remote, &e).await);
                report.elapsed_ms = t0.elapsed().as_millis();
                return (report, None);
            }
            futures::join!(w.facts(), guard(&w))
        }
    };
    match facts_and_guard.0 {
        Ok(kv) => report.facts = kv.to_map(),
        Err(e) => report.problems.push(format!("facts failed: {}", e.message)),
    }
    match facts_and_guard.1 {
        Ok(kv) => report.guard = kv.to_map(),
        Err(e) => report.problems.push(format!(
            "device {} refused by the guard: {}",
            host.device().as_str(),
            e.message
                .lines()
                .find(|l| l.starts_with("refused:"))
                .unwrap_or(&e.message)
        )),
    }
    if let Some(os) = report.facts.get("os") {
        if os != os_name(host.os) {
            report.problems.push(format!(
                "the inventory says os = {:?} but the host runs {os}",
                os_name(host.os)
            ));
        }
    }
    if let Some(uid) = report.facts.get("uid").filter(|u| u.as_str() != "0") {
        let user = report.facts.get("user").cloned().unwrap_or_default();
        report.problems.push(not_root(&user, uid));
    }
    if !report.facts.is_empty() {
        for key in ["postgres_version", "pgbench_version"] {
            if !report.facts.contains_key(key) {
                report.problems.push(format!(
                    "{} not found in {}",
                    key.trim_end_matches("_version"),
                    host.pg_bin_or_hint()
                ));
            }
        }
        let tools = report.facts.get("tools").cloned().unwrap_or_default();
        let mut needed: Vec<&str> = needs.iter().map(|f| tool_for(*f)).collect();
        needed.dedup();
        for t in needed {
            if !tools.split_whitespace().any(|x| x == t) {
                report.problems.push(format!(
                    "{t} is not installed (a planned filesystem needs it)"
                ));
            }
        }
        if needs.contains(&FsType::Zfs)
            && report.facts.get("zfs_running").map(String::as_str) != Some("yes")
        {
            report
                .problems
                .push("zfs is installed but not running (module or zfs-fuse daemon)".into());
        }
    }
    report.ready = report.problems.is_empty();
    report.elapsed_ms = t0.elapsed().as_millis();
    (report, Some((remote, host, paths)))
}

/// Why the scripts could not be uploaded: usually a login user that is not
/// root (the work folder is root's), which the user should be told plainly.
async fn upload_problem(remote: &SshRemote, e: &crate::remote::RemoteError) -> String {
    let probe = RemoteCommand::raw("id -un && id -u");
    let who = remote
        .exec(&probe, ExecOptions::with_timeout(Duration::from_secs(30)))
        .await
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let mut lines = who.as_deref().unwrap_or_default().lines();
    match (lines.next(), lines.next()) {
        (Some(user), Some(uid)) if uid.trim() != "0" => not_root(user.trim(), uid.trim()),
        _ => format!("failed to upload the scripts: {e}"),
    }
}

/// The problem of a host whose commands do not run as root.
fn not_root(user: &str, uid: &str) -> String {
    format!(
        "the scripts run as `{user}` (uid {uid}), not root: mkfs, mount and the benchmark cluster need root; \
         log in as root or set become = \"sudo\" for this host (passwordless: sudo -n)"
    )
}

async fn guard<R: Remote>(w: &Worker<'_, R>) -> Result<Kv, worker::StepError> {
    let cmd = FsCalls::preflight(w.host).command(w.host, &w.paths.scripts);
    let out = w
        .remote
        .exec(&cmd, ExecOptions::with_timeout(Duration::from_secs(60)))
        .await
        .map_err(|e| worker::StepError {
            step: "preflight".into(),
            exit_status: None,
            message: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(worker::StepError {
            step: "preflight".into(),
            exit_status: None,
            message: out.stderr_tail(5),
        });
    }
    Ok(Kv::parse(&out.stdout_lossy()))
}

fn needs_of(plan: &Plan, host: &str) -> Vec<FsType> {
    let mut v: Vec<FsType> = plan
        .cells
        .iter()
        .filter(|c| c.host.as_str() == host)
        .map(|c| c.fs.fs_type)
        .collect();
    v.sort();
    v.dedup();
    v
}

fn runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => Some(rt),
        Err(e) => {
            eprintln!("fsmatrix: failed to start the async runtime: {e}");
            None
        }
    }
}

fn load_inputs(inv: &Path, matrix: Option<&Path>) -> Result<(Inventory, Option<Matrix>), ExitCode> {
    let loaded = match matrix {
        Some(m) => crate::config::load(inv, m).map(|(i, m)| (i, Some(m))),
        None => Inventory::load(inv).map(|i| (i, None)),
    };
    loaded.map_err(|errs| {
        eprintln!("{errs}");
        eprintln!(
            "fsmatrix: failed to load the inputs: {} error(s)",
            errs.len()
        );
        ExitCode::from(2)
    })
}

/// `fsmatrix check`: every host in parallel; exit 0 when all are ready.
pub fn check_cli(args: &crate::cli::CheckArgs) -> ExitCode {
    let (inv, m) = match load_inputs(&args.inventory, args.matrix.as_deref()) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let plan = m.as_ref().map(|m| plan(&inv, m));
    let Some(rt) = runtime() else {
        return ExitCode::from(2);
    };
    let t0 = Instant::now();
    let reports: Vec<HostReport> = rt.block_on(async {
        let futs = inv.hosts.iter().map(|h| {
            let needs = plan
                .as_ref()
                .map(|p| needs_of(p, h.name.as_str()))
                .unwrap_or_default();
            let inv_path = inv.path.clone();
            async move {
                let (r, conn) = prepare(&inv_path, h, &needs, false).await;
                if let Some((remote, _, _)) = conn {
                    remote.disconnect().await;
                }
                r
            }
        });
        futures::future::join_all(futs).await
    });
    let elapsed = t0.elapsed();
    if args.json {
        match serde_json::to_string_pretty(&reports) {
            Ok(s) => println!("{s}"),
            Err(e) => eprintln!("fsmatrix: failed to encode the report: {e}"),
        }
    } else {
        print!("{}", render_check(&reports));
        println!(
            "checked {} host(s) in {:.2} s",
            reports.len(),
            elapsed.as_secs_f64()
        );
    }
    if reports.iter().all(|r| r.ready) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

pub fn render_check(reports: &[HostReport]) -> String {
    let mut s = String::from("| host | ready | os / kernel | cpu × mem | device | signature | postgres | tools |\n|---|---|---|---|---|---|---|---|\n");
    for r in reports {
        let f = |k: &str| r.facts.get(k).cloned().unwrap_or_else(|| "-".into());
        let mem = r
            .facts
            .get("mem_bytes")
            .and_then(|m| m.parse::<f64>().ok())
            .map(|b| format!("{:.1} GiB", b / (1u64 << 30) as f64))
            .unwrap_or_else(|| "-".into());
        let dev = match (
            r.facts.get("device.0.path"),
            r.facts.get("device.0.size_bytes"),
        ) {
            (Some(p), Some(b)) => format!(
                "{p} {:.1} GiB",
                b.parse::<f64>().unwrap_or(0.0) / (1u64 << 30) as f64
            ),
            (Some(p), None) => p.clone(),
            _ => "-".into(),
        };
        s.push_str(&format!(
            "| {} | {} | {} {} | {} × {} | {} | {} | {} | {} |\n",
            r.host,
            if r.ready { "yes" } else { "NO" },
            f("os"),
            f("kernel"),
            f("cpu_count"),
            mem,
            dev,
            r.guard
                .get("signature")
                .cloned()
                .unwrap_or_else(|| "-".into()),
            f("postgres_version")
                .rsplit(' ')
                .next()
                .unwrap_or("-")
                .trim_end_matches(')'),
            f("tools"),
        ));
    }
    for r in reports.iter().filter(|r| !r.ready) {
        for p in &r.problems {
            s.push_str(&format!("{}: {p}\n", r.host));
        }
    }
    s
}

/// What a bundle snapshots of its inputs: their texts as written, and where
/// they were (absolute), so that relative paths in them keep their meaning.
pub struct Inputs {
    pub inventory_text: String,
    pub matrix_text: String,
    pub inventory_path: PathBuf,
    pub matrix_path: PathBuf,
}

impl Inputs {
    /// Read both files now (what the sweep will snapshot).
    pub fn read(inv: &Inventory, m: &Matrix) -> Result<Inputs, String> {
        let read = |path: &Path| {
            std::fs::read_to_string(path)
                .map_err(|e| format!("failed to read {}: {e}", path.display()))
        };
        let abs = |path: &Path| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        Ok(Inputs {
            inventory_text: read(&inv.path)?,
            matrix_text: read(&m.path)?,
            inventory_path: abs(&inv.path),
            matrix_path: abs(&m.path),
        })
    }
}

/// Snapshot texts for the bundle: the inventory and matrix as written (no
/// secrets live in them: keys are referenced by path), where they were, and
/// the scripts a matrix names.
fn snapshots(sink: &Sink, inputs: &Inputs, m: &Matrix, p: &Plan) -> Result<(), String> {
    sink.write("inventory.toml", inputs.inventory_text.as_bytes())
        .map_err(|e| e.to_string())?;
    sink.write("matrix.toml", inputs.matrix_text.as_bytes())
        .map_err(|e| e.to_string())?;
    // Where the inputs were: a relative identity_file or known_hosts in the
    // inventory resolves against the original inventory's folder on
    // resume and `run --from`, not against the bundle's data/.
    let origin = serde_json::json!({
        "inventory": inputs.inventory_path.display().to_string(),
        "matrix": inputs.matrix_path.display().to_string(),
    });
    sink.write_json("inputs.json", &origin)
        .map_err(|e| e.to_string())?;
    // The scripts a matrix names, at the same relative path, so that the
    // snapshot plans by itself (`resume`, `run --from`).
    for w in &m.workloads {
        if let crate::config::WorkloadKind::PgbenchScript { path, content, .. }
        | crate::config::WorkloadKind::SqlScript { path, content, .. } = &w.kind
        {
            if let Some(rel) = path.to_str().filter(|_| path.is_relative()) {
                sink.write(rel, content.as_bytes())
                    .map_err(|e| format!("failed to snapshot {rel}: {e}"))?;
            }
        }
    }
    let mut plan_json = serde_json::to_vec_pretty(p).map_err(|e| e.to_string())?;
    plan_json.push(b'\n');
    sink.write("plan.json", &plan_json)
        .map_err(|e| e.to_string())
}

/// Outcome of a sweep.
#[derive(Debug, Clone)]
pub struct SweepSummary {
    pub bundle: PathBuf,
    pub tally: HostTally,
    pub interrupted: bool,
}

/// Run the whole sweep; returns where the bundle is.
pub async fn sweep(inv: &Inventory, m: &Matrix, out: &Path) -> Result<SweepSummary, String> {
    let p = plan(inv, m);
    let inputs = Inputs::read(inv, m)?;
    let bundle = Bundle::create(out, m.name.as_str()).map_err(|e| format!("failed to {e}"))?;
    execute(bundle, inv, &p, Some((m, &inputs)), &Kept::new(), false).await
}

/// The inventory and matrix a bundle was run with, from its own snapshots.
fn snapshot_inputs(dir: &Path) -> Result<(Inventory, Matrix, Inputs), String> {
    let data = dir.join("data");
    let read = |name: &str| {
        std::fs::read_to_string(data.join(name))
            .map_err(|e| format!("failed to read the bundle's snapshot {name}: {e}"))
    };
    // The inventory is parsed as if at its original place (see `snapshots`);
    // a bundle without inputs.json resolves against data/.  The matrix is
    // parsed in data/, where its relative scripts were copied.
    let origin = std::fs::read(data.join("inputs.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    let origin_of = |key: &str, fallback: &str| {
        origin
            .as_ref()
            .and_then(|v| v[key].as_str().map(PathBuf::from))
            .unwrap_or_else(|| data.join(fallback))
    };
    let inputs = Inputs {
        inventory_text: read("inventory.toml")?,
        matrix_text: read("matrix.toml")?,
        inventory_path: origin_of("inventory", "inventory.toml"),
        matrix_path: origin_of("matrix", "matrix.toml"),
    };
    let inv = Inventory::parse(&inputs.inventory_path, inputs.inventory_text.clone())
        .map_err(|e| format!("the bundle's inventory snapshot no longer loads:\n{e}"))?;
    let m = Matrix::parse(&data.join("matrix.toml"), inputs.matrix_text.clone())
        .map_err(|e| format!("the bundle's matrix snapshot no longer loads:\n{e}"))?;
    Ok((inv, m, inputs))
}

/// The bundle's own plan must come out of its snapshots again, cell for
/// cell: a script named by an absolute path that changed since, or an
/// fsmatrix whose cell ids differ, would otherwise run other cells silently.
fn same_cells_as_snapshot(dir: &Path, p: &Plan) -> Result<(), String> {
    let path = dir.join("data/plan.json");
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(()); // a bundle that died before its plan was written
    };
    let old: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the bundle's {} is not JSON: {e}", path.display()))?;
    let old_ids: HashSet<&str> = old["cells"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["id"].as_str()).collect())
        .unwrap_or_default();
    let new_ids: HashSet<&str> = p.cells.iter().map(|c| c.id.as_str()).collect();
    if old_ids == new_ids {
        return Ok(());
    }
    let gone = old_ids.difference(&new_ids).count();
    let added = new_ids.difference(&old_ids).count();
    Err(format!(
        "the bundle's snapshots no longer plan the same cells as its plan.json ({gone} of {} cells gone, {added} new): \
         a workload script named by an absolute path changed since, or this fsmatrix numbers cells differently from the one that wrote the bundle; \
         nothing was run and the bundle is unchanged",
        old_ids.len()
    ))
}

/// `run --from BUNDLE`: the very same sweep again, from the bundle's
/// snapshots, into a new bundle whose bag-info names the old one.
pub async fn rerun(from: &Path, out: &Path) -> Result<SweepSummary, String> {
    let (inv, m, inputs) = snapshot_inputs(from)?;
    let p = plan(&inv, &m);
    same_cells_as_snapshot(from, &p)?;
    let old = from
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| from.display().to_string());
    let bundle = Bundle::create_with(
        out,
        m.name.as_str(),
        crate::results::bundle::CreateOptions {
            rerun_of: Some(old),
        },
    )
    .map_err(|e| format!("failed to {e}"))?;
    execute(bundle, &inv, &p, Some((&m, &inputs)), &Kept::new(), false).await
}

/// Finish a sweep whose orchestrator died: re-plan from the bundle's own
/// snapshots (never the files on disk, which may have changed since), tear
/// down what the dead run left on every host, keep every cell whose files
/// verify, run the rest, close the bundle.
pub async fn resume(dir: &Path) -> Result<SweepSummary, String> {
    let data = dir.join("data");
    let (inv, m, _) = snapshot_inputs(dir)?;
    let p = plan(&inv, &m);
    same_cells_as_snapshot(dir, &p)?;
    let mut bundle = Bundle::open(dir).map_err(|e| format!("failed to {e}"))?;
    let mut keep = HashMap::new();
    for c in &p.cells {
        // A cell recorded as not run (an interrupted sweep) runs now; one
        // that ran (done or failed) is kept if its files still verify.
        let result = std::fs::read(data.join(format!("cells/{}/result.json", c.id)))
            .ok()
            .and_then(|b| serde_json::from_slice::<crate::results::CellResult>(&b).ok());
        let ran = result
            .as_ref()
            .is_some_and(|r| !matches!(r.status, crate::results::CellStatus::NotRun { .. }));
        if ran && bundle.cell_files_intact(&c.id) {
            let tps = result.and_then(|r| match r.status {
                crate::results::CellStatus::Done { run } => Some(run.tps),
                _ => None,
            });
            keep.insert(c.id.clone(), tps);
        } else {
            bundle
                .discard_cell(&c.id)
                .map_err(|e| format!("failed to {e}"))?;
        }
    }
    eprintln!(
        "fsmatrix: resuming {}: {} of {} cells verify and are kept",
        dir.display(),
        keep.len(),
        p.cells.len()
    );
    execute(bundle, &inv, &p, None, &keep, true).await
}

/// The counted tps of `host`'s kept cells (a resumed sweep), so that its
/// adaptive repeats decide on every repeat, not only on the ones run now.
fn kept_counted(p: &Plan, host: &HostName, keep: &Kept) -> Counted {
    let counted = Counted::default();
    for c in p.cells.iter().filter(|c| &c.host == host) {
        if let Some(Some(tps)) = keep.get(&c.id) {
            counted.add(c, *tps);
        }
    }
    counted
}

/// Cells a resumed sweep keeps: id → tps when the cell is done.
type Kept = HashMap<String, Option<f64>>;

/// Run the cells of `p` not in `keep` into `bundle` and close it.
/// `pre_clean`: tear every host down before its checks (after a crash).
async fn execute(
    bundle: Bundle,
    inv: &Inventory,
    p: &Plan,
    snapshot_of: Option<(&Matrix, &Inputs)>,
    keep: &Kept,
    pre_clean: bool,
) -> Result<SweepSummary, String> {
    let root = bundle.path().to_path_buf();
    let (tx, mut rx) = mpsc::unbounded_channel::<RunEvent>();
    let sink = Sink {
        bundle: Some(Mutex::new(bundle)),
        events: tx,
    };
    if let Some((m, inputs)) = snapshot_of {
        snapshots(&sink, inputs, m, p)?;
    }
    let total = p.cells.iter().filter(|c| !keep.contains_key(&c.id)).count();
    let display = tokio::spawn(async move {
        let mut r = progress::reporter(total);
        while let Some(e) = rx.recv().await {
            r.report(&e);
        }
        r.finish();
    });

    let (cancel_tx, cancel_rx) = watch::channel(false);
    let signals = tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let term_fut = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => futures::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term_fut => {}
        }
        eprintln!("fsmatrix: interrupted: stopping, tearing every host down, closing the bundle");
        let _ = cancel_tx.send(true);
    });

    let futs = p.hosts.iter().map(|hp| {
        let cells: Vec<&Cell> = p
            .cells
            .iter()
            .filter(|c| c.host == hp.host && !keep.contains_key(&c.id))
            .collect();
        let host = inv.hosts.iter().find(|h| h.name == hp.host);
        let sink = &sink;
        let cancel = cancel_rx.clone();
        let needs = needs_of(p, hp.host.as_str());
        let eta = hp.eta;
        async move {
            let mut tally = HostTally::default();
            let Some(host) = host else { return tally };
            let name = host.name.as_str().to_string();
            sink.emit(RunEvent::HostStarted {
                host: name.clone(),
                cells: cells.len(),
                eta,
            });
            if cells.is_empty() && !pre_clean {
                return tally;
            }
            let (report, conn) = prepare(&inv.path, host, &needs, pre_clean).await;
            let _ = sink.write_json(&format!("hosts/{name}/facts.json"), &report.facts);
            let _ = sink.write_json(&format!("hosts/{name}/check.json"), &report);
            match conn {
                Some((remote, host, paths)) if report.ready => {
                    let w = Worker {
                        remote: &remote,
                        host: &host,
                        paths,
                        sink,
                        cancel,
                        counted: kept_counted(p, &host.name, keep),
                    };
                    tally = w.run_cells(&cells).await;
                    remote.disconnect().await;
                }
                other => {
                    if let Some((remote, _, _)) = other {
                        remote.disconnect().await;
                    }
                    let reason = format!("host not ready: {}", report.problems.join("; "));
                    sink.emit(RunEvent::Note {
                        host: name.clone(),
                        message: reason.clone(),
                    });
                    record_not_run(sink, &cells, &reason, &mut tally);
                }
            }
            sink.emit(RunEvent::HostFinished {
                host: name,
                done: tally.done,
                failed: tally.failed,
                not_run: tally.not_run,
                not_needed: tally.not_needed,
            });
            tally
        }
    });
    let tallies = futures::future::join_all(futs).await;
    signals.abort();
    let interrupted = *cancel_rx.borrow();
    let tally = tallies.iter().fold(HostTally::default(), |a, t| HostTally {
        done: a.done + t.done,
        failed: a.failed + t.failed,
        not_run: a.not_run + t.not_run,
        not_needed: a.not_needed + t.not_needed,
    });
    let status = if interrupted {
        SweepStatus::Incomplete
    } else {
        SweepStatus::Complete
    };
    let closed = sink.close(status);
    drop(sink);
    let _ = display.await;
    closed.map_err(|e| format!("failed to close the bundle: {e}"))?;
    Ok(SweepSummary {
        bundle: root,
        tally,
        interrupted,
    })
}

/// `fsmatrix resume BUNDLE`: exit codes as `run`.
pub fn resume_cli(args: &crate::cli::BundleArgs) -> ExitCode {
    let Some(rt) = runtime() else {
        return ExitCode::from(2);
    };
    let t0 = Instant::now();
    finish(rt.block_on(resume(&args.bundle)), t0)
}

/// `fsmatrix run`: 0 every cell done, 1 some failed or did not run, 2 nothing ran.
pub fn run_cli(args: &crate::cli::RunArgs) -> ExitCode {
    if let Some(from) = &args.from {
        let Some(rt) = runtime() else {
            return ExitCode::from(2);
        };
        let t0 = Instant::now();
        return finish(rt.block_on(rerun(from, &args.out)), t0);
    }
    let (Some(i), Some(mp)) = (&args.inventory, &args.matrix) else {
        eprintln!("fsmatrix: give --inventory and --matrix, or --from BUNDLE");
        return ExitCode::from(2);
    };
    let (inv, m) = match load_inputs(i, Some(mp)) {
        Ok((inv, Some(m))) => (inv, m),
        Ok(_) => return ExitCode::from(2),
        Err(code) => return code,
    };
    let Some(rt) = runtime() else {
        return ExitCode::from(2);
    };
    let t0 = Instant::now();
    finish(rt.block_on(sweep(&inv, &m, &args.out)), t0)
}

/// Print the outcome and the report; the exit code of `run` and `resume`.
fn finish(outcome: Result<SweepSummary, String>, t0: Instant) -> ExitCode {
    match outcome {
        Err(e) => {
            eprintln!("fsmatrix: {e}");
            ExitCode::from(2)
        }
        Ok(s) => {
            let t = s.tally;
            eprintln!(
                "fsmatrix: {} cells done, {} failed, {} not run{} in {:.1} s{}",
                t.done,
                t.failed,
                t.not_run,
                if t.not_needed > 0 {
                    format!(
                        ", {} not needed (adaptive repeats met their CI target)",
                        t.not_needed
                    )
                } else {
                    String::new()
                },
                t0.elapsed().as_secs_f64(),
                if s.interrupted {
                    " (interrupted: bundle closed as incomplete)"
                } else {
                    ""
                }
            );
            if let Ok(cells) = crate::results::report::load_bundle_results(&s.bundle) {
                print!("{}", crate::results::report::render_markdown(&cells));
            }
            println!("bundle: {}", s.bundle.display());
            if s.interrupted || (t.done > 0 && t.failed + t.not_run > 0) {
                ExitCode::from(1)
            } else if t.done == 0 {
                // Nothing ran: no host was ready, or every cell failed.
                ExitCode::from(2)
            } else if t.failed + t.not_run > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
    }
}

/// `plan --commands`: every remote command of a run, as it would be sent
/// (values only known at run time are shown as `<...>`).
pub fn render_commands(inv: &Inventory, p: &Plan) -> String {
    let mut s = String::new();
    for hp in &p.hosts {
        let Some(host) = inv.hosts.iter().find(|h| h.name == hp.host) else {
            continue;
        };
        s.push_str(&format!("## {}\n", host.name.as_str()));
        let Some(paths) = HostPaths::new(host) else {
            s.push_str(&format!("(no remote script for {})\n", os_name(host.os)));
            continue;
        };
        let show = |c: Call| {
            let cmd = c.command(host, &paths.scripts);
            let cmd = if host.uses_sudo() {
                cmd.via_sudo()
            } else {
                cmd
            };
            match cmd.to_shell() {
                Ok(t) => format!("{t}\n"),
                Err(e) => format!("(cannot quote: {e})\n"),
            }
        };
        s.push_str(&format!(
            "# upload {0}/common.sh {0}/{1}.sh (sha256 checked)\n",
            paths.scripts,
            os_name(host.os)
        ));
        s.push_str(&show(
            Call::new("facts").args("dev", host.devices.iter().map(|d| d.as_str().to_string())),
        ));
        let cells: Vec<&Cell> = p.cells.iter().filter(|c| c.host == hp.host).collect();
        let mut last_fs = None;
        let mut last_wl = None;
        for c in &cells {
            if last_fs != Some(c.fs.name.as_str()) {
                if let Some(prev) =
                    last_fs.and_then(|n| cells.iter().find(|x| x.fs.name.as_str() == n))
                {
                    s.push_str(&show(FsCalls::pg_stop(host, &paths)));
                    s.push_str(&show(FsCalls::teardown(
                        host,
                        &paths,
                        Some(prev.fs.fs_type),
                    )));
                }
                s.push_str(&show(FsCalls::teardown(host, &paths, Some(c.fs.fs_type))));
                s.push_str(&show(FsCalls::preflight(host)));
                s.push_str(&show(FsCalls::make_fs(host, &paths, c)));
                s.push_str(&show(FsCalls::mount(host, &paths, c)));
                s.push_str(&show(FsCalls::pg_init(host, &paths, c)));
                s.push_str(&show(FsCalls::pg_start(host, &paths)));
                last_fs = Some(c.fs.name.as_str());
                last_wl = None;
            }
            if last_wl != Some(c.workload.name.as_str()) {
                let file = worker::workload_file(&paths, &c.workload.kind);
                if let Some((path, _)) = &file {
                    s.push_str(&format!("# upload {path} (sha256 checked)\n"));
                }
                if !matches!(
                    c.workload.kind,
                    crate::config::WorkloadKind::SqlScript { .. }
                ) {
                    let out = format!(
                        "{}/{}-{}-load",
                        paths.runs,
                        c.fs.name.as_str(),
                        c.workload.name.as_str()
                    );
                    let scale = match c.workload.scale {
                        Some(crate::config::Scale::Factor(n)) => Some(u64::from(n)),
                        _ => None,
                    };
                    let mut line = show(FsCalls::load(host, &paths, &out, scale, None));
                    if let Some(crate::config::Scale::DevicePercent(pct)) = c.workload.scale {
                        line = format!(
                            "{} 'scale=<{pct}% of the device, resolved at run time>'\n",
                            line.trim_end()
                        );
                    }
                    s.push_str(&line);
                }
                s.push_str(&show(FsCalls::sizes(&paths, c)));
                last_wl = Some(c.workload.name.as_str());
            }
            if c.drop_caches {
                s.push_str(&show(FsCalls::drop_caches(host, c)));
            }
            let out = format!("{}/{}", paths.runs, c.id);
            let file = worker::workload_file(&paths, &c.workload.kind);
            let script = file.as_ref().map(|(p, _)| p.as_str());
            let call = if matches!(
                c.workload.kind,
                crate::config::WorkloadKind::SqlScript { .. }
            ) {
                FsCalls::load(host, &paths, &out, None, script)
            } else {
                FsCalls::run(host, &paths, c, &out, script)
            };
            s.push_str(&show(call));
        }
        if let Some(prev) = last_fs.and_then(|n| cells.iter().find(|x| x.fs.name.as_str() == n)) {
            s.push_str(&show(FsCalls::pg_stop(host, &paths)));
            s.push_str(&show(FsCalls::teardown(
                host,
                &paths,
                Some(prev.fs.fs_type),
            )));
        }
    }
    s
}
