//! `_core.open_tiff`: a TIFF file, folder or glob pattern as a `Source`, with its axes and
//! the image metadata its files declare.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use shardwright_tiff::TiffSource;

use crate::errors::{guard, of_kind};
use crate::pyramid::{native, PySource};

/// Open a TIFF / BigTIFF / OME-TIFF / ImageJ file, a folder of TIFF files or a glob
/// pattern of them (without the GIL); returns the source and `{"axes", "scale", "units",
/// "channels", "pixel_sizes"}` (each of `scale`, `units` and `channels` `None` when the
/// files say nothing of it; `pixel_sizes`: per axis, its size or `None` where the files do
/// not declare it, where `scale` says 1.0).
#[pyfunction]
pub(crate) fn open_tiff<'py>(
    py: Python<'py>,
    spec: String,
) -> PyResult<(PySource, Bound<'py, PyDict>)> {
    guard(|| {
        let source = py
            .detach(|| TiffSource::open(&spec))
            .map_err(|e| of_kind(e.kind(), e.to_string()))?;
        let image = source.image_metadata();
        let info = PyDict::new(py);
        info.set_item("axes", source.axes())?;
        info.set_item("scale", image.scale)?;
        info.set_item("units", image.units)?;
        info.set_item("pixel_sizes", source.pixel_sizes())?;
        let channels = match image.channels {
            None => None,
            Some(channels) => {
                let list = PyList::empty(py);
                for channel in channels {
                    let entry = PyDict::new(py);
                    entry.set_item("label", channel.label)?;
                    entry.set_item("color", channel.color)?;
                    list.append(entry)?;
                }
                Some(list)
            }
        };
        info.set_item("channels", channels)?;
        Ok((native(source), info))
    })
}
