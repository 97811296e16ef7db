//! `_core.add_levels`: the levels of an existing image (`shardwright.add_levels`), written
//! from its level 0 by the engine's one-pass driver, level 0 only read.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use shardwright::pyramid::add_levels::add_levels as engine_add_levels;
use shardwright::pyramid::PyramidError;

use crate::array::PyArray;
use crate::destination::{build_options, Destination, Settings};
use crate::errors::guard;
use crate::pyramid::{progress_callback, report_dict};

/// Write the missing levels of the image at the folder `root`, the object-store `url` or
/// `adapter` + `path` (the group holding array `0`), then its group metadata. `settings`
/// as `sw.pyramid`'s (empty `factors`, and `levels`, `chunks`, `shards` `None`, take them
/// from the image, see the Rust `add_levels`; `method_named` false: the levels' own
/// method). Returns the level arrays and the report.
#[pyfunction]
#[pyo3(signature = (root, url, options, adapter, path, settings, method_named, progress))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn add_levels<'py>(
    py: Python<'py>,
    root: Option<PathBuf>,
    url: Option<String>,
    options: Vec<(String, String)>,
    adapter: Option<Py<PyAny>>,
    path: String,
    settings: Settings,
    method_named: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<(Vec<PyArray>, Bound<'py, PyDict>)> {
    guard(|| {
        let mut build = build_options(settings, true, None)?;
        if !method_named {
            build.request.method = None; // the levels' own
        }
        let text = match (&root, &url) {
            (Some(root), _) => root.display().to_string(),
            (None, Some(url)) => url.clone(),
            _ => String::new(),
        };
        let destination = Destination::of(py, root, url, &options, adapter, path)?;
        let (store, image_path) = destination.store_and_path();
        let raised: Arc<Mutex<Option<PyErr>>> = Arc::default();
        let mut on_progress = progress_callback(progress.as_ref(), &raised);
        let outcome = py.detach(|| engine_add_levels(store, &image_path, &build, &mut on_progress));
        let kept = raised.lock().unwrap_or_else(PoisonError::into_inner).take();
        let report = match (outcome, kept) {
            (Ok(report), _) => report,
            (Err(_), Some(err)) => return Err(err),
            (Err(shardwright::Error::Pyramid(PyramidError::NoLevelZero { path, found })), None)
                if path.is_empty() =>
            {
                let named = PyramidError::NoLevelZero { path: text, found };
                return Err(crate::errors::to_py(named.into()));
            }
            (Err(e), None) => return Err(crate::errors::to_py(e)),
        };
        let arrays = report
            .levels
            .iter()
            .enumerate()
            .map(|(k, a)| destination.level(a.clone(), Some(k.to_string().as_str())))
            .collect();
        Ok((arrays, report_dict(py, &report)?))
    })
}
