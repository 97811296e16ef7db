//! What a conversion (`sw.convert`, `shardwright convert`) decides when it is not told:
//! the downsampling factors of an image whose axes and pixel sizes a file gave, and the
//! physical metadata, where what the user gives overrides what the file says field by
//! field.

use super::image_metadata::ImageMetadata;
use super::plan::AxisKind;

/// The downsampling factor per axis of a converted image: 2 along `y` and `x` (and along
/// any other space axis named like them), 1 along time, channel and custom axes, and along
/// `z` 2 only when its pixel size is at most twice that of `x` (a stack imaged with
/// coarse z steps keeps its z resolution: halving it would make the voxels flatter still);
/// without pixel sizes every space axis is halved.
///
/// ```
/// use shardwright::pyramid::convert::default_factors;
/// let axes: Vec<String> = ["t", "c", "z", "y", "x"].iter().map(|s| s.to_string()).collect();
/// assert_eq!(default_factors(&axes, None), vec![1, 1, 2, 2, 2]);
/// // 2 µm z steps, 0.406 µm pixels: z is kept
/// assert_eq!(default_factors(&axes, Some(&[1.0, 1.0, 2.0, 0.406, 0.406])), vec![1, 1, 1, 2, 2]);
/// assert_eq!(default_factors(&axes, Some(&[1.0, 1.0, 0.5, 0.406, 0.406])), vec![1, 1, 2, 2, 2]);
/// ```
#[must_use]
pub fn default_factors(axes: &[String], scale: Option<&[f64]>) -> Vec<u64> {
    let size = |name: &str| {
        let i = axes.iter().position(|a| a == name)?;
        scale.and_then(|s| s.get(i)).copied()
    };
    let x = size("x");
    axes.iter()
        .enumerate()
        .map(|(i, name)| match AxisKind::of(name) {
            AxisKind::Space if name == "z" => match (scale.and_then(|s| s.get(i)), x) {
                (Some(z), Some(x)) if *z > 2.0 * x => 1,
                _ => 2,
            },
            AxisKind::Space => 2,
            _ => 1,
        })
        .collect()
}

/// `given` with each field it leaves out (`None`) taken from `file`.
///
/// ```
/// use shardwright::pyramid::convert::merged;
/// use shardwright::pyramid::image_metadata::ImageMetadata;
/// let file = ImageMetadata { scale: Some(vec![2.0, 0.4, 0.4]), units: Some(vec![None, Some("micrometer".into()), Some("micrometer".into())]), ..Default::default() };
/// let given = ImageMetadata { scale: Some(vec![1.0, 0.5, 0.5]), ..Default::default() };
/// let image = merged(given, file);
/// assert_eq!(image.scale, Some(vec![1.0, 0.5, 0.5]));
/// assert_eq!(image.units.unwrap()[1].as_deref(), Some("micrometer"));
/// ```
#[must_use]
pub fn merged(given: ImageMetadata, file: ImageMetadata) -> ImageMetadata {
    ImageMetadata {
        name: given.name.or(file.name),
        units: given.units.or(file.units),
        scale: given.scale.or(file.scale),
        translation: given.translation.or(file.translation),
        channels: given.channels.or(file.channels),
    }
}
