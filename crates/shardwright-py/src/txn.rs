//! `_core.Transaction`: region writes across shards, read-your-writes, parallel commit.

use numpy::{PyArray1, PyUntypedArray};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use shardwright::{Domain, Transaction};

use crate::errors::{error, guard, IntoPy};
use crate::writer::{gather, stats_dict, PyShardWriter};

/// A transaction over an array.
#[pyclass(module = "shardwright._core", name = "Transaction")]
pub(crate) struct PyTransaction {
    inner: Option<Transaction>,
    element_size: usize,
}

impl PyTransaction {
    pub(crate) fn new(inner: Transaction, element_size: usize) -> Self {
        Self {
            inner: Some(inner),
            element_size,
        }
    }

    fn open(&self) -> PyResult<&Transaction> {
        self.inner
            .as_ref()
            .ok_or_else(|| error("the transaction is already closed (committed or aborted)"))
    }
}

fn domain(origin: Vec<u64>, shape: Vec<u64>) -> PyResult<Domain> {
    Domain::try_new(origin, shape)
        .map_err(shardwright::Error::from)
        .py()
}

#[pymethods]
impl PyTransaction {
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_none()
    }

    /// Bytes staged now.
    #[getter]
    fn staged_memory(&self, py: Python<'_>) -> u64 {
        // The transaction's lock can be held by an early commit (network I/O) on another
        // thread: wait without the GIL.
        let tx = self.inner.as_ref();
        py.detach(|| tx.map_or(0, Transaction::staged_memory))
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
            let tx = self.open()?;
            let region = domain(origin, shape)?;
            let raw = gather(data, &region, self.element_size, |n| {
                Ok(shardwright::buffer::zeroed(n)?)
            })?;
            py.detach(|| tx.write(&region, &raw)).py()
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
            let tx = self.open()?;
            let region = domain(origin, shape)?;
            py.detach(|| tx.write_value(&region, value)).py()
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
            let tx = self.open()?;
            let region = domain(origin, shape)?;
            let bytes = py.detach(|| tx.read(&region)).py()?;
            Ok(PyArray1::from_vec(py, bytes))
        })
    }

    /// A separate writer of the shard at `index`, to merge back with `absorb`.
    fn shard_writer(&self, index: Vec<u64>) -> PyResult<PyShardWriter> {
        guard(|| {
            let tx = self.open()?;
            let shard = tx.array().shard(&index).py()?;
            let writer = tx.shard_writer(&shard).py()?;
            Ok(PyShardWriter::new(writer, self.element_size))
        })
    }

    /// Check the memory limit with a writer from `shard_writer` (not absorbed yet)
    /// counted in; past it, the transaction fails for good.
    fn check_writer(&self, py: Python<'_>, writer: &PyShardWriter) -> PyResult<()> {
        guard(|| {
            let tx = self.open()?;
            match writer.engine() {
                // without the GIL: the transaction's lock may be held by an early commit
                Some(inner) => py.detach(|| tx.check_writer(inner)).py(),
                None => Ok(()),
            }
        })
    }

    /// Merge a writer from `shard_writer` into the transaction (it is closed after).
    fn absorb(&self, py: Python<'_>, writer: &mut PyShardWriter) -> PyResult<()> {
        guard(|| {
            let tx = self.open()?;
            let inner = writer.take()?;
            py.detach(|| tx.absorb(inner)).py()
        })
    }

    /// Store every touched shard; returns the summed statistics.
    fn commit<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let tx = self
                .inner
                .take()
                .ok_or_else(|| error("the transaction is already closed (committed or aborted)"))?;
            let stats = py.detach(|| tx.commit()).py()?;
            let dict = stats_dict(py, &stats.commit)?;
            dict.set_item("shards_written", stats.shards_written)?;
            dict.set_item("shards_committed_early", stats.shards_committed_early)?;
            Ok(dict)
        })
    }

    /// Drop every staged write.
    fn abort(&mut self, py: Python<'_>) -> PyResult<()> {
        self.open()?;
        let tx = self.inner.take();
        py.detach(move || drop(tx)); // writers' uploads are aborted: requests
        Ok(())
    }
}
