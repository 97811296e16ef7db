//! Changing an existing array: its user attributes and its shape.
//!
//! Both rewrite the array's `zarr.json`, conditionally on the version read (of two
//! editors, the second retries on the first one's metadata, so neither change is lost
//! silently), and rewrite only the member they change: every other member keeps its
//! text byte for byte (integers beyond 64 bits, numbers written as `1E+2`, key order,
//! formatting), and so do the attributes an edit does not set. [`Array::resize`] also
//! clears what a smaller shape leaves outside, after the new shape is stored (see
//! `clear`), so growing again later shows the fill value, not old data.
//!
//! The clearing is not conditional: a resize must not run while another handle resizes
//! or writes the array (the clearing of one shrink could remove what another handle's
//! grow wrote meanwhile); the `zarr.json` edit itself never loses either change.

mod clear;

use serde_json::{Map, Value};

use crate::array::{Array, METADATA_KEY};
use crate::error::{Error, Result};
use crate::layout::object_text::ObjectText;
use crate::layout::{Layout, LayoutError};
use crate::store::{join, StoreError};

/// Attempts at a conditional metadata rewrite before [`Error::Conflict`].
const ATTEMPTS: u32 = 10;

impl Array {
    /// The array with its user attributes replaced by `attributes` (persisted in its
    /// `zarr.json`; everything else in it is kept).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, MemoryStore};
    /// let array = Array::create(Arc::new(MemoryStore::new()), "a", &ArraySpec::new(vec![4], "uint8", vec![2])).unwrap();
    /// let attrs = serde_json::json!({"units": "nm"}).as_object().unwrap().clone();
    /// let array = array.with_attributes(attrs).unwrap();
    /// assert_eq!(array.layout().metadata().attributes["units"], "nm");
    /// assert_eq!(Array::open(array.store().clone(), "a").unwrap().layout().metadata().attributes["units"], "nm");
    /// ```
    ///
    /// # Errors
    /// [`Error::NotFound`] if the array's `zarr.json` is gone, [`Error::Conflict`] if other
    /// writers kept changing it, [`Error::Store`] if storage fails.
    pub fn with_attributes(&self, attributes: Map<String, Value>) -> Result<Array> {
        self.update_attributes(Some(attributes), Map::new(), &[])
    }

    /// The array with its user attributes changed: `set` added or replaced and `remove`d
    /// keys dropped, on the attributes stored now (`replace`: on none), so changes made
    /// meanwhile through another handle are kept. The attributes not set keep their
    /// stored text (see [`update_attributes_json`](Self::update_attributes_json) to set
    /// values a [`Value`] cannot hold, such as integers beyond 64 bits).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, MemoryStore};
    /// let store = Arc::new(MemoryStore::new());
    /// let a = Array::create(store.clone(), "a", &ArraySpec::new(vec![4], "uint8", vec![2])).unwrap();
    /// let b = Array::open(store.clone(), "a").unwrap();
    /// let x = serde_json::json!({"x": 1}).as_object().unwrap().clone();
    /// let y = serde_json::json!({"y": 2}).as_object().unwrap().clone();
    /// a.update_attributes(None, x, &[]).unwrap();
    /// let b = b.update_attributes(None, y, &[]).unwrap(); // keeps a's "x"
    /// assert_eq!(b.layout().metadata().attributes.len(), 2);
    /// ```
    ///
    /// # Errors
    /// As [`with_attributes`](Self::with_attributes).
    pub fn update_attributes(
        &self,
        replace: Option<Map<String, Value>>,
        set: Map<String, Value>,
        remove: &[String],
    ) -> Result<Array> {
        let text = |map: &Map<String, Value>| {
            serde_json::to_string(map)
                .map_err(|e| LayoutError::Invalid(format!("attributes do not serialize: {e}")))
        };
        let replace = replace.as_ref().map(text).transpose()?;
        self.update_attributes_json(replace.as_deref(), &text(&set)?, remove)
    }

    /// As [`update_attributes`](Self::update_attributes), with `replace` and `set` given
    /// as the text of JSON objects: each value is stored as written there, so integers
    /// of any size keep every digit. The key order is kept: stored keys stay where they
    /// are, new ones follow in the order given.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, MemoryStore};
    /// let store = Arc::new(MemoryStore::new());
    /// let a = Array::create(store.clone(), "a", &ArraySpec::new(vec![4], "uint8", vec![2])).unwrap();
    /// a.update_attributes_json(None, r#"{"big": 18446744073709551617, "x": 1}"#, &[]).unwrap();
    /// let a = a.update_attributes_json(None, r#"{"y": 2}"#, &["x".to_string()]).unwrap();
    /// assert!(a.layout().json().unwrap().contains(r#""big": 18446744073709551617"#));
    /// ```
    ///
    /// # Errors
    /// [`Error::Layout`] if `replace` or `set` is not the text of a JSON object, else as
    /// [`with_attributes`](Self::with_attributes).
    pub fn update_attributes_json(
        &self,
        replace: Option<&str>,
        set: &str,
        remove: &[String],
    ) -> Result<Array> {
        let set = object(set)?.members();
        if let Some(all) = replace {
            object(all)?;
        }
        let (array, ()) = self.rewrite_metadata(|metadata, key| {
            let top = parse(metadata, key)?;
            let stored = top
                .get("attributes")
                .filter(|a| ObjectText::parse(a).is_ok());
            let base = object(replace.or(stored).unwrap_or("{}"))?;
            let attributes = base.edit(&set, remove, &top.nested_indent());
            Ok((top.edit(&[("attributes".into(), attributes)], &[], ""), ()))
        })?;
        Ok(array)
    }

    /// The array with shape `shape` (same rank). Growing changes only the metadata (the
    /// stored edge chunks hold the fill value past the old edge). Shrinking stores the
    /// new shape, then deletes the shards wholly outside it and sets the elements past
    /// the new edge in the shards that stay to the fill value: a failure before the
    /// metadata is stored changes nothing, one after it leaves the new shape with its
    /// data, and what it left outside is cleared by the next resize before any grow
    /// shows it (until then a record of it, `shardwright-resize.json`, lies next to
    /// `zarr.json`). The shape cleared against is the one stored now (not this
    /// handle's, which may be stale), and the new metadata is checked before anything is
    /// cleared; every member of `zarr.json` but `shape` keeps its text.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, Domain, MemoryStore};
    /// let spec = ArraySpec::new(vec![8], "uint8", vec![2]).shards(vec![4]);
    /// let array = Array::create(Arc::new(MemoryStore::new()), "a", &spec).unwrap();
    /// for shard in array.shards().collect::<Vec<_>>() {
    ///     let writer = array.shard_writer(&shard).unwrap();
    ///     writer.write_region_value(&shard, &[9]).unwrap();
    ///     writer.commit().unwrap();
    /// }
    /// let small = array.resize(vec![3]).unwrap();
    /// assert_eq!(small.store().get("a/c/1").unwrap(), None); // the shard past the edge
    /// let again = small.resize(vec![8]).unwrap();
    /// assert_eq!(again.read(&again.bounds()).unwrap(), vec![9, 9, 9, 0, 0, 0, 0, 0]);
    /// ```
    ///
    /// # Errors
    /// [`Error::Layout`] for a shape of another rank or one the format cannot hold
    /// (nothing is changed then), as [`with_attributes`](Self::with_attributes) for the
    /// metadata, and the store's and the shard writers' errors for the clearing (when
    /// that fails after the metadata was stored, the array has the new shape).
    pub fn resize(&self, shape: Vec<u64>) -> Result<Array> {
        let rank = self.layout().shape().len();
        if shape.len() != rank {
            return Err(Error::Layout(LayoutError::Shape(format!(
                "the new shape {shape:?} has {} dimensions; the array {:?} has {rank}",
                shape.len(),
                self.layout().shape()
            ))));
        }
        let shape_text = clear::shape_json(&shape);
        let (resized, plan) = self.rewrite_metadata(|metadata, key| {
            let top = parse(metadata, key)?;
            let mut members = vec![("shape".to_string(), shape_text.clone())];
            // a rectilinear grid whose listed cells stop short of the new shape grows a cell
            let stored_layout = Layout::from_json(metadata.as_bytes())?;
            if let Some(grid) = crate::layout::grown_grid(&stored_layout, &shape)? {
                members.push(("chunk_grid".to_string(), grid.to_string()));
            }
            let text = top.edit(&members, &[], "");
            Layout::from_json(text.as_bytes())?; // checked before anything is cleared
                                                 // against the stored shape, not this handle's
            let stored = self.with_layout(stored_layout);
            let plan = stored.prepare_resize(&top, &shape)?;
            Ok((text, plan))
        })?;
        plan.finish()?;
        Ok(resized)
    }

    /// The array with what an unfinished shrink left outside its stored shape cleared:
    /// when a record of one (`shardwright-resize.json`) lies next to `zarr.json`, a
    /// resize to the stored shape clears what it names and deletes it; else this array.
    /// A writer of the elements past the shape (an appender) settles it first, or a
    /// later resize would clear what it stored there.
    ///
    /// # Errors
    /// As [`resize`](Self::resize).
    pub(crate) fn settle_unfinished_resize(&self) -> Result<Array> {
        let key = join(self.path(), clear::RECORD_KEY);
        if self.store().get(&key)?.is_none() {
            return Ok(self.clone());
        }
        let (metadata, _) = self.stored_metadata(&join(self.path(), METADATA_KEY))?;
        let stored = Layout::from_json(metadata.as_bytes())?;
        self.resize(stored.shape().to_vec())
    }

    /// The stored `zarr.json`'s text, with its version.
    fn stored_metadata(&self, key: &str) -> Result<(String, crate::store::Version)> {
        let (bytes, version) = self
            .store()
            .get_versioned(key)?
            .ok_or_else(|| Error::NotFound(self.path().to_string()))?;
        let text = String::from_utf8(bytes)
            .map_err(|e| LayoutError::Invalid(format!("{key}: not JSON: {e}")))?;
        Ok((text, version))
    }

    /// Rewrite the stored `zarr.json` (key `key`) to the text `change` makes of it,
    /// conditionally on the version read; with what `change` returned besides.
    fn rewrite_metadata<T>(
        &self,
        change: impl Fn(&str, &str) -> Result<(String, T)>,
    ) -> Result<(Array, T)> {
        let key = join(self.path(), METADATA_KEY);
        for _ in 0..ATTEMPTS {
            let (metadata, version) = self.stored_metadata(&key)?;
            let (text, extra) = change(&metadata, &key)?;
            let layout = Layout::from_json(text.as_bytes())?;
            match self
                .store()
                .put_if(&key, &[text.as_bytes()], Some(&version))
            {
                Ok(()) => return Ok((self.with_layout(layout), extra)),
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::Conflict {
            key,
            attempts: ATTEMPTS,
        })
    }
}

/// The members of `text`, attributes given or stored.
fn object(text: &str) -> Result<ObjectText<'_>> {
    ObjectText::parse(text).map_err(|e| {
        Error::Layout(LayoutError::Invalid(format!(
            "attributes must be a JSON object: {e}"
        )))
    })
}

/// The members of the `zarr.json` text `metadata` stored at `key`.
fn parse<'a>(metadata: &'a str, key: &str) -> Result<ObjectText<'a>> {
    ObjectText::parse(metadata)
        .map_err(|e| Error::Layout(LayoutError::Invalid(format!("{key}: not JSON: {e}"))))
}

#[cfg(test)]
mod tests;
