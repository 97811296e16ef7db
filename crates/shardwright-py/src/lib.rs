//! `shardwright._core`: the PyO3 binding of the shardwright engine.
//!
//! Thin glue: the Python package `shardwright` wraps these classes with its typed API.
//! Every entry point converts engine errors into the exception classes of
//! `shardwright._errors` and turns a Rust panic into a `ShardwrightError`, so no panic
//! crosses into Python.

mod array;
mod errors;
mod grid;
mod txn;
mod writer;

use pyo3::prelude::*;

/// The native core of shardwright.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<array::PyArray>()?;
    m.add_class::<writer::PyShardWriter>()?;
    m.add_class::<grid::PyGridIter>()?;
    m.add_class::<txn::PyTransaction>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(num_threads, m)?)?;
    Ok(())
}

/// The number of threads in the encoding pool.
#[pyfunction]
fn num_threads() -> usize {
    rayon::current_num_threads()
}
