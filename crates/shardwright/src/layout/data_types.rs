//! The data types of the arrays shardwright reads and writes: how each is named, which
//! zarrs type encodes it, and how its fill value is read from and written to `zarr.json`.
//!
//! A data type is named by one string, its *spec*: the Zarr v3 name of a type without a
//! configuration (`"uint16"`), else the compact JSON of `zarr.json`'s `data_type` object
//! (`{"name":"numpy.datetime64","configuration":{"unit":"s","scale_factor":1}}`), its
//! configuration in the order zarr-python writes it. [`ArraySpec::new`](super::ArraySpec::new)
//! takes a spec, [`Layout::data_type_spec`](super::Layout::data_type_spec) gives one, and
//! pyramid sources, levels and the downsampling kernels pass them on, so a copy or a
//! pyramid of a `datetime64[10s]` array is one too.
//!
//! Every fixed-size type zarrs knows is supported, among them zarr-python's
//! `numpy.datetime64` and `numpy.timedelta64` (int64 counts of `scale_factor` units,
//! NaT = -2⁶³; every unit from `Y` to `as`, and `generic`) and `fixed_length_utf32`
//! (numpy `U<n>`: `n` UTF-32 code units). zarr-python's `null_terminated_bytes` and
//! `raw_bytes` (numpy `S<n>` and `V<n>`), which zarrs 0.23 does not know, are encoded as
//! zarrs' raw bits of the same size (`r<8n>`: bytes as they are, no endianness), the
//! array's `zarr.json` staying as written; no codec is re-implemented. Variable-length
//! types (`string`, `bytes`: zarr-python's `str` and `VariableLengthBytes`) are refused.
//!
//! Fill values are read in the forms zarr-python and zarrs write (`"NaT"` or an integer
//! for times, a string for `fixed_length_utf32`, base64 or a list of byte values for
//! bytes) and written as zarr-python writes them: times as integers (NaT as
//! -9223372036854775808), bytes as base64 (`null_terminated_bytes` without its trailing
//! NULs).
//!
//! ```
//! use shardwright::layout::{ArraySpec, Layout};
//!
//! let spec = r#"{"name":"numpy.datetime64","configuration":{"unit":"s","scale_factor":10}}"#;
//! let json = ArraySpec::new(vec![4], spec, vec![2]).fill_value(serde_json::json!("NaT")).to_json().unwrap();
//! let layout = Layout::from_json(json.as_bytes()).unwrap();
//! assert_eq!((layout.data_type_name(), layout.data_type_spec()), ("numpy.datetime64", spec));
//! assert_eq!(layout.fill_value_bytes(), i64::MIN.to_ne_bytes());
//! assert!(json.contains("\"fill_value\": -9223372036854775808"));
//! ```

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde_json::{json, Value};
use zarrs::array::{DataType, FillValue, FillValueMetadata};
use zarrs::metadata::v3::MetadataV3;

use super::{invalid, unsupported, LayoutError};

/// What a data type is, as far as shardwright treats it differently from another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// Numbers and bool, and any other fixed-size type zarrs knows.
    Plain,
    /// `numpy.datetime64` or `numpy.timedelta64`: int64 with NaT = -2⁶³.
    Time,
    /// `fixed_length_utf32`: code units of 4 bytes.
    Utf32,
    /// `null_terminated_bytes` or `raw_bytes` (and zarrs' `r<N>`): bytes as they are.
    Bytes,
}

/// A data type read from `zarr.json` (or from a spec).
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// The zarrs data type the codec chain encodes (raw bits for the bytes types zarrs
    /// does not know).
    pub(crate) codec_type: DataType,
    /// The spec naming the type (see the module docs).
    pub(crate) spec: String,
    /// The size of one element in bytes.
    pub(crate) element_size: usize,
    pub(crate) family: Family,
    name: String,
}

/// The zarr-python names of the bytes types zarrs does not know; encoded as raw bits.
const BYTES_TYPES: [&str; 2] = ["null_terminated_bytes", "raw_bytes"];

/// The names of variable-length types, refused with a suggestion.
const VARIABLE_LENGTH: [&str; 5] = [
    "string",
    "bytes",
    "variable_length_bytes",
    "variable_length_utf8",
    "binary",
];

/// The metadata of the data type `spec` names (see the module docs).
///
/// # Errors
/// [`LayoutError::Invalid`] for a spec that starts with `{` and is not a data type object.
pub(crate) fn metadata_of_spec(spec: &str) -> Result<MetadataV3, LayoutError> {
    if spec.trim_start().starts_with('{') {
        serde_json::from_str(spec)
            .map_err(|e| invalid(format!("data type {spec} is not a data type object: {e}")))
    } else {
        Ok(MetadataV3::new(spec))
    }
}

/// The `data_type` member of `zarr.json` for `metadata`: its name, or an object.
pub(crate) fn metadata_json(metadata: &MetadataV3) -> Value {
    serde_json::to_value(metadata).unwrap_or_else(|_| Value::String(metadata.name().into()))
}

/// The configuration of a data type's metadata, as a JSON object (empty if it has none).
fn configuration(metadata: &MetadataV3) -> serde_json::Map<String, Value> {
    match metadata_json(metadata) {
        Value::Object(mut object) => match object.remove("configuration") {
            Some(Value::Object(config)) => config,
            _ => serde_json::Map::new(),
        },
        _ => serde_json::Map::new(),
    }
}

/// The message refusing the variable-length type `name`.
fn variable_length(name: &str) -> LayoutError {
    unsupported(format!(
        "data type '{name}' is variable-length (zarr-python's str or bytes); shardwright \
         writes fixed-size data types only: store text as fixed_length_utf32 (numpy \
         'U<n>') and bytes as null_terminated_bytes (numpy 'S<n>') or raw_bytes ('V<n>')"
    ))
}

/// The data type `metadata` describes, or an error naming what is not supported.
///
/// # Errors
/// [`LayoutError::Unsupported`] for a type zarrs and shardwright do not know, or one that
/// is not fixed-size; [`LayoutError::Invalid`] for a bytes type without a valid
/// `length_bytes`.
pub(crate) fn resolve(metadata: &MetadataV3) -> Result<Resolved, LayoutError> {
    let name = metadata.name().to_string();
    if VARIABLE_LENGTH.contains(&name.as_str()) {
        return Err(variable_length(&name));
    }
    if BYTES_TYPES.contains(&name.as_str()) {
        let config = configuration(metadata);
        let length = config
            .get("length_bytes")
            .and_then(Value::as_u64)
            .filter(|n| (1..=1 << 32).contains(n) && config.len() == 1)
            .ok_or_else(|| {
                invalid(format!(
                    "data type '{name}' needs the configuration {{\"length_bytes\": n}} with \
                     n from 1 to 2^32, got {}",
                    Value::Object(config.clone())
                ))
            })?;
        let codec_type = DataType::from_metadata(&MetadataV3::new(format!("r{}", length * 8)))
            .map_err(|e| unsupported(format!("data type '{name}': {e}")))?;
        let spec = json!({"name": name, "configuration": {"length_bytes": length}}).to_string();
        return Ok(Resolved {
            codec_type,
            spec,
            element_size: length as usize,
            family: Family::Bytes,
            name,
        });
    }
    let codec_type = DataType::from_metadata(metadata).map_err(|_| {
        let hint = if name == "structured" {
            " (structured data types are not supported)"
        } else {
            ""
        };
        unsupported(format!("data type '{name}'{hint}"))
    })?;
    let element_size = match codec_type.fixed_size() {
        Some(size) if size > 0 => size,
        _ if codec_type.is_variable() => return Err(variable_length(&name)),
        _ => return Err(unsupported(format!("data type '{name}' (not fixed-size)"))),
    };
    let family = match name.as_str() {
        "numpy.datetime64" | "numpy.timedelta64" => Family::Time,
        "fixed_length_utf32" => Family::Utf32,
        raw if raw.starts_with('r') && raw[1..].bytes().all(|b| b.is_ascii_digit()) => {
            Family::Bytes
        }
        _ => Family::Plain,
    };
    let config = codec_type.configuration_v3();
    let spec = if config.is_empty() {
        name.clone()
    } else {
        json!({"name": name, "configuration": Value::Object(config.into())}).to_string()
    };
    Ok(Resolved {
        codec_type,
        spec,
        element_size,
        family,
        name,
    })
}

/// The data type named by `spec`.
///
/// # Errors
/// As [`metadata_of_spec`] and [`resolve`].
pub(crate) fn resolve_spec(spec: &str) -> Result<Resolved, LayoutError> {
    resolve(&metadata_of_spec(spec)?)
}

/// The size of one element of the data type `spec` names, if shardwright supports it.
///
/// ```
/// use shardwright::layout::element_size_of;
/// assert_eq!(element_size_of("uint16"), Some(2));
/// assert_eq!(element_size_of(r#"{"name":"fixed_length_utf32","configuration":{"length_bytes":20}}"#), Some(20));
/// assert_eq!(element_size_of(r#"{"name":"raw_bytes","configuration":{"length_bytes":3}}"#), Some(3));
/// assert_eq!(element_size_of("string"), None);
/// ```
#[must_use]
pub fn element_size_of(spec: &str) -> Option<usize> {
    resolve_spec(spec).ok().map(|r| r.element_size)
}

impl Resolved {
    /// The fill value `fill` (as `zarr.json` holds it) as one element's native bytes, or
    /// `None` if it is not a value of this type.
    pub(crate) fn fill_value(&self, fill: &FillValueMetadata) -> Option<FillValue> {
        if self.family == Family::Bytes {
            let bytes = match fill {
                FillValueMetadata::String(text) => BASE64.decode(text).ok()?,
                FillValueMetadata::Array(values) => values
                    .iter()
                    .map(|v| v.as_u64().and_then(|b| u8::try_from(b).ok()))
                    .collect::<Option<Vec<u8>>>()?,
                // zarrs' raw bits take an integer of their size too
                _ if !BYTES_TYPES.contains(&self.name.as_str()) => {
                    return self.codec_type.fill_value_v3(fill).ok();
                }
                _ => return None,
            };
            if bytes.len() > self.element_size {
                return None;
            }
            let mut padded = bytes;
            padded.resize(self.element_size, 0); // numpy pads S and V values with NULs
            return Some(FillValue::from(padded));
        }
        let value = self.codec_type.fill_value_v3(fill).ok()?;
        (value.size() == self.element_size).then_some(value)
    }

    /// zarr-python's default fill value of this type: NaT for times, else zero bytes (0,
    /// false, the empty string).
    pub(crate) fn default_fill(&self) -> FillValue {
        if self.family == Family::Time {
            return FillValue::from(i64::MIN);
        }
        FillValue::from(vec![0u8; self.element_size])
    }

    /// The fill value `fill` (one element's native bytes) as zarr-python writes it in
    /// `zarr.json`.
    ///
    /// # Errors
    /// [`LayoutError::Invalid`] when zarrs cannot write it.
    pub(crate) fn fill_json(&self, fill: &FillValue) -> Result<Value, LayoutError> {
        let bytes = fill.as_ne_bytes();
        match self.family {
            Family::Time => {
                let count: [u8; 8] = bytes
                    .try_into()
                    .map_err(|_| invalid("a time fill value of other than 8 bytes"))?;
                Ok(json!(i64::from_ne_bytes(count)))
            }
            Family::Bytes if BYTES_TYPES.contains(&self.name.as_str()) => {
                let kept = if self.name == "null_terminated_bytes" {
                    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
                    bytes.get(..end).unwrap_or_default()
                } else {
                    bytes
                };
                Ok(Value::String(BASE64.encode(kept)))
            }
            _ => {
                let metadata = self
                    .codec_type
                    .metadata_fill_value(fill)
                    .map_err(|e| invalid(format!("fill value: {e}")))?;
                serde_json::to_value(metadata).map_err(|e| invalid(format!("fill value: {e}")))
            }
        }
    }

    /// Whether the `bytes` codec of this type names an endianness, as zarr-python writes
    /// it: multi-byte numbers, times and UTF-32 do; bytes and one-byte types do not.
    pub(crate) fn has_endianness(&self) -> bool {
        self.family != Family::Bytes && self.element_size > 1
    }
}

#[cfg(test)]
#[path = "data_types_tests.rs"]
mod tests;
