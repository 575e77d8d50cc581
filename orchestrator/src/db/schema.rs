//! The results database's schema, versioned: `fsmatrix db init` creates it
//! and later migrates it, one transaction per step, under an advisory lock
//! (two `db init` at once wait for each other).  A database newer than this
//! fsmatrix is refused, never downgraded.
use super::DbError;

/// Each step takes the schema from version `i` to `i + 1` (index `i`).
pub const MIGRATIONS: &[&str] = &[
    // 1: sweeps, hosts and their leases, cells, runs, bundles.
    r#"
CREATE TABLE fsmatrix_sweeps (
    id            bigserial PRIMARY KEY,
    matrix_name   text        NOT NULL,
    inventory     text        NOT NULL,   -- the inventory's text as submitted
    matrix        text        NOT NULL,   -- the matrix's text as submitted
    inventory_path text       NOT NULL,   -- where they were (relative paths in them
    matrix_path   text        NOT NULL,   -- keep their meaning when parsed again)
    plan          jsonb       NOT NULL,   -- what `plan --json` prints
    submitted_by  text        NOT NULL,
    submitted_at  timestamptz NOT NULL DEFAULT now(),
    priority      integer     NOT NULL DEFAULT 0,
    state         text        NOT NULL DEFAULT 'queued'
                  CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    eta_seconds   bigint      NOT NULL,
    started_at    timestamptz,
    ended_at      timestamptz,
    note          text                    -- why a sweep failed as a whole
);
CREATE INDEX fsmatrix_sweeps_next ON fsmatrix_sweeps (priority DESC, id)
    WHERE state IN ('queued', 'running');

-- A host is the machine an inventory names (address and port); sweeps that
-- name it in different inventories share its row and its lease.
CREATE TABLE fsmatrix_hosts (
    address  text    NOT NULL,
    port     integer NOT NULL,
    os       text    NOT NULL,
    PRIMARY KEY (address, port)
);

-- One row per leased host: who holds it, for which sweep, until when.  A
-- lease is taken with INSERT .. ON CONFLICT, renewed by heartbeat, and free
-- again once `expires` has passed.
CREATE TABLE fsmatrix_host_leases (
    address    text        NOT NULL,
    port       integer     NOT NULL,
    sweep_id   bigint      NOT NULL REFERENCES fsmatrix_sweeps ON DELETE CASCADE,
    holder     text        NOT NULL,
    taken_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat  timestamptz NOT NULL DEFAULT now(),
    expires    timestamptz NOT NULL,
    PRIMARY KEY (address, port),
    FOREIGN KEY (address, port) REFERENCES fsmatrix_hosts
);

CREATE TABLE fsmatrix_cells (
    sweep_id   bigint  NOT NULL REFERENCES fsmatrix_sweeps ON DELETE CASCADE,
    cell_id    text    NOT NULL,
    ord        integer NOT NULL,          -- plan order
    host       text    NOT NULL,          -- the inventory's host name
    address    text    NOT NULL,
    port       integer NOT NULL,
    params     jsonb   NOT NULL,
    state      text    NOT NULL DEFAULT 'pending'
               CHECK (state IN ('pending', 'running', 'done', 'failed', 'not_run', 'cancelled')),
    holder     text,
    started_at timestamptz,
    ended_at   timestamptz,
    PRIMARY KEY (sweep_id, cell_id),
    FOREIGN KEY (address, port) REFERENCES fsmatrix_hosts
);
CREATE INDEX fsmatrix_cells_pending ON fsmatrix_cells (sweep_id, ord) WHERE state = 'pending';

-- Bundles, published or made by an agent: a bundle is its tag manifest's sha256.
CREATE TABLE fsmatrix_bundles (
    sha256        text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    path          text        NOT NULL,
    matrix_name   text        NOT NULL,
    sweep_id      bigint      REFERENCES fsmatrix_sweeps ON DELETE SET NULL,
    bag_info      jsonb       NOT NULL,
    published_at  timestamptz NOT NULL DEFAULT now()
);

-- One row per cell result of a bundle: the result as the bundle holds it
-- (results.jsonl), its main measures as columns for SQL, the host's facts.
CREATE TABLE fsmatrix_runs (
    bundle_sha256  text NOT NULL REFERENCES fsmatrix_bundles ON DELETE CASCADE ON UPDATE CASCADE,
    cell_id        text NOT NULL,
    host           text NOT NULL,
    filesystem     text NOT NULL,
    fs_type        text NOT NULL,
    workload       text NOT NULL,
    clients        integer NOT NULL,
    repeat         integer NOT NULL,
    warmup         boolean NOT NULL,
    state          text NOT NULL,
    tps            double precision,
    latency_ms     double precision,
    started_at     timestamptz,
    ended_at       timestamptz,
    result         jsonb NOT NULL,
    facts          jsonb,
    PRIMARY KEY (bundle_sha256, cell_id)
);
CREATE INDEX fsmatrix_runs_by_cell ON fsmatrix_runs (cell_id);
"#,
    // 2: a sweep whose matrix says `split_hosts = true` may be leased host
    // by host, by several agents.
    r#"
ALTER TABLE fsmatrix_sweeps ADD COLUMN split_hosts boolean NOT NULL DEFAULT false;
"#,
    // 3: who submitted is the database's own identity, set by the INSERT
    // itself and never changed (docs/trust.md); the workload scripts travel
    // as content with their checksums, never as paths.
    r#"
ALTER TABLE fsmatrix_sweeps ADD COLUMN scripts jsonb NOT NULL DEFAULT '[]'
    CHECK (jsonb_typeof(scripts) = 'array');
ALTER TABLE fsmatrix_sweeps ALTER COLUMN submitted_by SET DEFAULT session_user;
CREATE FUNCTION fsmatrix_sweeps_submitter() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.submitted_by := session_user;
    ELSE
        NEW.submitted_by := OLD.submitted_by;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER fsmatrix_sweeps_submitter BEFORE INSERT OR UPDATE ON fsmatrix_sweeps
    FOR EACH ROW EXECUTE FUNCTION fsmatrix_sweeps_submitter();
"#,
    // 4: the database says what the report says.  Each published matrix's
    // comparisons as `report --db --matrix` computes them (fsmatrix's own
    // statistics, stored by `super::verdicts::refresh` in the transaction
    // that publishes; never computed in SQL), and the PostgreSQL version as
    // a number beside its text.  [`init`] fills both in for the rows of an
    // older database (`super::verdicts::backfill`).
    r#"
ALTER TABLE fsmatrix_runs ADD COLUMN postgres_version text,
                          ADD COLUMN postgres_version_num integer;

-- One row per published matrix: when its comparisons were computed, by
-- which fsmatrix, over how many bundles, or why the report refused them.
CREATE TABLE fsmatrix_matrix_reports (
    matrix_name  text PRIMARY KEY,
    computed_at  timestamptz NOT NULL DEFAULT now(),
    by_version   text        NOT NULL,
    bundles      integer     NOT NULL,
    error        text
);

-- One row per row of the report's tables: a variant on a host, for a
-- workload and client count, against that host's baseline.
CREATE TABLE fsmatrix_comparisons (
    matrix_name   text    NOT NULL REFERENCES fsmatrix_matrix_reports ON DELETE CASCADE,
    ord           integer NOT NULL,        -- the report's row order
    workload      text    NOT NULL,
    clients       integer NOT NULL,
    host          text    NOT NULL,        -- as the report labels it
    filesystem    text    NOT NULL,
    metric        text    NOT NULL,        -- what is compared: tps, latency, load_time
    n             integer NOT NULL,        -- counted runs
    mean          double precision,
    ci_low        double precision,        -- 95% CI of the mean
    ci_high       double precision,
    baseline      text,                    -- the variant compared with
    ratio         double precision,        -- mean / the baseline's mean
    ratio_ci_low  double precision,
    ratio_ci_high double precision,
    p             double precision,        -- Welch, two-sided
    verdict       text    NOT NULL,        -- as `report --format json` spells it
    winner        boolean NOT NULL,        -- the report names it this host's winner
    PRIMARY KEY (matrix_name, ord),
    UNIQUE (matrix_name, workload, clients, host, filesystem)
);

CREATE VIEW fsmatrix_verdicts AS
SELECT c.matrix_name AS matrix, c.workload, c.clients, c.host, c.filesystem, c.metric,
       c.n, c.mean, c.ci_low, c.ci_high, c.baseline, c.ratio, c.ratio_ci_low,
       c.ratio_ci_high, c.p, c.verdict, c.winner, c.ord,
       m.computed_at, m.by_version
FROM fsmatrix_comparisons c JOIN fsmatrix_matrix_reports m USING (matrix_name);
"#,
    // 5: decided verdicts (issue 40).  A comparison is faster, slower,
    // equivalent within the margin or inconclusive, at the family's error
    // rate (a family is one host's comparisons): the adjusted p and the
    // interval at the level its test was decided at, the equivalence test's
    // p, how many repeats per arm would likely decide an inconclusive one;
    // each matrix's α, margin and correction.  The view gains the columns at
    // its end (CREATE OR REPLACE keeps its grants); [`init`] computes every
    // matrix's comparisons again, so no row keeps an older verdict ("tied").
    r#"
ALTER TABLE fsmatrix_comparisons
    ADD COLUMN p_adjusted        double precision,  -- the difference test's, over the family
    ADD COLUMN decided_ci_low    double precision,  -- the deciding interval (for equivalent:
    ADD COLUMN decided_ci_high   double precision,  --   the TOST's 1 - 2a one)
    ADD COLUMN decided_ci_level  double precision,
    ADD COLUMN tost_p            double precision,  -- two one-sided tests within the margin
    ADD COLUMN tost_p_adjusted   double precision,
    ADD COLUMN within_margin     boolean NOT NULL DEFAULT false,
    ADD COLUMN repeats_to_decide integer,           -- inconclusive: repeats per arm likely to decide
    ADD COLUMN family            text;              -- the family: the host
ALTER TABLE fsmatrix_matrix_reports
    ADD COLUMN alpha      double precision,
    ADD COLUMN margin     text,
    ADD COLUMN correction text;
CREATE OR REPLACE VIEW fsmatrix_verdicts AS
SELECT c.matrix_name AS matrix, c.workload, c.clients, c.host, c.filesystem, c.metric,
       c.n, c.mean, c.ci_low, c.ci_high, c.baseline, c.ratio, c.ratio_ci_low,
       c.ratio_ci_high, c.p, c.verdict, c.winner, c.ord,
       m.computed_at, m.by_version,
       c.p_adjusted, c.decided_ci_low, c.decided_ci_high, c.decided_ci_level, c.tost_p,
       c.tost_p_adjusted, c.within_margin, c.repeats_to_decide, c.family,
       m.alpha, m.margin, m.correction
FROM fsmatrix_comparisons c JOIN fsmatrix_matrix_reports m USING (matrix_name);
"#,
];

/// The roles `db init --roles` creates (without LOGIN: grant them to the
/// people and the agents' login roles) and what each may do.  A submitter
/// queues sweeps and cancels its own (row security), reads the queue and
/// the results, and can write neither leases nor results; an agent leases,
/// runs and publishes.  The schema's owner (who ran `db init`) keeps
/// everything.  Run again, it changes nothing.
pub const ROLES: &str = r#"
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'fsmatrix_submitter') THEN
        CREATE ROLE fsmatrix_submitter NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'fsmatrix_agent') THEN
        CREATE ROLE fsmatrix_agent NOLOGIN;
    END IF;
END
$$;
REVOKE ALL ON fsmatrix_schema, fsmatrix_sweeps, fsmatrix_hosts, fsmatrix_host_leases,
              fsmatrix_cells, fsmatrix_bundles, fsmatrix_runs, fsmatrix_matrix_reports,
              fsmatrix_comparisons, fsmatrix_verdicts
    FROM PUBLIC, fsmatrix_submitter, fsmatrix_agent;
GRANT SELECT ON fsmatrix_schema, fsmatrix_sweeps, fsmatrix_hosts, fsmatrix_host_leases,
                fsmatrix_cells, fsmatrix_bundles, fsmatrix_runs, fsmatrix_matrix_reports,
                fsmatrix_comparisons, fsmatrix_verdicts
    TO fsmatrix_submitter, fsmatrix_agent;

GRANT INSERT (matrix_name, inventory, matrix, inventory_path, matrix_path, plan, priority,
              eta_seconds, split_hosts, scripts),
      UPDATE (state, ended_at) ON fsmatrix_sweeps TO fsmatrix_submitter;
GRANT USAGE ON SEQUENCE fsmatrix_sweeps_id_seq TO fsmatrix_submitter;
GRANT INSERT (sweep_id, cell_id, ord, host, address, port, params),
      UPDATE (state) ON fsmatrix_cells TO fsmatrix_submitter;
GRANT INSERT (address, port, os), UPDATE (os) ON fsmatrix_hosts TO fsmatrix_submitter;

GRANT UPDATE (state, started_at, ended_at, note) ON fsmatrix_sweeps TO fsmatrix_agent;
GRANT UPDATE (state, holder, started_at, ended_at) ON fsmatrix_cells TO fsmatrix_agent;
GRANT UPDATE ON fsmatrix_hosts TO fsmatrix_agent;
GRANT INSERT, UPDATE, DELETE ON fsmatrix_host_leases, fsmatrix_bundles, fsmatrix_runs,
                                fsmatrix_matrix_reports, fsmatrix_comparisons
    TO fsmatrix_agent;

ALTER TABLE fsmatrix_sweeps ENABLE ROW LEVEL SECURITY;
ALTER TABLE fsmatrix_cells ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS fsmatrix_read ON fsmatrix_sweeps;
DROP POLICY IF EXISTS fsmatrix_submit ON fsmatrix_sweeps;
DROP POLICY IF EXISTS fsmatrix_cancel_own ON fsmatrix_sweeps;
DROP POLICY IF EXISTS fsmatrix_agent_runs ON fsmatrix_sweeps;
DROP POLICY IF EXISTS fsmatrix_read ON fsmatrix_cells;
DROP POLICY IF EXISTS fsmatrix_submit ON fsmatrix_cells;
DROP POLICY IF EXISTS fsmatrix_cancel_own ON fsmatrix_cells;
DROP POLICY IF EXISTS fsmatrix_agent_runs ON fsmatrix_cells;
CREATE POLICY fsmatrix_read ON fsmatrix_sweeps FOR SELECT
    TO fsmatrix_submitter, fsmatrix_agent USING (true);
CREATE POLICY fsmatrix_submit ON fsmatrix_sweeps FOR INSERT
    TO fsmatrix_submitter WITH CHECK (submitted_by = session_user AND state = 'queued');
CREATE POLICY fsmatrix_cancel_own ON fsmatrix_sweeps FOR UPDATE TO fsmatrix_submitter
    USING (submitted_by = session_user) WITH CHECK (state = 'cancelled');
CREATE POLICY fsmatrix_agent_runs ON fsmatrix_sweeps FOR UPDATE
    TO fsmatrix_agent USING (true);
CREATE POLICY fsmatrix_read ON fsmatrix_cells FOR SELECT
    TO fsmatrix_submitter, fsmatrix_agent USING (true);
CREATE POLICY fsmatrix_submit ON fsmatrix_cells FOR INSERT TO fsmatrix_submitter
    WITH CHECK (EXISTS (SELECT 1 FROM fsmatrix_sweeps s WHERE s.id = sweep_id
                        AND s.submitted_by = session_user AND s.state = 'queued'));
CREATE POLICY fsmatrix_cancel_own ON fsmatrix_cells FOR UPDATE TO fsmatrix_submitter
    USING (EXISTS (SELECT 1 FROM fsmatrix_sweeps s WHERE s.id = sweep_id
                   AND s.submitted_by = session_user))
    WITH CHECK (state = 'cancelled');
CREATE POLICY fsmatrix_agent_runs ON fsmatrix_cells FOR UPDATE
    TO fsmatrix_agent USING (true);
"#;

/// Create the submitter's and the agent's roles and their rights
/// ([`ROLES`]), in one transaction; the schema must be current.
pub async fn init_roles(client: &mut tokio_postgres::Client) -> Result<(), DbError> {
    require_current(client).await?;
    let tx = client
        .transaction()
        .await
        .map_err(DbError::query("begin setting up the roles"))?;
    tx.execute("SELECT pg_advisory_xact_lock(7380468452413747832)", &[])
        .await
        .map_err(DbError::query("take the migration lock"))?;
    tx.batch_execute(ROLES).await.map_err(DbError::query(
        "create the roles fsmatrix_submitter and fsmatrix_agent",
    ))?;
    tx.commit()
        .await
        .map_err(DbError::query("commit the roles"))
}

/// The schema version this fsmatrix writes.
pub fn current() -> i32 {
    MIGRATIONS.len() as i32
}

/// The version a database is at (0: no fsmatrix schema).
pub async fn version(client: &tokio_postgres::Client) -> Result<i32, DbError> {
    let exists: bool = client
        .query_one("SELECT to_regclass('fsmatrix_schema') IS NOT NULL", &[])
        .await
        .map_err(DbError::query("read the schema version"))?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let v: Option<i32> = client
        .query_one("SELECT max(version) FROM fsmatrix_schema", &[])
        .await
        .map_err(DbError::query("read the schema version"))?
        .get(0);
    Ok(v.unwrap_or(0))
}

/// Create or migrate the schema; returns (version before, version after).
pub async fn init(client: &mut tokio_postgres::Client) -> Result<(i32, i32), DbError> {
    let tx = client
        .transaction()
        .await
        .map_err(DbError::query("begin the migration"))?;
    // One migrator at a time (the key: "fsmatrix" as bytes).
    tx.execute("SELECT pg_advisory_xact_lock(7380468452413747832)", &[])
        .await
        .map_err(DbError::query("take the migration lock"))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS fsmatrix_schema (
             version    integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now(),
             by_version text NOT NULL
         )",
    )
    .await
    .map_err(DbError::query("create fsmatrix_schema"))?;
    let before: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM fsmatrix_schema", &[])
        .await
        .map_err(DbError::query("read the schema version"))?
        .get(0);
    if before > current() {
        return Err(DbError::Schema(format!(
            "the database's schema is version {before}, newer than this fsmatrix's {}: \
             use a newer fsmatrix",
            current()
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(before as usize) {
        let to = i as i32 + 1;
        tx.batch_execute(sql)
            .await
            .map_err(DbError::query(&format!(
                "migrate the schema to version {to}"
            )))?;
        tx.execute(
            "INSERT INTO fsmatrix_schema (version, by_version) VALUES ($1, $2)",
            &[&to, &env!("CARGO_PKG_VERSION")],
        )
        .await
        .map_err(DbError::query("record the schema version"))?;
    }
    if before < 4 {
        // Rows published before version 4: the same Rust that fills them
        // in at publish time, in the migration's transaction.
        super::verdicts::backfill(&tx).await?;
    } else if before < 5 {
        // Comparisons stored before decided verdicts: computed again.
        super::verdicts::refresh_all(&tx).await?;
    }
    tx.commit()
        .await
        .map_err(DbError::query("commit the migration"))?;
    Ok((before, current()))
}

/// Refuse to work on a database whose schema is not this fsmatrix's.
pub async fn require_current(client: &tokio_postgres::Client) -> Result<(), DbError> {
    let v = version(client).await?;
    if v == current() {
        return Ok(());
    }
    Err(DbError::Schema(if v < current() {
        format!(
            "the database's schema is version {v}, this fsmatrix needs {}: run `fsmatrix db init`",
            current()
        )
    } else {
        format!(
            "the database's schema is version {v}, newer than this fsmatrix's {}: use a newer fsmatrix",
            current()
        )
    }))
}
