//! How an API pages its lists, as data: which convention, which query
//! parameter carries the cursor or page, and where the answer says whether
//! there is more (JSON pointers into the raw body). Reading an answer with
//! it is `crate::pages`.

/// An API's paging convention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pagination {
    /// Lists are not paged (or the convention is unknown).
    None,
    /// The cursor is the last item's ID (`param=<id>`), sent while the
    /// flag at `more` is `true`.
    LastItemId {
        /// Query parameter taking the cursor.
        param: &'static str,
        /// Boolean saying another page follows.
        more: &'static str,
        /// In an item, its ID.
        id: &'static str,
    },
    /// The answer holds the next cursor at `cursor` (empty or absent on
    /// the last page).
    CursorField {
        /// Query parameter taking the cursor.
        param: &'static str,
        /// The next cursor in the answer.
        cursor: &'static str,
    },
    /// The answer holds the next page's URL at `next` (absent or null on
    /// the last page); its query becomes the next arguments.
    NextUrl {
        /// The next page's URL in the answer.
        next: &'static str,
    },
    /// The answer's `Link` header names the next page (`rel="next"`, as
    /// GitHub); no such link on a list is the last page.
    LinkHeader,
    /// Numbered pages: `param=<page + 1>` while `page < total_pages`.
    PageNumber {
        /// Query parameter taking the page number.
        param: &'static str,
        /// The current page number in the answer.
        page: &'static str,
        /// The number of pages in the answer.
        total_pages: &'static str,
    },
}
