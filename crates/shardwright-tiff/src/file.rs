//! One TIFF file: its pages indexed at open (tags only, no pixel data), and the decoding
//! of its strips and tiles with decoders from the source's pool.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use tiff::decoder::{ChunkType, Decoder, Limits};
use tiff::tags::Tag;
use tiff::TiffError as Raw;

use crate::error::{compression_name, TiffError, SUPPORTED_SAMPLES};
use crate::pool::Decoders;

/// What the source reads of interleaved samples, for pages whose samples the tiff crate
/// would not all give.
const EXTRA_SAMPLES: &str = "supported: the samples of the photometric interpretation \
     (1 gray, 3 RGB) plus extra samples marked as alpha (ExtraSamples 1 or 2), or any \
     samples in separate planes (PlanarConfiguration 2)";

/// Compressions the tiff crate decodes (with this crate's features).
const SUPPORTED: &[u16] = &[1, 5, 7, 8, 32946, 32773, 50000];

/// The element type of a page's samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DataType {
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F32,
    F64,
}

impl DataType {
    /// Its Zarr v3 name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::U8 => "uint8",
            Self::U16 => "uint16",
            Self::U32 => "uint32",
            Self::U64 => "uint64",
            Self::I8 => "int8",
            Self::I16 => "int16",
            Self::I32 => "int32",
            Self::I64 => "int64",
            Self::F32 => "float32",
            Self::F64 => "float64",
        }
    }

    /// Bytes per element.
    pub(crate) fn size(self) -> usize {
        match self {
            Self::U8 | Self::I8 => 1,
            Self::U16 | Self::I16 => 2,
            Self::U32 | Self::I32 | Self::F32 => 4,
            Self::U64 | Self::I64 | Self::F64 => 8,
        }
    }

    fn of(bits: u16, format: u16) -> Option<Self> {
        Some(match (format, bits) {
            (1, 8) => Self::U8,
            (1, 16) => Self::U16,
            (1, 32) => Self::U32,
            (1, 64) => Self::U64,
            (2, 8) => Self::I8,
            (2, 16) => Self::I16,
            (2, 32) => Self::I32,
            (2, 64) => Self::I64,
            (3, 32) => Self::F32,
            (3, 64) => Self::F64,
            _ => return None,
        })
    }
}

/// What the source needs of one full-resolution page.
#[derive(Debug, Clone)]
pub(crate) struct Page {
    /// Its position in the file's chain of IFDs.
    pub(crate) ifd: usize,
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) samples: u16,
    pub(crate) dtype: DataType,
    /// Samples stored in separate planes (PlanarConfiguration 2).
    pub(crate) planar: bool,
    /// Its strip or tile size (width, height); a strip is the image's width wide.
    pub(crate) chunk: (u32, u32),
    pub(crate) description: Option<String>,
    /// PhotometricInterpretation: 0 (WhiteIsZero) is given as stored, 6 (YCbCr) as RGB.
    pub(crate) photometric: u16,
    /// XResolution, YResolution and ResolutionUnit.
    pub(crate) resolution: Option<(f64, f64, u16)>,
}

impl Page {
    /// Its chunks per row and per column.
    pub(crate) fn chunk_grid(&self) -> (u32, u32) {
        (
            self.width.div_ceil(self.chunk.0),
            self.height.div_ceil(self.chunk.1),
        )
    }

    /// Samples in each decoded chunk.
    pub(crate) fn chunk_samples(&self) -> usize {
        if self.planar {
            1
        } else {
            usize::from(self.samples)
        }
    }

    /// `"{height}×{width}×{samples} {type}"`, for messages.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{}x{} pixels of {} {} sample(s)",
            self.height,
            self.width,
            self.samples,
            self.dtype.name()
        )
    }
}

pub(crate) type Reader = Decoder<BufReader<File>>;

/// The most bytes of one tag's values the tiff crate may allocate (an OME-XML
/// description, a large image's strip or tile offsets): a tag declaring more, whatever
/// the file holds, is an error rather than an allocation of that size.
const TAG_BYTES: usize = 1 << 30;

/// A TIFF file: its full-resolution pages.
#[derive(Debug)]
pub(crate) struct TiffFile {
    pub(crate) path: PathBuf,
    pub(crate) pages: Vec<Page>,
}

/// Whether `path` starts with a TIFF or BigTIFF header.
pub(crate) fn has_tiff_header(path: &Path) -> bool {
    header(path).is_ok_and(|h| is_header(&h))
}

fn header(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(4);
    File::open(path)?.take(4).read_to_end(&mut head)?;
    Ok(head)
}

fn is_header(head: &[u8]) -> bool {
    matches!(head, b"II*\0" | b"MM\0*" | b"II+\0" | b"MM\0+")
}

pub(crate) fn new_decoder(path: &Path) -> Result<Reader, TiffError> {
    let file = File::open(path).map_err(|e| TiffError::io(path, e))?;
    // Strips and tiles are read into this crate's buffers (`read_chunk_bytes`), whatever
    // their size; only tag values are bounded.
    let mut limits = Limits::unlimited();
    limits.decoding_buffer_size = TAG_BYTES;
    limits.ifd_value_size = TAG_BYTES;
    Decoder::new(BufReader::new(file))
        .map(|d| d.with_limits(limits))
        .map_err(|e| TiffError::io(path, format!("not a readable TIFF: {e}")))
}

impl TiffFile {
    /// Index the pages of the TIFF at `path` (reading tags only). Reduced-resolution
    /// pages (NewSubfileType bit 0) are left out; SubIFDs are not followed.
    pub(crate) fn open(path: &Path) -> Result<Self, TiffError> {
        let head = header(path).map_err(|e| TiffError::io(path, e))?;
        if !is_header(&head) {
            return Err(TiffError::NotTiff {
                path: path.display().to_string(),
                found: head.escape_ascii().to_string(),
            });
        }
        let mut decoder = new_decoder(path)?;
        let mut pages = Vec::new();
        let mut ifd = 0;
        loop {
            let tags = |e: Raw| TiffError::io(path, format!("page {ifd}: {e}"));
            let subfile: u32 = decoder
                .find_tag_unsigned(Tag::NewSubfileType)
                .map_err(tags)?
                .unwrap_or(0);
            if subfile & 1 == 0 {
                pages.push(page(&mut decoder, path, ifd, pages.is_empty())?);
            }
            if !decoder.more_images() {
                break;
            }
            ifd += 1;
            decoder
                .next_image()
                .map_err(|e| TiffError::io(path, format!("page {ifd}: {e}")))?;
        }
        // The decoder is closed here: a folder's files are read with the source's pool,
        // which bounds the files open at once.
        Ok(Self {
            path: path.to_path_buf(),
            pages,
        })
    }

    /// The decoded bytes (`height × width × samples`, native endian, edge padding cut) of
    /// chunk `chunk` of `page`, with a decoder of `decoders` (this file is the source's
    /// file `id`).
    pub(crate) fn decode(
        &self,
        decoders: &Decoders,
        id: usize,
        page: &Page,
        chunk: u32,
    ) -> Result<Vec<u8>, TiffError> {
        let (slot, at, mut decoder) = decoders.take(id, || new_decoder(&self.path))?;
        let data = self.decode_with(&mut decoder, at, page, chunk)?;
        decoders.give(slot, id, decoder, page.ifd);
        Ok(data)
    }

    fn decode_with(
        &self,
        decoder: &mut Reader,
        at: usize,
        page: &Page,
        chunk: u32,
    ) -> Result<Vec<u8>, TiffError> {
        let error = |message: String, unsupported: bool| TiffError::Decode {
            path: self.path.display().to_string(),
            page: page.ifd,
            chunk,
            message,
            unsupported,
        };
        let fail = |e: Raw| error(e.to_string(), matches!(e, Raw::UnsupportedError(_)));
        if at != page.ifd {
            decoder.seek_to_image(page.ifd).map_err(fail)?;
        }
        let count = match decoder.get_chunk_type() {
            ChunkType::Strip => decoder.strip_count(),
            ChunkType::Tile => decoder.tile_count(),
        }
        .map_err(fail)?;
        if chunk >= count {
            return Err(error(
                format!("the page has {count} strips or tiles; expected more"),
                false,
            ));
        }
        // The chunk's size by the page's tags as indexed at open; the decoder's must be the
        // same (it is not if the file was rewritten since).
        let (across, down) = page.chunk_grid();
        let within = chunk % across.saturating_mul(down).max(1);
        let (col, row) = (within % across.max(1), within / across.max(1));
        let w = page
            .chunk
            .0
            .min(page.width.saturating_sub(col.saturating_mul(page.chunk.0)));
        let h = page
            .chunk
            .1
            .min(page.height.saturating_sub(row.saturating_mul(page.chunk.1)));
        // (The tiff crate gives the bottom tiles of the planes after the first whole, their
        // rows past the page's edge too: those are cut below.)
        let found = decoder.chunk_data_dimensions(chunk);
        let same = found.0 == w && found.1 >= h;
        if !same || decoder.dimensions().ok() != Some((page.width, page.height)) {
            return Err(error(
                format!(
                    "it is {}x{} pixels; expected {h}x{w} (the file changed since it was opened?)",
                    found.1, found.0
                ),
                false,
            ));
        }
        let bytes = |rows: u32| {
            u64::from(w)
                .checked_mul(u64::from(rows))
                .and_then(|n| n.checked_mul(page.chunk_samples() as u64))
                .ok_or_else(|| shardwright::buffer::AllocError::new(u64::MAX))
                .and_then(|n| shardwright::buffer::size_of(n, page.dtype.size()))
        };
        let (mut data, len) = bytes(found.1)
            .and_then(|all| Ok((shardwright::buffer::zeroed(all)?, bytes(h)?)))
            .map_err(|e| {
                error(
                    format!(
                        "a strip or tile of {}x{w} pixels of {} {} sample(s): {e}",
                        found.1,
                        page.chunk_samples(),
                        page.dtype.name()
                    ),
                    false,
                )
            })?;
        decoder.read_chunk_bytes(chunk, &mut data).map_err(fail)?;
        data.truncate(len);
        match page.photometric {
            // The tiff crate inverts WhiteIsZero samples: give them as stored (as tifffile
            // and Bio-Formats do).
            0 => uninvert(&mut data, page.dtype),
            // It leaves JPEG's YCbCr as is: convert to RGB (JFIF's full-range transform).
            6 => ycbcr_to_rgb(&mut data),
            _ => {}
        }
        Ok(data)
    }
}

/// Undo the tiff crate's inversion of WhiteIsZero samples.
fn uninvert(data: &mut [u8], dtype: DataType) {
    match dtype {
        DataType::F32 => {
            for x in data.chunks_exact_mut(4) {
                let v = f32::from_ne_bytes([x[0], x[1], x[2], x[3]]);
                x.copy_from_slice(&(1.0 - v).to_ne_bytes());
            }
        }
        DataType::F64 => {
            for x in data.chunks_exact_mut(8) {
                let mut b = [0; 8];
                b.copy_from_slice(x);
                x.copy_from_slice(&(1.0 - f64::from_ne_bytes(b)).to_ne_bytes());
            }
        }
        DataType::U8 | DataType::U16 | DataType::U32 | DataType::U64 => {
            for x in data.iter_mut() {
                *x = !*x;
            }
        }
        _ => {}
    }
}

/// 8-bit interleaved YCbCr to RGB, in place (ITU-R BT.601 full range, as JFIF).
fn ycbcr_to_rgb(data: &mut [u8]) {
    for pixel in data.chunks_exact_mut(3) {
        let y = f32::from(pixel[0]);
        let cb = f32::from(pixel[1]) - 128.0;
        let cr = f32::from(pixel[2]) - 128.0;
        let clamp = |v: f32| v.round().clamp(0.0, 255.0) as u8;
        pixel[0] = clamp(y + 1.402 * cr);
        pixel[1] = clamp(y - 0.344_136 * cb - 0.714_136 * cr);
        pixel[2] = clamp(y + 1.772 * cb);
    }
}

/// The page the decoder is on (IFD `ifd`), checked for what the source supports.
fn page(decoder: &mut Reader, path: &Path, ifd: usize, first: bool) -> Result<Page, TiffError> {
    let tags = |e: Raw| TiffError::io(path, format!("page {ifd}: {e}"));
    let show = path.display().to_string();
    let code: u16 = decoder
        .find_tag_unsigned(Tag::Compression)
        .map_err(tags)?
        .unwrap_or(1);
    if !SUPPORTED.contains(&code) {
        return Err(TiffError::Compression {
            path: show,
            page: ifd,
            name: compression_name(code).to_string(),
            code,
        });
    }
    let samples: u16 = decoder
        .find_tag_unsigned(Tag::SamplesPerPixel)
        .map_err(tags)?
        .unwrap_or(1);
    let bits: Vec<u16> = decoder
        .find_tag_unsigned_vec(Tag::BitsPerSample)
        .map_err(tags)?
        .unwrap_or_else(|| vec![1]);
    let formats: Vec<u16> = decoder
        .find_tag_unsigned_vec(Tag::SampleFormat)
        .map_err(tags)?
        .unwrap_or_else(|| vec![1]);
    let dtype = match (bits.as_slice(), formats.as_slice()) {
        ([b, rest @ ..], [f, more @ ..])
            if rest.iter().all(|x| x == b) && more.iter().all(|x| x == f) =>
        {
            DataType::of(*b, *f)
        }
        _ => None,
    };
    let Some(dtype) = dtype else {
        return Err(TiffError::SampleLayout {
            path: show,
            page: ifd,
            found: format!(
                "{samples} sample(s) per pixel of {bits:?} bits and sample format {formats:?} \
                 (1: unsigned, 2: signed, 3: float); {SUPPORTED_SAMPLES}"
            ),
        });
    };
    let extra: Vec<u16> = decoder
        .find_tag_unsigned_vec(Tag::ExtraSamples)
        .map_err(tags)?
        .unwrap_or_default();
    let planar = decoder
        .find_tag_unsigned::<u16>(Tag::PlanarConfiguration)
        .map_err(tags)?
        == Some(2);
    let photometric: u16 = decoder
        .find_tag_unsigned(Tag::PhotometricInterpretation)
        .map_err(tags)?
        .unwrap_or(1);
    if photometric == 6 && (dtype, samples, planar) != (DataType::U8, 3, false) {
        return Err(TiffError::SampleLayout {
            path: show,
            page: ifd,
            found: format!(
                "YCbCr pixels of {samples} {} sample(s){}; YCbCr is read as 3 interleaved \
                 8-bit samples only; {SUPPORTED_SAMPLES}",
                dtype.name(),
                if planar { " in separate planes" } else { "" }
            ),
        });
    }
    // The samples the tiff crate gives per pixel of a chunk: fewer than the page has (RGB
    // with an extra sample that is not alpha: it gives RGB) would scramble the pixels.
    // (In separate planes each chunk is one sample, which it gives whole.)
    let given = decoder.colortype().map(|c| c.num_samples());
    if !given.as_ref().is_ok_and(|n| planar || *n == samples) {
        return Err(TiffError::SampleLayout {
            path: show,
            page: ifd,
            found: match given {
                Ok(n) => format!(
                    "{samples} interleaved samples per pixel (photometric interpretation \
                     {photometric}, extra samples {extra:?}) of which the tiff crate decodes \
                     {n}; {EXTRA_SAMPLES}"
                ),
                Err(e) => format!(
                    "{samples} sample(s) per pixel in photometric interpretation \
                     {photometric}, which the tiff crate does not decode ({e}); \
                     {EXTRA_SAMPLES}"
                ),
            },
        });
    }
    let (width, height) = decoder.dimensions().map_err(tags)?;
    let (cw, ch) = decoder.chunk_dimensions();
    let chunk = match decoder.get_chunk_type() {
        ChunkType::Strip => (width.max(1), ch.clamp(1, height.max(1))),
        ChunkType::Tile => (cw.max(1), ch.max(1)),
    };
    let description = if first {
        decoder
            .find_tag(Tag::ImageDescription)
            .map_err(tags)?
            .and_then(|v| v.into_string().ok())
    } else {
        None
    };
    let rational = |decoder: &mut Reader, tag| -> Option<f64> {
        match decoder.find_tag(tag).ok().flatten()? {
            tiff::decoder::ifd::Value::Rational(n, d) if d > 0 => Some(f64::from(n) / f64::from(d)),
            tiff::decoder::ifd::Value::Double(v) => Some(v),
            tiff::decoder::ifd::Value::Float(v) => Some(f64::from(v)),
            tiff::decoder::ifd::Value::Unsigned(v) => Some(f64::from(v)),
            tiff::decoder::ifd::Value::Short(v) => Some(f64::from(v)),
            _ => None,
        }
    };
    let resolution = match (
        rational(decoder, Tag::XResolution),
        rational(decoder, Tag::YResolution),
    ) {
        (Some(x), Some(y)) if first => {
            let unit = decoder
                .find_tag_unsigned::<u16>(Tag::ResolutionUnit)
                .ok()
                .flatten()
                .unwrap_or(2);
            Some((x, y, unit))
        }
        _ => None,
    };
    Ok(Page {
        ifd,
        width,
        height,
        samples,
        dtype,
        planar,
        chunk,
        description,
        photometric,
        resolution,
    })
}
