//! The default upstream from the spec's first server: a URL template
//! ([`crate::profile::Profile::base_url`]) whose `{name}` placeholders are
//! [`ServerVar`]s, filled from their defaults and `--server-var name=value`.
//!
//! The filled URL is then checked like `--upstream`
//! ([`super::upstream_base`]).

use super::ConfigError;
use crate::profile::ServerVar;

/// `template` with every `{name}` replaced by the value `overrides` gives
/// `name` (the last one when given twice), else the variable's default.
///
/// # Errors
///
/// An override naming no variable of `vars`, or a value outside the
/// variable's `allowed` list; both messages list what is allowed.
pub fn server_url(
    template: &str,
    vars: &[ServerVar],
    overrides: &[(String, String)],
) -> Result<String, ConfigError> {
    for (name, value) in overrides {
        let Some(var) = vars.iter().find(|v| v.name == name) else {
            return Err(ConfigError::UnknownServerVar {
                name: name.clone(),
                known: if vars.is_empty() {
                    "none (the default server has no variables)".to_owned()
                } else {
                    list(vars.iter().map(|v| v.name))
                },
            });
        };
        if !var.allowed.is_empty() && !var.allowed.contains(&value.as_str()) {
            return Err(ConfigError::ServerVarValue {
                name: name.clone(),
                value: value.clone(),
                allowed: list(var.allowed.iter().copied()),
            });
        }
    }
    let value = |name: &str| -> Option<&str> {
        overrides
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .or_else(|| vars.iter().find(|v| v.name == name).map(|v| v.default))
    };
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => match value(&after[..close]) {
                Some(v) => {
                    out.push_str(v);
                    rest = &after[close + 1..];
                }
                // Not a variable (the generator declares every one):
                // kept, so the URL check refuses it visibly.
                None => {
                    out.push('{');
                    rest = after;
                }
            },
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses one `--server-var name=value`.
///
/// # Errors
///
/// No `=`, or an empty name.
pub fn parse_server_var(raw: &str) -> Result<(String, String), String> {
    match raw.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_owned(), value.to_owned()))
        }
        _ => Err(format!("`{raw}` is not name=value")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VARS: &[ServerVar] = &[
        ServerVar {
            name: "region",
            default: "eu",
            allowed: &["eu", "us"],
        },
        ServerVar {
            name: "basePath",
            default: "v1",
            allowed: &[],
        },
    ];
    const TEMPLATE: &str = "https://{region}.api.example.com/{basePath}";

    fn ov(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn defaults_fill_the_template() {
        assert_eq!(
            server_url(TEMPLATE, VARS, &[]).unwrap(),
            "https://eu.api.example.com/v1"
        );
        assert_eq!(
            server_url("https://api.example.com/v4", &[], &[]).unwrap(),
            "https://api.example.com/v4"
        );
    }

    #[test]
    fn overrides_replace_defaults() {
        let url = server_url(
            TEMPLATE,
            VARS,
            &ov(&[("region", "us"), ("basePath", "v2/beta")]),
        )
        .unwrap();
        assert_eq!(url, "https://us.api.example.com/v2/beta");
        // The last of a repeated flag wins.
        let url = server_url(TEMPLATE, VARS, &ov(&[("region", "us"), ("region", "eu")])).unwrap();
        assert_eq!(url, "https://eu.api.example.com/v1");
    }

    #[test]
    fn unknown_names_and_values_outside_the_enum_are_refused() {
        let err = server_url(TEMPLATE, VARS, &ov(&[("zone", "x")])).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ConfigError::UnknownServerVar { .. }), "{msg}");
        assert!(
            msg.contains("`zone`") && msg.contains("`region`, `basePath`"),
            "{msg}"
        );
        let err = server_url(TEMPLATE, VARS, &ov(&[("region", "ap")])).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ConfigError::ServerVarValue { .. }), "{msg}");
        assert!(msg.contains("`ap`") && msg.contains("`eu`, `us`"), "{msg}");
        let err = server_url("https://h/", &[], &ov(&[("a", "b")])).unwrap_err();
        assert!(err.to_string().contains("no variables"), "{err}");
    }

    #[test]
    fn stray_braces_are_kept() {
        assert_eq!(
            server_url("https://h/{x}/{", VARS, &[]).unwrap(),
            "https://h/{x}/{"
        );
    }

    #[test]
    fn server_var_flags_parse() {
        assert_eq!(
            parse_server_var("region=us").unwrap(),
            ("region".to_owned(), "us".to_owned())
        );
        assert_eq!(
            parse_server_var("path=a=b").unwrap(),
            ("path".to_owned(), "a=b".to_owned())
        );
        assert!(parse_server_var("region").is_err());
        assert!(parse_server_var("=us").is_err());
    }
}
