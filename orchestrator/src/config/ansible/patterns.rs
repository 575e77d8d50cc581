//! Host patterns: `name:port`, `[ipv6]:port`, ranges.
use crate::config::values::shown;

/// More hosts than this from one pattern is refused (`[0:999999999]`).
const MAX_EXPANDED_HOSTS: usize = 10_000;

/// A host pattern as the file plugins read it: the port split off (Ansible's
/// `parse_address`), then ranges expanded.  `ini`: the INI plugin's extra
/// checks (no trailing `:`, no `---`).
pub(super) fn expand_host_pattern(
    pattern: &str,
    ini: bool,
) -> Result<(Vec<String>, Option<String>), String> {
    let (host, port) = split_port(pattern);
    if ini && port.is_none() && pattern.trim().ends_with(':') {
        return Err(format!(
            "host pattern `{}` ends in `:`, which is reserved for a port; valid: host:2222",
            shown(pattern)
        ));
    }
    if ini && host.trim() == "---" {
        return Err(
            "host pattern `---` is normally a sign this is a YAML file; give it a .yml name".into(),
        );
    }
    if host.is_empty() {
        return Err("empty host name; valid: a name or an address, e.g. db1.lab.example".into());
    }
    let mut out = Vec::new();
    expand_ranges(host, &mut out).map_err(|e| format!("host pattern `{}`: {e}", shown(pattern)))?;
    Ok((out, port.map(str::to_string)))
}

/// Ansible's `parse_address(p, allow_ranges=True)`, port part: `[v6]:port`,
/// or `name:port` where the name has no `:` outside range brackets.
fn split_port(p: &str) -> (&str, Option<&str>) {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(inner) = p.strip_prefix('[') {
        if let Some(close) = inner.rfind("]:") {
            let (host, port) = (&inner[..close], &inner[close + 2..]);
            let v6 = host.contains(':')
                && host
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
            if v6 && digits(port) {
                return (host, Some(port));
            }
        }
    }
    let b = p.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'[' => match p[i..].find(']') {
                Some(j) => i += j + 1,
                None => return (p, None),
            },
            b']' => return (p, None),
            b':' => {
                let port = &p[i + 1..];
                return if i > 0 && digits(port) {
                    (&p[..i], Some(port))
                } else {
                    (p, None)
                };
            }
            _ => i += 1,
        }
    }
    (p, None)
}

/// `string.ascii_letters`, whose order alphabetic ranges follow.
const ASCII_LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// Ansible's `expand_hostname_range`: the first `[beg:end]` or
/// `[beg:end:step]`, inclusive, numbers zero-padded when `beg` is, single
/// letters in `ascii_letters` order; the rest expanded recursively.
fn expand_ranges(pattern: &str, out: &mut Vec<String>) -> Result<(), String> {
    let Some(open) = pattern.find('[') else {
        out.push(pattern.to_string());
        return Ok(());
    };
    let close = pattern[open..]
        .find(']')
        .map(|i| open + i)
        .ok_or("a `[` without its `]`; valid ranges: [01:50], [01:50:2], [a:f]")?;
    let (head, range, tail) = (
        &pattern[..open],
        &pattern[open + 1..close],
        &pattern[close + 1..],
    );
    let bounds: Vec<&str> = range.split(':').collect();
    if !(2..=3).contains(&bounds.len()) {
        return Err(format!(
            "range [{range}] must be begin:end or begin:end:step"
        ));
    }
    let beg = if bounds[0].is_empty() { "0" } else { bounds[0] };
    let end = bounds[1];
    if end.is_empty() {
        return Err(format!("range [{range}] has no end"));
    }
    let step: usize =
        match bounds.get(2) {
            Some(s) => s.parse().ok().filter(|s| *s > 0).ok_or_else(|| {
                format!("range [{range}] has a step that is not a positive integer")
            })?,
            None => 1,
        };
    let width = if beg.len() > 1 && beg.starts_with('0') {
        if beg.len() != end.len() {
            return Err(format!(
                "range [{range}] must give begin and end with the same number of digits (e.g. [01:50])"
            ));
        }
        beg.len()
    } else {
        0
    };
    let letter = |s: &str| match s.as_bytes() {
        [c] => ASCII_LETTERS.iter().position(|l| l == c),
        _ => None,
    };
    let items: Vec<String> = match (letter(beg), letter(end)) {
        (Some(b), Some(e)) => {
            if b > e {
                return Err(format!("range [{range}] has begin after end"));
            }
            (b..=e)
                .step_by(step)
                .map(|i| (ASCII_LETTERS[i] as char).to_string())
                .collect()
        }
        _ => {
            let (Ok(b), Ok(e)) = (beg.parse::<u64>(), end.parse::<u64>()) else {
                return Err(format!(
                    "range [{range}] must be numbers (01:50) or single letters (a:f)"
                ));
            };
            if b > e {
                return Err(format!("range [{range}] has begin after end"));
            }
            if (e - b) / step as u64 >= (MAX_EXPANDED_HOSTS - out.len()) as u64 {
                return Err(format!(
                    "range [{range}] makes more than {MAX_EXPANDED_HOSTS} hosts"
                ));
            }
            (b..=e)
                .step_by(step)
                .map(|n| format!("{n:0width$}"))
                .collect()
        }
    };
    for item in items {
        let h = format!("{head}{item}{tail}");
        if h.contains('[') {
            expand_ranges(&h, out)?;
        } else {
            out.push(h);
        }
        if out.len() > MAX_EXPANDED_HOSTS {
            return Err(format!("ranges make more than {MAX_EXPANDED_HOSTS} hosts"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::test_support::*;
    use super::*;

    #[test]
    fn docs_ranges_expand_inclusively_with_padding_and_stride() {
        let count = |pattern: &str| {
            let mut out = Vec::new();
            expand_ranges(pattern, &mut out).map(|()| out)
        };
        let www = count("www[01:50].example.com").unwrap();
        assert_eq!(
            (www.len(), www[0].as_str(), www[49].as_str()),
            (50, "www01.example.com", "www50.example.com")
        );
        let odd = count("www[01:50:2].example.com").unwrap();
        assert_eq!(
            (odd.len(), odd[1].as_str(), odd[24].as_str()),
            (25, "www03.example.com", "www49.example.com")
        );
        assert_eq!(
            count("db-[a:f].example.com").unwrap(),
            ["a", "b", "c", "d", "e", "f"].map(|c| format!("db-{c}.example.com"))
        );
        assert_eq!(count("n[8:10]").unwrap(), ["n8", "n9", "n10"]);
        assert_eq!(
            count("r[1:2]-n[a:b]").unwrap(),
            ["r1-na", "r1-nb", "r2-na", "r2-nb"]
        );
        assert_eq!(
            count("x[y:B]").unwrap(),
            ["xy", "xz", "xA", "xB"],
            "ascii_letters order"
        );
        for (bad, why) in [
            ("www[01:5]", "same number of digits"),
            ("www[1:5:0]", "positive integer"),
            ("www[a:5]", "numbers (01:50) or single letters"),
            ("www[5:1]", "begin after end"),
            ("www[1]", "begin:end"),
            ("www[1:]", "no end"),
            ("www[1:2", "without its `]`"),
            ("www[0:99999999]", "more than 10000 hosts"),
        ] {
            let e = count(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let i = imp(
            "hosts",
            "[webservers]\nwww[01:50:2].example.com\n[databases]\ndb-[a:f].example.com\n",
        );
        assert_eq!(i.hosts, 31);
        let e = imp_err("hosts", "[web]\nok.example.com\nwww[01:5].example.com\n");
        assert_eq!((e.line, e.file.as_path()), (Some(3), Path::new("hosts")));
        assert!(
            e.to_string()
                .starts_with("hosts:3: host pattern `www[01:5].example.com`: "),
            "{e}"
        );
    }

    #[test]
    fn docs_host_ports_aliases_and_inline_vars() {
        let i = imp(
            "hosts",
            "\
badwolf.example.com:5309
jumper ansible_port=5555 ansible_host=192.0.2.50
[2001:db8::7]:2222

[atlanta]
host1 http_port=80 maxRequestsPerChild=808
host2 http_port=303 maxRequestsPerChild=909 # two hosts, one line each
",
        );
        let inv = parse_filled(&i);
        let h = by_name(&inv);
        // (host, address, port)
        for (host, address, port) in [
            ("badwolf.example.com", "badwolf.example.com", 5309),
            ("jumper", "192.0.2.50", 5555),
            ("2001-db8--7", "2001:db8::7", 2222),
            ("host1", "host1", 22),
            ("host2", "host2", 22),
        ] {
            assert_eq!(
                (h[host].address.as_str(), h[host].port),
                (address, port),
                "{host}"
            );
        }
        assert!(
            warned(&i, "host `2001:db8::7` is named `2001-db8--7` here"),
            "{:?}",
            i.warnings
        );
        assert!(i
            .toml
            .contains("[[host]]\n# Ansible host: 2001:db8::7\nname = \"2001-db8--7\"\n"));
        // An inline ansible_port beats the pattern's port, as in Ansible.
        let i = imp("hosts", "web:2201 ansible_port=2202\n");
        assert_eq!(parse_filled(&i).hosts[0].port, 2202);
        let e = imp_err("hosts", "web: ansible_port=2\n");
        assert!(e.message.contains("ends in `:`"), "{e}");
    }
}
