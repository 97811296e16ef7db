#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]
//! # shardwright
//!
//! Write huge sharded Zarr v3 arrays piece by piece — inner chunk by inner chunk — with
//! each shard stored exactly once, atomically, in bounded memory, at the speed of the
//! compressor. Output is standard Zarr v3: zarr-python, TensorStore and zarrs read it.
//!
//! ```
//! use std::sync::Arc;
//! use shardwright::layout::ArraySpec;
//! use shardwright::store::{InstrumentedStore, MemoryStore};
//! use shardwright::Array;
//!
//! let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
//! let spec = ArraySpec::new(vec![100, 100], "uint16", vec![10, 10]).shards(vec![50, 50]);
//! let array = Array::create(store.clone(), "fish.zarr", &spec).unwrap();
//! store.reset();
//! for shard in array.shards() {
//!     let writer = array.shard_writer(&shard).unwrap();           // no I/O
//!     for chunk in writer.inner_chunks() {
//!         let data: Vec<u8> = vec![1; chunk.size() as usize * 2];  // compute the chunk
//!         writer.write_chunk(&chunk, &data).unwrap();              // encoded in the background
//!     }
//!     writer.commit().unwrap();                                    // one put
//! }
//! assert_eq!((store.counts().puts, store.counts().gets), (4, 0));
//! ```
//!
//! ## Layers
//!
//! | module | owns |
//! |---|---|
//! | [`domain`] | boxes, regular grids, n-d block copies; no I/O |
//! | [`buffer`] | buffers sized by the user, allocated fallibly (an error, never an abort) |
//! | [`layout`] | what an array looks like, read from `zarr.json` with zarrs' types |
//! | [`format`] | the shard byte format: index, assembly, splitting, chunk codecs |
//! | [`store`] | a small storage trait; filesystem, memory and instrumented backends |
//! | [`writer`] | [`ShardWriter`]: encodes on a pool, keeps encoded bytes, commits once |
//! | [`txn`] | [`Transaction`]: region writes across shards, read-your-writes, parallel commit |
//! | [`array`] / [`read`] | [`Array`]: open/create, iterate shards, make writers, read back |
//! | [`check`] / `edit` | an fsck: every stored shard's index and chunks verified, damaged ones mended; resizing |
//! | [`pyramid`] | multiscale pyramids and copies in one pass: plans, kernels, the driver, OME metadata, levels over an existing level 0 |
//! | [`append`] | [`append::Appender`]: frames appended along an axis, each slab of shards stored once, then shown |
//! | [`image`] | [`image::Image`]: an image whose coarser levels fill as level 0's shards are stored |
//!
//! Lower layers never use higher ones (the writer layer's [`ShardObserver`] is how a layer
//! above learns what is written without the writer knowing it).

pub mod append;
pub mod array;
pub mod buffer;
pub mod check;
pub mod domain;
mod edit;
mod error;
pub mod format;
pub mod image;
pub mod layout;
pub mod pyramid;
pub mod read;
pub mod store;
pub mod txn;
pub mod writer;

pub use append::Appender;
pub use array::Array;
pub use domain::{Domain, Grid};
pub use error::{panic_message, Error, ErrorKind, Result};
pub use layout::{ArraySpec, Compressor, IndexLocation, Layout};
pub use store::{FilesystemStore, InstrumentedStore, MemoryStore, Store, Upload};
pub use txn::{Transaction, TransactionOptions, TransactionStats};
pub use writer::{CommitStats, PendingCommit, ShardObserver, ShardWriter, WriterOptions};
