//! Multiscale pyramids in one pass: downsampling kernels ([`downsample`]), the plan of
//! the levels ([`plan`]), sources to read from ([`source`]), the one-pass driver that
//! writes every level through the shard writers ([`build`]) and the OME-Zarr 0.5
//! metadata ([`ome`]).
//!
//! ```
//! use std::sync::Arc;
//! use shardwright::pyramid::{self, plan::PlanRequest, source::BufferSource};
//! use shardwright::{Compressor, MemoryStore};
//!
//! let data: Vec<u8> = (0..64u8).collect();
//! let source = BufferSource::new(data, vec![8, 8], "uint8");
//! let request = PlanRequest { factors: vec![2, 2], levels: Some(3), chunks: Some(vec![vec![2, 2]]), ..Default::default() };
//! let store = Arc::new(MemoryStore::new());
//! let options = pyramid::build::BuildOptions::new(request, Compressor::Zstd { level: 3 });
//! let report = pyramid::build::pyramid(&source, store, "p.zarr", &options, &mut |_| true).unwrap();
//! assert_eq!(report.levels.len(), 3);
//! assert_eq!(report.levels[2].layout().shape(), &[2, 2]);
//! // every source element read once
//! assert_eq!(report.bytes_read, 64);
//! ```

pub mod add_levels;
pub mod add_levels_group;
pub mod build;
pub mod convert;
pub mod downsample;
pub(crate) mod driver;
mod grain;
pub mod image_metadata;
pub(crate) mod levels;
pub mod ome;
pub mod options;
pub mod plan;
pub mod source;
mod stop;
pub mod tasks;
pub mod update;
pub(crate) mod walk;
pub mod window;

pub use downsample::{DownsampleError, Method};

/// Why a pyramid (or a copy) could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PyramidError {
    /// Settings that do not make a pyramid of this source: the message says what was
    /// expected and what was given.
    #[error("{0}")]
    Invalid(String),
    /// A downsampling kernel refused its input or method.
    #[error(transparent)]
    Downsample(#[from] DownsampleError),
    /// The source failed to give a region.
    #[error("reading the source failed at {region}: {message}")]
    Source {
        /// The region being read, as `[0:8, 24:40]`.
        region: String,
        /// What went wrong.
        message: String,
    },
    /// The progress callback asked to stop. Shards stored until then stay, each whole.
    #[error("stopped by the progress callback; rerun with resume to finish")]
    Stopped,
    /// A level-0 shard of an image was committed after the image was finished or
    /// abandoned: nothing was stored.
    #[error("level-0 shard {shard} was not stored: the image is closed (finished or abandoned); open it again with sw.open_image to write more of level 0")]
    ImageClosed {
        /// The shard, as `[0:8, 24:40]`.
        shard: String,
    },
    /// `add_levels` was given a place with no array `0` (level 0) under it.
    #[error("no level 0 in '{path}': add_levels needs an OME-Zarr image or a group holding an array '0'{found}")]
    NoLevelZero {
        /// The image group's path.
        path: String,
        /// What is there instead: `""`, or `"; that is an array: …"`.
        found: String,
    },
    /// The destination holds an array made with other settings than a resumed job's.
    #[error("cannot resume into '{path}': {message}")]
    Resume {
        /// The array's path.
        path: String,
        /// What differs.
        message: String,
    },
}

impl PyramidError {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }
}
