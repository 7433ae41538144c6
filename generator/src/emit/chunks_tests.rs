use super::*;
use serde_json::json;

fn big(tag: &str) -> serde_json::Value {
    json!({
        "type": "object",
        "description": format!("{tag}: a part long enough to be worth a chunk of its own, {}", "x".repeat(64)),
        "properties": {"id": {"type": "string"}, "n": {"type": "integer"}},
    })
}

fn texts_of(values: &[serde_json::Value]) -> Vec<String> {
    values
        .iter()
        .map(|v| serde_json::to_string(v).unwrap())
        .collect()
}

/// `texts` scanned one after another into one batch (numbered from `from`).
fn one_batch<'t>(texts: &[&'t str], from: usize) -> Batch<'t> {
    texts
        .iter()
        .enumerate()
        .fold(Batch::default(), |b, (i, t)| b.scan(from + i, t))
}

fn chunk(values: &[serde_json::Value]) -> (Vec<String>, Chunked) {
    let texts = texts_of(values);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let chunked = chunk_texts(&refs).unwrap();
    (texts, chunked)
}

fn chunks_of(chunked: &Chunked, name: &str) -> Vec<String> {
    chunked.entries[name]
        .iter()
        .filter_map(|p| match p {
            Piece::Chunk(c) => Some(c.clone()),
            Piece::Text(_) => None,
        })
        .collect()
}

#[test]
fn joining_the_pieces_gives_back_each_text() {
    let shared = big("shared");
    let values = vec![
        json!({"a": shared, "b": [shared, {"c": "\"{[}]\\\u{1}é"}], "$defs": {"x": shared}}),
        json!({"items": shared, "k": "\u{2028}"}),
        json!({}),
        json!([]),
        json!("text"),
        json!({"only": {"small": true}}),
        json!({"empty": {}, "list": [[], {}, [1, 2.5, -3e-7, null, false]], "big": big("solo")}),
    ];
    let (texts, chunked) = chunk(&values);
    assert_eq!(chunked.roots.len(), texts.len());
    for (text, root) in texts.iter().zip(&chunked.roots) {
        assert_eq!(chunked.text(root).as_deref(), Some(text.as_str()));
    }
    for pieces in chunked.entries.values() {
        assert!(!pieces.is_empty());
    }
}

#[test]
fn a_part_met_twice_is_one_chunk_for_every_text() {
    let shared = big("shared");
    let (texts, chunked) = chunk(&[
        json!({"a": shared, "z": 1}),
        json!({"b": {"c": shared}, "z": 2}),
    ]);
    let first = chunks_of(&chunked, &chunked.roots[0]);
    let second = chunks_of(&chunked, &chunked.roots[1]);
    assert_eq!(first.len(), 1, "{:?}", chunked.entries);
    assert_eq!(first, second);
    assert_eq!(
        chunked.text(&first[0]).unwrap(),
        serde_json::to_string(&shared).unwrap()
    );
    // Two roots and the one shared part: `{"c": …}` is met once.
    assert_eq!(chunked.entries.len(), 3);
    assert!(texts.iter().all(|t| t.len() >= MIN_CHUNK_BYTES));
}

#[test]
fn repeats_inside_one_text_are_shared_too() {
    let shared = big("twice");
    let (_, chunked) = chunk(&[json!({"a": shared, "b": shared})]);
    let refs = chunks_of(&chunked, &chunked.roots[0]);
    assert_eq!(refs.len(), 2);
    assert_eq!(refs[0], refs[1]);
    assert_eq!(chunked.entries.len(), 2);
}

#[test]
fn parts_met_once_stay_in_their_text() {
    let (texts, chunked) = chunk(&[json!({"a": big("one"), "b": [big("two")]})]);
    assert_eq!(chunked.entries.len(), 1);
    assert_eq!(
        chunked.entries[&chunked.roots[0]],
        vec![Piece::Text(texts[0].clone())]
    );
}

#[test]
fn a_text_without_chunks_is_named_by_its_digest() {
    let (texts, chunked) = chunk(&[json!({"a": 1}), big("plain")]);
    for (text, root) in texts.iter().zip(&chunked.roots) {
        assert_eq!(*root, crate::emit::interned::const_name(text));
    }
}

#[test]
fn entries_do_not_depend_on_the_order_of_the_texts() {
    let shared = big("shared");
    let values = vec![
        json!({"a": shared, "b": big("other")}),
        json!({"x": [shared, big("other")]}),
        json!({"y": big("other")}),
    ];
    let (_, forward) = chunk(&values);
    let reversed: Vec<_> = values.iter().rev().cloned().collect();
    let (_, backward) = chunk(&reversed);
    assert_eq!(forward.entries, backward.entries);
    let mut roots = backward.roots.clone();
    roots.reverse();
    assert_eq!(forward.roots, roots);
}

#[test]
fn equal_texts_share_one_root_and_texts_may_be_any_string() {
    let texts = [
        "{\"a\":1}",
        "{\"a\":1}",
        "not json {",
        "{ \"spaced\": 1 }",
        "",
        "[1,",
    ];
    let chunked = chunk_texts(&texts).unwrap();
    assert_eq!(chunked.roots[0], chunked.roots[1]);
    for (text, root) in texts.iter().zip(&chunked.roots) {
        assert_eq!(chunked.text(root).as_deref(), Some(*text));
    }
}

#[test]
fn deep_texts_are_kept_whole() {
    let mut v = big("leaf");
    for _ in 0..(MAX_SCAN_DEPTH + 10) {
        v = json!({ "items": v });
    }
    let text = serde_json::to_string(&v).unwrap();
    let other = serde_json::to_string(&json!({"a": big("leaf")})).unwrap();
    let chunked = chunk_texts(&[&text, &other]).unwrap();
    assert_eq!(chunked.text(&chunked.roots[0]).unwrap(), text);
    assert_eq!(chunked.text(&chunked.roots[1]).unwrap(), other);
    assert_eq!(
        chunked.entries[&chunked.roots[0]],
        vec![Piece::Text(text.clone())]
    );
}

#[test]
fn merged_worker_tables_give_the_entries_of_one_scan() {
    let values: Vec<serde_json::Value> = (0..300)
        .map(|i| {
            json!({
                "a": big(&format!("part {}", i % 7)),
                "b": [big(&format!("part {}", i % 11)), {"n": i}],
                "c": {"d": big("everywhere"), "e": big(&format!("own {i}"))},
            })
        })
        .collect();
    let texts = texts_of(&values);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let parallel = chunk_texts(&refs).unwrap();
    let one = one_batch(&refs, 0);
    let sequential = name_all(one, refs.len()).unwrap();
    assert_eq!(parallel.entries, sequential.entries);
    assert_eq!(parallel.roots, sequential.roots);
    // Two halves merged either way round give the same entries too.
    let (left, right) = refs.split_at(150);
    let merged = name_all(one_batch(right, 150).merge(one_batch(left, 0)), refs.len()).unwrap();
    assert_eq!(merged.entries, sequential.entries);
    assert_eq!(merged.roots, sequential.roots);
}

#[test]
fn names_do_not_depend_on_how_many_threads_name_them() {
    // Many texts share nested chunks, so with several threads the same
    // node is often reached by two at once.
    let values: Vec<serde_json::Value> = (0..400)
        .map(|i| {
            json!({
                "a": {"inner": big(&format!("part {}", i % 5)), "x": big(&format!("mid {}", i % 9))},
                "b": [big(&format!("part {}", i % 13)), {"n": i % 17}],
                "c": big("everywhere"),
            })
        })
        .collect();
    let texts = texts_of(&values);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let with = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| chunk_texts(&refs).unwrap())
    };
    let one = with(1);
    assert!(one.entries.len() > 30, "{}", one.entries.len());
    for threads in [2, 4, 8] {
        let many = with(threads);
        assert_eq!(many.entries, one.entries, "{threads} threads");
        assert_eq!(many.roots, one.roots, "{threads} threads");
    }
    for (text, root) in refs.iter().zip(&one.roots) {
        assert_eq!(one.text(root).unwrap(), *text);
    }
}

/// Each text scanned in a batch of its own, the batches merged: no scan
/// can take a subtree from another text's scan.
fn chunk_each_alone(texts: &[&str]) -> Chunked {
    let merged = texts
        .iter()
        .enumerate()
        .map(|(i, t)| Batch::default().scan(i, t))
        .reduce(Batch::merge)
        .unwrap_or_default();
    name_all(merged, texts.len()).unwrap()
}

#[test]
fn subtrees_taken_from_earlier_texts_are_what_a_scan_finds() {
    // Parts that share their first bytes (and so a key of `Known`) but
    // differ later, repeated across texts, within one text and nested in
    // one another.
    let similar = |i: usize| json!({"description": "one and the same long opening words", "n": i, "tail": big(&format!("t{}", i % 3))});
    let values: Vec<serde_json::Value> = (0..40)
        .map(|i| {
            json!({
                "a": similar(i % 5),
                "b": [similar(i % 4), similar(i % 5), {"inner": similar(i % 5)}],
                "c": big(&format!("part {}", i % 6)),
                "d": {"again": big(&format!("part {}", i % 6)), "own": big(&format!("own {i}"))},
            })
        })
        .collect();
    let texts = texts_of(&values);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let one = one_batch(&refs, 0);
    assert!(one.known.by_prefix.values().any(|c| c.len() > 1));
    let together = name_all(one, refs.len()).unwrap();
    let alone = chunk_each_alone(&refs);
    assert_eq!(together.entries, alone.entries);
    assert_eq!(together.roots, alone.roots);
    for (text, root) in refs.iter().zip(&together.roots) {
        assert_eq!(together.text(root).unwrap(), *text);
    }
}

#[test]
fn a_known_subtree_too_deep_where_met_again_keeps_its_text_whole() {
    // Met first near the root, the deep part fits the scan; met again
    // further down it nests past the bound, so that text is one literal.
    let mut deep = big("leaf");
    for _ in 0..(MAX_SCAN_DEPTH - 20) {
        deep = json!({ "items": deep });
    }
    // An opening of its own, so that `Known` keeps it under its key.
    let deep = json!({"a deep part with a long name of its own": deep});
    let first = serde_json::to_string(&json!({"a": deep.clone()})).unwrap();
    let mut again = deep;
    for _ in 0..30 {
        again = json!({ "more": again });
    }
    let again = serde_json::to_string(&again).unwrap();
    // One batch, so that the second scan knows the first one's nodes.
    let batch = Batch::default().scan(0, &first).scan(1, &again);
    let chunked = name_all(batch, 2).unwrap();
    assert_eq!(
        chunked.entries[&chunked.roots[1]],
        vec![Piece::Text(again.clone())]
    );
    assert_eq!(chunked.text(&chunked.roots[0]).unwrap(), first);
}
