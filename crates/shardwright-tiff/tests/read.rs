//! Every fixture read whole and by odd regions equals the formula; read grains.

mod common;

use common::{data, expected};
use proptest::prelude::*;
use shardwright::pyramid::source::Source;
use shardwright::Domain;
use shardwright_tiff::TiffSource;

/// A fixture, its axes, shape, data type and read grain.
type Case = (
    &'static str,
    &'static str,
    &'static [u64],
    &'static str,
    &'static [u64],
);

const CASES: &[Case] = &[
    // RGB and a 4th sample that is not alpha, in separate planes: every sample decodes
    (
        "rgb_extra_planar.tif",
        "cyx",
        &[4, 8, 10],
        "uint8",
        &[1, 8, 10],
    ),
    (
        "rgb_planar_tiled.tif",
        "cyx",
        &[3, 20, 30],
        "uint8",
        &[1, 16, 16],
    ),
    ("strip_none.tif", "zyx", &[3, 40, 50], "uint16", &[1, 7, 50]),
    ("strip_lzw.tif", "yx", &[40, 50], "uint8", &[9, 50]),
    ("deflate.tif", "zyx", &[2, 40, 50], "uint16", &[1, 40, 50]),
    ("packbits.tif", "yx", &[40, 50], "uint8", &[40, 50]),
    (
        "tiled_zstd.tif",
        "zyx",
        &[2, 64, 96],
        "uint16",
        &[1, 32, 32],
    ),
    ("tiled_edge.tif", "yx", &[45, 70], "uint16", &[16, 32]),
    ("bigtiff.tif", "zyx", &[3, 40, 50], "uint16", &[1, 16, 50]),
    ("bigendian.tif", "zyx", &[2, 40, 50], "uint16", &[1, 16, 16]),
    ("float32.tif", "yx", &[20, 30], "float32", &[20, 30]),
    ("miniswhite.tif", "yx", &[20, 30], "uint16", &[20, 30]),
    (
        "ome_pyramid.ome.tif",
        "zyx",
        &[2, 32, 32],
        "uint16",
        &[1, 32, 32],
    ),
    ("reduced.tif", "yx", &[20, 30], "uint16", &[20, 30]),
    ("int16.tif", "zyx", &[2, 20, 30], "int16", &[1, 5, 30]),
    ("rgb_chunky.tif", "cyx", &[3, 20, 30], "uint8", &[3, 20, 30]),
    ("rgb_planar.tif", "cyx", &[3, 20, 30], "uint8", &[1, 6, 30]),
    (
        "ome_xyzct.ome.tif",
        "tczyx",
        &[2, 3, 4, 10, 12],
        "uint16",
        &[1, 1, 1, 10, 12],
    ),
    (
        "ome_xyczt.ome.tif",
        "tczyx",
        &[2, 3, 4, 10, 12],
        "uint16",
        &[1, 1, 1, 10, 12],
    ),
    (
        "imagej.tif",
        "tczyx",
        &[2, 2, 3, 10, 12],
        "uint16",
        &[1, 1, 1, 10, 12],
    ),
    ("folder2d", "zyx", &[3, 20, 30], "uint16", &[1, 20, 30]),
    (
        "folder3d",
        "tzyx",
        &[2, 3, 20, 30],
        "uint16",
        &[1, 1, 20, 30],
    ),
    (
        "folder3d/slice_*.tif",
        "tzyx",
        &[2, 3, 20, 30],
        "uint16",
        &[1, 1, 20, 30],
    ),
];

fn names(axes: &str) -> Vec<String> {
    axes.chars().map(String::from).collect()
}

/// Regions of odd origins and sizes inside `shape`.
fn odd_regions(shape: &[u64]) -> Vec<Domain> {
    let mut out = vec![Domain::from_shape(shape.to_vec())];
    for step in [1u64, 3, 7] {
        let origin: Vec<u64> = shape.iter().map(|s| (step % *s).min(s - 1)).collect();
        let size: Vec<u64> = shape
            .iter()
            .zip(&origin)
            .map(|(s, o)| ((s - o) / 2).max(1))
            .collect();
        out.push(Domain::new(origin, size));
    }
    let last: Vec<u64> = shape.iter().map(|s| s - 1).collect();
    out.push(Domain::new(last, vec![1; shape.len()]));
    out
}

#[test]
fn every_fixture_reads_whole_and_by_odd_regions() {
    for (name, axes, shape, dtype, grain) in CASES {
        let source = TiffSource::open(&data(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(source.axes(), names(axes), "{name}");
        assert_eq!(source.shape(), *shape, "{name}");
        assert_eq!(source.data_type(), *dtype, "{name}");
        assert_eq!(source.read_grain().as_deref(), Some(*grain), "{name}");
        for region in odd_regions(shape) {
            let got = source
                .read(&region)
                .unwrap_or_else(|e| panic!("{name} {region}: {e}"));
            assert!(
                got == expected(&names(axes), &region, dtype),
                "{name} {region}"
            );
        }
    }
}

#[test]
fn jpeg_decodes_close_to_tifffile() {
    let source = TiffSource::open(&data("jpeg.tif")).unwrap();
    assert_eq!(
        (source.shape(), source.data_type()),
        (vec![64, 64], "uint8".into())
    );
    let got = source.read(&Domain::from_shape(vec![64, 64])).unwrap();
    let want = std::fs::read(data("jpeg.expected.bin")).unwrap();
    let worst = got
        .iter()
        .zip(&want)
        .map(|(a, b)| a.abs_diff(*b))
        .max()
        .unwrap();
    assert!(
        worst <= 2,
        "largest difference from libjpeg's decoding: {worst}"
    );
    let part = source
        .read(&Domain::new(vec![9, 17], vec![20, 33]))
        .unwrap();
    for (row, chunk) in part.chunks(33).enumerate() {
        assert_eq!(chunk, &got[(9 + row) * 64 + 17..][..33]);
    }
}

#[test]
fn rgb_jpeg_ycbcr_decodes_to_rgb_close_to_tifffile() {
    let source = TiffSource::open(&data("jpeg_rgb.tif")).unwrap();
    assert_eq!(source.axes(), ["c", "y", "x"]);
    let got = source.read(&Domain::from_shape(vec![3, 32, 32])).unwrap();
    let want = std::fs::read(data("jpeg_rgb.expected.bin")).unwrap();
    let worst = got
        .iter()
        .zip(&want)
        .map(|(a, b)| a.abs_diff(*b))
        .max()
        .unwrap();
    assert!(
        worst <= 3,
        "largest difference from libjpeg's decoding: {worst}"
    );
}

#[test]
fn a_read_decodes_only_the_tiles_it_meets() {
    // Break the first zstd frame only (tile 0 of page 0): regions away from it still read.
    let mut bytes = std::fs::read(data("tiled_zstd.tif")).unwrap();
    let first = bytes
        .windows(4)
        .position(|w| w == [0x28, 0xB5, 0x2F, 0xFD])
        .unwrap();
    for b in &mut bytes[first + 6..first + 30] {
        *b = 0xA5;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one_bad_tile.tif");
    std::fs::write(&path, bytes).unwrap();
    let source = TiffSource::open(path.to_str().unwrap()).unwrap();
    let axes = names("zyx");
    for region in [
        Domain::new(vec![1, 0, 0], vec![1, 64, 96]),
        Domain::new(vec![0, 32, 0], vec![1, 32, 96]),
        Domain::new(vec![0, 0, 32], vec![2, 64, 64]),
    ] {
        let got = source.read(&region).unwrap();
        assert!(got == expected(&axes, &region, "uint16"), "{region}");
    }
    let err = source
        .read(&Domain::new(vec![0, 31, 31], vec![1, 2, 2]))
        .unwrap_err();
    assert!(
        err.to_string().contains("cannot decode chunk 0 of page 0"),
        "{err}"
    );
}

#[test]
fn a_region_outside_the_array_is_an_error() {
    let source = TiffSource::open(&data("strip_lzw.tif")).unwrap();
    let err = source
        .read(&Domain::new(vec![30, 0], vec![20, 5]))
        .unwrap_err();
    assert!(err.to_string().contains("[30:50, 0:5]"), "{err}");
}

fn shape_and_region() -> impl Strategy<Value = (usize, Vec<u64>, Vec<u64>)> {
    (0..CASES.len()).prop_flat_map(|case| {
        let shape = CASES[case].2;
        let origin: Vec<_> = shape.iter().map(|s| 0..*s).collect();
        (Just(case), origin).prop_flat_map(move |(case, origin)| {
            let size: Vec<_> = shape.iter().zip(&origin).map(|(s, o)| 1..=s - o).collect();
            (Just(case), Just(origin), size)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_regions_equal_the_whole_read((case, origin, size) in shape_and_region()) {
        let (name, axes, shape, dtype, _) = CASES[case];
        let source = TiffSource::open(&data(name)).unwrap();
        let whole = source.read(&Domain::from_shape(shape.to_vec())).unwrap();
        prop_assert!(whole == expected(&names(axes), &Domain::from_shape(shape.to_vec()), dtype));
        let region = Domain::new(origin, size);
        let got = source.read(&region).unwrap();
        let element = whole.len() / shape.iter().product::<u64>() as usize;
        let mut want = vec![0u8; got.len()];
        shardwright::domain::copy::copy_block(&whole, shape, region.origin(), &mut want,
            region.shape(), &vec![0; shape.len()], region.shape(), element);
        prop_assert!(got == want, "{} {}", name, region);
    }
}
