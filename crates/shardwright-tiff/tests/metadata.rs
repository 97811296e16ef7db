//! Axes and image metadata read from OME-XML, ImageJ descriptions and resolution tags.

mod common;

use common::data;
use shardwright::pyramid::image_metadata::{Channel, ImageMetadata};
use shardwright_tiff::TiffSource;

fn open(name: &str) -> TiffSource {
    TiffSource::open(&data(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn units(list: &[Option<&str>]) -> Option<Vec<Option<String>>> {
    Some(list.iter().map(|u| u.map(str::to_string)).collect())
}

#[test]
fn ome_xml_gives_scale_units_and_channels() {
    let image = open("ome_xyzct.ome.tif").image_metadata();
    let channel = |label: &str, color: &str| Channel {
        label: Some(label.into()),
        color: Some(color.into()),
    };
    let want = ImageMetadata {
        scale: Some(vec![1.5, 1.0, 2.0, 0.406, 0.406]),
        units: units(&[
            Some("second"),
            None,
            Some("micrometer"),
            Some("micrometer"),
            Some("micrometer"),
        ]),
        channels: Some(vec![
            channel("DAPI", "FF0000"),
            channel("GFP", "00FF00"),
            channel("RFP", "0000FF"),
        ]),
        ..Default::default()
    };
    assert_eq!(image, want);
}

#[test]
fn ome_xml_units_are_read_and_unnamed_channels_say_nothing() {
    let source = open("ome_xyczt.ome.tif");
    assert_eq!(source.axes(), ["t", "c", "z", "y", "x"]);
    let image = source.image_metadata();
    assert_eq!(image.scale, Some(vec![1.0, 1.0, 0.5, 1.0, 1.0]));
    assert_eq!(
        image.units,
        units(&[None, None, Some("nanometer"), None, None])
    );
    // three <Channel> elements with neither name nor colour: no channel list (the image
    // writes its default labels and palette), not three blanks
    assert_eq!(image.channels, None);
}

#[test]
fn imagej_gives_spacing_unit_resolution_and_frame_interval() {
    let image = open("imagej.tif").image_metadata();
    assert_eq!(image.scale, Some(vec![0.5, 1.0, 1.5, 0.25, 0.25]));
    let um = Some("micrometer");
    assert_eq!(image.units, units(&[Some("second"), None, um, um, um]));
    assert_eq!(image.channels, None);
}

#[test]
fn resolution_in_centimeters_gives_micrometers() {
    let image = open("tiled_edge.tif").image_metadata();
    assert_eq!(image.scale, Some(vec![0.5, 0.5]));
    assert_eq!(
        image.units,
        units(&[Some("micrometer"), Some("micrometer")])
    );
}

#[test]
fn a_plain_tiff_says_nothing() {
    for name in [
        "strip_none.tif",
        "strip_lzw.tif",
        "rgb_chunky.tif",
        "folder2d",
    ] {
        assert_eq!(
            open(name).image_metadata(),
            ImageMetadata::default(),
            "{name}"
        );
    }
}

#[test]
fn a_folder_takes_the_first_files_metadata_with_the_new_axis_unscaled() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..2 {
        let to = dir.path().join(format!("s{i}.tif"));
        std::fs::copy(data("tiled_edge.tif"), to).unwrap();
    }
    let source = TiffSource::open(dir.path().to_str().unwrap()).unwrap();
    assert_eq!(source.axes(), ["z", "y", "x"]);
    let image = source.image_metadata();
    assert_eq!(image.scale, Some(vec![1.0, 0.5, 0.5]));
    assert_eq!(image.units.unwrap()[0], None);
}

#[test]
fn pixel_sizes_are_none_where_the_files_declare_none() {
    // Slices with 0.1 µm pixels in x and y and no z spacing: z's size is unknown, not 1.0
    // (the image metadata's scale, for OME, says 1.0).
    let source = open("folder_resolution");
    let sizes = source.pixel_sizes();
    assert_eq!(sizes.len(), 3);
    assert_eq!(sizes[0], None);
    for size in &sizes[1..] {
        let size = size.expect("x and y sizes");
        assert!((size - 0.1).abs() < 1e-12, "{sizes:?}");
    }
    let scale = source.image_metadata().scale.expect("a scale");
    assert_eq!(scale[0], 1.0);
    let sizes = open("ome_xyzct.ome.tif").pixel_sizes();
    assert_eq!(
        sizes,
        [Some(1.5), None, Some(2.0), Some(0.406), Some(0.406)]
    );
    assert_eq!(open("strip_lzw.tif").pixel_sizes(), [None, None]);
}
