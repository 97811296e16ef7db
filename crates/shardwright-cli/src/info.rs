//! `shardwright info PATH`: describe an array.

use std::path::PathBuf;
use std::sync::Arc;

use shardwright::{Array, FilesystemStore, Store};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The array's folder (holding zarr.json).
    path: PathBuf,
}

pub(crate) fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let store = Arc::new(FilesystemStore::new(&args.path));
    let array = Array::open(store.clone(), "")?;
    let layout = array.layout();
    println!("path:          {}", args.path.display());
    println!("shape:         {:?}", layout.shape());
    println!(
        "data type:     {} (fill value bytes {:?})",
        layout.data_type_name(),
        layout.fill_value_bytes()
    );
    match layout.index() {
        Some(index) => {
            println!(
                "shards:        {:?} ({} of them)",
                layout.shard_shape(),
                array.shard_grid().len()
            );
            println!(
                "inner chunks:  {:?} ({} per shard)",
                layout.chunk_shape(),
                layout.slots_per_shard()
            );
            println!(
                "index:         at the {:?}, {} bytes",
                index.location(),
                index.encoded_size()
            );
        }
        None => println!("chunks:        {:?} (not sharded)", layout.chunk_shape()),
    }
    let codecs = serde_json::to_string(&layout.metadata().codecs)?;
    println!("codecs:        {codecs}");
    let mut stored = 0u64;
    let mut bytes = 0u64;
    for shard in array.shards() {
        let index = shard.index().expect("grid cells carry their index");
        if let Some(size) = store.size(&array.shard_key(index))? {
            stored += 1;
            bytes += size;
        }
    }
    println!(
        "stored:        {stored} of {} shards, {:.1} MiB",
        array.shard_grid().len(),
        bytes as f64 / (1 << 20) as f64
    );
    Ok(())
}
