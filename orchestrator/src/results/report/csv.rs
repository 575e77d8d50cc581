//! `--format csv`: one row per host × filesystem × workload × clients,
//! [`REPORT_CSV_HEADER`] first.
use super::{HostBlock, Report, Row, Table};
use crate::results::analysis::compare;
use crate::text::csv_text;

/// The columns of `--format csv`, one row per host × filesystem × workload × clients;
/// `metric` says what the ratio, p and verdict compare (tps, latency, load_time);
/// `ci_*` is the difference test's interval at the level it was decided at
/// (after the family's correction), `tost_*` the equivalence test's.
pub const REPORT_CSV_HEADER: &[&str] = &[
    "workload",
    "clients",
    "metric",
    "host",
    "filesystem",
    "fs_type",
    "n",
    "warmups_excluded",
    "tps_median",
    "tps_mean",
    "tps_min",
    "tps_max",
    "tps_sd",
    "tps_cv",
    "tps_ci95_low",
    "tps_ci95_high",
    "noisy",
    "latency_ms_median",
    "latency_ms_mean",
    "latency_ms_ci95_low",
    "latency_ms_ci95_high",
    "per_second_n",
    "per_second_tps_median",
    "per_second_tps_mean",
    "per_second_tps_cv",
    "du_on_disk_bytes",
    "du_apparent_bytes",
    "zfs_compressratio",
    "baseline",
    "ratio",
    "ratio_ci95_low",
    "ratio_ci95_high",
    "t",
    "df",
    "p_value",
    "p_adjusted",
    "ci_level",
    "ci_low",
    "ci_high",
    "margin",
    "tost_p_value",
    "tost_p_adjusted",
    "tost_ci_level",
    "tost_ci_low",
    "tost_ci_high",
    "repeats_to_decide",
    "verdict",
    "winner",
];

fn num(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map(|x| x.to_string())
        .unwrap_or_default()
}

/// CSV (RFC 4180 quoting by the `csv` crate, `\n` line ends) of the
/// report's rows, [`REPORT_CSV_HEADER`] first.
pub fn render_csv(r: &Report) -> String {
    match csv_bytes(r) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        // Writing to memory fails only on a record of another length than
        // the header's, which csv_row's type rules out; say so, not panic.
        Err(e) => format!("failed to render the report as csv: {e}\n"),
    }
}

fn csv_bytes(r: &Report) -> Result<Vec<u8>, ::csv::Error> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(REPORT_CSV_HEADER)?;
    for t in &r.tables {
        for h in &t.hosts {
            for row in &h.rows {
                w.write_record(csv_row(t, h, row))?;
            }
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// One row of [`render_csv`], in [`REPORT_CSV_HEADER`] order.
fn csv_row(t: &Table, h: &HostBlock, row: &Row) -> [String; REPORT_CSV_HEADER.len()] {
    let g = &row.stats;
    let lat = g.latency_ms.as_ref();
    let ps = g.per_second_tps.as_ref();
    let c = row.comparison.as_ref();
    let ratio = c.and_then(|c| c.ratio);
    let d = c.and_then(|c| c.difference);
    let e = c.and_then(|c| c.equivalence);
    [
        csv_text(&t.workload),
        t.clients.to_string(),
        t.metric.csv_name().to_owned(),
        csv_text(&h.host),
        csv_text(&g.key.filesystem),
        csv_text(&g.fs_type),
        g.tps.n.to_string(),
        g.warmups_excluded.to_string(),
        num(Some(g.tps.median)),
        num(Some(g.tps.mean)),
        num(Some(g.tps.min)),
        num(Some(g.tps.max)),
        num(g.tps.sd),
        num(g.tps.cv),
        num(g.tps.ci95.map(|c| c.0)),
        num(g.tps.ci95.map(|c| c.1)),
        g.noisy.to_string(),
        num(lat.map(|l| l.median)),
        num(lat.map(|l| l.mean)),
        num(lat.and_then(|l| l.ci95).map(|c| c.0)),
        num(lat.and_then(|l| l.ci95).map(|c| c.1)),
        ps.map_or("0".into(), |p| p.n.to_string()),
        num(ps.map(|p| p.median)),
        num(ps.map(|p| p.mean)),
        num(ps.and_then(|p| p.cv)),
        num(g.du_on_disk_bytes),
        num(g.du_apparent_bytes),
        num(g.zfs_compressratio),
        csv_text(
            &c.map(|c| c.baseline.clone())
                .or_else(|| h.baseline.clone())
                .unwrap_or_default(),
        ),
        num(ratio.map(|x| x.ratio)),
        num(ratio.and_then(|x| x.ci95).map(|c| c.0)),
        num(ratio.and_then(|x| x.ci95).map(|c| c.1)),
        num(d.map(|d| d.t)),
        num(d.map(|d| d.df)),
        num(d.map(|d| d.p)),
        num(d.map(|d| d.p_adjusted)),
        num(d.map(|d| d.ci.level)),
        num(d.map(|d| d.ci.low)),
        num(d.map(|d| d.ci.high)),
        num(e.map(|e| e.margin)),
        num(e.map(|e| e.p)),
        num(e.map(|e| e.p_adjusted)),
        num(e.map(|e| e.ci.level)),
        num(e.map(|e| e.ci.low)),
        num(e.map(|e| e.ci.high)),
        c.and_then(|c| c.repeats_to_decide)
            .map_or_else(String::new, |n| n.to_string()),
        c.map_or(compare::Verdict::Baseline.text(), |c| c.verdict.text())
            .to_owned(),
        (h.winner.as_deref() == Some(g.key.filesystem.as_str())).to_string(),
    ]
}
