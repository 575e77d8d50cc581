//! A workload on a variant that is set up, and each of its cells: the data
//! loaded once, sizes read, then every run (drop caches, the load
//! generator's run, its output measured and recorded).
use super::*;
use crate::config::values::Label;

impl<R: Remote> Worker<'_, R> {
    pub(super) async fn run_workload(
        &self,
        cells: &[&Cell],
        st: &mut FsState,
        tally: &mut HostTally,
    ) {
        let first = cells[0];
        let started = now_rfc3339();
        if self.cancelled() {
            self.sink
                .record_not_run(cells, "interrupted before it started", tally);
            return;
        }
        let ws = match self.prepare_workload(first, st).await {
            Ok(ws) => ws,
            Err(e) => {
                for c in cells {
                    self.record_failed(c, &e, &started, None, None, st, "", tally);
                }
                return;
            }
        };
        for c in cells {
            self.cell_turn(c, st, &ws, tally).await;
        }
    }

    /// One cell's turn on a set-up variant with its workload loaded: run
    /// it, unless interrupted, the variant hung, or adaptive repeats do not
    /// need it.
    pub(super) async fn cell_turn(
        &self,
        c: &Cell,
        st: &mut FsState,
        ws: &WorkloadState,
        tally: &mut HostTally,
    ) {
        if self.cancelled() {
            self.sink
                .record_not_run(&[c], "interrupted before it started", tally);
            return;
        }
        if st.hung {
            self.sink.record_not_run(&[c], AFTER_HANG, tally);
            return;
        }
        if let Some(why) = self.counted.not_needed(c) {
            self.sink.record_not_needed(c, &why, tally);
            return;
        }
        // Its end is the cell's record (the sink's ETA sees it there).
        self.work_started(Work::Run { cell: c.id.clone() });
        if let Some(v) = self.run_cell(c, st, ws, tally).await {
            self.counted.add(c, v);
        }
        if let Some(msg) = self.counted.short_of_target(c) {
            self.note(msg);
        }
    }

    /// A workload's shared start: upload its script, load its data (once,
    /// then every cell measures against it, unless each run loads its own),
    /// and measure the sizes.
    pub(super) async fn prepare_workload(
        &self,
        c: &Cell,
        st: &mut FsState,
    ) -> Result<WorkloadState, StepError> {
        let file = workload_file(&self.paths, &c.workload.kind);
        if let Some((path, content)) = &file {
            self.remote
                .upload_verified(path, content.as_bytes(), 0o644)
                .await
                .map_err(|e| StepError::remote(Step::UploadWorkload, &e))?;
        }
        // A generator whose run loads the data (a SQL script): the sizes
        // are measured after each run (run_cell), not of the empty database.
        let (init, sizes) = if generator_of(c).loads_in_run() {
            (None, None)
        } else {
            let work = Work::Load {
                variant: c.fs.name.as_str().to_string(),
                workload: c.workload.name.as_str().to_string(),
            };
            self.work_started(work.clone());
            self.step(Verb::Load, work.on());
            let init = self.load(c, st).await;
            // The sizes (a flush first) are part of what a load costs.
            let sizes = match &init {
                Ok(_) => self.sizes(c, &mut st.log).await,
                Err(_) => None,
            };
            self.work_ended(work, init.is_ok());
            (init?, sizes)
        };
        Ok(WorkloadState {
            init,
            sizes,
            script: file.map(|(p, _)| p),
        })
    }

    /// The workload's load phase (`pgbench -i`); its raw output goes to the
    /// bundle.
    pub(super) async fn load(
        &self,
        c: &Cell,
        st: &mut FsState,
    ) -> Result<Option<InitTimings>, StepError> {
        let scale = resolve_scale(c.workload.scale, st.device_bytes)
            .map_err(|e| StepError::scale(Verb::Load, &e))?;
        let out = self.paths.load_out(c);
        let (kv, _) = self
            .call_within(
                &self.calls().generator(&generator_of(c).load(scale), &out),
                Verb::Load.timeout(),
                &mut st.log,
            )
            .await?;
        let mut left = self.limits.cell;
        let whose = format!(
            "the load of {} on {}",
            c.workload.name.as_str(),
            c.fs.name.as_str()
        );
        let (stdout, stderr) = self.fetch_output(&out, &mut left, &whose).await?;
        let rel = format!(
            "hosts/{}/{}/{}",
            self.host.name.as_str(),
            c.fs.name.as_str(),
            c.workload.name.as_str()
        );
        let _ = self.sink.write(&format!("{rel}/load.out"), &stdout);
        let _ = self.sink.write(&format!("{rel}/load.err"), &stderr);
        let status = kv.get("status").and_then(|s| s.parse::<i32>().ok());
        let stderr = String::from_utf8_lossy(&stderr);
        match generator_of(c).measure_load(&String::from_utf8_lossy(&stdout), &stderr) {
            Some(t) if status == Some(0) => Ok(Some(t)),
            _ => Err(StepError {
                step: Step::Verb(Verb::Load),
                exit_status: status,
                message: format!("{}{}", device_full_note(&stderr), tail_lines(&stderr, 15)),
                timed_out: false,
                interrupted: false,
            }),
        }
    }

    pub(super) async fn sizes(&self, c: &Cell, log: &mut String) -> Option<Sizes> {
        let kv = self.call(&self.calls().sizes(c), log).await.ok()?;
        let db = counters::database_size(self.remote, &self.paths.socket())
            .await
            .ok();
        Some(Sizes {
            du_on_disk_bytes: kv.u64("du_bytes"),
            du_apparent_bytes: kv.u64("du_apparent_bytes"),
            df_used_bytes: kv.u64("df_used_bytes"),
            zfs_compressratio: kv.f64("zfs_compressratio"),
            zfs_logicalused_bytes: kv.u64("zfs_logicalused_bytes"),
            zfs_used_bytes: kv.u64("zfs_used_bytes"),
            zfs_referenced_bytes: kv.u64("zfs_referenced_bytes"),
            btrfs_used_bytes: kv.u64("btrfs_used_bytes"),
            btrfs_data_used_bytes: kv.u64("btrfs_data_used_bytes"),
            btrfs_global_reserve_bytes: kv.u64("btrfs_global_reserve_bytes"),
            pg_database_bytes: db,
            flush_method: kv.get("flush").map(str::to_owned),
            flush_wait_s: kv.f64("flush_wait_s"),
            flush_settled: kv.get("flush_settled").map(|v| v == "yes"),
        })
    }

    /// One cell: run it, measure it, record it.  When done, its value of
    /// the metric it is compared on (what adaptive repeats count).
    pub(super) async fn run_cell(
        &self,
        c: &Cell,
        st: &mut FsState,
        ws: &WorkloadState,
        tally: &mut HostTally,
    ) -> Option<f64> {
        let started = now_rfc3339();
        let mut files: Vec<(String, Vec<u8>)> = Vec::new();
        let mut log = String::new();
        let raw = match self.execute_run(c, ws, &mut files, &mut log).await {
            Ok(raw) => raw,
            Err(e) => {
                if e.timed_out && e.step == Step::Verb(Verb::Run) {
                    self.note(format!(
                        "{} on {}: a run timed out; the variant's other cells are not run",
                        c.id,
                        c.fs.name.as_str()
                    ));
                    st.hung = true;
                }
                let (sizes, init) = (ws.sizes.clone(), ws.init.clone());
                self.record_failed(c, &e, &started, sizes, init, st, &log, tally);
                return None;
            }
        };
        let stdout = String::from_utf8_lossy(&raw.stdout);
        let stderr = String::from_utf8_lossy(&raw.stderr);
        let generator = generator_of(c);
        let measured = generator.measure(&stdout, &stderr, raw.status, raw.wall_ms, c.length);
        let measured = match c.workload.latency_log {
            Some(rate) => with_latency_log(measured, &raw.txlogs, rate.fraction()),
            None => measured,
        };
        files.extend(measured.files);
        // A run that is the data load: the sizes are those after it.
        let sizes = if generator.loads_in_run() && raw.status == Some(0) {
            let sizes = self.sizes(c, &mut log).await;
            if let Some(s) = &sizes {
                files.push(("sizes.json".into(), json_pretty_bytes(s)));
            }
            sizes
        } else {
            ws.sizes.clone()
        };
        files.push(("commands.log".into(), log.into_bytes()));
        let status = match measured.measures {
            Ok(run) => CellStatus::Done { run },
            Err(why) => CellStatus::Failed {
                step: Verb::Run.name().into(),
                exit_status: raw.status,
                stderr_tail: format!(
                    "{}{why}\n{}",
                    device_full_note(&stderr),
                    tail_lines(&stderr, 10)
                )
                .trim_end()
                .to_string(),
            },
        };
        let result = CellResult {
            schema: RESULT_SCHEMA,
            cell_id: c.id.clone(),
            params: c.params(),
            status,
            started: Some(started),
            ended: Some(now_rfc3339()),
            sizes,
            init: ws.init.clone(),
            fs_settings: Some(st.settings.clone()),
        };
        self.sink.record(c, &result, &files, tally);
        Metric::compared_value(&result)
    }

    /// Drop caches, read the counters, run, collect the output, read the
    /// counters again.  The raw files go into `files`.
    pub(super) async fn execute_run(
        &self,
        c: &Cell,
        ws: &WorkloadState,
        files: &mut Vec<(String, Vec<u8>)>,
        log: &mut String,
    ) -> Result<RawRun, StepError> {
        let tag = format!(
            "{} {} c={} r={}{}",
            c.fs.name.as_str(),
            c.workload.name.as_str(),
            c.clients,
            c.repeat,
            if c.warmup { " (warm-up)" } else { "" }
        );
        let calls = self.calls();
        if c.drop_caches {
            // A cold start means the same on every OS: PostgreSQL stopped (its
            // shared buffers go, and nothing holds the filesystem), the OS
            // caches dropped (Linux drop_caches; on the BSDs, which have none,
            // an unmount or a pool export that needs the filesystem idle),
            // PostgreSQL started again.
            self.step(Verb::PgStop, &tag);
            self.call(&calls.pg_stop(), log).await?;
            self.step(Verb::DropCaches, &tag);
            let dropped = self.call(&calls.drop_caches(c), log).await;
            // Started again even when the drop failed: the cells after this
            // one need their PostgreSQL.
            self.step(Verb::PgStart, &tag);
            self.call(&calls.pg_start(), log).await?;
            let kv = dropped?;
            let mut text = kv.to_text();
            text.push_str("postgres=restarted\n");
            files.push(("drop-caches.txt".into(), text.into_bytes()));
        }
        let settings: Vec<String> = c
            .pg_settings
            .iter()
            .map(|s| s.name.as_str().to_string())
            .collect();
        let before = counters::snapshot(self.remote, &self.paths.socket(), &settings).await;
        self.step(Verb::Run, &tag);
        let out = self.paths.run_out(c);
        let script = ws.script.as_deref();
        let generator = generator_of(c);
        let call = calls.generator(
            &generator.run(&RunShape {
                kind: &c.workload.kind,
                clients: c.clients,
                jobs: c.jobs,
                length: c.length,
                rate: c.workload.rate,
                latency_limit_ms: c.workload.latency_limit_ms,
                latency_log: c.workload.latency_log,
                per_statement: c.workload.per_statement,
                progress: c.progress,
                script,
            }),
            &out,
        );
        let live = tps_events(
            self.sink.events.clone(),
            self.host_name(),
            c.id.clone(),
            generator,
        );
        let (kv, _) = self
            .call_streaming(&call, run_timeout(c.length, c.run_timeout), log, Some(live))
            .await?;
        // Everything fetched for the cell shares one bound.
        let mut left = self.limits.cell;
        let whose = format!("cell {}", c.id);
        let (stdout, stderr) = self.fetch_output(&out, &mut left, &whose).await?;
        // The per-transaction logs (gzipped by the script), each removed
        // from the host once fetched: they can be large.
        let mut txlogs = Vec::new();
        for (_, path) in kv.0.iter().filter(|(k, _)| k == "txlog") {
            // The host names the file, and the name becomes a path in the
            // bundle: checked first by the matrix's rule for names, so that
            // a bad one fails this cell, saying so, and nothing else.
            let name = path.rsplit('/').next().unwrap_or(path);
            let name = Label::new(name)
                .map_err(|e| {
                    StepError::new(
                        Step::Collect,
                        format!(
                            "{} named a transaction log the bundle cannot store: {e}; not fetched",
                            self.host.name.as_str()
                        ),
                    )
                })?
                .as_str()
                .to_string();
            let bytes = self
                .fetch_within(calls.cat_remove(path), &mut left, &whose)
                .await?;
            files.push((format!("txlog/{name}"), bytes.clone()));
            txlogs.push((name, bytes));
        }
        let after = counters::snapshot(self.remote, &self.paths.socket(), &settings).await;
        files.push(("run.out".into(), stdout.clone()));
        files.push(("run.err".into(), stderr.clone()));
        files.push(("pgstats.json".into(), counters::report(&before, &after)));
        if let Some(s) = &ws.sizes {
            files.push(("sizes.json".into(), json_pretty_bytes(s)));
        }
        Ok(RawRun {
            status: kv.get("status").and_then(|s| s.parse::<i32>().ok()),
            wall_ms: kv.f64("elapsed_ms"),
            stdout,
            stderr,
            txlogs,
        })
    }
}
