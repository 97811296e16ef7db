//! Costs that grow with what is stored, not with the grid: `check`, `resize` and a
//! pyramid's resume list the array's folder once ([`Array::stored_shards`]) where the
//! store lists, and ask for every grid cell only where it cannot.

use std::ops::Range;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::check::{check, CheckOptions};
use crate::store::{InstrumentedStore, MemoryStore, Store, StoreError, Version};
use crate::{Array, ArraySpec};

/// A store that cannot list (as a backend without a listing): every call but
/// `list_prefix` goes to a [`MemoryStore`].
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

/// Write shard `index` of `array` full of `value`.
fn store_shard(array: &Array, index: &[u64], value: u8) {
    let shard = array.shard(index).unwrap();
    let writer = array.shard_writer(&shard).unwrap();
    writer.write_region_value(&shard, &[value]).unwrap();
    writer.commit().unwrap();
}

/// Run `work` on a thread; panic if it takes longer than `limit` (a regression to asking
/// for every grid cell fails here rather than hanging the suite).
fn within<T: Send + 'static>(limit: Duration, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("took longer than {limit:?}: a cost that grows with the grid"))
}

#[test]
fn stored_shards_are_the_listed_shard_keys_only() {
    let store = Arc::new(MemoryStore::new());
    let spec = ArraySpec::new(vec![8, 8], "uint8", vec![2, 2]).shards(vec![4, 4]);
    let array = Array::create(store.clone(), "a", &spec).unwrap();
    store_shard(&array, &[1, 0], 3);
    for stray in [
        "a/c/9/0",
        "a/c/01/1",
        "a/c/0",
        "a/c/0/0/0",
        "a/c/x/1",
        "a/notes.txt",
        "ab/c/0/0",
    ] {
        store.put(stray, &[b"x"]).unwrap();
    }
    assert_eq!(array.stored_shards().unwrap(), Some(vec![vec![1, 0]]));
    let unlisted: Arc<dyn Store> = Arc::new(Unlisted::default());
    let array = Array::create(unlisted, "a", &spec).unwrap();
    assert_eq!(array.stored_shards().unwrap(), None);
}

#[test]
fn a_quick_check_of_an_empty_billion_element_array_costs_what_is_stored() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let spec = ArraySpec::new(vec![1_000_000_000], "uint8", vec![64]).shards(vec![64]);
    let array = Array::create(store.clone(), "big", &spec).unwrap();
    store_shard(&array, &[12_345_678], 1);
    store.reset();
    let started = Instant::now();
    let options = CheckOptions {
        quick: true,
        repair: false,
    };
    // stop after 5 s: asking for each of the 15.6 million cells takes far longer
    let report = check(&array, &options, &mut |_| {
        started.elapsed() < Duration::from_secs(5)
    })
    .unwrap();
    assert!(report.complete, "stopped after {:?}", started.elapsed());
    assert_eq!((report.shards_stored, report.shards_total), (1, 15_625_000));
    let counts = store.counts();
    assert_eq!(
        (counts.lists, counts.sizes, counts.range_gets),
        (1, 1, 1),
        "{counts:?}"
    );
}

#[test]
fn shrinking_a_huge_grid_visits_only_its_stored_shards() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let spec = ArraySpec::new(vec![65_536, 65_536], "uint8", vec![16, 16]).shards(vec![16, 16]);
    let array = Array::create(store.clone(), "big", &spec).unwrap();
    store_shard(&array, &[4_000, 4_000], 5); // wholly outside the new shape
    store_shard(&array, &[62, 0], 7); // rows 992..1008: cut at 1000
    store.reset();
    let shrunk = within(Duration::from_secs(5), move || {
        array.resize(vec![1_000, 1_000]).unwrap()
    });
    assert_eq!(store.get("big/c/4000/4000").unwrap(), None);
    let edge = shrunk.shard(&[62, 0]).unwrap();
    assert_eq!(shrunk.read(&edge).unwrap(), vec![7; 8 * 16]);
    let grown = shrunk.resize(vec![2_000, 2_000]).unwrap();
    let mut want = vec![7; 8 * 16];
    want.extend([0; 8 * 16]);
    let cell = grown.shard(&[62, 0]).unwrap();
    assert_eq!(
        grown.read(&cell).unwrap(),
        want,
        "what the shrink cut off is the fill value"
    );
    let counts = store.counts();
    assert_eq!(counts.sizes, 0, "{counts:?}");
    assert!(counts.deletes <= 4, "{counts:?}");
}

#[test]
fn without_a_listing_check_and_resize_ask_for_each_cell() {
    let store = Arc::new(Unlisted::default());
    let spec = ArraySpec::new(vec![16], "uint8", vec![2]).shards(vec![4]);
    let array = Array::create(store.clone(), "a", &spec).unwrap();
    store_shard(&array, &[0], 1);
    store_shard(&array, &[3], 2);
    store.put("a/c/2", &[b"garbage"]).unwrap();
    let options = CheckOptions {
        quick: true,
        repair: false,
    };
    let report = check(&array, &options, &mut |_| true).unwrap();
    assert_eq!((report.shards_stored, report.damaged.len()), (3, 1));
    assert_eq!(report.damaged[0].key, "a/c/2");
    let shrunk = array.resize(vec![6]).unwrap();
    assert_eq!(
        (store.get("a/c/2").unwrap(), store.get("a/c/3").unwrap()),
        (None, None)
    );
    let grown = shrunk.resize(vec![16]).unwrap();
    let mut want = vec![1; 4];
    want.extend([0; 12]);
    assert_eq!(grown.read(&grown.bounds()).unwrap(), want);
}
