//! Standard output and error that never panic and never kill the process.
//! Rust ignores SIGPIPE, so a write after the reader went away (`fsmatrix
//! report … | head -1`) fails with EPIPE, and `println!` would panic on it;
//! the signal's default would end the process with 141, which under `set -o
//! pipefail` fails a pipeline by timing alone, and could cut a sweep off
//! between a `mkfs` and its teardown.  One mechanism for every command, as
//! ripgrep does: SIGPIPE stays ignored, everything written goes through
//! these macros (or [`Stdout`] where a writer is needed), and a stream whose
//! reader went away is no longer written to; the command goes on to its end
//! and its own exit code, so a closed pipe is never a failure (0 when the
//! command did what it was asked).  Any other error writing standard output
//! (a full disk under `> file`) is kept ([`stdout_error`]): the commands
//! layer turns it into a failure, since the output the user asked for is
//! not all there.
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
static STDERR_GONE: AtomicBool = AtomicBool::new(false);
/// The first error writing standard output that was not its reader leaving.
static STDOUT_ERROR: Mutex<Option<String>> = Mutex::new(None);

/// Which stream a line goes to.
#[derive(Clone, Copy)]
pub enum Stream {
    Out,
    Err,
}

fn gone_flag(stream: Stream) -> &'static AtomicBool {
    match stream {
        Stream::Out => &STDOUT_GONE,
        Stream::Err => &STDERR_GONE,
    }
}

/// A failed write: the stream is not written to again; on standard output
/// an error other than the reader leaving (EPIPE) is kept for the exit code.
fn failed(stream: Stream, e: &std::io::Error) {
    gone_flag(stream).store(true, Ordering::Relaxed);
    if matches!(stream, Stream::Out) && e.kind() != std::io::ErrorKind::BrokenPipe {
        let mut first = STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert_with(|| e.to_string());
    }
}

/// Write `args` to `stream` unless its reader went away; a write error
/// marks the stream gone (see [`failed`]).
pub fn write(stream: Stream, args: std::fmt::Arguments<'_>) {
    if gone_flag(stream).load(Ordering::Relaxed) {
        return;
    }
    let r = match stream {
        Stream::Out => {
            let mut w = std::io::stdout().lock();
            w.write_fmt(args).and_then(|()| w.flush())
        }
        Stream::Err => std::io::stderr().lock().write_fmt(args),
    };
    if let Err(e) = r {
        failed(stream, &e);
    }
}

/// Standard output as an [`std::io::Write`] for code that takes a writer
/// (serde_json, clap_complete, the man pages, `run --json`), with the
/// macros' rules: once the reader went away, writes are taken and dropped,
/// never an error.
pub struct Stdout;

/// Standard error as an [`std::io::Write`] (the log, a sweep's progress
/// lines), with the same rules.  The log needs it most: tracing-subscriber
/// reports a failed write with `eprintln!`, which panics when standard
/// error is a closed pipe too (`fsmatrix run … 2>&1 | head -1`).
pub struct Stderr;

/// `buf` to `stream` unless its reader went away, flushed, so that an
/// error is seen here (std's own flush at exit drops it).
fn write_bytes(stream: Stream, buf: &[u8]) {
    if gone_flag(stream).load(Ordering::Relaxed) {
        return;
    }
    let r = match stream {
        Stream::Out => {
            let mut w = std::io::stdout().lock();
            w.write_all(buf).and_then(|()| w.flush())
        }
        Stream::Err => std::io::stderr().lock().write_all(buf),
    };
    if let Err(e) = r {
        failed(stream, &e);
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        write_bytes(Stream::Out, buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        write_bytes(Stream::Err, buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether standard output's reader went away (a write to it failed).
pub fn stdout_gone() -> bool {
    STDOUT_GONE.load(Ordering::Relaxed)
}

/// The first error writing standard output other than its reader leaving
/// (`None` also when the reader left: that is no failure).
pub fn stdout_error() -> Option<String> {
    STDOUT_ERROR
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// `println!` that never panics.
macro_rules! outln {
    () => { $crate::stdio::write($crate::stdio::Stream::Out, format_args!("\n")) };
    ($($t:tt)*) => {
        $crate::stdio::write($crate::stdio::Stream::Out, format_args!("{}\n", format_args!($($t)*)))
    };
}
/// `print!` that never panics.
macro_rules! out {
    ($($t:tt)*) => { $crate::stdio::write($crate::stdio::Stream::Out, format_args!($($t)*)) };
}
/// `eprintln!` that never panics.
macro_rules! errln {
    () => { $crate::stdio::write($crate::stdio::Stream::Err, format_args!("\n")) };
    ($($t:tt)*) => {
        $crate::stdio::write($crate::stdio::Stream::Err, format_args!("{}\n", format_args!($($t)*)))
    };
}
/// `eprint!` that never panics.
macro_rules! err {
    ($($t:tt)*) => { $crate::stdio::write($crate::stdio::Stream::Err, format_args!($($t)*)) };
}
pub(crate) use {err, errln, out, outln};

#[cfg(test)]
mod tests {
    /// The macros format as the std ones do (checked through `format!`,
    /// since a test's stdout is captured).
    #[test]
    fn the_macros_take_what_println_takes() {
        let x = 3;
        super::outln!("{x} {} {:>3}", "a", 7);
        super::outln!();
        super::out!("{x}");
        super::errln!("{x:?}");
        super::err!("");
        assert!(!super::stdout_gone());
    }
}
