//! Values Code Mode makes once and keeps for the rest of the process,
//! handed out as `&'static` (a [`ToolDef`](crate::catalogue::ToolDef)
//! holds only `&'static` texts): each lives in a slot of a `static` array,
//! so nothing is leaked, the same value is never stored twice, and the
//! room is bounded. A server fills two slots (`search` and `execute`, or
//! `code`); only a process that builds many differently described
//! engines, a test binary, fills more.

use std::sync::OnceLock;

/// The held value equal to the one `make` builds (as `same` says), or
/// `make`'s value put in the first free slot; `None` when every slot holds
/// another value.
pub(crate) fn intern<T>(
    slots: &'static [OnceLock<T>],
    same: impl Fn(&T) -> bool,
    make: impl FnOnce() -> T,
) -> Option<&'static T> {
    let mut value = None;
    let mut make = Some(make);
    for slot in slots {
        if let Some(held) = slot.get() {
            if same(held) {
                return Some(held);
            }
            continue;
        }
        let new = match value.take() {
            Some(v) => v,
            None => make.take().map(|f| f())?,
        };
        // Slots fill in order, so an equal value would be before this
        // free one; another thread may fill it first, maybe with ours.
        match slot.set(new) {
            Ok(()) => return slot.get(),
            Err(back) => {
                if slot.get().is_some_and(&same) {
                    return slot.get();
                }
                value = Some(back);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_value_is_stored_once() {
        static SLOTS: [OnceLock<String>; 3] = [const { OnceLock::new() }; 3];
        let text = |t: &'static str| intern(&SLOTS, |h| h == t, || t.to_owned());
        let a = text("a").map(|s| s as *const String);
        assert!(a.is_some());
        assert_eq!(text("a").map(|s| s as *const String), a);
        assert_eq!(text("b").map(String::as_str), Some("b"));
        assert_eq!(SLOTS.iter().filter(|s| s.get().is_some()).count(), 2);
    }

    #[test]
    fn a_full_table_refuses_a_new_value_but_serves_held_ones() {
        static SLOTS: [OnceLock<u32>; 2] = [const { OnceLock::new() }; 2];
        let number = |n: u32| intern(&SLOTS, |h| *h == n, || n).copied();
        assert_eq!(number(1), Some(1));
        assert_eq!(number(2), Some(2));
        assert_eq!(number(3), None);
        assert_eq!(number(1), Some(1));
    }

    #[test]
    fn a_held_value_is_not_built_again() {
        static SLOTS: [OnceLock<u32>; 2] = [const { OnceLock::new() }; 2];
        assert_eq!(intern(&SLOTS, |h| *h == 7, || 7).copied(), Some(7));
        let found = intern(&SLOTS, |h| *h == 7, || panic!("built twice"));
        assert_eq!(found.copied(), Some(7));
    }
}
