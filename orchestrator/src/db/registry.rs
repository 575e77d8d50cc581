//! The agent's host registry and what a submission may ask of it: the
//! trust model of lab-wide sweeps (docs/trust.md).
//!
//! The agent acts only on its operator's own inventory (`agent --registry`):
//! addresses, credentials, known hosts, ssh config, devices and every
//! consent come from there.  A submission is other people's text: it is
//! read here only for the hosts it names and for what it narrows (fewer
//! devices, fewer consents), never parsed as an inventory (no `~`, no path,
//! no ssh config is ever looked at on the agent's machine), and a request
//! the registry does not grant refuses the whole sweep.  Its scripts are
//! content, checked against their checksums and written into a private
//! folder the matrix is planned from.
use std::collections::BTreeSet;
use std::path::{Component, Path};

use toml::{Table, Value};

use super::queue::SubmittedScript;
use crate::config::{Host, Inventory};

/// The most text a submission's inventory may hold.
const MAX_SUBMISSION: usize = 1 << 20;

/// Keys whose value is a path, on the agent's machine (`identity_file`,
/// `known_hosts`, `ssh_config`) or run as root on the host (`pg_bin`,
/// `work_dir`): the registry's alone, refused in a submission.
pub const PATH_KEYS: &[&str] = &[
    "identity_file",
    "known_hosts",
    "ssh_config",
    "pg_bin",
    "work_dir",
];

/// Keys a submission narrows: each value must be within the registry's.
const NARROWING_KEYS: &[&str] = &[
    "devices",
    "consent_foreign",
    "allow_postgres_settings",
    "allow_script_commands",
];

/// Keys that describe how to reach or use a host: the registry's values are
/// used, a submission's are not read (its `address` and `port` are checked
/// against the registry's through the queued cells, see [`check_cells`]).
const REGISTRY_KEYS: &[&str] = &[
    "address",
    "port",
    "user",
    "become",
    "agent",
    "os",
    "platform",
    "disk_bus",
    "pg_user",
    "pg_port",
    "proxy_jump",
    "client_user",
];

/// Read the operator's registry (`agent --registry`): an ordinary
/// inventory, validated as `run` validates one.  `ssh_config`: the path
/// given on the command line (`agent --ssh-config`), for the inventory
/// loader's rule that an inventory's `ssh_config` counts only when the
/// person running fsmatrix names the same file (the registry is the
/// operator's own, but the rule is the loader's, in one place).
pub fn load(
    path: &Path,
    ssh_config: Option<&Path>,
) -> Result<Inventory, crate::config::ConfigErrors> {
    let given = crate::config::inventory::GivenPaths {
        ssh_config: ssh_config.map(Path::to_path_buf),
        recorded: None,
    };
    Inventory::load_given(path, &given)
}

/// One host a submission names, with what it narrows (`None`: not said).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Wanted {
    name: String,
    tags: Option<Vec<String>>,
    devices: Option<Vec<String>>,
    consent_foreign: Option<Vec<String>>,
    allow_postgres_settings: Option<Vec<String>>,
    /// `allow_script_commands = true` asked for (absent or false: not).
    allow_script_commands: bool,
}

/// Read a submission's inventory text for what the agent lets it say.
/// Every refusal is a sentence saying what and what would be valid.
fn read_submission(text: &str) -> Result<Vec<Wanted>, String> {
    if text.len() > MAX_SUBMISSION {
        return Err(format!(
            "the submitted inventory is {} bytes, more than the {MAX_SUBMISSION} an agent reads",
            text.len()
        ));
    }
    let doc: Table = toml::from_str(text)
        .map_err(|e| format!("the submitted inventory is not TOML: {}", e.message()))?;
    for k in doc.keys() {
        if PATH_KEYS.contains(&k.as_str()) {
            return Err(path_key(k, "the inventory"));
        }
        if k != "defaults" && k != "host" {
            return Err(format!(
                "the submitted inventory has `{}`; valid: [defaults] and [[host]] tables",
                crate::text::terminal_safe(k)
            ));
        }
    }
    let empty = Table::new();
    let defaults = match doc.get("defaults") {
        None => &empty,
        Some(Value::Table(t)) => t,
        Some(_) => return Err("the submitted inventory's `defaults` is not a table".into()),
    };
    check_keys(defaults, "[defaults]")?;
    if defaults.contains_key("name") {
        return Err(
            "the submitted inventory's [defaults] has `name`: every host needs its own".into(),
        );
    }
    let hosts = match doc.get("host") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        _ => {
            return Err(
                "the submitted inventory names no host; valid: [[host]] tables with a `name` \
                 from the agent's registry"
                    .into(),
            )
        }
    };
    let mut wanted: Vec<Wanted> = Vec::new();
    for (i, h) in hosts.iter().enumerate() {
        let Value::Table(t) = h else {
            return Err(format!(
                "the submitted inventory's [[host]] {} is not a table",
                i + 1
            ));
        };
        let ctx = format!("[[host]] {}", i + 1);
        check_keys(t, &ctx)?;
        let name = match t.get("name") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => return Err(format!("the submitted inventory's {ctx} has no `name`")),
        };
        if wanted.iter().any(|w| w.name == name) {
            return Err(format!(
                "the submitted inventory names host `{}` twice",
                crate::text::terminal_safe(&name)
            ));
        }
        let list = |k: &str| -> Result<Option<Vec<String>>, String> {
            match t.get(k).or_else(|| defaults.get(k)) {
                None => Ok(None),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| match v {
                        Value::String(s) => Ok(s.clone()),
                        _ => Err(format!(
                            "`{k}` of host `{}` in the submitted inventory is not a list of strings",
                            crate::text::terminal_safe(&name)
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some),
                Some(_) => Err(format!(
                    "`{k}` of host `{}` in the submitted inventory is not a list of strings",
                    crate::text::terminal_safe(&name)
                )),
            }
        };
        wanted.push(Wanted {
            tags: list("tags")?,
            devices: list("devices")?,
            consent_foreign: list("consent_foreign")?,
            allow_postgres_settings: list("allow_postgres_settings")?,
            allow_script_commands: match t
                .get("allow_script_commands")
                .or_else(|| defaults.get("allow_script_commands"))
            {
                None => false,
                Some(Value::Boolean(b)) => *b,
                Some(_) => {
                    return Err(format!(
                        "`allow_script_commands` of host `{}` in the submitted inventory is not \
                         true or false",
                        crate::text::terminal_safe(&name)
                    ))
                }
            },
            name,
        });
    }
    Ok(wanted)
}

fn path_key(k: &str, ctx: &str) -> String {
    format!(
        "the submitted inventory sets `{k}` in {ctx}: a submission names hosts, it never names \
         files or programs (the agent's registry gives credentials, known hosts, ssh config, \
         pg_bin and work_dir); valid: remove `{k}`"
    )
}

fn check_keys(t: &Table, ctx: &str) -> Result<(), String> {
    for k in t.keys() {
        if PATH_KEYS.contains(&k.as_str()) {
            return Err(path_key(k, ctx));
        }
        if !(k == "name"
            || k == "tags"
            || NARROWING_KEYS.contains(&k.as_str())
            || REGISTRY_KEYS.contains(&k.as_str()))
        {
            return Err(format!(
                "the submitted inventory's {ctx} has `{}`, which a submission cannot set; valid: \
                 name, tags, devices, consent_foreign, allow_postgres_settings, \
                 allow_script_commands (and the \
                 registry's own keys, which are not read)",
                crate::text::terminal_safe(k)
            ));
        }
    }
    Ok(())
}

/// `asked` within `allowed` (in `asked`'s order), or the first item not in it.
fn within<'a>(asked: &'a [String], allowed: &[String]) -> Result<Vec<String>, &'a str> {
    match asked.iter().find(|a| !allowed.contains(a)) {
        Some(a) => Err(a),
        None => Ok(asked.to_vec()),
    }
}

/// The registry's rows for the hosts a submission names, narrowed as it
/// asks; a request the registry does not grant is refused with why.
pub fn narrow(registry: &Inventory, submitted: &str) -> Result<Vec<Host>, String> {
    let wanted = read_submission(submitted)?;
    let names: Vec<&str> = registry.hosts.iter().map(|h| h.name.as_str()).collect();
    let mut out = Vec::with_capacity(wanted.len());
    for w in wanted {
        let shown = crate::text::terminal_safe(&w.name).into_owned();
        let Some(r) = registry.hosts.iter().find(|h| h.name.as_str() == w.name) else {
            return Err(format!(
                "host `{shown}` is not in the agent's registry; valid: {}",
                names.join(", ")
            ));
        };
        let mut h = r.clone();
        let strs = |v: &[crate::config::values::DevicePath]| -> Vec<String> {
            v.iter().map(|d| d.as_str().to_string()).collect()
        };
        let registry_devices = strs(&r.devices);
        if let Some(tags) = &w.tags {
            let have: Vec<String> = r.tags.iter().map(|t| t.as_str().to_string()).collect();
            within(tags, &have).map_err(|t| {
                format!(
                    "host `{shown}`: tag `{}` is not the registry's; valid: {}",
                    crate::text::terminal_safe(t),
                    have.join(", ")
                )
            })?;
        }
        if let Some(devices) = &w.devices {
            if devices.is_empty() {
                return Err(format!(
                    "host `{shown}`: `devices` is empty; valid: one or more of {}",
                    registry_devices.join(", ")
                ));
            }
            let ok = within(devices, &registry_devices).map_err(|d| {
                format!(
                    "host `{shown}`: device `{}` is not one the registry lists for it; valid: {}",
                    crate::text::terminal_safe(d),
                    registry_devices.join(", ")
                )
            })?;
            h.devices = r
                .devices
                .iter()
                .filter(|d| ok.iter().any(|o| o == d.as_str()))
                .cloned()
                .collect();
            // The submission's order: its first device is the one built on.
            h.devices
                .sort_by_key(|d| ok.iter().position(|o| o == d.as_str()));
        }
        // Consents are the owner's: the registry's, and only those the
        // submission also asks for (not asked: none).
        let consent = strs(&r.consent_foreign);
        let asked = w.consent_foreign.clone().unwrap_or_default();
        within(&asked, &consent).map_err(|d| {
            format!(
                "host `{shown}`: consent_foreign `{}` is a consent the registry does not give; \
                 valid: {}",
                crate::text::terminal_safe(d),
                if consent.is_empty() {
                    "none".to_string()
                } else {
                    consent.join(", ")
                }
            )
        })?;
        h.consent_foreign = r
            .consent_foreign
            .iter()
            .filter(|d| asked.iter().any(|a| a == d.as_str()) && h.devices.contains(d))
            .cloned()
            .collect();
        let settings: Vec<String> = r
            .allow_postgres_settings
            .iter()
            .map(|s| s.as_str().to_string())
            .collect();
        let asked: Vec<String> = w
            .allow_postgres_settings
            .clone()
            .unwrap_or_default()
            .iter()
            .map(|s| s.to_lowercase())
            .collect();
        within(&asked, &settings).map_err(|s| {
            format!(
                "host `{shown}`: allow_postgres_settings `{}` is a consent the registry does not \
                 give; valid: {}",
                crate::text::terminal_safe(s),
                if settings.is_empty() {
                    "none".to_string()
                } else {
                    settings.join(", ")
                }
            )
        })?;
        h.allow_postgres_settings = r
            .allow_postgres_settings
            .iter()
            .filter(|s| asked.iter().any(|a| a == s.as_str()))
            .cloned()
            .collect();
        // Scripts that run commands: the owner's consent and the
        // submitter's request, both (not asked: not allowed).
        if w.allow_script_commands && !r.allow_script_commands {
            return Err(format!(
                "host `{shown}`: allow_script_commands is a consent the registry does not give; \
                 valid: remove it (the host's owner has not allowed scripts that run commands)"
            ));
        }
        h.allow_script_commands = w.allow_script_commands && r.allow_script_commands;
        out.push(h);
    }
    // A guest runs on its physical host's disk, under its lock: that host
    // must be in the sweep too, with the device it gives the guest.
    for g in &out {
        let (Some(of), Some(vm)) = (&g.guest_of, &g.vm) else {
            continue;
        };
        let name = crate::text::terminal_safe(g.name.as_str()).into_owned();
        match out.iter().find(|h| &h.name == of) {
            None => {
                return Err(format!(
                    "host `{name}` is a guest of `{of}` in the agent's registry; a guest runs on its                      physical host's disk under that host's lock; valid: name `{of}` too"
                ))
            }
            Some(p) if !p.devices.contains(&vm.disk) => {
                return Err(format!(
                    "host `{of}`: the submission leaves out {}, the disk its guest `{name}` gets;                      valid: keep {} in its devices, or leave `{name}` out",
                    vm.disk, vm.disk
                ))
            }
            Some(_) => {}
        }
    }
    Ok(out)
}

/// The sweep's inventory: the registry's rows for the submission, narrowed,
/// under the registry's path (its relative paths keep their meaning).
pub fn sweep_inventory(registry: &Inventory, submitted: &str) -> Result<Inventory, String> {
    Ok(Inventory {
        path: registry.path.clone(),
        hosts: narrow(registry, submitted)?,
        warnings: registry.warnings.clone(),
    })
}

/// The queued cells' hosts must be the registry's machines: a submission
/// that names `lab1` at another address would lease one machine and run on
/// another.  `cells`: (host name, address, port).
pub fn check_cells(inv: &Inventory, cells: &[(String, String, i32)]) -> Result<(), String> {
    for (name, address, port) in cells {
        let Some(h) = inv.hosts.iter().find(|h| h.name.as_str() == name) else {
            return Err(format!(
                "a queued cell names host `{}`, which the submission does not",
                crate::text::terminal_safe(name)
            ));
        };
        if h.address.to_string() != *address || i32::from(h.port) != *port {
            return Err(format!(
                "host `{}` was queued at {}:{port}, but the agent's registry has it at {}:{}",
                crate::text::terminal_safe(name),
                crate::text::terminal_safe(address),
                h.address,
                h.port
            ));
        }
    }
    Ok(())
}

/// Every script a submitted matrix names must be one the submission carries
/// as content, by a relative path: checked on the TOML before the matrix is
/// parsed, so that no path of a submission is ever opened on the agent's
/// machine (the matrix loader reads `/etc/…` as readily as `sql/x.sql`).
pub fn check_matrix_scripts(matrix_text: &str, scripts: &[SubmittedScript]) -> Result<(), String> {
    if matrix_text.len() > MAX_SUBMISSION {
        return Err(format!(
            "the submitted matrix is {} bytes, more than the {MAX_SUBMISSION} an agent reads",
            matrix_text.len()
        ));
    }
    let doc: Table = toml::from_str(matrix_text)
        .map_err(|e| format!("the submitted matrix is not TOML: {}", e.message()))?;
    let Some(workloads) = doc.get("workload") else {
        return Ok(());
    };
    let Value::Array(workloads) = workloads else {
        return Err("the submitted matrix's `workload` is not an array of tables".into());
    };
    for w in workloads {
        let Value::Table(t) = w else {
            return Err("the submitted matrix's `workload` is not an array of tables".into());
        };
        for key in ["pgbench_script", "sql_script"] {
            let Some(v) = t.get(key) else { continue };
            let Value::String(written) = v else {
                return Err(format!("the submitted matrix's `{key}` is not a string"));
            };
            let rel = crate::config::matrix::script_path(written)?;
            let carried =
                rel.is_relative() && scripts.iter().any(|s| Path::new(&s.path) == rel.as_path());
            if !carried {
                return Err(format!(
                    "the submitted matrix's {key} `{}` is not among the scripts the submission \
                     carries; valid: a path relative to the matrix whose text `submit` sent (an \
                     agent never reads a submission's path on its own machine)",
                    crate::text::terminal_safe(written)
                ));
            }
        }
    }
    Ok(())
}

/// Write a submission's matrix and scripts into `dir` (a private folder of
/// the agent's): each script's path must be plain and relative, its text
/// must match its checksum.  The matrix file's path.
pub fn materialize(
    dir: &Path,
    matrix_text: &str,
    scripts: &[SubmittedScript],
) -> Result<std::path::PathBuf, String> {
    let mut seen = BTreeSet::new();
    for s in scripts {
        let p = Path::new(&s.path);
        let plain = !s.path.is_empty()
            && p.components().all(|c| matches!(c, Component::Normal(_)))
            && !s.path.contains('\0');
        if !plain {
            return Err(format!(
                "the submitted script `{}` is not a plain relative path; valid: a path under the \
                 matrix's folder without `..` (a submission's scripts are content, never files \
                 on the agent's machine)",
                crate::text::terminal_safe(&s.path)
            ));
        }
        if p == Path::new("matrix.toml") || !seen.insert(p.to_path_buf()) {
            return Err(format!(
                "the submitted script `{}` is given twice or clashes with the matrix",
                crate::text::terminal_safe(&s.path)
            ));
        }
        let sum = crate::text::sha256_hex(s.content.as_bytes());
        if sum != s.sha256 {
            return Err(format!(
                "the submitted script `{}` does not match its checksum (sha256 {sum}, recorded {})",
                crate::text::terminal_safe(&s.path),
                crate::text::terminal_safe(&s.sha256)
            ));
        }
        let at = dir.join(p);
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        write_new(&at, s.content.as_bytes())?;
    }
    let m = dir.join("matrix.toml");
    write_new(&m, matrix_text.as_bytes())?;
    Ok(m)
}

fn write_new(at: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(at)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| format!("cannot write {}: {e}", at.display()))
}

#[cfg(test)]
mod tests;
