//! Region writes, byte-level merges, conflicts and corrupt shards, across layers.

use std::sync::Arc;

use shardwright::format::shard;
use shardwright::store::{InstrumentedStore, MemoryStore, Store, StoreError};
use shardwright::{Array, ArraySpec, Domain, Error, ErrorKind, FilesystemStore, WriterOptions};

/// A uint16 array 64×64 in shards of 32×32 and inner chunks of 8×8, filled with `f`.
fn filled(store: Arc<dyn Store>, f: impl Fn(u64, u64) -> u16) -> Array {
    let spec = ArraySpec::new(vec![64, 64], "uint16", vec![8, 8]).shards(vec![32, 32]);
    let array = Array::create(store, "a.zarr", &spec).unwrap();
    for s in array.shards() {
        let w = array.shard_writer(&s).unwrap();
        for c in w.inner_chunks() {
            w.write_chunk(&c, &block(&c, &f)).unwrap();
        }
        w.commit().unwrap();
    }
    array
}

fn block(d: &Domain, f: &impl Fn(u64, u64) -> u16) -> Vec<u8> {
    let mut out = Vec::new();
    for y in d.origin()[0]..d.stop()[0] {
        for x in d.origin()[1]..d.stop()[1] {
            out.extend_from_slice(&f(y, x).to_ne_bytes());
        }
    }
    out
}

fn values(bytes: &[u8]) -> Vec<u16> {
    bytes
        .chunks(2)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .collect()
}

#[test]
fn an_unaligned_region_merges_with_one_get_and_copies_untouched_chunks() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let array = filled(store.clone(), |y, x| (y * 64 + x) as u16);
    let key = array.shard_key(&[0, 0]);
    let before = store.get(&key).unwrap().unwrap();
    store.reset();

    let region = Domain::new(vec![3, 5], vec![10, 7]); // meets 2×2 chunks, none whole
    let w = array.shard_writer(&array.shard(&[0, 0]).unwrap()).unwrap();
    w.write_region(&region, &block(&region, &|_, _| 7)).unwrap();
    let stats = w.commit().unwrap();
    assert_eq!(
        (
            stats.gets,
            stats.puts,
            stats.chunks_partial,
            stats.chunks_decoded
        ),
        (1, 1, 4, 4)
    );
    assert_eq!(stats.chunks_kept, 16 - 4);
    let c = store.counts();
    assert_eq!((c.gets, c.puts, c.range_gets), (1, 1, 0));

    let after = store.get(&key).unwrap().unwrap();
    let (old, new) = (
        shard::split(array.layout(), &before).unwrap(),
        shard::split(array.layout(), &after).unwrap(),
    );
    let touched = [0usize, 1, 4, 5];
    for slot in 0..16 {
        if !touched.contains(&slot) {
            assert_eq!(
                &before[old[slot].clone().unwrap()],
                &after[new[slot].clone().unwrap()],
                "slot {slot}"
            );
        }
    }
    let got = values(&array.read(&array.bounds()).unwrap());
    for y in 0..64u64 {
        for x in 0..64u64 {
            let inside = (3..13).contains(&y) && (5..12).contains(&x);
            let want = if inside { 7 } else { (y * 64 + x) as u16 };
            assert_eq!(got[(y * 64 + x) as usize], want, "({y}, {x})");
        }
    }
}

#[test]
fn a_region_covering_chunks_whole_needs_no_read() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let array = Array::create(
        store.clone(),
        "",
        &ArraySpec::new(vec![16, 16], "uint8", vec![4, 4]).shards(vec![16, 16]),
    )
    .unwrap();
    store.reset();
    let w = array.shard_writer(&array.shard(&[0, 0]).unwrap()).unwrap();
    // Two regions that together cover every chunk, each covering chunks in part.
    w.write_region(&Domain::new(vec![0, 0], vec![16, 6]), &[1; 96])
        .unwrap();
    w.write_region(&Domain::new(vec![0, 6], vec![16, 10]), &[2; 160])
        .unwrap();
    assert!(w.is_complete());
    let stats = w.commit().unwrap();
    assert_eq!((stats.gets, stats.puts, stats.chunks_partial), (0, 1, 0));
    let row = array.read(&Domain::new(vec![5, 0], vec![1, 16])).unwrap();
    assert_eq!(row, [vec![1u8; 6], vec![2u8; 10]].concat());
}

#[test]
fn partial_writes_on_top_of_whole_chunks_and_whole_on_top_of_partial() {
    let array = Array::create(
        Arc::new(MemoryStore::new()),
        "",
        &ArraySpec::new(vec![8], "uint8", vec![4]).shards(vec![8]),
    )
    .unwrap();
    let w = array.shard_writer(&array.shard(&[0]).unwrap()).unwrap();
    let c0 = array.chunk_grid().cell(&[0]).unwrap();
    w.write_chunk(&c0, &[1, 1, 1, 1]).unwrap();
    w.write_region(&Domain::new(vec![1], vec![2]), &[5, 6])
        .unwrap(); // over a whole chunk
    w.write_region(&Domain::new(vec![5], vec![1]), &[9])
        .unwrap(); // partial, new chunk
    let c1 = array.chunk_grid().cell(&[1]).unwrap();
    let mut staged = vec![0u8; 8];
    w.overlay_staged(&array.bounds(), &mut staged).unwrap();
    assert_eq!(staged, vec![1, 5, 6, 1, 0, 9, 0, 0]);
    w.write_chunk(&c1, &[3, 3, 3, 3]).unwrap(); // whole replaces partial
    w.commit().unwrap();
    assert_eq!(
        array.read(&array.bounds()).unwrap(),
        vec![1, 5, 6, 1, 3, 3, 3, 3]
    );
}

#[test]
fn concurrent_partial_writers_of_one_shard_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(FilesystemStore::new(dir.path()));
    let array = filled(Arc::clone(&store), |_, _| 0);
    let shard = array.shard(&[0, 0]).unwrap();
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let (array, shard) = (array.clone(), shard.clone());
            scope.spawn(move || {
                for round in 1..=20u16 {
                    let region = Domain::new(vec![t * 8 + 1, 3], vec![5, 20]);
                    let w = array.shard_writer(&shard).unwrap();
                    w.write_region(&region, &block(&region, &|_, _| round + 100 * t as u16))
                        .unwrap();
                    w.commit().unwrap();
                }
            });
        }
    });
    let got = values(&array.read(&shard).unwrap());
    for t in 0..4u64 {
        for y in t * 8 + 1..t * 8 + 6 {
            for x in 3..23 {
                assert_eq!(got[(y * 32 + x) as usize], 20 + 100 * t as u16);
            }
        }
    }
}

#[test]
fn a_merge_that_keeps_conflicting_fails_with_the_key_after_its_retries() {
    #[derive(Debug)]
    struct AlwaysConflicts(MemoryStore);
    impl Store for AlwaysConflicts {
        fn get(&self, k: &str) -> Result<Option<Vec<u8>>, StoreError> {
            self.0.get(k)
        }
        fn get_range(
            &self,
            k: &str,
            r: std::ops::Range<u64>,
        ) -> Result<Option<Vec<u8>>, StoreError> {
            self.0.get_range(k, r)
        }
        fn size(&self, k: &str) -> Result<Option<u64>, StoreError> {
            self.0.size(k)
        }
        fn put(&self, k: &str, p: &[&[u8]]) -> Result<(), StoreError> {
            self.0.put(k, p)
        }
        fn get_versioned(
            &self,
            k: &str,
        ) -> Result<Option<(Vec<u8>, shardwright::store::Version)>, StoreError> {
            self.0.get_versioned(k)
        }
        fn put_if(
            &self,
            k: &str,
            p: &[&[u8]],
            v: Option<&shardwright::store::Version>,
        ) -> Result<(), StoreError> {
            if k.ends_with("zarr.json") {
                return self.0.put_if(k, p, v); // creating the array works
            }
            Err(StoreError::Conflict { key: k.into() })
        }
        fn delete_if(
            &self,
            k: &str,
            _: Option<&shardwright::store::Version>,
        ) -> Result<(), StoreError> {
            Err(StoreError::Conflict { key: k.into() })
        }
        fn delete(&self, k: &str) -> Result<(), StoreError> {
            self.0.delete(k)
        }
    }
    let store = Arc::new(AlwaysConflicts(MemoryStore::new()));
    let array = Array::create(
        store,
        "x.zarr",
        &ArraySpec::new(vec![8], "uint8", vec![4]).shards(vec![8]),
    )
    .unwrap()
    .with_options(WriterOptions::default().retries(3));
    let w = array.shard_writer(&array.shard(&[0]).unwrap()).unwrap();
    w.write_region(&Domain::new(vec![0], vec![2]), &[1, 2])
        .unwrap();
    let err = w.commit().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(
        matches!(&err, Error::Conflict { key, attempts: 4 } if key == "x.zarr/c/0"),
        "{err}"
    );
}

#[test]
fn a_corrupt_shard_fails_a_merge_unless_overwrite_corrupt() {
    let store = Arc::new(MemoryStore::new());
    let array = filled(store.clone(), |y, x| (y + x) as u16);
    let key = array.shard_key(&[0, 0]);
    let mut bytes = store.get(&key).unwrap().unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 0x5A;
    store.put(&key, &[&bytes]).unwrap();
    let region = Domain::new(vec![0, 0], vec![2, 2]);
    let w = array.shard_writer(&array.shard(&[0, 0]).unwrap()).unwrap();
    w.write_region(&region, &block(&region, &|_, _| 9)).unwrap();
    assert_eq!(w.commit().unwrap_err().kind(), ErrorKind::CorruptShard);
    assert_eq!(store.get(&key).unwrap().unwrap(), bytes, "nothing stored");

    let fixing = array
        .clone()
        .with_options(WriterOptions::default().overwrite_corrupt(true));
    let w = fixing.shard_writer(&array.shard(&[0, 0]).unwrap()).unwrap();
    w.write_region(&region, &block(&region, &|_, _| 9)).unwrap();
    w.commit().unwrap();
    let got = values(&array.read(&array.shard(&[0, 0]).unwrap()).unwrap());
    assert_eq!(&got[..2], &[9, 9]);
    assert_eq!(got[2], 0, "the rest is the fill value");
}

#[test]
fn an_undecodable_chunk_fails_a_partial_rewrite_unless_overwrite_corrupt() {
    let store = Arc::new(MemoryStore::new());
    let array = filled(store.clone(), |y, x| (y + x) as u16);
    let key = array.shard_key(&[0, 0]);
    let mut bytes = store.get(&key).unwrap().unwrap();
    let first = shard::split(array.layout(), &bytes).unwrap()[0]
        .clone()
        .unwrap();
    bytes[first.start..first.start + 4].fill(0); // no longer a zstd frame
    store.put(&key, &[&bytes]).unwrap();
    let region = Domain::new(vec![0, 0], vec![2, 2]);
    let w = array.shard_writer(&array.shard(&[0, 0]).unwrap()).unwrap();
    w.write_region(&region, &block(&region, &|_, _| 9)).unwrap();
    let err = w.commit().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CorruptShard);
    assert!(err.to_string().contains("a.zarr/c/0/0"), "{err}");

    let fixing = array
        .clone()
        .with_options(WriterOptions::default().overwrite_corrupt(true));
    let w = fixing.shard_writer(&array.shard(&[0, 0]).unwrap()).unwrap();
    w.write_region(&region, &block(&region, &|_, _| 9)).unwrap();
    w.commit().unwrap();
    let got = values(&array.read(&Domain::new(vec![0, 0], vec![1, 9])).unwrap());
    assert_eq!(
        got,
        vec![9, 9, 0, 0, 0, 0, 0, 0, 8],
        "rest of chunk 0: fill; chunk 1 kept"
    );
}
