use super::*;
use crate::pyramid::ome::{group_metadata, set_windows};
use crate::pyramid::plan::PlanRequest;
use crate::pyramid::window::Window;

fn tczyx(method: Method) -> Plan {
    PlanRequest {
        factors: vec![1, 1, 1, 2, 2],
        levels: Some(3),
        method: Some(method),
        ..Default::default()
    }
    .plan(&[2, 3, 10, 64, 64], "uint16")
    .unwrap()
}

fn physical() -> ImageMetadata {
    ImageMetadata {
        scale: Some(vec![1.0, 1.0, 2.0, 0.406, 0.406]),
        ..Default::default()
    }
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
}

#[test]
fn level_scales_are_the_pixel_size_times_the_factors_so_far() {
    let plan = tczyx(Method::Mean);
    let image = physical();
    let scales: Vec<Vec<f64>> = (0..3).map(|k| image.level_transform(&plan, k).0).collect();
    assert!(close(&scales[0], &[1.0, 1.0, 2.0, 0.406, 0.406]));
    assert!(close(&scales[1], &[1.0, 1.0, 2.0, 0.812, 0.812]));
    assert!(close(&scales[2], &[1.0, 1.0, 2.0, 1.624, 1.624]));
}

#[test]
fn mean_levels_shift_to_the_centre_of_their_first_pixel() {
    let plan = tczyx(Method::Mean);
    let mut image = physical();
    // no translation given: still written, level 0's is 0
    let t: Vec<Vec<f64>> = (0..3)
        .map(|k| image.level_transform(&plan, k).1.unwrap())
        .collect();
    assert!(close(&t[0], &[0.0; 5]));
    assert!(close(&t[1], &[0.0, 0.0, 0.0, 0.203, 0.203]));
    assert!(close(&t[2], &[0.0, 0.0, 0.0, 0.609, 0.609]));
    image.translation = Some(vec![0.0, 0.0, 5.0, 10.0, -1.0]);
    let t2 = image.level_transform(&plan, 2).1.unwrap();
    assert!(close(&t2, &[0.0, 0.0, 5.0, 10.609, -0.391]));
}

#[test]
fn stride_keeps_level_0s_offset_and_writes_a_translation_only_when_given() {
    let plan = tczyx(Method::Stride);
    let mut image = physical();
    assert_eq!(image.level_transform(&plan, 2).1, None);
    image.translation = Some(vec![0.0, 0.0, 5.0, 10.0, -1.0]);
    let t2 = image.level_transform(&plan, 2).1.unwrap();
    assert!(close(&t2, &[0.0, 0.0, 5.0, 10.0, -1.0]));
}

#[test]
fn common_unit_spellings_are_written_by_their_ome_names() {
    let plan = tczyx(Method::Mean);
    let units = |u: [&str; 5]| ImageMetadata {
        units: Some(u.iter().map(|s| Some((*s).to_string())).collect()),
        ..Default::default()
    };
    let got = units(["ms", "", "µm", "um", "micron"])
        .units(&plan)
        .unwrap();
    assert_eq!(
        got,
        [
            Some("millisecond"),
            None,
            Some("micrometer"),
            Some("micrometer"),
            Some("micrometer")
        ]
    );
    let json = group_metadata(&plan, "x", &units(["s", "", "nm", "Å", "mm"]), &[]).unwrap();
    let axes = &json["attributes"]["ome"]["multiscales"][0]["axes"];
    assert_eq!(axes[0]["unit"], "second");
    assert_eq!(axes[1].get("unit"), None);
    assert_eq!(axes[3]["unit"], "angstrom");
}

fn invalid(image: &ImageMetadata, plan: &Plan) -> String {
    match image.check(plan).unwrap_err() {
        PyramidError::Invalid(m) => m,
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_physical_metadata_is_refused_naming_what_was_expected() {
    let plan = tczyx(Method::Mean);
    let with = |f: &dyn Fn(&mut ImageMetadata)| {
        let mut image = ImageMetadata::default();
        f(&mut image);
        invalid(&image, &plan)
    };
    assert!(with(&|i| i.scale = Some(vec![1.0; 3])).contains("scale must have 5 values"));
    assert!(with(&|i| i.scale = Some(vec![1.0, 1.0, 0.0, 1.0, 1.0]))
        .contains("scale values must be positive and finite; got 0 for axis 'z'"));
    assert!(with(&|i| i.translation = Some(vec![f64::NAN; 5]))
        .contains("translation values must be finite"));
    assert!(with(&|i| i.translation = Some(vec![0.0; 2])).contains("translation must have 5"));
    assert!(with(&|i| i.units = Some(vec![None; 4])).contains("units must have 5 entries"));
    let unit = |u: &'static str, d: usize| {
        move |i: &mut ImageMetadata| {
            let mut units = vec![None; 5];
            units[d] = Some(u.to_string());
            i.units = Some(units);
        }
    };
    assert!(with(&unit("furlong", 4)).contains("is not an OME-Zarr unit: use one of angstrom"));
    assert!(with(&unit("second", 4)).contains("a space axis needs a space unit"));
    assert!(with(&unit("micrometer", 0)).contains("a time axis needs a time unit"));
    assert!(with(&unit("micrometer", 1)).contains("a channel axis has no unit"));
    let channels = |n: usize, color: Option<&'static str>| {
        move |i: &mut ImageMetadata| {
            i.channels = Some(vec![
                Channel {
                    label: Some("a".into()),
                    color: color.map(String::from)
                };
                n
            ]);
        }
    };
    assert!(with(&channels(2, None))
        .contains("channels must have one entry per element of the channel axis 'c' (3); got 2"));
    assert!(
        with(&channels(3, Some("#12345"))).contains("colour '#12345' of channel 0 is not RRGGBB")
    );
}

#[test]
fn channels_without_a_channel_axis() {
    let plan = PlanRequest {
        factors: vec![2, 2],
        levels: Some(2),
        ..Default::default()
    }
    .plan(&[64, 64], "uint8")
    .unwrap();
    let one = ImageMetadata {
        channels: Some(vec![Channel {
            label: Some("DAPI".into()),
            color: Some("blue".into()),
        }]),
        ..Default::default()
    };
    let resolved = one.channels(&plan).unwrap().unwrap();
    assert_eq!(
        resolved,
        [ResolvedChannel {
            label: "DAPI".into(),
            color: "0000FF".into()
        }]
    );
    let two = ImageMetadata {
        channels: Some(vec![Channel::default(), Channel::default()]),
        ..Default::default()
    };
    assert!(invalid(&two, &plan).contains("the axes [\"y\", \"x\"] have no channel axis 'c'"));
    assert_eq!(ImageMetadata::default().channels(&plan).unwrap(), None);
}

#[test]
fn omero_channels_default_and_carry_their_windows() {
    let plan = tczyx(Method::Mean);
    let mut json = group_metadata(&plan, "x", &ImageMetadata::default(), &[]).unwrap();
    let omero = &json["attributes"]["ome"]["omero"];
    assert_eq!(omero["channels"][2]["label"], "Channel 2");
    assert_eq!(omero["channels"][0]["color"], "0000FF");
    assert_eq!(omero["channels"][1]["family"], "linear");
    assert_eq!(omero["rdefs"]["defaultZ"], 5);
    assert_eq!(omero["rdefs"]["model"], "color");
    let window = Window {
        min: 1.0,
        max: 9.0,
        start: 2.0,
        end: 8.0,
    };
    set_windows(&mut json, &[window; 3]);
    let w = &json["attributes"]["ome"]["omero"]["channels"][1]["window"];
    assert_eq!(
        (w["min"].as_f64(), w["end"].as_f64()),
        (Some(1.0), Some(8.0))
    );
}

#[test]
fn a_build_writes_the_top_levels_channel_windows_and_a_resumed_one_reads_them_back() {
    use crate::pyramid::build::{pyramid, BuildOptions};
    use crate::pyramid::source::BufferSource;
    use crate::store::Store;
    use crate::{Compressor, MemoryStore};
    use std::sync::Arc;

    // c, y, x = 2, 4, 4: channel 1 is channel 0 plus 100
    let data: Vec<u8> = (0..32u8).map(|i| if i < 16 { i } else { i + 84 }).collect();
    let source = BufferSource::new(data, vec![2, 4, 4], "uint8");
    let request = PlanRequest {
        factors: vec![1, 2, 2],
        levels: Some(2),
        axes: Some(vec!["c".into(), "y".into(), "x".into()]),
        ..Default::default()
    };
    let mut options = BuildOptions::new(request, Compressor::None);
    options.image.channels = Some(vec![Channel::default(), Channel::default()]);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let report = pyramid(&source, Arc::clone(&store), "i", &options, &mut |_| true).unwrap();
    let top = report.levels[1].read(&report.levels[1].bounds()).unwrap();
    let group = store.get("i/zarr.json").unwrap().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&group).unwrap();
    for c in 0..2 {
        let values = &top[c * 4..(c + 1) * 4];
        let w = &json["attributes"]["ome"]["omero"]["channels"][c]["window"];
        let min = f64::from(*values.iter().min().unwrap());
        let max = f64::from(*values.iter().max().unwrap());
        assert_eq!(
            (w["min"].as_f64(), w["max"].as_f64()),
            (Some(min), Some(max))
        );
    }
    store.delete("i/zarr.json").unwrap();
    options.resume = true;
    let again = pyramid(&source, Arc::clone(&store), "i", &options, &mut |_| true).unwrap();
    assert_eq!(again.shards_written, vec![0, 0]);
    assert_eq!(store.get("i/zarr.json").unwrap().unwrap(), group);
}
