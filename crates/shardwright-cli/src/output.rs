//! Command output on stdout, and what happens when the reader goes away: `shardwright info
//! x.zarr | head -1` closes the pipe after one line; the next write fails with
//! `BrokenPipe`, which becomes [`Closed`]: the command stops at once, quietly, and exits
//! with [`CLOSED`] (as a tool killed by SIGPIPE does; the binary and the Python console
//! script alike, without touching the process's SIGPIPE disposition).

use std::fmt;
use std::io::{self, Write};

/// The exit status when stdout closed early: 128 + SIGPIPE (13), the status a shell shows
/// for a tool that SIGPIPE ended.
pub(crate) const CLOSED: i32 = 141;

/// Stdout was closed by its reader (a broken pipe): nothing more can be shown.
#[derive(Debug)]
pub(crate) struct Closed;

impl fmt::Display for Closed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("standard output closed")
    }
}

impl std::error::Error for Closed {}

/// Write one line on stdout (through the locked handle, flushed): a closed pipe is
/// [`Closed`], any other failure the I/O error.
pub(crate) fn line(args: fmt::Arguments<'_>) -> Result<(), Box<dyn std::error::Error>> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            io::ErrorKind::BrokenPipe => Box::new(Closed) as Box<dyn std::error::Error>,
            _ => format!("cannot write the output: {e}").into(),
        })
}

/// Whether `err` is a closed stdout: only [`line`]'s [`Closed`]. A broken pipe elsewhere (a
/// file the command writes, e.g. `bench --json` into a FIFO whose reader went away) is an
/// ordinary failure, reported as such.
pub(crate) fn is_closed(err: &(dyn std::error::Error + 'static)) -> bool {
    err.is::<Closed>()
}

/// Write a message on stderr; a closed stderr is ignored (there is nobody to tell).
pub(crate) fn to_stderr(args: fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// `out!("...", args)`: [`line`], returning early from the enclosing function (whose error
/// type takes a `Box<dyn Error>`) when it fails.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))?
    };
}

/// `say!("...", args)`: [`to_stderr`].
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::to_stderr(format_args!($($arg)*))
    };
}

pub(crate) use {out, say};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_closed_stdout_is_closed() {
        assert!(is_closed(&Closed));
        // A broken pipe writing a file (`bench --json` into a FIFO) is an ordinary failure.
        let fifo: Box<dyn std::error::Error> = io::Error::from(io::ErrorKind::BrokenPipe).into();
        assert!(!is_closed(fifo.as_ref()));
    }
}
