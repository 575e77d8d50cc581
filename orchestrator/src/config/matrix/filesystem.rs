//! A `[[filesystem]]` entry and its `vary`: one variant per combination of
//! the vary values, each option, property and setting checked after
//! substitution.
use std::ops::Range;

use serde_spanned::Spanned;
use toml::de::{DeTable, DeValue};

use super::postgres::settings;
use super::types::{FsType, FsVariant, Guarded, ZfsProperty};
use crate::config::error::Errors;
use crate::config::fsopts::{check_mkfs, check_mount};
use crate::config::values::{
    check_vary_value, Label, MkfsOption, MountOption, ZfsPropertyName, ZfsPropertyValue,
};
use crate::config::walk::{scalar_string, tables, type_name, Tbl, Val};

const FS_KEYS: &[&str] = &[
    "name",
    "type",
    "mkfs_options",
    "mount_options",
    "properties",
    "pool_properties",
    "postgres",
    "vary",
];

/// At most this many variants from one `[[filesystem]]`'s `vary`.
pub const MAX_VARIANTS_PER_ENTRY: usize = 1000;

/// The HAMMER2 compression a variant may ask for: `hammer2 setcomp`'s
/// algorithms (DragonFly sbin/hammer2/cmd_setcomp.c, hammer2(8)): none,
/// autozero, lz4 (newfs_hammer2's default), zlib, zlib:6 to zlib:9.
pub const HAMMER2_COMPRESSION: &[&str] = &[
    "none", "autozero", "lz4", "zlib", "zlib:6", "zlib:7", "zlib:8", "zlib:9",
];

/// One validator for a hammer2 `properties` entry.
pub fn check_hammer2_property(name: &str, value: &str) -> Result<(), String> {
    if name != "compression" {
        return Err(format!(
            "hammer2 property `{name}` is unknown: hammer2 takes only `compression` \
             (hammer2 setcomp: {})",
            HAMMER2_COMPRESSION.join(", ")
        ));
    }
    if !HAMMER2_COMPRESSION.contains(&value) {
        return Err(format!(
            "hammer2 compression `{value}` is not one of {}",
            HAMMER2_COMPRESSION.join(", ")
        ));
    }
    Ok(())
}

fn zfs_props(
    errs: &mut Errors<'_>,
    v: &Val<'_>,
    ctx: &str,
    vars: &[(String, String)],
) -> Vec<ZfsProperty> {
    let DeValue::Table(t) = v.get_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, val) in t.iter() {
        let name = match ZfsPropertyName::new(k.get_ref()) {
            Ok(n) => n,
            Err(e) => {
                errs.push(&k.span(), e.0);
                continue;
            }
        };
        let Some(raw) = scalar_string(val.get_ref()) else {
            errs.push(
                &val.span(),
                format!(
                    "property `{name}` in {ctx} must be a string or a number, found {}",
                    type_name(val.get_ref())
                ),
            );
            continue;
        };
        let Some(s) = subst(errs, &raw, &val.span(), vars) else {
            continue;
        };
        match ZfsPropertyValue::new(&s) {
            Ok(value) => out.push(ZfsProperty { name, value }),
            Err(e) => errs.push(&val.span(), e.0),
        }
    }
    out
}

/// Replace `{key}` with the vary value; an unknown key or a lone brace is an error.
pub(super) fn subst(
    errs: &mut Errors<'_>,
    template: &str,
    span: &Range<usize>,
    vars: &[(String, String)],
) -> Option<String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            errs.push(
                span,
                format!("`{template}` has a `{{` without `}}`; write {{key}} with a key of `vary`"),
            );
            return None;
        };
        let key = &after[..close];
        match vars.iter().find(|(k, _)| k == key) {
            Some((_, v)) => out.push_str(v),
            None => {
                let keys: Vec<&str> = vars.iter().map(|(k, _)| k.as_str()).collect();
                errs.push(
                    span,
                    format!(
                        "`{{{key}}}` in `{template}` is not a key of `vary`; valid: {}",
                        if keys.is_empty() {
                            "(no vary table here)".to_string()
                        } else {
                            keys.join(", ")
                        }
                    ),
                );
                return None;
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Some(out)
}

fn uses(template: &str, key: &str) -> bool {
    template.contains(&format!("{{{key}}}"))
}

/// Every `[[filesystem]]`'s variants, with where each entry is; a variant
/// name given twice is an error at the later entry.
pub(super) fn filesystems(
    errs: &mut Errors<'_>,
    root: &Tbl<'_, '_>,
    guarded: &mut Vec<Guarded>,
) -> Vec<(FsVariant, Range<usize>)> {
    let mut filesystems: Vec<(FsVariant, Range<usize>)> = Vec::new();
    match root.get("filesystem") {
        Some(v) => {
            for (t, span) in tables(errs, v, "filesystem") {
                filesystems.extend(filesystem(errs, t, &span, guarded));
            }
        }
        None => errs.push(
            &(0..0),
            "the matrix has no [[filesystem]]; add at least one with name and type",
        ),
    }
    for i in 0..filesystems.len() {
        let (f, span) = &filesystems[i];
        if filesystems[..i].iter().any(|(g, _)| g.name == f.name) {
            errs.push(
                span,
                format!(
                    "duplicate filesystem variant name `{}`; give every [[filesystem]] (and every vary value, via {{key}} in the name) its own name",
                    f.name
                ),
            );
        }
    }
    filesystems
}

/// One [[filesystem]] entry → its variants (one per vary combination).
fn filesystem(
    errs: &mut Errors<'_>,
    t: &DeTable<'_>,
    span: &Range<usize>,
    guarded: &mut Vec<Guarded>,
) -> Vec<(FsVariant, Range<usize>)> {
    let label = t
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == "name")
        .and_then(|(_, v)| v.get_ref().as_str().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    let ctx = format!("[[filesystem]] `{label}`");
    let f = Tbl { t, span, ctx: &ctx };
    f.check_keys(errs, FS_KEYS);
    let before = errs.list.len();
    let name_t = match f.get("name") {
        Some(_) => f.str(errs, "name"),
        None => {
            errs.push(span, format!("{ctx} has no `name`"));
            None
        }
    };
    let fs_type = match f.get("type") {
        Some(_) => f.str(errs, "type").and_then(|s| match FsType::parse(s.get_ref()) {
            Some(t) => Some(t),
            None => {
                errs.push(
                    &s.span(),
                    format!(
                        "unknown filesystem type `{}` in {ctx}; valid: ext3, ext4, xfs, btrfs, zfs, ufs, hammer, hammer2",
                        s.get_ref()
                    ),
                );
                None
            }
        }),
        None => {
            errs.push(
                span,
                format!("{ctx} has no `type` (ext3, ext4, xfs, btrfs, zfs, ufs, hammer, hammer2)"),
            );
            None
        }
    };
    let mkfs_t = f.str_list(errs, "mkfs_options").unwrap_or_default();
    let mount_t = f.str_list(errs, "mount_options").unwrap_or_default();
    let props_v = f.table(errs, "properties");
    let pool_v = f.table(errs, "pool_properties");
    let pg_v = f.table(errs, "postgres");
    if let Some(ft) = fs_type {
        if ft != FsType::Zfs {
            for key in ["properties", "pool_properties"] {
                // HAMMER2 has one property of its own: compression (hammer2 setcomp).
                if ft == FsType::Hammer2 && key == "properties" {
                    continue;
                }
                if let Some(v) = f.get(key) {
                    errs.push(
                        &v.span(),
                        format!(
                            "`{key}` are ZFS properties but {ctx} is {}; use mount_options and mkfs_options",
                            ft.as_str()
                        ),
                    );
                }
            }
        }
    }

    // vary: key -> values, combined in key order (first key varies slowest).
    let axes = vary_axes(errs, &f, &ctx);
    if errs.list.len() > before {
        return Vec::new();
    }
    let (Some(name_t), Some(fs_type)) = (name_t, fs_type) else {
        return Vec::new();
    };
    // Which vary keys are used by a template other than the name?
    let mut templates: Vec<Spanned<String>> = Vec::new();
    templates.extend(mkfs_t.iter().cloned());
    templates.extend(mount_t.iter().cloned());
    for v in [props_v, pool_v, pg_v].into_iter().flatten() {
        if let DeValue::Table(t) = v.get_ref() {
            templates.extend(
                t.values()
                    .filter_map(|v| scalar_string(v.get_ref()).map(|s| Spanned::new(v.span(), s))),
            );
        }
    }
    // Every {placeholder} must be a vary key (reported once, at its template).
    let no_values: Vec<(String, String)> = axes
        .iter()
        .map(|(k, _)| (k.get_ref().clone(), String::new()))
        .collect();
    for t in templates.iter().chain(std::iter::once(&name_t)) {
        subst(errs, t.get_ref(), &t.span(), &no_values);
    }
    if errs.list.len() > before {
        return Vec::new();
    }
    let templates: Vec<String> = templates.into_iter().map(|s| s.into_inner()).collect();
    let mut implicit_props: Vec<&Spanned<String>> = Vec::new();
    for (key, _) in &axes {
        if templates.iter().any(|t| uses(t, key.get_ref())) {
            continue;
        }
        if fs_type == FsType::Zfs {
            implicit_props.push(key);
        } else {
            errs.push(
                &key.span(),
                format!(
                    "vary `{}` in {ctx} changes nothing: put `{{{}}}` in a mount option, mkfs option or postgres setting (only on zfs does a vary key name a property by itself)",
                    key.get_ref(),
                    key.get_ref()
                ),
            );
        }
    }
    for (key, _) in &axes {
        if !uses(name_t.get_ref(), key.get_ref()) && axes.iter().any(|a| a.1.len() > 1) {
            errs.push(
                &name_t.span(),
                format!(
                    "the name `{}` of {ctx} does not contain `{{{}}}`: its variants would share a name",
                    name_t.get_ref(),
                    key.get_ref()
                ),
            );
        }
    }
    if errs.list.len() > before {
        return Vec::new();
    }

    let Some(combos) = combinations(errs, &axes, &ctx) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for vars in combos {
        let n0 = errs.list.len();
        let name = subst(errs, name_t.get_ref(), &name_t.span(), &vars).and_then(|n| {
            match Label::new(&n) {
                Ok(l) => Some(l),
                Err(e) => {
                    errs.push(&name_t.span(), e.0);
                    None
                }
            }
        });
        let mkfs = mkfs_options(errs, fs_type, &mkfs_t, &vars);
        let mount = mount_options(errs, fs_type, &mount_t, &vars);
        let props = properties(errs, fs_type, props_v, &implicit_props, &ctx, span, &vars);
        let mut pool = pool_v
            .map(|v| zfs_props(errs, v, &ctx, &vars))
            .unwrap_or_default();
        pool.sort();
        let mut g = Vec::new();
        let pg = pg_v
            .map(|v| settings(errs, v, &ctx, &vars, &mut g))
            .unwrap_or_default();
        if errs.list.len() > n0 {
            continue;
        }
        if let Some(name) = name {
            guarded.extend(g.into_iter().map(|(setting, class, at)| Guarded {
                setting,
                class,
                variant: Some(name.clone()),
                at,
            }));
            out.push((
                FsVariant {
                    name,
                    fs_type,
                    mkfs_options: mkfs,
                    mount_options: mount,
                    properties: props,
                    pool_properties: pool,
                    postgres: pg,
                    varied: vars,
                },
                span.clone(),
            ));
        }
    }
    out
}

/// `vary`: each key's values, in key order (the first key varies slowest
/// in [`combinations`]).
fn vary_axes(
    errs: &mut Errors<'_>,
    f: &Tbl<'_, '_>,
    ctx: &str,
) -> Vec<(Spanned<String>, Vec<String>)> {
    let mut axes: Vec<(Spanned<String>, Vec<String>)> = Vec::new();
    if let Some(v) = f.table(errs, "vary") {
        if let DeValue::Table(vt) = v.get_ref() {
            for (k, vals) in vt.iter() {
                let key: String = k.get_ref().to_string();
                if let Err(e) = ZfsPropertyName::new(&key) {
                    errs.push(&k.span(), format!("vary key: {}", e.0));
                    continue;
                }
                let DeValue::Array(a) = vals.get_ref() else {
                    errs.push(
                        &vals.span(),
                        format!(
                            "vary `{key}` in {ctx} must be an array of values, found {}",
                            type_name(vals.get_ref())
                        ),
                    );
                    continue;
                };
                if a.is_empty() {
                    errs.push(
                        &vals.span(),
                        format!("vary `{key}` in {ctx} is empty; give at least one value"),
                    );
                    continue;
                }
                let mut values = Vec::new();
                for item in a.iter() {
                    match scalar_string(item.get_ref()) {
                        Some(s) => match check_vary_value(&s) {
                            Ok(()) => {
                                if values.contains(&s) {
                                    errs.push(
                                        &item.span(),
                                        format!("vary `{key}` lists `{s}` twice; list each value once"),
                                    );
                                }
                                values.push(s)
                            }
                            Err(e) => errs.push(&item.span(), e.0),
                        },
                        None => errs.push(
                            &item.span(),
                            format!(
                                "every vary value must be a string, a number or a boolean, found {}",
                                type_name(item.get_ref())
                            ),
                        ),
                    }
                }
                axes.push((Spanned::new(k.span(), key), values));
            }
        }
    }
    axes
}

/// Every combination of the vary values, first key slowest; `None` (an
/// error says so) when there would be more than [`MAX_VARIANTS_PER_ENTRY`].
fn combinations(
    errs: &mut Errors<'_>,
    axes: &[(Spanned<String>, Vec<String>)],
    ctx: &str,
) -> Option<Vec<Vec<(String, String)>>> {
    let variants = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.1.len()))
        .filter(|n| *n <= MAX_VARIANTS_PER_ENTRY);
    if variants.is_none() {
        let sizes: Vec<String> = axes.iter().map(|a| a.1.len().to_string()).collect();
        errs.push(
            &axes[0].0.span(),
            format!(
                "vary in {ctx} makes {} variants; at most {MAX_VARIANTS_PER_ENTRY} per [[filesystem]] (give fewer values, or split it into several entries)",
                sizes.join(" × ")
            ),
        );
        return None;
    }
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (key, values) in axes {
        let mut next = Vec::new();
        for c in &combos {
            for v in values {
                let mut c = c.clone();
                c.push((key.get_ref().clone(), v.clone()));
                next.push(c);
            }
        }
        combos = next;
    }
    Some(combos)
}

/// `mkfs_options` of one variant, after vary substitution, allow-listed per
/// type (see fsopts.rs).
fn mkfs_options(
    errs: &mut Errors<'_>,
    fs_type: FsType,
    mkfs_t: &[Spanned<String>],
    vars: &[(String, String)],
) -> Vec<MkfsOption> {
    let mut mkfs = Vec::new();
    for s in mkfs_t {
        if let Some(x) = subst(errs, s.get_ref(), &s.span(), vars) {
            match MkfsOption::new(&x) {
                Ok(o) => mkfs.push(o),
                Err(e) => errs.push(&s.span(), e.0),
            }
        }
    }
    // Allow-listed per type, after vary substitution (see fsopts.rs).
    if mkfs.len() == mkfs_t.len() {
        if let Err((i, e)) = check_mkfs(fs_type, &mkfs) {
            errs.push(&mkfs_t[i].span(), e);
        }
    }
    mkfs
}

/// `mount_options` of one variant, after vary substitution, allow-listed
/// per type.
fn mount_options(
    errs: &mut Errors<'_>,
    fs_type: FsType,
    mount_t: &[Spanned<String>],
    vars: &[(String, String)],
) -> Vec<MountOption> {
    let mut mount = Vec::new();
    for s in mount_t {
        if let Some(x) = subst(errs, s.get_ref(), &s.span(), vars) {
            match MountOption::new(&x).and_then(|o| {
                check_mount(fs_type, &o)
                    .map(|()| o)
                    .map_err(crate::config::values::ValueError)
            }) {
                Ok(o) => mount.push(o),
                Err(e) => errs.push(&s.span(), e.0),
            }
        }
    }
    mount
}

/// `properties` of one variant, with the vary keys that name a ZFS
/// property by themselves; HAMMER2 takes only its compression.
fn properties(
    errs: &mut Errors<'_>,
    fs_type: FsType,
    props_v: Option<&Val<'_>>,
    implicit_props: &[&Spanned<String>],
    ctx: &str,
    span: &Range<usize>,
    vars: &[(String, String)],
) -> Vec<ZfsProperty> {
    let mut props = props_v
        .map(|v| zfs_props(errs, v, ctx, vars))
        .unwrap_or_default();
    for key in implicit_props {
        let value = vars
            .iter()
            .find(|(k, _)| k == key.get_ref())
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        match (
            ZfsPropertyName::new(key.get_ref()),
            ZfsPropertyValue::new(&value),
        ) {
            (Ok(name), Ok(value)) => {
                props.retain(|p| p.name != name);
                props.push(ZfsProperty { name, value });
            }
            (Err(e), _) | (_, Err(e)) => errs.push(&key.span(), e.0),
        }
    }
    props.sort();
    if fs_type == FsType::Hammer2 {
        let at = props_v.map(|v| v.span()).unwrap_or_else(|| span.clone());
        for p in &props {
            if let Err(e) = check_hammer2_property(p.name.as_str(), p.value.as_str()) {
                errs.push(&at, format!("{e} (in {ctx})"));
            }
        }
    }
    props
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

    #[test]
    fn vary_expands_in_key_order_and_interpolates() {
        let m = parse(&format!(
            "name = \"m\"\n{WL}[[filesystem]]\nname = \"b-{{compress}}-{{commit}}\"\ntype = \"btrfs\"\nmount_options = [\"compress={{compress}}\", \"commit={{commit}}\"]\npostgres = {{ wal_compression = \"{{compress}}\" }}\nvary = {{ compress = [\"zstd\", \"lzo\"], commit = [5, 30] }}\n[[filesystem]]\nname = \"z-{{recordsize}}\"\ntype = \"zfs\"\nproperties = {{ atime = \"off\" }}\nvary = {{ recordsize = [\"8k\", \"128k\"] }}\n"
        ));
        let m = match m {
            Ok(m) => m,
            Err(e) => panic!("{e}"),
        };
        let got: Vec<String> = m
            .filesystems
            .iter()
            .map(|f| {
                format!(
                    "{} mount={:?} props={:?} pg={:?}",
                    f.name,
                    f.mount_options
                        .iter()
                        .map(|o| o.as_str())
                        .collect::<Vec<_>>(),
                    f.properties
                        .iter()
                        .map(|p| format!("{}={}", p.name, p.value))
                        .collect::<Vec<_>>(),
                    f.postgres
                        .iter()
                        .map(|p| format!("{}={}", p.name, p.value))
                        .collect::<Vec<_>>()
                )
            })
            .collect();
        // Keys in sorted order (commit before compress): commit varies slowest.
        assert_eq!(
            got,
            [
                "b-zstd-5 mount=[\"compress=zstd\", \"commit=5\"] props=[] pg=[\"wal_compression=zstd\"]",
                "b-lzo-5 mount=[\"compress=lzo\", \"commit=5\"] props=[] pg=[\"wal_compression=lzo\"]",
                "b-zstd-30 mount=[\"compress=zstd\", \"commit=30\"] props=[] pg=[\"wal_compression=zstd\"]",
                "b-lzo-30 mount=[\"compress=lzo\", \"commit=30\"] props=[] pg=[\"wal_compression=lzo\"]",
                "z-8k mount=[] props=[\"atime=off\", \"recordsize=8k\"] pg=[]",
                "z-128k mount=[] props=[\"atime=off\", \"recordsize=128k\"] pg=[]",
            ]
        );
    }

    #[test]
    fn hammer2_takes_only_its_compression_as_a_property() {
        let m = parse(&format!(
            "name = \"m\"\n{WL}[[filesystem]]\nname = \"h-{{c}}\"\ntype = \"hammer2\"\nproperties = {{ compression = \"zlib:{{c}}\" }}\nvary = {{ c = [6, 9] }}\n"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<String> = m
            .filesystems
            .iter()
            .map(|f| format!("{}={}", f.name.as_str(), f.properties[0].value.as_str()))
            .collect();
        assert_eq!(got, ["h-6=zlib:6", "h-9=zlib:9"]);
        for (props, want) in [
            (
                "properties = { compression = \"zstd\" }",
                "is not one of none, autozero, lz4",
            ),
            ("properties = { recordsize = \"8k\" }", "only `compression`"),
            (
                "pool_properties = { ashift = \"12\" }",
                "are ZFS properties",
            ),
        ] {
            let e = parse(&format!(
                "name = \"m\"\n{WL}[[filesystem]]\nname = \"h\"\ntype = \"hammer2\"\n{props}\n"
            ));
            let Err(e) = e else {
                panic!("{props}: accepted")
            };
            assert!(e.to_string().contains(want), "{props}: {e}");
        }
        // Other types still refuse `properties`.
        let e = parse(&format!(
            "name = \"m\"\n{WL}[[filesystem]]\nname = \"h\"\ntype = \"hammer\"\nproperties = {{ compression = \"lz4\" }}\n"
        ));
        assert!(e.is_err_and(|e| e.to_string().contains("are ZFS properties")));
    }

    #[test]
    fn numbers_keep_their_value_and_paths_are_not_zfs_properties() {
        let m = parse(&format!(
            "name = \"m\"\n{WL}[postgres]\nmax_connections = 0x20\nwork_mem = 0o10\n[[filesystem]]\nname = \"b\"\ntype = \"btrfs\"\nmount_options = [\"commit={{c}}\"]\nvary = {{ c = [0b101] }}\n"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<(String, String)> = m
            .postgres
            .iter()
            .map(|s| (s.name.as_str().to_string(), s.value.as_str().to_string()))
            .collect();
        assert!(
            got.contains(&("max_connections".into(), "32".into())),
            "{got:?}"
        );
        assert!(got.contains(&("work_mem".into(), "8".into())), "{got:?}");
        assert_eq!(m.filesystems[0].mount_options[0].as_str(), "commit=5");
        for (props, where_) in [
            ("properties = { mountpoint = \"/etc\" }", "properties"),
            ("vary = { cachefile = [\"/etc/x\"] }", "vary"),
            ("pool_properties = { altroot = \"/\" }", "pool_properties"),
        ] {
            let e = parse(&format!(
                "name = \"m\"\n{WL}[[filesystem]]\nname = \"z\"\ntype = \"zfs\"\n{props}\n"
            ));
            let Err(e) = e else {
                panic!("{where_}: accepted a path-valued ZFS property")
            };
            assert!(e.to_string().contains("is refused"), "{where_}: {e}");
        }
    }

    #[test]
    fn a_vary_too_large_is_refused_before_it_is_built() {
        let vals = |n: usize| {
            (0..n)
                .map(|i| format!("\"v{i}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let e = parse(&format!(
            "name = \"m\"\n{WL}[[filesystem]]\nname = \"z-{{a}}-{{b}}\"\ntype = \"zfs\"\nvary = {{ a = [{}], b = [{}] }}\n",
            vals(40),
            vals(40)
        ));
        let Err(e) = e else {
            panic!("accepted 1600 variants")
        };
        assert!(
            e.to_string()
                .contains("makes 40 × 40 variants; at most 1000"),
            "{e}"
        );
    }

    #[test]
    fn duplicate_variant_names_across_entries() {
        let e = parse(&format!(
            "name = \"m\"\n{WL}[[filesystem]]\nname = \"z-on\"\ntype = \"zfs\"\n[[filesystem]]\nname = \"z-{{compression}}\"\ntype = \"zfs\"\nvary = {{ compression = [\"off\", \"on\"] }}\n"
        ));
        let Err(e) = e else {
            panic!("accepted duplicate names")
        };
        assert!(
            e.to_string()
                .contains("m.toml:11:1: error: duplicate filesystem variant name `z-on`"),
            "{e}"
        );
    }
}
