//! N-dimensional downsampling kernels that reproduce TensorStore's `ts.downsample`
//! (verified bit for bit against TensorStore 0.1.86).
//!
//! An input array of shape `in_shape` (C order, native-endian elements) is cut into
//! blocks of `factors` elements that start at index 0 on every axis; output element `j`
//! covers input indices `[j*f, min((j+1)*f, n))` on each axis, so a partial block at the
//! high edge uses only the elements present. Each block becomes one output element:
//!
//! | method | result for a block |
//! |---|---|
//! | [`Method::Mean`] | integers and `bool`: the sum divided by the count, rounded to nearest, ties to even; floats: the sum in the element type itself (`float32` sums in `float32`), in C order from `0.0`, divided by the count |
//! | [`Method::Min`] / [`Method::Max`] | the smallest / largest element, the first in C order of equal ones (`0.0`, `-0.0`); NaN is skipped (an all-NaN block gives `+inf` / `-inf`) |
//! | [`Method::Median`] | the lower median: element `(n-1)/2` of the sorted block |
//! | [`Method::Mode`] | the most frequent value; ties go to the smallest value |
//! | [`Method::Stride`] | the block's first element |
//!
//! Times (`numpy.datetime64`, `numpy.timedelta64`) take stride, min and max (NaT skipped,
//! as `np.nanmin` / `np.nanmax` skip it; an all-NaT block gives NaT) and the mode (NaT
//! ordered after every time, as `np.sort` orders it); fixed-size strings and bytes
//! (`fixed_length_utf32`, `null_terminated_bytes`, `raw_bytes`) take stride and the mode
//! (ties to the smallest in numpy's order). TensorStore has neither; numpy is the
//! reference.
//!
//! Where TensorStore's result depends on more than the values — which zero or NaN the
//! median or the mode of floats returns, which of several NaNs a float mean ends with —
//! these kernels reproduce TensorStore's x86-64 Linux build too: a block's elements are
//! visited in TensorStore's order, selection and sorting follow libstdc++'s
//! `std::nth_element` and `std::sort` step for step, and the NaN a sum ends with follows
//! the operand order of TensorStore's compiled loops. Those corner cases are decided
//! relative to the array passed in. An array downsampled piece by piece, each piece made
//! of whole blocks, gives TensorStore's values for the whole array when each piece goes
//! through [`downsample_part`], which knows the whole array's shape (its blocks then hold
//! their elements in the whole array's order); only which NaN a float mean ends with may
//! then differ from TensorStore run on the whole array.
//!
//! As in TensorStore, a call where no axis is actually downsampled (every factor is 1 or
//! on an axis of extent 1) returns the input unchanged, whatever the method.
//!
//! ```
//! use shardwright::pyramid::downsample::{downsample, output_shape, Method};
//!
//! // A 3×3 uint8 image, halved on both axes: blocks of 2×2, 2×1, 1×2 and 1×1.
//! let input: Vec<u8> = vec![1, 2, 3, 4, 5, 6, 7, 8, 9];
//! assert_eq!(output_shape(&[3, 3], &[2, 2]), vec![2, 2]);
//! let mean = downsample(&input, &[3, 3], &[2, 2], "uint8", Method::Mean).unwrap();
//! assert_eq!(mean, vec![3, 4, 8, 9]); // (1+2+4+5)/4 = 3, (3+6)/2 = 4.5 -> 4, (7+8)/2 = 7.5 -> 8
//! let max = downsample(&input, &[3, 3], &[2, 2], "uint8", Method::Max).unwrap();
//! assert_eq!(max, vec![5, 6, 8, 9]);
//! ```

use std::fmt;
use std::str::FromStr;

mod accumulate;
mod dispatch;
mod elem;
mod fixed;
mod geometry;
mod kernel;
mod mean;
mod median_mode;
mod pick;
pub(crate) mod stdcxx;

use dispatch::dispatch;
use elem::DType;
use geometry::Geom;

/// How a block of input elements becomes one output element.
///
/// ```
/// use shardwright::pyramid::downsample::Method;
///
/// let m: Method = "median".parse().unwrap();
/// assert_eq!(m, Method::Median);
/// assert_eq!(m.to_string(), "median");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// The mean, rounded to nearest with ties to even for integers and `bool`.
    Mean,
    /// The smallest element (NaN skipped).
    Min,
    /// The largest element (NaN skipped).
    Max,
    /// The most frequent element; ties go to the smallest value.
    Mode,
    /// The lower median: element `(n-1)/2` of the sorted block.
    Median,
    /// The first element of the block.
    Stride,
}

impl Method {
    /// Every method, in the order of their names in error messages.
    ///
    /// ```
    /// use shardwright::pyramid::downsample::Method;
    ///
    /// let names: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
    /// assert_eq!(names, ["mean", "min", "max", "mode", "median", "stride"]);
    /// ```
    pub const ALL: [Method; 6] = [
        Method::Mean,
        Method::Min,
        Method::Max,
        Method::Mode,
        Method::Median,
        Method::Stride,
    ];

    /// The method's name, as TensorStore and OME-Zarr metadata spell it.
    ///
    /// ```
    /// use shardwright::pyramid::downsample::Method;
    ///
    /// assert_eq!(Method::Stride.name(), "stride");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Method::Mean => "mean",
            Method::Min => "min",
            Method::Max => "max",
            Method::Mode => "mode",
            Method::Median => "median",
            Method::Stride => "stride",
        }
    }
}

impl fmt::Display for Method {
    /// Writes [`Method::name`].
    ///
    /// ```
    /// use shardwright::pyramid::downsample::Method;
    ///
    /// assert_eq!(format!("{}", Method::Mode), "mode");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = DownsampleError;

    /// Parses a method's exact (lower-case) name.
    ///
    /// ```
    /// use shardwright::pyramid::downsample::Method;
    ///
    /// assert_eq!("max".parse::<Method>().unwrap(), Method::Max);
    /// let err = "average".parse::<Method>().unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "unknown downsampling method 'average'; expected one of mean, min, max, mode, median, stride"
    /// );
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| DownsampleError::UnknownMethod {
                given: s.to_string(),
            })
    }
}

/// The names of [`Method::ALL`], comma-separated, for error messages.
fn method_names() -> String {
    Method::ALL.map(Method::name).join(", ")
}

/// The data types [`downsample`] handles, comma-separated, for error messages.
const DATA_TYPES: &str =
    "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64 (every \
     method); numpy.datetime64, numpy.timedelta64 (stride, mode, min, max); \
     fixed_length_utf32, null_terminated_bytes, raw_bytes (stride, mode)";

/// `methods`' names, comma-separated.
fn names_of(methods: &[Method]) -> String {
    methods
        .iter()
        .map(|m| m.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a downsampling request cannot be carried out.
///
/// ```
/// use shardwright::pyramid::downsample::{downsample, DownsampleError, Method};
///
/// let err = downsample(&[0; 4], &[4], &[0], "uint8", Method::Mean).unwrap_err();
/// assert!(matches!(err, DownsampleError::Factors { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DownsampleError {
    /// A method name that is not one of [`Method::ALL`].
    #[error(
        "unknown downsampling method '{given}'; expected one of {}",
        method_names()
    )]
    UnknownMethod {
        /// The name given.
        given: String,
    },
    /// A data type the kernels do not handle (e.g. `float16`, complex, strings).
    #[error("downsampling method '{method}' does not support data type '{data_type}'; supported data types: {DATA_TYPES}")]
    UnsupportedDataType {
        /// The Zarr v3 data type name given.
        data_type: String,
        /// The method asked for.
        method: Method,
    },
    /// A data type the kernels handle with some methods only: times (stride, mode, min,
    /// max), strings and bytes (stride, mode).
    #[error("downsampling method '{method}' does not support data type '{data_type}'; the methods for it: {}", names_of(.supported))]
    MethodNotForDataType {
        /// The data type given (its spec, see [`crate::layout::data_types`]).
        data_type: String,
        /// The method asked for.
        method: Method,
        /// The methods that handle the data type.
        supported: Vec<Method>,
    },
    /// Factors of the wrong number, or a factor below 1.
    #[error("expected {ndim} downsampling factors (one per dimension), each at least 1; got {factors:?}")]
    Factors {
        /// The factors given.
        factors: Vec<u64>,
        /// The number of dimensions of the input.
        ndim: usize,
    },
    /// A part for [`downsample_part`] that is not inside its array, or not made of the
    /// array's blocks.
    #[error("a part of shape {shape:?} at {origin:?} is not made of whole downsampling blocks (factors {factors:?}) of an array of shape {array_shape:?}")]
    Part {
        /// The part's origin in the array.
        origin: Vec<u64>,
        /// The part's shape.
        shape: Vec<u64>,
        /// The whole array's shape.
        array_shape: Vec<u64>,
        /// The factors.
        factors: Vec<u64>,
    },
    /// An input buffer whose length does not match its shape and data type.
    #[error("an input of shape {shape:?} needs {expected} bytes; got {got}")]
    InputLength {
        /// The input's shape.
        shape: Vec<u64>,
        /// The bytes the shape needs (`usize::MAX` if that does not fit in a `usize`).
        expected: usize,
        /// The bytes given.
        got: usize,
    },
}

/// The shape of the output: `ceil(in_shape[i] / factors[i])` on each axis.
///
/// A factor of 0 counts as 1 here ([`downsample`] rejects it).
///
/// # Panics
/// If `factors` and `in_shape` differ in length.
///
/// ```
/// use shardwright::pyramid::downsample::output_shape;
///
/// assert_eq!(output_shape(&[1, 64, 511, 512], &[1, 2, 2, 2]), vec![1, 32, 256, 256]);
/// assert_eq!(output_shape(&[0, 5], &[2, 2]), vec![0, 3]);
/// ```
pub fn output_shape(in_shape: &[u64], factors: &[u64]) -> Vec<u64> {
    assert_eq!(
        in_shape.len(),
        factors.len(),
        "one downsampling factor per dimension"
    );
    in_shape
        .iter()
        .zip(factors)
        .map(|(&n, &f)| n.div_ceil(f.max(1)))
        .collect()
}

/// `Ok` if [`downsample`] handles `data_type` (a Zarr v3 data type name, or a spec of a
/// type with a configuration: see [`crate::layout::data_types`]) with `method`.
///
/// Every method handles `bool`, `int8`…`int64`, `uint8`…`uint64`, `float32` and
/// `float64`; `numpy.datetime64` and `numpy.timedelta64` take `stride`, `mode`, `min`
/// and `max` (NaT skipped, as `np.nanmin` / `np.nanmax`), `fixed_length_utf32`,
/// `null_terminated_bytes` and `raw_bytes` take `stride` and `mode`
/// ([`DownsampleError::MethodNotForDataType`] for the others); any other data type is
/// [`DownsampleError::UnsupportedDataType`].
///
/// ```
/// use shardwright::pyramid::downsample::{check_supported, DownsampleError, Method};
///
/// assert!(check_supported("uint16", Method::Mean).is_ok());
/// assert!(check_supported("float16", Method::Mean).is_err());
/// let text = r#"{"name":"fixed_length_utf32","configuration":{"length_bytes":8}}"#;
/// assert!(check_supported(text, Method::Mode).is_ok());
/// let err = check_supported(text, Method::Mean).unwrap_err();
/// assert!(matches!(err, DownsampleError::MethodNotForDataType { .. }));
/// assert!(err.to_string().ends_with("the methods for it: stride, mode"));
/// ```
pub fn check_supported(data_type: &str, method: Method) -> Result<(), DownsampleError> {
    dtype_for(data_type, method).map(|_| ())
}

/// The kernels' type for `data_type` if they handle it with `method`.
fn dtype_for(data_type: &str, method: Method) -> Result<DType, DownsampleError> {
    let dtype = DType::parse(data_type).ok_or_else(|| DownsampleError::UnsupportedDataType {
        data_type: data_type.to_string(),
        method,
    })?;
    let methods = dtype.methods();
    if methods.contains(&method) {
        Ok(dtype)
    } else {
        Err(DownsampleError::MethodNotForDataType {
            data_type: data_type.to_string(),
            method,
            supported: methods.to_vec(),
        })
    }
}

/// Downsample `input` by `factors` with `method`.
///
/// `input` is a C-order array of shape `in_shape` whose elements are native-endian values
/// of the Zarr v3 `data_type`. It may have any alignment. The result is a C-order array
/// of the same data type and of shape [`output_shape`]`(in_shape, factors)`. Large calls
/// are spread over rayon's thread pool.
///
/// `bool` is one byte, 0 or 1. A block's mean is true when more than half of it is true;
/// its median and mode equal the mean (as in TensorStore); its minimum is "all true", its
/// maximum "any true" (these read any non-zero byte as true and write 0 or 1; `stride`
/// and calls that downsample no axis copy bytes as they are).
///
/// # Errors
/// [`DownsampleError::Factors`] for factors of the wrong length or below 1,
/// [`DownsampleError::UnsupportedDataType`] for a data type not listed in
/// [`check_supported`], [`DownsampleError::InputLength`] for an input whose length is not
/// the shape's size.
///
/// ```
/// use shardwright::pyramid::downsample::{downsample, Method};
///
/// let input: Vec<u8> = [1u16, 2, 3, 4, 5]
///     .iter()
///     .flat_map(|v| v.to_ne_bytes())
///     .collect();
/// let out = downsample(&input, &[5], &[2], "uint16", Method::Mean).unwrap();
/// let values: Vec<u16> = out
///     .chunks_exact(2)
///     .map(|b| u16::from_ne_bytes([b[0], b[1]]))
///     .collect();
/// assert_eq!(values, vec![2, 4, 5]); // 1.5 -> 2, 3.5 -> 4, 5
/// ```
pub fn downsample(
    input: &[u8],
    in_shape: &[u64],
    factors: &[u64],
    data_type: &str,
    method: Method,
) -> Result<Vec<u8>, DownsampleError> {
    let origin = vec![0; in_shape.len()];
    downsample_part(
        input, &origin, in_shape, in_shape, factors, data_type, method,
    )
}

/// Downsample `input`, the part at `origin` of shape `in_shape` of an array of shape
/// `array_shape`, to what [`downsample`] of the whole array gives for the part's blocks.
///
/// The part must be made of whole blocks of the array: on each axis, `origin` a multiple
/// of the factor, and the part's extent a multiple of it too unless the part reaches the
/// array's high edge. The result, of shape [`output_shape`]`(in_shape, factors)`, is the
/// part of the whole array's output at `origin / factors`, equal to TensorStore's but for
/// which NaN a float mean gives. Calling [`downsample`] on the part alone can differ:
/// that is a call on a smaller array, which TensorStore handles as a whole (a part of
/// extent 1 on every downsampled axis comes back unchanged, and the blocks' elements are
/// ordered for the median and the mode by the part's own layout).
///
/// # Errors
/// As [`downsample`], and [`DownsampleError::Part`] for a part not made of whole blocks
/// of the array, or `origin` or `array_shape` of another length than `in_shape`.
///
/// ```
/// use shardwright::pyramid::downsample::{downsample, downsample_part, Method};
///
/// // A 3×3 float32 array with a NaN at [2, 2], halved on both axes: the corner block holds
/// // just that NaN, and its minimum (NaN skipped) is +inf.
/// let mut values = [0f32; 9];
/// values[8] = f32::NAN;
/// let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
/// let whole = downsample(&bytes, &[3, 3], &[2, 2], "float32", Method::Min).unwrap();
/// assert_eq!(&whole[12..], f32::INFINITY.to_ne_bytes());
/// // The corner as a part of that array gives the same; alone, it is returned unchanged.
/// let corner = &bytes[32..];
/// let part = downsample_part(corner, &[2, 2], &[1, 1], &[3, 3], &[2, 2], "float32", Method::Min);
/// assert_eq!(part.unwrap(), f32::INFINITY.to_ne_bytes());
/// let alone = downsample(corner, &[1, 1], &[2, 2], "float32", Method::Min).unwrap();
/// assert!(f32::from_ne_bytes(alone[..4].try_into().unwrap()).is_nan());
/// ```
pub fn downsample_part(
    input: &[u8],
    origin: &[u64],
    in_shape: &[u64],
    array_shape: &[u64],
    factors: &[u64],
    data_type: &str,
    method: Method,
) -> Result<Vec<u8>, DownsampleError> {
    if factors.len() != in_shape.len() || factors.contains(&0) {
        return Err(DownsampleError::Factors {
            factors: factors.to_vec(),
            ndim: in_shape.len(),
        });
    }
    if !is_part_of_blocks(origin, in_shape, array_shape, factors) {
        return Err(DownsampleError::Part {
            origin: origin.to_vec(),
            shape: in_shape.to_vec(),
            array_shape: array_shape.to_vec(),
            factors: factors.to_vec(),
        });
    }
    let dtype = dtype_for(data_type, method)?;
    let expected = in_shape
        .iter()
        .try_fold(dtype.size() as u64, |acc, &n| acc.checked_mul(n))
        .and_then(|b| usize::try_from(b).ok());
    if expected != Some(input.len()) {
        return Err(DownsampleError::InputLength {
            shape: in_shape.to_vec(),
            expected: expected.unwrap_or(usize::MAX),
            got: input.len(),
        });
    }
    if input.is_empty() {
        return Ok(Vec::new());
    }
    let Some(geom) = Geom::new(in_shape, array_shape, factors) else {
        // No axis of the array is downsampled: TensorStore hands the input back unchanged.
        return Ok(input.to_vec());
    };
    Ok(dispatch(input, &geom, dtype, method))
}

/// Whether the part at `origin` of shape `shape` is made of whole blocks of an array of
/// shape `array_shape` (all four of one length; `factors` at least 1).
fn is_part_of_blocks(origin: &[u64], shape: &[u64], array_shape: &[u64], factors: &[u64]) -> bool {
    origin.len() == shape.len()
        && array_shape.len() == shape.len()
        && origin
            .iter()
            .zip(shape)
            .zip(array_shape.iter().zip(factors))
            .all(|((&o, &n), (&whole, &f))| {
                o.checked_add(n)
                    .is_some_and(|end| end <= whole && o % f == 0 && (end == whole || n % f == 0))
            })
}

#[cfg(test)]
mod tests;
