//! YAML (ansible.builtin.yaml).
use std::collections::BTreeSet;

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};

use super::model::{Located, Model, Var, Vars};
use super::patterns::expand_host_pattern;
use super::{Cx, ImportError};
use crate::config::values::shown;

use super::model::MAX_GROUP_DEPTH as MAX_YAML_DEPTH;

/// Block collections nested deeper than this are refused before the YAML
/// parser sees them: saphyr bounds flow nesting (`[[[…`) but recurses
/// without a bound on indentation, and a few thousand levels overflow the
/// stack.  Real inventories nest a few levels per group.
const MAX_BLOCK_NESTING: usize = 512;

/// The deepest block nesting of `text`, counted from indentation: each
/// line's indentation (a `- ` sequence entry counts as one more level)
/// against a stack of the enclosing ones.  An over-estimate is harmless (the
/// bound is far above real files); the first line past `limit` is returned.
fn block_nesting_past(text: &str, limit: usize) -> Option<usize> {
    let mut stack: Vec<usize> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let body = line.trim_start_matches(' ');
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let mut indent = line.len() - body.len();
        let mut rest = body;
        let mut levels = vec![indent];
        // `- - - x`: each dash opens a sequence one column further in.
        while let Some(r) = rest.strip_prefix("- ").or_else(|| rest.strip_prefix("-\t")) {
            let after = r.trim_start_matches([' ', '\t']);
            indent += rest.len() - after.len();
            levels.push(indent);
            rest = after;
        }
        while stack.last().is_some_and(|&top| top >= levels[0]) {
            stack.pop();
        }
        stack.extend(levels);
        if stack.len() > limit {
            return Some(n + 1);
        }
    }
    None
}

/// The stack the YAML is parsed, walked and dropped on: saphyr's parser and
/// the drop of its tree recurse per level (a few KiB each), so the bound
/// below holds on any caller's thread (a test's is 2 MiB).
const YAML_STACK_BYTES: usize = 64 << 20;

/// Run `f` (a parse of YAML, its walk and the drop of its tree) on a thread
/// with [`YAML_STACK_BYTES`] of stack, whatever the caller's thread is.
pub(super) fn on_yaml_stack<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|s| {
        match std::thread::Builder::new()
            .name("yaml".into())
            .stack_size(YAML_STACK_BYTES)
            .spawn_scoped(s, f)
        {
            Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            // No thread to be had (out of memory): the caller's stack, on
            // text the nesting bound has already been checked against.
            Err(e) => panic!("cannot start the YAML reader's thread: {e}"),
        }
    })
}

/// Whether `text` nests deeper than the YAML reader accepts.
pub(super) fn too_deep(text: &str) -> bool {
    block_nesting_past(text, MAX_BLOCK_NESTING).is_some()
}

pub(super) fn read_yaml(cx: &mut Cx<'_>, m: &mut Model, text: &str) -> Result<(), ImportError> {
    on_yaml_stack(|| read_yaml_here(cx, m, text))
}

fn read_yaml_here(cx: &mut Cx<'_>, m: &mut Model, text: &str) -> Result<(), ImportError> {
    if let Some(line) = block_nesting_past(text, MAX_BLOCK_NESTING) {
        return Err(cx.error(
            Some(line),
            format!(
                "YAML nested more than {MAX_BLOCK_NESTING} levels deep; valid: an inventory's \
                 groups, hosts and variables (a few levels each)"
            ),
        ));
    }
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

/// A `group_vars/` or `host_vars/` file (YAML, or JSON, which Ansible's
/// loader reads as YAML too): a mapping of variables, or nothing.
pub(super) fn read_vars_file(cx: &mut Cx<'_>, text: &str) -> Result<Vars, ImportError> {
    on_yaml_stack(|| read_vars_here(cx, text))
}

fn read_vars_here(cx: &mut Cx<'_>, text: &str) -> Result<Vars, ImportError> {
    if let Some(line) = block_nesting_past(text, MAX_BLOCK_NESTING) {
        return Err(cx.error(
            Some(line),
            format!("YAML nested more than {MAX_BLOCK_NESTING} levels deep; valid: variables"),
        ));
    }
    let docs = MarkedYaml::load_from_str(text).map_err(|e| {
        cx.error(
            Some(e.marker().line()),
            format!("invalid YAML: {}", e.info()),
        )
    })?;
    let mut vars = Vars::new();
    let Some(doc) = docs.first() else {
        return Ok(vars);
    };
    match &doc.data {
        YamlData::Value(Scalar::Null) => {}
        YamlData::Mapping(_) => {
            for (k, v) in yaml_vars(doc) {
                let name = group_key(cx, k)?;
                let line = cx.at(Some(line_of(k)));
                vars.insert(
                    name,
                    Located {
                        value: yaml_var(v),
                        line,
                    },
                );
            }
        }
        _ => {
            return Err(cx.error(
                Some(line_of(doc)),
                "a vars file must be a mapping of variables, e.g. `ansible_user: admin`",
            ))
        }
    }
    Ok(vars)
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
                        line: cx.at(Some(line_of(vk))),
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
                    m.room_for(&names).map_err(|e| cx.error(line, e))?;
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
                        let h = m.add_host(&name, group, port.as_deref(), cx.at(line));
                        for (vk, vv) in &vars {
                            let key = group_key(cx, vk)?;
                            m.set_host_var(
                                h,
                                &key,
                                Located {
                                    value: yaml_var(vv),
                                    line: cx.at(Some(line_of(vk))),
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

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::config::Become;

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
}
