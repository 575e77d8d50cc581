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
//! One file per step: `ini`, `yaml` and `json` are the readers (`python`
//! holds the shlex and literal syntax the INI reader needs, `patterns` the
//! host patterns and ranges the readers share); `model` holds the groups
//! and hosts and their precedence; `map` and `connection` turn a host's
//! variables into fsmatrix keys; `render` writes and reads back the TOML.
//! This file holds the entry points: [`detect`] and [`import`].
//!
//! Ansible knows nothing of the spare devices fsmatrix destroys, so every
//! host is written with `devices = []`, which [`super::Inventory::parse`]
//! refuses until the user lists them.
mod connection;
mod ini;
mod json;
mod map;
mod model;
mod patterns;
mod python;
mod render;
mod yaml;

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};

use super::values::shown;
use ini::read_ini;
use json::read_json;
use map::{map_host, warn_same_machine, Entry};
use model::Model;
use render::{read_back, render};
use yaml::read_yaml;

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
    // Nested that deep, it is no INI file: the YAML reader refuses it by line.
    if yaml::too_deep(text) {
        return true;
    }
    yaml::on_yaml_stack(|| {
        let Ok(docs) = MarkedYaml::load_from_str(text) else {
            return false;
        };
        match docs.first().map(|d| &d.data) {
            Some(YamlData::Mapping(m)) => {
                !m.is_empty()
                    && m.values().all(|v| {
                        matches!(v.data, YamlData::Mapping(_) | YamlData::Value(Scalar::Null))
                    })
            }
            _ => false,
        }
    })
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
    model.check_size(path)?;
    let resolved = model.resolve(path)?;
    let mut entries: Vec<Entry> = Vec::new();
    // Each fsmatrix name's index in `entries`: one lookup per host.
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut skipped = 0;
    for h in &resolved {
        match map_host(&mut cx, h)? {
            Some(e) => {
                if let Some(other) = by_name.get(&e.name).map(|&i| &entries[i]) {
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
                by_name.insert(e.name.clone(), entries.len());
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
