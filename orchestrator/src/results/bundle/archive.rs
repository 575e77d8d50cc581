//! One-file archives of a bundle (`.tar.zst`) that `verify` also accepts.
//!
//! The archive holds the bag's folder under its own name, so unpacking it
//! anywhere gives back the very bag (checksums and all).  A bag that does
//! not verify is not archived: an archive is what gets published.
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::verify::verify;

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("archive {}: it does not verify ({problems} problem(s)); run `fsmatrix verify` on it", path.display())]
    NotVerified { path: PathBuf, problems: usize },
    #[error("archive {}: {why}", path.display())]
    Bad { path: PathBuf, why: String },
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ArchiveError {
    let path = path.to_path_buf();
    move |source| ArchiveError::Io {
        action,
        path,
        source,
    }
}

/// Is `path` an archive (by name) rather than a bag folder?
pub fn is_archive(path: &Path) -> bool {
    path.is_file() && path.to_string_lossy().ends_with(".tar.zst")
}

/// Write `<bundle>.tar.zst` beside the bundle (or at `out`); returns its path.
pub fn archive(bundle: &Path, out: Option<&Path>) -> Result<PathBuf, ArchiveError> {
    let report = verify(bundle).map_err(|e| ArchiveError::Bad {
        path: bundle.to_path_buf(),
        why: e.to_string(),
    })?;
    if !report.is_ok() {
        return Err(ArchiveError::NotVerified {
            path: bundle.to_path_buf(),
            problems: report.problems.len(),
        });
    }
    let bundle = bundle.canonicalize().map_err(io("resolve", bundle))?;
    let name = bundle
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| ArchiveError::Bad {
            path: bundle.clone(),
            why: "the bundle's folder has no usable name".into(),
        })?
        .to_string();
    let dest = match out {
        Some(p) => p.to_path_buf(),
        None => bundle.with_file_name(format!("{name}.tar.zst")),
    };
    if dest.exists() {
        return Err(ArchiveError::Bad {
            path: dest,
            why: "it already exists".into(),
        });
    }
    let tmp = dest.with_extension("zst.partial");
    // Exclusively: a planted `.partial` (a link to another file) is refused,
    // never followed and overwritten.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(io("create (it must not exist yet)", &tmp))?;
    let enc = zstd::Encoder::new(BufWriter::new(file), 19).map_err(io("compress into", &tmp))?;
    let mut tar = tar::Builder::new(enc);
    tar.follow_symlinks(false);
    tar.append_dir_all(&name, &bundle)
        .map_err(io("pack", &bundle))?;
    let enc = tar.into_inner().map_err(io("finish", &tmp))?;
    let mut w = enc.finish().map_err(io("finish", &tmp))?;
    w.flush().map_err(io("write", &tmp))?;
    w.get_ref().sync_all().map_err(io("fsync", &tmp))?;
    drop(w);
    std::fs::rename(&tmp, &dest).map_err(io("rename into place", &dest))?;
    Ok(dest)
}

/// The most an archive may unpack to (an archive is other people's input:
/// a small file can expand without bound).
pub const MAX_UNPACKED_BYTES: u64 = 64 << 30;
/// The most entries an archive may hold.
pub const MAX_ENTRIES: u64 = 10_000_000;

/// Unpack an archive into `into` (which must be empty); returns the bag's
/// folder.  Only folders and regular files are unpacked: a link, a device,
/// an absolute path or a `..` member is refused, as is an archive larger
/// than [`MAX_UNPACKED_BYTES`] or [`MAX_ENTRIES`].
pub fn unpack(archive: &Path, into: &Path) -> Result<PathBuf, ArchiveError> {
    let bad = |why: String| ArchiveError::Bad {
        path: archive.to_path_buf(),
        why,
    };
    let file = File::open(archive).map_err(io("open", archive))?;
    let dec = zstd::Decoder::new(BufReader::new(file)).map_err(io("decompress", archive))?;
    let mut tar = tar::Archive::new(dec);
    tar.set_preserve_permissions(false);
    let (mut bytes, mut count) = (0u64, 0u64);
    for entry in tar.entries().map_err(io("read", archive))? {
        let mut entry = entry.map_err(io("read", archive))?;
        let path = entry.path().map_err(io("read", archive))?.into_owned();
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            return Err(bad(format!(
                "member {} is a {kind:?}, not a file or a folder",
                path.display()
            )));
        }
        if path.is_absolute()
            || path.components().any(|c| {
                !matches!(
                    c,
                    std::path::Component::Normal(_) | std::path::Component::CurDir
                )
            })
        {
            return Err(bad(format!(
                "member {} leaves the archive's folder",
                path.display()
            )));
        }
        count += 1;
        bytes = bytes.saturating_add(entry.size());
        if count > MAX_ENTRIES || bytes > MAX_UNPACKED_BYTES {
            return Err(bad(format!(
                "it unpacks to more than {MAX_ENTRIES} entries or {} GiB",
                MAX_UNPACKED_BYTES >> 30
            )));
        }
        entry.unpack_in(into).map_err(io("unpack", archive))?;
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(into)
        .map_err(io("read", into))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    if dirs.len() != 1 || !dirs[0].is_dir() {
        return Err(bad(format!(
            "expected one bag folder inside, found {} entries",
            dirs.len()
        )));
    }
    Ok(dirs.remove(0))
}
