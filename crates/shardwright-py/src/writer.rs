//! `_core.ShardWriter`: one shard's writer; numpy data is copied once, with the GIL held,
//! then encoding runs on Rust threads with the GIL released.

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use shardwright::domain::copy::gather_strided;
use shardwright::{Domain, PendingCommit, ShardWriter};

use crate::errors::{error, guard, IntoPy};
use crate::grid::PyGridIter;

/// The writer of one shard.
#[pyclass(module = "shardwright._core", name = "ShardWriter")]
pub(crate) struct PyShardWriter {
    inner: Option<ShardWriter>,
    shard: Domain,
    element_size: usize,
}

impl Drop for PyShardWriter {
    /// A writer collected without commit or abort: dropped without the GIL (an
    /// object-store writer aborts its multipart upload, which waits for requests).
    fn drop(&mut self) {
        if let Some(writer) = self.inner.take() {
            Python::attach(|py| py.detach(move || drop(writer)));
        }
    }
}

impl PyShardWriter {
    /// Take the engine writer out (the Python writer is closed after).
    pub(crate) fn take(&mut self) -> PyResult<ShardWriter> {
        self.open()?;
        Ok(self.inner.take().expect("checked open"))
    }

    pub(crate) fn new(inner: ShardWriter, element_size: usize) -> Self {
        Self {
            shard: inner.shard().clone(),
            inner: Some(inner),
            element_size,
        }
    }

    /// The engine writer, if still open.
    pub(crate) fn engine(&self) -> Option<&ShardWriter> {
        self.inner.as_ref()
    }

    fn open(&self) -> PyResult<&ShardWriter> {
        self.inner.as_ref().ok_or_else(|| {
            error(format!(
                "the shard writer for {} is already closed (committed or aborted)",
                self.shard
            ))
        })
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

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_none()
    }

    #[getter]
    fn chunks_written(&self, py: Python<'_>) -> usize {
        // The slot table's lock can be held while an encoded batch is uploaded.
        let writer = self.inner.as_ref();
        py.detach(|| writer.map_or(0, ShardWriter::chunks_written))
    }

    /// Bytes the writer holds now (encoded chunks, raw chunks in flight, partial chunks).
    #[getter]
    fn staged_memory(&self, py: Python<'_>) -> usize {
        let writer = self.inner.as_ref();
        py.detach(|| writer.map_or(0, ShardWriter::staged_memory))
    }

    fn inner_chunks(&self) -> PyResult<PyGridIter> {
        Ok(PyGridIter::new(self.open()?.inner_chunks()))
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
            let writer = self.open()?;
            let region = domain(origin, shape)?;
            let raw = gather(data, &region, self.element_size, |n| writer.buffer(n))?;
            py.detach(|| writer.write_owned(&region, raw)).py()
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
            let writer = self.open()?;
            let region = domain(origin, shape)?;
            py.detach(|| writer.write_region_value(&region, value)).py()
        })
    }

    /// Wait for the encodes and store the shard; returns the commit statistics.
    fn commit<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            self.open()?;
            let writer = self.inner.take().expect("checked open");
            let stats = py.detach(|| writer.commit()).py()?;
            stats_dict(py, &stats)
        })
    }

    /// Commit on a background thread: returns at once a handle whose `wait()` gives the
    /// commit statistics (or raises the commit's error). The shard is stored only when
    /// `wait()` returns.
    fn commit_background(&mut self) -> PyResult<PyPendingCommit> {
        let writer = self.take()?;
        Ok(PyPendingCommit {
            pending: Some(writer.commit_background()),
        })
    }

    /// Drop everything written; nothing is stored. The GIL is released meanwhile (an
    /// object-store writer aborts its multipart upload: a request).
    fn abort(&mut self, py: Python<'_>) -> PyResult<()> {
        self.open()?;
        let writer = self.inner.take();
        py.detach(move || drop(writer));
        Ok(())
    }
}

/// A commit running on a background thread.
#[pyclass(module = "shardwright._core", name = "PendingCommit")]
pub(crate) struct PyPendingCommit {
    pending: Option<PendingCommit>,
}

#[pymethods]
impl PyPendingCommit {
    /// Whether `wait()` was called already.
    #[getter]
    fn done(&self) -> bool {
        self.pending.is_none()
    }

    /// Wait for the commit (without the GIL); returns its statistics or raises its error.
    fn wait<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let pending = self
                .pending
                .take()
                .ok_or_else(|| error("this commit was already waited for"))?;
            let stats = py.detach(|| pending.wait()).py()?;
            stats_dict(py, &stats)
        })
    }
}
