//! The arrays of a pyramid's levels: their paths, their creation (or, resuming, their
//! opening and the check that they were made the same way), the record of how each was
//! made, and the group's OME metadata document.

use std::collections::HashSet;
use std::sync::Arc;

use super::ome;
use super::options::BuildOptions;
use super::plan::Plan;
use super::window::Window;
use super::PyramidError;
use crate::error::{Error, Result};
use crate::layout::ArraySpec;
use crate::store::{join, Store};
use crate::Array;

/// The group's `zarr.json` of the pyramid at `path` (trimmed of slashes): the OME
/// `multiscales` of `plan`, named `options.image.name` or after the path's last part, with
/// the channels' `windows` (see [`ome::group_metadata`]).
pub(crate) fn group_document(
    plan: &Plan,
    options: &BuildOptions,
    path: &str,
    windows: &[Window],
) -> Result<Vec<u8>> {
    let name = image_name(options, path);
    let group = ome::group_metadata(plan, &name, &options.image, windows)?;
    pretty(&group)
}

/// The multiscale's name: `options.image.name`, or the last part of `path`.
pub(crate) fn image_name(options: &BuildOptions, path: &str) -> String {
    options.image.name.clone().unwrap_or_else(|| {
        path.rsplit('/')
            .next()
            .filter(|s| !s.is_empty())
            .unwrap_or("image")
            .to_string()
    })
}

/// `document` as the pretty JSON every group `zarr.json` is written as.
pub(super) fn pretty(document: &serde_json::Value) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec_pretty(document)
        .map_err(|e| PyramidError::invalid(format!("group metadata does not serialize: {e}")))?)
}

/// The paths of the level arrays of the pyramid at `path`: `path/0`, `path/1`, …
pub(crate) fn level_paths(path: &str, plan: &Plan) -> Vec<String> {
    (0..plan.levels.len())
        .map(|k| join(path, &k.to_string()))
        .collect()
}

/// The arrays of the levels: created, or (resuming) opened and checked against the plan.
pub(crate) fn level_arrays(
    (data_type, fill_value): (&str, Option<serde_json::Value>),
    store: &Arc<dyn Store>,
    paths: &[String],
    plan: &Plan,
    options: &BuildOptions,
) -> Result<Vec<Array>> {
    paths
        .iter()
        .enumerate()
        .take(plan.levels.len())
        .map(|(k, path)| {
            level_array(
                (data_type, fill_value.clone()),
                store,
                path,
                plan,
                k,
                options,
            )
        })
        .collect()
}

/// The array of level `k` at `path`: created, or (resuming) opened and checked.
pub(crate) fn level_array(
    (data_type, fill_value): (&str, Option<serde_json::Value>),
    store: &Arc<dyn Store>,
    path: &str,
    plan: &Plan,
    k: usize,
    options: &BuildOptions,
) -> Result<Array> {
    let data_type = data_type.to_string();
    let level = plan
        .levels
        .get(k)
        .ok_or_else(|| Error::Internal(format!("no level {k} in the plan")))?;
    let mut spec = ArraySpec::new(level.shape.clone(), &data_type, level.chunks.clone())
        .shards(level.shards.clone())
        .compressor(options.compressor)
        .dimension_names(plan.axes.clone())
        .attributes(settings_record(plan, k));
    match fill_value {
        Some(fill) => spec = spec.fill_value(fill),
        None if data_type == "bool" => spec = spec.fill_value(serde_json::json!(false)),
        None => {}
    }
    let array = if options.resume {
        match Array::open(Arc::clone(store), path) {
            Ok(existing) => {
                check_same(&existing, plan, k, &data_type, path)?;
                existing
            }
            Err(Error::NotFound(_)) => Array::create(Arc::clone(store), path, &spec)?,
            Err(e) => return Err(e),
        }
    } else {
        Array::create(Arc::clone(store), path, &spec)?
    };
    Ok(array.with_options(options.writer.clone()))
}

/// The attribute each level array carries: how it was made (a resumed run must make it
/// the same way).
pub(crate) const SETTINGS_KEY: &str = "shardwright";

/// The attributes of level `k`: `{"shardwright": {"level", "factors", "method"}}`.
pub(super) fn settings_record(plan: &Plan, k: usize) -> serde_json::Map<String, serde_json::Value> {
    let record = serde_json::json!({
        "level": k,
        "factors": plan.factors,
        "method": plan.method.to_string(),
    });
    serde_json::Map::from_iter([(SETTINGS_KEY.to_string(), record)])
}

/// Refuse to resume into an array `plan` would not have made as its level `k`: another
/// shape, data type, chunks, shards, axes, factors or method.
fn check_same(array: &Array, plan: &Plan, k: usize, data_type: &str, path: &str) -> Result<()> {
    let level = plan
        .levels
        .get(k)
        .ok_or_else(|| Error::Internal(format!("no level {k} in the plan")))?;
    let layout = array.layout();
    let refuse = |message: String| -> Result<()> {
        Err(PyramidError::Resume {
            path: path.to_string(),
            message,
        }
        .into())
    };
    let found = (
        layout.shape(),
        layout.data_type_spec(),
        layout.chunk_shape(),
        layout.shard_shape(),
    );
    let planned = (
        &level.shape[..],
        data_type,
        &level.chunks[..],
        &level.shards[..],
    );
    if found != planned {
        return refuse(format!(
            "it holds shape {:?}, {}, chunks {:?}, shards {:?}; this run makes shape {:?}, \
             {}, chunks {:?}, shards {:?}",
            found.0, found.1, found.2, found.3, planned.0, planned.1, planned.2, planned.3
        ));
    }
    let names: Option<Vec<String>> = layout.metadata().dimension_names.as_ref().map(|names| {
        names
            .iter()
            .map(|n| n.as_deref().unwrap_or("").to_string())
            .collect()
    });
    if names.as_ref() != Some(&plan.axes) {
        return refuse(format!(
            "its axes are {}; this run's are {:?}",
            names.map_or("not named".to_string(), |n| format!("{n:?}")),
            plan.axes
        ));
    }
    let record = settings_record(plan, k);
    let made = layout.metadata().attributes.get(SETTINGS_KEY);
    if made != record.get(SETTINGS_KEY) {
        let made = made.map_or("no record of how it was made".to_string(), |m| {
            format!("it was made with {m}")
        });
        let makes = record.get(SETTINGS_KEY).cloned().unwrap_or_default();
        return refuse(format!("{made}; this run makes {makes}"));
    }
    Ok(())
}

/// The linear indices of the shards already stored, per level.
pub(crate) fn stored_shards(arrays: &[Array]) -> Result<Vec<HashSet<u64>>> {
    arrays
        .iter()
        .map(|array| {
            // One listing where the store has one: resuming costs what is stored.
            if let Some(listed) = array.stored_shards()? {
                let grid = array.shard_grid();
                return Ok(listed.iter().map(|i| grid.linear_index(i)).collect());
            }
            let mut stored = HashSet::new();
            for shard in array.shards() {
                let Some(index) = shard.index() else {
                    return Err(Error::Internal(format!("shard {shard} has no grid index")));
                };
                if array.store().size(&array.shard_key(index))?.is_some() {
                    stored.insert(array.shard_grid().linear_index(index));
                }
            }
            Ok(stored)
        })
        .collect()
}
