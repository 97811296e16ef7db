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
/// where either size is unknown (`None`, or `sizes` shorter than `axes`) every space axis
/// is halved.
///
/// ```
/// use shardwright::pyramid::convert::default_factors;
/// let axes: Vec<String> = ["t", "c", "z", "y", "x"].iter().map(|s| s.to_string()).collect();
/// assert_eq!(default_factors(&axes, &[]), vec![1, 1, 2, 2, 2]);
/// // 2 µm z steps, 0.406 µm pixels: z is kept
/// let sizes = [None, None, Some(2.0), Some(0.406), Some(0.406)];
/// assert_eq!(default_factors(&axes, &sizes), vec![1, 1, 1, 2, 2]);
/// // z steps the file does not give: halved with y and x
/// let sizes = [None, None, None, Some(0.1), Some(0.1)];
/// assert_eq!(default_factors(&axes, &sizes), vec![1, 1, 2, 2, 2]);
/// ```
#[must_use]
pub fn default_factors(axes: &[String], sizes: &[Option<f64>]) -> Vec<u64> {
    let size = |i: usize| sizes.get(i).copied().flatten();
    let x = axes.iter().position(|a| a == "x").and_then(size);
    axes.iter()
        .enumerate()
        .map(|(i, name)| match AxisKind::of(name) {
            AxisKind::Space if name == "z" => match (size(i), x) {
                (Some(z), Some(x)) if z > 2.0 * x => 1,
                _ => 2,
            },
            AxisKind::Space => 2,
            _ => 1,
        })
        .collect()
}

/// What a file says of an image, per axis of the file: its axes, its physical metadata
/// (`image`, `scale` with 1 where the file gives no size), and which pixel sizes it gives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileImage {
    /// The file's axis names.
    pub axes: Vec<String>,
    /// Scale, units and channels as the file gives them.
    pub image: ImageMetadata,
    /// The pixel size per axis where the file gives one.
    pub pixel_sizes: Vec<Option<f64>>,
}

impl FileImage {
    /// What the file says, for the image's `axes` (the user's, when given): each axis
    /// takes the scale, unit and pixel size of the file's axis of the same name (none for
    /// a name the file lacks), and the channels stay when both have a `c` axis.
    ///
    /// ```
    /// use shardwright::pyramid::convert::FileImage;
    /// use shardwright::pyramid::image_metadata::ImageMetadata;
    /// let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    /// let file = FileImage {
    ///     axes: names(&["t", "y", "x"]),
    ///     image: ImageMetadata {
    ///         scale: Some(vec![2.0, 0.5, 0.5]),
    ///         units: Some(vec![Some("second".into()), Some("micrometer".into()), Some("micrometer".into())]),
    ///         ..Default::default()
    ///     },
    ///     pixel_sizes: vec![Some(2.0), Some(0.5), Some(0.5)],
    /// };
    /// // the user calls the frames z: no unit of time lands on a space axis
    /// let mine = file.for_axes(&names(&["z", "y", "x"]));
    /// assert_eq!(mine.image.scale, Some(vec![1.0, 0.5, 0.5]));
    /// assert_eq!(mine.image.units.unwrap()[0], None);
    /// assert_eq!(mine.pixel_sizes, vec![None, Some(0.5), Some(0.5)]);
    /// ```
    #[must_use]
    pub fn for_axes(&self, axes: &[String]) -> FileImage {
        if axes == self.axes.as_slice() {
            return self.clone();
        }
        let from: Vec<Option<usize>> = axes
            .iter()
            .map(|a| self.axes.iter().position(|b| b == a))
            .collect();
        let scale = self.image.scale.as_ref().map(|s| {
            from.iter()
                .map(|j| j.and_then(|j| s.get(j).copied()).unwrap_or(1.0))
                .collect()
        });
        let units = self.image.units.as_ref().map(|u| {
            from.iter()
                .map(|j| j.and_then(|j| u.get(j).cloned()).flatten())
                .collect()
        });
        let translation = self.image.translation.as_ref().map(|t| {
            from.iter()
                .map(|j| j.and_then(|j| t.get(j).copied()).unwrap_or(0.0))
                .collect()
        });
        let both_have_c = axes.iter().any(|a| a == "c") && self.axes.iter().any(|a| a == "c");
        FileImage {
            axes: axes.to_vec(),
            image: ImageMetadata {
                name: self.image.name.clone(),
                units,
                scale,
                translation,
                channels: self.image.channels.clone().filter(|_| both_have_c),
            },
            pixel_sizes: from
                .iter()
                .map(|j| j.and_then(|j| self.pixel_sizes.get(j).copied().flatten()))
                .collect(),
        }
    }
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
