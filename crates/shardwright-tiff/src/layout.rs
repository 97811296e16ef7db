//! How the output array's axes map onto files, pages, samples and pixels: one file's
//! image from what its metadata describes, and a stack of files along a new axis.

use shardwright::pyramid::image_metadata::{Channel, ImageMetadata};

use crate::error::TiffError;
use crate::file::{DataType, TiffFile};
use crate::meta::{describe, Described};

/// The output axes in OME order.
const ORDER: &str = "tczyx";

/// What an output axis runs along.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The files of a folder or pattern.
    File,
    /// Pages (their index steps by the file's stride for this axis).
    Page,
    /// Samples of a pixel (RGB).
    Sample,
    Y,
    X,
}

/// An output axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Axis {
    pub(crate) name: &'static str,
    pub(crate) size: u64,
    pub(crate) kind: Kind,
}

/// One file's image: its axes, the page strides of its page axes, where its pages start.
#[derive(Debug, Clone)]
pub(crate) struct Image {
    pub(crate) axes: Vec<Axis>,
    /// Per axis: how far the page index steps along it (0 for other kinds).
    pub(crate) strides: Vec<u64>,
    /// The index in `file.pages` of the image's first page.
    pub(crate) first: usize,
    pub(crate) dtype: DataType,
    pub(crate) described: Described,
}

fn rank(name: &str) -> usize {
    ORDER.find(name).unwrap_or(ORDER.len())
}

/// The image of `file`, its pages checked against the first.
pub(crate) fn image(file: &TiffFile) -> Result<Image, TiffError> {
    let path = file.path.display().to_string();
    let described = describe(&path, &file.pages)?;
    let Some(first) = file.pages.iter().position(|p| p.ifd >= described.first_ifd) else {
        return Err(TiffError::PageCount {
            path,
            first: described.first_ifd,
            expected: 1,
            found: 0,
            source_name: described.source_name.into(),
        });
    };
    let count = described
        .page_axes
        .iter()
        .try_fold(1u64, |total, (_, n)| total.checked_mul(*n));
    let available = file.pages.len().saturating_sub(first);
    let first_ifd = file.pages.get(first).map_or(described.first_ifd, |p| p.ifd);
    let Some(count) = count.filter(|n| usize::try_from(*n).is_ok()) else {
        let sizes: Vec<String> = described
            .page_axes
            .iter()
            .map(|(name, n)| format!("{name}={n}"))
            .collect();
        return Err(TiffError::Metadata {
            path,
            source_name: described.source_name.into(),
            message: format!(
                "its page axes ({}) multiply to more pages than can be counted; expected \
                 at most the file's {available} pages from page {first_ifd}",
                sizes.join(", "),
            ),
        });
    };
    if count > available as u64 {
        return Err(TiffError::PageCount {
            path,
            first: first_ifd,
            expected: usize::try_from(count).unwrap_or(usize::MAX),
            found: available,
            source_name: described.source_name.into(),
        });
    }
    let pages = file.pages.get(first..).unwrap_or_default();
    let Some(head) = pages.first() else {
        return Err(TiffError::PageCount {
            path,
            first: described.first_ifd,
            expected: 1,
            found: 0,
            source_name: described.source_name.into(),
        });
    };
    for page in pages.iter().take(count as usize) {
        let fits = (page.width, page.height, page.samples, page.dtype)
            == (head.width, head.height, head.samples, head.dtype);
        if !fits {
            return Err(TiffError::PageMismatch {
                path,
                page: page.ifd,
                expected: head.describe(),
                found: page.describe(),
            });
        }
    }
    let mut axes = Vec::new();
    let mut strides = Vec::new();
    let mut stride = 1;
    for (name, size) in &described.page_axes {
        if *size > 1 {
            axes.push(Axis {
                name,
                size: *size,
                kind: Kind::Page,
            });
            strides.push(stride);
        }
        stride *= size;
    }
    if head.samples > 1 {
        if axes.iter().any(|a| a.name == "c") {
            return Err(TiffError::Layout {
                path,
                message: format!(
                    "pixels of {} samples (RGB) and a channel axis in the {} metadata; \
                     expected one or the other",
                    head.samples, described.source_name
                ),
            });
        }
        axes.push(Axis {
            name: "c",
            size: u64::from(head.samples),
            kind: Kind::Sample,
        });
        strides.push(0);
    }
    axes.push(Axis {
        name: "y",
        size: u64::from(head.height),
        kind: Kind::Y,
    });
    axes.push(Axis {
        name: "x",
        size: u64::from(head.width),
        kind: Kind::X,
    });
    strides.extend([0, 0]);
    let (axes, strides) = sorted(axes, strides);
    Ok(Image {
        axes,
        strides,
        first,
        dtype: head.dtype,
        described,
    })
}

fn sorted(axes: Vec<Axis>, strides: Vec<u64>) -> (Vec<Axis>, Vec<u64>) {
    let mut pairs: Vec<(Axis, u64)> = axes.into_iter().zip(strides).collect();
    pairs.sort_by_key(|(a, _)| rank(a.name));
    pairs.into_iter().unzip()
}

/// `"axes (t, z, y, x) of shape [2, 3, 20, 30], uint16"`, for messages.
pub(crate) fn show(axes: &[Axis], dtype: DataType) -> String {
    let names: Vec<&str> = axes.iter().map(|a| a.name).collect();
    let shape: Vec<u64> = axes.iter().map(|a| a.size).collect();
    format!(
        "axes ({}) of shape {shape:?}, {}",
        names.join(", "),
        dtype.name()
    )
}

/// The images of several files stacked along a new leading axis: `z` when the files have
/// no `z` axis (2-D images, or RGB), otherwise `t` (z-stacks); files with both are not
/// stacked. Returns the output axes and, per file, its page strides by output axis.
pub(crate) fn stack(
    spec: &str,
    files: &[TiffFile],
    images: &[Image],
) -> Result<(Vec<Axis>, Vec<Vec<u64>>), TiffError> {
    let (Some(head), Some(first_file)) = (images.first(), files.first()) else {
        return Err(TiffError::NotFound { spec: spec.into() });
    };
    for (file, image) in files.iter().zip(images).skip(1) {
        if image.axes != head.axes || image.dtype != head.dtype {
            return Err(TiffError::FileMismatch {
                path: file.path.display().to_string(),
                first: first_file.path.display().to_string(),
                expected: show(&head.axes, head.dtype),
                found: show(&image.axes, image.dtype),
            });
        }
    }
    let has = |name| head.axes.iter().any(|a| a.name == name);
    let name = match (has("z"), has("t")) {
        (false, _) => "z",
        (true, false) => "t",
        (true, true) => {
            return Err(TiffError::Layout {
                path: spec.into(),
                message: format!(
                    "the files have both t and z axes ({}); expected files without a t or \
                     without a z axis to stack",
                    show(&head.axes, head.dtype)
                ),
            })
        }
    };
    let lead = Axis {
        name,
        size: files.len() as u64,
        kind: Kind::File,
    };
    let position = head
        .axes
        .iter()
        .take_while(|a| rank(a.name) < rank(name))
        .count();
    let mut axes = head.axes.clone();
    axes.insert(position, lead);
    let strides = images
        .iter()
        .map(|image| {
            let mut s = image.strides.clone();
            s.insert(position, 0);
            s
        })
        .collect();
    Ok((axes, strides))
}

/// The pixel size of each of `axes` that the first file's metadata declares.
pub(crate) fn pixel_sizes(axes: &[Axis], described: &Described) -> Vec<Option<f64>> {
    axes.iter()
        .map(|a| {
            described
                .scales
                .iter()
                .find(|(name, _, _)| *name == a.name)
                .map(|s| s.1)
        })
        .collect()
}

/// The image metadata of `axes` from what the first file's metadata says.
pub(crate) fn metadata(axes: &[Axis], described: &Described) -> ImageMetadata {
    let find = |name: &str| described.scales.iter().find(|(a, _, _)| *a == name);
    let known = axes.iter().any(|a| find(a.name).is_some());
    let (scale, units) = if known {
        let scale = axes
            .iter()
            .map(|a| find(a.name).map_or(1.0, |s| s.1))
            .collect();
        let units = axes
            .iter()
            .map(|a| find(a.name).map(|s| s.2.to_string()))
            .collect();
        (Some(scale), Some(units))
    } else {
        (None, None)
    };
    let wanted = axes.iter().find(|a| a.name == "c").map_or(1, |a| a.size);
    let channels: Option<Vec<Channel>> = described
        .channels
        .clone()
        .filter(|c| c.len() as u64 == wanted);
    ImageMetadata {
        scale,
        units,
        channels,
        ..Default::default()
    }
}
