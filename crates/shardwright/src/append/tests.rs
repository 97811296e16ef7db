use std::ops::Range;
use std::sync::Arc;

use crate::store::{IoEvent, Store, StoreError, Version};
use crate::{Array, ArraySpec, Domain, Error, ErrorKind, InstrumentedStore, MemoryStore};

/// Frames of shape (4, 6) uint8, chunks (2, 2, 3), shards (4, 4, 3): two shards a slab.
fn make(store: Arc<dyn Store>, length: u64) -> Array {
    let spec = ArraySpec::new(vec![length, 4, 6], "uint8", vec![2, 2, 3]).shards(vec![4, 4, 3]);
    Array::create(store, "a", &spec).unwrap()
}

/// Frame `t`: every element `t * 3 + position % 3 + 1` (never the fill value 0).
fn frame(t: u64) -> Vec<u8> {
    (0..24u64).map(|i| (t * 3 + i % 3 + 1) as u8).collect()
}

fn frames(range: std::ops::Range<u64>) -> Vec<u8> {
    range.flat_map(frame).collect()
}

/// A memory store that cannot list (as some adapter stores).
#[derive(Debug, Default)]
struct Unlisted(MemoryStore);

impl Store for Unlisted {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.get(key)
    }
    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.get_range(key, range)
    }
    fn size(&self, key: &str) -> Result<Option<u64>, StoreError> {
        self.0.size(key)
    }
    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
        self.0.put(key, parts)
    }
    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>, StoreError> {
        self.0.get_versioned(key)
    }
    fn put_if(
        &self,
        key: &str,
        parts: &[&[u8]],
        expected: Option<&Version>,
    ) -> Result<(), StoreError> {
        self.0.put_if(key, parts, expected)
    }
    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.0.delete(key)
    }
    fn delete_if(&self, key: &str, expected: Option<&Version>) -> Result<(), StoreError> {
        self.0.delete_if(key, expected)
    }
}

fn is_shard(key: &str) -> bool {
    key.starts_with("a/c/")
}

#[test]
fn a_fresh_run_puts_each_shard_once_and_reads_none() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let array = make(store.clone(), 0);
    store.reset();
    let mut appender = array.appender(0).unwrap();
    for t in 0..10 {
        appender.append(&frame(t), &[4, 6]).unwrap();
        if t % 4 == 3 {
            appender.flush().unwrap();
            assert_eq!(appender.array().layout().shape(), &[t + 1, 4, 6]);
            let shown = Array::open(store.clone(), "a").unwrap();
            assert_eq!(shown.layout().shape(), &[t + 1, 4, 6]);
        }
    }
    assert_eq!(appender.array().layout().shape(), &[8, 4, 6]);
    assert_eq!(appender.length(), 10);
    let array = appender.finish().unwrap();
    assert_eq!(array.layout().shape(), &[10, 4, 6]);
    let events = store.events();
    let shard_puts: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            IoEvent::Put(k, _) | IoEvent::PutIf(k, _) if is_shard(k) => Some(k),
            _ => None,
        })
        .collect();
    assert_eq!(shard_puts.len(), 6, "{shard_puts:?}"); // 3 slabs of 2 shards
    let mut unique = shard_puts.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 6);
    let shard_reads = events.iter().filter(|e| match e {
        IoEvent::Get(k) | IoEvent::GetRange(k, _) | IoEvent::Size(k) => is_shard(k),
        _ => false,
    });
    assert_eq!(shard_reads.count(), 0);
    assert_eq!(array.read(&array.bounds()).unwrap(), frames(0..10));
}

#[test]
fn blocks_cross_rows_and_slabs() {
    let array = make(Arc::new(MemoryStore::new()), 0);
    let mut appender = array.appender(0).unwrap();
    let mut t = 0;
    for k in [3, 5, 1, 0, 7, 2] {
        appender.append(&frames(t..t + k), &[k, 4, 6]).unwrap();
        t += k;
    }
    assert_eq!(appender.shape(), vec![18, 4, 6]);
    let array = appender.finish().unwrap();
    assert_eq!(array.read(&array.bounds()).unwrap(), frames(0..18));
}

#[test]
fn appends_along_an_inner_axis() {
    let spec = ArraySpec::new(vec![3, 0], "uint16", vec![2, 2]).shards(vec![2, 4]);
    let array = Array::create(Arc::new(MemoryStore::new()), "a", &spec).unwrap();
    let mut appender = array.appender(1).unwrap();
    let mut expected = vec![vec![]; 3];
    for t in 0..7u16 {
        let column: Vec<u16> = (0..3).map(|r| t * 10 + r + 1).collect();
        for (r, v) in column.iter().enumerate() {
            expected[r].push(*v);
        }
        let bytes: Vec<u8> = column.iter().flat_map(|v| v.to_ne_bytes()).collect();
        appender.append(&bytes, &[3]).unwrap();
    }
    let array = appender.finish().unwrap();
    assert_eq!(array.layout().shape(), &[3, 7]);
    let want: Vec<u8> = expected
        .concat()
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    assert_eq!(array.read(&array.bounds()).unwrap(), want);
}

#[test]
fn a_reopened_appender_continues_inside_a_slab_reading_each_shard_once() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let array = make(store.clone(), 0);
    let mut appender = array.appender(0).unwrap();
    appender.append(&frames(0..5), &[5, 4, 6]).unwrap();
    appender.finish().unwrap();
    store.reset();
    let mut appender = array.appender(0).unwrap(); // a stale handle: shape 0
    assert_eq!(appender.length(), 5);
    appender.append(&frames(5..11), &[6, 4, 6]).unwrap();
    let array = appender.finish().unwrap();
    let events = store.events();
    let shard_gets = events
        .iter()
        .filter(|e| matches!(e, IoEvent::Get(k) | IoEvent::GetRange(k, _) if is_shard(k)))
        .count();
    assert_eq!(shard_gets, 2, "{events:#?}"); // the two shards of slab 1, once each
    assert_eq!(array.read(&array.bounds()).unwrap(), frames(0..11));
}

/// Store frames past the shape, as a run killed after storing a slab leaves them.
fn leave_debris(array: &Array, start: u64, stop: u64) {
    let mut shape = array.layout().shape().to_vec();
    shape[0] = stop.next_multiple_of(4);
    let wide = array.resize(shape).unwrap();
    for shard in wide.shards_meeting(&Domain::new(vec![start, 0, 0], vec![stop - start, 4, 6])) {
        let writer = wide.shard_writer(&shard).unwrap();
        writer
            .write_region_value(
                &shard
                    .intersect(&Domain::new(vec![start, 0, 0], vec![stop - start, 4, 6]))
                    .unwrap(),
                &[99],
            )
            .unwrap();
        writer.commit().unwrap();
    }
    let mut back = array.layout().shape().to_vec();
    back[0] = array.layout().shape()[0];
    // Back to the old shape without clearing (as a killed run never grew it).
    let key = "a/zarr.json";
    let text = String::from_utf8(wide.store().get(key).unwrap().unwrap()).unwrap();
    let grown = format!("[{},4,6]", stop.next_multiple_of(4));
    let old = format!("[{},4,6]", back[0]);
    assert!(text.contains(&grown), "{text}");
    wide.store()
        .put(key, &[text.replace(&grown, &old).as_bytes()])
        .unwrap();
}

#[test]
fn debris_past_the_shape_is_removed_when_an_appender_opens() {
    for listing in [true, false] {
        let memory: Arc<dyn Store> = if listing {
            Arc::new(MemoryStore::new())
        } else {
            Arc::new(Unlisted::default())
        };
        let array = make(memory.clone(), 0);
        let mut appender = array.appender(0).unwrap();
        appender.append(&frames(0..6), &[6, 4, 6]).unwrap();
        let array = appender.finish().unwrap();
        leave_debris(&array, 6, 12);
        assert!(memory.get("a/c/2/0/0").unwrap().is_some());
        let mut appender = array.appender(0).unwrap();
        appender.append(&frame(6), &[4, 6]).unwrap();
        let array = appender.finish().unwrap();
        assert_eq!(array.layout().shape(), &[7, 4, 6]);
        assert_eq!(memory.get("a/c/2/0/0").unwrap(), None, "listing: {listing}");
        let grown = array.resize(vec![12, 4, 6]).unwrap();
        let mut want = frames(0..7);
        want.resize(12 * 24, 0);
        assert_eq!(
            grown.read(&grown.bounds()).unwrap(),
            want,
            "listing: {listing}"
        );
    }
}

#[test]
fn a_frame_of_the_wrong_shape_is_refused_and_the_appender_goes_on() {
    let array = make(Arc::new(MemoryStore::new()), 0);
    let mut appender = array.appender(0).unwrap();
    appender.append(&frame(0), &[4, 6]).unwrap();
    let err = appender.append(&[0; 20], &[4, 5]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Shape);
    assert!(matches!(err, Error::FrameShape { .. }));
    assert!(
        err.to_string()
            .contains("must have shape [4, 6] (a block of k frames: (k, 4, 6)); got shape [4, 5]"),
        "{err}"
    );
    let err = appender.append(&[0; 3], &[4, 6]).unwrap_err();
    assert!(matches!(err, Error::DataLength { .. }), "{err}");
    assert!(appender.append(&[0; 48], &[2, 4, 5]).is_err());
    appender.append(&frame(1), &[4, 6]).unwrap();
    let array = appender.finish().unwrap();
    assert_eq!(array.read(&array.bounds()).unwrap(), frames(0..2));
}

#[test]
fn an_axis_the_array_lacks_is_refused() {
    let array = make(Arc::new(MemoryStore::new()), 0);
    let err = array.appender(3).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Shape);
    assert!(
        err.to_string().contains("cannot append along axis 3"),
        "{err}"
    );
}

#[test]
fn an_unsharded_array_appends_chunk_by_chunk() {
    let spec = ArraySpec::new(vec![0, 4], "uint8", vec![3, 4]);
    let array = Array::create(Arc::new(MemoryStore::new()), "a", &spec).unwrap();
    let mut appender = array.appender(0).unwrap();
    let data: Vec<u8> = (1..=28).collect();
    appender.append(&data, &[7, 4]).unwrap();
    let array = appender.finish().unwrap();
    assert_eq!(array.read(&array.bounds()).unwrap(), data);
}

#[test]
fn past_the_last_frame_a_slab_holds_the_fill_value() {
    let spec = ArraySpec::new(vec![0, 3], "uint8", vec![2, 3])
        .shards(vec![4, 3])
        .fill_value(serde_json::json!(5));
    let array = Array::create(Arc::new(MemoryStore::new()), "a", &spec).unwrap();
    let mut appender = array.appender(0).unwrap();
    appender.append(&[1; 3], &[3]).unwrap();
    appender.append(&[2; 6], &[2, 3]).unwrap(); // ends inside a row
    assert_eq!(appender.finish().unwrap().layout().shape(), &[3, 3]);
    // A new appender continues inside that row, into the next slab.
    let mut appender = array.appender(0).unwrap();
    appender.append(&[3; 9], &[3, 3]).unwrap();
    let array = appender.finish().unwrap();
    assert_eq!(array.layout().shape(), &[6, 3]);
    let grown = array.resize(vec![8, 3]).unwrap(); // shows what lies past the end
    let mut want = vec![1, 1, 1, 2, 2, 2, 2, 2, 2];
    want.extend([3; 9]);
    want.resize(24, 5);
    assert_eq!(grown.read(&grown.bounds()).unwrap(), want);
}

#[test]
fn a_record_of_an_unfinished_shrink_does_not_clear_the_appended_slabs() {
    // The regression: each grow is a resize, which first clears what the record names
    // outside the stored shape — where the appender had just stored its slab.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let array = make(store.clone(), 0);
    let mut appender = array.appender(0).unwrap();
    appender.append(&frames(0..10), &[10, 4, 6]).unwrap();
    appender.finish().unwrap();
    // As a shrink from 128 to 10 killed during its clearing leaves it.
    store
        .put(
            "a/shardwright-resize.json",
            &[br#"{"extent": [128, 4, 6]}"#],
        )
        .unwrap();
    let mut appender = Array::open(store.clone(), "a")
        .unwrap()
        .appender(0)
        .unwrap();
    assert_eq!(store.get("a/shardwright-resize.json").unwrap(), None);
    appender.append(&frames(10..64), &[54, 4, 6]).unwrap();
    let array = appender.finish().unwrap();
    assert_eq!(array.layout().shape(), &[64, 4, 6]);
    let stored = Array::open(store, "a").unwrap();
    assert_eq!(stored.read(&stored.bounds()).unwrap(), frames(0..64));
}

#[test]
fn a_stored_slab_is_shown_by_the_next_call_and_lost_to_a_kill_before_it() {
    // As the module docs say: a slab whose store completed stays hidden until the next
    // append, flush or finish; a process killed before that loses it.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let array = make(store.clone(), 0);
    let mut appender = array.appender(0).unwrap();
    appender.append(&frames(0..4), &[4, 4, 6]).unwrap(); // slab 0, stored in the background
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while store.get("a/c/0/0/1").unwrap().is_none() || store.get("a/c/0/0/0").unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "slab 0 never stored");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(
        Array::open(store.clone(), "a").unwrap().layout().shape()[0],
        0
    );
    std::mem::forget(appender); // killed: nothing more runs
    let mut again = Array::open(store.clone(), "a")
        .unwrap()
        .appender(0)
        .unwrap();
    assert_eq!(again.length(), 0);
    assert_eq!(store.get("a/c/0/0/0").unwrap(), None); // deleted as debris
    again.append(&frames(0..4), &[4, 4, 6]).unwrap();
    again.flush().unwrap();
    assert_eq!(Array::open(store, "a").unwrap().layout().shape()[0], 4);
}

#[test]
fn an_appender_near_the_end_sweeps_two_slabs_and_never_lists() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let array = make(store.clone(), 0);
    let mut appender = array.appender(0).unwrap();
    appender.append(&frames(0..40), &[40, 4, 6]).unwrap(); // 10 slabs, 20 shards
    let array = appender.finish().unwrap();
    leave_debris(&array, 40, 44);
    store.reset();
    let mut appender = array.appender_near_end(0).unwrap();
    appender.append(&frame(40), &[4, 6]).unwrap();
    let array = appender.finish().unwrap();
    let events = store.events();
    let lists = events.iter().filter(|e| matches!(e, IoEvent::List(_)));
    assert_eq!(lists.count(), 0, "{events:?}");
    let deletes = events.iter().filter(|e| matches!(e, IoEvent::Delete(_)));
    assert_eq!(deletes.count(), 4, "{events:?}"); // two slabs of two shards
    let grown = array.resize(vec![48, 4, 6]).unwrap();
    let mut want = frames(0..41);
    want.resize(48 * 24, 0);
    assert_eq!(grown.read(&grown.bounds()).unwrap(), want); // the debris is gone
                                                            // The listing appender lists once.
    store.reset();
    grown.appender(0).unwrap();
    let lists = store.events();
    let lists = lists.iter().filter(|e| matches!(e, IoEvent::List(_)));
    assert_eq!(lists.count(), 1);
}
