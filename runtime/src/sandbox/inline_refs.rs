//! Inline markers of the generator's resolved spec, read as their targets.
//!
//! Fully inlined, a spec repeats the expansion of every shared component at
//! each reference (the flagship release: 23.7 MB from a 4.2 MB spec). The
//! generator (`resolved::write_document`) writes such an
//! expansion once, as its `components` entry, and every other occurrence as
//! `{"x-toolforge-inline": "#/components/<kind>/<name>"}`; the root key
//! `x-toolforge-inline-refs` says the document does. Only expansions that
//! are the same wherever they appear are written so, and the generator falls
//! back to writing everything when a spec uses the marker key itself, so
//! reading each marker as its target gives exactly the fully inlined
//! document. The two names are the generator's; an end-to-end test reads a
//! generated spec through this index.

use serde_json::{Map, Value};
use std::collections::HashMap;

use super::{Child, Node};

/// Root key of a document holding inline markers (removed from the view).
pub const INLINE_REFS_KEY: &str = "x-toolforge-inline-refs";
/// The one key of an inline marker; its value is a `#/…` JSON pointer.
pub const INLINE_MARKER: &str = "x-toolforge-inline";

/// Longest chain of markers followed (an entry that is itself a marker).
const MAX_HOPS: usize = 64;

/// Whether `map` is an inline marker.
pub(super) fn is_marker(map: &Map<String, Value>) -> bool {
    map.len() == 1 && map.get(INLINE_MARKER).is_some_and(Value::is_string)
}

/// Points every marker child at its target (a node id or a small value).
pub(super) fn resolve(nodes: &mut [Node], root: &Child) -> Result<(), String> {
    if matches!(root, Child::Marker(_)) {
        return Err("spec: the document root is an inline marker".into());
    }
    let sites: Vec<(usize, usize)> = nodes
        .iter()
        .enumerate()
        .flat_map(|(n, node)| {
            node.children
                .iter()
                .enumerate()
                .filter(|(_, c)| matches!(c, Child::Marker(_)))
                .map(move |(i, _)| (n, i))
        })
        .collect();
    let mut targets = Vec::with_capacity(sites.len());
    {
        let mut finder = Finder {
            nodes,
            root,
            keys: HashMap::new(),
            found: HashMap::new(),
        };
        for &(n, i) in &sites {
            let Child::Marker(pointer) = &nodes[n].children[i] else {
                continue;
            };
            targets.push(finder.find(pointer, 0)?);
        }
    }
    for ((n, i), target) in sites.into_iter().zip(targets) {
        nodes[n].children[i] = target;
    }
    Ok(())
}

/// Looks pointers up in the index under construction.
struct Finder<'a> {
    nodes: &'a [Node],
    root: &'a Child,
    /// Per object node, its keys' positions (built on first lookup: a
    /// `components/schemas` node has thousands of keys).
    keys: HashMap<u32, HashMap<&'a str, usize>>,
    found: HashMap<&'a str, Child>,
}

impl<'a> Finder<'a> {
    fn find(&mut self, pointer: &'a str, hops: usize) -> Result<Child, String> {
        if let Some(hit) = self.found.get(pointer) {
            return Ok(hit.clone());
        }
        if hops > MAX_HOPS {
            return Err(format!(
                "spec: inline reference {pointer} is a chain of more than {MAX_HOPS} markers"
            ));
        }
        let missing = || format!("spec: inline reference {pointer} names nothing in the document");
        let tokens = pointer.strip_prefix("#/").ok_or_else(missing)?;
        let mut at = self.root;
        let mut value: Option<&'a Value> = None;
        for raw in tokens.split('/') {
            let token = raw.replace("~1", "/").replace("~0", "~");
            if let Some(v) = value {
                value = Some(step(v, &token).ok_or_else(missing)?);
                continue;
            }
            match at {
                Child::Lazy(id) => {
                    let node = self.nodes.get(*id as usize).ok_or_else(missing)?;
                    let index = if node.array {
                        token.parse::<usize>().ok()
                    } else {
                        self.key_index(*id, node, &token)
                    };
                    at = index
                        .and_then(|i| node.children.get(i))
                        .ok_or_else(missing)?;
                }
                Child::Inline(v) => value = Some(step(v, &token).ok_or_else(missing)?),
                Child::Marker(_) => {
                    return Err(format!(
                        "spec: inline reference {pointer} passes through another marker"
                    ));
                }
            }
        }
        let target = match (value, at) {
            (Some(v), _) => Child::Inline(v.clone()),
            (None, Child::Marker(next)) => self.find(next, hops + 1)?,
            (None, child) => child.clone(),
        };
        self.found.insert(pointer, target.clone());
        Ok(target)
    }

    fn key_index(&mut self, id: u32, node: &'a Node, key: &str) -> Option<usize> {
        let keys = self.keys.entry(id).or_insert_with(|| {
            let mut map = HashMap::new();
            for (i, k) in node.keys.iter().enumerate() {
                // Duplicate keys cannot occur (the node came from a map).
                map.entry(k.as_str()).or_insert(i);
            }
            map
        });
        keys.get(key).copied()
    }
}

/// `value`'s member or element named by one pointer token.
fn step<'v>(value: &'v Value, token: &str) -> Option<&'v Value> {
    match value {
        Value::Object(map) => map.get(token),
        Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    }
}
