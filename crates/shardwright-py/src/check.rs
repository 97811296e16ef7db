//! `_core.check`: an fsck of a stored array (`shardwright.check`), run without the GIL.

use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use shardwright::check::{check as check_array, CheckOptions, CheckProgress};

use crate::array::PyArray;
use crate::errors::{guard, IntoPy};

fn progress_dict<'py>(py: Python<'py>, p: &CheckProgress) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("shards_done", p.shards_done)?;
    d.set_item("shards_total", p.shards_total)?;
    d.set_item("shards_stored", p.shards_stored)?;
    d.set_item("chunks_decoded", p.chunks_decoded)?;
    d.set_item("bytes_read", p.bytes_read)?;
    d.set_item("damaged", p.damaged)?;
    Ok(d)
}

/// Check (and with `repair`, mend) every stored shard of `array`; returns the report as
/// JSON text. `progress` receives a dict after each batch of shards; an exception it
/// raises (or Ctrl-C) stops the check and is raised again here.
#[pyfunction]
#[pyo3(signature = (array, quick, repair, progress=None))]
pub(crate) fn check(
    py: Python<'_>,
    array: &PyArray,
    quick: bool,
    repair: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    guard(|| {
        let options = CheckOptions { quick, repair };
        let raised: Mutex<Option<PyErr>> = Mutex::new(None);
        let mut on_progress = |p: &CheckProgress| -> bool {
            Python::attach(|py| {
                let outcome = py.check_signals().and_then(|()| match &progress {
                    Some(callback) => callback.call1(py, (progress_dict(py, p)?,)).map(|_| ()),
                    None => Ok(()),
                });
                match outcome {
                    Ok(()) => true,
                    Err(err) => {
                        let mut slot = raised.lock().unwrap_or_else(PoisonError::into_inner);
                        slot.get_or_insert(err);
                        false
                    }
                }
            })
        };
        let inner = &array.inner;
        let outcome = py.detach(|| check_array(inner, &options, &mut on_progress));
        if let Some(err) = raised.lock().unwrap_or_else(PoisonError::into_inner).take() {
            return Err(err);
        }
        Ok(outcome.py()?.to_json().to_string())
    })
}
