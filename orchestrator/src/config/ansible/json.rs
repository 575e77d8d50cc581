//! JSON (`ansible-inventory --list`, inventory scripts).
use super::model::{Located, Model, Var};
use super::{Cx, ImportError};
use crate::config::values::shown;

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

pub(super) fn read_json(cx: &mut Cx<'_>, m: &mut Model, text: &str) -> Result<(), ImportError> {
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
                m.add_host(&h, group, None, cx.at(None));
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
                        line: cx.at(None),
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
                        line: cx.at(None),
                    },
                );
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
}
