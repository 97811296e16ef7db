#![no_main]
//! Fuzz target `shard`: see `shardwright_fuzz::checks::shard`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(broken) = shardwright_fuzz::checks::shard(data) {
        panic!("shard: {broken}");
    }
});
