//! The members of a Zarr group or an OME-Zarr image (for `check`): every array below it,
//! nested groups included, an image's levels in the order of their names; and the members
//! that are damaged (a `zarr.json` that does not parse, a level the image's metadata lists
//! but that is missing) or that cannot be checked (a Zarr v2 array).

use serde_json::Value;
use shardwright::store::join;

use crate::location::Location;

type Failure = Box<dyn std::error::Error>;

/// How deep nested groups are followed.
const DEPTH: usize = 16;

/// One member of a group, by its path relative to the group.
#[derive(Debug, PartialEq)]
pub(crate) enum Member {
    /// A Zarr v3 array, to check.
    Array(String),
    /// A member that is damaged: its path, what is wrong (check cannot repair it).
    Damaged(String, String),
    /// An array that check cannot read: its path, why.
    NotChecked(String, String),
}

/// What a node's `zarr.json` holds.
enum Node {
    Absent,
    Unreadable(String),
    Parsed(Value),
}

/// The metadata of the node at `path`.
fn metadata(location: &Location, path: &str) -> Result<Node, Failure> {
    Ok(match location.store.get(&join(path, "zarr.json"))? {
        None => Node::Absent,
        Some(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(value) => Node::Parsed(value),
            Err(e) => Node::Unreadable(format!("its zarr.json does not parse as JSON ({e})")),
        },
    })
}

/// For a group at `location`: its members (paths relative to it), depth first; `None` for
/// anything else (an array, or nothing: opening it says what is wrong). In a local folder
/// every subfolder is looked at, and the levels an OME-Zarr image's metadata lists; on an
/// object store (which cannot be listed here) only those levels.
/// `text` names the group in messages.
pub(crate) fn members(location: &Location, text: &str) -> Result<Option<Vec<Member>>, Failure> {
    match metadata(location, &location.path)? {
        Node::Parsed(group) if group["node_type"] == "group" => {
            if location.folder.is_none() && levels(&group).is_empty() {
                return Err(format!(
                    "the arrays of the Zarr group '{text}' cannot be listed on this store (only an \
                     OME-Zarr image's levels are found, from its metadata): check each array \
                     by its path"
                )
                .into());
            }
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
    found: &mut Vec<Member>,
) -> Result<(), Failure> {
    let listed = levels(group);
    for name in children(location, at, &listed)? {
        let path = join(at, &name);
        match metadata(location, &join(&location.path, &path))? {
            Node::Absent if listed.contains(&name) => found.push(Member::Damaged(
                path,
                "missing: the image's multiscales metadata lists it, no zarr.json there".into(),
            )),
            Node::Absent => {
                let v2 = location
                    .folder
                    .as_ref()
                    .is_some_and(|f| f.join(&path).join(".zarray").is_file());
                if v2 {
                    found.push(Member::NotChecked(
                        path,
                        "a Zarr v2 array; check reads Zarr v3 arrays (copy it with \
                         `shardwright copy` to make one)"
                            .into(),
                    ));
                }
            }
            Node::Unreadable(what) => found.push(Member::Damaged(path, what)),
            Node::Parsed(node) if node["node_type"] == "array" => found.push(Member::Array(path)),
            Node::Parsed(node) if node["node_type"] == "group" => {
                if depth > 1 {
                    visit(location, &path, &node, depth - 1, found)?;
                }
            }
            Node::Parsed(node) => found.push(Member::Damaged(
                path,
                format!(
                    "its zarr.json has node_type {}, not \"array\" or \"group\"",
                    node["node_type"]
                ),
            )),
        }
    }
    Ok(())
}

/// The paths of the levels an OME-Zarr image's metadata lists (none for a plain group).
fn levels(group: &Value) -> Vec<String> {
    let ome = &group["attributes"]["ome"]["multiscales"];
    let multiscales = if ome.is_null() {
        &group["attributes"]["multiscales"]
    } else {
        ome
    };
    multiscales[0]["datasets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["path"].as_str().map(String::from))
        .collect()
}

/// The names of the nodes that may lie in the group at `at`, in natural order (2 before
/// 10): its subfolders and the levels `listed` (on an object store, those levels only).
fn children(location: &Location, at: &str, listed: &[String]) -> Result<Vec<String>, Failure> {
    let mut names = listed.to_vec();
    if let Some(folder) = &location.folder {
        names.extend(
            std::fs::read_dir(folder.join(at))?
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|e| e.file_name().into_string().ok()),
        );
    }
    names.sort_by_key(|n| (n.parse::<u64>().unwrap_or(u64::MAX), n.clone()));
    names.dedup();
    Ok(names)
}
