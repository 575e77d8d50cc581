//! Reading a finished bundle for a report: its cell records, its
//! checksums checked first, and the hosts that were stand-ins.  A bundle is
//! someone else's input here: what it may not hold is refused, and what is
//! read is bounded.
use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::bag::RESULTS_JSONL;
use super::manifest;
use super::verify::verify;
use super::writer::{parse_cell_result, read_results_jsonl};
use super::BundleError;
use crate::config::inventory::vm::{Accel, CacheMode, DiskBus};
use crate::model::CellResult;

/// The cell records of a bundle: `data/results.jsonl`, or, when that is
/// absent (a bundle closed before any cell finished writing it), every
/// `data/cells/*/result.json`.
pub fn load_bundle_results(dir: &Path) -> Result<Vec<CellResult>, BundleError> {
    let unsafe_ = manifest::unsafe_entries(dir);
    if !unsafe_.is_empty() {
        return Err(BundleError::NotABundle {
            path: dir.to_owned(),
            why: format!("it holds what a bundle may not: {}", unsafe_.join("; ")),
        });
    }
    let jsonl = dir.join("data").join(RESULTS_JSONL);
    if jsonl.is_file() {
        return read_results_jsonl(&jsonl);
    }
    let cells = dir.join("data").join("cells");
    if !dir.join("bagit.txt").is_file() {
        return Err(BundleError::NotABundle {
            path: dir.to_owned(),
            why: "it has no bagit.txt; give the bundle's top folder".into(),
        });
    }
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(&cells) else {
        return Ok(out);
    };
    let mut dirs: Vec<_> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
    dirs.sort();
    for d in dirs {
        let p = d.join("result.json");
        if !p.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&p).map_err(|e| BundleError::io("read", &p, e))?;
        let c = parse_cell_result(&text).map_err(|what| BundleError::Results {
            path: p.clone(),
            line: 1,
            what,
        })?;
        out.push(c);
    }
    Ok(out)
}

/// The most bytes of one host's `facts.json` read from a bundle.
pub const MAX_FACTS_BYTES: u64 = 1 << 20;

/// A host's `data/hosts/<host>/facts.json` in bundle `dir`, if it is there
/// and is JSON: `host` must be a valid host name (the inventory's rule; a
/// name from a bundle is someone else's input and would otherwise be a
/// path out of it), and only a regular file, not a link, of at most
/// [`MAX_FACTS_BYTES`] is read.  `Err` says why a name is refused.
pub fn host_facts(dir: &Path, host: &str) -> Result<Option<serde_json::Value>, String> {
    let name = crate::config::values::HostName::new(host).map_err(|e| e.to_string())?;
    let path = dir
        .join("data")
        .join("hosts")
        .join(name.as_str())
        .join("facts.json");
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_file() => {}
        _ => return Ok(None),
    }
    Ok(crate::files::read_regular(&path, MAX_FACTS_BYTES)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok()))
}

/// How a bundle's checksums stood when it was reported on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChecksumCheck {
    pub bundle: String,
    pub verified: bool,
    /// What `verify` found, when it did not verify.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// Verify `dir` as `fsmatrix verify` does (every sha256 of its manifests)
/// before reporting on it.  A bundle that does not verify is refused naming
/// it and each problem (the files); with `allow_unverified` it is kept, and
/// the check says it was not verified.
pub fn check_checksums(
    dir: &Path,
    name: &str,
    allow_unverified: bool,
) -> Result<ChecksumCheck, BundleError> {
    let r = verify(dir).map_err(|e| BundleError::NotABundle {
        path: dir.to_owned(),
        why: e.why,
    })?;
    let problems: Vec<String> = r.problems.iter().map(ToString::to_string).collect();
    if !problems.is_empty() && !allow_unverified {
        return Err(BundleError::NotVerified {
            path: dir.to_owned(),
            problems: problems.join("; "),
        });
    }
    Ok(ChecksumCheck {
        bundle: name.to_owned(),
        verified: problems.is_empty(),
        problems,
    })
}

/// The stand-in hosts of a bundle (docs/standin-hosts.md): host name → the
/// OS it was dressed as, from the `standin` key its facts recorded
/// (`data/hosts/<host>/facts.json`).  A bundle is untrusted input: only
/// regular files of at most 1 MiB are read, and only a lowercase OS name is
/// taken; anything else is no mark.
pub fn standin_hosts(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir.join("data").join("hosts")) else {
        return out;
    };
    for e in entries.flatten() {
        let facts = e.path().join("facts.json");
        let Ok(meta) = std::fs::symlink_metadata(&facts) else {
            continue;
        };
        if !meta.file_type().is_file() || meta.len() > 1 << 20 {
            continue;
        }
        let Ok(v) = std::fs::read(&facts)
            .map_err(|_| ())
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).map_err(|_| ()))
        else {
            continue;
        };
        if let Some(os) = v.get("standin").and_then(|o| o.as_str()) {
            if !os.is_empty() && os.len() <= 32 && os.bytes().all(|b| b.is_ascii_lowercase()) {
                out.insert(e.file_name().to_string_lossy().into_owned(), os.to_string());
            }
        }
    }
    out
}

/// The most bytes of a bundle's inventory snapshot read for its guests.
pub const MAX_INVENTORY_BYTES: u64 = 1 << 20;

/// A guest of a bundle's inventory: which physical host it ran on and how
/// its data disk was attached, what the platform comparison says of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GuestInfo {
    pub guest: String,
    /// The physical host (`guest_of`).
    pub physical: String,
    pub accel: Accel,
    pub bus: DiskBus,
    pub cache: CacheMode,
}

impl GuestInfo {
    /// Software emulation (the lab's guests): its numbers are a stand-in's.
    pub fn standin(&self) -> bool {
        self.accel == Accel::Tcg
    }
}

/// The guests of an inventory's text (`guest_of` and `[host.vm]` of each
/// `[[host]]`), with `[host.vm]`'s defaults for what it leaves out (bus
/// virtio-blk, cache none, accel kvm: `config::inventory::vm`).  The text
/// comes from a bundle, someone else's input: only valid host names and
/// known words are taken; an entry with anything else is left out (the
/// snapshot was validated when the sweep loaded it).
pub fn guests_of_inventory(text: &str) -> Vec<GuestInfo> {
    use crate::config::values::HostName;
    let Ok(doc) = toml::from_str::<toml::Table>(text) else {
        return Vec::new();
    };
    let Some(hosts) = doc.get("host").and_then(toml::Value::as_array) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for h in hosts.iter().filter_map(toml::Value::as_table) {
        let name = |key: &str| {
            h.get(key)
                .and_then(toml::Value::as_str)
                .and_then(|s| HostName::new(s).ok())
                .map(|n| n.as_str().to_owned())
        };
        let (Some(guest), Some(physical)) = (name("name"), name("guest_of")) else {
            continue;
        };
        let vm = h.get("vm").and_then(toml::Value::as_table);
        let word = |key: &str| vm.and_then(|v| v.get(key)).map(toml::Value::as_str);
        // A key that is there must be a known word; one left out is the default.
        let (Some(accel), Some(bus), Some(cache)) = (
            word("accel").map_or(Some(Accel::Kvm), |w| w.and_then(|w| Accel::parse(w).ok())),
            word("disk_bus").map_or(Some(DiskBus::VirtioBlk), |w| {
                w.and_then(|w| DiskBus::parse(w).ok())
            }),
            word("cache").map_or(Some(CacheMode::None), |w| {
                w.and_then(|w| CacheMode::parse(w).ok())
            }),
        ) else {
            continue;
        };
        if vm.is_none() || guest == physical || out.iter().any(|g: &GuestInfo| g.guest == guest) {
            continue;
        }
        out.push(GuestInfo {
            guest,
            physical,
            accel,
            bus,
            cache,
        });
    }
    out
}

/// The guests of bundle `dir`: those of its inventory snapshot
/// (`data/inventory.toml`, [`guests_of_inventory`]; a regular file, not a
/// link, of at most [`MAX_INVENTORY_BYTES`]), each marked TCG also when its
/// own facts say `accel=tcg` (what the guest was really started with).
pub fn guest_hosts(dir: &Path) -> Vec<GuestInfo> {
    let path = dir.join("data").join("inventory.toml");
    let Ok(bytes) = crate::files::read_regular_no_link(&path, MAX_INVENTORY_BYTES) else {
        return Vec::new();
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Vec::new();
    };
    let mut guests = guests_of_inventory(&text);
    for g in &mut guests {
        let facts = host_facts(dir, &g.guest).ok().flatten();
        if facts
            .as_ref()
            .and_then(|f| f.get("accel"))
            .and_then(|a| a.as_str())
            == Some("tcg")
        {
            g.accel = Accel::Tcg;
        }
    }
    guests
}

/// Every host's facts of bundle `dir` (`data/hosts/<host>/facts.json`,
/// read as [`host_facts`] reads one): host → key → value, the text values
/// only.  A folder whose name is not a host name, or facts that are not a
/// JSON object, are left out.
pub fn hosts_facts(dir: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir.join("data").join("hosts")) else {
        return out;
    };
    for e in entries.flatten() {
        let host = e.file_name().to_string_lossy().into_owned();
        if let Some(facts) = host_facts(dir, &host).ok().flatten().and_then(text_facts) {
            out.insert(host, facts);
        }
    }
    out
}

/// A host's facts as key → text (what the scripts print; other values are
/// left out), or `None` when they are not a JSON object.
pub fn text_facts(v: serde_json::Value) -> Option<BTreeMap<String, String>> {
    let serde_json::Value::Object(facts) = v else {
        return None;
    };
    Some(
        facts
            .into_iter()
            .filter_map(|(k, v)| v.as_str().map(|v| (k, v.to_owned())))
            .collect(),
    )
}
