//! Reading a spanned TOML tree by hand, so that every problem (unknown key,
//! wrong type, bad value) is collected with its position instead of serde
//! stopping at the first.
use std::ops::Range;

use serde_spanned::Spanned;
use toml::de::{DeTable, DeValue};

use super::error::Errors;
use super::values::ValueError;

pub(crate) type Val<'i> = Spanned<DeValue<'i>>;

/// A table being read: remembers its span and what it is called in messages.
#[derive(Clone, Copy)]
pub(crate) struct Tbl<'a, 'i> {
    pub t: &'a DeTable<'i>,
    pub span: &'a Range<usize>,
    /// "[[host]] `lab1`", "[defaults]", "the matrix".
    pub ctx: &'a str,
}

pub(crate) fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

impl<'a, 'i> Tbl<'a, 'i> {
    pub fn get(&self, key: &str) -> Option<&'a Val<'i>> {
        self.t
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == key)
            .map(|(_, v)| v)
    }

    /// Report every key not in `allowed`.
    pub fn check_keys(&self, errs: &mut Errors<'_>, allowed: &[&str]) {
        for (k, _) in self.t.iter() {
            let name: &str = k.get_ref();
            if !allowed.contains(&name) {
                errs.push(
                    &k.span(),
                    format!(
                        "unknown key `{name}` in {}; valid keys: {}",
                        self.ctx,
                        allowed.join(", ")
                    ),
                );
            }
        }
    }

    pub fn str(&self, errs: &mut Errors<'_>, key: &str) -> Option<Spanned<String>> {
        let v = self.get(key)?;
        match v.get_ref() {
            DeValue::String(s) => Some(Spanned::new(v.span(), s.to_string())),
            other => {
                errs.push(
                    &v.span(),
                    format!(
                        "`{key}` in {} must be a string, found {}",
                        self.ctx,
                        type_name(other)
                    ),
                );
                None
            }
        }
    }

    pub fn bool(&self, errs: &mut Errors<'_>, key: &str) -> Option<bool> {
        let v = self.get(key)?;
        match v.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            other => {
                errs.push(
                    &v.span(),
                    format!(
                        "`{key}` in {} must be true or false, found {}",
                        self.ctx,
                        type_name(other)
                    ),
                );
                None
            }
        }
    }

    /// An integer in `min..=max`.
    pub fn int(
        &self,
        errs: &mut Errors<'_>,
        key: &str,
        min: i64,
        max: i64,
    ) -> Option<Spanned<i64>> {
        let v = self.get(key)?;
        int_value(errs, v, &format!("`{key}` in {}", self.ctx), min, max)
    }

    pub fn table(&self, errs: &mut Errors<'_>, key: &str) -> Option<&'a Val<'i>> {
        let v = self.get(key)?;
        match v.get_ref() {
            DeValue::Table(_) => Some(v),
            other => {
                errs.push(
                    &v.span(),
                    format!(
                        "`{key}` in {} must be a table, found {}",
                        self.ctx,
                        type_name(other)
                    ),
                );
                None
            }
        }
    }

    /// An array of strings, each with its span.
    pub fn str_list(&self, errs: &mut Errors<'_>, key: &str) -> Option<Vec<Spanned<String>>> {
        let v = self.get(key)?;
        let what = format!("`{key}` in {}", self.ctx);
        str_list_value(errs, v, &what)
    }

    /// A validated string.
    pub fn typed<T>(
        &self,
        errs: &mut Errors<'_>,
        key: &str,
        new: fn(&str) -> Result<T, ValueError>,
    ) -> Option<T> {
        let s = self.str(errs, key)?;
        validated(errs, &s, new)
    }

    /// A list of validated strings.
    pub fn typed_list<T>(
        &self,
        errs: &mut Errors<'_>,
        key: &str,
        new: fn(&str) -> Result<T, ValueError>,
    ) -> Option<Vec<Spanned<T>>> {
        let items = self.str_list(errs, key)?;
        Some(
            items
                .iter()
                .filter_map(|s| validated(errs, s, new).map(|t| Spanned::new(s.span(), t)))
                .collect(),
        )
    }
}

pub(crate) fn validated<T>(
    errs: &mut Errors<'_>,
    s: &Spanned<String>,
    new: fn(&str) -> Result<T, ValueError>,
) -> Option<T> {
    match new(s.get_ref()) {
        Ok(t) => Some(t),
        Err(e) => {
            errs.push(&s.span(), e.0);
            None
        }
    }
}

pub(crate) fn int_value(
    errs: &mut Errors<'_>,
    v: &Val<'_>,
    what: &str,
    min: i64,
    max: i64,
) -> Option<Spanned<i64>> {
    match v.get_ref() {
        DeValue::Integer(i) => {
            let parsed = i64::from_str_radix(&i.as_str().replace('_', ""), i.radix());
            match parsed {
                Ok(n) if (min..=max).contains(&n) => Some(Spanned::new(v.span(), n)),
                _ => {
                    errs.push(
                        &v.span(),
                        format!("{what} is {}; valid: {min}..={max}", i.as_str()),
                    );
                    None
                }
            }
        }
        other => {
            errs.push(
                &v.span(),
                format!(
                    "{what} must be an integer in {min}..={max}, found {}",
                    type_name(other)
                ),
            );
            None
        }
    }
}

pub(crate) fn str_list_value(
    errs: &mut Errors<'_>,
    v: &Val<'_>,
    what: &str,
) -> Option<Vec<Spanned<String>>> {
    match v.get_ref() {
        DeValue::Array(a) => {
            let mut out = Vec::new();
            for item in a.iter() {
                match item.get_ref() {
                    DeValue::String(s) => out.push(Spanned::new(item.span(), s.to_string())),
                    other => errs.push(
                        &item.span(),
                        format!(
                            "every entry of {what} must be a string, found {}",
                            type_name(other)
                        ),
                    ),
                }
            }
            Some(out)
        }
        other => {
            errs.push(
                &v.span(),
                format!(
                    "{what} must be an array of strings, found {}",
                    type_name(other)
                ),
            );
            None
        }
    }
}

/// A scalar as the string a setting or property would carry: strings as they
/// are, integers, floats and booleans in TOML spelling (`true` → `on` for
/// PostgreSQL is the caller's choice).
pub(crate) fn scalar_string(v: &DeValue<'_>) -> Option<String> {
    match v {
        DeValue::String(s) => Some(s.to_string()),
        // `0x20` is 32: the digits alone would say 20.
        DeValue::Integer(i) => {
            let digits = i.as_str().replace('_', "");
            if i.radix() == 10 {
                Some(digits)
            } else {
                u64::from_str_radix(&digits, i.radix())
                    .ok()
                    .map(|n| n.to_string())
            }
        }
        DeValue::Float(f) => Some(f.as_str().replace('_', "")),
        DeValue::Boolean(b) => Some(if *b { "on" } else { "off" }.to_string()),
        _ => None,
    }
}

/// The tables of an array of tables (`[[host]]`), reporting non-tables.
pub(crate) fn tables<'a, 'i>(
    errs: &mut Errors<'_>,
    v: &'a Val<'i>,
    what: &str,
) -> Vec<(&'a DeTable<'i>, Range<usize>)> {
    match v.get_ref() {
        DeValue::Array(a) => {
            let mut out = Vec::new();
            for item in a.iter() {
                match item.get_ref() {
                    DeValue::Table(t) => out.push((t, item.span())),
                    other => errs.push(
                        &item.span(),
                        format!("every {what} must be a table, found {}", type_name(other)),
                    ),
                }
            }
            out
        }
        other => {
            errs.push(
                &v.span(),
                format!(
                    "{what} must be an array of tables ([[{what}]]), found {}",
                    type_name(other)
                ),
            );
            Vec::new()
        }
    }
}
