//! Argument validation against each tool's input schema.
//!
//! Validators are compiled on a tool's first call and cached for the life
//! of the server (one [`OnceLock`] per tool), so start-up pays nothing for
//! tools that are never called.

use std::fmt;
use std::sync::OnceLock;

use serde_json::Value;

use crate::catalogue::ToolDef;

/// At most this many problems are reported for one call.
const MAX_PROBLEMS: usize = 25;
/// Each problem's text is clipped to this many characters.
const MAX_PROBLEM_CHARS: usize = 300;

/// One schema violation: where (JSON pointer into the arguments) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// JSON pointer of the offending value (`""` is the arguments object).
    pub pointer: String,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "(arguments)"
        } else {
            &self.pointer
        };
        write!(f, "{at}: {}", self.message)
    }
}

/// Arguments that cannot be sent.
#[derive(Debug, thiserror::Error)]
pub enum ArgumentsError {
    /// The arguments violate the input schema.
    #[error(
        "invalid arguments for tool `{tool}` ({} problem{}{}):\n{}",
        .problems.len(),
        if .problems.len() == 1 { "" } else { "s" },
        if *.truncated { ", first ones shown" } else { "" },
        .problems.iter().map(|p| format!("- {p}")).collect::<Vec<_>>().join("\n")
    )]
    Invalid {
        /// Tool name.
        tool: &'static str,
        /// Each violation.
        problems: Vec<Problem>,
        /// More problems existed than are listed.
        truncated: bool,
    },
    /// The tool's own schema does not compile (a generator bug).
    #[error(
        "tool `{tool}`: its input schema cannot be compiled ({detail}); this is a bug in the generated tool, not in the arguments"
    )]
    Schema {
        /// Tool name.
        tool: &'static str,
        /// The compiler's complaint.
        detail: String,
    },
}

/// Lazily compiled validators, one slot per tool index.
#[derive(Debug)]
pub struct Validators {
    slots: Vec<OnceLock<Result<jsonschema::Validator, String>>>,
}

impl Validators {
    /// Empty slots for `count` tools.
    pub fn new(count: usize) -> Self {
        Self {
            slots: (0..count).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Validates `args` against `tool`'s input schema, compiling it into
    /// slot `index` on first use.
    ///
    /// # Errors
    ///
    /// Lists every violation with its JSON pointer, or reports a schema that
    /// does not compile.
    pub fn validate(
        &self,
        index: usize,
        tool: &ToolDef,
        args: &Value,
    ) -> Result<(), ArgumentsError> {
        let compiled = match self.slots.get(index) {
            Some(slot) => slot.get_or_init(|| compile(tool)),
            None => {
                return Err(ArgumentsError::Schema {
                    tool: tool.name,
                    detail: "no validator slot".into(),
                });
            }
        };
        let validator = compiled.as_ref().map_err(|detail| ArgumentsError::Schema {
            tool: tool.name,
            detail: detail.clone(),
        })?;
        let mut problems = Vec::new();
        let mut truncated = false;
        for error in validator.iter_errors(args) {
            if problems.len() == MAX_PROBLEMS {
                truncated = true;
                break;
            }
            problems.push(Problem {
                pointer: error.instance_path().to_string(),
                message: clip(&error.to_string()),
            });
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ArgumentsError::Invalid {
                tool: tool.name,
                problems,
                truncated,
            })
        }
    }
}

fn compile(tool: &ToolDef) -> Result<jsonschema::Validator, String> {
    let schema: Value =
        serde_json::from_str(&tool.input_schema_text()).map_err(|e| e.to_string())?;
    jsonschema::draft202012::options()
        .build(&schema)
        .map_err(|e| e.to_string())
}

fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_PROBLEM_CHARS {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(MAX_PROBLEM_CHARS).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::testing::tool_with_schema;
    use serde_json::json;

    #[test]
    fn lists_each_bad_field_with_its_pointer() {
        let tool = tool_with_schema(
            r#"{"type":"object","properties":{"zone_id":{"type":"string","maxLength":4},"n":{"type":"number","minimum":1},"o":{"type":"object","properties":{"x":{"type":"boolean"}}}},"required":["zone_id"],"additionalProperties":false}"#,
        );
        let v = Validators::new(1);
        assert!(v.validate(0, tool, &json!({"zone_id": "abcd"})).is_ok());
        let err = v
            .validate(
                0,
                tool,
                &json!({"zone_id": "abcdef", "n": 0, "o": {"x": 3}, "extra": 1}),
            )
            .unwrap_err();
        let ArgumentsError::Invalid { problems, .. } = &err else {
            panic!("{err}")
        };
        let pointers: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
        for want in ["/zone_id", "/n", "/o/x", ""] {
            assert!(pointers.contains(&want), "{want} missing in {pointers:?}");
        }
        let text = err.to_string();
        assert!(text.contains("- /zone_id:"), "{text}");
        assert!(text.contains("(arguments):"), "{text}");
        let missing = v.validate(0, tool, &json!({})).unwrap_err().to_string();
        assert!(missing.contains("zone_id"), "{missing}");
    }

    #[test]
    fn broken_schema_is_reported_not_panicking() {
        let tool = tool_with_schema(r#"{"type": 12"#);
        let v = Validators::new(1);
        let err = v.validate(0, tool, &json!({})).unwrap_err();
        assert!(matches!(err, ArgumentsError::Schema { .. }), "{err}");
        assert!(matches!(
            Validators::new(0).validate(3, tool, &json!({})),
            Err(ArgumentsError::Schema { .. })
        ));
    }
}
