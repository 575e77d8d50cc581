//! The import as a whole: Ansible's documented examples, the lab's three
//! fixtures and format detection.
use std::collections::BTreeMap;
use std::path::Path;

use super::test_support::*;
use super::*;
use crate::config::Inventory;

const FIXTURE_INI: &str = include_str!("../../../../tests/fixtures/ansible/hosts.ini");
const FIXTURE_YAML: &str = include_str!("../../../../tests/fixtures/ansible/hosts.yml");
const FIXTURE_JSON: &str = include_str!("../../../../tests/fixtures/ansible/list.json");

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
        (
            "alma9",
            format!("10.0.1.161 22 bench None {key} linux [\"lab\", \"pg_linux\"]"),
        ),
        (
            "deb12-kvm",
            format!(
                "10.0.1.159 22 bench Some(Sudo) {key} linux [\"lab\", \"pg_linux\", \"rack2\"]"
            ),
        ),
        (
            "deb12-metal",
            format!(
                "db-metal-1.lab.example 2222 bench Some(Sudo) {key} linux [\"lab\", \"pg_linux\"]"
            ),
        ),
        (
            "fbsd14",
            format!("10.0.1.160 22 root None {key} freebsd [\"lab\", \"pg_bsd\", \"rack2\"]"),
        ),
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

/// Issue 24: an import is bounded in what it holds (hosts, groups, their
/// depth) and in how deep its YAML nests, whatever the format; inside the
/// bounds, work is linear in the hosts.
#[test]
fn imports_are_bounded_in_hosts_groups_and_nesting() {
    use super::model::{MAX_GROUPS, MAX_GROUP_DEPTH, MAX_HOSTS};
    // Block YAML 3000 levels deep: refused by line, not a stack overflow.
    let mut deep = String::from("all:\n  children:\n");
    for i in 0..3000 {
        let pad = " ".repeat(4 + 4 * i);
        deep.push_str(&format!("{pad}g{i}:\n{pad}  children:\n"));
    }
    let e = imp_err("deep.yml", &deep);
    assert!(e.to_string().contains("nested more than 512 levels"), "{e}");
    assert!(e.line.is_some_and(|l| l > 2), "{e}");
    // `- - - …` nests as deeply on one line.
    let dashes = format!("all:\n  vars:\n    x:\n      {}1\n", "- ".repeat(600));
    let e = imp_err("dash.yml", &dashes);
    assert!(e.to_string().contains("nested more than 512"), "{e}");
    // An INI chain of children deeper than the YAML reader allows is
    // refused the same way (it was merged over its whole ancestry).
    let mut chain = String::from("[g0]\nh1 ansible_host=10.0.0.1\n");
    for i in 1..=MAX_GROUP_DEPTH + 1 {
        chain.push_str(&format!("[g{i}:children]\ng{}\n", i - 1));
    }
    let e = imp_err("chain.ini", &chain);
    assert!(
        e.to_string()
            .contains(&format!("more than {MAX_GROUP_DEPTH} deep")),
        "{e}"
    );
    // One more host than the cap: refused with the count and what to do.
    let mut many = String::from("[web]\n");
    for i in 0..=MAX_HOSTS {
        many.push_str(&format!(
            "h{i} ansible_host=10.{}.{}.{}\n",
            i / 62500,
            i / 250 % 250,
            i % 250 + 1
        ));
    }
    let e = imp_err("many.ini", &many);
    assert!(
        e.to_string().contains(&format!("{} hosts", MAX_HOSTS + 1)),
        "{e}"
    );
    assert!(e.to_string().contains("--limit"), "{e}");
    // As many groups: refused.
    let mut groups = String::from("[g0]\nh1 ansible_host=10.0.0.1\n");
    for i in 1..=MAX_GROUPS {
        groups.push_str(&format!("[x{i}]\n"));
    }
    let e = imp_err("groups.ini", &groups);
    assert!(
        e.to_string().contains("groups; fsmatrix imports at most"),
        "{e}"
    );
    // At the cap, every host is imported (the duplicate-name check is a
    // map lookup, not a scan of the hosts before it).
    let at_cap: String = many
        .lines()
        .take(MAX_HOSTS + 1)
        .map(|l| format!("{l}\n"))
        .collect();
    let i = imp("cap.ini", &at_cap);
    assert_eq!(i.toml.matches("[[host]]").count(), MAX_HOSTS);
}

/// `f` on another thread, failing the test if it takes more than 20 s (a
/// read that blocks would otherwise hang the whole test binary).
fn within_20s<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what}: still reading after 20 s"))
}

/// Issue 39: import reads only regular files, opened without blocking and
/// through a bound: a FIFO (in a directory inventory, in `group_vars/`, or
/// given itself) never blocks it, a link to /dev/zero is never read, an
/// endless standard input stops at the bound, and pattern after pattern of
/// ranges is refused at the line that goes over the host cap, before the
/// rest is expanded.
#[test]
fn import_reads_only_regular_files_through_bounds() {
    use super::model::MAX_HOSTS;
    use super::sources::MAX_FILE_BYTES;
    let tmp = tempfile::tempdir().expect("tempdir");
    let fifo = |p: &std::path::Path| {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: a NUL-terminated path; mkfifo only makes the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
    };
    // A directory inventory with a FIFO beside a real file: the FIFO is
    // skipped and named, the file imported.
    let dir = tmp.path().join("inv");
    std::fs::create_dir_all(dir.join("group_vars")).expect("mkdir");
    std::fs::write(
        dir.join("10-web.ini"),
        "[web]\nweb1 ansible_host=10.0.0.5\n",
    )
    .expect("write");
    fifo(&dir.join("20-pipe.ini"));
    let d = dir.clone();
    let i = within_20s("a FIFO in a directory inventory", move || import_path(&d))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(i.toml.contains("name = \"web1\""), "{}", i.toml);
    assert!(
        i.warnings
            .iter()
            .any(|w| w.contains("20-pipe.ini") && w.contains("a FIFO")),
        "{:?}",
        i.warnings
    );
    // A FIFO as group_vars/web: refused, naming it, without blocking.
    fifo(&dir.join("group_vars/web"));
    let d = dir.clone();
    let e =
        within_20s("a FIFO in group_vars", move || import_path(&d)).expect_err("a FIFO vars file");
    assert!(e.to_string().contains("a FIFO"), "{e}");
    // A FIFO given itself, and a link to /dev/zero: refused, never read.
    let p = tmp.path().join("pipe.ini");
    fifo(&p);
    let e = within_20s("a FIFO given", move || import_path(&p)).expect_err("a FIFO");
    assert!(
        e.to_string()
            .contains("it is a FIFO; fsmatrix reads only regular files"),
        "{e}"
    );
    let z = tmp.path().join("zero.ini");
    std::os::unix::fs::symlink("/dev/zero", &z).expect("symlink");
    let e = within_20s("a link to /dev/zero", move || import_path(&z)).expect_err("/dev/zero");
    assert!(e.to_string().contains("a character device"), "{e}");
    // An endless standard input: refused at the bound.
    let e = within_20s("endless stdin", || {
        import_reader(Path::new("(standard input)"), std::io::repeat(b'#'))
    })
    .expect_err("endless");
    assert!(
        e.to_string()
            .contains(&format!("more than {MAX_FILE_BYTES} bytes")),
        "{e}"
    );
    // Ranges line after line: refused at the line that passes the cap.
    let per = MAX_HOSTS / 4;
    let text: String = (0..40)
        .map(|i| format!("[g{i}]\nh{i}-[1:{per}] ansible_host=10.0.0.1\n"))
        .collect();
    let e = imp_err("ranges.ini", &text);
    assert_eq!(e.line, Some(10), "{e}");
    assert!(
        e.to_string()
            .contains(&format!("brings the inventory to {} hosts", 5 * per)),
        "{e}"
    );
}
