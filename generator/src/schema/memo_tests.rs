//! Tests of [`DefMemo`]: a def body taken from the memo is exactly the one
//! converting it again gives (kept next to `convert.rs`).

use serde_json::{Map, Value, json};

use super::*;

fn doc() -> Document {
    // Recursive components whose `$defs` names clash (`Foo Bar` and
    // `Foo_Bar` both sanitise to `Foo_Bar`), so the name a def gets depends
    // on which the converter met first; bodies large enough for a small
    // budget to run out inside them; and a component reached only past
    // the budget.
    let text = |d: &str| json!({"type": "string", "description": d});
    Document {
        root: json!({"openapi": "3.0.3", "paths": {}, "components": {"schemas": {
            "Foo Bar": {"type": "object", "properties": {
                "a": text("a"), "b": text("b"), "c": text("c"),
                "next": {"$ref": "#/components/schemas/Foo_Bar"},
                "item": {"$ref": "#/components/schemas/Item"}}},
            "Foo_Bar": {"type": "object", "properties": {
                "d": text("d"), "e": text("e"),
                "back": {"$ref": "#/components/schemas/Foo Bar"},
                "leaf": {"$ref": "#/components/schemas/Leaf"}}},
            "Item": {"type": "object", "properties": {
                "owner": {"anyOf": [{"type": "string"}, {"$ref": "#/components/schemas/Foo Bar"}]},
                "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}},
                "leaf": {"$ref": "#/components/schemas/Leaf"}}},
            "Leaf": {"type": "object", "properties": {"x": text("x"), "y": text("y")}}
        }}}),
        file: "spec.yaml".into(),
        openapi_version: "3.0.3".into(),
    }
}

fn roots() -> Vec<Value> {
    let r = |name: &str| json!({"$ref": format!("#/components/schemas/{name}")});
    vec![
        r("Foo Bar"),
        r("Foo_Bar"),
        r("Item"),
        json!({"type": "object", "properties": {"first": r("Foo_Bar"), "then": r("Foo Bar")}}),
        json!({"type": "array", "items": r("Item")}),
        json!({"type": "object", "properties": {"leaf": r("Leaf"), "items": {"type": "array", "items": r("Item")}}}),
    ]
}

type Converted = std::result::Result<(Value, Map<String, Value>), String>;

fn convert_with(
    d: &Document,
    cycles: &Cycles,
    budget: usize,
    memo: Option<&DefMemo>,
    schema: &Value,
) -> Converted {
    let mut conv =
        SchemaConverter::new(d, cycles, SchemaMode::Output, Limits::default()).with_budget(budget);
    if let Some(memo) = memo {
        conv = conv.with_memo(memo);
    }
    let out = conv.convert(schema, "/x").map_err(|e| e.to_string())?;
    Ok((out, conv.into_defs()))
}

#[test]
fn memoised_defs_equal_fresh_conversions() {
    let d = doc();
    let cycles = Cycles::compute(&d);
    let roots = roots();
    let mut reused = 0;
    for budget in (1..60).chain([200, usize::MAX]) {
        // One memo per catalogue: the roots in order, then again reversed,
        // so each body is met under other names and other node counts.
        let memo = DefMemo::default();
        for schema in roots.iter().chain(roots.iter().rev()) {
            let fresh = convert_with(&d, &cycles, budget, None, schema);
            let before = memo.len();
            let memoised = convert_with(&d, &cycles, budget, Some(&memo), schema);
            assert_eq!(memoised, fresh, "budget {budget}, root {schema}");
            let after = memo.len();
            reused += usize::from(after == before && fresh.is_ok_and(|(_, defs)| !defs.is_empty()));
        }
    }
    assert!(reused > 0, "the memo was never used");
}

#[test]
fn recursion_found_beyond_cycles_bypasses_the_memo() {
    // With no cycle analysis every recursion is found while converting:
    // the memo is neither filled nor read, and the results stay the same.
    let d = doc();
    let none = Cycles::default();
    let memo = DefMemo::default();
    for schema in roots() {
        let fresh = convert_with(&d, &none, 40, None, &schema);
        assert_eq!(convert_with(&d, &none, 40, Some(&memo), &schema), fresh);
    }
    assert!(memo.len() == 0);
}

#[test]
fn input_converters_ignore_the_memo() {
    let d = doc();
    let cycles = Cycles::compute(&d);
    let memo = DefMemo::default();
    for schema in roots() {
        let mut conv = SchemaConverter::new(&d, &cycles, SchemaMode::Input, Limits::default())
            .with_budget(30)
            .with_memo(&memo);
        let _ = conv.convert(&schema, "/x");
    }
    assert!(memo.len() == 0);
}

/// Recursive components that each inline the same large objects, as
/// Stripe's expandable resources do: sharing finds repeats across bodies.
fn shared_doc() -> Document {
    let long =
        |d: &str| json!({"type": "string", "description": format!("{d}: {}", "words ".repeat(30))});
    let address = json!({"type": "object", "properties": {
        "line1": long("line1"), "city": long("city"), "country": long("country")}});
    Document {
        root: json!({"openapi": "3.0.3", "paths": {}, "components": {"schemas": {
            "Address": address,
            // Repeated, and holding a smaller repeated object: its
            // definition keeps a `$ref` to that one.
            "Profile": {"type": "object", "properties": {
                "address": {"$ref": "#/components/schemas/Address"},
                "note": long("profile")}},
            "Customer": {"type": "object", "properties": {
                "billing": {"$ref": "#/components/schemas/Address"},
                "shipping": {"$ref": "#/components/schemas/Address"},
                "profile": {"$ref": "#/components/schemas/Profile"},
                "charge": {"anyOf": [{"type": "string"}, {"$ref": "#/components/schemas/Charge"}]}}},
            "Charge": {"type": "object", "properties": {
                "billing": {"$ref": "#/components/schemas/Address"},
                "profile": {"$ref": "#/components/schemas/Profile"},
                "customer": {"anyOf": [{"type": "string"}, {"$ref": "#/components/schemas/Customer"}]},
                "refund": {"anyOf": [{"type": "string"}, {"$ref": "#/components/schemas/Refund"}]}}},
            "Refund": {"type": "object", "properties": {
                "note": long("note"),
                "charge": {"anyOf": [{"type": "string"}, {"$ref": "#/components/schemas/Charge"}]}}}
        }}}),
        file: "spec.yaml".into(),
        openapi_version: "3.0.3".into(),
    }
}

#[test]
fn sharing_with_memo_bodies_equals_sharing_by_walking() {
    let d = shared_doc();
    let cycles = Cycles::compute(&d);
    let r = |name: &str| json!({"$ref": format!("#/components/schemas/{name}")});
    let roots = [
        r("Customer"),
        r("Charge"),
        r("Refund"),
        json!({"type": "object", "properties": {"data": {"type": "array", "items": r("Charge")}}}),
        json!({"type": "object", "properties": {"a": r("Customer"), "b": r("Address")}}),
    ];
    let memo = DefMemo::default();
    let copies = crate::schema::BodyCopies::default();
    let mut linked = 0;
    let mut first_round = 0;
    // Twice: the second round finds every pair of equal subschemas known,
    // and every copy of a body made.
    for (round, schema) in roots.iter().chain(roots.iter()).enumerate() {
        if round == roots.len() {
            first_round = copies.len();
        }
        let mut conv = SchemaConverter::new(&d, &cycles, SchemaMode::Output, Limits::default())
            .with_memo(&memo);
        let root = conv.convert(schema, "/x").unwrap();
        let (defs, bodies) = conv.into_defs_and_memo_bodies();
        let mut with_bodies = root;
        if let Value::Object(m) = &mut with_bodies {
            m.insert("$defs".into(), Value::Object(defs));
        }
        // The memo bodies are placeholders until shared or filled in.
        let mut walked = with_bodies.clone();
        crate::schema::fill_memo_bodies(&mut walked, &bodies);
        let filled = walked.clone();
        // Placed instead of filled in, they are written as filled in.
        let written = |schema: &Value, placed: &crate::schema::Placed| {
            let placed: Vec<(&str, &str)> =
                placed.iter().map(|(n, c)| (n.as_str(), &*c.text)).collect();
            let mut out = Vec::new();
            crate::json_text::write_placed(&mut out, schema, &placed);
            String::from_utf8(out).unwrap()
        };
        // The definitions a declaration names, found from the
        // placeholders, are those of the whole schema.
        assert_eq!(
            crate::schema::kept_defs(&with_bodies, &bodies),
            crate::schema::kept_defs(&filled, &[]),
            "root {schema}"
        );
        let unshared = crate::schema::place_memo_bodies(&with_bodies, &bodies, &copies);
        assert_eq!(
            written(&with_bodies, &unshared),
            crate::json_text::to_string(&filled)
        );
        let mut placed_schema = with_bodies.clone();
        let placed = crate::schema::share_repeated_placed(&mut placed_schema, &bodies, &copies);
        // Every body, and the definitions whose content is in one.
        assert!(placed.len() >= bodies.len());
        let added = crate::schema::share_repeated(&mut walked);
        assert_eq!(
            written(&placed_schema, &placed),
            crate::json_text::to_string(&walked)
        );
        assert_eq!(
            crate::schema::nesting_placed(&placed_schema, &placed),
            crate::schema::nesting(&walked)
        );
        assert_eq!(
            crate::schema::share_repeated_with(&mut with_bodies, &bodies),
            added
        );
        assert_eq!(with_bodies, walked, "root {schema}");
        linked += bodies.len();
        // Filled in, they are what the converter made without the memo.
        let mut fresh = SchemaConverter::new(&d, &cycles, SchemaMode::Output, Limits::default());
        let mut expected = fresh.convert(schema, "/x").unwrap();
        if let Value::Object(m) = &mut expected {
            m.insert("$defs".into(), Value::Object(fresh.into_defs()));
        }
        assert_eq!(filled, expected, "root {schema}");
    }
    assert!(linked > 0, "no def body was taken from the memo");
    assert_eq!(copies.len(), first_round, "the second round made no copy");
    assert!(first_round > 0);
    assert!(memo.equal.len() > 0, "no equal pair was recorded");
}
