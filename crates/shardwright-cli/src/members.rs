//! The arrays of a Zarr group or an OME-Zarr image (for `check`): nested groups included,
//! an image's levels in the order its metadata lists them.

use serde_json::Value;
use shardwright::store::join;

use crate::location::Location;

type Failure = Box<dyn std::error::Error>;

/// How deep nested groups are followed.
const DEPTH: usize = 16;

/// The metadata of the node at `path`, if it has a readable `zarr.json`.
fn metadata(location: &Location, path: &str) -> Result<Option<Value>, Failure> {
    Ok(location
        .store
        .get(&join(path, "zarr.json"))?
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok()))
}

/// For a group at `location`: the paths (relative to it) of every array below it, depth
/// first; `None` for anything else (an array, or nothing: opening it says what is wrong).
/// In a local folder every subfolder is looked at; on an object store (which cannot be
/// listed here) the levels an OME-Zarr image's metadata names.
pub(crate) fn arrays(location: &Location) -> Result<Option<Vec<String>>, Failure> {
    match metadata(location, &location.path)? {
        Some(group) if group["node_type"] == "group" => {
            let mut found = Vec::new();
            visit(location, "", &group, DEPTH, &mut found)?;
            Ok(Some(found))
        }
        _ => Ok(None),
    }
}

fn visit(
    location: &Location,
    at: &str,
    group: &Value,
    depth: usize,
    found: &mut Vec<String>,
) -> Result<(), Failure> {
    for name in children(location, at, group)? {
        let path = join(at, &name);
        let Some(node) = metadata(location, &join(&location.path, &path))? else {
            continue;
        };
        if node["node_type"] == "array" {
            found.push(path);
        } else if node["node_type"] == "group" && depth > 1 {
            visit(location, &path, &node, depth - 1, found)?;
        }
    }
    Ok(())
}

/// The names of the nodes that may lie in the group at `at`: its subfolders (in natural
/// order: 2 before 10), or on an object store its OME-Zarr levels.
fn children(location: &Location, at: &str, group: &Value) -> Result<Vec<String>, Failure> {
    let Some(folder) = &location.folder else {
        let datasets = group["attributes"]["ome"]["multiscales"][0]["datasets"].as_array();
        return Ok(datasets
            .into_iter()
            .flatten()
            .filter_map(|d| d["path"].as_str().map(String::from))
            .collect());
    };
    let mut names: Vec<String> = std::fs::read_dir(folder.join(at))?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort_by_key(|n| (n.parse::<u64>().unwrap_or(u64::MAX), n.clone()));
    Ok(names)
}
