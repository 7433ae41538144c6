use serde_json::{Value, json};

use super::{
    EqualPairs, MIN_INPUT_SHARED_BYTES, MIN_SHARED_BYTES, SharedView, inline_shared, share_repeated,
    share_repeated_input, view_by_expansion,
};

/// A subschema well over the sharing threshold.
fn rule(label: &str) -> Value {
    json!({
        "type": "object",
        "title": "Access rule",
        "description": format!("Matches requests from {label}; long enough to be worth sharing once."),
        "properties": {
            "email": {"type": "string", "format": "email", "description": "The email address."},
            "domain": {"type": "string", "description": "The email domain."}
        },
        "required": ["email"]
    })
}

fn encoded(v: &Value) -> usize {
    serde_json::to_string(v).unwrap().len()
}

#[test]
fn repeated_subschemas_move_to_defs_and_inline_back() {
    let original = json!({
        "type": "object",
        "properties": {
            "include": {"type": "array", "description": "Include", "items": rule("x")},
            "exclude": {"type": "array", "description": "Exclude", "items": rule("x")},
            "require": {"type": "array", "description": "Require", "items": rule("x")},
            "other": rule("y")
        },
        "additionalProperties": false
    });
    let mut shared = original.clone();
    assert_eq!(share_repeated(&mut shared), 1);
    assert!(encoded(&shared) < encoded(&original));
    assert_eq!(
        shared["properties"]["include"]["items"],
        json!({"$ref": "#/$defs/access_rule"})
    );
    assert_eq!(
        shared["properties"]["exclude"]["items"],
        shared["properties"]["include"]["items"]
    );
    assert_eq!(shared["$defs"]["access_rule"], rule("x"));
    // Seen once: stays inline.
    assert_eq!(shared["properties"]["other"], rule("y"));
    assert_eq!(*inline_shared(&shared), original);
}

#[test]
fn nested_repeats_are_shared_inside_larger_definitions() {
    let big = |n: u32| {
        json!({
            "type": "object",
            "description": format!("variant {n} with a long explanation of what it does and why it exists"),
            "properties": {"a": rule("x"), "b": rule("x"), "n": {"const": n}}
        })
    };
    let original = json!({
        "type": "object",
        "properties": {
            "one": {"description": "one", "oneOf": [big(1), big(2)]},
            "two": {"description": "two", "oneOf": [big(1), big(2)]},
            "three": rule("x")
        }
    });
    let mut shared = original.clone();
    let added = share_repeated(&mut shared);
    assert!(added >= 3, "{shared:#}");
    let defs = shared["$defs"].as_object().unwrap();
    // The rule is defined once, and the variants refer to it.
    let rule_defs: Vec<_> = defs.values().filter(|d| **d == rule("x")).collect();
    assert_eq!(rule_defs.len(), 1, "{shared:#}");
    assert!(
        defs.values()
            .any(|d| d["properties"]["a"].get("$ref").is_some())
    );
    assert_eq!(shared["properties"]["three"]["$ref"], "#/$defs/access_rule");
    assert_eq!(*inline_shared(&shared), original);
}

#[test]
fn data_is_never_shared() {
    let blob = json!({"k": "a value long enough that the object passes the threshold for sharing, twice over, surely", "n": [1, 2, 3]});
    let original = json!({
        "type": "object",
        "properties": {
            "a": {"type": "object", "default": blob.clone(), "examples": [blob.clone()]},
            "b": {"enum": [blob.clone()]},
            "c": {"const": blob}
        }
    });
    let mut shared = original.clone();
    assert_eq!(share_repeated(&mut shared), 0);
    assert_eq!(shared, original);
}

#[test]
fn small_or_single_subschemas_stay_inline() {
    let small = json!({"type": "string", "maxLength": 10});
    assert!(encoded(&small) < MIN_SHARED_BYTES);
    let original = json!({
        "type": "object",
        "properties": {"a": small.clone(), "b": small.clone(), "c": small, "d": rule("x")}
    });
    let mut shared = original.clone();
    assert_eq!(share_repeated(&mut shared), 0);
    assert_eq!(shared, original);
}

#[test]
fn names_avoid_existing_definitions_and_recursion_survives_inlining() {
    let node = json!({"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/access_rule"}}}});
    let original = json!({
        "type": "object",
        "properties": {"a": rule("x"), "b": rule("x"), "tree": {"$ref": "#/$defs/access_rule"}},
        "$defs": {"access_rule": node}
    });
    let mut shared = original.clone();
    assert_eq!(share_repeated(&mut shared), 1);
    assert_eq!(shared["properties"]["a"]["$ref"], "#/$defs/access_rule_2");
    assert_eq!(
        shared["$defs"]["access_rule"],
        original["$defs"]["access_rule"]
    );
    // The recursive definition is kept; the shared one is expanded again.
    assert_eq!(*inline_shared(&shared), original);
}

#[test]
fn sharing_is_deterministic_and_idempotent() {
    let original = json!({
        "type": "object",
        "properties": {
            "p": {"anyOf": [rule("x"), rule("y")]},
            "q": {"anyOf": [rule("y"), rule("x")]},
            "r": {"allOf": [rule("x")]}
        }
    });
    let mut a = original.clone();
    let mut b = original.clone();
    share_repeated(&mut a);
    share_repeated(&mut b);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    let mut again = a.clone();
    assert_eq!(share_repeated(&mut again), 0);
    assert_eq!(again, a);
    assert_eq!(*inline_shared(&a), original);
}

#[test]
fn property_names_name_untitled_definitions() {
    let mut untitled = rule("x");
    untitled.as_object_mut().unwrap().remove("title");
    let original = json!({
        "type": "object",
        "properties": {"Origin Rule!": untitled.clone(), "copy": {"items": untitled}}
    });
    let mut shared = original.clone();
    assert_eq!(share_repeated(&mut shared), 1);
    assert!(shared["$defs"].get("origin_rule").is_some(), "{shared:#}");
}

#[test]
fn many_repeated_subschemas_all_share_and_inline_back() {
    let mut properties = serde_json::Map::new();
    for i in 0..2_000 {
        let mut s = rule(&format!("source {i}"));
        s.as_object_mut().unwrap().remove("title");
        properties.insert(format!("a{i}"), s.clone());
        properties.insert(format!("b{i}"), json!({"type": "array", "items": s}));
    }
    let original = json!({"type": "object", "properties": properties});
    let mut shared = original.clone();
    assert_eq!(share_repeated(&mut shared), 2_000);
    assert_eq!(shared["properties"]["b7"]["items"]["$ref"], "#/$defs/a7");
    assert_eq!(*inline_shared(&shared), original);
}

#[test]
fn encoded_string_lengths_match_serde_json() {
    for text in [
        "",
        "plain",
        "quote \" and \\ slash",
        "line\nbreak\ttab\r",
        "\u{1}\u{1f}\u{7f}",
        "é ü 漢字 🎉",
    ] {
        assert_eq!(
            super::string_len(text),
            serde_json::to_string(text).unwrap().len(),
            "{text:?}"
        );
    }
}

/// The kept entries of a view, by name.
fn kept(view: Option<SharedView<'_>>) -> Option<Vec<String>> {
    view.map(|v| v.kept.iter().map(|(k, _)| k.to_string()).collect())
}

/// `n` definitions `d0 → d1 → … → dn` (each holding a reference to the
/// next), the last a reference to recursive `node` with a sibling.
fn chain_of(n: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..n {
        defs.insert(
            format!("d{i}"),
            json!({"type": "object", "properties": {"x": {"$ref": format!("#/$defs/d{}", i + 1)}}}),
        );
    }
    defs.insert(
        format!("d{n}"),
        json!({"type": "object", "properties": {"s": {"$ref": "#/$defs/sib", "description": "kept"}}}),
    );
    defs.insert("sib".into(), rule("sib"));
    defs.insert(
        "node".into(),
        json!({"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}),
    );
    json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/d0"}, "n": {"$ref": "#/$defs/node"}},
        "$defs": defs})
}

#[test]
fn views_keep_what_walking_the_expansion_keeps() {
    let mut shared = json!({"type": "object", "properties": {
        "a": {"type": "array", "items": rule("x")},
        "b": {"anyOf": [rule("x"), {"$ref": "#/$defs/node"}]},
        "c": {"$ref": "#/$defs/gone"},
        "d": {"$ref": "#/$defs/node", "description": "a sibling"}
    }, "$defs": {
        "node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}, "r": rule("x")}},
        "unused": {"type": "object", "properties": {"r": {"$ref": "#/$defs/sib"}}},
        "sib": rule("sib")
    }});
    share_repeated(&mut shared);
    let mut cases = vec![shared, json!(true), rule("z")];
    // Chains around the nesting bound of inlining: the fast walk is used
    // only well below it, and both agree on either side.
    for n in [1, 10, 250, 252, 253, 254, 255, 256, 300] {
        cases.push(chain_of(n));
    }
    for schema in &cases {
        assert_eq!(
            kept(SharedView::new(schema)),
            kept(view_by_expansion(schema)),
            "{schema}"
        );
    }
    // `sib` is only referred to whole (and expanded), from an unused def.
    assert_eq!(kept(SharedView::new(&cases[0])).unwrap(), ["node"]);
    assert_eq!(
        kept(SharedView::new(&chain_of(10))).unwrap(),
        ["sib", "node"]
    );
    assert!(SharedView::new(&chain_of(300)).is_none());
}

#[test]
fn equal_pairs_are_known_both_ways_once_recorded() {
    let pairs = EqualPairs::default();
    assert!(!pairs.known((1, 2), (3, 4)));
    pairs.record((3, 4), (1, 2));
    assert!(pairs.known((1, 2), (3, 4)));
    assert!(pairs.known((3, 4), (1, 2)));
    // Neither the same index in another body nor another index is implied.
    assert!(!pairs.known((1, 2), (5, 4)));
    assert!(!pairs.known((1, 3), (3, 4)));
    assert_eq!(pairs.len(), 1);
}

#[test]
fn inline_shared_keeps_every_def_on_a_cycle_and_inlines_the_rest() {
    // `a` and `b` refer to each other, `self` to itself; `chain` leads into
    // the cycle without being on it, `leaf` refers to nothing and `dangling`
    // to a name that is not defined.
    let schema = json!({
        "properties": {"x": {"$ref": "#/$defs/chain"}, "y": {"$ref": "#/$defs/dangling"}},
        "$defs": {
            "a": {"properties": {"b": {"$ref": "#/$defs/b"}}},
            "b": {"items": {"$ref": "#/$defs/a"}, "leaf": {"$ref": "#/$defs/leaf"}},
            "self": {"items": {"$ref": "#/$defs/self"}},
            "chain": {"properties": {"a": {"$ref": "#/$defs/a"}, "s": {"$ref": "#/$defs/self"}}},
            "leaf": {"type": "string"},
            "dangling": {"properties": {"n": {"$ref": "#/$defs/nowhere"}}}
        }
    });
    let inlined = inline_shared(&schema);
    let defs = inlined["$defs"].as_object().unwrap();
    let mut kept: Vec<&str> = defs.keys().map(String::as_str).collect();
    kept.sort_unstable();
    assert_eq!(kept, ["a", "b", "self"]);
    for def in ["a", "self"] {
        assert_eq!(
            inlined["properties"]["x"]["properties"][if def == "a" { "a" } else { "s" }],
            json!({"$ref": format!("#/$defs/{def}")})
        );
        assert_eq!(inlined["$defs"][def], schema["$defs"][def]);
    }
    assert_eq!(
        inlined["properties"]["y"]["properties"]["n"],
        json!({"$ref": "#/$defs/nowhere"})
    );
}

/// Input schemas share repeated subschemas far below [`MIN_SHARED_BYTES`]
/// when that makes them smaller, and only then; inlining gives the schema
/// back.
#[test]
fn input_schemas_share_small_repeats_when_smaller() {
    let id = json!({"type": "string", "description": "Identifier", "maxLength": 32});
    assert!(encoded(&id) < MIN_SHARED_BYTES);
    let mut properties = serde_json::Map::new();
    for name in ["zone_id", "account_id", "rule_id", "pool_id"] {
        properties.insert(name.into(), id.clone());
    }
    let original = json!({"type": "object", "properties": properties});
    let mut output = original.clone();
    assert_eq!(share_repeated(&mut output), 0, "outputs keep the threshold");
    let mut input = original.clone();
    assert_eq!(share_repeated_input(&mut input), 1);
    assert!(encoded(&input) < encoded(&original), "{input}");
    assert_eq!(inline_shared(&input).into_owned(), original);
    // Two copies of something barely larger than a `$ref` would grow it.
    let tiny = json!({"type": "object", "properties": {
        "a": {"type": "integer", "minimum": 1}, "b": {"type": "integer", "minimum": 1}}});
    assert!(encoded(&tiny["properties"]["a"]) >= MIN_INPUT_SHARED_BYTES);
    let mut kept = tiny.clone();
    assert_eq!(share_repeated_input(&mut kept), 0);
    assert_eq!(kept, tiny);
}
