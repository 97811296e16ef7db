//! Writing the `zarr.json` of a new array: the metadata zarr-python writes for the same
//! settings (`bytes` + compressor inside `sharding_indexed`, `bytes` + `crc32c` index).

use serde_json::{json, Value};

use super::data_types;
use super::object_text::ObjectText;
use super::{invalid, IndexLocation, Layout, LayoutError};
use crate::domain::AxisCells;

/// The compressor of inner chunks in a new array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compressor {
    /// No compression.
    None,
    /// zstd at `level` (0 means the library default, 3), no checksum: zarr-python's default.
    Zstd {
        /// The zstd level.
        level: i32,
    },
    /// Blosc with zstd inside at `clevel`, byte shuffle (bit shuffle for 1-byte types).
    Blosc {
        /// The blosc compression level, 0 to 9.
        clevel: u8,
    },
    /// gzip at `level`, 0 to 9.
    Gzip {
        /// The gzip level.
        level: u8,
    },
}

impl Compressor {
    /// The compressor by name with zarr-python's default level: `"zstd"`, `"blosc"`,
    /// `"gzip"` or `"none"`, optionally with a level.
    ///
    /// ```
    /// use shardwright::layout::Compressor;
    /// assert_eq!(Compressor::by_name("zstd", Some(3)).unwrap(), Compressor::Zstd { level: 3 });
    /// assert!(Compressor::by_name("lz4", None).is_err());
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::Unsupported`] for another name, [`LayoutError::Invalid`] for a level
    /// out of range.
    pub fn by_name(name: &str, level: Option<i32>) -> Result<Self, LayoutError> {
        let level_in = |lo: i32, hi: i32, default: i32| -> Result<i32, LayoutError> {
            let l = level.unwrap_or(default);
            if (lo..=hi).contains(&l) {
                Ok(l)
            } else {
                Err(invalid(format!("{name} level {l} is outside {lo}..={hi}")))
            }
        };
        Ok(match name {
            "zstd" => Self::Zstd {
                level: level_in(-131_072, 22, 0)?,
            },
            "blosc" => Self::Blosc {
                clevel: level_in(0, 9, 5)? as u8,
            },
            "gzip" => Self::Gzip {
                level: level_in(0, 9, 5)? as u8,
            },
            "none" => Self::None,
            other => {
                return Err(LayoutError::Unsupported(format!(
                    "compressor '{other}' (supported: zstd, blosc, gzip, none)"
                )))
            }
        })
    }
}

/// The settings of a new array, turned into `zarr.json` by [`ArraySpec::to_json`].
///
/// ```
/// use shardwright::layout::{ArraySpec, Compressor, Layout};
///
/// let json = ArraySpec::new(vec![64, 64], "float32", vec![16, 16])
///     .shards(vec![32, 32])
///     .compressor(Compressor::Blosc { clevel: 5 })
///     .fill_value(serde_json::json!("NaN"))
///     .to_json()
///     .unwrap();
/// let layout = Layout::from_json(json.as_bytes()).unwrap();
/// assert_eq!(layout.data_type_name(), "float32");
/// assert!(json.contains("\"blosc\""));
/// ```
#[derive(Debug, Clone)]
pub struct ArraySpec {
    shape: Vec<u64>,
    data_type: String,
    chunks: Vec<u64>,
    shards: Option<Vec<u64>>,
    /// `None`: the data type's default.
    fill_value: Option<Value>,
    compressor: Compressor,
    index_location: IndexLocation,
    dimension_names: Option<Vec<String>>,
    attributes: serde_json::Map<String, Value>,
    /// The attributes as the text of a JSON object, stored as written.
    attributes_json: Option<String>,
    /// The cells of the outer grid (the shards; the chunks when unsharded) along each
    /// dimension, when given as a rectilinear grid.
    grid_cells: Option<Vec<AxisCells>>,
}

impl ArraySpec {
    /// An array of `shape` and `data_type` (a Zarr v3 name such as `"uint16"`, or the
    /// JSON of a data type object: see [`data_types`](super::data_types)) whose
    /// chunks (inner chunks, once [`shards`](Self::shards) is set) have shape `chunks`.
    /// Defaults: no sharding, the data type's default fill value (zarr-python's: 0,
    /// false, NaT for times, the empty string, zero bytes), zstd, index at the end.
    #[must_use]
    pub fn new(shape: Vec<u64>, data_type: &str, chunks: Vec<u64>) -> Self {
        Self {
            shape,
            data_type: data_type.to_string(),
            chunks,
            shards: None,
            fill_value: None,
            compressor: Compressor::Zstd { level: 0 },
            index_location: IndexLocation::End,
            dimension_names: None,
            attributes: serde_json::Map::new(),
            attributes_json: None,
            grid_cells: None,
        }
    }

    /// Store the array in shards of this shape (a multiple of the chunk shape).
    #[must_use]
    pub fn shards(mut self, shards: Vec<u64>) -> Self {
        self.shards = Some(shards);
        self.grid_cells = None;
        self
    }

    /// Store the array in shards of a rectilinear grid: along each dimension, shards of one
    /// extent or of the extents listed (each a multiple of the inner chunk extent; listed
    /// extents add up to the array's extent). Written as zarr-python 3.4 writes
    /// `shards=[[4, 6], 12]`: a `rectilinear` chunk grid around `sharding_indexed`.
    ///
    /// ```
    /// use shardwright::domain::AxisCells;
    /// use shardwright::layout::{ArraySpec, Layout};
    /// let json = ArraySpec::new(vec![10, 12], "uint16", vec![2, 3])
    ///     .shard_cells(vec![AxisCells::Edges(vec![4, 6]), AxisCells::Edges(vec![6, 6])])
    ///     .to_json()
    ///     .unwrap();
    /// let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    /// let grid = &value["chunk_grid"];
    /// assert_eq!(grid["name"], "rectilinear");
    /// assert_eq!(grid["configuration"]["chunk_shapes"], serde_json::json!([[4, 6], [[6, 2]]]));
    /// let layout = Layout::from_json(json.as_bytes()).unwrap();
    /// assert_eq!(layout.shard_grid().grid_shape(), &[2, 2]);
    /// ```
    #[must_use]
    pub fn shard_cells(mut self, cells: Vec<AxisCells>) -> Self {
        self.shards = Some(cells.iter().map(first_extent).collect());
        self.grid_cells = Some(cells);
        self
    }

    /// Store the array unsharded in chunks of a rectilinear grid: along each dimension,
    /// chunks of one extent or of the extents listed (adding up to the array's extent), as
    /// zarr-python 3.4 writes `chunks=[[4, 6], [5, 7]]`. Replaces the chunk shape given to
    /// [`new`](Self::new) and any shards.
    ///
    /// ```
    /// use shardwright::domain::AxisCells;
    /// use shardwright::layout::{ArraySpec, Layout};
    /// let json = ArraySpec::new(vec![10], "uint8", vec![1])
    ///     .chunk_cells(vec![AxisCells::Edges(vec![4, 6])])
    ///     .to_json()
    ///     .unwrap();
    /// let layout = Layout::from_json(json.as_bytes()).unwrap();
    /// assert!(!layout.is_sharded());
    /// assert_eq!(layout.chunk_grid().cell_sizes(), vec![vec![4, 6]]);
    /// ```
    #[must_use]
    pub fn chunk_cells(mut self, cells: Vec<AxisCells>) -> Self {
        self.chunks = cells.iter().map(first_extent).collect();
        self.shards = None;
        self.grid_cells = Some(cells);
        self
    }

    /// The fill value as Zarr v3 fill value metadata (`0`, `1.5`, `"NaN"`, `true`, `[0, 0]`).
    #[must_use]
    pub fn fill_value(mut self, fill_value: Value) -> Self {
        self.fill_value = Some(fill_value);
        self
    }

    /// The compressor of (inner) chunks.
    #[must_use]
    pub fn compressor(mut self, compressor: Compressor) -> Self {
        self.compressor = compressor;
        self
    }

    /// Where each shard keeps its index.
    #[must_use]
    pub fn index_location(mut self, location: IndexLocation) -> Self {
        self.index_location = location;
        self
    }

    /// Names of the dimensions.
    #[must_use]
    pub fn dimension_names(mut self, names: Vec<String>) -> Self {
        self.dimension_names = Some(names);
        self
    }

    /// The array's user attributes (the `attributes` of its `zarr.json`).
    ///
    /// ```
    /// use shardwright::ArraySpec;
    /// let attrs = serde_json::json!({"units": "nm"}).as_object().unwrap().clone();
    /// let json = ArraySpec::new(vec![4], "uint8", vec![2]).attributes(attrs).to_json().unwrap();
    /// assert!(json.contains("\"units\": \"nm\""));
    /// ```
    #[must_use]
    pub fn attributes(mut self, attributes: serde_json::Map<String, Value>) -> Self {
        self.attributes = attributes;
        self.attributes_json = None;
        self
    }

    /// The array's user attributes as the text of a JSON object, stored as written (so
    /// integers beyond 64 bits keep every digit); replaces [`attributes`](Self::attributes).
    ///
    /// ```
    /// use shardwright::ArraySpec;
    /// let spec = ArraySpec::new(vec![4], "uint8", vec![2]);
    /// let json = spec.attributes_json(r#"{"big": 18446744073709551617}"#).unwrap().to_json().unwrap();
    /// assert!(json.contains(r#""attributes": {"big": 18446744073709551617}"#));
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::Invalid`] if `text` is not a JSON object.
    pub fn attributes_json(mut self, text: &str) -> Result<Self, LayoutError> {
        ObjectText::parse(text)
            .map_err(|e| invalid(format!("attributes must be a JSON object: {e}")))?;
        self.attributes = serde_json::Map::new();
        self.attributes_json = Some(text.to_string());
        Ok(self)
    }

    /// The `zarr.json` text of the array, checked by reading it back as a [`Layout`].
    ///
    /// # Errors
    /// [`LayoutError`] for an unknown data type, a fill value that is not of it, shapes
    /// of different ranks, or chunks that do not divide the shards.
    pub fn to_json(&self) -> Result<String, LayoutError> {
        let data_type = data_types::metadata_of_spec(&self.data_type)?;
        let resolved = data_types::resolve(&data_type)?;
        let element_size = resolved.element_size;
        let fill = match &self.fill_value {
            None => resolved.default_fill(),
            Some(given) => {
                let fill_metadata: zarrs::array::FillValueMetadata =
                    serde_json::from_value(given.clone())
                        .map_err(|e| invalid(format!("fill value {given}: {e}")))?;
                resolved.fill_value(&fill_metadata).ok_or_else(|| {
                    invalid(format!("fill value {given} is not a {}", self.data_type))
                })?
            }
        };
        let fill_json = resolved.fill_json(&fill)?;
        let rank = self.shape.len();
        if self.chunks.len() != rank || self.shards.as_ref().is_some_and(|s| s.len() != rank) {
            return Err(LayoutError::Shape(format!(
                "chunks {:?} and shards {:?} must have the array's rank {rank}",
                self.chunks, self.shards
            )));
        }
        let bytes = if !resolved.has_endianness() {
            json!({"name": "bytes"})
        } else {
            json!({"name": "bytes", "configuration": {"endian": "little"}})
        };
        let mut codecs = vec![bytes];
        match self.compressor {
            Compressor::None => {}
            Compressor::Zstd { level } => codecs.push(
                json!({"name": "zstd", "configuration": {"level": level, "checksum": false}}),
            ),
            Compressor::Blosc { clevel } => codecs.push(json!({"name": "blosc", "configuration": {
                "typesize": element_size, "cname": "zstd", "clevel": clevel,
                "shuffle": if element_size == 1 { "bitshuffle" } else { "shuffle" },
                "blocksize": 0}})),
            Compressor::Gzip { level } => {
                codecs.push(json!({"name": "gzip", "configuration": {"level": level}}));
            }
        }
        let (grid_shape, codecs) = match &self.shards {
            None => (self.chunks.clone(), codecs),
            Some(shards) => {
                let location = match self.index_location {
                    IndexLocation::Start => "start",
                    IndexLocation::End => "end",
                };
                let sharding = json!({"name": "sharding_indexed", "configuration": {
                    "chunk_shape": self.chunks,
                    "codecs": codecs,
                    "index_codecs": [
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "crc32c"}],
                    "index_location": location}});
                (shards.clone(), vec![sharding])
            }
        };
        let chunk_grid = match &self.grid_cells {
            Some(cells) if cells.iter().any(|c| matches!(c, AxisCells::Edges(_))) => {
                if cells.len() != rank {
                    return Err(LayoutError::Shape(format!(
                        "a rectilinear grid of rank {} for an array of rank {rank}",
                        cells.len()
                    )));
                }
                check_listed_sums(cells, &self.shape)?;
                rectilinear_json(cells)
            }
            _ => json!({"name": "regular", "configuration": {"chunk_shape": grid_shape}}),
        };
        let mut metadata = json!({
            "shape": self.shape,
            "data_type": data_types::metadata_json(&data_type),
            "chunk_grid": chunk_grid,
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill_json,
            "codecs": codecs,
            "attributes": self.attributes,
            "zarr_format": 3,
            "node_type": "array",
            "storage_transformers": [],
        });
        if let (Some(names), Some(object)) = (&self.dimension_names, metadata.as_object_mut()) {
            object.insert("dimension_names".into(), json!(names));
        }
        let mut text = serde_json::to_string_pretty(&metadata)
            .map_err(|e| LayoutError::Invalid(format!("metadata does not serialize: {e}")))?;
        if let Some(attributes) = &self.attributes_json {
            let members = ObjectText::parse(&text).map_err(invalid)?;
            text = members.edit(&[("attributes".into(), attributes.clone())], &[], "");
        }
        Layout::from_json(text.as_bytes())?;
        Ok(text)
    }
}

/// The first cell's extent along a dimension divided as `cells`.
fn first_extent(cells: &AxisCells) -> u64 {
    match cells {
        AxisCells::Regular(c) => *c,
        AxisCells::Edges(edges) => edges.first().copied().unwrap_or(0),
    }
}

/// Refuse listed extents that do not add up to the array's extent exactly (as zarr-python
/// refuses them when it creates an array; reading accepts more).
fn check_listed_sums(cells: &[AxisCells], shape: &[u64]) -> Result<(), LayoutError> {
    for (dim, (cells, extent)) in cells.iter().zip(shape).enumerate() {
        if let AxisCells::Edges(edges) = cells {
            let sum = edges.iter().try_fold(0u64, |s, e| s.checked_add(*e));
            if edges.is_empty() || sum != Some(*extent) {
                return Err(LayoutError::Shape(format!(
                    "the extents {edges:?} listed for dimension {dim} must add up to the array's \
                     extent {extent}"
                )));
            }
        }
    }
    Ok(())
}

/// A `rectilinear` chunk grid as zarr-python writes it: a bare extent for a regular
/// dimension, the listed extents run-length encoded (`[extent, count]` for a run) where
/// that is shorter.
fn rectilinear_json(cells: &[AxisCells]) -> Value {
    let dims: Vec<Value> = cells
        .iter()
        .map(|cells| match cells {
            AxisCells::Regular(c) => json!(c),
            AxisCells::Edges(edges) => {
                let mut runs: Vec<(u64, u64)> = Vec::new();
                for e in edges {
                    match runs.last_mut() {
                        Some((value, count)) if value == e => *count += 1,
                        _ => runs.push((*e, 1)),
                    }
                }
                if runs.len() < edges.len() {
                    json!(runs
                        .iter()
                        .map(|(v, n)| if *n > 1 { json!([v, n]) } else { json!(v) })
                        .collect::<Vec<_>>())
                } else {
                    json!(edges)
                }
            }
        })
        .collect();
    json!({"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": dims}})
}

/// The `chunk_grid` of the array `layout` describes (read from `grid`, its metadata)
/// grown to cover `shape`: a rectilinear grid whose listed extents fall short of a new
/// extent gets one more cell covering the rest (as zarr-python does; for a sharded array a
/// whole number of inner chunks). `None` when the grid covers `shape` as it is.
///
/// ```
/// use shardwright::layout::{grown_grid, ArraySpec, Layout};
/// use shardwright::domain::AxisCells;
/// let json = ArraySpec::new(vec![10], "uint8", vec![2])
///     .shard_cells(vec![AxisCells::Edges(vec![4, 6])])
///     .to_json()
///     .unwrap();
/// let layout = Layout::from_json(json.as_bytes()).unwrap();
/// let grown = grown_grid(&layout, &[13]).unwrap().unwrap();
/// assert_eq!(grown["configuration"]["chunk_shapes"], serde_json::json!([[4, 6, 4]]));
/// assert!(grown_grid(&layout, &[8]).unwrap().is_none());
/// ```
///
/// # Errors
/// [`LayoutError::Invalid`] for a chunk grid that does not parse.
pub fn grown_grid(layout: &Layout, shape: &[u64]) -> Result<Option<Value>, LayoutError> {
    let grid = &layout.metadata().chunk_grid;
    if grid.name() != "rectilinear" {
        return Ok(None);
    }
    let grid = serde_json::to_value(grid).map_err(|e| invalid(format!("chunk grid: {e}")))?;
    let Some(dims) = grid
        .pointer("/configuration/chunk_shapes")
        .and_then(Value::as_array)
    else {
        return Err(invalid("rectilinear chunk grid without chunk_shapes"));
    };
    let mut dims = dims.clone();
    let mut grown = false;
    for ((dim, extent), chunk) in dims.iter_mut().zip(shape).zip(layout.chunk_shape()) {
        let Some(listed) = dim.as_array_mut() else {
            continue; // a bare extent: regular along this dimension, covers any extent
        };
        let sum: u64 = listed
            .iter()
            .map(|e| match e {
                Value::Array(run) => {
                    let v = run.first().and_then(Value::as_u64).unwrap_or(0);
                    v.saturating_mul(run.get(1).and_then(Value::as_u64).unwrap_or(0))
                }
                e => e.as_u64().unwrap_or(0),
            })
            .fold(0u64, u64::saturating_add);
        if sum < *extent {
            let gap = extent - sum;
            let edge = if layout.is_sharded() {
                gap.div_ceil(*chunk).saturating_mul(*chunk)
            } else {
                gap
            };
            listed.push(json!(edge));
            grown = true;
        }
    }
    if !grown {
        return Ok(None);
    }
    Ok(Some(
        json!({"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": dims}}),
    ))
}
