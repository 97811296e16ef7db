//! libstdc++'s `std::sort` and `std::nth_element` (GCC's `bits/stl_algo.h` and
//! `bits/stl_heap.h`, unchanged for many releases), step for step, with `operator<`.
//!
//! With NaN, `<` is not a strict weak order and libstdc++'s unguarded loops may run off
//! the range (undefined behaviour in C++); here those loops stop at the range's ends.

/// Sort `v` as `std::sort(v.begin(), v.end())` does.
pub(crate) fn sort<T: Copy + PartialOrd>(v: &mut [T]) {
    let n = v.len();
    if n == 0 {
        return;
    }
    introsort_loop(v, 0, n, 2 * lg(n));
    final_insertion_sort(v, 0, n);
}

/// Rearrange `v` as `std::nth_element(v.begin(), v.begin() + nth, v.end())` does.
pub(crate) fn nth_element<T: Copy + PartialOrd>(v: &mut [T], nth: usize) {
    let n = v.len();
    if n == 0 || nth == n {
        return;
    }
    introselect(v, 0, nth, n, 2 * lg(n));
}

const THRESHOLD: usize = 16;

fn lg(n: usize) -> usize {
    (usize::BITS - 1 - n.leading_zeros()) as usize
}

fn introsort_loop<T: Copy + PartialOrd>(
    v: &mut [T],
    first: usize,
    mut last: usize,
    mut depth: usize,
) {
    while last - first > THRESHOLD {
        if depth == 0 {
            partial_sort(v, first, last, last);
            return;
        }
        depth -= 1;
        let cut = unguarded_partition_pivot(v, first, last);
        introsort_loop(v, cut, last, depth);
        last = cut;
    }
}

fn introselect<T: Copy + PartialOrd>(
    v: &mut [T],
    mut first: usize,
    nth: usize,
    mut last: usize,
    mut depth: usize,
) {
    while last - first > 3 {
        if depth == 0 {
            heap_select(v, first, nth + 1, last);
            v.swap(first, nth);
            return;
        }
        depth -= 1;
        let cut = unguarded_partition_pivot(v, first, last);
        if cut <= nth {
            first = cut;
        } else {
            last = cut;
        }
    }
    insertion_sort(v, first, last);
}

// Hot kernel loop: indices stay in `first..last` within `v`, the contract of these libstdc++ selection steps.
#[allow(clippy::indexing_slicing)]
fn move_median_to_first<T: Copy + PartialOrd>(
    v: &mut [T],
    result: usize,
    a: usize,
    b: usize,
    c: usize,
) {
    if v[a] < v[b] {
        if v[b] < v[c] {
            v.swap(result, b);
        } else if v[a] < v[c] {
            v.swap(result, c);
        } else {
            v.swap(result, a);
        }
    } else if v[a] < v[c] {
        v.swap(result, a);
    } else if v[b] < v[c] {
        v.swap(result, c);
    } else {
        v.swap(result, b);
    }
}

// Hot kernel loop: indices stay in `first..last` within `v`, the contract of these libstdc++ selection steps.
#[allow(clippy::indexing_slicing)]
fn unguarded_partition<T: Copy + PartialOrd>(
    v: &mut [T],
    mut first: usize,
    mut last: usize,
    pivot: usize,
) -> usize {
    let end = last;
    loop {
        while first < end && v[first] < v[pivot] {
            first += 1;
        }
        last -= 1;
        // stops at `pivot` at the latest (`!(p < p)`), which lies before `first`
        while v[pivot] < v[last] {
            last -= 1;
        }
        if first >= last {
            return first;
        }
        v.swap(first, last);
        first += 1;
    }
}

fn unguarded_partition_pivot<T: Copy + PartialOrd>(
    v: &mut [T],
    first: usize,
    last: usize,
) -> usize {
    let mid = first + (last - first) / 2;
    move_median_to_first(v, first, first + 1, mid, last - 1);
    unguarded_partition(v, first + 1, last, first)
}

// Hot kernel loop: indices stay in `first..last` within `v`, the contract of these libstdc++ selection steps.
#[allow(clippy::indexing_slicing)]
fn insertion_sort<T: Copy + PartialOrd>(v: &mut [T], first: usize, last: usize) {
    if first == last {
        return;
    }
    for i in first + 1..last {
        if v[i] < v[first] {
            let val = v[i];
            v.copy_within(first..i, first + 1);
            v[first] = val;
        } else {
            unguarded_linear_insert(v, i);
        }
    }
}

fn unguarded_insertion_sort<T: Copy + PartialOrd>(v: &mut [T], first: usize, last: usize) {
    for i in first..last {
        unguarded_linear_insert(v, i);
    }
}

// Hot kernel loop: indices stay in `first..last` within `v`, the contract of these libstdc++ selection steps.
#[allow(clippy::indexing_slicing)]
fn unguarded_linear_insert<T: Copy + PartialOrd>(v: &mut [T], mut last: usize) {
    let val = v[last];
    let mut next = last - 1;
    while val < v[next] {
        v[last] = v[next];
        last = next;
        if next == 0 {
            break;
        }
        next -= 1;
    }
    v[last] = val;
}

fn final_insertion_sort<T: Copy + PartialOrd>(v: &mut [T], first: usize, last: usize) {
    if last - first > THRESHOLD {
        insertion_sort(v, first, first + THRESHOLD);
        unguarded_insertion_sort(v, first + THRESHOLD, last);
    } else {
        insertion_sort(v, first, last);
    }
}

fn partial_sort<T: Copy + PartialOrd>(v: &mut [T], first: usize, middle: usize, last: usize) {
    heap_select(v, first, middle, last);
    sort_heap(v, first, middle);
}

// Hot kernel loop: indices stay in `first..last` within `v`, the contract of these libstdc++ selection steps.
#[allow(clippy::indexing_slicing)]
fn heap_select<T: Copy + PartialOrd>(v: &mut [T], first: usize, middle: usize, last: usize) {
    make_heap(v, first, middle);
    for i in middle..last {
        if v[i] < v[first] {
            pop_heap(v, first, middle, i);
        }
    }
}

// Hot kernel loop: indices stay in `first..last` within `v`, the contract of these libstdc++ selection steps.
#[allow(clippy::indexing_slicing)]
fn make_heap<T: Copy + PartialOrd>(v: &mut [T], first: usize, last: usize) {
    let len = (last - first) as isize;
    if len < 2 {
        return;
    }
    let mut parent = (len - 2) / 2;
    loop {
        let value = v[first + parent as usize];
        adjust_heap(v, first, parent, len, value);
        if parent == 0 {
            return;
        }
        parent -= 1;
    }
}

fn sort_heap<T: Copy + PartialOrd>(v: &mut [T], first: usize, mut last: usize) {
    while last - first > 1 {
        last -= 1;
        pop_heap(v, first, last, last);
    }
}

// Hot kernel loop: indices stay in `first..last` within `v`, the contract of these libstdc++ selection steps.
#[allow(clippy::indexing_slicing)]
fn pop_heap<T: Copy + PartialOrd>(v: &mut [T], first: usize, last: usize, result: usize) {
    let value = v[result];
    v[result] = v[first];
    adjust_heap(v, first, 0, (last - first) as isize, value);
}

/// Distances are signed, as in C++ (`(len - 2) / 2` is 0 for `len == 1`).
// Hot kernel loop: indices stay in `first..last` within `v`, the contract of these libstdc++ selection steps.
#[allow(clippy::indexing_slicing)]
fn adjust_heap<T: Copy + PartialOrd>(
    v: &mut [T],
    first: usize,
    mut hole: isize,
    len: isize,
    value: T,
) {
    let at = |i: isize| first + i as usize;
    let top = hole;
    let mut second = hole;
    while second < (len - 1) / 2 {
        second = 2 * (second + 1);
        if v[at(second)] < v[at(second - 1)] {
            second -= 1;
        }
        v[at(hole)] = v[at(second)];
        hole = second;
    }
    if len & 1 == 0 && second == (len - 2) / 2 {
        second = 2 * (second + 1);
        v[at(hole)] = v[at(second - 1)];
        hole = second - 1;
    }
    push_heap(v, first, hole, top, value);
}

// Hot kernel loop: indices stay in `first..last` within `v`, the contract of these libstdc++ selection steps.
#[allow(clippy::indexing_slicing)]
fn push_heap<T: Copy + PartialOrd>(
    v: &mut [T],
    first: usize,
    mut hole: isize,
    top: isize,
    value: T,
) {
    let at = |i: isize| first + i as usize;
    let mut parent = (hole - 1) / 2;
    while hole > top && v[at(parent)] < value {
        v[at(hole)] = v[at(parent)];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    v[at(hole)] = value;
}
