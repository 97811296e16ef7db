//! Transactions: region writes across shards, read-your-writes, memory limits, early commits.

use std::sync::Arc;

use shardwright::store::{InstrumentedStore, MemoryStore};
use shardwright::{Array, ArraySpec, Domain, Error, Transaction, TransactionOptions};

fn array(store: Arc<InstrumentedStore>, shape: Vec<u64>) -> Array {
    let spec = ArraySpec::new(shape, "uint8", vec![4, 4]).shards(vec![8, 8]);
    let array = Array::create(store.clone(), "t.zarr", &spec).unwrap();
    store.reset();
    array
}

#[test]
fn writes_split_across_shards_are_stored_once_each_and_nothing_before_commit() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let array = array(store.clone(), vec![16, 16]);
    let tx = Transaction::new(array.clone(), TransactionOptions::default());
    let a = Domain::new(vec![2, 2], vec![12, 12]);
    tx.write(&a, &[1; 144]).unwrap();
    let b = Domain::new(vec![6, 6], vec![4, 4]);
    tx.write_value(&b, &[2]).unwrap();
    assert_eq!(store.counts().puts, 0);
    let read = tx.read(&Domain::new(vec![5, 5], vec![2, 2])).unwrap();
    assert_eq!(read, vec![1, 1, 1, 2]);
    let stats = tx.commit().unwrap();
    assert_eq!((stats.shards_written, stats.commit.puts), (4, 4));
    assert_eq!(store.counts().puts, 4);
    let all = array.read(&array.bounds()).unwrap();
    for y in 0..16usize {
        for x in 0..16usize {
            let want = if (6..10).contains(&y) && (6..10).contains(&x) {
                2
            } else if (2..14).contains(&y) && (2..14).contains(&x) {
                1
            } else {
                0
            };
            assert_eq!(all[y * 16 + x], want);
        }
    }
}

#[test]
fn an_aborted_transaction_stores_nothing() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let array = array(store.clone(), vec![16, 16]);
    let tx = Transaction::new(array, TransactionOptions::default());
    tx.write(&Domain::new(vec![0, 0], vec![16, 16]), &[3; 256])
        .unwrap();
    tx.abort();
    assert_eq!(store.counts().calls(), 0);
}

#[test]
fn the_memory_limit_fails_the_write_that_crosses_it() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let array = array(store.clone(), vec![64, 64]);
    let tx = Transaction::new(array, TransactionOptions::default().memory_limit(2000));
    // Partial chunks are kept raw: each costs its raw size plus a bitmask.
    let err = (0..16u64)
        .map(|i| tx.write(&Domain::new(vec![i * 4, 0], vec![1, 64]), &[7; 64]))
        .find_map(Result::err)
        .expect("the limit is crossed");
    assert!(matches!(err, Error::TooLarge { limit: 2000, .. }), "{err}");
    assert!(
        tx.write(&Domain::new(vec![0, 0], vec![1, 1]), &[1])
            .is_err(),
        "failed for good"
    );
    assert!(tx.commit().is_err());
    assert_eq!(store.counts().puts, 0);
}

#[test]
fn early_commit_streams_through_an_array_in_bounded_memory() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let array = array(store.clone(), vec![64, 64]);
    let tx = Transaction::new(
        array.clone(),
        TransactionOptions::default()
            .memory_limit(4096)
            .early_commit(true),
    );
    for row in 0..64u64 {
        tx.write(&Domain::new(vec![row, 0], vec![1, 64]), &[row as u8; 64])
            .unwrap();
    }
    let stats = tx.commit().unwrap();
    assert_eq!(
        (stats.shards_written, stats.shards_committed_early),
        (64, 64)
    );
    assert_eq!((stats.commit.puts, stats.commit.gets), (64, 0));
    let all = array.read(&array.bounds()).unwrap();
    assert!(all
        .chunks(64)
        .enumerate()
        .all(|(r, row)| row.iter().all(|v| *v == r as u8)));
}

#[test]
fn absorbed_shard_writers_stage_into_the_transaction() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let array = array(store.clone(), vec![8, 8]);
    let tx = Transaction::new(array.clone(), TransactionOptions::default());
    tx.write(&Domain::new(vec![0, 0], vec![8, 8]), &[1; 64])
        .unwrap();
    let shard = array.shard(&[0, 0]).unwrap();
    let w = tx.shard_writer(&shard).unwrap();
    w.write_region(&Domain::new(vec![1, 1], vec![2, 2]), &[5; 4])
        .unwrap();
    tx.absorb(w).unwrap();
    let dropped = tx.shard_writer(&shard).unwrap();
    dropped
        .write_region(&Domain::new(vec![0, 0], vec![1, 1]), &[9])
        .unwrap();
    drop(dropped);
    assert_eq!(store.counts().calls(), 0, "no I/O before commit");
    tx.commit().unwrap();
    let all = array.read(&array.bounds()).unwrap();
    assert_eq!(all[0], 1);
    assert_eq!(all[9], 5);
    assert_eq!(all.iter().filter(|v| **v == 5).count(), 4);
}

/// Regression: an early commit that failed dropped the shard's staged data, and a later
/// commit reported success without it.
#[test]
fn a_failed_early_commit_fails_the_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn shardwright::Store> =
        Arc::new(shardwright::FilesystemStore::new(dir.path()));
    let spec = ArraySpec::new(vec![8, 8], "uint8", vec![2, 2]).shards(vec![4, 4]);
    let array = Array::create(store, "", &spec).unwrap();
    std::fs::create_dir_all(dir.path().join("c/0/0")).unwrap(); // the put of shard (0, 0) fails
    let tx = Transaction::new(array, TransactionOptions::default().early_commit(true));
    assert!(tx
        .write(&Domain::new(vec![0, 0], vec![4, 4]), &[1; 16])
        .is_err());
    assert!(tx
        .write(&Domain::new(vec![4, 4], vec![4, 4]), &[2; 16])
        .is_err());
    assert!(tx.commit().is_err());
}
