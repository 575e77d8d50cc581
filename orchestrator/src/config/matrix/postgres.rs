//! A table of PostgreSQL settings: `[postgres]`, or a filesystem
//! variant's `postgres` (with its vary values substituted).
use std::collections::BTreeMap;

use toml::de::DeValue;

use super::filesystem::subst;
use super::types::{Guarded, PgSetting};
use crate::config::error::{ConfigError, Errors};
use crate::config::pgclass::{class_with_value, PgClass};
use crate::config::values::{PgSettingName, PgSettingValue};
use crate::config::walk::{scalar_string, type_name, Tbl, Val};

/// `[postgres]`: the settings of every cell; those of a [`PgClass`] go to
/// `guarded`.
pub(super) fn postgres_table(
    errs: &mut Errors<'_>,
    root: &Tbl<'_, '_>,
    guarded: &mut Vec<Guarded>,
) -> Vec<PgSetting> {
    match root.table(errs, "postgres") {
        Some(v) => {
            let mut g = Vec::new();
            let out = settings(errs, v, "[postgres]", &[], &mut g);
            guarded.extend(g.into_iter().map(|(setting, class, at)| Guarded {
                setting,
                class,
                variant: None,
                at,
            }));
            out
        }
        None => Vec::new(),
    }
}

/// A table of PostgreSQL settings; `vars` are substituted into `{key}`s.
/// Names are stored lowercased, as PostgreSQL compares them (guc.c
/// `guc_name_compare`), so that what plan accepts the host's script
/// accepts; settings of a [`PgClass`] are recorded in `guarded` with where
/// they are, for [`Matrix::check_against`].
pub(super) fn settings(
    errs: &mut Errors<'_>,
    v: &Val<'_>,
    ctx: &str,
    vars: &[(String, String)],
    guarded: &mut Vec<(String, PgClass, ConfigError)>,
) -> Vec<PgSetting> {
    let DeValue::Table(t) = v.get_ref() else {
        return Vec::new();
    };
    let mut out: BTreeMap<String, PgSetting> = BTreeMap::new();
    // Lowercased name → as written, to name both spellings of one setting.
    let mut spelled: BTreeMap<String, String> = BTreeMap::new();
    for (k, val) in t.iter() {
        let name = match PgSettingName::new(k.get_ref())
            .and_then(|_| PgSettingName::new(&k.get_ref().to_ascii_lowercase()))
        {
            Ok(n) => n,
            Err(e) => {
                errs.push(&k.span(), e.0);
                continue;
            }
        };
        let written: &str = k.get_ref().as_ref();
        if let Some(first) = spelled.insert(name.as_str().to_string(), written.to_string()) {
            errs.push(
                &k.span(),
                format!(
                    "settings `{first}` and `{written}` in {ctx} are one setting (PostgreSQL setting names are case-insensitive); set it once"
                ),
            );
            continue;
        }
        if name.as_str() == "settings" && val.get_ref().is_table() {
            errs.push(
                &val.span(),
                format!("put settings directly under [postgres] (e.g. shared_buffers = \"1GB\"), not in a `settings` table ({ctx})"),
            );
            continue;
        }
        let Some(raw) = scalar_string(val.get_ref()) else {
            errs.push(
                &val.span(),
                format!(
                    "setting `{name}` in {ctx} must be a string, a number or a boolean, found {}",
                    type_name(val.get_ref())
                ),
            );
            continue;
        };
        let Some(s) = subst(errs, &raw, &val.span(), vars) else {
            continue;
        };
        match PgSettingValue::new(&s) {
            Ok(value) => {
                let class = class_with_value(name.as_str(), value.as_str());
                if class == Some(PgClass::Fsmatrix) {
                    errs.push(
                        &k.span(),
                        format!(
                            "postgresql setting `{}` in {ctx} {}: fsmatrix writes it for every cluster \
                             (the port is the inventory's `pg_port`); remove it from the matrix",
                            k.get_ref().as_ref() as &str,
                            PgClass::Fsmatrix
                        ),
                    );
                    continue;
                }
                if let Some(class) = class {
                    guarded.push((
                        name.as_str().to_string(),
                        class,
                        errs.src.error(&k.span(), String::new()),
                    ));
                }
                out.insert(name.as_str().to_string(), PgSetting { name, value });
            }
            Err(e) => errs.push(&val.span(), e.0),
        }
    }
    out.into_values().collect()
}
