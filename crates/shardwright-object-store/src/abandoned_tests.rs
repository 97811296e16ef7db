//! Abandoned multipart uploads over object_store's in-memory store: markers while an
//! upload lives, none after it ends, and the sweep by age.

use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use object_store::memory::InMemory;
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::ObjectStore;
use shardwright::store::{Store, StoreError};

use super::{block_on, ObjectStoreBackend, PART_BYTES};

fn recorded() -> (Arc<InMemory>, ObjectStoreBackend) {
    let memory = Arc::new(InMemory::new());
    let backend = ObjectStoreBackend::with_multipart(memory.clone(), "memory://test");
    (memory, backend)
}

fn keys(memory: &InMemory) -> Vec<String> {
    let mut keys: Vec<String> = block_on(memory.list(None).try_collect::<Vec<_>>())
        .unwrap()
        .into_iter()
        .map(|m| m.location.to_string())
        .collect();
    keys.sort();
    keys
}

/// More than a part: the upload begins (a part is sent) as soon as this is appended.
fn more_than_a_part() -> Vec<u8> {
    vec![5u8; PART_BYTES + 10]
}

#[test]
fn an_upload_is_marked_while_it_lives_and_not_after_it_completes_or_aborts() {
    let (memory, store) = recorded();
    let mut upload = store.begin_upload("a.zarr/c/0/0").unwrap().unwrap();
    upload.append(&[&more_than_a_part()]).unwrap();
    let marked = keys(&memory);
    assert_eq!(marked.len(), 1, "{marked:?}");
    assert!(
        marked[0].starts_with("a.zarr/c/0/.0.") && marked[0].ends_with(".shardwright-upload"),
        "{marked:?}"
    );
    upload.complete(None).unwrap();
    assert_eq!(keys(&memory), ["a.zarr/c/0/0"]);
    assert_eq!(
        store.size("a.zarr/c/0/0").unwrap(),
        Some(PART_BYTES as u64 + 10)
    );

    let mut upload = store.begin_upload("a.zarr/c/0/1").unwrap().unwrap();
    upload.append(&[&more_than_a_part()]).unwrap();
    assert_eq!(keys(&memory).len(), 2);
    drop(upload); // given up: aborted, and its marker removed
    assert_eq!(keys(&memory), ["a.zarr/c/0/0"]);
    // A shard smaller than a part is one plain put: no upload, no marker.
    let mut upload = store.begin_upload("a.zarr/c/0/2").unwrap().unwrap();
    upload.append(&[b"small"]).unwrap();
    assert_eq!(keys(&memory).len(), 1);
    upload.complete(None).unwrap();
    assert_eq!(keys(&memory), ["a.zarr/c/0/0", "a.zarr/c/0/2"]);
}

#[test]
fn the_sweep_aborts_a_killed_writers_upload_once_it_is_old_enough() {
    let (memory, store) = recorded();
    let mut killed = store.begin_upload("a.zarr/c/1/0").unwrap().unwrap();
    killed.append(&[&more_than_a_part()]).unwrap();
    std::mem::forget(killed); // what SIGKILL leaves: neither completed nor aborted
    let mut live = store.begin_upload("a.zarr/c/1/1").unwrap().unwrap();
    live.append(&[&more_than_a_part()]).unwrap();

    // Younger than the threshold: both left alone (a live writer cannot be told apart).
    assert!(store
        .remove_abandoned_uploads("a.zarr", Duration::from_secs(3600))
        .unwrap()
        .is_empty());
    let found = store.abandoned_uploads("a.zarr", Duration::ZERO).unwrap();
    assert_eq!(
        found.iter().map(|u| u.key.as_str()).collect::<Vec<_>>(),
        ["a.zarr/c/1/0", "a.zarr/c/1/1"]
    );
    live.append(&[b"the end"]).unwrap();
    live.complete(None).unwrap();

    // The killed one, now past a zero threshold: aborted, its marker removed.
    let aborted = store.remove_abandoned_uploads("", Duration::ZERO).unwrap();
    assert_eq!(aborted.len(), 1, "{aborted:?}");
    let upload = &aborted[0];
    assert_eq!(upload.key, "a.zarr/c/1/0");
    assert!(upload.marker.starts_with("a.zarr/c/1/.0."), "{upload:?}");
    assert!(
        block_on(memory.abort_multipart(&Path::from("a.zarr/c/1/0"), &upload.upload_id)).is_err(),
        "the upload no longer exists"
    );
    assert_eq!(keys(&memory), ["a.zarr/c/1/1"]);
    assert!(store.get("a.zarr/c/1/0").unwrap().is_none());
    assert!(store
        .abandoned_uploads("", Duration::ZERO)
        .unwrap()
        .is_empty());
}

#[test]
fn a_live_upload_aborted_by_a_too_eager_sweep_fails_its_commit_and_stores_nothing() {
    let (memory, store) = recorded();
    store.put("a.zarr/c/0", &[b"previous"]).unwrap();
    let mut live = store.begin_upload("a.zarr/c/0").unwrap().unwrap();
    live.append(&[&more_than_a_part()]).unwrap();
    assert_eq!(
        store
            .remove_abandoned_uploads("a.zarr", Duration::ZERO)
            .unwrap()
            .len(),
        1
    );
    assert!(live.complete(None).is_err());
    assert_eq!(store.get("a.zarr/c/0").unwrap().unwrap(), b"previous");
    drop(live);
    assert_eq!(keys(&memory), ["a.zarr/c/0"]);
}

#[test]
fn a_backend_that_cannot_abort_by_id_says_so() {
    let store = ObjectStoreBackend::new(Arc::new(InMemory::new()), "memory://plain");
    let err = store
        .remove_abandoned_uploads("", Duration::ZERO)
        .unwrap_err();
    assert!(matches!(err, StoreError::Config { .. }), "{err}");
    assert!(err.to_string().contains("memory://plain"), "{err}");
    // Its uploads still stream, unrecorded.
    let mut upload = store.begin_upload("k").unwrap().unwrap();
    upload.append(&[&more_than_a_part()]).unwrap();
    upload.complete(None).unwrap();
    assert_eq!(store.size("k").unwrap(), Some(PART_BYTES as u64 + 10));
}

#[test]
fn stores_from_urls_record_their_uploads() {
    let (store, path) = ObjectStoreBackend::from_url("memory:///abandoned-tests", &[]).unwrap();
    let key = format!("{path}/x.zarr/c/0");
    let mut upload = store.begin_upload(&key).unwrap().unwrap();
    upload.append(&[&more_than_a_part()]).unwrap();
    std::mem::forget(upload);
    let aborted = store
        .remove_abandoned_uploads(&path, Duration::ZERO)
        .unwrap();
    assert_eq!(
        aborted.iter().map(|u| u.key.as_str()).collect::<Vec<_>>(),
        [key.as_str()]
    );
    #[cfg(feature = "aws")]
    {
        let (s3, _) = ObjectStoreBackend::from_url(
            "s3://bucket/p",
            &[
                ("region", "us-east-1"),
                ("endpoint", "http://127.0.0.1:9"),
                ("allow_http", "true"),
            ],
        )
        .unwrap();
        assert!(s3.multipart.is_some());
    }
}
