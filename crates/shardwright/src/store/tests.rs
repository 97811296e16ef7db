use super::*;
use std::sync::Arc;

fn exercise(store: &dyn Store) {
    assert_eq!(store.get("x/y").unwrap(), None);
    assert_eq!(store.size("x/y").unwrap(), None);
    store.put("x/y", &[b"abc", b"def"]).unwrap();
    assert_eq!(store.get("x/y").unwrap().unwrap(), b"abcdef");
    assert_eq!(store.size("x/y").unwrap(), Some(6));
    assert_eq!(store.get_range("x/y", 2..4).unwrap().unwrap(), b"cd");
    assert!(matches!(
        store.get_range("x/y", 2..9),
        Err(StoreError::Range { .. })
    ));
    store.put("x/y", &[b"new"]).unwrap();
    assert_eq!(store.get("x/y").unwrap().unwrap(), b"new");
    store.delete("x/y").unwrap();
    store.delete("x/y").unwrap();
    assert_eq!(store.get("x/y").unwrap(), None);
    assert!(matches!(
        store.get("../etc/passwd"),
        Err(StoreError::InvalidKey(_))
    ));
    assert!(matches!(
        store.put("a//b", &[]),
        Err(StoreError::InvalidKey(_))
    ));
}

#[test]
fn memory_store_behaves() {
    exercise(&MemoryStore::new());
}

#[test]
fn filesystem_store_behaves_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path());
    exercise(&store);
    store.put("a/b/c", &[b"1"]).unwrap();
    let leftovers: Vec<_> = walk(dir.path())
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(filesystem::TEMP_SUFFIX))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn filesystem_put_failure_keeps_old_value_and_removes_temp() {
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path());
    store.put("k/v", &[b"old"]).unwrap();
    // A folder where the file should go makes the rename fail.
    std::fs::create_dir_all(dir.path().join("k/dir/inner")).unwrap();
    assert!(store.put("k/dir", &[b"new"]).is_err());
    assert_eq!(store.get("k/v").unwrap().unwrap(), b"old");
    let leftovers: Vec<_> = walk(dir.path())
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(filesystem::TEMP_SUFFIX))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn instrumented_store_counts() {
    let store = InstrumentedStore::new(Arc::new(MemoryStore::new()));
    store.put("a", &[b"12", b"345"]).unwrap();
    store.get("a").unwrap();
    store.get_range("a", 0..2).unwrap();
    store.delete("a").unwrap();
    let c = store.counts();
    assert_eq!((c.puts, c.gets, c.range_gets, c.deletes), (1, 1, 1, 1));
    assert_eq!((c.bytes_written, c.bytes_read), (5, 7));
    assert_eq!(store.events()[0], IoEvent::Put("a".into(), 5));
    store.reset();
    assert_eq!(store.counts().calls(), 0);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

fn exercise_conditional(store: &dyn Store) {
    store.put_if("k/v", &[b"one"], None).unwrap();
    assert!(matches!(
        store.put_if("k/v", &[b"two"], None),
        Err(StoreError::Conflict { .. })
    ));
    let (bytes, version) = store.get_versioned("k/v").unwrap().unwrap();
    assert_eq!(bytes, b"one");
    store.put_if("k/v", &[b"two"], Some(&version)).unwrap();
    assert!(matches!(
        store.put_if("k/v", &[b"three"], Some(&version)),
        Err(StoreError::Conflict { .. })
    ));
    store.put("k/v", &[b"four"]).unwrap();
    let (bytes, newer) = store.get_versioned("k/v").unwrap().unwrap();
    assert_eq!(bytes, b"four");
    assert_ne!(
        newer, version,
        "an unconditional put changes the version too"
    );
    assert!(store.get_versioned("k/none").unwrap().is_none());
}

#[test]
fn conditional_puts_check_the_version() {
    exercise_conditional(&MemoryStore::new());
    let dir = tempfile::tempdir().unwrap();
    exercise_conditional(&FilesystemStore::new(dir.path()));
}

/// Threads incrementing a counter with read-modify-conditional-write never lose one.
fn counter_race(store: Arc<dyn Store>) {
    store.put("c/n", &[&0u64.to_le_bytes()]).unwrap();
    let successes = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..50 {
                    let (bytes, version) = store.get_versioned("c/n").unwrap().unwrap();
                    let n = u64::from_le_bytes(bytes.try_into().unwrap());
                    match store.put_if("c/n", &[&(n + 1).to_le_bytes()], Some(&version)) {
                        Ok(()) => {
                            successes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        Err(StoreError::Conflict { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
    });
    let n = u64::from_le_bytes(store.get("c/n").unwrap().unwrap().try_into().unwrap());
    assert_eq!(n, successes.into_inner());
}

#[test]
fn racing_conditional_puts_lose_no_update() {
    counter_race(Arc::new(MemoryStore::new()));
    let dir = tempfile::tempdir().unwrap();
    counter_race(Arc::new(FilesystemStore::new(dir.path())));
}

fn exercise_conditional_delete(store: &dyn Store) {
    store.delete_if("d/v", None).unwrap();
    store.put("d/v", &[b"x"]).unwrap();
    assert!(matches!(
        store.delete_if("d/v", None),
        Err(StoreError::Conflict { .. })
    ));
    let (_, version) = store.get_versioned("d/v").unwrap().unwrap();
    store.put("d/v", &[b"y"]).unwrap();
    assert!(matches!(
        store.delete_if("d/v", Some(&version)),
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(
        store.get("d/v").unwrap().unwrap(),
        b"y",
        "a newer value survives"
    );
    let (_, version) = store.get_versioned("d/v").unwrap().unwrap();
    store.delete_if("d/v", Some(&version)).unwrap();
    assert!(store.get("d/v").unwrap().is_none());
}

/// Regression: a merge that emptied a shard deleted it unconditionally, losing a
/// concurrent writer's newer shard.
#[test]
fn conditional_deletes_check_the_version() {
    exercise_conditional_delete(&MemoryStore::new());
    let dir = tempfile::tempdir().unwrap();
    exercise_conditional_delete(&FilesystemStore::new(dir.path()));
}
