//! Tests of streaming writers: encoded chunks appended to the upload as they finish.

use std::sync::Arc;

use crate::domain::Domain;
use crate::layout::{ArraySpec, Compressor, IndexLocation};
use crate::store::{FilesystemStore, InstrumentedStore, MemoryStore, Store};
use crate::writer::spill::STAGE_BYTES;
use crate::{Array, WriterOptions};

/// 64 KiB of bytes that zstd cannot shrink much, different for each `seed`.
fn noisy(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Every 7th byte a zero, so the fill-value check looks at real data.
            if i % 7 == 0 {
                0
            } else {
                (state >> 56) as u8
            }
        })
        .collect()
}

/// uint8 array of 4 shards of 8×8 inner chunks of 64×1024 (64 KiB), zstd 1.
fn spec() -> ArraySpec {
    ArraySpec::new(vec![1024, 8192], "uint8", vec![64, 1024])
        .shards(vec![512, 8192])
        .compressor(Compressor::Zstd { level: 1 })
}

fn array(store: Arc<dyn Store>, path: &str, stream: bool) -> Array {
    Array::create(store, path, &spec())
        .unwrap()
        .with_options(WriterOptions::default().stream(stream))
}

fn chunk_data(chunk: &Domain) -> Vec<u8> {
    let index = chunk.index().unwrap();
    if index[1] == 3 {
        return vec![0; chunk.size() as usize]; // an empty chunk in every row
    }
    noisy(index[0] * 100 + index[1], chunk.size() as usize)
}

/// Write every chunk of the first shard in C order, return the stored bytes.
fn first_shard_bytes(store: Arc<dyn Store>, stream: bool) -> Vec<u8> {
    let array = array(Arc::clone(&store), "a", stream);
    let shard = array.shards().next().unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    for chunk in writer.inner_chunks() {
        writer.write_chunk(&chunk, &chunk_data(&chunk)).unwrap();
    }
    let stats = writer.commit().unwrap();
    assert_eq!((stats.puts, stats.gets, stats.chunks_empty), (1, 0, 8));
    store.get("a/c/0/0").unwrap().unwrap()
}

#[test]
fn a_streamed_shard_is_byte_identical_to_one_put_whole() {
    let streamed = first_shard_bytes(Arc::new(MemoryStore::new()), true);
    assert!(
        streamed.len() > 2 * STAGE_BYTES,
        "the test must stream several stages"
    );
    let whole = first_shard_bytes(Arc::new(MemoryStore::new()), false);
    assert!(streamed == whole);
    let dir = tempfile::tempdir().unwrap();
    let on_disk = first_shard_bytes(Arc::new(FilesystemStore::new(dir.path())), true);
    assert!(on_disk == whole);
}

#[test]
fn a_streaming_writer_holds_about_one_stage_not_the_encoded_shard() {
    let store = Arc::new(MemoryStore::new());
    let array = array(store, "a", true);
    let shard = array.shards().next().unwrap();
    let options = WriterOptions::default().max_in_flight(4);
    let array = array.with_options(options.stream(true));
    let writer = array.shard_writer(&shard).unwrap();
    let mut most = 0;
    for chunk in writer.inner_chunks() {
        writer.write_chunk(&chunk, &chunk_data(&chunk)).unwrap();
        most = most.max(writer.staged_memory());
    }
    let stats = writer.commit().unwrap();
    // Bound: one stage, plus the chunk that overflowed it, plus 4 raw chunks in flight
    // and up to 4 encoded chunks finished out of order.
    let chunk = 64 * 1024;
    assert!(
        most <= STAGE_BYTES + chunk + 8 * chunk,
        "{most} bytes staged"
    );
    assert!(
        stats.bytes_written > 2 * (most as u64),
        "{stats:?} vs {most}"
    );
}

#[test]
fn chunks_written_out_of_order_or_twice_read_back_right() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(FilesystemStore::new(dir.path()));
    let array = array(Arc::clone(&store), "a", true);
    let shard = array.shards().next().unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    let chunks: Vec<Domain> = writer.inner_chunks().collect();
    for chunk in chunks.iter().rev() {
        writer
            .write_chunk(chunk, &noisy(1, chunk.size() as usize))
            .unwrap();
    }
    // Written again: the first bytes are dead in the upload; the commit compacts.
    for chunk in &chunks {
        writer.write_chunk(chunk, &chunk_data(chunk)).unwrap();
    }
    writer.commit().unwrap();
    let mut expected = Vec::new();
    for chunk in &chunks {
        assert_eq!(array.read(chunk).unwrap(), chunk_data(chunk));
        expected.push(chunk_data(chunk));
    }
    // Compacted: the same bytes as writing each chunk once.
    let once = first_shard_bytes(Arc::new(MemoryStore::new()), false);
    assert!(store.get("a/c/0/0").unwrap().unwrap() == once);
    assert_eq!(temp_files(dir.path()), 0);
}

#[test]
fn a_region_over_a_chunk_already_streamed_merges_with_it() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let array = array(store, "a", true);
    let shard = array.shards().next().unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    let chunks: Vec<Domain> = writer.inner_chunks().collect();
    for chunk in &chunks {
        writer.write_chunk(chunk, &chunk_data(chunk)).unwrap();
    }
    // Chunk 0 left the staging buffer long ago: the region write reads it back.
    let region = Domain::new(vec![10, 100], vec![5, 7]);
    writer.write_region(&region, &[42; 35]).unwrap();
    let stats = writer.commit().unwrap();
    assert_eq!((stats.puts, stats.gets), (1, 0));
    let mut expected = chunk_data(&chunks[0]);
    for row in 10..15 {
        expected[row * 1024 + 100..row * 1024 + 107].fill(42);
    }
    assert_eq!(array.read(&chunks[0]).unwrap(), expected);
}

fn temp_files(dir: &std::path::Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            n += temp_files(&path);
        } else if path.to_string_lossy().ends_with(".shardwright-tmp") {
            n += 1;
        }
    }
    n
}

#[test]
fn an_aborted_streaming_writer_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(FilesystemStore::new(dir.path()));
    let array = array(Arc::clone(&store), "a", true);
    let shard = array.shards().next().unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    for chunk in writer.inner_chunks() {
        writer.write_chunk(&chunk, &chunk_data(&chunk)).unwrap();
    }
    // Encodes may still be running: dropping must remove the upload and keep it removed.
    drop(writer);
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(temp_files(dir.path()), 0);
    assert!(store.get("a/c/0/0").unwrap().is_none());
}

/// A store whose first conditional upload completion finds that another writer just
/// stored `theirs` under the key (so it conflicts, and the writer retries).
#[derive(Debug)]
struct AnotherWriterOnce {
    inner: Arc<dyn Store>,
    theirs: std::sync::Mutex<Option<Vec<u8>>>,
    /// Make every append panic, as a buggy store might.
    panic_on_append: bool,
}

#[derive(Debug)]
struct RacedUpload {
    inner: Box<dyn crate::store::Upload>,
    store: Arc<AnotherWriterOnce>,
    key: String,
}

impl crate::store::Upload for RacedUpload {
    fn append(&mut self, parts: &[&[u8]]) -> Result<(), crate::store::StoreError> {
        assert!(!self.store.panic_on_append, "a store that panics");
        self.inner.append(parts)
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn read(&mut self, range: std::ops::Range<u64>) -> Result<Vec<u8>, crate::store::StoreError> {
        self.inner.read(range)
    }
    fn truncate(&mut self, len: u64) -> Result<(), crate::store::StoreError> {
        self.inner.truncate(len)
    }
    fn complete(
        &mut self,
        condition: Option<Option<&crate::store::Version>>,
    ) -> Result<(), crate::store::StoreError> {
        let theirs = self.store.theirs.lock().unwrap().take();
        if let (Some(theirs), Some(_)) = (theirs, condition) {
            self.store.inner.put(&self.key, &[&theirs])?;
        }
        self.inner.complete(condition)
    }
}

/// Delegates to `inner` except for uploads, which race once.
struct Raced(Arc<AnotherWriterOnce>);

impl std::fmt::Debug for Raced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Raced")
    }
}

impl Store for Raced {
    fn begin_upload(
        &self,
        key: &str,
    ) -> Result<Option<Box<dyn crate::store::Upload>>, crate::store::StoreError> {
        Ok(self.0.inner.begin_upload(key)?.map(|inner| {
            Box::new(RacedUpload {
                inner,
                store: Arc::clone(&self.0),
                key: key.to_string(),
            }) as Box<dyn crate::store::Upload>
        }))
    }
    fn streams(&self) -> bool {
        true
    }
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, crate::store::StoreError> {
        self.0.inner.get(key)
    }
    fn get_range(
        &self,
        key: &str,
        range: std::ops::Range<u64>,
    ) -> Result<Option<Vec<u8>>, crate::store::StoreError> {
        self.0.inner.get_range(key, range)
    }
    fn size(&self, key: &str) -> Result<Option<u64>, crate::store::StoreError> {
        self.0.inner.size(key)
    }
    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<(), crate::store::StoreError> {
        self.0.inner.put(key, parts)
    }
    fn get_versioned(
        &self,
        key: &str,
    ) -> Result<Option<(Vec<u8>, crate::store::Version)>, crate::store::StoreError> {
        self.0.inner.get_versioned(key)
    }
    fn put_if(
        &self,
        key: &str,
        parts: &[&[u8]],
        expected: Option<&crate::store::Version>,
    ) -> Result<(), crate::store::StoreError> {
        self.0.inner.put_if(key, parts, expected)
    }
    fn delete(&self, key: &str) -> Result<(), crate::store::StoreError> {
        self.0.inner.delete(key)
    }
    fn delete_if(
        &self,
        key: &str,
        expected: Option<&crate::store::Version>,
    ) -> Result<(), crate::store::StoreError> {
        self.0.inner.delete_if(key, expected)
    }
}

#[test]
fn a_streamed_merge_costs_one_get_and_one_put() {
    let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
    first_shard_bytes(Arc::clone(&inner), false);
    let store = Arc::new(InstrumentedStore::new(inner));
    let array = Array::open(Arc::clone(&store) as Arc<dyn Store>, "a").unwrap();
    store.reset(); // the read of zarr.json
    let (stats, chunks) = rewrite_every_other_chunk(&array);
    // 32 chunks not rewritten, of which the 8 empty ones have nothing to keep.
    assert_eq!((stats.gets, stats.puts, stats.chunks_kept), (1, 1, 24));
    let counts = store.counts();
    assert_eq!((counts.gets, counts.puts, counts.calls()), (1, 1, 2));
    check_every_other_chunk(&array, &chunks, chunk_data);
}

/// Rewrite every other chunk of the first shard with new data and commit.
fn rewrite_every_other_chunk(array: &Array) -> (crate::CommitStats, Vec<Domain>) {
    let shard = array.shards().next().unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    let chunks: Vec<Domain> = writer.inner_chunks().collect();
    for chunk in chunks.iter().step_by(2) {
        writer
            .write_chunk(chunk, &noisy(7, chunk.size() as usize))
            .unwrap();
    }
    (writer.commit().unwrap(), chunks)
}

/// The new data in every other chunk, `kept(chunk)` in the others.
fn check_every_other_chunk(array: &Array, chunks: &[Domain], kept: impl Fn(&Domain) -> Vec<u8>) {
    for (i, chunk) in chunks.iter().enumerate() {
        let expected = if i % 2 == 0 {
            noisy(7, chunk.size() as usize)
        } else {
            kept(chunk)
        };
        assert_eq!(array.read(chunk).unwrap(), expected, "chunk {i}");
    }
}

#[test]
fn a_streamed_merge_that_conflicts_retries_over_the_other_writers_shard() {
    // The other writer's shard: every chunk 0xAB except the empty ones.
    let theirs = {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let array = array(Arc::clone(&store), "a", false);
        let shard = array.shards().next().unwrap();
        let writer = array.shard_writer(&shard).unwrap();
        for chunk in writer.inner_chunks() {
            writer.write_chunk_value(&chunk, &[0xAB]).unwrap();
        }
        writer.commit().unwrap();
        store.get("a/c/0/0").unwrap().unwrap()
    };
    let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
    first_shard_bytes(Arc::clone(&inner), false);
    let raced = Arc::new(AnotherWriterOnce {
        inner,
        theirs: std::sync::Mutex::new(Some(theirs)),
        panic_on_append: false,
    });
    let array = Array::open(Arc::new(Raced(Arc::clone(&raced))), "a").unwrap();
    let (stats, chunks) = rewrite_every_other_chunk(&array);
    assert_eq!((stats.conflicts, stats.gets, stats.puts), (1, 2, 1));
    // Ours where we wrote, theirs (read again after the conflict) everywhere else.
    check_every_other_chunk(&array, &chunks, |c| vec![0xAB; c.size() as usize]);
}

#[test]
fn index_at_start_and_transactions_do_not_stream() {
    let at_start = spec().index_location(IndexLocation::Start);
    let array = Array::create(Arc::new(MemoryStore::new()), "s", &at_start).unwrap();
    let shard = array.shards().next().unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    for chunk in writer.inner_chunks() {
        writer.write_chunk(&chunk, &chunk_data(&chunk)).unwrap();
    }
    // Not streamed: every encoded chunk is held until the commit.
    assert!(writer.staged_memory() > 3 * STAGE_BYTES);
    writer.commit().unwrap();
    for chunk in array.shard_writer(&shard).unwrap().inner_chunks() {
        assert_eq!(array.read(&chunk).unwrap(), chunk_data(&chunk));
    }

    let array = Array::create(Arc::new(MemoryStore::new()), "t", &spec()).unwrap();
    let txn = crate::Transaction::new(array, crate::TransactionOptions::default());
    let region = Domain::new(vec![0, 0], vec![512, 8192]);
    txn.write(&region, &noisy(3, 512 * 8192)).unwrap();
    assert!(txn.staged_memory() > 3 * STAGE_BYTES as u64);
    txn.commit().unwrap();
}

#[test]
fn a_failed_upload_fails_the_next_writes_and_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(FilesystemStore::new(dir.path()));
    let array = array(Arc::clone(&store), "a", true);
    // A file where the shard's folder should be: the upload cannot begin.
    std::fs::create_dir_all(dir.path().join("a/c")).unwrap();
    std::fs::write(dir.path().join("a/c/0"), b"in the way").unwrap();
    let shard = array.shards().next().unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    let mut failed_at = None;
    for (i, chunk) in writer.inner_chunks().enumerate() {
        if let Err(e) = writer.write_chunk(&chunk, &chunk_data(&chunk)) {
            assert!(matches!(e, crate::Error::Store(_)), "{e}");
            failed_at = Some(i);
            break;
        }
    }
    // The first stage fills after ~18 chunks; the failure shows a few writes later.
    let failed_at = failed_at.expect("the writes fail once the upload failed");
    assert!((16..40).contains(&failed_at), "failed at chunk {failed_at}");
    assert!(matches!(writer.commit(), Err(crate::Error::Store(_))));
    assert_eq!(
        std::fs::read(dir.path().join("a/c/0")).unwrap(),
        b"in the way"
    );
    assert_eq!(temp_files(dir.path()), 0);
}

#[test]
fn an_aborted_streaming_writer_removes_the_folders_it_created() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(FilesystemStore::new(dir.path()));
    let array = array(Arc::clone(&store), "a", true);
    let shard = array.shards().nth(1).unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    for chunk in writer.inner_chunks() {
        writer.write_chunk(&chunk, &chunk_data(&chunk)).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(dir.path().join("a/c/1").is_dir(), "streaming began");
    drop(writer);
    std::thread::sleep(std::time::Duration::from_millis(100));
    // Only what `create` wrote is left.
    let names: Vec<String> = std::fs::read_dir(dir.path().join("a"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["zarr.json".to_string()]);
}

#[test]
fn a_store_that_panics_on_an_encode_thread_is_an_error_not_a_crash_or_hang() {
    let raced = Arc::new(AnotherWriterOnce {
        inner: Arc::new(MemoryStore::new()),
        theirs: std::sync::Mutex::new(None),
        panic_on_append: true,
    });
    let store: Arc<dyn Store> = Arc::new(Raced(Arc::clone(&raced)));
    let array = array(store, "a", true);
    let shard = array.shards().next().unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    let outcome: Result<(), crate::Error> = writer
        .inner_chunks()
        .try_for_each(|chunk| writer.write_chunk(&chunk, &chunk_data(&chunk)));
    let err = outcome.expect_err("the writes fail once the store panicked");
    assert!(err.to_string().contains("a store that panics"), "{err}");
    let err = writer.commit().expect_err("the commit fails too");
    assert!(err.to_string().contains("panic"), "{err}");
    assert!(raced.inner.get("a/c/0/0").unwrap().is_none());
}
