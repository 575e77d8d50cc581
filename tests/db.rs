//! The results database against a real PostgreSQL (a throwaway cluster from
//! Debian's packages, tests/support/pg.rs): schema creation and migration,
//! connection settings the way libpq users give them, submit/queue/cancel,
//! publish (idempotent, refusing a bundle that does not verify), the host
//! leases and cell claims an agent works with, and the queue's throughput.
#[path = "pure/bundle_common.rs"]
mod bundle_common;
mod support;

// Without root the suite says so and is skipped (tests/run.sh runs it, as root).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root;

use std::process::Output;
use std::time::{Duration, Instant};

use fsmatrix::db::{self, queue};
use support::fsmatrix;
use support::pg::Postgres;

fn out(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The repository's top folder: the examples' relative paths start there.
fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run(args: &[&str], db: &str) -> Output {
    fsmatrix()
        .current_dir(repo())
        .args(args)
        .env("FSMATRIX_DB", db)
        .env_remove("PGPASSWORD")
        .env_remove("PGHOST")
        .output()
        .expect("run fsmatrix")
}

/// `submit` of the example inventory and `matrix/quick.toml` (and `extra`).
fn submit_quick(url: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "submit",
        "-i",
        "inventory/example-lab.toml",
        "-m",
        "matrix/quick.toml",
    ];
    args.extend_from_slice(extra);
    run(&args, url)
}

async fn client(url: &str) -> tokio_postgres::Client {
    let t = db::resolve(Some(url), &db::ProcessEnv).expect("resolve");
    db::connect(&t).await.expect("connect")
}

/// How many hosts `holder` leases of sweep `id` (0: none, the sweep waits).
async fn leased(c: &mut tokio_postgres::Client, id: i64, holder: &str, ttl_s: i64) -> usize {
    queue::lease_sweep(c, id, holder, ttl_s)
        .await
        .unwrap()
        .len()
}

async fn count(c: &tokio_postgres::Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).await.expect(sql).get(0)
}

/// Takes a database back from schema version 4 to 3, as an older fsmatrix
/// left it.
const DROP_VERSION_4: &str = "DROP VIEW fsmatrix_verdicts;
     DROP TABLE fsmatrix_comparisons;
     DROP TABLE fsmatrix_matrix_reports;
     ALTER TABLE fsmatrix_runs DROP COLUMN postgres_version, DROP COLUMN postgres_version_num;
     DELETE FROM fsmatrix_schema WHERE version >= 4;";

#[test]
fn db_init_creates_the_schema_and_a_second_init_changes_nothing() {
    let pg = Postgres::start();
    let url = pg.url("postgres");
    let o = run(&["db", "init"], &url);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("schema version 0 -> 5"),
        "{}",
        out(&o)
    );
    let o = run(&["db", "init"], &url);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("schema version 5: up to date"),
        "{}",
        out(&o)
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    // A database at version 1 (before split sweeps) is migrated, keeping
    // its sweeps.
    rt.block_on(async {
        let c = client(&url).await;
        c.batch_execute(&format!(
            "{DROP_VERSION_4}
             DROP TRIGGER fsmatrix_sweeps_submitter ON fsmatrix_sweeps;
             DROP FUNCTION fsmatrix_sweeps_submitter();
             ALTER TABLE fsmatrix_sweeps DROP COLUMN scripts;
             ALTER TABLE fsmatrix_sweeps ALTER COLUMN submitted_by DROP DEFAULT;
             ALTER TABLE fsmatrix_sweeps DROP COLUMN split_hosts;
             DELETE FROM fsmatrix_schema WHERE version >= 2;"
        ))
        .await
        .unwrap();
    });
    let o = run(&["db", "init"], &url);
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains("schema version 1 -> 5"),
        "{}",
        out(&o)
    );
    rt.block_on(async {
        let c = client(&url).await;
        assert_eq!(
            count(
                &c,
                "SELECT count(*) FROM information_schema.columns WHERE column_name = 'split_hosts'"
            )
            .await,
            1
        );
        for t in [
            "fsmatrix_sweeps",
            "fsmatrix_hosts",
            "fsmatrix_host_leases",
            "fsmatrix_cells",
            "fsmatrix_bundles",
            "fsmatrix_runs",
            "fsmatrix_matrix_reports",
            "fsmatrix_verdicts",
        ] {
            let n = count(&c, &format!("SELECT count(*) FROM {t}")).await;
            assert_eq!(n, 0, "{t}");
        }
        // A database newer than this fsmatrix is refused, not downgraded.
        c.execute(
            "INSERT INTO fsmatrix_schema (version, by_version) VALUES (99, 'future')",
            &[],
        )
        .await
        .unwrap();
    });
    let o = run(&["queue"], &url);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("newer than this fsmatrix"),
        "{}",
        out(&o)
    );
    // Before `db init`, the other commands say to run it.
    let pg2 = Postgres::start();
    let o = run(&["queue"], &pg2.url("postgres"));
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("fsmatrix db init"),
        "{}",
        out(&o)
    );
}

#[test]
fn a_database_that_is_down_is_a_clear_error_with_exit_2_and_no_password_shown() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://ann:hunter2@127.0.0.1:{closed}/results");
    let t0 = Instant::now();
    for args in [&["queue"][..], &["db", "init"], &["cancel", "1"]] {
        let o = run(args, &url);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", out(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!(
                "cannot reach the results database ann@127.0.0.1:{closed}/results"
            )),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("hunter2"),
            "{args:?}: the password shows: {err}"
        );
    }
    let o = submit_quick(&url, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot reach the results database"),
        "{}",
        out(&o)
    );
    assert!(t0.elapsed() < Duration::from_secs(60));
}

/// An agent started while the queue's database is down: a clear error,
/// exit 2, and nothing leased (the sweep is still queued once it is back).
#[test]
fn an_agent_whose_database_is_down_at_start_exits_2_and_leases_nothing() {
    let pg = Postgres::start();
    let url = pg.url("postgres");
    assert_eq!(run(&["db", "init"], &url).status.code(), Some(0));
    let o = submit_quick(&url, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    pg.ctl("stop");
    let tmp = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let o = run(
        &[
            "agent",
            "--registry",
            "inventory/example-lab.toml",
            "--idle-exit",
            "5",
            "--out",
            &tmp.path().display().to_string(),
        ],
        &url,
    );
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot reach the results database"),
        "{}",
        out(&o)
    );
    assert!(t0.elapsed() < Duration::from_secs(60));
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "a bundle was started"
    );
    pg.ctl("start");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = client(&url).await;
        assert_eq!(
            count(&c, "SELECT count(*) FROM fsmatrix_host_leases").await,
            0
        );
        assert_eq!(
            count(
                &c,
                "SELECT count(*) FROM fsmatrix_sweeps WHERE state = 'queued'"
            )
            .await,
            1
        );
    });
}

#[test]
fn passwords_from_pgpassword_and_the_password_file_reach_a_scram_server() {
    let pg = Postgres::start_with(Some("s3cret:pw"));
    let home = tempfile::tempdir().unwrap();
    let url = format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port);
    // No password: refused by the server, said plainly.
    let o = fsmatrix()
        .args(["db", "init", "--db", &url])
        .env("HOME", home.path())
        .env_remove("PGPASSWORD")
        .env_remove("FSMATRIX_DB")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot reach the results database"),
        "{}",
        out(&o)
    );
    let o = fsmatrix()
        .args(["db", "init", "--db", &url])
        .env("HOME", home.path())
        .env("PGPASSWORD", "s3cret:pw")
        .env_remove("FSMATRIX_DB")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    // ~/.pgpass, with `:` escaped; only the host, port and user given.
    let pass = home.path().join(".pgpass");
    std::fs::write(
        &pass,
        format!("127.0.0.1:{}:*:postgres:s3cret\\:pw\n", pg.port),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = fsmatrix()
        .args(["queue"])
        .env("HOME", home.path())
        .env("PGHOST", "127.0.0.1")
        .env("PGPORT", pg.port.to_string())
        .env("PGUSER", "postgres")
        .env("PGDATABASE", "postgres")
        .env_remove("PGPASSWORD")
        .env_remove("FSMATRIX_DB")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("s3cret"),
        "{}",
        out(&o)
    );
}

/// A server that takes only TLS: `sslmode=disable` is refused by it; the
/// default (prefer) connects encrypted; `require` with PGSSLROOTCERT naming
/// its CA verifies it, and with another CA is refused before any query.
#[test]
fn tls_when_the_server_asks_for_it() {
    let (pg, ca) = Postgres::start_tls();
    let base = format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port);
    let home = tempfile::tempdir().unwrap();
    let go = |url: &str, root: Option<&std::path::Path>| {
        let mut c = fsmatrix();
        c.current_dir(repo())
            .args(["db", "init", "--db", url])
            .env("HOME", home.path())
            .env_remove("FSMATRIX_DB")
            .env_remove("PGSSLROOTCERT");
        if let Some(r) = root {
            c.env("PGSSLROOTCERT", r);
        }
        c.output().unwrap()
    };
    let o = go(&format!("{base}?sslmode=disable"), None);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no encryption"),
        "{}",
        out(&o)
    );
    let o = go(&base, None);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let o = go(&format!("{base}?sslmode=require"), Some(&ca));
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("not authenticated"),
        "{}",
        out(&o)
    );
    let o = go(&format!("{base}?sslmode=require"), None);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not authenticated"),
        "{}",
        out(&o)
    );
    let o = go(
        &format!("{base}?sslmode=require"),
        Some(&pg.dir().join("other-ca.crt")),
    );
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .to_lowercase()
            .contains("certificate"),
        "{}",
        out(&o)
    );
    // The connection really is encrypted.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let t = db::resolve(Some(&format!("{base}?sslmode=require")), &db::ProcessEnv).unwrap();
        let c = db::connect(&t).await.expect("TLS connect");
        let ssl: bool = c
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert!(ssl);
    });
}

#[test]
fn submit_queue_and_cancel() {
    let pg = Postgres::start();
    let url = pg.url("postgres");
    assert_eq!(run(&["db", "init"], &url).status.code(), Some(0));
    let o = submit_quick(&url, &["--priority", "5"]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let id: i64 = String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .expect("the sweep's id");
    // Refused input never reaches the queue: a matrix with an error.
    let bad = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        bad.path(),
        "name = \"x\"\n[[filesystem]]\nname = \"e\"\ntype = \"ext9\"\n",
    )
    .unwrap();
    let o = run(
        &[
            "submit",
            "-i",
            "inventory/example-lab.toml",
            "-m",
            bad.path().to_str().unwrap(),
        ],
        &url,
    );
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let planned = fsmatrix()
        .current_dir(repo())
        .args([
            "plan",
            "-i",
            "inventory/example-lab.toml",
            "-m",
            "matrix/quick.toml",
            "--json",
        ])
        .output()
        .unwrap();
    let plan: serde_json::Value = serde_json::from_slice(&planned.stdout).unwrap();
    let cells = plan["cells"].as_array().unwrap().len() as i64;
    rt.block_on(async {
        let c = client(&url).await;
        assert_eq!(count(&c, "SELECT count(*) FROM fsmatrix_sweeps").await, 1);
        assert_eq!(
            count(&c, "SELECT count(*) FROM fsmatrix_cells").await,
            cells
        );
        // The stored plan is what `plan --json` prints.
        let stored: serde_json::Value = c
            .query_one("SELECT plan FROM fsmatrix_sweeps WHERE id = $1", &[&id])
            .await
            .unwrap()
            .get(0);
        assert_eq!(stored, plan);
        let (ip, mp): (String, String) = {
            let r = c
                .query_one(
                    "SELECT inventory_path, matrix_path FROM fsmatrix_sweeps WHERE id = $1",
                    &[&id],
                )
                .await
                .unwrap();
            (r.get(0), r.get(1))
        };
        assert!(
            ip.starts_with('/') && ip.ends_with("inventory/example-lab.toml"),
            "{ip}"
        );
        assert!(
            mp.starts_with('/') && mp.ends_with("matrix/quick.toml"),
            "{mp}"
        );
    });
    let o = run(&["queue", "--json"], &url);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let row: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON line");
    assert_eq!(row["id"], id);
    assert_eq!(row["state"], "queued");
    assert_eq!(row["priority"], 5);
    assert_eq!(row["cells"], cells);
    assert_eq!(row["done"], 0);
    // Queued: the plan's ETA, marked as such.
    assert_eq!(row["eta_seconds"], plan["eta"], "{row}");
    assert_eq!(row["eta_observed"], false);
    let o = run(&["queue"], &url);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("0/{cells}")),
        "{}",
        out(&o)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("the plan's estimate"),
        "{}",
        out(&o)
    );
    // Running for 100 s with half its cells ended: 100 s left, from its pace.
    rt.block_on(async {
        let c = client(&url).await;
        c.batch_execute(&format!(
            "UPDATE fsmatrix_sweeps SET state = 'running', started_at = now() - interval '100 s' WHERE id = {id};
             UPDATE fsmatrix_cells SET state = 'done' WHERE sweep_id = {id} AND ord < {}",
            cells / 2
        ))
        .await
        .unwrap();
    });
    let o = run(&["queue", "--json"], &url);
    let row: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON line");
    assert_eq!(row["eta_observed"], true, "{row}");
    let want = 100 * (cells - cells / 2) / (cells / 2);
    let eta = row["eta_seconds"].as_i64().unwrap();
    assert!((want..=want + 3).contains(&eta), "ETA {eta}, want {want}");
    let o = run(&["cancel", &id.to_string()], &url);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let o = run(&["cancel", &id.to_string()], &url);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is cancelled"),
        "{}",
        out(&o)
    );
    let o = run(&["cancel", "999"], &url);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    rt.block_on(async {
        let c = client(&url).await;
        assert_eq!(
            count(
                &c,
                "SELECT count(*) FROM fsmatrix_cells WHERE state = 'cancelled'"
            )
            .await,
            cells - cells / 2,
            "the pending cells are cancelled, the ended ones kept"
        );
    });
}

/// `db init --roles`: who submitted is the database's own identity (not
/// `$USER`), a submitter cancels only its own sweeps and can write neither
/// leases nor results, an agent leases.
#[test]
fn a_submitter_role_queues_and_cancels_its_own_but_cannot_write_leases_or_results() {
    let pg = Postgres::start();
    let url = pg.url("postgres");
    for _ in 0..2 {
        let o = run(&["db", "init", "--roles"], &url);
        assert_eq!(o.status.code(), Some(0), "{}", out(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout)
                .contains("roles fsmatrix_submitter and fsmatrix_agent ready"),
            "{}",
            out(&o)
        );
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        client(&url)
            .await
            .batch_execute(
                "CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN; CREATE ROLE runner LOGIN;
                 GRANT fsmatrix_submitter TO alice, bob; GRANT fsmatrix_agent TO runner;",
            )
            .await
            .unwrap();
    });
    let o = fsmatrix()
        .current_dir(repo())
        .args([
            "submit",
            "-i",
            "inventory/example-lab.toml",
            "-m",
            "matrix/quick.toml",
        ])
        .env("FSMATRIX_DB", pg.url("alice"))
        .env("USER", "mallory\x1b[2J")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let id: i64 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    let o = run(&["queue", "--json"], &url);
    let row: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON line");
    assert_eq!(
        row["submitted_by"], "alice",
        "the database's session_user, not $USER"
    );
    // Bob cannot cancel Alice's sweep.
    let o = run(&["cancel", &id.to_string()], &pg.url("bob"));
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!(
            "sweep {id} was submitted by alice: only its submitter"
        )),
        "{}",
        out(&o)
    );
    rt.block_on(async {
        let alice = client(&pg.url("alice")).await;
        let own = format!(
            "SELECT cell_id, address, port FROM fsmatrix_cells WHERE sweep_id = {id} LIMIT 1"
        );
        let r = alice.query_one(&own, &[]).await.unwrap();
        let (cell, address, port): (String, String, i32) = (r.get(0), r.get(1), r.get(2));
        let sha = "a".repeat(64);
        for sql in [
            format!(
                "INSERT INTO fsmatrix_host_leases (address, port, sweep_id, holder, expires)
                 VALUES ('{address}', {port}, {id}, 'alice', now() + interval '1 h')"
            ),
            "UPDATE fsmatrix_host_leases SET holder = 'alice'".to_string(),
            "DELETE FROM fsmatrix_host_leases".to_string(),
            format!(
                "INSERT INTO fsmatrix_bundles (sha256, path, matrix_name, sweep_id, bag_info)
                 VALUES ('{sha}', '/x', 'quick', {id}, '{{}}')"
            ),
            format!(
                "INSERT INTO fsmatrix_runs (bundle_sha256, cell_id, host, filesystem, fs_type, workload,
                     clients, repeat, warmup, state, result)
                 VALUES ('{sha}', '{cell}', 'h', 'f', 'ext4', 'w', 1, 1, false, 'done', '{{}}')"
            ),
            "UPDATE fsmatrix_runs SET tps = 1e9".to_string(),
            format!("UPDATE fsmatrix_cells SET state = 'done' WHERE sweep_id = {id}"),
            format!("UPDATE fsmatrix_cells SET holder = 'alice' WHERE sweep_id = {id}"),
            format!("UPDATE fsmatrix_sweeps SET state = 'running' WHERE id = {id}"),
            format!("UPDATE fsmatrix_sweeps SET submitted_by = 'bob' WHERE id = {id}"),
            "INSERT INTO fsmatrix_sweeps (matrix_name, inventory, matrix, inventory_path, matrix_path,
                 plan, submitted_by, priority, eta_seconds, state)
             VALUES ('m', '', '', '', '', '{}', 'bob', 0, 0, 'running')"
                .to_string(),
        ] {
            let e = alice.batch_execute(&sql).await.expect_err(&sql);
            assert_eq!(
                e.code(),
                Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
                "{sql}: {e:?}"
            );
        }
        // An agent's role leases the sweep (and the submitter's lease
        // attempts left nothing behind).
        let mut runner = client(&pg.url("runner")).await;
        assert_eq!(
            queue::lease_next_sweep(&mut runner, "runner@test:1", 30)
                .await
                .unwrap()
                .map(|(s, _)| s),
            Some(id)
        );
        let holders: Vec<String> = runner
            .query("SELECT DISTINCT holder FROM fsmatrix_host_leases", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(holders, ["runner@test:1"]);
        assert!(queue::claim_cell(&runner, id, "runner@test:1").await.unwrap().is_some());
    });
    let o = run(&["cancel", &id.to_string()], &pg.url("alice"));
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let o = run(&["queue", "--json"], &url);
    let row: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON line");
    assert_eq!(row["state"], "cancelled");
    assert_eq!(row["submitted_by"], "alice");
}

/// A matrix that names a script by an absolute path is refused at `submit`,
/// before the database is reached: an agent plans only from the scripts a
/// submission carries, beside the matrix (docs/trust.md).
#[test]
fn submit_refuses_a_script_named_by_an_absolute_path_before_reaching_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("load.sql");
    std::fs::write(&script, "SELECT 1;\n").unwrap();
    let m = tmp.path().join("m.toml");
    std::fs::write(
        &m,
        format!(
            "name = \"abs\"\nrepeats = 1\nwarmup = false\n[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n\
             [[workload]]\nname = \"w\"\nsql_script = {:?}\n",
            script.display().to_string()
        ),
    )
    .unwrap();
    let o = run(
        &[
            "submit",
            "-i",
            "inventory/example-lab.toml",
            "-m",
            m.to_str().unwrap(),
        ],
        "postgres://nobody@127.0.0.1:1/none",
    );
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("by an absolute path"), "{}", out(&o));
    assert!(
        e.contains("nothing queued") && !e.contains("cannot reach"),
        "{}",
        out(&o)
    );
}

#[test]
fn publish_imports_a_bundle_once_and_refuses_one_that_does_not_verify() {
    let pg = Postgres::start();
    let url = pg.url("postgres");
    assert_eq!(run(&["db", "init"], &url).status.code(), Some(0));
    let tmp = tempfile::tempdir().unwrap();
    let bundle = bundle_common::make_bundle(tmp.path(), fsmatrix::results::SweepStatus::Complete);
    let b = bundle.to_str().unwrap();
    let o = run(&["publish", b], &url);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with("published ") && text.contains("5 runs added, 0 already there"),
        "{text}"
    );
    let o = run(&["publish", b], &url);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("already published")
            && String::from_utf8_lossy(&o.stdout).contains("0 runs added, 5 already there"),
        "{}",
        out(&o)
    );
    // Every result in the database is the one in the bundle.
    let lines = std::fs::read_to_string(bundle.join("data/results.jsonl")).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = client(&url).await;
        assert_eq!(count(&c, "SELECT count(*) FROM fsmatrix_bundles").await, 1);
        assert_eq!(count(&c, "SELECT count(*) FROM fsmatrix_runs").await, 5);
        for l in lines.lines() {
            let want: serde_json::Value = serde_json::from_str(l).unwrap();
            let got: serde_json::Value = c
                .query_one(
                    "SELECT result FROM fsmatrix_runs WHERE cell_id = $1",
                    &[&want["cell_id"].as_str().unwrap()],
                )
                .await
                .unwrap()
                .get(0);
            assert_eq!(got, want);
        }
        let tps: f64 = c
            .query_one("SELECT tps FROM fsmatrix_runs WHERE cell_id = 'c01'", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(tps, 410.0);
    });
    // The report from the database is the bundle's report (the source named
    // by folder and sha256 prefix instead of folder).
    let from_bundle = fsmatrix()
        .args(["report", b, "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(from_bundle.status.code(), Some(0), "{}", out(&from_bundle));
    let from_db = fsmatrix()
        .args([
            "report", "--db", &url, "--matrix", "quick", "--format", "json",
        ])
        .output()
        .unwrap();
    assert_eq!(from_db.status.code(), Some(0), "{}", out(&from_db));
    let mut a: serde_json::Value = serde_json::from_slice(&from_bundle.stdout).unwrap();
    let mut d: serde_json::Value = serde_json::from_slice(&from_db.stdout).unwrap();
    let named = d["notes"][0].as_str().unwrap_or_default().to_string();
    assert!(named.contains(" (") && named.contains("matches"), "{named}");
    for v in [&mut a, &mut d] {
        v["bundles"] = serde_json::Value::Null;
        v["checksums"] = serde_json::Value::Null;
        v["notes"][0] = serde_json::Value::Null;
        // What was compared names the bundles as each source names them.
        for part in ["systems", "variants"] {
            for row in v[part].as_array_mut().into_iter().flatten() {
                row["bundles"] = serde_json::Value::Null;
            }
        }
    }
    assert!(a["systems"][0]["kernel"] == "6.1", "{a}");
    assert_eq!(a, d);
    let none = fsmatrix()
        .args(["report", "--db", &url, "--matrix", "nosuch"])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(2), "{}", out(&none));
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("no bundle of matrix \"nosuch\""),
        "{}",
        out(&none)
    );
    // A changed result: the bundle no longer verifies and nothing is written.
    let tmp2 = tempfile::tempdir().unwrap();
    let other = bundle_common::make_bundle(tmp2.path(), fsmatrix::results::SweepStatus::Complete);
    let jsonl = other.join("data/results.jsonl");
    let t = std::fs::read_to_string(&jsonl)
        .unwrap()
        .replace("410", "999");
    std::fs::write(&jsonl, t).unwrap();
    let o = run(&["publish", other.to_str().unwrap()], &url);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("does not verify"),
        "{}",
        out(&o)
    );
    rt.block_on(async {
        let c = client(&url).await;
        assert_eq!(count(&c, "SELECT count(*) FROM fsmatrix_bundles").await, 1);
        assert_eq!(count(&c, "SELECT count(*) FROM fsmatrix_runs").await, 5);
    });
}

/// An inventory of `n` hosts nobody contacts and a matrix of `per_host` cells
/// on each, written into `dir`.
fn fake_sweep(
    dir: &std::path::Path,
    n: usize,
    first: usize,
    per_host: u32,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let mut inv = String::from(
        "[defaults]\nuser = \"root\"\nidentity_file = \"/nonexistent/id\"\nknown_hosts = \"/nonexistent/kh\"\nos = \"linux\"\nplatform = \"kvm\"\ndevices = [\"/dev/vdb\"]\n",
    );
    for i in first..first + n {
        inv.push_str(&format!(
            "[[host]]\nname = \"h{i}\"\naddress = \"10.203.0.{}\"\n",
            100 + i
        ));
    }
    let clients: Vec<String> = (1..=25).map(|c| c.to_string()).collect();
    assert_eq!(per_host % 25, 0);
    let m = format!(
        "name = \"bench\"\nrepeats = {}\nwarmup = false\n[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n[[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [{}]\nduration = \"1s\"\n",
        per_host / 25,
        clients.join(", ")
    );
    let (ip, mp) = (
        dir.join(format!("inv{first}.toml")),
        dir.join(format!("m{first}.toml")),
    );
    std::fs::write(&ip, inv).unwrap();
    std::fs::write(&mp, m).unwrap();
    (ip, mp)
}

async fn submit_fake(
    c: &mut tokio_postgres::Client,
    dir: &std::path::Path,
    n: usize,
    first: usize,
    per_host: u32,
    split: bool,
) -> i64 {
    let (ip, mp) = fake_sweep(dir, n, first, per_host);
    let (inv, m) = fsmatrix::config::load(&ip, &mp, fsmatrix::generator::script_uses)
        .unwrap_or_else(|e| panic!("{e}"));
    let p = fsmatrix::plan::plan(&inv, &m);
    queue::submit(
        c,
        &queue::Submission {
            inventory_text: "",
            matrix_text: "",
            inventory_path: &ip,
            matrix_path: &mp,
            inventory: &inv,
            plan: &p,
            scripts: &[],
            priority: 0,
            split_hosts: split,
        },
    )
    .await
    .expect("submit")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn host_leases_are_exclusive_and_expire_and_every_cell_is_claimed_once() {
    let pg = Postgres::start();
    let url = pg.url("postgres");
    let mut c = client(&url).await;
    db::schema::init(&mut c).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // Two sweeps sharing host h1; a third on h3 alone.
    let a = submit_fake(&mut c, tmp.path(), 2, 1, 50, false).await;
    let b = submit_fake(&mut c, tmp.path(), 1, 1, 25, false).await;
    let other = submit_fake(&mut c, tmp.path(), 1, 3, 25, false).await;
    assert!(leased(&mut c, a, "agent-1", 2).await > 0);
    // b needs h1: agent-2 cannot have it while agent-1's lease lives.
    assert_eq!(leased(&mut c, b, "agent-2", 30).await, 0);
    assert_eq!(
        queue::lease_next_sweep(&mut c, "agent-2", 30)
            .await
            .unwrap()
            .map(|(id, _)| id),
        Some(other)
    );
    // agent-2 cannot claim cells of a sweep it does not lease.
    assert_eq!(queue::claim_cell(&c, a, "agent-2").await.unwrap(), None);
    // After expiry (2 s, no heartbeat) agent-2 takes the hosts over.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(leased(&mut c, b, "agent-2", 30).await > 0);
    assert_eq!(leased(&mut c, a, "agent-1", 30).await, 0);
    queue::release(&c, b, "agent-2").await.unwrap();
    assert!(leased(&mut c, a, "agent-1", 30).await > 0);
    assert_eq!(queue::heartbeat(&c, "agent-1", 30).await.unwrap(), 2);
    // 8 tasks of one agent claim sweep a's 100 cells: each exactly once.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let c = client(&url).await;
            let mut got = Vec::new();
            while let Some(cell) = queue::claim_cell(&c, a, "agent-1").await.unwrap() {
                assert!(queue::finish_cell(&c, &cell, "agent-1", "done")
                    .await
                    .unwrap());
                got.push(cell.cell_id);
            }
            got
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!(
        (n, all.len()),
        (100, 100),
        "claimed {n}, distinct {}",
        all.len()
    );
    assert_eq!(
        count(
            &c,
            &format!("SELECT count(*) FROM fsmatrix_cells WHERE sweep_id = {a} AND state = 'done'")
        )
        .await,
        100
    );
}

/// 8 agents race for one sweep's hosts at the same moment, 20 times: each
/// time exactly one gets them (whole or split).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn agents_racing_for_one_sweep_never_both_get_a_host() {
    let pg = Postgres::start();
    let url = pg.url("postgres");
    let mut c = client(&url).await;
    db::schema::init(&mut c).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for round in 0..20 {
        let split = round % 2 == 1;
        let id = submit_fake(&mut c, tmp.path(), 2, 1, 25, split).await;
        let start = std::sync::Arc::new(tokio::sync::Barrier::new(8));
        let mut tasks = Vec::new();
        for i in 0..8 {
            let (url, start) = (url.clone(), start.clone());
            tasks.push(tokio::spawn(async move {
                let mut c = client(&url).await;
                start.wait().await;
                queue::lease_sweep(&mut c, id, &format!("agent-{i}"), 60)
                    .await
                    .unwrap()
            }));
        }
        let mut got = Vec::new();
        for t in tasks {
            got.extend(t.await.unwrap());
        }
        assert_eq!(got.len(), 2, "round {round} (split {split}): {got:?}");
        assert_eq!(
            count(
                &c,
                "SELECT count(DISTINCT holder) FROM fsmatrix_host_leases"
            )
            .await,
            1,
            "round {round}"
        );
        c.batch_execute(&format!(
            "DELETE FROM fsmatrix_host_leases; UPDATE fsmatrix_sweeps SET state = 'done' WHERE id = {id}"
        ))
        .await
        .unwrap();
    }
}

/// A sweep whose matrix says `split_hosts = true` is leased host by host:
/// an agent takes the free hosts with cells left, another the rest once they
/// are free; a sweep that may not be split waits for all of its hosts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_sweep_is_leased_host_by_host_and_a_whole_one_never_is() {
    let pg = Postgres::start();
    let mut c = client(&pg.url("postgres")).await;
    db::schema::init(&mut c).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let on_h1 = submit_fake(&mut c, tmp.path(), 1, 1, 25, false).await;
    let split = submit_fake(&mut c, tmp.path(), 3, 1, 25, true).await;
    let whole = submit_fake(&mut c, tmp.path(), 3, 1, 25, false).await;
    let addr = |i: u8| (format!("10.203.0.{}", 100 + i), 22);
    assert_eq!(
        queue::lease_sweep(&mut c, on_h1, "agent-1", 30)
            .await
            .unwrap(),
        vec![addr(1)]
    );
    // h1 is busy: the split sweep's other hosts go to agent-2 ...
    assert_eq!(
        queue::lease_next_sweep(&mut c, "agent-2", 30)
            .await
            .unwrap(),
        Some((split, vec![addr(2), addr(3)]))
    );
    // ... the whole sweep waits for all three, and agent-3 gets nothing.
    assert_eq!(
        queue::lease_next_sweep(&mut c, "agent-3", 30)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        queue::lease_sweep(&mut c, whole, "agent-3", 30)
            .await
            .unwrap(),
        Vec::<(String, i32)>::new()
    );
    // agent-2's leases let it claim only the cells of h2 and h3.
    let mut hosts = std::collections::BTreeSet::new();
    while let Some(cell) = queue::claim_cell(&c, split, "agent-2").await.unwrap() {
        hosts.insert(cell.host.clone());
        assert!(queue::finish_cell(&c, &cell, "agent-2", "done")
            .await
            .unwrap());
    }
    assert_eq!(hosts.into_iter().collect::<Vec<_>>(), ["h2", "h3"]);
    // h1 freed: agent-3 takes the split sweep's last host; h2 and h3 have
    // no cell left, so they are not leased again.
    queue::release(&c, on_h1, "agent-1").await.unwrap();
    c.execute(
        "UPDATE fsmatrix_sweeps SET state = 'done' WHERE id = $1",
        &[&on_h1],
    )
    .await
    .unwrap();
    queue::release(&c, split, "agent-2").await.unwrap();
    assert_eq!(
        queue::lease_next_sweep(&mut c, "agent-3", 30)
            .await
            .unwrap(),
        Some((split, vec![addr(1)]))
    );
    let left = count(
        &c,
        &format!("SELECT count(*) FROM fsmatrix_cells WHERE sweep_id = {split} AND state = 'pending' AND host = 'h1'"),
    )
    .await;
    assert_eq!(left, 25);
}

/// The queue on the database alone: 8 agents (tasks), each with its own
/// sweep and host, claim and finish 10 000 cells; prints claims per second
/// and the time a claim waits (its round trip, locks included).  The figure
/// goes in docs/results-database.md; the test asserts only that every cell ran once.
async fn xid(c: &tokio_postgres::Client) -> i64 {
    c.query_one("SELECT txid_current()", &[])
        .await
        .unwrap()
        .get(0)
}

/// Issue 24: an agent's pass over the queue is one query, not one
/// transaction per open sweep (5,000 queued sweeps cost ~10 s a pass).
/// Counted by transaction ids: a lease attempt locks rows and takes one,
/// the poll (read only) takes none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_s_poll_is_one_query_however_long_the_queue() {
    let pg = Postgres::start();
    let url = pg.url("postgres");
    let mut c = client(&url).await;
    db::schema::init(&mut c).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let blocker = submit_fake(&mut c, tmp.path(), 1, 1, 25, false).await;
    assert!(leased(&mut c, blocker, "agent-1", 600).await > 0);
    // 5,000 more sweeps on the leased host.
    c.batch_execute(&format!(
        "INSERT INTO fsmatrix_sweeps (matrix_name, inventory, matrix, inventory_path, matrix_path,
                                      plan, priority, eta_seconds)
         SELECT matrix_name, inventory, matrix, inventory_path, matrix_path, plan, priority, eta_seconds
         FROM fsmatrix_sweeps, generate_series(1, 5000) WHERE id = {blocker};
         INSERT INTO fsmatrix_cells (sweep_id, cell_id, ord, host, address, port, params)
         SELECT s.id, c.cell_id, c.ord, c.host, c.address, c.port, c.params
         FROM fsmatrix_sweeps s JOIN fsmatrix_cells c ON c.sweep_id = {blocker}
         WHERE s.id <> {blocker};"
    ))
    .await
    .unwrap();
    let before = xid(&c).await;
    let t0 = Instant::now();
    let (open, got) = queue::lease_next(&mut c, "agent-2", 30).await.unwrap();
    let took = t0.elapsed();
    let after = xid(&c).await;
    assert_eq!((open, got), (5001, None));
    assert_eq!(
        after - before,
        1,
        "a pass that finds nothing to lease took {} transactions ({took:?})",
        after - before - 1
    );
    // A free sweep behind them all is found in the same one query, and
    // leased in one transaction.
    let free = submit_fake(&mut c, tmp.path(), 1, 3, 25, false).await;
    let before = xid(&c).await;
    let (open, got) = queue::lease_next(&mut c, "agent-2", 30).await.unwrap();
    let after = xid(&c).await;
    assert_eq!((open, got.map(|(id, _)| id)), (5002, Some(free)));
    assert_eq!(after - before, 2, "one lease, one transaction");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queue_throughput_benchmark() {
    let pg = Postgres::start();
    let url = pg.url("postgres");
    let mut c = client(&url).await;
    db::schema::init(&mut c).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let t_submit = Instant::now();
    let mut sweeps = Vec::new();
    for i in 0..8 {
        sweeps.push(submit_fake(&mut c, tmp.path(), 1, 10 + i, 1250, false).await);
    }
    let submit_s = t_submit.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for (i, id) in sweeps.into_iter().enumerate() {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = client(&url).await;
            let holder = format!("agent-{i}");
            assert!(leased(&mut c, id, &holder, 60).await > 0);
            let mut waits = Vec::new();
            loop {
                let t = Instant::now();
                let Some(cell) = queue::claim_cell(&c, id, &holder).await.unwrap() else {
                    break;
                };
                waits.push(t.elapsed());
                assert!(queue::finish_cell(&c, &cell, &holder, "done")
                    .await
                    .unwrap());
            }
            waits
        }));
    }
    let mut waits = Vec::new();
    for t in tasks {
        waits.extend(t.await.unwrap());
    }
    let secs = t0.elapsed().as_secs_f64();
    waits.sort();
    let p = |q: f64| {
        waits[((waits.len() as f64 * q) as usize).min(waits.len() - 1)].as_secs_f64() * 1000.0
    };
    eprintln!(
        "queue benchmark: 10000 cells submitted in {submit_s:.2} s; claimed and finished by 8 agents in {secs:.2} s: \
         {:.0} claims/s; claim wait p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        waits.len() as f64 / secs,
        p(0.5),
        p(0.99),
        p(1.0)
    );
    assert_eq!(waits.len(), 10_000);
    assert_eq!(
        count(
            &c,
            "SELECT count(*) FROM fsmatrix_cells WHERE state = 'done'"
        )
        .await,
        10_000
    );
}

/// A bundle whose results name a host `../../../outside` (its checksums
/// made to verify): `publish` used to join the name into
/// `data/hosts/<host>/facts.json` and store a file from outside the bundle
/// with the runs.  It is refused, naming the field and the rule, and
/// nothing is written to the database.
#[test]
fn publish_refuses_a_host_name_that_would_leave_the_bundle() {
    use fsmatrix::text::sha256_hex;
    let pg = Postgres::start();
    let url = pg.url("postgres");
    assert_eq!(run(&["db", "init"], &url).status.code(), Some(0));
    let tmp = tempfile::tempdir().unwrap();
    let bundle = bundle_common::make_bundle(tmp.path(), fsmatrix::results::SweepStatus::Complete);
    // <bundle>/data/hosts/../../../outside is tmp/outside.
    std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
    std::fs::write(
        tmp.path().join("outside/facts.json"),
        "{\"secret\": \"stolen\"}",
    )
    .unwrap();
    let jsonl = bundle.join("data/results.jsonl");
    let before = std::fs::read_to_string(&jsonl).unwrap();
    let text = before.replace("\"host\":\"lab1\"", "\"host\":\"../../../outside\"");
    assert!(text.contains("../../../outside"));
    std::fs::write(&jsonl, &text).unwrap();
    // bag-info.txt's Payload-Oxum counts the payload's bytes.
    let grown = (text.len() - before.len()) as u64;
    let info_path = bundle.join("bag-info.txt");
    let info: String = std::fs::read_to_string(&info_path)
        .unwrap()
        .lines()
        .map(|l| match l.strip_prefix("Payload-Oxum: ") {
            Some(v) => {
                let (bytes, files) = v.split_once('.').unwrap();
                format!(
                    "Payload-Oxum: {}.{files}\n",
                    bytes.parse::<u64>().unwrap() + grown
                )
            }
            None => format!("{l}\n"),
        })
        .collect();
    std::fs::write(&info_path, &info).unwrap();
    // Make the checksums agree again, as a hostile sender would.
    let fix = |manifest: &str, rel: &str, bytes: &[u8]| {
        let path = bundle.join(manifest);
        let fixed: String = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| match l.split_once("  ") {
                Some((_, p)) if p == rel => format!("{}  {p}\n", sha256_hex(bytes)),
                _ => format!("{l}\n"),
            })
            .collect();
        std::fs::write(&path, fixed).unwrap();
    };
    fix("manifest-sha256.txt", "data/results.jsonl", text.as_bytes());
    let manifest = std::fs::read(bundle.join("manifest-sha256.txt")).unwrap();
    fix("tagmanifest-sha256.txt", "manifest-sha256.txt", &manifest);
    fix("tagmanifest-sha256.txt", "bag-info.txt", info.as_bytes());
    let o = run(&["verify", bundle.to_str().unwrap()], &url);
    assert_eq!(o.status.code(), Some(0), "the bundle verifies: {}", out(&o));

    let o = run(&["publish", bundle.to_str().unwrap()], &url);
    assert_ne!(o.status.code(), Some(0), "{}", out(&o));
    let said = out(&o);
    assert!(
        said.contains("field host") && said.contains("host name"),
        "{said}"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = client(&url).await;
        assert_eq!(count(&c, "SELECT count(*) FROM fsmatrix_runs").await, 0);
        assert_eq!(count(&c, "SELECT count(*) FROM fsmatrix_bundles").await, 0);
    });
}

/// Matrix `demo` on two hosts, as bundle `k` (1 or 2) of two: ext4 (the
/// baseline, first in matrix order), xfs and btrfs, three counted runs each.
/// On lab1 xfs ties with ext4 and btrfs is significantly slower (with a
/// warm-up run of ext4 that counts nowhere); on lab2 xfs beats both.
fn demo_cells(k: usize) -> Vec<fsmatrix::model::CellResult> {
    use bundle_common::{cell, done};
    let tps: &[(&str, &str, [[f64; 3]; 2])] = &[
        (
            "lab1",
            "ext4",
            [[1000.0, 1012.0, 991.0], [1004.0, 996.0, 1008.0]],
        ),
        (
            "lab1",
            "xfs",
            [[1003.0, 990.0, 1010.0], [998.0, 1006.0, 995.0]],
        ),
        (
            "lab1",
            "btrfs",
            [[612.0, 598.0, 605.0], [601.0, 609.0, 615.0]],
        ),
        (
            "lab2",
            "ext4",
            [[500.0, 510.0, 505.0], [495.0, 508.0, 502.0]],
        ),
        (
            "lab2",
            "xfs",
            [[700.0, 710.0, 705.0], [702.0, 698.0, 707.0]],
        ),
        (
            "lab2",
            "btrfs",
            [[300.0, 310.0, 305.0], [303.0, 298.0, 307.0]],
        ),
    ];
    let mut cells = Vec::new();
    let mut minute = 0;
    let mut at = |c: &mut fsmatrix::model::CellResult, host: &str| {
        minute += 1;
        c.params.host = host.to_string();
        c.started = Some(format!("2026-12-0{k}T10:{minute:02}:00Z"));
        c.ended = Some(format!("2026-12-0{k}T10:{minute:02}:30Z"));
    };
    if k == 1 {
        let mut w = cell("b1-lab1-ext4-w", "ext4", 4, 0, done(200.0));
        w.params.warmup = true;
        at(&mut w, "lab1");
        cells.push(w);
    }
    for (host, fs, runs) in tps {
        for (r, v) in runs[k - 1].iter().enumerate() {
            let mut c = cell(
                &format!("b{k}-{host}-{fs}-{r}"),
                fs,
                4,
                r as u32 + 1,
                done(*v),
            );
            at(&mut c, host);
            cells.push(c);
        }
    }
    cells
}

fn demo_bundle(dir: &std::path::Path, k: usize, extra: &[fsmatrix::model::CellResult]) -> String {
    let mut cells = demo_cells(k);
    cells.extend_from_slice(extra);
    bundle_common::make_bundle_of(
        dir,
        "demo",
        &cells,
        &[
            (
                "lab1",
                "{\"postgres_version\":\"postgres (PostgreSQL) 15.10 (Debian 15.10-0+deb12u1)\"}\n",
            ),
            (
                "lab2",
                "{\"postgres_version\":\"postgres (PostgreSQL) 9.6.24\"}\n",
            ),
        ],
        fsmatrix::results::SweepStatus::Complete,
    )
    .to_str()
    .unwrap()
    .to_string()
}

/// A verdict as the JSON report spells it.
fn spelled(v: fsmatrix::results::analysis::compare::Verdict) -> String {
    serde_json::to_value(v)
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

/// One row of the report's tables or of `fsmatrix_verdicts`: workload,
/// clients, host, variant, n, mean, ratio, adjusted p, verdict, winner.
type VerdictRow = (
    String,
    i64,
    String,
    String,
    i64,
    f64,
    Option<f64>,
    Option<f64>,
    String,
    bool,
);

/// The rows of a `report --format json`, in its order.
fn report_rows(json: &[u8]) -> Vec<VerdictRow> {
    let r: serde_json::Value = serde_json::from_slice(json).expect("the JSON report");
    let mut rows = Vec::new();
    for t in r["tables"].as_array().unwrap() {
        assert_eq!(t["metric"], "tps", "the fixture is compared on tps");
        for h in t["hosts"].as_array().unwrap() {
            for row in h["rows"].as_array().unwrap() {
                let fs = row["stats"]["key"]["filesystem"]
                    .as_str()
                    .unwrap()
                    .to_string();
                let c = &row["comparison"];
                rows.push((
                    t["workload"].as_str().unwrap().to_string(),
                    t["clients"].as_i64().unwrap(),
                    h["host"].as_str().unwrap().to_string(),
                    fs.clone(),
                    row["stats"]["tps"]["n"].as_i64().unwrap(),
                    row["stats"]["tps"]["mean"].as_f64().unwrap(),
                    c["ratio"]["ratio"].as_f64(),
                    c["difference"]["p_adjusted"].as_f64(),
                    match c["verdict"].as_str() {
                        Some(v) => v.to_string(),
                        // The baseline row has no comparison.
                        None => spelled(fsmatrix::results::analysis::compare::Verdict::Baseline),
                    },
                    h["winner"].as_str() == Some(fs.as_str()),
                ));
            }
        }
    }
    rows
}

async fn db_rows(c: &tokio_postgres::Client, matrix: &str) -> Vec<VerdictRow> {
    c.query(
        "SELECT workload, clients, host, filesystem, n, mean, ratio, p_adjusted, verdict, winner
         FROM fsmatrix_verdicts WHERE matrix = $1 ORDER BY ord",
        &[&matrix],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| {
        (
            r.get(0),
            r.get::<_, i32>(1) as i64,
            r.get(2),
            r.get(3),
            r.get::<_, i32>(4) as i64,
            r.get(5),
            r.get(6),
            r.get(7),
            r.get(8),
            r.get(9),
        )
    })
    .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The same rows, numbers within float tolerance.
fn assert_same_rows(db: &[VerdictRow], report: &[VerdictRow]) {
    assert_eq!(db.len(), report.len(), "rows: {db:#?}\nreport: {report:#?}");
    let opt = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => close(a, b),
        (a, b) => a == b,
    };
    for (d, r) in db.iter().zip(report) {
        let same = (&d.0, d.1, &d.2, &d.3, d.4, &d.8, d.9)
            == (&r.0, r.1, &r.2, &r.3, r.4, &r.8, r.9)
            && close(d.5, r.5)
            && opt(d.6, r.6)
            && opt(d.7, r.7);
        assert!(same, "database {d:?}\nreport   {r:?}");
    }
}

#[test]
fn the_database_s_verdicts_are_the_report_s() {
    use fsmatrix::results::analysis::compare::Verdict;
    let pg = Postgres::start();
    let url = pg.url("postgres");
    assert_eq!(run(&["db", "init"], &url).status.code(), Some(0));
    let (t1, t2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (b1, b2) = (
        demo_bundle(t1.path(), 1, &[]),
        demo_bundle(t2.path(), 2, &[]),
    );
    for b in [&b1, &b2] {
        let o = run(&["publish", b], &url);
        assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    }
    // The report on the bundles themselves, and on the database.
    let from_bundles = run(&["report", &b1, &b2, "--format", "json"], &url);
    assert_eq!(
        from_bundles.status.code(),
        Some(0),
        "{}",
        out(&from_bundles)
    );
    let want = report_rows(&from_bundles.stdout);
    let from_db = run(
        &[
            "report", "--db", &url, "--matrix", "demo", "--format", "json",
        ],
        &url,
    );
    assert_eq!(from_db.status.code(), Some(0), "{}", out(&from_db));
    assert_same_rows(&report_rows(&from_db.stdout), &want);
    // The fixture is what it says: an equivalent variant, a decided loser,
    // a winner.
    let verdict = |host: &str, fs: &str| {
        want.iter()
            .find(|r| r.2 == host && r.3 == fs)
            .map(|r| r.8.clone())
            .unwrap()
    };
    assert_eq!(verdict("lab1", "ext4"), spelled(Verdict::Baseline));
    assert_eq!(verdict("lab1", "xfs"), spelled(Verdict::Equivalent));
    assert_eq!(verdict("lab1", "btrfs"), spelled(Verdict::Slower));
    assert_eq!(verdict("lab2", "xfs"), spelled(Verdict::Faster));
    assert_eq!(verdict("lab2", "btrfs"), spelled(Verdict::Slower));
    assert_eq!(
        want.iter().filter(|r| r.9).count(),
        1,
        "one winner: {want:?}"
    );
    assert!(
        want.iter().all(|r| r.4 == 6),
        "warm-ups count nowhere: {want:?}"
    );

    let rt = tokio::runtime::Runtime::new().unwrap();
    let before = rt.block_on(async {
        let c = client(&url).await;
        let got = db_rows(&c, "demo").await;
        assert_same_rows(&got, &want);
        // The PostgreSQL version, as text and as a number that sorts.
        let v: Vec<(String, String, Option<i32>)> = c
            .query(
                "SELECT DISTINCT host, postgres_version, postgres_version_num FROM fsmatrix_runs
                 ORDER BY host",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        assert_eq!(
            v,
            [
                (
                    "lab1".to_string(),
                    "postgres (PostgreSQL) 15.10 (Debian 15.10-0+deb12u1)".to_string(),
                    Some(150010)
                ),
                (
                    "lab2".to_string(),
                    "postgres (PostgreSQL) 9.6.24".to_string(),
                    Some(90624)
                ),
            ]
        );
        // Every SQL block of docs/results-database.md runs, and says what
        // the report says.
        let doc = std::fs::read_to_string(repo().join("docs/results-database.md")).unwrap();
        let queries: Vec<&str> = doc
            .split("```sql\n")
            .skip(1)
            .map(|b| b.split("```").next().unwrap())
            .collect();
        assert_eq!(
            queries.len(),
            4,
            "the SQL blocks of docs/results-database.md"
        );
        // host, baseline, winner, better, worse
        type Wins = (
            String,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let wins: Vec<Wins> = c
            .query(queries[0], &[])
            .await
            .expect("docs query 1")
            .iter()
            .map(|r| {
                (
                    r.get("host"),
                    r.get("baseline"),
                    r.get("winner"),
                    r.get("better"),
                    r.get("worse"),
                )
            })
            .collect();
        assert_eq!(wins.len(), 2, "{wins:?}");
        let (lab1, lab2) = (&wins[0], &wins[1]);
        assert_eq!((lab1.0.as_str(), lab1.1.as_str()), ("lab1", "ext4"));
        assert_eq!((&lab1.2, &lab1.3), (&None, &None), "{lab1:?}");
        assert!(
            lab1.4
                .as_deref()
                .is_some_and(|w| w.starts_with("btrfs 0.6") && !w.contains("xfs")),
            "{lab1:?}"
        );
        assert_eq!(lab2.2.as_deref(), Some("xfs"), "{lab2:?}");
        assert!(
            lab2.3.as_deref().is_some_and(|b| b.starts_with("xfs 1.4")),
            "{lab2:?}"
        );
        assert!(
            lab2.4
                .as_deref()
                .is_some_and(|w| w.starts_with("btrfs 0.6")),
            "{lab2:?}"
        );
        let table = c.query(queries[1], &[]).await.expect("docs query 2");
        let named: Vec<(String, String, String)> = table
            .iter()
            .map(|r| (r.get("host"), r.get("filesystem"), r.get("verdict")))
            .collect();
        let expected: Vec<(String, String, String)> = want
            .iter()
            .map(|r| (r.2.clone(), r.3.clone(), r.8.clone()))
            .collect();
        assert_eq!(named, expected);
        let by_version: Vec<(Option<i32>, i64)> = c
            .query(queries[2], &[])
            .await
            .expect("docs query 3")
            .iter()
            .map(|r| (r.get("postgres_version_num"), r.get("runs")))
            .collect();
        assert_eq!(by_version, [(Some(90624), 6), (Some(150010), 6)]);
        c.query(queries[3], &[]).await.expect("docs query 4");
        got
    });

    // `db ls`: the published matrix.
    let o = run(&["db", "ls", "--json"], &url);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let ls: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(ls["matrix"], "demo");
    assert_eq!(ls["bundles"], 2);
    assert_eq!(ls["hosts"], 2);
    assert_eq!(ls["cells"], 37, "18 runs a bundle and a warm-up");
    assert_eq!(ls["comparisons"], 6);
    assert!(ls["error"].is_null());
    assert!(ls["first_published"].as_str().unwrap() <= ls["last_published"].as_str().unwrap());
    let o = run(&["db", "ls"], &url);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines().next().unwrap().starts_with("MATRIX")
            && text
                .lines()
                .nth(1)
                .unwrap()
                .split_whitespace()
                .take(5)
                .collect::<Vec<_>>()
                == ["demo", "2", "2", "37", "6"],
        "{}",
        out(&o)
    );

    // A database an older fsmatrix published to is migrated: versions
    // parsed, comparisons computed.
    rt.block_on(async {
        client(&url)
            .await
            .batch_execute(DROP_VERSION_4)
            .await
            .unwrap();
    });
    let o = run(&["db", "init"], &url);
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains("schema version 3 -> 5"),
        "{}",
        out(&o)
    );
    rt.block_on(async {
        let c = client(&url).await;
        assert_same_rows(&db_rows(&c, "demo").await, &before);
        assert_eq!(
            count(
                &c,
                "SELECT count(*) FROM fsmatrix_runs WHERE postgres_version_num = 150010"
            )
            .await,
            19
        );
    });
    let o = run(&["db", "refresh"], &url);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("demo: 6 comparisons over 2 bundles"),
        "{}",
        out(&o)
    );
    let o = run(&["db", "refresh", "--matrix", "nosuch"], &url);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));

    // A bundle the report will not pool with the others (it holds bundle
    // 1's runs again): the matrix has no rows, and `db ls` says why.
    let t3 = tempfile::tempdir().unwrap();
    let mut extra =
        bundle_common::cell("b3-lab1-ext4-9", "ext4", 4, 9, bundle_common::done(1001.0));
    extra.started = Some("2026-12-03T10:00:00Z".into());
    let b3 = demo_bundle(t3.path(), 1, &[extra]);
    // Published by an agent's role, listed by a submitter's.
    let o = run(&["db", "init", "--roles"], &url);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    rt.block_on(async {
        client(&url)
            .await
            .batch_execute(
                "CREATE ROLE runner LOGIN; CREATE ROLE alice LOGIN;
                 GRANT fsmatrix_agent TO runner; GRANT fsmatrix_submitter TO alice;",
            )
            .await
            .unwrap();
    });
    let o = run(&["publish", &b3], &pg.url("runner"));
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let o = run(&["db", "ls"], &pg.url("alice"));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("no comparisons: failed to pool") && text.contains("same run"),
        "{}",
        out(&o)
    );
    rt.block_on(async {
        let c = client(&url).await;
        assert!(db_rows(&c, "demo").await.is_empty());
    });
    let o = run(&["db", "refresh", "--matrix", "demo"], &url);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
}
