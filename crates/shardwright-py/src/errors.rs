//! Mapping engine errors (and panics) to the Python exception tree of `shardwright._errors`.

use pyo3::prelude::*;
use shardwright::{Error, ErrorKind};

fn exception(py: Python<'_>, class: &str, message: String) -> PyErr {
    match py
        .import("shardwright._errors")
        .and_then(|m| m.getattr(class))
    {
        Ok(cls) => match cls.call1((message.clone(),)) {
            Ok(instance) => PyErr::from_value(instance),
            Err(err) => err,
        },
        Err(_) => pyo3::exceptions::PyRuntimeError::new_err(message),
    }
}

/// The Python exception for an engine error.
pub(crate) fn to_py(err: Error) -> PyErr {
    of_kind(err.kind(), err.to_string())
}

/// The Python exception of an error of `kind` (the class `to_py` gives an engine error of
/// that kind), with `message`.
pub(crate) fn of_kind(kind: ErrorKind, message: String) -> PyErr {
    Python::attach(|py| {
        let class = match kind {
            ErrorKind::Shape => "ShapeError",
            ErrorKind::Bounds => "BoundsError",
            ErrorKind::Unsupported => "UnsupportedError",
            ErrorKind::CorruptShard => "CorruptShardError",
            ErrorKind::NotFound => "ArrayNotFoundError",
            ErrorKind::Conflict => "ConflictError",
            ErrorKind::TooLarge => "TransactionTooLarge",
            ErrorKind::OutOfMemory => "OutOfMemoryError",
            ErrorKind::NotDurable => "NotDurableError",
            ErrorKind::Other => "ShardwrightError",
        };
        exception(py, class, message)
    })
}

/// A `ShardwrightError` with `message`.
pub(crate) fn error(message: impl Into<String>) -> PyErr {
    Python::attach(|py| exception(py, "ShardwrightError", message.into()))
}

/// An `ArrayNotFoundError` with `message`.
pub(crate) fn not_found(message: impl Into<String>) -> PyErr {
    Python::attach(|py| exception(py, "ArrayNotFoundError", message.into()))
}

/// A `NotAnArrayError` (a group where an array was expected) with `message`.
pub(crate) fn not_an_array(message: impl Into<String>) -> PyErr {
    Python::attach(|py| exception(py, "NotAnArrayError", message.into()))
}

/// Run `f`, turning a panic into a `ShardwrightError`.
pub(crate) fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => Err(error(shardwright::panic_message(&*panic))),
    }
}

/// Extension: `result.py()?` converts an engine error.
pub(crate) trait IntoPy<T> {
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
