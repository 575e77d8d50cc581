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
    let file = File::create(&tmp).map_err(io("create", &tmp))?;
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

/// Unpack an archive into `into` (which must be empty); returns the bag's
/// folder.  The tar crate refuses entries that would land outside `into`.
pub fn unpack(archive: &Path, into: &Path) -> Result<PathBuf, ArchiveError> {
    let file = File::open(archive).map_err(io("open", archive))?;
    let dec = zstd::Decoder::new(BufReader::new(file)).map_err(io("decompress", archive))?;
    let mut tar = tar::Archive::new(dec);
    tar.set_preserve_permissions(false);
    tar.unpack(into).map_err(io("unpack", archive))?;
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(into)
        .map_err(io("read", into))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    if dirs.len() != 1 || !dirs[0].is_dir() {
        return Err(ArchiveError::Bad {
            path: archive.to_path_buf(),
            why: format!(
                "expected one bag folder inside, found {} entries",
                dirs.len()
            ),
        });
    }
    Ok(dirs.remove(0))
}
