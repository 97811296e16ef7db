#![no_main]
//! Fuzz target `layout`: see `shardwright_fuzz::checks::layout`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(broken) = shardwright_fuzz::checks::layout(data) {
        panic!("layout: {broken}");
    }
});
