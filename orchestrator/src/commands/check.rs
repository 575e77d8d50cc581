//! `fsmatrix check`: every host in parallel; exit 0 when all are ready.
use std::time::Instant;

use super::{CheckArgs, CliError, CmdResult, Exit};
use crate::config::Inventory;
use crate::plan::plan;
use crate::remote::SshRemote;
use crate::run::check::{needs_of, prepare, same_machines, ssh_target, HostReport};
use crate::text::iec_bytes;

pub fn check(args: &CheckArgs) -> CmdResult {
    let given = crate::config::GivenPaths {
        ssh_config: args.ssh_config.clone(),
        recorded: None,
    };
    let (inv, p) = match &args.matrix {
        Some(m) => {
            let (inv, m) = crate::config::load_given(
                &args.inventory,
                m,
                &given,
                crate::generator::script_uses,
            )?;
            let p = plan(&inv, &m);
            (inv, Some(p))
        }
        None => (Inventory::load_given(&args.inventory, &given)?, None),
    };
    crate::stdio::err!("{}", crate::config::ssh_config::report(&inv));
    let t0 = Instant::now();
    let checked: Vec<(HostReport, Option<String>)> = super::runtime()?.block_on(async {
        let futs = inv.hosts.iter().map(|h| {
            let mut needs = p
                .as_ref()
                .map(|p| needs_of(p, h.name.as_str()))
                .unwrap_or_default();
            needs.vms = inv
                .hosts
                .iter()
                .filter(|g| g.guest_of.as_ref() == Some(&h.name))
                .cloned()
                .collect();
            needs.guests = !needs.vms.is_empty();
            let inv_path = &inv.path;
            async move {
                let t = Instant::now();
                if let Some(of) = &h.guest_of {
                    // Not booted by `check`: `run` boots it for its cells
                    // and checks it then, as any host (host key, guard, tools).
                    let mut r = HostReport::new(h);
                    r.ready = true;
                    r.warnings.push(format!(
                        "a guest of {of}: fsmatrix boots it only for its cells, so `check` asked {of} only (whether it could start the guest: image, kernel, initrd, data disk, QEMU, KVM, SSH port); `run` checks the guest (host key, login, guard, tools) once it is up"
                    ));
                    return (r, None);
                }
                match SshRemote::connect(&ssh_target(inv_path, h)).await {
                    Ok(remote) => {
                        let (r, _) = prepare(&remote, h, &needs, false).await;
                        let key = Some(remote.host_key().to_string()).filter(|k| !k.is_empty());
                        remote.disconnect().await;
                        (r, key)
                    }
                    Err(e) => (HostReport::unreachable(h, &e, t), None),
                }
            }
        });
        futures::future::join_all(futs).await
    });
    let mut reports = mark_same_machines(checked);
    // A guest is ready as far as `check` can tell when its physical host is.
    let ready_of: Vec<(String, bool, Vec<String>)> = reports
        .iter()
        .map(|r| (r.host.clone(), r.ready, r.problems.clone()))
        .collect();
    for r in &mut reports {
        let of = inv
            .hosts
            .iter()
            .find(|h| h.name.as_str() == r.host)
            .and_then(|h| h.guest_of.as_ref());
        if let Some((_, ready, problems)) =
            of.and_then(|of| ready_of.iter().find(|x| x.0 == of.as_str()))
        {
            if !ready {
                r.ready = false;
                r.problems.push(format!(
                    "its physical host is not ready: {}",
                    problems.join("; ")
                ));
            }
        }
    }
    if args.json {
        // One object per line: each host's report, then the summary.
        for r in &reports {
            let mut v = serde_json::to_value(r)
                .map_err(|e| CliError::problems(format!("failed to encode the report: {e}")))?;
            if let Some(o) = v.as_object_mut() {
                o.insert("event".into(), "host_checked".into());
            }
            crate::stdio::outln!("{v}");
        }
        let ready = reports.iter().filter(|r| r.ready).count();
        crate::stdio::outln!(
            "{}",
            serde_json::json!({
                "event": "check_finished",
                "hosts": reports.len(),
                "ready": ready,
                "seconds": t0.elapsed().as_secs_f64(),
            })
        );
    } else {
        crate::stdio::out!("{}", render_check(&reports));
        crate::stdio::outln!(
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

/// Two entries that showed the same host key are one machine: each is not
/// ready, the other named (`run` refuses such an inventory outright).
fn mark_same_machines(checked: Vec<(HostReport, Option<String>)>) -> Vec<HostReport> {
    let pairs = same_machines(
        checked
            .iter()
            .map(|(r, k)| (r.host.as_str(), k.as_deref().unwrap_or(""))),
    );
    checked
        .into_iter()
        .map(|(mut r, _)| {
            for (first, second, key) in &pairs {
                let other = if r.host == *first {
                    second
                } else if r.host == *second {
                    first
                } else {
                    continue;
                };
                r.problems.push(format!(
                    "it is the same machine as inventory host {other} (the same host key, {key}): keep one entry, or two sweeps' worth of commands reach one device"
                ));
                r.ready = false;
            }
            r
        })
        .collect()
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
    for r in reports {
        for w in &r.warnings {
            s.push_str(&format!("{}: warning: {w}\n", r.host));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(host: &str) -> HostReport {
        HostReport {
            host: host.into(),
            ready: true,
            problems: Vec::new(),
            warnings: Vec::new(),
            facts: Default::default(),
            guard: Default::default(),
            elapsed_ms: 0,
            parsed: Default::default(),
        }
    }

    #[test]
    fn two_entries_with_one_host_key_are_both_not_ready_naming_the_other() {
        let out = mark_same_machines(vec![
            (ready("a"), Some("SHA256:x".into())),
            (ready("b"), Some("SHA256:y".into())),
            (ready("c"), Some("SHA256:x".into())),
            (ready("d"), None),
        ]);
        let by = |h: &str| out.iter().find(|r| r.host == h).unwrap();
        assert!(by("b").ready && by("d").ready);
        assert!(!by("a").ready && !by("c").ready);
        assert!(
            by("a").problems[0].contains("inventory host c"),
            "{:?}",
            by("a").problems
        );
        assert!(by("c").problems[0].contains("inventory host a (the same host key, SHA256:x)"));
    }
}
