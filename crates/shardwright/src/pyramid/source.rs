//! Where a pyramid or a copy reads from: anything that gives a region of an array as raw
//! elements. Implementations here: a shardwright [`Array`] on any store, any Zarr v2 or
//! v3 array on a local filesystem (through zarrs), and a buffer in memory; the Python
//! binding adds any object with numpy-style slicing.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::Value;

use super::PyramidError;
use crate::domain::copy::copy_block;
use crate::domain::Domain;
use crate::Array;

/// An array to read regions of. `read` is called from a reader thread, one region at a
/// time, in the order the driver needs them.
pub trait Source: Send + Sync {
    /// The array's shape.
    fn shape(&self) -> Vec<u64>;
    /// Its Zarr v3 data type name (`"uint16"`, `"float32"`, …), or for a type with a
    /// configuration the spec naming it (see [`crate::layout::data_types`]).
    fn data_type(&self) -> String;
    /// Its fill value as Zarr v3 metadata writes it, if it has one (the pyramid's levels
    /// take it); `None`: 0.
    fn fill_value(&self) -> Option<Value> {
        None
    }
    /// The elements of `region` (inside the array), C order, native endian.
    ///
    /// # Errors
    /// [`PyramidError::Source`] naming the region and what failed.
    fn read(&self, region: &Domain) -> Result<Vec<u8>, PyramidError>;
    /// The shape of the pieces the source decodes whole (its chunks; a sharded array's
    /// inner chunks), if it has them: reading part of one costs as much as reading all of
    /// it, so a build whose blocks cut them reads the source piece by piece and keeps each
    /// piece until every block it meets has been served. `None` (the default): reading
    /// costs what is read.
    fn read_grain(&self) -> Option<Vec<u64>> {
        None
    }
}

/// A [`PyramidError::Source`] for `region`.
#[must_use]
pub fn source_error(region: &Domain, message: impl std::fmt::Display) -> PyramidError {
    PyramidError::Source {
        region: region.to_string(),
        message: message.to_string(),
    }
}

/// An array held in memory (tests, examples, small data).
///
/// ```
/// use shardwright::pyramid::source::{BufferSource, Source};
/// use shardwright::Domain;
/// let source = BufferSource::new((0..16u8).collect(), vec![4, 4], "uint8");
/// assert_eq!(source.read(&Domain::new(vec![1, 1], vec![2, 2])).unwrap(), vec![5, 6, 9, 10]);
/// ```
#[derive(Debug, Clone)]
pub struct BufferSource {
    data: Arc<Vec<u8>>,
    shape: Vec<u64>,
    data_type: String,
    element_size: usize,
}

impl BufferSource {
    /// `data` (C order, native endian) of an array of `shape` and `data_type`.
    ///
    /// # Panics
    /// If `data` is not exactly the array's size, or the data type is unknown; use
    /// [`BufferSource::try_new`] for input that is not known to be well formed.
    #[must_use]
    // The documented panic of a constructor for input known to fit; `try_new` checks it.
    #[allow(clippy::expect_used)]
    pub fn new(data: Vec<u8>, shape: Vec<u64>, data_type: &str) -> Self {
        Self::try_new(data, shape, data_type).expect("data of the array's size and type")
    }

    /// As [`BufferSource::new`], or an error naming what does not fit.
    ///
    /// ```
    /// use shardwright::pyramid::source::BufferSource;
    /// assert!(BufferSource::try_new(vec![0; 4], vec![2], "uint16").is_ok());
    /// assert!(BufferSource::try_new(vec![0; 3], vec![2], "uint16").is_err());
    /// assert!(BufferSource::try_new(vec![0; 2], vec![2], "string").is_err());
    /// ```
    ///
    /// # Errors
    /// [`PyramidError::Invalid`] for an unknown data type or data whose length is not the
    /// array's size.
    pub fn try_new(data: Vec<u8>, shape: Vec<u64>, data_type: &str) -> Result<Self, PyramidError> {
        let element_size = element_size(data_type).ok_or_else(|| {
            PyramidError::invalid(format!("data type '{data_type}' is not a fixed-size type"))
        })?;
        let expected = shape
            .iter()
            .try_fold(element_size as u64, |n, s| n.checked_mul(*s));
        if expected != Some(data.len() as u64) {
            return Err(PyramidError::invalid(format!(
                "{} bytes of data for an array of shape {shape:?} and type {data_type}; \
                 expected {}",
                data.len(),
                expected.map_or("more than 2^64".to_string(), |n| n.to_string())
            )));
        }
        Ok(Self {
            data: Arc::new(data),
            shape,
            data_type: data_type.to_string(),
            element_size,
        })
    }
}

/// The size of one element of the Zarr v3 data type `name` (or spec: see
/// [`crate::layout::data_types`]), if it is one shardwright copies.
///
/// ```
/// use shardwright::pyramid::source::element_size;
/// assert_eq!(element_size("complex64"), Some(8));
/// assert_eq!(element_size(r#"{"name":"raw_bytes","configuration":{"length_bytes":3}}"#), Some(3));
/// ```
#[must_use]
pub fn element_size(name: &str) -> Option<usize> {
    Some(match name {
        "bool" | "int8" | "uint8" => 1,
        "int16" | "uint16" | "float16" | "bfloat16" => 2,
        "int32" | "uint32" | "float32" => 4,
        "int64" | "uint64" | "float64" | "complex64" => 8,
        "complex128" => 16,
        "string" | "bytes" => return None,
        _ if name.starts_with('{') || name.starts_with('r') => {
            return crate::layout::element_size_of(name);
        }
        _ => return None,
    })
}

impl Source for BufferSource {
    fn shape(&self) -> Vec<u64> {
        self.shape.clone()
    }

    fn data_type(&self) -> String {
        self.data_type.clone()
    }

    fn read(&self, region: &Domain) -> Result<Vec<u8>, PyramidError> {
        region
            .check_inside(&Domain::from_shape(self.shape.clone()))
            .map_err(|e| source_error(region, e))?;
        let mut out = vec![0; region.size() as usize * self.element_size];
        copy_block(
            &self.data,
            &self.shape,
            region.origin(),
            &mut out,
            region.shape(),
            &vec![0; region.ndim()],
            region.shape(),
            self.element_size,
        );
        Ok(out)
    }
}

/// A shardwright [`Array`] on any store (filesystem, object store, zarr-python store),
/// read with ranged reads of the inner chunks a region needs (the indexes of the last 64
/// shards read are kept: the source must not change while it is read).
///
/// ```
/// use std::sync::Arc;
/// use shardwright::pyramid::source::{ArraySource, Source};
/// use shardwright::{Array, ArraySpec, MemoryStore};
/// let spec = ArraySpec::new(vec![4], "uint8", vec![2]).fill_value(serde_json::json!(7));
/// let array = Array::create(Arc::new(MemoryStore::new()), "a", &spec).unwrap();
/// let source = ArraySource::new(array);
/// assert_eq!(source.read(&shardwright::Domain::new(vec![0], vec![3])).unwrap(), vec![7, 7, 7]);
/// ```
#[derive(Debug)]
pub struct ArraySource {
    array: Array,
    bytes_fetched: AtomicU64,
    indexes: crate::read::IndexCache,
}

impl ArraySource {
    /// Read from `array`.
    #[must_use]
    pub fn new(array: Array) -> Self {
        Self {
            array,
            bytes_fetched: AtomicU64::new(0),
            indexes: crate::read::IndexCache::new(64),
        }
    }

    /// Encoded bytes fetched from storage so far.
    #[must_use]
    pub fn bytes_fetched(&self) -> u64 {
        self.bytes_fetched.load(Ordering::Relaxed)
    }
}

impl Source for ArraySource {
    fn shape(&self) -> Vec<u64> {
        self.array.layout().shape().to_vec()
    }

    fn data_type(&self) -> String {
        self.array.layout().data_type_spec().to_string()
    }

    fn fill_value(&self) -> Option<Value> {
        serde_json::to_value(&self.array.layout().metadata().fill_value).ok()
    }

    fn read_grain(&self) -> Option<Vec<u64>> {
        // the chunks of an unsharded rectilinear grid differ in shape: no one grain
        let layout = self.array.layout();
        (layout.is_sharded() || layout.has_regular_shards()).then(|| layout.chunk_shape().to_vec())
    }

    fn read(&self, region: &Domain) -> Result<Vec<u8>, PyramidError> {
        let (data, fetched) = crate::read::read_region_cached(
            self.array.store().as_ref(),
            self.array.layout(),
            self.array.path(),
            region,
            &self.indexes,
        )
        .map_err(|e| source_error(region, e))?;
        self.bytes_fetched.fetch_add(fetched, Ordering::Relaxed);
        Ok(data)
    }
}

/// Any Zarr v2 or v3 array on a local filesystem, read through zarrs (which decodes v2
/// and v3 codecs, sharded or not).
///
/// ```
/// use shardwright::pyramid::source::{ZarrsSource, Source};
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join(".zarray"), r#"{"zarr_format": 2, "shape": [4], "chunks": [2],
///     "dtype": "<u2", "compressor": null, "fill_value": 3, "order": "C", "filters": null}"#).unwrap();
/// let source = ZarrsSource::open(dir.path()).unwrap();
/// assert_eq!((source.shape(), source.data_type()), (vec![4], "uint16".to_string()));
/// assert_eq!(source.read(&shardwright::Domain::new(vec![1], vec![2])).unwrap(), [3u16, 3].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>());
/// ```
pub struct ZarrsSource {
    array: zarrs::array::Array<zarrs::filesystem::FilesystemStore>,
    data_type: String,
    fill_value: Value,
}

impl std::fmt::Debug for ZarrsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZarrsSource")
            .field("shape", &self.array.shape())
            .field("data_type", &self.data_type)
            .finish()
    }
}

impl ZarrsSource {
    /// Open the Zarr v2 or v3 array in folder `path`.
    ///
    /// # Errors
    /// [`PyramidError::Source`] if there is no array there or zarrs cannot open it.
    pub fn open(path: &Path) -> Result<Self, PyramidError> {
        let whole = Domain::new(vec![], vec![]);
        let fail = |e: &dyn std::fmt::Display| PyramidError::Source {
            region: whole.to_string(),
            message: format!("cannot open the Zarr array at '{}': {e}", path.display()),
        };
        let store = zarrs::filesystem::FilesystemStore::new(path).map_err(|e| fail(&e))?;
        let array = zarrs::array::Array::open(Arc::new(store), "/").map_err(|e| fail(&e))?;
        let options = zarrs::array::ArrayMetadataOptions::default()
            .with_metadata_convert_version(zarrs::config::MetadataConvertVersion::V3);
        let zarrs::array::ArrayMetadata::V3(metadata) = array.metadata_opt(&options) else {
            return Err(fail(&"its metadata has no Zarr v3 form"));
        };
        Ok(Self {
            data_type: crate::layout::data_types::resolve(&metadata.data_type)
                .map_or_else(|_| metadata.data_type.name().to_string(), |r| r.spec),
            fill_value: serde_json::to_value(&metadata.fill_value).unwrap_or(Value::Null),
            array,
        })
    }
}

impl Source for ZarrsSource {
    fn shape(&self) -> Vec<u64> {
        self.array.shape().to_vec()
    }

    fn data_type(&self) -> String {
        self.data_type.clone()
    }

    fn fill_value(&self) -> Option<Value> {
        Some(self.fill_value.clone()).filter(|v| !v.is_null())
    }

    fn read_grain(&self) -> Option<Vec<u64>> {
        use zarrs::array::ArrayShardedExt;
        let shape = self.array.shape();
        let grain: Vec<u64> = match self.array.effective_subchunk_shape() {
            Some(inner) => inner.iter().map(|n| n.get()).collect(),
            None => {
                let first = self.array.chunk_shape(&vec![0; shape.len()]).ok()?;
                first.iter().map(|n| n.get()).collect()
            }
        };
        // One grain only for a regular grid: as many cells as the first one's shape makes.
        let regular = self
            .array
            .subchunk_grid_shape()
            .iter()
            .zip(shape)
            .zip(&grain)
            .all(|((n, s), g)| *n == s.div_ceil(*g));
        regular.then_some(grain)
    }

    fn read(&self, region: &Domain) -> Result<Vec<u8>, PyramidError> {
        let subset = zarrs::array::ArraySubset::new_with_start_shape(
            region.origin().to_vec(),
            region.shape().to_vec(),
        )
        .map_err(|e| source_error(region, e))?;
        let bytes: zarrs::array::ArrayBytes<'static> = self
            .array
            .retrieve_array_subset(&subset)
            .map_err(|e| source_error(region, e))?;
        bytes
            .into_fixed()
            .map(|b| b.into_owned())
            .map_err(|e| source_error(region, e))
    }
}
