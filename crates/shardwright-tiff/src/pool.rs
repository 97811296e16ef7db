//! The decoders a source keeps open, shared by all of its files: at most `cap` at once,
//! idle and in use together (each holds a file descriptor), the least recently used idle
//! one closed when a file without an idle decoder needs one. A folder of thousands of
//! slices so holds a few descriptors, not one or more per file.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crate::error::TiffError;
use crate::file::Reader;

/// The open decoders of one source.
#[derive(Debug)]
pub(crate) struct Decoders {
    state: Mutex<State>,
    /// Signalled when a decoder is given back or closed.
    freed: Condvar,
    cap: usize,
}

#[derive(Debug, Default)]
struct State {
    /// Idle decoders, least recently used first: the file's index, the decoder, the IFD it
    /// is positioned on.
    idle: VecDeque<(usize, Reader, usize)>,
    /// Decoders open, idle or in use.
    open: usize,
}

/// A decoder's place among the `cap` open: closing the decoder without giving it back
/// (an error, a panic) drops its slot, which frees the place.
#[derive(Debug)]
pub(crate) struct Slot<'a> {
    pool: &'a Decoders,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut state = self.pool.lock();
        state.open = state.open.saturating_sub(1);
        drop(state);
        self.pool.freed.notify_one();
    }
}

impl Decoders {
    /// A pool of at most `2 × rayon threads + 4` open decoders: every task reading at once
    /// has one, and a few stay idle for the next region.
    pub(crate) fn new() -> Self {
        Self::with_cap(2 * rayon::current_num_threads() + 4)
    }

    pub(crate) fn with_cap(cap: usize) -> Self {
        Self {
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
            cap: cap.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A decoder of file `file` (an idle one, or one `open` makes) with the IFD it is on,
    /// waiting for one to be given back when `cap` are in use.
    ///
    /// # Errors
    /// `open`'s.
    pub(crate) fn take(
        &self,
        file: usize,
        open: impl FnOnce() -> Result<Reader, TiffError>,
    ) -> Result<(Slot<'_>, usize, Reader), TiffError> {
        let mut state = self.lock();
        loop {
            if let Some(i) = state.idle.iter().rposition(|(f, _, _)| *f == file) {
                if let Some((_, decoder, ifd)) = state.idle.remove(i) {
                    return Ok((Slot { pool: self }, ifd, decoder));
                }
            }
            if state.open < self.cap {
                state.open += 1;
                break;
            }
            // Close the least recently used idle decoder (of another file) and take its
            // place.
            if state.idle.pop_front().is_some() {
                break;
            }
            state = self
                .freed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(state);
        let slot = Slot { pool: self };
        let decoder = open()?;
        Ok((slot, 0, decoder))
    }

    /// Keep `decoder` (of file `file`, on IFD `ifd`) open for the next task.
    pub(crate) fn give(&self, slot: Slot<'_>, file: usize, decoder: Reader, ifd: usize) {
        // The place stays taken, by an idle decoder now.
        std::mem::forget(slot);
        self.lock().idle.push_back((file, decoder, ifd));
        self.freed.notify_one();
    }

    /// Decoders open now, idle or in use.
    #[cfg(test)]
    pub(crate) fn open_count(&self) -> usize {
        self.lock().open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opener() -> Result<Reader, TiffError> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/strip_lzw.tif");
        crate::file::new_decoder(std::path::Path::new(path))
    }

    #[test]
    fn at_most_cap_decoders_stay_open_across_files() {
        let pool = Decoders::with_cap(3);
        for file in 0..50 {
            let (slot, at, decoder) = pool.take(file, opener).unwrap();
            assert_eq!(at, 0);
            pool.give(slot, file, decoder, 0);
            assert!(pool.open_count() <= 3);
        }
        assert_eq!(pool.lock().idle.len(), 3);
        // The most recent files' decoders are kept, for the next read of them.
        let (slot, at, decoder) = pool
            .take(49, || panic!("an idle decoder of file 49"))
            .unwrap();
        assert_eq!(at, 0);
        drop(decoder);
        drop(slot);
        assert_eq!(pool.open_count(), 2);
    }

    #[test]
    fn a_failed_open_frees_its_place() {
        let pool = Decoders::with_cap(1);
        let err = pool.take(0, || Err(TiffError::NotFound { spec: "x".into() }));
        assert!(err.is_err());
        assert_eq!(pool.open_count(), 0);
        let (slot, _, decoder) = pool.take(1, opener).unwrap();
        pool.give(slot, 1, decoder, 0);
        assert_eq!(pool.open_count(), 1);
    }
}
