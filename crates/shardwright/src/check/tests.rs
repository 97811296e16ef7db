use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[path = "test_stores.rs"]
mod stores;
use stores::{NoConditionalDelete, Racing, StaleSize};

use super::*;
use crate::format::{index, shard};
use crate::layout::{ArraySpec, Compressor, IndexLocation};
use crate::store::{MemoryStore, Store};

const SHAPE: [u64; 2] = [16, 20];
const FILL: u16 = 7;

fn value(y: u64, x: u64) -> u16 {
    (100 + y * 20 + x) as u16
}

fn spec(location: IndexLocation) -> ArraySpec {
    ArraySpec::new(SHAPE.to_vec(), "uint16", vec![4, 5])
        .shards(vec![8, 10])
        .fill_value(serde_json::json!(FILL))
        .index_location(location)
}

/// `json` with its index codecs replaced by `bytes` alone (no checksum).
fn without_crc(json: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["codecs"][0]["configuration"]["index_codecs"] =
        serde_json::json!([{"name": "bytes", "configuration": {"endian": "little"}}]);
    v.to_string()
}

/// A 16×20 uint16 array (2×2 shards of 2×2 chunks) written whole.
fn written(store: Arc<dyn Store>, json: &str) -> Array {
    let array = Array::create_from_json(store, "a", json).unwrap();
    for s in array.shards().collect::<Vec<_>>() {
        let w = array.shard_writer(&s).unwrap();
        let mut data = Vec::new();
        for y in s.origin()[0]..s.stop()[0] {
            for x in s.origin()[1]..s.stop()[1] {
                data.extend_from_slice(&value(y, x).to_ne_bytes());
            }
        }
        w.write_region(&s, &data).unwrap();
        w.commit().unwrap();
    }
    array
}

fn memory(location: IndexLocation) -> (Arc<MemoryStore>, Array) {
    let store = Arc::new(MemoryStore::new());
    let array = written(store.clone(), &spec(location).to_json().unwrap());
    (store, array)
}

fn run(array: &Array, quick: bool, repair: bool) -> CheckReport {
    check(array, &CheckOptions { quick, repair }, &mut |_| true).unwrap()
}

fn values(array: &Array) -> Vec<u16> {
    array
        .read(&array.bounds())
        .unwrap()
        .chunks(2)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .collect()
}

/// The byte range of each slot's chunk in the stored shard at `key`.
fn ranges(store: &dyn Store, array: &Array, key: &str) -> Vec<Option<Range<usize>>> {
    shard::split(array.layout(), &store.get(key).unwrap().unwrap()).unwrap()
}

fn edit(store: &dyn Store, key: &str, change: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = store.get(key).unwrap().unwrap();
    change(&mut bytes);
    store.put(key, &[&bytes]).unwrap();
}

/// The values expected once the chunks `lost` (coordinates) became the fill value.
fn expected(lost: &[[u64; 2]]) -> Vec<u16> {
    let mut out = Vec::new();
    for y in 0..SHAPE[0] {
        for x in 0..SHAPE[1] {
            let gone = lost.iter().any(|c| c[0] == y / 4 && c[1] == x / 5);
            out.push(if gone { FILL } else { value(y, x) });
        }
    }
    out
}

#[test]
fn clean_arrays_are_clean_with_the_index_at_either_end_and_without_a_checksum() {
    for location in [IndexLocation::Start, IndexLocation::End] {
        let json = spec(location).to_json().unwrap();
        for json in [json.clone(), without_crc(&json)] {
            let array = written(Arc::new(MemoryStore::new()), &json);
            for quick in [false, true] {
                let report = run(&array, quick, false);
                assert!(report.is_clean(), "{location:?} {json}: {report:?}");
                assert_eq!((report.shards_total, report.shards_stored), (4, 4));
                assert_eq!(report.chunks_checked, 16);
                assert_eq!(report.chunks_decoded, if quick { 0 } else { 16 });
                if quick {
                    let index = if json.contains("crc32c") { 68 } else { 64 };
                    assert_eq!(report.bytes_read, 4 * index, "only the indexes are read");
                }
                assert!(report.complete);
            }
        }
    }
}

#[test]
fn missing_shards_are_the_fill_value_not_damage() {
    let (store, array) = memory(IndexLocation::End);
    store.delete("a/c/1/1").unwrap();
    let report = run(&array, false, false);
    assert!(report.is_clean());
    assert_eq!(report.shards_stored, 3);
}

/// Each damage, its shard, the chunk named in its first problem, and words of it.
#[test]
fn each_damage_is_reported_with_its_key_and_chunk() {
    for location in [IndexLocation::End, IndexLocation::Start] {
        let (store, array) = memory(location);
        let size = store.get("a/c/0/1").unwrap().unwrap().len();
        let index_at = match location {
            IndexLocation::Start => 0..68,
            IndexLocation::End => size - 68..size,
        };
        // c/0/0: a byte of chunk (1, 1)'s frame flipped
        let r = ranges(store.as_ref(), &array, "a/c/0/0")[3]
            .clone()
            .unwrap();
        edit(store.as_ref(), "a/c/0/0", |b| b[r.start] ^= 0x40);
        // c/0/1: the index checksum
        edit(store.as_ref(), "a/c/0/1", |b| b[index_at.end - 1] ^= 1);
        // c/1/0: truncated
        edit(store.as_ref(), "a/c/1/0", |b| b.truncate(40));
        // c/1/1: chunk (2, 3) (slot 1) pointing past the end, with a valid checksum
        let mut entries: Vec<(u64, u64)> = ranges(store.as_ref(), &array, "a/c/1/1")
            .into_iter()
            .map(|r| r.map_or(index::EMPTY, |r| (r.start as u64, r.len() as u64)))
            .collect();
        let len = store.size("a/c/1/1").unwrap().unwrap();
        entries[1] = (len - 10, 100);
        let new_index = index::encode(array.layout(), &entries).unwrap();
        edit(store.as_ref(), "a/c/1/1", |b| {
            let at = match location {
                IndexLocation::Start => 0,
                IndexLocation::End => b.len() - new_index.len(),
            };
            b[at..at + new_index.len()].copy_from_slice(&new_index);
        });
        let report = run(&array, false, false);
        let found: Vec<(&str, Option<Vec<u64>>, &str)> = report
            .damaged
            .iter()
            .map(|d| {
                (
                    d.key.as_str(),
                    d.problems[0].chunk.clone(),
                    d.problems[0].message.as_str(),
                )
            })
            .collect();
        assert_eq!(found.len(), 4, "{found:?}");
        assert_eq!(found[0].0, "a/c/0/0");
        assert_eq!(found[0].1, Some(vec![1, 1]));
        assert!(!found[0].2.is_empty() && !found[0].2.starts_with("inner chunk"));
        assert_eq!((found[1].0, found[1].1.clone()), ("a/c/0/1", None));
        assert_eq!(found[1].2, "index checksum mismatch (crc32c)");
        assert_eq!((found[2].0, found[2].1.clone()), ("a/c/1/0", None));
        assert!(
            found[2]
                .2
                .contains("40 bytes, shorter than its 68-byte index"),
            "{}",
            found[2].2
        );
        assert_eq!(
            (found[3].0, found[3].1.clone()),
            ("a/c/1/1", Some(vec![2, 3]))
        );
        let want = format!(
            "byte range {}..{} past the end of the {len}-byte shard",
            len - 10,
            len + 90
        );
        assert_eq!(found[3].2, want);
        assert_eq!(
            report.damaged[3].problems[0].to_string(),
            format!("chunk 2,3: {want}")
        );
        // quick: the index damage, not the chunk's
        let quick = run(&array, true, false);
        let keys: Vec<&str> = quick.damaged.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["a/c/0/1", "a/c/1/0", "a/c/1/1"]);
        assert_eq!(quick.chunks_decoded, 0);
    }
}

#[test]
fn garbage_an_empty_file_and_a_range_into_the_index() {
    let (store, array) = memory(IndexLocation::End);
    store.put("a/c/0/0", &[&[0xAB; 300][..]]).unwrap();
    store.put("a/c/0/1", &[b""]).unwrap();
    let mut entries: Vec<(u64, u64)> = ranges(store.as_ref(), &array, "a/c/1/0")
        .into_iter()
        .map(|r| r.map_or(index::EMPTY, |r| (r.start as u64, r.len() as u64)))
        .collect();
    let len = store.size("a/c/1/0").unwrap().unwrap();
    entries[2] = (len - 70, 10);
    entries[3] = (5, u64::MAX);
    let new_index = index::encode(array.layout(), &entries).unwrap();
    edit(store.as_ref(), "a/c/1/0", |b| {
        let at = b.len() - 68;
        b[at..].copy_from_slice(&new_index);
    });
    let report = run(&array, false, false);
    assert_eq!(report.damaged.len(), 3);
    assert_eq!(
        report.damaged[0].problems[0].message,
        "index checksum mismatch (crc32c)"
    );
    assert!(report.damaged[1].problems[0]
        .message
        .starts_with("the shard is empty (0 bytes)"));
    let text: Vec<String> = report.damaged[2]
        .problems
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        text,
        [
            format!("chunk 3,0: byte range {}..{} overlaps the index (bytes {}..{len})", len - 70, len - 60, len - 68),
            "chunk 3,1: index entry (5, 18446744073709551615) is neither a byte range nor the empty-slot marker (both 2^64-1)".to_string(),
        ]
    );
}

#[test]
fn repair_keeps_every_chunk_that_decodes_and_a_second_check_is_clean() {
    let (store, array) = memory(IndexLocation::End);
    let r = ranges(store.as_ref(), &array, "a/c/0/0")[2]
        .clone()
        .unwrap();
    edit(store.as_ref(), "a/c/0/0", |b| b[r.start] ^= 0x40); // chunk (1, 0)
    edit(store.as_ref(), "a/c/1/1", |b| b.truncate(50)); // index lost: all four chunks
    let report = run(&array, false, true);
    assert_eq!(report.damaged.len(), 2);
    assert_eq!(
        report.damaged[0].repair,
        Some(Repair::Rewritten {
            kept: 3,
            lost: vec![vec![1, 0]]
        })
    );
    assert_eq!(
        report.damaged[1].repair,
        Some(Repair::Removed {
            lost: vec![vec![2, 2], vec![2, 3], vec![3, 2], vec![3, 3]]
        })
    );
    assert!(report.all_repaired());
    assert_eq!(report.lost_chunks().len(), 5);
    assert_eq!(store.get("a/c/1/1").unwrap(), None);
    assert_eq!(
        values(&array),
        expected(&[[1, 0], [2, 2], [2, 3], [3, 2], [3, 3]])
    );
    assert!(run(&array, false, false).is_clean());
}

#[test]
fn quick_repair_reads_the_shard_whole_to_decide() {
    let (store, array) = memory(IndexLocation::Start);
    edit(store.as_ref(), "a/c/0/1", |b| b[3] ^= 0x10); // index of slot 0: checksum fails
    let report = run(&array, true, true);
    assert_eq!(report.damaged.len(), 1);
    // zstd chunks verify themselves: read without the checksum, the index points to the
    // three untouched chunks, which decode (chunk (0, 2)'s entry is now wrong)
    assert_eq!(
        report.damaged[0].repair,
        Some(Repair::Rewritten {
            kept: 3,
            lost: vec![vec![0, 2]]
        })
    );
    assert_eq!(values(&array), expected(&[[0, 2]]));
    assert!(run(&array, false, false).is_clean());
}

#[test]
fn a_flipped_checksum_byte_loses_nothing_with_a_compressor_and_everything_without() {
    let (store, array) = memory(IndexLocation::End);
    edit(store.as_ref(), "a/c/0/0", |b| *b.last_mut().unwrap() ^= 1);
    let report = run(&array, false, true);
    assert_eq!(
        report.damaged[0].repair,
        Some(Repair::Rewritten {
            kept: 4,
            lost: vec![]
        })
    );
    assert_eq!(values(&array), expected(&[]));

    let store = Arc::new(MemoryStore::new());
    let json = spec(IndexLocation::End)
        .compressor(Compressor::None)
        .to_json()
        .unwrap();
    let array = written(store.clone(), &json);
    edit(store.as_ref(), "a/c/0/0", |b| *b.last_mut().unwrap() ^= 1);
    let report = run(&array, false, true);
    assert!(report.damaged[0].index_unreadable);
    assert_eq!(report.damaged[0].repair.as_ref().unwrap().lost().len(), 4);
    assert_eq!(values(&array), expected(&[[0, 0], [0, 1], [1, 0], [1, 1]]));
}

#[test]
fn a_shard_replaced_between_check_and_repair_is_not_overwritten() {
    for conditional_deletes in [true, false] {
        let store = Arc::new(Racing {
            inner: MemoryStore::new(),
            raced: Mutex::default(),
            armed: AtomicBool::new(false),
            conditional_deletes,
        });
        let array = written(store.clone(), &spec(IndexLocation::End).to_json().unwrap());
        let r = ranges(store.as_ref(), &array, "a/c/0/0")[0]
            .clone()
            .unwrap();
        edit(store.as_ref(), "a/c/0/0", |b| b[r.start] ^= 0x40);
        edit(store.as_ref(), "a/c/1/0", |b| b.truncate(3));
        store.armed.store(true, Ordering::SeqCst);
        let report = run(&array, false, true);
        assert_eq!(report.damaged.len(), 2);
        for damaged in &report.damaged {
            assert_eq!(damaged.repair, Some(Repair::Skipped), "{damaged:?}");
            assert_eq!(
                damaged.repair.as_ref().unwrap().to_string(),
                "skipped: changed since checked"
            );
            assert_eq!(
                store.get(&damaged.key).unwrap().unwrap(),
                b"the live writer's value"
            );
        }
        assert_eq!(store.raced.lock().unwrap().len(), 2);
        assert!(!report.all_repaired());
    }
}

#[test]
fn without_a_conditional_delete_what_is_lost_is_stored_as_empty() {
    let store = Arc::new(NoConditionalDelete::default());
    let array = written(store.clone(), &spec(IndexLocation::End).to_json().unwrap());
    edit(store.as_ref(), "a/c/1/1", |b| b.clear());
    let report = run(&array, false, true);
    assert!(report.all_repaired());
    assert_eq!(store.size("a/c/1/1").unwrap(), Some(68)); // an index of empty slots
    assert_eq!(values(&array), expected(&[[2, 2], [2, 3], [3, 2], [3, 3]]));
    assert!(run(&array, false, false).is_clean());

    // unsharded: the damaged chunk is replaced by the fill chunk
    let store = Arc::new(NoConditionalDelete::default());
    let json = ArraySpec::new(SHAPE.to_vec(), "uint16", vec![4, 5])
        .fill_value(serde_json::json!(FILL))
        .to_json()
        .unwrap();
    let array = written(store.clone(), &json);
    edit(store.as_ref(), "a/c/2/1", |b| b[0] ^= 0x40);
    let report = run(&array, false, true);
    assert_eq!(
        report.damaged[0].repair,
        Some(Repair::Removed {
            lost: vec![vec![2, 1]]
        })
    );
    assert_eq!(values(&array), expected(&[[2, 1]]));
    assert!(run(&array, false, false).is_clean());
}

#[test]
fn unsharded_chunks_are_decoded_and_a_damaged_one_deleted() {
    let store = Arc::new(MemoryStore::new());
    let json = ArraySpec::new(SHAPE.to_vec(), "uint16", vec![4, 5])
        .fill_value(serde_json::json!(FILL))
        .to_json()
        .unwrap();
    let array = written(store.clone(), &json);
    let clean = run(&array, false, false);
    assert!(clean.is_clean() && !clean.sharded);
    assert_eq!((clean.shards_stored, clean.chunks_decoded), (16, 16));
    edit(store.as_ref(), "a/c/3/2", |b| b.truncate(b.len() / 2));
    edit(store.as_ref(), "a/c/0/0", |b| b.clear());
    let quick = run(&array, true, false);
    assert_eq!(quick.damaged.len(), 1, "quick finds only the empty chunk");
    assert_eq!(
        quick.damaged[0].problems[0].to_string(),
        "chunk 0,0: empty (0 bytes): not an encoded chunk"
    );
    let report = run(&array, false, true);
    let keys: Vec<&str> = report.damaged.iter().map(|d| d.key.as_str()).collect();
    assert_eq!(keys, ["a/c/0/0", "a/c/3/2"]);
    assert_eq!(report.damaged[1].problems[0].chunk, Some(vec![3, 2]));
    assert!(report.all_repaired());
    assert_eq!(store.get("a/c/3/2").unwrap(), None);
    assert_eq!(values(&array), expected(&[[0, 0], [3, 2]]));
    assert!(run(&array, false, false).is_clean());
}

#[test]
fn stopping_from_the_progress_callback_gives_a_partial_report() {
    let store = Arc::new(MemoryStore::new());
    let spec = ArraySpec::new(vec![200], "uint8", vec![1]).shards(vec![2]);
    let array = Array::create(store, "a", &spec).unwrap();
    // every shard stored: the check visits the stored shards it lists
    for shard in array.shards().collect::<Vec<_>>() {
        let writer = array.shard_writer(&shard).unwrap();
        writer.write_region_value(&shard, &[1]).unwrap();
        writer.commit().unwrap();
    }
    let mut events = Vec::new();
    let report = check(&array, &CheckOptions::default(), &mut |p| {
        events.push(p.clone());
        false
    })
    .unwrap();
    assert!(!report.complete);
    assert_eq!(events.len(), 1);
    assert!(events[0].shards_done < 100 && events[0].shards_total == 100);
}

#[test]
fn overlapping_entries_of_an_unverified_index_are_dropped() {
    let mut ranges = vec![
        Some(0..10),
        Some(2..5),
        None,
        Some(10..20),
        Some(19..25),
        Some(30..31),
    ];
    examine::drop_overlapping(&mut ranges);
    assert_eq!(ranges, vec![None, None, None, None, None, Some(30..31)]);
}

#[test]
fn a_quick_check_confirms_damage_on_one_read_of_the_whole_shard() {
    // shorter (the index read from the wrong place) and longer (the ranged get fails)
    for delta in [-1, 100] {
        let store = Arc::new(StaleSize(MemoryStore::new(), delta));
        let array = written(store.clone(), &spec(IndexLocation::End).to_json().unwrap());
        for repair in [false, true] {
            let report = run(&array, true, repair);
            assert!(report.is_clean(), "{delta}: {report:?}");
            assert_eq!(report.shards_stored, 4);
        }
        edit(store.as_ref(), "a/c/0/0", |b| b.truncate(10));
        let report = run(&array, true, false);
        assert_eq!(report.damaged.len(), 1, "{delta}");
        assert_eq!(
            report.damaged[0].size, 10,
            "the size of the consistent read"
        );
    }
}

#[test]
fn crash_debris_is_listed_and_removed_by_a_repair_never_a_live_writers() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(crate::store::FilesystemStore::new(dir.path()));
    let array = written(store.clone(), &spec(IndexLocation::End).to_json().unwrap());
    // What a writer killed mid-upload leaves: a temporary file nobody holds a lock on.
    let dead = dir.path().join("a/c/0/.0.0123456789abcdef.shardwright-tmp");
    std::fs::write(&dead, b"half a shard").unwrap();
    // A live writer's temporary file (its upload holds the lock) must survive.
    let live = store.begin_upload("a/c/1/1").unwrap().unwrap();
    let report = run(&array, true, false);
    assert!(report.is_clean());
    let keys: Vec<&str> = report.debris.iter().map(|d| d.key.as_str()).collect();
    assert_eq!(keys, ["a/c/0/.0.0123456789abcdef.shardwright-tmp"]);
    assert_eq!(report.to_json()["debris"][0]["removed"], false);
    assert!(dead.exists());
    let repaired = run(&array, true, true);
    assert_eq!(repaired.debris.len(), 1);
    assert!(!dead.exists());
    assert!(run(&array, false, false).debris.is_empty());
    drop(live);
}
