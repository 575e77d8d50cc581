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
//! From disk ([`import_path`], `sources`): a directory of inventory files,
//! and the `group_vars/` and `host_vars/` beside the inventory, with
//! ansible-core's precedence (see `Model::resolve`).
//!
//! Not read: the playbook directory's vars folders, inventory plugins
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
mod sources;
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
    /// The hosts left out, each named in `warnings` with its file and line
    /// (not over SSH, not an OS fsmatrix runs on, a name it cannot take).
    pub skipped: usize,
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

/// [`import`] of what `r` gives (standard input), read through the same
/// bound as a file ([`sources::MAX_FILE_BYTES`]): an endless stream is an
/// error at the bound, never read until memory runs out.
pub fn import_reader(path: &Path, r: impl std::io::Read) -> Result<Imported, ImportError> {
    let text = sources::read_bounded(r, path)?;
    import(path, &text)
}

/// Read an Ansible inventory given as text (standard input; `path` names it
/// in messages and in the output's header; nothing is read from disk, so no
/// `group_vars/` or `host_vars/`) and write an fsmatrix inventory for its
/// SSH hosts.
pub fn import(path: &Path, text: &str) -> Result<Imported, ImportError> {
    let mut cx = Cx::new(path);
    let mut model = Model::new();
    let format = read_one(&mut cx, &mut model, text)?;
    finish(cx, model, format.as_str())
}

/// Read an Ansible inventory from disk as `ansible-inventory -i PATH` does:
/// a file, or a directory of inventory files (merged, in name order), with
/// the `group_vars/` and `host_vars/` beside the file (or in the
/// directory).  A file of a directory that does not parse is skipped with
/// a caveat, as Ansible skips it with a warning.
pub fn import_path(path: &Path) -> Result<Imported, ImportError> {
    let mut cx = Cx::new(path);
    let mut model = Model::new();
    let (kind, base) = if path.is_dir() {
        let files = sources::directory_files(path)?;
        let mut read = Vec::new();
        for f in files {
            cx.files.push(f.clone());
            cx.current = cx.files.len() - 1;
            let text = match sources::read_text(&f) {
                Ok(t) => t,
                Err(e) => {
                    cx.warn(None, format!("skipped: {}", e.message));
                    continue;
                }
            };
            if text.starts_with("#!") {
                cx.warn(
                    None,
                    "skipped: an inventory script (Ansible runs it, fsmatrix does not); run                      `ansible-inventory -i DIR --list > list.json` and import list.json",
                );
                continue;
            }
            // Parsed once aside, so a file that fails leaves nothing behind.
            let seen = (cx.warnings.len(), cx.general.len());
            let mut scratch = Model::new();
            match read_one(&mut cx, &mut scratch, &text) {
                Ok(_) => {
                    cx.warnings.truncate(seen.0);
                    cx.general.truncate(seen.1);
                    read.push(read_one(&mut cx, &mut model, &text)?.as_str());
                }
                Err(e) => {
                    cx.warnings.truncate(seen.0);
                    cx.general.truncate(seen.1);
                    cx.warn(
                        e.line,
                        format!("skipped: not an inventory fsmatrix reads ({})", e.message),
                    );
                }
            }
        }
        cx.current = 0;
        read.sort_unstable();
        read.dedup();
        let kind = if read.is_empty() {
            "directory".to_string()
        } else {
            format!("directory: {}", read.join(", "))
        };
        (kind, path.to_path_buf())
    } else {
        let text = sources::read_text(path)?;
        let format = read_one(&mut cx, &mut model, &text)?;
        let base = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        (format.as_str().to_string(), base)
    };
    model.check_size(path)?;
    sources::read_vars_dirs(&mut cx, &mut model, &base)?;
    finish(cx, model, &kind)
}

/// One inventory file's text into the model; its format.
fn read_one(cx: &mut Cx<'_>, model: &mut Model, text: &str) -> Result<AnsibleFormat, ImportError> {
    let format = detect(&cx.files[cx.current].clone(), text);
    let text = text.trim_start_matches('\u{feff}');
    match format {
        AnsibleFormat::Ini => read_ini(cx, model, text)?,
        AnsibleFormat::Yaml => read_yaml(cx, model, text)?,
        AnsibleFormat::Json => read_json(cx, model, text)?,
    }
    Ok(format)
}

/// Merge, map and write: what every source shares once it is in `model`.
fn finish(mut cx: Cx<'_>, mut model: Model, kind: &str) -> Result<Imported, ImportError> {
    let path = cx.file;
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
                    let why = format!(
                        "host `{}` skipped: it would be the fsmatrix host `{}`, as host `{}` \
                         already is; rename one (fsmatrix host names: letters, digits and . _ -)",
                        shown(&e.ansible_name),
                        e.name,
                        shown(&other.ansible_name),
                    );
                    cx.warn(e.line, why);
                    skipped += 1;
                    continue;
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
                "the {kind} inventory has no host fsmatrix can reach over SSH ({} found, \
                 {skipped} skipped); valid: at least one host with an SSH connection",
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
    let toml = render(path, kind, &cx.general, &entries);
    read_back(path, &toml, &entries)?;
    Ok(Imported {
        toml,
        hosts: entries.len(),
        skipped,
        warnings: cx.warnings,
    })
}

/// Where something was set: one of the files read (an index into
/// [`Cx::files`]; `None` is the file being read now) and the line, when
/// known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct At {
    file: Option<usize>,
    line: Option<usize>,
}

impl At {
    /// This place if it has a line, else `other`.
    pub(super) fn or(self, other: At) -> At {
        if self.line.is_some() {
            self
        } else {
            other
        }
    }
}

impl From<Option<usize>> for At {
    fn from(line: Option<usize>) -> At {
        At { file: None, line }
    }
}

/// What the readers and the mapping share: the files, for messages, and the
/// warnings so far.
struct Cx<'a> {
    /// The inventory given (a file, a directory or standard input).
    file: &'a Path,
    /// Every file read: the inventory files, then group_vars/ and host_vars/.
    files: Vec<PathBuf>,
    /// The file being read now (an index into `files`).
    current: usize,
    /// Every caveat, for stderr.
    warnings: Vec<String>,
    /// The caveats that are not already a host's `# CHECK:` line: written
    /// as `# CHECK:` lines at the top of the inventory.
    general: Vec<String>,
    /// Group name → tag, converted once (and warned about once).
    labels: HashMap<String, String>,
}

impl<'a> Cx<'a> {
    fn new(file: &'a Path) -> Cx<'a> {
        Cx {
            file,
            files: vec![file.to_path_buf()],
            current: 0,
            warnings: Vec::new(),
            general: Vec::new(),
            labels: HashMap::new(),
        }
    }
    /// A place in the file being read now.
    fn at(&self, line: Option<usize>) -> At {
        At {
            file: Some(self.current),
            line,
        }
    }
    fn file_of(&self, at: At) -> &Path {
        &self.files[at.file.unwrap_or(self.current)]
    }
    fn error(&self, at: impl Into<At>, message: impl Into<String>) -> ImportError {
        let at = at.into();
        ImportError {
            file: self.file_of(at).to_path_buf(),
            line: at.line,
            message: message.into(),
        }
    }
    /// A caveat: on stderr and as a `# CHECK:` line at the top.
    fn warn(&mut self, at: impl Into<At>, message: impl AsRef<str>) {
        let at = at.into();
        let w = format!("{}: {}", place(self.file_of(at), at.line), message.as_ref());
        self.general.push(w.clone());
        self.warnings.push(w);
    }
    /// A caveat the caller also writes as a `# CHECK:` line on its host.
    fn warn_inline(&mut self, at: At, message: impl AsRef<str>) {
        let w = format!("{}: {}", place(self.file_of(at), at.line), message.as_ref());
        self.warnings.push(w);
    }
}
