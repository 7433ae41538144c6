//! A small `Core` for the server's unit tests: one product of tools named
//! as asked, a generic profile, an upstream nobody listens on.

use std::sync::Arc;
use std::time::Duration;

use super::{Core, CoreOptions};
use crate::catalogue::{Catalogue, Product, ToolDef};
use crate::config::{Exposure, UpstreamConfig, validate_upstream};
use crate::request::testing::custom;

/// A direct-mode core serving one tool per name (the test tool, renamed).
pub(crate) fn example_core(names: &[&'static str]) -> Arc<Core> {
    example_core_of(
        names
            .iter()
            .map(|&name| custom(|t| t.name = name))
            .collect(),
    )
}

/// A direct-mode core serving `tools`, in one product.
pub(crate) fn example_core_of(tools: Vec<&'static ToolDef>) -> Arc<Core> {
    let tools: &'static [ToolDef] = tools.into_iter().cloned().collect::<Vec<_>>().leak();
    let products = vec![Product {
        name: "test",
        tools,
    }]
    .leak();
    let catalogue = Box::leak(Box::new(Catalogue {
        api: "example",
        profile: crate::profile::Profile::generic("EXAMPLE_API_TOKEN"),
        products,
        source: "{}",
        spec: "",
        skills: &[],
    }));
    let options = CoreOptions {
        exposure: Exposure::default(),
        upstream: UpstreamConfig {
            base: validate_upstream("http://127.0.0.1:9", true).expect("a loopback base"),
            timeout: Duration::from_secs(1),
            max_body_bytes: 1000,
        },
        output_schemas: false,
        max_argument_bytes: 1000,
        credential_hint: "set `EXAMPLE_API_TOKEN`".into(),
    };
    Arc::new(Core::new(catalogue, options).expect("a core"))
}
