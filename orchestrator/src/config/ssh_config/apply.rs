//! What a resolved alias gives a host: the values the inventory did not
//! set, with where each came from, and what `plan` and `check` print.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ConfigFile, Resolved, ResolvedHop};
use crate::config::inventory::{machine_key, Auth, HopConfig, Host, JumpSpec};
use crate::config::values::{shown, Address, UserName};

/// A value of a host and where it came from, as `plan` and `check` show it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    // IdentityFile: every one that exists, offered in order, as ssh does.
    if !set.auth {
        let port = host.port.to_string();
        let tokens = [
            ('h', host.address.as_str()),
            ('n', r.alias.as_str()),
            ('p', port.as_str()),
            ('r', host.user.as_str()),
            ('u', r.local_user.as_deref().unwrap_or("")),
        ];
        if let Some(ids) = identities(r, home, &tokens, &cfg)? {
            src.insert(
                "identity_file".into(),
                sourced(ids.shown(), ids.from.clone()),
            );
            host.auth = Auth::IdentityFile(ids.first.clone());
            host.more_identity_files = ids.more;
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
    if let (Some(pj), false) = (&r.proxy_jump, set.proxy_jump) {
        let chain = match &r.jump_chain {
            Some(Ok(c)) => c,
            Some(Err(e)) => return Err(e.clone()),
            None => return Err(format!("ProxyJump `{}` was not followed", shown(pj))),
        };
        host.proxy_jump = chain
            .iter()
            .map(|hop| jump_spec(hop, config, home, warnings))
            .collect::<Result<_, _>>()?;
        check_chain(host).map_err(|e| {
            format!(
                "ssh config {} sets ProxyJump `{}` for `{}`: {e}",
                config.shown,
                shown(pj),
                r.alias
            )
        })?;
        let shown_chain: Vec<String> = chain.iter().map(|h| h.written.clone()).collect();
        let mut from = cfg("ProxyJump");
        if chain.len() > 1 || chain.iter().any(|h| h.named_by != r.alias) {
            from.push_str(&format!(" `{pj}`, followed hop by hop"));
        }
        src.insert("proxy_jump".into(), sourced(shown_chain.join(" → "), from));
        from_config = true;
    }
    if from_config {
        host.ssh_sources = src;
    }
    Ok(())
}

/// The IdentityFiles a configuration gives, expanded: every one that
/// exists in order; when none does, the first explicit one (connecting
/// names it as missing).
struct Identities {
    first: PathBuf,
    more: Vec<PathBuf>,
    from: String,
}

impl Identities {
    fn shown(&self) -> String {
        std::iter::once(&self.first)
            .chain(&self.more)
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The IdentityFiles `r` sets (or, with `IdentitiesOnly yes` alone, the
/// default ones that exist), expanded with `tokens`; `None`: none.
fn identities(
    r: &Resolved,
    home: Option<&Path>,
    tokens: &[(char, &str)],
    cfg: &dyn Fn(&str) -> String,
) -> Result<Option<Identities>, String> {
    let explicit = !r.identity_files.is_empty();
    let (candidates, kw) = if explicit {
        (&r.identity_files, "IdentityFile")
    } else if r.identities_only == Some(true) {
        (
            &r.default_identity_files,
            "IdentitiesOnly with the default IdentityFile",
        )
    } else {
        return Ok(None);
    };
    let paths = candidates
        .iter()
        .map(|c| expand_identity(c, home, tokens))
        .collect::<Result<Vec<_>, _>>()?;
    let existing: Vec<PathBuf> = paths.iter().filter(|p| p.exists()).cloned().collect();
    let mut from = cfg(kw);
    let (first, more) = match existing.split_first() {
        Some((first, more)) => {
            if paths.len() > 1 {
                from.push_str(&format!(
                    ", {} of {} exist{}, offered in order",
                    existing.len(),
                    paths.len(),
                    if existing.len() == 1 { "s" } else { "" }
                ));
            }
            (first.clone(), more.to_vec())
        }
        // Defaults that do not exist are not offered (as ssh).
        None if !explicit => return Ok(None),
        None => {
            if paths.len() > 1 {
                from.push_str(&format!(
                    ", none of {} exists: the first is named",
                    paths.len()
                ));
            } else {
                from.push_str(", which does not exist");
            }
            (paths[0].clone(), Vec::new())
        }
    };
    Ok(Some(Identities { first, more, from }))
}

/// One jump hop from its resolution: the HostName through the address
/// validator, the user and port ssh would use, its own IdentityFiles and
/// UserKnownHostsFile, and where each came from.
pub fn jump_spec(
    hop: &ResolvedHop,
    config: &ConfigFile,
    home: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Result<JumpSpec, String> {
    let cfg = |kw: &str| format!("ssh config {}: {kw}", config.shown);
    let written = || format!("ProxyJump `{}` of {}", hop.written, hop.named_by);
    let at = format!(
        "ssh config {}, ProxyJump hop `{}` of `{}`",
        config.shown, hop.written, hop.named_by
    );
    let address = Address::new(&hop.hostname)
        .map_err(|e| format!("{at} resolves to HostName `{}`: {e}", shown(&hop.hostname)))?;
    let user =
        UserName::new(&hop.user).map_err(|e| format!("{at}: User `{}`: {e}", shown(&hop.user)))?;
    let port = hop
        .port
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("{at}: Port `{}`", shown(&hop.port)))?;
    let mut sources = BTreeMap::new();
    let mut put = |k: &str, value: String, from: String| {
        sources.insert(k.to_string(), Sourced { value, from });
    };
    put(
        "address",
        address.to_string(),
        match &hop.set.hostname {
            Some(_) => format!("{} (alias {})", cfg("HostName"), hop.alias),
            None => written(),
        },
    );
    let from_of = |w: bool, s: bool, kw: &str| {
        if w {
            written()
        } else if s {
            cfg(kw)
        } else {
            "default".to_string()
        }
    };
    put(
        "user",
        user.to_string(),
        from_of(hop.written_user.is_some(), hop.set.user.is_some(), "User"),
    );
    put(
        "port",
        port.to_string(),
        from_of(hop.written_port.is_some(), hop.set.port.is_some(), "Port"),
    );
    let port_s = port.to_string();
    let tokens = [
        ('h', address.as_str()),
        ('n', hop.alias.as_str()),
        ('p', port_s.as_str()),
        ('r', user.as_str()),
        ('u', hop.set.local_user.as_deref().unwrap_or("")),
    ];
    let mut identity_files = Vec::new();
    if let Some(ids) = identities(&hop.set, home, &tokens, &cfg)? {
        put("identity_file", ids.shown(), ids.from.clone());
        identity_files = std::iter::once(ids.first).chain(ids.more).collect();
    }
    let mut known_hosts = None;
    if let Some(files) = &hop.set.user_known_hosts {
        if files.iter().any(|f| f == "/dev/null") {
            warnings.push(format!(
                "jump host `{}`: ssh config {} sets UserKnownHostsFile /dev/null for it; \
                 ignored: fsmatrix's host-key checking stays strict (the host's known_hosts)",
                hop.alias, config.shown
            ));
        } else if let Some(first) = files.first() {
            let mut from = cfg("UserKnownHostsFile");
            if files.len() > 1 {
                from.push_str(&format!(", the first of {}", files.len()));
            }
            put("known_hosts", first.clone(), from);
            known_hosts = Some(PathBuf::from(first));
        }
    }
    Ok(JumpSpec {
        user: Some(user),
        address,
        port,
        config: Some(HopConfig {
            written: hop.written.clone(),
            identity_files,
            known_hosts,
            sources,
        }),
    })
}

/// A resolved chain names no machine twice and not the host itself.
fn check_chain(host: &Host) -> Result<(), String> {
    let key = |a: &Address, p: u16| (machine_key(a.as_str()), p);
    let mut seen = vec![key(&host.address, host.port)];
    for (i, hop) in host.proxy_jump.iter().enumerate() {
        let k = key(&hop.address, hop.port);
        if seen.contains(&k) {
            return Err(format!(
                "hop {} reaches {}:{}, which the chain already reaches (or the host itself): a loop",
                i + 1,
                hop.address,
                hop.port
            ));
        }
        seen.push(k);
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
            let mut lines = vec![format!("{}: {}", h.name, parts.join(", "))];
            for (i, hop) in h.proxy_jump.iter().enumerate() {
                let Some(c) = &hop.config else { continue };
                let parts: Vec<String> = ORDER
                    .iter()
                    .filter_map(|k| {
                        c.sources
                            .get(*k)
                            .map(|s| format!("{k} {} ({})", s.value, s.from))
                    })
                    .collect();
                lines.push(format!(
                    "  jump host {} `{}`: {}",
                    i + 1,
                    c.written,
                    parts.join(", ")
                ));
            }
            lines
        })
        .collect::<Vec<Vec<String>>>()
        .concat()
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
    use crate::config::{GivenPaths, Inventory};

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
                format!("{}/lab_known_hosts", ssh_home()),
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
        assert_eq!(
            lines.len(),
            2,
            "{lines:?}: the host and its jump host; the IP host is not resolved"
        );
        assert_eq!(
            lines[0],
            format!(
                "lab1: address 10.0.1.5 (ssh config config: HostName (alias db-metal-1)), \
                 user bench (ssh config config: User), port 2222 (ssh config config: Port), \
                 identity_file {home}/.ssh/lab_bench (ssh config config: IdentityFile, which \
                 does not exist), \
                 known_hosts {}/lab_known_hosts (ssh config config: UserKnownHostsFile), \
                 proxy_jump ops@bastion.lab:2200 (ssh config config: ProxyJump)",
                ssh_home()
            )
        );
        // The hop names its user and port; its address is no alias here.
        assert_eq!(
            lines[1],
            "  jump host 1 `ops@bastion.lab:2200`: address bastion.lab (ProxyJump \
             `ops@bastion.lab:2200` of db-metal-1), user ops (ProxyJump `ops@bastion.lab:2200` of \
             db-metal-1), port 2200 (ProxyJump `ops@bastion.lab:2200` of db-metal-1)"
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

    /// What `ssh -G -F cfg [-l user] [-p port] -- alias` prints, run here
    /// directly: the truth each resolved value is compared with.
    fn ssh_g(cfg: &Path, alias: &str) -> super::super::Dump {
        let out = std::process::Command::new("ssh")
            .arg("-G")
            .arg("-F")
            .arg(cfg)
            .arg("--")
            .arg(alias)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        super::super::parse_dump(&String::from_utf8_lossy(&out.stdout))
    }

    /// Each jump hop as (user, address, port).
    fn hops_of(h: &Host) -> Vec<(String, String, u16)> {
        h.proxy_jump
            .iter()
            .map(|j| {
                (
                    j.user.as_ref().unwrap().to_string(),
                    j.address.to_string(),
                    j.port,
                )
            })
            .collect()
    }

    /// What `ssh -G` says each alias reaches: (user, hostname, port).
    fn reached_by_ssh(cfg: &Path, aliases: &[&str]) -> Vec<(String, String, u16)> {
        aliases
            .iter()
            .map(|a| {
                let d = ssh_g(cfg, a);
                (
                    d["user"][0].clone(),
                    d["hostname"][0].clone(),
                    d["port"][0].parse().unwrap(),
                )
            })
            .collect()
    }

    /// A laptop's config as real ones are laid out: aliases with `_`,
    /// several IdentityFiles, an Include, a jump host that is an alias with
    /// its own HostName/User/Port/key and its own ProxyJump (a two-hop
    /// chain), `Host *` defaults last, and a loop.
    const LAPTOP: &str = "Include INC\n\
        Host web_1\n  HostName 127.0.0.10\n  User deploy\n\
        \x20 IdentityFile ~/.ssh/missing_key\n  IdentityFile ~/.ssh/id_web\n\
        \x20 IdentityFile ~/.ssh/id_web2\n  ProxyJump office\n\
        Host office\n  HostName 127.0.0.3\n  User ops\n  Port 2202\n\
        \x20 IdentityFile ~/.ssh/office_key\n  ProxyJump office_gw\n\
        Host loop_a\n  HostName 127.0.0.20\n  ProxyJump loop_b\n\
        Host loop_b\n  HostName 127.0.0.21\n  ProxyJump loop_a\n\
        Host none_exist\n  HostName 127.0.0.30\n  IdentityFile ~/.ssh/no1\n  IdentityFile ~/.ssh/no2\n\
        Host *\n  User fallback\n  UserKnownHostsFile ~/kh_all\n";

    /// [`LAPTOP`] in `t` with its keys (files whose existence counts) and
    /// the Included jump host office_gw; the config's path.
    fn laptop(t: &Tmp) -> PathBuf {
        std::fs::create_dir_all(t.0.join(".ssh")).unwrap();
        for k in ["id_web", "id_web2", "office_key", "gw_key"] {
            t.write(
                &format!(".ssh/{k}"),
                "not a key; only its existence counts here\n",
            );
        }
        let inc = t.write(
            "gw.conf",
            "Host office_gw\n  HostName 127.0.0.2\n  User gwuser\n  Port 2201\n\
             \x20 IdentityFile %d/.ssh/gw_key\n",
        );
        t.write("config", &LAPTOP.replace("INC", &inc.display().to_string()))
    }

    #[test]
    fn an_aliased_jump_chain_resolves_hop_by_hop_as_ssh_g_does() {
        let t = Tmp::new("chain");
        let cfg = laptop(&t);
        if !have_ssh() {
            return;
        }
        let body = |addr: &str| {
            format!(
                "ssh_config = \"config\"\n[[host]]\nname = \"x\"\nos = \"linux\"\n\
                 address = \"{addr}\"\ndevices = [\"/dev/vdb\"]\n"
            )
        };
        let inv = inventory(&t, &resolver(&t.0), &body("web_1")).unwrap_or_else(|e| panic!("{e}"));
        let h = &inv.hosts[0];
        let one = |d: &super::super::Dump, k: &str| d[k][0].clone();
        let web = ssh_g(&cfg, "web_1");
        // The host: every value as ssh -G gives it.
        assert_eq!(h.address.as_str(), one(&web, "hostname"));
        assert_eq!(h.user.as_str(), one(&web, "user"));
        assert_eq!(h.port.to_string(), one(&web, "port"));
        let ssh_ids: Vec<PathBuf> = web["identityfile"]
            .iter()
            .map(|f| expand_identity(f, Some(&t.0), &[]).unwrap())
            .filter(|p| p.exists())
            .collect();
        assert_eq!(ssh_ids.len(), 2, "{web:?}");
        assert_eq!(h.auth, Auth::IdentityFile(ssh_ids[0].clone()));
        assert_eq!(h.more_identity_files, ssh_ids[1..]);
        // The chain: office's own ProxyJump (office_gw) comes first, as
        // `ssh -J office web_1` would reach office through office_gw.
        let hops = hops_of(h);
        let want = reached_by_ssh(&cfg, &["office_gw", "office"]);
        assert_eq!(hops, want);
        assert_eq!(
            want[0],
            ("gwuser".to_string(), "127.0.0.2".to_string(), 2201)
        );
        // Each hop's own key and known_hosts.
        for (hop, alias) in h.proxy_jump.iter().zip(["office_gw", "office"]) {
            let c = hop.config.as_ref().unwrap();
            let d = ssh_g(&cfg, alias);
            let ids: Vec<PathBuf> = d["identityfile"]
                .iter()
                .map(|f| expand_identity(f, Some(&t.0), &[]).unwrap())
                .collect();
            assert_eq!(c.identity_files, ids, "{alias}");
            assert_eq!(
                c.known_hosts.as_ref().map(|p| p.display().to_string()),
                Some(one(&d, "userknownhostsfile")),
                "{alias}"
            );
        }
        let lines = provenance_lines(&inv.hosts);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(
            lines[0].contains(
                "identity_file {0}/.ssh/id_web, {0}/.ssh/id_web2 (ssh config config: \
                 IdentityFile, 2 of 3 exist, offered in order)"
                    .replace("{0}", &t.0.display().to_string())
                    .as_str()
            ) && lines[0].contains(
                "proxy_jump office_gw → office (ssh config config: ProxyJump `office`, \
                 followed hop by hop)"
            ),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].starts_with(
                "  jump host 1 `office_gw`: address 127.0.0.2 (ssh config config: HostName \
                 (alias office_gw)), user gwuser (ssh config config: User), port 2201 (ssh \
                 config config: Port)"
            ),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].starts_with("  jump host 2 `office`: address 127.0.0.3"),
            "{}",
            lines[2]
        );

        // A loop is an error naming it.
        let e = inventory(&t, &resolver(&t.0), &body("loop_a")).unwrap_err();
        assert!(
            e.contains("has a ProxyJump loop: loop_a → loop_b → loop_a"),
            "{e}"
        );
        // No IdentityFile exists: the message says so.
        let inv =
            inventory(&t, &resolver(&t.0), &body("none_exist")).unwrap_or_else(|e| panic!("{e}"));
        let l = &provenance_lines(&inv.hosts)[0];
        assert!(l.contains("none of 2 exists: the first is named"), "{l}");
        assert!(!l.contains("that exists"), "{l}");
    }

    /// The inventory's own `proxy_jump` naming an alias is resolved through
    /// the same config, hop by hop, as `ssh -J office HOST` does: office's
    /// own ProxyJump first; a user and port written in it win (as `-l`/`-p`).
    #[test]
    fn an_inventory_proxy_jump_naming_an_alias_resolves_as_ssh_j_does() {
        let t = Tmp::new("invjump");
        let cfg = laptop(&t);
        if !have_ssh() {
            return;
        }
        let body = |pj: &str| {
            format!(
                "ssh_config = \"config\"\n[[host]]\nname = \"x\"\nos = \"linux\"\n\
                 address = \"127.0.0.50\"\nuser = \"root\"\ndevices = [\"/dev/vdb\"]\n\
                 proxy_jump = \"{pj}\"\n"
            )
        };
        let inv = inventory(&t, &resolver(&t.0), &body("office")).unwrap_or_else(|e| panic!("{e}"));
        let h = &inv.hosts[0];
        assert_eq!(h.address.as_str(), "127.0.0.50");
        let got = hops_of(h);
        let want = reached_by_ssh(&cfg, &["office_gw", "office"]);
        assert_eq!(got, want);
        assert_eq!(want[1], ("ops".into(), "127.0.0.3".into(), 2202));
        let keys: Vec<&Path> = h.proxy_jump[1]
            .config
            .as_ref()
            .unwrap()
            .identity_files
            .iter()
            .map(|p| p.as_path())
            .collect();
        assert_eq!(keys, [t.0.join(".ssh/office_key").as_path()]);
        let lines = provenance_lines(&inv.hosts);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(
            lines[0].contains("proxy_jump office_gw → office (inventory, each hop resolved through ssh config config)"),
            "{}",
            lines[0]
        );
        assert!(
            lines[2].starts_with("  jump host 2 `office`: address 127.0.0.3"),
            "{}",
            lines[2]
        );

        // A user and port written in the inventory win over the config's.
        let inv = inventory(&t, &resolver(&t.0), &body("bob@office_gw:2300"))
            .unwrap_or_else(|e| panic!("{e}"));
        let j = &inv.hosts[0].proxy_jump[0];
        assert_eq!(
            (
                j.user.as_ref().unwrap().as_str(),
                j.address.as_str(),
                j.port
            ),
            ("bob", "127.0.0.2", 2300)
        );
        // IP addresses only: no ssh runs, the hops are as written.
        let inv = inventory(&t, &resolver(&t.0), &body("root@127.0.0.9"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(inv.hosts[0].proxy_jump[0].config.is_none());
        assert!(provenance_lines(&inv.hosts).is_empty());
        // A loop through the inventory's hop is an error naming it.
        let e = inventory(&t, &resolver(&t.0), &body("loop_a")).unwrap_err();
        assert!(
            e.contains("ProxyJump loop: loop_a → loop_b → loop_a"),
            "{e}"
        );
        assert!(
            e.contains("proxy_jump `loop_a` names an alias of ssh config"),
            "{e}"
        );
    }

    /// An alias (`web_1`, a hop `office_gw`) of a config the inventory names
    /// but the user did not vouch for is not refused again as an address:
    /// the one error names the config and the flag.  With no config read, the
    /// address error says how to name one.
    #[test]
    fn an_alias_of_an_unread_config_is_refused_once_and_says_why() {
        let t = Tmp::new("unread");
        laptop(&t);
        // The errors of an inventory naming `cfg` as its ssh config, which
        // the user did not name with --ssh-config.
        let refused = |cfg: &str| {
            let body = format!(
                "ssh_config = \"{cfg}\"\n[[host]]\nname = \"x\"\nos = \"linux\"\n\
                 address = \"web_1\"\ndevices = [\"/dev/vdb\"]\n\
                 [[host]]\nname = \"y\"\nos = \"linux\"\naddress = \"10.0.0.7\"\n\
                 devices = [\"/dev/vdb\"]\nproxy_jump = \"office_gw\"\n"
            );
            let unvouched = GivenPaths {
                ssh_config: None,
                recorded: None,
            };
            Inventory::parse_with(&t.0.join("inv.toml"), body, &resolver(&t.0), &unvouched)
                .unwrap_err()
                .to_string()
        };
        let e = refused("config");
        assert_eq!(e.matches(": error: ").count(), 1, "{e}");
        assert!(e.contains("read only when you name it too"), "{e}");
        assert!(e.contains("give --ssh-config"), "{e}");
        assert!(!e.contains("contains `_`"), "{e}");

        let e = refused("none");
        assert_eq!(e.matches(": error: ").count(), 2, "{e}");
        for alias in ["web_1", "office_gw"] {
            assert!(
                e.contains(&format!(
                    "if `{alias}` is an alias of your ssh config, name that file: ssh_config = \
                     \"~/.ssh/config\" at the inventory's top"
                )),
                "{e}"
            );
        }
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
