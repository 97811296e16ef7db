//! A pyramid built from a TIFF source equals one built from the same data in memory.

mod common;

use std::sync::Arc;

use common::data;
use shardwright::layout::Compressor;
use shardwright::pyramid::build::{pyramid, BuildOptions};
use shardwright::pyramid::image_metadata::ImageMetadata;
use shardwright::pyramid::plan::PlanRequest;
use shardwright::pyramid::source::{BufferSource, Source};
use shardwright::pyramid::Method;
use shardwright::{Domain, MemoryStore, Store};
use shardwright_tiff::TiffSource;

fn build(
    source: &dyn Source,
    request: &PlanRequest,
    image: &ImageMetadata,
    store: Arc<dyn Store>,
) -> Vec<Vec<u8>> {
    let mut options = BuildOptions::new(request.clone(), Compressor::Zstd { level: 1 });
    options.image = image.clone();
    let report = pyramid(source, store, "image", &options, &mut |_| true).unwrap();
    report
        .levels
        .iter()
        .map(|level| level.read(&level.bounds()).unwrap())
        .collect()
}

#[test]
fn a_pyramid_from_tiffs_equals_one_from_memory() {
    // tiles larger than level 0's chunks (read through the source's grain), strips, OME
    let cases: &[(&str, Vec<u64>, Vec<u64>)] = &[
        ("tiled_zstd.tif", vec![1, 2, 2], vec![1, 16, 16]),
        ("strip_none.tif", vec![1, 2, 2], vec![1, 8, 16]),
        (
            "ome_xyzct.ome.tif",
            vec![1, 1, 1, 2, 2],
            vec![1, 1, 2, 4, 4],
        ),
        ("folder3d", vec![1, 1, 2, 2], vec![1, 2, 8, 8]),
    ];
    for (name, factors, chunks) in cases {
        let tiff = TiffSource::open(&data(name)).unwrap();
        let shape = tiff.shape();
        let bytes = tiff.read(&Domain::from_shape(shape.clone())).unwrap();
        let memory = BufferSource::new(bytes, shape.clone(), &tiff.data_type());
        let request = PlanRequest {
            factors: factors.clone(),
            levels: Some(3),
            method: Some(Method::Mean),
            chunks: Some(vec![chunks.clone()]),
            shards: Some(vec![chunks.iter().map(|c| c * 2).collect()]),
            axes: Some(tiff.axes()),
        };
        let image = tiff.image_metadata();
        let from_tiff = build(&tiff, &request, &image, Arc::new(MemoryStore::new()));
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(shardwright::FilesystemStore::new(dir.path()));
        let from_memory = build(&memory, &request, &image, store);
        assert_eq!(from_tiff.len(), 3, "{name}");
        assert!(from_tiff == from_memory, "{name}");
    }
}
