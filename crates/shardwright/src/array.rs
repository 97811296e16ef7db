//! [`Array`]: an opened sharded array — its layout, its store, and the shard writers and
//! reads over it.

use std::sync::Arc;

use crate::domain::{Domain, Grid, GridCells};
use crate::error::{Error, Result};
use crate::layout::{ArraySpec, Layout};
use crate::store::{join, Store, StoreError};
use crate::writer::{shard_index_of, ShardWriter, WriterOptions};

/// The metadata key of an array, inside its folder.
pub const METADATA_KEY: &str = "zarr.json";

/// A Zarr v3 array in a store, opened for writing shard by shard.
///
/// ```
/// use std::sync::Arc;
/// use shardwright::layout::ArraySpec;
/// use shardwright::store::MemoryStore;
/// use shardwright::Array;
///
/// let store = Arc::new(MemoryStore::new());
/// let spec = ArraySpec::new(vec![10, 10], "uint16", vec![4, 4]).shards(vec![8, 8]);
/// Array::create(store.clone(), "a.zarr", &spec).unwrap();
/// let array = Array::open(store, "a.zarr").unwrap();
/// assert_eq!(array.shards().count(), 4);
/// assert_eq!(array.shard_key(&[1, 0]), "a.zarr/c/1/0");
/// ```
#[derive(Debug, Clone)]
pub struct Array {
    store: Arc<dyn Store>,
    path: String,
    layout: Arc<Layout>,
    shard_grid: Grid,
    chunk_grid: Grid,
    options: WriterOptions,
}

impl Array {
    /// Open the array whose `zarr.json` is at `path/zarr.json` in `store` (`path` may be
    /// empty: the store root).
    ///
    /// # Errors
    /// [`Error::NotFound`] without a `zarr.json`, [`Error::Layout`] for metadata that is
    /// invalid or unsupported, [`Error::Store`] if storage fails.
    pub fn open(store: Arc<dyn Store>, path: &str) -> Result<Self> {
        let path = path.trim_matches('/').to_string();
        let json = store
            .get(&join(&path, METADATA_KEY))?
            .ok_or_else(|| Error::NotFound(path.clone()))?;
        let node = serde_json::from_slice::<serde_json::Value>(&json)
            .ok()
            .and_then(|v| {
                v.get("node_type")
                    .and_then(|n| n.as_str().map(str::to_string))
            });
        if node.as_deref() == Some("group") {
            return Err(Error::Layout(crate::layout::LayoutError::Invalid(format!(
                "'{path}' is a Zarr group, not an array: open one of its arrays (its path \
                 below '{path}')"
            ))));
        }
        let layout = Layout::from_json(&json)?;
        Ok(Self::from_layout(store, path, layout))
    }

    /// Create an array at `path`: write its `zarr.json` (see [`ArraySpec`]).
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] if `path` already holds a `zarr.json`, [`Error::Layout`]
    /// for settings that do not make a valid array.
    pub fn create(store: Arc<dyn Store>, path: &str, spec: &ArraySpec) -> Result<Self> {
        Self::create_from_json(store, path, &spec.to_json()?)
    }

    /// Create an array at `path` from the text of its `zarr.json` (checked first).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, MemoryStore};
    /// let json = ArraySpec::new(vec![4], "int8", vec![2]).to_json().unwrap();
    /// let array = Array::create_from_json(Arc::new(MemoryStore::new()), "a", &json).unwrap();
    /// assert_eq!(array.layout().shape(), &[4]);
    /// ```
    ///
    /// # Errors
    /// As [`Array::create`].
    pub fn create_from_json(store: Arc<dyn Store>, path: &str, json: &str) -> Result<Self> {
        let layout = Layout::from_json(json.as_bytes())?;
        let path = path.trim_matches('/').to_string();
        let key = join(&path, METADATA_KEY);
        // Conditional on absence: of two creators of one array, one gets AlreadyExists.
        match store.put_if(&key, &[json.as_bytes()], None) {
            Ok(()) => Ok(Self::from_layout(store, path, layout)),
            Err(StoreError::Conflict { .. }) => Err(Error::AlreadyExists(path)),
            Err(e) => Err(e.into()),
        }
    }

    /// The same array (store, path, options) described by `layout` (its metadata rewritten).
    pub(crate) fn with_layout(&self, layout: Layout) -> Self {
        Self::from_layout(Arc::clone(&self.store), self.path.clone(), layout)
            .with_options(self.options.clone())
    }

    fn from_layout(store: Arc<dyn Store>, path: String, layout: Layout) -> Self {
        Self {
            store,
            path,
            shard_grid: layout.shard_grid(),
            chunk_grid: layout.chunk_grid(),
            layout: Arc::new(layout),
            options: WriterOptions::default(),
        }
    }

    /// The same array, whose writers use `options` (and keep reporting to the array's
    /// observer, if it has one).
    #[must_use]
    pub fn with_options(mut self, options: WriterOptions) -> Self {
        let observer = self.options.observer.take();
        self.options = options;
        if self.options.observer.is_none() {
            self.options.observer = observer;
        }
        self
    }

    /// The same array, whose writers report what they write and store to `observer`
    /// (see [`ShardObserver`](crate::ShardObserver)): an image's level 0 feeds its coarser
    /// levels this way.
    #[must_use]
    pub fn observed_by(mut self, observer: Arc<dyn crate::ShardObserver>) -> Self {
        self.options.observer = Some(observer);
        self
    }

    /// The options its writers use.
    #[must_use]
    pub fn options(&self) -> &WriterOptions {
        &self.options
    }

    /// The layout read from `zarr.json`.
    #[must_use]
    pub fn layout(&self) -> &Arc<Layout> {
        &self.layout
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The array's folder in the store.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The whole array as a domain.
    #[must_use]
    pub fn bounds(&self) -> Domain {
        self.layout.bounds()
    }

    /// The grid of shards.
    #[must_use]
    pub fn shard_grid(&self) -> &Grid {
        &self.shard_grid
    }

    /// The grid of inner chunks over the whole array.
    #[must_use]
    pub fn chunk_grid(&self) -> &Grid {
        &self.chunk_grid
    }

    /// Every shard, clipped to the array, in C order.
    #[must_use]
    pub fn shards(&self) -> GridCells {
        self.shard_grid.cells()
    }

    /// The shards that meet `region`, clipped to the array (not to `region`), in C order.
    #[must_use]
    pub fn shards_meeting(&self, region: &Domain) -> GridCells {
        self.shard_grid.cells_meeting(region)
    }

    /// The inner chunks that meet `region`, clipped to the array, in C order.
    #[must_use]
    pub fn chunks_meeting(&self, region: &Domain) -> GridCells {
        self.chunk_grid.cells_meeting(region)
    }

    /// The shard at grid index `index`, clipped to the array.
    ///
    /// # Errors
    /// [`Error::Domain`] for an index outside the shard grid or of the wrong rank.
    pub fn shard(&self, index: &[u64]) -> Result<Domain> {
        Ok(self.shard_grid.cell(index)?)
    }

    /// The grid indices of the stored shards (chunks, unsharded), in C order, from one
    /// listing of the array's folder ([`Store::list_prefix`]), or `None` if the store
    /// cannot list (callers then ask for each shard). It costs what is stored, not what
    /// the grid could hold: keys that are not this array's shard keys are left out.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use shardwright::{Array, ArraySpec, MemoryStore, Store};
    /// let store = Arc::new(MemoryStore::new());
    /// let spec = ArraySpec::new(vec![1_000_000_000], "uint8", vec![64]);
    /// let array = Array::create(store.clone(), "a", &spec).unwrap();
    /// store.put("a/c/7", &[b"x"]).unwrap();
    /// assert_eq!(array.stored_shards().unwrap(), Some(vec![vec![7]]));
    /// ```
    ///
    /// # Errors
    /// [`Error::Store`] if listing fails.
    pub fn stored_shards(&self) -> Result<Option<Vec<Vec<u64>>>> {
        let Some(keys) = self.store.list_prefix(&self.path)? else {
            return Ok(None);
        };
        let mut found: Vec<Vec<u64>> = keys.iter().filter_map(|k| self.index_of_key(k)).collect();
        found.sort_unstable();
        found.dedup();
        Ok(Some(found))
    }

    /// The grid index of the shard stored at `key`, if it is one of this array's keys.
    fn index_of_key(&self, key: &str) -> Option<Vec<u64>> {
        let relative = if self.path.is_empty() {
            key
        } else {
            key.strip_prefix(self.path.as_str())?.strip_prefix('/')?
        };
        let grid = self.shard_grid.grid_shape();
        let parts: Vec<&str> = relative.split(['/', '.']).collect();
        let start = parts.len().checked_sub(grid.len())?;
        let index = parts
            .get(start..)?
            .iter()
            .zip(grid)
            .map(|(p, n)| p.parse::<u64>().ok().filter(|i| i < n))
            .collect::<Option<Vec<u64>>>()?;
        // Only what the array's own key encoding makes of the index: not `zarr.json`,
        // not another encoding's spelling, not `01` for `1`.
        (self.layout.shard_key(&index) == relative).then_some(index)
    }

    /// The storage key of the shard at grid index `index`.
    #[must_use]
    pub fn shard_key(&self, index: &[u64]) -> String {
        join(&self.path, &self.layout.shard_key(index))
    }

    /// A writer for `shard` (a domain from [`shards`](Self::shards)). Nothing is stored
    /// until it commits.
    ///
    /// # Errors
    /// [`Error::Domain`] or [`Error::NotAnInnerChunk`] if `shard` is not one of the shards.
    pub fn shard_writer(&self, shard: &Domain) -> Result<ShardWriter> {
        let index = shard_index_of(&self.layout, shard)?;
        ShardWriter::new(
            self.layout.for_shard(&index)?,
            Arc::clone(&self.store),
            self.shard_key(&index),
            shard,
            &self.options,
        )
    }

    /// Read `region` as raw elements (C order, native endian).
    ///
    /// # Errors
    /// [`Error::Domain`] for a region outside the array, [`Error::Format`] for a corrupt
    /// stored shard, [`Error::Store`] if storage fails, [`Error::OutOfMemory`] for a region
    /// larger than memory.
    pub fn read(&self, region: &Domain) -> Result<Vec<u8>> {
        crate::read::read_region(self.store.as_ref(), &self.layout, &self.path, region)
    }
}

#[cfg(test)]
#[path = "array_stored_tests.rs"]
mod stored_tests;
