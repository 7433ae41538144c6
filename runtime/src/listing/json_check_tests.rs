//! The listing checks each shared part's JSON once instead of each tool's
//! whole schema (`shared_text::Written`). These tests put together random
//! tables, broken ones among them, and require the listing to be exactly
//! what parsing every tool's whole schema would list.

use serde_json::value::RawValue;

use super::{FALLBACK_SCHEMA, Variant, encode};
use crate::catalogue::{SharedText, SharedTexts, ToolDef};
use crate::request::testing::custom;
use crate::schema_profile::SchemaProfile;

/// A small deterministic generator (xorshift64*), so every run checks the
/// same tables and a failure names its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Entry names: plain ones, one a literal entry shadows, and one ending in
/// a backslash (as it reads between the quotes of a reference).
const NAMES: [&str; 6] = ["A", "B", "C", "D", "E\\", "Missing"];

/// A random JSON-ish text: mostly values with references among them, and
/// now and then a broken piece (unbalanced, a bad literal, a string that
/// looks like a reference, a reference whose name ends in a backslash).
fn value(rng: &mut Rng, depth: usize) -> String {
    let pick = if depth > 3 {
        rng.below(6)
    } else {
        rng.below(16)
    };
    let name = NAMES[rng.below(NAMES.len())];
    match pick {
        0 => format!("{{\"k\":\"{name}\"}}"),
        1 => "1".into(),
        2 => r#""s""#.into(),
        3 => r#""{\"k\":\"A\"}""#.into(),
        4 => "true".into(),
        5 => format!("{{\"k\":\"{name}\"}}"),
        6 => format!("{{\"a\":{}}}", value(rng, depth + 1)),
        7 => format!("[{},{}]", value(rng, depth + 1), value(rng, depth + 1)),
        8 => format!(
            "{{\"a\":{},\"b\":{}}}",
            value(rng, depth + 1),
            value(rng, depth + 1)
        ),
        9 => format!(" {{\"k\":\"{name}\"}}\n"),
        10 => format!("{{\"k\":\"{name}\",\"x\":1}}"),
        11 => "{\"a\":".into(),
        12 => "[1,]".into(),
        13 => format!("{{\"k\":\"{name}\"}}}}"),
        14 => "tru".into(),
        _ => format!("{{\"k\":\"A\\\"}},{}", value(rng, depth + 1)),
    }
}

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// A table of random entries: some literal, some in the document, whose
/// texts are [`value`]s.
fn table(rng: &mut Rng) -> &'static SharedTexts {
    let mut literal = Vec::new();
    let mut document = String::from("{\"@generated\":\"x\",\"key\":\"k\",\"entries\":{\n");
    for name in &NAMES[..5] {
        let text = leak(value(rng, 0));
        if rng.below(3) == 0 {
            literal.push((*name, text));
        } else {
            document.push_str(&format!("{:?}:{text},\n", name));
        }
    }
    document.push_str("\"Z\":0\n}}\n");
    literal.sort_unstable();
    let literal: &'static [(&str, &str)] = Box::leak(literal.into_boxed_slice());
    Box::leak(Box::new(SharedTexts::new("k", literal, leak(document))))
}

/// What listing `text` must write: its whole text when that is one JSON
/// object, else the fallback.
fn expected(text: SharedText) -> String {
    let whole = text.text();
    let object = serde_json::from_str::<&RawValue>(&whole).is_ok_and(|r| r.get().starts_with('{'));
    if object {
        whole.into_owned()
    } else {
        FALLBACK_SCHEMA.to_string()
    }
}

fn tool(name: &'static str, input: SharedText, output: Option<SharedText>) -> &'static ToolDef {
    custom(|t| {
        t.name = name;
        t.title = "T";
        t.description = "D";
        t.input_schema = input;
        t.output_schema = output;
    })
}

/// A random schema text of `table`: an entry, a marked literal or a plain
/// literal.
fn schema(rng: &mut Rng, table: &'static SharedTexts) -> SharedText {
    match rng.below(4) {
        0 | 1 => SharedText::Entry(NAMES[rng.below(NAMES.len())], table),
        2 => SharedText::Marked(leak(value(rng, 0)), table),
        _ => SharedText::Text(leak(value(rng, 0))),
    }
}

#[test]
fn every_schema_lists_as_parsing_its_whole_text_would() {
    let variant = Variant::new(SchemaProfile::Full, true);
    let mut fallbacks = 0usize;
    for seed in 1..=400u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let table = table(&mut rng);
        let tools: Vec<&'static ToolDef> = (0..6)
            .map(|i| {
                let output = (rng.below(2) == 0).then(|| schema(&mut rng, table));
                tool(leak(format!("t{i}")), schema(&mut rng, table), output)
            })
            .collect();
        // The same tools with each schema replaced by the text parsing it
        // whole decides on (a literal: listed as it is).
        let decided: Vec<&'static ToolDef> = tools
            .iter()
            .map(|t| {
                let input = leak(expected(t.input_schema));
                fallbacks += usize::from(input == FALLBACK_SCHEMA);
                let output = t.output_schema.map(|o| SharedText::Text(leak(expected(o))));
                tool(t.name, SharedText::Text(input), output)
            })
            .collect();
        let (got, want) = (encode(&tools, variant), encode(&decided, variant));
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "seed {seed}"
        );
    }
    // The tables break often enough that both ways are taken many times.
    assert!(fallbacks > 100, "{fallbacks} fallbacks");
}

#[test]
fn a_broken_part_is_caught_wherever_it_is_copied_from() {
    // `B` is broken and every tool refers to it under a good part, so after
    // the first tool the good part would be copied from the listing.
    static TABLE: SharedTexts = SharedTexts::new(
        "k",
        &[
            ("A", r#"{"a":{"k":"B"}}"#),
            ("B", r#"{"b":"#),
            ("G", r#"{"g":{"k":"H"}}"#),
            ("H", r#"[1]"#),
        ],
        "",
    );
    let tools = vec![
        tool("t1", SharedText::Entry("A", &TABLE), None),
        tool("t2", SharedText::Marked(r#"{"x":{"k":"A"}}"#, &TABLE), None),
        tool("t3", SharedText::Entry("G", &TABLE), None),
        tool("t4", SharedText::Marked(r#"{"y":{"k":"G"}}"#, &TABLE), None),
    ];
    let listed: serde_json::Value =
        serde_json::from_slice(&encode(&tools, Variant::DEFAULT)).expect("the listing is JSON");
    let schemas: Vec<String> = (0..4)
        .map(|i| listed[i]["inputSchema"].to_string())
        .collect();
    assert_eq!(
        schemas,
        [
            FALLBACK_SCHEMA,
            FALLBACK_SCHEMA,
            r#"{"g":[1]}"#,
            r#"{"y":{"g":[1]}}"#
        ]
    );
}

#[test]
fn a_name_ending_in_a_backslash_is_not_taken_for_a_reference() {
    // `{"k":"A\"}` opens a string that goes on: replacing it would break
    // the text, so the listing parses the whole schema.
    static TABLE: SharedTexts = SharedTexts::new("k", &[("A\\", "1")], "");
    let text = SharedText::Marked(r#"{"a":{"k":"A\"}"}}"#, &TABLE);
    let tools = vec![tool("t", text, None)];
    let listed: serde_json::Value =
        serde_json::from_slice(&encode(&tools, Variant::DEFAULT)).expect("the listing is JSON");
    assert_eq!(listed[0]["inputSchema"].to_string(), expected(text));
}

#[test]
fn a_part_that_is_json_only_where_it_stands_is_checked_again_elsewhere() {
    // `X` is no JSON value alone, but makes one inside `[…]`: the first
    // schema is listed (parsed whole), the second must not copy `X` from
    // it unchecked.
    static TABLE: SharedTexts = SharedTexts::new("k", &[("X", "1,2")], "");
    let tools = vec![
        tool(
            "t1",
            SharedText::Marked(r#"{"a":[{"k":"X"}]}"#, &TABLE),
            None,
        ),
        tool("t2", SharedText::Marked(r#"{"b":{"k":"X"}}"#, &TABLE), None),
    ];
    let listed: serde_json::Value =
        serde_json::from_slice(&encode(&tools, Variant::DEFAULT)).expect("the listing is JSON");
    assert_eq!(listed[0]["inputSchema"].to_string(), r#"{"a":[1,2]}"#);
    assert_eq!(listed[1]["inputSchema"].to_string(), FALLBACK_SCHEMA);
}
