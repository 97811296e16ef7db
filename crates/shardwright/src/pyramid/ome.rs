//! OME-Zarr 0.5 metadata of a multiscale image: the group `zarr.json` whose
//! `attributes.ome.multiscales` lists the levels, their axes and their coordinate
//! transformations, and whose `attributes.ome.omero` describes the channels.

use serde_json::{json, Value};

use super::image_metadata::{ImageMetadata, ResolvedChannel};
use super::plan::{AxisKind, Plan};
use super::window::Window;
use super::PyramidError;

/// The `zarr.json` of the image group for `plan`: one multiscale named `name` (or
/// `image.name`), whose datasets are the level arrays `0`, `1`, … with a `scale` (level 0's
/// pixel size `image.scale`, 1 by default, times the factors so far) and, when one is
/// written, a `translation` each (see [`ImageMetadata::level_transform`]: the centre of
/// the level's first pixel for the reducing methods, level 0's offset for `stride`).
/// `image.units` are written by their OME names. With a channel axis `c` or
/// `image.channels`, an OME 0.5 `omero` block beside `multiscales`: one channel per
/// element of `c` (label, colour, `window` from `windows`, the top level's per channel as
/// [`ChannelWindows`](super::window::ChannelWindows) computes them; a channel past the end
/// of `windows` gets `0, 0, 0, 0`) and `rdefs` (`defaultZ` the middle plane).
///
/// ```
/// use shardwright::pyramid::{ome, image_metadata::ImageMetadata, plan::PlanRequest};
/// let plan = PlanRequest { factors: vec![1, 2, 2], levels: Some(2), ..Default::default() }
///     .plan(&[3, 64, 64], "uint8").unwrap();
/// let image = ImageMetadata { scale: Some(vec![1.0, 0.5, 0.5]), ..Default::default() };
/// let json = ome::group_metadata(&plan, "image", &image, &[]).unwrap();
/// let level1 = &json["attributes"]["ome"]["multiscales"][0]["datasets"][1]["coordinateTransformations"];
/// assert_eq!(level1[0]["scale"], serde_json::json!([1.0, 1.0, 1.0]));
/// assert_eq!(level1[1]["translation"], serde_json::json!([0.0, 0.25, 0.25]));
/// assert_eq!(json["attributes"]["ome"]["version"], "0.5");
/// ```
///
/// # Errors
/// [`PyramidError::Invalid`] for axes OME-Zarr 0.5 does not allow in an image: fewer than 2
/// or more than 5, not 2 or 3 space axes, more than one time or channel axis, an order
/// other than time, then channel or custom, then space; and what
/// [`ImageMetadata::check`] refuses.
pub fn group_metadata(
    plan: &Plan,
    name: &str,
    image: &ImageMetadata,
    windows: &[Window],
) -> Result<Value, PyramidError> {
    check_axes(&plan.axes)?;
    image.check(plan)?;
    let units = image.units(plan)?;
    let axes: Vec<Value> = plan
        .axes
        .iter()
        .zip(&units)
        .map(|(name, unit)| {
            let mut axis = serde_json::Map::new();
            axis.insert("name".into(), json!(name));
            if let Some(kind) = AxisKind::of(name).ome_type() {
                axis.insert("type".into(), json!(kind));
            }
            if let Some(unit) = unit {
                axis.insert("unit".into(), json!(unit));
            }
            Value::Object(axis)
        })
        .collect();
    let datasets: Vec<Value> = (0..plan.levels.len())
        .map(|k| {
            let (scale, translation) = image.level_transform(plan, k);
            let mut transforms = vec![json!({ "type": "scale", "scale": scale })];
            if let Some(translation) = translation {
                transforms.push(json!({ "type": "translation", "translation": translation }));
            }
            json!({ "path": k.to_string(), "coordinateTransformations": transforms })
        })
        .collect();
    let mut ome = json!({
        "version": "0.5",
        "multiscales": [{
            "name": image.name.as_deref().unwrap_or(name),
            "axes": axes,
            "datasets": datasets,
            "type": plan.method.name(),
            "metadata": { "method": format!("shardwright {} downsampling", plan.method.name()) },
        }],
    });
    if let Some(channels) = image.channels(plan)? {
        if let Some(object) = ome.as_object_mut() {
            object.insert("omero".into(), omero(plan, &channels, windows));
        }
    }
    Ok(json!({
        "zarr_format": 3,
        "node_type": "group",
        "attributes": { "ome": ome },
    }))
}

/// The `omero` block of `channels` with `windows`.
fn omero(plan: &Plan, channels: &[ResolvedChannel], windows: &[Window]) -> Value {
    let z = plan.axes.iter().position(|a| a == "z");
    let depth = z
        .and_then(|z| plan.levels.first().and_then(|l| l.shape.get(z)))
        .copied()
        .unwrap_or(1);
    let channels: Vec<Value> = channels
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({
                "label": c.label,
                "color": c.color,
                "active": true,
                "coefficient": 1,
                "family": "linear",
                "inverted": false,
                "window": window_json(windows.get(i)),
            })
        })
        .collect();
    let model = if channels.len() == 1 {
        "greyscale"
    } else {
        "color"
    };
    json!({
        "channels": channels,
        "rdefs": { "defaultT": 0, "defaultZ": depth / 2, "model": model },
    })
}

fn window_json(window: Option<&Window>) -> Value {
    let w = window.copied().unwrap_or(Window {
        min: 0.0,
        max: 0.0,
        start: 0.0,
        end: 0.0,
    });
    json!({ "min": w.min, "max": w.max, "start": w.start, "end": w.end })
}

/// Set the `window` of each `omero` channel of the group document `document` (as
/// [`group_metadata`] made it) to `windows`; a document without `omero` is left as it is.
/// For a pyramid whose top level is written by others (tasks): compute the windows from
/// the stored top level, then set them here.
pub fn set_windows(document: &mut Value, windows: &[Window]) {
    if let Some(channels) = document
        .pointer_mut("/attributes/ome/omero/channels")
        .and_then(Value::as_array_mut)
    {
        for (i, channel) in channels.iter_mut().enumerate() {
            if let Some(channel) = channel.as_object_mut() {
                channel.insert("window".into(), window_json(windows.get(i)));
            }
        }
    }
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
