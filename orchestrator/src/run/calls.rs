//! The words of every verb call a sweep makes, built from the inventory's
//! host and the plan's cell: one builder per verb, used by the host worker
//! (and so by `plan --commands`, which drives the same worker).
use std::collections::BTreeMap;

use super::facts::Kv;
use super::pgsettings::SettingUse;
use super::verb::{scripts_dir, Call, Verb};
use crate::config::{FsType, Host, Scale, WorkloadKind, ZfsProperty};
use crate::generator::{self, Invocation, ScriptVerb};
use crate::model::FsSettings;
use crate::plan::Cell;

/// The pool name fsmatrix gives every ZFS pool it makes: `fsmx`, and
/// `fsmx<k>` for the host's device k (the guard knows exactly these names
/// as its own: common.sh `own_pool`; `fsmxdata` is someone else's).
pub const POOL: &str = "fsmx";

/// On-disk size of one pgbench scale unit (100 000 accounts rows with their
/// index, branches, tellers), measured ~15–16 MiB on ext4 with PostgreSQL 15;
/// used to turn `scale = "80%"` into a scale factor.
pub const BYTES_PER_SCALE: u64 = 16 * 1024 * 1024;

/// Paths on the host for one sweep (under the inventory's `work_dir`).
#[derive(Debug, Clone)]
pub struct HostPaths {
    pub scripts: String,
    /// Where the filesystem under test is mounted.
    pub mnt: String,
    /// The benchmark cluster's socket folder and server log: short, for
    /// the socket path limit of the host's OS (107 bytes on Linux, 103 on
    /// the BSDs: `OsProfile::socket_path_max`, checked at inventory load).
    pub pg_dir: String,
    /// One folder per run's output.
    pub runs: String,
    pub work: String,
    /// The device this set of paths builds on: the host's `devices[slot]`.
    pub dev: String,
    /// The cluster's port: `pg_port + slot`.
    pub port: u16,
    /// The ZFS pool's name: [`POOL`], then `fsmx1`, `fsmx2`, … per slot.
    pub pool: String,
    /// Which of the host's devices (0: the first; `order = "interleaved"`
    /// and `"random"` set up one variant per device).
    pub slot: u32,
}

impl HostPaths {
    /// `None` when fsmatrix has no script for the host's OS.
    pub fn new(host: &Host) -> Option<HostPaths> {
        let w = host.work_dir.as_str().trim_end_matches('/').to_string();
        Some(HostPaths {
            scripts: scripts_dir(host)?,
            mnt: format!("{w}/mnt"),
            pg_dir: format!("{w}/pg"),
            runs: format!("{w}/runs"),
            work: w,
            dev: host.device().as_str().to_string(),
            port: host.pg_port,
            pool: POOL.to_string(),
            slot: 0,
        })
    }

    /// The paths of the host's device `slot` (one the inventory lists):
    /// everything derived from the index, nothing from the matrix.  Slot 0
    /// is [`HostPaths::new`]'s; slot k mounts at `<work_dir>/mnt<k>`, keeps
    /// its socket in `<work_dir>/pg<k>`, listens on `pg_port + k` and names
    /// its pool `fsmx<k>`.  `None` for a slot beyond the host's devices or
    /// a port beyond 65535.
    pub fn for_slot(&self, host: &Host, slot: u32) -> Option<HostPaths> {
        let dev = host.devices.get(slot as usize)?;
        let port = u16::try_from(u32::from(host.pg_port) + slot).ok()?;
        if slot == 0 {
            return Some(self.clone());
        }
        Some(HostPaths {
            mnt: format!("{}/mnt{slot}", self.work),
            pg_dir: format!("{}/pg{slot}", self.work),
            dev: dev.as_str().to_string(),
            port,
            pool: format!("{POOL}{slot}"),
            slot,
            ..self.clone()
        })
    }

    /// The cluster's socket: `<pg_dir>/sock/.s.PGSQL.<port>` (common.sh's
    /// `SOCK`; the inventory checks its length,
    /// [`crate::config::inventory::pg_socket_path`]).
    pub fn socket(&self) -> String {
        format!("{}/sock/.s.PGSQL.{}", self.pg_dir, self.port)
    }

    /// Where a run's (or a load's) output files go.
    pub fn run_out(&self, cell: &Cell) -> String {
        format!("{}/{}", self.runs, cell.id)
    }

    /// Where a workload's `pgbench -i` output goes.
    pub fn load_out(&self, cell: &Cell) -> String {
        format!(
            "{}/{}-{}-load",
            self.runs,
            cell.fs.name.as_str(),
            cell.workload.name.as_str()
        )
    }
}

/// Builds the calls of one host's sweep.
pub struct Calls<'a> {
    pub host: &'a Host,
    pub paths: &'a HostPaths,
}

impl Calls<'_> {
    fn devices(&self) -> impl Iterator<Item = String> + '_ {
        self.host.devices.iter().map(|d| d.as_str().to_string())
    }

    fn consent(&self) -> &'static str {
        if self
            .host
            .consent_foreign
            .iter()
            .any(|d| d.as_str() == self.paths.dev)
        {
            "yes"
        } else {
            "no"
        }
    }

    fn pg(&self, verb: Verb) -> Call {
        Call::new(verb)
            .arg("pg_bin", self.host.pg_bin_or_hint())
            .arg("pg_user", self.host.pg_user.as_str())
    }

    pub fn facts(&self) -> Call {
        Call::new(Verb::Facts)
            .args("dev", self.devices())
            .arg("pg_bin", self.host.pg_bin_or_hint())
            .arg("pg_user", self.host.pg_user.as_str())
    }

    pub fn preflight(&self) -> Call {
        Call::new(Verb::Preflight)
            .arg("dev", self.paths.dev.as_str())
            .args("allowed", self.devices())
            .arg("consent", self.consent())
    }

    /// Ask the host's PostgreSQL about every setting the plan sets there.
    pub fn pg_check_settings(&self, uses: &[SettingUse]) -> Call {
        self.pg(Verb::PgCheckSettings).args(
            "pg_set",
            uses.iter().map(|u| format!("{}={}", u.name, u.value)),
        )
    }

    /// `ident`: the device's identity as the sweep's `facts` read it; the
    /// script refuses (exit 3) a device whose identity is another now.
    pub fn make_fs(&self, c: &Cell, ident: &str) -> Call {
        let call = Call::new(Verb::MakeFs)
            .arg("dev", self.paths.dev.as_str())
            .args("allowed", self.devices())
            .arg("consent", self.consent())
            .arg("ident", ident)
            .arg("fs", c.fs.fs_type.as_str());
        if c.fs.fs_type == FsType::Zfs {
            let kv = |z: &ZfsProperty| format!("{}={}", z.name.as_str(), z.value.as_str());
            call.arg("pool", &self.paths.pool)
                .arg("mnt", &self.paths.mnt)
                .args("pool_prop", c.fs.pool_properties.iter().map(kv))
                .args("zfs_prop", c.fs.properties.iter().map(kv))
        } else {
            call.args(
                "mkfs_opt",
                c.fs.mkfs_options.iter().map(|o| o.as_str().to_string()),
            )
        }
    }

    pub fn mount(&self, c: &Cell) -> Call {
        with_pool(
            Call::new(Verb::Mount)
                .arg("dev", self.paths.dev.as_str())
                .arg("fs", c.fs.fs_type.as_str())
                .arg("mnt", &self.paths.mnt)
                .args(
                    "mount_opt",
                    c.fs.mount_options.iter().map(|o| o.as_str().to_string()),
                )
                // HAMMER2's compression: `hammer2 setcomp` on the mount point
                // before anything is written under it.
                .args(
                    "comp",
                    c.fs.properties
                        .iter()
                        .filter(|p| {
                            c.fs.fs_type == FsType::Hammer2 && p.name.as_str() == "compression"
                        })
                        .map(|p| p.value.as_str().to_string()),
                ),
            c,
            &self.paths.pool,
        )
    }

    pub fn pg_init(&self, c: &Cell) -> Call {
        self.pg(Verb::PgInit)
            .arg("mnt", &self.paths.mnt)
            .arg("cell", &self.paths.pg_dir)
            .arg("port", self.paths.port.to_string())
            // pg_hba.conf's peer map: the client user as the client role,
            // the login user (the counters' tunnel) as the monitor role.
            .arg("client_user", self.host.client_user.as_str())
            .arg("monitor_user", self.host.user.as_str())
            .args(
                "pg_set",
                c.pg_settings
                    .iter()
                    .map(|s| format!("{}={}", s.name.as_str(), s.value.as_str())),
            )
    }

    pub fn pg_start(&self) -> Call {
        self.pg(Verb::PgStart)
            .arg("mnt", &self.paths.mnt)
            .arg("cell", &self.paths.pg_dir)
    }

    pub fn pg_stop(&self) -> Call {
        self.pg(Verb::PgStop)
            .arg("mnt", &self.paths.mnt)
            .arg("cell", &self.paths.pg_dir)
    }

    /// `fs` is the variant's type when known; without it teardown still
    /// stops postgres, unmounts and destroys fsmatrix's pool.
    pub fn teardown(&self, fs: Option<FsType>) -> Call {
        let mut call = Call::new(Verb::Teardown)
            .arg("dev", self.paths.dev.as_str())
            .args("allowed", self.devices());
        if let Some(fs) = fs {
            call = call.arg("fs", fs.as_str());
        }
        call.arg("mnt", &self.paths.mnt)
            .arg("pool", &self.paths.pool)
            .arg("pg_bin", self.host.pg_bin_or_hint())
            .arg("pg_user", self.host.pg_user.as_str())
            .arg("cell", &self.paths.pg_dir)
            // The per-transaction logs a killed run left are removed too.
            .arg("work", &self.paths.work)
    }

    pub fn sizes(&self, c: &Cell) -> Call {
        with_pool(
            Call::new(Verb::Sizes)
                .arg("mnt", &self.paths.mnt)
                .arg("fs", c.fs.fs_type.as_str()),
            c,
            &self.paths.pool,
        )
    }

    pub fn drop_caches(&self, c: &Cell) -> Call {
        with_pool(
            Call::new(Verb::DropCaches)
                .arg("fs", c.fs.fs_type.as_str())
                .arg("dev", self.paths.dev.as_str()),
            c,
            &self.paths.pool,
        )
    }

    /// A load generator's remote call (its load phase or a cell's run),
    /// writing its output under `out`.
    pub fn generator(&self, step: &Invocation, out: &str) -> Call {
        let verb = match step.verb {
            ScriptVerb::Load => Verb::Load,
            ScriptVerb::Run => Verb::Run,
        };
        let mut call = self
            .pg(verb)
            .arg("cell", &self.paths.pg_dir)
            .arg("port", self.paths.port.to_string())
            .arg("out", out)
            // psql and pgbench run as this unprivileged user, never root.
            .arg("client_user", self.host.client_user.as_str())
            // The host owner's consent to a script's commands: without it
            // psql runs the script restricted (`\restrict`, common.sh).
            .arg(
                "script_commands",
                if self.host.allow_script_commands {
                    "yes"
                } else {
                    "no"
                },
            );
        call.args.extend(step.args.iter().cloned());
        call
    }

    /// Fetch a file the scripts wrote under work_dir.
    pub fn cat(&self, path: &str) -> Call {
        Call::new(Verb::Cat)
            .arg("work", &self.paths.work)
            .arg("path", path)
    }

    /// Fetch a per-transaction log the run wrote, and remove it from the
    /// host once sent (the script removes only `<runs>/*/txlog/` files).
    pub fn cat_remove(&self, path: &str) -> Call {
        self.cat(path).arg("remove", "1")
    }
}

fn with_pool(call: Call, c: &Cell, pool: &str) -> Call {
    if c.fs.fs_type == FsType::Zfs {
        call.arg("pool", pool)
    } else {
        call
    }
}

/// Where a workload's script file lands on the host (named by checksum),
/// with its content.
pub fn workload_file(p: &HostPaths, kind: &WorkloadKind) -> Option<(String, String)> {
    let (sha256, content) = generator::script_of(kind)?;
    let ext = generator::for_workload(kind).script_ext();
    Some((
        format!("{}/w/{}.{ext}", p.work, &sha256[..16]),
        content.to_string(),
    ))
}

/// A scale given as a share of the device, on a host that did not say how
/// large the device is.
#[derive(Debug, thiserror::Error)]
#[error("resolve scale = \"{pct}%\": the device size is unknown (preflight did not report it)")]
pub struct UnknownDeviceSize {
    pub pct: u8,
}

/// Resolve a workload's scale against the device size the guard reported.
pub fn resolve_scale(
    scale: Option<Scale>,
    device_bytes: Option<u64>,
) -> Result<Option<u64>, UnknownDeviceSize> {
    match scale {
        None => Ok(None),
        Some(Scale::Factor(n)) => Ok(Some(u64::from(n))),
        Some(Scale::DevicePercent(pct)) => {
            let size = device_bytes.ok_or(UnknownDeviceSize { pct })?;
            Ok(Some((size / 100 * u64::from(pct) / BYTES_PER_SCALE).max(1)))
        }
    }
}

/// Effective settings from `mount`'s output: the options the kernel shows,
/// the requested ones it does not show (ignored, recorded), and the ZFS
/// properties the matrix touched plus compression/compressratio.
pub fn fs_settings(kv: &Kv, c: &Cell) -> FsSettings {
    let effective = kv.get("effective_mount_opts").map(str::to_string);
    let shown: Vec<&str> = effective.as_deref().unwrap_or("").split(',').collect();
    let ignored =
        c.fs.mount_options
            .iter()
            .map(|o| o.as_str())
            .filter(|o| !shown.contains(o))
            .map(str::to_string)
            .collect();
    let mut wanted: Vec<String> =
        c.fs.properties
            .iter()
            .map(|p| p.name.as_str().to_string())
            .collect();
    wanted.extend(["compression", "compressratio", "recordsize", "atime"].map(String::from));
    let zfs_properties: BTreeMap<String, String> = kv
        .with_prefix("zfs")
        .into_iter()
        .filter(|(k, _)| wanted.contains(k))
        .collect();
    FsSettings {
        mount_options: effective,
        zfs_properties,
        hammer2_properties: kv.with_prefix("hammer2").into_iter().collect(),
        ignored_options: ignored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The socket path the inventory checks against the OS's limit
    /// (`config::inventory::pg_socket_path`) is the one the cells use: the
    /// slot's `cell` folder, `sock` in it (common.sh) and `.s.PGSQL.<port>`.
    #[test]
    fn the_checked_socket_path_is_the_cells_own() {
        let text = "[[host]]\nname = \"a\"\naddress = \"10.0.0.1\"\nos = \"freebsd\"\n\
                    devices = [\"/dev/ada1\", \"/dev/ada2\", \"/dev/ada3\"]\n\
                    work_dir = \"/var/tmp/fx/\"\npg_port = 6000\n";
        let inv = crate::config::Inventory::parse(std::path::Path::new("inv.toml"), text.into())
            .unwrap_or_else(|e| panic!("{e}"));
        let host = &inv.hosts[0];
        let base = HostPaths::new(host).expect("paths");
        for slot in 0..3u32 {
            let p = base.for_slot(host, slot).expect("a slot");
            assert_eq!(
                crate::config::inventory::pg_socket_path(
                    host.work_dir.as_str(),
                    host.pg_port,
                    slot as usize
                ),
                p.socket()
            );
        }
    }
}
