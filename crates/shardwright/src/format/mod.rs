//! The shard byte format: inner chunks encoded one by one, laid out in C order, and an index
//! of `(offset, nbytes)` pairs (`u64::MAX` twice for an empty slot) encoded with the index
//! codecs at the start or the end of the shard.
//!
//! [`chunk`] encodes and decodes one inner chunk with the layout's codec chain (zarrs does
//! the work); [`index`] encodes and checks a shard index; [`shard`] assembles a shard from
//! encoded chunks and splits a stored one into per-chunk byte ranges. No storage, no threads.
//!
//! ```
//! use shardwright::format::{chunk, shard};
//! use shardwright::layout::{ArraySpec, Layout};
//!
//! let json = ArraySpec::new(vec![4], "uint8", vec![2]).shards(vec![4]).to_json().unwrap();
//! let layout = Layout::from_json(json.as_bytes()).unwrap();
//! let encoded = chunk::encode(&layout, vec![1, 2]).unwrap().expect("not the fill value");
//! let stored = shard::assemble(&layout, &[Some(&encoded[..]), None]).unwrap().to_vec();
//! let ranges = shard::split(&layout, &stored).unwrap();
//! let first = ranges[0].clone().unwrap();
//! assert_eq!(chunk::decode(&layout, &stored[first]).unwrap(), vec![1, 2]);
//! assert!(ranges[1].is_none());
//! ```

pub mod chunk;
pub mod index;
pub mod shard;
mod zstd_context;

/// Errors of the `format` layer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// A stored shard whose index fails its checksum, cannot be decoded, or points outside
    /// the shard.
    #[error("corrupt shard: {0}")]
    Corrupt(String),
    /// An inner chunk failed to encode or decode.
    #[error("codec error: {0}")]
    Codec(String),
    /// Raw data whose length is not that of one inner chunk.
    #[error("expected {expected} bytes of raw chunk data, got {got}")]
    RawLength {
        /// The length of one raw inner chunk.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// A shard operation (index, assembly, splitting) on an array that is not sharded.
    #[error("the array is not sharded: it has no shard index")]
    NotSharded,
    /// A number of slots that is not that of one shard.
    #[error("expected {expected} inner chunk slots, got {got}")]
    SlotCount {
        /// The number of inner chunks in a shard.
        expected: usize,
        /// The number given.
        got: usize,
    },
}

impl FormatError {
    /// The error, naming the stored shard (at `key`) it came from when it is corruption.
    ///
    /// ```
    /// use shardwright::format::FormatError;
    /// let err = FormatError::Corrupt("bad checksum".into()).in_shard("a/c/0");
    /// assert_eq!(err.to_string(), "corrupt shard: stored shard 'a/c/0': bad checksum");
    /// ```
    #[must_use]
    pub fn in_shard(self, key: &str) -> Self {
        match self {
            FormatError::Corrupt(why) => {
                FormatError::Corrupt(format!("stored shard '{key}': {why}"))
            }
            other => other,
        }
    }
}

pub(crate) fn codec_options() -> zarrs::array::CodecOptions {
    // Parallelism is across inner chunks, on shardwright's pool; each encode is serial.
    zarrs::array::CodecOptions::default().with_concurrent_target(1)
}
