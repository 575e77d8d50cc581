//! The plan as text: its summary, the order runs take, every cell.
use std::fmt::Write as _;

use super::*;

fn length_str(l: &Length) -> String {
    match l {
        Length::Seconds(s) => format_duration(Duration::from_secs(*s)),
        Length::Transactions(t) => format!("{t} tx"),
        Length::ToCompletion { estimate_secs } => {
            format!(
                "to end (~{})",
                format_duration(Duration::from_secs(*estimate_secs))
            )
        }
    }
}

/// Rows as columns padded to their widest cell (`right`: right-aligned columns).
pub fn table(rows: &[Vec<String>], right: &[usize]) -> String {
    let n = rows.first().map(|r| r.len()).unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            let pad = widths[i] - cell.chars().count();
            if i > 0 {
                line.push_str("  ");
            }
            if right.contains(&i) {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                if i + 1 < r.len() {
                    line.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The readable plan: one row per host, then dropped combinations and why.
pub fn render(p: &Plan) -> String {
    let mut out = String::new();
    let conditional = p.cells.iter().filter(|c| c.is_conditional()).count();
    let how = if p.hosts.iter().any(|h| h.guest_accel.is_some()) {
        "machines run in parallel, a physical host and its guests one after the other; the slowest machine"
    } else {
        "hosts run in parallel; the slowest host"
    };
    if conditional == 0 {
        let _ = writeln!(
            out,
            "matrix {}: {} cells on {} hosts, ETA {} ({how})",
            p.matrix,
            p.cells.len(),
            p.hosts.len(),
            format_duration(p.eta)
        );
    } else {
        let _ = writeln!(
            out,
            "matrix {}: {} cells on {} hosts, {} of them adaptive repeats that run only until the CI target is met; \
             ETA {} to {} ({how})",
            p.matrix,
            p.cells.len(),
            p.hosts.len(),
            conditional,
            format_duration(p.eta_min),
            format_duration(p.eta)
        );
    }
    out.push('\n');
    let mut rows = vec![vec![
        "HOST".to_string(),
        "OS".into(),
        "DEVICE".into(),
        "CELLS".into(),
        "ETA".into(),
        "FILESYSTEM VARIANTS".into(),
    ]];
    for h in &p.hosts {
        let variants: Vec<&str> = h.fs_variants.iter().map(|v| v.as_str()).collect();
        rows.push(vec![
            h.host.to_string(),
            h.os.as_str().into(),
            h.device.to_string(),
            h.cells.len().to_string(),
            if h.eta_min == h.eta {
                format_duration(h.eta)
            } else {
                format!("{}-{}", format_duration(h.eta_min), format_duration(h.eta))
            },
            if variants.is_empty() {
                "(none)".into()
            } else {
                variants.join(", ")
            },
        ]);
    }
    out.push_str(&table(&rows, &[3, 4]));
    out.push_str(&render_order(p));
    if !p.dropped.is_empty() {
        let _ = writeln!(
            out,
            "\ndropped ({}): the host's OS cannot run these",
            p.dropped.len()
        );
        let rows: Vec<Vec<String>> = p
            .dropped
            .iter()
            .map(|d| {
                vec![
                    format!("  {}", d.host),
                    d.filesystem.to_string(),
                    d.reason.clone(),
                ]
            })
            .collect();
        out.push_str(&table(&rows, &[]));
    }
    if p.excluded > 0 {
        let _ = writeln!(out, "\nexcluded by rules: {} cells", p.excluded);
    }
    if !p.skipped_hosts.is_empty() {
        let _ = writeln!(out, "\nhosts left out by [hosts]:");
        for s in &p.skipped_hosts {
            let _ = writeln!(out, "  {}  {}", s.host, s.reason);
        }
    }
    out
}

/// The most runs of a batch `plan` spells out (A B A B …).
const SHOWN_RUNS: usize = 48;

/// The order of the runs: nothing for sequential; otherwise what it means,
/// the seed, and per host its batches (which variant on which device and
/// port) with their run order as letters.
pub fn render_order(p: &Plan) -> String {
    let mut out = String::new();
    match p.order {
        Order::Sequential => return out,
        Order::Interleaved => {
            let _ = writeln!(
                out,
                "\norder: interleaved: per host, one variant set up on each device (its own \
                 PostgreSQL cluster and port), their runs alternated round-robin by repeat \
                 (A B A B …), so that drift hits every variant alike"
            );
        }
        Order::Random => {
            let seed = p.seed.map(|s| s.to_string()).unwrap_or_else(|| "?".into());
            let _ = writeln!(
                out,
                "\norder: random, seed {seed}{}: per host, one variant set up on each device (its \
                 own PostgreSQL cluster and port), their runs in a shuffled order (each variant's \
                 warm-ups first, its repeats in order)",
                if p.seed_drawn {
                    " (drawn now: a run draws its own and records it in the bundle; \
                     set seed = N in the matrix to run this very order)"
                } else {
                    ""
                }
            );
        }
    }
    for h in p.hosts.iter().filter(|h| !h.batches.is_empty()) {
        let _ = writeln!(out, "  {}:", h.host);
        for (i, b) in h.batches.iter().enumerate() {
            let slots: Vec<String> = b
                .slots
                .iter()
                .map(|s| {
                    format!(
                        "{} = {} on {} (port {})",
                        slot_letter(s.index),
                        s.variant,
                        s.device,
                        s.port
                    )
                })
                .collect();
            let _ = writeln!(out, "    batch {}: {}", i + 1, slots.join(", "));
            let letters: Vec<String> = b
                .runs
                .iter()
                .take(SHOWN_RUNS)
                .map(|k| slot_letter(*k).to_string())
                .collect();
            let _ = writeln!(
                out,
                "      runs: {}{} ({} runs)",
                letters.join(" "),
                if b.runs.len() > SHOWN_RUNS {
                    " …"
                } else {
                    ""
                },
                b.runs.len()
            );
        }
    }
    out
}

fn slot_letter(k: u32) -> char {
    char::from_u32(u32::from(b'A') + k.min(25)).unwrap_or('?')
}

/// Every cell in run order, one line each (for `--cells`-style listings and tests).
pub fn render_cells(p: &Plan) -> String {
    let mut rows = vec![vec![
        "ID".to_string(),
        "HOST".into(),
        "FILESYSTEM".into(),
        "WORKLOAD".into(),
        "SCALE".into(),
        "CLIENTS".into(),
        "JOBS".into(),
        "RUN".into(),
        "LENGTH".into(),
    ]];
    for c in &p.cells {
        rows.push(vec![
            c.id.clone(),
            c.host.to_string(),
            c.fs.name.to_string(),
            c.workload.name.to_string(),
            c.workload
                .scale
                .map(|s| s.to_string())
                .unwrap_or_else(|| "-".into()),
            format!("{}{}", c.clients, if c.included { "+" } else { "" }),
            c.jobs.to_string(),
            if c.warmup {
                format!("warmup {}", c.repeat)
            } else if c.is_conditional() {
                format!(
                    "#{} if CI > ±{}",
                    c.repeat,
                    c.adaptive
                        .and_then(|a| a.target_ci)
                        .map(|t| t.to_string())
                        .unwrap_or_default()
                )
            } else {
                format!("#{}", c.repeat)
            },
            length_str(&c.length),
        ]);
    }
    table(&rows, &[5, 6])
}
