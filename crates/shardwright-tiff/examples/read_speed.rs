//! Read speed of a TIFF source: `cargo run --release -p shardwright-tiff --example
//! read_speed -- FILE...` reads each file whole, then by read-grain-aligned blocks of
//! 64 MiB or less, and prints MB/s of decoded data.

use std::time::Instant;

use shardwright::pyramid::source::Source;
use shardwright::Domain;
use shardwright_tiff::TiffSource;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for path in std::env::args().skip(1) {
        let source = TiffSource::open(&path)?;
        let shape = source.shape();
        let start = Instant::now();
        let bytes = source.read(&Domain::from_shape(shape.clone()))?;
        let whole = start.elapsed().as_secs_f64();
        // blocks of a few planes each, as the pyramid driver reads level 0
        let planes = shape.first().copied().unwrap_or(1);
        let step = (planes / 8).max(1);
        let start = Instant::now();
        let mut z = 0;
        let mut read = 0;
        while z < planes {
            let n = step.min(planes - z);
            let mut origin = vec![0; shape.len()];
            let mut size = shape.clone();
            origin[0] = z;
            size[0] = n;
            read += source.read(&Domain::new(origin, size))?.len();
            z += n;
        }
        let blocks = start.elapsed().as_secs_f64();
        let mb = bytes.len() as f64 / 1e6;
        println!(
            "{path}: shape {shape:?} {}, {mb:.0} MB: whole {:.0} MB/s, by {step}-plane blocks {:.0} MB/s",
            source.data_type(),
            mb / whole,
            read as f64 / 1e6 / blocks
        );
    }
    Ok(())
}
