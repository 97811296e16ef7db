//! The crate-wide error: each layer's error, plus what the writer adds.

use crate::buffer::AllocError;
use crate::domain::{Domain, DomainError};
use crate::format::FormatError;
use crate::layout::LayoutError;
use crate::pyramid::{DownsampleError, PyramidError};
use crate::store::StoreError;

/// Every error shardwright returns. Lower layers have their own enums; this wraps them.
///
/// ```
/// use shardwright::{Error, ErrorKind};
/// let err = Error::NotFound("fish.zarr".into());
/// assert_eq!(err.kind(), ErrorKind::NotFound);
/// assert!(err.to_string().contains("fish.zarr"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A region or index of the wrong rank or outside its bounds.
    #[error(transparent)]
    Domain(#[from] DomainError),
    /// Metadata that cannot be read or is not supported.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// A shard or chunk that cannot be encoded or decoded (e.g. a corrupt stored shard).
    #[error(transparent)]
    Format(#[from] FormatError),
    /// The storage backend failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A buffer larger than the memory available was needed (e.g. to read a huge region).
    #[error(transparent)]
    OutOfMemory(#[from] AllocError),
    /// A pyramid or copy whose settings do not fit its source, or whose source failed.
    #[error(transparent)]
    Pyramid(#[from] PyramidError),
    /// No `zarr.json` where an array was expected.
    #[error("no Zarr array at '{0}' (no zarr.json there)")]
    NotFound(String),
    /// An array already exists where one was to be created.
    #[error("an array already exists at '{0}'")]
    AlreadyExists(String),
    /// A region given where a whole inner chunk of a shard was expected.
    #[error("{region} is not an inner chunk of shard {shard}; expected one of its inner chunks, such as {example}")]
    NotAnInnerChunk {
        /// The region given.
        region: Box<Domain>,
        /// The shard being written.
        shard: Box<Domain>,
        /// The inner chunk that starts where the region starts, if any.
        example: Box<Domain>,
    },
    /// Data whose size does not match the region it is written to.
    #[error("data for {region} must have shape {shape:?} ({expected} bytes); got {got} bytes")]
    DataLength {
        /// The region written.
        region: Box<Domain>,
        /// Its shape.
        shape: Vec<u64>,
        /// The bytes expected.
        expected: usize,
        /// The bytes given.
        got: usize,
    },
    /// A frame (or block of frames) given to an [`Appender`](crate::append::Appender)
    /// whose shape is not the array's shape across the axis appended along.
    #[error("a frame appended along axis {axis} must have shape {frame:?} (a block of k frames: {block}); got shape {got:?}")]
    FrameShape {
        /// The axis appended along.
        axis: usize,
        /// The shape of one frame (the array's shape without `axis`).
        frame: Vec<u64>,
        /// The shape of a block of `k` frames, written out.
        block: String,
        /// The shape given.
        got: Vec<u64>,
    },
    /// Other writers kept changing a shard this writer was merging with.
    #[error("conflict on shard '{key}': another writer changed it during each of {attempts} attempts to merge with it")]
    Conflict {
        /// The shard's storage key.
        key: String,
        /// Attempts made (1 + retries).
        attempts: u32,
    },
    /// A broken internal invariant (a bug in shardwright, reported rather than a panic).
    #[error("internal error: {0}")]
    Internal(String),
    /// A staged write would take a transaction past its memory limit.
    #[error("transaction too large: staging {needed} bytes would exceed the memory limit of {limit} bytes")]
    TooLarge {
        /// Bytes that would be staged.
        needed: u64,
        /// The limit.
        limit: u64,
    },
}

/// The broad class of an [`Error`], for mapping to other error systems (e.g. Python's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Wrong shape, rank or data size.
    Shape,
    /// A region or index out of bounds.
    Bounds,
    /// Something in the array's metadata shardwright does not support.
    Unsupported,
    /// A stored shard that is corrupt.
    CorruptShard,
    /// No array where one was expected.
    NotFound,
    /// Another writer changed a shard during every attempt to merge with it.
    Conflict,
    /// A transaction's staged data would pass its memory limit.
    TooLarge,
    /// A buffer could not be allocated.
    OutOfMemory,
    /// The change was made and is visible, but flushing it to disk failed.
    NotDurable,
    /// Anything else: I/O failures, invalid metadata, closed writers.
    Other,
}

impl Error {
    /// The broad class of this error.
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Domain(
                DomainError::OutOfBounds { .. }
                | DomainError::Overflow { .. }
                | DomainError::TooManyCells(_),
            ) => ErrorKind::Bounds,
            Error::Domain(_)
            | Error::DataLength { .. }
            | Error::NotAnInnerChunk { .. }
            | Error::FrameShape { .. }
            | Error::Layout(LayoutError::Shape(_)) => ErrorKind::Shape,
            Error::Layout(LayoutError::Unsupported(_)) => ErrorKind::Unsupported,
            Error::Format(FormatError::Corrupt(_)) => ErrorKind::CorruptShard,
            Error::NotFound(_) | Error::Pyramid(PyramidError::NoLevelZero { .. }) => {
                ErrorKind::NotFound
            }
            Error::Conflict { .. } | Error::Store(StoreError::Conflict { .. }) => {
                ErrorKind::Conflict
            }
            Error::TooLarge { .. } => ErrorKind::TooLarge,
            Error::Pyramid(
                PyramidError::Invalid(_)
                | PyramidError::Downsample(
                    DownsampleError::UnknownMethod { .. }
                    | DownsampleError::Factors { .. }
                    | DownsampleError::Part { .. }
                    | DownsampleError::InputLength { .. },
                ),
            ) => ErrorKind::Shape,
            Error::Pyramid(PyramidError::Downsample(
                DownsampleError::UnsupportedDataType { .. }
                | DownsampleError::MethodNotForDataType { .. },
            )) => ErrorKind::Unsupported,
            Error::OutOfMemory(_) => ErrorKind::OutOfMemory,
            Error::Store(StoreError::NotDurable { .. }) => ErrorKind::NotDurable,
            Error::Store(StoreError::Config { .. }) => ErrorKind::Unsupported,
            _ => ErrorKind::Other,
        }
    }
}

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The text of a caught panic (its `&str` or `String` payload), as an internal error
/// message: panics never cross into callers (encode threads, the Python binding).
///
/// ```
/// let panic = std::panic::catch_unwind(|| panic!("boom")).unwrap_err();
/// assert_eq!(shardwright::panic_message(&*panic), "internal error (panic): boom");
/// ```
#[must_use]
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    format!("internal error (panic): {text}")
}
