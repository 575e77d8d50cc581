//! What a workload script can do beyond its queries: the lexer the two
//! script generators share (psql and pgbench read their scripts with one
//! lexer, PostgreSQL's `psqlscan`), and the server-side SQL features that
//! run a program, reach a file or load code.  Each generator lists its own
//! client-side meta-commands ([`super::sql`], [`super::pgbench`]).
//!
//! Case-insensitive, outside comments and string literals; dollar-quoted
//! bodies (function bodies, `DO` blocks) are read as SQL too.  Dynamic SQL
//! (`EXECUTE 'co' || 'py …'`) cannot be seen: this is the first gate, the
//! last is that the clients run as an unprivileged user and connect as a
//! role without superuser rights (`remote-scripts/common.sh`).
use crate::config::ScriptUse;

/// One token of a script, with its 1-based line and column.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    /// A keyword or identifier, lowercased (a quoted identifier as written).
    Word(String),
    /// A string literal (its text is not needed, only that it is one).
    Str,
    /// A backslash meta-command: its name (without the backslash) and its
    /// arguments, to the end of the line or the next backslash.
    Meta { name: String, args: String },
    /// `;`, `(`, `)` or `,`.
    Punct(char),
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Lexed {
    pub tok: Tok,
    pub line: usize,
    pub column: usize,
}

/// How a client reads what follows `COPY … FROM STDIN;` in its script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CopyData {
    /// psql: the lines up to `\.` are the data (PostgreSQL 15 psql(1),
    /// "COPY data comes from the same source as the commands"): skipped.
    Inline,
    /// pgbench: no inline data; every line stays a command.
    None,
}

/// The tokens of `text` (meta-commands only outside dollar quotes, as psql
/// and pgbench read them).
pub(super) fn lex(text: &str, copy: CopyData) -> Vec<Lexed> {
    let mut out = Vec::new();
    lex_into(
        text.as_bytes(),
        1,
        1,
        copy == CopyData::Inline,
        true,
        &mut out,
    );
    out
}

/// Column counting in characters: a UTF-8 continuation byte adds none.
fn is_char_start(b: u8) -> bool {
    b & 0xC0 != 0x80
}

fn lex_into(
    b: &[u8],
    line0: usize,
    col0: usize,
    copy_inline: bool,
    metas: bool,
    out: &mut Vec<Lexed>,
) {
    let (mut line, mut col) = (line0, col0);
    let mut i = 0;
    // Advance over b[i..j], keeping line and column.
    let step = |i: &mut usize, j: usize, line: &mut usize, col: &mut usize| {
        while *i < j && *i < b.len() {
            if b[*i] == b'\n' {
                *line += 1;
                *col = 1;
            } else if is_char_start(b[*i]) {
                *col += 1;
            }
            *i += 1;
        }
    };
    while i < b.len() {
        let c = b[i];
        let (tl, tc) = (line, col);
        match c {
            b'-' if b.get(i + 1) == Some(&b'-') => {
                let j = find_from(b, i, b"\n").unwrap_or(b.len());
                step(&mut i, j, &mut line, &mut col);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                // Block comments nest in PostgreSQL.
                let mut depth = 0usize;
                let mut j = i;
                while j < b.len() {
                    if b[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 2;
                    } else if b[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        j += 1;
                    }
                }
                step(&mut i, j, &mut line, &mut col);
            }
            b'\'' => {
                let j = string_end(b, i + 1, false);
                step(&mut i, j, &mut line, &mut col);
                out.push(Lexed {
                    tok: Tok::Str,
                    line: tl,
                    column: tc,
                });
            }
            b'"' => {
                let mut j = i + 1;
                let mut name = Vec::new();
                while j < b.len() {
                    if b[j] == b'"' {
                        if b.get(j + 1) == Some(&b'"') {
                            name.push(b'"');
                            j += 2;
                            continue;
                        }
                        j += 1;
                        break;
                    }
                    name.push(b[j]);
                    j += 1;
                }
                step(&mut i, j, &mut line, &mut col);
                out.push(Lexed {
                    tok: Tok::Word(String::from_utf8_lossy(&name).into_owned()),
                    line: tl,
                    column: tc,
                });
            }
            b'$' => match dollar_tag(b, i) {
                Some(tag_end) => {
                    let tag = &b[i..tag_end];
                    let body_start = tag_end;
                    let body_end = find_from(b, body_start, tag).unwrap_or(b.len());
                    step(&mut i, body_start, &mut line, &mut col);
                    // A function body or DO block: SQL, read as such, its
                    // statements apart from the one around it.
                    let edge = |line, column| Lexed {
                        tok: Tok::Punct(';'),
                        line,
                        column,
                    };
                    out.push(edge(line, col));
                    lex_into(&b[body_start..body_end], line, col, false, false, out);
                    out.push(edge(line, col));
                    step(
                        &mut i,
                        (body_end + tag.len()).min(b.len()),
                        &mut line,
                        &mut col,
                    );
                }
                None => {
                    let j = i + 1;
                    step(&mut i, j, &mut line, &mut col)
                }
            },
            b'\\' if metas => {
                let mut j = i + 1;
                if b.get(j).is_some_and(|x| x.is_ascii_alphabetic()) {
                    while b
                        .get(j)
                        .is_some_and(|x| x.is_ascii_alphanumeric() || *x == b'_' || *x == b'+')
                    {
                        j += 1;
                    }
                } else if j < b.len() && b[j] != b'\n' {
                    j += 1;
                }
                let name = String::from_utf8_lossy(&b[i + 1..j]).into_owned();
                // `\\` separates meta-commands; its own arguments are none.
                let args_end = if name == "\\" {
                    j
                } else {
                    let mut k = j;
                    while k < b.len() && b[k] != b'\n' && b[k] != b'\\' {
                        k += 1;
                    }
                    k
                };
                let args = String::from_utf8_lossy(&b[j..args_end]).into_owned();
                step(&mut i, args_end, &mut line, &mut col);
                out.push(Lexed {
                    tok: Tok::Meta { name, args },
                    line: tl,
                    column: tc,
                });
            }
            _ if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                let mut j = i;
                while j < b.len()
                    && (b[j].is_ascii_alphanumeric()
                        || b[j] == b'_'
                        || b[j] == b'$'
                        || b[j] >= 0x80)
                {
                    j += 1;
                }
                let word = String::from_utf8_lossy(&b[i..j]).to_ascii_lowercase();
                // E'…': backslash escapes inside.
                if word == "e" && b.get(j) == Some(&b'\'') {
                    let k = string_end(b, j + 1, true);
                    step(&mut i, k, &mut line, &mut col);
                    out.push(Lexed {
                        tok: Tok::Str,
                        line: tl,
                        column: tc,
                    });
                    continue;
                }
                step(&mut i, j, &mut line, &mut col);
                out.push(Lexed {
                    tok: Tok::Word(word),
                    line: tl,
                    column: tc,
                });
            }
            b';' | b'(' | b')' | b',' => {
                let j = i + 1;
                step(&mut i, j, &mut line, &mut col);
                if c == b';' && copy_inline && copies_from_stdin(out) {
                    // `COPY … FROM STDIN;` in a script: its data follows,
                    // from the next line to a line `\.`; data, not SQL.
                    let nl = find_from(b, i, b"\n").map_or(b.len(), |k| k + 1);
                    let end = find_line(b, nl, b"\\.").unwrap_or(b.len());
                    step(&mut i, end, &mut line, &mut col);
                }
                out.push(Lexed {
                    tok: Tok::Punct(c as char),
                    line: tl,
                    column: tc,
                });
            }
            b'0'..=b'9' => {
                // A number (and `1e5`, `0x1F`): not a word.
                let mut j = i;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'.' || b[j] == b'_')
                {
                    j += 1;
                }
                step(&mut i, j, &mut line, &mut col);
            }
            _ => {
                let j = i + 1;
                step(&mut i, j, &mut line, &mut col)
            }
        }
    }
}

/// Whether the statement `out` ends with (since its last `;` or
/// meta-command) is `COPY … FROM STDIN`.
fn copies_from_stdin(out: &[Lexed]) -> bool {
    let start = out
        .iter()
        .rposition(|l| matches!(l.tok, Tok::Punct(';') | Tok::Meta { .. }))
        .map_or(0, |k| k + 1);
    let words: Vec<&str> = out[start..]
        .iter()
        .filter_map(|l| match &l.tok {
            Tok::Word(w) => Some(w.as_str()),
            _ => None,
        })
        .collect();
    words.first() == Some(&"copy") && words.windows(2).any(|w| w == ["from", "stdin"])
}

/// Where the first line at or after `from` that is exactly `line` starts.
fn find_line(b: &[u8], from: usize, line: &[u8]) -> Option<usize> {
    let mut k = from;
    while k < b.len() {
        let end = find_from(b, k, b"\n").unwrap_or(b.len());
        let text = &b[k..end];
        if text == line || text.strip_suffix(b"\r") == Some(line) {
            return Some(k);
        }
        k = end + 1;
    }
    None
}

/// Where `needle` starts at or after `from`.
fn find_from(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || from > b.len() {
        return None;
    }
    b[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

/// The index just past a string literal whose text starts at `from`
/// (`''` is a quote; with `escapes`, a backslash escapes the next byte).
fn string_end(b: &[u8], from: usize, escapes: bool) -> usize {
    let mut j = from;
    while j < b.len() {
        match b[j] {
            b'\\' if escapes => j += 2,
            b'\'' if b.get(j + 1) == Some(&b'\'') => j += 2,
            b'\'' => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// A dollar quote's opening tag at `i` (`$$` or `$tag$`): the index past it.
/// `$1` (a parameter) is none.
fn dollar_tag(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    if b.get(j).is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    while b
        .get(j)
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c >= 0x80)
    {
        j += 1;
    }
    (b.get(j) == Some(&b'$')).then_some(j + 1)
}

fn at(l: &Lexed, feature: impl Into<String>, what: &'static str) -> ScriptUse {
    ScriptUse {
        line: l.line,
        column: l.column,
        feature: feature.into(),
        what,
    }
}

/// Server functions that read, list or write the server's files
/// (PostgreSQL 15 "System Administration Functions", "Large Objects";
/// adminpack) or open connections to other servers (dblink).
const FILE_FUNCTIONS: &[&str] = &[
    "lo_import",
    "lo_export",
    "pg_read_file",
    "pg_read_binary_file",
    "pg_ls_dir",
    "pg_stat_file",
    "pg_ls_logdir",
    "pg_ls_waldir",
    "pg_ls_tmpdir",
    "pg_ls_archive_statusdir",
    "pg_ls_logicalsnapdir",
    "pg_ls_logicalmapdir",
    "pg_ls_replslotdir",
    "pg_file_write",
    "pg_file_rename",
    "pg_file_unlink",
    "pg_file_sync",
    "pg_logdir_ls",
];

/// Whether a `LANGUAGE` name is one that runs code outside the server's
/// sandbox: C and internal functions, and the untrusted procedural
/// languages (by convention named `pl…u`: plpython3u, plperlu, pltclu).
fn untrusted_language(name: &str) -> bool {
    name == "c" || name == "internal" || (name.starts_with("pl") && name.ends_with('u'))
}

/// The server-side features among `toks` (the SQL both generators send).
pub(super) fn sql_uses(toks: &[Lexed]) -> Vec<ScriptUse> {
    let mut out = Vec::new();
    let word = |k: usize| match toks.get(k).map(|l| &l.tok) {
        Some(Tok::Word(w)) => Some(w.as_str()),
        _ => None,
    };
    // The index of the first token of the statement `k` is in.
    let mut stmt_start = 0;
    for (k, l) in toks.iter().enumerate() {
        match &l.tok {
            Tok::Punct(';') | Tok::Meta { .. } => {
                stmt_start = k + 1;
                continue;
            }
            Tok::Word(_) => {}
            _ => continue,
        }
        let w = word(k).unwrap_or_default();
        // A statement's first word, also after PL/pgSQL's block words.
        let first = k == stmt_start
            || (k > 0 && matches!(word(k - 1), Some("begin" | "then" | "else" | "loop")));
        let next = word(k + 1);
        match w {
            "copy" if first => {
                // Up to the statement's end: PROGRAM, or TO/FROM a file name.
                let mut j = k + 1;
                while let Some(t) = toks.get(j) {
                    match &t.tok {
                        Tok::Punct(';') | Tok::Meta { .. } => break,
                        Tok::Word(x) if x == "program" => {
                            out.push(at(l, "COPY … PROGRAM", "runs a program on the server host"));
                            break;
                        }
                        Tok::Word(x)
                            if (x == "to" || x == "from")
                                && matches!(toks.get(j + 1).map(|t| &t.tok), Some(Tok::Str)) =>
                        {
                            out.push(at(
                                l,
                                format!("COPY … {} 'file'", x.to_uppercase()),
                                "reads or writes a file on the server host",
                            ));
                            break;
                        }
                        _ => {}
                    }
                    j += 1;
                }
            }
            "load" if first => out.push(at(l, "LOAD", "loads a shared library into the server")),
            "alter" if first && next == Some("system") => out.push(at(
                l,
                "ALTER SYSTEM",
                "changes the server's configuration (settings that run commands included)",
            )),
            "create" | "alter" | "import" if first => {
                let rest: Vec<&str> = (k + 1..k + 6).map_while(word).collect();
                let has = |w: &str| rest.iter().take(4).any(|x| *x == w);
                if w == "create" && rest.first() == Some(&"extension") {
                    out.push(at(l, "CREATE EXTENSION", "loads code into the server"));
                } else if w == "create" && rest.first() == Some(&"tablespace") {
                    out.push(at(
                        l,
                        "CREATE TABLESPACE",
                        "names a folder on the server host",
                    ));
                } else if rest.first() == Some(&"server")
                    || (has("foreign") && (has("wrapper") || has("schema")))
                {
                    let what = if rest.first() == Some(&"server") {
                        "SERVER"
                    } else {
                        "FOREIGN …"
                    };
                    out.push(at(
                        l,
                        format!("{} {what}", w.to_uppercase()),
                        "connects the server to other servers",
                    ));
                }
            }
            "language" => {
                if let Some(lang) = next.or_else(|| match toks.get(k + 1).map(|t| &t.tok) {
                    Some(Tok::Str) => Some("(a quoted name)"),
                    _ => None,
                }) {
                    if untrusted_language(lang) {
                        out.push(at(
                            l,
                            format!("LANGUAGE {lang}"),
                            "runs code outside the server's sandbox (an untrusted language)",
                        ));
                    }
                }
            }
            "postgres_fdw" | "dblink_fdw" | "file_fdw" => out.push(at(
                l,
                w.to_string(),
                "connects the server to other servers or files",
            )),
            _ if w.starts_with("dblink")
                && matches!(toks.get(k + 1).map(|t| &t.tok), Some(Tok::Punct('('))) =>
            {
                out.push(at(
                    l,
                    format!("{w}()"),
                    "connects the server to other servers",
                ))
            }
            _ if FILE_FUNCTIONS.contains(&w) => out.push(at(
                l,
                format!("{w}()"),
                "reads or writes a file on the server host",
            )),
            _ => {}
        }
    }
    out
}

/// A meta-command's argument that psql would give to the shell (text in
/// backquotes, "taken as a command line that is passed to the shell",
/// psql(1) "Meta-Commands").
pub(super) fn backquoted(l: &Lexed, args: &str) -> Option<ScriptUse> {
    args.contains('`').then(|| {
        at(
            l,
            "`…` in a meta-command's argument",
            "runs a shell command on the host",
        )
    })
}

/// A use found by a generator's own meta-command table.
pub(super) fn meta_use(l: &Lexed, name: &str, what: &'static str) -> ScriptUse {
    at(l, format!("\\{name}"), what)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(text: &str) -> Vec<(usize, String)> {
        sql_uses(&lex(text, CopyData::Inline))
            .into_iter()
            .map(|u| (u.line, u.feature))
            .collect()
    }

    #[test]
    fn server_side_features_are_found_outside_comments_and_strings() {
        let text = "-- copy t to program 'x'\n\
                    /* load 'x' /* nested */ copy t from program 'x' */\n\
                    select 'copy t to program', \"lo_import\" from t;\n\
                    CoPy t TO PROGRAM 'gzip > /tmp/x';\n\
                    copy t from stdin;\n\
                    \\.\n\
                    copy (select 1) to '/tmp/f';\n\
                    select pg_read_file('/etc/passwd'), E'it\\'s lo_export';\n\
                    create function f() returns void as $body$ begin copy t to program 'x'; end $body$ language plpgsql;\n\
                    do $$ import os $$ language plpython3u;\n\
                    CREATE EXTENSION dblink; select dblink_exec('x', 'y');\n\
                    load 'auto_explain'; alter system set archive_command = 'x';\n\
                    create server s foreign data wrapper postgres_fdw;\n\
                    select $1, 1e5 as load;\n";
        let got = features(text);
        let want: Vec<(usize, &str)> = vec![
            (3, "lo_import()"),
            (4, "COPY … PROGRAM"),
            (7, "COPY … TO 'file'"),
            (8, "pg_read_file()"),
            (9, "COPY … PROGRAM"),
            (10, "LANGUAGE plpython3u"),
            (11, "CREATE EXTENSION"),
            (11, "dblink_exec()"),
            (12, "LOAD"),
            (12, "ALTER SYSTEM"),
            (13, "CREATE SERVER"),
            (13, "postgres_fdw"),
        ];
        let got: Vec<(usize, &str)> = got.iter().map(|(l, f)| (*l, f.as_str())).collect();
        assert_eq!(got, want);
        // Columns count characters.
        let u = sql_uses(&lex("select 'é', lo_import('/x');", CopyData::None));
        assert_eq!((u[0].line, u[0].column), (1, 13));
    }

    #[test]
    fn copy_from_stdin_data_is_not_read_as_sql() {
        let text = "copy t (a, b) from stdin;\n\
                    1\tit's lo_import\n\
                    2\t\\N\n\
                    \\.\n\
                    select lo_export(1, '/x');\n";
        assert_eq!(features(text), vec![(5, "lo_export()".to_string())]);
    }

    #[test]
    fn plain_sql_uses_nothing() {
        let text = "create table t (id int, program text, copy text);\n\
                    insert into t select g, 'x', 'y' from generate_series(1, 1000) g;\n\
                    create index on t (id);\n\
                    select count(*) from t where program = 'load';\n\
                    create function g() returns int language sql as $$ select 1 $$;\n\
                    vacuum analyze t;\n";
        assert_eq!(features(text), vec![]);
    }
}
