#![no_main]
//! Fuzz target `index`: see `shardwright_fuzz::checks::index`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(broken) = shardwright_fuzz::checks::index(data) {
        panic!("index: {broken}");
    }
});
