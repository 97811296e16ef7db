//! `shardwright info PATH`: describe an array (Zarr v3 or v2) or an OME-Zarr image (every
//! level).

use std::sync::Arc;

use serde_json::Value;
use shardwright::format::shard;
use shardwright::store::join;
use shardwright::Array;

use crate::interrupt::Interrupted;
use crate::location::{self, Location};
use crate::output::out;
use crate::Job;

type Failure = Box<dyn std::error::Error>;

const MIB: f64 = (1 << 20) as f64;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The array's or image's folder (holding zarr.json or .zarray), an object-store URL,
    /// or a TIFF file (a folder or glob of them) to convert.
    path: String,
    /// An object-store option, KEY=VALUE (repeat for several).
    #[arg(long = "storage-option")]
    storage_options: Vec<String>,
}

pub(crate) fn run(args: &Args, job: &Job) -> Result<(), Failure> {
    if !args.path.contains("://") && shardwright_tiff::is_tiff_spec(&args.path) {
        return crate::convert::describe(&args.path);
    }
    let options = location::options(&args.storage_options)?;
    let location = Location::parse(&args.path, &options)?;
    if let Some(err) = location.not_an_array() {
        return Err(err);
    }
    let metadata = location
        .store
        .get(&join(&location.path, "zarr.json"))?
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    if let Some(group) = metadata.as_ref().filter(|m| m["node_type"] == "group") {
        return describe_group(&location, group, &options, job);
    }
    out!("path:          {}", args.path);
    describe_array(&location, &options, job)
}

fn describe_group(
    location: &Location,
    group: &Value,
    options: &[(String, String)],
    job: &Job,
) -> Result<(), Failure> {
    let ome = &group["attributes"]["ome"];
    let Some(multiscale) = ome["multiscales"].get(0) else {
        out!(
            "path:          {} (a Zarr group, not an OME-Zarr image)",
            location.text
        );
        return Ok(());
    };
    let axes: Vec<String> = multiscale["axes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let datasets = multiscale["datasets"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    out!(
        "image:         {} (OME-Zarr {}, '{}'), axes {:?}, {} levels",
        location.text,
        ome["version"].as_str().unwrap_or("?"),
        multiscale["name"].as_str().unwrap_or(""),
        axes,
        datasets.len()
    );
    let units: Vec<&str> = multiscale["axes"]
        .as_array()
        .map(|a| a.iter().map(|x| x["unit"].as_str().unwrap_or("")).collect())
        .unwrap_or_default();
    if units.iter().any(|u| !u.is_empty()) {
        let named: Vec<String> = axes
            .iter()
            .zip(&units)
            .map(|(a, u)| format!("{a}: {}", if u.is_empty() { "-" } else { u }))
            .collect();
        out!("units:         {}", named.join(", "));
    }
    for (i, channel) in ome["omero"]["channels"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let w = &channel["window"];
        out!(
            "channel {i}:     {} (colour {}, window {}..{}, shown {}..{})",
            channel["label"].as_str().unwrap_or(""),
            channel["color"].as_str().unwrap_or("?"),
            w["min"],
            w["max"],
            w["start"],
            w["end"]
        );
    }
    for dataset in datasets {
        let path = dataset["path"].as_str().unwrap_or("?");
        out!("\nlevel {path} ({}):", physical(&dataset));
        let text = format!("{}/{path}", location.text.trim_end_matches('/'));
        describe_array(&Location::parse(&text, options)?, options, job)?;
    }
    Ok(())
}

/// A level's physical pixel size and offset per axis, as `scale [..], translation [..]`.
fn physical(dataset: &Value) -> String {
    let mut parts = Vec::new();
    for transform in dataset["coordinateTransformations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for kind in ["scale", "translation"] {
            if let Some(values) = transform[kind].as_array() {
                let values: Vec<String> = values.iter().map(Value::to_string).collect();
                parts.push(format!("{kind} [{}]", values.join(", ")));
            }
        }
    }
    parts.join(", ")
}

fn describe_array(
    location: &Location,
    options: &[(String, String)],
    job: &Job,
) -> Result<(), Failure> {
    let array = match Array::open(Arc::clone(&location.store), &location.path) {
        Ok(array) => array,
        Err(e) if location.folder.is_some() => return describe_other(location, options, &e),
        Err(e) => return Err(e.into()),
    };
    let layout = array.layout();
    out!("shape:         {:?}", layout.shape());
    out!(
        "data type:     {} (fill value {})",
        layout.data_type_name(),
        layout.metadata().fill_value
    );
    if let Some(names) = &layout.metadata().dimension_names {
        let names: Vec<String> = names
            .iter()
            .map(|n| n.clone().unwrap_or_default())
            .collect();
        out!("dimensions:    {names:?}");
    }
    let codecs = serde_json::to_string(&layout.metadata().codecs)?;
    let Some(index) = layout.index() else {
        if layout.has_regular_shards() {
            out!("chunks:        {:?} (not sharded)", layout.chunk_shape());
        } else {
            out!(
                "chunks:        rectilinear, {:?} per dimension (not sharded)",
                array.shard_grid().cell_sizes()
            );
        }
        out!("codecs:        {codecs}");
        let (mut stored, mut bytes) = (0u64, 0u64);
        for index in stored_or_every(&array)? {
            stop_if_told(job)?;
            if let Some(size) = array.store().size(&array.shard_key(&index))? {
                stored += 1;
                bytes += size;
            }
        }
        out!(
            "stored:        {stored} of {} chunks, {:.1} MiB; {} empty (the fill value)",
            array.shard_grid().len(),
            bytes as f64 / MIB,
            array.shard_grid().len() - stored
        );
        return Ok(());
    };
    if layout.has_regular_shards() {
        out!(
            "shards:        {:?} ({} of them)",
            layout.shard_shape(),
            array.shard_grid().len()
        );
        out!(
            "inner chunks:  {:?} ({} per shard, {} in all)",
            layout.chunk_shape(),
            layout.slots_per_shard(),
            array.chunk_grid().len()
        );
        out!(
            "index:         at the {:?}, {} bytes",
            index.location(),
            index.encoded_size()
        );
    } else {
        out!(
            "shards:        rectilinear, {:?} per dimension ({} of them)",
            array.shard_grid().cell_sizes(),
            array.shard_grid().len()
        );
        out!(
            "inner chunks:  {:?} ({} in all)",
            layout.chunk_shape(),
            array.chunk_grid().len()
        );
        out!("index:         at the {:?}", index.location());
    }
    out!("codecs:        {codecs}");
    let (mut stored, mut bytes, mut chunks_stored) = (0u64, 0u64, 0u64);
    for cell in stored_or_every(&array)? {
        stop_if_told(job)?;
        let key = array.shard_key(&cell);
        let Some(size) = array.store().size(&key)? else {
            continue;
        };
        stored += 1;
        bytes += size;
        let own = layout.shard_layout(&cell)?;
        let Some(index) = own.index() else { continue };
        let size_of_index = index.encoded_size();
        let range = match index.location() {
            shardwright::IndexLocation::Start => 0..size_of_index,
            shardwright::IndexLocation::End => size.saturating_sub(size_of_index)..size,
        };
        let Some(index_bytes) = array.store().get_range(&key, range)? else {
            continue;
        };
        let ranges = shard::split_index(&own, &index_bytes, size)?;
        chunks_stored += ranges.iter().filter(|r| r.is_some()).count() as u64;
    }
    let total = array.chunk_grid().len();
    out!(
        "stored:        {stored} of {} shards, {:.1} MiB; inner chunks: {chunks_stored} of \
         {total} stored, {} empty (the fill value)",
        array.shard_grid().len(),
        bytes as f64 / MIB,
        total - chunks_stored
    );
    Ok(())
}

/// The grid indices of the shards (chunks) that may be stored: the listed ones where the
/// store lists (what is stored), else every cell of the grid.
fn stored_or_every(array: &Array) -> Result<Box<dyn Iterator<Item = Vec<u64>> + '_>, Failure> {
    Ok(match array.stored_shards()? {
        Some(listed) => Box::new(listed.into_iter()),
        None => Box::new(
            array
                .shards()
                .map(|cell| cell.index().unwrap_or_default().to_vec()),
        ),
    })
}

/// [`Interrupted`] once Ctrl-C (or SIGTERM) came.
fn stop_if_told(job: &Job) -> Result<(), Failure> {
    if job.stop() {
        return Err(Interrupted("info stopped part way; nothing was changed").into());
    }
    Ok(())
}

/// An array shardwright does not write (Zarr v2, other codecs): what zarrs reads of it.
fn describe_other(
    location: &Location,
    options: &[(String, String)],
    why: &shardwright::Error,
) -> Result<(), Failure> {
    let source = location::open_source(&location.text, options)
        .map_err(|e| format!("{e} (and shardwright's own reader said: {why})"))?;
    let folder = location.folder.as_ref().expect("a local folder");
    let (format, metadata) = if folder.join(".zarray").exists() {
        ("Zarr v2", std::fs::read(folder.join(".zarray"))?)
    } else {
        ("Zarr v3", std::fs::read(folder.join("zarr.json"))?)
    };
    let json: Value = serde_json::from_slice(&metadata)?;
    out!("format:        {format} (readable; shardwright writes it with `shardwright copy`)");
    out!("shape:         {:?}", source.shape());
    out!("data type:     {}", source.data_type());
    let chunks = if format == "Zarr v2" {
        json["chunks"].clone()
    } else {
        json["chunk_grid"]["configuration"]["chunk_shape"].clone()
    };
    out!("chunks:        {chunks}");
    let codecs = if format == "Zarr v2" {
        serde_json::json!({ "compressor": json["compressor"], "filters": json["filters"] })
    } else {
        json["codecs"].clone()
    };
    out!("codecs:        {codecs}");
    let total: u64 = source
        .shape()
        .iter()
        .zip(chunks.as_array().into_iter().flatten())
        .map(|(n, c)| n.div_ceil(c.as_u64().unwrap_or(1).max(1)))
        .product();
    let stored = count_files(folder)?;
    out!(
        "stored:        {stored} of {total} chunks; {} empty (the fill value)",
        total.saturating_sub(stored)
    );
    Ok(())
}

/// The chunk files under `folder`: every file but the metadata (names starting with '.',
/// `zarr.json`).
fn count_files(folder: &std::path::Path) -> Result<u64, Failure> {
    let mut count = 0;
    for entry in std::fs::read_dir(folder)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "zarr.json" {
            continue;
        }
        if entry.file_type()?.is_dir() {
            count += count_files(&entry.path())?;
        } else {
            count += 1;
        }
    }
    Ok(count)
}
