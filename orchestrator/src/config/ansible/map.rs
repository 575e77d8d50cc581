//! From Ansible's variables to fsmatrix keys.
use std::collections::HashMap;

use super::connection::{become_method, connection_checks};
use super::model::{Located, Resolved, Var, Vars};
use super::{At, Cx, ImportError};
use crate::config::inventory::machine_key;
use crate::config::values::{shown, Address, HostName, Label, UserName};
use crate::config::Os;

/// One `[[host]]` to write.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) ansible_name: String,
    pub(super) line: At,
    pub(super) name: String,
    pub(super) address: String,
    pub(super) port: Option<u16>,
    pub(super) user: Option<String>,
    pub(super) become_: Option<crate::config::Become>,
    pub(super) identity_file: Option<String>,
    /// Jump hosts from a ProxyJump (`-J`) in the ssh arguments.
    pub(super) proxy_jump: Option<String>,
    /// `None`: not known; written as linux with a CHECK comment.
    pub(super) os: Option<Os>,
    /// Why the OS is not known (a fact that named no supported system).
    pub(super) os_note: Option<String>,
    pub(super) tags: Vec<String>,
    /// `# CHECK:` lines, plain text (escaped when written).
    pub(super) checks: Vec<String>,
}

/// Connection plugins that reach a host over SSH, as fsmatrix does.
const SSH_CONNECTIONS: &[&str] = &[
    "ssh",
    "smart",
    "paramiko",
    "paramiko_ssh",
    "ansible.builtin.ssh",
    "ansible.builtin.paramiko_ssh",
    "ansible.legacy.ssh",
];

/// Become methods fsmatrix can do, by their Ansible names: sudo (Ansible's
/// built-in plugin) and doas (the `community.general.doas` plugin, once
/// Ansible's own `doas`).
pub(super) const BECOME_METHODS: &[(&str, crate::config::Become)] = &[
    ("sudo", crate::config::Become::Sudo),
    ("ansible.builtin.sudo", crate::config::Become::Sudo),
    ("doas", crate::config::Become::Doas),
    ("community.general.doas", crate::config::Become::Doas),
];

/// Systems Ansible reports that fsmatrix cannot benchmark.
const OTHER_SYSTEMS: &[&str] = &[
    "openbsd",
    "netbsd",
    "darwin",
    "macosx",
    "solaris",
    "sunos",
    "smartos",
    "openindiana",
    "omnios",
    "aix",
    "hp-ux",
    "windows",
    "win32nt",
    "cygwin",
];

enum OsFact {
    Supported(Os),
    Unsupported,
    Unknown,
}

fn os_fact(value: &str) -> OsFact {
    // The names each OS answers to are its row's (config/os.rs).
    if let Some(os) = crate::config::OsProfile::from_ansible(value) {
        return OsFact::Supported(os);
    }
    let v = value.trim().to_ascii_lowercase();
    if OTHER_SYSTEMS.contains(&v.as_str()) {
        OsFact::Unsupported
    } else {
        OsFact::Unknown
    }
}

/// Ansible's `boolean()`: bools, 0/1, and y/yes/on/1/true/t (or the
/// opposites) in any case.
pub(super) fn ansible_bool(v: &Var) -> Option<bool> {
    match v {
        Var::Bool(b) => Some(*b),
        Var::Int(1) => Some(true),
        Var::Int(0) => Some(false),
        Var::Float(f) if *f == 1.0 => Some(true),
        Var::Float(f) if *f == 0.0 => Some(false),
        Var::Str(s) => match s.trim().to_lowercase().as_str() {
            "y" | "yes" | "on" | "1" | "true" | "t" => Some(true),
            "n" | "no" | "off" | "0" | "false" | "f" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// Replace each character `punct` (and ASCII letters and digits) does not
/// allow with `-`, so one Ansible name always gives the same fsmatrix name.
fn convert_name(s: &str, punct: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || punct.contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

impl Cx<'_> {
    /// The tag for an Ansible group, converted where it does not fit a
    /// fsmatrix [`Label`] (warned about once per group).
    fn tag(&mut self, group: &str) -> Result<String, ImportError> {
        if let Some(t) = self.labels.get(group) {
            return Ok(t.clone());
        }
        let t = convert_name(group, "._+-");
        if let Err(e) = Label::new(&t) {
            return Err(self.error(
                None,
                format!(
                    "group `{}` cannot be an fsmatrix tag, even as `{}`: {e}; rename the group",
                    shown(group),
                    shown(&t)
                ),
            ));
        }
        if t != group {
            self.warn(
                None,
                format!(
                    "group `{}` is the tag `{t}`: fsmatrix tags are letters, digits and . _ + -",
                    shown(group)
                ),
            );
        }
        self.labels.insert(group.to_string(), t.clone());
        Ok(t)
    }
}

/// One host's merged variables, read with messages that name the host.
pub(super) struct HostVars<'a> {
    pub(super) vars: &'a Vars,
    /// "host `web1`", for messages.
    pub(super) who: String,
    /// Where the host first appears.
    pub(super) at: At,
}

/// A variable's text, which variable gave it, and where that was set.
pub(super) struct Text {
    pub(super) value: String,
    pub(super) key: &'static str,
    pub(super) line: At,
}

impl HostVars<'_> {
    /// The last of `keys` that is set (not null): of an option's variables,
    /// Ansible reads the last one set.
    pub(super) fn get(&self, keys: &[&'static str]) -> Option<(&'static str, &Located)> {
        keys.iter().rev().find_map(|k| {
            self.vars
                .get(*k)
                .filter(|l| l.value != Var::Null)
                .map(|l| (*k, l))
        })
    }

    pub(super) fn error(&self, cx: &Cx<'_>, line: impl Into<At>, message: String) -> ImportError {
        cx.error(line.into().or(self.at), format!("{}: {message}", self.who))
    }

    /// A warning that is also a `# CHECK:` comment on the host.
    pub(super) fn check(
        &self,
        cx: &mut Cx<'_>,
        checks: &mut Vec<String>,
        line: impl Into<At>,
        message: String,
    ) {
        cx.warn_inline(line.into().or(self.at), format!("{}: {message}", self.who));
        checks.push(message);
    }

    /// The text of a variable that names something (an address, a user, a
    /// path, a method): a string, or an integer as Ansible would template
    /// it.  Templates, vaulted values, lists and mappings are refused.
    pub(super) fn text(
        &self,
        cx: &Cx<'_>,
        keys: &[&'static str],
    ) -> Result<Option<Text>, ImportError> {
        let Some((key, l)) = self.get(keys) else {
            return Ok(None);
        };
        let value = match &l.value {
            Var::Str(s) => s.clone(),
            Var::Int(i) => i.to_string(),
            Var::Null | Var::Bool(_) | Var::Float(_) => {
                return Err(self.error(
                    cx,
                    l.line,
                    format!("{key} is not a string; valid: a string such as \"10.0.0.5\""),
                ))
            }
            Var::Other(what) => {
                return Err(self.error(
                    cx,
                    l.line,
                    format!("{key} is {what}; valid: a plain string (decrypt or write the value)"),
                ))
            }
        };
        if value.starts_with("$ANSIBLE_VAULT;") {
            return Err(self.error(
                cx,
                l.line,
                format!(
                    "{key} is encrypted with ansible-vault; decrypt it (ansible-vault view) and \
                     import again"
                ),
            ));
        }
        if value.contains("{{") || value.contains("{%") {
            return Err(self.error(
                cx,
                l.line,
                format!(
                    "{key} `{}` is a Jinja2 template, which only Ansible can evaluate; valid: its \
                     value, written out",
                    shown(&value)
                ),
            ));
        }
        Ok(Some(Text {
            value,
            key,
            line: l.line,
        }))
    }
}

/// What the OS facts say, if anything.
enum OsFound {
    Known(Os),
    /// Not known; the fact that named something else, for the comment.
    Unknown(Option<String>),
    /// A system fsmatrix does not run on: the host is skipped.
    Other(String),
}

fn os_found(cx: &Cx<'_>, hv: &HostVars<'_>) -> Result<OsFound, ImportError> {
    let mut note = None;
    for key in [
        "ansible_system",
        "ansible_os_family",
        "ansible_distribution",
    ] {
        let Some(t) = hv.text(cx, &[key])? else {
            continue;
        };
        match os_fact(&t.value) {
            OsFact::Supported(o) => return Ok(OsFound::Known(o)),
            OsFact::Unsupported => {
                return Ok(OsFound::Other(format!("{key} = {}", shown(&t.value))))
            }
            OsFact::Unknown => {
                note.get_or_insert(format!("{key} = {}", t.value));
            }
        }
    }
    Ok(OsFound::Unknown(note))
}

/// One Ansible host as an fsmatrix `[[host]]`, or `None` when fsmatrix
/// cannot reach or run on it (a warning says why).
pub(super) fn map_host(cx: &mut Cx<'_>, h: &Resolved<'_>) -> Result<Option<Entry>, ImportError> {
    let ansible_name = h.host.name.clone();
    let hv = HostVars {
        vars: &h.vars,
        who: format!("host `{}`", shown(&ansible_name)),
        at: h.host.line,
    };
    let skip = |cx: &mut Cx<'_>, why: String| {
        cx.warn(hv.at, format!("{} skipped: {why}", hv.who));
        Ok(None)
    };
    if let Some(c) = hv.text(cx, &["ansible_connection"])? {
        if !SSH_CONNECTIONS.contains(&c.value.as_str()) {
            let why = format!(
                "ansible_connection = {}; fsmatrix reaches hosts over SSH only",
                shown(&c.value)
            );
            return skip(cx, why);
        }
    }
    let (os, os_note) = match os_found(cx, &hv)? {
        OsFound::Known(o) => (Some(o), None),
        OsFound::Unknown(note) => (None, note),
        OsFound::Other(fact) => {
            return skip(
                cx,
                format!("{fact}; fsmatrix runs on {}", Os::names(" and ")),
            );
        }
    };

    // A name fsmatrix cannot take skips its host, not the inventory: a real
    // folder often holds a placeholder (`your_db_host`) beside the hosts.
    let name = convert_name(&ansible_name, "._-");
    if let Err(e) = HostName::new(&name) {
        let why = format!(
            "its name cannot be an fsmatrix host name, even as `{}`: {e}; rename the host in \
             the Ansible inventory",
            shown(&name)
        );
        return skip(cx, why);
    }
    if name != ansible_name {
        cx.warn(
            hv.at,
            format!(
                "{} is named `{name}` here: fsmatrix host names are letters, digits and . _ -",
                hv.who
            ),
        );
    }

    let address = match hv.text(cx, &["ansible_host", "ansible_ssh_host"])? {
        Some(a) => {
            Address::new(&a.value).map_err(|e| {
                hv.error(
                    cx,
                    a.line,
                    format!("{} is not an address fsmatrix accepts: {e}", a.key),
                )
            })?;
            a.value
        }
        None => {
            if let Err(e) = Address::new(&ansible_name) {
                let why = format!(
                    "no ansible_host, and its name is not an address fsmatrix accepts: {e}; \
                     set ansible_host to its DNS name or IP address"
                );
                return skip(cx, why);
            }
            ansible_name.clone()
        }
    };

    let port = match hv.get(&["ansible_port", "ansible_ssh_port"]) {
        None => None,
        Some((key, l)) => {
            let n = match &l.value {
                Var::Int(i) => Some(*i),
                Var::Str(s) => s.trim().parse().ok(),
                _ => None,
            };
            let p = n.and_then(|n| u16::try_from(n).ok()).filter(|p| *p > 0);
            Some(p.ok_or_else(|| {
                hv.error(
                    cx,
                    l.line,
                    format!("{key} is not a port; valid: 1 to 65535 (e.g. 2222)"),
                )
            })?)
        }
    };

    let user = match hv.text(cx, &["ansible_user", "ansible_ssh_user"])? {
        Some(u) => {
            UserName::new(&u.value).map_err(|e| {
                hv.error(
                    cx,
                    u.line,
                    format!("{} is not a user fsmatrix accepts: {e}", u.key),
                )
            })?;
            Some(u.value)
        }
        None => None,
    };

    let identity_file = match hv.text(
        cx,
        &["ansible_private_key_file", "ansible_ssh_private_key_file"],
    )? {
        Some(p) => {
            if p.value.is_empty() || p.value.chars().any(char::is_control) {
                return Err(hv.error(
                    cx,
                    p.line,
                    format!(
                        "{} `{}` is empty or has control characters; valid: a path such as \
                         ~/.ssh/id_ed25519",
                        p.key,
                        shown(&p.value)
                    ),
                ));
            }
            if !(p.value.starts_with('/') || p.value.starts_with('~')) {
                cx.warn(
                    p.line.or(hv.at),
                    format!(
                        "{}: {} `{}` is relative: Ansible reads it from the folder it runs in, \
                         fsmatrix from the inventory's folder; make it absolute if those differ",
                        hv.who,
                        p.key,
                        shown(&p.value)
                    ),
                );
            }
            Some(p.value)
        }
        None => None,
    };

    let mut checks = Vec::new();
    let become_ = become_method(cx, &hv, &mut checks)?;
    let proxy_jump = connection_checks(cx, &hv, &address, &mut checks)?;
    if user.is_none() {
        checks.push("no ansible_user: fsmatrix logs in as root unless `user` is set".into());
    }

    let mut tags = Vec::new();
    for g in &h.groups {
        let t = cx.tag(g)?;
        if !tags.contains(&t) {
            tags.push(t);
        }
    }
    tags.sort();

    Ok(Some(Entry {
        ansible_name,
        line: hv.at,
        name,
        address,
        port,
        user,
        become_,
        identity_file,
        proxy_jump,
        os,
        os_note,
        tags,
        checks,
    }))
}

pub(super) fn warn_same_machine(cx: &mut Cx<'_>, entries: &[Entry]) {
    let mut seen: HashMap<(String, u16), &str> = HashMap::new();
    for e in entries {
        let key = (machine_key(&e.address), e.port.unwrap_or(22));
        if let Some(first) = seen.get(&key) {
            let msg = format!(
                "hosts `{first}` and `{}` reach the same machine ({} port {}); fsmatrix refuses two \
                 entries for one machine: keep one",
                e.name, e.address, key.1
            );
            cx.warn(e.line, msg);
        } else {
            seen.insert(key, &e.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn hostile_values_are_refused_with_the_host_named() {
        // (file, inventory, words of the refusal)
        for (file, text, words) in [
            (
                "hosts",
                "[all:vars]\nansible_user='\"\\n[[host]]\\nname=\"x\"'\n[web]\nweb1\n",
                "host `web1`: ansible_user is not a user fsmatrix accepts: user name `\"\\n[[host]]",
            ),
            (
                "list.json",
                r#"{"web": {"hosts": ["web1"]}, "_meta": {"hostvars": {"web1": {"ansible_user": "\"\n[[host]]\nname=\"x\""}}}}"#,
                "host `web1`: ansible_user is not a user fsmatrix accepts",
            ),
            ("hosts", "web1 ansible_host='10.0.0.1; rm -rf /'\n", "host `web1`: ansible_host is not an address fsmatrix accepts: address `10.0.0.1; rm -rf /` contains `;`"),
            ("hosts", "web1 ansible_host='db 1.example'\n", "contains a space, which is not allowed here; valid: a DNS name"),
            ("inv.yml", "all:\n  hosts:\n    w1:\n      ansible_host: \"{{ lookup('env', 'IP') }}\"\n", "is a Jinja2 template, which only Ansible can evaluate"),
            ("inv.yml", "all:\n  hosts:\n    w1:\n      ansible_user: !vault |\n        $ANSIBLE_VAULT;1.1;AES256\n        6331\n", "encrypted with ansible-vault"),
            ("inv.yml", "all:\n  hosts:\n    w1:\n      ansible_user: [a, b]\n", "ansible_user is a list"),
            ("hosts", "web1 ansible_port=99999\n", "ansible_port is not a port; valid: 1 to 65535"),
            ("hosts", "web1 ansible_private_key_file=\"'/k\\nx'\"\n", "is empty or has control characters"),
            ("inv.yml", "all:\n  children:\n    \"-x\":\n      hosts:\n        w1:\n", "group `-x` cannot be an fsmatrix tag, even as `-x`"),
        ] {
            let e = imp_err(file, text);
            assert!(e.message.contains(words), "{text}\n{e}");
        }
    }

    /// A host whose name fsmatrix cannot take is skipped and named, with its
    /// line and what would be valid; the others are imported (issue 38: one
    /// placeholder refused a real folder of 136 hosts).
    #[test]
    fn a_name_fsmatrix_cannot_take_skips_its_host_not_the_inventory() {
        let long = "h".repeat(64);
        // (file, inventory with web1 and one bad host, words of the caveat)
        for (file, text, words) in [
            (
                "hosts",
                "web1 ansible_host=192.0.2.1\nsome_host ansible_port=2222 ansible_user=manager\n".to_string(),
                "hosts:2: host `some_host` skipped: no ansible_host, and its name is not an address fsmatrix accepts: address `some_host` contains `_`",
            ),
            (
                "hosts",
                "web1 ansible_host=192.0.2.1\n-db- ansible_host=192.0.2.2\n".to_string(),
                "hosts:2: host `-db-` skipped: its name cannot be an fsmatrix host name, even as `-db-`",
            ),
            (
                "inv.yml",
                format!("all:\n  hosts:\n    web1: {{ansible_host: 192.0.2.1}}\n    {long}:\n"),
                "cannot be an fsmatrix host name",
            ),
            (
                "inv.yml",
                "all:\n  hosts:\n    web1: {ansible_host: 192.0.2.1}\n    \"a:b\": {ansible_host: 192.0.2.3}\n    \"a;b\": {ansible_host: 192.0.2.2}\n".to_string(),
                "host `a;b` skipped: it would be the fsmatrix host `a-b`, as host `a:b` already is; rename one",
            ),
        ] {
            let i = imp(file, &text);
            let w = i.warnings.iter().find(|w| w.contains(words));
            let w = w.unwrap_or_else(|| panic!("{text}\n{:?}", i.warnings));
            assert!(
                w.contains("valid: ") || w.contains("host names: letters, digits"),
                "says what is valid: {w}"
            );
            assert_eq!(i.skipped, 1, "{text}");
            let inv = parse_filled(&i);
            assert!(by_name(&inv).contains_key("web1"), "{}", i.toml);
            assert!(i.toml.contains(&format!("# CHECK: {file}:")), "{}", i.toml);
        }
    }

    #[test]
    fn os_comes_from_the_facts_or_is_marked_check() {
        let i = imp(
            "hosts",
            "\
f1 ansible_os_family=FreeBSD
d1 ansible_system=DragonFly
u1 ansible_distribution=Ubuntu
n1
p1 ansible_distribution=Plan9
o1 ansible_system=OpenBSD
",
        );
        let inv = parse_filled(&i);
        let h = by_name(&inv);
        // (host, os)
        for (host, os) in [
            ("f1", Os::Freebsd),
            ("d1", Os::Dragonfly),
            ("u1", Os::Linux),
            ("n1", Os::Linux),
            ("p1", Os::Linux),
        ] {
            assert_eq!(h[host].os, os, "{host}");
        }
        assert!(!h.contains_key("o1"));
        assert!(warned(&i, "host `o1` skipped: ansible_system = OpenBSD; fsmatrix runs on linux, freebsd and dragonfly"));
        assert!(i.toml.contains("name = \"n1\"\naddress = \"n1\"\nos = \"linux\"  # CHECK: os not known from the Ansible inventory\n"), "{}", i.toml);
        assert!(i.toml.contains("os = \"linux\"  # CHECK: os not known from the Ansible inventory (ansible_distribution = Plan9)\n"));
    }

    #[test]
    fn names_that_do_not_fit_are_converted_predictably() {
        let i = imp(
            "inv.yml",
            "all:\n  children:\n    web servers:\n      hosts:\n        w1.example:\n    db_main:\n      hosts:\n        \"db 1\": {ansible_host: 192.0.2.7}\n",
        );
        let inv = parse_filled(&i);
        let h = by_name(&inv);
        assert_eq!(tags(h["w1.example"]), ["web-servers"]);
        assert_eq!(
            (h["db-1"].address.as_str(), tags(h["db-1"])),
            ("192.0.2.7", vec!["db_main".to_string()])
        );
        assert!(
            warned(&i, "group `web servers` is the tag `web-servers`"),
            "{:?}",
            i.warnings
        );
        assert!(
            warned(&i, "host `db 1` is named `db-1` here"),
            "{:?}",
            i.warnings
        );
        assert_eq!(
            i.warnings
                .iter()
                .filter(|w| w.contains("web servers"))
                .count(),
            1,
            "once per group"
        );
    }

    #[test]
    fn one_machine_twice_is_warned_about() {
        let i = imp("hosts", "a ansible_host=192.0.2.1 ansible_user=x\nb ansible_host=192.0.2.1 ansible_user=x\nc ansible_host=192.0.2.1 ansible_port=2222 ansible_user=x\n");
        assert!(
            warned(
                &i,
                "hosts `a` and `b` reach the same machine (192.0.2.1 port 22)"
            ),
            "{:?}",
            i.warnings
        );
        assert!(!warned(&i, "`c` reach"));
    }
}
