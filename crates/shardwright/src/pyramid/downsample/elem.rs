//! The data types the kernels handle ([`DType`]) and their elements ([`Elem`]), decoded
//! from and encoded to native-endian bytes of any alignment.

use super::Method;
use crate::layout::data_types::{self, Family};

/// The data types the kernels handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DType {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    /// `numpy.datetime64` or `numpy.timedelta64`: int64, NaT = -2⁶³.
    Time,
    /// `fixed_length_utf32` of this many bytes.
    Utf32(usize),
    /// `null_terminated_bytes`, `raw_bytes` or raw bits (`r<N>`) of this many bytes.
    Bytes(usize),
}

impl DType {
    /// The type a data type spec names (see [`crate::layout::data_types`]).
    pub(super) fn parse(name: &str) -> Option<DType> {
        Some(match name {
            "bool" => DType::Bool,
            "int8" => DType::I8,
            "int16" => DType::I16,
            "int32" => DType::I32,
            "int64" => DType::I64,
            "uint8" => DType::U8,
            "uint16" => DType::U16,
            "uint32" => DType::U32,
            "uint64" => DType::U64,
            "float32" => DType::F32,
            "float64" => DType::F64,
            _ => {
                let resolved = data_types::resolve_spec(name).ok()?;
                match resolved.family {
                    Family::Time => DType::Time,
                    Family::Utf32 => DType::Utf32(resolved.element_size),
                    Family::Bytes => DType::Bytes(resolved.element_size),
                    Family::Plain => return None,
                }
            }
        })
    }

    /// The methods the kernels have for this type: all of them for numbers and bool;
    /// stride, mode, min and max for times; stride and mode for strings and bytes.
    pub(super) fn methods(self) -> &'static [Method] {
        match self {
            DType::Time => &[Method::Stride, Method::Mode, Method::Min, Method::Max],
            DType::Utf32(_) | DType::Bytes(_) => &[Method::Stride, Method::Mode],
            _ => &Method::ALL,
        }
    }

    pub(super) fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::Time => 8,
            DType::Utf32(size) | DType::Bytes(size) => size,
        }
    }
}

/// A fixed-size element read from and written to native-endian bytes.
pub(super) trait Elem: Copy + Send + Sync + PartialOrd + 'static {
    const SIZE: usize;
    /// Zero, to fill scratch buffers with before they are overwritten.
    const ZERO: Self;
    /// The value a maximum starts from: the type's minimum, `-inf` for floats.
    const LOWEST: Self;
    /// The value a minimum starts from: the type's maximum, `+inf` for floats.
    const HIGHEST: Self;
    /// Decode `dst.len()` elements from the start of `src` (any alignment).
    fn decode(src: &[u8], dst: &mut [Self]);
    /// Encode `src` into the start of `dst`.
    fn encode(src: &[Self], dst: &mut [u8]);
}

macro_rules! impl_elem {
    ($($t:ty => $n:literal, $lowest:expr, $highest:expr);* $(;)?) => {$(
        impl Elem for $t {
            const SIZE: usize = $n;
            const ZERO: Self = 0 as $t;
            const LOWEST: Self = $lowest;
            const HIGHEST: Self = $highest;
            #[inline]
            // Hot kernel loop: `src` and `dst` hold the same element count (the callers size them so).
            #[allow(clippy::indexing_slicing)]
            fn decode(src: &[u8], dst: &mut [Self]) {
                let (chunks, _) = src.as_chunks::<$n>();
                let chunks = &chunks[..dst.len()];
                for (d, c) in dst.iter_mut().zip(chunks) {
                    *d = <$t>::from_ne_bytes(*c);
                }
            }
            #[inline]
            // Hot kernel loop: `src` and `dst` hold the same element count (the callers size them so).
            #[allow(clippy::indexing_slicing)]
            fn encode(src: &[Self], dst: &mut [u8]) {
                let (chunks, _) = dst.as_chunks_mut::<$n>();
                let chunks = &mut chunks[..src.len()];
                for (c, s) in chunks.iter_mut().zip(src) {
                    *c = s.to_ne_bytes();
                }
            }
        }
    )*};
}

impl_elem!(
    u8 => 1, u8::MIN, u8::MAX;
    i8 => 1, i8::MIN, i8::MAX;
    u16 => 2, u16::MIN, u16::MAX;
    i16 => 2, i16::MIN, i16::MAX;
    u32 => 4, u32::MIN, u32::MAX;
    i32 => 4, i32::MIN, i32::MAX;
    u64 => 8, u64::MIN, u64::MAX;
    i64 => 8, i64::MIN, i64::MAX;
    f32 => 4, f32::NEG_INFINITY, f32::INFINITY;
    f64 => 8, f64::NEG_INFINITY, f64::INFINITY;
);
