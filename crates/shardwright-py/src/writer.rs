//! `_core.ShardWriter`: one shard's writer; numpy data is copied once, with the GIL held,
//! then encoding runs on Rust threads with the GIL released.

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use shardwright::domain::copy::gather_strided;
use shardwright::domain::GridCells;
use shardwright::{Domain, PendingCommit, ShardWriter};

use crate::errors::{error, guard, IntoPy};
use crate::grid::PyGridIter;
use crate::shared::{Engine, Peek, Shared};

/// The writer of one shard. Frozen, its engine writer behind a [`Shared`]: any thread
/// may call it while another writes or commits (see `shared.rs`).
#[pyclass(module = "shardwright._core", name = "ShardWriter", frozen)]
pub(crate) struct PyShardWriter {
    inner: Shared<ShardWriter>,
    shard: Domain,
    /// The inner chunks (`inner_chunks()` answers during a commit too).
    chunks: GridCells,
    element_size: usize,
}

/// During a commit, a writer reports its chunks written and bytes held when it began.
impl Engine for ShardWriter {
    type Snapshot = (usize, usize);

    fn snapshot(&self) -> (usize, usize) {
        (self.chunks_written(), self.staged_memory())
    }
}

impl PyShardWriter {
    /// Take the engine writer out (the Python writer is closed after), once the calls in
    /// progress ended.
    pub(crate) fn take(&self, py: Python<'_>) -> PyResult<ShardWriter> {
        self.inner.take(py)
    }

    pub(crate) fn new(inner: ShardWriter, element_size: usize) -> Self {
        let shard = inner.shard().clone();
        Self {
            chunks: inner.inner_chunks(),
            inner: Shared::new(inner, format!("the shard writer for {shard}")),
            shard,
            element_size,
        }
    }

    /// The engine writer for a state read (`Live` while open).
    pub(crate) fn peek(&self) -> Peek<'_, ShardWriter> {
        self.inner.peek()
    }
}

fn domain(origin: Vec<u64>, shape: Vec<u64>) -> PyResult<Domain> {
    Domain::try_new(origin, shape)
        .map_err(shardwright::Error::from)
        .py()
}

/// Copy a numpy array of `region`'s shape into C-ordered raw bytes (the one copy), with
/// the GIL held.
pub(crate) fn gather(
    data: &Bound<'_, PyUntypedArray>,
    region: &Domain,
    element_size: usize,
    buffer: impl FnOnce(usize) -> shardwright::Result<Vec<u8>>,
) -> PyResult<Vec<u8>> {
    let itemsize = data.dtype().itemsize();
    if itemsize != element_size {
        return Err(error(format!(
            "data has {itemsize}-byte elements, expected {element_size}"
        )));
    }
    let data_shape: Vec<u64> = data.shape().iter().map(|s| *s as u64).collect();
    if data_shape != region.shape() {
        return Err(error(format!(
            "data has shape {data_shape:?}, expected {:?}",
            region.shape()
        )));
    }
    let len = shardwright::buffer::size_of(region.size(), itemsize)
        .map_err(shardwright::Error::from)
        .py()?;
    let mut raw = buffer(len).py()?;
    // SAFETY: the array is alive and the GIL is held for the whole copy; numpy
    // guarantees every element inside its shape and strides is readable.
    unsafe {
        let base = (*data.as_array_ptr()).fields.data as *const u8;
        gather_strided(base, &data_shape, data.strides(), itemsize, &mut raw);
    }
    Ok(raw)
}

/// Commit statistics as a Python dict.
pub(crate) fn stats_dict<'py>(
    py: Python<'py>,
    stats: &shardwright::CommitStats,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("puts", stats.puts)?;
    dict.set_item("gets", stats.gets)?;
    dict.set_item("deletes", stats.deletes)?;
    dict.set_item("bytes_read", stats.bytes_read)?;
    dict.set_item("bytes_written", stats.bytes_written)?;
    dict.set_item("chunks_written", stats.chunks_written)?;
    dict.set_item("chunks_empty", stats.chunks_empty)?;
    dict.set_item("chunks_partial", stats.chunks_partial)?;
    dict.set_item("chunks_decoded", stats.chunks_decoded)?;
    dict.set_item("chunks_kept", stats.chunks_kept)?;
    dict.set_item("conflicts", stats.conflicts)?;
    Ok(dict)
}

#[pymethods]
impl PyShardWriter {
    /// The shard as `(origin, shape, index)`.
    #[getter]
    fn shard(&self) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
        let index = self.shard.index().map(<[u64]>::to_vec).unwrap_or_default();
        (
            self.shard.origin().to_vec(),
            self.shard.shape().to_vec(),
            index,
        )
    }

    /// Whether the writer was committed or aborted (not yet while its commit runs).
    #[getter]
    fn closed(&self) -> bool {
        self.inner.closed()
    }

    /// Whether a commit runs now (in another thread).
    #[getter]
    fn committing(&self) -> bool {
        self.inner.committing()
    }

    #[getter]
    fn chunks_written(&self, py: Python<'_>) -> usize {
        match self.inner.peek() {
            // The slot table's lock can be held while an encoded batch is uploaded.
            Peek::Live(writer) => py.detach(move || writer.chunks_written()),
            Peek::Committing((written, _)) => written,
            Peek::Closed => 0,
        }
    }

    /// Bytes the writer holds now (encoded chunks, raw chunks in flight, partial chunks).
    #[getter]
    fn staged_memory(&self, py: Python<'_>) -> usize {
        match self.inner.peek() {
            Peek::Live(writer) => py.detach(move || writer.staged_memory()),
            Peek::Committing((_, held)) => held,
            Peek::Closed => 0,
        }
    }

    fn inner_chunks(&self) -> PyResult<PyGridIter> {
        if self.inner.closed() {
            return Err(error(format!(
                "the shard writer for {} is already closed (committed or aborted)",
                self.shard
            )));
        }
        Ok(PyGridIter::new(self.chunks.clone()))
    }

    /// Write one region (an inner chunk, or any box inside the shard) from a numpy array
    /// whose dtype already matches the array's (the Python layer casts); any memory layout.
    fn write(
        &self,
        py: Python<'_>,
        origin: Vec<u64>,
        shape: Vec<u64>,
        data: &Bound<'_, PyUntypedArray>,
    ) -> PyResult<()> {
        guard(|| {
            let writer = self.inner.lease()?;
            let region = domain(origin, shape)?;
            let raw = gather(data, &region, self.element_size, |n| writer.buffer(n))?;
            py.detach(move || writer.write_owned(&region, raw)).py()
        })
    }

    /// Write `value` (one element's bytes) to every element of a region.
    fn write_value(
        &self,
        py: Python<'_>,
        origin: Vec<u64>,
        shape: Vec<u64>,
        value: &[u8],
    ) -> PyResult<()> {
        guard(|| {
            let writer = self.inner.lease()?;
            let region = domain(origin, shape)?;
            py.detach(move || writer.write_region_value(&region, value))
                .py()
        })
    }

    /// Wait for the encodes and store the shard; returns the commit statistics. Waits
    /// first for writes in progress in other threads; while it runs, state reads answer
    /// (as when it began) and writes, commit and abort raise a `ShardwrightError`.
    fn commit<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let stats = self.inner.commit(py, ShardWriter::commit)?.py()?;
            stats_dict(py, &stats)
        })
    }

    /// Commit on a background thread: returns at once a handle whose `wait()` gives the
    /// commit statistics (or raises the commit's error). The shard is stored only when
    /// `wait()` returns.
    fn commit_background(&self, py: Python<'_>) -> PyResult<PyPendingCommit> {
        let writer = self.take(py)?;
        Ok(PyPendingCommit {
            pending: Mutex::new(Some(writer.commit_background())),
        })
    }

    /// Drop everything written; nothing is stored. The GIL is released meanwhile (an
    /// object-store writer aborts its multipart upload: a request). During a commit (in
    /// another thread), raises a `ShardwrightError`: a commit that began cannot be undone.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.abort(py)
    }
}

/// A commit running on a background thread.
#[pyclass(module = "shardwright._core", name = "PendingCommit", frozen)]
pub(crate) struct PyPendingCommit {
    /// Taken out (under the lock, briefly) by the first `wait()`.
    pending: Mutex<Option<PendingCommit>>,
}

#[pymethods]
impl PyPendingCommit {
    /// Whether `wait()` was called already.
    #[getter]
    fn done(&self) -> bool {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// Wait for the commit (without the GIL); returns its statistics or raises its error.
    fn wait<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let pending = self
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .ok_or_else(|| error("this commit was already waited for"))?;
            let stats = py.detach(|| pending.wait()).py()?;
            stats_dict(py, &stats)
        })
    }
}
