//! Progress display: one bar per host and a total, on a terminal; one plain
//! line per event otherwise (CI logs, pipes), because indicatif prints
//! nothing there.  A host's bar shows cell i of N, the step under way, the
//! time since the host started, the time left as the sweep's ETA learns it
//! (counting down between estimates, with how sure it is) and, during a
//! run, pgbench's tps of the last second.
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::events::{Outcome, RunEvent};
use super::verb::Step;
use crate::eta::{Basis, Estimate};
use crate::text::{hms, plus_minus};

/// `make-fs ext4`, `teardown`.
fn step_text(step: Step, on: &str) -> String {
    if on.is_empty() {
        step.to_string()
    } else {
        format!("{step} {on}")
    }
}

pub trait Reporter: Send {
    fn report(&mut self, event: &RunEvent);
    /// Called about once a second: a display that counts down redraws.
    fn tick(&mut self) {}
    fn finish(&mut self) {}
}

/// "~1m20s left ±8s", from an estimate made `since` ago; the defaults'
/// guess says so instead of a ± it cannot give.
pub fn left_text(e: &Estimate, since: Duration) -> String {
    let left = e.remaining().saturating_sub(since);
    match e.basis {
        Basis::Plan => format!("~{} left (defaults)", hms(left)),
        _ => format!("~{} left {}", hms(left), plus_minus(e.plus_minus())),
    }
}

/// How a sweep shows its progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Display {
    /// Bars on a terminal, one line per event elsewhere (stderr).
    #[default]
    Auto,
    /// One JSON object per line on stdout (`--json`), for CI logs and tools.
    Json,
    /// Nothing but notes and failures (`-q`).
    Quiet,
}

/// The reporter for `display`; `bundle` is named in the JSON stream's first
/// object.
pub fn reporter(
    total_cells: usize,
    display: Display,
    bundle: &std::path::Path,
) -> Box<dyn Reporter> {
    match display {
        Display::Json => Box::new(JsonLines::new(crate::stdio::Stdout, total_cells, bundle)),
        Display::Quiet => Box::new(Quiet(crate::stdio::Stderr)),
        Display::Auto if std::io::stderr().is_terminal() => Box::new(Bars::new(total_cells)),
        Display::Auto => Box::new(Lines::new(crate::stdio::Stderr)),
    }
}

/// `--json`: `{"event":"sweep_started",…}`, then every [`RunEvent`] as it
/// is serialized (`host_started`, `step`, `cell_ended`, `note`,
/// `host_finished`), one object per line, flushed line by line.
pub struct JsonLines<W: Write + Send> {
    out: W,
}

impl<W: Write + Send> JsonLines<W> {
    pub fn new(mut out: W, total_cells: usize, bundle: &std::path::Path) -> Self {
        let first = serde_json::json!({
            "event": "sweep_started",
            "bundle": bundle.display().to_string(),
            "cells": total_cells,
        });
        let _ = writeln!(out, "{first}");
        let _ = out.flush();
        JsonLines { out }
    }
}

impl<W: Write + Send> Reporter for JsonLines<W> {
    fn report(&mut self, event: &RunEvent) {
        if let Ok(line) = serde_json::to_string(event) {
            // A closed pipe must not stop a sweep.
            let _ = writeln!(self.out, "{line}");
            let _ = self.out.flush();
        }
    }
}

/// `-q`: only what needs a person (notes, failed cells), as lines.
pub struct Quiet<W: Write + Send>(W);

impl<W: Write + Send> Reporter for Quiet<W> {
    fn report(&mut self, event: &RunEvent) {
        let line = match event {
            RunEvent::Note { host, message } => format!("{host}: {message}"),
            RunEvent::CellEnded {
                host,
                cell,
                outcome: Outcome::Failed,
                ..
            } => format!("{host}: cell {cell} FAILED"),
            _ => return,
        };
        let _ = writeln!(self.0, "{line}");
    }
}

/// One line per event, for logs.
pub struct Lines<W: Write + Send> {
    out: W,
}

impl<W: Write + Send> Lines<W> {
    pub fn new(out: W) -> Self {
        Lines { out }
    }
}

impl<W: Write + Send> Reporter for Lines<W> {
    fn report(&mut self, event: &RunEvent) {
        let line = match event {
            RunEvent::HostStarted { host, cells, eta } => {
                format!("{host}: start, {cells} cells, planned {}", hms(*eta))
            }
            RunEvent::Step { host, step, on } => format!("{host}: {}", step_text(*step, on)),
            RunEvent::CellEnded {
                host,
                cell,
                outcome,
                ..
            } => format!("{host}: cell {cell} {}", outcome_word(*outcome)),
            RunEvent::Note { host, message } => format!("{host}: {message}"),
            RunEvent::HostFinished {
                host,
                done,
                failed,
                not_run,
                not_needed,
            } => format!(
                "{host}: finished: {}",
                tally_words(*done, *failed, *not_run, *not_needed)
            ),
            // A log gets the ETA as it is re-estimated (at each end of
            // work), not the countdown or the tps of every second.
            RunEvent::Eta {
                host,
                estimate,
                elapsed_s,
                ..
            } if estimate.remaining > 0.0 => format!(
                "{host}: {} after {} (from {})",
                left_text(estimate, Duration::ZERO),
                hms(Duration::from_secs_f64(*elapsed_s)),
                estimate.basis.word()
            ),
            RunEvent::Eta { .. } | RunEvent::Tps { .. } => return,
        };
        // A log sink that fails (closed pipe) must not stop a sweep.
        let _ = writeln!(self.out, "{line}");
    }
}

fn outcome_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Done => "done",
        Outcome::Failed => "FAILED",
        Outcome::NotRun => "not run",
        Outcome::NotNeeded => "not needed (CI target met)",
    }
}

/// "3 done, 0 failed, 0 not run" (and ", 2 not needed" when adaptive
/// repeats stopped early).
pub fn tally_words(done: usize, failed: usize, not_run: usize, not_needed: usize) -> String {
    let mut s = format!("{done} done, {failed} failed, {not_run} not run");
    if not_needed > 0 {
        s.push_str(&format!(", {not_needed} not needed"));
    }
    s
}

struct HostBar {
    bar: ProgressBar,
    started: Instant,
    step: String,
    /// The last estimate and when it came.
    eta: Option<(Estimate, Instant)>,
    /// The last second's tps of the run under way and when it came.
    tps: Option<(f64, Instant)>,
    finished: bool,
}

impl HostBar {
    /// "run ext4 sel c=4 r=2 · 1m02s · ~3m10s left ±12s · 812 tps"
    fn message(&self, now: Instant) -> String {
        let mut m = format!(
            "{} · {}",
            self.step,
            hms(now.saturating_duration_since(self.started))
        );
        if let Some((e, at)) = &self.eta {
            m.push_str(" · ");
            m.push_str(&left_text(e, now.saturating_duration_since(*at)));
        }
        if let Some((tps, at)) = self.tps {
            if now.saturating_duration_since(at) < Duration::from_secs(3) {
                m.push_str(&format!(" · {tps:.0} tps"));
            }
        }
        m
    }

    fn redraw(&self) {
        if !self.finished {
            self.bar.set_message(self.message(Instant::now()));
        }
    }
}

/// indicatif bars: one per host and a total.
pub struct Bars {
    multi: MultiProgress,
    total: ProgressBar,
    hosts: HashMap<String, HostBar>,
}

impl Bars {
    pub fn new(total_cells: usize) -> Self {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let total = multi.add(ProgressBar::new(total_cells as u64));
        total.set_style(
            ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} cells {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        total.set_prefix("total");
        Bars {
            multi,
            total,
            hosts: HashMap::new(),
        }
    }

    fn bar(&mut self, host: &str) -> &mut HostBar {
        let multi = &self.multi;
        let total = &self.total;
        self.hosts.entry(host.to_string()).or_insert_with(|| {
            let bar = multi.insert_before(total, ProgressBar::new(0));
            bar.set_style(
                ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar.set_prefix(host.to_string());
            HostBar {
                bar,
                started: Instant::now(),
                step: "starting".into(),
                eta: None,
                tps: None,
                finished: false,
            }
        })
    }
}

impl Reporter for Bars {
    fn report(&mut self, event: &RunEvent) {
        match event {
            RunEvent::HostStarted { host, cells, eta } => {
                let hb = self.bar(host);
                hb.bar.set_length(*cells as u64);
                // The first estimate, until work ends and an `eta` event
                // brings a learned one.
                let first = Estimate {
                    remaining: eta.as_secs_f64(),
                    plus_minus: eta.as_secs_f64(),
                    basis: Basis::Plan,
                    observed: 0,
                };
                hb.eta = Some((first, Instant::now()));
                hb.redraw();
            }
            RunEvent::Step { host, step, on } => {
                let hb = self.bar(host);
                hb.step = step_text(*step, on);
                hb.tps = None;
                hb.redraw();
            }
            RunEvent::Eta { host, estimate, .. } => {
                let hb = self.bar(host);
                hb.eta = Some((*estimate, Instant::now()));
                hb.redraw();
            }
            RunEvent::Tps { host, tps, .. } => {
                let hb = self.bar(host);
                hb.tps = Some((*tps, Instant::now()));
                hb.redraw();
            }
            RunEvent::CellEnded { host, outcome, .. } => {
                let hb = self.bar(host);
                hb.bar.inc(1);
                if *outcome == Outcome::Failed {
                    let line = format!("{host}: a cell failed (see the bundle)");
                    self.multi.suspend(|| crate::stdio::errln!("{line}"));
                }
                self.total.inc(1);
            }
            RunEvent::Note { host, message } => {
                let line = format!("{host}: {message}");
                self.multi.suspend(|| crate::stdio::errln!("{line}"));
            }
            RunEvent::HostFinished {
                host,
                done,
                failed,
                not_run,
                not_needed,
            } => {
                let words = tally_words(*done, *failed, *not_run, *not_needed);
                let hb = self.bar(host);
                let took = hms(hb.started.elapsed());
                hb.finished = true;
                hb.bar.finish_with_message(format!("{words} in {took}"));
            }
        }
    }

    fn tick(&mut self) {
        for hb in self.hosts.values() {
            hb.redraw();
        }
    }

    fn finish(&mut self) {
        self.total.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_say_host_and_what_happened() {
        let mut buf = Vec::new();
        {
            let mut r = Lines::new(&mut buf);
            r.report(&RunEvent::HostStarted {
                host: "lab1".into(),
                cells: 4,
                eta: Duration::from_secs(3723),
            });
            r.report(&RunEvent::CellEnded {
                host: "lab1".into(),
                cell: "ab12".into(),
                outcome: Outcome::Failed,
                planned: Duration::from_secs(10),
            });
        }
        let text = String::from_utf8(buf).unwrap();
        assert_eq!(
            text,
            "lab1: start, 4 cells, planned 1h02m03s\nlab1: cell ab12 FAILED\n"
        );
    }

    fn estimate(remaining: f64, plus_minus: f64, basis: Basis) -> Estimate {
        Estimate {
            remaining,
            plus_minus,
            basis,
            observed: 3,
        }
    }

    #[test]
    fn a_log_gets_each_new_estimate_not_the_tps_of_every_second() {
        let mut buf = Vec::new();
        {
            let mut r = Lines::new(&mut buf);
            for e in [
                RunEvent::Eta {
                    host: "lab1".into(),
                    estimate: estimate(80.4, 8.2, Basis::Observed),
                    elapsed_s: 15.2,
                    at_s: 15.3,
                },
                RunEvent::Tps {
                    host: "lab1".into(),
                    cell: "ab12".into(),
                    t_s: 1.0,
                    tps: 812.0,
                    lat_ms: Some(1.2),
                },
                RunEvent::Eta {
                    host: "lab1".into(),
                    estimate: estimate(600.0, 600.0, Basis::Plan),
                    elapsed_s: 0.5,
                    at_s: 0.5,
                },
                // The host is done: nothing to say beyond "finished".
                RunEvent::Eta {
                    host: "lab1".into(),
                    estimate: estimate(0.0, 0.0, Basis::Observed),
                    elapsed_s: 90.0,
                    at_s: 90.0,
                },
            ] {
                r.report(&e);
            }
        }
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "lab1: ~1m20s left ±8s after 15s (from this sweep)\n\
             lab1: ~10m00s left (defaults) after 0s (from plan's defaults)\n"
        );
    }

    #[test]
    fn a_host_line_shows_step_elapsed_countdown_and_the_last_seconds_tps() {
        let t0 = Instant::now();
        let mut hb = HostBar {
            bar: ProgressBar::hidden(),
            started: t0,
            step: "run ext4 sel c=4 r=2".into(),
            eta: Some((
                estimate(200.0, 12.0, Basis::Observed),
                t0 + Duration::from_secs(10),
            )),
            tps: Some((812.4, t0 + Duration::from_secs(61))),
            finished: false,
        };
        let at = |s| t0 + Duration::from_secs(s);
        assert_eq!(
            hb.message(at(62)),
            "run ext4 sel c=4 r=2 · 1m02s · ~2m28s left ±12s · 812 tps"
        );
        // A tps older than 3 s is not shown: the run ended or stalls.
        assert_eq!(
            hb.message(at(65)),
            "run ext4 sel c=4 r=2 · 1m05s · ~2m25s left ±12s"
        );
        // Past the estimate the countdown stays at zero.
        hb.tps = None;
        assert_eq!(
            hb.message(at(400)),
            "run ext4 sel c=4 r=2 · 6m40s · ~0s left ±12s"
        );
    }
}
