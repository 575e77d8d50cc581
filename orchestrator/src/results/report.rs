//! First report: a Markdown table per workload and client count.
//!
//! Pure rendering ([`render_markdown`]) over cell records; the CLI reads
//! bundles ([`load_bundle_results`]) and prints.  Statistics beyond
//! median/min/max (CI, CV, significance) come with issue 5.
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::bundle::{read_results_jsonl, RESULTS_JSONL};
use super::model::{CellResult, CellStatus};
use super::BundleError;

/// The cell records of a bundle: `data/results.jsonl`, or, when that is
/// absent (a bundle closed before any cell finished writing it), every
/// `data/cells/*/result.json`.
pub fn load_bundle_results(dir: &Path) -> Result<Vec<CellResult>, BundleError> {
    let jsonl = dir.join("data").join(RESULTS_JSONL);
    if jsonl.is_file() {
        return read_results_jsonl(&jsonl);
    }
    let cells = dir.join("data").join("cells");
    if !dir.join("bagit.txt").is_file() {
        return Err(BundleError::NotABundle {
            path: dir.to_owned(),
            why: "it has no bagit.txt; give the bundle's top folder".into(),
        });
    }
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(&cells) else {
        return Ok(out);
    };
    let mut dirs: Vec<_> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
    dirs.sort();
    for d in dirs {
        let p = d.join("result.json");
        if !p.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&p).map_err(|e| BundleError::io("read", &p, e))?;
        let c = serde_json::from_str(&text).map_err(|e| BundleError::Results {
            path: p.clone(),
            line: e.line(),
            what: format!("not a cell result: {e}"),
        })?;
        out.push(c);
    }
    Ok(out)
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn bytes_h(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = b;
    let mut u = 0;
    while x >= 1024.0 && u < UNITS.len() - 1 {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{x:.0} B")
    } else {
        format!("{x:.1} {}", UNITS[u])
    }
}

/// Make text safe inside a Markdown table cell.
fn cell_text(s: &str) -> String {
    s.replace('|', "\\|")
        .replace(['\n', '\r'], " ")
        .trim()
        .to_owned()
}

const DASH: &str = "—";

#[derive(Default)]
struct Row<'a> {
    fs_type: &'a str,
    tps: Vec<f64>,
    lat: Vec<f64>,
    on_disk: Vec<f64>,
    apparent: Vec<f64>,
    ratio: Vec<f64>,
}

/// (host, filesystem variant) → its runs in one (workload, clients) group.
type Rows<'a> = BTreeMap<(&'a str, &'a str), Row<'a>>;

/// Render cell records as Markdown: per (workload, clients) a table with one
/// row per (host, filesystem): median tps with min–max over counted repeats
/// (warm-up runs excluded), median latency, median sizes.  Failed and
/// not-run cells are listed below.
pub fn render_markdown(cells: &[CellResult]) -> String {
    let mut out = String::from("# fsmatrix report\n\n");
    if cells.is_empty() {
        out.push_str("No cell results.\n");
        return out;
    }
    // (workload, clients) → (host, filesystem) → row
    let mut groups: BTreeMap<(&str, u32), Rows> = BTreeMap::new();
    let mut warmups = 0usize;
    let mut problems: Vec<&CellResult> = Vec::new();
    for c in cells {
        let p = &c.params;
        let run = match &c.status {
            CellStatus::Done { run } => run,
            _ => {
                problems.push(c);
                continue;
            }
        };
        if p.warmup {
            warmups += 1;
            continue;
        }
        let row = groups
            .entry((p.workload.as_str(), p.clients))
            .or_default()
            .entry((p.host.as_str(), p.filesystem.as_str()))
            .or_default();
        row.fs_type = &p.fs_type;
        row.tps.push(run.tps);
        row.lat.extend(run.latency_avg_ms);
        if let Some(s) = &c.sizes {
            row.on_disk.extend(s.du_on_disk_bytes.map(|b| b as f64));
            row.apparent.extend(s.du_apparent_bytes.map(|b| b as f64));
            row.ratio.extend(s.zfs_compressratio);
        }
    }
    if groups.is_empty() {
        out.push_str("No counted run finished.\n\n");
    }
    for ((workload, clients), rows) in &mut groups {
        let _ = writeln!(
            out,
            "## {} — {} client{}\n",
            cell_text(workload),
            clients,
            if *clients == 1 { "" } else { "s" }
        );
        out.push_str(
            "| host | filesystem | type | runs | median tps | tps min–max | median latency (ms) | on disk | apparent | compressratio |\n\
             |---|---|---|--:|--:|--:|--:|--:|--:|--:|\n",
        );
        for ((host, fs), row) in rows.iter_mut() {
            let n = row.tps.len();
            let min = row.tps.iter().copied().fold(f64::INFINITY, f64::min);
            let max = row.tps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let med = median(&mut row.tps).map_or(DASH.into(), |m| format!("{m:.1}"));
            let lat = median(&mut row.lat).map_or(DASH.into(), |m| format!("{m:.3}"));
            let disk = median(&mut row.on_disk).map_or(DASH.into(), bytes_h);
            let app = median(&mut row.apparent).map_or(DASH.into(), bytes_h);
            let ratio = median(&mut row.ratio).map_or(DASH.into(), |r| format!("{r:.2}x"));
            let _ = writeln!(
                out,
                "| {} | {} | {} | {n} | {med} | {min:.1}–{max:.1} | {lat} | {disk} | {app} | {ratio} |",
                cell_text(host),
                cell_text(fs),
                cell_text(row.fs_type),
            );
        }
        out.push('\n');
    }
    if warmups > 0 {
        let _ = writeln!(
            out,
            "{warmups} warm-up run{} not counted.\n",
            if warmups == 1 { "" } else { "s" }
        );
    }
    if !problems.is_empty() {
        out.push_str("## Failed and not run\n\n");
        out.push_str(
            "| cell | host | filesystem | workload | clients | repeat | status | detail |\n\
             |---|---|---|---|--:|--:|---|---|\n",
        );
        problems.sort_by(|a, b| {
            let k = |c: &CellResult| {
                let p = &c.params;
                (
                    p.host.clone(),
                    p.filesystem.clone(),
                    p.workload.clone(),
                    p.clients,
                    p.repeat,
                )
            };
            k(a).cmp(&k(b))
        });
        for c in problems {
            let p = &c.params;
            let detail = match &c.status {
                CellStatus::Failed {
                    step,
                    exit_status,
                    stderr_tail,
                } => {
                    let last = stderr_tail
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("");
                    let exit = exit_status.map_or("no exit status".into(), |e| format!("exit {e}"));
                    format!("step {step}, {exit}: {last}")
                }
                CellStatus::NotRun { reason } => reason.clone(),
                CellStatus::Done { .. } => String::new(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                cell_text(&c.cell_id),
                cell_text(&p.host),
                cell_text(&p.filesystem),
                cell_text(&p.workload),
                p.clients,
                p.repeat,
                c.status.name(),
                cell_text(&detail),
            );
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::model::*;
    use super::*;

    fn cell(
        host: &str,
        fs: &str,
        fs_type: &str,
        workload: &str,
        clients: u32,
        repeat: u32,
        status: CellStatus,
    ) -> CellResult {
        CellResult {
            schema: RESULT_SCHEMA,
            cell_id: format!("{host}-{fs}-{workload}-{clients}-{repeat}"),
            params: CellParams {
                host: host.into(),
                filesystem: fs.into(),
                fs_type: fs_type.into(),
                workload: workload.into(),
                clients,
                jobs: clients,
                repeat,
                warmup: repeat == 0,
            },
            status,
            started: None,
            ended: None,
            sizes: Some(Sizes {
                du_on_disk_bytes: Some(if fs_type == "zfs" {
                    60 << 20
                } else {
                    160 << 20
                }),
                du_apparent_bytes: Some(158 << 20),
                zfs_compressratio: (fs_type == "zfs").then_some(2.61),
                ..Sizes::default()
            }),
            init: None,
            fs_settings: None,
        }
    }

    fn done(tps: f64, lat: f64) -> CellStatus {
        CellStatus::Done {
            run: RunMeasures {
                tps,
                tps_including_connect: None,
                latency_avg_ms: Some(lat),
                latency_stddev_ms: None,
                transactions: (tps * 10.0) as u64,
                failed_transactions: Some(0),
                duration_s: 10.0,
                progress: vec![],
            },
        }
    }

    pub(crate) fn sample() -> Vec<CellResult> {
        vec![
            cell("deb1", "ext4", "ext4", "tpcb", 4, 0, done(100.0, 40.0)),
            cell("deb1", "ext4", "ext4", "tpcb", 4, 1, done(812.5, 4.92)),
            cell("deb1", "ext4", "ext4", "tpcb", 4, 2, done(790.25, 5.06)),
            cell("deb1", "ext4", "ext4", "tpcb", 4, 3, done(830.0, 4.81)),
            cell("deb1", "zfs-lz4", "zfs", "tpcb", 4, 1, done(610.0, 6.55)),
            cell("deb1", "zfs-lz4", "zfs", "tpcb", 4, 2, done(640.0, 6.25)),
            cell("deb1", "ext4", "ext4", "tpcb", 1, 1, done(301.0, 3.32)),
            cell(
                "deb1",
                "ext4",
                "ext4",
                "select-only",
                1,
                1,
                done(9120.4, 0.11),
            ),
            cell(
                "deb1",
                "xfs",
                "xfs",
                "tpcb",
                4,
                1,
                CellStatus::Failed {
                    step: "mount".into(),
                    exit_status: Some(32),
                    stderr_tail: "mount: /mnt: wrong fs type | bad option\n".into(),
                },
            ),
            cell(
                "deb2",
                "ext4",
                "ext4",
                "tpcb",
                4,
                1,
                CellStatus::NotRun {
                    reason: "host unreachable: connection refused".into(),
                },
            ),
        ]
    }

    #[test]
    fn markdown_report_snapshot() {
        insta::assert_snapshot!(render_markdown(&sample()));
    }

    #[test]
    fn median_and_warmup_exclusion() {
        let md = render_markdown(&sample());
        // ext4 tpcb 4 clients: repeats 1..3 counted, the warm-up (100 tps) not.
        assert!(
            md.contains("| deb1 | ext4 | ext4 | 3 | 812.5 | 790.2–830.0 |"),
            "{md}"
        );
        assert!(
            md.contains("| deb1 | zfs-lz4 | zfs | 2 | 625.0 | 610.0–640.0 |"),
            "{md}"
        );
        assert!(md.contains("1 warm-up run not counted."), "{md}");
        assert!(md.contains("wrong fs type \\| bad option"), "{md}");
    }

    #[test]
    fn empty_input() {
        assert!(render_markdown(&[]).contains("No cell results."));
    }
}
