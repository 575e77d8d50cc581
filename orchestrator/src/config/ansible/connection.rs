//! The connection variables: SSH or not, become, jump hosts and the
//! options fsmatrix does not take.
use super::map::{ansible_bool, HostVars, BECOME_METHODS};
use super::python::shlex_split;
use super::{Cx, ImportError};
use crate::config::values::shown;
use crate::config::Become;

/// `become = "sudo"` / `"doas"` when Ansible becomes root with sudo / doas;
/// other methods and other target users are warned about.
pub(super) fn become_method(
    cx: &mut Cx<'_>,
    hv: &HostVars<'_>,
    checks: &mut Vec<String>,
) -> Result<Option<Become>, ImportError> {
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
        return Ok(None);
    }
    // Ansible's default method (ansible.cfg's become_method) is sudo.
    let how = match hv.text(cx, &["ansible_become_method"])? {
        None => Some(Become::Sudo),
        Some(m) => match BECOME_METHODS.iter().find(|(n, _)| *n == m.value.as_str()) {
            Some((_, b)) => Some(*b),
            None => {
                hv.check(
                    cx,
                    checks,
                    m.line,
                    format!(
                    "Ansible becomes root here with `{}`; fsmatrix knows only become = \"sudo\" \
                     or become = \"doas\", so none was written: set up passwordless sudo or doas \
                     and add that become, or log in as root",
                    shown(&m.value)
                ),
                );
                None
            }
        },
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
    Ok(how)
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
pub(super) fn connection_checks(
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
                     needs passwordless sudo or doas"
                ),
            );
        }
    }
    Ok(jump)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::test_support::*;
    use crate::config::Become;

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
                Some("with `su`; fsmatrix knows only become = \"sudo\" or become = \"doas\""),
            ),
            (
                "ansible_become=on ansible_become_method=doas",
                Some(Become::Doas),
                None,
            ),
            (
                "ansible_become=on ansible_become_method=community.general.doas",
                Some(Become::Doas),
                None,
            ),
            (
                "ansible_become=yes ansible_become_method=pbrun",
                None,
                Some("with `pbrun`; fsmatrix knows only"),
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
}
