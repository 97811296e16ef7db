//! Each error: its kind and its message naming the file and what was expected.

mod common;

use common::data;
use shardwright::pyramid::source::Source;
use shardwright::{Domain, ErrorKind};
use shardwright_tiff::{is_tiff_spec, TiffError, TiffSource};

fn error(spec: &str) -> TiffError {
    TiffSource::open(spec).expect_err(spec)
}

#[test]
fn a_text_file_is_not_a_tiff() {
    let err = error(&data("not_a_tiff.tif"));
    assert!(matches!(err, TiffError::NotTiff { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    let text = err.to_string();
    assert!(
        text.contains("not_a_tiff.tif") && text.contains("42 or 43), found this"),
        "{text}"
    );
    assert!(!is_tiff_spec(&data("not_a_tiff.tif")));
}

#[test]
fn an_unsupported_compression_is_named() {
    let err = error(&data("lzma.tif"));
    assert!(
        matches!(err, TiffError::Compression { code: 34925, .. }),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.to_string().contains("lzma.tif"), "{err}");
    assert!(
        err.to_string()
            .contains("'LZMA' (34925) is not supported; supported: none, LZW"),
        "{err}"
    );
}

#[test]
fn pages_of_different_shapes_are_a_shape_error() {
    let err = error(&data("mixed_shapes.tif"));
    assert!(
        matches!(err, TiffError::PageMismatch { page: 1, .. }),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Shape);
    let text = err.to_string();
    assert!(
        text.contains("mixed_shapes.tif") && text.contains("21x30"),
        "{text}"
    );
    assert!(text.contains("expected 20x30"), "{text}");
}

#[test]
fn files_of_a_folder_that_differ_are_a_shape_error() {
    let err = error(&data("folder_mixed"));
    assert!(matches!(err, TiffError::FileMismatch { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Shape);
    let text = err.to_string();
    assert!(text.contains("b.tif") && text.contains("a.tif"), "{text}");
    assert!(
        text.contains("[21, 30]") && text.contains("[20, 30]"),
        "{text}"
    );
}

#[test]
fn an_empty_folder_or_pattern_or_missing_file_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
    let folder = dir.path().to_str().unwrap().to_string();
    for spec in [
        folder.clone(),
        format!("{folder}/*.tif"),
        format!("{folder}/missing.tif"),
    ] {
        let err = error(&spec);
        assert!(matches!(err, TiffError::NotFound { .. }), "{err:?}");
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert!(err.to_string().contains(&spec), "{err}");
        assert!(!is_tiff_spec(&spec));
    }
}

#[test]
fn a_folder_with_zarr_metadata_is_not_a_tiff_spec() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(data("strip_lzw.tif"), dir.path().join("a.tif")).unwrap();
    assert!(is_tiff_spec(dir.path().to_str().unwrap()));
    std::fs::write(dir.path().join("zarr.json"), "{}").unwrap();
    assert!(!is_tiff_spec(dir.path().to_str().unwrap()));
}

#[test]
fn one_bit_samples_are_an_unsupported_layout() {
    // A minimal bilevel TIFF written by the tiff crate's encoder is not available for 1
    // bit, so take a fixture and patch its BitsPerSample (tag 258, SHORT, count 1) to 1.
    let mut bytes = std::fs::read(data("packbits.tif")).unwrap();
    let entry = bytes
        .windows(8)
        .position(|w| w == [2, 1, 3, 0, 1, 0, 0, 0])
        .expect("a BitsPerSample entry");
    bytes[entry + 8] = 1;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bilevel.tif");
    std::fs::write(&path, bytes).unwrap();
    let err = error(path.to_str().unwrap());
    assert!(
        matches!(err, TiffError::SampleLayout { page: 0, .. }),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    let text = err.to_string();
    assert!(
        text.contains("bilevel.tif") && text.contains("[1] bits"),
        "{text}"
    );
}

#[test]
fn corrupt_tile_data_is_a_decode_error_naming_page_and_chunk() {
    let mut broken = std::fs::read(data("tiled_zstd.tif")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.tif");
    // Break every zstd frame (magic 28 B5 2F FD) after its header.
    let frames: Vec<usize> = (broken.windows(4).enumerate())
        .filter(|(_, w)| *w == [0x28, 0xB5, 0x2F, 0xFD])
        .map(|(i, _)| i)
        .collect();
    assert!(!frames.is_empty());
    for at in frames {
        for b in &mut broken[at + 6..at + 30] {
            *b = 0xA5;
        }
    }
    std::fs::write(&path, broken).unwrap();
    let source = TiffSource::open(path.to_str().unwrap()).unwrap();
    let err = source
        .read(&Domain::from_shape(vec![2, 64, 96]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cut.tif") && err.contains("cannot decode chunk"),
        "{err}"
    );
    assert!(err.contains("of page"), "{err}");
}

#[test]
fn an_unreadable_path_is_an_io_error() {
    let err = TiffError::Io {
        path: "x.tif".into(),
        message: "denied".into(),
    };
    assert_eq!(err.kind(), ErrorKind::Other);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("short.tif");
    std::fs::write(&path, b"II*\0\x08\0").unwrap();
    let err = error(path.to_str().unwrap());
    assert!(matches!(err, TiffError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("short.tif"), "{err}");
}

#[test]
fn rgb_pixels_in_a_file_with_a_channel_axis_are_unsupported() {
    let err = error(&data("ome_rgb_channels.ome.tif"));
    assert!(matches!(err, TiffError::Layout { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    let text = err.to_string();
    assert!(text.contains("ome_rgb_channels.ome.tif"), "{text}");
    assert!(
        text.contains("pixels of 3 samples (RGB) and a channel axis in the OME-XML"),
        "{text}"
    );
}

#[test]
fn files_with_both_t_and_z_are_not_stacked() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.tif", "b.tif"] {
        std::fs::copy(data("ome_xyzct.ome.tif"), dir.path().join(name)).unwrap();
    }
    let err = error(dir.path().to_str().unwrap());
    assert!(matches!(err, TiffError::Layout { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.to_string().contains("both t and z axes"), "{err}");
}

#[test]
fn fewer_pages_than_the_metadata_declares_is_a_shape_error() {
    let err = error(&data("imagej_short.tif"));
    assert!(
        matches!(
            err,
            TiffError::PageCount {
                expected: 4,
                found: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Shape);
    let text = err.to_string();
    assert!(
        text.contains("imagej_short.tif") && text.contains("ImageJ metadata declares 4"),
        "{text}"
    );
}

#[test]
fn malformed_ome_xml_is_a_metadata_error() {
    let err = error(&data("ome_bad.ome.tif"));
    assert!(matches!(err, TiffError::Metadata { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Other);
    let text = err.to_string();
    assert!(
        text.contains("ome_bad.ome.tif")
            && text.contains("SizeZ=\"zero\"; expected a positive integer"),
        "{text}"
    );
}

#[test]
fn interleaved_rgb_with_an_extra_sample_that_is_not_alpha_is_unsupported() {
    // SamplesPerPixel 4, ExtraSamples 0 (unspecified): the tiff crate decodes RGB, 3
    // samples, which read as 4 per pixel would scramble the pixels.
    let err = error(&data("rgb_extra.tif"));
    assert!(
        matches!(err, TiffError::SampleLayout { page: 0, .. }),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    let text = err.to_string();
    assert!(text.contains("rgb_extra.tif"), "{text}");
    assert!(
        text.contains(
            "4 interleaved samples per pixel (photometric interpretation 2, extra samples \
             [0]) of which the tiff crate decodes 3; supported: "
        ),
        "{text}"
    );
}
