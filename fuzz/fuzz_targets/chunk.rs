#![no_main]
//! Fuzz target `chunk`: see `shardwright_fuzz::checks::chunk`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(broken) = shardwright_fuzz::checks::chunk(data) {
        panic!("chunk: {broken}");
    }
});
