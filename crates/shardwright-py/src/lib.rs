//! `shardwright._core`: the PyO3 binding of the shardwright engine.
//!
//! Thin glue: the Python package `shardwright` wraps these classes with its typed API.
//! Every entry point converts engine errors into the exception classes of
//! `shardwright._errors` and turns a Rust panic into a `ShardwrightError`, so no panic
//! crosses into Python.

mod add_levels;
mod appender;
mod array;
mod check;
mod convert;
mod destination;
mod errors;
mod faults;
mod grid;
mod image;
mod pyramid;
mod pystore;
mod shared;
mod tasks;
mod tiff;
mod txn;
mod writer;

use pyo3::prelude::*;

/// The native core of shardwright.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<array::PyArray>()?;
    m.add_class::<appender::PyAppender>()?;
    m.add_class::<appender::PyImageAppender>()?;
    m.add_class::<writer::PyShardWriter>()?;
    m.add_class::<writer::PyPendingCommit>()?;
    m.add_class::<grid::PyGridIter>()?;
    m.add_class::<txn::PyTransaction>()?;
    m.add_class::<faults::PyFaultyStore>()?;
    m.add_class::<pyramid::PySource>()?;
    m.add_class::<image::PyImage>()?;
    m.add_class::<tasks::PyPyramidTasks>()?;
    m.add_function(wrap_pyfunction!(pyramid::build, m)?)?;
    m.add_function(wrap_pyfunction!(add_levels::add_levels, m)?)?;
    m.add_function(wrap_pyfunction!(check::check, m)?)?;
    m.add_function(wrap_pyfunction!(tiff::open_tiff, m)?)?;
    m.add_function(wrap_pyfunction!(convert::is_tiff_spec, m)?)?;
    m.add_function(wrap_pyfunction!(convert::default_factors, m)?)?;
    m.add_function(wrap_pyfunction!(
        destination::remove_folder_to_overwrite,
        m
    )?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    Ok(())
}

/// Run the `shardwright` command line (`argv`: the program name first) without the GIL;
/// returns the exit code. The same code as the `shardwright` binary built by cargo, except
/// that it catches no signal: a long command (`pyramid`, `copy`, `check`, `demo`) asks
/// Python's signal handlers after each shard, and one that raises (Ctrl-C's
/// `KeyboardInterrupt`, a SIGALRM handler's `TimeoutError`) stops it cleanly (it prints
/// "interrupted: ...") and the exception is then raised again to the caller.
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<std::ffi::OsString>) -> PyResult<i32> {
    // The first exception a signal handler raised; once there is one, stop without asking
    // the handlers again (a second exception would replace it).
    let raised: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);
    let code = py.detach(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let poll = || {
                let mut raised = raised.lock().unwrap_or_else(|e| e.into_inner());
                if raised.is_none() {
                    *raised = Python::attach(|py| py.check_signals().err());
                }
                raised.is_some()
            };
            shardwright_cli::run_with(argv, shardwright_cli::Interrupts::Poll(&poll))
        }))
        .unwrap_or_else(|panic| {
            eprintln!(
                "shardwright: error: {}",
                shardwright::panic_message(&*panic)
            );
            1
        })
    });
    match raised.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(err) => Err(err),
        None => Ok(code),
    }
}

/// The number of threads in the encoding pool.
#[pyfunction]
fn num_threads() -> usize {
    rayon::current_num_threads()
}

/// Size the encoding pool (before its first use; the default is one thread per core).
#[pyfunction]
fn set_num_threads(threads: usize) -> PyResult<()> {
    if threads == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "the number of encoder threads must be at least 1",
        ));
    }
    // Asking the pool its size would start it, so try to build it first.
    let built = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global();
    if built.is_ok() || rayon::current_num_threads() == threads {
        return Ok(());
    }
    Err({
        errors::error(format!(
            "the encoder pool already runs {} threads; set_encoder_threads must come before \
             the first write (or set RAYON_NUM_THREADS before starting Python)",
            rayon::current_num_threads()
        ))
    })
}
