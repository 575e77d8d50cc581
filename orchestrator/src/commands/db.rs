//! The results database's commands: `db init`, `db ls`, `db refresh`,
//! `submit`, `queue`, `cancel`, `publish`.  A database that cannot be reached is exit 2 with
//! where it was looked for (never its password); nothing is queued or
//! leased then.
use super::{
    AgentArgs, CancelArgs, CliError, CmdResult, DbArgs, DbInitArgs, DbLsArgs, DbRefreshArgs, Exit,
    PublishArgs, QueueArgs, ReportArgs, SubmitArgs,
};
use crate::db::{self, queue, DbError};

fn db_error(e: DbError) -> CliError {
    match e {
        DbError::Refused(_) | DbError::Config(_) | DbError::Connect { .. } | DbError::Schema(_) => {
            CliError::nothing_ran(e.to_string())
        }
        DbError::Query { .. } => CliError::problems(e.to_string()),
    }
}

/// Connect to `args.db` (or the environment's database).
async fn client(args: &DbArgs) -> Result<tokio_postgres::Client, CliError> {
    let target = db::resolve(args.db.as_deref(), &db::ProcessEnv).map_err(db_error)?;
    db::connect(&target).await.map_err(db_error)
}

/// Connect and check the schema is this fsmatrix's.
async fn ready(args: &DbArgs) -> Result<tokio_postgres::Client, CliError> {
    let c = client(args).await?;
    db::schema::require_current(&c).await.map_err(db_error)?;
    Ok(c)
}

pub fn init(args: &DbInitArgs) -> CmdResult {
    super::runtime()?.block_on(async {
        let mut c = client(&args.db).await?;
        let (before, after) = db::schema::init(&mut c).await.map_err(db_error)?;
        if before == after {
            crate::stdio::outln!("schema version {after}: up to date");
        } else {
            crate::stdio::outln!("schema version {before} -> {after}");
        }
        if args.roles {
            db::schema::init_roles(&mut c).await.map_err(db_error)?;
            crate::stdio::outln!(
                "roles fsmatrix_submitter and fsmatrix_agent ready: GRANT them to login roles"
            );
        }
        Ok(Exit::Success)
    })
}

/// `db ls`: the published matrices, the most recently published first.
pub fn ls(args: &DbLsArgs) -> CmdResult {
    super::runtime()?.block_on(async {
        let c = ready(&args.db).await?;
        let rows = db::verdicts::list(&c).await.map_err(db_error)?;
        if args.json {
            for r in &rows {
                crate::stdio::outln!(
                    "{}",
                    serde_json::to_string(r).expect("a matrix row serializes")
                );
            }
            return Ok(Exit::Success);
        }
        crate::stdio::outln!(
            "{:<24} {:>7} {:>5} {:>6} {:>11}  {:<20}  {:<20}",
            "MATRIX",
            "BUNDLES",
            "HOSTS",
            "CELLS",
            "COMPARISONS",
            "FIRST PUBLISHED",
            "LAST PUBLISHED"
        );
        for r in &rows {
            // Names come from other people's bundles: made safe for a terminal.
            let safe = crate::text::terminal_safe;
            crate::stdio::outln!(
                "{:<24} {:>7} {:>5} {:>6} {:>11}  {:<20}  {:<20}",
                safe(&r.matrix),
                r.bundles,
                r.hosts,
                r.cells,
                r.comparisons,
                r.first_published,
                r.last_published
            );
            if let Some(e) = &r.error {
                crate::stdio::outln!("    no comparisons: {}", safe(e));
            }
        }
        Ok(Exit::Success)
    })
}

/// `db refresh`: the stored comparisons computed again; 1 when the report
/// refused a matrix (its error is printed and stored).
pub fn refresh(args: &DbRefreshArgs) -> CmdResult {
    super::runtime()?.block_on(async {
        let mut c = ready(&args.db).await?;
        let tx = c
            .transaction()
            .await
            .map_err(|e| db_error(DbError::query("begin the refresh")(e)))?;
        let done = match &args.matrix {
            Some(m) => vec![db::verdicts::refresh(&tx, m).await.map_err(db_error)?],
            None => db::verdicts::refresh_all(&tx).await.map_err(db_error)?,
        };
        tx.commit()
            .await
            .map_err(|e| db_error(DbError::query("commit the refresh")(e)))?;
        if let (Some(m), [only]) = (&args.matrix, done.as_slice()) {
            if only.bundles == 0 {
                return Err(CliError::nothing_ran(format!(
                    "no bundle of matrix {:?} is published in this database (fsmatrix publish BUNDLE)",
                    crate::text::terminal_safe(m)
                )));
            }
        }
        let mut refused = false;
        for r in &done {
            let safe = crate::text::terminal_safe;
            match &r.error {
                None => crate::stdio::outln!(
                    "{}: {} comparisons over {} bundles",
                    safe(&r.matrix),
                    r.rows,
                    r.bundles
                ),
                Some(e) => {
                    refused = true;
                    crate::stdio::outln!("{}: no comparisons: {}", safe(&r.matrix), safe(e));
                }
            }
        }
        Ok(if refused { Exit::Problems } else { Exit::Success })
    })
}

pub fn submit(args: &SubmitArgs) -> CmdResult {
    // Validated and planned exactly as `plan` and `run` do: refused input
    // never reaches the queue.
    let (inv, m) =
        crate::config::load(&args.inventory, &args.matrix, crate::generator::script_uses)?;
    let p = crate::plan::plan(&inv, &m);
    let inputs = crate::run::snapshot::Inputs::read(&inv, &m).map_err(CliError::failed_to)?;
    // The scripts travel as content: the agent never reads a path of ours.
    let scripts = queue::SubmittedScript::of(&m);
    if let Some(s) = scripts
        .iter()
        .find(|s| std::path::Path::new(&s.path).is_absolute())
    {
        return Err(CliError::nothing_ran(format!(
            "the matrix names script {} by an absolute path: an agent plans from the scripts a \
             submission carries, beside the matrix; valid: a path relative to the matrix \
             (e.g. sql/x.sql); nothing queued",
            crate::text::terminal_safe(&s.path)
        )));
    }
    super::runtime()?.block_on(async {
        let mut c = ready(&args.db).await?;
        let id = queue::submit(
            &mut c,
            &queue::Submission {
                inventory_text: &inputs.inventory_text,
                matrix_text: &inputs.matrix_text,
                inventory_path: &inputs.inventory_path,
                matrix_path: &inputs.matrix_path,
                inventory: &inv,
                plan: &p,
                scripts: &scripts,
                priority: args.priority,
                split_hosts: m.split_hosts,
            },
        )
        .await
        .map_err(db_error)?;
        crate::stdio::errln!(
            "fsmatrix: sweep {id} queued: matrix {}, {} cells on {} hosts, ETA {}",
            p.matrix.as_str(),
            p.cells.len(),
            p.hosts.len(),
            crate::text::hms(p.eta)
        );
        crate::stdio::outln!("{id}");
        Ok(Exit::Success)
    })
}

pub fn list(args: &QueueArgs) -> CmdResult {
    super::runtime()?.block_on(async {
        let c = ready(&args.db).await?;
        let rows = queue::list(&c, args.recent).await.map_err(db_error)?;
        if args.json {
            for r in &rows {
                crate::stdio::outln!(
                    "{}",
                    serde_json::to_string(r).expect("a queue row serializes")
                );
            }
            return Ok(Exit::Success);
        }
        crate::stdio::outln!(
            "{:>6}  {:<20} {:<9} {:>4}  {:>11}  {:>8}  {:<24} LEASES",
            "ID",
            "MATRIX",
            "STATE",
            "PRIO",
            "DONE/CELLS",
            "ETA",
            "BY"
        );
        for r in &rows {
            // Other people's text (names, who, why): made safe for a terminal.
            let safe = crate::text::terminal_safe;
            crate::stdio::outln!(
                "{:>6}  {:<20} {:<9} {:>4}  {:>11}  {:>8}  {:<24} {}",
                r.id,
                safe(&r.matrix),
                r.state,
                r.priority,
                format!(
                    "{}/{}{}",
                    r.done,
                    r.cells,
                    if r.failed > 0 {
                        format!(" ({} failed)", r.failed)
                    } else {
                        String::new()
                    }
                ),
                format!(
                    "{}{}",
                    if r.eta_observed { "" } else { "~" },
                    crate::text::hms(std::time::Duration::from_secs(r.eta_seconds.max(0) as u64))
                ),
                safe(&r.submitted_by),
                if r.leases.is_empty() {
                    "-".to_string()
                } else {
                    safe(&r.leases.join(", ")).into_owned()
                }
            );
            if let Some(note) = &r.note {
                crate::stdio::outln!("        {}", safe(note));
            }
        }
        if rows.iter().any(|r| !r.eta_observed && r.eta_seconds > 0) {
            crate::stdio::outln!(
                "(~ETA: the plan's estimate; the others from the sweep's own pace)"
            );
        }
        Ok(Exit::Success)
    })
}

pub fn cancel(args: &CancelArgs) -> CmdResult {
    super::runtime()?.block_on(async {
        let mut c = ready(&args.db).await?;
        let was = queue::cancel(&mut c, args.id).await.map_err(db_error)?;
        crate::stdio::outln!("sweep {} cancelled (was {was})", args.id);
        Ok(Exit::Success)
    })
}

pub fn publish(args: &PublishArgs) -> CmdResult {
    super::runtime()?.block_on(async {
        let mut c = ready(&args.db).await?;
        let p = db::publish::publish(&mut c, &args.bundle)
            .await
            .map_err(db_error)?;
        crate::stdio::outln!(
            "{} {}: matrix {}, {} runs added, {} already there",
            if p.new_bundle {
                "published"
            } else {
                "already published"
            },
            p.sha256,
            p.matrix,
            p.runs_added,
            p.runs_known
        );
        Ok(Exit::Success)
    })
}

/// `report --db`: the published bundles the arguments select, as sources.
pub fn report_sources(args: &ReportArgs) -> Result<Vec<db::report::DbSource>, CliError> {
    let sel = match &args.matrix {
        Some(m) => db::report::Selection::Matrix(m.clone()),
        None => db::report::Selection::Sweeps(args.sweep.clone()),
    };
    let dbargs = DbArgs {
        db: match args.db.as_deref() {
            // `--db` alone: the environment's database.
            Some("") => std::env::var("FSMATRIX_DB").ok(),
            other => other.map(str::to_string),
        },
    };
    super::runtime()?.block_on(async {
        let c = ready(&dbargs).await?;
        db::report::load(&c, &sel).await.map_err(db_error)
    })
}

pub fn agent(args: &AgentArgs) -> CmdResult {
    // The operator's own inventory, validated as any inventory is.
    let registry = db::registry::load(&args.registry, args.ssh_config.as_deref())?;
    let opts = db::agent::AgentOptions {
        registry,
        out: args.out.clone(),
        idle_exit: args.idle_exit.map(std::time::Duration::from_secs),
        lease_ttl: std::time::Duration::from_secs(args.lease_ttl.max(3)),
        poll: std::time::Duration::from_secs(2),
    };
    super::runtime()?.block_on(async {
        let target = db::resolve(args.db.db.as_deref(), &db::ProcessEnv).map_err(db_error)?;
        let turns = db::agent::run(&target, &opts).await.map_err(db_error)?;
        let mut stopped = false;
        for t in &turns {
            crate::stdio::outln!(
                "sweep {}: {} cells published{}{}",
                t.sweep,
                t.published,
                t.bundle
                    .as_ref()
                    .map(|b| format!(", bundle {}", b.display()))
                    .unwrap_or_default(),
                match (&t.stopped, t.finished) {
                    (Some(why), _) => format!(", stopped: {}", crate::text::terminal_safe(why)),
                    (None, true) => ", sweep finished".to_string(),
                    (None, false) => String::new(),
                }
            );
            stopped |= t.stopped.is_some();
        }
        Ok(if stopped {
            Exit::Problems
        } else {
            Exit::Success
        })
    })
}
