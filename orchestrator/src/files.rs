//! Reading files that others name: an inventory's known_hosts, a matrix's
//! scripts.  Only a regular file is read, and only up to a limit: a FIFO, a
//! device or a folder at that path is an error at once, never a hang (opening
//! a FIFO for reading blocks until a writer comes; `/dev/zero` never ends).
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The bytes of `path` if it is a regular file (a link to one is followed)
/// of at most `limit` bytes; else why not, as a fragment that reads after
/// "cannot read the file: ".  The kind is checked before opening and again
/// on the opened file (it may have been swapped in between); the open itself
/// is non-blocking.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    read_bounded(path, limit, true)
}

/// [`read_regular`] that does not follow a symbolic link at `path` either
/// (it is refused, as a FIFO is): for files inside a folder someone else
/// made, such as a bundle's snapshots.
pub fn read_regular_no_link(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    read_bounded(path, limit, false)
}

fn read_bounded(path: &Path, limit: u64, follow: bool) -> Result<Vec<u8>, String> {
    let kind = |m: &std::fs::Metadata| -> Result<(), String> {
        let t = m.file_type();
        if t.is_file() {
            return Ok(());
        }
        Err(format!(
            "it is {}, not a regular file; refused without reading it",
            file_kind(&t)
        ))
    };
    let meta = if follow {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    };
    kind(&meta.map_err(|e| e.to_string())?)?;
    let no_link = if follow { 0 } else { libc::O_NOFOLLOW };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | no_link)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = f.metadata().map_err(|e| e.to_string())?;
    kind(&meta)?;
    let too_big = |n: u64| format!("it holds {n} bytes or more, over the limit of {limit}");
    if meta.len() > limit {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::new();
    f.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// What a file type is, in words.
pub fn file_kind(t: &std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}
