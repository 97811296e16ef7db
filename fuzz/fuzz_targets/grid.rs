#![no_main]
//! Fuzz target `grid`: see `shardwright_fuzz::checks::grid`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(broken) = shardwright_fuzz::checks::grid(data) {
        panic!("grid: {broken}");
    }
});
