//! `fsmatrix inventory import`: read an Ansible inventory and write the text
//! of an fsmatrix inventory.  Three sources, with Ansible's own semantics
//! (its `ini`, `yaml` and `script` inventory plugins; intro_inventory):
//!
//! - INI: `[group]`, `[group:vars]`, `[group:children]`, hosts before any
//!   section are `ungrouped`, `#`/`;` comments, host lines split as
//!   `shlex.split(line, comments=True)` with `k=v` values typed as
//!   `ast.literal_eval` types them, `host:port`, ranges.
//! - YAML: groups (usually `all`) with `hosts:`, `vars:` and nested
//!   `children:`; ranges and `:port` in host keys.
//! - JSON: `ansible-inventory --list` (with or without `--export`), or an
//!   inventory script's output: groups as `{hosts, children, vars}` or a bare
//!   host list, and `_meta.hostvars`.
//!
//! Not read: `group_vars/` and `host_vars/` folders, inventory plugins
//! (`plugin: aws_ec2` …), ansible.cfg (its `remote_user`, its default
//! become method: sudo is assumed), Jinja2 templates and vaulted values
//! (refused where a mapped variable holds one).  `ansible-inventory -i SRC
//! --list` evaluates the first two and its JSON is imported.  INI values
//! that are Python lists or dicts stay text; YAML is read as YAML 1.2 (so
//! `yes` is a string; `ansible_become` is read with Ansible's `boolean()`
//! anyway).
//!
//! The steps: a reader per format fills a `Model` of groups and hosts;
//! `Model::resolve` merges each host's variables by Ansible's precedence
//! (all < parent < child < host; one depth in `ansible_group_priority`, then
//! name order); `map_host` turns the connection variables into fsmatrix
//! keys; `render` writes TOML whose every value is encoded by the `toml`
//! crate and whose comments are escaped, and `read_back` checks that the
//! text holds exactly the hosts and keys meant.
//!
//! Ansible knows nothing of the spare devices fsmatrix destroys, so every
//! host is written with `devices = []`, which [`super::Inventory::parse`]
//! refuses until the user lists them.
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};

use super::inventory::machine_key;
use super::values::{shown, Address, HostName, Label, UserName};
use super::Os;

/// The three kinds of Ansible inventory [`import`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnsibleFormat {
    Ini,
    Yaml,
    /// `ansible-inventory --list` output, or an inventory script's.
    Json,
}

impl AnsibleFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            AnsibleFormat::Ini => "INI",
            AnsibleFormat::Yaml => "YAML",
            AnsibleFormat::Json => "ansible-inventory JSON",
        }
    }
}

/// An imported inventory: the TOML text, how many hosts it has, and what
/// the user should know (each also a `# CHECK:` comment where it concerns
/// one host).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Imported {
    pub toml: String,
    pub hosts: usize,
    pub warnings: Vec<String>,
}

/// Why an inventory cannot be imported: the file, the line where known, and
/// a lowercase fragment that says what is wrong and what would be valid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", place(.file, *.line))]
pub struct ImportError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

fn place(file: &Path, line: Option<usize>) -> String {
    match line {
        Some(l) => format!("{}:{l}", file.display()),
        None => file.display().to_string(),
    }
}

/// Detect the format from the content: JSON starts with `{`; YAML parses as
/// a mapping whose values are group maps (or empty); anything else is INI,
/// unless the extension says `.json`, `.yml` or `.yaml` (so a broken YAML
/// file gets a YAML error, not an INI one).
pub fn detect(path: &Path, text: &str) -> AnsibleFormat {
    let body = text.trim_start_matches('\u{feff}').trim_start();
    if body.starts_with('{') {
        return AnsibleFormat::Json;
    }
    if looks_like_yaml_groups(body) {
        return AnsibleFormat::Yaml;
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("json") => AnsibleFormat::Json,
        Some("yml" | "yaml") => AnsibleFormat::Yaml,
        _ => AnsibleFormat::Ini,
    }
}

fn looks_like_yaml_groups(text: &str) -> bool {
    let Ok(docs) = MarkedYaml::load_from_str(text) else {
        return false;
    };
    match docs.first().map(|d| &d.data) {
        Some(YamlData::Mapping(m)) => {
            !m.is_empty()
                && m.values()
                    .all(|v| matches!(v.data, YamlData::Mapping(_) | YamlData::Value(Scalar::Null)))
        }
        _ => false,
    }
}

/// Read an Ansible inventory (`path` names it in messages and in the
/// output's header; nothing is read from disk) and write an fsmatrix
/// inventory for its SSH hosts.
pub fn import(path: &Path, text: &str) -> Result<Imported, ImportError> {
    let format = detect(path, text);
    let mut cx = Cx {
        file: path,
        warnings: Vec::new(),
        labels: HashMap::new(),
    };
    let text = text.trim_start_matches('\u{feff}');
    let mut model = Model::new();
    match format {
        AnsibleFormat::Ini => read_ini(&mut cx, &mut model, text)?,
        AnsibleFormat::Yaml => read_yaml(&mut cx, &mut model, text)?,
        AnsibleFormat::Json => read_json(&mut cx, &mut model, text)?,
    }
    let resolved = model.resolve(path)?;
    let mut entries: Vec<Entry> = Vec::new();
    let mut skipped = 0;
    for h in &resolved {
        match map_host(&mut cx, h)? {
            Some(e) => {
                if let Some(other) = entries.iter().find(|o| o.name == e.name) {
                    return Err(cx.error(
                        e.line,
                        format!(
                            "hosts `{}` and `{}` both become the fsmatrix host `{}`; rename one \
                             (fsmatrix host names: letters, digits and . _ -)",
                            shown(&other.ansible_name),
                            shown(&e.ansible_name),
                            e.name
                        ),
                    ));
                }
                entries.push(e);
            }
            None => skipped += 1,
        }
    }
    if entries.is_empty() {
        return Err(cx.error(
            None,
            format!(
                "the {} inventory has no host fsmatrix can reach over SSH ({} found, {skipped} \
                 skipped); valid: at least one host with an SSH connection",
                format.as_str(),
                resolved.len()
            ),
        ));
    }
    warn_same_machine(&mut cx, &entries);
    let no_user = entries.iter().filter(|e| e.user.is_none()).count();
    if no_user > 0 {
        cx.warn(
            None,
            format!(
                "{no_user} host(s) have no ansible_user: Ansible logs in as the user who runs it \
                 (or ~/.ssh/config's User), fsmatrix as root; add `user` where root is not right"
            ),
        );
    }
    let toml = render(path, format, &entries);
    read_back(path, &toml, &entries)?;
    Ok(Imported {
        toml,
        hosts: entries.len(),
        warnings: cx.warnings,
    })
}

/// What the readers and the mapping share: the file, for messages, and the
/// warnings so far.
struct Cx<'a> {
    file: &'a Path,
    warnings: Vec<String>,
    /// Group name → tag, converted once (and warned about once).
    labels: HashMap<String, String>,
}

impl Cx<'_> {
    fn error(&self, line: Option<usize>, message: impl Into<String>) -> ImportError {
        ImportError {
            file: self.file.to_path_buf(),
            line,
            message: message.into(),
        }
    }
    fn warn(&mut self, line: Option<usize>, message: impl AsRef<str>) {
        self.warnings
            .push(format!("{}: {}", place(self.file, line), message.as_ref()));
    }
}

// ---------------------------------------------------------------------------
// The model the three readers fill.

/// A variable's value, with the types the mapping cares about.
#[derive(Clone, Debug, PartialEq)]
enum Var {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// A list, a mapping or an encrypted value: what it is, for messages.
    Other(&'static str),
}

#[derive(Clone, Debug, PartialEq)]
struct Located {
    value: Var,
    /// Where it was set, when the reader knows.
    line: Option<usize>,
}

type Vars = BTreeMap<String, Located>;

#[derive(Debug)]
struct Group {
    vars: Vars,
    children: BTreeSet<String>,
    /// `ansible_group_priority`: among groups of one depth, higher wins.
    priority: i64,
}

impl Default for Group {
    fn default() -> Self {
        Group {
            vars: Vars::new(),
            children: BTreeSet::new(),
            priority: 1,
        }
    }
}

#[derive(Debug)]
struct HostDef {
    name: String,
    /// Where it first appears.
    line: Option<usize>,
    vars: Vars,
    /// The groups it is listed in (not their ancestors).
    groups: BTreeSet<String>,
}

/// Groups and hosts as Ansible's InventoryData holds them; hosts in the
/// order they first appear.
#[derive(Debug)]
struct Model {
    groups: BTreeMap<String, Group>,
    hosts: Vec<HostDef>,
    index: HashMap<String, usize>,
}

/// One host with its variables merged and all its groups.
struct Resolved<'m> {
    host: &'m HostDef,
    vars: Vars,
    /// Every group it belongs to, through children, but `all` and `ungrouped`.
    groups: Vec<String>,
}

impl Model {
    fn new() -> Model {
        let mut m = Model {
            groups: BTreeMap::new(),
            hosts: Vec::new(),
            index: HashMap::new(),
        };
        m.add_child("all", "ungrouped");
        m
    }

    fn group(&mut self, name: &str) -> &mut Group {
        self.groups.entry(name.to_string()).or_default()
    }

    fn add_child(&mut self, parent: &str, child: &str) {
        self.group(child);
        self.group(parent).children.insert(child.to_string());
    }

    /// Add `name` to `group`; a port from `host:port` is the host's
    /// `ansible_port` when the host is new, as Ansible's `Host(name, port)`.
    fn add_host(
        &mut self,
        name: &str,
        group: &str,
        port: Option<&str>,
        line: Option<usize>,
    ) -> usize {
        self.group(group);
        let i = match self.index.get(name) {
            Some(&i) => i,
            None => {
                let mut vars = Vars::new();
                if let Some(p) = port {
                    let value = p.parse().map(Var::Int).unwrap_or(Var::Str(p.to_string()));
                    vars.insert("ansible_port".into(), Located { value, line });
                }
                self.hosts.push(HostDef {
                    name: name.to_string(),
                    line,
                    vars,
                    groups: BTreeSet::new(),
                });
                self.index.insert(name.to_string(), self.hosts.len() - 1);
                self.hosts.len() - 1
            }
        };
        self.hosts[i].groups.insert(group.to_string());
        i
    }

    fn set_host_var(&mut self, host: usize, key: &str, v: Located) {
        self.hosts[host].vars.insert(key.to_string(), v);
    }

    /// `ansible_group_priority` sets the group's priority, as in Ansible.
    fn set_group_var(
        &mut self,
        cx: &Cx<'_>,
        group: &str,
        key: &str,
        v: Located,
    ) -> Result<(), ImportError> {
        if key == "ansible_group_priority" {
            let p = match &v.value {
                Var::Int(i) => Some(*i),
                Var::Str(s) => s.trim().parse().ok(),
                _ => None,
            };
            let Some(p) = p else {
                return Err(cx.error(
                    v.line,
                    format!(
                        "ansible_group_priority of group `{}` is not an integer; valid: e.g. 10",
                        shown(group)
                    ),
                ));
            };
            self.group(group).priority = p;
        } else {
            self.group(group).vars.insert(key.to_string(), v);
        }
        Ok(())
    }

    /// Ansible's reconcile step, then every host's merged variables.
    fn resolve(&mut self, file: &Path) -> Result<Vec<Resolved<'_>>, ImportError> {
        // Groups nobody lists as a child are children of `all`.
        let mut parents: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (g, grp) in &self.groups {
            for c in &grp.children {
                parents.entry(c.clone()).or_default().insert(g.clone());
            }
        }
        if parents.contains_key("all") {
            return Err(ImportError {
                file: file.to_path_buf(),
                line: None,
                message: "group `all` is listed as a child group; valid: `all` is the root, \
                          every other group is below it"
                    .into(),
            });
        }
        let orphans: Vec<String> = self
            .groups
            .keys()
            .filter(|g| *g != "all" && !parents.contains_key(*g))
            .cloned()
            .collect();
        for g in orphans {
            parents.entry(g.clone()).or_default().insert("all".into());
            self.group("all").children.insert(g);
        }
        for h in &mut self.hosts {
            let named = h.groups.iter().any(|g| g != "all" && g != "ungrouped");
            if named {
                h.groups.remove("ungrouped");
            } else {
                h.groups.insert("ungrouped".into());
            }
        }
        let depth = self.depths(file)?;
        let mut out = Vec::new();
        for h in &self.hosts {
            let mut all: BTreeSet<&str> = BTreeSet::new();
            let mut queue: VecDeque<&str> = h.groups.iter().map(String::as_str).collect();
            while let Some(g) = queue.pop_front() {
                if all.insert(g) {
                    if let Some(ps) = parents.get(g) {
                        queue.extend(ps.iter().map(String::as_str));
                    }
                }
            }
            let mut ordered: Vec<&str> = all.iter().copied().collect();
            ordered.sort_by_key(|g| (depth[*g], self.groups[*g].priority, *g));
            let mut vars = Vars::new();
            for g in &ordered {
                for (k, v) in &self.groups[*g].vars {
                    vars.insert(k.clone(), v.clone());
                }
            }
            for (k, v) in &h.vars {
                vars.insert(k.clone(), v.clone());
            }
            out.push(Resolved {
                host: h,
                vars,
                groups: all
                    .into_iter()
                    .filter(|g| *g != "all" && *g != "ungrouped")
                    .map(str::to_string)
                    .collect(),
            });
        }
        Ok(out)
    }

    /// Each group's depth: the longest path from `all` (Ansible's
    /// `Group.depth`); a loop of children is refused, as Ansible does.
    fn depths(&self, file: &Path) -> Result<HashMap<&str, usize>, ImportError> {
        let mut indegree: HashMap<&str, usize> =
            self.groups.keys().map(|g| (g.as_str(), 0)).collect();
        for grp in self.groups.values() {
            for c in &grp.children {
                *indegree.entry(c.as_str()).or_default() += 1;
            }
        }
        let mut depth: HashMap<&str, usize> = HashMap::new();
        depth.insert("all", 0);
        let mut queue = VecDeque::from(["all"]);
        while let Some(g) = queue.pop_front() {
            let d = depth[g];
            for c in &self.groups[g].children {
                let e = depth.entry(c.as_str()).or_insert(0);
                *e = (*e).max(d + 1);
                let n = indegree
                    .get_mut(c.as_str())
                    .expect("every child is a group");
                *n -= 1;
                if *n == 0 {
                    queue.push_back(c.as_str());
                }
            }
        }
        let stuck: Vec<&str> = indegree
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(g, _)| *g)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if !stuck.is_empty() {
            return Err(ImportError {
                file: file.to_path_buf(),
                line: None,
                message: format!(
                    "groups are children of each other in a loop ({}); valid: a tree of \
                     children under `all`",
                    stuck
                        .iter()
                        .map(|g| format!("`{}`", shown(g)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        Ok(depth)
    }
}

// ---------------------------------------------------------------------------
// INI (ansible.builtin.ini).

#[derive(Clone, Copy, PartialEq)]
enum Section {
    Hosts,
    Vars,
    Children,
}

/// A group that was named before it was declared, as the INI plugin's
/// `pending_declarations`.
struct Pending {
    line: usize,
    state: Section,
    parents: Vec<String>,
}

fn read_ini(cx: &mut Cx<'_>, m: &mut Model, text: &str) -> Result<(), ImportError> {
    let mut group = "ungrouped".to_string();
    let mut state = Section::Hosts;
    let mut pending: BTreeMap<String, Pending> = BTreeMap::new();
    for (i, raw) in py_lines(text).into_iter().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some((name, kind)) = ini_section(line) {
            state = match kind {
                None | Some("hosts") => Section::Hosts,
                Some("vars") => Section::Vars,
                Some("children") => Section::Children,
                Some(other) => {
                    return Err(cx.error(
                        Some(n),
                        format!(
                            "section [{}:{}] has an unknown type; valid: [{0}], [{0}:vars], [{0}:children]",
                            shown(name),
                            shown(other)
                        ),
                    ))
                }
            };
            group = name.to_string();
            if !m.groups.contains_key(name) {
                if state == Section::Vars && !pending.contains_key(name) {
                    pending.insert(
                        name.to_string(),
                        Pending {
                            line: n,
                            state,
                            parents: Vec::new(),
                        },
                    );
                }
                m.group(name);
            }
            if state != Section::Vars {
                match pending.get(name).map(|p| p.state) {
                    Some(Section::Children) => add_pending_children(m, &mut pending, name),
                    Some(Section::Vars) => {
                        pending.remove(name);
                    }
                    _ => {}
                }
            }
            continue;
        }
        if line.starts_with('[') && line.ends_with(']') {
            return Err(cx.error(
                Some(n),
                format!(
                    "invalid section `{}`; valid: [group], [group:vars] or [group:children], with \
                     no spaces",
                    shown(line)
                ),
            ));
        }
        match state {
            Section::Hosts => {
                let tokens = shlex_split(line).map_err(|e| {
                    cx.error(
                        Some(n),
                        format!("cannot split the host line `{}`: {e}", shown(line)),
                    )
                })?;
                let Some((pattern, pairs)) = tokens.split_first() else {
                    return Err(cx.error(Some(n), "expected a host name here"));
                };
                let (names, port) =
                    expand_host_pattern(pattern, true).map_err(|e| cx.error(Some(n), e))?;
                let mut vars = Vec::new();
                for t in pairs {
                    let Some((k, v)) = t.split_once('=') else {
                        return Err(cx.error(
                            Some(n),
                            format!(
                                "expected key=value after the host, got `{}`; valid: host \
                                 ansible_host=10.0.0.5 ansible_port=2222",
                                shown(t)
                            ),
                        ));
                    };
                    vars.push((k.to_string(), py_value(v)));
                }
                for name in names {
                    let h = m.add_host(&name, &group, port.as_deref(), Some(n));
                    for (k, v) in &vars {
                        m.set_host_var(
                            h,
                            k,
                            Located {
                                value: v.clone(),
                                line: Some(n),
                            },
                        );
                    }
                }
            }
            Section::Vars => {
                let Some((k, v)) = line.split_once('=') else {
                    return Err(cx.error(
                        Some(n),
                        format!(
                            "expected key=value in [{}:vars], got `{}`",
                            shown(&group),
                            shown(line)
                        ),
                    ));
                };
                let v = Located {
                    value: py_value(v.trim()),
                    line: Some(n),
                };
                m.set_group_var(cx, &group, k.trim(), v)?;
            }
            Section::Children => {
                let Some(child) = ini_group_name(line) else {
                    return Err(cx.error(
                        Some(n),
                        format!(
                            "expected a group name in [{}:children], got `{}`",
                            shown(&group),
                            shown(line)
                        ),
                    ));
                };
                if m.groups.contains_key(child) {
                    m.add_child(&group, child);
                } else {
                    pending
                        .entry(child.to_string())
                        .or_insert(Pending {
                            line: n,
                            state: Section::Children,
                            parents: Vec::new(),
                        })
                        .parents
                        .push(group.clone());
                }
            }
        }
    }
    if let Some((name, p)) = pending.iter().min_by_key(|(_, p)| p.line) {
        let message = match p.state {
            Section::Vars => format!(
                "section [{0}:vars] is for group `{0}`, which is never declared; valid: declare it \
                 with a [{0}] or [{0}:children] section",
                shown(name)
            ),
            _ => format!(
                "[{}:children] names group `{}`, which is never declared; valid: declare it with a \
                 [{1}] or [{1}:children] section",
                shown(p.parents.last().map_or("?", String::as_str)),
                shown(name)
            ),
        };
        return Err(cx.error(Some(p.line), message));
    }
    Ok(())
}

fn add_pending_children(m: &mut Model, pending: &mut BTreeMap<String, Pending>, group: &str) {
    let Some(p) = pending.remove(group) else {
        return;
    };
    for parent in p.parents {
        m.add_child(&parent, group);
        if pending
            .get(&parent)
            .is_some_and(|q| q.state == Section::Children)
        {
            add_pending_children(m, pending, &parent);
        }
    }
}

/// Python's `str.splitlines()`, which the INI plugin reads lines with.
fn py_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut it = text.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if matches!(
            c,
            '\n' | '\r'
                | '\x0b'
                | '\x0c'
                | '\x1c'
                | '\x1d'
                | '\x1e'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        ) {
            out.push(&text[start..i]);
            start = i + c.len_utf8();
            if c == '\r' && it.peek().is_some_and(|(_, n)| *n == '\n') {
                it.next();
                start += 1;
            }
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// `[name]` or `[name:kind]`, then an optional `# comment` (the plugin's
/// section pattern: a name has no `:`, `]` or space).
fn ini_section(line: &str) -> Option<(&str, Option<&str>)> {
    let rest = line.strip_prefix('[')?;
    let end = rest.find(|c: char| c == ':' || c == ']' || c.is_whitespace())?;
    if end == 0 {
        return None;
    }
    let (name, mut rest) = rest.split_at(end);
    let mut kind = None;
    if let Some(r) = rest.strip_prefix(':') {
        let k = r
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(r.len());
        if k == 0 {
            return None;
        }
        kind = Some(&r[..k]);
        rest = &r[k..];
    }
    let rest = rest.strip_prefix(']')?.trim_start();
    (rest.is_empty() || rest.starts_with('#')).then_some((name, kind))
}

/// A line of a `[g:children]` section: a group name and an optional comment.
fn ini_group_name(line: &str) -> Option<&str> {
    let end = line
        .find(|c: char| c == ':' || c == ']' || c.is_whitespace())
        .unwrap_or(line.len());
    let rest = line[end..].trim_start();
    (end > 0 && (rest.is_empty() || rest.starts_with('#'))).then_some(&line[..end])
}

/// Python's `shlex.split(line, comments=True)` in POSIX mode, as the INI
/// plugin splits a host line: quotes group, a backslash escapes, an
/// unquoted `#` starts a comment.
fn shlex_split(line: &str) -> Result<Vec<String>, &'static str> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\r' | '\n' => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '#' => break,
            '\\' => {
                in_word = true;
                cur.push(chars.next().ok_or("no escaped character")?);
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(n) => cur.push(n),
                        None => return Err("no closing quotation"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        // Inside double quotes a backslash escapes only `\` and `"`.
                        Some('\\') => match chars.next() {
                            Some(n @ ('\\' | '"')) => cur.push(n),
                            Some(n) => {
                                cur.push('\\');
                                cur.push(n);
                            }
                            None => return Err("no escaped character"),
                        },
                        Some(n) => cur.push(n),
                        None => return Err("no closing quotation"),
                    }
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// An INI value as `ast.literal_eval` types it, for the types the mapping
/// reads: `None`, `True`/`False`, integers, floats and string literals,
/// with a trailing `# comment`.  Anything else (a bare word, a list, a
/// dict, an expression) stays the text as written, as Ansible keeps it.
fn py_value(s: &str) -> Var {
    py_literal(s.trim_start_matches([' ', '\t'])).unwrap_or_else(|| Var::Str(s.to_string()))
}

fn py_literal(s: &str) -> Option<Var> {
    let (v, rest) = py_atom(s)?;
    let rest = rest.trim_start_matches([' ', '\t', '\x0c', '\r', '\n']);
    (rest.is_empty() || rest.starts_with('#')).then_some(v)
}

fn py_atom(s: &str) -> Option<(Var, &str)> {
    for (word, v) in [
        ("True", Var::Bool(true)),
        ("False", Var::Bool(false)),
        ("None", Var::Null),
    ] {
        if let Some(rest) = s.strip_prefix(word) {
            if !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
                return Some((v, rest));
            }
        }
    }
    if let Some((text, rest)) = py_strings(s) {
        return Some((Var::Str(text), rest));
    }
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let body = if body.len() < s.len() {
        body.trim_start_matches([' ', '\t'])
    } else {
        body
    };
    let (v, rest) = py_number(body)?;
    let v = match v {
        Var::Int(i) if neg => Var::Int(i.checked_neg()?),
        Var::Float(f) if neg => Var::Float(-f),
        v => v,
    };
    Some((v, rest))
}

/// Digits with Python's underscores: single ones, between digits.
fn py_digits_ok(d: &str, leading_underscore: bool) -> bool {
    let d = if leading_underscore {
        d.strip_prefix('_').unwrap_or(d)
    } else {
        d
    };
    !d.is_empty() && !d.starts_with('_') && !d.ends_with('_') && !d.contains("__")
}

fn py_number(s: &str) -> Option<(Var, &str)> {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
    let b = s.as_bytes();
    if b.len() > 2 && b[0] == b'0' && b[1].is_ascii_alphabetic() {
        let radix = match b[1] {
            b'x' | b'X' => 16,
            b'o' | b'O' => 8,
            b'b' | b'B' => 2,
            _ => return None,
        };
        let end = s[2..]
            .find(|c: char| !(c.is_digit(radix) || c == '_'))
            .map_or(s.len(), |i| i + 2);
        let digits = &s[2..end];
        if !py_digits_ok(digits, true) || s[end..].starts_with(ident) {
            return None;
        }
        let n = i64::from_str_radix(&digits.replace('_', ""), radix).ok()?;
        return Some((Var::Int(n), &s[end..]));
    }
    let digits_end = |from: usize| {
        s[from..]
            .find(|c: char| !(c.is_ascii_digit() || c == '_'))
            .map_or(s.len(), |i| i + from)
    };
    let int_end = digits_end(0);
    let int_part = &s[..int_end];
    let mut end = int_end;
    let mut float = false;
    let mut frac = "";
    if s[end..].starts_with('.') {
        float = true;
        let f_end = digits_end(end + 1);
        frac = &s[end + 1..f_end];
        end = f_end;
    }
    if int_part.is_empty() && frac.is_empty() {
        return None;
    }
    if (!int_part.is_empty() && !py_digits_ok(int_part, false))
        || (!frac.is_empty() && !py_digits_ok(frac, false))
    {
        return None;
    }
    if s[end..].starts_with(['e', 'E']) {
        let mut e = end + 1;
        if s[e..].starts_with(['+', '-']) {
            e += 1;
        }
        let e_end = digits_end(e);
        if !py_digits_ok(&s[e..e_end], false) {
            return None;
        }
        float = true;
        end = e_end;
    }
    // `1j` is complex, `1abc` a syntax error: text either way.
    if s[end..].starts_with(ident) {
        return None;
    }
    let plain = s[..end].replace('_', "");
    if float {
        return Some((Var::Float(plain.parse().ok()?), &s[end..]));
    }
    // Python refuses `0777`; `000` is zero.
    if plain.len() > 1 && plain.starts_with('0') && plain.bytes().any(|c| c != b'0') {
        return None;
    }
    Some((Var::Int(plain.parse().ok()?), &s[end..]))
}

/// One or more adjacent string literals, concatenated as Python does.
fn py_strings(s: &str) -> Option<(String, &str)> {
    let (mut text, mut rest) = py_string(s)?;
    loop {
        match py_string(rest.trim_start_matches([' ', '\t', '\x0c'])) {
            Some((more, r)) => {
                text.push_str(&more);
                rest = r;
            }
            None => return Some((text, rest)),
        }
    }
}

/// One Python string literal (`'…'`, `"…"`, triple-quoted, `r`/`u`/`b`
/// prefixes) with its escapes; `None` where Python would not parse it (or
/// for `\N{…}` names, which stay text).
fn py_string(s: &str) -> Option<(String, &str)> {
    let q = s.find(['\'', '"'])?;
    let prefix = s[..q].to_ascii_lowercase();
    if !matches!(prefix.as_str(), "" | "r" | "u" | "b" | "rb" | "br") {
        return None;
    }
    let raw = prefix.contains('r');
    let body = &s[q..];
    let quote = &body[..1];
    let delim = if body.starts_with(&quote.repeat(3)) {
        &body[..3]
    } else {
        quote
    };
    let mut out = String::new();
    let mut i = delim.len();
    loop {
        let rest = &body[i..];
        if let Some(after) = rest.strip_prefix(delim) {
            return Some((out, after));
        }
        let c = rest.chars().next()?;
        i += c.len_utf8();
        if c == '\n' && delim.len() == 1 {
            return None;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let n = body[i..].chars().next()?;
        i += n.len_utf8();
        if raw {
            out.push('\\');
            out.push(n);
            continue;
        }
        let hex = |i: &mut usize, len: usize| -> Option<char> {
            let h = body.get(*i..*i + len)?;
            if !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            *i += len;
            char::from_u32(u32::from_str_radix(h, 16).ok()?)
        };
        match n {
            '\n' => {}
            '\\' | '\'' | '"' => out.push(n),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            'x' => out.push(hex(&mut i, 2)?),
            'u' => out.push(hex(&mut i, 4)?),
            'U' => out.push(hex(&mut i, 8)?),
            'N' => return None,
            '0'..='7' => {
                let mut v = n.to_digit(8)?;
                for _ in 0..2 {
                    match body[i..].chars().next().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            i += 1;
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v)?);
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Host patterns: `name:port`, `[ipv6]:port`, ranges.

/// More hosts than this from one pattern is refused (`[0:999999999]`).
const MAX_EXPANDED_HOSTS: usize = 10_000;

/// A host pattern as the file plugins read it: the port split off (Ansible's
/// `parse_address`), then ranges expanded.  `ini`: the INI plugin's extra
/// checks (no trailing `:`, no `---`).
fn expand_host_pattern(pattern: &str, ini: bool) -> Result<(Vec<String>, Option<String>), String> {
    let (host, port) = split_port(pattern);
    if ini && port.is_none() && pattern.trim().ends_with(':') {
        return Err(format!(
            "host pattern `{}` ends in `:`, which is reserved for a port; valid: host:2222",
            shown(pattern)
        ));
    }
    if ini && host.trim() == "---" {
        return Err(
            "host pattern `---` is normally a sign this is a YAML file; give it a .yml name".into(),
        );
    }
    if host.is_empty() {
        return Err("empty host name; valid: a name or an address, e.g. db1.lab.example".into());
    }
    let mut out = Vec::new();
    expand_ranges(host, &mut out).map_err(|e| format!("host pattern `{}`: {e}", shown(pattern)))?;
    Ok((out, port.map(str::to_string)))
}

/// Ansible's `parse_address(p, allow_ranges=True)`, port part: `[v6]:port`,
/// or `name:port` where the name has no `:` outside range brackets.
fn split_port(p: &str) -> (&str, Option<&str>) {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(inner) = p.strip_prefix('[') {
        if let Some(close) = inner.rfind("]:") {
            let (host, port) = (&inner[..close], &inner[close + 2..]);
            let v6 = host.contains(':')
                && host
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
            if v6 && digits(port) {
                return (host, Some(port));
            }
        }
    }
    let b = p.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'[' => match p[i..].find(']') {
                Some(j) => i += j + 1,
                None => return (p, None),
            },
            b']' => return (p, None),
            b':' => {
                let port = &p[i + 1..];
                return if i > 0 && digits(port) {
                    (&p[..i], Some(port))
                } else {
                    (p, None)
                };
            }
            _ => i += 1,
        }
    }
    (p, None)
}

/// `string.ascii_letters`, whose order alphabetic ranges follow.
const ASCII_LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// Ansible's `expand_hostname_range`: the first `[beg:end]` or
/// `[beg:end:step]`, inclusive, numbers zero-padded when `beg` is, single
/// letters in `ascii_letters` order; the rest expanded recursively.
fn expand_ranges(pattern: &str, out: &mut Vec<String>) -> Result<(), String> {
    let Some(open) = pattern.find('[') else {
        out.push(pattern.to_string());
        return Ok(());
    };
    let close = pattern[open..]
        .find(']')
        .map(|i| open + i)
        .ok_or("a `[` without its `]`; valid ranges: [01:50], [01:50:2], [a:f]")?;
    let (head, range, tail) = (
        &pattern[..open],
        &pattern[open + 1..close],
        &pattern[close + 1..],
    );
    let bounds: Vec<&str> = range.split(':').collect();
    if !(2..=3).contains(&bounds.len()) {
        return Err(format!(
            "range [{range}] must be begin:end or begin:end:step"
        ));
    }
    let beg = if bounds[0].is_empty() { "0" } else { bounds[0] };
    let end = bounds[1];
    if end.is_empty() {
        return Err(format!("range [{range}] has no end"));
    }
    let step: usize =
        match bounds.get(2) {
            Some(s) => s.parse().ok().filter(|s| *s > 0).ok_or_else(|| {
                format!("range [{range}] has a step that is not a positive integer")
            })?,
            None => 1,
        };
    let width = if beg.len() > 1 && beg.starts_with('0') {
        if beg.len() != end.len() {
            return Err(format!(
                "range [{range}] must give begin and end with the same number of digits (e.g. [01:50])"
            ));
        }
        beg.len()
    } else {
        0
    };
    let letter = |s: &str| match s.as_bytes() {
        [c] => ASCII_LETTERS.iter().position(|l| l == c),
        _ => None,
    };
    let items: Vec<String> = match (letter(beg), letter(end)) {
        (Some(b), Some(e)) => {
            if b > e {
                return Err(format!("range [{range}] has begin after end"));
            }
            (b..=e)
                .step_by(step)
                .map(|i| (ASCII_LETTERS[i] as char).to_string())
                .collect()
        }
        _ => {
            let (Ok(b), Ok(e)) = (beg.parse::<u64>(), end.parse::<u64>()) else {
                return Err(format!(
                    "range [{range}] must be numbers (01:50) or single letters (a:f)"
                ));
            };
            if b > e {
                return Err(format!("range [{range}] has begin after end"));
            }
            if (e - b) / step as u64 >= (MAX_EXPANDED_HOSTS - out.len()) as u64 {
                return Err(format!(
                    "range [{range}] makes more than {MAX_EXPANDED_HOSTS} hosts"
                ));
            }
            (b..=e)
                .step_by(step)
                .map(|n| format!("{n:0width$}"))
                .collect()
        }
    };
    for item in items {
        let h = format!("{head}{item}{tail}");
        if h.contains('[') {
            expand_ranges(&h, out)?;
        } else {
            out.push(h);
        }
        if out.len() > MAX_EXPANDED_HOSTS {
            return Err(format!("ranges make more than {MAX_EXPANDED_HOSTS} hosts"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// YAML (ansible.builtin.yaml).

/// Groups nested deeper than this are refused rather than recursed into.
const MAX_YAML_DEPTH: usize = 64;

fn read_yaml(cx: &mut Cx<'_>, m: &mut Model, text: &str) -> Result<(), ImportError> {
    let docs = MarkedYaml::load_from_str(text).map_err(|e| {
        cx.error(
            Some(e.marker().line()),
            format!("invalid YAML: {}", e.info()),
        )
    })?;
    let Some(doc) = docs.first() else {
        return Err(cx.error(
            None,
            "the YAML file is empty; valid: a mapping of groups, e.g. `all:`",
        ));
    };
    if docs.len() > 1 {
        return Err(cx.error(
            Some(docs[1].span.start.line()),
            "the YAML file has more than one document; valid: one mapping of groups",
        ));
    }
    let YamlData::Mapping(top) = &doc.data else {
        return Err(cx.error(
            Some(line_of(doc)),
            "a YAML inventory must be a mapping of groups (usually `all:` with `hosts:`, `vars:` \
             and `children:`)",
        ));
    };
    if top.keys().any(|k| yaml_key(k).as_deref() == Some("plugin")) {
        return Err(cx.error(
            Some(line_of(doc)),
            "this is an inventory plugin's configuration (`plugin:`), not an inventory; run \
             `ansible-inventory -i FILE --list > list.json` and import list.json",
        ));
    }
    for (k, v) in top {
        let name = group_key(cx, k)?;
        yaml_group(cx, m, &name, v, 0)?;
    }
    Ok(())
}

fn line_of(n: &MarkedYaml<'_>) -> usize {
    n.span.start.line()
}

/// A mapping key as text, as PyYAML would give it to Ansible.
fn yaml_key(k: &MarkedYaml<'_>) -> Option<String> {
    match &k.data {
        YamlData::Value(Scalar::String(s)) => Some(s.to_string()),
        YamlData::Value(Scalar::Integer(i)) => Some(i.to_string()),
        YamlData::Value(Scalar::FloatingPoint(f)) => Some(f.to_string()),
        YamlData::Value(Scalar::Boolean(b)) => Some(if *b { "True" } else { "False" }.into()),
        YamlData::Tagged(_, inner) => yaml_key(inner),
        _ => None,
    }
}

fn group_key(cx: &Cx<'_>, k: &MarkedYaml<'_>) -> Result<String, ImportError> {
    yaml_key(k).ok_or_else(|| {
        cx.error(
            Some(line_of(k)),
            "a group or host name must be a plain string; valid: e.g. `webservers:`",
        )
    })
}

fn yaml_var(n: &MarkedYaml<'_>) -> Var {
    match &n.data {
        YamlData::Value(Scalar::Null) => Var::Null,
        YamlData::Value(Scalar::Boolean(b)) => Var::Bool(*b),
        YamlData::Value(Scalar::Integer(i)) => Var::Int(*i),
        YamlData::Value(Scalar::FloatingPoint(f)) => Var::Float(f.into_inner()),
        YamlData::Value(Scalar::String(s)) => Var::Str(s.to_string()),
        YamlData::Sequence(_) => Var::Other("a list"),
        YamlData::Mapping(_) => Var::Other("a mapping"),
        YamlData::Tagged(_, inner) => yaml_var(inner),
        _ => Var::Other("a value that could not be read"),
    }
}

/// A variables mapping's entries, with a YAML merge key (`<<: *anchor`)
/// expanded under the keys written beside it.
fn yaml_vars<'a, 'i>(map: &'a MarkedYaml<'i>) -> Vec<(&'a MarkedYaml<'i>, &'a MarkedYaml<'i>)> {
    let YamlData::Mapping(m) = &map.data else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut push = |k: &'a MarkedYaml<'i>, v: &'a MarkedYaml<'i>, out: &mut Vec<_>| {
        if let Some(name) = yaml_key(k) {
            if seen.insert(name) {
                out.push((k, v));
            }
        }
    };
    for (k, v) in m
        .iter()
        .filter(|(k, _)| yaml_key(k).as_deref() != Some("<<"))
    {
        push(k, v, &mut out);
    }
    for (_, v) in m
        .iter()
        .filter(|(k, _)| yaml_key(k).as_deref() == Some("<<"))
    {
        let sources: Vec<&MarkedYaml<'i>> = match &v.data {
            YamlData::Sequence(s) => s.iter().collect(),
            _ => vec![v],
        };
        for src in sources {
            if let YamlData::Mapping(sm) = &src.data {
                for (k, v) in sm {
                    push(k, v, &mut out);
                }
            }
        }
    }
    out
}

/// The yaml plugin's `_parse_group`.
fn yaml_group(
    cx: &mut Cx<'_>,
    m: &mut Model,
    group: &str,
    node: &MarkedYaml<'_>,
    depth: usize,
) -> Result<(), ImportError> {
    if depth > MAX_YAML_DEPTH {
        return Err(cx.error(
            Some(line_of(node)),
            format!("groups are nested more than {MAX_YAML_DEPTH} deep"),
        ));
    }
    let map = match &node.data {
        YamlData::Value(Scalar::Null) => {
            m.group(group);
            return Ok(());
        }
        YamlData::Mapping(map) => map,
        _ => {
            cx.warn(
                Some(line_of(node)),
                format!(
                    "skipped `{}`: not a group (a group is a mapping)",
                    shown(group)
                ),
            );
            return Ok(());
        }
    };
    m.group(group);
    for (k, v) in map {
        let key = yaml_key(k).unwrap_or_default();
        if !matches!(key.as_str(), "hosts" | "vars" | "children") {
            cx.warn(
                Some(line_of(k)),
                format!(
                    "skipped key `{}` of group `{}`: only hosts, vars and children are read",
                    shown(&key),
                    shown(group)
                ),
            );
            continue;
        }
        let entries: Vec<(&MarkedYaml<'_>, Option<&MarkedYaml<'_>>)> = match &v.data {
            YamlData::Value(Scalar::Null) => continue,
            // `hosts: name` is `hosts: {name: null}`.
            YamlData::Value(Scalar::String(_)) => vec![(v, None)],
            YamlData::Mapping(e) => e.iter().map(|(k, v)| (k, Some(v))).collect(),
            _ => {
                return Err(cx.error(
                    Some(line_of(v)),
                    format!(
                        "`{key}` of group `{}` must be a mapping, one `name:` per line, not a \
                         list or a scalar",
                        shown(group)
                    ),
                ));
            }
        };
        match key.as_str() {
            "vars" => {
                for (vk, vv) in yaml_vars(v) {
                    let name = group_key(cx, vk)?;
                    let value = Located {
                        value: yaml_var(vv),
                        line: Some(line_of(vk)),
                    };
                    m.set_group_var(cx, group, &name, value)?;
                }
            }
            "children" => {
                for (ck, cv) in entries {
                    let child = group_key(cx, ck)?;
                    match cv {
                        Some(cv) => yaml_group(cx, m, &child, cv, depth + 1)?,
                        None => {
                            m.group(&child);
                        }
                    }
                    m.add_child(group, &child);
                }
            }
            _ => {
                // hosts
                for (hk, hv) in entries {
                    let pattern = group_key(cx, hk)?;
                    let line = Some(line_of(hk));
                    let (names, port) =
                        expand_host_pattern(&pattern, false).map_err(|e| cx.error(line, e))?;
                    let vars = match hv {
                        None => Vec::new(),
                        Some(n) if matches!(n.data, YamlData::Value(Scalar::Null)) => Vec::new(),
                        Some(n) if matches!(n.data, YamlData::Mapping(_)) => yaml_vars(n),
                        Some(_) => {
                            return Err(cx.error(
                                line,
                                format!(
                                    "host `{}` must map to its variables (or nothing), not a list \
                                     or a scalar",
                                    shown(&pattern)
                                ),
                            ))
                        }
                    };
                    for name in names {
                        let h = m.add_host(&name, group, port.as_deref(), line);
                        for (vk, vv) in &vars {
                            let key = group_key(cx, vk)?;
                            m.set_host_var(
                                h,
                                &key,
                                Located {
                                    value: yaml_var(vv),
                                    line: Some(line_of(vk)),
                                },
                            );
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// JSON (`ansible-inventory --list`, inventory scripts).

fn json_var(v: &serde_json::Value) -> Var {
    use serde_json::Value as J;
    match v {
        J::Null => Var::Null,
        J::Bool(b) => Var::Bool(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => Var::Int(i),
            None => Var::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => Var::Str(s.clone()),
        J::Array(_) => Var::Other("a list"),
        J::Object(o) if o.contains_key("__ansible_vault") => {
            Var::Other("an ansible-vault encrypted value")
        }
        J::Object(o) => match o.get("__ansible_unsafe") {
            Some(J::String(s)) => Var::Str(s.clone()),
            _ => Var::Other("a mapping"),
        },
    }
}

fn read_json(cx: &mut Cx<'_>, m: &mut Model, text: &str) -> Result<(), ImportError> {
    use serde_json::Value as J;
    let doc: J = serde_json::from_str(text)
        .map_err(|e| cx.error(Some(e.line()), format!("invalid JSON: {e}")))?;
    let J::Object(top) = doc else {
        return Err(cx.error(
            None,
            "the JSON must be an object of groups, as `ansible-inventory --list` writes",
        ));
    };
    let strings =
        |cx: &Cx<'_>, v: &J, what: &str, group: &str| -> Result<Vec<String>, ImportError> {
            let list = v.as_array().ok_or_else(|| {
                cx.error(
                    None,
                    format!(
                        "`{what}` of group `{}` must be a list of names",
                        shown(group)
                    ),
                )
            })?;
            list.iter()
                .map(|h| {
                    h.as_str().map(str::to_string).ok_or_else(|| {
                        cx.error(
                            None,
                            format!("`{what}` of group `{}` holds a non-string", shown(group)),
                        )
                    })
                })
                .collect()
        };
    for (group, data) in top.iter().filter(|(g, _)| *g != "_meta") {
        m.group(group);
        let shorthand;
        let data = match data {
            J::Null => continue,
            J::Array(_) => {
                shorthand = serde_json::json!({ "hosts": data });
                &shorthand
            }
            // A script's shorthand: a mapping without these keys is a host
            // named after the group, with those variables.
            J::Object(o) if !o.is_empty() && !["hosts", "vars", "children"].iter().any(|k| o.contains_key(*k)) => {
                shorthand = serde_json::json!({ "hosts": [group], "vars": data });
                &shorthand
            }
            J::Object(_) => data,
            _ => {
                return Err(cx.error(
                    None,
                    format!(
                        "group `{}` must be an object with hosts, children and vars, or a list of hosts",
                        shown(group)
                    ),
                ))
            }
        };
        if let Some(hosts) = data.get("hosts") {
            for h in strings(cx, hosts, "hosts", group)? {
                m.add_host(&h, group, None, None);
            }
        }
        if let Some(vars) = data.get("vars") {
            let J::Object(vars) = vars else {
                return Err(cx.error(
                    None,
                    format!("`vars` of group `{}` must be an object", shown(group)),
                ));
            };
            for (k, v) in vars {
                m.set_group_var(
                    cx,
                    group,
                    k,
                    Located {
                        value: json_var(v),
                        line: None,
                    },
                )?;
            }
        }
        if let Some(children) = data.get("children") {
            for c in strings(cx, children, "children", group)? {
                m.add_child(group, &c);
            }
        }
    }
    let hostvars = top.get("_meta").and_then(|meta| meta.get("hostvars"));
    if let Some(hv) = hostvars {
        let J::Object(hv) = hv else {
            return Err(cx.error(None, "`_meta.hostvars` must be an object of hosts"));
        };
        for (host, vars) in hv {
            let Some(&i) = m.index.get(host) else {
                cx.warn(
                    None,
                    format!(
                        "`_meta.hostvars` has host `{}`, which no group lists; skipped, as Ansible does",
                        shown(host)
                    ),
                );
                continue;
            };
            let J::Object(vars) = vars else {
                return Err(cx.error(
                    None,
                    format!("`_meta.hostvars` of `{}` must be an object", shown(host)),
                ));
            };
            for (k, v) in vars {
                m.set_host_var(
                    i,
                    k,
                    Located {
                        value: json_var(v),
                        line: None,
                    },
                );
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// From Ansible's variables to fsmatrix keys.

/// One `[[host]]` to write.
#[derive(Debug)]
struct Entry {
    ansible_name: String,
    line: Option<usize>,
    name: String,
    address: String,
    port: Option<u16>,
    user: Option<String>,
    become_sudo: bool,
    identity_file: Option<String>,
    /// Jump hosts from a ProxyJump (`-J`) in the ssh arguments.
    proxy_jump: Option<String>,
    /// `None`: not known; written as linux with a CHECK comment.
    os: Option<Os>,
    /// Why the OS is not known (a fact that named no supported system).
    os_note: Option<String>,
    tags: Vec<String>,
    /// `# CHECK:` lines, plain text (escaped when written).
    checks: Vec<String>,
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

/// Become methods fsmatrix can do: only sudo (`become = "sudo"`).
const SUDO_METHODS: &[&str] = &["sudo", "ansible.builtin.sudo"];

/// `ansible_os_family` / `ansible_system` / `ansible_distribution` values of
/// Linux systems (lowercase).
const LINUX_NAMES: &[&str] = &[
    "linux",
    "debian",
    "ubuntu",
    "redhat",
    "rhel",
    "centos",
    "fedora",
    "rocky",
    "almalinux",
    "oraclelinux",
    "amazon",
    "suse",
    "sles",
    "sles_sap",
    "sled",
    "archlinux",
    "arch",
    "manjaro",
    "gentoo",
    "alpine",
    "altlinux",
    "mandrake",
    "mandriva",
    "slackware",
    "clearlinux",
    "coreos",
    "flatcar",
    "void",
    "nixos",
    "kali",
    "linuxmint",
    "raspbian",
    "devuan",
    "scientific",
    "cloudlinux",
    "eurolinux",
    "virtuozzo",
    "xenserver",
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
    let v = value.trim().to_ascii_lowercase();
    match v.as_str() {
        "freebsd" => OsFact::Supported(Os::Freebsd),
        "dragonfly" | "dragonflybsd" | "dragonfly bsd" => OsFact::Supported(Os::Dragonfly),
        v if LINUX_NAMES.contains(&v) || v.starts_with("opensuse") => OsFact::Supported(Os::Linux),
        v if OTHER_SYSTEMS.contains(&v) => OsFact::Unsupported,
        _ => OsFact::Unknown,
    }
}

/// Ansible's `boolean()`: bools, 0/1, and y/yes/on/1/true/t (or the
/// opposites) in any case.
fn ansible_bool(v: &Var) -> Option<bool> {
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
struct HostVars<'a> {
    vars: &'a Vars,
    /// "host `web1`", for messages.
    who: String,
    /// Where the host first appears.
    at: Option<usize>,
}

/// A variable's text, which variable gave it, and where that was set.
struct Text {
    value: String,
    key: &'static str,
    line: Option<usize>,
}

impl HostVars<'_> {
    /// The last of `keys` that is set (not null): of an option's variables,
    /// Ansible reads the last one set.
    fn get(&self, keys: &[&'static str]) -> Option<(&'static str, &Located)> {
        keys.iter().rev().find_map(|k| {
            self.vars
                .get(*k)
                .filter(|l| l.value != Var::Null)
                .map(|l| (*k, l))
        })
    }

    fn error(&self, cx: &Cx<'_>, line: Option<usize>, message: String) -> ImportError {
        cx.error(line.or(self.at), format!("{}: {message}", self.who))
    }

    /// A warning that is also a `# CHECK:` comment on the host.
    fn check(
        &self,
        cx: &mut Cx<'_>,
        checks: &mut Vec<String>,
        line: Option<usize>,
        message: String,
    ) {
        cx.warn(line.or(self.at), format!("{}: {message}", self.who));
        checks.push(message);
    }

    /// The text of a variable that names something (an address, a user, a
    /// path, a method): a string, or an integer as Ansible would template
    /// it.  Templates, vaulted values, lists and mappings are refused.
    fn text(&self, cx: &Cx<'_>, keys: &[&'static str]) -> Result<Option<Text>, ImportError> {
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

/// `become = "sudo"` when Ansible becomes root with sudo; other methods
/// and other target users are warned about.
fn become_sudo(
    cx: &mut Cx<'_>,
    hv: &HostVars<'_>,
    checks: &mut Vec<String>,
) -> Result<bool, ImportError> {
    let on = match hv.get(&["ansible_become"]) {
        None => false,
        Some((_, l)) => ansible_bool(&l.value).ok_or_else(|| {
            hv.error(
                cx,
                l.line,
                "ansible_become is not a boolean; valid: true/false, yes/no, on/off, 1/0".into(),
            )
        })?,
    };
    if !on {
        return Ok(false);
    }
    // Ansible's default method (ansible.cfg's become_method) is sudo.
    let sudo = match hv.text(cx, &["ansible_become_method"])? {
        None => true,
        Some(m) if SUDO_METHODS.contains(&m.value.as_str()) => true,
        Some(m) => {
            hv.check(
                cx,
                checks,
                m.line,
                format!(
                    "Ansible becomes root here with `{}`; fsmatrix knows only become = \"sudo\", \
                     so none was written: set up passwordless sudo and add become = \"sudo\", or \
                     log in as root",
                    shown(&m.value)
                ),
            );
            false
        }
    };
    if let Some(u) = hv.text(cx, &["ansible_become_user"])? {
        if u.value != "root" {
            hv.check(
                cx,
                checks,
                u.line,
                format!(
                    "Ansible becomes `{}` here, not root; fsmatrix always becomes root",
                    shown(&u.value)
                ),
            );
        }
    }
    Ok(sudo)
}

/// The jump hosts of `-J HOPS`, `-o ProxyJump=HOPS` or `-o "ProxyJump HOPS"`
/// in an ssh argument string (shell words, as Ansible passes them).
fn proxy_jump_in(args: &str) -> Option<String> {
    let words = shlex_split(args).ok()?;
    let mut it = words.iter().peekable();
    while let Some(w) = it.next() {
        let opt = if w == "-o" {
            it.next().cloned()
        } else if let Some(rest) = w.strip_prefix("-o") {
            Some(rest.to_string())
        } else if w == "-J" {
            return it.next().cloned();
        } else if let Some(rest) = w.strip_prefix("-J") {
            return Some(rest.to_string());
        } else {
            None
        };
        if let Some(o) = opt {
            let (k, v) = o
                .split_once('=')
                .or_else(|| o.trim().split_once(char::is_whitespace))?;
            if k.trim().eq_ignore_ascii_case("proxyjump") {
                return Some(v.trim().to_string());
            }
        }
    }
    None
}

/// SSH options and passwords are not imported, except a jump host given as
/// ProxyJump (`-J`), which becomes `proxy_jump` once fsmatrix's own
/// validator accepts it; a ProxyCommand is said so.
fn connection_checks(
    cx: &mut Cx<'_>,
    hv: &HostVars<'_>,
    address: &str,
    checks: &mut Vec<String>,
) -> Result<Option<String>, ImportError> {
    let mut jump = None;
    for key in [
        "ansible_ssh_common_args",
        "ansible_ssh_extra_args",
        "ansible_ssh_args",
    ] {
        let Some(args) = hv.text(cx, &[key])? else {
            continue;
        };
        let lower = args.value.to_ascii_lowercase();
        if let Some(hops) = proxy_jump_in(&args.value).filter(|_| jump.is_none()) {
            match crate::config::inventory::parse_proxy_jump(&hops) {
                Ok(_) => jump = Some(hops),
                Err(e) => {
                    return Err(hv.error(
                        cx,
                        args.line,
                        format!("{key}: ProxyJump `{}`: {e}", shown(&hops)),
                    ))
                }
            }
        } else if lower.contains("proxyjump")
            || lower.contains("proxycommand")
            || args.value.split_whitespace().any(|w| w.starts_with("-J"))
        {
            hv.check(
                cx,
                checks,
                args.line,
                format!(
                    "Ansible reaches this host through a jump host ({key}) that is not a \
                     ProxyJump; fsmatrix takes no ProxyCommand: give the jump host as \
                     proxy_jump = \"user@bastion\" (or a ProxyJump in ~/.ssh/config) for {}",
                    shown(address)
                ),
            );
        } else if !args.value.trim().is_empty() {
            cx.warn(
                args.line.or(hv.at),
                format!(
                    "{}: {key} `{}` is not imported; fsmatrix takes no SSH options from its \
                     inventory (put them in ~/.ssh/config)",
                    hv.who,
                    shown(&args.value)
                ),
            );
        }
    }
    for key in [
        "ansible_password",
        "ansible_ssh_pass",
        "ansible_ssh_password",
        "ansible_become_password",
        "ansible_become_pass",
    ] {
        if let Some((_, l)) = hv.get(&[key]) {
            hv.check(
                cx,
                checks,
                l.line,
                format!(
                    "{key} is not imported: fsmatrix logs in with a key file or ssh-agent and \
                     needs passwordless sudo"
                ),
            );
        }
    }
    Ok(jump)
}

/// One Ansible host as an fsmatrix `[[host]]`, or `None` when fsmatrix
/// cannot reach or run on it (a warning says why).
fn map_host(cx: &mut Cx<'_>, h: &Resolved<'_>) -> Result<Option<Entry>, ImportError> {
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

    let name = convert_name(&ansible_name, "._-");
    if let Err(e) = HostName::new(&name) {
        return Err(hv.error(
            cx,
            None,
            format!(
                "the name cannot be an fsmatrix host name, even as `{}`: {e}; rename the \
                 host in the Ansible inventory",
                shown(&name)
            ),
        ));
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
            Address::new(&ansible_name).map_err(|e| {
                hv.error(
                    cx,
                    None,
                    format!(
                        "no ansible_host, and the name is not an address fsmatrix accepts: {e}; \
                         set ansible_host to its DNS name or IP address"
                    ),
                )
            })?;
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
    let become_sudo = become_sudo(cx, &hv, &mut checks)?;
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
        become_sudo,
        identity_file,
        proxy_jump,
        os,
        os_note,
        tags,
        checks,
    }))
}

fn warn_same_machine(cx: &mut Cx<'_>, entries: &[Entry]) {
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

// ---------------------------------------------------------------------------
// Writing the TOML.

/// Text for a `#` comment: control characters (a newline would end the
/// comment and start a line of TOML) are written as escapes.
fn comment_safe(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The keys a written `[[host]]` may hold; [`read_back`] checks it.
const WRITTEN_KEYS: &[&str] = &[
    "name",
    "address",
    "port",
    "user",
    "become",
    "identity_file",
    "proxy_jump",
    "os",
    "tags",
    "devices",
];

/// `key = value`: the key is one of ours, the value encoded by `toml`.
fn push_kv(out: &mut String, key: &'static str, value: toml::Value, comment: Option<&str>) {
    debug_assert!(WRITTEN_KEYS.contains(&key));
    out.push_str(key);
    out.push_str(" = ");
    out.push_str(&value.to_string());
    if let Some(c) = comment {
        out.push_str("  # ");
        out.push_str(&comment_safe(c));
    }
    out.push('\n');
}

fn render(source: &Path, format: AnsibleFormat, entries: &[Entry]) -> String {
    let s = |v: &str| toml::Value::String(v.to_string());
    let mut out = String::new();
    out.push_str(&format!(
        "# fsmatrix inventory, imported from the Ansible inventory {} ({}).\n",
        comment_safe(&source.display().to_string()),
        format.as_str()
    ));
    out.push_str(
        "#\n\
         # FILL IN THE DEVICES before use.  Ansible does not know which spare disks\n\
         # fsmatrix may format and destroy, so every host below has `devices = []`,\n\
         # which `fsmatrix check` refuses.  List on each host ONLY devices whose\n\
         # contents may be lost, e.g. devices = [\"/dev/vdb\"].\n\
         #\n\
         # Then review the lines marked CHECK, and add what Ansible does not say\n\
         # (platform, pg_bin, known_hosts, ...; see inventory/example-lab.toml).\n",
    );
    for e in entries {
        out.push_str("\n[[host]]\n");
        if e.name != e.ansible_name {
            out.push_str(&format!(
                "# Ansible host: {}\n",
                comment_safe(&e.ansible_name)
            ));
        }
        push_kv(&mut out, "name", s(&e.name), None);
        push_kv(&mut out, "address", s(&e.address), None);
        if let Some(p) = e.port {
            push_kv(&mut out, "port", toml::Value::Integer(i64::from(p)), None);
        }
        if let Some(u) = &e.user {
            push_kv(&mut out, "user", s(u), None);
        }
        if e.become_sudo {
            push_kv(&mut out, "become", s("sudo"), None);
        }
        if let Some(p) = &e.identity_file {
            push_kv(&mut out, "identity_file", s(p), None);
        }
        if let Some(j) = &e.proxy_jump {
            push_kv(&mut out, "proxy_jump", s(j), None);
        }
        match (e.os, &e.os_note) {
            (Some(o), _) => push_kv(&mut out, "os", s(o.as_str()), None),
            (None, note) => {
                let c = match note {
                    Some(n) => format!("CHECK: os not known from the Ansible inventory ({n})"),
                    None => "CHECK: os not known from the Ansible inventory".into(),
                };
                push_kv(&mut out, "os", s(Os::Linux.as_str()), Some(&c));
            }
        }
        if !e.tags.is_empty() {
            let tags = e.tags.iter().map(|t| s(t)).collect();
            push_kv(&mut out, "tags", toml::Value::Array(tags), None);
        }
        for c in &e.checks {
            out.push_str("# CHECK: ");
            out.push_str(&comment_safe(c));
            out.push('\n');
        }
        push_kv(
            &mut out,
            "devices",
            toml::Value::Array(Vec::new()),
            Some("FILL IN: the ONLY devices fsmatrix may destroy here, e.g. [\"/dev/vdb\"]"),
        );
    }
    out
}

/// Read the written text back: exactly the hosts meant, with their names,
/// and no key but ours.  A belt over the braces of [`push_kv`] and
/// [`comment_safe`]: no value can have added a key or a table.
fn read_back(path: &Path, text: &str, entries: &[Entry]) -> Result<(), ImportError> {
    let fail = |why: String| ImportError {
        file: path.to_path_buf(),
        line: None,
        message: format!(
            "internal error: the written inventory does not read back ({why}); please report it"
        ),
    };
    let doc: toml::Table = toml::from_str(text).map_err(|e| fail(e.to_string()))?;
    if doc.keys().any(|k| k != "host") {
        return Err(fail("a key other than [[host]]".into()));
    }
    let hosts = doc
        .get("host")
        .and_then(|h| h.as_array())
        .ok_or_else(|| fail("no [[host]]".into()))?;
    if hosts.len() != entries.len() {
        return Err(fail(format!(
            "{} [[host]] for {} hosts",
            hosts.len(),
            entries.len()
        )));
    }
    for (h, e) in hosts.iter().zip(entries) {
        let t = h
            .as_table()
            .ok_or_else(|| fail("a [[host]] that is not a table".into()))?;
        if let Some(k) = t.keys().find(|k| !WRITTEN_KEYS.contains(&k.as_str())) {
            return Err(fail(format!("unexpected key `{}`", shown(k))));
        }
        if t.get("name").and_then(|n| n.as_str()) != Some(e.name.as_str()) {
            return Err(fail(format!("host `{}` has another name", e.name)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Auth, Become, Host, Inventory};

    const FIXTURE_INI: &str = include_str!("../../../tests/fixtures/ansible/hosts.ini");
    const FIXTURE_YAML: &str = include_str!("../../../tests/fixtures/ansible/hosts.yml");
    const FIXTURE_JSON: &str = include_str!("../../../tests/fixtures/ansible/list.json");

    fn imp(name: &str, text: &str) -> Imported {
        match import(Path::new(name), text) {
            Ok(i) => i,
            Err(e) => panic!("{e}"),
        }
    }

    fn imp_err(name: &str, text: &str) -> ImportError {
        match import(Path::new(name), text) {
            Ok(i) => panic!("imported, but should not have:\n{}", i.toml),
            Err(e) => e,
        }
    }

    /// The imported text with every host given a device, as a user would.
    fn filled(toml: &str) -> String {
        toml.replace("devices = []", "devices = [\"/dev/vdb\"]")
    }

    fn parse_filled(i: &Imported) -> Inventory {
        match Inventory::parse(Path::new("/lab/imported.toml"), filled(&i.toml)) {
            Ok(inv) => inv,
            Err(e) => panic!("{e}\n{}", i.toml),
        }
    }

    fn by_name(inv: &Inventory) -> BTreeMap<String, &Host> {
        inv.hosts.iter().map(|h| (h.name.to_string(), h)).collect()
    }

    fn tags(h: &Host) -> Vec<String> {
        h.tags.iter().map(|t| t.to_string()).collect()
    }

    /// The text from the first `[[host]]` on (the header names the file).
    fn body(toml: &str) -> &str {
        &toml[toml.find("[[host]]").expect("a host")..]
    }

    fn warned(i: &Imported, what: &str) -> bool {
        i.warnings.iter().any(|w| w.contains(what))
    }

    // --- Ansible's own examples (inventory_guide/intro_inventory) --------

    const DOCS_INI: &str = "\
mail.example.com

[webservers]
foo.example.com
bar.example.com

[dbservers]
one.example.com
two.example.com
three.example.com

[east]
foo.example.com
one.example.com
two.example.com

[west]
bar.example.com
three.example.com

[prod:children]
east

[test:children]
west
";

    const DOCS_YAML: &str = "\
all:
  hosts:
    mail.example.com:
  children:
    webservers:
      hosts:
        foo.example.com:
        bar.example.com:
    dbservers:
      hosts:
        one.example.com:
        two.example.com:
        three.example.com:
    east:
      hosts:
        foo.example.com:
        one.example.com:
        two.example.com:
    west:
      hosts:
        bar.example.com:
        three.example.com:
    prod:
      children:
        east:
    test:
      children:
        west:
";

    #[test]
    fn docs_ini_groups_and_children_become_tags() {
        let i = imp("hosts", DOCS_INI);
        assert_eq!(i.hosts, 6);
        let inv = parse_filled(&i);
        let names: Vec<String> = inv.hosts.iter().map(|h| h.name.to_string()).collect();
        assert_eq!(
            names,
            [
                "mail.example.com",
                "foo.example.com",
                "bar.example.com",
                "one.example.com",
                "two.example.com",
                "three.example.com"
            ]
        );
        let h = by_name(&inv);
        // (host, tags: every group through children, but all/ungrouped)
        for (host, want) in [
            ("mail.example.com", vec![]),
            ("foo.example.com", vec!["east", "prod", "webservers"]),
            ("bar.example.com", vec!["test", "webservers", "west"]),
            ("one.example.com", vec!["dbservers", "east", "prod"]),
            ("three.example.com", vec!["dbservers", "test", "west"]),
        ] {
            assert_eq!(tags(h[host]), want, "{host}");
            assert_eq!(h[host].address.as_str(), host);
            assert_eq!(h[host].port, 22);
        }
    }

    #[test]
    fn docs_yaml_gives_the_same_inventory_as_the_docs_ini() {
        assert_eq!(detect(Path::new("hosts"), DOCS_YAML), AnsibleFormat::Yaml);
        let y = imp("hosts.yml", DOCS_YAML);
        let i = imp("hosts", DOCS_INI);
        assert_eq!(body(&y.toml), body(&i.toml));
        assert!(y.toml.starts_with(
            "# fsmatrix inventory, imported from the Ansible inventory hosts.yml (YAML).\n"
        ));
    }

    #[test]
    fn docs_ranges_expand_inclusively_with_padding_and_stride() {
        let count = |pattern: &str| {
            let mut out = Vec::new();
            expand_ranges(pattern, &mut out).map(|()| out)
        };
        let www = count("www[01:50].example.com").unwrap();
        assert_eq!(
            (www.len(), www[0].as_str(), www[49].as_str()),
            (50, "www01.example.com", "www50.example.com")
        );
        let odd = count("www[01:50:2].example.com").unwrap();
        assert_eq!(
            (odd.len(), odd[1].as_str(), odd[24].as_str()),
            (25, "www03.example.com", "www49.example.com")
        );
        assert_eq!(
            count("db-[a:f].example.com").unwrap(),
            ["a", "b", "c", "d", "e", "f"].map(|c| format!("db-{c}.example.com"))
        );
        assert_eq!(count("n[8:10]").unwrap(), ["n8", "n9", "n10"]);
        assert_eq!(
            count("r[1:2]-n[a:b]").unwrap(),
            ["r1-na", "r1-nb", "r2-na", "r2-nb"]
        );
        assert_eq!(
            count("x[y:B]").unwrap(),
            ["xy", "xz", "xA", "xB"],
            "ascii_letters order"
        );
        for (bad, why) in [
            ("www[01:5]", "same number of digits"),
            ("www[1:5:0]", "positive integer"),
            ("www[a:5]", "numbers (01:50) or single letters"),
            ("www[5:1]", "begin after end"),
            ("www[1]", "begin:end"),
            ("www[1:]", "no end"),
            ("www[1:2", "without its `]`"),
            ("www[0:99999999]", "more than 10000 hosts"),
        ] {
            let e = count(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let i = imp(
            "hosts",
            "[webservers]\nwww[01:50:2].example.com\n[databases]\ndb-[a:f].example.com\n",
        );
        assert_eq!(i.hosts, 31);
        let e = imp_err("hosts", "[web]\nok.example.com\nwww[01:5].example.com\n");
        assert_eq!((e.line, e.file.as_path()), (Some(3), Path::new("hosts")));
        assert!(
            e.to_string()
                .starts_with("hosts:3: host pattern `www[01:5].example.com`: "),
            "{e}"
        );
    }

    #[test]
    fn docs_host_ports_aliases_and_inline_vars() {
        let i = imp(
            "hosts",
            "\
badwolf.example.com:5309
jumper ansible_port=5555 ansible_host=192.0.2.50
[2001:db8::7]:2222

[atlanta]
host1 http_port=80 maxRequestsPerChild=808
host2 http_port=303 maxRequestsPerChild=909 # two hosts, one line each
",
        );
        let inv = parse_filled(&i);
        let h = by_name(&inv);
        // (host, address, port)
        for (host, address, port) in [
            ("badwolf.example.com", "badwolf.example.com", 5309),
            ("jumper", "192.0.2.50", 5555),
            ("2001-db8--7", "2001:db8::7", 2222),
            ("host1", "host1", 22),
            ("host2", "host2", 22),
        ] {
            assert_eq!(
                (h[host].address.as_str(), h[host].port),
                (address, port),
                "{host}"
            );
        }
        assert!(
            warned(&i, "host `2001:db8::7` is named `2001-db8--7` here"),
            "{:?}",
            i.warnings
        );
        assert!(i
            .toml
            .contains("[[host]]\n# Ansible host: 2001:db8::7\nname = \"2001-db8--7\"\n"));
        // An inline ansible_port beats the pattern's port, as in Ansible.
        let i = imp("hosts", "web:2201 ansible_port=2202\n");
        assert_eq!(parse_filled(&i).hosts[0].port, 2202);
        let e = imp_err("hosts", "web: ansible_port=2\n");
        assert!(e.message.contains("ends in `:`"), "{e}");
    }

    /// The docs' southeast example, with connection variables set at every
    /// level: all < parent < child < host, one depth in name order unless
    /// ansible_group_priority says otherwise.
    const PRECEDENCE_INI: &str = "\
[atlanta]
host1
host2 ansible_port=2202

[raleigh]
host2
host3

[southeast:children]
atlanta
raleigh

[southeast:vars]
ansible_user=southeast
ansible_port=2200

[atlanta:vars]
ansible_user=atlanta

[raleigh:vars]
ansible_user=raleigh

[usa:children]
southeast
northeast

[northeast]
host4

[all:vars]
ansible_user=everyone
ansible_port=2222
";

    #[test]
    fn group_vars_follow_ansible_precedence() {
        let inv = parse_filled(&imp("hosts", PRECEDENCE_INI));
        let h = by_name(&inv);
        // (host, user, port, tags)
        for (host, user, port, want_tags) in [
            (
                "host1",
                "atlanta",
                2200,
                vec!["atlanta", "southeast", "usa"],
            ),
            (
                "host2",
                "raleigh",
                2202,
                vec!["atlanta", "raleigh", "southeast", "usa"],
            ),
            (
                "host3",
                "raleigh",
                2200,
                vec!["raleigh", "southeast", "usa"],
            ),
            ("host4", "everyone", 2222, vec!["northeast", "usa"]),
        ] {
            assert_eq!(
                (h[host].user.as_str(), h[host].port, tags(h[host])),
                (
                    user,
                    port,
                    want_tags.iter().map(|s| s.to_string()).collect::<Vec<_>>()
                ),
                "{host}"
            );
        }
        let with_priority = PRECEDENCE_INI.replace(
            "[atlanta:vars]\n",
            "[atlanta:vars]\nansible_group_priority=10\n",
        );
        let inv = parse_filled(&imp("hosts", &with_priority));
        assert_eq!(by_name(&inv)["host2"].user.as_str(), "atlanta");
        let e = imp_err(
            "hosts",
            &PRECEDENCE_INI.replace(
                "[atlanta:vars]\n",
                "[atlanta:vars]\nansible_group_priority=high\n",
            ),
        );
        assert_eq!(e.line, Some(18));
        assert!(
            e.message
                .contains("ansible_group_priority of group `atlanta` is not an integer"),
            "{e}"
        );
    }

    #[test]
    fn ini_errors_name_the_line_and_what_is_valid() {
        // (inventory, line, words in the message)
        for (text, line, words) in [
            (
                "[usa:children]\nsoutheast\nnortheast\n[southeast]\nh1\n",
                3,
                "[usa:children] names group `northeast`, which is never declared",
            ),
            (
                "[web:vars]\nx=1\n",
                1,
                "section [web:vars] is for group `web`, which is never declared",
            ),
            (
                "[web:hostz]\nh1\n",
                1,
                "unknown type; valid: [web], [web:vars], [web:children]",
            ),
            ("[my group]\nh1\n", 1, "invalid section `[my group]`"),
            (
                "[web]\nh1\n[web:vars]\nansible_user\n",
                4,
                "expected key=value in [web:vars]",
            ),
            ("h1 ansible_user\n", 1, "expected key=value after the host"),
            ("h1 ansible_user='bob\n", 1, "no closing quotation"),
            (
                "[a:children]\nb\n[b:children]\na\n",
                0,
                "in a loop (`a`, `b`)",
            ),
            ("---\nweb1\n", 1, "sign this is a YAML file"),
        ] {
            let e = imp_err("hosts", text);
            assert_eq!(e.line, (line > 0).then_some(line), "{text}: {e}");
            assert!(e.message.contains(words), "{text}: {e}");
        }
    }

    #[test]
    fn ini_values_are_typed_as_literal_eval_types_them() {
        // What Python's ast.literal_eval gives (checked with python3).
        for (text, want) in [
            ("22", Var::Int(22)),
            ("True", Var::Bool(true)),
            ("False", Var::Bool(false)),
            ("None", Var::Null),
            ("'03#pa33w0rd'", Var::Str("03#pa33w0rd".into())),
            ("0777", Var::Str("0777".into())),
            ("00", Var::Int(0)),
            ("1_000", Var::Int(1000)),
            ("0x10", Var::Int(16)),
            ("0x_1f", Var::Int(31)),
            ("-5", Var::Int(-5)),
            ("- 5", Var::Int(-5)),
            ("1.5", Var::Float(1.5)),
            ("5.", Var::Float(5.0)),
            ("1e3", Var::Float(1000.0)),
            ("1j", Var::Str("1j".into())),
            ("23 # comment", Var::Int(23)),
            ("bob # x", Var::Str("bob # x".into())),
            ("\"a\\nb\"", Var::Str("a\nb".into())),
            ("r'a\\nb'", Var::Str("a\\nb".into())),
            ("'a' 'b'", Var::Str("ab".into())),
            ("'\\x41\\u00e9\\101'", Var::Str("AéA".into())),
            ("yes", Var::Str("yes".into())),
            ("[1, 2]", Var::Str("[1, 2]".into())),
            ("f'x'", Var::Str("f'x'".into())),
        ] {
            assert_eq!(py_value(text), want, "{text}");
        }
    }

    #[test]
    fn host_lines_split_as_python_shlex_does() {
        // What Python's shlex.split(line, comments=True) gives.
        for (line, want) in [
            (
                "host a=\"b c\" d='e f' # comment",
                vec!["host", "a=b c", "d=e f"],
            ),
            (
                "tomcat3 mysecret=\"'03#pa33w0rd'\"",
                vec!["tomcat3", "mysecret='03#pa33w0rd'"],
            ),
            ("a\\ b c#d", vec!["a b", "c"]),
            ("x \"a\\\"b\\n\"", vec!["x", "a\"b\\n"]),
            ("x ''", vec!["x", ""]),
        ] {
            assert_eq!(shlex_split(line).unwrap(), want, "{line}");
        }
        assert_eq!(shlex_split("x 'a"), Err("no closing quotation"));
        assert_eq!(shlex_split("x a\\"), Err("no escaped character"));
        // The docs' quoting example keeps the `#` in the value.
        let e = imp_err("hosts", "tomcat3 ansible_user=\"'svc#1'\"\n");
        assert!(e.message.contains("user name `svc#1` contains `#`"), "{e}");
    }

    #[test]
    fn yaml_host_keys_take_ranges_and_ports_and_vars_take_merge_keys() {
        let i = imp(
            "inv.yaml",
            "\
all:
  vars: &common
    ansible_user: bench
    ansible_become: yes
  children:
    web:
      hosts:
        www[01:03].example.com:
        edge.example.com:2201:
          ansible_become_method: sudo
    db:
      vars:
        <<: *common
        ansible_user: dba
      hosts:
        db-[a:b].example.com: {ansible_port: 2022}
",
        );
        let inv = parse_filled(&i);
        let h = by_name(&inv);
        assert_eq!(inv.hosts.len(), 6);
        // (host, port, user, become)
        for (host, port, user) in [
            ("www01.example.com", 22, "bench"),
            ("www03.example.com", 22, "bench"),
            ("edge.example.com", 2201, "bench"),
            ("db-a.example.com", 2022, "dba"),
            ("db-b.example.com", 2022, "dba"),
        ] {
            assert_eq!(
                (h[host].port, h[host].user.as_str(), h[host].become_),
                (port, user, Some(Become::Sudo)),
                "{host}"
            );
        }
    }

    #[test]
    fn yaml_errors_name_the_line() {
        // (inventory, line, words)
        for (text, line, words) in [
            (
                "all:\n  children:\n    web:\n      hosts:\n        - a\n        - b\n",
                Some(5),
                "`hosts` of group `web` must be a mapping",
            ),
            (
                "plugin: amazon.aws.aws_ec2\nregions: [eu-west-1]\n",
                Some(1),
                "ansible-inventory -i FILE --list",
            ),
            (
                "all:\n  hosts:\n    a: [1]\n",
                Some(3),
                "host `a` must map to its variables",
            ),
            ("all:\n  hosts:\n    a:\n   b: 1\n", Some(4), "invalid YAML"),
            (
                "all:\n  hosts:\n    a:\n    a:\n",
                Some(4),
                "invalid YAML: duplicated key",
            ),
            (
                "all: {}\n---\nmore: {}\n",
                Some(3),
                "more than one document",
            ),
        ] {
            let e = imp_err("inv.yml", text);
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.message.contains(words), "{text}: {e}");
        }
        let i = imp(
            "inv.yml",
            "all:\n  hostz:\n    a:\n  hosts:\n    b.example.com:\nweb: [x]\n",
        );
        assert!(
            warned(&i, "inv.yml:2: skipped key `hostz` of group `all`"),
            "{:?}",
            i.warnings
        );
        assert!(
            warned(&i, "inv.yml:6: skipped `web`: not a group"),
            "{:?}",
            i.warnings
        );
    }

    #[test]
    fn json_list_reads_groups_children_and_meta_hostvars() {
        // The example of dev_guide/developing_inventory, with addresses.
        let i = imp(
            "list.json",
            r#"{
    "_meta": {
        "hostvars": {
            "host001": {"var001": "value", "ansible_host": "192.0.2.1"},
            "host002": {"var002": "value", "ansible_host": "192.0.2.2", "ansible_port": 2202}
        }
    },
    "all": {"children": ["ungrouped", "group001"]},
    "group001": {"hosts": ["host001", "host002"], "vars": {"var1": true}, "children": ["group002"]},
    "group002": {"hosts": ["host003", "host004"], "vars": {"var2": 500}, "children": []}
}"#,
        );
        let inv = parse_filled(&i);
        let h = by_name(&inv);
        assert_eq!(inv.hosts.len(), 4);
        assert_eq!(
            (h["host002"].address.as_str(), h["host002"].port),
            ("192.0.2.2", 2202)
        );
        assert_eq!(tags(h["host001"]), ["group001"]);
        assert_eq!(tags(h["host003"]), ["group001", "group002"]);
        assert_eq!(h["host004"].address.as_str(), "host004");
    }

    #[test]
    fn json_export_keeps_group_vars_with_their_precedence() {
        let inv = parse_filled(&imp(
            "export.json",
            r#"{
  "_meta": {"hostvars": {"db1": {"ansible_port": 2201}}},
  "all": {"children": ["dbservers", "ungrouped"], "vars": {"ansible_user": "ops", "ansible_port": 22}},
  "dbservers": {"hosts": ["db1", "db2"], "vars": {"ansible_user": "dba", "ansible_become": true}},
  "ungrouped": {"hosts": ["mon1"]}
}"#,
        ));
        let h = by_name(&inv);
        // (host, user, port, become)
        for (host, user, port, become_) in [
            ("db1", "dba", 2201, Some(Become::Sudo)),
            ("db2", "dba", 22, Some(Become::Sudo)),
            ("mon1", "ops", 22, None),
        ] {
            assert_eq!(
                (h[host].user.as_str(), h[host].port, h[host].become_),
                (user, port, become_),
                "{host}"
            );
        }
    }

    #[test]
    fn json_script_output_may_give_a_group_as_a_bare_list() {
        let i = imp(
            "script.json",
            r#"{"web": ["w1", "w2"], "db": {"hosts": ["d1"]}, "solo": {"ansible_host": "192.0.2.9"},
                "_meta": {"hostvars": {"w1": {"ansible_host": "192.0.2.1"}, "ghost": {}}}}"#,
        );
        let inv = parse_filled(&i);
        let h = by_name(&inv);
        assert_eq!(inv.hosts.len(), 4);
        assert_eq!(
            (h["w1"].address.as_str(), tags(h["w1"])),
            ("192.0.2.1", vec!["web".to_string()])
        );
        assert_eq!(
            h["solo"].address.as_str(),
            "192.0.2.9",
            "a script's host shorthand"
        );
        assert!(
            warned(
                &i,
                "`_meta.hostvars` has host `ghost`, which no group lists"
            ),
            "{:?}",
            i.warnings
        );
        let e = imp_err("x.json", "{\"web\": {\"hosts\": \"w1\"}}");
        assert!(
            e.message
                .contains("`hosts` of group `web` must be a list of names"),
            "{e}"
        );
        let e = imp_err("x.json", "{\"web\": {\"hosts\": [\"w1\"],}}");
        assert_eq!(e.line, Some(1));
        assert!(e.message.starts_with("invalid JSON"), "{e}");
    }

    #[test]
    fn the_three_fixtures_describe_the_same_lab() {
        let imported = [
            ("hosts.ini", FIXTURE_INI),
            ("hosts.yml", FIXTURE_YAML),
            ("list.json", FIXTURE_JSON),
        ]
        .map(|(name, text)| imp(name, text));
        let summary = |i: &Imported| -> BTreeMap<String, String> {
            parse_filled(i)
                .hosts
                .iter()
                .map(|h| {
                    (
                        h.name.to_string(),
                        format!(
                            "{} {} {} {:?} {:?} {} {:?}",
                            h.address,
                            h.port,
                            h.user,
                            h.become_,
                            h.auth,
                            h.os.as_str(),
                            tags(h)
                        ),
                    )
                })
                .collect()
        };
        let ini = summary(&imported[0]);
        assert_eq!(summary(&imported[1]), ini, "yaml");
        assert_eq!(summary(&imported[2]), ini, "json");
        let key = "Some(IdentityFile(\"~/.ssh/lab_ed25519\"))"
            .replace("Some(", "")
            .replace("))", ")");
        let want: BTreeMap<String, String> = [
            ("alma9", format!("10.0.1.161 22 bench None {key} linux [\"lab\", \"pg_linux\"]")),
            ("deb12-kvm", format!("10.0.1.159 22 bench Some(Sudo) {key} linux [\"lab\", \"pg_linux\", \"rack2\"]")),
            ("deb12-metal", format!("db-metal-1.lab.example 2222 bench Some(Sudo) {key} linux [\"lab\", \"pg_linux\"]")),
            ("fbsd14", format!("10.0.1.160 22 root None {key} freebsd [\"lab\", \"pg_bsd\", \"rack2\"]")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(ini, want);
        for i in &imported {
            assert_eq!(i.hosts, 4);
            assert!(
                warned(i, "host `localhost` skipped: ansible_connection = local"),
                "{:?}",
                i.warnings
            );
            assert!(
                warned(i, "host `alma9`: Ansible becomes root here with `su`"),
                "{:?}",
                i.warnings
            );
            // The lab's `-o ProxyJump=ops@bastion.lab.example` on every host.
            assert_eq!(
                i.toml
                    .matches("proxy_jump = \"ops@bastion.lab.example\"")
                    .count(),
                4,
                "{}",
                i.toml
            );
            assert!(i
                .toml
                .contains("# CHECK: Ansible becomes root here with `su`"));
            assert!(
                !i.toml.contains("CHECK: os not known"),
                "every fixture host names its OS"
            );
        }
        assert!(
            warned(&imported[0], "hosts.ini:8: host `alma9`"),
            "{:?}",
            imported[0].warnings
        );
    }

    #[test]
    fn imported_inventory_is_refused_until_devices_are_filled_in() {
        let i = imp("hosts.ini", FIXTURE_INI);
        assert!(i.toml.contains(
            "devices = []  # FILL IN: the ONLY devices fsmatrix may destroy here, e.g. [\"/dev/vdb\"]\n"
        ));
        assert!(i.toml.contains("# FILL IN THE DEVICES before use."));
        let e = Inventory::parse(Path::new("/lab/imported.toml"), i.toml.clone()).unwrap_err();
        assert_eq!(e.len(), 4, "one refusal per host: {e}");
        for err in e.iter() {
            assert!(err.message.starts_with("`devices` of [[host]] `"), "{err}");
            assert!(
                err.message
                    .contains("is empty; list at least one spare device"),
                "{err}"
            );
        }
        let inv = parse_filled(&i);
        assert!(inv.hosts.iter().all(|h| h.devices.len() == 1));
    }

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
            ("hosts", "some_host ansible_port=2222 ansible_user=manager\n", "host `some_host`: no ansible_host, and the name is not an address fsmatrix accepts: address `some_host` contains `_`"),
            ("inv.yml", "all:\n  hosts:\n    w1:\n      ansible_host: \"{{ lookup('env', 'IP') }}\"\n", "is a Jinja2 template, which only Ansible can evaluate"),
            ("inv.yml", "all:\n  hosts:\n    w1:\n      ansible_user: !vault |\n        $ANSIBLE_VAULT;1.1;AES256\n        6331\n", "encrypted with ansible-vault"),
            ("inv.yml", "all:\n  hosts:\n    w1:\n      ansible_user: [a, b]\n", "ansible_user is a list"),
            ("hosts", "web1 ansible_port=99999\n", "ansible_port is not a port; valid: 1 to 65535"),
            ("hosts", "web1 ansible_private_key_file=\"'/k\\nx'\"\n", "is empty or has control characters"),
            ("inv.yml", "all:\n  children:\n    \"-x\":\n      hosts:\n        w1:\n", "group `-x` cannot be an fsmatrix tag, even as `-x`"),
            ("inv.yml", &format!("all:\n  hosts:\n    {}:\n", "h".repeat(64)), "cannot be an fsmatrix host name"),
            ("inv.yml", "all:\n  hosts:\n    \"a:b\": {ansible_host: 192.0.2.1}\n    \"a;b\": {ansible_host: 192.0.2.2}\n", "hosts `a:b` and `a;b` both become the fsmatrix host `a-b`"),
        ] {
            let e = imp_err(file, text);
            assert!(e.message.contains(words), "{text}\n{e}");
        }
    }

    #[test]
    fn hostile_strings_that_may_be_written_are_quoted_and_cannot_add_keys() {
        // The identity file, the become method (a comment) and the source
        // path (the header) may hold quotes, `]]` and newlines.
        let i = imp(
            "inv\n[[host]]\nname = \"p\".yml",
            "all:\n  children:\n    \"evil\\\"]]\\n[[host]]\":\n      hosts:\n        w1:\n          ansible_host: 192.0.2.1\n          ansible_private_key_file: '/k/a\"b]] [[host]] name=\"x\"'\n          ansible_become: true\n          ansible_become_method: \"su\\n[[host]]\\nname = \\\"evil\\\"\"\n",
        );
        assert_eq!(i.hosts, 1);
        let inv = parse_filled(&i);
        assert_eq!(inv.hosts.len(), 1);
        let h = &inv.hosts[0];
        assert_eq!(
            h.auth,
            Auth::IdentityFile(PathBuf::from("/k/a\"b]] [[host]] name=\"x\""))
        );
        assert_eq!(tags(h), ["evil------host--"]);
        assert!(
            warned(
                &i,
                "group `evil\"]]\\n[[host]]` is the tag `evil------host--`"
            ),
            "{:?}",
            i.warnings
        );
        assert!(
            i.toml.contains(
                "# CHECK: Ansible becomes root here with `su\\n[[host]]\\nname = \"evil\"`"
            ),
            "{}",
            i.toml
        );
        assert!(i.toml.starts_with("# fsmatrix inventory, imported from the Ansible inventory inv\\n[[host]]\\nname = \"p\".yml (YAML).\n"), "{}", i.toml);
        assert_eq!(i.toml.matches("\n[[host]]\n").count(), 1);
    }

    #[test]
    fn become_is_sudo_or_a_warning() {
        // (host line, become, warning)
        for (vars, want, warning) in [
            ("ansible_become=true", Some(Become::Sudo), None),
            (
                "ansible_become=yes ansible_become_method=sudo",
                Some(Become::Sudo),
                None,
            ),
            (
                "ansible_become=True ansible_become_method=su",
                None,
                Some("with `su`; fsmatrix knows only become = \"sudo\""),
            ),
            (
                "ansible_become=on ansible_become_method=doas",
                None,
                Some("with `doas`"),
            ),
            ("ansible_become=false ansible_become_method=su", None, None),
            ("", None, None),
            (
                "ansible_become=1 ansible_become_user=postgres",
                Some(Become::Sudo),
                Some("Ansible becomes `postgres` here, not root"),
            ),
            (
                "ansible_become=true ansible_become_user=root",
                Some(Become::Sudo),
                None,
            ),
        ] {
            let i = imp("hosts", &format!("h1.example {vars} ansible_user=ops\n"));
            assert_eq!(parse_filled(&i).hosts[0].become_, want, "{vars}");
            match warning {
                Some(w) => {
                    assert!(warned(&i, w), "{vars}: {:?}", i.warnings);
                    assert!(i.toml.contains(w), "{vars}: a CHECK comment\n{}", i.toml);
                }
                None => assert!(i.warnings.is_empty(), "{vars}: {:?}", i.warnings),
            }
        }
        let e = imp_err("hosts", "h1 ansible_become=maybe\n");
        assert!(
            e.message
                .contains("ansible_become is not a boolean; valid: true/false"),
            "{e}"
        );
    }

    #[test]
    fn a_proxy_jump_in_the_ssh_arguments_becomes_proxy_jump() {
        let i = imp(
            "hosts",
            "\
a ansible_host=10.0.1.5 ansible_ssh_common_args='-o ProxyJump=ops@bastion.lab:2222'
b ansible_host=10.0.1.6 ansible_ssh_common_args='-J ops@bastion.lab,root@inner-gw'
c ansible_host=10.0.1.7 ansible_ssh_extra_args='-o \"ProxyJump ops@bastion.lab\"'
",
        );
        assert_eq!(i.hosts, 3, "{:?}", i.warnings);
        for want in [
            "proxy_jump = \"ops@bastion.lab:2222\"",
            "proxy_jump = \"ops@bastion.lab,root@inner-gw\"",
            "proxy_jump = \"ops@bastion.lab\"",
        ] {
            assert!(i.toml.contains(want), "{want}: {}", i.toml);
        }
        // Filled in, it is an inventory fsmatrix loads, with the hops.
        let filled = i.toml.replace("devices = []", "devices = [\"/dev/vdb\"]");
        let inv = crate::config::Inventory::parse(Path::new("/x/inv.toml"), filled)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(inv.hosts[1].proxy_jump.len(), 2);
        // A hostile hop is refused by the same validator as the inventory's.
        let e = imp_err(
            "hosts",
            "d ansible_host=10.0.1.8 ansible_ssh_common_args='-J -oProxyCommand=evil'\n",
        );
        assert!(e.message.contains("ProxyJump"), "{e}");
    }

    #[test]
    fn connections_other_than_ssh_are_skipped_and_ssh_options_warned() {
        let i = imp(
            "hosts",
            "\
ctl ansible_connection=local
win1 ansible_connection=winrm
box ansible_connection=community.docker.docker
s1.example ansible_connection=ssh ansible_user=ops ansible_ssh_common_args='-o ProxyCommand=\"ssh -W %h:%p -q user@gateway\"'
s2.example ansible_user=ops ansible_ssh_extra_args='-o StrictHostKeyChecking=no' ansible_password=hunter2
",
        );
        assert_eq!(i.hosts, 2);
        for w in [
            "host `ctl` skipped: ansible_connection = local",
            "host `win1` skipped: ansible_connection = winrm",
            "host `box` skipped: ansible_connection = community.docker.docker",
            "host `s1.example`: Ansible reaches this host through a jump host (ansible_ssh_common_args) that is not a ProxyJump",
            "host `s2.example`: ansible_ssh_extra_args `-o StrictHostKeyChecking=no` is not imported",
            "host `s2.example`: ansible_password is not imported",
        ] {
            assert!(warned(&i, w), "{w}: {:?}", i.warnings);
        }
        assert!(!i.toml.contains("hunter2") && !i.warnings.iter().any(|w| w.contains("hunter2")));
        let e = imp_err("hosts", "ctl ansible_connection=local\n");
        assert!(
            e.message
                .contains("no host fsmatrix can reach over SSH (1 found, 1 skipped)"),
            "{e}"
        );
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

    #[test]
    fn detect_reads_the_content_then_the_extension() {
        // (file name, content, format)
        for (name, text, want) in [
            ("inv", "{\"all\": {}}", AnsibleFormat::Json),
            ("inv.ini", "  \n{\"all\": {}}", AnsibleFormat::Json),
            ("inv", "all:\n  hosts:\n    a:\n", AnsibleFormat::Yaml),
            ("inv.ini", "web:\n  hosts:\n", AnsibleFormat::Yaml),
            (
                "inv",
                "mail.example.com\n\n[webservers]\nfoo.example.com\n",
                AnsibleFormat::Ini,
            ),
            ("inv", "[web]\na\n", AnsibleFormat::Ini),
            ("inv", "a ansible_host=1.2.3.4\n", AnsibleFormat::Ini),
            ("inv.yml", "all: [broken\n", AnsibleFormat::Yaml),
            ("inv.yaml", "", AnsibleFormat::Yaml),
            ("inv.json", "", AnsibleFormat::Json),
            ("inv", "", AnsibleFormat::Ini),
        ] {
            assert_eq!(detect(Path::new(name), text), want, "{name}: {text:?}");
        }
    }
}
