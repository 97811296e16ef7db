//! Levels over a level 0 that exists: [`add_levels`] writes the missing levels of an
//! OME-Zarr image (or of any group holding an array `0`, written by anyone) from level 0,
//! read once and never written, with the one-pass driver; and, when level 0 grew or
//! shrank since the levels were made, first brings them in step ([`update_levels`]),
//! rewriting only the upper-level shards the change reaches.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::add_levels_group::{absent_shards, filled_since, image_document, old_shape, RECORD_KEY};
use super::build::run_arrays;
use super::levels::{level_array, settings_record, stored_shards, SETTINGS_KEY};
use super::options::{BuildOptions, Progress, Report};
use super::plan::{default_axes, AxisKind, Plan, PlanRequest};
use super::source::{ArraySource, Source};
use super::update::{changed_regions, update_levels};
use super::{Method, PyramidError};
use crate::array::METADATA_KEY;
use crate::error::{Error, Result};
use crate::store::{join, Store};
use crate::Array;

/// Most levels looked for above level 0.
const MAX_LEVELS: usize = 64;

/// Most absent level-0 shards recorded (to find those written since, on the next call).
pub(crate) const MAX_ABSENT: usize = 10_000;

/// Write the levels above level 0 of the image at `path` in `store` (arrays `path/1`,
/// `path/2`, … next to `path/0`), then its group metadata, last. Level 0 is read once
/// (`Report::bytes_read` ≈ its raw size) and never written; levels found already, made
/// with the same settings, are resumed (their stored shards kept) and, when level 0's
/// shape changed since they were made, first updated ([`update_levels`]: only the shards
/// the new data reaches are rewritten).
///
/// `options.request` may leave out what the image says: `factors` empty → the levels'
/// record, else the ratio of the OME scales of levels 1 and 0, else 2 along the space
/// axes (y, x; z too) and 1 elsewhere; `method` → the levels' record, else mean; `levels`
/// → as many as exist (else the stop rule of [`PlanRequest::levels`]); `chunks`,
/// `shards` (one shape, for every level above 0 made new; levels found keep theirs) →
/// level 0's, clipped; `axes` → the OME
/// axes, else level 0's `dimension_names`, else the last of `t, c, z, y, x`.
/// `options.resume` is implied; `name` and `units` serve a group with no multiscale yet.
///
/// ```
/// use std::sync::Arc;
/// use shardwright::pyramid::{add_levels::add_levels, build::BuildOptions, plan::PlanRequest};
/// use shardwright::{Array, ArraySpec, Compressor, MemoryStore};
/// let store = Arc::new(MemoryStore::new());
/// let spec = ArraySpec::new(vec![8, 8], "uint8", vec![4, 4]).shards(vec![8, 8])
///     .dimension_names(vec!["y".into(), "x".into()]);
/// let level0 = Array::create(store.clone(), "img/0", &spec).unwrap();
/// let shard = level0.shard(&[0, 0]).unwrap();
/// let w = level0.shard_writer(&shard).unwrap();
/// w.write_region(&shard, &[4; 64]).unwrap();
/// w.commit().unwrap();
/// let request = PlanRequest { levels: Some(3), ..Default::default() };
/// let report = add_levels(store, "img", &BuildOptions::new(request, Compressor::None), &mut |_| true).unwrap();
/// assert_eq!(report.levels[2].layout().shape(), &[2, 2]);
/// assert_eq!(report.bytes_read, 64);
/// assert_eq!(report.shards_written, vec![0, 1, 1]);
/// ```
///
/// # Errors
/// [`PyramidError::NoLevelZero`] when there is no array `path/0`; [`PyramidError::Resume`]
/// for a level made with other settings (the message says how to proceed); the plan's
/// errors (factors of the wrong length, …) and the store's and writers' otherwise.
pub fn add_levels(
    store: Arc<dyn Store>,
    path: &str,
    options: &BuildOptions,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Report> {
    let started = Instant::now();
    let path = path.trim_matches('/').to_string();
    let group_key = join(&path, METADATA_KEY);
    let group = read_group(store.as_ref(), &group_key)?;
    let level0 = open_level0(&store, &path, group.as_ref())?.with_options(options.writer.clone());
    refuse_rectilinear(&level0, "add levels over")?;
    let shape0 = level0.layout().shape().to_vec();
    let data_type = level0.layout().data_type_spec().to_string();
    let multiscale = group
        .as_ref()
        .and_then(|g| g.pointer("/attributes/ome/multiscales/0"));
    let mut uppers = Vec::new();
    for k in 1..MAX_LEVELS {
        match Array::open(Arc::clone(&store), &join(&path, &k.to_string())) {
            Ok(array) => uppers.push(array.with_options(options.writer.clone())),
            Err(Error::NotFound(_)) => break,
            Err(e) => return Err(e),
        }
    }
    let made = uppers
        .first()
        .and_then(|a| a.layout().metadata().attributes.get(SETTINGS_KEY).cloned());
    let record = group
        .as_ref()
        .and_then(|g| g.get("attributes"))
        .and_then(|a| a.get(RECORD_KEY));
    let axes = match &options.request.axes {
        Some(axes) => axes.clone(),
        None => axes_of(multiscale, &level0),
    };
    let factors = if options.request.factors.is_empty() {
        factors_of(made.as_ref(), record, multiscale, &axes)
    } else {
        options.request.factors.clone()
    };
    let method = match options.request.method {
        Some(m) => m,
        None => method_of(made.as_ref())?,
    };
    let levels = options
        .request
        .levels
        .or((!uppers.is_empty()).then_some(uppers.len() + 1));
    let request = PlanRequest {
        factors,
        levels,
        method: Some(method),
        chunks: options.request.chunks.clone(),
        shards: options.request.shards.clone(),
        axes: Some(axes),
    };
    let mut plan = plan_over(&request, &level0)?;
    adopt_existing(&mut plan, &uppers);
    let present = stored_shards(std::slice::from_ref(&level0))?
        .pop()
        .unwrap_or_default();
    let mut update = None;
    if let Some(level1) = uppers.first() {
        let old = old_shape(record, level1, &shape0, &plan.factors);
        let mut dirty = changed_regions(&old, &shape0, &plan.factors);
        dirty.extend(filled_since(record, &level0, &present));
        // level-0 shards an image stored again in a session that stopped before finishing
        match group.as_ref().map(super::add_levels_group::rewritten_of) {
            Some(None) => dirty.push(level0.bounds()),
            Some(Some(rewritten)) => {
                dirty.extend(
                    rewritten
                        .iter()
                        .filter_map(|index| level0.shard(index).ok()),
                );
            }
            None => {}
        }
        if !dirty.is_empty() {
            for (k, array) in uppers.iter().enumerate().take(plan.levels.len() - 1) {
                same_settings(array, &plan, k + 1, &data_type)?;
            }
            let kept = uppers.len().min(plan.levels.len() - 1);
            let mut arrays = vec![level0.clone()];
            arrays.extend(uppers.iter().take(kept).cloned());
            update = Some(update_levels(&arrays, &plan.factors, plan.method, &dirty)?);
        }
    }
    let source = ArraySource::new(level0.clone());
    let mut resumed = options.clone();
    resumed.resume = true;
    let mut arrays = vec![level0.clone()];
    for k in 1..plan.levels.len() {
        let level_path = join(&path, &k.to_string());
        arrays.push(
            level_array(
                (&data_type, source.fill_value()),
                &store,
                &level_path,
                &plan,
                k,
                &resumed,
            )
            .map_err(how_to_proceed)?,
        );
    }
    let mut stored = vec![(0..level0.shard_grid().len()).collect::<HashSet<u64>>()];
    stored.extend(stored_shards(arrays.get(1..).unwrap_or_default())?);
    // the windows are computed only for an image with `omero` channels (given now, or
    // found in the group)
    let has_omero = group
        .as_ref()
        .is_some_and(|g| g.pointer("/attributes/ome/omero/channels").is_some());
    let observe = has_omero || options.image.channels(&plan)?.is_some();
    let (mut report, windows) = run_arrays(
        &source, arrays, stored, &plan, observe, &resumed, progress, started,
    )?;
    if let Some(update) = update {
        report.bytes_read += update.bytes_read;
        report.bytes_written += update.bytes_written;
        report.puts += update.puts;
        report.gets += update.gets;
        for (total, n) in report.shards_written.iter_mut().zip(&update.shards_written) {
            *total += n;
        }
    }
    // An image that create_image left unfinished has no OME metadata yet: its record
    // holds the physical metadata it was made with.
    let recorded: Option<super::image_metadata::ImageMetadata> = record
        .and_then(|r| r.pointer("/image/metadata"))
        .and_then(|m| serde_json::from_value(m.clone()).ok());
    let image = match recorded {
        Some(recorded) if options.image == super::image_metadata::ImageMetadata::default() => {
            recorded
        }
        _ => options.image.clone(),
    };
    let name = image
        .name
        .clone()
        .unwrap_or_else(|| super::levels::image_name(options, &path));
    let absent = absent_shards(&level0, &present);
    let text = image_document(
        group.as_ref(),
        &plan,
        &name,
        &image,
        &windows,
        &shape0,
        absent.as_deref(),
    )?;
    store.put(&group_key, &[&text])?;
    report.bytes_written += text.len() as u64;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The group's `zarr.json`, parsed, if there is one.
fn read_group(store: &dyn Store, key: &str) -> Result<Option<Value>> {
    let Some(bytes) = store.get(key)? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| PyramidError::invalid(format!("{key} is not JSON: {e}")).into())
}

/// Level 0, or [`PyramidError::NoLevelZero`].
fn open_level0(store: &Arc<dyn Store>, path: &str, group: Option<&Value>) -> Result<Array> {
    match Array::open(Arc::clone(store), &join(path, "0")) {
        Ok(array) => Ok(array),
        Err(Error::NotFound(_)) => {
            let is_array = group
                .and_then(|g| g.get("node_type"))
                .and_then(Value::as_str)
                == Some("array");
            let found = if is_array {
                "; that is an array: give the group holding it as '0'".to_string()
            } else {
                String::new()
            };
            Err(PyramidError::NoLevelZero {
                path: path.to_string(),
                found,
            }
            .into())
        }
        Err(e) => Err(e),
    }
}

/// The axis names: the multiscale's, else level 0's dimension names, else the defaults.
fn axes_of(multiscale: Option<&Value>, level0: &Array) -> Vec<String> {
    let ndim = level0.layout().shape().len();
    let named: Option<Vec<String>> = multiscale
        .and_then(|m| m.get("axes"))
        .and_then(Value::as_array)
        .and_then(|axes| {
            axes.iter()
                .map(|a| a.get("name").and_then(Value::as_str).map(String::from))
                .collect()
        });
    if let Some(axes) = named.filter(|a| a.len() == ndim) {
        return axes;
    }
    let dims: Option<Vec<String>> = level0
        .layout()
        .metadata()
        .dimension_names
        .as_ref()
        .and_then(|names| {
            names
                .iter()
                .map(|n| n.clone().filter(|s| !s.is_empty()))
                .collect()
        });
    dims.filter(|d| d.len() == ndim)
        .unwrap_or_else(|| default_axes(ndim))
}

pub(super) fn ints(value: Option<&Value>) -> Option<Vec<u64>> {
    value?.as_array()?.iter().map(Value::as_u64).collect()
}

/// The factors the levels were made with, or the defaults for `axes`.
fn factors_of(
    made: Option<&Value>,
    record: Option<&Value>,
    multiscale: Option<&Value>,
    axes: &[String],
) -> Vec<u64> {
    let ndim = axes.len();
    let recorded = ints(made.and_then(|m| m.get("factors")))
        .or_else(|| ints(record.and_then(|r| r.get("factors"))));
    if let Some(f) = recorded.filter(|f| f.len() == ndim) {
        return f;
    }
    let scale = |k: usize| -> Option<Vec<f64>> {
        let d = multiscale?.get("datasets")?.get(k)?;
        d.get("coordinateTransformations")?
            .as_array()?
            .iter()
            .find(|t| t.get("type").and_then(Value::as_str) == Some("scale"))?
            .get("scale")?
            .as_array()?
            .iter()
            .map(Value::as_f64)
            .collect()
    };
    if let (Some(s0), Some(s1)) = (scale(0), scale(1)) {
        let ratio: Option<Vec<u64>> = s0
            .iter()
            .zip(&s1)
            .map(|(a, b)| {
                let r = (b / a).round();
                (*a > 0.0 && r >= 1.0 && r.is_finite()).then_some(r as u64)
            })
            .collect();
        if let Some(f) = ratio.filter(|f| f.len() == ndim) {
            return f;
        }
    }
    let space = axes
        .iter()
        .filter(|a| AxisKind::of(a) == AxisKind::Space)
        .count();
    axes.iter()
        .map(|a| u64::from(AxisKind::of(a) == AxisKind::Space && space >= 2) + 1)
        .collect()
}

/// Refuse to `what` a level 0 with a rectilinear chunk grid (the levels above are planned
/// on whole shards of one shape): copy it into regular shards first.
pub(crate) fn refuse_rectilinear(level0: &Array, what: &str) -> Result<()> {
    if level0.layout().has_regular_shards() {
        return Ok(());
    }
    Err(Error::Layout(crate::layout::LayoutError::Unsupported(
        format!(
            "{what} '{}': its chunk grid is rectilinear (shards of several shapes); copy it into \
         a regular grid first (sw.copy / shardwright copy)",
            level0.path()
        ),
    )))
}

/// The method the levels were made with (their record), else mean.
fn method_of(made: Option<&Value>) -> Result<Method> {
    match made.and_then(|m| m.get("method")).and_then(Value::as_str) {
        Some(name) => Ok(name.parse().map_err(PyramidError::from)?),
        None => Ok(Method::Mean),
    }
}

/// The plan of the levels over `level0`: level 0 as it is (its chunks and shards), the
/// levels above with the chunks and shards asked for (one shape for all), else level 0's.
fn plan_over(request: &PlanRequest, level0: &Array) -> Result<Plan> {
    let layout = level0.layout();
    let (chunks0, shards0) = (layout.chunk_shape().to_vec(), layout.shard_shape().to_vec());
    let one = |given: &Option<Vec<Vec<u64>>>, what: &str| -> Result<Option<Vec<u64>>> {
        match given.as_deref() {
            None => Ok(None),
            Some([only]) => Ok(Some(only.clone())),
            Some(more) => Err(PyramidError::invalid(format!(
                "add_levels takes one {what} shape for every level above 0; got {}",
                more.len()
            ))
            .into()),
        }
    };
    let chunks = one(&request.chunks, "chunks")?;
    let shards = one(&request.shards, "shards")?;
    let upper_chunks = chunks.clone().unwrap_or_else(|| chunks0.clone());
    let upper_shards = match (&shards, &chunks) {
        (Some(s), _) => s.clone(),
        (None, Some(c)) => {
            super::plan::default_shards(request.axes.as_deref().unwrap_or_default(), c)
        }
        (None, None) => shards0.clone(),
    };
    let data_type = layout.data_type_spec();
    let mut first = request.clone();
    first.chunks = Some(vec![upper_chunks.clone()]);
    first.shards = Some(vec![upper_shards.clone()]);
    let n = first.plan(layout.shape(), data_type)?.levels.len();
    let mut every = first;
    every.levels = Some(n);
    every.chunks = Some(
        std::iter::once(chunks0)
            .chain(std::iter::repeat_n(upper_chunks, n - 1))
            .collect(),
    );
    every.shards = Some(
        std::iter::once(shards0.clone())
            .chain(std::iter::repeat_n(upper_shards, n - 1))
            .collect(),
    );
    let mut plan = every.plan(layout.shape(), data_type)?;
    if let Some(level) = plan.levels.first_mut() {
        level.shards = shards0; // the stored grid, unclipped
    }
    Ok(plan)
}

/// The levels found keep their inner-chunk and shard shapes (chunks clipped to a small
/// level stay so when level 0 grows): `chunks` and `shards` asked for serve the levels
/// made new.
fn adopt_existing(plan: &mut Plan, uppers: &[Array]) {
    for (k, array) in uppers.iter().enumerate() {
        let layout = array.layout();
        plan.adopt_grid(k + 1, layout.chunk_shape(), layout.shard_shape());
    }
}

/// Refuse to update a level made with other settings (before anything is rewritten).
fn same_settings(array: &Array, plan: &Plan, k: usize, data_type: &str) -> Result<()> {
    let layout = array.layout();
    let made = layout.metadata().attributes.get(SETTINGS_KEY);
    let record = settings_record(plan, k);
    let wanted = record.get(SETTINGS_KEY);
    let message = if layout.data_type_spec() != data_type {
        Some(format!(
            "it holds {}; level 0 holds {data_type}",
            layout.data_type_spec()
        ))
    } else if made.is_some_and(|m| Some(m) != wanted) {
        let made = made.cloned().unwrap_or_default();
        let makes = wanted.cloned().unwrap_or_default();
        Some(format!("it was made with {made}; this run makes {makes}"))
    } else {
        None
    };
    match message {
        None => Ok(()),
        Some(message) => Err(how_to_proceed(
            PyramidError::Resume {
                path: array.path().to_string(),
                message,
            }
            .into(),
        )),
    }
}

/// A level made otherwise, with what to do about it.
fn how_to_proceed(err: Error) -> Error {
    match err {
        Error::Pyramid(PyramidError::Resume { path, message }) => PyramidError::Resume {
            path,
            message: format!(
                "{message}; add_levels keeps the levels it finds: pass the settings they were \
                 made with (or none, to take them from the levels), or delete the arrays above \
                 level 0 to make them again"
            ),
        }
        .into(),
        other => other,
    }
}

#[cfg(test)]
#[path = "add_levels_tests.rs"]
mod tests;
