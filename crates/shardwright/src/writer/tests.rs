//! Writer tests: round trips over data types × codecs × index locations (checked against
//! zarrs as an independent reader), I/O counts, merges, aborts and bad input.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::domain::Domain;
use crate::error::Error;
use crate::format::FormatError;
use crate::store::{FilesystemStore, InstrumentedStore, MemoryStore, Store};
use crate::Array;

const DATA_TYPES: &[(&str, usize)] = &[
    ("bool", 1),
    ("int8", 1),
    ("int16", 2),
    ("int32", 4),
    ("int64", 8),
    ("uint8", 1),
    ("uint16", 2),
    ("uint32", 4),
    ("uint64", 8),
    ("float16", 2),
    ("float32", 4),
    ("float64", 8),
    ("complex64", 8),
    ("complex128", 16),
];

fn bytes_codec(elem: usize, endian: &str) -> Value {
    if elem == 1 {
        json!({"name": "bytes"})
    } else {
        json!({"name": "bytes", "configuration": {"endian": endian}})
    }
}

/// Inner codec chains to test, by name.
fn codec_chains(elem: usize, rank: usize) -> Vec<(&'static str, Vec<Value>)> {
    let order: Vec<usize> = (0..rank).rev().collect();
    vec![
        ("raw", vec![bytes_codec(elem, "little")]),
        ("big-endian", vec![bytes_codec(elem, "big")]),
        (
            "zstd",
            vec![
                bytes_codec(elem, "little"),
                json!({"name": "zstd", "configuration": {"level": 3, "checksum": true}}),
            ],
        ),
        (
            "blosc",
            vec![
                bytes_codec(elem, "little"),
                json!({"name": "blosc", "configuration": {"typesize": elem, "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "blocksize": 0}}),
            ],
        ),
        (
            "gzip",
            vec![
                bytes_codec(elem, "little"),
                json!({"name": "gzip", "configuration": {"level": 5}}),
            ],
        ),
        (
            "transpose+crc32c",
            vec![
                json!({"name": "transpose", "configuration": {"order": order}}),
                bytes_codec(elem, "big"),
                json!({"name": "crc32c"}),
            ],
        ),
    ]
}

fn metadata(
    shape: &[u64],
    dtype: &str,
    shard: &[u64],
    inner: &[u64],
    codecs: Vec<Value>,
    location: &str,
) -> String {
    let fill = match dtype {
        "bool" => json!(false),
        "complex64" | "complex128" => json!([0.0, 0.0]),
        _ => json!(0),
    };
    json!({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shard}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner, "codecs": codecs,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": location}}],
    })
    .to_string()
}

/// Deterministic data for a chunk: element bytes from a hash of the position, with
/// every third chunk all zeros (the fill value) to exercise empty slots.
fn chunk_data(chunk: &Domain, elem: usize, dtype: &str) -> Vec<u8> {
    let n = chunk.size() as usize * elem;
    let seed = chunk
        .origin()
        .iter()
        .fold(17u64, |a, o| a.wrapping_mul(31).wrapping_add(*o));
    if seed % 3 == 0 {
        return vec![0; n];
    }
    (0..n)
        .map(|i| {
            let h = (seed ^ (i as u64)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56;
            if dtype == "bool" {
                (h & 1) as u8
            } else {
                h as u8
            }
        })
        .collect()
}

fn write_everything(array: &Array, dtype: &str) -> Vec<u8> {
    let elem = array.layout().element_size();
    let bounds = array.bounds();
    let mut expected = vec![0u8; bounds.size() as usize * elem];
    for shard in array.shards() {
        let writer = array.shard_writer(&shard).unwrap();
        for chunk in writer.inner_chunks() {
            let data = chunk_data(&chunk, elem, dtype);
            let zero = vec![0; chunk.ndim()];
            crate::domain::copy::copy_block(
                &data,
                chunk.shape(),
                &zero,
                &mut expected,
                bounds.shape(),
                chunk.origin(),
                chunk.shape(),
                elem,
            );
            writer.write_chunk(&chunk, &data).unwrap();
        }
        writer.commit().unwrap();
    }
    expected
}

fn zarrs_read(root: &std::path::Path, path: &str, shape: &[u64]) -> Vec<u8> {
    let store = Arc::new(zarrs::filesystem::FilesystemStore::new(root).unwrap());
    let array = zarrs::array::Array::open(store, &format!("/{path}")).unwrap();
    let subset = zarrs::array::ArraySubset::new_with_shape(shape.to_vec());
    let bytes: zarrs::array::ArrayBytes = array.retrieve_array_subset(&subset).unwrap();
    bytes.into_fixed().unwrap().into_owned()
}

#[test]
fn every_data_type_codec_and_index_location_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(FilesystemStore::new(dir.path()));
    let shape = [13u64, 7];
    let (shard, inner) = ([8u64, 4], [4u64, 2]);
    let mut n = 0;
    for (dtype, elem) in DATA_TYPES {
        for (codec_name, codecs) in codec_chains(*elem, 2) {
            for location in ["start", "end"] {
                let path = format!("{dtype}-{codec_name}-{location}.zarr");
                let json = metadata(&shape, dtype, &shard, &inner, codecs.clone(), location);
                store
                    .put(&format!("{path}/zarr.json"), &[json.as_bytes()])
                    .unwrap();
                let array = Array::open(Arc::clone(&store), &path).unwrap();
                let expected = write_everything(&array, dtype);
                let ours = array.read(&array.bounds()).unwrap();
                assert!(ours == expected, "shardwright read differs: {path}");
                let theirs = zarrs_read(dir.path(), &path, &shape);
                assert!(theirs == expected, "zarrs read differs: {path}");
                n += 1;
            }
        }
    }
    assert_eq!(n, DATA_TYPES.len() * 6 * 2);
}

#[test]
fn ranks_one_to_eight_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(FilesystemStore::new(dir.path()));
    for rank in 1..=8usize {
        let shape: Vec<u64> = (0..rank).map(|d| if d % 2 == 0 { 5 } else { 3 }).collect();
        let shard = vec![4u64; rank];
        let inner = vec![2u64; rank];
        let codecs = vec![
            bytes_codec(2, "little"),
            json!({"name": "zstd", "configuration": {"level": 1, "checksum": false}}),
        ];
        let path = format!("rank{rank}.zarr");
        let json = metadata(&shape, "uint16", &shard, &inner, codecs, "end");
        store
            .put(&format!("{path}/zarr.json"), &[json.as_bytes()])
            .unwrap();
        let array = Array::open(Arc::clone(&store), &path).unwrap();
        let expected = write_everything(&array, "uint16");
        assert_eq!(
            zarrs_read(dir.path(), &path, &shape),
            expected,
            "rank {rank}"
        );
    }
}

fn instrumented_array(shape: Vec<u64>) -> (Arc<InstrumentedStore>, Array) {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let spec = crate::ArraySpec::new(shape, "uint16", vec![4, 4]).shards(vec![8, 8]);
    let array = Array::create(store.clone(), "a.zarr", &spec).unwrap();
    store.reset();
    (store, array)
}

#[test]
fn a_fully_written_shard_costs_one_put_and_no_get() {
    let (store, array) = instrumented_array(vec![16, 12]);
    for shard in array.shards() {
        let before = store.counts();
        let writer = array.shard_writer(&shard).unwrap();
        for chunk in writer.inner_chunks() {
            writer
                .write_chunk(&chunk, &vec![1u8; chunk.size() as usize * 2])
                .unwrap();
        }
        assert_eq!(store.counts(), before, "no I/O before commit");
        let stats = writer.commit().unwrap();
        let after = store.counts();
        assert_eq!(
            (
                after.puts - before.puts,
                after.gets - before.gets,
                after.calls() - before.calls()
            ),
            (1, 0, 1)
        );
        assert_eq!((stats.puts, stats.gets), (1, 0));
    }
    assert_eq!(store.counts().puts, 4);
}

#[test]
fn an_aborted_writer_costs_no_call() {
    let (store, array) = instrumented_array(vec![16, 16]);
    let shard = array.shard(&[0, 0]).unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    for chunk in writer.inner_chunks() {
        writer
            .write_chunk(&chunk, &vec![3u8; chunk.size() as usize * 2])
            .unwrap();
    }
    writer.abort();
    let writer = array.shard_writer(&shard).unwrap();
    writer
        .write_chunk(&array.chunk_grid().cell(&[0, 0]).unwrap(), &[5u8; 32])
        .unwrap();
    drop(writer);
    assert_eq!(store.counts().calls(), 0);
}

#[test]
fn a_partial_shard_over_stored_data_keeps_untouched_chunks_as_bytes() {
    let (store, array) = instrumented_array(vec![8, 8]);
    let shard = array.shard(&[0, 0]).unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    for (i, chunk) in writer.inner_chunks().enumerate() {
        writer.write_chunk(&chunk, &[i as u8 + 1; 32]).unwrap();
    }
    writer.commit().unwrap();
    let key = array.shard_key(&[0, 0]);
    let before = store.get(&key).unwrap().unwrap();
    store.reset();

    let writer = array.shard_writer(&shard).unwrap();
    writer
        .write_chunk(&array.chunk_grid().cell(&[1, 1]).unwrap(), &[9u8; 32])
        .unwrap();
    let stats = writer.commit().unwrap();
    assert_eq!(
        (
            stats.gets,
            stats.puts,
            stats.chunks_kept,
            stats.chunks_written
        ),
        (1, 1, 3, 1)
    );
    let c = store.counts();
    assert_eq!((c.gets, c.puts), (1, 1));
    let after = store.get(&key).unwrap().unwrap();
    let old = crate::format::shard::split(array.layout(), &before).unwrap();
    let new = crate::format::shard::split(array.layout(), &after).unwrap();
    for slot in 0..3 {
        assert_eq!(
            &before[old[slot].clone().unwrap()],
            &after[new[slot].clone().unwrap()]
        );
    }
    let mut expected = Vec::new();
    for row in 0..8 {
        for col in 0..8 {
            let v: u8 = match (row / 4, col / 4) {
                (0, 0) => 1,
                (0, 1) => 2,
                (1, 0) => 3,
                _ => 9,
            };
            expected.extend_from_slice(&[v, v]);
        }
    }
    assert_eq!(array.read(&array.bounds()).unwrap(), expected);
}

#[test]
fn a_new_partial_shard_is_filled_with_the_fill_value() {
    let (store, array) = instrumented_array(vec![8, 8]);
    let writer = array.shard_writer(&array.shard(&[0, 0]).unwrap()).unwrap();
    writer
        .write_chunk(&array.chunk_grid().cell(&[0, 1]).unwrap(), &[1u8; 32])
        .unwrap();
    let stats = writer.commit().unwrap();
    assert_eq!((stats.gets, stats.puts, stats.chunks_kept), (1, 1, 0));
    let data = array.read(&array.bounds()).unwrap();
    assert_eq!(data.iter().filter(|b| **b == 1).count(), 32);
    assert_eq!(store.counts().puts, 1);
}

#[test]
fn fill_value_chunks_are_not_stored_and_an_empty_shard_is_deleted() {
    let (store, array) = instrumented_array(vec![8, 8]);
    let shard = array.shard(&[0, 0]).unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    for chunk in writer.inner_chunks() {
        writer.write_chunk(&chunk, &[1u8; 32]).unwrap();
    }
    writer.commit().unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    for chunk in writer.inner_chunks() {
        writer.write_chunk_value(&chunk, &[0, 0]).unwrap();
    }
    let stats = writer.commit().unwrap();
    assert_eq!(
        (stats.deletes, stats.puts, stats.gets, stats.chunks_empty),
        (1, 0, 0, 4)
    );
    assert!(store.get(&array.shard_key(&[0, 0])).unwrap().is_none());
    // A writer that wrote nothing does no I/O.
    store.reset();
    array.shard_writer(&shard).unwrap().commit().unwrap();
    assert_eq!(store.counts().calls(), 0);
}

#[test]
fn bad_input_gets_typed_errors() {
    let (_store, array) = instrumented_array(vec![10, 10]);
    let shard = array.shard(&[0, 0]).unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    let chunk = array.chunk_grid().cell(&[0, 0]).unwrap();
    assert!(matches!(
        writer.write_chunk(&chunk, &[0u8; 31]),
        Err(Error::DataLength {
            expected: 32,
            got: 31,
            ..
        })
    ));
    let outside = array.chunk_grid().cell(&[2, 0]).unwrap();
    assert!(matches!(
        writer.write_chunk(&outside, &[0u8; 32]),
        Err(Error::Domain(_))
    ));
    let unaligned = Domain::new(vec![1, 0], vec![4, 4]);
    assert!(matches!(
        writer.write_chunk(&unaligned, &[0u8; 32]),
        Err(Error::NotAnInnerChunk { .. })
    ));
    assert!(matches!(
        writer.write_chunk_value(&chunk, &[0u8; 3]),
        Err(Error::DataLength { .. })
    ));
    assert!(matches!(
        array.shard_writer(&Domain::new(vec![0, 0], vec![4, 4])),
        Err(Error::NotAnInnerChunk { .. })
    ));
    assert!(matches!(array.shard(&[5, 0]), Err(Error::Domain(_))));
    assert!(matches!(
        array.read(&Domain::new(vec![0, 0], vec![11, 1])),
        Err(Error::Domain(_))
    ));
    let missing = Array::open(Arc::new(MemoryStore::new()), "nope.zarr");
    assert!(matches!(missing, Err(Error::NotFound(_))));
}

#[test]
fn a_corrupt_stored_index_is_reported_and_nothing_is_stored() {
    let (store, array) = instrumented_array(vec![8, 8]);
    let shard = array.shard(&[0, 0]).unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    for chunk in writer.inner_chunks() {
        writer.write_chunk(&chunk, &[1u8; 32]).unwrap();
    }
    writer.commit().unwrap();
    let key = array.shard_key(&[0, 0]);
    let mut bytes = store.get(&key).unwrap().unwrap();
    let n = bytes.len();
    bytes[n - 10] ^= 0xFF; // inside the index: the checksum fails
    store.put(&key, &[&bytes]).unwrap();
    store.reset();
    let writer = array.shard_writer(&shard).unwrap();
    writer
        .write_chunk(&array.chunk_grid().cell(&[0, 0]).unwrap(), &[2u8; 32])
        .unwrap();
    let err = writer.commit().unwrap_err();
    assert!(
        matches!(err, Error::Format(FormatError::Corrupt(_))),
        "{err}"
    );
    assert_eq!(err.kind(), crate::ErrorKind::CorruptShard);
    assert_eq!(store.counts().puts, 0);
    assert!(matches!(
        array.read(&array.bounds()),
        Err(Error::Format(FormatError::Corrupt(_)))
    ));
    // An index pointing past the end of the shard.
    let mut entries = vec![(0u64, 10u64); 4];
    entries[2] = (1000, 10);
    let index = crate::format::index::encode(array.layout(), &entries).unwrap();
    store.put(&key, &[&[0u8; 40], &index]).unwrap();
    assert!(matches!(
        array.read(&array.bounds()),
        Err(Error::Format(FormatError::Corrupt(_)))
    ));
}

#[test]
fn last_write_of_a_chunk_wins() {
    let (_store, array) = instrumented_array(vec![8, 8]);
    let writer = array.shard_writer(&array.shard(&[0, 0]).unwrap()).unwrap();
    let chunk = array.chunk_grid().cell(&[0, 0]).unwrap();
    for v in 1..=50u8 {
        writer.write_chunk(&chunk, &[v; 32]).unwrap();
    }
    writer.commit().unwrap();
    let data = array.read(&chunk).unwrap();
    assert_eq!(data, vec![50u8; 32]);
}

#[test]
fn unsharded_arrays_store_one_chunk_per_shard() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let spec = crate::ArraySpec::new(vec![5, 5], "int32", vec![2, 2]);
    let array = Array::create(store.clone(), "u.zarr", &spec).unwrap();
    assert!(!array.layout().is_sharded());
    store.reset();
    for shard in array.shards() {
        let writer = array.shard_writer(&shard).unwrap();
        let chunks: Vec<Domain> = writer.inner_chunks().collect();
        assert_eq!(chunks, vec![shard.clone()]);
        writer
            .write_chunk(&shard, &vec![4u8; shard.size() as usize * 4])
            .unwrap();
        writer.commit().unwrap();
    }
    assert_eq!((store.counts().puts, store.counts().gets), (9, 0));
    assert_eq!(array.read(&array.bounds()).unwrap(), vec![4u8; 100]);
}

/// Regression: a failed encode left its slot pending, so reading the slot back (for a
/// partial write or read-your-writes) waited forever.
#[test]
fn a_failed_encode_is_an_error_not_a_hang() {
    let (_store, array) = instrumented_array(vec![8, 8]);
    let writer = array.shard_writer(&array.shard(&[0, 0]).unwrap()).unwrap();
    // A raw buffer of the wrong length makes the encode fail.
    writer
        .slots
        .submit(0, vec![0u8; 3], writer.layout(), None, None)
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let partial = writer.write_region(&Domain::new(vec![0, 0], vec![1, 1]), &[1, 0]);
        tx.send(partial.is_err()).unwrap();
    });
    let failed = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("no hang");
    assert!(failed);
}

/// Regression: an empty region on the array's far edge panicked and left the writer
/// waiting forever at commit.
#[test]
fn empty_regions_are_no_ops() {
    let (store, array) = instrumented_array(vec![8, 6]);
    let shard = array.shard(&[0, 0]).unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    writer
        .write_region(&Domain::new(vec![8, 4], vec![0, 2]), &[])
        .unwrap();
    writer
        .write_region_value(&Domain::new(vec![4, 6], vec![2, 0]), &[1, 0])
        .unwrap();
    writer
        .write_owned(&Domain::new(vec![0, 0], vec![0, 4]), vec![])
        .unwrap();
    assert!(writer
        .write_chunk_value(&Domain::new(vec![0, 0], vec![0, 4]), &[0, 0])
        .is_err());
    assert_eq!(writer.chunks_written(), 0);
    let stats = writer.commit().unwrap();
    assert_eq!((stats.puts, stats.gets, stats.deletes), (0, 0, 0));
    assert_eq!(store.counts().calls(), 0);
}
