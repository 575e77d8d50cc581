//! One machine: a physical host and the guests fsmatrix boots on it
//! (`guest_of`, `[host.vm]`).  They share the physical host's disk, so
//! their cells never run at once: the machine's work is a list of
//! segments, metal and each guest alternating per filesystem variant (so
//! that drift over the sweep does not pass for the cost of
//! virtualisation), all under the physical host's lock.  A guest segment
//! starts the guest (`vm-start` on the physical host), waits for its SSH
//! (host key checked as for any host), runs the guest's cells as any
//! host's, then stops it (`vm-stop`: ACPI, then SIGTERM/SIGKILL after a
//! bound) and keeps its serial console in the bundle.  A guest that does
//! not come up fails its segment's cells with the console's tail.  A
//! killed orchestrator's guests are found by `vm-reap` before the machine
//! is used again.  `run` and `plan --commands` both go through
//! [`machine_sweep`].
use std::future::Future;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::check::ssh_target;
use super::facts::Kv;
use super::logged::Logged;
use super::sink::{HostTally, Sink};
use super::sweep::{host_sweep, HostJob};
use super::verb::{scripts_dir, Call, Verb};
use crate::config::inventory::Vm;
use crate::config::{GuestOrder, Host};
use crate::plan::Cell;
use crate::remote::{ExecOptions, Remote, RemoteError, SshRemote};
use crate::timeouts as t;

/// The folder of a physical host's guest files: `<work_dir>/vm` (overlays,
/// pid files, consoles, monitor fifos; the script refuses another).
pub fn vm_dir(physical: &Host) -> String {
    format!("{}/vm", physical.work_dir.as_str().trim_end_matches('/'))
}

/// `vm-start` of `guest` on `physical` (docs/remote-scripts.md).
pub fn vm_start(guest: &Host, vm: &Vm, physical: &Host) -> Call {
    vm_call(Verb::VmStart, guest, vm, physical)
}

/// `vm-check` of `guest` on `physical`: what would keep `vm-start` with the
/// same arguments from starting it, read-only (`check` asks it).
pub fn vm_check(guest: &Host, vm: &Vm, physical: &Host) -> Call {
    vm_call(Verb::VmCheck, guest, vm, physical)
}

/// `vm-start`'s arguments, which `vm-check` takes too.
fn vm_call(verb: Verb, guest: &Host, vm: &Vm, physical: &Host) -> Call {
    let mut call = Call::new(verb)
        .arg("dir", vm_dir(physical))
        .arg("guest", guest.name.as_str())
        .arg("image", vm.image.as_str())
        .arg("format", vm.image_format.as_str());
    if let Some(k) = &vm.kernel {
        call = call.arg("kernel", k.as_str());
    }
    if let Some(i) = &vm.initrd {
        call = call.arg("initrd", i.as_str());
    }
    if let Some(c) = &vm.cmdline {
        call = call.arg("cmdline", c.as_str());
    }
    call.arg("memory", vm.memory_mib.to_string())
        .arg("cpus", vm.cpus.to_string())
        .arg("bus", vm.disk_bus.as_str())
        .arg("cache", vm.cache.as_str())
        .arg("aio", vm.aio.as_str())
        .arg("accel", vm.accel.as_str())
        .arg("disk", vm.disk.as_str())
        .arg("port", vm.ssh_port.to_string())
        // The physical host's guard on the disk, right before QEMU opens
        // it: the host's devices and its consent to a foreign signature.
        .args(
            "allowed",
            physical.devices.iter().map(|d| d.as_str().to_string()),
        )
        .arg(
            "consent",
            if physical.consent_foreign.contains(&vm.disk) {
                "yes"
            } else {
                "no"
            },
        )
}

/// `vm-stop` of `guest`: ACPI power-down, [`t::VM_POWERDOWN`] to obey.
pub fn vm_stop(guest: &Host, physical: &Host) -> Call {
    Call::new(Verb::VmStop)
        .arg("dir", vm_dir(physical))
        .arg("guest", guest.name.as_str())
        .arg("timeout", t::VM_POWERDOWN.as_secs().to_string())
}

/// `vm-reap`: every guest a killed sweep left on `physical`.
pub fn vm_reap(physical: &Host) -> Call {
    Call::new(Verb::VmReap).arg("dir", vm_dir(physical))
}

/// The guest's serial console, fetched with `cat` (under work_dir).
pub fn console_cat(guest: &Host, physical: &Host) -> Call {
    Call::new(Verb::Cat)
        .arg("work", physical.work_dir.as_str().trim_end_matches('/'))
        .arg(
            "path",
            format!("{}/{}.console", vm_dir(physical), guest.name),
        )
}

/// Who runs a segment: the physical host, or its guest number `i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Metal,
    Guest(usize),
}

/// A run of one target's cells, in plan order.
#[derive(Debug)]
pub struct Segment<'a> {
    pub target: Target,
    pub cells: Vec<&'a Cell>,
}

/// The machine's order.  `alternate`: for each filesystem variant in order
/// of first appearance (metal first), the metal's cells of it, then each
/// guest's.  `metal-first`: every metal cell, then each guest's (one boot
/// per guest).
pub fn segments<'a>(
    order: GuestOrder,
    metal: &[&'a Cell],
    guests: &[Vec<&'a Cell>],
) -> Vec<Segment<'a>> {
    if order == GuestOrder::MetalFirst {
        let all = std::iter::once((Target::Metal, metal.to_vec())).chain(
            guests
                .iter()
                .enumerate()
                .map(|(i, g)| (Target::Guest(i), g.clone())),
        );
        return all
            .filter(|(_, cells)| !cells.is_empty())
            .map(|(target, cells)| Segment { target, cells })
            .collect();
    }
    let mut variants: Vec<&str> = Vec::new();
    for c in metal.iter().chain(guests.iter().flatten()) {
        if !variants.contains(&c.fs.name.as_str()) {
            variants.push(c.fs.name.as_str());
        }
    }
    let mut out = Vec::new();
    for v in variants {
        let of = |cells: &[&'a Cell]| -> Vec<&'a Cell> {
            cells
                .iter()
                .copied()
                .filter(|c| c.fs.name.as_str() == v)
                .collect()
        };
        let m = of(metal);
        if !m.is_empty() {
            out.push(Segment {
                target: Target::Metal,
                cells: m,
            });
        }
        for (i, g) in guests.iter().enumerate() {
            let gc = of(g);
            if !gc.is_empty() {
                out.push(Segment {
                    target: Target::Guest(i),
                    cells: gc,
                });
            }
        }
    }
    out
}

/// How the orchestrator reaches a booted guest: over SSH through its
/// physical host (a run), or a recording stand-in (`plan --commands`).
pub trait GuestLink {
    type R: Remote;
    /// Connect, retrying until `deadline` while the guest boots; a host-key
    /// problem is final at once (never accepted, never retried).
    fn connect(
        &self,
        guest: &Host,
        deadline: Instant,
    ) -> impl Future<Output = Result<Self::R, RemoteError>>;
    fn close(&self, r: Self::R) -> impl Future<Output = ()>;
}

/// A run's link: SSH to `127.0.0.1:ssh_port` with the physical host as the
/// last jump hop ([`ssh_target`]).
pub struct SshLink<'a> {
    pub inv_path: &'a std::path::Path,
}

/// Between two tries of a booting guest's SSH.
const RETRY: Duration = Duration::from_secs(2);

impl GuestLink for SshLink<'_> {
    type R = SshRemote;
    async fn connect(&self, guest: &Host, deadline: Instant) -> Result<SshRemote, RemoteError> {
        let target = ssh_target(self.inv_path, guest);
        loop {
            match SshRemote::connect(&target).await {
                Ok(r) => return Ok(r),
                Err(e) if is_final(&e) => return Err(e),
                Err(e) => {
                    if Instant::now() + RETRY >= deadline {
                        return Err(e);
                    }
                    tokio::time::sleep(RETRY).await;
                }
            }
        }
    }
    async fn close(&self, r: SshRemote) {
        r.disconnect().await;
    }
}

/// A host-key or log-in problem: the guest answered, so waiting longer
/// changes nothing (and an unknown key is never accepted).
fn is_final(e: &RemoteError) -> bool {
    match e {
        RemoteError::HostKey(_) | RemoteError::Auth { .. } => true,
        RemoteError::Jump { source, .. } => is_final(source),
        _ => false,
    }
}

/// What one machine's work ended with: each host's tally (the physical
/// host first, then its guests in the order given) and each guest's
/// commands log (what was sent to it, over all its segments).
pub struct MachineOutcome {
    pub tallies: Vec<(String, HostTally)>,
    pub guest_logs: Vec<(String, String)>,
}

/// Run a physical host's job and its guests' jobs on one machine, in
/// [`segments`] order.  `metal` is the physical host's (logged) remote.
#[allow(clippy::too_many_arguments)]
pub async fn machine_sweep<R: Remote, L: GuestLink>(
    metal: &R,
    physical: &Host,
    order: GuestOrder,
    metal_job: HostJob<'_>,
    guests: Vec<HostJob<'_>>,
    link: &L,
    sink: &Sink,
    cancel: watch::Receiver<bool>,
) -> MachineOutcome {
    let mut tallies: Vec<HostTally> = vec![HostTally::default(); guests.len() + 1];
    let mut logs: Vec<String> = vec![String::new(); guests.len()];
    let guest_cells: Vec<Vec<&Cell>> = guests.iter().map(|g| g.cells.clone()).collect();
    let segs = segments(order, &metal_job.cells, &guest_cells);
    let mut metal_job = metal_job;
    metal_job.needs.guests = true;
    // First what a killed sweep left: its guests (they hold the disk).
    if let Some(dir) = scripts_dir(physical) {
        // The scripts must be there to reap: the metal's preparation
        // uploads them (and tears its own leftovers down) first.
        // Not only when the host is ready: a leftover guest may be why
        // its guard refuses the disk.
        let (report, _) = super::check::prepare(metal, physical, &metal_job.needs, false).await;
        if !report.facts.is_empty() {
            if let Err(e) = exec_call(metal, physical, &dir, &vm_reap(physical)).await {
                sink.emit(super::events::RunEvent::Note {
                    host: physical.name.as_str().to_string(),
                    message: format!("reaping guests a killed sweep left: {e}"),
                });
            }
        }
    }
    for seg in segs {
        if *cancel.borrow() {
            let (name, tally) = match seg.target {
                Target::Metal => (physical, &mut tallies[0]),
                Target::Guest(i) => (guests[i].host, &mut tallies[i + 1]),
            };
            sink.record_not_run(
                &seg.cells,
                &format!("interrupted before {} ran", name.name),
                tally,
            );
            continue;
        }
        match seg.target {
            Target::Metal => {
                let (_, t) = host_sweep(
                    metal,
                    job_of(&metal_job, seg.cells.clone()),
                    sink,
                    cancel.clone(),
                )
                .await;
                tallies[0] = tallies[0] + t;
            }
            Target::Guest(i) => {
                let g = &guests[i];
                let job = job_of(g, seg.cells.clone());
                let t = guest_segment(
                    metal,
                    physical,
                    job,
                    link,
                    sink,
                    cancel.clone(),
                    &mut logs[i],
                )
                .await;
                tallies[i + 1] = tallies[i + 1] + t;
            }
        }
    }
    let mut out = MachineOutcome {
        tallies: vec![(physical.name.as_str().to_string(), tallies[0])],
        guest_logs: Vec::new(),
    };
    for (i, g) in guests.iter().enumerate() {
        out.tallies
            .push((g.host.name.as_str().to_string(), tallies[i + 1]));
        out.guest_logs.push((
            g.host.name.as_str().to_string(),
            std::mem::take(&mut logs[i]),
        ));
    }
    out
}

/// `base` (a host's whole job) for one segment's `cells`.
fn job_of<'a>(base: &HostJob<'a>, cells: Vec<&'a Cell>) -> HostJob<'a> {
    HostJob {
        host: base.host,
        cells,
        needs: base.needs.clone(),
        pre_clean: true,
        counted: base.counted.clone(),
        batches: Vec::new(),
        extra_facts: Vec::new(),
    }
}

/// Run a verb call on the physical host; its kv output.
async fn exec_call<R: Remote>(
    remote: &R,
    host: &Host,
    scripts: &str,
    call: &Call,
) -> Result<(Kv, String), String> {
    let cmd = call.command(host, scripts);
    let options = ExecOptions {
        own_session: call.verb.cleanup(),
        ..ExecOptions::with_timeout(call.verb.timeout())
    };
    match remote.exec(&cmd, options).await {
        Ok(out) if out.status.success() => {
            let text = out.stdout_lossy().to_string();
            Ok((Kv::parse(&text), text))
        }
        Ok(out) => Err(format!(
            "{} on {}: {}; {}",
            call.verb,
            host.name,
            out.status,
            out.stderr_lossy().trim_end()
        )),
        Err(e) => Err(format!("{} on {}: {e}", call.verb, host.name)),
    }
}

/// One guest segment: start, reach, run, stop, keep the console.
async fn guest_segment<R: Remote, L: GuestLink>(
    metal: &R,
    physical: &Host,
    job: HostJob<'_>,
    link: &L,
    sink: &Sink,
    cancel: watch::Receiver<bool>,
    log: &mut String,
) -> HostTally {
    let guest = job.host;
    let mut tally = HostTally::default();
    let (Some(vm), Some(scripts)) = (guest.vm.as_ref(), scripts_dir(physical)) else {
        sink.record_not_run(
            &job.cells,
            "no [host.vm] or no script for the physical host",
            &mut tally,
        );
        return tally;
    };
    let name = guest.name.as_str().to_string();
    // The boot, for the ETA: from vm-start to the guest's log-in.
    let boot = crate::plan::work::Work::Boot {
        variant: job
            .cells
            .first()
            .map(|c| c.fs.name.as_str().to_string())
            .unwrap_or_default(),
    };
    sink.work_started(&name, boot.clone());
    let started = exec_call(metal, physical, &scripts, &vm_start(guest, vm, physical)).await;
    let vm_facts = match started {
        Ok((_, text)) => {
            let _ = sink.write(&format!("hosts/{name}/vm-start.txt"), text.as_bytes());
            // What the hypervisor ran: the guest's machine as the inventory
            // gave it and as vm-start started it (command line with the
            // accelerator, CPU model, memory, bus, cache and aio; the
            // physical host's CPU; QEMU's version).
            let started: std::collections::BTreeMap<&str, &str> =
                text.lines().filter_map(|l| l.split_once('=')).collect();
            let _ = sink.write_json(
                &format!("hosts/{name}/vm.json"),
                &serde_json::json!({
                    "guest_of": physical.name.as_str(),
                    "vm": vm,
                    "started": started,
                }),
            );
            let mut facts: Vec<(String, String)> = started
                .iter()
                .filter(|(k, _)| matches!(**k, "qemu" | "qemu_cmdline" | "host_cpu"))
                .map(|(k, v)| (format!("hypervisor.{k}"), v.to_string()))
                .collect();
            for (k, v) in [
                ("accel", vm.accel.as_str().to_string()),
                ("disk_bus", vm.disk_bus.as_str().to_string()),
                ("cache", vm.cache.as_str().to_string()),
                ("aio", vm.aio.as_str().to_string()),
                ("memory_mib", vm.memory_mib.to_string()),
                ("cpus", vm.cpus.to_string()),
                ("guest_of", physical.name.as_str().to_string()),
            ] {
                facts.push((format!("hypervisor.{k}"), v));
            }
            Some(facts)
        }
        Err(e) => {
            sink.work_ended(&name, boot, false);
            let tail = console_tail(metal, physical, &scripts, guest).await;
            sink.record_failed(&job.cells, "vm-start", &format!("{e}\n{tail}"), &mut tally);
            stop(metal, physical, &scripts, guest, sink).await;
            return tally;
        }
    };
    let deadline = Instant::now() + Duration::from_secs(vm.boot_timeout);
    let connected = tokio::select! {
        r = link.connect(guest, deadline) => Some(r),
        _ = wait_true(cancel.clone()) => None,
    };
    sink.work_ended(&name, boot, matches!(connected, Some(Ok(_))));
    match connected {
        None => {
            sink.record_not_run(&job.cells, "interrupted while the guest booted", &mut tally);
        }
        Some(Err(e)) => {
            let tail = console_tail(metal, physical, &scripts, guest).await;
            sink.record_failed(
                &job.cells,
                "vm-boot",
                &format!(
                    "guest {name} did not answer on SSH within {} s: {e}\nits serial console ends with:\n{tail}",
                    vm.boot_timeout
                ),
                &mut tally,
            );
        }
        Some(Ok(r)) => {
            let logged = Logged::new(&r, guest.become_);
            let mut job = job;
            job.extra_facts = vm_facts.unwrap_or_default();
            let (_, t) = host_sweep(&logged, job, sink, cancel).await;
            tally = t;
            log.push_str(&logged.text());
            link.close(r).await;
        }
    }
    stop(metal, physical, &scripts, guest, sink).await;
    tally
}

/// Stop the guest and keep its console in the bundle.
async fn stop<R: Remote>(metal: &R, physical: &Host, scripts: &str, guest: &Host, sink: &Sink) {
    let name = guest.name.as_str();
    if let Err(e) = exec_call(metal, physical, scripts, &vm_stop(guest, physical)).await {
        sink.emit(super::events::RunEvent::Note {
            host: physical.name.as_str().to_string(),
            message: format!("stopping guest {name}: {e}; the next sweep's vm-reap ends it"),
        });
    }
    if let Ok((_, text)) = exec_call(metal, physical, scripts, &console_cat(guest, physical)).await
    {
        let _ = sink.write(&format!("hosts/{name}/console.log"), text.as_bytes());
    }
}

/// The last lines of the guest's serial console, for a failure record.
async fn console_tail<R: Remote>(
    metal: &R,
    physical: &Host,
    scripts: &str,
    guest: &Host,
) -> String {
    match exec_call(metal, physical, scripts, &console_cat(guest, physical)).await {
        Ok((_, text)) => {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(30)..].join("\n")
        }
        Err(e) => format!("(no console: {e})"),
    }
}

async fn wait_true(mut rx: watch::Receiver<bool>) {
    if rx.wait_for(|c| *c).await.is_err() {
        futures::future::pending::<()>().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Inventory, Matrix};

    /// Alternate: per variant metal, then the guest; metal-first: all
    /// metal, then the guest.  A variant only one side has is its alone.
    #[test]
    fn segments_alternate_per_variant_or_put_metal_first() {
        let inv = Inventory::parse(
            std::path::Path::new("/i.toml"),
            "[defaults]\nos = \"linux\"\n[[host]]\nname = \"m\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/sdb\"]\n[[host]]\nname = \"g\"\nguest_of = \"m\"\ndevices = [\"/dev/vdb\"]\n[host.vm]\nimage = \"/i/x.img\"\ndisk = \"/dev/sdb\"\n".into(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let m = Matrix::parse(
            std::path::Path::new("/m.toml"),
            "name = \"t\"\n[[filesystem]]\nname = \"a\"\ntype = \"ext4\"\n[[filesystem]]\nname = \"b\"\ntype = \"xfs\"\n[[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"1s\"\n".into(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let p = crate::plan::plan(&inv, &m);
        let of =
            |h: &str| -> Vec<&Cell> { p.cells.iter().filter(|c| c.host.as_str() == h).collect() };
        let (metal, guest) = (of("m"), of("g"));
        // The metal lacks variant b: it is the guest's alone.
        let metal: Vec<&Cell> = metal
            .into_iter()
            .filter(|c| c.fs.name.as_str() == "a")
            .collect();
        let shown = |segs: Vec<Segment>| -> Vec<String> {
            segs.iter()
                .map(|s| {
                    let who = match s.target {
                        Target::Metal => "metal".to_string(),
                        Target::Guest(i) => format!("guest{i}"),
                    };
                    let vs: Vec<&str> = s.cells.iter().map(|c| c.fs.name.as_str()).collect();
                    format!("{who}:{}", vs.join(","))
                })
                .collect()
        };
        let guests = vec![guest];
        assert_eq!(
            shown(segments(GuestOrder::Alternate, &metal, &guests)),
            ["metal:a", "guest0:a", "guest0:b"]
        );
        assert_eq!(
            shown(segments(GuestOrder::MetalFirst, &metal, &guests)),
            ["metal:a", "guest0:a,b"]
        );
    }
}
