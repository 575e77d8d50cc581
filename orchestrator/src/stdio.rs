//! Standard output and error that never panic.  `println!` panics when its
//! reader has gone (`fsmatrix run … | head -1`: Rust ignores SIGPIPE, so the
//! write fails with EPIPE), which would cut a sweep off between a `mkfs` and
//! its teardown.  The commands that change nothing restore SIGPIPE's default
//! instead (`commands::Command::only_reads`); everything else writes through
//! these macros: a stream whose reader went away is no longer written to, and
//! the work goes on to its end and its exit code.
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
static STDERR_GONE: AtomicBool = AtomicBool::new(false);

/// Which stream a line goes to.
#[derive(Clone, Copy)]
pub enum Stream {
    Out,
    Err,
}

/// Write `args` to `stream` unless its reader went away; any write error
/// marks the stream gone (there is nobody left to tell).
pub fn write(stream: Stream, args: std::fmt::Arguments<'_>) {
    let gone = match stream {
        Stream::Out => &STDOUT_GONE,
        Stream::Err => &STDERR_GONE,
    };
    if gone.load(Ordering::Relaxed) {
        return;
    }
    let r = match stream {
        Stream::Out => {
            let mut w = std::io::stdout().lock();
            w.write_fmt(args).and_then(|()| w.flush())
        }
        Stream::Err => std::io::stderr().lock().write_fmt(args),
    };
    if r.is_err() {
        gone.store(true, Ordering::Relaxed);
    }
}

/// Whether standard output's reader went away (a write to it failed).
pub fn stdout_gone() -> bool {
    STDOUT_GONE.load(Ordering::Relaxed)
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
