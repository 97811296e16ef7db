//! Changing an existing array: its user attributes and its shape.
//!
//! Both rewrite the array's `zarr.json`, conditionally on the version read (of two
//! editors, the second retries on the first one's metadata, so neither change is lost
//! silently). [`Array::resize`] also clears what a smaller shape leaves outside: shards
//! wholly outside are deleted, and the elements past the new edge in the shards that
//! stay are set to the fill value (one merge per such shard), so growing again later
//! shows the fill value, not old data.

use serde_json::{Map, Value};

use crate::array::{Array, METADATA_KEY};
use crate::domain::Domain;
use crate::error::{Error, Result};
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
    /// meanwhile through another handle are kept.
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
        self.rewrite_metadata(|metadata| {
            let mut attributes = match &replace {
                Some(all) => all.clone(),
                None => match metadata.get("attributes") {
                    Some(Value::Object(stored)) => stored.clone(),
                    _ => Map::new(),
                },
            };
            for key in remove {
                attributes.remove(key);
            }
            attributes.extend(set.clone());
            metadata.insert("attributes".into(), Value::Object(attributes));
            Ok(())
        })
    }

    /// The array with shape `shape` (same rank). Growing changes only the metadata (the
    /// stored edge chunks hold the fill value past the old edge). Shrinking deletes the
    /// shards wholly outside the new shape and sets the elements past the new edge in the
    /// shards that stay to the fill value, then writes the metadata. The shape cleared
    /// against is the one stored now (not this handle's, which may be stale), and the new
    /// metadata is checked before anything is cleared.
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
    /// metadata, and the shard writers' errors for the edge shards.
    pub fn resize(&self, shape: Vec<u64>) -> Result<Array> {
        let rank = self.layout().shape().len();
        if shape.len() != rank {
            return Err(Error::Layout(LayoutError::Shape(format!(
                "the new shape {shape:?} has {} dimensions; the array {:?} has {rank}",
                shape.len(),
                self.layout().shape()
            ))));
        }
        self.rewrite_metadata(|metadata| {
            let stored = self.with_layout(Layout::from_json(&to_json(metadata)?)?);
            let mut resized = metadata.clone();
            resized.insert("shape".into(), serde_json::json!(shape));
            Layout::from_json(&to_json(&resized)?)?; // checked before anything is cleared
            stored.clear_outside(&shape)?; // against the stored shape, not this handle's
            *metadata = resized;
            Ok(())
        })
    }

    /// Delete the shards wholly outside `shape` and set the elements outside it in the
    /// shards meeting it to the fill value: only the shards meeting the slabs `shape`
    /// cuts off are visited (none when no axis shrinks).
    fn clear_outside(&self, shape: &[u64]) -> Result<()> {
        let kept = Domain::from_shape(shape.to_vec());
        let old = self.bounds();
        let inside = old
            .intersect(&kept)
            .unwrap_or_else(|| Domain::new(vec![0; shape.len()], vec![0; shape.len()]));
        let fill = self.layout().fill_value_bytes().to_vec();
        let mut seen = std::collections::HashSet::new();
        for slab in outside_of(&old, &inside) {
            for shard in self.shards_meeting(&slab) {
                let Some(index) = shard.index().map(<[u64]>::to_vec) else {
                    return Err(Error::Internal(format!("shard {shard} has no grid index")));
                };
                if !seen.insert(index.clone()) {
                    continue;
                }
                let key = self.shard_key(&index);
                match kept.intersect(&shard).filter(|part| !part.is_empty()) {
                    None => self.store().delete(&key)?,
                    Some(part) => {
                        if self.store().size(&key)?.is_none() {
                            continue;
                        }
                        let writer = self.shard_writer(&shard)?;
                        for piece in outside_of(&shard, &part) {
                            writer.write_region_value(&piece, &fill)?;
                        }
                        writer.commit()?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The stored `zarr.json` as a JSON object, with its version.
    fn stored_metadata(&self, key: &str) -> Result<(Map<String, Value>, crate::store::Version)> {
        let (bytes, version) = self
            .store()
            .get_versioned(key)?
            .ok_or_else(|| Error::NotFound(self.path().to_string()))?;
        let metadata = serde_json::from_slice(&bytes)
            .map_err(|e| LayoutError::Invalid(format!("{key}: {e}")))?;
        Ok((metadata, version))
    }

    /// Rewrite the stored `zarr.json` with `change`, conditionally on the version read.
    fn rewrite_metadata(
        &self,
        change: impl Fn(&mut Map<String, Value>) -> Result<()>,
    ) -> Result<Array> {
        let key = join(self.path(), METADATA_KEY);
        for _ in 0..ATTEMPTS {
            let (mut metadata, version) = self.stored_metadata(&key)?;
            change(&mut metadata)?;
            let text = to_json(&metadata)?;
            let layout = Layout::from_json(&text)?;
            match self.store().put_if(&key, &[&text], Some(&version)) {
                Ok(()) => return Ok(self.with_layout(layout)),
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

/// The text of a `zarr.json`.
fn to_json(metadata: &Map<String, Value>) -> Result<Vec<u8>> {
    serde_json::to_vec_pretty(metadata).map_err(|e| {
        Error::Layout(crate::layout::LayoutError::Invalid(format!(
            "metadata does not serialize: {e}"
        )))
    })
}

/// `region` less `inside` (a box inside it), as disjoint boxes: per axis, the slabs past
/// `inside`'s stop, within `inside` along the axes before.
fn outside_of(region: &Domain, inside: &Domain) -> Vec<Domain> {
    let mut out = Vec::new();
    let mut origin = region.origin().to_vec();
    let mut shape = region.shape().to_vec();
    let stops = region.stop().into_iter().zip(inside.stop());
    let starts = inside.origin().iter().zip(inside.shape());
    for (d, ((region_stop, stop), (&start, &extent))) in stops.zip(starts).enumerate() {
        if stop < region_stop {
            let mut o = origin.clone();
            let mut s = shape.clone();
            if let (Some(od), Some(sd)) = (o.get_mut(d), s.get_mut(d)) {
                *od = stop;
                *sd = region_stop - stop;
            }
            // inside `region`, which is a valid box
            if let Ok(slab) = Domain::try_new(o, s) {
                out.push(slab);
            }
        }
        if let (Some(od), Some(sd)) = (origin.get_mut(d), shape.get_mut(d)) {
            *od = start;
            *sd = extent;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
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
}
