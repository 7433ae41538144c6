//! The shape of an API's response bodies as data: JSON pointers to the
//! payload, to a failure flag, to the errors and their message and code,
//! to page metadata and to a list's items.
//!
//! Every reader of a response body (tool results, Code Mode `execute`,
//! identity probes, the account list, error messages) goes through a
//! [`BodyEnvelope`], so an API whose envelope differs only in field names
//! needs a profile value, not code. The generator's policy (or forge.json
//! `envelope`) decides the value; [`BodyEnvelope::BARE`] is the default.

use serde_json::Value;

/// How many errors of one body are quoted.
const MAX_ERRORS: usize = 10;

/// Members read from an error body whose envelope has no errors at
/// [`BodyEnvelope::errors`]: the common conventions (a `message`, an
/// `error` string or object, RFC 9457 `detail`, RFC 6749
/// `error_description`).
const FALLBACK_MESSAGES: [&str; 4] = ["/message", "/error", "/detail", "/error_description"];

/// Where things are in an API's response bodies. Pointers are RFC 6901
/// JSON pointers; `""` is the whole body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyEnvelope {
    /// The payload of a successful body (`""`: the body is the payload).
    pub payload: &'static str,
    /// A boolean that is `false` when the API reports a failure even with
    /// a 2xx status; `None`: only the status signals failure.
    pub failure_flag: Option<&'static str>,
    /// The errors of a failed body: an array of error objects, or one
    /// error object.
    pub errors: &'static str,
    /// In an error object, its message.
    pub error_message: &'static str,
    /// In an error object, its code (shown as `code <code>: <message>`).
    pub error_code: &'static str,
    /// Page metadata beside the payload in a successful body, kept under
    /// its own last pointer token next to the payload; `None`: none.
    pub page: Option<&'static str>,
    /// In a list payload that is an object, the array of its items;
    /// `None`: a list payload is the array itself.
    pub items: Option<&'static str>,
}

impl BodyEnvelope {
    /// Bodies are the payload itself; errors are read from an `errors`
    /// array of `{code, message}` objects or the common message members.
    pub const BARE: Self = Self {
        payload: "",
        failure_flag: None,
        errors: "/errors",
        error_message: "/message",
        error_code: "/code",
        page: None,
        items: None,
    };

    /// Whether bodies wrap their payload (so there is something to unwrap).
    pub fn wraps(&self) -> bool {
        !self.payload.is_empty()
    }

    /// A 2xx `body` that reports failure through the failure flag.
    pub fn reports_failure(&self, body: &Value) -> bool {
        self.failure_flag
            .is_some_and(|flag| body.pointer(flag) == Some(&Value::Bool(false)))
    }

    /// How a reported failure is named in error texts: `` `ok: false` ``
    /// for a flag at `/ok`.
    pub fn failure_text(&self) -> String {
        let name = self.failure_flag.map_or("", last_token);
        format!("`{name}: false`")
    }

    /// The items a successful `body` lists, if it is a list.
    pub fn list<'a>(&self, body: &'a Value) -> Option<&'a Vec<Value>> {
        let payload = body.pointer(self.payload)?;
        match self.items {
            Some(items) => payload.pointer(items)?.as_array(),
            None => payload.as_array(),
        }
    }

    /// Splits a successful wrapped body into its payload and its non-null
    /// page metadata; `None` when bodies are bare or `body` lacks the
    /// payload (it is then left as it was).
    pub fn unwrap(&self, body: &mut Value) -> Option<(Value, Option<Value>)> {
        if !self.wraps() {
            return None;
        }
        let payload = body.pointer_mut(self.payload)?.take();
        let page = self
            .page
            .and_then(|p| body.pointer_mut(p))
            .map(Value::take)
            .filter(|v| !v.is_null());
        Some((payload, page))
    }

    /// The member name page metadata is returned under, beside `result`
    /// (the page pointer's last token), when the envelope has one.
    pub fn page_key(&self) -> Option<String> {
        self.page.map(|p| unescape(last_token(p)))
    }

    /// The TypeScript type `api.request` resolves with in Code Mode.
    pub fn request_result_type(&self) -> String {
        match self.page_key() {
            Some(key) => format!("{{ status: number; result: any; {key}?: any }}"),
            None => "{ status: number; result: any }".to_owned(),
        }
    }

    /// The API's error messages in `body`: each error at
    /// [`BodyEnvelope::errors`] as `code <code>: <message>` (or its
    /// message alone), else the common message members. At most ten.
    pub fn error_messages(&self, body: &Value) -> Vec<String> {
        let errors: Vec<&Value> = match body.pointer(self.errors) {
            Some(Value::Array(list)) => list.iter().take(MAX_ERRORS).collect(),
            Some(one @ Value::Object(_)) => vec![one],
            _ => Vec::new(),
        };
        let mut out: Vec<String> = errors.into_iter().map(|e| self.error_text(e)).collect();
        if out.is_empty() {
            for pointer in FALLBACK_MESSAGES {
                match body.pointer(pointer) {
                    Some(Value::String(s)) => out.push(s.clone()),
                    Some(Value::Object(o)) => {
                        if let Some(m) = o.get("message").and_then(Value::as_str) {
                            out.push(m.to_owned());
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// The code of the first error in `body`, when it has one: what a
    /// thrown Code Mode error carries as `code`.
    pub fn error_code(&self, body: &Value) -> Option<Value> {
        let first = match body.pointer(self.errors)? {
            Value::Array(list) => list.first()?,
            one => one,
        };
        first
            .pointer(self.error_code)
            .filter(|c| !c.is_null())
            .cloned()
    }

    fn error_text(&self, error: &Value) -> String {
        let message = error
            .pointer(self.error_message)
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_owned);
        match error.pointer(self.error_code) {
            Some(Value::String(code)) => format!("code {code}: {message}"),
            Some(code) if !code.is_null() => format!("code {code}: {message}"),
            _ => message,
        }
    }
}

impl Default for BodyEnvelope {
    fn default() -> Self {
        Self::BARE
    }
}

/// The last reference token of a JSON pointer (`/a/b` → `b`).
fn last_token(pointer: &str) -> &str {
    pointer.rsplit('/').next().unwrap_or(pointer)
}

/// A reference token with its `~1` and `~0` escapes undone (RFC 6901).
fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::BodyEnvelope;

    /// `{ok, errors, data, paging}`: a wrapped API unlike any real one, so
    /// the readers are proven to follow the pointers, not known names.
    const WRAPPED: BodyEnvelope = BodyEnvelope {
        payload: "/data",
        failure_flag: Some("/ok"),
        page: Some("/meta/paging"),
        ..BodyEnvelope::BARE
    };

    /// `{object: "list", data, has_more}` lists and `{error: {…}}` errors.
    const LISTS_IN_OBJECTS: BodyEnvelope = BodyEnvelope {
        errors: "/error",
        items: Some("/data"),
        ..BodyEnvelope::BARE
    };

    #[test]
    fn failure_is_the_flag_being_false() {
        assert!(WRAPPED.reports_failure(&json!({"ok": false})));
        assert!(!WRAPPED.reports_failure(&json!({"ok": true})));
        assert!(!WRAPPED.reports_failure(&json!({"success": false})));
        assert!(!BodyEnvelope::BARE.reports_failure(&json!({"ok": false, "success": false})));
        assert_eq!(WRAPPED.failure_text(), "`ok: false`");
    }

    #[test]
    fn unwraps_the_payload_and_page_metadata() {
        let mut body = json!({"ok": true, "data": [1], "meta": {"paging": {"next": "b"}}});
        assert_eq!(
            WRAPPED.unwrap(&mut body),
            Some((json!([1]), Some(json!({"next": "b"}))))
        );
        let mut no_page = json!({"data": 2, "meta": {"paging": null}});
        assert_eq!(WRAPPED.unwrap(&mut no_page), Some((json!(2), None)));
        let mut plain = json!({"x": 1});
        assert_eq!(WRAPPED.unwrap(&mut plain), None);
        assert_eq!(plain, json!({"x": 1}));
        assert_eq!(BodyEnvelope::BARE.unwrap(&mut json!({"data": 1})), None);
        assert_eq!(WRAPPED.page_key().as_deref(), Some("paging"));
        assert_eq!(
            WRAPPED.request_result_type(),
            "{ status: number; result: any; paging?: any }"
        );
        assert_eq!(
            BodyEnvelope::BARE.request_result_type(),
            "{ status: number; result: any }"
        );
    }

    #[test]
    fn lists_are_found_where_the_pointers_say() {
        assert_eq!(WRAPPED.list(&json!({"data": []})), Some(&vec![]));
        assert_eq!(WRAPPED.list(&json!([])), None);
        assert_eq!(BodyEnvelope::BARE.list(&json!([])), Some(&vec![]));
        let page = json!({"object": "list", "data": [{"id": "a"}], "has_more": false});
        assert_eq!(LISTS_IN_OBJECTS.list(&page).map(Vec::len), Some(1));
        assert_eq!(BodyEnvelope::BARE.list(&page), None);
    }

    #[test]
    fn error_messages_follow_the_errors_pointer() {
        let one = json!({"error": {"type": "invalid_request_error", "code": "resource_missing", "message": "No such customer"}});
        assert_eq!(
            LISTS_IN_OBJECTS.error_messages(&one),
            ["code resource_missing: No such customer"]
        );
        assert_eq!(
            LISTS_IN_OBJECTS.error_code(&one),
            Some(json!("resource_missing"))
        );
        // The bare envelope still reads the common `error.message`.
        assert_eq!(
            BodyEnvelope::BARE.error_messages(&one),
            ["No such customer"]
        );
        assert_eq!(BodyEnvelope::BARE.error_code(&one), None);
        let many =
            json!({"errors": [{"code": 7003, "message": "No route"}, {"message": "second"}]});
        assert_eq!(
            BodyEnvelope::BARE.error_messages(&many),
            ["code 7003: No route", "second"]
        );
        assert_eq!(BodyEnvelope::BARE.error_code(&many), Some(json!(7003)));
        assert_eq!(
            BodyEnvelope::BARE.error_messages(&json!({"message": "plain"})),
            ["plain"]
        );
        assert!(
            BodyEnvelope::BARE
                .error_messages(&json!({"errors": []}))
                .is_empty()
        );
        assert!(BodyEnvelope::BARE.error_messages(&json!([1])).is_empty());
        let flood: Vec<_> = (0..50).map(|i| json!({"message": i.to_string()})).collect();
        assert_eq!(
            BodyEnvelope::BARE
                .error_messages(&json!({"errors": flood}))
                .len(),
            10
        );
    }
}
