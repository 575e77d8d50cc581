//! What a resolved alias gives a host: the values the inventory did not
//! set, with where each came from, and what `plan` and `check` print.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ConfigFile, Resolved};
use crate::config::inventory::{parse_proxy_jump, Auth, Host};
use crate::config::values::{shown, Address, UserName};

/// A value of a host and where it came from, as `plan` and `check` show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sourced {
    pub value: String,
    /// "inventory", "default", or "ssh config FILE: Keyword".
    pub from: String,
}

/// Which connection keys the inventory set for a host (its own or
/// `[defaults]`): those the configuration does not override.
#[derive(Clone, Copy, Debug, Default)]
pub struct InventorySet {
    pub port: bool,
    pub user: bool,
    /// `identity_file` or `agent`.
    pub auth: bool,
    pub known_hosts: bool,
    pub proxy_jump: bool,
}

/// The tokens OpenSSH expands in IdentityFile that fsmatrix can know:
/// `%%`, `%d` (home), `%h` (HostName), `%n` (alias), `%p`, `%r` (remote
/// user), `%u` (local user); a leading `~/` is the home.  Others are refused.
pub fn expand_identity(
    raw: &str,
    home: Option<&Path>,
    tokens: &[(char, &str)],
) -> Result<PathBuf, String> {
    let home_s = home.map(|h| h.display().to_string());
    let mut out = String::new();
    let mut it = raw.chars();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('%') => out.push('%'),
            Some('d') => match &home_s {
                Some(h) => out.push_str(h),
                None => return Err(format!("IdentityFile `{raw}` uses %d but HOME is not set")),
            },
            Some(t) => match tokens.iter().find(|(k, _)| *k == t) {
                Some((_, v)) => out.push_str(v),
                None => {
                    return Err(format!(
                        "IdentityFile `{raw}` uses %{t}, which fsmatrix does not expand; valid \
                         tokens: %% %d %h %n %p %r %u, or give identity_file in the inventory"
                    ))
                }
            },
            None => return Err(format!("IdentityFile `{raw}` ends in a lone %")),
        }
    }
    if out.is_empty() || out.contains(['\n', '\0']) {
        return Err(format!(
            "IdentityFile `{}` is not a usable path",
            shown(raw)
        ));
    }
    let p = PathBuf::from(&out);
    Ok(match (out.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        _ if out == "~" => home.map(Path::to_path_buf).unwrap_or(p),
        // Relative to where ssh would run: the current folder.
        _ if p.is_relative() && !out.starts_with('~') => {
            std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
        }
        _ => p,
    })
}

/// Fill the fields of `host` that the inventory did not set from what the
/// configuration resolved; record where each value came from; push warnings
/// for what is ignored.  `Err`: a resolved value fsmatrix refuses.
pub fn apply(
    host: &mut Host,
    set: InventorySet,
    r: &Resolved,
    config: &ConfigFile,
    home: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let name = host.name.to_string();
    let cfg = |kw: &str| format!("ssh config {}: {kw}", config.shown);
    let mut warn = |w: String| warnings.push(format!("{name}: {w}"));
    let mut src: BTreeMap<String, Sourced> = BTreeMap::new();
    let mut from_config = false;
    let sourced = |value: String, from: String| Sourced { value, from };

    // HostName: the inventory's address is the alias; it always "sets" it.
    let address_from = match &r.hostname {
        Some(hn) => {
            host.address = Address::new(hn).map_err(|e| {
                format!(
                    "ssh config {} resolves `{}` to HostName `{}`: {e}",
                    config.shown,
                    r.alias,
                    shown(hn)
                )
            })?;
            from_config = true;
            format!("{} (alias {})", cfg("HostName"), r.alias)
        }
        None => "inventory".into(),
    };
    src.insert(
        "address".into(),
        sourced(host.address.to_string(), address_from),
    );

    let user_from = match (&r.user, set.user) {
        (_, true) => "inventory".to_string(),
        (Some(u), false) => {
            host.user = UserName::new(u).map_err(|e| {
                format!(
                    "ssh config {} sets User `{}` for `{}`: {e}",
                    config.shown,
                    shown(u),
                    r.alias
                )
            })?;
            from_config = true;
            cfg("User")
        }
        (None, false) => "default".into(),
    };
    src.insert("user".into(), sourced(host.user.to_string(), user_from));

    let port_from = match (&r.port, set.port) {
        (_, true) => "inventory".to_string(),
        (Some(p), false) => {
            host.port =
                p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
                    format!("ssh config {} sets Port `{}`", config.shown, shown(p))
                })?;
            from_config = true;
            cfg("Port")
        }
        (None, false) => "default".into(),
    };
    src.insert("port".into(), sourced(host.port.to_string(), port_from));

    if let Some(only) = r.identities_only {
        src.insert(
            "identities_only".into(),
            sourced(
                if only { "yes" } else { "no" }.into(),
                cfg("IdentitiesOnly"),
            ),
        );
        from_config = true;
    }
    // IdentityFile: fsmatrix authenticates with one key file or the agent.
    let (candidates, kw) = if !r.identity_files.is_empty() {
        (&r.identity_files, "IdentityFile")
    } else if r.identities_only == Some(true) {
        (
            &r.default_identity_files,
            "IdentitiesOnly with the default IdentityFile",
        )
    } else {
        (&Vec::new(), "")
    };
    if !candidates.is_empty() && !set.auth {
        let port = host.port.to_string();
        let tokens = [
            ('h', host.address.as_str()),
            ('n', r.alias.as_str()),
            ('p', port.as_str()),
            ('r', host.user.as_str()),
            ('u', r.local_user.as_deref().unwrap_or("")),
        ];
        let paths = candidates
            .iter()
            .map(|c| expand_identity(c, home, &tokens))
            .collect::<Result<Vec<_>, _>>()?;
        // Explicit files: the first that exists, else the first (an error
        // at connect names it).  Defaults: only one that exists.
        let explicit = !r.identity_files.is_empty();
        let pick = paths
            .iter()
            .find(|p| p.exists())
            .or(paths.first().filter(|_| explicit));
        if let Some(p) = pick {
            let mut from = cfg(kw);
            if paths.len() > 1 {
                from.push_str(&format!(", the first that exists of {}", paths.len()));
            }
            src.insert(
                "identity_file".into(),
                sourced(p.display().to_string(), from),
            );
            host.auth = Auth::IdentityFile(p.clone());
            from_config = true;
        }
    }

    if let Some(files) = &r.user_known_hosts {
        if files.iter().any(|f| f == "/dev/null") {
            warn(format!(
                "ssh config {} sets UserKnownHostsFile /dev/null for `{}`; ignored: fsmatrix's \
                 host-key checking stays strict ({})",
                config.shown,
                r.alias,
                host.known_hosts.display()
            ));
        } else if !set.known_hosts {
            if let Some(first) = files.first() {
                host.known_hosts = PathBuf::from(first);
                let mut from = cfg("UserKnownHostsFile");
                if files.len() > 1 {
                    from.push_str(&format!(", the first of {}", files.len()));
                }
                src.insert("known_hosts".into(), sourced(first.clone(), from));
                from_config = true;
            }
        }
    }
    if let Some(s) = &r.strict_host_key_checking {
        if s == "false" || s == "accept-new" {
            let shown_v = if s == "false" { "no" } else { s.as_str() };
            warn(format!(
                "ssh config {} sets StrictHostKeyChecking {shown_v} for `{}`; ignored: fsmatrix's \
                 host-key checking stays strict (an unknown or changed host key is an error)",
                config.shown, r.alias
            ));
        }
    }
    if let Some(pc) = &r.proxy_command {
        warn(format!(
            "ssh config {} sets ProxyCommand `{}` for `{}`; ignored: fsmatrix connects directly \
             (use ProxyJump)",
            config.shown,
            shown(pc),
            r.alias
        ));
    }
    if let Some(a) = &r.host_key_alias {
        warn(format!(
            "ssh config {} sets HostKeyAlias `{}` for `{}`; ignored: fsmatrix checks the host key \
             under the address {}",
            config.shown,
            shown(a),
            r.alias,
            host.address
        ));
    }
    if let Some(pj) = &r.proxy_jump {
        if !set.proxy_jump {
            // Each hop is taken as written: its own Host blocks are not
            // applied (OpenSSH would resolve each hop as its own alias).
            host.proxy_jump = parse_proxy_jump(pj).map_err(|e| {
                format!(
                    "ssh config {} sets ProxyJump for `{}`: {e}",
                    config.shown, r.alias
                )
            })?;
            src.insert("proxy_jump".into(), sourced(pj.clone(), cfg("ProxyJump")));
            from_config = true;
        }
    }
    if from_config {
        host.ssh_sources = src;
    }
    Ok(())
}

/// One line per host whose values came from an ssh config:
/// `lab1: address 10.0.1.5 (ssh config ~/.ssh/config: HostName (alias db1)), user bench (…), port 22 (default)`.
pub fn provenance_lines(hosts: &[Host]) -> Vec<String> {
    const ORDER: &[&str] = &[
        "address",
        "user",
        "port",
        "identity_file",
        "identities_only",
        "known_hosts",
        "proxy_jump",
    ];
    hosts
        .iter()
        .filter(|h| !h.ssh_sources.is_empty())
        .map(|h| {
            let parts: Vec<String> = ORDER
                .iter()
                .filter_map(|k| {
                    h.ssh_sources
                        .get(*k)
                        .map(|s| format!("{k} {} ({})", s.value, s.from))
                })
                .collect();
            format!("{}: {}", h.name, parts.join(", "))
        })
        .collect()
}

/// What `plan` and `check` print (to stderr, so `--json` stays clean):
/// where each host's values came from when an ssh config gave some, then
/// the inventory's warnings.  Empty when there is nothing to say.
pub fn report(inv: &crate::config::Inventory) -> String {
    let mut s = String::new();
    for l in provenance_lines(&inv.hosts) {
        s.push_str(&l);
        s.push('\n');
    }
    for w in &inv.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::Resolver;
    use super::*;

    #[test]
    fn an_alias_only_host_is_filled_from_the_ssh_config_with_sources() {
        let t = Tmp::new("inv-alias");
        lab(&t);
        if !have_ssh() {
            return;
        }
        let r = resolver(&t.0);
        let inv = inventory(
            &t,
            &r,
            "ssh_config = \"config\"\n[defaults]\nos = \"linux\"\ndevices = [\"/dev/vdb\"]\n\
             [[host]]\nname = \"lab1\"\naddress = \"db-metal-1\"\n\
             [[host]]\nname = \"lab2\"\naddress = \"10.0.1.6\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let h = &inv.hosts[0];
        let home = t.0.display();
        let table: Vec<(&str, String, String)> = vec![
            ("address", h.address.to_string(), "10.0.1.5".into()),
            ("user", h.user.to_string(), "bench".into()),
            ("port", h.port.to_string(), "2222".into()),
            (
                "auth",
                format!("{:?}", h.auth),
                format!("IdentityFile({:?})", t.0.join(".ssh/lab_bench")),
            ),
            (
                "known_hosts",
                h.known_hosts.display().to_string(),
                // Expanded by ssh with the real home, not the injected one.
                format!(
                    "{}/lab_known_hosts",
                    std::env::var("HOME").unwrap_or_default()
                ),
            ),
            (
                "proxy_jump",
                format!(
                    "{:?}",
                    h.proxy_jump
                        .iter()
                        .map(|j| j.to_string())
                        .collect::<Vec<_>>()
                ),
                "[\"ops@bastion.lab:2200\"]".into(),
            ),
        ];
        for (what, got, want) in &table {
            assert_eq!(got, want, "{what}");
        }
        let lines = provenance_lines(&inv.hosts);
        assert_eq!(lines.len(), 1, "{lines:?}: the IP host is not resolved");
        assert_eq!(
            lines[0],
            format!(
                "lab1: address 10.0.1.5 (ssh config config: HostName (alias db-metal-1)), \
                 user bench (ssh config config: User), port 2222 (ssh config config: Port), \
                 identity_file {home}/.ssh/lab_bench (ssh config config: IdentityFile), \
                 known_hosts {}/lab_known_hosts (ssh config config: UserKnownHostsFile), \
                 proxy_jump ops@bastion.lab:2200 (ssh config config: ProxyJump)",
                std::env::var("HOME").unwrap_or_default()
            )
        );
        assert!(inv.warnings.is_empty(), "{:?}", inv.warnings);
    }

    #[test]
    fn inventory_and_defaults_keys_win_over_the_ssh_config() {
        let t = Tmp::new("inv-wins");
        lab(&t);
        if !have_ssh() {
            return;
        }
        let inv = inventory(
            &t,
            &resolver(&t.0),
            "ssh_config = \"config\"\n[defaults]\nos = \"linux\"\ndevices = [\"/dev/vdb\"]\n\
             user = \"root\"\nagent = true\n\
             [[host]]\nname = \"lab1\"\naddress = \"db-metal-1\"\nport = 22\n\
             known_hosts = \"kh\"\nproxy_jump = \"none\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let h = &inv.hosts[0];
        assert_eq!(
            (
                h.address.as_str(),
                h.user.as_str(),
                h.port,
                &h.auth,
                h.known_hosts.clone(),
                h.proxy_jump.len()
            ),
            ("10.0.1.5", "root", 22, &Auth::Agent, t.0.join("kh"), 0)
        );
        assert_eq!(
            provenance_lines(&inv.hosts),
            [
                "lab1: address 10.0.1.5 (ssh config config: HostName (alias db-metal-1)), \
              user root (inventory), port 22 (inventory)"
            ]
        );
    }

    #[test]
    fn a_config_that_weakens_host_key_checking_is_warned_and_ignored() {
        let t = Tmp::new("inv-strict");
        lab(&t);
        if !have_ssh() {
            return;
        }
        let inv = inventory(
            &t,
            &resolver(&t.0),
            "ssh_config = \"config\"\n[defaults]\nos = \"linux\"\ndevices = [\"/dev/vdb\"]\n\
             [[host]]\nname = \"loose\"\naddress = \"db-loose\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            inv.hosts[0].known_hosts,
            PathBuf::from("~/.ssh/known_hosts")
        );
        assert_eq!(inv.warnings.len(), 2, "{:?}", inv.warnings);
        for (w, what) in inv
            .warnings
            .iter()
            .zip(["UserKnownHostsFile /dev/null", "StrictHostKeyChecking no"])
        {
            assert!(w.starts_with("loose: ssh config config sets "), "{w}");
            assert!(w.contains(what), "{w}");
            assert!(
                w.contains("ignored: fsmatrix's host-key checking stays strict"),
                "{w}"
            );
        }
        // What plan and check print.
        let rep = report(&inv);
        assert!(
            rep.starts_with(
                "loose: address db-loose (inventory), user bench (ssh config config: User)"
            ) && rep
                .contains("\nwarning: loose: ssh config config sets UserKnownHostsFile /dev/null"),
            "{rep}"
        );
    }

    #[test]
    fn a_resolved_host_name_goes_through_the_address_validator() {
        let t = Tmp::new("inv-badname");
        lab(&t);
        if !have_ssh() {
            return;
        }
        let e = inventory(
            &t,
            &resolver(&t.0),
            "ssh_config = \"config\"\n[[host]]\nname = \"x\"\nos = \"linux\"\naddress = \"db-bad\"\ndevices = [\"/dev/vdb\"]\n",
        )
        .unwrap_err();
        assert!(e.contains("inv.toml:5:11: error: ssh config config resolves `db-bad` to HostName `bad_name.example`: address"), "{e}");
    }

    #[test]
    fn no_ssh_runs_for_ip_addresses_or_without_a_config() {
        let t = Tmp::new("inv-nossh");
        t.write("config", "Host *\n  User star\n");
        // A program that does not exist: any attempt to run it is an error.
        let r = Resolver {
            ssh: PathBuf::from("/nonexistent/ssh"),
            ..resolver(&t.0)
        };
        let body = |cfg: &str, addr: &str| {
            format!("{cfg}[[host]]\nname = \"x\"\nos = \"linux\"\naddress = \"{addr}\"\ndevices = [\"/dev/vdb\"]\n")
        };
        for (cfg, addr) in [
            ("ssh_config = \"config\"\n", "10.0.0.1"),
            ("ssh_config = \"config\"\n", "fd00::5"),
            ("ssh_config = \"none\"\n", "db1.lab.example"),
            // No ~/.ssh/config under the injected home, none named.
            ("", "db1.lab.example"),
        ] {
            let inv =
                inventory(&t, &r, &body(cfg, addr)).unwrap_or_else(|e| panic!("{cfg}{addr}: {e}"));
            assert!(inv.hosts[0].ssh_sources.is_empty());
        }
        // With a config, an alias needs ssh: the error says what to do.
        let e = inventory(&t, &r, &body("ssh_config = \"config\"\n", "db1")).unwrap_err();
        assert!(e.contains("inv.toml:5:11: error: cannot resolve address `db1` of [[host]] `x` through ssh config config: `/nonexistent/ssh` was not found"), "{e}");
        assert!(e.contains("install openssh-client"), "{e}");
        // ~/.ssh/config under the home is the default.
        std::fs::create_dir_all(t.0.join(".ssh")).unwrap();
        t.write(".ssh/config", "Host *\n  User star\n");
        let e = inventory(&t, &r, &body("", "db1")).unwrap_err();
        assert!(e.contains("through ssh config ~/.ssh/config"), "{e}");
        // A named file that does not exist.
        let e = inventory(&t, &r, &body("ssh_config = \"nope\"\n", "db1")).unwrap_err();
        assert!(
            e.contains("inv.toml:1:14: error: ssh_config `nope` is not a file"),
            "{e}"
        );
    }

    #[test]
    fn identity_tokens_are_expanded_or_refused() {
        let home = Path::new("/home/al");
        let tok = [
            ('h', "10.0.1.5"),
            ('n', "db1"),
            ('p', "22"),
            ('r', "bench"),
            ('u', "al"),
        ];
        for (raw, want) in [
            ("~/.ssh/id_%r", "/home/al/.ssh/id_bench"),
            ("%d/.ssh/%n-%h-%p", "/home/al/.ssh/db1-10.0.1.5-22"),
            ("/k/100%%", "/k/100%"),
            ("/k/%u", "/k/al"),
        ] {
            assert_eq!(
                expand_identity(raw, Some(home), &tok).unwrap(),
                PathBuf::from(want),
                "{raw}"
            );
        }
        for bad in ["/k/%C", "/k/%", "/k/%l"] {
            assert!(expand_identity(bad, Some(home), &tok).is_err(), "{bad}");
        }
    }
}
