//! OME-Zarr 0.5 metadata of a multiscale image: the group `zarr.json` whose
//! `attributes.ome.multiscales` lists the levels, their axes and their scales.

use serde_json::{json, Value};

use super::plan::{AxisKind, Plan};
use super::PyramidError;

/// The `zarr.json` of the image group for `plan`: one multiscale named `name`, whose
/// datasets are the level arrays `0`, `1`, … with a `scale` transformation each (level
/// `k` scales every axis by its factor to the power `k`, times `base_scale`, 1 by
/// default). `units` gives an axis its OME unit (`""` or `None`: none). The
/// `coordinateTransformations` use the level's pixel corners, as TensorStore's
/// downsampling does (level `k`'s element `j` covers level 0's `[j·f^k, (j+1)·f^k)`).
///
/// ```
/// use shardwright::pyramid::{ome, plan::PlanRequest};
/// let plan = PlanRequest { factors: vec![1, 2, 2], levels: Some(2), ..Default::default() }
///     .plan(&[3, 64, 64], "uint8").unwrap();
/// let json = ome::group_metadata(&plan, "image", None, None).unwrap();
/// let scales = &json["attributes"]["ome"]["multiscales"][0]["datasets"][1]["coordinateTransformations"][0]["scale"];
/// assert_eq!(scales, &serde_json::json!([1.0, 2.0, 2.0]));
/// assert_eq!(json["attributes"]["ome"]["version"], "0.5");
/// ```
///
/// # Errors
/// [`PyramidError::Invalid`] for axes OME-Zarr 0.5 does not allow in an image: fewer than 2
/// or more than 5, not 2 or 3 space axes, more than one time or channel axis, an order
/// other than time, then channel or custom, then space; `units` or `base_scale` of the
/// wrong length.
pub fn group_metadata(
    plan: &Plan,
    name: &str,
    units: Option<&[Option<String>]>,
    base_scale: Option<&[f64]>,
) -> Result<Value, PyramidError> {
    check_axes(&plan.axes)?;
    let ndim = plan.axes.len();
    if units.is_some_and(|u| u.len() != ndim) || base_scale.is_some_and(|s| s.len() != ndim) {
        return Err(PyramidError::invalid(format!(
            "units and scale must have {ndim} entries, one per axis {:?}",
            plan.axes
        )));
    }
    let axes: Vec<Value> = plan
        .axes
        .iter()
        .enumerate()
        .map(|(d, name)| {
            let mut axis = serde_json::Map::new();
            axis.insert("name".into(), json!(name));
            if let Some(kind) = AxisKind::of(name).ome_type() {
                axis.insert("type".into(), json!(kind));
            }
            if let Some(Some(unit)) = units.and_then(|u| u.get(d)) {
                if !unit.is_empty() {
                    axis.insert("unit".into(), json!(unit));
                }
            }
            Value::Object(axis)
        })
        .collect();
    let datasets: Vec<Value> = (0..plan.levels.len())
        .map(|k| {
            let scale: Vec<f64> = plan
                .factors
                .iter()
                .enumerate()
                .map(|(d, f)| {
                    // lengths checked above
                    let base = base_scale.and_then(|s| s.get(d)).copied().unwrap_or(1.0);
                    base * (*f as f64).powi(k as i32)
                })
                .collect();
            json!({
                "path": k.to_string(),
                "coordinateTransformations": [{ "type": "scale", "scale": scale }],
            })
        })
        .collect();
    Ok(json!({
        "zarr_format": 3,
        "node_type": "group",
        "attributes": {
            "ome": {
                "version": "0.5",
                "multiscales": [{
                    "name": name,
                    "axes": axes,
                    "datasets": datasets,
                    "type": plan.method.name(),
                    "metadata": { "method": format!("shardwright {} downsampling", plan.method.name()) },
                }],
            }
        }
    }))
}

/// Check `axes` against OME-Zarr 0.5's rules for an image.
fn check_axes(axes: &[String]) -> Result<(), PyramidError> {
    let fail = |why: &str| {
        Err(PyramidError::invalid(format!(
            "axes {axes:?} are not an OME-Zarr 0.5 image's: {why} (use axes= to name them, \
             e.g. ['t', 'c', 'z', 'y', 'x'])"
        )))
    };
    if !(2..=5).contains(&axes.len()) {
        return fail("an image has 2 to 5 axes");
    }
    let kinds: Vec<AxisKind> = axes.iter().map(|a| AxisKind::of(a)).collect();
    let count = |k| kinds.iter().filter(|x| **x == k).count();
    if !(2..=3).contains(&count(AxisKind::Space)) {
        return fail("it needs 2 or 3 space axes (z, y, x)");
    }
    if count(AxisKind::Time) > 1 || count(AxisKind::Channel) + count(AxisKind::Custom) > 1 {
        return fail("at most one time axis and one channel or custom axis");
    }
    let rank = |k: &AxisKind| match k {
        AxisKind::Time => 0,
        AxisKind::Channel | AxisKind::Custom => 1,
        AxisKind::Space => 2,
    };
    if kinds
        .windows(2)
        .any(|w| matches!(w, [a, b] if rank(a) > rank(b)))
    {
        return fail("the order must be time, then channel, then space");
    }
    Ok(())
}
