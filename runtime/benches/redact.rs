//! Redaction cost on a 10 MB JSON body (issue 10): the credential scrub
//! every upstream response goes through, with no echo, with one echo in
//! the middle (plain and `\u`-escaped), and with an echo every ~10 KB.
//! The baseline in the same run is a plain case-sensitive byte search
//! (`memchr::memmem`, what raw-byte redaction cost) over the same body.
//!
//! Run: `cargo bench -p toolforge-runtime --bench redact`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use toolforge_runtime::redact::Redactor;

const TOKEN: &str = "cfat_Q3xv9LmR2pTz8WkJ4nHs7YbD1eFgC0aV";
const SIZE: usize = 10 * 1024 * 1024;

/// Where the echo goes in a body.
#[derive(Clone, Copy)]
enum At {
    Nowhere,
    /// In the record at about the middle of the body.
    Middle,
    /// In every n-th record.
    Every(usize),
}

/// A Cloudflare-like list body of about `SIZE` bytes (ids, names, URLs
/// with `%` and `&`, a few `\u` escapes), with `echo` placed `at`.
fn body(echo: &str, at: At) -> Vec<u8> {
    const RECORDS: usize = SIZE / 300;
    let mut out = String::with_capacity(SIZE + 4096);
    out.push_str(r#"{"success":true,"errors":[],"messages":[],"result":["#);
    let mut n = 0usize;
    while out.len() < SIZE {
        if n > 0 {
            out.push(',');
        }
        let here = match at {
            At::Nowhere => false,
            At::Middle => n == RECORDS / 2,
            At::Every(k) => n % k == k / 2,
        };
        let note = if here {
            echo.to_owned()
        } else {
            "caf\\u00e9 & more".to_owned()
        };
        out.push_str(&format!(
            r#"{{"id":"{n:032x}","name":"record-{n}.example.com","type":"CNAME","content":"https://origin.example.com/path?a=1&b=%2F{n}","proxied":true,"ttl":1,"comment":"{note}","tags":["team:edge","env:prod"],"created_on":"2024-08-06T10:00:00Z"}}"#
        ));
        n += 1;
    }
    out.push_str("]}");
    out.into_bytes()
}

fn escaped(token: &str) -> String {
    token
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect()
}

fn bench(c: &mut Criterion) {
    let redactor = Redactor::new([TOKEN]);
    let records_per_10kb = 10 * 1024 / 260;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("no_echo", body(TOKEN, At::Nowhere)),
        (
            "one_echo_plain",
            body(&format!("Bearer {TOKEN}"), At::Middle),
        ),
        ("one_echo_escaped", body(&escaped(TOKEN), At::Middle)),
        ("echo_every_10kb", body(TOKEN, At::Every(records_per_10kb))),
    ];
    let mut group = c.benchmark_group("redact_10mb");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Bytes(SIZE as u64));
    let plain = memchr::memmem::Finder::new(TOKEN.as_bytes());
    group.bench_function("baseline_memmem_no_echo", |b| {
        let bytes = &cases[0].1;
        b.iter(|| black_box(plain.find(black_box(bytes))));
    });
    for (name, bytes) in &cases {
        let echoes = redactor
            .redact_bytes(bytes.clone())
            .windows(10)
            .filter(|w| w == b"[REDACTED]")
            .count();
        eprintln!("{name}: {} bytes, {echoes} echoes redacted", bytes.len());
        group.bench_function(*name, |b| {
            b.iter_batched(
                || bytes.clone(),
                |bytes| black_box(redactor.redact_bytes(bytes)),
                criterion::BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
