//! `toolforge init`: the files of a new project around one spec: the pin
//! (`forge.json` and its schema), a Cargo workspace holding the generated
//! crate, a README, and the CI and regeneration workflows.
//!
//! Pure like the rest of the library: these functions return file contents;
//! the `toolforge` binary copies the spec, writes them and runs the
//! generator into the project's `generated/` directory.

use std::path::PathBuf;

use crate::config::{CrateNames, ForgeConfig, GeneratorOptions, PolicyKind, SpecPin};
use crate::emit::{OutputFile, RUNTIME_VERSION};
use crate::ir::Catalogue;

/// Directory of the spec copy inside a project.
pub const SPECS_DIR: &str = "specs";
/// The generated crate's directory inside a project (forge.json `output`).
pub const OUTPUT_DIR: &str = "generated";
/// The schema file next to forge.json (its `$schema`).
pub const SCHEMA_FILE: &str = "forge.schema.json";
/// Longest accepted project name.
const MAX_NAME: usize = 48;

/// Why `toolforge init` refuses its arguments.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InitError {
    /// The project name cannot become a crate and binary name.
    #[error(
        "--name `{name}`: {reason}; use 1 to {MAX_NAME} lower-case ASCII letters, digits and single `-`, starting with a letter (for example `petstore` or `acme-billing`)"
    )]
    InvalidName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The spec file name cannot be copied into `specs/` as it is.
    #[error("--spec {file}: {reason}")]
    InvalidSpecName {
        /// The file name given.
        file: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// What a new project is made of.
#[derive(Debug, Clone)]
pub struct InitOptions {
    /// Project name: the API name, `<name>-tools` the package, `<name>-mcp` the binary.
    pub name: String,
    /// The API policy.
    pub policy: PolicyKind,
    /// File name of the spec (kept as given, JSON or YAML), copied to `specs/`.
    pub spec_file: String,
    /// sha256 of the spec's bytes (the pin).
    pub sha256: String,
    /// A local `toolforge-runtime` crate (absolute path) to use beside the
    /// version requirement (local development, this repository's tests).
    pub runtime_path: Option<String>,
}

/// Refuses names that are not valid, readable package and binary stems.
///
/// # Errors
///
/// [`InitError::InvalidName`] saying what is wrong.
pub fn validate_name(name: &str) -> Result<(), InitError> {
    let fail = |reason| {
        Err(InitError::InvalidName {
            name: name.to_owned(),
            reason,
        })
    };
    if name.is_empty() {
        return fail("the name is empty");
    }
    if name.len() > MAX_NAME {
        return fail("the name is too long");
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return fail("the name must start with a lower-case letter");
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return if bad.is_ascii_uppercase() {
            fail("upper-case letters are not allowed")
        } else {
            fail("only letters, digits and `-` are allowed")
        };
    }
    if name.ends_with('-') || name.contains("--") {
        return fail("a `-` must sit between two letters or digits");
    }
    Ok(())
}

/// Refuses spec file names that would not survive the copy into `specs/`.
///
/// # Errors
///
/// [`InitError::InvalidSpecName`].
pub fn validate_spec_file(file: &str) -> Result<(), InitError> {
    let fail = |reason| {
        Err(InitError::InvalidSpecName {
            file: file.to_owned(),
            reason,
        })
    };
    let lower = file.to_ascii_lowercase();
    if ![".json", ".yaml", ".yml"]
        .iter()
        .any(|ext| lower.ends_with(ext))
    {
        return fail("the spec must be a .json, .yaml or .yml file");
    }
    if file.starts_with('.') || file.chars().any(|c| c.is_control() || c == '"') {
        return fail("the file name must not start with `.` or hold quotes or control characters");
    }
    Ok(())
}

/// The project's `forge.json`, pinned to the spec copy.
pub fn forge_config(opts: &InitOptions) -> ForgeConfig {
    ForgeConfig {
        schema: Some(SCHEMA_FILE.to_owned()),
        api: opts.name.clone(),
        spec: SpecPin {
            release: "initial".to_owned(),
            path: PathBuf::from(format!("{SPECS_DIR}/{}", opts.spec_file)),
            url: None,
            sha256: opts.sha256.clone(),
        },
        policy: opts.policy,
        krate: CrateNames {
            package: format!("{}-tools", opts.name),
            binary: format!("{}-mcp", opts.name),
            runtime_path: opts.runtime_path.clone(),
        },
        output: PathBuf::from(OUTPUT_DIR),
        options: GeneratorOptions::default(),
        identity: None,
        envelope: None,
        pagination: None,
        skills: None,
        scoped_paths: None,
        skill_groups: None,
    }
}

/// The project files other than the spec copy and the generated crate:
/// `forge.json`, its schema, the workspace `Cargo.toml`, `.gitignore`, the
/// README (which names `catalogue`'s token variable and tool count) and the
/// two workflows. Sorted by path.
///
/// # Errors
///
/// `forge.json` cannot be serialised (not expected).
pub fn project_files(
    opts: &InitOptions,
    catalogue: &Catalogue,
) -> Result<Vec<OutputFile>, serde_json::Error> {
    let config = forge_config(opts);
    let forge = serde_json::to_string_pretty(&config)? + "\n";
    let mut files = vec![
        file("forge.json", forge),
        file(SCHEMA_FILE, crate::config::json_schema()),
        file("Cargo.toml", fill(WORKSPACE_TOML, opts, catalogue)),
        file(
            "Cargo.lock",
            crate::commands::init_lock::project_lock(
                &format!("{}-tools", opts.name),
                opts.runtime_path.is_some(),
            ),
        ),
        file(".gitignore", "/target\n/.cache\n".to_owned()),
        file("README.md", fill(README, opts, catalogue)),
        file(".github/workflows/ci.yml", fill(CI_YML, opts, catalogue)),
        file(
            ".github/workflows/regenerate.yml",
            fill(REGENERATE_YML, opts, catalogue),
        ),
    ];
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

fn file(path: &str, text: String) -> OutputFile {
    OutputFile {
        path: path.to_owned(),
        contents: text.into_bytes(),
    }
}

/// Replaces the `@NAME@` placeholders of a template (plain text
/// substitution: the templates hold GitHub `${{ }}` expressions that a
/// format string or handlebars would take for their own syntax).
fn fill(template: &str, opts: &InitOptions, catalogue: &Catalogue) -> String {
    let local_runtime = match &opts.runtime_path {
        Some(path) => format!(
            "\nThis project builds against the local runtime at `{path}` (`--runtime-path`,\nforge.json `crate.runtime_path`). Remove that field and run `toolforge generate`\nto depend on the published `toolforge-runtime` only (CI on another machine needs that).\n"
        ),
        None => String::new(),
    };
    let local_profile = if opts.runtime_path.is_some() {
        "\n# A local toolforge-runtime (--runtime-path) is one being worked on: keep its\n# debug info, as toolforge's own workspace does (the two then share build\n# artefacts in one target directory).\n[profile.dev.package.toolforge-runtime]\ndebug = true\n"
    } else {
        ""
    };
    let upstream = match catalogue.profile.base_url.as_deref() {
        Some(url) if url.starts_with("https://") && catalogue.profile.server_vars.is_empty() => {
            format!("the spec's server, `{url}`")
        }
        Some(url) => format!(
            "the spec's server `{url}`; pass `--upstream https://…` (or `--server-var NAME=VALUE`) when it is not a fixed https URL"
        ),
        None => "none: the spec names no server, so pass `--upstream https://…`".to_owned(),
    };
    template
        .replace("@NAME@", &opts.name)
        .replace("@PACKAGE@", &format!("{}-tools", opts.name))
        .replace("@BINARY@", &format!("{}-mcp", opts.name))
        .replace("@SPEC@", &format!("{SPECS_DIR}/{}", opts.spec_file))
        .replace("@OUTPUT@", OUTPUT_DIR)
        .replace("@VERSION@", RUNTIME_VERSION)
        .replace("@TOKEN_ENV@", &catalogue.profile.token_env)
        .replace("@TOOLS@", &catalogue.tools().count().to_string())
        .replace("@UPSTREAM@", &upstream)
        .replace("@LOCAL_RUNTIME@", &local_runtime)
        .replace("@LOCAL_PROFILE@", local_profile)
}

const WORKSPACE_TOML: &str = r#"# The workspace of the @NAME@ MCP server; the crate in @OUTPUT@/ is generated
# by toolforge from forge.json (`toolforge generate`), never edited by hand.
[workspace]
resolver = "3"
members = ["@OUTPUT@"]

# Dependencies without debug info: much smaller target/ and faster links.
[profile.dev.package."*"]
debug = false

# The generated crate is regenerated, never edited: incremental caches cost
# its debug build more than a later build would save.
[profile.dev.package.@PACKAGE@]
incremental = false
@LOCAL_PROFILE@"#;

const README: &str = r#"# @NAME@ MCP server

An MCP server for the `@NAME@` API, generated by [toolforge](https://crates.io/crates/toolforge-generator)
from the OpenAPI spec `@SPEC@`: @TOOLS@ tools, one per operation, in the crate `@PACKAGE@`
(`@OUTPUT@/`, binary `@BINARY@`).

| file | what it is |
|---|---|
| `forge.json` | the pin: the spec file and its sha256, the policy, the crate's names |
| `@SPEC@` | the spec release the crate is generated from |
| `@OUTPUT@/` | the generated crate (`toolforge generate` writes it; do not edit) |
| `.github/workflows/ci.yml` | checks the crate matches the pin, then clippy and build |
| `.github/workflows/regenerate.yml` | weekly: fetch the latest release, regenerate, open a pull request |
@LOCAL_RUNTIME@
## Run

```sh
cargo build --release
# stdio (for desktop clients): the upstream credential comes from the environment
@TOKEN_ENV@=… target/release/@BINARY@ --transport stdio
# Streamable HTTP on 127.0.0.1:8787/mcp: client tokens map to upstream credentials
target/release/@BINARY@ --transport http --tokens-file tokens.json
target/release/@BINARY@ list            # the tools
target/release/@BINARY@ --help          # every flag
```

Default upstream: @UPSTREAM@. `--upstream URL` overrides it.

## Credentials

Never in a flag or a file in this repository:

- stdio: the server reads the upstream token from `@TOKEN_ENV@` (`--token-env NAME` picks
  another variable). Without it the tools are listed but calls fail.
- HTTP: `--tokens-file FILE` (or `TOOLFORGE_HTTP_TOKENS`) maps the sha256 of each client's
  bearer token to an upstream token, given by the name of an environment variable:
  `{"tokens": [{"sha256": "<hex sha256 of the client token>", "upstream_token_env": "@TOKEN_ENV@"}]}`.

## Regenerate

The crate is a function of `forge.json` and the spec. After editing either:

```sh
cargo install toolforge-generator --version @VERSION@ --locked   # once
toolforge pin --spec @SPEC@ --release NAME                       # a new spec release
toolforge generate                                               # rewrite @OUTPUT@/
toolforge check                                                  # what CI runs
```

The regeneration workflow does this on a schedule when forge.json records where releases
are published (`toolforge pin --url URL`), and opens one pull request with the `toolforge diff`
summary. Opening pull requests with `GITHUB_TOKEN` needs the repository setting
"Allow GitHub Actions to create and approve pull requests".

## Cargo features

`@PACKAGE@` forwards the runtime's features, both on by default: `http` (the Streamable
HTTP transport) and `codemode` (the QuickJS sandbox of `--mode codemode` and `--mode code`).
`cargo build --no-default-features` builds a stdio server with direct tools only.
"#;

const CI_YML: &str = r#"# CI of the @NAME@ MCP server: the generated crate must be what forge.json
# and the pinned spec produce (`toolforge check`), and lint and build
# cleanly. No `cargo fmt`: every Rust file here is generated, and `toolforge
# check` already pins its bytes.
name: CI

on:
  push:
    branches: [main]
  pull_request:
  workflow_dispatch:

permissions:
  contents: read

concurrency:
  group: ci-${{ github.ref }}
  cancel-in-progress: true

env:
  TOOLFORGE_VERSION: "@VERSION@"
  CARGO_TERM_COLOR: never

jobs:
  ci:
    runs-on: ubuntu-latest
    timeout-minutes: 60
    steps:
      - uses: actions/checkout@v5
        with:
          persist-credentials: false

      - name: Rust (stable, with clippy)
        uses: dtolnay/rust-toolchain@stable
        with:
          components: clippy

      - name: Cargo cache
        uses: Swatinem/rust-cache@v2

      - name: Install toolforge
        run: cargo install toolforge-generator --version "$TOOLFORGE_VERSION" --locked

      - name: toolforge check (the crate matches the pin)
        run: toolforge check

      - name: cargo clippy
        run: cargo clippy --workspace --all-targets -- -D warnings

      - name: Build and list the tools
        run: |
          cargo build --workspace
          cargo run --quiet -p @PACKAGE@ --bin @BINARY@ -- list
"#;

const REGENERATE_YML: &str = r#"# Regeneration of the @NAME@ MCP server: once a week (and on demand) fetch
# the latest published release of the spec, re-pin forge.json, keep the names
# of renamed operations with a name lock, regenerate, build, and open or
# update ONE pull request from the branch `toolforge/regenerate` whose body
# is the `toolforge diff` summary.
#
# The release URL is the `spec_url` input or forge.json `spec.url` (record
# it once with `toolforge pin --url URL`); without one the run says so and
# stops. Opening pull requests with GITHUB_TOKEN needs the repository setting
# "Allow GitHub Actions to create and approve pull requests"; pushes made
# with GITHUB_TOKEN start no other workflow, so the checks run here.
name: Regenerate

on:
  schedule:
    - cron: "23 4 * * 1" # Mondays, 04:23 UTC
  workflow_dispatch:
    inputs:
      spec_url:
        description: Where the latest release is published (default forge.json spec.url).
        type: string
        required: false
      release:
        description: Release name to record in forge.json (default the date).
        type: string
        required: false

permissions:
  contents: read

concurrency:
  group: regenerate
  cancel-in-progress: false

env:
  SPEC_URL_INPUT: ${{ inputs.spec_url }}
  RELEASE_INPUT: ${{ inputs.release }}
  BRANCH: toolforge/regenerate
  TOOLFORGE_VERSION: "@VERSION@"
  CARGO_TERM_COLOR: never

jobs:
  regenerate:
    runs-on: ubuntu-latest
    timeout-minutes: 60
    permissions:
      contents: write # push the regeneration branch
      pull-requests: write # open or update its pull request
    steps:
      - uses: actions/checkout@v5

      - name: Rust (stable, with clippy)
        uses: dtolnay/rust-toolchain@stable
        with:
          components: clippy

      - name: Cargo cache
        uses: Swatinem/rust-cache@v2

      - name: Install toolforge
        run: cargo install toolforge-generator --version "$TOOLFORGE_VERSION" --locked

      - name: Fetch the latest release
        id: fetch
        run: |
          set -euo pipefail
          url="${SPEC_URL_INPUT:-$(jq -r '.spec.url // empty' forge.json)}"
          if [ -z "$url" ]; then
            echo "::notice::no release URL: pass spec_url, or record one with toolforge pin --url URL"
            echo "changed=false" >>"$GITHUB_OUTPUT"
            exit 0
          fi
          release="${RELEASE_INPUT:-$(date -u +%Y-%m-%d)}"
          curl --fail --silent --show-error --location --proto '=https' --max-time 600 \
            --output "$RUNNER_TEMP/latest-spec" "$url"
          if [ "$(sha256sum "$RUNNER_TEMP/latest-spec" | cut -d' ' -f1)" = "$(jq -r .spec.sha256 forge.json)" ]; then
            echo "::notice::the pinned release is the latest; nothing to regenerate"
            echo "changed=false" >>"$GITHUB_OUTPUT"
            exit 0
          fi
          {
            echo "changed=true"
            echo "url=$url"
            echo "release=$release"
            echo "path=$(jq -r .spec.path forge.json)"
            echo "output=$(jq -r '.output // "generated"' forge.json)"
          } >>"$GITHUB_OUTPUT"

      # The old side of the diff is the committed catalogue: exactly what the
      # pull request changes. It is copied with the schema texts
      # `tools.json` refers to (`artifacts/schemas.json`).
      - name: Pin, diff, generate
        if: steps.fetch.outputs.changed == 'true'
        env:
          URL: ${{ steps.fetch.outputs.url }}
          RELEASE: ${{ steps.fetch.outputs.release }}
          SPEC_PATH: ${{ steps.fetch.outputs.path }}
          OUT: ${{ steps.fetch.outputs.output }}
        run: |
          set -euo pipefail
          cp -R "$OUT/artifacts" "$RUNNER_TEMP/previous-artifacts"
          mkdir -p "$(dirname "$SPEC_PATH")"
          cp "$RUNNER_TEMP/latest-spec" "$SPEC_PATH"
          toolforge pin --spec "$SPEC_PATH" --url "$URL" --release "$RELEASE"
          toolforge diff --config forge.json --write-lock \
            --old "$RUNNER_TEMP/previous-artifacts/tools.json" --old-label "committed catalogue" \
            --new "$SPEC_PATH" --new-label "$RELEASE" \
            --markdown "$RUNNER_TEMP/body.md" --json "$RUNNER_TEMP/diff.json"
          toolforge generate
          cat "$RUNNER_TEMP/body.md" >>"$GITHUB_STEP_SUMMARY"

      - name: Check, lint and build
        if: steps.fetch.outputs.changed == 'true'
        run: |
          toolforge check
          cargo clippy --workspace --all-targets -- -D warnings
          cargo build --workspace

      - name: Keep the JSON report
        if: steps.fetch.outputs.changed == 'true'
        uses: actions/upload-artifact@v6
        with:
          name: toolforge-diff
          path: ${{ runner.temp }}/diff.json

      - name: Open or update the pull request
        if: steps.fetch.outputs.changed == 'true'
        env:
          GH_TOKEN: ${{ github.token }}
          RELEASE: ${{ steps.fetch.outputs.release }}
          SPEC_PATH: ${{ steps.fetch.outputs.path }}
          OUT: ${{ steps.fetch.outputs.output }}
          BASE: ${{ github.ref_name }}
          RUN_URL: ${{ github.server_url }}/${{ github.repository }}/actions/runs/${{ github.run_id }}
        run: |
          set -euo pipefail
          if git diff --quiet -- forge.json "$SPEC_PATH" "$OUT"; then
            echo "::notice::regeneration changed nothing"
            exit 0
          fi
          body="$RUNNER_TEMP/body.md"
          printf '\nThe full JSON report is the toolforge-diff artifact of [this run](%s).\n' "$RUN_URL" >>"$body"
          git config user.name "github-actions[bot]"
          git config user.email "41898282+github-actions[bot]@users.noreply.github.com"
          git switch --force-create "$BRANCH"
          git add -- forge.json "$SPEC_PATH" "$OUT"
          git commit --quiet --message "Regenerate from $RELEASE"
          git push --force --quiet origin "$BRANCH"
          title="Regenerate tools from $RELEASE"
          number="$(gh pr list --head "$BRANCH" --base "$BASE" --state open --json number --jq '.[0].number // empty')"
          if [ -n "$number" ]; then
            gh pr edit "$number" --title "$title" --body-file "$body"
          else
            gh pr create --head "$BRANCH" --base "$BASE" --title "$title" --body-file "$body"
          fi
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_crate_names_or_are_refused_with_the_reason() {
        for ok in ["petstore", "acme-billing", "x1", "a"] {
            assert_eq!(validate_name(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("", "empty"),
            ("Petstore", "lower-case letter"),
            ("pet_store", "only letters"),
            ("petStore", "upper-case"),
            ("1forge", "start with"),
            ("pet-", "between"),
            ("pet--store", "between"),
            ("pet store", "only letters"),
        ] {
            let err = validate_name(bad).unwrap_err().to_string();
            assert!(
                err.contains(why) && err.contains("for example"),
                "{bad}: {err}"
            );
        }
        assert!(validate_name(&"a".repeat(MAX_NAME + 1)).is_err());
    }

    #[test]
    fn spec_files_must_be_json_or_yaml() {
        assert!(validate_spec_file("api.yaml").is_ok());
        assert!(validate_spec_file("xkcd.com.JSON").is_ok());
        assert!(validate_spec_file("api.txt").is_err());
        assert!(validate_spec_file(".hidden.json").is_err());
    }

    #[test]
    fn the_pin_names_the_copy_and_the_runtime_path_only_when_given() {
        let mut opts = InitOptions {
            name: "pets".into(),
            policy: PolicyKind::Generic,
            spec_file: "pets.yaml".into(),
            sha256: "ab".repeat(32),
            runtime_path: None,
        };
        let c = forge_config(&opts);
        assert_eq!(c.spec.path, PathBuf::from("specs/pets.yaml"));
        assert_eq!(c.krate.package, "pets-tools");
        assert_eq!(c.krate.binary, "pets-mcp");
        let text = serde_json::to_string_pretty(&c).unwrap();
        assert!(text.starts_with("{\n  \"$schema\": \"forge.schema.json\""));
        assert!(!text.contains("runtime_path"), "{text}");
        opts.runtime_path = Some("/src/toolforge/runtime".into());
        let c = forge_config(&opts);
        assert_eq!(
            c.krate.runtime_path.as_deref(),
            Some("/src/toolforge/runtime")
        );
    }
}
