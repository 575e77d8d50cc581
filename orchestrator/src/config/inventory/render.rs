//! An inventory back to text: what an agent's sweep keeps in its bundle
//! (the registry's rows for the sweep, `resume` reads them as any bundle's).
//! Every value is already resolved (aliases through the ssh config,
//! relative paths against the inventory), so the text says
//! `ssh_config = "none"` and loads to the same hosts at the same path.
use toml::{Table, Value};

use super::{Auth, Inventory};

fn strs<T: AsRef<str>>(v: impl IntoIterator<Item = T>) -> Value {
    Value::Array(
        v.into_iter()
            .map(|s| Value::String(s.as_ref().to_string()))
            .collect(),
    )
}

fn s(v: impl std::fmt::Display) -> Value {
    Value::String(v.to_string())
}

/// The inventory as TOML that [`Inventory::parse`] reads back to the same
/// hosts (at the same path).
pub fn render(inv: &Inventory) -> String {
    let mut root = Table::new();
    root.insert("ssh_config".into(), s("none"));
    let hosts = inv
        .hosts
        .iter()
        .map(|h| {
            let mut t = Table::new();
            t.insert("name".into(), s(h.name.as_str()));
            // A guest is reached through its physical host: its address,
            // port and jump chain follow from guest_of and [host.vm].
            if let (Some(of), Some(vm)) = (&h.guest_of, &h.vm) {
                t.insert("guest_of".into(), s(of.as_str()));
                t.insert("vm".into(), Value::Table(vm_table(vm)));
            } else {
                t.insert("address".into(), s(&h.address));
                t.insert("port".into(), Value::Integer(i64::from(h.port)));
            }
            t.insert("user".into(), s(h.user.as_str()));
            if let Some(b) = h.become_ {
                t.insert("become".into(), s(b.as_str()));
            }
            match &h.auth {
                Auth::IdentityFile(p) => {
                    t.insert("identity_file".into(), s(p.display()));
                }
                Auth::Agent => {
                    t.insert("agent".into(), Value::Boolean(true));
                }
            }
            t.insert("known_hosts".into(), s(h.known_hosts.display()));
            t.insert("os".into(), s(h.os.as_str()));
            t.insert("platform".into(), s(h.platform.as_str()));
            if let Some(b) = &h.disk_bus {
                t.insert("disk_bus".into(), s(b.as_str()));
            }
            t.insert("devices".into(), strs(h.devices.iter().map(|d| d.as_str())));
            if !h.consent_foreign.is_empty() {
                t.insert(
                    "consent_foreign".into(),
                    strs(h.consent_foreign.iter().map(|d| d.as_str())),
                );
            }
            if let Some(p) = &h.pg_bin {
                t.insert("pg_bin".into(), s(p.as_str()));
            }
            t.insert("pg_user".into(), s(h.pg_user.as_str()));
            t.insert("pg_port".into(), Value::Integer(i64::from(h.pg_port)));
            t.insert("work_dir".into(), s(h.work_dir.as_str()));
            t.insert("tags".into(), strs(h.tags.iter().map(|l| l.as_str())));
            if !h.allow_postgres_settings.is_empty() {
                t.insert(
                    "allow_postgres_settings".into(),
                    strs(h.allow_postgres_settings.iter().map(|p| p.as_str())),
                );
            }
            if h.allow_script_commands {
                t.insert("allow_script_commands".into(), Value::Boolean(true));
            }
            t.insert("client_user".into(), s(h.client_user.as_str()));
            let jump: Vec<String> = h.proxy_jump.iter().map(|j| j.to_string()).collect();
            if h.guest_of.is_none() {
                t.insert(
                    "proxy_jump".into(),
                    s(if jump.is_empty() {
                        "none".to_string()
                    } else {
                        jump.join(",")
                    }),
                );
            }
            Value::Table(t)
        })
        .collect();
    root.insert("host".into(), Value::Array(hosts));
    toml::to_string(&root).unwrap_or_default()
}

fn vm_table(vm: &super::Vm) -> Table {
    let mut t = Table::new();
    t.insert("image".into(), s(vm.image.as_str()));
    t.insert("image_format".into(), s(vm.image_format));
    for (k, v) in [("kernel", &vm.kernel), ("initrd", &vm.initrd)] {
        if let Some(p) = v {
            t.insert(k.into(), s(p.as_str()));
        }
    }
    if let Some(c) = &vm.cmdline {
        t.insert("cmdline".into(), s(c));
    }
    t.insert(
        "memory_mib".into(),
        Value::Integer(i64::from(vm.memory_mib)),
    );
    t.insert("cpus".into(), Value::Integer(i64::from(vm.cpus)));
    t.insert("disk_bus".into(), s(vm.disk_bus));
    t.insert("cache".into(), s(vm.cache));
    t.insert("aio".into(), s(vm.aio));
    t.insert("accel".into(), s(vm.accel));
    t.insert("disk".into(), s(vm.disk.as_str()));
    t.insert("ssh_port".into(), Value::Integer(i64::from(vm.ssh_port)));
    t.insert(
        "boot_timeout".into(),
        Value::Integer(vm.boot_timeout as i64),
    );
    t
}
