use super::*;

const REGISTRY: &str = r#"
ssh_config = "none"
[defaults]
os = "linux"
user = "root"
identity_file = "/etc/fsmatrix/agent_key"
known_hosts = "/etc/fsmatrix/known_hosts"
[[host]]
name = "lab1"
address = "10.203.0.11"
devices = ["/dev/loop1", "/dev/loop2"]
consent_foreign = ["/dev/loop2"]
allow_postgres_settings = ["shared_preload_libraries"]
allow_script_commands = true
tags = ["rack1", "fast"]
[[host]]
name = "lab2"
address = "10.203.0.12"
port = 2222
devices = ["/dev/loop3"]
tags = ["rack2"]
"#;

fn registry() -> Inventory {
    Inventory::parse(Path::new("/etc/fsmatrix/registry.toml"), REGISTRY.into())
        .unwrap_or_else(|e| panic!("{e}"))
}

fn refused(submitted: &str) -> String {
    match narrow(&registry(), submitted) {
        Ok(h) => panic!("accepted: {submitted}\n{h:?}"),
        Err(e) => e,
    }
}

#[test]
fn a_submission_that_asks_for_more_than_the_registry_gives_is_refused_with_why() {
    let table: &[(&str, &str, &str)] = &[
        (
            "the agent's key",
            "[[host]]\nname = \"lab1\"\nidentity_file = \"/etc/fsmatrix/agent_key\"\n",
            "sets `identity_file` in [[host]] 1",
        ),
        (
            "a key through defaults, with ~",
            "[defaults]\nidentity_file = \"~/.ssh/id_ed25519\"\n[[host]]\nname = \"lab1\"\n",
            "sets `identity_file` in [defaults]",
        ),
        (
            "the agent's known_hosts",
            "[[host]]\nname = \"lab1\"\nknown_hosts = \"/dev/null\"\n",
            "sets `known_hosts`",
        ),
        (
            "an ssh config (Match exec)",
            "ssh_config = \"/tmp/evil_config\"\n[[host]]\nname = \"lab1\"\n",
            "sets `ssh_config` in the inventory",
        ),
        (
            "pg_bin",
            "[[host]]\nname = \"lab1\"\npg_bin = \"/tmp/bin\"\n",
            "sets `pg_bin`",
        ),
        (
            "work_dir",
            "[[host]]\nname = \"lab1\"\nwork_dir = \"/srv/x\"\n",
            "sets `work_dir`",
        ),
        (
            "a host outside the registry",
            "[[host]]\nname = \"lab3\"\n",
            "host `lab3` is not in the agent's registry; valid: lab1, lab2",
        ),
        (
            "a device outside it",
            "[[host]]\nname = \"lab1\"\ndevices = [\"/dev/sda\"]\n",
            "host `lab1`: device `/dev/sda` is not one the registry lists for it; valid: /dev/loop1, /dev/loop2",
        ),
        (
            "another host's device",
            "[[host]]\nname = \"lab2\"\ndevices = [\"/dev/loop1\"]\n",
            "device `/dev/loop1` is not one the registry lists",
        ),
        (
            "a foreign-signature consent not given",
            "[[host]]\nname = \"lab1\"\nconsent_foreign = [\"/dev/loop1\"]\n",
            "consent_foreign `/dev/loop1` is a consent the registry does not give; valid: /dev/loop2",
        ),
        (
            "a settings consent not given",
            "[[host]]\nname = \"lab1\"\nallow_postgres_settings = [\"archive_command\"]\n",
            "allow_postgres_settings `archive_command` is a consent the registry does not give; valid: shared_preload_libraries",
        ),
        (
            "a settings consent on a host with none",
            "[defaults]\nallow_postgres_settings = [\"Archive_Command\"]\n[[host]]\nname = \"lab2\"\n",
            "`archive_command` is a consent the registry does not give; valid: none",
        ),
        (
            "a tag the registry does not give",
            "[[host]]\nname = \"lab2\"\ntags = [\"rack1\"]\n",
            "tag `rack1` is not the registry's",
        ),
        (
            "an unknown key",
            "[[host]]\nname = \"lab1\"\nproxy_command = \"sh\"\n",
            "has `proxy_command`, which a submission cannot set",
        ),
        ("no host", "[defaults]\nos = \"linux\"\n", "names no host"),
        (
            "one host twice",
            "[[host]]\nname = \"lab1\"\n[[host]]\nname = \"lab1\"\n",
            "names host `lab1` twice",
        ),
        (
            "a name with escapes",
            "[[host]]\nname = \"\\u001b[2Jx\"\n",
            "host `\\u{1b}[2Jx` is not in the agent's registry",
        ),
        ("not TOML", "[[host]\n", "is not TOML"),
    ];
    for (what, text, want) in table {
        let e = refused(text);
        assert!(e.contains(want), "{what}: {e}");
        assert!(!e.contains('\x1b'), "{what}: {e:?}");
    }
}

#[test]
fn a_submission_gets_the_registry_s_rows_narrowed_never_its_own_values() {
    let reg = registry();
    // Everything a submitter's own inventory says about reaching a host is
    // not read: the registry's address, port, user, key and known hosts.
    let hosts = narrow(
        &reg,
        "[defaults]\nos = \"freebsd\"\nuser = \"mallory\"\nagent = true\n\
         [[host]]\nname = \"lab2\"\naddress = \"10.9.9.9\"\nport = 22\n\
         [[host]]\nname = \"lab1\"\ndevices = [\"/dev/loop2\"]\nconsent_foreign = [\"/dev/loop2\"]\n",
    )
    .unwrap();
    let names: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["lab2", "lab1"]);
    let (lab2, lab1) = (&hosts[0], &hosts[1]);
    assert_eq!(lab2, &reg.hosts[1], "lab2 is the registry's row, whole");
    assert_eq!(lab1.address.to_string(), "10.203.0.11");
    assert_eq!(
        lab1.auth,
        crate::config::Auth::IdentityFile("/etc/fsmatrix/agent_key".into())
    );
    assert_eq!(lab1.user.as_str(), "root");
    let devs: Vec<&str> = lab1.devices.iter().map(|d| d.as_str()).collect();
    assert_eq!(devs, ["/dev/loop2"], "fewer devices");
    assert_eq!(
        lab1.consent_foreign, lab1.devices,
        "the consent asked and given"
    );
    assert!(
        lab1.allow_postgres_settings.is_empty(),
        "a consent not asked for is not given"
    );
    // Consent asked (in any case) and given; devices in the asked order.
    let hosts = narrow(
        &reg,
        "[[host]]\nname = \"lab1\"\ndevices = [\"/dev/loop2\", \"/dev/loop1\"]\n\
         allow_postgres_settings = [\"Shared_Preload_Libraries\"]\ntags = [\"fast\"]\n",
    )
    .unwrap();
    let devs: Vec<&str> = hosts[0].devices.iter().map(|d| d.as_str()).collect();
    assert_eq!(devs, ["/dev/loop2", "/dev/loop1"]);
    assert_eq!(hosts[0].allow_postgres_settings.len(), 1);
    assert!(hosts[0].consent_foreign.is_empty());
    assert_eq!(hosts[0].tags, reg.hosts[0].tags, "the registry's tags");
}

#[test]
fn the_sweep_s_inventory_renders_and_loads_back_to_the_same_hosts() {
    let reg = registry();
    for submitted in [
        "[[host]]\nname = \"lab1\"\nconsent_foreign = [\"/dev/loop2\"]\n[[host]]\nname = \"lab2\"\n",
        "[[host]]\nname = \"lab2\"\n",
    ] {
        let inv = sweep_inventory(&reg, submitted).unwrap();
        let text = crate::config::inventory::render(&inv);
        let back = Inventory::parse(&reg.path, text.clone()).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back.hosts, inv.hosts, "{text}");
    }
}

#[test]
fn queued_cells_must_name_the_registry_s_machines() {
    let inv = sweep_inventory(&registry(), "[[host]]\nname = \"lab2\"\n").unwrap();
    let cell = |n: &str, a: &str, p: i32| vec![(n.to_string(), a.to_string(), p)];
    assert_eq!(
        check_cells(&inv, &cell("lab2", "10.203.0.12", 2222)),
        Ok(())
    );
    let e = check_cells(&inv, &cell("lab2", "10.203.0.11", 22)).unwrap_err();
    assert!(
        e.contains("host `lab2` was queued at 10.203.0.11:22, but the agent's registry has it at 10.203.0.12:2222"),
        "{e}"
    );
    let e = check_cells(&inv, &cell("lab1", "10.203.0.11", 22)).unwrap_err();
    assert!(
        e.contains("names host `lab1`, which the submission does not"),
        "{e}"
    );
}

fn script(path: &str, content: &str) -> SubmittedScript {
    SubmittedScript {
        path: path.into(),
        sha256: crate::text::sha256_hex(content.as_bytes()),
        content: content.into(),
    }
}

#[test]
fn scripts_travel_as_checked_content_and_no_submitted_path_is_read() {
    let matrix =
        |s: &str| format!("name = \"m\"\n[[workload]]\nname = \"w\"\nsql_script = {s:?}\n");
    let ok = [script("sql/x.sql", "SELECT 1;\n")];
    assert_eq!(check_matrix_scripts(&matrix("./sql/x.sql"), &ok), Ok(()));
    for (written, want) in [
        (
            "/etc/shadow",
            "`/etc/shadow` is not among the scripts the submission carries",
        ),
        ("sql/y.sql", "`sql/y.sql` is not among the scripts"),
        ("../x.sql", "has a `..` part"),
    ] {
        let e = check_matrix_scripts(&matrix(written), &ok).unwrap_err();
        assert!(e.contains(want), "{written}: {e}");
    }
    // Even when the submission claims to carry it.
    let e = check_matrix_scripts(&matrix("/etc/shadow"), &[script("/etc/shadow", "")]).unwrap_err();
    assert!(e.contains("not among the scripts"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let m = materialize(dir.path(), "name = \"m\"\n", &ok).unwrap();
    assert_eq!(m, dir.path().join("matrix.toml"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("sql/x.sql")).unwrap(),
        "SELECT 1;\n"
    );
    let mut bad = script("x.sql", "SELECT 1;\n");
    bad.content = "COPY t TO PROGRAM 'id';\n".into();
    for (scripts, want) in [
        (vec![bad], "does not match its checksum"),
        (
            vec![script("/tmp/x.sql", "")],
            "is not a plain relative path",
        ),
        (
            vec![script("a/../../x.sql", "")],
            "is not a plain relative path",
        ),
        (
            vec![script("x.sql", ""), script("x.sql", "")],
            "given twice",
        ),
        (vec![script("matrix.toml", "")], "clashes with the matrix"),
    ] {
        let d = tempfile::tempdir().unwrap();
        let e = materialize(d.path(), "name = \"m\"\n", &scripts).unwrap_err();
        assert!(e.contains(want), "{e}");
    }
    // An absolute path is refused before anything is written there.
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("evil.sql");
    let d = tempfile::tempdir().unwrap();
    assert!(materialize(d.path(), "", &[script(target.to_str().unwrap(), "x")]).is_err());
    assert!(
        !target.exists(),
        "nothing written outside the private folder"
    );
}

/// Scripts that run commands need the owner's consent (the registry's) and
/// the submitter's request: neither alone allows them.
#[test]
fn script_commands_are_allowed_only_where_the_registry_allows_them_and_the_submission_asks() {
    let e = refused("[[host]]\nname = \"lab2\"\nallow_script_commands = true\n");
    assert!(
        e.contains("allow_script_commands is a consent the registry does not give"),
        "{e}"
    );
    let e = refused("[defaults]\nallow_script_commands = \"yes\"\n[[host]]\nname = \"lab1\"\n");
    assert!(e.contains("is not true or false"), "{e}");
    let reg = registry();
    let asked = narrow(
        &reg,
        "[[host]]\nname = \"lab1\"\nallow_script_commands = true\n",
    )
    .unwrap();
    assert!(asked[0].allow_script_commands);
    let not_asked = narrow(&reg, "[[host]]\nname = \"lab1\"\n").unwrap();
    assert!(!not_asked[0].allow_script_commands, "not asked: not given");
    // A submission cannot choose the OS user its scripts run as.
    let given = narrow(&reg, "[[host]]\nname = \"lab1\"\nclient_user = \"root\"\n").unwrap();
    assert_eq!(given[0].client_user.as_str(), "nobody");
}

/// issue 26: `guest_of` and `[host.vm]` are the registry's alone (a
/// submission that sets them is refused); a guest is swept only with its
/// physical host and the disk it gets.
#[test]
fn a_guest_is_the_registry_s_and_comes_with_its_physical_host() {
    let with_guest = format!(
        "{REGISTRY}[[host]]\nname = \"lab1-vm\"\nguest_of = \"lab1\"\ndevices = [\"/dev/vdb\"]\n[host.vm]\nimage = \"/srv/images/guest.img\"\ndisk = \"/dev/loop2\"\naccel = \"tcg\"\n"
    );
    let reg = Inventory::parse(Path::new("/etc/fsmatrix/registry.toml"), with_guest)
        .unwrap_or_else(|e| panic!("{e}"));
    let ok = narrow(
        &reg,
        "[[host]]\nname = \"lab1\"\n[[host]]\nname = \"lab1-vm\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        ok[1].vm, reg.hosts[2].vm,
        "the registry's machine, as it is"
    );
    for (submitted, want) in [
        (
            "[[host]]\nname = \"lab1-vm\"\n",
            "host `lab1-vm` is a guest of `lab1` in the agent's registry",
        ),
        (
            "[[host]]\nname = \"lab1\"\ndevices = [\"/dev/loop1\"]\n[[host]]\nname = \"lab1-vm\"\n",
            "host `lab1`: the submission leaves out /dev/loop2, the disk its guest `lab1-vm` gets",
        ),
        (
            "[[host]]\nname = \"lab2\"\nguest_of = \"lab1\"\n",
            "has `guest_of`, which a submission cannot set",
        ),
        (
            "[[host]]\nname = \"lab1-vm\"\n[host.vm]\nimage = \"/etc/shadow\"\n",
            "has `vm`, which a submission cannot set",
        ),
    ] {
        let e = narrow(&reg, submitted).expect_err(submitted);
        assert!(e.contains(want), "{submitted}: {e}");
    }
}
