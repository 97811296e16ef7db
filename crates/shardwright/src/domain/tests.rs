use super::copy::{copy_block, gather_strided};
use super::*;
use proptest::prelude::*;

/// Arrays of rank 1 to 6 with shard and inner chunk shapes (inner divides shard).
fn array_and_grids() -> impl Strategy<Value = (Vec<u64>, Vec<u64>, Vec<u64>)> {
    (1usize..=6).prop_flat_map(|rank| {
        let dims = proptest::collection::vec((1u64..=9, 1u64..=3, 1u64..=3), rank);
        dims.prop_map(|dims| {
            let shape: Vec<u64> = dims.iter().map(|d| d.0).collect();
            let inner: Vec<u64> = dims.iter().map(|d| d.1).collect();
            let shard: Vec<u64> = dims.iter().map(|d| d.1 * d.2).collect();
            (shape, shard, inner)
        })
    })
}

fn linear(point: &[u64], shape: &[u64]) -> usize {
    point
        .iter()
        .zip(shape)
        .fold(0, |acc, (p, s)| acc * (*s as usize) + *p as usize)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn shards_and_inner_chunks_cover_every_element_once((shape, shard, inner) in array_and_grids()) {
        let total: u64 = shape.iter().product();
        let mut seen = vec![0u8; total as usize];
        let shards = Grid::new(shape.clone(), shard.clone()).unwrap();
        let chunks = Grid::new(shape.clone(), inner.clone()).unwrap();
        for s in shards.cells() {
            prop_assert!(shards.bounds().contains(&s));
            for c in chunks.cells_meeting(&s) {
                prop_assert!(s.contains(&c), "chunk {c} outside shard {s}");
                let all = Grid::new(c.shape().to_vec(), vec![1; c.ndim()]).unwrap();
                for p in all.cells() {
                    let point: Vec<u64> = p.origin().iter().zip(c.origin()).map(|(a, b)| a + b).collect();
                    seen[linear(&point, &shape)] += 1;
                }
            }
        }
        prop_assert!(seen.iter().all(|n| *n == 1));
    }

    #[test]
    fn cells_meeting_a_region_are_exactly_those_that_intersect(
        (shape, _shard, inner) in array_and_grids(),
        seed in proptest::collection::vec((0u64..10, 0u64..10), 6),
    ) {
        let rank = shape.len();
        let origin: Vec<u64> = (0..rank).map(|d| seed[d].0 % shape[d]).collect();
        let extent: Vec<u64> = (0..rank).map(|d| 1 + seed[d].1 % (shape[d] - origin[d])).collect();
        let region = Domain::new(origin, extent);
        let grid = Grid::new(shape, inner).unwrap();
        let meeting: Vec<Domain> = grid.cells_meeting(&region).collect();
        let brute: Vec<Domain> = grid.cells().filter(|c| c.intersect(&region).is_some()).collect();
        prop_assert_eq!(meeting, brute);
    }

    #[test]
    fn copy_block_round_trips(
        (shape, _shard, inner) in array_and_grids(),
    ) {
        let n: u64 = shape.iter().product();
        let src: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
        let mut dst = vec![0u8; n as usize];
        let grid = Grid::new(shape.clone(), inner.clone()).unwrap();
        for cell in grid.cells() {
            let mut block = vec![0u8; cell.size() as usize];
            copy_block(&src, &shape, cell.origin(), &mut block, cell.shape(), &vec![0; cell.ndim()], cell.shape(), 1);
            copy_block(&block, cell.shape(), &vec![0; cell.ndim()], &mut dst, &shape, cell.origin(), cell.shape(), 1);
        }
        prop_assert_eq!(src, dst);
    }
}

#[test]
fn gather_strided_reads_negative_strides() {
    let src: Vec<u16> = (0..6).collect(); // 2×3
    let mut dst = vec![0u8; 12];
    // Reverse both axes: start at the last element.
    let base = unsafe { (src.as_ptr() as *const u8).add(10) };
    unsafe { gather_strided(base, &[2, 3], &[-6, -2], 2, &mut dst) };
    let got: Vec<u16> = dst
        .chunks(2)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .collect();
    assert_eq!(got, vec![5, 4, 3, 2, 1, 0]);
}

#[test]
fn grid_rejects_bad_input() {
    assert!(matches!(
        Grid::new(vec![4], vec![0]),
        Err(DomainError::ZeroCell(_))
    ));
    assert!(matches!(
        Grid::new(vec![4], vec![1, 1]),
        Err(DomainError::Rank { .. })
    ));
    let grid = Grid::new(vec![4, 4], vec![2, 2]).unwrap();
    assert!(matches!(
        grid.cell(&[2, 0]),
        Err(DomainError::OutOfBounds { .. })
    ));
    assert!(matches!(grid.cell(&[0]), Err(DomainError::Rank { .. })));
}

#[test]
fn domain_display_names_the_box() {
    assert_eq!(
        Domain::new(vec![1, 2], vec![3, 4]).to_string(),
        "[1:4, 2:6]"
    );
}

/// Arrays of rank 1 to 4, each dimension cut into listed cells (some past the extent) or
/// regular ones, and a region inside.
fn rectilinear_grid() -> impl Strategy<Value = (Vec<u64>, Vec<AxisCells>, Domain)> {
    let dim = (
        1u64..=4,
        proptest::collection::vec(1u64..=5, 1..=5),
        any::<bool>(),
        any::<bool>(),
    );
    proptest::collection::vec(dim, 1..=4).prop_flat_map(|dims| {
        let mut shape = Vec::new();
        let mut cells = Vec::new();
        for (regular, edges, listed, short) in &dims {
            let sum: u64 = edges.iter().sum();
            if *listed {
                // the array may end inside the last listed cell
                let last = edges.last().copied().unwrap_or(1);
                shape.push(if *short { sum - (last - 1) } else { sum });
                cells.push(AxisCells::Edges(edges.clone()));
            } else {
                shape.push(sum);
                cells.push(AxisCells::Regular(*regular));
            }
        }
        let region = shape
            .iter()
            .map(|&n| (0..n).prop_flat_map(move |o| (Just(o), 1..=n - o)))
            .collect::<Vec<_>>();
        (Just(shape), Just(cells), region).prop_map(|(shape, cells, region)| {
            let (origin, extent) = region.into_iter().unzip();
            (shape, cells, Domain::new(origin, extent))
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    #[test]
    fn rectilinear_cells_tile_the_array_once_and_meet_regions_exactly(
        (shape, cells, region) in rectilinear_grid()
    ) {
        let grid = Grid::rectilinear(shape.clone(), cells.clone()).unwrap();
        let all: Vec<Domain> = grid.cells().collect();
        prop_assert_eq!(all.len() as u64, grid.len());
        prop_assert_eq!(all.iter().map(Domain::size).sum::<u64>(), shape.iter().product::<u64>());
        for (i, a) in all.iter().enumerate() {
            prop_assert!(grid.bounds().contains(a) && !a.is_empty());
            prop_assert_eq!(grid.cell_index_at(a.origin()), a.index().unwrap().to_vec());
            prop_assert_eq!(grid.linear_index(a.index().unwrap()), i as u64);
            for b in &all[i + 1..] {
                prop_assert!(a.intersect(b).is_none(), "{} and {} overlap", a, b);
            }
        }
        let meeting: Vec<Domain> = grid.cells_meeting(&region).collect();
        let brute: Vec<Domain> = all.iter().filter(|c| c.intersect(&region).is_some()).cloned().collect();
        prop_assert_eq!(meeting, brute);
        let sizes = grid.cell_sizes();
        prop_assert_eq!(sizes.iter().map(Vec::len).map(|n| n as u64).collect::<Vec<_>>(), grid.grid_shape().to_vec());
        prop_assert!(sizes.iter().zip(&shape).all(|(s, n)| s.iter().sum::<u64>() == *n));
    }
}

#[test]
fn rectilinear_grids_refuse_edges_that_do_not_tile() {
    let short = Grid::rectilinear(vec![10], vec![AxisCells::Edges(vec![4, 5])]);
    assert!(
        matches!(short, Err(DomainError::Edges { dim: 0, .. })),
        "{short:?}"
    );
    let zero = Grid::rectilinear(
        vec![4, 4],
        vec![AxisCells::Regular(4), AxisCells::Edges(vec![4, 0])],
    );
    assert!(
        matches!(zero, Err(DomainError::Edges { dim: 1, .. })),
        "{zero:?}"
    );
    let none = Grid::rectilinear(vec![0], vec![AxisCells::Edges(vec![])]);
    assert!(matches!(none, Err(DomainError::Edges { .. })), "{none:?}");
    // an empty dimension with listed cells: no cell
    let empty = Grid::rectilinear(
        vec![0, 3],
        vec![AxisCells::Edges(vec![2]), AxisCells::Regular(3)],
    )
    .unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.cells().count(), 0);
    let unclipped = Grid::rectilinear(vec![7], vec![AxisCells::Edges(vec![4, 6])]).unwrap();
    assert_eq!(
        unclipped.cell_unclipped(&[1]).unwrap(),
        Domain::new(vec![4], vec![6]).with_index(vec![1])
    );
    assert_eq!(unclipped.cell(&[1]).unwrap(), Domain::new(vec![4], vec![3]));
}
