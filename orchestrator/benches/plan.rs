//! Time to plan 100 hosts × a 1 000-cell matrix (100 000 cells), parse and
//! validation included.  Run with the dev profile (no release build needed):
//!   cargo bench -p fsmatrix --bench plan --profile dev
//! Prints the times and exits 1 if planning takes a second or more.
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use fsmatrix::config::{Inventory, Matrix};
use fsmatrix::plan::plan;

fn inventory(hosts: usize) -> String {
    let mut s = String::from("[defaults]\nos = \"linux\"\nidentity_file = \"/k\"\n");
    for i in 0..hosts {
        let _ = write!(
            s,
            "[[host]]\nname = \"h{i}\"\naddress = \"10.203.{}.{}\"\ndevices = [\"/dev/vdb\"]\ntags = [\"t{}\"]\n",
            i / 250,
            i % 250 + 1,
            i % 4
        );
    }
    s
}

/// 10 filesystem variants × 5 workloads × 5 client counts × 4 repeats = 1 000 cells per host.
fn matrix() -> String {
    let mut s = String::from("name = \"bench\"\nrepeats = 4\n[postgres]\nshared_buffers = \"1GB\"\nmax_connections = 300\n");
    s.push_str("[[filesystem]]\nname = \"zfs-{compression}-{recordsize}\"\ntype = \"zfs\"\nvary = { compression = [\"off\", \"on\"], recordsize = [\"8k\", \"16k\"] }\n");
    s.push_str("[[filesystem]]\nname = \"ext4-{commit}\"\ntype = \"ext4\"\nmount_options = [\"noatime\", \"commit={commit}\"]\nvary = { commit = [\"5\", \"30\", \"60\"] }\n");
    s.push_str("[[filesystem]]\nname = \"xfs\"\ntype = \"xfs\"\n[[filesystem]]\nname = \"btrfs\"\ntype = \"btrfs\"\n[[filesystem]]\nname = \"ext3\"\ntype = \"ext3\"\n");
    for (i, b) in [
        "tpcb-like",
        "simple-update",
        "select-only",
        "tpcb-like",
        "select-only",
    ]
    .iter()
    .enumerate()
    {
        let _ = write!(
            s,
            "[[workload]]\nname = \"w{i}\"\nbuiltin = \"{b}\"\nscale = {}\nclients = [1, 8, 16, 32, 64]\njobs = \"clients\"\nduration = \"60s\"\n",
            10 * (i + 1)
        );
    }
    s
}

fn main() -> ExitCode {
    let (inv_text, m_text) = (inventory(100), matrix());
    let t0 = Instant::now();
    let inv = match Inventory::parse(Path::new("bench-inventory.toml"), inv_text) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let m = match Matrix::parse(Path::new("bench-matrix.toml"), m_text) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let parsed = t0.elapsed();
    let mut best = None;
    let mut cells = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let p = plan(&inv, &m);
        let d = t.elapsed();
        cells = p.cells.len();
        best = Some(best.map_or(d, |b: std::time::Duration| b.min(d)));
    }
    let best = best.unwrap_or_default();
    let p = plan(&inv, &m);
    let t = Instant::now();
    let table = fsmatrix::plan::render(&p);
    let rendered = t.elapsed();
    let t = Instant::now();
    let json = serde_json::to_vec(&p).map(|v| v.len()).unwrap_or(0);
    let serialized = t.elapsed();
    println!(
        "plan: {} hosts x {} cells/host = {cells} cells; parse+validate {:.1} ms, plan {:.1} ms (best of 3); render table {:.1} ms ({} bytes), plan.json {:.1} ms ({} bytes)",
        inv.hosts.len(),
        cells / inv.hosts.len().max(1),
        parsed.as_secs_f64() * 1e3,
        best.as_secs_f64() * 1e3,
        rendered.as_secs_f64() * 1e3,
        table.len(),
        serialized.as_secs_f64() * 1e3,
        json,
    );
    if cells != 100_000 {
        eprintln!("expected 100000 cells, planned {cells}");
        return ExitCode::FAILURE;
    }
    if best.as_secs_f64() >= 1.0 {
        eprintln!("planning took {best:?}: the goal is well under a second");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
