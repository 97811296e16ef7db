use super::*;
use serde_json::json;

fn zarr_python_default() -> serde_json::Value {
    json!({
        "shape": [100, 50], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [20, 20]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [10, 10],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                       {"name": "zstd", "configuration": {"level": 0, "checksum": false}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end"}}],
        "attributes": {}, "zarr_format": 3, "node_type": "array", "storage_transformers": []
    })
}

fn read(value: &serde_json::Value) -> Result<Layout, LayoutError> {
    Layout::from_json(value.to_string().as_bytes())
}

#[test]
fn reads_what_zarr_python_writes() {
    let layout = read(&zarr_python_default()).unwrap();
    assert_eq!(layout.shape(), &[100, 50]);
    assert_eq!(layout.shard_shape(), &[20, 20]);
    assert_eq!(layout.chunk_shape(), &[10, 10]);
    assert_eq!(layout.chunks_per_shard(), &[2, 2]);
    assert_eq!(layout.element_size(), 2);
    assert_eq!(layout.index().unwrap().encoded_size(), 4 * 16 + 4);
    assert_eq!(layout.index().unwrap().location(), IndexLocation::End);
    assert_eq!(layout.shard_grid().grid_shape(), &[5, 3]);
    assert_eq!(layout.shard_key(&[4, 2]), "c/4/2");
}

#[test]
fn v2_key_encoding_and_index_at_start() {
    let mut v = zarr_python_default();
    v["chunk_key_encoding"] = json!({"name": "v2", "configuration": {"separator": "."}});
    v["codecs"][0]["configuration"]["index_location"] = json!("start");
    let layout = read(&v).unwrap();
    assert_eq!(layout.shard_key(&[1, 2]), "1.2");
    assert_eq!(layout.index().unwrap().location(), IndexLocation::Start);
}

#[test]
fn unsupported_things_are_named() {
    let cases = [
        (
            "/codecs/0/configuration/codecs/1/name",
            json!("lz4hc"),
            "lz4hc",
        ),
        ("/data_type", json!("string"), "string"),
        ("/chunk_grid/name", json!("rectangular"), "rectangular"),
        (
            "/codecs/0/configuration/index_codecs/1/name",
            json!("zstd"),
            "zstd",
        ),
    ];
    for (pointer, value, name) in cases {
        let mut v = zarr_python_default();
        *v.pointer_mut(pointer).unwrap() = value;
        match read(&v) {
            Err(LayoutError::Unsupported(msg)) => assert!(msg.contains(name), "{msg}"),
            other => panic!("{pointer}: expected Unsupported, got {other:?}"),
        }
    }
    let mut v = zarr_python_default();
    v["shape"] = json!(vec![2; 9]);
    assert!(matches!(read(&v), Err(LayoutError::Unsupported(m)) if m.contains("rank 9")));
    let mut v = zarr_python_default();
    v["zarr_format"] = json!(2);
    assert!(matches!(read(&v), Err(LayoutError::Unsupported(_))));
}

#[test]
fn invalid_metadata_is_reported() {
    assert!(matches!(
        Layout::from_json(b"{not json"),
        Err(LayoutError::Invalid(_))
    ));
    let mut v = zarr_python_default();
    v["codecs"][0]["configuration"]["chunk_shape"] = json!([7, 10]);
    assert!(matches!(read(&v), Err(LayoutError::Shape(m)) if m.contains("divide")));
    let mut v = zarr_python_default();
    v["fill_value"] = json!("banana");
    assert!(matches!(read(&v), Err(LayoutError::Invalid(_))));
    let mut v = zarr_python_default();
    v["node_type"] = json!("group");
    assert!(matches!(read(&v), Err(LayoutError::Invalid(_))));
}

#[test]
fn unsharded_arrays_are_shards_of_one_chunk() {
    let mut v = zarr_python_default();
    v["codecs"] = json!([{"name": "bytes", "configuration": {"endian": "little"}}]);
    let layout = read(&v).unwrap();
    assert!(!layout.is_sharded());
    assert_eq!(layout.chunk_shape(), layout.shard_shape());
    assert_eq!(layout.slots_per_shard(), 1);
}

#[test]
fn array_spec_writes_what_zarr_python_writes() {
    let json = ArraySpec::new(vec![100, 50], "uint16", vec![10, 10])
        .shards(vec![20, 20])
        .to_json()
        .unwrap();
    let ours: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(ours, zarr_python_default());
    let bad = ArraySpec::new(vec![10], "uint16", vec![3])
        .shards(vec![4])
        .to_json();
    assert!(matches!(bad, Err(LayoutError::Shape(_))));
    assert!(ArraySpec::new(vec![10], "bool", vec![5])
        .fill_value(json!(2))
        .to_json()
        .is_err());
}

#[test]
fn shards_and_chunks_too_large_to_hold_are_unsupported() {
    // Regression: 2^40 inner chunks per shard aborted the process allocating the slots.
    let mut v = zarr_python_default();
    v["shape"] = json!([1u64 << 40, 1u64 << 20]);
    v["chunk_grid"]["configuration"]["chunk_shape"] = json!([1u64 << 20, 1u64 << 20]);
    v["codecs"][0]["configuration"]["chunk_shape"] = json!([1, 1]);
    assert!(
        matches!(read(&v), Err(LayoutError::Unsupported(m)) if m.contains("inner chunks per shard"))
    );
    v["codecs"][0]["configuration"]["chunk_shape"] = json!([1u64 << 20, 1u64 << 20]);
    assert!(matches!(read(&v), Err(LayoutError::Unsupported(m)) if m.contains("bytes raw")));
    // Regression: element counts past 2^64 wrapped, and the array had no shards.
    v["shape"] = json!([1u64 << 40, 1u64 << 40]);
    assert!(matches!(read(&v), Err(LayoutError::Unsupported(m)) if m.contains("2^64")));
}

#[test]
fn blosc_chunks_larger_than_blosc_takes_are_unsupported() {
    // Regression: such chunks failed only at commit, after all the work.
    let mut v = zarr_python_default();
    v["data_type"] = json!("uint8");
    v["shape"] = json!([1u64 << 16, 1u64 << 16]);
    v["chunk_grid"]["configuration"]["chunk_shape"] = json!([1u64 << 16, 1u64 << 16]);
    v["codecs"][0]["configuration"]["chunk_shape"] = json!([1u64 << 16, 1u64 << 16]);
    v["codecs"][0]["configuration"]["codecs"] = json!([{"name": "bytes"}, {"name": "blosc",
        "configuration": {"typesize": 1, "cname": "lz4", "clevel": 5, "shuffle": "bitshuffle", "blocksize": 0}}]);
    assert!(matches!(read(&v), Err(LayoutError::Unsupported(m)) if m.contains("blosc")));
}

fn rectilinear(chunk_shapes: serde_json::Value) -> serde_json::Value {
    let mut v = zarr_python_default();
    v["shape"] = json!([50, 30]);
    v["chunk_grid"] = json!({"name": "rectilinear",
        "configuration": {"kind": "inline", "chunk_shapes": chunk_shapes}});
    v
}

#[test]
fn rectilinear_shards_each_have_their_own_layout() {
    // dimension 0: 20, 10, 10, 20 (run-length encoded in the middle); dimension 1: 20 each
    let layout = Arc::new(read(&rectilinear(json!([[20, [10, 2], 20], 20]))).unwrap());
    assert!(!layout.has_regular_shards());
    assert_eq!(layout.shard_grid().grid_shape(), &[4, 2]);
    assert_eq!(layout.chunk_grid().grid_shape(), &[5, 3]);
    assert_eq!(
        layout.shard_grid().cell_sizes(),
        vec![vec![20, 10, 10, 10], vec![20, 10]]
    );
    let second = layout.for_shard(&[1, 1]).unwrap();
    assert_eq!(second.shard_shape(), &[10, 20]);
    assert_eq!(second.chunks_per_shard(), &[1, 2]);
    assert_eq!(second.slots_per_shard(), 2);
    assert_eq!(second.index().unwrap().encoded_size(), 2 * 16 + 4);
    assert_eq!(second.shard_first_chunk(&[1, 1]), vec![2, 2]);
    // chunk (2, 3) is the second slot of shard (1, 1)
    assert_eq!(second.slot_in_shard(&[2, 3]), 1);
    // the last shard is listed 20 long and clipped to 10 by the array
    let last = layout.for_shard(&[3, 0]).unwrap();
    assert_eq!(last.shard_shape(), &[20, 20]);
    assert_eq!(last.slots_per_shard(), 4);
    assert_eq!(last.shard_first_chunk(&[3, 0]), vec![4, 0]);
    assert!(layout.for_shard(&[4, 0]).is_err());
}

#[test]
fn unsharded_rectilinear_chunks_have_their_own_shape() {
    let mut v = rectilinear(json!([[20, 30], [10, 20]]));
    v["codecs"] = json!([{"name": "bytes", "configuration": {"endian": "little"}}]);
    let layout = Arc::new(read(&v).unwrap());
    assert!(!layout.is_sharded());
    assert_eq!(
        layout.chunk_grid().cell_sizes(),
        vec![vec![20, 30], vec![10, 20]]
    );
    let chunk = layout.for_shard(&[1, 1]).unwrap();
    assert_eq!(chunk.chunk_shape(), &[30, 20]);
    assert_eq!(chunk.raw_chunk_bytes(), 30 * 20 * 2);
    assert_eq!(chunk.slot_in_shard(&[1, 1]), 0);
}

#[test]
fn rectilinear_grids_that_do_not_fit_are_refused() {
    // an extent that is not whole inner chunks (10)
    let err = read(&rectilinear(json!([[25, 25], 20]))).unwrap_err();
    assert!(
        matches!(&err, LayoutError::Shape(m) if m.contains("not a multiple of 10")),
        "{err}"
    );
    // extents short of the array
    let err = read(&rectilinear(json!([[20, 20], 20]))).unwrap_err();
    assert!(
        matches!(&err, LayoutError::Shape(m) if m.contains("short of")),
        "{err}"
    );
    // an RLE count far past the array is not expanded (it would take terabytes)
    let layout = read(&rectilinear(json!([[[10, 1_000_000_000_000_u64]], 20]))).unwrap();
    assert_eq!(layout.shard_grid().grid_shape(), &[5, 2]);
    // another grid name, named
    let mut v = zarr_python_default();
    v["chunk_grid"] = json!({"name": "regular_bounded", "configuration": {}});
    let err = read(&v).unwrap_err();
    assert!(
        matches!(&err, LayoutError::Unsupported(m) if m.contains("regular_bounded")),
        "{err}"
    );
}
