//! What the import tests share: importing text, and reading the result as
//! an fsmatrix inventory.
use std::collections::BTreeMap;
use std::path::Path;

use super::{import, ImportError, Imported};
use crate::config::{Host, Inventory};

pub(super) fn imp(name: &str, text: &str) -> Imported {
    match import(Path::new(name), text) {
        Ok(i) => i,
        Err(e) => panic!("{e}"),
    }
}

pub(super) fn imp_err(name: &str, text: &str) -> ImportError {
    match import(Path::new(name), text) {
        Ok(i) => panic!("imported, but should not have:\n{}", i.toml),
        Err(e) => e,
    }
}

/// The imported text with every host given a device, as a user would.
pub(super) fn filled(toml: &str) -> String {
    toml.replace("devices = []", "devices = [\"/dev/vdb\"]")
}

pub(super) fn parse_filled(i: &Imported) -> Inventory {
    match Inventory::parse(Path::new("/lab/imported.toml"), filled(&i.toml)) {
        Ok(inv) => inv,
        Err(e) => panic!("{e}\n{}", i.toml),
    }
}

pub(super) fn by_name(inv: &Inventory) -> BTreeMap<String, &Host> {
    inv.hosts.iter().map(|h| (h.name.to_string(), h)).collect()
}

pub(super) fn tags(h: &Host) -> Vec<String> {
    h.tags.iter().map(|t| t.to_string()).collect()
}

/// The text from the first `[[host]]` on (the header names the file).
pub(super) fn body(toml: &str) -> &str {
    &toml[toml.find("[[host]]").expect("a host")..]
}

pub(super) fn warned(i: &Imported, what: &str) -> bool {
    i.warnings.iter().any(|w| w.contains(what))
}
