//! The image group's `zarr.json` after [`add_levels`](super::add_levels::add_levels): the
//! existing document kept (its multiscale's axes, units, name, level 0's scale and
//! translation, `omero`, any other attribute), the new levels added to the datasets, and
//! the record of the level-0 shape the levels were made from (the next call finds what
//! level 0 gained since).

use serde_json::{json, Map, Value};

use super::downsample::Method;
use super::image_metadata::ImageMetadata;
use super::ome;
use super::plan::Plan;
use super::window::Window;
use super::PyramidError;
use std::collections::HashSet;

use super::add_levels::{ints, MAX_ABSENT};
use crate::domain::Domain;
use crate::error::Result;
use crate::Array;

/// The group attribute holding the record of how the levels were made.
pub(crate) const RECORD_KEY: &str = "shardwright";

/// The member of the record holding level 0's shape when the levels were last made.
pub(crate) const LEVEL0_SHAPE: &str = "level0_shape";

/// The member of the record listing level 0's shards absent (all fill value) then: those
/// stored on the next call were written since.
pub(crate) const LEVEL0_ABSENT: &str = "level0_absent";

/// The member of the record listing the level-0 shards (grid indices) an image
/// (`shardwright::image`) stored again after the levels above were made from them (or
/// `"all"`): their coarser shards are recomputed when the image is finished, or by
/// [`add_levels`](super::add_levels::add_levels), even if the session that wrote them
/// stopped first.
pub const REWRITTEN: &str = "rewritten";

fn invalid(what: &str) -> PyramidError {
    PyramidError::invalid(format!("the image group's zarr.json: {what}"))
}

/// The group document for `plan` (level 0 of shape `shape0`), over `existing` (the group's
/// `zarr.json`, if any): OME `multiscales[0]` gets one dataset per level (kept where it
/// names its level already; new ones scaled by the factors from level 0's scale, and
/// translated to the centre of their first pixel when level 0 has a translation, except
/// with `stride`, whose kept sample is the block's first), and `attributes.shardwright`
/// records `level0_shape`, `factors`, `method`, `levels` and `level0_absent` (the grid
/// indices of level 0's shards not stored, `null` when there were too many to list).
#[allow(clippy::too_many_arguments)]
pub(super) fn image_document(
    existing: Option<&Value>,
    plan: &Plan,
    name: &str,
    image: &ImageMetadata,
    windows: &[Window],
    shape0: &[u64],
    absent: Option<&[Vec<u64>]>,
) -> Result<Vec<u8>> {
    let mut doc = match existing {
        Some(Value::Object(map)) => Value::Object(map.clone()),
        _ => json!({ "zarr_format": 3, "node_type": "group", "attributes": {} }),
    };
    let Value::Object(top) = &mut doc else {
        return Err(invalid("not a JSON object").into());
    };
    let attributes = top
        .entry("attributes")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| invalid("its attributes are not an object"))?;
    let has_multiscale = attributes
        .get("ome")
        .and_then(|o| o.get("multiscales"))
        .and_then(|m| m.get(0))
        .is_some_and(Value::is_object);
    // physical metadata given now replaces what the group says
    let given = image != &ImageMetadata::default();
    if has_multiscale && !given {
        let multiscale = attributes
            .get_mut("ome")
            .and_then(|o| o.get_mut("multiscales"))
            .and_then(|m| m.get_mut(0))
            .ok_or_else(|| invalid("no multiscale"))?;
        extend_datasets(multiscale, plan)?;
    } else {
        let fresh = ome::group_metadata(plan, name, image, windows)?;
        let ome = fresh
            .get("attributes")
            .and_then(|a| a.get("ome"))
            .cloned()
            .ok_or_else(|| invalid("no ome member made"))?;
        attributes.insert("ome".into(), ome);
    }
    if has_multiscale && !given && !windows.is_empty() {
        // the levels changed: the channels' windows are the new top level's
        let mut whole = json!({ "attributes": { "ome": attributes.get("ome").cloned() } });
        ome::set_windows(&mut whole, windows);
        if let Some(ome) = whole.pointer("/attributes/ome").cloned() {
            attributes.insert("ome".into(), ome);
        }
    }
    let record = attributes
        .entry(RECORD_KEY)
        .or_insert_with(|| Value::Object(Map::new()));
    if !record.is_object() {
        *record = Value::Object(Map::new());
    }
    if let Value::Object(record) = record {
        record.insert(LEVEL0_SHAPE.into(), json!(shape0));
        record.insert("factors".into(), json!(plan.factors));
        record.insert("method".into(), json!(plan.method.to_string()));
        record.insert("levels".into(), json!(plan.levels.len()));
        record.insert(LEVEL0_ABSENT.into(), json!(absent));
        record.remove(REWRITTEN);
    }
    Ok(serde_json::to_vec_pretty(&doc)
        .map_err(|e| PyramidError::invalid(format!("group metadata does not serialize: {e}")))?)
}

/// The numbers of the `kind` transformation of `dataset`, if it has one.
fn transform(dataset: &Value, kind: &str) -> Option<Vec<f64>> {
    dataset
        .get("coordinateTransformations")?
        .as_array()?
        .iter()
        .find(|t| t.get("type").and_then(Value::as_str) == Some(kind))?
        .get(kind)?
        .as_array()?
        .iter()
        .map(Value::as_f64)
        .collect()
}

/// One dataset per level of `plan` in `multiscale`: those naming their level kept, the
/// others made from level 0's scale and translation.
fn extend_datasets(multiscale: &mut Value, plan: &Plan) -> Result<()> {
    let ndim = plan.factors.len();
    let old: Vec<Value> = multiscale
        .get("datasets")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let first = old.first();
    let s0 = first
        .and_then(|d| transform(d, "scale"))
        .filter(|s| s.len() == ndim)
        .unwrap_or_else(|| vec![1.0; ndim]);
    let t0 = first
        .and_then(|d| transform(d, "translation"))
        .filter(|t| t.len() == ndim);
    let datasets: Vec<Value> = (0..plan.levels.len())
        .map(|k| {
            let path = k.to_string();
            if let Some(kept) = old
                .get(k)
                .filter(|d| d.get("path").and_then(Value::as_str) == Some(path.as_str()))
            {
                return kept.clone();
            }
            let total: Vec<f64> = plan
                .factors
                .iter()
                .map(|f| (*f as f64).powi(k as i32))
                .collect();
            let scale: Vec<f64> = s0.iter().zip(&total).map(|(s, f)| s * f).collect();
            let mut transforms = vec![json!({ "type": "scale", "scale": scale })];
            if let Some(t0) = &t0 {
                let shifted: Vec<f64> = t0
                    .iter()
                    .zip(&s0)
                    .zip(&total)
                    .map(|((t, s), f)| match plan.method {
                        Method::Stride => *t,
                        _ => t + s * (f - 1.0) / 2.0,
                    })
                    .collect();
                transforms.push(json!({ "type": "translation", "translation": shifted }));
            }
            json!({ "path": path, "coordinateTransformations": transforms })
        })
        .collect();
    if let Value::Object(m) = multiscale {
        m.insert("datasets".into(), Value::Array(datasets));
        m.entry("type").or_insert_with(|| json!(plan.method.name()));
    }
    Ok(())
}

/// `group` (a group `zarr.json`) with the record a later [`add_levels`](super::add_levels::add_levels)
/// reads to find what level 0 gained since the levels of `plan` were made from it: level
/// 0's shape then, the factors, method and levels, and (when known) the grid indices of
/// level 0's shards absent then (`None`: not known, or too many to list).
///
/// ```
/// use shardwright::pyramid::{add_levels_group::with_level0_record, plan::PlanRequest};
/// let plan = PlanRequest { factors: vec![2], levels: Some(2), ..Default::default() }.plan(&[7], "uint8").unwrap();
/// let doc = br#"{"zarr_format": 3, "node_type": "group", "attributes": {}}"#;
/// let out: serde_json::Value = serde_json::from_slice(&with_level0_record(doc, &plan, None).unwrap()).unwrap();
/// assert_eq!(out["attributes"]["shardwright"]["level0_shape"], serde_json::json!([7]));
/// ```
///
/// # Errors
/// [`PyramidError::Invalid`] when `group` is not a JSON object with an object of attributes.
pub fn with_level0_record(
    group: &[u8],
    plan: &Plan,
    absent: Option<&[Vec<u64>]>,
) -> Result<Vec<u8>> {
    let mut doc: Value =
        serde_json::from_slice(group).map_err(|e| invalid(&format!("not JSON: {e}")))?;
    let attributes = doc
        .get_mut("attributes")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| invalid("its attributes are not an object"))?;
    let record = attributes
        .entry(RECORD_KEY)
        .or_insert_with(|| Value::Object(Map::new()));
    if !record.is_object() {
        *record = Value::Object(Map::new());
    }
    if let Value::Object(record) = record {
        let shape0 = plan
            .levels
            .first()
            .map(|l| l.shape.clone())
            .unwrap_or_default();
        record.insert(LEVEL0_SHAPE.into(), json!(shape0));
        record.insert("factors".into(), json!(plan.factors));
        record.insert("method".into(), json!(plan.method.to_string()));
        record.insert("levels".into(), json!(plan.levels.len()));
        record.insert(LEVEL0_ABSENT.into(), json!(absent));
    }
    Ok(serde_json::to_vec_pretty(&doc)
        .map_err(|e| PyramidError::invalid(format!("group metadata does not serialize: {e}")))?)
}

/// What the record of `group` says of level-0 shards written again: their grid indices,
/// or `None` when all of level 0 may have changed (`"all"`).
///
/// ```
/// use shardwright::pyramid::add_levels_group::rewritten_of;
/// let group = serde_json::json!({"attributes": {"shardwright": {"rewritten": [[0, 1]]}}});
/// assert_eq!(rewritten_of(&group).unwrap().into_iter().collect::<Vec<_>>(), vec![vec![0, 1]]);
/// ```
pub fn rewritten_of(group: &Value) -> Option<std::collections::BTreeSet<Vec<u64>>> {
    match group.pointer(&format!("/attributes/{RECORD_KEY}/{REWRITTEN}")) {
        Some(Value::String(s)) if s == "all" => None,
        Some(listed) => Some(serde_json::from_value(listed.clone()).unwrap_or_default()),
        None => Some(std::collections::BTreeSet::new()),
    }
}

/// The shape level 0 had when the levels were made: the group's record, else what level 1's
/// shape implies (every downsampled axis counts as grown from the start of level 1's last
/// block).
pub(super) fn old_shape(
    record: Option<&Value>,
    level1: &Array,
    shape0: &[u64],
    factors: &[u64],
) -> Vec<u64> {
    if let Some(old) =
        ints(record.and_then(|r| r.get(LEVEL0_SHAPE))).filter(|o| o.len() == shape0.len())
    {
        return old;
    }
    // Without a record, growth inside level 1's last element cannot be seen: count that
    // element's block as changed (a row of edge shards more to rewrite, once; the record
    // written then makes the next call exact).
    let shape1 = level1.layout().shape();
    shape0
        .iter()
        .zip(factors)
        .zip(shape1)
        .map(|((s, f), s1)| {
            if *f == 1 && s == s1 {
                *s
            } else {
                (*s).min(s1.saturating_sub(1) * f)
            }
        })
        .collect()
}

/// The grid indices of level 0's shards not stored (`present`: the linear indices of
/// those stored), or `None` when there are more than [`MAX_ABSENT`] (then not recorded).
pub(super) fn absent_shards(level0: &Array, present: &HashSet<u64>) -> Option<Vec<Vec<u64>>> {
    let grid = level0.shard_grid();
    let absent: Vec<Vec<u64>> = grid
        .cells()
        .filter_map(|cell| cell.index().map(<[u64]>::to_vec))
        .filter(|index| !present.contains(&grid.linear_index(index)))
        .take(MAX_ABSENT + 1)
        .collect();
    (absent.len() <= MAX_ABSENT).then_some(absent)
}

/// The level-0 shards the record says were absent (all fill value) when the levels were
/// made, and that are stored now: written since, so changed.
pub(super) fn filled_since(
    record: Option<&Value>,
    level0: &Array,
    present: &HashSet<u64>,
) -> Vec<Domain> {
    let Some(absent) = record
        .and_then(|r| r.get(LEVEL0_ABSENT))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let grid = level0.shard_grid();
    absent
        .iter()
        .filter_map(|index| ints(Some(index)))
        .filter(|index| {
            index.len() == grid.grid_shape().len()
                && index.iter().zip(grid.grid_shape()).all(|(i, n)| i < n)
                && present.contains(&grid.linear_index(index))
        })
        .filter_map(|index| level0.shard(&index).ok())
        .collect()
}
