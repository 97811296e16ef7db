//! Ctrl-C (SIGINT) and SIGTERM during a long command: `pyramid`, `copy`, `check`, `info` and `demo`
//! stop starting work at the next shard, abort the uploads under way and remove their
//! temporary files (the build's writers do that when dropped), say so and exit with
//! [`INTERRUPTED`]. A second signal ends the process at once.
//!
//! Only the `shardwright` binary catches signals ([`Interrupts::Signals`]): inside the
//! Python process (`shardwright._core.run_cli`) the caller polls Python's own handlers
//! instead ([`Interrupts::Poll`]), so that the interpreter's SIGINT keeps working.

use std::sync::atomic::{AtomicBool, Ordering};

/// The exit status of an interrupted command: 128 + SIGINT (2), as shells report it.
pub const INTERRUPTED: i32 = 130;

/// How a command learns that it should stop.
///
/// ```
/// use shardwright_cli::{run_with, Interrupts, INTERRUPTED};
/// // A caller with its own way of noticing Ctrl-C asks it after each shard:
/// let ctrl_c = std::sync::atomic::AtomicBool::new(false);
/// let poll = || ctrl_c.load(std::sync::atomic::Ordering::Relaxed);
/// assert_eq!(run_with(["shardwright", "--version"], Interrupts::Poll(&poll)), 0);
/// assert_eq!(INTERRUPTED, 130);
/// ```
#[derive(Clone, Copy)]
pub enum Interrupts<'a> {
    /// Never interrupted (the process's signal dispositions stay as they are).
    Ignore,
    /// Catch SIGINT and SIGTERM while a long command runs (the binary's choice; a second
    /// signal gets the default disposition back and ends the process).
    Signals,
    /// Ask this function after each shard; `true` stops the command.
    Poll(&'a dyn Fn() -> bool),
}

/// Set by the signal handler.
static CAUGHT: AtomicBool = AtomicBool::new(false);

extern "C" fn caught(signal: libc::c_int) {
    CAUGHT.store(true, Ordering::SeqCst);
    let note = b"\nshardwright: stopping after the shards under way (again to quit at once)\n";
    // SAFETY: write(2) and signal(2) are async-signal-safe; the buffer is static.
    unsafe {
        libc::write(2, note.as_ptr().cast(), note.len());
        libc::signal(signal, libc::SIG_DFL);
    }
}

impl Interrupts<'_> {
    /// Start listening (for [`Interrupts::Signals`], install the handlers).
    pub(crate) fn arm(&self) {
        if let Interrupts::Signals = self {
            CAUGHT.store(false, Ordering::SeqCst);
            let handler = caught as extern "C" fn(libc::c_int) as libc::sighandler_t;
            // SAFETY: the handler only stores an atomic and calls async-signal-safe
            // functions.
            unsafe {
                libc::signal(libc::SIGINT, handler);
                libc::signal(libc::SIGTERM, handler);
            }
        }
    }

    /// Stop listening (for [`Interrupts::Signals`], the default dispositions again).
    pub(crate) fn disarm(&self) {
        if let Interrupts::Signals = self {
            // SAFETY: restoring the default disposition.
            unsafe {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
            }
        }
    }

    /// Whether the command should stop now.
    pub(crate) fn stop(&self) -> bool {
        match self {
            Interrupts::Ignore => false,
            Interrupts::Signals => CAUGHT.load(Ordering::SeqCst),
            Interrupts::Poll(poll) => poll(),
        }
    }
}

/// A command stopped by an interruption; the text says what to do next (printed as
/// "interrupted: {text}").
#[derive(Debug)]
pub(crate) struct Interrupted(pub(crate) &'static str);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted: {}", self.0)
    }
}

impl std::error::Error for Interrupted {}
