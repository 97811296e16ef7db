//! Tests of attribute edits and resizes.

use std::sync::Arc;

use super::clear::outside_of;
use super::*;
use crate::domain::Domain;
use crate::layout::ArraySpec;
use crate::store::{InstrumentedStore, MemoryStore, Store};

fn filled(store: Arc<dyn Store>, shape: u64) -> Array {
    let spec = ArraySpec::new(vec![shape], "uint8", vec![2]).shards(vec![4]);
    let array = Array::create(store, "a", &spec).unwrap();
    for shard in array.shards().collect::<Vec<_>>() {
        let writer = array.shard_writer(&shard).unwrap();
        writer.write_region_value(&shard, &[1]).unwrap();
        writer.commit().unwrap();
    }
    array
}

#[test]
fn a_stale_handle_shrinks_against_the_stored_shape() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let a = filled(Arc::clone(&store), 8);
    let b = Array::open(Arc::clone(&store), "a")
        .unwrap()
        .resize(vec![16])
        .unwrap();
    let writer = b.shard_writer(&b.shard(&[3]).unwrap()).unwrap();
    writer
        .write_region_value(&Domain::new(vec![12], vec![4]), &[7])
        .unwrap();
    writer.commit().unwrap();
    let small = a.resize(vec![4]).unwrap(); // a still believes the shape is 8
    assert_eq!(store.get("a/c/3").unwrap(), None);
    let again = small.resize(vec![16]).unwrap();
    let mut want = vec![1; 4];
    want.extend([0; 12]);
    assert_eq!(again.read(&again.bounds()).unwrap(), want);
}

#[test]
fn a_shape_the_format_refuses_clears_nothing_and_growing_touches_no_shard() {
    let store = Arc::new(InstrumentedStore::new(Arc::new(MemoryStore::new())));
    let spec = ArraySpec::new(vec![8, 8], "uint8", vec![2, 2]).shards(vec![4, 4]);
    let a = Array::create(store.clone(), "a", &spec).unwrap();
    for shard in a.shards().collect::<Vec<_>>() {
        let writer = a.shard_writer(&shard).unwrap();
        writer.write_region_value(&shard, &[1]).unwrap();
        writer.commit().unwrap();
    }
    // a shrink along one axis with a size the format refuses along the other
    assert!(a.resize(vec![3, u64::MAX]).is_err());
    assert_eq!(a.read(&a.bounds()).unwrap(), vec![1; 64]);
    let before = store.counts();
    let grown = a.resize(vec![1 << 20, 1 << 20]).unwrap(); // 2**36 shards: none visited
    let after = store.counts();
    assert_eq!(after.puts - before.puts, 1, "only zarr.json");
    assert_eq!(grown.layout().shape(), &[1 << 20, 1 << 20]);
}

#[test]
fn attribute_patches_keep_what_another_handle_wrote() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let a = filled(Arc::clone(&store), 4);
    let b = Array::open(Arc::clone(&store), "a").unwrap();
    let x = serde_json::json!({"x": 1, "gone": 0})
        .as_object()
        .unwrap()
        .clone();
    a.update_attributes(None, x, &[]).unwrap();
    let y = serde_json::json!({"y": 2}).as_object().unwrap().clone();
    let b = b.update_attributes(None, y, &["gone".to_string()]).unwrap();
    let attributes = &b.layout().metadata().attributes;
    assert_eq!(
        serde_json::Value::Object(attributes.clone()),
        serde_json::json!({"x": 1, "y": 2})
    );
}

/// A `zarr.json` as another tool might write it: its own formatting and key order,
/// numbers beyond 64 bits and written in other forms, a member zarrs does not model.
const FOREIGN: &str = r#"{"zarr_format":3, "node_type":"array",
 "shape" : [8],
 "data_type":"uint8",
 "chunk_grid":{"name":"regular","configuration":{"chunk_shape":[4]}},
 "chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},
 "fill_value":0,
 "codecs":[{"name":"sharding_indexed","configuration":{"chunk_shape":[2],
   "codecs":[{"name":"bytes"}],
   "index_codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"}],
   "index_location":"end"}}],
 "attributes":{"z":18446744073709551617,"neg":-1180591620717411303424,"f":0.1,
   "e":1E+2,"nested":{"deep":[1, 2.50, 36893488147419103232]},"a":"\u00e9"},
 "dimension_names":["x"],
 "storage_transformers":[]}"#;

/// `text` with the value of its top-level member `key` cut out: what must not change.
fn around(text: &str, key: &str, value_start: &str, value_end: &str) -> (String, String) {
    let at = text.find(&format!("\"{key}\"")).unwrap();
    let start = at + text[at..].find(value_start).unwrap();
    let end = start + text[start..].find(value_end).unwrap() + value_end.len();
    (text[..start].to_string(), text[end..].to_string())
}

#[test]
fn an_attribute_change_keeps_every_other_member_byte_for_byte() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let a = Array::create_from_json(Arc::clone(&store), "a", FOREIGN).unwrap();
    let set = serde_json::json!({"z": 5, "new": [1]})
        .as_object()
        .unwrap()
        .clone();
    a.update_attributes(None, set, &["f".to_string()]).unwrap();
    let text = String::from_utf8(store.get("a/zarr.json").unwrap().unwrap()).unwrap();
    let (head, tail) = around(FOREIGN, "attributes", "{", "\"}");
    assert!(text.starts_with(&head), "{text}");
    assert!(text.ends_with(&tail), "{text}");
    for kept in [
        r#""neg":-1180591620717411303424"#,
        r#""e":1E+2"#,
        r#""nested":{"deep":[1, 2.50, 36893488147419103232]}"#,
        r#""a":"\u00e9""#,
    ] {
        assert!(text.contains(kept), "{kept} changed: {text}");
    }
    let attributes: Vec<&str> = [
        "\"z\"",
        "\"neg\"",
        "\"e\"",
        "\"nested\"",
        "\"a\"",
        "\"new\"",
    ]
    .into_iter()
    .map(|k| {
        let at = text
            .find(k)
            .unwrap_or_else(|| panic!("{k} missing: {text}"));
        &text[at..]
    })
    .collect();
    assert!(
        attributes.windows(2).all(|w| w[0].len() > w[1].len()),
        "order: {text}"
    );
    assert!(!text.contains("\"f\""), "{text}");
    assert!(
        text.contains(r#""z": 5"#) || text.contains(r#""z":5"#),
        "{text}"
    );
}

#[test]
fn a_resize_changes_only_the_shape() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let a = Array::create_from_json(Arc::clone(&store), "a", FOREIGN).unwrap();
    for shape in [12, 3] {
        a.resize(vec![shape]).unwrap();
        let text = String::from_utf8(store.get("a/zarr.json").unwrap().unwrap()).unwrap();
        let (head, tail) = around(FOREIGN, "shape", "[", "]");
        assert_eq!(text, format!("{head}[{shape}]{tail}"));
    }
}

#[test]
fn outside_of_covers_the_rest_of_the_region_once() {
    let region = Domain::new(vec![0, 0], vec![4, 6]);
    let inside = Domain::new(vec![0, 0], vec![3, 2]);
    let pieces = outside_of(&region, &inside);
    let mut seen = [[0u8; 6]; 4];
    for p in &pieces {
        for i in p.origin()[0]..p.origin()[0] + p.shape()[0] {
            for j in p.origin()[1]..p.origin()[1] + p.shape()[1] {
                seen[i as usize][j as usize] += 1;
            }
        }
    }
    for (i, row) in seen.iter().enumerate() {
        for (j, n) in row.iter().enumerate() {
            let want = u8::from(!(i < 3 && j < 2));
            assert_eq!(*n, want, "({i}, {j})");
        }
    }
}

#[test]
fn attributes_given_as_text_are_stored_as_written() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let a = Array::create_from_json(Arc::clone(&store), "a", FOREIGN).unwrap();
    let b = a
        .update_attributes_json(
            Some(r#"{"k": -1180591620717411303424}"#),
            r#"{"n": 1e400}"#,
            &[],
        )
        .unwrap_err(); // zarrs' parse of the metadata refuses a number beyond f64
    assert!(matches!(b, Error::Layout(_)), "{b}");
    let a = a
        .update_attributes_json(
            Some(r#"{"k": -1180591620717411303424}"#),
            r#"{"n": [2, 1.0]}"#,
            &[],
        )
        .unwrap();
    let text = a.layout().json().unwrap().to_string();
    assert!(
        text.contains(r#""attributes":{"k": -1180591620717411303424,"n": [2, 1.0]}"#),
        "{text}"
    );
    assert_eq!(store.get("a/zarr.json").unwrap().unwrap(), text.as_bytes());
    for bad in ["[1]", "{", "1"] {
        let err = a.update_attributes_json(None, bad, &[]).unwrap_err();
        assert!(
            err.to_string().contains("attributes must be a JSON object"),
            "{err}"
        );
    }
    assert_eq!(store.get("a/zarr.json").unwrap().unwrap(), text.as_bytes());
}

#[test]
fn a_record_of_an_unfinished_shrink_is_cleared_by_the_next_resize() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let a = filled(Arc::clone(&store), 16);
    // As if a shrink to 6 had stored its shape and died before clearing.
    store
        .put("a/shardwright-resize.json", &[br#"{"extent": [16]}"#])
        .unwrap();
    let small = a.with_layout(Layout::from_json(&shape_text(&store, 6)).unwrap());
    store.put("a/zarr.json", &[&shape_text(&store, 6)]).unwrap();
    let grown = small.resize(vec![20]).unwrap();
    let mut want = vec![1; 6];
    want.extend([0; 14]);
    assert_eq!(grown.read(&grown.bounds()).unwrap(), want);
    assert_eq!(store.get("a/shardwright-resize.json").unwrap(), None);
    assert_eq!(store.get("a/c/3").unwrap(), None);
    // A record of another rank (an array made there before) is dropped; a damaged one
    // stops the resize, naming it.
    store
        .put("a/shardwright-resize.json", &[br#"{"extent": [16, 16]}"#])
        .unwrap();
    let grown = grown.resize(vec![24]).unwrap();
    assert_eq!(store.get("a/shardwright-resize.json").unwrap(), None);
    store.put("a/shardwright-resize.json", &[b"{"]).unwrap();
    let err = grown.resize(vec![4]).unwrap_err();
    let io = "I/O error on 'a/shardwright-resize.json': not the record of an unfinished resize";
    assert!(err.to_string().starts_with(io), "{err}");
    assert_eq!(Array::open(store, "a").unwrap().layout().shape(), &[24]);
}

/// The stored `zarr.json` with its shape set to `[n]`.
fn shape_text(store: &Arc<dyn Store>, n: u64) -> Vec<u8> {
    let text = String::from_utf8(store.get("a/zarr.json").unwrap().unwrap()).unwrap();
    let members = ObjectText::parse(&text).unwrap();
    members
        .edit(&[("shape".into(), format!("[{n}]"))], &[], "")
        .into_bytes()
}
