//! The generated crate's `src/skills.rs` and its content-addressed copies
//! of the skill files (`skills/<sha256>`, embedded with `include_bytes!`).

use std::collections::BTreeMap;

use proc_macro2::Literal;
use quote::quote;
use sha2::{Digest, Sha256};

use super::OutputFile;
use crate::error::Result;
use crate::skills::{SkillSet, mime_for};

/// The files for `set`: `src/skills.rs` (a `SKILLS` table in name order,
/// files in path order) and one `skills/<sha256>` per distinct content.
/// Nothing when the set is empty.
pub fn files(set: &SkillSet, header: &str) -> Result<Vec<OutputFile>> {
    if set.skills.is_empty() {
        return Ok(Vec::new());
    }
    let mut blobs: BTreeMap<String, &[u8]> = BTreeMap::new();
    let mut skills = Vec::new();
    for skill in set.skills.values() {
        let mut files = Vec::new();
        for (path, bytes) in &skill.files {
            let sha = hex::encode(Sha256::digest(bytes));
            let include = format!("../skills/{sha}");
            let size = Literal::u64_unsuffixed(bytes.len() as u64);
            let mime = mime_for(path);
            files.push(quote! {
                SkillFile {
                    path: #path,
                    sha256: #sha,
                    size: #size,
                    mime: #mime,
                    bytes: include_bytes!(#include),
                }
            });
            blobs.insert(sha, bytes);
        }
        let (name, description, frontmatter) =
            (&skill.name, &skill.description, &skill.frontmatter);
        skills.push(quote! {
            Skill {
                name: #name,
                description: #description,
                frontmatter: #frontmatter,
                files: &[#(#files),*],
            }
        });
    }
    let tokens = quote! {
        //! The skills pinned in `forge.json`, served over MCP (the Skills
        //! extension); file bytes are embedded from `skills/<sha256>`.
        use toolforge_runtime::skills::{Skill, SkillFile};

        /// Every skill, in name order.
        pub static SKILLS: &[Skill] = &[#(#skills),*];
    };
    let mut out = vec![OutputFile {
        path: "src/skills.rs".into(),
        contents: crate::emit::rust::format_file(tokens, "src/skills.rs", header)?.into_bytes(),
    }];
    for (sha, bytes) in blobs {
        out.push(OutputFile {
            path: format!("skills/{sha}"),
            contents: bytes.to_vec(),
        });
    }
    Ok(out)
}
