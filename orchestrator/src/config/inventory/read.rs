//! The TOML reader: an inventory file's text to [`Inventory`], every host's
//! keys checked, its address resolved through the ssh config, its files
//! anchored at the inventory's folder.
use super::*;

impl Inventory {
    /// Read and validate an inventory file the user gave, no path named on
    /// the command line (an `ssh_config` in it is refused, see [`GivenPaths`]).
    pub fn load(path: &Path) -> Result<Inventory, ConfigErrors> {
        Inventory::load_given(path, &GivenPaths::default())
    }

    /// [`Inventory::load`] with what the user named on the command line.
    pub fn load_given(path: &Path, given: &GivenPaths) -> Result<Inventory, ConfigErrors> {
        let text = super::super::read_file(path)?;
        Inventory::parse_given(path, text, given)
    }

    /// Validate inventory text; `path` names it in errors and anchors relative paths.
    /// Aliases are resolved through the ssh config ([`super::ssh_config`]).
    pub fn parse(path: &Path, text: String) -> Result<Inventory, ConfigErrors> {
        Inventory::parse_given(path, text, &GivenPaths::default())
    }

    /// [`Inventory::parse`] with what the user named on the command line.
    pub fn parse_given(
        path: &Path,
        text: String,
        given: &GivenPaths,
    ) -> Result<Inventory, ConfigErrors> {
        Inventory::parse_with(path, text, &Resolver::from_env(), given)
    }

    /// [`Inventory::parse_given`] with the `ssh -G` program and home given.
    pub fn parse_with(
        path: &Path,
        text: String,
        resolver: &Resolver,
        given: &GivenPaths,
    ) -> Result<Inventory, ConfigErrors> {
        super::super::parse_collecting(path, text, |src, errs| {
            parse_doc(src, errs, resolver, given)
        })
    }
}

fn parse_doc(
    src: &Source,
    errs: &mut Errors<'_>,
    resolver: &Resolver,
    given: &GivenPaths,
) -> Option<Inventory> {
    let doc = match DeTable::parse(&src.text) {
        Ok(d) => d,
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            errs.push(&span, format!("invalid toml: {}", e.message().trim_end()));
            return None;
        }
    };
    let root = Tbl {
        t: doc.get_ref(),
        span: &doc.span(),
        ctx: "the inventory",
    };
    root.check_keys(errs, &["defaults", "host", "ssh_config"]);
    let defaults = root.table(errs, "defaults");
    let dctx = "[defaults]".to_string();
    let dtbl = defaults.and_then(|v| match v.get_ref() {
        DeValue::Table(t) => Some((t, v.span())),
        _ => None,
    });
    if let Some((t, span)) = &dtbl {
        let d = Tbl {
            t,
            span,
            ctx: &dctx,
        };
        // Not `guest_of` and `vm`: every guest names its own physical host.
        d.check_keys(errs, &HOST_KEYS[1..HOST_KEYS.len() - 2]);
        recorded_paths(errs, &d, base_of(src), given, resolver.home.as_deref());
        recorded_consents(errs, &d, "*", given);
        if let Some(v) = d.get("name") {
            errs.push(
                &v.span(),
                "`name` cannot be a default: every host needs its own",
            );
        }
    }
    let Some(hosts_v) = root.get("host") else {
        errs.push(
            &(0..0),
            "the inventory has no [[host]]; add at least one with name, address and devices",
        );
        return None;
    };
    let host_tables = super::super::walk::tables(errs, hosts_v, "host");
    let base = base_of(src);
    let dt = dtbl.as_ref().map(|(t, _)| *t);
    let mut ssh = SshAliases::resolve(errs, &root, dt, &host_tables, base, resolver, given);
    let mut seen: BTreeMap<String, ()> = BTreeMap::new();
    let mut hosts: Vec<(Host, Tbl<'_, '_>)> = Vec::new();
    // (normalised address, port) of every host so far, where, and its name.
    let mut reach: Vec<((String, u16), std::ops::Range<usize>, String)> = Vec::new();
    // Each host's name for messages, kept as long as its table is.
    let ctxs: Vec<String> = host_tables
        .iter()
        .map(|(t, _)| {
            let label = t
                .iter()
                .find(|(k, _)| k.get_ref().as_ref() == "name")
                .and_then(|(_, v)| v.get_ref().as_str().map(str::to_string))
                .unwrap_or_else(|| "?".into());
            format!("[[host]] `{label}`")
        })
        .collect();
    for ((t, span), ctx) in host_tables.iter().zip(&ctxs) {
        let h = Tbl { t, span, ctx };
        h.check_keys(errs, HOST_KEYS);
        recorded_paths(errs, &h, base, given, resolver.home.as_deref());
        if let Some(n) = h.get("name").and_then(|v| v.get_ref().as_str()) {
            recorded_consents(errs, &h, n, given);
        }
        let d = dtbl.as_ref().map(|(t, span)| Tbl {
            t,
            span,
            ctx: &dctx,
        });
        if let Some(v) = h.get("name") {
            if let Some(n) = v.get_ref().as_str() {
                if seen.insert(n.to_string(), ()).is_some() {
                    errs.push(
                        &v.span(),
                        format!("duplicate host name `{n}`; every [[host]] needs a unique name"),
                    );
                }
            }
        }
        if let Some(mut host) = parse_host(errs, &h, d.as_ref(), base, &ssh) {
            if !ssh.apply(errs, &h, d.as_ref(), &mut host) {
                continue;
            }
            ssh.note_inventory_jump(&mut host);
            hosts.push((host, h));
        }
    }
    vm::resolve_guests(errs, &mut hosts);
    for (host, h) in &hosts {
        let at = h.get("name").map_or(h.span.clone(), |v| v.span());
        let key = (reach_key(host), host.port);
        match reach.iter().find(|(k, _, _)| *k == key) {
            Some((_, first_at, first_name)) => {
                let (line, _) = src.line_col(first_at.start);
                errs.push(
                    &at,
                    format!(
                        "[[host]] `{}` reaches the same machine as [[host]] `{first_name}` ({}:{line}): \
                         address `{}` port {}; two entries for one machine would let two sweeps \
                         format its devices at once; valid: one [[host]] per machine (another \
                         port on the same address is another machine)",
                        host.name,
                        src.path.display(),
                        host.address,
                        host.port
                    ),
                );
            }
            None => reach.push((key, at, host.name.to_string())),
        }
    }
    let hosts = hosts.into_iter().map(|(h, _)| h).collect();
    Some(Inventory {
        path: src.path.clone(),
        hosts,
        warnings: ssh.warnings,
    })
}

/// The ssh config an inventory resolves its aliases through (`ssh_config`,
/// else `~/.ssh/config` when it exists) and what each alias resolved to:
/// resolved once per load, all hosts at once, before any host is checked
/// against the others (two aliases may name one machine).
/// How an inventory's `proxy_jump` is named in messages about its hops.
const JUMP_NAMED_BY: &str = "the inventory's proxy_jump";

struct SshAliases {
    config: Option<ConfigFile>,
    /// The inventory names an ssh config that was not read (an error says
    /// why): what may be its aliases is not refused a second time as an
    /// address.
    unread: bool,
    home: Option<PathBuf>,
    resolved: BTreeMap<String, Result<Resolved, String>>,
    /// Each `proxy_jump` the inventory writes that names an alias (a hop that
    /// is no IP address), its hops resolved through the same config, as `ssh
    /// -J` resolves them ([`Resolver::jump_chain`]).
    jumps: BTreeMap<String, Result<Vec<JumpSpec>, String>>,
    warnings: Vec<String>,
}

impl SshAliases {
    fn resolve(
        errs: &mut Errors<'_>,
        root: &Tbl<'_, '_>,
        defaults: Option<&DeTable<'_>>,
        hosts: &[(&DeTable<'_>, std::ops::Range<usize>)],
        base: &Path,
        resolver: &Resolver,
        given: &GivenPaths,
    ) -> SshAliases {
        let config = ssh_config_file(errs, root, base, resolver, given);
        let mut aliases: Vec<String> = Vec::new();
        if config.is_some() {
            let address = |t: &DeTable<'_>| {
                t.iter()
                    .find(|(k, _)| k.get_ref().as_ref() == "address")
                    .and_then(|(_, v)| v.get_ref().as_str().map(str::to_string))
            };
            for (t, _) in hosts {
                let Some(a) = address(t).or_else(|| defaults.and_then(address)) else {
                    continue;
                };
                // An IP address is no alias: ssh is not run for it.  An
                // alias is what OpenSSH takes (`web_1` too); its HostName
                // goes through the address validator.
                if ssh_config::validate_alias(&a).is_ok()
                    && a.parse::<std::net::IpAddr>().is_err()
                    && !aliases.contains(&a)
                {
                    aliases.push(a);
                }
            }
        }
        // The inventory's own `proxy_jump` values that name an alias: ssh -J
        // looks each hop up in the config too.
        let mut jump_values: Vec<String> = Vec::new();
        if config.is_some() {
            let proxy_jump = |t: &DeTable<'_>| {
                t.iter()
                    .find(|(k, _)| k.get_ref().as_ref() == "proxy_jump")
                    .and_then(|(_, v)| v.get_ref().as_str().map(str::to_string))
            };
            for pj in hosts
                .iter()
                .filter_map(|(t, _)| proxy_jump(t))
                .chain(defaults.and_then(proxy_jump))
            {
                let names_alias = split_proxy_jump(&pj).is_ok_and(|hops| {
                    hops.iter()
                        .any(|(_, host, _)| host.parse::<std::net::IpAddr>().is_err())
                });
                if names_alias && !jump_values.contains(&pj) {
                    jump_values.push(pj);
                }
            }
        }
        let mut warnings = Vec::new();
        let mut jumps = BTreeMap::new();
        if let Some(c) = &config {
            for pj in jump_values {
                let mut out = Vec::new();
                let chain = resolver
                    .jump_chain(c, JUMP_NAMED_BY, &pj, &mut Vec::new(), &mut out)
                    .map_err(|e| e.to_string())
                    .and_then(|()| {
                        out.iter()
                            .map(|hop| {
                                ssh_config::jump_spec(
                                    hop,
                                    c,
                                    resolver.home.as_deref(),
                                    &mut warnings,
                                )
                            })
                            .collect::<Result<Vec<_>, _>>()
                    });
                jumps.insert(pj, chain);
            }
        }
        let resolved = match &config {
            Some(c) => aliases
                .iter()
                .cloned()
                .zip(
                    resolver
                        .resolve_all(c, &aliases)
                        .into_iter()
                        .map(|r| r.map_err(|e| e.to_string())),
                )
                .collect(),
            None => BTreeMap::new(),
        };
        let unread = config.is_none()
            && root
                .get("ssh_config")
                .and_then(|v| v.get_ref().as_str())
                .is_some_and(|s| s != "none");
        SshAliases {
            config,
            unread,
            home: resolver.home.clone(),
            resolved,
            jumps,
            warnings,
        }
    }

    /// The hops of an inventory `proxy_jump` value resolved through the
    /// config; `None`: not resolved (no config, or only IP addresses).
    fn inventory_jump(&self, value: &str) -> Option<Result<Vec<JumpSpec>, String>> {
        let config = self.config.as_ref()?;
        self.jumps.get(value).map(|r| {
            r.clone().map_err(|e| {
                format!(
                    "proxy_jump `{value}` names an alias of ssh config {}, which does not \
                     resolve: {e}",
                    config.shown
                )
            })
        })
    }

    /// A host whose inventory `proxy_jump` was resolved through the config
    /// shows where it came from (as a chain from the config does).
    fn note_inventory_jump(&self, host: &mut Host) {
        let Some(config) = &self.config else { return };
        if host.ssh_sources.contains_key("proxy_jump")
            || !host.proxy_jump.iter().any(|j| j.config.is_some())
        {
            return;
        }
        let chain: Vec<String> = host
            .proxy_jump
            .iter()
            .map(|j| {
                j.config
                    .as_ref()
                    .map_or_else(|| j.to_string(), |c| c.written.clone())
            })
            .collect();
        host.ssh_sources.insert(
            "proxy_jump".into(),
            Sourced {
                value: chain.join(" → "),
                from: format!(
                    "inventory, each hop resolved through ssh config {}",
                    config.shown
                ),
            },
        );
    }

    /// `value` (an `address`, or a `proxy_jump` when `jump`) names what can
    /// only be an alias of the ssh config the inventory names, which was not
    /// read: the error about that config is the one to give.
    fn waits_for_config(&self, value: &str, jump: bool) -> bool {
        let alias = |a: &str| ssh_config::validate_alias(a).is_ok() && Address::new(a).is_err();
        self.unread
            && if jump {
                split_proxy_jump(value)
                    .is_ok_and(|hops| hops.iter().any(|(_, host, _)| alias(host)))
            } else {
                alias(value)
            }
    }

    /// The address an alias that is no address resolved to (its HostName,
    /// when valid): what the host's `address` is until [`Self::apply`].
    fn alias_address(&self, alias: &str) -> Option<Address> {
        match self.resolved.get(alias)? {
            Ok(r) => Address::new(r.hostname.as_deref()?).ok(),
            Err(_) => None,
        }
    }

    /// Fill what the inventory left to the ssh config; `false` (an error
    /// pushed) when the alias did not resolve to values fsmatrix accepts.
    fn apply(
        &mut self,
        errs: &mut Errors<'_>,
        h: &Tbl<'_, '_>,
        d: Option<&Tbl<'_, '_>>,
        host: &mut Host,
    ) -> bool {
        // Looked up by the alias as written (the address may be its
        // HostName already, [`Self::alias_address`]).
        let written = pick(h, d, "address")
            .and_then(|t| t.get("address"))
            .and_then(|v| v.get_ref().as_str().map(str::to_string))
            .unwrap_or_else(|| host.address.to_string());
        let (Some(config), Some(r)) = (&self.config, self.resolved.get(&written)) else {
            return true;
        };
        let span = pick(h, d, "address")
            .and_then(|t| t.get("address"))
            .map_or(h.span.clone(), |v| v.span());
        let set = |k: &str| pick(h, d, k).is_some();
        let result = match r {
            Err(e) => Err(format!(
                "cannot resolve address `{}` of {} through ssh config {}: {e}",
                host.address, h.ctx, config.shown
            )),
            Ok(r) if r.is_empty() => Ok(()),
            Ok(r) => ssh_config::apply(
                host,
                InventorySet {
                    port: set("port"),
                    user: set("user"),
                    auth: set("identity_file") || set("agent"),
                    known_hosts: set("known_hosts"),
                    proxy_jump: set("proxy_jump"),
                },
                r,
                config,
                self.home.as_deref(),
                &mut self.warnings,
            )
            .map_err(|e| format!("{e} (the address of {})", h.ctx)),
        };
        match result {
            Ok(()) => true,
            Err(e) => {
                errs.push(&span, e);
                false
            }
        }
    }
}

/// The inventory's folder: relative paths in it are relative to it.
fn base_of(src: &Source) -> &Path {
    src.path.parent().unwrap_or(Path::new(""))
}

/// In an inventory recorded in a bundle, the `identity_file` and
/// `known_hosts` of one table (a host's or [defaults]) must be named on the
/// command line ([`GivenPaths`]); each one that is not is an error naming
/// the file it would have used and the flag that accepts it.
fn recorded_paths(
    errs: &mut Errors<'_>,
    t: &Tbl<'_, '_>,
    base: &Path,
    given: &GivenPaths,
    home: Option<&Path>,
) {
    let Some(named) = &given.recorded else {
        return;
    };
    for (key, list) in [
        ("identity_file", &named.identity_files),
        ("known_hosts", &named.known_hosts),
    ] {
        let Some(v) = t.get(key) else { continue };
        let Some(s) = v.get_ref().as_str() else {
            continue; // its type is another error
        };
        let p = local_path(base, s);
        if given::among(&p, list, home) {
            continue;
        }
        let would = given::normal(&p, home);
        errs.push(
            &v.span(),
            format!(
                "`{key}` of {} recorded in the bundle names {}; a path from a bundle is used only \
                 when you name it: give {} {} if you trust that file (or run with your own \
                 inventory, -i)",
                t.ctx,
                shown(&would.display().to_string()),
                given::flag_of(key),
                shown(&would.display().to_string())
            ),
        );
    }
}

/// In an inventory recorded in a bundle, the devices and consents of one
/// table (a host's, `host` its name, or [defaults], `*`) are used only
/// when the user names each on the command line ([`GivenPaths`]): which
/// disks may be destroyed, which foreign signatures overwritten, which
/// settings and script commands allowed are the host owner's to say, and
/// a bundle's recording says only what its own sweep was allowed.  Each
/// one not named is an error at its value, with the words that accept it.
fn recorded_consents(errs: &mut Errors<'_>, t: &Tbl<'_, '_>, host: &str, given: &GivenPaths) {
    let Some(named) = &given.recorded else {
        return;
    };
    for key in given::CONSENT_KEYS {
        let Some(v) = t.get(key) else { continue };
        // (value, its span): each list item, or a true bool; other types
        // are errors of their own.
        let items: Vec<(Option<String>, std::ops::Range<usize>)> = match v.get_ref() {
            DeValue::Array(a) => a
                .iter()
                .filter_map(|i| {
                    i.get_ref()
                        .as_str()
                        .map(|s| (Some(s.to_string()), i.span()))
                })
                .collect(),
            DeValue::Boolean(true) => vec![(None, v.span())],
            _ => Vec::new(),
        };
        for (value, span) in items {
            let (flag, word) = given::consent_word(host, key, value.as_deref());
            let list = if flag == "--device" {
                &named.devices
            } else {
                &named.consents
            };
            if list.contains(&word) {
                continue;
            }
            let what = match &value {
                Some(s) => format!(
                    "`{key}` of {} recorded in the bundle names {}",
                    t.ctx,
                    shown(s)
                ),
                None => format!("`{key} = true` of {} is recorded in the bundle", t.ctx),
            };
            errs.push(
                &span,
                format!(
                    "{what}; a bundle's devices and consents are its host owner's, not yours: \
                     give {flag} {} if this host's owner allows it (or run with your own \
                     inventory, -i)",
                    shown(&word)
                ),
            );
        }
    }
}

/// The inventory's `ssh_config` (relative to the inventory, `~/` the home;
/// `"none"`: no resolution), else `~/.ssh/config` when it exists.  A named
/// file is read only when the user named it too ([`GivenPaths`]), or when it
/// is the user's own `~/.ssh/config`.
fn ssh_config_file(
    errs: &mut Errors<'_>,
    root: &Tbl<'_, '_>,
    base: &Path,
    resolver: &Resolver,
    given: &GivenPaths,
) -> Option<ConfigFile> {
    let home = resolver.home.as_deref();
    let named = root
        .get("ssh_config")
        .and_then(|v| v.get_ref().as_str().map(|s| s != "none"))
        .unwrap_or(false);
    if let (Some(flag), false) = (&given.ssh_config, named) {
        errs.push(
            &(0..0),
            format!(
                "--ssh-config {} was given, but the inventory names no ssh_config; add \
                 ssh_config = {:?} at its top, or leave the flag out",
                shown(&flag.display().to_string()),
                given::normal(flag, home).display().to_string()
            ),
        );
    }
    if root.get("ssh_config").is_none() {
        let p = home?.join(".ssh/config");
        return p.is_file().then(|| ConfigFile {
            path: None,
            shown: "~/.ssh/config".into(),
        });
    }
    let v = root.str(errs, "ssh_config")?;
    let s = v.get_ref();
    if s == "none" {
        return None;
    }
    let valid = "valid: an OpenSSH client config file (relative to the inventory, ~/ for your \
                 home), or \"none\" to resolve no alias";
    if s.is_empty() || s.contains(['\n', '\0']) {
        errs.push(&v.span(), format!("`ssh_config` must be a path; {valid}"));
        return None;
    }
    let p = match (s.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => local_path(base, s),
    };
    if !p.is_file() {
        errs.push(
            &v.span(),
            format!(
                "ssh_config `{}` is not a file ({}); {valid}",
                shown(s),
                p.display()
            ),
        );
        return None;
    }
    let own = home.map(|h| h.join(".ssh/config"));
    let vouched = given.ssh_config.iter().chain(own.iter()).cloned();
    if !given::among(&p, &vouched.collect::<Vec<_>>(), home) {
        let abs = given::normal(&p, home).display().to_string();
        let whose = if given.recorded.is_some() {
            "recorded in the bundle "
        } else {
            ""
        };
        let other = match &given.ssh_config {
            Some(f) => format!(
                " (--ssh-config names another file, {})",
                shown(&given::normal(f, home).display().to_string())
            ),
            None => String::new(),
        };
        errs.push(
            &v.span(),
            format!(
                "ssh_config `{}` {whose}names {}, which is read only when you name it too{other}: \
                 `ssh -G` runs its `Match exec` commands as you; give --ssh-config {} if you \
                 trust that file, or remove ssh_config to use your ~/.ssh/config, or set \
                 ssh_config = \"none\"",
                shown(s),
                shown(&abs),
                shown(&abs)
            ),
        );
        return None;
    }
    Some(ConfigFile {
        path: Some(p),
        shown: s.to_string(),
    })
}

/// What an error about an address that OpenSSH takes as an alias adds when
/// no ssh config is read.
fn alias_hint(alias: &str) -> String {
    format!(
        "; if `{alias}` is an alias of your ssh config, name that file: ssh_config = \
         \"~/.ssh/config\" at the inventory's top"
    )
}

/// An address as a machine is reached by it: DNS names compared without
/// case or a trailing dot, IP addresses in their canonical form (`FD00:0::5`
/// is `fd00::5`, `::ffff:10.0.0.1` is `10.0.0.1`).  Names are not resolved:
/// a name and its address are told apart here, and by host key at `check`.
pub fn machine_key(address: &str) -> String {
    let a = address.trim_end_matches('.').to_ascii_lowercase();
    match a.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6.to_string(),
        },
        Ok(ip) => ip.to_string(),
        Err(_) => a,
    }
}

/// A host as it is reached: its [`machine_key`], after the jump chain that
/// reaches it (`10.0.0.5` behind two different bastions may be two
/// machines; `check` still tells one machine by its host key).
fn reach_key(host: &Host) -> String {
    let mut key = String::new();
    for hop in &host.proxy_jump {
        key.push_str(&format!(
            "{}:{} > ",
            machine_key(hop.address.as_str()),
            hop.port
        ));
    }
    key.push_str(&machine_key(host.address.as_str()));
    key
}

/// The table that holds `key`: the host's own, else [defaults].
fn pick<'a, 'i>(h: &Tbl<'a, 'i>, d: Option<&Tbl<'a, 'i>>, key: &str) -> Option<Tbl<'a, 'i>> {
    if h.get(key).is_some() {
        Some(*h)
    } else {
        d.filter(|d| d.get(key).is_some()).copied()
    }
}

fn local_path(base: &Path, s: &str) -> PathBuf {
    let p = PathBuf::from(s);
    if p.is_absolute() || s.starts_with('~') {
        p
    } else {
        base.join(p)
    }
}

fn parse_host(
    errs: &mut Errors<'_>,
    h: &Tbl<'_, '_>,
    d: Option<&Tbl<'_, '_>>,
    base: &Path,
    ssh: &SshAliases,
) -> Option<Host> {
    let mut ok = true;
    let name = match h.get("name") {
        Some(_) => h.typed(errs, "name", HostName::new),
        None => {
            errs.push(h.span, format!("{} has no `name`", h.ctx));
            None
        }
    };
    // A guest is reached through its physical host: 127.0.0.1:ssh_port
    // there, that host as the last jump hop (set once every host is read,
    // [`resolve_guests`]); none of its own reach keys apply.
    let guest = guest_part(errs, h);
    if guest.is_none() {
        ok = false;
    }
    let guest = guest.flatten();
    let is_guest = h.get("guest_of").is_some() || h.get("vm").is_some();
    let address = match (&guest, pick(h, d, "address")) {
        (Some(_), _) => Address::new(vm::GUEST_ADDRESS).ok(),
        (None, _) if is_guest => None,
        // An ssh alias that is no address (`web_1`): its resolved HostName,
        // validated as an address when it is applied.
        (None, Some(t)) => {
            let written = t
                .get("address")
                .and_then(|v| v.get_ref().as_str().map(str::to_string))
                .filter(|a| Address::new(a).is_err());
            match written.as_deref().map(|a| (a, ssh.alias_address(a))) {
                Some((_, Some(a))) => Some(a),
                Some((a, None)) if ssh.waits_for_config(a, false) => None,
                Some((a, None))
                    if ssh.config.is_none() && ssh_config::validate_alias(a).is_ok() =>
                {
                    let span = t.get("address").map_or(h.span.clone(), |v| v.span());
                    let why = Address::new(a).err().map(|e| e.0).unwrap_or_default();
                    errs.push(&span, format!("{why}{}", alias_hint(a)));
                    None
                }
                _ => t.typed(errs, "address", Address::new),
            }
        }
        (None, None) => {
            errs.push(
                h.span,
                format!("{} has no `address` (a DNS name or an IP address)", h.ctx),
            );
            None
        }
    };
    let port = match &guest {
        Some((_, vm)) => Some(vm.ssh_port),
        None => pick(h, d, "port")
            .map(|t| t.int(errs, "port", 1, 65535).map(|p| *p.get_ref() as u16))
            .unwrap_or(Some(22)),
    };
    let user = pick(h, d, "user")
        .map(|t| t.typed(errs, "user", UserName::new))
        .unwrap_or_else(|| UserName::new("root").ok());
    let become_ = match pick(h, d, "become") {
        Some(t) => match t.str(errs, "become") {
            Some(s) if Become::from_name(s.get_ref()).is_some() => Become::from_name(s.get_ref()),
            Some(s) => {
                errs.push(
                    &s.span(),
                    format!(
                        "unknown `become` method `{}` in {}; valid: {}",
                        s.get_ref(),
                        t.ctx,
                        Become::valid()
                    ),
                );
                ok = false;
                None
            }
            None => {
                ok = false;
                None
            }
        },
        None => None,
    };
    let agent = pick(h, d, "agent")
        .and_then(|t| t.bool(errs, "agent"))
        .unwrap_or(false);
    let identity = pick(h, d, "identity_file").and_then(|t| t.str(errs, "identity_file"));
    let auth = match identity {
        Some(p) if !agent => {
            if p.get_ref().is_empty() || p.get_ref().contains(['\n', '\0']) {
                errs.push(
                    &p.span(),
                    "`identity_file` must be a non-empty path without newlines",
                );
                ok = false;
            }
            Auth::IdentityFile(local_path(base, p.get_ref()))
        }
        _ => Auth::Agent,
    };
    let known_hosts = match pick(h, d, "known_hosts").and_then(|t| t.str(errs, "known_hosts")) {
        Some(p) => local_path(base, p.get_ref()),
        None => PathBuf::from(DEFAULT_KNOWN_HOSTS),
    };
    let os = match pick(h, d, "os") {
        Some(t) => t
            .str(errs, "os")
            .and_then(|s| match Os::parse(s.get_ref()) {
                Some(o) => Some(o),
                None => {
                    errs.push(
                        &s.span(),
                        format!(
                            "unknown os `{}` in {}; valid: {}",
                            s.get_ref(),
                            t.ctx,
                            Os::names(", ")
                        ),
                    );
                    None
                }
            }),
        None => {
            errs.push(
                h.span,
                format!(
                    "{} has no `os`; set it here or in [defaults] ({})",
                    h.ctx,
                    Os::names(", ")
                ),
            );
            None
        }
    };
    let platform = match pick(h, d, "platform") {
        Some(t) => t
            .str(errs, "platform")
            .and_then(|s| match s.get_ref().as_str() {
                "physical" => Some(Platform::Physical),
                "kvm" => Some(Platform::Kvm),
                "lab" => Some(Platform::Lab),
                other => {
                    errs.push(
                        &s.span(),
                        format!(
                            "unknown platform `{other}` in {}; valid: physical, kvm, lab",
                            t.ctx
                        ),
                    );
                    None
                }
            }),
        None if guest.is_some() => Some(Platform::Kvm),
        None => Some(Platform::Physical),
    };
    let disk_bus = pick(h, d, "disk_bus").map(|t| t.typed(errs, "disk_bus", Label::new));
    let devices = match pick(h, d, "devices") {
        Some(t) => t.typed_list(errs, "devices", DevicePath::new),
        None => {
            errs.push(
                h.span,
                format!(
                    "{} has no `devices`; list the spare devices fsmatrix may destroy, e.g. devices = [\"/dev/vdb\"]",
                    h.ctx
                ),
            );
            None
        }
    };
    let consent = pick(h, d, "consent_foreign")
        .map(|t| t.typed_list(errs, "consent_foreign", DevicePath::new))
        .unwrap_or(Some(Vec::new()));
    let mut dev_list = Vec::new();
    if let Some(devs) = &devices {
        let raw = pick(h, d, "devices").and_then(|t| t.get("devices"));
        let raw_empty = raw.is_some_and(|v| v.get_ref().as_array().is_some_and(|a| a.is_empty()));
        if devs.is_empty() {
            ok = false;
        }
        if raw_empty {
            if let Some(v) = raw {
                errs.push(
                    &v.span(),
                    format!(
                        "`devices` of {} is empty; list at least one spare device fsmatrix may destroy",
                        h.ctx
                    ),
                );
            }
        }
        for (i, dv) in devs.iter().enumerate() {
            if devs[..i].iter().any(|p| p.get_ref() == dv.get_ref()) {
                errs.push(
                    &dv.span(),
                    format!(
                        "device `{}` is listed twice in {}; list each device once",
                        dv.get_ref(),
                        h.ctx
                    ),
                );
            }
            dev_list.push(dv.get_ref().clone());
        }
    }
    let mut consent_list = Vec::new();
    if let Some(c) = &consent {
        for dv in c {
            if devices.is_some() && !dev_list.contains(dv.get_ref()) {
                errs.push(
                    &dv.span(),
                    format!(
                        "`consent_foreign` names `{}`, which is not in the `devices` of {}; consent only to listed devices",
                        dv.get_ref(),
                        h.ctx
                    ),
                );
            }
            consent_list.push(dv.get_ref().clone());
        }
    }
    let pg_bin = pick(h, d, "pg_bin").map(|t| t.typed(errs, "pg_bin", AbsPath::new));
    let pg_user = pick(h, d, "pg_user")
        .map(|t| t.typed(errs, "pg_user", pg_user_name))
        .unwrap_or_else(|| UserName::new("postgres").ok());
    let pg_port = pick(h, d, "pg_port")
        .map(|t| {
            t.int(errs, "pg_port", 1, 65535)
                .map(|p| *p.get_ref() as u16)
        })
        .unwrap_or(Some(5432));
    let work_dir = pick(h, d, "work_dir")
        .map(|t| t.typed(errs, "work_dir", work_dir_path))
        .unwrap_or_else(|| AbsPath::new(DEFAULT_WORK_DIR).ok());
    let tags = pick(h, d, "tags")
        .map(|t| {
            t.typed_list(errs, "tags", Label::new)
                .map(|v| v.into_iter().map(|s| s.into_inner()).collect())
        })
        .unwrap_or(Some(Vec::new()));
    let allow_pg = pick(h, d, "allow_postgres_settings")
        .map(|t| {
            t.typed_list(
                errs,
                "allow_postgres_settings",
                super::super::pgclass::allowable,
            )
            .map(|v| v.into_iter().map(|s| s.into_inner()).collect())
        })
        .unwrap_or(Some(Vec::new()));
    let allow_scripts = pick(h, d, "allow_script_commands")
        .map(|t| t.bool(errs, "allow_script_commands"))
        .unwrap_or(Some(false));
    let client_user = pick(h, d, "client_user")
        .map(|t| t.typed(errs, "client_user", client_user_name))
        .unwrap_or_else(|| UserName::new(DEFAULT_CLIENT_USER).ok());
    let proxy_jump = match pick(h, d, "proxy_jump").filter(|_| guest.is_none()) {
        Some(t) => match t.str(errs, "proxy_jump") {
            Some(v) if ssh.waits_for_config(v.get_ref(), true) => None,
            Some(v) => match ssh
                .inventory_jump(v.get_ref())
                .unwrap_or_else(|| parse_proxy_jump(v.get_ref()).map_err(|e| e.0))
            {
                Ok(hops) => {
                    let own = address.as_ref().map(|a| machine_key(a.as_str())).zip(port);
                    match hops.iter().position(|hop| {
                        own.as_ref() == Some(&(machine_key(hop.address.as_str()), hop.port))
                    }) {
                        Some(i) => {
                            errs.push(
                                &v.span(),
                                format!(
                                    "`proxy_jump` of {} names the host itself (hop {} `{}`); a host \
                                     cannot be its own jump host; valid: other hosts, or \"none\" \
                                     for a host that inherits proxy_jump from [defaults] but is \
                                     reached directly (the bastion itself)",
                                    h.ctx,
                                    i + 1,
                                    hops[i]
                                ),
                            );
                            None
                        }
                        None => Some(hops),
                    }
                }
                Err(e) => {
                    let alias = split_proxy_jump(v.get_ref()).ok().and_then(|hops| {
                        hops.into_iter().map(|(_, host, _)| host).find(|host| {
                            ssh.config.is_none()
                                && ssh_config::validate_alias(host).is_ok()
                                && Address::new(host).is_err()
                        })
                    });
                    errs.push(
                        &v.span(),
                        format!("{e}{}", alias.map_or_else(String::new, alias_hint)),
                    );
                    None
                }
            },
            None => None,
        },
        None => Some(Vec::new()),
    };
    // The PostgreSQL socket of every device slot fits the OS's sun_path.
    if let (Some(o), Some(w), Some(p)) = (os, work_dir.as_ref(), pg_port) {
        if let Some(msg) = super::socket_path_problem(o, w.as_str(), p, dev_list.len()) {
            let span = pick(h, d, "work_dir")
                .and_then(|t| t.get("work_dir").map(|v| v.span()))
                .unwrap_or_else(|| h.span.clone());
            errs.push(&span, format!("{msg} (in {})", h.ctx));
            ok = false;
        }
    }
    if !ok {
        return None;
    }
    Some(Host {
        name: name?,
        address: address?,
        port: port?,
        user: user?,
        become_,
        auth,
        known_hosts,
        os: os?,
        platform: platform?,
        disk_bus: match disk_bus {
            Some(Some(b)) => Some(b),
            Some(None) => return None,
            None => None,
        },
        devices: if dev_list.is_empty() {
            return None;
        } else {
            dev_list
        },
        consent_foreign: consent.map(|_| consent_list)?,
        pg_bin: match pg_bin {
            Some(Some(p)) => Some(p),
            Some(None) => return None,
            None => None,
        },
        pg_user: pg_user?,
        pg_port: pg_port?,
        work_dir: work_dir?,
        tags: tags?,
        allow_postgres_settings: allow_pg?,
        allow_script_commands: allow_scripts?,
        client_user: client_user?,
        proxy_jump: proxy_jump?,
        more_identity_files: Vec::new(),
        ssh_sources: BTreeMap::new(),
        guest_of: guest.as_ref().map(|(of, _)| of.clone()),
        vm: guest.map(|(_, vm)| vm),
    })
}

/// A guest's own part of its `[[host]]`: `guest_of` and `[host.vm]`, both
/// or neither, and none of the keys that say how to reach a host directly.
/// `Some(None)`: not a guest; `None`: errors pushed.
fn guest_part(errs: &mut Errors<'_>, h: &Tbl<'_, '_>) -> Option<Option<(HostName, vm::Vm)>> {
    let of = h.get("guest_of");
    let table = h.get("vm");
    match (of, table) {
        (None, None) => return Some(None),
        (Some(v), None) => {
            errs.push(
                &v.span(),
                format!(
                    "{} has `guest_of` but no [host.vm] table; a guest needs its machine: \
                     image, disk (one of the physical host's devices), memory_mib, cpus, … \
                     (docs/formats.md \"Guests\")",
                    h.ctx
                ),
            );
            return None;
        }
        (None, Some(v)) => {
            errs.push(
                &v.span(),
                format!(
                    "{} has a [host.vm] table but no `guest_of`; valid: guest_of = \"<the \
                     [[host]] it runs on>\"",
                    h.ctx
                ),
            );
            return None;
        }
        (Some(_), Some(_)) => {}
    }
    let mut ok = true;
    for key in ["address", "port", "proxy_jump"] {
        if let Some(v) = h.get(key) {
            errs.push(
                &v.span(),
                format!(
                    "`{key}` in {} is not for a guest: fsmatrix reaches a guest at {}:<vm.ssh_port> \
                     through the host it runs on (guest_of), so nothing new is exposed on the \
                     network; valid: remove `{key}` (set the port with ssh_port in [host.vm])",
                    h.ctx,
                    vm::GUEST_ADDRESS
                ),
            );
            ok = false;
        }
    }
    let of = h.typed(errs, "guest_of", HostName::new);
    let vctx = format!("[host.vm] of {}", h.ctx);
    let vm = h.table(errs, "vm").and_then(|v| match v.get_ref() {
        DeValue::Table(t) => vm::parse_vm(
            errs,
            &Tbl {
                t,
                span: &v.span(),
                ctx: &vctx,
            },
        ),
        _ => None,
    });
    match (of, vm, ok) {
        (Some(of), Some(vm), true) => Some(Some((of, vm))),
        _ => None,
    }
}
