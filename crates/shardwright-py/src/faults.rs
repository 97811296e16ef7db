//! `_core.FaultyStore`: the engine's fault-injecting store wrapper, for tests in Python.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use shardwright::store::{Fault, FaultOp, FaultyStore, Store};
use shardwright::{FilesystemStore, MemoryStore};

use crate::array::{open_named, PyArray};
use crate::errors::{guard, IntoPy};

/// A store (a local folder, or memory) whose planned calls fail, return damaged bytes or
/// stall; see `shardwright.testing.FaultyStore`.
#[pyclass(module = "shardwright._core", name = "FaultyStore", frozen)]
pub(crate) struct PyFaultyStore {
    store: Arc<FaultyStore>,
    name: String,
}

fn op(name: &str) -> PyResult<FaultOp> {
    FaultOp::by_name(name).ok_or_else(|| {
        let names: Vec<&str> = FaultOp::ALL.iter().map(|o| o.name()).collect();
        PyValueError::new_err(format!(
            "unknown store operation {name:?}; expected one of {names:?}"
        ))
    })
}

fn fault(kind: &str, arg: Option<u64>) -> PyResult<Fault> {
    let needs = |what: &str| {
        arg.ok_or_else(|| PyValueError::new_err(format!("fault {kind:?} needs {what}")))
    };
    Ok(match kind {
        "fail" => Fault::Fail,
        "fail_after" => Fault::FailAfter,
        "truncate" => Fault::Truncate(needs("the number of bytes to keep")?),
        "flip_bit" => Fault::FlipBit(needs("the bit to flip")?),
        "stall" => Fault::Stall(Duration::from_millis(needs("milliseconds")?)),
        "block" => Fault::Block,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown fault {other:?}; expected 'fail', 'fail_after', 'truncate', \
                 'flip_bit', 'stall' or 'block'"
            )))
        }
    })
}

#[pymethods]
impl PyFaultyStore {
    /// A faulty store over the folder `root` (the store root), or over memory.
    #[new]
    #[pyo3(signature = (root=None))]
    fn new(root: Option<PathBuf>) -> Self {
        let (inner, name): (Arc<dyn Store>, String) = match root {
            Some(root) => {
                let name = format!("faulty://{}", root.display());
                (Arc::new(FilesystemStore::new(root)), name)
            }
            None => (Arc::new(MemoryStore::new()), "faulty://memory".to_string()),
        };
        Self {
            store: Arc::new(FaultyStore::new(inner)),
            name,
        }
    }

    /// Plan `fault` for call `nth` (from 0) of `op`.
    #[pyo3(signature = (op_name, nth, kind, arg=None))]
    fn inject(&self, op_name: &str, nth: u64, kind: &str, arg: Option<u64>) -> PyResult<()> {
        self.store.inject(op(op_name)?, nth, fault(kind, arg)?);
        Ok(())
    }

    /// Forget planned faults and counts.
    fn reset(&self) {
        self.store.reset();
    }

    /// Let blocked calls (and later ones) proceed.
    fn release(&self) {
        self.store.release();
    }

    /// Calls blocked now.
    fn blocked(&self) -> u64 {
        self.store.blocked()
    }

    /// Calls of each operation so far.
    fn counts(&self) -> Vec<(String, u64)> {
        self.store
            .counts()
            .into_iter()
            .map(|(o, n)| (o.name().to_string(), n))
            .collect()
    }

    /// The faults that fired: operation, call number, key.
    fn fired(&self) -> Vec<(String, u64, String)> {
        self.store
            .fired_at()
            .into_iter()
            .map(|(o, n, k)| (o.name().to_string(), n, k))
            .collect()
    }

    /// The value at `key` in the wrapped store (no fault, not counted).
    fn raw_get<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let value = py
            .detach(|| self.store.inner().get(key))
            .map_err(shardwright::Error::from)
            .py()?;
        Ok(value.map(|v| PyBytes::new(py, &v)))
    }

    /// Open the array at `path` through the faults (a `_core.Array`).
    #[pyo3(signature = (path=String::new()))]
    fn open(&self, py: Python<'_>, path: String) -> PyResult<PyArray> {
        guard(|| {
            let store: Arc<dyn Store> = Arc::clone(&self.store) as Arc<dyn Store>;
            let url = format!("{}/{path}", self.name);
            let inner = open_named(py, store, &path, &url)?;
            Ok(PyArray::remote(inner, url))
        })
    }
}
