//! Writing the TOML.
use std::path::Path;

use super::map::Entry;
use super::ImportError;
use crate::config::values::shown;
use crate::config::Os;

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

pub(super) fn render(source: &Path, kind: &str, general: &[String], entries: &[Entry]) -> String {
    let s = |v: &str| toml::Value::String(v.to_string());
    let mut out = String::new();
    out.push_str(&format!(
        "# fsmatrix inventory, imported from the Ansible inventory {} ({}).\n",
        comment_safe(&source.display().to_string()),
        kind
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
    // Every caveat that is not a host's own CHECK line (those are below,
    // on their host): what was not imported and why.
    if !general.is_empty() {
        out.push_str("#\n");
        for w in general {
            out.push_str("# CHECK: ");
            out.push_str(&comment_safe(w));
            out.push('\n');
        }
    }
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
        if let Some(b) = e.become_ {
            push_kv(&mut out, "become", s(b.as_str()), None);
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
pub(super) fn read_back(path: &Path, text: &str, entries: &[Entry]) -> Result<(), ImportError> {
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
    use std::path::PathBuf;

    use super::super::test_support::*;
    use crate::config::Auth;

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
}
