//! The readers on hostile and ordinary input: every archive is built here
//! with the `tar` crate (raw headers for the paths `tar` itself refuses).

use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;
use tar::{EntryType, Header};

use super::archive::read_tar_gz;
use super::*;

fn md(name: &str) -> Vec<u8> {
    format!(
        "---\nname: {name}\ndescription: Does {name} things.\nlicense: Apache-2.0\n---\n# {name}\n"
    )
    .into_bytes()
}

/// A header whose name bytes are written as given (no path checks).
fn raw_header(path: &str, kind: EntryType, size: u64) -> Header {
    let mut h = Header::new_gnu();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(0o644);
    let name = &mut h.as_old_mut().name;
    name[..path.len()].copy_from_slice(path.as_bytes());
    h.set_cksum();
    h
}

enum E<'a> {
    File(&'a str, Vec<u8>),
    Link(&'a str, EntryType, &'a str),
}

fn tar_gz(entries: &[E<'_>]) -> Vec<u8> {
    let mut b = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
    for e in entries {
        match e {
            E::File(path, data) => {
                let h = raw_header(path, EntryType::Regular, data.len() as u64);
                b.append(&h, data.as_slice()).unwrap();
            }
            E::Link(path, kind, target) => {
                let mut h = raw_header(path, *kind, 0);
                h.set_link_name(target).unwrap();
                h.set_cksum();
                b.append(&h, std::io::empty()).unwrap();
            }
        }
    }
    b.into_inner().unwrap().finish().unwrap()
}

fn read(entries: &[E<'_>]) -> SkillSet {
    read_tar_gz(&tar_gz(entries), Path::new("t.tar.gz")).unwrap()
}

fn ok_skill() -> E<'static> {
    E::File("skills/good/SKILL.md", md("good"))
}

fn names(set: &SkillSet) -> Vec<&str> {
    set.skills.keys().map(String::as_str).collect()
}

fn noted(set: &SkillSet, needle: &str) -> bool {
    set.notes.iter().any(|n| n.contains(needle))
}

#[test]
fn reads_skills_under_a_top_level_directory() {
    let set = read(&[
        E::File("repo-1.0/skills/zone-dns/SKILL.md", md("zone-dns")),
        E::File("repo-1.0/skills/zone-dns/references/a.md", b"A".to_vec()),
        E::File("repo-1.0/README.md", b"ignored".to_vec()),
    ]);
    assert_eq!(names(&set), ["zone-dns"]);
    let skill = &set.skills["zone-dns"];
    assert_eq!(skill.description, "Does zone-dns things.");
    assert_eq!(
        skill.frontmatter,
        r#"{"name":"zone-dns","description":"Does zone-dns things.","license":"Apache-2.0"}"#
    );
    let files: Vec<&str> = skill.files.keys().map(String::as_str).collect();
    assert_eq!(files, ["SKILL.md", "references/a.md"]);
    assert!(set.notes.is_empty(), "{:?}", set.notes);
}

#[test]
fn symlinks_are_dropped() {
    let set = read(&[
        ok_skill(),
        E::Link("skills/good/passwd", EntryType::Symlink, "/etc/passwd"),
    ]);
    assert_eq!(names(&set), ["good"]);
    assert!(!set.skills["good"].files.contains_key("passwd"));
    assert!(
        noted(&set, "skills/good/passwd: symbolic link"),
        "{:?}",
        set.notes
    );
}

#[test]
fn hard_links_are_dropped() {
    let set = read(&[
        ok_skill(),
        E::Link(
            "skills/good/copy.md",
            EntryType::Link,
            "skills/good/SKILL.md",
        ),
    ]);
    assert_eq!(set.skills["good"].files.len(), 1);
    assert!(
        noted(&set, "skills/good/copy.md: hard link"),
        "{:?}",
        set.notes
    );
}

#[test]
fn parent_segments_are_dropped() {
    let set = read(&[
        ok_skill(),
        E::File("skills/good/../../evil.md", b"x".to_vec()),
        E::File("../skills/evil/SKILL.md", md("evil")),
    ]);
    assert_eq!(names(&set), ["good"]);
    assert_eq!(set.skills["good"].files.len(), 1);
    assert_eq!(
        set.notes
            .iter()
            .filter(|n| n.contains("`..` segment"))
            .count(),
        2,
        "{:?}",
        set.notes
    );
}

#[test]
fn absolute_paths_are_dropped() {
    let set = read(&[ok_skill(), E::File("/skills/evil/SKILL.md", md("evil"))]);
    assert_eq!(names(&set), ["good"]);
    assert!(
        noted(&set, "/skills/evil/SKILL.md: absolute path"),
        "{:?}",
        set.notes
    );
}

#[test]
fn a_skill_with_600_files_is_left_out() {
    let mut entries = vec![ok_skill(), E::File("skills/many/SKILL.md", md("many"))];
    let paths: Vec<String> = (0..599).map(|i| format!("skills/many/f{i}.txt")).collect();
    entries.extend(paths.iter().map(|p| E::File(p, b"x".to_vec())));
    let set = read(&entries);
    assert_eq!(names(&set), ["good"]);
    assert!(
        noted(
            &set,
            "many: skill left out: 600 files, more than the limit of 512"
        ),
        "{:?}",
        set.notes
    );
}

#[test]
fn a_20_mib_skill_is_left_out() {
    let big = vec![0u8; 10 * 1024 * 1024];
    let set = read(&[
        ok_skill(),
        E::File("skills/big/SKILL.md", md("big")),
        E::File("skills/big/a.bin", big.clone()),
        E::File("skills/big/b.bin", big),
    ]);
    assert_eq!(names(&set), ["good"]);
    assert!(noted(&set, "big: skill left out: 20971"), "{:?}", set.notes);
    assert!(
        noted(&set, "more than the limit of 16777216"),
        "{:?}",
        set.notes
    );
}

#[test]
fn a_name_other_than_the_directory_is_left_out() {
    let set = read(&[ok_skill(), E::File("skills/alpha/SKILL.md", md("beta"))]);
    assert_eq!(names(&set), ["good"]);
    assert!(
        noted(
            &set,
            "alpha: skill left out: frontmatter name `beta` differs"
        ),
        "{:?}",
        set.notes
    );
}

#[test]
fn invalid_yaml_is_left_out() {
    let set = read(&[
        ok_skill(),
        E::File(
            "skills/broken/SKILL.md",
            b"---\nname: broken\ndescription: [unclosed\n---\n".to_vec(),
        ),
    ]);
    assert_eq!(names(&set), ["good"]);
    assert!(
        noted(
            &set,
            "broken: skill left out: the frontmatter is not valid YAML"
        ),
        "{:?}",
        set.notes
    );
}

#[test]
fn other_frontmatter_faults_are_left_out() {
    let cases: [(&str, &[u8], &str); 5] = [
        ("nofm", b"# no frontmatter\n", "does not begin with"),
        ("noend", b"---\nname: noend\n", "no closing"),
        (
            "nodesc",
            b"---\nname: nodesc\n---\n",
            "has no `description`",
        ),
        (
            "numname",
            b"---\nname: 7\ndescription: d\n---\n",
            "`name` is not a non-empty string",
        ),
        (
            "Bad_Name",
            b"---\nname: Bad_Name\ndescription: d\n---\n",
            "not a valid skill name",
        ),
    ];
    for (dir, text, why) in cases {
        let path = format!("skills/{dir}/SKILL.md");
        let set = read(&[E::File(&path, text.to_vec())]);
        assert!(set.skills.is_empty(), "{dir}");
        assert!(noted(&set, why), "{dir}: {:?}", set.notes);
    }
    let set = read(&[E::File("skills/empty/notes.md", b"x".to_vec())]);
    assert!(
        noted(&set, "empty: skill left out: no SKILL.md"),
        "{:?}",
        set.notes
    );
}

/// The frontmatter of a skill whose `description` line is `value`.
fn hostile(value: &str) -> Vec<u8> {
    format!("---\nname: deep\ndescription: {value}\n---\n# deep\n").into_bytes()
}

fn left_out_because(md: Vec<u8>) -> String {
    let set = read(&[ok_skill(), E::File("skills/deep/SKILL.md", md)]);
    assert_eq!(names(&set), ["good"], "{:?}", set.notes);
    let note = set.notes.iter().find(|n| n.starts_with("deep: "));
    note.cloned().unwrap_or_default()
}

/// The issue's attack: nesting 50,000 deep, which libyaml takes seconds
/// (quadratic) to scan. Refused by the linear pre-scan with the bound's
/// error, for flow sequences, flow mappings and block sequences alike.
#[test]
fn deeply_nested_frontmatter_is_refused_before_parsing() {
    let flow = hostile(&"[".repeat(50_000));
    assert!(flow.len() < MAX_FRONTMATTER_BYTES, "within the size bound");
    let deep = "deep: skill left out: SKILL.md: the frontmatter nests deeper than 64 levels";
    let note = left_out_because(flow);
    assert!(note.starts_with(deep), "{note}");
    assert!(note.ends_with("at line 3 column 77"), "{note}");
    let note = left_out_because(hostile(&"{a: ".repeat(16_000)));
    assert!(note.starts_with(deep), "{note}");
    let block = format!(
        "---\nname: deep\ndescription: d\nx:\n{}1\n---\n",
        "- ".repeat(30_000)
    );
    assert!(left_out_because(block.into_bytes()).starts_with(deep));
    // Indentation alone nests too: 70 mappings, one per line.
    let mut stair = String::from("---\nname: deep\ndescription: d\n");
    for level in 0..70 {
        stair.push_str(&format!("{}k{level}:\n", " ".repeat(level)));
    }
    stair.push_str("---\n");
    assert!(left_out_because(stair.into_bytes()).starts_with(deep));
}

/// The issue's 97 KB input (50,000 levels, closed again) is over the size
/// bound, as is any frontmatter padded past 64 KiB.
#[test]
fn oversized_frontmatter_is_refused() {
    let closed = format!("{}1{}", "[".repeat(50_000), "]".repeat(50_000));
    let note = left_out_because(hostile(&closed));
    assert!(
        note.starts_with("deep: skill left out: SKILL.md: the frontmatter is 100026 bytes, more than the limit of 65536"),
        "{note}"
    );
    let padded = format!("d\n# {}", "x".repeat(MAX_FRONTMATTER_BYTES));
    assert!(left_out_because(hostile(&padded)).contains("more than the limit of 65536"));
}

/// What real frontmatters hold, nesting included, still parses.
#[test]
fn ordinary_nested_frontmatter_still_parses() {
    let md = b"---\nname: nested\ndescription: Uses nesting.\nmetadata:\n  tags: [dns, {kind: zone, ids: [1, 2]}]\n  owner:\n    team: edge\n    contacts:\n      - name: a\n        links: [x]\n---\n# n\n";
    let set = read(&[E::File("skills/nested/SKILL.md", md.to_vec())]);
    assert_eq!(names(&set), ["nested"], "{:?}", set.notes);
    assert_eq!(
        set.skills["nested"].frontmatter,
        r#"{"name":"nested","description":"Uses nesting.","metadata":{"tags":["dns",{"kind":"zone","ids":[1,2]}],"owner":{"team":"edge","contacts":[{"name":"a","links":["x"]}]}}}"#
    );
    // 64 levels exactly is allowed.
    let ok = format!(
        "---\nname: edge\ndescription: d\nx: {}1{}\n---\n",
        "[".repeat(63),
        "]".repeat(63)
    );
    let set = read(&[E::File("skills/edge/SKILL.md", ok.into_bytes())]);
    assert_eq!(names(&set), ["edge"], "{:?}", set.notes);
}

#[test]
fn a_file_that_is_not_gzip_is_refused() {
    let err = read_tar_gz(b"not an archive", Path::new("x.tar.gz")).unwrap_err();
    assert!(
        err.to_string().starts_with("x.tar.gz: not a readable"),
        "{err}"
    );
}

#[test]
fn clean_paths() {
    assert_eq!(clean_path("./skills/a/SKILL.md"), Ok("skills/a/SKILL.md"));
    assert_eq!(clean_path("skills/a/"), Ok("skills/a"));
    assert!(clean_path("/etc").is_err());
    assert!(clean_path("a/../b").is_err());
    assert!(clean_path("a/./b").is_err());
    assert!(clean_path("a//b").is_err());
    assert!(clean_path("a\\b").is_err());
}

#[test]
fn directory_reader_and_its_digest() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("good/assets")).unwrap();
    std::fs::write(root.join("good/SKILL.md"), md("good")).unwrap();
    std::fs::write(root.join("good/assets/x.png"), [0x89, b'P']).unwrap();
    std::fs::write(root.join("README.md"), b"not a skill").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc/passwd", root.join("good/link")).unwrap();
    let (set, digest) = read_dir(root).unwrap();
    assert_eq!(names(&set), ["good"]);
    assert_eq!(set.skills["good"].files.len(), 2);
    assert!(
        noted(&set, "README.md: not inside a skill directory"),
        "{:?}",
        set.notes
    );
    #[cfg(unix)]
    assert!(
        noted(&set, "good/link: not a regular file"),
        "{:?}",
        set.notes
    );
    // The digest is of the sha256sum lines of the kept files, sorted by path.
    let line = |p: &str, b: &[u8]| format!("{}  {p}\n", hex::encode(Sha256::digest(b)));
    let manifest = line("good/SKILL.md", &md("good")) + &line("good/assets/x.png", &[0x89, b'P']);
    assert_eq!(digest, hex::encode(Sha256::digest(manifest.as_bytes())));
}

#[test]
fn emitted_files_are_content_addressed_and_deterministic() {
    let set = read(&[
        ok_skill(),
        E::File("skills/good/a.txt", b"same".to_vec()),
        E::File("skills/good/b.txt", b"same".to_vec()),
    ]);
    let files = crate::emit::skills::files(&set, "// @generated").unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let same = hex::encode(Sha256::digest(b"same"));
    assert_eq!(paths.len(), 3, "{paths:?}");
    assert_eq!(paths[0], "src/skills.rs");
    assert!(paths.contains(&format!("skills/{same}").as_str()));
    let rs = String::from_utf8(files[0].contents.clone()).unwrap();
    assert!(rs.starts_with("// @generated\n"), "{rs}");
    assert!(rs.contains(&format!("\"../skills/{same}\"")), "{rs}");
    assert!(rs.contains("mime: \"text/plain\""), "{rs}");
    assert_eq!(
        crate::emit::skills::files(&set, "// @generated").unwrap(),
        files
    );
    assert!(
        crate::emit::skills::files(&SkillSet::default(), "")
            .unwrap()
            .is_empty()
    );
}

/// The rest of the class: an alias bomb inside the 64 KiB bound. yaml_serde
/// alone replays up to 100 times the document's events (this one took
/// 772 MB and 2.9 s in a debug build before it failed); the node budget
/// refuses it after at most one node per byte plus a little.
#[test]
fn an_alias_bomb_frontmatter_is_refused() {
    let mut y = String::from("---\nname: deep\ndescription: d\nx0: &x0 [\"");
    y.push_str(&"a".repeat(68));
    y.push_str("\"]\n");
    for i in 1..9 {
        let refs = vec![format!("*x{}", i - 1); 9].join(",");
        y.push_str(&format!("x{i}: &x{i} [{refs}]\n"));
    }
    let mut n = 0;
    while y.len() < 60_000 {
        y.push_str(&format!("y{n}: [{}]\n", ["*x8"; 9].join(",")));
        n += 1;
    }
    y.push_str("---\n");
    let note = left_out_because(y.into_bytes());
    assert!(
        note.starts_with("deep: skill left out: SKILL.md: the frontmatter expands to more than")
            && note.ends_with("nodes through aliases (`*name`)"),
        "{note}"
    );
    // A few aliases, as a hand-written frontmatter may use them, still parse.
    let md = b"---\nname: reuse\ndescription: d\nbase: &b {team: edge}\nalso: *b\n---\n";
    let set = read(&[E::File("skills/reuse/SKILL.md", md.to_vec())]);
    assert_eq!(
        set.skills["reuse"].frontmatter,
        r#"{"name":"reuse","description":"d","base":{"team":"edge"},"also":{"team":"edge"}}"#
    );
}
