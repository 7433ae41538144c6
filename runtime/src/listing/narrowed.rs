//! Listings of narrowed sessions (an OAuth grant that hides tools, a
//! scoped URL), kept per what decides them.
//!
//! Putting a narrowed listing together means a tool value per listed tool
//! and serialising them all: 189 ms for the flagship's 1,533 tools, on
//! every `tools/list` of such a session, against under 2 ms for the shared
//! listing. Sessions that see the same tools with the same fixed arguments
//! get the same bytes, so the first one's are kept (a few, newest used
//! last out) and later ones are answered with them.

use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::Variant;

/// Everything a narrowed listing depends on: the schema variant, which
/// tools the session's exposure hides (decided tool by tool, so whatever
/// the exposure rules read is in it) and which arguments a scoped URL fixes
/// (a listing leaves them out; it never shows their values, so sessions
/// of every account at one scoped path share it:
/// `server::narrowed_tests` checks that the values change nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NarrowKey {
    /// The schema variant the client reads.
    pub variant: Variant,
    /// One bit per tool the server could list, set when it is hidden.
    pub hidden: Vec<u64>,
    /// How many tools the bits are for.
    pub tools: usize,
    /// The path parameters a scoped URL fixes, in template order.
    pub fixed: Option<Vec<&'static str>>,
}

impl NarrowKey {
    /// The key of a listing in `variant` where `hidden` says, tool by tool
    /// in one fixed order, whether the session hides it, and `fixed` names
    /// the path parameters its scoped URL fixes.
    pub fn new(
        variant: Variant,
        hidden: impl IntoIterator<Item = bool>,
        fixed: Option<Vec<&'static str>>,
    ) -> Self {
        let (mut bits, mut tools) = (Vec::new(), 0);
        for (i, h) in hidden.into_iter().enumerate() {
            tools = i + 1;
            if i % 64 == 0 {
                bits.push(0u64);
            }
            if h && let Some(word) = bits.last_mut() {
                *word |= 1 << (i % 64);
            }
        }
        Self {
            variant,
            hidden: bits,
            tools,
            fixed,
        }
    }
}

/// At most this many bytes of narrowed listings are kept (the flagship's
/// is about 2.4 MB, so a dozen exposures).
pub const NARROWED_BUDGET: usize = 32 << 20;

/// Items kept the most recently used last, let go oldest first past a
/// byte budget (the narrowed listings here, their compressed forms in the
/// HTTP layer).
#[derive(Debug)]
pub struct Recent<T> {
    items: Vec<T>,
}

impl<T> Default for Recent<T> {
    fn default() -> Self {
        Self { items: Vec::new() }
    }
}

impl<T> Recent<T> {
    /// The first item `is` picks, made the most recently used.
    pub fn find(&mut self, is: impl Fn(&T) -> bool) -> Option<&mut T> {
        let at = self.items.iter().position(is)?;
        let item = self.items.remove(at);
        self.items.push(item);
        self.items.last_mut()
    }

    /// Keeps `item` as the most recently used, then lets the oldest go
    /// while the items' sizes (as `size` reads them) sum past `budget`; the
    /// newest stays even when it alone is over it.
    pub fn push(&mut self, item: T, budget: usize, size: impl Fn(&T) -> usize) -> &mut T {
        self.items.push(item);
        let mut total: usize = self.items.iter().map(&size).sum();
        while total > budget && self.items.len() > 1 {
            let dropped = self.items.remove(0);
            total -= size(&dropped);
        }
        let newest = self.items.len() - 1;
        &mut self.items[newest]
    }

    /// The kept items, the oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter()
    }

    /// How many items are kept.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// The kept narrowed listings, the most recently used last.
#[derive(Debug, Default)]
pub struct NarrowedListings {
    kept: Mutex<Recent<(NarrowKey, Bytes)>>,
}

impl NarrowedListings {
    /// The listing for `key`: kept bytes, or `make`'s (then kept, dropping
    /// the least recently used past [`NARROWED_BUDGET`]). `make` runs
    /// without the lock held: two sessions asking for a new exposure at
    /// once may both make it, and one copy is kept.
    pub fn get_or_make(
        &self,
        key: NarrowKey,
        make: impl FnOnce() -> Option<Bytes>,
    ) -> Option<Bytes> {
        if let Some(found) = self.kept_bytes(&key) {
            return Some(found);
        }
        let made = make()?;
        let mut kept = self.lock();
        if let Some((_, bytes)) = kept.find(|(k, _)| *k == key) {
            return Some(bytes.clone());
        }
        kept.push((key, made.clone()), NARROWED_BUDGET, |(_, b)| b.len());
        Some(made)
    }

    /// The kept bytes of `key`, marked as the most recently used.
    fn kept_bytes(&self, key: &NarrowKey) -> Option<Bytes> {
        self.lock()
            .find(|(k, _)| k == key)
            .map(|(_, bytes)| bytes.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recent<(NarrowKey, Bytes)>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many listings are kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where the handler of one HTTP `tools/list` leaves a narrowed listing for
/// the layer that writes the response (the listing's bytes go into the
/// response in place of a placeholder, as the shared listing does).
#[derive(Debug, Clone, Default)]
pub struct NarrowedSlot(Arc<Mutex<Option<Bytes>>>);

impl NarrowedSlot {
    /// Leaves `bytes` for the response.
    pub fn put(&self, bytes: Bytes) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(bytes);
        }
    }

    /// The listing left for the response, if any.
    pub fn take(&self) -> Option<Bytes> {
        self.0.lock().ok().and_then(|mut slot| slot.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(hidden: &[bool]) -> NarrowKey {
        NarrowKey::new(Variant::DEFAULT, hidden.iter().copied(), None)
    }

    #[test]
    fn keys_differ_by_any_hidden_tool_and_by_the_variant() {
        let mut many = vec![false; 130];
        let base = key(&many);
        many[129] = true;
        assert_ne!(base, key(&many));
        // One tool list is not another's prefix.
        assert_ne!(key(&[true]), key(&[true, false]));
        let strict = NarrowKey::new(
            Variant::new(crate::schema_profile::SchemaProfile::Strict, false),
            [false],
            None,
        );
        assert_ne!(key(&[false]), strict);
    }

    #[test]
    fn a_kept_listing_is_answered_without_making_it_again() {
        let kept = NarrowedListings::default();
        let first = kept.get_or_make(key(&[true]), || Some(Bytes::from_static(b"[1]")));
        let again = kept.get_or_make(key(&[true]), || panic!("made twice"));
        assert_eq!(first, again);
        let other = kept.get_or_make(key(&[false]), || Some(Bytes::from_static(b"[2]")));
        assert_eq!(other.as_deref(), Some(b"[2]".as_slice()));
        assert_eq!(kept.len(), 2);
    }

    #[test]
    fn the_least_recently_used_goes_past_the_budget() {
        let kept = NarrowedListings::default();
        let big = || Some(Bytes::from(vec![b' '; NARROWED_BUDGET / 2]));
        kept.get_or_make(key(&[true]), big);
        kept.get_or_make(key(&[false]), big);
        // Using the first makes the second the oldest.
        kept.get_or_make(key(&[true]), || panic!("kept"));
        kept.get_or_make(key(&[true, true]), big);
        assert_eq!(kept.len(), 2);
        kept.get_or_make(key(&[true]), || {
            panic!("the most recently used was dropped")
        });
        let mut remade = false;
        kept.get_or_make(key(&[false]), || {
            remade = true;
            big()
        });
        assert!(remade, "the oldest stayed past the budget");
    }

    #[test]
    fn nothing_is_kept_when_making_fails() {
        let kept = NarrowedListings::default();
        assert_eq!(kept.get_or_make(key(&[true]), || None), None);
        assert!(kept.is_empty());
    }

    #[test]
    fn the_slot_hands_over_once() {
        let slot = NarrowedSlot::default();
        let seen = slot.clone();
        slot.put(Bytes::from_static(b"[]"));
        assert_eq!(seen.take().as_deref(), Some(b"[]".as_slice()));
        assert_eq!(seen.take(), None);
    }
}
