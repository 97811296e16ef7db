//! The physical metadata of an image: its name, level 0's pixel size (`scale`) and offset
//! (`translation`) per axis, the axes' units, and its channels (label and colour). The
//! checks of what a user gives, and what each level's coordinate transformations are.
//!
//! Conventions (as ngff-zarr and zarrs_ome write them): with the cumulative factor `F`
//! of level `k` along an axis, level `k`'s scale is `s0·F` and its translation is
//! `t0 + s0·(F − 1)/2`, the centre of its first pixel, for every method that reduces a
//! block (`mean`, `median`, `mode`, `min`, `max`); `stride` keeps the block's first element,
//! so its translation stays `t0`. A `translation` is written on every level when one was
//! given, or when some level is shifted (a factor above 1 with a reducing method).

use super::downsample::Method;
use super::plan::{AxisKind, Plan};
use super::PyramidError;

/// The physical metadata of an image (all optional).
///
/// ```
/// use shardwright::pyramid::image_metadata::{Channel, ImageMetadata};
/// let image = ImageMetadata {
///     scale: Some(vec![1.0, 0.406, 0.406]),
///     units: Some(vec![None, Some("µm".into()), Some("um".into())]),
///     channels: Some(vec![Channel { label: Some("DAPI".into()), color: Some("blue".into()) }]),
///     ..Default::default()
/// };
/// assert_eq!(image.scale.as_ref().unwrap()[1], 0.406);
/// ```
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ImageMetadata {
    /// The multiscale's name (default: the last part of the path).
    pub name: Option<String>,
    /// An OME (UDUNITS-2) unit per axis; `None` or `""`: none. `µm`, `um`, `micron`, `nm`,
    /// `s`, `ms`, … are accepted and written by their OME names (see [`unit_name`]).
    pub units: Option<Vec<Option<String>>>,
    /// Level 0's physical pixel size per axis (positive, finite); default 1.
    pub scale: Option<Vec<f64>>,
    /// Level 0's physical offset per axis (finite); default 0.
    pub translation: Option<Vec<f64>>,
    /// One entry per element of the channel axis `c` (or exactly one for an image
    /// without one), written as OME `omero` channels.
    pub channels: Option<Vec<Channel>>,
}

/// A channel's label and colour.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Channel {
    /// The label (default `Channel {i}`).
    pub label: Option<String>,
    /// `RRGGBB`, `#RRGGBB` or one of red, green, blue, cyan, magenta, yellow, white,
    /// gray (default: white for one channel, a palette for several).
    pub color: Option<String>,
}

/// OME-Zarr 0.5's space units (UDUNITS-2 names).
pub const SPACE_UNITS: &[&str] = &[
    "angstrom",
    "attometer",
    "centimeter",
    "decimeter",
    "exameter",
    "femtometer",
    "foot",
    "gigameter",
    "hectometer",
    "inch",
    "kilometer",
    "megameter",
    "meter",
    "micrometer",
    "mile",
    "millimeter",
    "nanometer",
    "parsec",
    "petameter",
    "picometer",
    "terameter",
    "yard",
    "yoctometer",
    "yottameter",
    "zeptometer",
    "zettameter",
];

/// OME-Zarr 0.5's time units (UDUNITS-2 names).
pub const TIME_UNITS: &[&str] = &[
    "attosecond",
    "centisecond",
    "day",
    "decisecond",
    "exasecond",
    "femtosecond",
    "gigasecond",
    "hectosecond",
    "hour",
    "kilosecond",
    "megasecond",
    "microsecond",
    "millisecond",
    "minute",
    "nanosecond",
    "petasecond",
    "picosecond",
    "second",
    "terasecond",
    "yoctosecond",
    "yottasecond",
    "zeptosecond",
    "zettasecond",
];

const COLOR_NAMES: &[(&str, &str)] = &[
    ("red", "FF0000"),
    ("green", "00FF00"),
    ("blue", "0000FF"),
    ("cyan", "00FFFF"),
    ("magenta", "FF00FF"),
    ("yellow", "FFFF00"),
    ("white", "FFFFFF"),
    ("gray", "808080"),
];

/// The colours of several channels given none: blue, green, red, magenta, cyan, yellow,
/// white, then again.
const PALETTE: &[&str] = &[
    "0000FF", "00FF00", "FF0000", "FF00FF", "00FFFF", "FFFF00", "FFFFFF",
];

/// The OME name of `unit`: an OME space or time unit as is, or a common spelling of one
/// (`µm`, `um`, `micron(s)` → `micrometer`; `nm`, `mm`, `m`, `Å`; `s`, `sec`, `ms`, `us`,
/// `µs`, `min`, `h`); `None` for anything else.
///
/// ```
/// use shardwright::pyramid::image_metadata::unit_name;
/// assert_eq!(unit_name("µm"), Some("micrometer"));
/// assert_eq!(unit_name("second"), Some("second"));
/// assert_eq!(unit_name("furlong"), None);
/// ```
#[must_use]
pub fn unit_name(unit: &str) -> Option<&'static str> {
    let alias = match unit {
        "µm" | "μm" | "um" | "micron" | "microns" => "micrometer",
        "nm" => "nanometer",
        "mm" => "millimeter",
        "cm" => "centimeter",
        "m" => "meter",
        "Å" => "angstrom",
        "s" | "sec" => "second",
        "ms" => "millisecond",
        "us" | "µs" | "μs" => "microsecond",
        "ns" => "nanosecond",
        "min" => "minute",
        "h" => "hour",
        other => other,
    };
    SPACE_UNITS
        .iter()
        .chain(TIME_UNITS)
        .find(|u| **u == alias)
        .copied()
}

/// The six upper-case hex digits of `color` (`RRGGBB`, `#RRGGBB`, or a name), or `None`.
///
/// ```
/// use shardwright::pyramid::image_metadata::color_hex;
/// assert_eq!(color_hex("#00ff00").as_deref(), Some("00FF00"));
/// assert_eq!(color_hex("magenta").as_deref(), Some("FF00FF"));
/// assert_eq!(color_hex("#0f0"), None);
/// ```
#[must_use]
pub fn color_hex(color: &str) -> Option<String> {
    let lower = color.trim().to_ascii_lowercase().replace("grey", "gray");
    if let Some((_, hex)) = COLOR_NAMES.iter().find(|(n, _)| *n == lower) {
        return Some((*hex).to_string());
    }
    let digits = lower.strip_prefix('#').unwrap_or(&lower);
    (digits.len() == 6 && digits.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| digits.to_ascii_uppercase())
}

/// A channel as written: its label and colour (checked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedChannel {
    /// The label.
    pub label: String,
    /// Six upper-case hex digits.
    pub color: String,
}

impl ImageMetadata {
    /// The position of the channel axis (`c`) of `plan`, if any.
    #[must_use]
    pub fn channel_axis(plan: &Plan) -> Option<usize> {
        plan.axes
            .iter()
            .position(|a| AxisKind::of(a) == AxisKind::Channel)
    }

    /// Check everything against `plan` (lengths, values, units, channels).
    ///
    /// # Errors
    /// [`PyramidError::Invalid`] naming what was expected and what was given.
    pub fn check(&self, plan: &Plan) -> Result<(), PyramidError> {
        self.units(plan)?;
        self.vector(
            plan,
            self.scale.as_deref(),
            "scale",
            |v| v.is_finite() && v > 0.0,
            "positive and finite",
        )?;
        self.vector(
            plan,
            self.translation.as_deref(),
            "translation",
            f64::is_finite,
            "finite",
        )?;
        self.channels(plan)?;
        Ok(())
    }

    fn vector(
        &self,
        plan: &Plan,
        values: Option<&[f64]>,
        what: &str,
        good: impl Fn(f64) -> bool,
        rule: &str,
    ) -> Result<(), PyramidError> {
        let Some(values) = values else { return Ok(()) };
        let ndim = plan.axes.len();
        if values.len() != ndim {
            return Err(PyramidError::invalid(format!(
                "{what} must have {ndim} values, one per axis {:?}; got {values:?}",
                plan.axes
            )));
        }
        if let Some((d, v)) = values.iter().enumerate().find(|(_, v)| !good(**v)) {
            return Err(PyramidError::invalid(format!(
                "{what} values must be {rule}; got {v} for axis '{}' in {values:?}",
                plan.axes.get(d).map_or("?", String::as_str)
            )));
        }
        Ok(())
    }

    /// The OME unit of each axis of `plan` (`None`: none), normalized by [`unit_name`].
    ///
    /// # Errors
    /// [`PyramidError::Invalid`] for the wrong number of units, a name OME does not know,
    /// a time unit on a space axis or the reverse, or a unit on the channel axis.
    pub fn units(&self, plan: &Plan) -> Result<Vec<Option<&'static str>>, PyramidError> {
        let ndim = plan.axes.len();
        let Some(units) = &self.units else {
            return Ok(vec![None; ndim]);
        };
        if units.len() != ndim {
            return Err(PyramidError::invalid(format!(
                "units must have {ndim} entries, one per axis {:?}; got {units:?}",
                plan.axes
            )));
        }
        units
            .iter()
            .zip(&plan.axes)
            .map(|(unit, axis)| {
                let Some(unit) = unit.as_deref().filter(|u| !u.is_empty()) else {
                    return Ok(None);
                };
                let kind = AxisKind::of(axis);
                let Some(name) = unit_name(unit) else {
                    return Err(PyramidError::invalid(format!(
                        "unit '{unit}' of axis '{axis}' is not an OME-Zarr unit: use one of \
                         {} (space) or {} (time); µm, um, nm, s, ms, min, h are accepted too",
                        SPACE_UNITS.join(", "),
                        TIME_UNITS.join(", ")
                    )));
                };
                let (space, time) = (SPACE_UNITS.contains(&name), TIME_UNITS.contains(&name));
                let wrong = match kind {
                    AxisKind::Channel => Some("a channel axis has no unit"),
                    AxisKind::Space if !space => {
                        Some("a space axis needs a space unit such as micrometer")
                    }
                    AxisKind::Time if !time => Some("a time axis needs a time unit such as second"),
                    _ => None,
                };
                match wrong {
                    Some(why) => Err(PyramidError::invalid(format!(
                        "unit '{unit}' does not fit axis '{axis}': {why}"
                    ))),
                    None => Ok(Some(name)),
                }
            })
            .collect()
    }

    /// Level `k`'s `scale`, and its `translation` when one is written (see the module's
    /// conventions). Values assumed checked ([`check`](Self::check)).
    #[must_use]
    pub fn level_transform(&self, plan: &Plan, k: usize) -> (Vec<f64>, Option<Vec<f64>>) {
        let shifts = plan.method != Method::Stride;
        let cumulative: Vec<f64> = plan
            .factors
            .iter()
            .map(|f| (*f as f64).powi(k as i32))
            .collect();
        let s0 = |d: usize| {
            self.scale
                .as_ref()
                .and_then(|s| s.get(d))
                .copied()
                .unwrap_or(1.0)
        };
        let t0 = |d: usize| {
            self.translation
                .as_ref()
                .and_then(|t| t.get(d))
                .copied()
                .unwrap_or(0.0)
        };
        let scale = cumulative
            .iter()
            .enumerate()
            .map(|(d, f)| s0(d) * f)
            .collect();
        let shifted = shifts && plan.levels.len() > 1 && plan.factors.iter().any(|f| *f > 1);
        let translation = (self.translation.is_some() || shifted).then(|| {
            cumulative
                .iter()
                .enumerate()
                .map(|(d, f)| {
                    if shifts {
                        t0(d) + s0(d) * (f - 1.0) / 2.0
                    } else {
                        t0(d)
                    }
                })
                .collect()
        });
        (scale, translation)
    }

    /// The channels to write as `omero` (`None`: none): given ones checked, or defaults
    /// for each element of the channel axis.
    ///
    /// # Errors
    /// [`PyramidError::Invalid`] for channels that do not match the channel axis (or more
    /// than one without one) and colours that are not `RRGGBB`, `#RRGGBB` or a name.
    pub fn channels(&self, plan: &Plan) -> Result<Option<Vec<ResolvedChannel>>, PyramidError> {
        let axis = Self::channel_axis(plan);
        let count = match (axis, &self.channels) {
            (Some(c), given) => {
                let n = plan
                    .levels
                    .first()
                    .and_then(|l| l.shape.get(c))
                    .copied()
                    .unwrap_or(1);
                if let Some(given) = given.as_ref().filter(|g| g.len() as u64 != n) {
                    return Err(PyramidError::invalid(format!(
                        "channels must have one entry per element of the channel axis 'c' \
                         ({n}); got {} ({:?})",
                        given.len(),
                        labels(given)
                    )));
                }
                n as usize
            }
            (None, Some(given)) if given.len() == 1 => 1,
            (None, Some(given)) => {
                return Err(PyramidError::invalid(format!(
                    "channels were given ({} of them: {:?}) but the axes {:?} have no channel \
                     axis 'c' (an image without one takes exactly one channel)",
                    given.len(),
                    labels(given),
                    plan.axes
                )))
            }
            (None, None) => return Ok(None),
        };
        (0..count)
            .map(|i| {
                let given = self.channels.as_ref().and_then(|c| c.get(i));
                let label = given
                    .and_then(|c| c.label.clone())
                    .unwrap_or_else(|| format!("Channel {i}"));
                let color =
                    match given.and_then(|c| c.color.as_deref()) {
                        Some(text) => {
                            color_hex(text).ok_or_else(|| {
                                PyramidError::invalid(format!(
                            "colour '{text}' of channel {i} is not RRGGBB, #RRGGBB or one of \
                             {} (e.g. '00FF00')",
                            COLOR_NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                        ))
                            })?
                        }
                        None if count == 1 => "FFFFFF".to_string(),
                        None => PALETTE
                            .get(i % PALETTE.len())
                            .unwrap_or(&"FFFFFF")
                            .to_string(),
                    };
                Ok(ResolvedChannel { label, color })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

fn labels(channels: &[Channel]) -> Vec<String> {
    channels
        .iter()
        .map(|c| c.label.clone().unwrap_or_default())
        .collect()
}

#[cfg(test)]
#[path = "image_metadata_tests.rs"]
mod tests;
