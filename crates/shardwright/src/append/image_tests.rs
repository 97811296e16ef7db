//! The image appender against the one-pass pyramid of the final level 0: every level
//! equal, for two methods, a factor of 1 and of 2 along the axis, with blocks crossing
//! groups and slabs, closed inside a group and continued by a new appender.

use std::ops::Range;
use std::sync::Arc;

use super::ImageAppender;
use crate::image::Image;
use crate::pyramid::build::{self, BuildOptions};
use crate::pyramid::downsample::Method;
use crate::pyramid::plan::PlanRequest;
use crate::pyramid::source::BufferSource;
use crate::store::{Store, StoreError, Version};
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

/// A memory store whose puts of keys under `prefix` fail once `armed`.
#[derive(Debug, Default)]
struct FailingUnder {
    inner: MemoryStore,
    prefix: std::sync::Mutex<Option<String>>,
}

impl FailingUnder {
    fn refuse(&self, key: &str) -> Result<(), StoreError> {
        match &*self.prefix.lock().unwrap() {
            Some(p) if key.starts_with(p.as_str()) => Err(StoreError::Io {
                key: key.to_string(),
                message: "injected failure".into(),
            }),
            _ => Ok(()),
        }
    }
}

impl Store for FailingUnder {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.get(key)
    }
    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.get_range(key, range)
    }
    fn size(&self, key: &str) -> Result<Option<u64>, StoreError> {
        self.inner.size(key)
    }
    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
        self.refuse(key)?;
        self.inner.put(key, parts)
    }
    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>, StoreError> {
        self.inner.get_versioned(key)
    }
    fn put_if(
        &self,
        key: &str,
        parts: &[&[u8]],
        expected: Option<&Version>,
    ) -> Result<(), StoreError> {
        self.refuse(key)?;
        self.inner.put_if(key, parts, expected)
    }
    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.inner.delete(key)
    }
    fn delete_if(&self, key: &str, expected: Option<&Version>) -> Result<(), StoreError> {
        self.inner.delete_if(key, expected)
    }
}

#[test]
fn a_failed_coarser_level_stops_every_append_and_finish_still_stores_level_0() {
    // The regressions: once level 1 failed, each append still added frames to level 0
    // (then raised: a retry duplicated them), and finish returned at the failed
    // reduction, so level 0's last slab was never stored.
    let options = options(vec![2, 2, 2], Method::Mean);
    let store = Arc::new(FailingUnder::default());
    let image = Image::create(store.clone(), "img", &[1, 8, 10], "uint16", None, &options).unwrap();
    let level0 = image.levels()[0].path().to_string();
    let level1 = image.levels()[1].path().to_string();
    let mut appender = image.appender(0).unwrap();
    *store.prefix.lock().unwrap() = Some(format!("{level1}/c/"));
    let mut t = 1; // after an unwritten frame 0
    let err = loop {
        assert!(t < 64, "level 1's failure never showed");
        if let Err(e) = appender.append(&frames(t, t + 1), &[8, 10]) {
            break e;
        }
        t += 1;
    };
    assert!(err.to_string().contains("injected failure"), "{err}");
    let length = appender.length();
    for retry in 0..3 {
        let again = appender.append(&frames(t, t + 1), &[8, 10]).unwrap_err();
        assert_eq!(again.to_string(), err.to_string());
        assert_eq!(
            appender.length(),
            length,
            "retry {retry} appended to level 0"
        );
    }
    let finished = appender.finish().unwrap_err();
    assert_eq!(finished.to_string(), err.to_string());
    let level0 = Array::open(store, &level0).unwrap();
    assert_eq!(level0.layout().shape(), &[length, 8, 10]);
    let mut want = vec![0; FRAME * 2];
    want.extend(frames(1, length));
    assert_eq!(level0.read(&level0.bounds()).unwrap(), want);
}
