//! Opening an appender: where it continues, and clearing what lies past the shape.

use super::{set, Appender, SLABS_LISTED, SLABS_SWEPT};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::layout::object_text::ObjectText;
use crate::layout::{Layout, LayoutError};

impl Appender {
    /// `listed`: look for what a killed appender left past the shape by listing the
    /// array where the store lists (else, and when not `listed`, in the slabs it can
    /// leave debris in).
    pub(super) fn open(array: &Array, axis: usize, listed: bool) -> Result<Self> {
        let array =
            Array::open(array.store().clone(), array.path())?.with_options(array.options().clone());
        let ndim = array.layout().ndim();
        if axis >= ndim {
            return Err(Error::Layout(LayoutError::Shape(format!(
                "cannot append along axis {axis}: the array has {ndim} dimensions"
            ))));
        }
        if !array.layout().has_regular_shards() {
            return Err(Error::Layout(LayoutError::Unsupported(
                "appending to an array with a rectilinear chunk grid (shards of several \
                 shapes): append to a regular grid, or write the new shards with write_shard \
                 after a resize"
                    .into(),
            )));
        }
        // Before anything is stored past the shape: each grow is a resize, which would
        // first clear what a record of an unfinished shrink names — the new slabs.
        let array = array.settle_unfinished_resize()?;
        let layout = array.layout();
        let at = |v: &[u64]| v.get(axis).copied().unwrap_or(1).max(1);
        let (shard_len, chunk_len) = (at(layout.shard_shape()), at(layout.chunk_shape()));
        let length = layout.shape().get(axis).copied().unwrap_or(0);
        let mut frame = layout.shape().to_vec();
        set(&mut frame, axis, 1);
        let row_elements = frame.iter().product::<u64>().saturating_mul(chunk_len);
        let row = crate::buffer::filled(row_elements, layout.fill_value_bytes())?;
        let mut appender = Self {
            elem: layout.element_size(),
            array,
            axis,
            frame,
            shard_len,
            chunk_len,
            length,
            shown: length,
            row,
            from: length,
            slab: None,
            storing: None,
            failed: None,
        };
        appender.clear_past_end(listed)?;
        Ok(appender)
    }

    /// The array as if its shape reached `end` along the axis (nothing is stored).
    pub(super) fn reaching(&self, end: u64) -> Result<Array> {
        let layout = self.array.layout();
        let mut shape = layout.shape().to_vec();
        set(&mut shape, self.axis, end);
        let owned;
        let text = match layout.json() {
            Some(text) => text,
            None => {
                owned = serde_json::to_string(layout.metadata())
                    .map_err(|e| LayoutError::Invalid(e.to_string()))?;
                &owned
            }
        };
        let top = ObjectText::parse(text).map_err(LayoutError::Invalid)?;
        let shape = serde_json::Value::from(shape).to_string();
        let edited = top.edit(&[("shape".into(), shape)], &[], "");
        Ok(self
            .array
            .with_layout(Layout::from_json(edited.as_bytes())?))
    }

    /// At opening: delete the shards stored wholly past the shape (`listed`: all of them,
    /// found by one listing where the store lists; else those of the slabs a killed
    /// appender can leave), and set the elements past it in the slab it ends in to the
    /// fill value (committed with that slab).
    fn clear_past_end(&mut self, listed: bool) -> Result<()> {
        let first = self.length.div_ceil(self.shard_len);
        let far = first
            .saturating_add(SLABS_LISTED)
            .saturating_mul(self.shard_len);
        // (an extent the format cannot hold: no listing, the slabs past the end are swept)
        let listed = match self.reaching(far) {
            Ok(wide) if listed => wide.stored_shards()?.map(|stored| (wide, stored)),
            _ => None,
        };
        if let Some((wide, stored)) = listed {
            for index in stored {
                if index.get(self.axis).is_some_and(|i| *i >= first) {
                    wide.store().delete(&wide.shard_key(&index))?;
                }
            }
        } else {
            let end = (first + SLABS_SWEPT) * self.shard_len;
            let near = self.reaching(end)?;
            for shard in near.shards_meeting(&self.between(first * self.shard_len, end)) {
                let index = shard.index().map(<[u64]>::to_vec).unwrap_or_default();
                near.store().delete(&near.shard_key(&index))?;
            }
        }
        if !self.length.is_multiple_of(self.shard_len) {
            let end = first * self.shard_len;
            self.fill(&self.between(self.length, end))?;
        }
        Ok(())
    }
}

impl Array {
    /// An [`Appender`] of frames along `axis`, continuing from the stored shape (see the
    /// [`append`](crate::append) module). It reads `zarr.json` again (this handle may be
    /// stale) and deletes what a killed appender left past the shape.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, MemoryStore};
    /// let spec = ArraySpec::new(vec![3, 0], "int16", vec![3, 2]).shards(vec![3, 4]);
    /// let array = Array::create(Arc::new(MemoryStore::new()), "t", &spec).unwrap();
    /// let mut appender = array.appender(1).unwrap();
    /// let block: Vec<u8> = (0..6i16).flat_map(i16::to_ne_bytes).collect();
    /// appender.append(&block, &[3, 2]).unwrap(); // two frames of shape (3,)
    /// assert_eq!(appender.finish().unwrap().layout().shape(), &[3, 2]);
    /// ```
    ///
    /// # Errors
    /// [`Error::Layout`] for an axis the array does not have, [`Error::NotFound`] if its
    /// `zarr.json` is gone, [`Error::Store`] and the writers' errors for the clearing.
    pub fn appender(&self, axis: usize) -> Result<Appender> {
        Appender::open(self, axis, true)
    }

    /// As [`appender`](Self::appender), but what a killed appender left past the shape is
    /// looked for only where one can leave it (the two slabs past the shape), never by
    /// listing the array: for a few frames appended to a large array, whose listing
    /// would cost more than the append. Shards stored farther past the shape by other
    /// means are not deleted.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, MemoryStore};
    /// let spec = ArraySpec::new(vec![6, 2], "uint8", vec![2, 2]).shards(vec![4, 2]);
    /// let array = Array::create(Arc::new(MemoryStore::new()), "t", &spec).unwrap();
    /// let mut appender = array.appender_near_end(0).unwrap();
    /// appender.append(&[5, 5], &[2]).unwrap();
    /// let array = appender.finish().unwrap();
    /// assert_eq!(array.read(&array.bounds()).unwrap()[12..], [5, 5]);
    /// ```
    ///
    /// # Errors
    /// As [`appender`](Self::appender).
    pub fn appender_near_end(&self, axis: usize) -> Result<Appender> {
        Appender::open(self, axis, false)
    }
}
