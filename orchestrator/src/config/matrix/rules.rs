//! `[[include]]` and `[[exclude]]` rules and the `[hosts]` filter; the host
//! names and tags they mention are kept for the check against the
//! inventory.
use serde_spanned::Spanned;
use toml::de::DeValue;

use super::types::{FsType, HostFilter, RefKind, Rule};
use crate::config::error::{ConfigError, Errors, Source};
use crate::config::os::Os;
use crate::config::walk::{int_value, str_list_value, tables, type_name, Tbl, Val};

const RULE_KEYS: &[&str] = &[
    "host",
    "host_os",
    "host_tag",
    "filesystem",
    "fs_type",
    "workload",
    "clients",
];

pub(super) struct Names<'a> {
    pub(super) fs: &'a [String],
    pub(super) wl: &'a [String],
}

/// A rule value: a scalar or an array of them, each with its span.
fn rule_values(errs: &mut Errors<'_>, v: &Val<'_>, what: &str) -> Vec<Spanned<String>> {
    match v.get_ref() {
        DeValue::Array(_) => str_list_value(errs, v, what).unwrap_or_default(),
        DeValue::String(s) => vec![Spanned::new(v.span(), s.to_string())],
        other => {
            errs.push(
                &v.span(),
                format!(
                    "{what} must be a string or an array of strings, found {}",
                    type_name(other)
                ),
            );
            Vec::new()
        }
    }
}

fn or_none(names: &[String]) -> String {
    if names.is_empty() {
        "(none defined)".to_string()
    } else {
        names.join(", ")
    }
}

fn reference(src: &Source, kind: RefKind, s: &Spanned<String>) -> (RefKind, String, ConfigError) {
    (
        kind,
        s.get_ref().clone(),
        src.error(&s.span(), String::new()),
    )
}

pub(super) fn rules(
    src: &Source,
    errs: &mut Errors<'_>,
    root: &Tbl<'_, '_>,
    key: &str,
    names: &Names<'_>,
    refs: &mut Vec<(RefKind, String, ConfigError)>,
) -> Vec<Rule> {
    let Some(v) = root.get(key) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (t, span) in tables(errs, v, key) {
        let ctx = format!("an `{key}` rule");
        let r = Tbl {
            t,
            span: &span,
            ctx: &ctx,
        };
        r.check_keys(errs, RULE_KEYS);
        if t.is_empty() {
            errs.push(
                &span,
                format!(
                    "{ctx} is empty; give at least one of {}",
                    RULE_KEYS.join(", ")
                ),
            );
            continue;
        }
        let mut rule = Rule::default();
        for (k, val) in t.iter() {
            let what = format!("`{}` in {ctx}", k.get_ref());
            match k.get_ref().as_ref() {
                "host" => {
                    for s in rule_values(errs, val, &what) {
                        refs.push(reference(src, RefKind::Host, &s));
                        rule.host.push(s.into_inner());
                    }
                }
                "host_tag" => {
                    for s in rule_values(errs, val, &what) {
                        refs.push(reference(src, RefKind::Tag, &s));
                        rule.host_tag.push(s.into_inner());
                    }
                }
                "host_os" => {
                    for s in rule_values(errs, val, &what) {
                        match Os::parse(s.get_ref()) {
                            Some(o) => rule.host_os.push(o),
                            None => errs.push(
                                &s.span(),
                                format!(
                                    "unknown os `{}` in {ctx}; valid: {}",
                                    s.get_ref(),
                                    Os::names(", ")
                                ),
                            ),
                        }
                    }
                }
                "fs_type" => {
                    for s in rule_values(errs, val, &what) {
                        match FsType::parse(s.get_ref()) {
                            Some(o) => rule.fs_type.push(o),
                            None => errs.push(
                                &s.span(),
                                format!(
                                    "unknown filesystem type `{}` in {ctx}; valid: ext3, ext4, xfs, btrfs, zfs, ufs, hammer, hammer2",
                                    s.get_ref()
                                ),
                            ),
                        }
                    }
                }
                "filesystem" => {
                    for s in rule_values(errs, val, &what) {
                        if !names.fs.contains(s.get_ref()) {
                            errs.push(
                                &s.span(),
                                format!(
                                    "{ctx} names filesystem `{}`, which the matrix does not define; valid: {}",
                                    s.get_ref(),
                                    or_none(names.fs)
                                ),
                            );
                        }
                        rule.filesystem.push(s.into_inner());
                    }
                }
                "workload" => {
                    for s in rule_values(errs, val, &what) {
                        if !names.wl.contains(s.get_ref()) {
                            errs.push(
                                &s.span(),
                                format!(
                                    "{ctx} names workload `{}`, which the matrix does not define; valid: {}",
                                    s.get_ref(),
                                    or_none(names.wl)
                                ),
                            );
                        }
                        rule.workload.push(s.into_inner());
                    }
                }
                "clients" => match val.get_ref() {
                    DeValue::Array(a) => {
                        for item in a.iter() {
                            if let Some(n) = int_value(
                                errs,
                                item,
                                &format!("a client count in {ctx}"),
                                1,
                                10_000,
                            ) {
                                rule.clients.push(*n.get_ref() as u32);
                            }
                        }
                    }
                    _ => {
                        if let Some(n) = int_value(errs, val, &what, 1, 10_000) {
                            rule.clients.push(*n.get_ref() as u32);
                        }
                    }
                },
                _ => {}
            }
        }
        if key == "include" && rule.clients.is_empty() && r.get("clients").is_none() {
            errs.push(
                &span,
                "an `include` rule adds client counts to the combinations it matches: give `clients`; to restrict cells use `exclude` or `hosts`",
            );
            continue;
        }
        out.push(rule);
    }
    out
}

pub(super) fn host_filter(
    src: &Source,
    errs: &mut Errors<'_>,
    v: &Val<'_>,
    refs: &mut Vec<(RefKind, String, ConfigError)>,
) -> HostFilter {
    let DeValue::Table(t) = v.get_ref() else {
        return HostFilter::default();
    };
    let span = v.span();
    let h = Tbl {
        t,
        span: &span,
        ctx: "[hosts]",
    };
    h.check_keys(errs, &["names", "tags", "os"]);
    let mut f = HostFilter::default();
    for s in h.str_list(errs, "names").unwrap_or_default() {
        refs.push(reference(src, RefKind::Host, &s));
        f.names.push(s.into_inner());
    }
    for s in h.str_list(errs, "tags").unwrap_or_default() {
        refs.push(reference(src, RefKind::Tag, &s));
        f.tags.push(s.into_inner());
    }
    for s in h.str_list(errs, "os").unwrap_or_default() {
        match Os::parse(s.get_ref()) {
            Some(o) => f.os.push(o),
            None => errs.push(
                &s.span(),
                format!(
                    "unknown os `{}` in [hosts]; valid: {}",
                    s.get_ref(),
                    Os::names(", ")
                ),
            ),
        }
    }
    f
}
