//! `_core.default_factors` and `_core.is_tiff_spec`: what `sw.convert` decides before it
//! builds (the reader itself is `_core.open_tiff`, in `tiff.rs`).

use pyo3::prelude::*;

/// The downsampling factors of a converted image with `axes` and level 0's pixel sizes
/// (`None` where unknown) ([`shardwright::pyramid::convert::default_factors`]).
#[pyfunction]
pub(crate) fn default_factors(axes: Vec<String>, sizes: Vec<Option<f64>>) -> Vec<u64> {
    shardwright::pyramid::convert::default_factors(&axes, &sizes)
}

/// Whether `text` names a TIFF file, a folder of TIFF files or a glob pattern of them
/// ([`shardwright_tiff::is_tiff_spec`]).
#[pyfunction]
pub(crate) fn is_tiff_spec(py: Python<'_>, text: String) -> bool {
    py.detach(|| shardwright_tiff::is_tiff_spec(&text))
}
