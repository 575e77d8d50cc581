//! Progress display: one bar per host (cell i of N, current step, time left
//! from the plan) and a total, on a terminal; one plain line per event
//! otherwise (CI logs, pipes), because indicatif prints nothing there.
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::events::{Outcome, RunEvent};
use super::verb::Step;
use crate::text::hms;

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
    fn finish(&mut self) {}
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
        Display::Json => Box::new(JsonLines::new(std::io::stdout(), total_cells, bundle)),
        Display::Quiet => Box::new(Quiet(std::io::stderr())),
        Display::Auto if std::io::stderr().is_terminal() => Box::new(Bars::new(total_cells)),
        Display::Auto => Box::new(Lines::new(std::io::stderr())),
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
    left: Duration,
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
                left: Duration::ZERO,
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
                hb.left = *eta;
                hb.bar.set_message(format!("~{} left", hms(*eta)));
            }
            RunEvent::Step { host, step, on } => {
                let step = step_text(*step, on);
                let hb = self.bar(host);
                let left = hms(hb.left);
                hb.bar.set_message(format!("{step} (~{left} left)"));
            }
            RunEvent::CellEnded {
                host,
                outcome,
                planned,
                ..
            } => {
                let hb = self.bar(host);
                hb.bar.inc(1);
                hb.left = hb.left.saturating_sub(*planned);
                if *outcome == Outcome::Failed {
                    let line = format!("{host}: a cell failed (see the bundle)");
                    self.multi.suspend(|| eprintln!("{line}"));
                }
                self.total.inc(1);
            }
            RunEvent::Note { host, message } => {
                let line = format!("{host}: {message}");
                self.multi.suspend(|| eprintln!("{line}"));
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
                hb.bar.finish_with_message(words);
            }
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
}
