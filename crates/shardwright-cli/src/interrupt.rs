//! Ctrl-C (SIGINT) and SIGTERM during a long command: `pyramid`, `copy`, `check`, `info` and `demo`
//! stop starting work at the next shard, abort the uploads under way and remove their
//! temporary files (the build's writers do that when dropped), say so and exit with
//! [`INTERRUPTED`]. A second signal ends the process at once.
//!
//! Only the `shardwright` binary catches signals ([`Interrupts::Signals`]): inside the
//! Python process (`shardwright._core.run_cli`) the caller polls Python's own handlers
//! instead ([`Interrupts::Poll`]), so that the interpreter's SIGINT keeps working.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

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
    /// signal gets the default disposition back and ends the process). A signal ignored at
    /// start stays ignored, and the previous dispositions come back when the command ends.
    Signals,
    /// Ask this function after each shard; `true` stops the command.
    Poll(&'a dyn Fn() -> bool),
}

/// Set by the signal handler.
static CAUGHT: AtomicBool = AtomicBool::new(false);

/// The signals a long command catches.
const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// The dispositions [`Interrupts::arm`] replaced (`None`: left alone, e.g. a SIGINT that
/// was ignored at start, as for `shardwright pyramid ... &` in a non-interactive shell),
/// restored by [`Interrupts::disarm`].
static PREVIOUS: Mutex<[Option<Disposition>; 2]> = Mutex::new([None, None]);

/// A saved `sigaction`.
struct Disposition(libc::sigaction);

// SAFETY: a `sigaction` is plain data (a handler address, a mask and flags).
unsafe impl Send for Disposition {}

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
    /// Start listening (for [`Interrupts::Signals`], install the handlers, except for a
    /// signal that was ignored: it stays ignored).
    pub(crate) fn arm(&self) {
        if let Interrupts::Signals = self {
            CAUGHT.store(false, Ordering::SeqCst);
            let mut previous = PREVIOUS.lock().unwrap_or_else(|e| e.into_inner());
            for (slot, signal) in previous.iter_mut().zip(SIGNALS) {
                // SAFETY: sigaction(2) with a zeroed (valid) struct; the handler only stores
                // an atomic and calls async-signal-safe functions.
                unsafe {
                    let mut old: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                        || old.sa_sigaction == libc::SIG_IGN
                    {
                        *slot = None;
                        continue;
                    }
                    let mut new: libc::sigaction = std::mem::zeroed();
                    new.sa_sigaction = caught as extern "C" fn(libc::c_int) as libc::sighandler_t;
                    libc::sigemptyset(&mut new.sa_mask);
                    new.sa_flags = libc::SA_RESTART;
                    *slot =
                        (libc::sigaction(signal, &new, &mut old) == 0).then_some(Disposition(old));
                }
            }
        }
    }

    /// Stop listening (for [`Interrupts::Signals`], the dispositions [`Interrupts::arm`]
    /// found again).
    pub(crate) fn disarm(&self) {
        if let Interrupts::Signals = self {
            let mut previous = PREVIOUS.lock().unwrap_or_else(|e| e.into_inner());
            for (slot, signal) in previous.iter_mut().zip(SIGNALS) {
                if let Some(Disposition(old)) = slot.take() {
                    // SAFETY: reinstalling a disposition sigaction(2) returned.
                    unsafe { libc::sigaction(signal, &old, std::ptr::null_mut()) };
                }
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
