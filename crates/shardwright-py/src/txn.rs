//! `_core.Transaction`: region writes across shards, read-your-writes, parallel commit.

use numpy::{PyArray1, PyUntypedArray};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use shardwright::{Domain, Transaction};

use crate::errors::{guard, IntoPy};
use crate::shared::{Engine, Peek, Shared};
use crate::writer::{gather, stats_dict, PyShardWriter};

/// A transaction over an array. Frozen, its engine transaction behind a [`Shared`]: any
/// thread may call it while another writes or commits (see `shared.rs`).
#[pyclass(module = "shardwright._core", name = "Transaction", frozen)]
pub(crate) struct PyTransaction {
    inner: Shared<Transaction>,
    element_size: usize,
}

/// During a commit, a transaction reports the bytes it staged when the commit began.
impl Engine for Transaction {
    type Snapshot = u64;

    fn snapshot(&self) -> u64 {
        self.staged_memory()
    }
}

impl PyTransaction {
    pub(crate) fn new(inner: Transaction, element_size: usize) -> Self {
        Self {
            inner: Shared::new(inner, "the transaction".to_string()),
            element_size,
        }
    }
}

fn domain(origin: Vec<u64>, shape: Vec<u64>) -> PyResult<Domain> {
    Domain::try_new(origin, shape)
        .map_err(shardwright::Error::from)
        .py()
}

#[pymethods]
impl PyTransaction {
    /// Whether the transaction was committed or aborted (not yet while its commit runs).
    #[getter]
    fn closed(&self) -> bool {
        self.inner.closed()
    }

    /// Whether a commit runs now (in another thread).
    #[getter]
    fn committing(&self) -> bool {
        self.inner.committing()
    }

    /// Bytes staged now (during a commit: when it began).
    #[getter]
    fn staged_memory(&self, py: Python<'_>) -> u64 {
        match self.inner.peek() {
            // The transaction's lock can be held by an early commit (network I/O) on
            // another thread: wait without the GIL.
            Peek::Live(tx) => py.detach(move || tx.staged_memory()),
            Peek::Committing(staged) => staged,
            Peek::Closed => 0,
        }
    }

    /// Stage a numpy array (of the array's dtype, any layout) over a region.
    fn write(
        &self,
        py: Python<'_>,
        origin: Vec<u64>,
        shape: Vec<u64>,
        data: &Bound<'_, PyUntypedArray>,
    ) -> PyResult<()> {
        guard(|| {
            let tx = self.inner.lease()?;
            let region = domain(origin, shape)?;
            let raw = gather(data, &region, self.element_size, |n| {
                Ok(shardwright::buffer::zeroed(n)?)
            })?;
            py.detach(move || tx.write(&region, &raw)).py()
        })
    }

    /// Stage one element's bytes over every element of a region.
    fn write_value(
        &self,
        py: Python<'_>,
        origin: Vec<u64>,
        shape: Vec<u64>,
        value: &[u8],
    ) -> PyResult<()> {
        guard(|| {
            let tx = self.inner.lease()?;
            let region = domain(origin, shape)?;
            py.detach(move || tx.write_value(&region, value)).py()
        })
    }

    /// Read a region (stored data with staged data on top) as flat uint8.
    fn read<'py>(
        &self,
        py: Python<'py>,
        origin: Vec<u64>,
        shape: Vec<u64>,
    ) -> PyResult<Bound<'py, PyArray1<u8>>> {
        guard(|| {
            let tx = self.inner.lease()?;
            let region = domain(origin, shape)?;
            let bytes = py.detach(move || tx.read(&region)).py()?;
            Ok(PyArray1::from_vec(py, bytes))
        })
    }

    /// A separate writer of the shard at `index`, to merge back with `absorb`.
    fn shard_writer(&self, index: Vec<u64>) -> PyResult<PyShardWriter> {
        guard(|| {
            let tx = self.inner.lease()?;
            let shard = tx.array().shard(&index).py()?;
            let writer = tx.shard_writer(&shard).py()?;
            Ok(PyShardWriter::new(writer, self.element_size))
        })
    }

    /// Check the memory limit with a writer from `shard_writer` (not absorbed yet)
    /// counted in; past it, the transaction fails for good.
    fn check_writer(&self, py: Python<'_>, writer: &PyShardWriter) -> PyResult<()> {
        guard(|| {
            let tx = self.inner.lease()?;
            match writer.peek() {
                // without the GIL: the transaction's lock may be held by an early commit
                Peek::Live(inner) => py.detach(move || tx.check_writer(&inner)).py(),
                Peek::Committing(_) | Peek::Closed => Ok(()),
            }
        })
    }

    /// Merge a writer from `shard_writer` into the transaction (it is closed after).
    fn absorb(&self, py: Python<'_>, writer: &PyShardWriter) -> PyResult<()> {
        guard(|| {
            let tx = self.inner.lease()?;
            let inner = writer.take(py)?;
            py.detach(move || tx.absorb(inner)).py()
        })
    }

    /// Store every touched shard; returns the summed statistics. Waits first for writes
    /// in progress in other threads; while it runs, state reads answer (as when it
    /// began) and writes, reads, commit and abort raise a `ShardwrightError`.
    fn commit<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let stats = self.inner.commit(py, Transaction::commit)?.py()?;
            let dict = stats_dict(py, &stats.commit)?;
            dict.set_item("shards_written", stats.shards_written)?;
            dict.set_item("shards_committed_early", stats.shards_committed_early)?;
            Ok(dict)
        })
    }

    /// Drop every staged write (the writers' uploads are aborted: requests, without the
    /// GIL). During a commit (in another thread), raises a `ShardwrightError`.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.abort(py)
    }
}
