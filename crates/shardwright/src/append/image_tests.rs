//! The image appender against the one-pass pyramid of the final level 0: every level
//! equal, for two methods, a factor of 1 and of 2 along the axis, with blocks crossing
//! groups and slabs, closed inside a group and continued by a new appender.

use std::sync::Arc;

use super::ImageAppender;
use crate::image::Image;
use crate::pyramid::build::{self, BuildOptions};
use crate::pyramid::downsample::Method;
use crate::pyramid::plan::PlanRequest;
use crate::pyramid::source::BufferSource;
use crate::{Array, Compressor, MemoryStore};

const FRAME: usize = 8 * 10;

fn frames(start: u64, stop: u64) -> Vec<u8> {
    (start * FRAME as u64..stop * FRAME as u64)
        .flat_map(|i| ((i * 7919 + i / 13) as u16 % 4099).to_ne_bytes())
        .collect()
}

fn options(factors: Vec<u64>, method: Method) -> BuildOptions {
    let request = PlanRequest {
        factors,
        levels: Some(3),
        method: Some(method),
        chunks: Some(vec![vec![2, 4, 4]]),
        shards: Some(vec![vec![4, 8, 8]]),
        axes: None,
    };
    BuildOptions::new(request, Compressor::Zstd { level: 1 })
}

fn reference(length: u64, options: &BuildOptions) -> Vec<Vec<u8>> {
    reference_of(frames(0, length), length, options)
}

fn reference_of(values: Vec<u8>, length: u64, options: &BuildOptions) -> Vec<Vec<u8>> {
    let source = BufferSource::new(values, vec![length, 8, 10], "uint16");
    let report = build::pyramid(
        &source,
        Arc::new(MemoryStore::new()),
        "r",
        options,
        &mut |_| true,
    )
    .unwrap();
    report
        .levels
        .iter()
        .map(|a| a.read(&a.bounds()).unwrap())
        .collect()
}

#[test]
fn every_level_equals_the_pyramid_of_the_final_level_0() {
    for method in [Method::Mean, Method::Max] {
        for along in [1, 2] {
            let factors = vec![along, 2, 2];
            let options = options(factors.clone(), method);
            let store = Arc::new(MemoryStore::new());
            let image = Image::create(store, "img", &[2, 8, 10], "uint16", None, &options).unwrap();
            let level0 = image.levels()[0].clone();
            let writer = level0
                .shard_writer(&level0.shard(&[0, 0, 0]).unwrap())
                .unwrap();
            for shard in level0.shards().collect::<Vec<_>>() {
                let w = level0.shard_writer(&shard).unwrap();
                w.write_region_of(&shard, &frames(0, 2), &level0.bounds())
                    .unwrap();
                w.commit().unwrap();
            }
            drop(writer);
            let mut appender = image.appender(0).unwrap();
            let mut t = 2;
            for k in [1, 3, 0, 5, 2] {
                appender.append(&frames(t, t + k), &[k, 8, 10]).unwrap();
                t += k;
            }
            assert_eq!(appender.length(), 13);
            let levels = appender.finish().unwrap();
            let want = reference(13, &options);
            for (l, level) in levels.iter().enumerate() {
                assert_eq!(
                    level.read(&level.bounds()).unwrap(),
                    want[l],
                    "{method:?} {along} level {l}"
                );
            }
            // Continued: each coarser level's last frame (from a partial group) is remade.
            let mut again = ImageAppender::new(&levels, &factors, method, 0).unwrap();
            for t in 13..18 {
                again.append(&frames(t, t + 1), &[8, 10]).unwrap();
            }
            let levels = again.finish().unwrap();
            let want = reference(18, &options);
            for (l, level) in levels.iter().enumerate() {
                let level = Array::open(level.store().clone(), level.path()).unwrap();
                assert_eq!(
                    level.read(&level.bounds()).unwrap(),
                    want[l],
                    "{method:?} {along} again, level {l}"
                );
            }
        }
    }
}

#[test]
fn a_coarser_level_behind_level_0_is_refed_from_it() {
    let factors = vec![2, 2, 2];
    let options = options(factors.clone(), Method::Mean);
    let store = Arc::new(MemoryStore::new());
    let image = Image::create(store, "img", &[1, 8, 10], "uint16", None, &options).unwrap();
    let mut appender = image.appender(0).unwrap();
    appender.append(&frames(1, 10), &[9, 8, 10]).unwrap(); // after an unwritten frame 0
    let levels = appender.finish().unwrap();
    // As a crash between level 0's store and level 1's leaves it: level 1 cut back.
    let level1 = levels[1].resize(vec![1, 4, 5]).unwrap();
    let levels = vec![levels[0].clone(), level1, levels[2].clone()];
    let mut again = ImageAppender::new(&levels, &factors, Method::Mean, 0).unwrap();
    again.append(&frames(10, 12), &[2, 8, 10]).unwrap();
    let levels = again.finish().unwrap();
    let mut level0 = vec![0; FRAME * 2];
    level0.extend(frames(1, 12));
    let want = reference_of(level0, 12, &options);
    for (l, level) in levels.iter().enumerate() {
        assert_eq!(level.read(&level.bounds()).unwrap(), want[l], "level {l}");
    }
}
