//! The object-store backend over object_store's in-memory store: the Store contract, the
//! I/O invariants of shard writing, and merges that cannot delete.

use std::sync::Arc;

use object_store::memory::InMemory;
use shardwright::store::{InstrumentedStore, Store, StoreError};
use shardwright::{Array, ArraySpec, Domain};

use super::ObjectStoreBackend;

fn backend() -> ObjectStoreBackend {
    ObjectStoreBackend::new(Arc::new(InMemory::new()), "memory://test")
}

fn spec() -> ArraySpec {
    ArraySpec::new(vec![64, 64], "uint16", vec![8, 8]).shards(vec![32, 32])
}

fn block(d: &Domain, f: impl Fn(u64, u64) -> u16) -> Vec<u8> {
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
fn the_store_contract_holds() {
    let store = backend();
    assert_eq!(store.get("a/b").unwrap(), None);
    assert_eq!(store.size("a/b").unwrap(), None);
    assert_eq!(store.get_range("a/b", 0..1).unwrap(), None);
    store.put("a/b", &[b"hello ", b"", b"world"]).unwrap();
    assert_eq!(store.get("a/b").unwrap().unwrap(), b"hello world");
    assert_eq!(store.size("a/b").unwrap(), Some(11));
    assert_eq!(store.get_range("a/b", 6..11).unwrap().unwrap(), b"world");
    assert_eq!(store.get_range("a/b", 3..3).unwrap().unwrap(), b"");
    assert!(matches!(
        store.get_range("a/b", 6..12),
        Err(StoreError::Range { size: 11, .. })
    ));
    store.delete("a/b").unwrap();
    store.delete("a/b").unwrap(); // a missing key is not an error
    assert_eq!(store.get("a/b").unwrap(), None);
    assert!(matches!(store.get("../x"), Err(StoreError::InvalidKey(_))));
    assert!(matches!(store.put("", &[]), Err(StoreError::InvalidKey(_))));
}

#[test]
fn conditional_puts_and_deletes_detect_other_writers() {
    let store = backend();
    store.put_if("k", &[b"1"], None).unwrap();
    assert!(matches!(
        store.put_if("k", &[b"2"], None),
        Err(StoreError::Conflict { .. })
    ));
    let (_, v1) = store.get_versioned("k").unwrap().unwrap();
    store.put_if("k", &[b"2"], Some(&v1)).unwrap();
    assert!(matches!(
        store.put_if("k", &[b"3"], Some(&v1)),
        Err(StoreError::Conflict { .. })
    ));
    let (bytes, v2) = store.get_versioned("k").unwrap().unwrap();
    assert_eq!(bytes, b"2");
    assert_ne!(v1, v2);
    // no conditional delete: refused rather than raced
    let refused = store.delete_if("k", Some(&v2)).unwrap_err().to_string();
    assert!(refused.contains("no conditional delete"), "{refused}");
    assert!(matches!(
        store.delete_if("k", None),
        Err(StoreError::Conflict { .. })
    ));
    store.delete("k").unwrap();
    store.delete_if("k", None).unwrap();
    // a version of a key that vanished: the update finds nothing to match
    assert!(matches!(
        store.put_if("k", &[b"4"], Some(&v2)),
        Err(StoreError::Conflict { .. })
    ));
    assert!(!store.deletes_conditionally());
}

#[test]
fn a_fully_written_shard_is_one_put_and_no_get() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(backend())));
    let array = Array::create(store.clone(), "p/a.zarr", &spec()).unwrap();
    store.reset();
    for shard in array.shards() {
        let w = array.shard_writer(&shard).unwrap();
        for c in w.inner_chunks() {
            w.write_chunk(&c, &block(&c, |y, x| (y * 64 + x) as u16))
                .unwrap();
        }
        let stats = w.commit().unwrap();
        assert_eq!((stats.puts, stats.gets), (1, 0));
    }
    let counts = store.counts();
    assert_eq!((counts.puts, counts.gets, counts.range_gets), (4, 0, 0));
    let all = array.read(&array.bounds()).unwrap();
    let expected: Vec<u16> = (0..64 * 64).map(|i| i as u16).collect();
    assert_eq!(values(&all), expected);
}

#[test]
fn a_partial_rewrite_merges_with_one_get_and_one_conditional_put() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(backend())));
    let array = Array::create(store.clone(), "a.zarr", &spec()).unwrap();
    let whole = array.bounds();
    let w = array.shard_writer(&array.shard(&[0, 0]).unwrap()).unwrap();
    for c in w.inner_chunks() {
        w.write_chunk(&c, &block(&c, |_, _| 1)).unwrap();
    }
    w.commit().unwrap();
    store.reset();
    let region = Domain::new(vec![3, 5], vec![10, 7]);
    let w = array.shard_writer(&array.shard(&[0, 0]).unwrap()).unwrap();
    w.write_region(&region, &block(&region, |_, _| 9)).unwrap();
    let stats = w.commit().unwrap();
    assert_eq!((stats.gets, stats.puts, stats.chunks_partial), (1, 1, 4));
    let got = values(&array.read(&whole).unwrap());
    for y in 0..64u64 {
        for x in 0..64u64 {
            let inside = (3..13).contains(&y) && (5..12).contains(&x);
            let first = y < 32 && x < 32;
            let want = if inside { 9 } else { u16::from(first) };
            assert_eq!(got[(y * 64 + x) as usize], want, "at {y},{x}");
        }
    }
}

#[test]
fn a_merge_that_empties_a_shard_stores_an_empty_shard_conditionally() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(backend())));
    let array = Array::create(store.clone(), "a.zarr", &spec()).unwrap();
    let shard = array.shard(&[1, 1]).unwrap();
    let w = array.shard_writer(&shard).unwrap();
    let region = Domain::new(vec![40, 40], vec![4, 4]);
    w.write_region(&region, &block(&region, |_, _| 5)).unwrap();
    w.commit().unwrap();
    store.reset();
    // the fill value over what was written: the merged shard holds nothing
    let w = array.shard_writer(&shard).unwrap();
    w.write_region(&region, &block(&region, |_, _| 0)).unwrap();
    let stats = w.commit().unwrap();
    assert_eq!((stats.gets, stats.puts, stats.deletes), (1, 1, 0));
    let key = array.shard_key(&[1, 1]);
    let stored = store
        .get(&key)
        .unwrap()
        .expect("an empty shard, not a deletion");
    assert!(shardwright::format::shard::split(array.layout(), &stored)
        .unwrap()
        .iter()
        .all(Option::is_none));
    assert!(values(&array.read(&shard).unwrap()).iter().all(|&v| v == 0));
}

#[test]
fn the_fill_chunk_of_an_unsharded_array_is_stored_where_it_cannot_be_deleted() {
    let store = Arc::new(backend());
    let array = Array::create(
        store.clone(),
        "u.zarr",
        &ArraySpec::new(vec![16], "uint16", vec![8]),
    )
    .unwrap();
    let chunk = array.shard(&[0]).unwrap();
    let part = Domain::new(vec![2], vec![3]);
    let w = array.shard_writer(&chunk).unwrap();
    w.write_region(&part, &4u16.to_ne_bytes().repeat(3))
        .unwrap();
    w.commit().unwrap();
    let w = array.shard_writer(&chunk).unwrap();
    w.write_region(&part, &[0; 6]).unwrap();
    w.commit().unwrap();
    assert!(store.get(&array.shard_key(&[0])).unwrap().is_some());
    assert!(values(&array.read(&chunk).unwrap()).iter().all(|&v| v == 0));
}

#[test]
fn concurrent_writers_of_one_shard_lose_nothing() {
    let store: Arc<dyn Store> = Arc::new(backend());
    let array = Arc::new(Array::create(store, "a.zarr", &spec()).unwrap());
    let shard = array.shard(&[0, 0]).unwrap();
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let (array, shard) = (array.clone(), shard.clone());
            scope.spawn(move || {
                for i in 0..8u64 {
                    // 4 threads × 8 rows of 5 columns each, all unaligned, all disjoint
                    let region = Domain::new(vec![t * 8 + i, 3], vec![1, 5]);
                    let w = array.shard_writer(&shard).unwrap();
                    w.write_region(&region, &block(&region, |_, _| (t * 8 + i + 1) as u16))
                        .unwrap();
                    w.commit().unwrap();
                }
            });
        }
    });
    let got = values(&array.read(&shard).unwrap());
    for y in 0..32u64 {
        for x in 0..32u64 {
            let want = if (3..8).contains(&x) { y + 1 } else { 0 };
            assert_eq!(u64::from(got[(y * 32 + x) as usize]), want, "at {y},{x}");
        }
    }
}

#[test]
fn urls_name_their_store_and_path() {
    let (store, path) = ObjectStoreBackend::from_url("memory:///x/y.zarr", &[]).unwrap();
    assert_eq!((store.url(), path.as_str()), ("memory://", "x/y.zarr"));
    // the process's memory store is shared by every memory:// URL
    store.put("x/y.zarr/k", &[b"v"]).unwrap();
    let (again, _) = ObjectStoreBackend::from_url("memory:///other", &[]).unwrap();
    assert_eq!(again.get("x/y.zarr/k").unwrap().unwrap(), b"v");
    assert_eq!(again.delete_prefix("x").unwrap(), 1);
    let (s3, path) = ObjectStoreBackend::from_url(
        "s3://bucket/deep/a.zarr",
        &[("region", "us-east-1"), ("skip_signature", "true")],
    )
    .unwrap();
    assert_eq!((s3.url(), path.as_str()), ("s3://bucket", "deep/a.zarr"));
    let bad = ObjectStoreBackend::from_url("s3://bucket/a", &[("no_such_option", "1")]);
    assert!(bad.unwrap_err().to_string().contains("no_such_option"));
}

#[test]
fn option_keys_are_accepted_in_every_spelling_object_store_reads() {
    let cases: [(&str, &[(&str, &str)]); 3] = [
        (
            "s3://bucket/a.zarr",
            &[
                ("AWS_REGION", "us-east-1"),
                ("Aws_Endpoint", "http://127.0.0.1:9"),
                ("AWS_ALLOW_HTTP", "true"),
                ("SKIP_SIGNATURE", "true"),
            ],
        ),
        ("gs://bucket/a.zarr", &[("GOOGLE_SKIP_SIGNATURE", "true")]),
        (
            "az://container/a.zarr",
            &[
                ("AZURE_STORAGE_ACCOUNT_NAME", "account"),
                ("Azure_Skip_Signature", "true"),
            ],
        ),
    ];
    for (url, options) in cases {
        let made = ObjectStoreBackend::from_url(url, options);
        assert!(made.is_ok(), "{url} {options:?}: {}", made.unwrap_err());
    }
    // an unknown key is refused as it was given
    let bad = ObjectStoreBackend::from_url("s3://bucket/a", &[("AWS_NO_SUCH", "1")]);
    assert!(bad.unwrap_err().to_string().contains("\"AWS_NO_SUCH\""));
}

#[test]
fn urls_with_a_query_or_a_host_for_memory_and_root_deletes_are_refused() {
    for bad in ["s3://b/a.zarr?x=1", "s3://b/a#frag", "memory://host/a"] {
        let err = ObjectStoreBackend::from_url(bad, &[]).unwrap_err();
        assert!(matches!(err, StoreError::Config { .. }), "{bad}: {err}");
    }
    let (store, path) = ObjectStoreBackend::from_url("memory:///a%20b/c", &[]).unwrap();
    assert_eq!(path, "a b/c");
    for root in ["", "/"] {
        assert!(matches!(
            store.delete_prefix(root),
            Err(StoreError::Config { .. })
        ));
    }
}

#[test]
fn a_create_in_a_missing_bucket_is_an_error_not_a_conflict() {
    let store = ObjectStoreBackend::new(Arc::new(MissingBucket), "s3://nowhere");
    let err = store.put_if("k", &[b"x"], None).unwrap_err();
    assert!(matches!(err, StoreError::Io { .. }), "{err}");
}

/// A store whose every put answers "not found", as S3 does for a missing bucket.
#[derive(Debug)]
struct MissingBucket;

impl std::fmt::Display for MissingBucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MissingBucket")
    }
}

type Listing = futures::stream::BoxStream<'static, object_store::Result<object_store::ObjectMeta>>;
type Paths = futures::stream::BoxStream<'static, object_store::Result<object_store::path::Path>>;

#[async_trait::async_trait]
impl object_store::ObjectStore for MissingBucket {
    async fn put_opts(
        &self,
        location: &object_store::path::Path,
        _: object_store::PutPayload,
        _: object_store::PutOptions,
    ) -> object_store::Result<object_store::PutResult> {
        Err(object_store::Error::NotFound {
            path: location.to_string(),
            source: "NoSuchBucket".into(),
        })
    }
    async fn put_multipart_opts(
        &self,
        _: &object_store::path::Path,
        _: object_store::PutMultipartOptions,
    ) -> object_store::Result<Box<dyn object_store::MultipartUpload>> {
        unimplemented!("not used by the test")
    }
    async fn get_opts(
        &self,
        _: &object_store::path::Path,
        _: object_store::GetOptions,
    ) -> object_store::Result<object_store::GetResult> {
        unimplemented!("not used by the test")
    }
    fn delete_stream(&self, _: Paths) -> Paths {
        unimplemented!("not used by the test")
    }
    fn list(&self, _: Option<&object_store::path::Path>) -> Listing {
        unimplemented!("not used by the test")
    }
    async fn list_with_delimiter(
        &self,
        _: Option<&object_store::path::Path>,
    ) -> object_store::Result<object_store::ListResult> {
        unimplemented!("not used by the test")
    }
    async fn copy_opts(
        &self,
        _: &object_store::path::Path,
        _: &object_store::path::Path,
        _: object_store::CopyOptions,
    ) -> object_store::Result<()> {
        unimplemented!("not used by the test")
    }
}

#[cfg(feature = "aws")]
#[test]
fn errors_name_the_store_the_key_and_the_status() {
    // Nothing listens on port 9 and nothing is retried: the request fails at once, and the
    // message says where.
    let s3 = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name("bucket")
        .with_region("us-east-1")
        .with_endpoint("http://127.0.0.1:9")
        .with_allow_http(true)
        .with_access_key_id("k")
        .with_secret_access_key("s")
        .with_retry(object_store::RetryConfig {
            max_retries: 0,
            ..Default::default()
        })
        .build()
        .unwrap();
    let store = ObjectStoreBackend::new(Arc::new(s3), "s3://bucket");
    let err = store.get("a.zarr/zarr.json").unwrap_err().to_string();
    assert!(err.contains("s3://bucket"), "{err}");
    assert!(err.contains("a.zarr/zarr.json"), "{err}");
}

#[test]
fn endpoints_that_are_not_http_urls_are_refused_not_a_panic() {
    let refused = |options: &[(&str, &str)]| match ObjectStoreBackend::from_url("s3://b/a", options)
    {
        Err(StoreError::Config { message, .. }) => message,
        other => panic!("expected a Config error, got {other:?}"),
    };
    // object_store 0.14.2 panics ("request valid") on the first request to such an endpoint.
    let message = refused(&[("endpoint", "not a url")]);
    assert!(
        message.contains("endpoint=\"not a url\" is not an http(s) URL"),
        "{message}"
    );
    let message = refused(&[("aws_endpoint", "ftp://host")]);
    assert!(message.contains("is not an http(s) URL"), "{message}");
    if std::env::var("AWS_ALLOW_HTTP").is_err() && std::env::var("ALLOW_HTTP").is_err() {
        let message = refused(&[("endpoint", "http://127.0.0.1:9")]);
        assert!(
            message.contains("plain HTTP: also pass allow_http='true'"),
            "{message}"
        );
    }
    let allowed = [("endpoint", "http://127.0.0.1:9"), ("allow_http", "true")];
    assert!(ObjectStoreBackend::from_url("s3://b/a", &allowed).is_ok());
}
