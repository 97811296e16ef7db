//! The errors of a TIFF source: each names the file (and page, chunk) and says what was
//! expected and what was found.

use shardwright::ErrorKind;

/// Every error [`TiffSource`](crate::TiffSource) returns.
///
/// ```
/// use shardwright::ErrorKind;
/// use shardwright_tiff::{TiffError, TiffSource};
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/not_a_tiff.tif");
/// let err = TiffSource::open(path).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Unsupported);
/// assert!(matches!(err, TiffError::NotTiff { .. }));
/// assert!(err.to_string().contains("not_a_tiff.tif"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TiffError {
    /// A file without a TIFF or BigTIFF header (kind `Unsupported`: a format this source
    /// does not read).
    #[error("'{path}' is not a TIFF file: expected a TIFF or BigTIFF header ('II' or 'MM', then 42 or 43), found {found}")]
    NotTiff {
        /// The file.
        path: String,
        /// Its first bytes, escaped.
        found: String,
    },
    /// A compression the tiff crate does not decode.
    #[error("page {page} of '{path}': compression '{name}' ({code}) is not supported; supported: none, LZW, deflate/zlib, zstd, packbits, JPEG")]
    Compression {
        /// The file.
        path: String,
        /// The page (IFD) index.
        page: usize,
        /// The compression's name.
        name: String,
        /// Its TIFF code.
        code: u16,
    },
    /// Samples that are not 8 to 64-bit integers or 32/64-bit floats, or that the tiff
    /// crate does not decode all of (an extra sample that is not alpha).
    #[error("page {page} of '{path}' has {found}")]
    SampleLayout {
        /// The file.
        path: String,
        /// The page (IFD) index.
        page: usize,
        /// What the page has.
        found: String,
    },
    /// Axes this source cannot lay out (e.g. RGB samples in a file with a channel axis).
    #[error("'{path}': {message}")]
    Layout {
        /// The file, folder or pattern.
        path: String,
        /// What does not fit and what was expected.
        message: String,
    },
    /// Pages of one image whose shapes or data types differ, or fewer pages than its
    /// metadata declares.
    #[error("page {page} of '{path}' is {found}; expected {expected} like the image's first page")]
    PageMismatch {
        /// The file.
        path: String,
        /// The page (IFD) index.
        page: usize,
        /// The first page's shape and type.
        expected: String,
        /// This page's.
        found: String,
    },
    /// A file with fewer pages than its metadata declares.
    #[error("'{path}' has {found} pages from page {first}; its {source_name} metadata declares {expected}")]
    PageCount {
        /// The file.
        path: String,
        /// The first page of the image.
        first: usize,
        /// The pages the metadata declares.
        expected: usize,
        /// The pages there are.
        found: usize,
        /// `OME-XML` or `ImageJ`.
        source_name: String,
    },
    /// Files of one folder or pattern whose images differ in shape or data type.
    #[error("'{path}' holds {found}; expected {expected} like the first file, '{first}'")]
    FileMismatch {
        /// The file that differs.
        path: String,
        /// The first file.
        first: String,
        /// The first file's axes, shape and type.
        expected: String,
        /// This file's.
        found: String,
    },
    /// A folder or pattern that names no TIFF file, or a path that does not exist.
    #[error("no TIFF files at '{spec}': expected a TIFF file, a folder holding *.tif or *.tiff files, or a glob pattern matching some")]
    NotFound {
        /// The path or pattern given.
        spec: String,
    },
    /// OME-XML or ImageJ metadata that cannot be read.
    #[error("the {source_name} metadata of '{path}' cannot be read: {message}")]
    Metadata {
        /// The file.
        path: String,
        /// `OME-XML` or `ImageJ`.
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// Reading a file failed.
    #[error("cannot read '{path}': {message}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// A strip or tile that cannot be decoded (corrupt data, or data the tiff crate does
    /// not decode: then `unsupported` is true and the kind `Unsupported`).
    #[error("cannot decode chunk {chunk} of page {page} of '{path}': {message}")]
    Decode {
        /// The file.
        path: String,
        /// The page (IFD) index.
        page: usize,
        /// The strip or tile index.
        chunk: u32,
        /// The decoder's message.
        message: String,
        /// Whether the tiff crate reported the data as unsupported.
        unsupported: bool,
    },
}

impl TiffError {
    /// The error's kind (which Python exception it becomes).
    ///
    /// ```
    /// use shardwright::ErrorKind;
    /// use shardwright_tiff::TiffError;
    /// let err = TiffError::NotFound { spec: "empty/".into() };
    /// assert_eq!(err.kind(), ErrorKind::NotFound);
    /// ```
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::NotTiff { .. }
            | Self::Compression { .. }
            | Self::SampleLayout { .. }
            | Self::Layout { .. } => ErrorKind::Unsupported,
            Self::PageMismatch { .. } | Self::PageCount { .. } | Self::FileMismatch { .. } => {
                ErrorKind::Shape
            }
            Self::NotFound { .. } => ErrorKind::NotFound,
            Self::Decode { unsupported, .. } => {
                if *unsupported {
                    ErrorKind::Unsupported
                } else {
                    ErrorKind::Other
                }
            }
            Self::Metadata { .. } | Self::Io { .. } => ErrorKind::Other,
        }
    }

    pub(crate) fn io(path: &std::path::Path, err: impl std::fmt::Display) -> Self {
        Self::Io {
            path: path.display().to_string(),
            message: err.to_string(),
        }
    }
}

/// What the source reads of samples, the end of [`TiffError::SampleLayout`]'s message for
/// a data type it does not.
pub(crate) const SUPPORTED_SAMPLES: &str = "supported: 8, 16, 32 or 64-bit unsigned or \
     signed integers and 32 or 64-bit floats, the same for every sample";

/// The name of TIFF compression `code`, for the message of one that is not supported.
pub(crate) fn compression_name(code: u16) -> &'static str {
    match code {
        2 => "CCITT RLE",
        3 => "CCITT G3",
        4 => "CCITT G4",
        6 => "old-style JPEG",
        32809 => "ThunderScan",
        32946 | 8 => "deflate",
        34661 => "JBIG",
        34676 | 34677 => "SGILog",
        34712 | 33003 | 33004 | 33005 => "JPEG 2000",
        34887 => "LERC",
        34892 => "lossy JPEG (DNG)",
        34925 => "LZMA",
        50001 => "WebP",
        50002 | 52546 => "JPEG XL",
        _ => "unknown",
    }
}
