//! The host worker's sequencing, without a lab: the worker runs against the
//! recording remote (the same stand-in `plan --commands` uses), which
//! answers as a ready host, fails, cancels or drops where a test says.
//! Results go to a real bundle in a temporary folder.
use std::path::Path;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::adaptive::Counted;
use super::calls::HostPaths;
use super::check::Needs;
use super::dry::{stand_in, stand_in_ident};
use super::events::{Outcome, RunEvent};
use super::sink::{HostTally, Sink};
use super::sweep::{host_sweep, HostJob};
use super::verb::{run_timeout, Verb};
use super::worker::{OutputLimits, Worker};
use crate::config::{FsType, Inventory, Matrix};
use crate::eta::WorkKind;
use crate::plan::{plan, Cell, Plan};
use crate::remote::ExecOutput;
use crate::remote::{Recorded, RecordingRemote};
use crate::results::bundle::Bundle;

const INV: &str = "[[host]]\nname = \"h\"\naddress = \"127.0.0.1\"\nos = \"linux\"\n\
                   devices = [\"/dev/loop9\"]\npg_bin = \"/usr/lib/postgresql/15/bin\"\n";

/// One ext4 variant, select-only at 1 client, `repeats` runs of 5 s.
fn setup(repeats: &str, drop_caches: bool) -> (Inventory, Plan) {
    setup_workload(repeats, drop_caches, "")
}

/// As [`setup`], with more keys for the workload (`rate = 220\n`).
fn setup_workload(repeats: &str, drop_caches: bool, workload: &str) -> (Inventory, Plan) {
    let inv =
        Inventory::parse(Path::new("inv.toml"), INV.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let m = Matrix::parse(
        Path::new("m.toml"),
        format!(
            "name = \"m\"\nrepeats = {repeats}\ndrop_caches = {drop_caches}\n\
             [[filesystem]]\nname = \"e\"\ntype = \"ext4\"\nmount_options = [\"noatime\"]\n\
             [[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"5s\"\n{workload}"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let p = plan(&inv, &m);
    (inv, p)
}

/// What one worker run left: the commands' verbs in order, the recorded
/// results, the events.
struct Ran {
    verbs: Vec<String>,
    calls: Vec<Recorded>,
    results: Vec<serde_json::Value>,
    events: Vec<RunEvent>,
    tally: HostTally,
    /// The bundle's `timings.jsonl`.
    timings: Vec<crate::eta::Timing>,
}

impl Ran {
    fn after(&self, verb: &str) -> Vec<&str> {
        let i = self
            .verbs
            .iter()
            .position(|v| v == verb)
            .unwrap_or_else(|| panic!("{verb} never sent: {:?}", self.verbs));
        self.verbs[i + 1..].iter().map(String::as_str).collect()
    }

    fn failed_steps(&self) -> Vec<&str> {
        self.results
            .iter()
            .filter(|r| r["status"]["state"] == "failed")
            .filter_map(|r| r["status"]["step"].as_str())
            .collect()
    }

    fn outcomes(&self) -> Vec<Outcome> {
        self.events
            .iter()
            .filter_map(|e| match e {
                RunEvent::CellEnded { outcome, .. } => Some(*outcome),
                _ => None,
            })
            .collect()
    }

    fn notes(&self) -> String {
        self.events
            .iter()
            .filter_map(|e| match e {
                RunEvent::Note { message, .. } => Some(message.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The verb of a command (`linux.sh VERB …`), or what else it is.
fn verb_of(command: &str) -> String {
    match command.split_once("linux.sh ") {
        _ if command.contains("&& cat >") => "upload".into(),
        Some((_, rest)) => rest.split(' ').next().unwrap_or("").to_string(),
        None if command.contains("sha256sum <") => "checksum".into(),
        None => "other".into(),
    }
}

/// Run the worker over every cell of `p` against `remote`; `cancel` lets a
/// hook of the remote interrupt it.
async fn run_worker(
    inv: &Inventory,
    p: &Plan,
    remote: &RecordingRemote,
    cancel: watch::Receiver<bool>,
) -> Ran {
    run_worker_limited(inv, p, remote, cancel, OutputLimits::default()).await
}

/// [`run_worker`] with what the host may send bounded by `limits`.
async fn run_worker_limited(
    inv: &Inventory,
    p: &Plan,
    remote: &RecordingRemote,
    cancel: watch::Receiver<bool>,
    limits: OutputLimits,
) -> Ran {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let bundle = Bundle::create(tmp.path(), "m").unwrap_or_else(|e| panic!("{e}"));
    let root = bundle.path().to_path_buf();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let sink = Sink::new(bundle, tx);
    let host = &inv.hosts[0];
    let cells: Vec<&Cell> = p.cells.iter().collect();
    sink.eta_begin(host.name.as_str(), &cells, None, Vec::new());
    let w = Worker {
        remote,
        host,
        paths: HostPaths::new(host).unwrap_or_else(|| panic!("linux has scripts")),
        sink: &sink,
        cancel,
        counted: Counted::for_plan(p),
        ident: Some(stand_in_ident(0)),
        idents: (0..host.devices.len())
            .map(|i| Some(stand_in_ident(i)))
            .collect(),
        limits,
    };
    let batches = &p.hosts[0].batches;
    let work = async {
        if batches.is_empty() {
            w.run_cells(&cells).await
        } else {
            w.run_batches(&cells, batches).await
        }
    };
    let tally = tokio::time::timeout(Duration::from_secs(5), work)
        .await
        .unwrap_or_else(|_| panic!("the worker hung"));
    drop(sink);
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    let jsonl = std::fs::read_to_string(root.join("data/results.jsonl")).unwrap_or_default();
    let results: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    // Every planned cell is recorded exactly once, however the worker ended.
    let mut ids: Vec<&str> = results
        .iter()
        .filter_map(|r| r["cell_id"].as_str())
        .collect();
    ids.sort();
    let mut planned: Vec<&str> = p.cells.iter().map(|c| c.id.as_str()).collect();
    planned.sort();
    assert_eq!(ids, planned, "each cell recorded once");
    let calls = remote.calls();
    let verbs = remote.commands().iter().map(|c| verb_of(c)).collect();
    let timings = std::fs::read_to_string(root.join("data/timings.jsonl")).unwrap_or_default();
    Ran {
        verbs,
        calls,
        results,
        events,
        tally,
        timings: crate::results::bundle::timings::parse_lines(&timings),
    }
}

fn stand_in_for(inv: &Inventory) -> RecordingRemote {
    stand_in(
        &inv.hosts[0],
        &Needs {
            fs: vec![FsType::Ext4],
            pg: Vec::new(),
            slots: 1,
            shared: None,
            guests: false,
            vms: Vec::new(),
        },
    )
}

fn no_cancel() -> watch::Receiver<bool> {
    watch::channel(false).1
}

const SETUP: [&str; 6] = [
    "teardown",
    "preflight",
    "make-fs",
    "mount",
    "pg-init",
    "pg-start",
];

#[tokio::test]
async fn a_cell_group_runs_its_steps_in_order() {
    let (inv, p) = setup("2", true);
    let remote = stand_in_for(&inv);
    let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
    let run = ["pg-stop", "drop-caches", "pg-start", "run", "cat", "cat"];
    let mut want: Vec<&str> = SETUP.to_vec();
    want.extend(["load", "cat", "cat", "sizes"]);
    want.extend(run);
    want.extend(run);
    want.extend(["pg-stop", "teardown"]);
    assert_eq!(ran.verbs, want);
    // Counters and the database size go through tunnels to the cell's socket.
    let tunnels = ran
        .calls
        .iter()
        .filter(
            |c| matches!(c, Recorded::Tunnel { socket } if socket.ends_with("/pg/sock/.s.PGSQL.5432")),
        )
        .count();
    assert_eq!(tunnels, 1 + 2 * 2, "{:?}", ran.calls);
    // The stand-in's run output is empty: both cells fail at `run`, recorded.
    assert_eq!(ran.failed_steps(), ["run", "run"]);
    assert_eq!(ran.tally.failed, 2);
}

#[tokio::test]
async fn a_failure_at_each_step_ends_with_teardown() {
    // (failing verb, the cells' failed step, verbs allowed after it)
    let cases: [(&str, &str, &[&str]); 8] = [
        ("preflight", "preflight", &["teardown"]),
        ("make-fs", "make-fs", &["teardown"]),
        ("mount", "mount", &["teardown"]),
        ("pg-init", "pg-init", &["teardown"]),
        ("pg-start", "pg-start", &["teardown"]),
        ("load", "load", &["pg-stop", "teardown"]),
        (
            "drop-caches",
            "drop-caches",
            &[
                "pg-start",
                "pg-stop",
                "drop-caches",
                "run",
                "cat",
                "teardown",
            ],
        ),
        (
            "run",
            "run",
            &["pg-stop", "drop-caches", "pg-start", "run", "teardown"],
        ),
    ];
    for (verb, step, allowed) in cases {
        let (inv, p) = setup("2", true);
        let remote = stand_in_for(&inv);
        remote.fail(&format!("linux.sh {verb} "), 3, "boom: scripted failure\n");
        let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
        assert_eq!(
            ran.verbs.last().map(String::as_str),
            Some("teardown"),
            "{verb}: {:?}",
            ran.verbs
        );
        let after = ran.after(verb);
        assert!(
            after.iter().all(|v| allowed.contains(v)),
            "{verb}: after it {after:?}"
        );
        // A failed setup step never goes on to the next one.
        if let Some(i) = SETUP.iter().position(|s| *s == verb) {
            for later in &SETUP[i + 1..] {
                assert!(!after.contains(later), "{verb}: {later} ran after it");
            }
        }
        assert_eq!(ran.failed_steps(), [step, step], "{verb}");
        let r = &ran.results[0]["status"];
        assert_eq!(r["exit_status"], 3, "{verb}: {r}");
        assert!(
            r["stderr_tail"].as_str().unwrap_or("").contains("boom"),
            "{verb}: {r}"
        );
    }
}

#[tokio::test]
async fn failing_cleanup_is_said_and_the_sweep_goes_on() {
    for verb in ["pg-stop", "teardown"] {
        let (inv, p) = setup("1", false);
        let remote = stand_in_for(&inv);
        remote.fail(&format!("linux.sh {verb} "), 1, "device busy\n");
        let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
        assert_eq!(ran.verbs.last().map(String::as_str), Some("teardown"));
        assert!(
            ran.notes().contains("device busy"),
            "{verb}: {}",
            ran.notes()
        );
    }
}

#[tokio::test]
async fn cancellation_at_each_step_stops_and_cleans_up() {
    for verb in [
        "preflight",
        "make-fs",
        "mount",
        "pg-init",
        "pg-start",
        "load",
        "sizes",
        "drop-caches",
        "run",
    ] {
        let (inv, p) = setup("3", true);
        let remote = stand_in_for(&inv);
        let (tx, rx) = watch::channel(false);
        let needle = format!("linux.sh {verb} ");
        remote.on_exec(move |cmd| {
            if cmd.contains(&needle) {
                let _ = tx.send(true);
            }
        });
        let ran = run_worker(&inv, &p, &remote, rx).await;
        assert_eq!(
            ran.verbs.last().map(String::as_str),
            Some("teardown"),
            "{verb}: {:?}",
            ran.verbs
        );
        // After the interrupt nothing new starts: only collecting what ran,
        // and cleaning up.
        let after = ran.after(verb);
        assert!(
            after
                .iter()
                .all(|v| ["cat", "pg-stop", "teardown"].contains(v)),
            "{verb}: after it {after:?}"
        );
        let outcomes = ran.outcomes();
        assert_eq!(outcomes.len(), 3, "{verb}");
        // The last cells never started.
        assert!(
            outcomes.iter().rev().take(2).all(|o| *o != Outcome::Done),
            "{verb}: {outcomes:?}"
        );
        assert!(
            ran.tally.not_run + ran.tally.failed == 3,
            "{verb}: {:?}",
            ran.tally
        );
    }
}

#[tokio::test]
async fn every_verb_gets_its_timeout() {
    let (inv, p) = setup("1", true);
    let remote = stand_in_for(&inv);
    run_worker(&inv, &p, &remote, no_cancel()).await;
    let mut seen = 0;
    for c in remote.calls() {
        let Recorded::Exec {
            command, timeout, ..
        } = c
        else {
            continue;
        };
        let verb = verb_of(&command);
        let want = match Verb::from_name(&verb) {
            Some(Verb::Run) => run_timeout(p.cells[0].length, p.cells[0].run_timeout),
            Some(v) => v.timeout(),
            None if verb == "upload" => crate::timeouts::UPLOAD,
            None if verb == "checksum" => crate::timeouts::CHECKSUM,
            None => continue,
        };
        assert_eq!(timeout, Some(want), "{command}");
        seen += 1;
    }
    assert!(seen >= 12, "{seen}");
    assert_eq!(
        run_timeout(p.cells[0].length, p.cells[0].run_timeout),
        Duration::from_secs(5) + crate::timeouts::RUN_SLACK
    );
}

/// pgbench output with the given tps.
fn pgbench_out(tps: f64) -> String {
    let real = include_str!("../../../tests/fixtures/pgbench/15/run-select-only-t.stdout");
    real.replace("tps = 4481.170123", &format!("tps = {tps:.6}"))
}

#[tokio::test]
async fn adaptive_repeats_stop_once_the_ci_is_within_target() {
    // Equal tps: the CI is 0 after min = 2, so repeats 3 and 4 are not needed.
    let (inv, p) = setup("{ min = 2, max = 4, target_ci = \"5%\" }", false);
    let remote = stand_in_for(&inv);
    for c in &p.cells {
        remote.respond_ok(&format!("runs/{}/stdout", c.id), &pgbench_out(1000.0));
    }
    let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
    assert_eq!(ran.verbs.iter().filter(|v| *v == "run").count(), 2);
    assert_eq!(
        (ran.tally.done, ran.tally.not_needed),
        (2, 2),
        "{:?}",
        ran.tally
    );
    // Spread tps: every repeat runs, and reaching max short of the target is said.
    let (inv, p) = setup("{ min = 2, max = 4, target_ci = \"1%\" }", false);
    let remote = stand_in_for(&inv);
    for (c, tps) in p.cells.iter().zip([1000.0, 1500.0, 900.0, 1300.0]) {
        remote.respond_ok(&format!("runs/{}/stdout", c.id), &pgbench_out(tps));
    }
    let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
    assert_eq!(ran.verbs.iter().filter(|v| *v == "run").count(), 4);
    assert_eq!(ran.tally.done, 4);
    assert!(
        ran.notes().contains("4 counted repeats (max 4)"),
        "{}",
        ran.notes()
    );
}

/// A sequential design on one device: the baseline's repeats come first
/// and run to `max` (nothing to compare with yet), then a variant 1.5×
/// faster stops at the first look that decides it, and the run says why.
#[tokio::test]
async fn a_sequential_design_stops_a_clearly_faster_variant_at_an_early_look() {
    let inv =
        Inventory::parse(Path::new("inv.toml"), INV.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let m = Matrix::parse(
        Path::new("m.toml"),
        "name = \"m\"\nrepeats = { min = 2, max = 6, until = \"decided\" }\n\
         [[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n\
         [[filesystem]]\nname = \"x\"\ntype = \"xfs\"\n\
         [[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"5s\"\n"
            .to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let p = plan(&inv, &m);
    assert_eq!(p.verdicts.sequential.map(|l| (l.min, l.max)), Some((2, 6)));
    let remote = stand_in_for(&inv);
    let base = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0];
    let fast = [1500.0, 1520.0, 1490.0, 1510.0, 1505.0, 1495.0];
    for c in &p.cells {
        let tps = if c.fs.name.as_str() == "e" {
            base
        } else {
            fast
        }[c.repeat as usize - 1];
        remote.respond_ok(&format!("runs/{}/stdout", c.id), &pgbench_out(tps));
    }
    let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
    let runs = ran.verbs.iter().filter(|v| *v == "run").count();
    // 6 of the baseline, then x until decided (look 2 or 3 of 6).
    assert!((8..=9).contains(&runs), "{runs} runs: {:?}", ran.tally);
    assert_eq!(ran.tally.not_needed, 12 - runs, "{:?}", ran.tally);
    let reasons: Vec<String> = ran
        .results
        .iter()
        .filter(|r| r["status"]["state"] == "not_needed")
        .map(|r| r.to_string())
        .collect();
    assert!(!reasons.is_empty());
    assert!(
        reasons
            .iter()
            .all(|r| r.contains("sequential: decided faster against `e` at look")),
        "{reasons:?}"
    );
}

/// pgbench 15's real output of a rate-limited run (`-R`), its tps fixed
/// near the rate, with the given mean latency.
fn rated_out(latency_ms: f64) -> String {
    let real = include_str!("../../../tests/fixtures/pgbench/15/run-rate-limit.stdout");
    real.replace(
        "latency average = 0.444 ms",
        &format!("latency average = {latency_ms:.3} ms"),
    )
}

/// A rate-limited workload is compared on latency (its tps is the rate),
/// so adaptive repeats count latency: the same tps every run with spread
/// latencies runs every repeat, and the reverse stops at `min`.
#[tokio::test]
async fn adaptive_repeats_of_a_rate_limited_workload_count_latency() {
    let (inv, p) = setup_workload(
        "{ min = 2, max = 4, target_ci = \"5%\" }",
        false,
        "rate = 220\n",
    );
    assert!(p.cells.iter().all(|c| c.workload.rate == Some(220)));
    let remote = stand_in_for(&inv);
    for (c, lat) in p.cells.iter().zip([0.40, 0.90, 0.55, 1.30]) {
        remote.respond_ok(&format!("runs/{}/stdout", c.id), &rated_out(lat));
    }
    let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
    assert_eq!(ran.verbs.iter().filter(|v| *v == "run").count(), 4);
    assert_eq!(ran.tally.done, 4, "{:?}", ran.tally);
    assert!(
        ran.notes()
            .contains("4 counted repeats (max 4) leave the 95% CI at"),
        "{}",
        ran.notes()
    );
    assert!(
        ran.notes().contains("of the mean latency"),
        "{}",
        ran.notes()
    );
    // Steady latency: the CI is 0 after min = 2 whatever the tps does.
    let (inv, p) = setup_workload(
        "{ min = 2, max = 4, target_ci = \"5%\" }",
        false,
        "rate = 220\n",
    );
    let remote = stand_in_for(&inv);
    for (c, tps) in p.cells.iter().zip(["150.1", "219.2", "300.5", "90.0"]) {
        let out = rated_out(0.5).replace("tps = 219.232112", &format!("tps = {tps}"));
        remote.respond_ok(&format!("runs/{}/stdout", c.id), &out);
    }
    let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
    assert_eq!(
        (ran.tally.done, ran.tally.not_needed),
        (2, 2),
        "{:?}",
        ran.tally
    );
    let why = ran
        .results
        .iter()
        .filter(|r| r["status"]["state"] == "not_needed")
        .map(|r| {
            r["status"]["reason"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect::<Vec<_>>();
    assert_eq!(why.len(), 2, "{why:?}");
    assert!(
        why[0].contains("of the mean latency, within the target ±5%"),
        "{why:?}"
    );
}

#[tokio::test]
async fn a_host_that_drops_mid_group_fails_the_rest_without_hanging() {
    let (inv, p) = setup("3", false);
    let remote = stand_in_for(&inv);
    remote.drop_after("linux.sh run ");
    let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
    // The first run was sent; everything after it failed on the connection.
    assert_eq!(ran.tally.failed, 3, "{:?}", ran.tally);
    assert!(ran
        .failed_steps()
        .iter()
        .all(|s| *s == "collect" || *s == "run"));
    // Cleanup is still tried, and its failure is said.
    assert_eq!(ran.verbs.last().map(String::as_str), Some("teardown"));
    assert!(
        ran.notes().contains("teardown did not finish cleanly"),
        "{}",
        ran.notes()
    );
}

/// The work folder check, run here under /bin/sh (dash) on real folders:
/// a folder another user owns or may write in is refused before anything
/// in it runs; a sticky shared ancestor (/var/tmp) is fine.
#[test]
fn a_work_dir_someone_else_owns_or_may_write_in_is_refused() {
    use std::os::unix::fs::{chown, symlink, PermissionsExt};
    let mode = |p: &Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod")
    };
    let check = |work: &Path| {
        let scripts = work.join("scripts-x");
        let text = super::worker::safe_dirs_command(
            work.to_str().expect("utf-8"),
            scripts.to_str().expect("utf-8"),
        )
        .to_shell()
        .expect("quoted")
        .to_string();
        let o = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(text)
            .output()
            .expect("sh");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let shared = tmp.path().join("shared");
    std::fs::create_dir(&shared).expect("mkdir");
    mode(&shared, 0o1777);
    // Fine: ours, under a sticky shared folder; also when not made yet.
    let work = shared.join("fsmatrix");
    assert_eq!(check(&work), (Some(0), String::new()));
    std::fs::create_dir(&work).expect("mkdir");
    mode(&work, 0o755);
    assert_eq!(check(&work), (Some(0), String::new()));
    // Others may write in it.
    mode(&work, 0o777);
    let (code, err) = check(&work);
    assert_eq!(code, Some(77), "{err}");
    assert!(err.contains("others may write in it"), "{err}");
    mode(&work, 0o755);
    // Its scripts folder, made by someone else (as root only: chown).
    let scripts = work.join("scripts-x");
    std::fs::create_dir(&scripts).expect("mkdir");
    let root =
        std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0);
    if root {
        chown(&scripts, Some(65534), None).expect("chown");
        let (code, err) = check(&work);
        assert_eq!(code, Some(77), "{err}");
        assert!(err.contains("belongs to uid 65534"), "{err}");
    }
    std::fs::remove_dir(&scripts).expect("rmdir");
    // A link in its place.
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let linked = shared.join("linked");
    symlink(&elsewhere, &linked).expect("symlink");
    let (code, err) = check(&linked);
    assert_eq!(code, Some(77), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    // An ancestor others may write in, not sticky: they could rename it.
    mode(&shared, 0o777);
    let (code, err) = check(&work);
    assert_eq!(code, Some(77), "{err}");
    assert!(err.contains("others may write in it"), "{err}");
}

/// The sweep of the only host of `inv`, as `run` makes it.
fn host_job<'a>(inv: &'a Inventory, p: &'a Plan) -> HostJob<'a> {
    HostJob {
        host: &inv.hosts[0],
        cells: p.cells.iter().collect(),
        needs: Needs {
            fs: vec![FsType::Ext4],
            pg: Vec::new(),
            slots: 1,
            shared: None,
            guests: false,
            vms: Vec::new(),
        },
        pre_clean: true,
        counted: Counted::default(),
        batches: Vec::new(),
        extra_facts: Vec::new(),
    }
}

/// The sweep's checks read the device's identity (`facts`) and every make-fs
/// carries it, so the script refuses another disk put at the path since;
/// facts without one leave the host not ready, and nothing is formatted.
#[tokio::test]
async fn make_fs_carries_the_device_identity_the_facts_gave() {
    let (inv, p) = setup("1", false);
    let remote = stand_in_for(&inv);
    let (report, _) = host_sweep(&remote, host_job(&inv, &p), &Sink::discard(), no_cancel()).await;
    let ident = stand_in_ident(0);
    assert_eq!(report.parsed.ident_of("/dev/loop9"), Some(ident.as_str()));
    assert_eq!(report.facts["device.0.ident"], ident);
    let make_fs: Vec<String> = remote
        .commands()
        .into_iter()
        .filter(|c| verb_of(c) == "make-fs")
        .collect();
    assert_eq!(make_fs.len(), 1, "{make_fs:?}");
    assert!(
        make_fs[0].contains(&format!(" 'ident={ident}' fs=ext4")),
        "{}",
        make_fs[0]
    );

    // Facts without an identity for the device: not ready, never formatted.
    let remote = stand_in_for(&inv);
    remote.respond_ok(
        "linux.sh facts ",
        "os=linux\nuid=0\nuser=root\ndevice.0.path=/dev/loop9\ndevice.0.present=yes\n\
         tools=mkfs.ext4\npostgres_version=p 15\npgbench_version=p 15\n",
    );
    let (report, tally) =
        host_sweep(&remote, host_job(&inv, &p), &Sink::discard(), no_cancel()).await;
    assert!(!report.ready);
    assert!(
        report
            .problems
            .iter()
            .any(|m| m.contains("no identity for /dev/loop9")),
        "{:?}",
        report.problems
    );
    assert!(remote.commands().iter().all(|c| verb_of(c) != "make-fs"));
    assert_eq!(tally.not_run, p.cells.len());
}

/// Two devices, two variants (ext4 `e`, xfs `x`), 2 repeats, interleaved.
fn setup_interleaved() -> (Inventory, Plan) {
    let inv = Inventory::parse(
        Path::new("inv.toml"),
        INV.replace("[\"/dev/loop9\"]", "[\"/dev/loop9\", \"/dev/loop8\"]"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let m = Matrix::parse(
        Path::new("m.toml"),
        "name = \"m\"\norder = \"interleaved\"\nrepeats = 2\n\
         [[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n\
         [[filesystem]]\nname = \"x\"\ntype = \"xfs\"\n\
         [[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"5s\"\n"
            .to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    m.check_against(&inv, crate::generator::script_uses)
        .unwrap_or_else(|e| panic!("{e}"));
    let p = plan(&inv, &m);
    (inv, p)
}

fn stand_in_two(inv: &Inventory) -> RecordingRemote {
    stand_in(
        &inv.hosts[0],
        &Needs {
            fs: vec![FsType::Ext4, FsType::Xfs],
            pg: Vec::new(),
            slots: 2,
            shared: None,
            guests: false,
            vms: Vec::new(),
        },
    )
}

/// Whether `command` has the word `word` (a verb's `name=value`).
fn has(command: &str, word: &str) -> bool {
    command.split_whitespace().any(|w| w == word)
}

/// The commands of one verb, in order.
fn commands_of(remote: &RecordingRemote, verb: &str) -> Vec<String> {
    remote
        .commands()
        .into_iter()
        .filter(|c| verb_of(c) == verb)
        .collect()
}

#[tokio::test]
async fn interleaved_sets_up_each_device_and_alternates_the_runs() {
    let (inv, p) = setup_interleaved();
    let remote = stand_in_two(&inv);
    let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
    let mut want: Vec<&str> = SETUP.to_vec();
    want.extend(SETUP);
    want.extend(["load", "cat", "cat", "sizes", "load", "cat", "cat", "sizes"]);
    for _ in 0..4 {
        want.extend(["run", "cat", "cat"]);
    }
    want.extend(["pg-stop", "teardown", "pg-stop", "teardown"]);
    assert_eq!(ran.verbs, want);
    // Each variant on its own device, mount point, socket folder and port,
    // every one derived from the device's index.
    let mk = commands_of(&remote, "make-fs");
    assert!(
        mk[0].contains("dev=/dev/loop9") && mk[0].contains("fs=ext4"),
        "{mk:?}"
    );
    assert!(
        mk[1].contains("dev=/dev/loop8") && mk[1].contains("fs=xfs"),
        "{mk:?}"
    );
    // Only devices the inventory lists are allowed, on every call.
    assert!(mk
        .iter()
        .all(|c| c.contains("allowed=/dev/loop9") && c.contains("allowed=/dev/loop8")));
    let mounts = commands_of(&remote, "mount");
    assert!(has(&mounts[0], "mnt=/var/tmp/fsmatrix/mnt"), "{mounts:?}");
    assert!(has(&mounts[1], "mnt=/var/tmp/fsmatrix/mnt1"), "{mounts:?}");
    let init = commands_of(&remote, "pg-init");
    assert!(has(&init[0], "cell=/var/tmp/fsmatrix/pg") && has(&init[0], "port=5432"));
    assert!(has(&init[1], "cell=/var/tmp/fsmatrix/pg1") && has(&init[1], "port=5433"));
    // A B A B: the runs alternate between the two clusters.
    let ports: Vec<&str> = commands_of(&remote, "run")
        .iter()
        .map(|c| if c.contains("port=5433") { "x" } else { "e" })
        .collect::<Vec<_>>()
        .into_iter()
        .collect();
    assert_eq!(ports, ["e", "x", "e", "x"]);
    let ran_fs: Vec<String> = ran
        .results
        .iter()
        .map(|r| {
            r["params"]["filesystem"]
                .as_str()
                .unwrap_or("?")
                .to_string()
        })
        .collect();
    assert_eq!(ran_fs, ["e", "x", "e", "x"], "{:?}", ran.results);
    // The counters' tunnels reach each cluster's own socket.
    for tail in ["/pg/sock/.s.PGSQL.5432", "/pg1/sock/.s.PGSQL.5433"] {
        assert!(
            ran.calls
                .iter()
                .any(|c| matches!(c, Recorded::Tunnel { socket } if socket.ends_with(tail))),
            "{tail}: {:?}",
            ran.calls
        );
    }
    // Both devices torn down at the end.
    let td = commands_of(&remote, "teardown");
    assert!(td[td.len() - 2].contains("dev=/dev/loop9"), "{td:?}");
    let last = &td[td.len() - 1];
    assert!(
        has(last, "dev=/dev/loop8") && has(last, "mnt=/var/tmp/fsmatrix/mnt1"),
        "{td:?}"
    );
}

#[tokio::test]
async fn interleaved_failure_or_interrupt_tears_every_device_down() {
    // x's make-fs fails: x's cells fail there and its device is torn down
    // at once; e runs on and is torn down at the end.
    let (inv, p) = setup_interleaved();
    let remote = stand_in_two(&inv);
    remote.fail("linux.sh make-fs dev=/dev/loop8 ", 3, "boom\n");
    let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
    let fails: Vec<(String, String)> = ran
        .results
        .iter()
        .map(|r| {
            (
                r["params"]["filesystem"]
                    .as_str()
                    .unwrap_or("?")
                    .to_string(),
                r["status"]["step"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    assert_eq!(
        fails
            .iter()
            .filter(|f| f.0 == "x" && f.1 == "make-fs")
            .count(),
        2,
        "{fails:?}"
    );
    let td = commands_of(&remote, "teardown");
    assert!(
        td.iter().filter(|c| c.contains("dev=/dev/loop8")).count() >= 2,
        "{td:?}"
    );
    assert!(
        td.last().is_some_and(|c| c.contains("dev=/dev/loop9")),
        "{td:?}"
    );

    // An interrupt at the third run: nothing new starts, both devices are
    // torn down, the rest is recorded as not run.
    let (inv, p) = setup_interleaved();
    let remote = stand_in_two(&inv);
    let (tx, rx) = watch::channel(false);
    let n = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    remote.on_exec(move |cmd| {
        if cmd.contains("linux.sh run ") && n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 2
        {
            let _ = tx.send(true);
        }
    });
    let ran = run_worker(&inv, &p, &remote, rx).await;
    let tail: Vec<&str> = ran
        .verbs
        .iter()
        .rev()
        .take(4)
        .rev()
        .map(String::as_str)
        .collect();
    assert_eq!(
        tail,
        ["pg-stop", "teardown", "pg-stop", "teardown"],
        "{:?}",
        ran.verbs
    );
    let after: Vec<&str> = ran
        .verbs
        .iter()
        .skip_while(|v| *v != "run")
        .skip(7)
        .map(String::as_str)
        .collect();
    assert!(!after.contains(&"run"), "{:?}", ran.verbs);
    let td = commands_of(&remote, "teardown");
    assert!(
        td[td.len() - 2].contains("dev=/dev/loop9") && td[td.len() - 1].contains("dev=/dev/loop8")
    );
    assert_eq!(commands_of(&remote, "run").len(), 3);
    assert!(ran.tally.not_run >= 1, "{:?}", ran.tally);
    assert_eq!(ran.tally.not_run + ran.tally.failed, 4, "{:?}", ran.tally);
}

/// A sweep's start tears down every device the plan builds on (what a
/// killed interleaved sweep left), not only the first.
#[tokio::test]
async fn pre_clean_tears_down_every_device_of_the_plan() {
    let (inv, p) = setup_interleaved();
    let remote = stand_in_two(&inv);
    let job = HostJob {
        host: &inv.hosts[0],
        cells: p.cells.iter().collect(),
        needs: super::check::needs_of(&p, "h"),
        pre_clean: true,
        counted: Counted::default(),
        batches: p.hosts[0].batches.clone(),
        extra_facts: Vec::new(),
    };
    assert_eq!(job.needs.slots, 2);
    let (report, _) = host_sweep(&remote, job, &Sink::discard(), no_cancel()).await;
    assert!(report.ready, "{:?}", report.problems);
    let td = commands_of(&remote, "teardown");
    assert!(
        td[0].contains("dev=/dev/loop9")
            && td[1].contains("dev=/dev/loop8")
            && td[1].contains("pool=fsmx1"),
        "{td:?}"
    );

    // A second device the guard refuses leaves the host not ready: nothing
    // is formatted.
    let remote = stand_in_two(&inv);
    remote.fail(
        "linux.sh preflight dev=/dev/loop8 ",
        3,
        "refused: /dev/loop8 carries a foreign signature (ext4)\n",
    );
    let job = HostJob {
        host: &inv.hosts[0],
        cells: p.cells.iter().collect(),
        needs: super::check::needs_of(&p, "h"),
        pre_clean: true,
        counted: Counted::default(),
        batches: p.hosts[0].batches.clone(),
        extra_facts: Vec::new(),
    };
    let (report, tally) = host_sweep(&remote, job, &Sink::discard(), no_cancel()).await;
    assert!(!report.ready);
    assert!(
        report.problems.iter().any(|p| p.contains(
            "device /dev/loop8 refused by the guard: refused: /dev/loop8 carries a foreign signature"
        )),
        "{:?}",
        report.problems
    );
    assert!(commands_of(&remote, "make-fs").is_empty());
    assert_eq!(tally.not_run, 4);
}

/// `latency_log` and `per_statement`: the run gets `txlog=1
/// sampling_rate=0.5 per_statement=1`, every log the script names is
/// fetched with `remove=1` and kept in the cell's folder, and the result
/// carries the percentiles and the statements.
#[tokio::test]
async fn latency_logs_are_fetched_removed_and_measured() {
    use std::io::Write as _;
    let gz = |text: &str| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap()
    };
    let inv =
        Inventory::parse(Path::new("inv.toml"), INV.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let m = Matrix::parse(
        Path::new("m.toml"),
        "name = \"m\"\nrepeats = 1\n[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n\
         [[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [2]\n\
         duration = \"5s\"\nlatency_log = true\nsampling_rate = 0.5\nper_statement = true\n"
            .to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let p = plan(&inv, &m);
    let c = &p.cells[0];
    let remote = stand_in_for(&inv);
    let dir = format!("/var/tmp/fsmatrix/runs/{}/txlog", c.id);
    remote.respond_ok(
        "linux.sh run ",
        &format!("status=0\ntxlog={dir}/pgbench_log.77.gz\ntxlog={dir}/pgbench_log.77.1.gz\n"),
    );
    let a = gz("0 0 1500 0 1700000000 1\n0 1 2500 0 1700000000 2\n");
    let b = gz("1 0 500 0 1700000000 3\n1 1 skipped 0 1700000000 4 9000\n");
    let out = |bytes: Vec<u8>| crate::remote::ExecOutput {
        status: crate::remote::ExitStatus::Code { code: 0 },
        stdout: bytes,
        stderr: Vec::new(),
    };
    remote.respond("pgbench_log.77.gz", out(a));
    remote.respond("pgbench_log.77.1.gz", out(b));
    let stdout = format!(
        "{}statement latencies in milliseconds and failures:\n         0.002           0  \\set aid random(1, 100000 * :scale)\n         0.110           0  SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
        pgbench_out(1000.0)
    );
    remote.respond_ok(&format!("runs/{}/stdout", c.id), &stdout);
    let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
    let run_cmd = remote
        .commands()
        .into_iter()
        .find(|c| verb_of(c) == "run")
        .unwrap_or_default();
    for want in ["txlog=1", "sampling_rate=0.5", "per_statement=1"] {
        assert!(run_cmd.contains(want), "{want} missing: {run_cmd}");
    }
    let cats: Vec<String> = remote
        .commands()
        .into_iter()
        .filter(|c| c.contains("pgbench_log.77"))
        .collect();
    assert_eq!(cats.len(), 2, "{cats:?}");
    assert!(cats.iter().all(|c| c.contains("remove=1")), "{cats:?}");
    let r = &ran.results[0];
    assert_eq!(r["status"]["state"], "done", "{r}");
    let l = &r["status"]["run"]["latency_percentiles"];
    assert_eq!(l["transactions"], 3, "{l}");
    assert_eq!(l["skipped"], 1);
    assert_eq!(l["sampling_rate"], 0.5);
    assert_eq!(
        (l["p50_ms"].as_f64(), l["max_ms"].as_f64()),
        (Some(1.5), Some(2.5))
    );
    assert_eq!(
        l["files"],
        serde_json::json!(["txlog/pgbench_log.77.gz", "txlog/pgbench_log.77.1.gz"])
    );
    let st = &r["status"]["run"]["statement_latencies"];
    assert_eq!(st.as_array().map(Vec::len), Some(2), "{st}");
    assert_eq!(st[1]["latency_ms"], 0.11);

    // A log the run cannot read fails the cell, saying why.
    let remote = stand_in_for(&inv);
    remote.respond_ok(
        "linux.sh run ",
        &format!("status=0\ntxlog={dir}/pgbench_log.9.gz\n"),
    );
    remote.respond_ok("pgbench_log.9.gz", "not gzip");
    remote.respond_ok(&format!("runs/{}/stdout", c.id), &pgbench_out(1000.0));
    let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
    let r = &ran.results[0];
    assert_eq!(r["status"]["state"], "failed", "{r}");
    let tail = r["status"]["stderr_tail"].as_str().unwrap_or_default();
    assert!(
        tail.contains("per-transaction log pgbench_log.9.gz"),
        "{tail}"
    );
}

/// Cells recorded as not run together (here: a sweep interrupted before
/// its first cell) get one new estimate between them, not one each.
#[tokio::test]
async fn cells_not_run_together_are_estimated_once() {
    let (inv, p) = setup("4", false);
    assert_eq!(p.cells.len(), 4);
    let remote = stand_in_for(&inv);
    let (_tx, cancelled) = watch::channel(true);
    let ran = run_worker(&inv, &p, &remote, cancelled).await;
    assert_eq!(ran.tally.not_run, 4, "{:?}", ran.tally);
    let etas = ran
        .events
        .iter()
        .filter(|e| matches!(e, RunEvent::Eta { .. }))
        .count();
    // One for the four cells (the teardown after an interrupt is not timed).
    assert_eq!(etas, 1, "estimates for 4 cells not run: {:?}", ran.events);
    let ended = ran
        .events
        .iter()
        .filter(|e| matches!(e, RunEvent::CellEnded { .. }))
        .count();
    assert_eq!(ended, 4);
}

/// A run that fails after pgbench streamed some seconds: the cell's
/// stderr tail is what went wrong, not the live view's tps lines.
#[tokio::test]
async fn a_failed_runs_tail_leaves_out_the_live_lines() {
    let (inv, p) = setup("1", false);
    let remote = stand_in_for(&inv);
    remote.respond(
        "linux.sh run ",
        ExecOutput {
            status: crate::remote::ExitStatus::Code { code: 1 },
            stdout: b"status=2\n".to_vec(),
            stderr: b"fsmatrix-live progress: 1.0 s, 812.5 tps, lat 1.229 ms stddev 0.412\n\
                      fsmatrix-live progress: 2.0 s, 790.0 tps, lat 1.301 ms stddev 0.5\n\
                      pgbench: error: client 0 aborted in command 1 of script 0\n\
                      error: run: pgbench exited 2\n"
                .to_vec(),
        },
    );
    let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
    let r = &ran.results[0];
    assert_eq!(r["status"]["state"], "failed", "{r}");
    let tail = r["status"]["stderr_tail"].as_str().unwrap_or_default();
    assert!(tail.contains("client 0 aborted"), "{tail}");
    assert!(tail.contains("pgbench exited 2"), "{tail}");
    assert!(!tail.contains("fsmatrix-live"), "{tail}");
}

#[tokio::test]
async fn each_end_of_work_is_timed_and_re_estimates_and_runs_stream_their_tps() {
    let (inv, p) = setup("2", false);
    let remote = stand_in_for(&inv);
    // The script streams pgbench's -P lines, marked, on stderr.
    remote.respond(
        "linux.sh run ",
        ExecOutput {
            status: crate::remote::ExitStatus::Code { code: 0 },
            stdout: b"status=0\n".to_vec(),
            stderr: b"fsmatrix-live progress: 1.0 s, 812.5 tps, lat 1.229 ms stddev 0.412\n\
                      fsmatrix-live progress: 2.0 s, 790.0 tps, lat 1.301 ms stddev 0.5\n\
                      + something the script logged\n"
                .to_vec(),
        },
    );
    for c in &p.cells {
        remote.respond_ok(&format!("runs/{}/stdout", c.id), &pgbench_out(800.0));
    }
    let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
    assert_eq!(ran.tally.done, 2);
    // Setup, load, two runs, teardown: each timed against its default.
    let kinds: Vec<WorkKind> = ran.timings.iter().map(|t| t.kind).collect();
    assert_eq!(
        kinds,
        [
            WorkKind::Setup,
            WorkKind::Load,
            WorkKind::RunOverhead,
            WorkKind::RunOverhead,
            WorkKind::Teardown
        ]
    );
    assert!(ran
        .timings
        .iter()
        .all(|t| t.fs_type == "ext4" && t.prior_secs > 0.0));
    // An estimate after each, learning; nothing left after the last.
    let etas: Vec<&crate::eta::Estimate> = ran
        .events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Eta { estimate, .. } => Some(estimate),
            _ => None,
        })
        .collect();
    assert_eq!(etas.len(), 5, "{etas:?}");
    assert!(etas.iter().all(|e| e.basis == crate::eta::Basis::Observed));
    // The stand-in answers at once: what is left is the runs' known 5 s each.
    let near = |e: &crate::eta::Estimate, s: f64| (e.remaining - s).abs() < 0.5;
    assert!(near(etas[0], 10.0) && near(etas[2], 5.0), "{etas:?}");
    assert_eq!((etas[4].remaining, etas[4].plus_minus), (0.0, 0.0));
    // Each run's seconds as tps events, for its own cell.
    let tps: Vec<(&str, f64, f64)> = ran
        .events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Tps { cell, t_s, tps, .. } => Some((cell.as_str(), *t_s, *tps)),
            _ => None,
        })
        .collect();
    assert_eq!(tps.len(), 4, "{tps:?}");
    assert_eq!(
        (tps[0].0, tps[0].1, tps[0].2),
        (p.cells[0].id.as_str(), 1.0, 812.5)
    );
    assert_eq!(tps[3].0, p.cells[1].id.as_str());
}

/// A host that sends more than a command may (here a verb's stdout) has
/// that step fail, saying how much and which stream; teardown still runs.
/// Past the cell's bound (its output and transaction logs together) the
/// cell fails naming the host and the cell, the rest is not fetched, and
/// the host's next cell runs.
#[tokio::test]
async fn a_host_that_sends_too_much_fails_the_command_or_the_cell_and_goes_on() {
    let limits = OutputLimits {
        command: 1000,
        fetch: 3000,
        cell: 5000,
    };
    let (inv, p) = setup("2", false);
    // A verb that floods its stdout.
    let remote = stand_in_for(&inv);
    remote.respond_ok("linux.sh pg-start", &"x".repeat(1001));
    let ran = run_worker_limited(&inv, &p, &remote, no_cancel(), limits).await;
    assert_eq!(ran.failed_steps(), ["pg-start", "pg-start"]);
    let tail = ran.results[0]["status"]["stderr_tail"]
        .as_str()
        .unwrap_or_default();
    assert!(
        tail.contains("sent more than 1000 B on stdout") && tail.contains("killed"),
        "{tail}"
    );
    assert_eq!(ran.verbs.last().map(String::as_str), Some("teardown"));

    // A fetched file over the fetch bound.
    let remote = stand_in_for(&inv);
    for c in &p.cells {
        remote.respond_ok(&format!("runs/{}/stdout", c.id), &"y".repeat(3001));
    }
    let ran = run_worker_limited(&inv, &p, &remote, no_cancel(), limits).await;
    assert_eq!(ran.failed_steps(), ["collect", "collect"]);
    let tail = ran.results[0]["status"]["stderr_tail"]
        .as_str()
        .unwrap_or_default();
    assert!(tail.contains("more than 2.9 KiB on stdout"), "{tail}");

    // The cell's bound: run.out 1 KB, run.err 1 KB, then logs of 2 KB
    // each; the second log passes 5000 bytes.  The first cell fails
    // there, the second (a smaller run) is done.
    let remote = stand_in_for(&inv);
    let (a, b) = (&p.cells[0].id, &p.cells[1].id);
    let dir = "/var/tmp/fsmatrix/txlog";
    remote.respond_ok(
        "linux.sh run ",
        &format!("status=0\ntxlog={dir}/pgbench_log.1.gz\ntxlog={dir}/pgbench_log.2.gz\n"),
    );
    remote.respond_ok(&format!("runs/{a}/stdout"), &pgbench_out(100.0));
    remote.respond_ok(&format!("runs/{a}/stderr"), &" ".repeat(1000));
    remote.respond_ok("pgbench_log.", &"z".repeat(2000));
    remote.respond_ok(&format!("runs/{b}/stdout"), &pgbench_out(100.0));
    remote.respond_ok(&format!("runs/{b}/stderr"), "");
    // The second cell's run names no logs.
    remote.respond_ok(&format!("out=/var/tmp/fsmatrix/runs/{b} "), "status=0\n");
    let ran = run_worker_limited(&inv, &p, &remote, no_cancel(), limits).await;
    let first = &ran.results[0];
    assert_eq!(first["status"]["state"], "failed", "{first}");
    let tail = first["status"]["stderr_tail"].as_str().unwrap_or_default();
    assert!(
        tail.contains(&format!("h sent more than 4.9 KiB for cell {a}")),
        "{tail}"
    );
    let logs: Vec<String> = remote
        .commands()
        .into_iter()
        .filter(|c| c.contains("pgbench_log."))
        .collect();
    assert_eq!(
        logs.len(),
        2,
        "the fetch that passed the bound was the last: {logs:?}"
    );
    assert_eq!(
        ran.results[1]["status"]["state"], "done",
        "{}",
        ran.results[1]
    );
}

/// A host that names a transaction log the bundle cannot store (`..`, a
/// name longer than a file name may be, a control character) fails that
/// cell with the real reason; the sweep goes on (it used to break the
/// bundle for every host and blame a full disk).
#[tokio::test]
async fn a_file_name_from_the_host_the_bundle_cannot_store_fails_only_its_cell() {
    let (inv, p) = setup("2", false);
    let a = &p.cells[0].id;
    for bad in ["..", &"l".repeat(300), "a\u{1b}b"] {
        let remote = stand_in_for(&inv);
        remote.respond_ok(
            &format!("out=/var/tmp/fsmatrix/runs/{a} "),
            &format!("status=0\ntxlog=/var/tmp/fsmatrix/{bad}\n"),
        );
        for c in &p.cells {
            remote.respond_ok(&format!("runs/{}/stdout", c.id), &pgbench_out(100.0));
        }
        let ran = run_worker(&inv, &p, &remote, no_cancel()).await;
        let first = &ran.results[0];
        assert_eq!(first["status"]["state"], "failed", "{bad:?}: {first}");
        let tail = first["status"]["stderr_tail"].as_str().unwrap_or_default();
        assert!(
            tail.contains("named a transaction log the bundle cannot store")
                && !tail.contains("free space"),
            "{bad:?}: {tail}"
        );
        assert!(
            !ran.notes().contains("no new step starts"),
            "{}",
            ran.notes()
        );
        assert_eq!(ran.results[1]["status"]["state"], "done", "{bad:?}");
        assert!(
            !remote.commands().iter().any(|c| c.contains("remove=1")),
            "a bad name is not fetched"
        );
    }
}

/// The sink's own wall: a cell whose files include a name the bundle
/// cannot store is recorded as failed (its other files kept), and the
/// bundle stays usable for every other cell and host.
#[tokio::test]
async fn the_sink_records_a_cell_with_an_unstorable_file_name_as_failed() {
    let (_, p) = setup("2", false);
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let bundle = Bundle::create(tmp.path(), "m").unwrap_or_else(|e| panic!("{e}"));
    let root = bundle.path().to_path_buf();
    let (tx, _rx) = mpsc::unbounded_channel();
    let sink = Sink::new(bundle, tx);
    let mut tally = HostTally::default();
    let (a, b) = (&p.cells[0], &p.cells[1]);
    let done = |c: &crate::plan::Cell| crate::model::CellResult {
        schema: crate::model::RESULT_SCHEMA,
        cell_id: c.id.clone(),
        params: c.params(),
        status: crate::model::CellStatus::NotNeeded { reason: "x".into() },
        started: None,
        ended: None,
        sizes: None,
        init: None,
        fs_settings: None,
    };
    let files = vec![
        ("run.out".to_string(), b"kept".to_vec()),
        (format!("txlog/{}", "n".repeat(300)), b"x".to_vec()),
    ];
    sink.record(a, &done(a), &files, &mut tally);
    sink.record(b, &done(b), &[], &mut tally);
    assert!(sink.broken().is_none(), "{:?}", sink.broken());
    assert_eq!((tally.failed, tally.not_needed), (1, 1));
    let r: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root.join(format!("data/cells/{}/result.json", a.id)))
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let tail = r["status"]["stderr_tail"].as_str().unwrap_or_default();
    assert!(tail.contains("over the 255 a file name may have"), "{tail}");
    assert!(root.join(format!("data/cells/{}/run.out", a.id)).is_file());
}
