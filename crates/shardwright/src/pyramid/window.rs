//! The display window of each channel (OME `omero.channels[].window`), from the data: `min`
//! and `max` the channel's range, `start` and `end` its 2% and 98% quantiles (as ngff-zarr
//! writes them; linear interpolation, numpy's default), NaNs left out. Computed from the
//! top (smallest) level's blocks as the driver writes them, or from a stored array.
//!
//! Memory is bounded: each channel keeps at most [`KEPT_VALUES`] / channels values (at
//! least 4096); past that it keeps every second value seen, then every fourth, … (a
//! deterministic sample), so the quantiles of a large top level are those of a sample while
//! `min` and `max` stay exact.

use crate::domain::Domain;
use crate::error::Result;
use crate::Array;

/// The values kept for the quantiles, all channels together.
pub const KEPT_VALUES: usize = 1 << 20;

/// The quantiles written as a window's `start` and `end`.
pub const QUANTILES: (f64, f64) = (0.02, 0.98);

/// One channel's display window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// The 2% quantile.
    pub start: f64,
    /// The 98% quantile.
    pub end: f64,
}

#[derive(Debug, Clone)]
struct Sample {
    min: f64,
    max: f64,
    values: Vec<f64>,
    stride: u64,
    seen: u64,
}

impl Sample {
    fn new() -> Self {
        Self {
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            values: Vec::new(),
            stride: 1,
            seen: 0,
        }
    }

    fn push(&mut self, v: f64, cap: usize) {
        if v.is_nan() {
            return;
        }
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        if self.seen.is_multiple_of(self.stride) {
            self.values.push(v);
            if self.values.len() > cap {
                let mut i = 0;
                self.values.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
        }
        self.seen += 1;
    }

    fn window(&self) -> Option<Window> {
        if self.values.is_empty() {
            return None;
        }
        let mut sorted = self.values.clone();
        sorted.sort_by(f64::total_cmp);
        Some(Window {
            min: self.min,
            max: self.max,
            start: quantile(&sorted, QUANTILES.0),
            end: quantile(&sorted, QUANTILES.1),
        })
    }
}

/// The `q` quantile of `sorted` (not empty), interpolated linearly as numpy's default.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let last = sorted.len().saturating_sub(1);
    let position = q * last as f64;
    let lo = position.floor() as usize;
    let hi = (lo + 1).min(last);
    let t = position - lo as f64;
    let at = |i: usize| sorted.get(i).copied().unwrap_or(f64::NAN);
    let (a, b) = (at(lo), at(hi));
    if t >= 0.5 {
        b - (b - a) * (1.0 - t)
    } else {
        a + (b - a) * t
    }
}

/// The windows of the channels of one level, accumulated block by block.
///
/// ```
/// use shardwright::domain::Domain;
/// use shardwright::pyramid::window::ChannelWindows;
/// // 2 channels (axis 0) of 5 uint8 values each
/// let mut windows = ChannelWindows::new("uint8", Some(0), 2);
/// windows.observe(&Domain::new(vec![0, 0], vec![2, 5]), &[1, 2, 3, 4, 5, 10, 20, 30, 40, 50]);
/// let w = windows.windows();
/// assert_eq!((w[0].min, w[0].max, w[1].min, w[1].max), (1.0, 5.0, 10.0, 50.0));
/// assert!((w[1].end - 49.2).abs() < 1e-9); // np.quantile([10, 20, 30, 40, 50], 0.98)
/// ```
#[derive(Debug, Clone)]
pub struct ChannelWindows {
    data_type: String,
    channel_axis: Option<usize>,
    cap: usize,
    channels: Vec<Sample>,
}

impl ChannelWindows {
    /// An accumulator for `channels` channels along `channel_axis` (`None`: one channel)
    /// of elements of `data_type`.
    #[must_use]
    pub fn new(data_type: &str, channel_axis: Option<usize>, channels: usize) -> Self {
        let channels = if channel_axis.is_some() {
            channels.max(1)
        } else {
            1
        };
        Self {
            data_type: data_type.to_string(),
            channel_axis,
            cap: (KEPT_VALUES / channels).max(4096),
            channels: vec![Sample::new(); channels],
        }
    }

    /// An accumulator that observes nothing (no channels: [`windows`](Self::windows) is
    /// empty), for a build that writes no `omero` metadata.
    #[must_use]
    pub fn ignoring() -> Self {
        Self {
            data_type: String::new(),
            channel_axis: None,
            cap: 0,
            channels: Vec::new(),
        }
    }

    /// An accumulator for `array`'s channels: its axis named `c`, if any.
    #[must_use]
    pub fn for_array(array: &Array) -> Self {
        let layout = array.layout();
        let axis = layout
            .metadata()
            .dimension_names
            .as_ref()
            .and_then(|names| names.iter().position(|n| n.as_deref() == Some("c")));
        let count = axis
            .and_then(|c| layout.shape().get(c))
            .copied()
            .unwrap_or(1);
        Self::new(layout.data_type_name(), axis, count as usize)
    }

    /// Take the values of `block` (`data`: its raw native-endian elements, C order).
    /// Data types without an order (complex) are not observed.
    pub fn observe(&mut self, block: &Domain, data: &[u8]) {
        if self.channels.is_empty() {
            return;
        }
        let Some((size, decode)) = decoder(&self.data_type) else {
            return;
        };
        // elements in a run of one channel, and the channel of each run
        let (shape, origin) = (block.shape(), block.origin());
        let (run, along) = match self.channel_axis.and_then(|c| {
            let (n, at) = (shape.get(c)?, origin.get(c)?);
            Some((shape.get(c + 1..)?.iter().product::<u64>(), (*n, *at)))
        }) {
            Some((run, along)) => (run as usize, Some(along)),
            None => (usize::MAX, None),
        };
        let run_bytes = run.saturating_mul(size).max(size);
        for (r, bytes) in data.chunks(run_bytes).enumerate() {
            let channel = along.map_or(0, |(n, at)| at as usize + r % n.max(1) as usize);
            let cap = self.cap;
            let Some(sample) = self.channels.get_mut(channel) else {
                continue;
            };
            for element in bytes.chunks_exact(size) {
                sample.push(decode(element), cap);
            }
        }
    }

    /// Take every value of `array` (read shard by shard).
    ///
    /// # Errors
    /// As [`Array::read`].
    pub fn observe_array(&mut self, array: &Array) -> Result<()> {
        for shard in array.shards() {
            let data = array.read(&shard)?;
            self.observe(&shard, &data);
        }
        Ok(())
    }

    /// The window of each channel; a channel with no value seen (or only NaNs) gets
    /// `0, 0, 0, 0`.
    #[must_use]
    pub fn windows(&self) -> Vec<Window> {
        self.channels
            .iter()
            .map(|s| {
                s.window().unwrap_or(Window {
                    min: 0.0,
                    max: 0.0,
                    start: 0.0,
                    end: 0.0,
                })
            })
            .collect()
    }
}

type Decode = fn(&[u8]) -> f64;

fn decoder(data_type: &str) -> Option<(usize, Decode)> {
    /// The first `N` bytes of `b` (the caller's chunks have `N`; zeros past the end).
    fn bytes<const N: usize>(b: &[u8]) -> [u8; N] {
        let mut out = [0; N];
        for (o, i) in out.iter_mut().zip(b) {
            *o = *i;
        }
        out
    }
    Some(match data_type {
        "bool" | "uint8" => (1, |b| f64::from(u8::from_ne_bytes(bytes(b)))),
        "int8" => (1, |b| f64::from(i8::from_ne_bytes(bytes(b)))),
        "uint16" => (2, |b| f64::from(u16::from_ne_bytes(bytes(b)))),
        "int16" => (2, |b| f64::from(i16::from_ne_bytes(bytes(b)))),
        "uint32" => (4, |b| f64::from(u32::from_ne_bytes(bytes(b)))),
        "int32" => (4, |b| f64::from(i32::from_ne_bytes(bytes(b)))),
        "uint64" => (8, |b| u64::from_ne_bytes(bytes(b)) as f64),
        "int64" => (8, |b| i64::from_ne_bytes(bytes(b)) as f64),
        "float32" => (4, |b| f64::from(f32::from_ne_bytes(bytes(b)))),
        "float64" => (8, |b| f64::from_ne_bytes(bytes(b))),
        "float16" => (2, |b| half_to_f64(u16::from_ne_bytes(bytes(b)))),
        "bfloat16" => (2, |b| {
            f64::from(f32::from_bits(
                u32::from(u16::from_ne_bytes(bytes(b))) << 16,
            ))
        }),
        _ => return None,
    })
}

/// An IEEE half-precision value.
fn half_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 == 0 { 1.0 } else { -1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let fraction = f64::from(bits & 0x3ff);
    sign * match exponent {
        0 => fraction * 2f64.powi(-24),
        31 if fraction == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + fraction / 1024.0) * 2f64.powi(e - 15),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_numpy() {
        // np.quantile(np.arange(11.0), [0.02, 0.98]) == [0.2, 9.8]
        let sorted: Vec<f64> = (0..11).map(f64::from).collect();
        assert!((quantile(&sorted, 0.02) - 0.2).abs() < 1e-12);
        assert!((quantile(&sorted, 0.98) - 9.8).abs() < 1e-12);
        assert_eq!(quantile(&[7.0], 0.5), 7.0);
    }

    #[test]
    fn half_floats_decode() {
        assert_eq!(half_to_f64(0x3c00), 1.0);
        assert_eq!(half_to_f64(0xc000), -2.0);
        assert_eq!(half_to_f64(0x0001), 2f64.powi(-24));
    }

    #[test]
    fn a_large_channel_keeps_a_bounded_sample_and_its_exact_range() {
        let mut windows = ChannelWindows::new("uint16", None, 1);
        let data: Vec<u8> = (0..3 * KEPT_VALUES as u64)
            .flat_map(|i| ((i % 60_000) as u16).to_ne_bytes())
            .collect();
        windows.observe(&Domain::new(vec![0], vec![3 * KEPT_VALUES as u64]), &data);
        assert!(windows.channels[0].values.len() <= KEPT_VALUES);
        let w = windows.windows()[0];
        assert_eq!((w.min, w.max), (0.0, 59_999.0));
        assert!(
            (w.start - 1200.0).abs() < 100.0 && (w.end - 58_800.0).abs() < 100.0,
            "{w:?}"
        );
    }

    #[test]
    fn nans_are_left_out_and_a_channel_without_values_is_zero() {
        let mut windows = ChannelWindows::new("float32", Some(0), 2);
        let data: Vec<u8> = [f32::NAN, 2.0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        windows.observe(&Domain::new(vec![0, 0], vec![1, 2]), &data);
        let w = windows.windows();
        assert_eq!((w[0].min, w[0].max), (2.0, 2.0));
        assert_eq!(
            w[1],
            Window {
                min: 0.0,
                max: 0.0,
                start: 0.0,
                end: 0.0
            }
        );
    }
}
