//! `ls` on a terminal: one line per bundle in the columns that fit the
//! width, every name cleaned of what a terminal would act on.
use std::path::Path;

use super::{BundleSummary, ListStatus};
use crate::results::bundle::journal::CellTally;

/// Neutralise what a terminal would act on (names come from other people's
/// bundles).
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// `s` in at most `w` columns, cut with `…` at the end (or, `keep_end`, at
/// the start: paths and bundle names end with their time).
fn fit(s: &str, w: usize, keep_end: bool) -> String {
    let n = s.chars().count();
    if n <= w {
        return s.to_owned();
    }
    if w == 0 {
        return String::new();
    }
    if keep_end {
        let tail: String = s.chars().skip(n - (w - 1)).collect();
        format!("…{tail}")
    } else {
        let head: String = s.chars().take(w - 1).collect();
        format!("{head}…")
    }
}

/// The start as `YYYY-MM-DD HH:MM` UTC (or as written if it is not RFC 3339).
fn when_text(b: &BundleSummary) -> String {
    match b.started_at() {
        Some(t) => {
            let t = t.to_offset(time::UtcOffset::UTC);
            format!(
                "{:04}-{:02}-{:02} {:02}:{:02}",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute()
            )
        }
        None => b.started.as_deref().map_or("-".into(), clean),
    }
}

/// `140K`, `3.0G`, `512B`: sizes as `ls -sh` writes them (binary units,
/// one decimal below 10).
pub fn short_size(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "K", "M", "G", "T", "P"];
    let mut x = b as f64;
    let mut u = 0;
    while x >= 1024.0 && u < UNITS.len() - 1 {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b}B")
    } else if x < 9.95 {
        format!("{x:.1}{}", UNITS[u])
    } else {
        format!("{:.0}{}", x.round(), UNITS[u])
    }
}

/// A column of the table.
struct Column {
    header: &'static str,
    right: bool,
    /// The narrowest it is cut to before a column cut later is touched
    /// (`None`: never cut).
    min: Option<usize>,
    /// A cut keeps the end (paths and bundle names end with their time).
    keep_end: bool,
    /// Left out when no row has a value (`-` in every row).
    optional: bool,
}

const fn col(header: &'static str, right: bool, min: Option<usize>) -> Column {
    Column {
        header,
        right,
        min,
        keep_end: false,
        optional: false,
    }
}

/// The table's columns; BUNDLE last, so that `grep` finds a row's path.
const COLUMNS: [Column; 10] = [
    col("STARTED (UTC)", false, None),
    col("STATUS", false, Some(10)),
    col("DONE", true, None),
    col("FAILED", true, None),
    col("SIZE", true, None),
    col("MATRIX", false, Some(6)),
    col("HOSTS", false, Some(5)),
    Column {
        optional: true,
        ..col("SIGNER", false, Some(9))
    },
    Column {
        optional: true,
        keep_end: true,
        ..col("RERUN OF", false, Some(8))
    },
    Column {
        keep_end: true,
        ..col("BUNDLE", false, Some(10))
    },
];

/// Which columns are cut first when the table is too wide: what re-ran,
/// the signer, the matrix (a bundle's name starts with it), the hosts, the
/// status, the bundle last.
const CUT_ORDER: [usize; 6] = [8, 7, 5, 6, 1, 9];

fn row(b: &BundleSummary, under: &Path) -> [String; 10] {
    let opt = |o: &Option<String>| o.as_deref().map_or("-".into(), clean);
    let count =
        |f: fn(&CellTally) -> u64| b.tally.as_ref().map_or("?".into(), |t| f(t).to_string());
    let signer = match (&b.signer, b.signed) {
        // The fingerprint without its `SHA256:`, cut to fit.
        (Some(fp), _) => clean(fp.strip_prefix("SHA256:").unwrap_or(fp)),
        (None, true) => "unreadable".into(),
        (None, false) => "-".into(),
    };
    // Under the folder listed, as `find` would name it relative to it.
    let path = match b.path.strip_prefix(under) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel,
        _ => &b.path,
    };
    [
        when_text(b),
        // Why is said in full beside the table (the CLI) and in `--json`.
        match &b.status {
            ListStatus::Unreadable(_) => "unreadable".into(),
            s => s.text(),
        },
        count(|t| t.done),
        count(|t| t.failed),
        short_size(b.disk_bytes),
        opt(&b.matrix),
        if b.hosts.is_empty() {
            "-".into()
        } else {
            clean(&b.hosts.join(","))
        },
        signer,
        opt(&b.rerun_of),
        clean(&path.to_string_lossy()),
    ]
}

/// The bundles listed under `under` as a table of at most `width` columns:
/// paths relative to `under`; `unreadable` without its why; SIGNER (the key's SHA256 fingerprint) and
/// RERUN OF only when some bundle has one; when too wide, cells are cut
/// (with `…`) column by column in `CUT_ORDER`, first down to the header's
/// width, then further if nothing else fits.  `--json` has every value in
/// full.
pub fn render_table(bundles: &[BundleSummary], under: &Path, width: usize) -> String {
    let rows: Vec<[String; 10]> = bundles.iter().map(|b| row(b, under)).collect();
    let shown: Vec<usize> = (0..COLUMNS.len())
        .filter(|&i| !COLUMNS[i].optional || rows.iter().any(|r| r[i] != "-"))
        .collect();
    let mut widths: Vec<usize> = (0..COLUMNS.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([COLUMNS[i].header.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let total = |w: &[usize]| shown.iter().map(|&i| w[i]).sum::<usize>() + 2 * (shown.len() - 1);
    for floor in [None, Some(3)] {
        for &i in CUT_ORDER.iter().filter(|i| shown.contains(i)) {
            let Some(min) = floor.or(COLUMNS[i].min) else {
                continue;
            };
            let excess = total(&widths).saturating_sub(width);
            widths[i] -= excess.min(widths[i].saturating_sub(min));
        }
    }
    let mut out = String::new();
    let header: [String; 10] = COLUMNS.map(|c| c.header.to_string());
    for r in std::iter::once(&header).chain(rows.iter()) {
        let mut line = String::new();
        for (n, &i) in shown.iter().enumerate() {
            let c = &COLUMNS[i];
            let cell = fit(&r[i], widths[i], c.keep_end);
            let pad = widths[i].saturating_sub(cell.chars().count());
            if n > 0 {
                line.push_str("  ");
            }
            if c.right {
                line.push_str(&" ".repeat(pad));
                line.push_str(&cell);
            } else {
                line.push_str(&cell);
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
