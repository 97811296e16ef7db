//! [`Shared`]: the engine object behind a frozen pyclass (`ShardWriter`, `Transaction`),
//! callable from several Python threads at once.
//!
//! A call *leases* the object (an `Arc` clone, counted) under a short lock and runs
//! without the lock (and without the GIL). A commit (or an abort) first closes the object
//! to new calls, waits without the GIL for the calls in progress, and takes the object
//! out: it never holds the lock across its I/O. Meanwhile state reads answer at once (from
//! a snapshot taken when the commit starts); calls that need the object — writes, a second
//! commit, an abort — raise a `ShardwrightError` saying it is committing.
//!
//! The lock is only ever held for a few instructions, never while waiting for the GIL,
//! an engine lock or I/O, so taking it with the GIL held cannot deadlock; and the object's
//! last reference is never dropped under it (dropping a writer may abort an upload).

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use pyo3::prelude::*;

use crate::errors::error;

/// An engine object that a [`Shared`] guards.
pub(crate) trait Engine: Send + Sync + 'static {
    /// What state reads report while a commit runs (taken when it starts).
    type Snapshot: Copy + Send;

    /// The snapshot now; may take the object's own locks briefly.
    fn snapshot(&self) -> Self::Snapshot;
}

enum Phase<T: Engine> {
    Open(Arc<T>),
    /// Closed to calls, the commit waiting for the calls in progress: still readable.
    Draining(Arc<T>),
    /// The commit runs: state reads see the state when it started.
    Committing(T::Snapshot),
    Closed,
}

struct State<T: Engine> {
    phase: Phase<T>,
    /// Leases of calls in progress.
    calls: usize,
    /// Leases of state reads in progress.
    reads: usize,
}

/// Why a lease was refused (a plain value: the Python error is made after the lock is
/// released, since making it takes the GIL).
enum Refusal {
    Closed,
    Committing,
}

/// What a state read sees.
pub(crate) enum Peek<'a, T: Engine> {
    /// The object, open or not yet handed to its commit.
    Live(Lease<'a, T>),
    /// A commit runs: the state when it started.
    Committing(T::Snapshot),
    Closed,
}

/// The engine object, lent to one call; returned (counted back) when dropped.
pub(crate) struct Lease<'a, T: Engine> {
    shared: &'a Shared<T>,
    object: Option<Arc<T>>,
    read: bool,
}

impl<T: Engine> std::ops::Deref for Lease<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.object
            .as_deref()
            .expect("a lease holds its object until dropped")
    }
}

impl<T: Engine> Drop for Lease<'_, T> {
    fn drop(&mut self) {
        // Never the last reference: a commit or abort waits for every lease first.
        drop(self.object.take());
        let mut state = self.shared.lock();
        if self.read {
            state.reads -= 1;
        } else {
            state.calls -= 1;
        }
        drop(state);
        self.shared.changed.notify_all();
    }
}

/// Sets the phase to closed when dropped (a commit that ends, however it ends).
struct CloseOnDrop<'a, T: Engine>(&'a Shared<T>);

impl<T: Engine> Drop for CloseOnDrop<'_, T> {
    fn drop(&mut self) {
        self.0.lock().phase = Phase::Closed;
        self.0.changed.notify_all();
    }
}

/// An engine object shared by the Python threads that call one pyclass instance.
pub(crate) struct Shared<T: Engine> {
    state: Mutex<State<T>>,
    changed: Condvar,
    /// The object in messages: "the shard writer for [0:8]", "the transaction".
    name: String,
}

impl<T: Engine> Drop for Shared<T> {
    /// An object collected without commit or abort is dropped without the GIL (an
    /// object-store writer aborts its multipart upload, which waits for requests).
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Phase::Open(object) = std::mem::replace(&mut state.phase, Phase::Closed) {
            Python::attach(|py| py.detach(move || drop(object)));
        }
    }
}

impl<T: Engine> Shared<T> {
    pub(crate) fn new(object: T, name: String) -> Self {
        Self {
            state: Mutex::new(State {
                phase: Phase::Open(Arc::new(object)),
                calls: 0,
                reads: 0,
            }),
            changed: Condvar::new(),
            name,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wait (the caller has released the GIL) until `done` holds.
    fn wait_until(&self, done: impl Fn(&State<T>) -> bool) -> MutexGuard<'_, State<T>> {
        self.changed
            .wait_while(self.lock(), |state| !done(state))
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn refused(&self, why: Refusal) -> PyErr {
        match why {
            Refusal::Closed => error(format!(
                "{} is already closed (committed or aborted)",
                self.name
            )),
            Refusal::Committing => error(format!(
                "{} is committing in another thread: no write, commit or abort until that \
                 commit returns",
                self.name
            )),
        }
    }

    /// Whether a commit (or an abort) finished.
    pub(crate) fn closed(&self) -> bool {
        matches!(self.lock().phase, Phase::Closed)
    }

    /// Whether a commit runs now.
    pub(crate) fn committing(&self) -> bool {
        matches!(self.lock().phase, Phase::Draining(_) | Phase::Committing(_))
    }

    /// The object for a call (a write, a staged read), while open.
    ///
    /// # Errors
    /// A `ShardwrightError` when closed or committing.
    pub(crate) fn lease(&self) -> PyResult<Lease<'_, T>> {
        let mut state = self.lock();
        let object = match &state.phase {
            Phase::Open(object) => Arc::clone(object),
            Phase::Draining(_) | Phase::Committing(_) => {
                drop(state);
                return Err(self.refused(Refusal::Committing));
            }
            Phase::Closed => {
                drop(state);
                return Err(self.refused(Refusal::Closed));
            }
        };
        state.calls += 1;
        Ok(Lease {
            shared: self,
            object: Some(object),
            read: false,
        })
    }

    /// The object for a state read, or the snapshot of a running commit.
    pub(crate) fn peek(&self) -> Peek<'_, T> {
        let mut state = self.lock();
        let object = match &state.phase {
            Phase::Open(object) | Phase::Draining(object) => Arc::clone(object),
            Phase::Committing(snapshot) => return Peek::Committing(*snapshot),
            Phase::Closed => return Peek::Closed,
        };
        state.reads += 1;
        Peek::Live(Lease {
            shared: self,
            object: Some(object),
            read: true,
        })
    }

    /// Close to new calls: the object, once it was open (the phase is then `next`).
    fn close(&self, next: impl FnOnce(&Arc<T>) -> Phase<T>) -> PyResult<Arc<T>> {
        let mut state = self.lock();
        let why = match &state.phase {
            Phase::Open(object) => {
                let object = Arc::clone(object);
                state.phase = next(&object); // drops the phase's reference, not the last
                return Ok(object);
            }
            Phase::Draining(_) | Phase::Committing(_) => Refusal::Committing,
            Phase::Closed => Refusal::Closed,
        };
        drop(state);
        Err(self.refused(why))
    }

    /// Commit: close the object to new calls, wait (without the GIL) for the calls in
    /// progress, take the snapshot for state reads, and run `commit` on the object,
    /// without the GIL and without the lock. Closed after, whatever the outcome.
    ///
    /// # Errors
    /// A `ShardwrightError` when closed or committing already (nothing is run).
    pub(crate) fn commit<R: Send>(
        &self,
        py: Python<'_>,
        commit: impl FnOnce(T) -> R + Send,
    ) -> PyResult<R> {
        let object = self.close(|object| Phase::Draining(Arc::clone(object)))?;
        let _closed = CloseOnDrop(self); // also if `commit` panics
        let taken = py.detach(|| {
            drop(self.wait_until(|s| s.calls == 0)); // the writes in progress end first
            let snapshot = object.snapshot();
            // Drops the phase's reference under the lock: not the last (`object` is one).
            self.lock().phase = Phase::Committing(snapshot);
            drop(self.wait_until(|s| s.reads == 0));
            Arc::try_unwrap(object).ok().map(commit)
        });
        taken.ok_or_else(|| {
            error(format!(
                "{} is still referenced after its calls ended (a bug: please report it)",
                self.name
            ))
        })
    }

    /// Abort: closed at once (state reads say so); the object is dropped without the GIL
    /// once the calls in progress have ended.
    ///
    /// # Errors
    /// A `ShardwrightError` when closed already, or committing (a commit that started
    /// cannot be stopped: it stores, or fails).
    pub(crate) fn abort(&self, py: Python<'_>) -> PyResult<()> {
        let object = self.close(|_| Phase::Closed)?;
        py.detach(|| {
            drop(self.wait_until(|s| s.calls == 0 && s.reads == 0));
            drop(object); // the last reference
        });
        Ok(())
    }

    /// Take the object out for good, once the calls in progress ended (refused to new
    /// calls from the start, as during a commit; closed after).
    ///
    /// # Errors
    /// A `ShardwrightError` when closed or committing.
    pub(crate) fn take(&self, py: Python<'_>) -> PyResult<T> {
        self.commit(py, |object| object)
    }
}
