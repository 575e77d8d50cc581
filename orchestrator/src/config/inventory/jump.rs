//! `proxy_jump` (OpenSSH `ProxyJump`): its hops, parsed and checked.
use super::*;

/// One hop of a `proxy_jump` (OpenSSH `ProxyJump`): `[user@]host[:port]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct JumpSpec {
    /// `None`: the host's own `user`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserName>,
    pub address: Address,
    /// 22 unless given.
    pub port: u16,
    /// Set when the hop was resolved through an ssh config (a ProxyJump
    /// of it): the alias and that hop's own keys and known_hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<HopConfig>,
}

/// What an ssh config gave one jump hop, as OpenSSH would use it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HopConfig {
    /// As the ProxyJump names it (`jump_a`, `ops@gw:2200`).
    pub written: String,
    /// Every IdentityFile of the hop that exists, in order (empty: the
    /// host's own key or ssh-agent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub identity_files: Vec<PathBuf>,
    /// The hop's UserKnownHostsFile (`None`: the host's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_hosts: Option<PathBuf>,
    /// Where each value came from (key as in [`Host::ssh_sources`]).
    pub sources: BTreeMap<String, Sourced>,
}

impl std::fmt::Display for JumpSpec {
    /// As OpenSSH takes it back: `user@host:port`, IPv6 in brackets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        if self.address.as_str().contains(':') {
            write!(f, "[{}]:{}", self.address, self.port)
        } else {
            write!(f, "{}:{}", self.address, self.port)
        }
    }
}

/// Most hops a `proxy_jump` may have (OpenSSH has no limit; a longer chain
/// is a typo or a loop).
pub const MAX_JUMP_HOPS: usize = 8;

const PROXY_JUMP_VALID: &str = "`[user@]host[:port]`, several separated by commas (first hop \
     first), an IPv6 address in brackets (`[fd00::5]:22`), or \"none\"; e.g. \"root@bastion.lab\", \
     \"ops@gw1:2222,10.0.0.5\"";

/// Parse an OpenSSH `ProxyJump` value: `[user@]host[:port][,...]`, the
/// `ssh://[user@]host[:port]` form, or `none` (no jump: an empty list).
/// Every part goes through the [`UserName`] and [`Address`] validators, so
/// spaces, `-o…` options, newlines and URI parameters are refused; the error
/// says which hop and what is valid.  The one validator for the key: the
/// inventory and `~/.ssh/config` resolution both call it.
pub fn parse_proxy_jump(s: &str) -> Result<Vec<JumpSpec>, ValueError> {
    let whole = shown(s);
    let fail = |hop: Option<(usize, &str)>, why: String| {
        let at = match hop {
            Some((i, h)) if s.contains(',') => format!(" hop {} `{}`", i + 1, shown(h)),
            _ => String::new(),
        };
        ValueError(format!(
            "proxy_jump `{whole}`{at}: {why}; valid: {PROXY_JUMP_VALID}"
        ))
    };
    if s.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    if s.is_empty() {
        return Err(fail(None, "is empty".into()));
    }
    if let Some(c) = s.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(fail(
            None,
            format!("contains {}, which is not allowed here", describe_char(c)),
        ));
    }
    let hops: Vec<&str> = s.split(',').collect();
    if hops.len() > MAX_JUMP_HOPS {
        return Err(fail(
            None,
            format!("has {} hops, more than {MAX_JUMP_HOPS}", hops.len()),
        ));
    }
    let mut out: Vec<JumpSpec> = Vec::new();
    for (i, hop) in hops.iter().enumerate() {
        let spec = parse_hop(hop).map_err(|why| fail(Some((i, hop)), why))?;
        if out.iter().any(|o| {
            machine_key(o.address.as_str()) == machine_key(spec.address.as_str())
                && o.port == spec.port
        }) {
            return Err(fail(
                Some((i, hop)),
                "names the same host twice (a loop)".into(),
            ));
        }
        out.push(spec);
    }
    Ok(out)
}

fn describe_char(c: char) -> String {
    match c {
        '\n' => "a newline".into(),
        '\r' => "a carriage return".into(),
        '\t' => "a tab".into(),
        ' ' => "a space".into(),
        c => format!("U+{:04X}", c as u32),
    }
}

/// One hop's syntax: `[ssh://][user@]host[:port]`; the host unchecked.
fn split_hop(hop: &str) -> Result<SplitHop<'_>, String> {
    if hop.is_empty() {
        return Err("has an empty hop (two commas, or one at an end)".into());
    }
    let rest = match hop.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("ssh") => rest,
        Some((scheme, _)) => {
            return Err(format!(
                "uses the URI scheme `{}`; only ssh:// is a jump host",
                shown(scheme)
            ))
        }
        None => hop,
    };
    if let Some(c) = rest
        .chars()
        .find(|c| matches!(c, '/' | ';' | '?' | '#' | '=' | '%'))
    {
        return Err(format!(
            "contains `{c}`: URI paths, parameters and options are not accepted"
        ));
    }
    let (user, hostport) = match rest.split_once('@') {
        Some((u, h)) => (Some(UserName::new(u).map_err(|e| e.0)?), h),
        None => (None, rest),
    };
    let (host, port) = if let Some(inner) = hostport.strip_prefix('[') {
        let (addr, after) = inner
            .split_once(']')
            .ok_or_else(|| "opens `[` without a closing `]`".to_string())?;
        if addr.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!(
                "`[{}]` is not an IPv6 address (brackets are for IPv6 only)",
                shown(addr)
            ));
        }
        match after {
            "" => (addr, None),
            _ => match after.strip_prefix(':') {
                Some(p) => (addr, Some(p)),
                None => return Err(format!("`{}` after `]` is not `:port`", shown(after))),
            },
        }
    } else {
        match hostport.matches(':').count() {
            0 => (hostport, None),
            1 => {
                let (h, p) = hostport.split_once(':').unwrap_or((hostport, ""));
                (h, Some(p))
            }
            _ => {
                return Err(format!(
                    "`{}` has several `:`; write an IPv6 address in brackets, e.g. `[fd00::5]:22`",
                    shown(hostport)
                ))
            }
        }
    };
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Some(n),
            _ => {
                return Err(format!(
                    "port `{}` is not a number from 1 to 65535",
                    shown(p)
                ))
            }
        },
    };
    Ok((user, host, port))
}

/// One hop: `[ssh://][user@]host[:port]`, the host an address.
fn parse_hop(hop: &str) -> Result<JumpSpec, String> {
    let (user, host, port) = split_hop(hop)?;
    Ok(JumpSpec {
        user,
        address: Address::new(host).map_err(|e| e.0)?,
        port: port.unwrap_or(22),
        config: None,
    })
}

/// The hops of a ProxyJump an ssh config sets, each `(user, host, port)`
/// with `host` as written (an alias, resolved by the caller): the syntax of
/// [`parse_proxy_jump`] without the address check.  `none`: no hop.
pub fn split_proxy_jump(s: &str) -> Result<Vec<SplitHop<'_>>, ValueError> {
    let fail = |why: String| {
        ValueError(format!(
            "proxy_jump `{}`: {why}; valid: {PROXY_JUMP_VALID}",
            shown(s)
        ))
    };
    if s.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(fail(
            "is empty or contains a space or control character".into(),
        ));
    }
    s.split(',')
        .map(|h| split_hop(h).map_err(|why| fail(format!("hop `{}` {why}", shown(h)))))
        .collect()
}

/// One hop as written: user, host (an alias or an address), port.
pub type SplitHop<'a> = (Option<UserName>, &'a str, Option<u16>);
