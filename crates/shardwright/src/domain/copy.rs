//! Copying n-dimensional blocks of fixed-size elements between byte buffers.
//!
//! Buffers are C-ordered (row-major) arrays of `elem_size`-byte elements. The copies move
//! the longest contiguous runs they can: trailing dimensions that a block covers whole in
//! both buffers are merged into one run.
//!
//! ```
//! use shardwright::domain::copy::copy_block;
//!
//! // Copy a 2×2 block from (1, 1) of a 3×3 u8 array to (0, 0) of a 2×2 one.
//! let src: Vec<u8> = (0..9).collect();
//! let mut dst = vec![0u8; 4];
//! copy_block(&src, &[3, 3], &[1, 1], &mut dst, &[2, 2], &[0, 0], &[2, 2], 1);
//! assert_eq!(dst, vec![4, 5, 7, 8]);
//! ```

/// Copy a block of `block` elements from `src` (an array of `src_shape`, block at
/// `src_origin`) into `dst` (an array of `dst_shape`, block at `dst_origin`).
///
/// # Panics
/// Panics if the ranks differ, the block does not fit either array, or a buffer is not
/// exactly its shape's size. Callers check their input first; these are bugs, not input.
#[allow(clippy::too_many_arguments)]
pub fn copy_block(
    src: &[u8],
    src_shape: &[u64],
    src_origin: &[u64],
    dst: &mut [u8],
    dst_shape: &[u64],
    dst_origin: &[u64],
    block: &[u64],
    elem_size: usize,
) {
    assert_eq!(
        src.len() as u64,
        src_shape.iter().product::<u64>() * elem_size as u64
    );
    if block.is_empty() {
        copy_run(dst, 0, src, 0, elem_size);
        return;
    }
    for_each_run(
        [src_shape, dst_shape],
        [src_origin, dst_origin],
        block,
        elem_size,
        dst.len(),
        |[s, t], run| copy_run(dst, t, src, s, run),
    );
}

/// Copy `len` bytes from `src[s..]` to `dst[t..]`; the callers' checks keep both inside
/// their buffers (an empty copy otherwise, never a panic).
#[inline]
fn copy_run(dst: &mut [u8], t: usize, src: &[u8], s: usize, len: usize) {
    let to = dst.get_mut(t..t.saturating_add(len));
    let from = src.get(s..s.saturating_add(len));
    if let (Some(to), Some(from)) = (to, from) {
        to.copy_from_slice(from);
    }
}

/// Call `run([offset in each buffer], bytes)` for each contiguous run of a block of `block`
/// elements in buffers that are arrays of `shapes` (the block at `origins` in each), the
/// last buffer `last_len` bytes long; trailing dimensions that the block covers whole in
/// every buffer are merged into one run. Nothing for an empty block.
///
/// # Panics
/// For ranks that differ, a block outside a buffer, or a last buffer that is not its
/// shape's size (bugs, not input).
fn for_each_run<const N: usize>(
    shapes: [&[u64]; N],
    origins: [&[u64]; N],
    block: &[u64],
    elem_size: usize,
    last_len: usize,
    mut run: impl FnMut([usize; N], usize),
) {
    let rank = block.len();
    for (shape, origin) in shapes.iter().zip(&origins) {
        assert!(shape.len() == rank && origin.len() == rank);
        for ((o, b), s) in origin.iter().zip(block).zip(*shape) {
            assert!(
                o.checked_add(*b).is_some_and(|end| end <= *s),
                "block outside a buffer"
            );
        }
    }
    if let Some(shape) = shapes.last() {
        assert_eq!(
            last_len as u64,
            shape.iter().product::<u64>() * elem_size as u64
        );
    }
    if rank == 0 || block.contains(&0) {
        return;
    }
    // Merge trailing dimensions that the block covers whole in every buffer.
    let mut split = rank - 1;
    while split > 0
        && shapes
            .iter()
            .all(|shape| block.get(split) == shape.get(split))
    {
        split -= 1;
    }
    let (outer, inner) = block.split_at_checked(split).unwrap_or((block, &[]));
    let bytes = inner.iter().product::<u64>() as usize * elem_size;
    let strides = shapes.map(|shape| strides(shape, elem_size));
    let mut counter = vec![0u64; split];
    loop {
        let mut offsets = [0usize; N];
        for ((offset, origin), strides) in offsets.iter_mut().zip(&origins).zip(&strides) {
            // `counter` covers the outer dimensions; the inner ones start at the origin.
            *offset = origin
                .iter()
                .zip(strides)
                .enumerate()
                .map(|(d, (o, s))| (o + counter.get(d).copied().unwrap_or(0)) as usize * s)
                .sum();
        }
        run(offsets, bytes);
        if !increment(&mut counter, outer) {
            break;
        }
    }
}

/// Set every element of a block of `block` elements of `dst` (an array of `dst_shape`,
/// block at `dst_origin`) to `value` (one element's bytes).
///
/// ```
/// let mut dst = vec![0u8; 6];
/// shardwright::domain::copy::fill_block(&mut dst, &[2, 3], &[0, 1], &[2, 2], &[5]);
/// assert_eq!(dst, vec![0, 5, 5, 0, 5, 5]);
/// ```
///
/// # Panics
/// As [`copy_block`]: for ranks that differ, a block outside `dst` or a buffer that is not
/// its shape's size (bugs, not input).
pub fn fill_block(
    dst: &mut [u8],
    dst_shape: &[u64],
    dst_origin: &[u64],
    block: &[u64],
    value: &[u8],
) {
    if block.is_empty() {
        copy_run(dst, 0, value, 0, value.len());
        return;
    }
    for_each_run(
        [dst_shape],
        [dst_origin],
        block,
        value.len(),
        dst.len(),
        |[t], run| {
            if let Some(dst) = dst.get_mut(t..t.saturating_add(run)) {
                fill(dst, value);
            }
        },
    );
}

/// Fill `dst` (a C-ordered array of `dst_shape`) with copies of the element `value`.
///
/// ```
/// let mut dst = vec![0u8; 6];
/// shardwright::domain::copy::fill(&mut dst, &[7, 1]);
/// assert_eq!(dst, vec![7, 1, 7, 1, 7, 1]);
/// ```
pub fn fill(dst: &mut [u8], value: &[u8]) {
    if let Some(&first) = value.first().filter(|&&v| value.iter().all(|b| *b == v)) {
        dst.fill(first);
    } else if value.is_empty() {
        dst.fill(0);
    } else {
        for element in dst.chunks_exact_mut(value.len()) {
            element.copy_from_slice(value);
        }
    }
}

/// Whether every element of `data` equals the element `value`.
///
/// ```
/// assert!(shardwright::domain::copy::all_equal(&[0, 1, 0, 1], &[0, 1]));
/// assert!(!shardwright::domain::copy::all_equal(&[0, 1, 1, 1], &[0, 1]));
/// ```
#[must_use]
pub fn all_equal(data: &[u8], value: &[u8]) -> bool {
    if value.is_empty() || !data.len().is_multiple_of(value.len()) {
        return false;
    }
    if let Some(&v) = value.first().filter(|&&v| value.iter().all(|b| *b == v)) {
        // Word-at-a-time comparison: this runs on every chunk written.
        let (head, words, tail) = unsafe { data.align_to::<u64>() };
        let word = u64::from_ne_bytes([v; 8]);
        head.iter().all(|b| *b == v)
            && words.iter().all(|w| *w == word)
            && tail.iter().all(|b| *b == v)
    } else {
        data.chunks_exact(value.len()).all(|e| e == value)
    }
}

/// Gather a strided block of elements into a C-ordered buffer.
///
/// `base` points at the block's first element; `strides` are in bytes (negative strides
/// allowed), one per dimension of `shape`. `dst` receives the block in C order.
///
/// # Safety
/// Every element `base + sum(i[d] * strides[d])` for `i` inside `shape` must be readable
/// for `elem_size` bytes for the duration of the call, and must not overlap `dst`.
///
/// ```
/// use shardwright::domain::copy::gather_strided;
/// // A transposed 2×3 view of a 3×2 u8 array.
/// let src: Vec<u8> = vec![0, 1, 2, 3, 4, 5];
/// let mut dst = vec![0u8; 6];
/// unsafe { gather_strided(src.as_ptr(), &[2, 3], &[1, 2], 1, &mut dst) };
/// assert_eq!(dst, vec![0, 2, 4, 1, 3, 5]);
/// ```
// `shape` and `strides` have one length (asserted first) and `rank > 0` where they are
// indexed by `rank - 1` or `split <= rank - 1`; a hot copy loop over raw pointers.
#[allow(clippy::indexing_slicing)]
pub unsafe fn gather_strided(
    base: *const u8,
    shape: &[u64],
    strides: &[isize],
    elem_size: usize,
    dst: &mut [u8],
) {
    assert_eq!(shape.len(), strides.len());
    let total: u64 = shape.iter().product();
    assert_eq!(dst.len() as u64, total * elem_size as u64);
    if total == 0 {
        return;
    }
    let rank = shape.len();
    if rank == 0 {
        std::ptr::copy_nonoverlapping(base, dst.as_mut_ptr(), elem_size);
        return;
    }
    // Merge trailing dimensions that are contiguous in the source.
    let mut split = rank - 1;
    let mut expected = elem_size as isize;
    let contiguous_last = strides[rank - 1] == expected;
    if contiguous_last {
        expected *= shape[rank - 1] as isize;
        while split > 0 && strides[split - 1] == expected {
            split -= 1;
            expected *= shape[split] as isize;
        }
    }
    let outer = &shape[..split.min(rank)];
    let (run_elems, inner_stride) = if contiguous_last {
        (shape[split..].iter().product::<u64>() as usize, 0)
    } else {
        (shape[rank - 1] as usize, strides[rank - 1])
    };
    let outer = if contiguous_last {
        outer
    } else {
        &shape[..rank - 1]
    };
    let mut counter = vec![0u64; outer.len()];
    let mut out = dst.as_mut_ptr();
    loop {
        let mut p = base;
        for (d, i) in counter.iter().enumerate() {
            p = p.offset(*i as isize * strides[d]);
        }
        if contiguous_last {
            let n = run_elems * elem_size;
            std::ptr::copy_nonoverlapping(p, out, n);
            out = out.add(n);
        } else {
            for _ in 0..run_elems {
                std::ptr::copy_nonoverlapping(p, out, elem_size);
                p = p.offset(inner_stride);
                out = out.add(elem_size);
            }
        }
        if !increment(&mut counter, outer) {
            break;
        }
    }
}

/// C-order byte strides of an array of `shape`.
fn strides(shape: &[u64], elem_size: usize) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut stride = elem_size;
    for (s, &n) in strides.iter_mut().zip(shape).rev() {
        *s = stride;
        stride = stride.saturating_mul(n as usize);
    }
    strides
}

/// Advance an odometer over `extent`; false when it wraps around.
fn increment(counter: &mut [u64], extent: &[u64]) -> bool {
    for (c, &e) in counter.iter_mut().zip(extent).rev() {
        *c += 1;
        if *c < e {
            return true;
        }
        *c = 0;
    }
    false
}
