//! Faults while resizing: a shrink stores the new shape before it clears what falls
//! outside, so a failure before the metadata put changes nothing, one after it leaves the
//! new shape with its data readable, and whatever the failure, growing again later shows
//! the fill value past the edge, never data left from before.

mod faults_common;

use std::sync::Arc;

use faults_common::{fill_json, Backend, Geometry, Run, PATH};
use shardwright::store::{Fault, FaultOp, Store};
use shardwright::Array;

fn old(y: u64, x: u64) -> u16 {
    (y * 7 + x * 3 + 1) as u16
}

/// The shape shrunk to: shard (0, 0) and (0, 1) straddle the new edge, the two below are
/// wholly outside.
const SMALL: [u64; 2] = [20, 44];

/// The whole array at `PATH` in `store` and its shape.
fn contents(store: &Arc<dyn Store>) -> (Vec<u64>, Vec<u8>) {
    let array = Array::open(Arc::clone(store), PATH).unwrap();
    let data = array.read(&array.bounds()).unwrap();
    (array.layout().shape().to_vec(), data)
}

/// `old` inside `kept`, the fill value (0) elsewhere, over `shape`.
fn expected(shape: [u64; 2], kept: [u64; 2]) -> Vec<u8> {
    let mut out = Vec::new();
    for y in 0..shape[0] {
        for x in 0..shape[1] {
            let v = if y < kept[0] && x < kept[1] {
                old(y, x)
            } else {
                0
            };
            out.extend_from_slice(&v.to_ne_bytes());
        }
    }
    out
}

/// Each shard key of `array` with the value stored there.
fn shards(store: &Arc<dyn Store>, array: &Array) -> Vec<(String, Option<Vec<u8>>)> {
    array
        .shards()
        .map(|s| {
            let key = array.shard_key(s.index().unwrap());
            let value = store.get(&key).unwrap();
            (key, value)
        })
        .collect()
}

/// A new 64×64 array at `PATH` in `store`, every shard written with `old`; its inner
/// chunks end with a `crc32c` checksum, so that a merge detects a bit flipped in the read
/// of a chunk it keeps (without one, the chunk is carried over as read: see `faults.rs`).
fn fill(store: Arc<dyn Store>, g: &Geometry) -> Array {
    let mut json: serde_json::Value = serde_json::from_str(&g.spec().to_json().unwrap()).unwrap();
    let inner = json["codecs"][0]["configuration"]["codecs"]
        .as_array_mut()
        .unwrap();
    inner.push(serde_json::json!({"name": "crc32c"}));
    fill_json(store, &json.to_string(), old)
}

fn shrink(store: Arc<dyn Store>) -> shardwright::Result<Array> {
    Array::open(store, PATH)?.resize(SMALL.to_vec())
}

#[test]
fn a_failed_metadata_put_deletes_no_shard_and_keeps_the_shape() {
    let g = Geometry::small();
    for backend in [Backend::Memory, Backend::Filesystem] {
        // Which put_if is the metadata's: try each until the fault hits zarr.json.
        let mut hit = false;
        for nth in 0..8 {
            let run = Run::new(backend);
            let array = fill(Arc::clone(&run.inner), &g);
            let before = shards(&run.inner, &array);
            run.faulty.reset();
            run.faulty.inject(FaultOp::PutIf, nth, Fault::Fail);
            let result = shrink(run.faulty());
            let fired = run.faulty.fired_at();
            if fired.first().map(|f| f.2.as_str()) != Some("a.zarr/zarr.json") {
                continue;
            }
            hit = true;
            let err = result.unwrap_err();
            assert!(err.to_string().contains("a.zarr/zarr.json"), "{err}");
            let after = shards(&run.inner, &array);
            assert!(after == before, "{backend:?}: a shard changed");
            let (shape, data) = contents(&run.inner);
            assert_eq!(shape, g.shape.to_vec());
            assert!(data == expected(g.shape, g.shape));
        }
        assert!(hit, "{backend:?}: no put_if of zarr.json");
    }
}

#[test]
fn a_failed_cleanup_keeps_the_new_shape_and_a_later_grow_shows_the_fill_value() {
    let g = Geometry::small();
    for backend in [Backend::Memory, Backend::Filesystem] {
        // The first delete of a shard wholly outside the new shape fails.
        let run = Run::new(backend);
        fill(Arc::clone(&run.inner), &g);
        run.faulty.reset();
        run.faulty.inject(FaultOp::Delete, 0, Fault::Fail);
        let err = shrink(run.faulty()).unwrap_err();
        assert!(err.to_string().contains("a.zarr/c/1/"), "{err}");
        let (shape, data) = contents(&run.inner);
        assert_eq!(
            shape,
            SMALL.to_vec(),
            "{backend:?}: the new shape is stored"
        );
        assert!(data == expected(SMALL, SMALL));
        // Growing back (through a new handle, as after a crash) shows no old data.
        let grown = Array::open(run.faulty(), PATH)
            .unwrap()
            .resize(g.shape.to_vec())
            .unwrap();
        assert!(grown.read(&grown.bounds()).unwrap() == expected(g.shape, SMALL));
        assert!(contents(&run.inner).1 == expected(g.shape, SMALL));
    }
}

#[test]
fn a_shrink_survives_a_fault_at_every_call() {
    let g = Geometry::small();
    let count = Run::new(Backend::Memory);
    fill(Arc::clone(&count.inner), &g);
    count.faulty.reset();
    shrink(count.faulty()).unwrap();
    let mut injected = 0;
    for (op, n) in count.faulty.counts() {
        for nth in 0..n {
            for fault in faults_common::faults_for(op) {
                let what = format!("{fault:?} at {op} #{nth}");
                let run = Run::new(Backend::Memory);
                fill(Arc::clone(&run.inner), &g);
                run.faulty.reset();
                run.faulty.inject(op, nth, fault);
                let result = shrink(run.faulty());
                if run.faulty.fired() == 0 {
                    result.unwrap_or_else(|e| panic!("{what}: failed without a fault: {e}"));
                    continue;
                }
                injected += 1;
                // Old shape and all the data, or the new shape and its part of the data.
                let (shape, data) = contents(&run.inner);
                if shape == g.shape.to_vec() {
                    assert!(result.is_err(), "{what}: succeeded without a new shape");
                    assert!(data == expected(g.shape, g.shape), "{what}: data lost");
                } else {
                    assert_eq!(shape, SMALL.to_vec(), "{what}");
                    assert!(data == expected(SMALL, SMALL), "{what}: data lost");
                }
                // Growing back without the shrink finished: the fill value past the edge
                // it reached (the old data while the shape stayed).
                run.faulty.reset();
                let grown = Array::open(run.faulty(), PATH)
                    .unwrap()
                    .resize(vec![64, 80])
                    .unwrap_or_else(|e| panic!("{what}: the grow failed: {e}"));
                let kept = if shape == g.shape.to_vec() {
                    g.shape
                } else {
                    SMALL
                };
                let data = grown.read(&grown.bounds()).unwrap();
                assert!(data == expected([64, 80], kept), "{what}: stale data shows");
                // And a shrink retried then grown clears exactly what it cuts off.
                shrink(run.faulty()).unwrap_or_else(|e| panic!("{what}: the retry failed: {e}"));
                let (_, data) = contents(&run.inner);
                assert!(data == expected(SMALL, SMALL), "{what}, retried");
                let grown = Array::open(run.faulty(), PATH)
                    .unwrap()
                    .resize(vec![64, 80])
                    .unwrap();
                let data = grown.read(&grown.bounds()).unwrap();
                assert!(
                    data == expected([64, 80], SMALL),
                    "{what}, retried and grown"
                );
                let record = run.inner.get("a.zarr/shardwright-resize.json").unwrap();
                assert!(record.is_none(), "{what}: the record is left");
            }
        }
    }
    assert!(injected > 10, "{injected}");
}
