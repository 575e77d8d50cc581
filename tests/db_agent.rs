//! `fsmatrix agent` on the lab with a throwaway PostgreSQL as the queue:
//! three sweeps, two agents, three hosts — every cell runs exactly once,
//! never two sweeps on one host at the same moment, every published result
//! is the one in its bundle; an agent killed mid-sweep whose sweep the
//! other finishes after the lease expires; an agent interrupted (SIGINT)
//! that tears down and lets go; the database stopped under a running agent
//! and started again; a sweep split between agents host by host; a
//! submitter's sweeps that ask for more than the agent's registry gives,
//! refused without touching a host (docs/trust.md).
mod support;

// Without root and a lab the suite says so and is skipped (tests/run.sh runs it).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root_and_lab;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::pg::Postgres;
use support::{assert_clean, fsmatrix, inventory_for, Lab, LabHost};

/// The test matrix of sweep `name` (two counted runs of one ext4 cell).
fn agent_matrix(name: &str) -> String {
    support::one_ext4_cell_matrix(&format!("agent-{name}"), 2)
}

/// Submit a sweep of `hosts` named `name`; its id.
fn submit(lab: &Lab, dir: &Path, url: &str, name: &str, hosts: &[&LabHost]) -> i64 {
    submit_matrix(lab, dir, url, name, hosts, &agent_matrix(name))
}

/// Submit the test matrix with `repeats` on `hosts`; its id.
fn submit_repeats(
    lab: &Lab,
    dir: &Path,
    url: &str,
    name: &str,
    hosts: &[&LabHost],
    repeats: u32,
) -> i64 {
    let m = support::one_ext4_cell_matrix(&format!("agent-{name}"), repeats);
    submit_matrix(lab, dir, url, name, hosts, &m)
}

/// Submit `matrix` on `hosts` (files named after `name`); its id.
fn submit_matrix(
    lab: &Lab,
    dir: &Path,
    url: &str,
    name: &str,
    hosts: &[&LabHost],
    matrix: &str,
) -> i64 {
    let inv = dir.join(format!("{name}.inventory.toml"));
    std::fs::write(&inv, submission_for(&lab.inv, hosts, "")).unwrap();
    let m = dir.join(format!("{name}.matrix.toml"));
    std::fs::write(&m, matrix).unwrap();
    let o = fsmatrix()
        .args(["submit", "-i"])
        .arg(&inv)
        .arg("-m")
        .arg(&m)
        .env("FSMATRIX_DB", url)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
}

/// A submitter's inventory: it names the hosts (and what it narrows) and
/// describes them enough to plan at `submit`; no key, no known_hosts, no
/// path of any kind (the agent's registry gives those).
fn submission_for(lab: &support::LabInventory, hosts: &[&LabHost], extra: &str) -> String {
    let mut s = format!(
        "[defaults]\nuser = \"root\"\nagent = true\nos = \"linux\"\nplatform = \"lab\"\npg_user = {:?}\npg_port = {}\n",
        lab.pg_user, lab.pg_port
    );
    for h in hosts {
        s.push_str(&format!(
            "[[host]]\nname = {:?}\naddress = {:?}\ndevices = [{:?}]\n{extra}\n",
            h.name, h.address, h.device
        ));
    }
    s
}

/// The agent operator's registry: every Linux host of the standing lab with
/// the lab's key and known_hosts, beside `out` (written once).
fn registry_beside(out: &Path) -> PathBuf {
    let path = out
        .parent()
        .expect("an agent's out folder has a parent")
        .join("registry.toml");
    if !path.exists() {
        let lab = support::read_inventory(&support::lab_dir()).expect("a standing lab");
        let pairs: Vec<(&LabHost, &str)> = lab.hosts.iter().map(|h| (h, "")).collect();
        std::fs::write(&path, inventory_for(&lab, &pairs, "")).unwrap();
    }
    path
}

fn agent(url: &str, out: &Path, idle: u64, ttl: u64) -> Child {
    fsmatrix()
        .arg("agent")
        .arg("--registry")
        .arg(registry_beside(out))
        .arg("--out")
        .arg(out)
        .args([
            "--idle-exit",
            &idle.to_string(),
            "--lease-ttl",
            &ttl.to_string(),
        ])
        .env("FSMATRIX_DB", url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start an agent")
}

/// Wait for `child` (at most `limit`), killing it past that.
fn wait(mut child: Child, limit: Duration) -> std::process::Output {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    child.wait_with_output().unwrap()
}

fn query<T>(url: &str, f: impl FnOnce(&mut postgres_client::Client) -> T) -> T {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let t = fsmatrix::db::resolve(Some(url), &fsmatrix::db::ProcessEnv).unwrap();
        let c = fsmatrix::db::connect(&t).await.unwrap();
        let mut pc = postgres_client::Client(c);
        f(&mut pc)
    })
}

/// A tiny blocking face over the async client for the checks.
mod postgres_client {
    pub struct Client(pub tokio_postgres::Client);
    impl Client {
        pub fn rows(&mut self, sql: &str) -> Vec<tokio_postgres::Row> {
            futures::executor::block_on(self.0.query(sql, &[])).expect(sql)
        }
    }
}

/// Per host, the (start, end, sweep) of every cell; no two sweeps overlap.
fn assert_no_overlap(url: &str) {
    let rows = query(url, |c| {
        c.rows(
            "SELECT host, sweep_id, extract(epoch FROM started_at)::float8, extract(epoch FROM ended_at)::float8
             FROM fsmatrix_cells ORDER BY host, started_at",
        )
    });
    let mut by_host: BTreeMap<String, Vec<(f64, f64, i64)>> = BTreeMap::new();
    for r in &rows {
        by_host
            .entry(r.get(0))
            .or_default()
            .push((r.get(2), r.get(3), r.get(1)));
    }
    for (host, cells) in by_host {
        for w in cells.windows(2) {
            let (a, b) = (w[0], w[1]);
            if a.2 != b.2 {
                assert!(
                    b.0 >= a.1,
                    "{host}: sweep {} started at {} before sweep {} ended at {}",
                    b.2,
                    b.0,
                    a.2,
                    a.1
                );
            }
        }
    }
}

#[test]
fn three_sweeps_two_agents_three_hosts_every_cell_once() {
    let lab = Lab::hold(&["lab1", "lab2", "lab3"]);
    let (_pg, url) = fresh_db();
    let tmp = tempfile::tempdir().unwrap();
    let h = &lab.inv.hosts;
    let ids = [
        submit(&lab, tmp.path(), &url, "a", &[&h[0], &h[1]]),
        submit(&lab, tmp.path(), &url, "b", &[&h[1], &h[2]]),
        submit(&lab, tmp.path(), &url, "c", &[&h[0], &h[2]]),
    ];
    let outs: Vec<PathBuf> = (1..=2)
        .map(|i| tmp.path().join(format!("agent{i}")))
        .collect();
    let agents: Vec<Child> = outs.iter().map(|o| agent(&url, o, 10, 30)).collect();
    for (i, a) in agents.into_iter().enumerate() {
        let o = wait(a, Duration::from_secs(600));
        assert_eq!(
            o.status.code(),
            Some(0),
            "agent {}: {}{}",
            i + 1,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let (cells, states, runs, dup): (i64, Vec<String>, i64, i64) = query(&url, |c| {
        (
            c.rows("SELECT count(*) FROM fsmatrix_cells")[0].get(0),
            c.rows("SELECT DISTINCT state FROM fsmatrix_sweeps")
                .iter()
                .map(|r| r.get(0))
                .collect(),
            c.rows("SELECT count(*) FROM fsmatrix_runs")[0].get(0),
            c.rows("SELECT count(*) FROM (SELECT b.sweep_id, r.cell_id FROM fsmatrix_runs r JOIN fsmatrix_bundles b ON b.sha256 = r.bundle_sha256 GROUP BY b.sweep_id, r.cell_id HAVING count(*) > 1) d")[0].get(0),
        )
    });
    assert_eq!(cells, 3 * 2 * 2, "{ids:?}");
    assert_eq!(states, ["done"]);
    // A cell id names its parameters (host, variant, workload, clients,
    // repeat): two sweeps of one host share ids, so "once" is per sweep.
    assert_eq!(runs, cells, "every cell published once");
    assert_eq!(dup, 0);
    let not_done: i64 = query(&url, |c| {
        c.rows("SELECT count(*) FROM fsmatrix_cells WHERE state <> 'done'")[0].get(0)
    });
    assert_eq!(not_done, 0);
    assert_no_overlap(&url);
    // Every published result is the one in its (verified) bundle.
    let bundles: Vec<(String, String)> = query(&url, |c| {
        c.rows("SELECT sha256, path FROM fsmatrix_bundles")
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    });
    assert_eq!(bundles.len(), 3);
    // What the report says of each matrix was stored as the agents
    // published (tests/db.rs holds it to `report` row by row).
    let (matrices, with_verdicts, refused): (i64, i64, i64) = query(&url, |c| {
        (
            c.rows("SELECT count(DISTINCT matrix_name) FROM fsmatrix_bundles")[0].get(0),
            c.rows("SELECT count(DISTINCT matrix) FROM fsmatrix_verdicts")[0].get(0),
            c.rows("SELECT count(*) FROM fsmatrix_matrix_reports WHERE error IS NOT NULL")[0]
                .get(0),
        )
    });
    assert_eq!((with_verdicts, refused), (matrices, 0));
    for (sha, path) in bundles {
        let v = fsmatrix().args(["verify", &path]).output().unwrap();
        assert_eq!(
            v.status.code(),
            Some(0),
            "{path}: {}",
            String::from_utf8_lossy(&v.stdout)
        );
        let (real, _) = fsmatrix::results::bundle::manifest::sha256_file(
            &Path::new(&path).join("tagmanifest-sha256.txt"),
        )
        .unwrap();
        assert_eq!(
            real, sha,
            "{path}: the database holds the bundle's own checksum"
        );
        let lines = std::fs::read_to_string(Path::new(&path).join("data/results.jsonl")).unwrap();
        for l in lines.lines() {
            let want: serde_json::Value = serde_json::from_str(l).unwrap();
            let got: Vec<tokio_postgres::Row> = query(&url, |c| {
                c.rows(&format!(
                    "SELECT result FROM fsmatrix_runs WHERE bundle_sha256 = '{sha}' AND cell_id = '{}'",
                    want["cell_id"].as_str().unwrap()
                ))
            });
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].get::<_, serde_json::Value>(0), want);
        }
    }
}

#[test]
fn an_agent_killed_mid_sweep_is_finished_by_another_after_its_lease_expires() {
    let lab = Lab::hold(&["lab1", "lab2", "lab3"]);
    let (_pg, url) = fresh_db();
    let tmp = tempfile::tempdir().unwrap();
    let h = &lab.inv.hosts;
    let id = submit(&lab, tmp.path(), &url, "k", &[&h[0], &h[1]]);
    let mut first = agent(&url, &tmp.path().join("first"), 60, 9);
    // Kill it once one cell is published (the sweep is mid-way).
    let t0 = Instant::now();
    loop {
        let n: i64 = query(&url, |c| {
            c.rows("SELECT count(*) FROM fsmatrix_runs")[0].get(0)
        });
        if n >= 1 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(300), "no cell published");
        assert!(
            first.try_wait().unwrap().is_none(),
            "the first agent ended early"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    Command::new("kill")
        .args(["-KILL", &first.id().to_string()])
        .status()
        .unwrap();
    let _ = first.wait();
    let kept: i64 = query(&url, |c| {
        c.rows("SELECT count(*) FROM fsmatrix_runs")[0].get(0)
    });
    let second = agent(&url, &tmp.path().join("second"), 25, 9);
    let o = wait(second, Duration::from_secs(600));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let (state, done, runs, dup): (String, i64, i64, i64) = query(&url, |c| {
        (
            c.rows(&format!("SELECT state FROM fsmatrix_sweeps WHERE id = {id}"))[0].get(0),
            c.rows("SELECT count(*) FROM fsmatrix_cells WHERE state = 'done'")[0].get(0),
            c.rows("SELECT count(*) FROM fsmatrix_runs")[0].get(0),
            c.rows("SELECT count(*) FROM (SELECT b.sweep_id, r.cell_id FROM fsmatrix_runs r JOIN fsmatrix_bundles b ON b.sha256 = r.bundle_sha256 GROUP BY b.sweep_id, r.cell_id HAVING count(*) > 1) d")[0].get(0),
        )
    });
    assert_eq!(state, "done");
    assert_eq!(done, 4);
    assert_eq!(
        runs, 4,
        "no cell lost or published twice (kept {kept} of the first agent's)"
    );
    assert_eq!(dup, 0);
    assert!(kept >= 1);
    // The second agent tore each host down (what the dead one left) before
    // it made a filesystem there again.
    let text = output_text(&o);
    for host in [&h[0], &h[1]] {
        let at = |step: &str| text.find(&format!("{}: {step}", host.name));
        assert!(
            matches!((at("teardown"), at("make-fs")), (Some(t), Some(m)) if t < m),
            "{}: no teardown before make-fs:\n{text}",
            host.name
        );
    }
}

/// `db init` on a fresh throwaway PostgreSQL; it and its URL.
fn fresh_db() -> (Postgres, String) {
    let pg = Postgres::start();
    let url = pg.url("postgres");
    let o = fsmatrix()
        .args(["db", "init", "--db", &url])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    (pg, url)
}

fn one(url: &str, sql: &str) -> i64 {
    query(url, |c| c.rows(sql)[0].get(0))
}

/// Wait until `sql` counts at least `n` (at most `limit`; `child` must live).
fn wait_count(url: &str, sql: &str, n: i64, child: &mut Child, limit: Duration) {
    let t0 = Instant::now();
    while one(url, sql) < n {
        assert!(t0.elapsed() < limit, "waited {limit:?} for {sql} >= {n}");
        assert!(child.try_wait().unwrap().is_none(), "the agent ended early");
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Every cell of the queue done and published once, every sweep done.
fn assert_all_done_once(url: &str, cells: i64) {
    let states: Vec<String> = query(url, |c| {
        c.rows("SELECT sweep_id || ' ' || cell_id || ' ' || state || ' ' || coalesce(holder, '-') FROM fsmatrix_cells ORDER BY 1")
            .iter()
            .map(|r| r.get(0))
            .collect()
    });
    eprintln!("cells:\n{}", states.join("\n"));
    assert_eq!(one(url, "SELECT count(*) FROM fsmatrix_cells"), cells);
    assert_eq!(
        one(
            url,
            "SELECT count(*) FROM fsmatrix_cells WHERE state = 'done'"
        ),
        cells
    );
    assert_eq!(one(url, "SELECT count(*) FROM fsmatrix_runs"), cells);
    assert_eq!(
        one(url, "SELECT count(*) FROM (SELECT b.sweep_id, r.cell_id FROM fsmatrix_runs r JOIN fsmatrix_bundles b ON b.sha256 = r.bundle_sha256 GROUP BY b.sweep_id, r.cell_id HAVING count(*) > 1) d"),
        0,
        "a cell published twice"
    );
    assert_eq!(
        one(
            url,
            "SELECT count(*) FROM fsmatrix_sweeps WHERE state <> 'done'"
        ),
        0
    );
}

fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn an_interrupted_agent_tears_down_lets_go_and_another_resumes_at_once() {
    let lab = Lab::hold(&["lab1", "lab2", "lab3"]);
    let (_pg, url) = fresh_db();
    let tmp = tempfile::tempdir().unwrap();
    let h = &lab.inv.hosts;
    let id = submit_repeats(&lab, tmp.path(), &url, "int", &[&h[0], &h[1]], 3);
    let mut first = agent(&url, &tmp.path().join("first"), 60, 600);
    wait_count(
        &url,
        "SELECT count(*) FROM fsmatrix_runs",
        1,
        &mut first,
        Duration::from_secs(300),
    );
    Command::new("kill")
        .args(["-INT", &first.id().to_string()])
        .status()
        .unwrap();
    let o = wait(first, Duration::from_secs(180));
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("stopped: interrupted"),
        "{}",
        output_text(&o)
    );
    // Torn down, leases let go at once (the lease's life is 600 s): the
    // sweep stays open with its published cells.
    for host in [&h[0], &h[1]] {
        assert_clean(&lab.inv, host);
    }
    assert_eq!(one(&url, "SELECT count(*) FROM fsmatrix_host_leases"), 0);
    let kept = one(&url, "SELECT count(*) FROM fsmatrix_runs");
    assert!((1..6).contains(&kept), "{kept} cells published");
    let state: String = query(&url, |c| {
        c.rows(&format!(
            "SELECT state FROM fsmatrix_sweeps WHERE id = {id}"
        ))[0]
            .get(0)
    });
    assert_eq!(state, "running");
    let t0 = Instant::now();
    let second = agent(&url, &tmp.path().join("second"), 10, 600);
    let o = wait(second, Duration::from_secs(600));
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(t0.elapsed() < Duration::from_secs(300));
    assert_all_done_once(&url, 6);
}

#[test]
fn the_database_stopped_mid_sweep_loses_no_result() {
    let lab = Lab::hold(&["lab1", "lab2", "lab3"]);
    let (pg, url) = fresh_db();
    let tmp = tempfile::tempdir().unwrap();
    let h = &lab.inv.hosts;
    submit_repeats(&lab, tmp.path(), &url, "restart", &[&h[0], &h[1]], 3);
    let out = tmp.path().join("agent");
    let mut a = agent(&url, &out, 15, 30);
    wait_count(
        &url,
        "SELECT count(*) FROM fsmatrix_runs",
        1,
        &mut a,
        Duration::from_secs(300),
    );
    let published = one(&url, "SELECT count(*) FROM fsmatrix_runs") as usize;
    let epoch = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    pg.ctl("stop");
    let stopped_at = epoch();
    // Down until a cell more has ended in the agent's bundle (counted from
    // now: cells that ended before the stop may not be published yet).
    let ended = || {
        let mut n = 0;
        for b in std::fs::read_dir(&out).into_iter().flatten().flatten() {
            let cells = b.path().join("data/cells");
            for c in std::fs::read_dir(cells).into_iter().flatten().flatten() {
                n += usize::from(c.path().join("result.json").exists());
            }
        }
        n
    };
    let before = ended().max(published);
    let t0 = Instant::now();
    while ended() <= before {
        assert!(
            t0.elapsed() < Duration::from_secs(180),
            "no cell ended while the database was down"
        );
        assert!(a.try_wait().unwrap().is_none(), "the agent ended early");
        std::thread::sleep(Duration::from_millis(300));
    }
    std::thread::sleep(Duration::from_secs(1));
    let started_at = epoch();
    pg.ctl("start");
    let o = wait(a, Duration::from_secs(600));
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert_all_done_once(&url, 6);
    // The cells that ended while it was down were published when it was back.
    let meanwhile = one(
        &url,
        &format!(
            "SELECT count(*) FROM fsmatrix_cells WHERE extract(epoch FROM ended_at) BETWEEN {stopped_at} AND {started_at}"
        ),
    );
    assert!(
        meanwhile >= 1,
        "no cell recorded as ended during the outage"
    );
}

#[test]
fn a_split_sweep_runs_its_free_hosts_while_another_sweep_holds_one() {
    let lab = Lab::hold(&["lab1", "lab2", "lab3"]);
    let (_pg, url) = fresh_db();
    let tmp = tempfile::tempdir().unwrap();
    let h = &lab.inv.hosts;

    let split = format!("split_hosts = true\n{}", agent_matrix("split"));
    let a = submit_repeats(&lab, tmp.path(), &url, "long", &[&h[0]], 4);
    let s = submit_matrix(
        &lab,
        tmp.path(),
        &url,
        "split",
        &[&h[0], &h[1], &h[2]],
        &split,
    );
    let agents: Vec<Child> = (1..=2)
        .map(|i| agent(&url, &tmp.path().join(format!("agent{i}")), 10, 30))
        .collect();
    for a in agents {
        let o = wait(a, Duration::from_secs(600));
        assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    }
    assert_all_done_once(&url, 4 + 3 * 2);
    assert_no_overlap(&url);
    // The split sweep's other hosts did not wait for the first sweep.
    let overlap = one(
        &url,
        &format!(
            "SELECT count(*) FROM fsmatrix_cells s WHERE s.sweep_id = {s} AND s.host <> '{}'
               AND s.started_at < (SELECT max(ended_at) FROM fsmatrix_cells WHERE sweep_id = {a})",
            h[0].name
        ),
    );
    assert!(overlap >= 1, "the split sweep waited for the busy host");
    // Its results sit in more than one bundle; the report from the database
    // is the report of those bundles.
    let paths: Vec<String> = query(&url, |c| {
        c.rows(&format!(
            "SELECT path FROM fsmatrix_bundles WHERE sweep_id = {s} ORDER BY path"
        ))
        .iter()
        .map(|r| r.get(0))
        .collect()
    });
    assert!(paths.len() >= 2, "{paths:?}");
    let from_bundles = fsmatrix()
        .arg("report")
        .args(&paths)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(
        from_bundles.status.code(),
        Some(0),
        "{}",
        output_text(&from_bundles)
    );
    let from_db = fsmatrix()
        .args([
            "report",
            "--db",
            &url,
            "--sweep",
            &s.to_string(),
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(from_db.status.code(), Some(0), "{}", output_text(&from_db));
    let mut x: serde_json::Value = serde_json::from_slice(&from_bundles.stdout).unwrap();
    let mut y: serde_json::Value = serde_json::from_slice(&from_db.stdout).unwrap();
    // The numbers and the answer are the same; the notes differ by what the
    // database does not keep (a bundle's plan: "definitions not recorded"),
    // and it names bundles with their checksum ("name (hash)").
    for v in [&mut x, &mut y] {
        v["bundles"] = serde_json::Value::Null;
        v["checksums"] = serde_json::Value::Null;
        v["notes"] = serde_json::Value::Null;
        v["variants"] = serde_json::Value::Null;
        if let Some(systems) = v["systems"].as_array_mut() {
            for s in systems {
                s["bundles"] = serde_json::Value::Null;
            }
        }
    }
    assert_eq!(x, y);
    assert_eq!(
        x["tables"][0]["hosts"].as_array().map(|h| h.len()),
        Some(3),
        "every host of the split sweep in one report: {x}"
    );
}

/// The first MiB of each host's device (sha256), mounts and pools: what a
/// refused sweep must leave as it was.
fn device_states(lab: &Lab, hosts: &[&LabHost]) -> Vec<String> {
    hosts
        .iter()
        .map(|h| {
            support::ssh_ok(
                &lab.inv,
                h,
                r#"dev=$1
echo "head=$(head -c 1048576 "$dev" | sha256sum | cut -d' ' -f1)"
echo "mounts=$(grep -c -e "^$dev " -e ' /var/tmp/fsmatrix/mnt ' /proc/mounts)"
echo "pools=$(zpool list -H -o name 2>/dev/null | grep -c fsmx || true)"
"#,
                &[&h.device],
            )
        })
        .collect()
}

/// Issue 24: a submitter (a non-superuser database role, not the agent's)
/// that names the agent's key, a host or a device outside the agent's
/// registry, a consent the registry does not give, or an ssh config: each
/// sweep is refused by the agent, the reason recorded in the queue, nothing
/// run and nothing touched on any host.  The same role's well-formed
/// submission runs with the registry's credentials.
#[test]
fn a_submission_that_borrows_the_agent_s_authority_is_refused_and_touches_nothing() {
    let lab = Lab::hold(&["lab1", "lab2", "lab3"]);
    let (_pg, url) = fresh_db();
    let o = fsmatrix()
        .args(["db", "init", "--roles", "--db", &url])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    query(&url, |c| {
        futures::executor::block_on(c.0.batch_execute(
            "CREATE ROLE alice LOGIN; GRANT fsmatrix_submitter TO alice;
             CREATE ROLE runner LOGIN; GRANT fsmatrix_agent TO runner;",
        ))
        .unwrap()
    });
    let alice = url.replace("postgres://postgres@", "postgres://alice@");
    let runner = url.replace("postgres://postgres@", "postgres://runner@");
    assert_ne!(alice, url);
    let tmp = tempfile::tempdir().unwrap();
    let h = &lab.inv.hosts;
    // The operator's registry: lab1 and lab2, no consent of any kind.
    let pairs: Vec<(&LabHost, &str)> = vec![(&h[0], ""), (&h[1], "")];
    std::fs::write(
        tmp.path().join("registry.toml"),
        inventory_for(&lab.inv, &pairs, ""),
    )
    .unwrap();

    // What a hostile submitter sends (through the library, as any client
    // of the database could): a plan made from a harmless inventory, and
    // the inventory text the agent will read.
    let marker = tmp.path().join("match-exec-ran");
    let evil_config = tmp.path().join("evil_config");
    std::fs::write(
        &evil_config,
        format!("Match exec \"touch {}\"\n  User root\n", marker.display()),
    )
    .unwrap();
    let plain = |hosts: &[&LabHost]| submission_for(&lab.inv, hosts, "");
    let with_device = |host: &LabHost, device: &str| {
        plain(&[])
            + &format!(
                "[[host]]\nname = {:?}\naddress = {:?}\ndevices = [{device:?}]\n",
                host.name, host.address
            )
    };
    let cases: Vec<(&str, String, Vec<&LabHost>, &str)> = vec![
        (
            "the agent's identity_file",
            plain(&[&h[0]]).replacen(
                "[defaults]\n",
                &format!("[defaults]\nidentity_file = {:?}\n", lab.inv.identity_file),
                1,
            ),
            vec![&h[0]],
            "sets `identity_file` in [defaults]",
        ),
        (
            "a host outside the registry",
            plain(&[&h[2]]),
            vec![&h[2]],
            "is not in the agent's registry; valid: ",
        ),
        (
            "a device outside it",
            with_device(&h[0], &h[2].device),
            vec![&h[0]],
            "is not one the registry lists for it",
        ),
        (
            "a consent the registry does not give",
            plain(&[&h[1]]).replacen(
                "[defaults]\n",
                "[defaults]\nallow_postgres_settings = [\"archive_command\"]\n",
                1,
            ),
            vec![&h[1]],
            "allow_postgres_settings `archive_command` is a consent the registry does not give",
        ),
        (
            "an ssh_config",
            format!("ssh_config = {:?}\n", evil_config.display().to_string())
                + &plain(&[&h[0]]).replace(
                    &format!("address = {:?}", h[0].address),
                    "address = \"lab1-alias\"",
                ),
            vec![&h[0]],
            "sets `ssh_config` in the inventory",
        ),
    ];
    let before = device_states(&lab, &[&h[0], &h[1], &h[2]]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut refused: Vec<(i64, &str, &str)> = Vec::new();
    for (what, text, hosts, want) in &cases {
        // A harmless inventory and matrix of the same hosts, for the plan.
        let name = format!("hostile{}", refused.len());
        let inv = tmp.path().join(format!("{name}.inventory.toml"));
        std::fs::write(&inv, plain(hosts)).unwrap();
        let m = tmp.path().join(format!("{name}.matrix.toml"));
        std::fs::write(&m, agent_matrix(&name)).unwrap();
        let (inventory, matrix) =
            fsmatrix::config::load(&inv, &m, fsmatrix::generator::script_uses)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        let p = fsmatrix::plan::plan(&inventory, &matrix);
        let id = rt.block_on(async {
            let t = fsmatrix::db::resolve(Some(&alice), &fsmatrix::db::ProcessEnv).unwrap();
            let mut c = fsmatrix::db::connect(&t).await.unwrap();
            fsmatrix::db::queue::submit(
                &mut c,
                &fsmatrix::db::queue::Submission {
                    inventory_text: text,
                    matrix_text: &agent_matrix(&name),
                    inventory_path: &inv,
                    matrix_path: &m,
                    inventory: &inventory,
                    plan: &p,
                    scripts: &[],
                    priority: 0,
                    split_hosts: false,
                },
            )
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"))
        });
        refused.push((id, what, want));
    }
    // The agent, as its own database role, with the operator's registry.
    let agent_run = |out: &str| {
        fsmatrix()
            .args(["agent", "--registry"])
            .arg(tmp.path().join("registry.toml"))
            .arg("--out")
            .arg(tmp.path().join(out))
            .args(["--idle-exit", "5", "--lease-ttl", "30"])
            .env("FSMATRIX_DB", &runner)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start an agent")
    };
    let o = wait(agent_run("refusing"), Duration::from_secs(300));
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    for (id, what, want) in &refused {
        let (state, note, touched, runs): (String, Option<String>, i64, i64) = query(&url, |c| {
            let r = &c.rows(&format!(
                "SELECT state, note,
                        (SELECT count(*) FROM fsmatrix_cells WHERE sweep_id = {id} AND state <> 'pending'),
                        (SELECT count(*) FROM fsmatrix_bundles WHERE sweep_id = {id})
                 FROM fsmatrix_sweeps WHERE id = {id}"
            ))[0];
            (r.get(0), r.get(1), r.get(2), r.get(3))
        });
        assert_eq!(state, "failed", "{what}");
        let note = note.unwrap_or_default();
        assert!(note.contains("refused by the agent"), "{what}: {note}");
        assert!(note.contains(want), "{what}: {note}");
        assert_eq!((touched, runs), (0, 0), "{what}: nothing of it ran");
    }
    assert!(
        !marker.exists(),
        "the submitted ssh config's Match exec ran"
    );
    assert_eq!(
        device_states(&lab, &[&h[0], &h[1], &h[2]]),
        before,
        "a host was touched"
    );
    assert_eq!(
        std::fs::read_dir(tmp.path().join("refusing"))
            .map(|d| d.count())
            .unwrap_or(0),
        0,
        "a bundle was started"
    );
    // `queue` shows the reasons, made safe for a terminal.
    let q = fsmatrix()
        .args(["queue"])
        .env("FSMATRIX_DB", &alice)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&q.stdout)
            .contains("refused by the agent: the submitted inventory sets `ssh_config`"),
        "{}",
        output_text(&q)
    );

    // The same submitter's well-formed sweep (no key, no path: `agent =
    // true` in its own inventory, which the agent does not read) runs with
    // the registry's key.
    let id = {
        let inv = tmp.path().join("good.inventory.toml");
        std::fs::write(&inv, plain(&[&h[0]])).unwrap();
        let m = tmp.path().join("good.matrix.toml");
        std::fs::write(&m, support::one_ext4_cell_matrix("agent-good", 1)).unwrap();
        let o = fsmatrix()
            .args(["submit", "-i"])
            .arg(&inv)
            .arg("-m")
            .arg(&m)
            .env("FSMATRIX_DB", &alice)
            .env("SSH_AUTH_SOCK", "/nonexistent")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
        String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse::<i64>()
            .unwrap()
    };
    let out = wait(agent_run("running"), Duration::from_secs(600));
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let (state, by, done, bundle): (String, String, i64, String) = query(&url, |c| {
        let r = &c.rows(&format!(
            "SELECT state, submitted_by,
                    (SELECT count(*) FROM fsmatrix_cells WHERE sweep_id = {id} AND state = 'done'),
                    (SELECT path FROM fsmatrix_bundles WHERE sweep_id = {id})
             FROM fsmatrix_sweeps WHERE id = {id}"
        ))[0];
        (r.get(0), r.get(1), r.get(2), r.get(3))
    });
    assert_eq!((state.as_str(), by.as_str(), done), ("done", "alice", 1));
    let kept = std::fs::read_to_string(Path::new(&bundle).join("data/inventory.toml")).unwrap();
    assert!(
        kept.contains(&format!(
            "identity_file = {:?}",
            lab.inv.identity_file.display().to_string()
        )),
        "the registry's credentials: {kept}"
    );
    assert_clean(&lab.inv, &h[0]);
}
