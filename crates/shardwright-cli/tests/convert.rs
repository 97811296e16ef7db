//! `shardwright convert` run as users run it (the binary cargo builds): an OME-TIFF
//! fixture of the TIFF crate becomes an OME-Zarr 0.5 image whose level 0 holds the file's
//! values, whose metadata carries its axes, pixel sizes and channel names, and whose flags
//! override what the file says; `info` describes the TIFF itself.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::Value;
use shardwright::{Array, Domain, FilesystemStore};

const BIN: &str = env!("CARGO_BIN_EXE_shardwright");

/// The OME-TIFF fixture: TCZYX (2, 3, 4, 10, 12) uint16, value
/// (7t + 13c + 31z + 17y + 3x) mod 65521, 0.406 µm pixels, 2 µm z steps, 3 named channels.
fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shardwright-tiff/tests/data/ome_xyzct.ome.tif")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sw-cli-convert-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn group(dest: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dest.join("zarr.json")).unwrap()).unwrap()
}

#[test]
fn an_ome_tiff_converts_with_its_metadata_and_values() {
    let dir = scratch("ome");
    let dest = dir.join("cells.ome.zarr");
    run(&[
        "convert",
        fixture().to_str().unwrap(),
        dest.to_str().unwrap(),
        "--levels",
        "2",
        "-q",
    ]);
    let store = Arc::new(FilesystemStore::new(&dir));
    let level0 = Array::open(store.clone(), "cells.ome.zarr/0").unwrap();
    assert_eq!(level0.layout().shape(), &[2, 3, 4, 10, 12]);
    let bytes = level0
        .read(&Domain::from_shape(vec![2, 3, 4, 10, 12]))
        .unwrap();
    let got: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .collect();
    let mut i = 0;
    for t in 0..2u64 {
        for c in 0..3u64 {
            for z in 0..4u64 {
                for y in 0..10u64 {
                    for x in 0..12u64 {
                        let want = (7 * t + 13 * c + 31 * z + 17 * y + 3 * x) % 65521;
                        assert_eq!(u64::from(got[i]), want, "at {t},{c},{z},{y},{x}");
                        i += 1;
                    }
                }
            }
        }
    }
    let level1 = Array::open(store, "cells.ome.zarr/1").unwrap();
    // z steps of 2 µm against 0.406 µm pixels: z is kept, y and x halved
    assert_eq!(level1.layout().shape(), &[2, 3, 4, 5, 6]);
    let ome = &group(&dest)["attributes"]["ome"];
    let multiscale = &ome["multiscales"][0];
    let names: Vec<&str> = multiscale["axes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["t", "c", "z", "y", "x"]);
    assert_eq!(multiscale["axes"][4]["unit"], "micrometer");
    let scale = &multiscale["datasets"][0]["coordinateTransformations"][0]["scale"];
    assert_eq!(scale[2], 2.0);
    assert_eq!(scale[4], 0.406);
    assert_eq!(ome["omero"]["channels"][1]["label"], "GFP");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn flags_override_the_file_and_info_describes_the_tiff() {
    let dir = scratch("flags");
    let dest = dir.join("o.zarr");
    let tif = fixture();
    run(&[
        "convert",
        tif.to_str().unwrap(),
        dest.to_str().unwrap(),
        "--levels",
        "1",
        "--scale",
        "1,1,1,0.25,0.25",
        "--channel-names",
        "a,b,c",
        "-q",
    ]);
    let ome = &group(&dest)["attributes"]["ome"];
    let scale = &ome["multiscales"][0]["datasets"][0]["coordinateTransformations"][0]["scale"];
    assert_eq!(scale[3], 0.25);
    assert_eq!(
        ome["multiscales"][0]["datasets"].as_array().unwrap().len(),
        1
    );
    assert_eq!(ome["omero"]["channels"][2]["label"], "c");
    let info = run(&["info", tif.to_str().unwrap()]);
    assert!(info.contains("[2, 3, 4, 10, 12]"), "{info}");
    assert!(info.contains("DAPI"), "{info}");
    std::fs::remove_dir_all(&dir).unwrap();
}
