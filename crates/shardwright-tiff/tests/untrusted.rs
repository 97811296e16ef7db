//! Files whose tags declare sizes no file has: each is an error naming the file, never a
//! panic, an overflow or an allocation that aborts the process.

mod common;

use common::craft::{ascii, data_offset, long, short, tiff, Entry};
use common::data;
use shardwright::pyramid::source::Source;
use shardwright::{Domain, ErrorKind};
use shardwright_tiff::{TiffError, TiffSource};

fn error(spec: &str) -> TiffError {
    TiffSource::open(spec).expect_err(spec)
}

/// `bytes` written to `name` in a new temporary folder.
fn file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    (dir, path.to_str().unwrap().to_string())
}

#[test]
fn ome_sizes_whose_product_overflows_are_a_metadata_error() {
    // SizeZ × SizeT = 2^64, 0 when wrapped: it passed the page count check, then reading
    // indexed past the pages.
    let err = error(&data("ome_overflow.ome.tif"));
    assert!(matches!(err, TiffError::Metadata { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Other);
    let text = err.to_string();
    assert!(
        text.contains("the OME-XML metadata of '") && text.contains("ome_overflow.ome.tif"),
        "{text}"
    );
    assert!(
        text.contains(
            "its page axes (z=4294967296, c=1, t=4294967296) multiply to more pages than can \
             be counted; expected at most the file's 1 pages from page 0"
        ),
        "{text}"
    );
}

#[test]
fn imagej_sizes_whose_product_overflows_are_a_metadata_error() {
    let err = error(&data("imagej_overflow.tif"));
    assert!(matches!(err, TiffError::Metadata { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("the ImageJ metadata of '") && text.contains("c=4294967296"),
        "{text}"
    );
}

/// A one-tile page of `width × height` pixels of 4 `bits`-bit samples (RGBA), its tile
/// the whole image, with 16 bytes of data.
fn rgba_tile(width: u32, height: u32, bits: u16) -> Vec<u8> {
    let entries = vec![
        long(256, &[width]),
        long(257, &[height]),
        short(258, &[bits; 4]),
        short(259, &[1]),
        short(262, &[2]),
        short(277, &[4]),
        short(338, &[2]),
        short(339, &[1]),
        long(322, &[width]),
        long(323, &[height]),
        long(324, &[data_offset(false)]),
        long(325, &[16]),
    ];
    tiff(false, entries, &[7; 16])
}

#[test]
fn a_tile_too_large_for_memory_is_an_error_not_an_abort() {
    // 65536² pixels of 4 uint64 samples: a 128 GiB tile, declared by a 200-byte file.
    let (_dir, path) = file("huge_tile.tif", &rgba_tile(65536, 65536, 64));
    let source = TiffSource::open(&path).unwrap();
    assert_eq!(source.shape(), [4, 65536, 65536]);
    assert_eq!(source.data_type(), "uint64");
    let err = source
        .read(&Domain::new(vec![0, 0, 0], vec![1, 1, 1]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("huge_tile.tif") && err.contains("cannot decode chunk 0 of page 0"),
        "{err}"
    );
}

#[test]
fn a_tile_whose_size_overflows_is_an_error_not_a_panic() {
    // (2^32 - 1)² pixels of 4 uint64 samples: more bytes than 64 bits count.
    let (_dir, path) = file("overflow_tile.tif", &rgba_tile(u32::MAX, u32::MAX, 64));
    let source = TiffSource::open(&path).unwrap();
    let err = source
        .read(&Domain::new(vec![0, 0, 0], vec![1, 1, 1]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("overflow_tile.tif")
            && err.contains("a strip or tile of 4294967295x4294967295 pixels of 4 uint64"),
        "{err}"
    );
}

#[test]
fn a_tag_declaring_a_terabyte_of_values_is_an_error_not_an_abort() {
    // A BigTIFF whose ImageDescription declares 2^40 characters (8 are there).
    let entries: Vec<Entry> = vec![
        long(256, &[1]),
        long(257, &[1]),
        short(258, &[8]),
        short(259, &[1]),
        short(262, &[1]),
        ascii(270, 1 << 40, b"ImageJ=\0"),
        long(273, &[data_offset(true)]),
        short(277, &[1]),
        long(278, &[1]),
        long(279, &[1]),
    ];
    let (_dir, path) = file("huge_tag.tif", &tiff(true, entries, &[5]));
    let err = error(&path);
    assert!(matches!(err, TiffError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("huge_tag.tif"), "{err}");
}

#[test]
fn the_crafted_files_are_read_when_their_sizes_are_sane() {
    // The same builder, honest: a 2×2 RGBA uint8 tile reads back its bytes.
    let (_dir, path) = file("small.tif", &rgba_tile(2, 2, 8));
    let source = TiffSource::open(&path).unwrap();
    assert_eq!(source.shape(), [4, 2, 2]);
    let got = source.read(&Domain::from_shape(vec![4, 2, 2])).unwrap();
    assert_eq!(got, vec![7; 16]);
}
