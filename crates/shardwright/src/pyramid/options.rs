//! The settings of a pyramid build or copy ([`BuildOptions`]), the progress it reports
//! after each shard ([`Progress`]) and what it did ([`Report`]): types only, shared by the
//! one-pass driver, the level arrays and the distributed tasks.

use super::image_metadata::ImageMetadata;
use super::plan::PlanRequest;
use crate::layout::Compressor;
use crate::writer::WriterOptions;
use crate::Array;

/// How to build: the plan request plus what the written arrays look like.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Factors, levels, method, chunk and shard shapes, axes.
    pub request: PlanRequest,
    /// The inner chunks' compressor.
    pub compressor: Compressor,
    /// Continue a job that stopped: keep the arrays and shards already stored (they must
    /// have been made with the same settings) and write only the missing shards.
    pub resume: bool,
    /// The image's name, units, pixel size, offset and channels in the OME metadata
    /// (name default: the last part of the path).
    pub image: ImageMetadata,
    /// The shard writers' options.
    pub writer: WriterOptions,
    /// Commits running in the background at most (each holds a writer's staged bytes).
    pub commits_in_flight: usize,
}

impl BuildOptions {
    /// Options for `request` with `compressor`, and defaults for the rest.
    #[must_use]
    pub fn new(request: PlanRequest, compressor: Compressor) -> Self {
        Self {
            request,
            compressor,
            resume: false,
            image: ImageMetadata::default(),
            writer: WriterOptions::default(),
            commits_in_flight: 4,
        }
    }
}

/// Progress, after each shard is stored.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// The level of the shard just stored.
    pub level: usize,
    /// Shards stored so far, per level (skipped ones of a resumed run excluded).
    pub shards_done: Vec<u64>,
    /// Shards to store in this run, per level.
    pub shards_total: Vec<u64>,
    /// Raw bytes read from the source so far.
    pub bytes_read: u64,
    /// Bytes stored so far.
    pub bytes_written: u64,
}

/// What a build did.
#[derive(Debug, Clone)]
pub struct Report {
    /// The written arrays, level 0 first.
    pub levels: Vec<Array>,
    /// Raw bytes read from the source: each element once (the source's size, less what a
    /// resumed run skipped), unless source chunks larger than level 0's blocks had to be
    /// read again (see [`Source::read_grain`]).
    pub bytes_read: u64,
    /// Bytes stored (shards and metadata).
    pub bytes_written: u64,
    /// Shards stored per level in this run.
    pub shards_written: Vec<u64>,
    /// Shards found stored already and skipped, per level (resume).
    pub shards_skipped: Vec<u64>,
    /// Puts and gets of the shard commits.
    pub puts: u64,
    /// Gets of the shard commits (0 unless a shard was merged).
    pub gets: u64,
    /// Wall time.
    pub seconds: f64,
    /// The bound on the raw bytes held at once: [`Plan::memory_bound`](super::plan::Plan::memory_bound), plus the source
    /// chunks held while the blocks they meet are served, when the source's chunks do not
    /// nest in level 0's blocks ([`Source::read_grain`]).
    pub memory_bound: u64,
}
