//! `ls` of a `.tar.zst` archive: one pass over the compressed stream, the
//! bag's tag files read (bounded), the host folders noted, every other
//! member skipped unread.
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::{
    open_regular, read_bounded, read_journal, BundleKind, BundleSummary, JournalFacts, Want,
    HEAD_BYTES, MAX_TAG_BYTES, MAX_TAIL_BYTES, SIG_FILE,
};
use crate::results::bundle::archive::{MAX_ENTRIES, MAX_UNPACKED_BYTES};
use crate::results::bundle::bag::{BAGIT_FILE, BAG_INFO_FILE};
use crate::results::bundle::journal::JOURNAL_FILE;

/// The members of an archive's bag that `ls` reads.
enum Member {
    Bagit,
    BagInfo,
    Journal,
    Signature,
    /// Under `data/hosts/<name>/`.
    Host(String),
    Other,
}

fn classify(rest: &[String], sig: &str, is_dir: bool) -> Member {
    match rest {
        [n] if n == BAGIT_FILE => Member::Bagit,
        [n] if n == BAG_INFO_FILE => Member::BagInfo,
        [n] if n == JOURNAL_FILE => Member::Journal,
        [n] if n == sig => Member::Signature,
        [d, h, host, more @ ..] if d == "data" && h == "hosts" && (is_dir || !more.is_empty()) => {
            Member::Host(host.clone())
        }
        _ => Member::Other,
    }
}

pub(super) fn summarize_archive(path: &Path) -> BundleSummary {
    let mut s = BundleSummary::new(path.to_owned(), BundleKind::Archive);
    let file = match open_regular(path) {
        Ok((f, m)) => {
            s.bytes = m.len();
            s.disk_bytes = m.blocks().saturating_mul(512);
            f
        }
        Err(e) => {
            s.unreadable(format!("archive: {e}"));
            return s;
        }
    };
    match scan_archive(file, &mut s) {
        Ok((info, journal)) => s.fill(info, journal),
        Err(why) => s.unreadable(why),
    }
    s
}

type ScanResult = (
    Result<Option<Vec<u8>>, String>,
    Result<JournalFacts, String>,
);

/// One pass over the archive: the bag's tag files read (bounded), the host
/// folders noted, every other member skipped.
fn scan_archive(file: File, s: &mut BundleSummary) -> Result<ScanResult, String> {
    let bad = |e: io::Error| format!("archive: {e}");
    let dec = zstd::Decoder::new(file).map_err(bad)?;
    let mut tar = tar::Archive::new(dec);
    let sig = SIG_FILE;
    let mut top: Option<String> = None;
    let mut has_bagit = false;
    let mut info: Result<Option<Vec<u8>>, String> = Ok(None);
    let mut journal: Result<JournalFacts, String> = Err(format!("it has no {JOURNAL_FILE}"));
    let mut hosts = BTreeSet::new();
    let (mut count, mut unpacked) = (0u64, 0u64);
    for entry in tar.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        count += 1;
        unpacked = unpacked.saturating_add(entry.size());
        if count > MAX_ENTRIES || unpacked > MAX_UNPACKED_BYTES {
            return Err(format!(
                "archive: it holds more than {MAX_ENTRIES} members or {} GiB",
                MAX_UNPACKED_BYTES >> 30
            ));
        }
        let p = entry.path().map_err(bad)?.into_owned();
        let parts: Vec<String> = p
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        let Some((first, rest)) = parts.split_first() else {
            continue;
        };
        match &top {
            None => top = Some(first.clone()),
            Some(t) if t != first => {
                return Err(format!(
                    "archive: it holds more than one folder ({t}, {first})"
                ))
            }
            Some(_) => {}
        }
        let kind = entry.header().entry_type();
        let member = classify(rest, sig, kind.is_dir());
        let regular = kind.is_file();
        match member {
            Member::Bagit => has_bagit = true,
            Member::BagInfo if !regular => info = Err(format!("{BAG_INFO_FILE} is a {kind:?}")),
            Member::BagInfo => {
                info = read_bounded(&mut entry, MAX_TAG_BYTES, BAG_INFO_FILE).map(Some)
            }
            Member::Signature if !regular => s.read_signature(Err(format!("{sig} is a {kind:?}"))),
            Member::Signature => {
                let b = read_bounded(&mut entry, MAX_TAG_BYTES, sig);
                s.read_signature(b.as_deref().map_err(Clone::clone));
            }
            Member::Journal if !regular => journal = Err(format!("{JOURNAL_FILE} is a {kind:?}")),
            Member::Journal => {
                let len = entry.size();
                journal = match stream_ends(&mut entry) {
                    Ok((head, tail)) => read_journal(len, |want| {
                        Ok(match want {
                            Want::Head => head.clone(),
                            Want::Tail(w) => tail[tail.len().saturating_sub(w as usize)..].to_vec(),
                        })
                    }),
                    Err(e) => Err(format!("{JOURNAL_FILE}: {e}")),
                };
            }
            Member::Host(h) => {
                hosts.insert(h);
            }
            Member::Other => {}
        }
    }
    if top.is_none() {
        return Err("archive: it is empty".into());
    }
    if !has_bagit {
        return Err(format!("archive: it holds no {BAGIT_FILE}: not a bundle"));
    }
    s.hosts = hosts.into_iter().collect();
    Ok((info, journal))
}

/// The first [`HEAD_BYTES`] and the last [`MAX_TAIL_BYTES`] of a stream.
fn stream_ends(r: &mut impl Read) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let keep = MAX_TAIL_BYTES as usize;
    let mut head = Vec::new();
    let mut tail: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if head.len() < HEAD_BYTES {
            let take = (HEAD_BYTES - head.len()).min(n);
            head.extend_from_slice(&buf[..take]);
        }
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > 2 * keep {
            tail.drain(..tail.len() - keep);
        }
    }
    if tail.len() > keep {
        tail.drain(..tail.len() - keep);
    }
    Ok((head, tail))
}
