//! The policy's view of a success schema: the lowering takes the root
//! `$defs` off before [`ApiPolicy::output`] (some are placeholders for memo
//! bodies filled in only later) and puts them back at the root of the
//! output the policy made, so no policy reads or moves them.

use serde_json::Value;

use crate::ir::Envelope;
use crate::policy::{ApiPolicy, Success};

/// [`ApiPolicy::output`] of a converted success schema (or its absence),
/// the root `$defs` hidden from the policy and appended to its output's
/// root, last, where the converter had put them.
pub(crate) fn policy_output(
    policy: &dyn ApiPolicy,
    success: Option<Value>,
) -> (Envelope, Option<Value>) {
    let Some(mut schema) = success else {
        return policy.output(None);
    };
    let defs = match &mut schema {
        Value::Object(map) => map.shift_remove("$defs"),
        _ => None,
    };
    let (envelope, output) = policy.output(Some(Success::new(schema)));
    let output = match (output, defs) {
        (Some(Value::Object(mut map)), Some(defs)) => {
            map.insert("$defs".to_owned(), defs);
            Some(Value::Object(map))
        }
        (output, _) => output,
    };
    (envelope, output)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::{cloudflare, generic};

    /// Records what the policy was shown.
    #[derive(Debug, Default)]
    struct Spy(std::sync::Mutex<Vec<Value>>);

    impl ApiPolicy for Spy {
        fn output(&self, success: Option<Success>) -> (Envelope, Option<Value>) {
            if let (Ok(mut seen), Some(s)) = (self.0.lock(), &success) {
                seen.push(s.root().clone());
            }
            generic::output(success.map(Success::into_root))
        }
    }

    fn schemas() -> Vec<Value> {
        let defs = json!({"Node": null, "Leaf": {"type": "string"}});
        vec![
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/Node"}}, "$defs": defs}),
            json!({"allOf": [{"type": "array", "items": {"$ref": "#/$defs/Node"}}], "$defs": defs}),
            json!({"type": "object", "properties": {
                "success": {"type": "boolean"}, "errors": {}, "messages": {},
                "result": {"$ref": "#/$defs/Leaf"}, "result_info": {}}, "$defs": defs}),
            json!({"type": "string"}),
        ]
    }

    #[test]
    fn the_policy_never_sees_the_root_defs() {
        let spy = Spy::default();
        for schema in schemas() {
            policy_output(&spy, Some(schema));
        }
        let seen = spy.0.lock().map(|s| s.clone()).unwrap_or_default();
        assert_eq!(seen.len(), 4);
        assert!(seen.iter().all(|s| s.get("$defs").is_none()), "{seen:?}");
    }

    #[test]
    fn the_output_is_what_the_policy_made_of_the_whole_schema() {
        // The policies' free functions take the whole schema and move its
        // `$defs` themselves: the view must give the same bytes.
        for schema in schemas() {
            for (rules, whole) in [
                (
                    crate::policy::PolicyKind::Generic.registered().rules,
                    generic::output(Some(schema.clone())),
                ),
                (
                    crate::policy::PolicyKind::Cloudflare.registered().rules,
                    cloudflare::output(Some(schema.clone())),
                ),
            ] {
                let viewed = policy_output(rules, Some(schema.clone()));
                assert_eq!(
                    serde_json::to_string(&viewed.1).ok(),
                    serde_json::to_string(&whole.1).ok(),
                    "{schema}"
                );
                assert_eq!(viewed.0, whole.0);
            }
        }
        assert_eq!(policy_output(&Spy::default(), None), (Envelope::None, None));
    }
}
