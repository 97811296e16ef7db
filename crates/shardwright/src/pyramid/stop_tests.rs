//! Where `levels = None` stops, and the refusal of levels that downsample nothing.

use crate::pyramid::plan::PlanRequest;

fn shapes(request: &PlanRequest, shape: &[u64]) -> Vec<Vec<u64>> {
    let plan = request.plan(shape, "uint16").unwrap();
    plan.levels.into_iter().map(|l| l.shape).collect()
}

#[test]
fn levels_none_stops_at_the_first_level_within_one_default_chunk() {
    let request = PlanRequest {
        factors: vec![2, 2],
        ..Default::default()
    };
    // 2-d default chunks are 256 × 256: 1024 → 512 → 256 (fits), not down to 1 × 1
    let got = shapes(&request, &[1024, 1024]);
    assert_eq!(got, vec![vec![1024, 1024], vec![512, 512], vec![256, 256]]);
    // a level 0 within one chunk is the whole pyramid
    assert_eq!(shapes(&request, &[200, 100]).len(), 1);
    // every downsampled axis must fit: 300 × 40 → 150 × 20
    assert_eq!(shapes(&request, &[600, 80]).len(), 3);
}

#[test]
fn levels_none_uses_the_requested_chunks_before_clipping_and_ignores_kept_axes() {
    let request = PlanRequest {
        factors: vec![1, 2, 2],
        chunks: Some(vec![vec![1, 16, 16]]),
        ..Default::default()
    };
    // axis 0 (factor 1) is 3, above its chunk 1, and does not matter
    let got = shapes(&request, &[3, 64, 50]);
    assert_eq!(got, vec![vec![3, 64, 50], vec![3, 32, 25], vec![3, 16, 13]]);
    // one chunk shape per level: the level's own
    let per_level = PlanRequest {
        factors: vec![2, 2],
        chunks: Some(vec![vec![8, 8], vec![32, 32]]),
        ..Default::default()
    };
    assert_eq!(
        shapes(&per_level, &[64, 64]),
        vec![vec![64, 64], vec![32, 32]]
    );
}

#[test]
fn levels_none_with_no_factor_above_one_is_level_zero() {
    let request = PlanRequest {
        factors: vec![1, 1],
        ..Default::default()
    };
    assert_eq!(shapes(&request, &[5000, 5000]).len(), 1);
}

#[test]
fn explicit_levels_up_to_the_one_by_one_level_are_kept() {
    let request = PlanRequest {
        factors: vec![2, 2],
        levels: Some(7),
        ..Default::default()
    };
    let got = shapes(&request, &[64, 64]);
    assert_eq!(got.len(), 7);
    assert_eq!(got[6], vec![1, 1]);
}

#[test]
fn explicit_levels_that_downsample_nothing_are_refused_at_once() {
    let request = PlanRequest {
        factors: vec![2, 2],
        levels: Some(100_000),
        ..Default::default()
    };
    let err = request.plan(&[64, 64], "uint8").unwrap_err();
    assert_eq!(
        err.to_string(),
        "levels=100000 would add levels that downsample nothing: a (64, 64) image with \
         factors (2, 2) has at most 7 levels (the last 1×1)"
    );
    let eight = PlanRequest {
        levels: Some(8),
        ..request
    };
    assert!(eight.plan(&[64, 64], "uint8").is_err());
    let kept_axis = PlanRequest {
        factors: vec![1, 1],
        levels: Some(2),
        ..Default::default()
    };
    let err = kept_axis.plan(&[5, 8], "uint8").unwrap_err();
    assert!(
        err.to_string()
            .ends_with("has at most 1 level (the last 5×8)"),
        "{err}"
    );
    // usize::MAX is refused too, without building its shapes
    let huge = PlanRequest {
        factors: vec![2],
        levels: Some(usize::MAX),
        ..Default::default()
    };
    assert!(huge
        .plan(&[u64::MAX], "uint8")
        .unwrap_err()
        .to_string()
        .contains("at most 65 levels"));
}

#[test]
fn per_level_shapes_that_do_not_match_the_chosen_levels_say_so() {
    // Review of issue 23: the message named a level count the caller never chose.
    let request = PlanRequest {
        factors: vec![2, 2],
        chunks: Some(vec![vec![512, 512], vec![128, 128]]),
        ..Default::default()
    };
    let err = request
        .plan(&[1000, 1000], "uint16")
        .unwrap_err()
        .to_string();
    assert!(err.contains("levels=None makes"), "{err}");
    assert!(err.contains("give levels=2"), "{err}");
    let fixed = PlanRequest {
        levels: Some(2),
        ..request
    };
    assert_eq!(fixed.plan(&[1000, 1000], "uint16").unwrap().levels.len(), 2);
}
