//! `fsmatrix check`: every host in parallel; exit 0 when all are ready.
use std::time::Instant;

use super::{CheckArgs, CliError, CmdResult, Exit};
use crate::config::Inventory;
use crate::plan::plan;
use crate::remote::SshRemote;
use crate::run::check::{needs_of, prepare, ssh_target, HostReport};
use crate::text::iec_bytes;

pub fn check(args: &CheckArgs) -> CmdResult {
    let (inv, p) = match &args.matrix {
        Some(m) => {
            let (inv, m) = crate::config::load(&args.inventory, m)?;
            let p = plan(&inv, &m);
            (inv, Some(p))
        }
        None => (Inventory::load(&args.inventory)?, None),
    };
    let t0 = Instant::now();
    let reports: Vec<HostReport> = super::runtime()?.block_on(async {
        let futs = inv.hosts.iter().map(|h| {
            let needs = p
                .as_ref()
                .map(|p| needs_of(p, h.name.as_str()))
                .unwrap_or_default();
            let inv_path = &inv.path;
            async move {
                let t = Instant::now();
                match SshRemote::connect(&ssh_target(inv_path, h)).await {
                    Ok(remote) => {
                        let (r, _) = prepare(&remote, h, &needs, false).await;
                        remote.disconnect().await;
                        r
                    }
                    Err(e) => HostReport::unreachable(h, &e, t),
                }
            }
        });
        futures::future::join_all(futs).await
    });
    if args.json {
        let s = serde_json::to_string_pretty(&reports)
            .map_err(|e| CliError::problems(format!("failed to encode the report: {e}")))?;
        println!("{s}");
    } else {
        print!("{}", render_check(&reports));
        println!(
            "checked {} host(s) in {:.2} s",
            reports.len(),
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(if reports.iter().all(|r| r.ready) {
        Exit::Success
    } else {
        Exit::Problems
    })
}

/// The table of `check`, then every problem of every host not ready.
pub fn render_check(reports: &[HostReport]) -> String {
    let mut s = String::from("| host | ready | os / kernel | cpu × mem | device | signature | postgres | tools |\n|---|---|---|---|---|---|---|---|\n");
    let dash = || "-".to_string();
    for r in reports {
        let f = &r.parsed;
        let dev = match f.devices.first() {
            Some(d) => match d.size_bytes {
                Some(b) => format!("{} {}", d.path, iec_bytes(b as f64)),
                None => d.path.clone(),
            },
            None => dash(),
        };
        s.push_str(&format!(
            "| {} | {} | {} {} | {} × {} | {} | {} | {} | {} |\n",
            r.host,
            if r.ready { "yes" } else { "NO" },
            f.os.clone().unwrap_or_else(dash),
            f.kernel.clone().unwrap_or_else(dash),
            f.cpu_count.map_or_else(dash, |n| n.to_string()),
            f.mem_bytes.map_or_else(dash, |b| iec_bytes(b as f64)),
            dev,
            r.guard.get("signature").cloned().unwrap_or_else(dash),
            f.postgres_release().unwrap_or("-"),
            if f.tools.is_empty() {
                dash()
            } else {
                f.tools.join(" ")
            },
        ));
    }
    for r in reports.iter().filter(|r| !r.ready) {
        for p in &r.problems {
            s.push_str(&format!("{}: {p}\n", r.host));
        }
    }
    s
}
