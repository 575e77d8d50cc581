//! Python's syntax as the INI plugin reads it: `shlex.split` for host
//! lines, `ast.literal_eval` for values.
use super::model::Var;

/// Python's `shlex.split(line, comments=True)` in POSIX mode, as the INI
/// plugin splits a host line: quotes group, a backslash escapes, an
/// unquoted `#` starts a comment.
pub(super) fn shlex_split(line: &str) -> Result<Vec<String>, &'static str> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\r' | '\n' => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '#' => break,
            '\\' => {
                in_word = true;
                cur.push(chars.next().ok_or("no escaped character")?);
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(n) => cur.push(n),
                        None => return Err("no closing quotation"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        // Inside double quotes a backslash escapes only `\` and `"`.
                        Some('\\') => match chars.next() {
                            Some(n @ ('\\' | '"')) => cur.push(n),
                            Some(n) => {
                                cur.push('\\');
                                cur.push(n);
                            }
                            None => return Err("no escaped character"),
                        },
                        Some(n) => cur.push(n),
                        None => return Err("no closing quotation"),
                    }
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// An INI value as `ast.literal_eval` types it, for the types the mapping
/// reads: `None`, `True`/`False`, integers, floats and string literals,
/// with a trailing `# comment`.  Anything else (a bare word, a list, a
/// dict, an expression) stays the text as written, as Ansible keeps it.
pub(super) fn py_value(s: &str) -> Var {
    py_literal(s.trim_start_matches([' ', '\t'])).unwrap_or_else(|| Var::Str(s.to_string()))
}

fn py_literal(s: &str) -> Option<Var> {
    let (v, rest) = py_atom(s)?;
    let rest = rest.trim_start_matches([' ', '\t', '\x0c', '\r', '\n']);
    (rest.is_empty() || rest.starts_with('#')).then_some(v)
}

fn py_atom(s: &str) -> Option<(Var, &str)> {
    for (word, v) in [
        ("True", Var::Bool(true)),
        ("False", Var::Bool(false)),
        ("None", Var::Null),
    ] {
        if let Some(rest) = s.strip_prefix(word) {
            if !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
                return Some((v, rest));
            }
        }
    }
    if let Some((text, rest)) = py_strings(s) {
        return Some((Var::Str(text), rest));
    }
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let body = if body.len() < s.len() {
        body.trim_start_matches([' ', '\t'])
    } else {
        body
    };
    let (v, rest) = py_number(body)?;
    let v = match v {
        Var::Int(i) if neg => Var::Int(i.checked_neg()?),
        Var::Float(f) if neg => Var::Float(-f),
        v => v,
    };
    Some((v, rest))
}

/// Digits with Python's underscores: single ones, between digits.
fn py_digits_ok(d: &str, leading_underscore: bool) -> bool {
    let d = if leading_underscore {
        d.strip_prefix('_').unwrap_or(d)
    } else {
        d
    };
    !d.is_empty() && !d.starts_with('_') && !d.ends_with('_') && !d.contains("__")
}

fn py_number(s: &str) -> Option<(Var, &str)> {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
    let b = s.as_bytes();
    if b.len() > 2 && b[0] == b'0' && b[1].is_ascii_alphabetic() {
        let radix = match b[1] {
            b'x' | b'X' => 16,
            b'o' | b'O' => 8,
            b'b' | b'B' => 2,
            _ => return None,
        };
        let end = s[2..]
            .find(|c: char| !(c.is_digit(radix) || c == '_'))
            .map_or(s.len(), |i| i + 2);
        let digits = &s[2..end];
        if !py_digits_ok(digits, true) || s[end..].starts_with(ident) {
            return None;
        }
        let n = i64::from_str_radix(&digits.replace('_', ""), radix).ok()?;
        return Some((Var::Int(n), &s[end..]));
    }
    let digits_end = |from: usize| {
        s[from..]
            .find(|c: char| !(c.is_ascii_digit() || c == '_'))
            .map_or(s.len(), |i| i + from)
    };
    let int_end = digits_end(0);
    let int_part = &s[..int_end];
    let mut end = int_end;
    let mut float = false;
    let mut frac = "";
    if s[end..].starts_with('.') {
        float = true;
        let f_end = digits_end(end + 1);
        frac = &s[end + 1..f_end];
        end = f_end;
    }
    if int_part.is_empty() && frac.is_empty() {
        return None;
    }
    if (!int_part.is_empty() && !py_digits_ok(int_part, false))
        || (!frac.is_empty() && !py_digits_ok(frac, false))
    {
        return None;
    }
    if s[end..].starts_with(['e', 'E']) {
        let mut e = end + 1;
        if s[e..].starts_with(['+', '-']) {
            e += 1;
        }
        let e_end = digits_end(e);
        if !py_digits_ok(&s[e..e_end], false) {
            return None;
        }
        float = true;
        end = e_end;
    }
    // `1j` is complex, `1abc` a syntax error: text either way.
    if s[end..].starts_with(ident) {
        return None;
    }
    let plain = s[..end].replace('_', "");
    if float {
        return Some((Var::Float(plain.parse().ok()?), &s[end..]));
    }
    // Python refuses `0777`; `000` is zero.
    if plain.len() > 1 && plain.starts_with('0') && plain.bytes().any(|c| c != b'0') {
        return None;
    }
    Some((Var::Int(plain.parse().ok()?), &s[end..]))
}

/// One or more adjacent string literals, concatenated as Python does.
fn py_strings(s: &str) -> Option<(String, &str)> {
    let (mut text, mut rest) = py_string(s)?;
    loop {
        match py_string(rest.trim_start_matches([' ', '\t', '\x0c'])) {
            Some((more, r)) => {
                text.push_str(&more);
                rest = r;
            }
            None => return Some((text, rest)),
        }
    }
}

/// One Python string literal (`'…'`, `"…"`, triple-quoted, `r`/`u`/`b`
/// prefixes) with its escapes; `None` where Python would not parse it (or
/// for `\N{…}` names, which stay text).
fn py_string(s: &str) -> Option<(String, &str)> {
    let q = s.find(['\'', '"'])?;
    let prefix = s[..q].to_ascii_lowercase();
    if !matches!(prefix.as_str(), "" | "r" | "u" | "b" | "rb" | "br") {
        return None;
    }
    let raw = prefix.contains('r');
    let body = &s[q..];
    let quote = &body[..1];
    let delim = if body.starts_with(&quote.repeat(3)) {
        &body[..3]
    } else {
        quote
    };
    let mut out = String::new();
    let mut i = delim.len();
    loop {
        let rest = &body[i..];
        if let Some(after) = rest.strip_prefix(delim) {
            return Some((out, after));
        }
        let c = rest.chars().next()?;
        i += c.len_utf8();
        if c == '\n' && delim.len() == 1 {
            return None;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let n = body[i..].chars().next()?;
        i += n.len_utf8();
        if raw {
            out.push('\\');
            out.push(n);
            continue;
        }
        let hex = |i: &mut usize, len: usize| -> Option<char> {
            let h = body.get(*i..*i + len)?;
            if !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            *i += len;
            char::from_u32(u32::from_str_radix(h, 16).ok()?)
        };
        match n {
            '\n' => {}
            '\\' | '\'' | '"' => out.push(n),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            'x' => out.push(hex(&mut i, 2)?),
            'u' => out.push(hex(&mut i, 4)?),
            'U' => out.push(hex(&mut i, 8)?),
            'N' => return None,
            '0'..='7' => {
                let mut v = n.to_digit(8)?;
                for _ in 0..2 {
                    match body[i..].chars().next().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            i += 1;
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v)?);
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn ini_values_are_typed_as_literal_eval_types_them() {
        // What Python's ast.literal_eval gives (checked with python3).
        for (text, want) in [
            ("22", Var::Int(22)),
            ("True", Var::Bool(true)),
            ("False", Var::Bool(false)),
            ("None", Var::Null),
            ("'03#pa33w0rd'", Var::Str("03#pa33w0rd".into())),
            ("0777", Var::Str("0777".into())),
            ("00", Var::Int(0)),
            ("1_000", Var::Int(1000)),
            ("0x10", Var::Int(16)),
            ("0x_1f", Var::Int(31)),
            ("-5", Var::Int(-5)),
            ("- 5", Var::Int(-5)),
            ("1.5", Var::Float(1.5)),
            ("5.", Var::Float(5.0)),
            ("1e3", Var::Float(1000.0)),
            ("1j", Var::Str("1j".into())),
            ("23 # comment", Var::Int(23)),
            ("bob # x", Var::Str("bob # x".into())),
            ("\"a\\nb\"", Var::Str("a\nb".into())),
            ("r'a\\nb'", Var::Str("a\\nb".into())),
            ("'a' 'b'", Var::Str("ab".into())),
            ("'\\x41\\u00e9\\101'", Var::Str("AéA".into())),
            ("yes", Var::Str("yes".into())),
            ("[1, 2]", Var::Str("[1, 2]".into())),
            ("f'x'", Var::Str("f'x'".into())),
        ] {
            assert_eq!(py_value(text), want, "{text}");
        }
    }

    #[test]
    fn host_lines_split_as_python_shlex_does() {
        // What Python's shlex.split(line, comments=True) gives.
        for (line, want) in [
            (
                "host a=\"b c\" d='e f' # comment",
                vec!["host", "a=b c", "d=e f"],
            ),
            (
                "tomcat3 mysecret=\"'03#pa33w0rd'\"",
                vec!["tomcat3", "mysecret='03#pa33w0rd'"],
            ),
            ("a\\ b c#d", vec!["a b", "c"]),
            ("x \"a\\\"b\\n\"", vec!["x", "a\"b\\n"]),
            ("x ''", vec!["x", ""]),
        ] {
            assert_eq!(shlex_split(line).unwrap(), want, "{line}");
        }
        assert_eq!(shlex_split("x 'a"), Err("no closing quotation"));
        assert_eq!(shlex_split("x a\\"), Err("no escaped character"));
        // The docs' quoting example keeps the `#` in the value.
        let e = imp_err("hosts", "tomcat3 ansible_user=\"'svc#1'\"\n");
        assert!(e.message.contains("user name `svc#1` contains `#`"), "{e}");
    }
}
