#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
//! TIFF sources for shardwright's pyramid driver: a TIFF, BigTIFF, OME-TIFF or ImageJ
//! hyperstack file, a folder of TIFF files, or a glob pattern of them, read as one N-d
//! array with OME-Zarr axes (`t`, `c`, `z`, `y`, `x`, those present).
//!
//! - **Pages** are indexed at open from their tags (no pixel data is decoded);
//!   reduced-resolution pages (NewSubfileType bit 0) and SubIFDs (the pyramids inside an
//!   OME-TIFF) are left out.
//! - **Axes**: an OME-TIFF's first `Image` (a multi-series file's other images are left
//!   out; planes in other files, `TiffData` with a `UUID`, are not followed) by its
//!   `DimensionOrder` and sizes; an ImageJ hyperstack by `channels`, `slices`, `frames`
//!   (channels vary fastest across pages, then slices, then frames); a plain multi-page
//!   TIFF as `(z, y, x)`, one page as `(y, x)`. Axes of size 1 are dropped, except `y`
//!   and `x`. Pixels of several samples (RGB, chunky or planar) add a `c` axis.
//! - **Folders and patterns**: files sorted by name, stacked along a new axis: `z` when
//!   the files have no `z` axis (2-D slices), else `t` (z-stacks). All files must have
//!   the same axes, shape and data type.
//! - **Reading** decodes only the strips or tiles a region meets, in parallel (rayon),
//!   each task with its own decoder from the source's pool, which keeps a few open
//!   across all files (a folder of thousands of slices holds a few descriptors); the
//!   output is native endian.
//! - **Data types**: 8 to 64-bit unsigned and signed integers, 32 and 64-bit floats.
//!   Compressions: none, LZW, deflate, zstd, packbits, JPEG (what the `tiff` crate
//!   decodes; others are a [`TiffError::Compression`]). Samples come out as stored,
//!   except JPEG's YCbCr, converted to RGB; WhiteIsZero samples are not inverted.
//! - **Folders and patterns** are stacked even when they hold one file (a leading axis
//!   of size 1), so that a growing folder keeps its axes.
//!
//! ```
//! use shardwright::pyramid::source::Source;
//! use shardwright::Domain;
//! use shardwright_tiff::TiffSource;
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/ome_xyzct.ome.tif");
//! let source = TiffSource::open(path).unwrap();
//! assert_eq!(source.axes(), ["t", "c", "z", "y", "x"]);
//! assert_eq!((source.shape(), source.data_type()), (vec![2, 3, 4, 10, 12], "uint16".to_string()));
//! let bytes = source.read(&Domain::new(vec![1, 2, 3, 4, 5], vec![1, 1, 1, 1, 2])).unwrap();
//! assert_eq!(bytes.len(), 4);
//! ```

mod error;
mod file;
mod layout;
mod meta;
mod pool;
mod read;

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use shardwright::pyramid::image_metadata::ImageMetadata;
use shardwright::pyramid::source::{source_error, Source};
use shardwright::pyramid::PyramidError;
use shardwright::Domain;

pub use error::TiffError;
use file::{DataType, TiffFile};
use layout::{Axis, Kind};

/// A TIFF file, a folder of TIFF files or a glob pattern of them, read as one array (see
/// the crate docs for how axes are found).
///
/// ```
/// use shardwright::pyramid::source::Source;
/// use shardwright_tiff::TiffSource;
/// let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/folder2d");
/// let source = TiffSource::open(folder).unwrap();
/// assert_eq!(source.axes(), ["z", "y", "x"]);
/// assert_eq!(source.shape(), [3, 20, 30]);
/// ```
#[derive(Debug)]
pub struct TiffSource {
    /// Each file, the index of its image's first page, its page strides by output axis.
    files: Vec<(TiffFile, usize, Vec<u64>)>,
    /// The file, folder or pattern opened.
    spec: String,
    axes: Vec<Axis>,
    dtype: DataType,
    metadata: ImageMetadata,
    pixel_sizes: Vec<Option<f64>>,
    /// Where the first file's axes come from: `OME-XML`, `ImageJ` or `TIFF`.
    source_name: &'static str,
    grain: Option<Vec<u64>>,
    /// The decoders open, shared by the files (bounding the files open at once).
    decoders: pool::Decoders,
}

fn is_pattern(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

fn is_tiff_name(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("tif") || e.eq_ignore_ascii_case("tiff"))
}

/// The TIFF files of folder `dir`, sorted by name.
fn folder_files(dir: &Path) -> Result<Vec<PathBuf>, TiffError> {
    let entries = std::fs::read_dir(dir).map_err(|e| TiffError::io(dir, e))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && is_tiff_name(p))
        .collect();
    files.sort();
    Ok(files)
}

/// The files matching glob `pattern`, sorted by name.
fn pattern_files(pattern: &str) -> Vec<PathBuf> {
    let Ok(paths) = glob::glob(pattern) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = paths
        .filter_map(Result::ok)
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Whether `text` names a TIFF source: a file with a TIFF or BigTIFF header, a folder
/// holding `*.tif` or `*.tiff` files and no Zarr metadata (`zarr.json`, `.zarray`,
/// `.zgroup`), or a glob pattern (with `*`, `?` or `[`) matching TIFF files.
///
/// ```
/// use shardwright_tiff::is_tiff_spec;
/// let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
/// assert!(is_tiff_spec(&format!("{data}/strip_lzw.tif")));
/// assert!(is_tiff_spec(&format!("{data}/folder2d")));
/// assert!(is_tiff_spec(&format!("{data}/folder3d/*.tif")));
/// assert!(!is_tiff_spec(&format!("{data}/not_a_tiff.tif")));
/// assert!(!is_tiff_spec(&format!("{data}/no_such_file.tif")));
/// ```
#[must_use]
pub fn is_tiff_spec(text: &str) -> bool {
    let path = Path::new(text);
    if path.is_file() {
        return file::has_tiff_header(path);
    }
    if path.is_dir() {
        let zarr = [".zarray", ".zgroup", "zarr.json"]
            .iter()
            .any(|name| path.join(name).exists());
        return !zarr && folder_files(path).is_ok_and(|f| !f.is_empty());
    }
    is_pattern(text) && pattern_files(text).iter().any(|p| file::has_tiff_header(p))
}

impl TiffSource {
    /// Open a TIFF / BigTIFF / OME-TIFF / ImageJ file, a folder of TIFF files, or a glob
    /// pattern of them. Reads the files' tags only.
    ///
    /// ```
    /// use shardwright::pyramid::source::Source;
    /// use shardwright_tiff::TiffSource;
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/rgb_planar.tif");
    /// let source = TiffSource::open(path).unwrap();
    /// assert_eq!((source.axes(), source.shape()), (vec!["c".to_string(), "y".into(), "x".into()], vec![3, 20, 30]));
    /// ```
    ///
    /// # Errors
    /// [`TiffError::NotFound`] for a path that does not exist or a folder or pattern
    /// without TIFF files; the other [`TiffError`]s for files that cannot be read or laid
    /// out as one array.
    pub fn open(spec: &str) -> Result<Self, TiffError> {
        let path = Path::new(spec);
        let (paths, stacked) = if path.is_file() {
            (vec![path.to_path_buf()], false)
        } else if path.is_dir() {
            (folder_files(path)?, true)
        } else if is_pattern(spec) {
            (pattern_files(spec), true)
        } else {
            (Vec::new(), true)
        };
        if paths.is_empty() {
            return Err(TiffError::NotFound { spec: spec.into() });
        }
        let files: Vec<TiffFile> = paths
            .par_iter()
            .map(|p| TiffFile::open(p))
            .collect::<Result<_, _>>()?;
        let images: Vec<layout::Image> =
            files.iter().map(layout::image).collect::<Result<_, _>>()?;
        let Some(head) = images.first().cloned() else {
            return Err(TiffError::NotFound { spec: spec.into() });
        };
        let (axes, strides) = if stacked {
            layout::stack(spec, &files, &images)?
        } else {
            (head.axes.clone(), vec![head.strides.clone()])
        };
        let metadata = layout::metadata(&axes, &head.described);
        let pixel_sizes = layout::pixel_sizes(&axes, &head.described);
        let files: Vec<(TiffFile, usize, Vec<u64>)> = files
            .into_iter()
            .zip(&images)
            .zip(strides)
            .map(|((f, image), s)| (f, image.first, s))
            .collect();
        let grain = grain(&files, &axes);
        Ok(Self {
            files,
            spec: spec.to_string(),
            axes,
            dtype: head.dtype,
            metadata,
            pixel_sizes,
            source_name: head.described.source_name,
            grain,
            decoders: pool::Decoders::new(),
        })
    }

    /// The axes' OME-Zarr names in OME order, e.g. `["t", "c", "z", "y", "x"]`.
    ///
    /// ```
    /// use shardwright_tiff::TiffSource;
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/strip_lzw.tif");
    /// assert_eq!(TiffSource::open(path).unwrap().axes(), ["y", "x"]);
    /// ```
    #[must_use]
    pub fn axes(&self) -> Vec<String> {
        self.axes.iter().map(|a| a.name.to_string()).collect()
    }

    /// The pixel size and units per axis and the channels the file(s) declare (OME-XML,
    /// ImageJ or the resolution tags of the first file); fields are `None` when the file
    /// says nothing of them. Units are OME names (`micrometer`, `second`, …).
    ///
    /// ```
    /// use shardwright_tiff::TiffSource;
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/ome_xyzct.ome.tif");
    /// let image = TiffSource::open(path).unwrap().image_metadata();
    /// assert_eq!(image.scale, Some(vec![1.5, 1.0, 2.0, 0.406, 0.406]));
    /// assert_eq!(image.channels.unwrap()[1].label.as_deref(), Some("GFP"));
    /// ```
    #[must_use]
    pub fn image_metadata(&self) -> ImageMetadata {
        self.metadata.clone()
    }

    /// The pixel size of each axis (in the unit of [`image_metadata`](Self::image_metadata)'s
    /// `units`) where the file(s) declare it, `None` where they do not: unlike the scale of
    /// the image metadata, which is 1.0 for an axis of unknown size, so that a folder of
    /// slices (whose `z` spacing no file declares) can be told from one of 1.0 µm spacing.
    ///
    /// ```
    /// use shardwright_tiff::TiffSource;
    /// let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    /// // Resolution tags of 20000 pixels per centimetre: 0.5 µm in x and y.
    /// let file = TiffSource::open(&format!("{data}/tiled_edge.tif")).unwrap();
    /// assert_eq!(file.pixel_sizes(), [Some(0.5), Some(0.5)]);
    /// let folder = TiffSource::open(&format!("{data}/folder2d")).unwrap();
    /// assert_eq!(folder.pixel_sizes(), [None, None, None]);
    /// ```
    #[must_use]
    pub fn pixel_sizes(&self) -> Vec<Option<f64>> {
        self.pixel_sizes.clone()
    }

    fn read_region(&self, region: &Domain) -> Result<Vec<u8>, PyramidError> {
        let shape: Vec<u64> = self.shape();
        region
            .check_inside(&Domain::from_shape(shape))
            .map_err(|e| source_error(region, e))?;
        read::read(self, region).map_err(|e| source_error(region, e))
    }
}

/// The strip or tile shape in the output's axes, when every page of the image has the
/// same.
fn grain(files: &[(TiffFile, usize, Vec<u64>)], axes: &[Axis]) -> Option<Vec<u64>> {
    // (The image's page count, checked at open to fit in the file.)
    let pages = axes
        .iter()
        .filter(|a| a.kind == Kind::Page)
        .try_fold(1usize, |n, a| n.checked_mul(usize::try_from(a.size).ok()?))?;
    let mut all = files.iter().flat_map(|(f, first, _)| {
        let end = first.saturating_add(pages).min(f.pages.len());
        f.pages.get(*first..end).unwrap_or_default().iter()
    });
    let head = all.next()?;
    if !all.all(|p| (p.chunk, p.planar) == (head.chunk, head.planar)) {
        return None;
    }
    Some(
        axes.iter()
            .map(|a| match a.kind {
                Kind::File | Kind::Page => 1,
                Kind::Sample => head.chunk_samples() as u64,
                Kind::Y => u64::from(head.chunk.1),
                Kind::X => u64::from(head.chunk.0),
            })
            .collect(),
    )
}

impl Source for TiffSource {
    fn shape(&self) -> Vec<u64> {
        self.axes.iter().map(|a| a.size).collect()
    }

    fn data_type(&self) -> String {
        self.dtype.name().to_string()
    }

    fn read(&self, region: &Domain) -> Result<Vec<u8>, PyramidError> {
        self.read_region(region)
    }

    fn read_grain(&self) -> Option<Vec<u64>> {
        self.grain.clone()
    }
}
