//! Writing the `zarr.json` of a new array: the metadata zarr-python writes for the same
//! settings (`bytes` + compressor inside `sharding_indexed`, `bytes` + `crc32c` index).

use serde_json::{json, Value};
use zarrs::array::DataType;
use zarrs::metadata::v3::MetadataV3;

use super::object_text::ObjectText;
use super::{invalid, IndexLocation, Layout, LayoutError};

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
    fill_value: Value,
    compressor: Compressor,
    index_location: IndexLocation,
    dimension_names: Option<Vec<String>>,
    attributes: serde_json::Map<String, Value>,
    /// The attributes as the text of a JSON object, stored as written.
    attributes_json: Option<String>,
}

impl ArraySpec {
    /// An array of `shape` and `data_type` (a Zarr v3 name such as `"uint16"`) whose
    /// chunks (inner chunks, once [`shards`](Self::shards) is set) have shape `chunks`.
    /// Defaults: no sharding, fill value 0, zstd, index at the end.
    #[must_use]
    pub fn new(shape: Vec<u64>, data_type: &str, chunks: Vec<u64>) -> Self {
        Self {
            shape,
            data_type: data_type.to_string(),
            chunks,
            shards: None,
            fill_value: json!(0),
            compressor: Compressor::Zstd { level: 0 },
            index_location: IndexLocation::End,
            dimension_names: None,
            attributes: serde_json::Map::new(),
            attributes_json: None,
        }
    }

    /// Store the array in shards of this shape (a multiple of the chunk shape).
    #[must_use]
    pub fn shards(mut self, shards: Vec<u64>) -> Self {
        self.shards = Some(shards);
        self
    }

    /// The fill value as Zarr v3 fill value metadata (`0`, `1.5`, `"NaN"`, `true`, `[0, 0]`).
    #[must_use]
    pub fn fill_value(mut self, fill_value: Value) -> Self {
        self.fill_value = fill_value;
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
        let data_type = DataType::from_metadata(&MetadataV3::new(self.data_type.clone()))
            .map_err(|_| LayoutError::Unsupported(format!("data type '{}'", self.data_type)))?;
        let element_size = data_type.fixed_size().ok_or_else(|| {
            LayoutError::Unsupported(format!("data type '{}' (not fixed-size)", self.data_type))
        })?;
        let fill_metadata: zarrs::array::FillValueMetadata =
            serde_json::from_value(self.fill_value.clone())
                .map_err(|e| invalid(format!("fill value {}: {e}", self.fill_value)))?;
        let fill = data_type.fill_value_v3(&fill_metadata).map_err(|_| {
            invalid(format!(
                "fill value {} is not a {}",
                self.fill_value, self.data_type
            ))
        })?;
        let fill_json = data_type
            .metadata_fill_value(&fill)
            .map_err(|e| invalid(format!("fill value: {e}")))?;
        let rank = self.shape.len();
        if self.chunks.len() != rank || self.shards.as_ref().is_some_and(|s| s.len() != rank) {
            return Err(LayoutError::Shape(format!(
                "chunks {:?} and shards {:?} must have the array's rank {rank}",
                self.chunks, self.shards
            )));
        }
        let bytes = if element_size == 1 {
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
        let mut metadata = json!({
            "shape": self.shape,
            "data_type": self.data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": grid_shape}},
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
