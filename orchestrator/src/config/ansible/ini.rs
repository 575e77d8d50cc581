//! INI (ansible.builtin.ini).
use std::collections::BTreeMap;

use super::model::{Located, Model};
use super::patterns::expand_host_pattern;
use super::python::{py_value, shlex_split};
use super::{Cx, ImportError};
use crate::config::values::shown;

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

pub(super) fn read_ini(cx: &mut Cx<'_>, m: &mut Model, text: &str) -> Result<(), ImportError> {
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
                m.room_for(&names).map_err(|e| cx.error(Some(n), e))?;
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
                    let h = m.add_host(&name, &group, port.as_deref(), cx.at(Some(n)));
                    for (k, v) in &vars {
                        m.set_host_var(
                            h,
                            k,
                            Located {
                                value: v.clone(),
                                line: cx.at(Some(n)),
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
                    line: cx.at(Some(n)),
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

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

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
}
