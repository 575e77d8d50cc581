//! `plan --commands`: the real host worker, driven against a stand-in host
//! (the recording remote) that answers as a ready host would, so that what
//! the plan shows is what a run sends: one step sequence, not two.  A run
//! logs the same lines into its bundle (`hosts/<host>/commands.log`).
//!
//! Values only a live host knows are the stand-in's answers, named in
//! [`LIVE_VALUES`]: the device's size (for `scale = "N%"`) and identity (for
//! make-fs), pg_bin when the inventory has none, and whether the scripts are
//! already there.
use tokio::sync::watch;

use super::adaptive::Counted;
use super::calls::HostPaths;
use super::check::{needs_of, Needs, DETECT_PG_BIN};
use super::facts::tool_for;
use super::lock::{lock_host, Holder};
use super::logged::Logged;
use super::sink::Sink;
use super::sweep::{host_sweep, HostJob};
use crate::config::{Host, Inventory};
use crate::plan::{Cell, Plan};
use crate::remote::RecordingRemote;

/// The device size the stand-in reports (a `scale = "N%"` resolves
/// against it).
pub const STAND_IN_DEVICE_BYTES: u64 = 100 << 30;

/// The identity the stand-in's facts give its device `i`; a live host's is
/// read from the disk (size, serial, WWID, a loop device's backing file).
pub fn stand_in_ident(i: usize) -> String {
    format!("size={STAND_IN_DEVICE_BYTES};serial=fsmatrix-stand-in-{i}")
}

/// What a live host answers differently, said above the commands.
pub const LIVE_VALUES: &str = "\
# Every command a run sends, per host and in order: the host worker itself, driven against a stand-in
# host that answers as a ready one.  The first command takes the host lock and keeps running for the
# sweep's life (who holds it goes on its stdin).  On a live host:
# - a host another sweep holds refuses the whole sweep before anything is touched;
# - a workload with scale = \"N%\" loads N% of the real device (shown for a 100 GiB device);
# - make-fs carries the identity facts read of the real device (size, serial, WWID, a loop
#   device's backing file and inode; shown as the stand-in's): a different disk found at the
#   device path then is refused;
# - a host without pg_bin in the inventory uses the pg_bin it has (shown as found by the search line);
# - scripts an earlier sweep uploaded (same checksum) are not uploaded again: one line reads
#   facts and runs the guard instead;
# - adaptive repeats past min run only while the 95% CI is wider than the target (all are shown);
# - a step that fails ends its filesystem variant early: its cells are recorded as failed, then
#   pg-stop and teardown run.
# become = \"sudo\" or \"doas\" hosts show each command as sudo or doas runs it.";

/// A recording remote that answers as a ready `host` would for a plan
/// that needs `needs` there (its PostgreSQL accepts every setting).
pub fn stand_in(host: &Host, needs: &Needs) -> RecordingRemote {
    let r = RecordingRemote::new(host.name.as_str());
    let script = format!("{}.sh", host.os.as_str());
    let mut facts = format!("os={}\nuid=0\nuser=root\n", host.os.as_str());
    for (i, d) in host.devices.iter().enumerate() {
        facts.push_str(&format!(
            "device.{i}.path={}\ndevice.{i}.present=yes\ndevice.{i}.size_bytes={STAND_IN_DEVICE_BYTES}\n\
             device.{i}.ident={}\n",
            d.as_str(),
            stand_in_ident(i)
        ));
    }
    let mut tools: Vec<&str> = needs.fs.iter().map(|f| tool_for(*f)).collect();
    if needs.guests {
        tools.extend(super::check::GUEST_TOOLS);
    }
    facts.push_str(&format!(
        "tools={}\nzfs_running=yes\npostgres_version=postgres (PostgreSQL) stand-in\npgbench_version=pgbench (PostgreSQL) stand-in\n",
        tools.join(" ")
    ));
    let pg_bin = host.os.pg_bin_hint().replace('*', "found");
    r.respond_ok(DETECT_PG_BIN, &format!("{pg_bin}\n"))
        .respond_ok(&format!("{script} facts "), &facts)
        // The scripts' checksums: none yet (a first sweep uploads them).
        .respond_ok("sha256sum -- *.sh", "")
        .respond_ok(
            &format!("{script} preflight "),
            &format!("guard=ok\ndev_size_bytes={STAND_IN_DEVICE_BYTES}\nsignature=none\n"),
        )
        .respond_ok(
            &format!("{script} pg-check-settings "),
            &format!("checked={}\n", needs.pg.len()),
        )
        .respond_ok(&format!("{script} load "), "status=0\n")
        .respond_ok(&format!("{script} run "), "status=0\n")
        .respond_ok("-load/stdout", "done in 0.00 s.\n")
        .respond_ok("flock -n 3", "locked\n");
    r
}

/// `plan --commands`' link to a guest: a stand-in that answers as a ready
/// guest would.
struct RecordingLink<'a> {
    p: &'a Plan,
}

impl super::guest::GuestLink for RecordingLink<'_> {
    type R = RecordingRemote;
    async fn connect(
        &self,
        guest: &Host,
        _deadline: std::time::Instant,
    ) -> Result<RecordingRemote, crate::remote::RemoteError> {
        Ok(stand_in(guest, &needs_of(self.p, guest.name.as_str())))
    }
    async fn close(&self, _r: RecordingRemote) {}
}

/// Every host's commands, in plan order: (host name, log text).  A host
/// the stand-in cannot prepare (no script for its OS) says why instead.
/// A physical host's log holds its guests' start and stop; each guest's
/// log what is sent to it once it is up (a run writes the same two logs).
pub async fn commands(inv: &Inventory, p: &Plan) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for hp in &p.hosts {
        let Some(host) = inv.hosts.iter().find(|h| h.name == hp.host) else {
            continue;
        };
        if out.iter().any(|(n, _)| n == host.name.as_str()) {
            continue;
        }
        let job_of = |h: &'_ Host| -> (Vec<&Cell>, Needs) {
            (
                p.cells.iter().filter(|c| c.host == h.name).collect(),
                needs_of(p, h.name.as_str()),
            )
        };
        let physical = super::sweep::physical_of(inv, host);
        let guests: Vec<&Host> = inv
            .hosts
            .iter()
            .filter(|g| g.guest_of.as_ref() == Some(&physical.name))
            .filter(|g| p.hosts.iter().any(|x| x.host == g.name))
            .collect();
        let (cells, mut needs) = job_of(physical);
        needs.guests = !guests.is_empty();
        let remote = stand_in(physical, &needs);
        let logged = Logged::new(&remote, physical.become_);
        let job = HostJob {
            host: physical,
            cells,
            needs,
            pre_clean: true,
            counted: Counted::default(),
            batches: p
                .hosts
                .iter()
                .find(|x| x.host == physical.name)
                .map(|x| x.batches.clone())
                .unwrap_or_default(),
            extra_facts: Vec::new(),
        };
        // A run locks the host first (a host without a script is not touched).
        let held = match HostPaths::new(physical) {
            Some(_) => lock_host(&logged, physical, &Holder::here(p.matrix.as_str()))
                .await
                .ok(),
            None => None,
        };
        let (_cancel_tx, cancel) = watch::channel(false);
        let mut guest_texts = Vec::new();
        let ready_note = if guests.is_empty() {
            let (report, _) = host_sweep(&logged, job, &Sink::discard(), cancel).await;
            (!report.ready).then(|| format!("# not run: {}\n", report.problems.join("; ")))
        } else {
            let gjobs: Vec<HostJob> = guests
                .iter()
                .map(|g| {
                    let (cells, needs) = job_of(g);
                    HostJob {
                        host: g,
                        cells,
                        needs,
                        pre_clean: true,
                        counted: Counted::default(),
                        batches: Vec::new(),
                        extra_facts: Vec::new(),
                    }
                })
                .collect();
            let link = RecordingLink { p };
            let outcome = super::guest::machine_sweep(
                &logged,
                physical,
                p.guest_order,
                job,
                gjobs,
                &link,
                &Sink::discard(),
                cancel,
            )
            .await;
            guest_texts = outcome.guest_logs;
            None
        };
        if let Some(h) = held {
            h.release().await;
        }
        let mut text = logged.text();
        if let Some(n) = ready_note {
            text.push_str(&n);
        }
        out.push((physical.name.as_str().to_string(), text));
        out.extend(guest_texts);
    }
    // In plan order (a guest listed before its physical host comes after it).
    out
}
