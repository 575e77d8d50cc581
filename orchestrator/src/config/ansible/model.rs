//! The model the three readers fill.
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::Path;

use super::{At, Cx, ImportError};
use crate::config::values::shown;

/// The most hosts one import reads (a pattern's range is capped the same):
/// more is refused before any per-host work, which is at least linear in
/// the groups a host is in.
pub(super) const MAX_HOSTS: usize = 10_000;
/// The most groups one import reads.
pub(super) const MAX_GROUPS: usize = 10_000;
/// Groups nested deeper than this (a chain of `children`) are refused, in
/// every format: a host's variables are merged over its whole ancestry.
pub(super) const MAX_GROUP_DEPTH: usize = 64;

/// A variable's value, with the types the mapping cares about.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Var {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// A list, a mapping or an encrypted value: what it is, for messages.
    Other(&'static str),
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Located {
    pub(super) value: Var,
    /// Where it was set: the file, and the line when the reader knows.
    pub(super) line: At,
}

pub(super) type Vars = BTreeMap<String, Located>;

#[derive(Debug)]
pub(super) struct Group {
    /// Set in the inventory file.
    pub(super) vars: Vars,
    /// From `group_vars/NAME…` beside the inventory.
    pub(super) file_vars: Vars,
    pub(super) children: BTreeSet<String>,
    /// `ansible_group_priority`: among groups of one depth, higher wins.
    pub(super) priority: i64,
}

impl Default for Group {
    fn default() -> Self {
        Group {
            vars: Vars::new(),
            file_vars: Vars::new(),
            children: BTreeSet::new(),
            priority: 1,
        }
    }
}

#[derive(Debug)]
pub(super) struct HostDef {
    pub(super) name: String,
    /// Where it first appears.
    pub(super) line: At,
    /// Set in the inventory file.
    pub(super) vars: Vars,
    /// From `host_vars/NAME…` beside the inventory.
    pub(super) file_vars: Vars,
    /// The groups it is listed in (not their ancestors).
    pub(super) groups: BTreeSet<String>,
}

/// Groups and hosts as Ansible's InventoryData holds them; hosts in the
/// order they first appear.
#[derive(Debug)]
pub(super) struct Model {
    pub(super) groups: BTreeMap<String, Group>,
    pub(super) hosts: Vec<HostDef>,
    pub(super) index: HashMap<String, usize>,
}

/// One host with its variables merged and all its groups.
pub(super) struct Resolved<'m> {
    pub(super) host: &'m HostDef,
    pub(super) vars: Vars,
    /// Every group it belongs to, through children, but `all` and `ungrouped`.
    pub(super) groups: Vec<String>,
}

impl Model {
    pub(super) fn new() -> Model {
        let mut m = Model {
            groups: BTreeMap::new(),
            hosts: Vec::new(),
            index: HashMap::new(),
        };
        m.add_child("all", "ungrouped");
        m
    }

    pub(super) fn group(&mut self, name: &str) -> &mut Group {
        self.groups.entry(name.to_string()).or_default()
    }

    pub(super) fn add_child(&mut self, parent: &str, child: &str) {
        self.group(child);
        self.group(parent).children.insert(child.to_string());
    }

    /// Add `name` to `group`; a port from `host:port` is the host's
    /// `ansible_port` when the host is new, as Ansible's `Host(name, port)`.
    pub(super) fn add_host(
        &mut self,
        name: &str,
        group: &str,
        port: Option<&str>,
        line: At,
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
                    file_vars: Vars::new(),
                    groups: BTreeSet::new(),
                });
                self.index.insert(name.to_string(), self.hosts.len() - 1);
                self.hosts.len() - 1
            }
        };
        self.hosts[i].groups.insert(group.to_string());
        i
    }

    pub(super) fn set_host_var(&mut self, host: usize, key: &str, v: Located) {
        self.hosts[host].vars.insert(key.to_string(), v);
    }

    /// `ansible_group_priority` sets the group's priority, as in Ansible.
    pub(super) fn set_group_var(
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

    /// Whether `names` (one pattern's hosts) fit under [`MAX_HOSTS`] with
    /// the hosts read so far: checked before they are added, so that
    /// pattern after pattern of ranges is refused at the line that goes
    /// over, not after every range is expanded.
    pub(super) fn room_for(&self, names: &[String]) -> Result<(), String> {
        let new = names
            .iter()
            .filter(|n| !self.index.contains_key(*n))
            .count();
        if self.hosts.len() + new > MAX_HOSTS {
            return Err(format!(
                "this line brings the inventory to {} hosts; fsmatrix imports at most \
                 {MAX_HOSTS}: split it, or import the part a study runs on \
                 (`ansible-inventory -i SRC --list --limit PATTERN`)",
                self.hosts.len() + new
            ));
        }
        Ok(())
    }

    /// The caps on what one import holds ([`MAX_HOSTS`], [`MAX_GROUPS`]),
    /// checked after reading and before any per-host work.
    pub(super) fn check_size(&self, file: &Path) -> Result<(), ImportError> {
        let too_many = |what: &str, n: usize, max: usize| {
            ImportError {
            file: file.to_path_buf(),
            line: None,
            message: format!(
                "the inventory has {n} {what}; fsmatrix imports at most {max}: split it, or \
                 import the part a study runs on (`ansible-inventory -i SRC --list --limit PATTERN`)"
            ),
        }
        };
        if self.hosts.len() > MAX_HOSTS {
            return Err(too_many("hosts", self.hosts.len(), MAX_HOSTS));
        }
        if self.groups.len() > MAX_GROUPS {
            return Err(too_many("groups", self.groups.len(), MAX_GROUPS));
        }
        Ok(())
    }

    /// Ansible's reconcile step, then every host's merged variables.
    pub(super) fn resolve(&mut self, file: &Path) -> Result<Vec<Resolved<'_>>, ImportError> {
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
        if let Some((g, d)) = depth.iter().find(|(_, d)| **d > MAX_GROUP_DEPTH) {
            return Err(ImportError {
                file: file.to_path_buf(),
                line: None,
                message: format!(
                    "groups are nested more than {MAX_GROUP_DEPTH} deep (`{}` is {d} below `all`); \
                     valid: at most {MAX_GROUP_DEPTH} levels of children",
                    shown(g)
                ),
            });
        }
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
            // ansible-core's VariableManager.get_vars with the default
            // VARIABLE_PRECEDENCE (all_inventory, groups_inventory,
            // all_plugins_inventory, groups_plugins_inventory; config/base.yml)
            // and then host.get_vars() and the host's vars plugins: every
            // group's inventory-file vars (all first, then by depth, priority
            // and name), then group_vars/all, then group_vars/* in the same
            // order, then the host's inventory-file vars, then host_vars/.
            // So group_vars/all.yml beats a child group's [child:vars], as
            // the docs' precedence list says ("inventory file or script group
            // vars" < "inventory group_vars/all" < "inventory group_vars/*" <
            // "inventory file or script host vars" < "inventory host_vars/*";
            // playbook_guide/playbooks_variables, "Understanding variable
            // precedence").
            let mut vars = Vars::new();
            let layers = ordered
                .iter()
                .map(|g| &self.groups[*g].vars)
                .chain(ordered.iter().map(|g| &self.groups[*g].file_vars))
                .chain([&h.vars, &h.file_vars]);
            for layer in layers {
                for (k, v) in layer {
                    vars.insert(k.clone(), v.clone());
                }
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
    pub(super) fn depths(&self, file: &Path) -> Result<HashMap<&str, usize>, ImportError> {
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

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

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
}
