//! Streaming shards to an object store: multipart parts while writing, nothing visible
//! before commit, abort on drop, merges and compaction from the local spool.

use std::sync::Arc;

use object_store::memory::InMemory;
use shardwright::layout::Compressor;
use shardwright::store::{InstrumentedStore, IoEvent, Store};
use shardwright::{Array, ArraySpec, Domain};

use super::{ObjectStoreBackend, PART_BYTES};

/// A uint8 array of one 256³ shard (16 MiB, stored uncompressed) in 64³ chunks
/// (256 KiB each): its chunks fill two and a bit parts.
fn big() -> (Arc<InstrumentedStore>, Array) {
    let store = Arc::new(InstrumentedStore::new(Arc::new(ObjectStoreBackend::new(
        Arc::new(InMemory::new()),
        "memory://test",
    ))));
    let spec = ArraySpec::new(vec![256, 256, 256], "uint8", vec![64, 64, 64])
        .shards(vec![256, 256, 256])
        .compressor(Compressor::None);
    let array = Array::create(store.clone(), "big.zarr", &spec).unwrap();
    (store, array)
}

/// Data that differs in every chunk and is never the fill value.
fn chunk_data(c: &Domain, salt: u8) -> Vec<u8> {
    let seed = c
        .origin()
        .iter()
        .fold(u64::from(salt) + 1, |a, &o| a * 31 + o);
    (0..c.size())
        .map(|i| ((seed + i * 7) % 251) as u8 + 1)
        .collect()
}

fn expected(array: &Array, salt: impl Fn(&Domain) -> u8) -> Vec<u8> {
    let mut out = vec![0u8; 256 * 256 * 256];
    for c in array.chunks_meeting(&array.bounds()) {
        let data = chunk_data(&c, salt(&c));
        let mut i = 0;
        for z in c.origin()[0]..c.stop()[0] {
            for y in c.origin()[1]..c.stop()[1] {
                let at = ((z * 256 + y) * 256 + c.origin()[2]) as usize;
                out[at..at + 64].copy_from_slice(&data[i..i + 64]);
                i += 64;
            }
        }
    }
    out
}

#[test]
fn a_big_shard_streams_in_parts_and_appears_only_at_commit() {
    let (store, array) = big();
    store.reset();
    let shard = array.shard(&[0, 0, 0]).unwrap();
    let key = array.shard_key(&[0, 0, 0]);
    let w = array.shard_writer(&shard).unwrap();
    for c in w.inner_chunks() {
        w.write_chunk(&c, &chunk_data(&c, 0)).unwrap();
    }
    // more than two parts were sent while writing; the key is still absent
    assert!(
        w.staged_memory() < 2 * PART_BYTES + (4 << 20),
        "{}",
        w.staged_memory()
    );
    assert_eq!(store.get(&key).unwrap(), None);
    store.reset();
    let stats = w.commit().unwrap();
    assert_eq!((stats.puts, stats.gets), (1, 0));
    assert_eq!(array.read(&shard).unwrap(), expected(&array, |_| 0));
}

#[test]
fn a_dropped_writer_leaves_nothing() {
    let (store, array) = big();
    let shard = array.shard(&[0, 0, 0]).unwrap();
    let w = array.shard_writer(&shard).unwrap();
    for c in w.inner_chunks().take(50) {
        w.write_chunk(&c, &chunk_data(&c, 0)).unwrap();
    }
    drop(w);
    assert_eq!(store.get(&array.shard_key(&[0, 0, 0])).unwrap(), None);
}

#[test]
fn a_merge_after_streaming_is_one_conditional_put_from_the_spool() {
    let (store, array) = big();
    let shard = array.shard(&[0, 0, 0]).unwrap();
    let w = array.shard_writer(&shard).unwrap();
    for c in w.inner_chunks() {
        w.write_chunk(&c, &chunk_data(&c, 0)).unwrap();
    }
    w.commit().unwrap();
    // rewrite every chunk but the first: it must be kept from the stored shard
    store.reset();
    let w = array.shard_writer(&shard).unwrap();
    for c in w.inner_chunks().skip(1) {
        w.write_chunk(&c, &chunk_data(&c, 9)).unwrap();
    }
    let stats = w.commit().unwrap();
    assert_eq!((stats.gets, stats.puts, stats.chunks_kept), (1, 1, 1));
    let events = store.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, IoEvent::PutIf(k, _) if *k == array.shard_key(&[0, 0, 0]))),
        "{events:?}"
    );
    let first = array.chunks_meeting(&shard).next().unwrap();
    let want = expected(&array, |c| if *c == first { 0 } else { 9 });
    assert_eq!(array.read(&shard).unwrap(), want);
}

#[test]
fn chunks_written_twice_after_streaming_are_compacted() {
    let (_store, array) = big();
    let shard = array.shard(&[0, 0, 0]).unwrap();
    let w = array.shard_writer(&shard).unwrap();
    let chunks: Vec<Domain> = w.inner_chunks().collect();
    for c in &chunks {
        w.write_chunk(c, &chunk_data(c, 0)).unwrap();
    }
    // the first chunks went out in the first part; write them again
    for c in &chunks[..3] {
        w.write_chunk(c, &chunk_data(c, 5)).unwrap();
    }
    let stats = w.commit().unwrap();
    assert_eq!((stats.puts, stats.gets), (1, 0));
    let rewritten = &chunks[..3];
    let want = expected(&array, |c| if rewritten.contains(c) { 5 } else { 0 });
    assert_eq!(array.read(&shard).unwrap(), want);
    let stored = array
        .store()
        .size(&array.shard_key(&[0, 0, 0]))
        .unwrap()
        .unwrap();
    assert!(stored < (16 << 20) + 8192, "compacted: {stored} bytes");
}

#[test]
fn a_small_shard_is_one_plain_put() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(ObjectStoreBackend::new(
        Arc::new(InMemory::new()),
        "memory://test",
    ))));
    let spec = ArraySpec::new(vec![64, 64], "uint16", vec![8, 8]).shards(vec![64, 64]);
    let array = Array::create(store.clone(), "s.zarr", &spec).unwrap();
    let shard = array.shard(&[0, 0]).unwrap();
    let w = array.shard_writer(&shard).unwrap();
    for c in w.inner_chunks() {
        w.write_chunk(&c, &[7u8; 128]).unwrap();
    }
    store.reset();
    w.commit().unwrap();
    assert_eq!(store.counts().puts, 1);
}

#[test]
fn an_upload_completes_once_and_refuses_use_after() {
    use shardwright::store::Store as _;
    let store = ObjectStoreBackend::new(Arc::new(InMemory::new()), "memory://test");
    for size in [100, PART_BYTES * 2 + 5] {
        let mut upload = store.begin_upload("k").unwrap().unwrap();
        upload.append(&[&vec![1u8; size]]).unwrap();
        assert_eq!(upload.read(3..8).unwrap(), vec![1u8; 5]);
        let last = size as u64;
        assert_eq!(upload.read(last - 2..last).unwrap(), vec![1u8; 2]);
        upload.complete(None).unwrap();
        assert_eq!(store.size("k").unwrap(), Some(size as u64));
        let again = upload.complete(None).unwrap_err().to_string();
        assert!(again.contains("has completed"), "{again}");
        assert!(upload.append(&[b"x"]).is_err());
        assert_eq!(store.size("k").unwrap(), Some(size as u64)); // still the first value
    }
}
