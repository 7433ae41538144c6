use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::*;

fn ip(s: &str) -> Option<IpAddr> {
    Some(s.parse().expect("ip"))
}

#[test]
fn one_address_gets_its_burst_then_a_retry_after() {
    let limiter = RateLimiter::new(RateLimit {
        burst: 3,
        per_minute: 6,
    });
    let t = Instant::now();
    for _ in 0..3 {
        assert_eq!(limiter.check_at(ip("192.0.2.1"), t), Ok(()));
    }
    assert_eq!(limiter.check_at(ip("192.0.2.1"), t), Err(10));
    // Another address has its own bucket.
    assert_eq!(limiter.check_at(ip("192.0.2.2"), t), Ok(()));
    // Ten seconds later one request is back, not two.
    let later = t + Duration::from_secs(10);
    assert_eq!(limiter.check_at(ip("192.0.2.1"), later), Ok(()));
    assert!(limiter.check_at(ip("192.0.2.1"), later).is_err());
}

#[test]
fn an_ipv6_host_cannot_escape_by_changing_its_interface_id() {
    let limiter = RateLimiter::new(RateLimit {
        burst: 2,
        per_minute: 0,
    });
    let t = Instant::now();
    assert_eq!(limiter.check_at(ip("2001:db8:1:2::1"), t), Ok(()));
    assert_eq!(limiter.check_at(ip("2001:db8:1:2::ffff"), t), Ok(()));
    assert_eq!(limiter.check_at(ip("2001:db8:1:2:abcd::9"), t), Err(3600));
    // A v4-mapped address counts as the v4 one.
    assert_eq!(limiter.check_at(ip("198.51.100.7"), t), Ok(()));
    assert_eq!(limiter.check_at(ip("::ffff:198.51.100.7"), t), Ok(()));
    assert!(limiter.check_at(ip("198.51.100.7"), t).is_err());
}

#[test]
fn the_tracked_addresses_stay_bounded() {
    let limiter = RateLimiter::new(RateLimit {
        burst: 1,
        per_minute: 1,
    });
    let t = Instant::now();
    for n in 0..(MAX_TRACKED as u32 + 10) {
        let addr = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + n));
        let _ = limiter.check_at(Some(addr), t);
    }
    let tracked = limiter.buckets.lock().map(|b| b.len()).unwrap_or(0);
    assert!(tracked <= MAX_TRACKED, "{tracked}");
}

#[tokio::test]
async fn a_live_count_refuses_at_the_cap_and_counts_locally() {
    let count = LiveCount::default();
    let calls = std::sync::atomic::AtomicU32::new(0);
    let read = || async {
        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok::<u64, ()>(8)
    };
    assert_eq!(count.admit(10, read).await, Ok(()));
    assert_eq!(count.admit(10, read).await, Ok(()));
    assert_eq!(count.admit(10, read).await, Err(true));
    // One store count within the second, not one per request.
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 1);
    let failing = LiveCount::default();
    assert_eq!(
        failing.admit(10, || async { Err::<u64, ()>(()) }).await,
        Err(false)
    );
}
