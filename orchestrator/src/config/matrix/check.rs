//! A matrix against an inventory: the hosts and tags it names exist, the
//! plan fits `max_cells`, interleaved orders have their devices and ports,
//! and guarded PostgreSQL settings and workload scripts that run commands
//! are allowed by each host's owner.
use super::types::{FsType, Matrix, RefKind, WorkloadKind};
use super::MAX_CELLS_LIMIT;
use crate::config::error::{ConfigError, ConfigErrors};
use crate::config::inventory::{Host, Inventory};

/// One feature of a workload script that runs a command or reaches a file
/// or the server's code (psql's `\!`, pgbench's `\shell`, `COPY … PROGRAM`,
/// `lo_import`, …), where it is in the script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptUse {
    /// 1-based line and column (in characters) in the script.
    pub line: usize,
    pub column: usize,
    /// The feature as the script spells it, e.g. `\!` or `COPY … PROGRAM`.
    pub feature: String,
    /// What it does, reading after the feature: "runs a shell command on the host".
    pub what: &'static str,
}

/// The load generators' script scanner (`generator::script_uses`): which
/// features of [`ScriptUse`] a workload's script uses.  Passed in because
/// each generator knows its own script language and this layer may not
/// import the generators; every caller of [`Matrix::check_against`] must
/// give it, so `plan`, `run`, `check`, `resume` and the agent refuse alike.
pub type ScriptScanner = fn(&WorkloadKind) -> Vec<ScriptUse>;

impl Matrix {
    /// Host names and tags the matrix mentions must exist in the inventory:
    /// a typo in an exclude rule would otherwise exclude nothing, silently.
    /// Workload scripts are scanned by `scan` (the generators').
    pub fn check_against(&self, inv: &Inventory, scan: ScriptScanner) -> Result<(), ConfigErrors> {
        let mut out = Vec::new();
        let most = self.most_cells(inv.hosts.len());
        if most > u128::from(self.max_cells) {
            let mut e = self.max_cells_at.clone().unwrap_or_else(|| ConfigError {
                file: self.path.clone(),
                line: 1,
                column: 1,
                message: String::new(),
            });
            e.message = format!(
                "the matrix can plan up to {most} cells on the {} hosts of {}, more than max_cells = {}; \
                 narrow the matrix, or raise max_cells (at most {MAX_CELLS_LIMIT})",
                inv.hosts.len(),
                inv.path.display(),
                self.max_cells
            );
            out.push(e);
        }
        for (kind, value, at) in &self.refs {
            match kind {
                RefKind::Host => {
                    if !inv.hosts.iter().any(|h| h.name.as_str() == value) {
                        let names: Vec<&str> = inv.hosts.iter().map(|h| h.name.as_str()).collect();
                        let mut e = at.clone();
                        e.message = format!(
                            "host `{value}` is not in the inventory {}; valid: {}",
                            inv.path.display(),
                            names.join(", ")
                        );
                        out.push(e);
                    }
                }
                RefKind::Tag => {
                    if !inv
                        .hosts
                        .iter()
                        .any(|h| h.tags.iter().any(|t| t.as_str() == value))
                    {
                        let mut tags: Vec<&str> = inv
                            .hosts
                            .iter()
                            .flat_map(|h| h.tags.iter().map(|t| t.as_str()))
                            .collect();
                        tags.sort();
                        tags.dedup();
                        let mut e = at.clone();
                        e.message = format!(
                            "no host of the inventory {} has tag `{value}`; valid: {}",
                            inv.path.display(),
                            if tags.is_empty() {
                                "(no tags defined)".to_string()
                            } else {
                                tags.join(", ")
                            }
                        );
                        out.push(e);
                    }
                }
            }
        }
        out.extend(self.check_settings_allowed(inv));
        out.extend(self.check_scripts_allowed(inv, scan));
        out.extend(self.check_order(inv));
        let mut list = ConfigErrors(out);
        list.sort();
        if list.is_empty() {
            Ok(())
        } else {
            Err(list)
        }
    }

    /// Interleaved and random orders need one device per variant set up at
    /// a time: a selected host with one device and several variants is
    /// refused (rebuilding between runs is not supported), and the ports
    /// derived per device (pg_port + device index) must exist.
    fn check_order(&self, inv: &Inventory) -> Vec<ConfigError> {
        if self.order.is_sequential() {
            return Vec::new();
        }
        let at = || {
            self.order_at.clone().unwrap_or_else(|| ConfigError {
                file: self.path.clone(),
                line: 1,
                column: 1,
                message: String::new(),
            })
        };
        let mut out = Vec::new();
        for h in inv.hosts.iter().filter(|h| self.selects(h)) {
            let machine_with_guests = h.guest_of.is_some()
                || inv
                    .hosts
                    .iter()
                    .any(|g| g.guest_of.as_ref() == Some(&h.name) && self.selects(g));
            if machine_with_guests {
                let mut e = at();
                e.message = format!(
                    "order = \"{}\" sets variants up on several devices of one host at a time, \
                     but host {} of {} shares its disk with a guest (guest_of): metal and guest \
                     take turns on it, variant by variant; valid: order = \"sequential\" (and \
                     guest_order = \"alternate\" or \"metal-first\"), or leave the guests out \
                     ([hosts] in the matrix)",
                    self.order,
                    h.name,
                    inv.path.display(),
                );
                out.push(e);
                continue;
            }
            let variants = self
                .filesystems
                .iter()
                .filter(|f| {
                    f.fs_type.runs_on(h.os)
                        && crate::config::fsopts::os_refuses(f.fs_type, h.os, &f.mkfs_options)
                            .is_none()
                })
                .count();
            if h.devices.len() < 2 && variants > 1 {
                let mut e = at();
                e.message = format!(
                    "order = \"{}\" needs one device per variant set up at the same time, \
                     but host {} of {} lists one device ({}) for {variants} variants, and \
                     rebuilding the filesystem between runs is not supported; valid: list more \
                     devices on host {} (devices = [...] in the inventory) or use order = \"sequential\"",
                    self.order,
                    h.name,
                    inv.path.display(),
                    h.device(),
                    h.name
                );
                out.push(e);
            }
            let slots = h.devices.len().min(variants.max(1));
            if u32::from(h.pg_port) + slots as u32 - 1 > u32::from(u16::MAX) {
                let mut e = at();
                e.message = format!(
                    "order = \"{}\" gives each device of host {} its own PostgreSQL port \
                     (pg_port + device index), but pg_port = {} + {} is beyond 65535; \
                     valid: a lower pg_port for host {}",
                    self.order,
                    h.name,
                    h.pg_port,
                    slots - 1,
                    h.name
                );
                out.push(e);
            }
        }
        out
    }

    /// Whether the matrix's `[hosts]` filter keeps `h` (as the plan decides).
    fn selects(&self, h: &Host) -> bool {
        let Some(f) = &self.hosts else { return true };
        (f.names.is_empty() || f.names.iter().any(|n| n == h.name.as_str()))
            && (f.tags.is_empty()
                || h.tags
                    .iter()
                    .any(|t| f.tags.iter().any(|x| x == t.as_str())))
            && (f.os.is_empty() || f.os.contains(&h.os))
    }

    /// Scripts that run commands or reach files run only on hosts whose
    /// inventory entry allows them (`allow_script_commands = true`): one
    /// error per feature used, at its line in the script, with every host
    /// that does not.  A scanner cannot see dynamic SQL: it is the first
    /// gate; the last is that psql and pgbench run as `client_user` and
    /// connect as a role without superuser rights.
    fn check_scripts_allowed(&self, inv: &Inventory, scan: ScriptScanner) -> Vec<ConfigError> {
        let fs_types: Vec<FsType> = self.filesystems.iter().map(|f| f.fs_type).collect();
        let refused: Vec<&str> = inv
            .hosts
            .iter()
            .filter(|h| self.selects(h))
            .filter(|h| fs_types.iter().any(|t| t.runs_on(h.os)))
            .filter(|h| !h.allow_script_commands)
            .map(|h| h.name.as_str())
            .collect();
        if refused.is_empty() {
            return Vec::new();
        }
        let base = self.path.parent().unwrap_or(std::path::Path::new(""));
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for w in &self.workloads {
            let Some((path, sha256, _)) = w.kind.script() else {
                continue;
            };
            // Two workloads of one script: its uses said once.
            if seen.contains(&(path, sha256)) {
                continue;
            }
            seen.push((path, sha256));
            for u in scan(&w.kind) {
                out.push(ConfigError {
                    file: base.join(path),
                    line: u.line,
                    column: u.column,
                    message: format!(
                        "`{}` in the script of workload `{}` {} and is refused on host{} {} of {}: \
                         the host's owner must allow scripts that run commands or reach files; \
                         valid: add allow_script_commands = true to the [[host]] (or [defaults]) \
                         of the inventory, or remove it from the script",
                        u.feature,
                        w.name,
                        u.what,
                        if refused.len() > 1 { "s" } else { "" },
                        refused.join(", "),
                        inv.path.display(),
                    ),
                });
            }
        }
        out
    }

    /// Settings that run commands, load code or name files run only on
    /// hosts whose inventory entry allows them: one error per setting, with
    /// every host that does not.
    fn check_settings_allowed(&self, inv: &Inventory) -> Vec<ConfigError> {
        let mut out = Vec::new();
        for g in &self.guarded {
            let fs_types: Vec<FsType> = match &g.variant {
                Some(v) => self
                    .filesystems
                    .iter()
                    .filter(|f| &f.name == v)
                    .map(|f| f.fs_type)
                    .collect(),
                None => self.filesystems.iter().map(|f| f.fs_type).collect(),
            };
            let refused: Vec<&str> = inv
                .hosts
                .iter()
                .filter(|h| self.selects(h))
                .filter(|h| fs_types.iter().any(|t| t.runs_on(h.os)))
                .filter(|h| {
                    !h.allow_postgres_settings
                        .iter()
                        .any(|a| a.as_str() == g.setting)
                })
                .map(|h| h.name.as_str())
                .collect();
            if refused.is_empty() {
                continue;
            }
            let mut e = g.at.clone();
            let place = match &g.variant {
                Some(v) => format!("filesystem `{v}`"),
                None => "[postgres]".to_string(),
            };
            e.message = {
                format!(
                    "postgresql setting `{}` in {place} {} and is refused on host{} {} of {}: \
                     the host's owner must allow it there; valid: add \
                     allow_postgres_settings = [\"{}\"] to the [[host]] (or [defaults]) of the inventory",
                    g.setting,
                    g.class,
                    if refused.len() > 1 { "s" } else { "" },
                    refused.join(", "),
                    inv.path.display(),
                    g.setting
                )
            };
            out.push(e);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::test_support::*;
    use super::super::DEFAULT_MAX_CELLS;
    use super::*;

    /// For tests of other checks: a scanner that finds nothing.
    const NO_SCAN: ScriptScanner = |_| Vec::new();

    #[test]
    fn scripts_that_run_commands_need_the_inventory_s_consent_per_host() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("sql")).expect("mkdir");
        std::fs::write(dir.path().join("sql/w.sql"), "select 1;\n\\! id\n").expect("write");
        let inv = Inventory::parse(
            Path::new("/i/inv.toml"),
            "[defaults]\nos = \"linux\"\n[[host]]\nname = \"a\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/sdb\"]\nallow_script_commands = true\n[[host]]\nname = \"b\"\naddress = \"10.0.0.2\"\ndevices = [\"/dev/sdb\"]\n[[host]]\nname = \"c\"\naddress = \"10.0.0.3\"\ndevices = [\"/dev/sdb\"]\n".to_string(),
        )
        .expect("inventory");
        assert!(inv.hosts[0].allow_script_commands && !inv.hosts[1].allow_script_commands);
        assert_eq!(inv.hosts[1].client_user.as_str(), "nobody");
        // The inventory as the agent renders it for a sweep keeps both.
        let back = Inventory::parse(
            Path::new("/i/inv.toml"),
            crate::config::inventory::render(&inv),
        )
        .expect("rendered inventory");
        assert!(back.hosts[0].allow_script_commands && !back.hosts[1].allow_script_commands);
        assert_eq!(back.hosts[1].client_user.as_str(), "nobody");
        let text = |hosts: &str| {
            format!("name = \"m\"\n{hosts}[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n[[workload]]\nname = \"load\"\nsql_script = \"sql/w.sql\"\n[[workload]]\nname = \"again\"\nsql_script = \"./sql/w.sql\"\n")
        };
        let m = Matrix::parse(&dir.path().join("m.toml"), text("")).expect("matrix");
        const ONE: ScriptScanner = |_| {
            vec![ScriptUse {
                line: 2,
                column: 1,
                feature: "\\!".into(),
                what: "runs a shell command on the host",
            }]
        };
        let e = m.check_against(&inv, ONE).expect_err("refused").to_string();
        // One error per use, not per workload naming the same script.
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.starts_with(&format!(
                "{}:2:1: error: `\\!` in the script of workload `load` runs a shell command on the host \
                 and is refused on hosts b, c of /i/inv.toml",
                dir.path().join("sql/w.sql").display()
            )),
            "{e}"
        );
        assert!(e.ends_with("valid: add allow_script_commands = true to the [[host]] (or [defaults]) of the inventory, or remove it from the script"), "{e}");
        assert!(m.check_against(&inv, NO_SCAN).is_ok());
        // Hosts the matrix does not select are not asked.
        let m = Matrix::parse(
            &dir.path().join("m.toml"),
            text("[hosts]\nnames = [\"a\"]\n"),
        )
        .expect("matrix");
        assert!(m.check_against(&inv, ONE).is_ok());
        // The key is a boolean; client_user a user name, never root.
        for (bad, want) in [
            (
                "allow_script_commands = \"yes\"",
                "`allow_script_commands` in [defaults] must be true or false",
            ),
            ("client_user = \"root\"", "client_user `root` is root"),
            (
                "client_user = \"No Body\"",
                "user name `No Body` contains a space",
            ),
        ] {
            let e = Inventory::parse(
                Path::new("/i/inv.toml"),
                format!("[defaults]\nos = \"linux\"\n{bad}\n[[host]]\nname = \"a\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/sdb\"]\n"),
            )
            .expect_err(bad)
            .to_string();
            assert!(
                e.contains("/i/inv.toml:3:") && e.contains(want),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn a_plan_larger_than_max_cells_is_refused_with_the_count() {
        let inv = crate::config::Inventory::parse(
            Path::new("inv.toml"),
            "[defaults]\nos = \"linux\"\n[[host]]\nname = \"a\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/sdb\"]\n[[host]]\nname = \"b\"\naddress = \"10.0.0.2\"\ndevices = [\"/dev/sdb\"]\n".to_string(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let text = |max: &str| {
            format!("name = \"m\"\n{max}repeats = 5\n[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n[[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1, 2]\nduration = \"5s\"\n")
        };
        // 2 hosts × 1 variant × 2 clients × 5 repeats = 20 cells.
        let m = parse(&text("max_cells = 19\n")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.most_cells(2), 20);
        let e = m.check_against(&inv, NO_SCAN).expect_err("20 > 19");
        let e = e.to_string();
        assert!(
            e.contains("m.toml:2:13:") && e.contains("up to 20 cells on the 2 hosts"),
            "{e}"
        );
        let m = parse(&text("max_cells = 20\n")).unwrap_or_else(|e| panic!("{e}"));
        assert!(m.check_against(&inv, NO_SCAN).is_ok());
        let m = parse(&text("")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.max_cells, DEFAULT_MAX_CELLS);
        assert!(parse(&text("max_cells = 0\n")).is_err());
    }

    #[test]
    fn settings_that_run_commands_need_the_inventory_s_consent_per_host() {
        let inv = Inventory::parse(
            Path::new("/i/inv.toml"),
            "[defaults]\nos = \"linux\"\n[[host]]\nname = \"a\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/sdb\"]\nallow_postgres_settings = [\"Shared_Preload_Libraries\"]\n[[host]]\nname = \"b\"\naddress = \"10.0.0.2\"\ndevices = [\"/dev/sdb\"]\n".to_string(),
        )
        .expect("inventory");
        let m = parse(&format!(
            "name = \"m\"\n{WL}[postgres]\nArchive_Command = \"true\"\n[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\npostgres = {{ shared_preload_libraries = \"pg_stat_statements\", Work_Mem = \"4MB\" }}\n"
        ))
        .expect("matrix");
        // Names are stored as PostgreSQL compares them.
        let names: Vec<&str> = m.filesystems[0]
            .postgres
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, ["shared_preload_libraries", "work_mem"]);
        assert_eq!(m.postgres[0].name.as_str(), "archive_command");
        let e = m
            .check_against(&inv, NO_SCAN)
            .expect_err("refused")
            .to_string();
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), 2, "{e}");
        assert!(
            lines[0].starts_with("m.toml:9:1: error: postgresql setting `archive_command` in [postgres] runs a command on the host and is refused on hosts a, b of /i/inv.toml"),
            "{e}"
        );
        assert!(
            lines[0].ends_with("valid: add allow_postgres_settings = [\"archive_command\"] to the [[host]] (or [defaults]) of the inventory"),
            "{e}"
        );
        assert!(
            lines[1].contains("setting `shared_preload_libraries` in filesystem `e` loads code into the server and is refused on host b of"),
            "{e}"
        );
        // fsmatrix's own settings are refused in the matrix itself; a
        // name set twice in two cases is one setting set twice.
        let e = parse(&format!(
            "name = \"m\"\n{WL}[postgres]\nPort = 5433\nwork_mem = \"1MB\"\nWORK_MEM = \"2MB\"\n[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n"
        ))
        .expect_err("refused")
        .to_string();
        assert!(
            e.contains("setting `Port` in [postgres] is set by fsmatrix itself"),
            "{e}"
        );
        assert!(
            e.contains("settings `WORK_MEM` and `work_mem` in [postgres] are one setting"),
            "{e}"
        );
        // An inventory cannot allow fsmatrix's own settings or plain ones.
        let e = Inventory::parse(
            Path::new("/i/inv.toml"),
            "[defaults]\nos = \"linux\"\nallow_postgres_settings = [\"port\", \"shared_buffers\"]\n[[host]]\nname = \"a\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/sdb\"]\n".to_string(),
        )
        .expect_err("refused")
        .to_string();
        assert!(
            e.contains(
                "/i/inv.toml:3:28: error: postgresql setting `port` is set by fsmatrix itself"
            ),
            "{e}"
        );
        assert!(e.contains("`shared_buffers` needs no allowing"), "{e}");
    }
}
