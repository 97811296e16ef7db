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
use crate::error::Result;

/// The group attribute holding the record of how the levels were made.
pub(crate) const RECORD_KEY: &str = "shardwright";

/// The member of the record holding level 0's shape when the levels were last made.
pub(crate) const LEVEL0_SHAPE: &str = "level0_shape";

/// The member of the record listing level 0's shards absent (all fill value) then: those
/// stored on the next call were written since.
pub(crate) const LEVEL0_ABSENT: &str = "level0_absent";

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
