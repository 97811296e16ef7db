//! The image's record in its group's `zarr.json` (`attributes.shardwright.image`): how the
//! image was made, written when it is created, so that [`Image::open`](super::Image::open)
//! continues it with the same settings after a crash (the OME metadata is written only
//! when the image is finished).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::layout::Compressor;
use crate::pyramid::downsample::Method;
use crate::pyramid::image_metadata::ImageMetadata;
use crate::pyramid::options::BuildOptions;
use crate::pyramid::plan::{Plan, PlanRequest};
use crate::pyramid::PyramidError;

/// The key of the record under the group's `attributes`.
pub(crate) const RECORD_KEY: &str = "shardwright";

/// The record of an image planned as `plan` with `options`.
pub(crate) fn record(plan: &Plan, options: &BuildOptions) -> Value {
    let (name, level) = compressor_parts(options.compressor);
    json!({
        "image": {
            "factors": plan.factors,
            "levels": plan.levels.len(),
            "method": plan.method.to_string(),
            "axes": plan.axes,
            "chunks": plan.levels.iter().map(|l| l.chunks.clone()).collect::<Vec<_>>(),
            "shards": plan.levels.iter().map(|l| l.shards.clone()).collect::<Vec<_>>(),
            "compressor": { "name": name, "level": level },
            "metadata": options.image,
        }
    })
}

use crate::pyramid::add_levels_group::REWRITTEN;

/// The most level-0 shards listed as rewritten; past it the record says `"all"`.
pub(crate) const MAX_REWRITTEN: usize = 1000;

/// The group document of an image in progress: a plain group (no OME metadata: the levels
/// are not complete) holding the record and the level-0 shards `rewritten`.
///
/// `kept`: the record's other members (level 0's shape and absent shards when the levels
/// were last made); `rewritten` `None`: all of level 0 changed.
pub(crate) fn pending_group(
    plan: &Plan,
    options: &BuildOptions,
    kept: &serde_json::Map<String, Value>,
    rewritten: Option<&BTreeSet<Vec<u64>>>,
) -> Result<Vec<u8>> {
    let mut record = record(plan, options);
    if let Some(record) = record.as_object_mut() {
        for (key, value) in kept {
            record.entry(key.clone()).or_insert_with(|| value.clone());
        }
        let listed = rewritten.map_or_else(|| json!("all"), |r| json!(r));
        record.insert(REWRITTEN.into(), listed);
    }
    let doc = json!({
        "zarr_format": 3,
        "node_type": "group",
        "attributes": { RECORD_KEY: record },
    });
    serde_json::to_vec_pretty(&doc).map_err(|e| Error::Internal(e.to_string()))
}

pub(crate) use crate::pyramid::add_levels_group::rewritten_of;

/// The members of `group`'s record other than the image's settings and the rewritten
/// shards (those `add_levels` keeps: level 0's shape and absent shards, …).
pub(crate) fn kept_of(group: &Value) -> serde_json::Map<String, Value> {
    let mut kept = group
        .pointer(&format!("/attributes/{RECORD_KEY}"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    kept.remove("image");
    kept.remove(REWRITTEN);
    kept
}

fn compressor_parts(c: Compressor) -> (&'static str, Option<i64>) {
    match c {
        Compressor::None => ("none", None),
        Compressor::Zstd { level } => ("zstd", Some(i64::from(level))),
        Compressor::Blosc { clevel } => ("blosc", Some(i64::from(clevel))),
        Compressor::Gzip { level } => ("gzip", Some(i64::from(level))),
    }
}

/// The build options a record says the image was made with (`resume` set).
///
/// # Errors
/// [`PyramidError::Resume`] naming `path` when the group holds no image record or one
/// this version cannot read.
pub(crate) fn options_from(group: &Value, path: &str) -> Result<BuildOptions> {
    let refuse = |why: &str| -> Error {
        PyramidError::Resume {
            path: path.to_string(),
            message: format!(
                "{why}: it is not an image sw.create_image made (open an image that \
                 create_image started, or use sw.add_levels on a group holding level 0)"
            ),
        }
        .into()
    };
    let image = group
        .pointer(&format!("/attributes/{RECORD_KEY}/image"))
        .ok_or_else(|| refuse("its group has no shardwright image record"))?;
    let parse = |key: &str| -> Result<Value> {
        image
            .get(key)
            .cloned()
            .ok_or_else(|| refuse(&format!("its image record has no '{key}'")))
    };
    let from = |key: &str| -> Result<Value> { parse(key) };
    let bad = |key: &str| refuse(&format!("its image record's '{key}' does not read"));
    let factors: Vec<u64> = serde_json::from_value(from("factors")?).map_err(|_| bad("factors"))?;
    let levels: usize = serde_json::from_value(from("levels")?).map_err(|_| bad("levels"))?;
    let method: String = serde_json::from_value(from("method")?).map_err(|_| bad("method"))?;
    let method: Method = method.parse().map_err(|_| bad("method"))?;
    let axes: Vec<String> = serde_json::from_value(from("axes")?).map_err(|_| bad("axes"))?;
    let chunks: Vec<Vec<u64>> =
        serde_json::from_value(from("chunks")?).map_err(|_| bad("chunks"))?;
    let shards: Vec<Vec<u64>> =
        serde_json::from_value(from("shards")?).map_err(|_| bad("shards"))?;
    let compressor = from("compressor")?;
    let name = compressor
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("compressor"))?;
    let level = compressor
        .get("level")
        .and_then(Value::as_i64)
        .and_then(|l| i32::try_from(l).ok());
    let compressor = Compressor::by_name(name, level).map_err(|_| bad("compressor"))?;
    let request = PlanRequest {
        factors,
        levels: Some(levels),
        method: Some(method),
        chunks: Some(chunks),
        shards: Some(shards),
        axes: Some(axes),
    };
    let mut options = BuildOptions::new(request, compressor);
    options.resume = true;
    options.image = match image.get("metadata") {
        Some(metadata) => serde_json::from_value(metadata.clone()).map_err(|_| bad("metadata"))?,
        None => ImageMetadata::default(),
    };
    Ok(options)
}

/// The finished image's group document: the OME metadata `ome_group` (a `zarr.json`
/// from [`group_document`](crate::pyramid::levels::group_document)) with the record kept
/// beside it, so the image can be opened again to write more of level 0. With the record
/// goes what a later `add_levels` needs to see what level 0 gained since: its shape and
/// the level-0 shards `absent` (not written) now.
pub(crate) fn finished_group(
    ome_group: &[u8],
    plan: &Plan,
    options: &BuildOptions,
    absent: Option<&[Vec<u64>]>,
) -> Result<Vec<u8>> {
    let mut doc: Value =
        serde_json::from_slice(ome_group).map_err(|e| Error::Internal(e.to_string()))?;
    if let Some(attributes) = doc.get_mut("attributes").and_then(Value::as_object_mut) {
        attributes.insert(RECORD_KEY.to_string(), record(plan, options));
    }
    let text = serde_json::to_vec_pretty(&doc).map_err(|e| Error::Internal(e.to_string()))?;
    crate::pyramid::add_levels_group::with_level0_record(&text, plan, absent)
}

/// What the group's record says of an image opened again.
#[derive(Debug)]
pub(crate) struct Reopened {
    /// Level-0 shards written again after their levels were made, in a session that
    /// stopped before finishing (`None`: too many to list, all of level 0).
    pub(crate) rewritten: Option<std::collections::BTreeSet<Vec<u64>>>,
    /// The image was finished (its group has OME metadata).
    pub(crate) finished: bool,
    /// The record's other members (level 0's shape and absent shards then).
    pub(crate) kept: serde_json::Map<String, serde_json::Value>,
}

impl Default for Reopened {
    /// A new image: nothing rewritten, not finished, no record.
    fn default() -> Self {
        Self {
            rewritten: Some(BTreeSet::new()),
            finished: false,
            kept: serde_json::Map::new(),
        }
    }
}

impl Reopened {
    /// What the group document `group` says.
    pub(crate) fn of(group: &serde_json::Value) -> Self {
        Self {
            rewritten: rewritten_of(group),
            // A finished image's levels are all stored: every level-0 shard written now
            // changes levels made already.
            finished: group.pointer("/attributes/ome").is_some(),
            kept: kept_of(group),
        }
    }
}

/// The group document in `bytes` (of the image at `path`).
pub(crate) fn read_group(bytes: &[u8], path: &str) -> Result<serde_json::Value> {
    serde_json::from_slice(bytes).map_err(|e| {
        Error::Pyramid(PyramidError::Resume {
            path: path.to_string(),
            message: format!("its zarr.json does not parse: {e}"),
        })
    })
}
