//! Reading a list answer with the profile's [`Pagination`] (the data, in
//! `profile::pagination`): which query parameter carries the cursor or
//! page, and where the answer says whether there is more.
//!
//! [`Pagination::next`] turns one list answer into the exact arguments of
//! the next call (the call's own arguments with the cursor replaced), or
//! says it was the last page. The generator infers the convention from the
//! spec; forge.json `pagination` overrides it. A next page named by URL
//! (a body member, a `Link` header) is read only when it is the same list
//! ([`target`]).

mod link;
pub mod target;

pub use link::next_target;

use serde_json::Value;

use crate::catalogue::{ParamLocation, ToolDef};
use crate::profile::{BodyEnvelope, Pagination};
use crate::request::Args;

/// One 2xx answer, as the paging reader needs it.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    /// The parsed body.
    pub body: &'a Value,
    /// The target of the answer's `Link: <…>; rel="next"`, when sent.
    pub next_link: Option<&'a str>,
    /// The URL the request went to, without its query: a next URL is
    /// followed only when it names this one.
    pub url: &'a str,
}

/// What one list answer says about the next page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageNext {
    /// Call the same tool again with these arguments.
    Next(Args),
    /// This was the last page.
    Last,
}

impl Pagination {
    /// The tool argument the convention's query parameter is, when `tool`
    /// has it (so `tool` is a paged list); `None` for conventions that
    /// need no parameter declared.
    fn param_arg(&self, tool: &ToolDef) -> Option<&'static str> {
        let param = match *self {
            Self::LastItemId { param, .. }
            | Self::CursorField { param, .. }
            | Self::PageNumber { param, .. } => param,
            Self::None | Self::NextUrl { .. } | Self::LinkHeader => return None,
        };
        tool.params
            .iter()
            .find(|p| p.location == ParamLocation::Query && p.name == param)
            .map(|p| p.arg)
    }

    /// Whether answers of `tool` can carry paging (worth reading).
    pub fn applies(&self, tool: &ToolDef) -> bool {
        match self {
            Self::None => false,
            Self::NextUrl { .. } | Self::LinkHeader => tool.method == crate::catalogue::Method::Get,
            _ => self.param_arg(tool).is_some(),
        }
    }

    /// The next page after `answer`, the answer to `tool` called with
    /// `args`; `None` when the answer is not a page this convention reads
    /// (or its next URL is not one the tool's arguments can express).
    pub fn next(
        &self,
        envelope: &BodyEnvelope,
        tool: &ToolDef,
        args: &Args,
        answer: Answer<'_>,
    ) -> Option<PageNext> {
        Some(match self.step(envelope, tool, answer)? {
            Step::Set(arg, value) => {
                let mut next = args.clone();
                next.insert(arg.to_owned(), value);
                PageNext::Next(next)
            }
            Step::Url(url) => {
                let query = target::same_list_query(answer.url, &url)?;
                return query_args(tool, args, &query);
            }
            Step::Last => PageNext::Last,
        })
    }

    /// As [`Pagination::next`] for Code Mode's `api.request`, whose
    /// `query` is keyed by parameter name: the next call's query (a next
    /// URL's parameters the tool does not declare are kept: `api.request`
    /// sends them as they are).
    pub fn next_query(
        &self,
        envelope: &BodyEnvelope,
        tool: &ToolDef,
        query: &Args,
        answer: Answer<'_>,
    ) -> Option<PageNext> {
        Some(match self.step(envelope, tool, answer)? {
            Step::Set(arg, value) => {
                let name = tool
                    .params
                    .iter()
                    .find(|p| p.arg == arg)
                    .map_or(arg, |p| p.name);
                let mut next = query.clone();
                next.insert(name.to_owned(), value);
                PageNext::Next(next)
            }
            Step::Url(url) => {
                let raw = target::same_list_query(answer.url, &url)?;
                let types = target::InputTypes::of(tool);
                let next = target::typed_args(&types, target::pairs(&raw), |name| {
                    let arg = tool
                        .params
                        .iter()
                        .find(|p| p.location == ParamLocation::Query && p.name == name)
                        .map_or(name, |p| p.arg);
                    Some((name.to_owned(), arg.to_owned()))
                })?;
                PageNext::Next(next)
            }
            Step::Last => PageNext::Last,
        })
    }

    /// What `answer` says about the next page: a value for the argument
    /// named first, a URL, or the end.
    fn step(&self, envelope: &BodyEnvelope, tool: &ToolDef, answer: Answer<'_>) -> Option<Step> {
        let body = answer.body;
        match *self {
            Self::None => None,
            Self::LastItemId { more, id, .. } => {
                let arg = self.param_arg(tool)?;
                let items = envelope.list(body)?;
                if body.pointer(more) != Some(&Value::Bool(true)) {
                    return Some(Step::Last);
                }
                let last = items.last()?.pointer(id)?;
                matches!(last, Value::String(_) | Value::Number(_))
                    .then(|| Step::Set(arg, last.clone()))
            }
            Self::CursorField { cursor, .. } => {
                let arg = self.param_arg(tool)?;
                match body.pointer(cursor) {
                    Some(Value::String(c)) if !c.is_empty() => {
                        Some(Step::Set(arg, Value::String(c.clone())))
                    }
                    Some(Value::Number(n)) => Some(Step::Set(arg, Value::Number(n.clone()))),
                    _ => Some(Step::Last),
                }
            }
            Self::PageNumber {
                page, total_pages, ..
            } => {
                let arg = self.param_arg(tool)?;
                let current = body.pointer(page)?.as_f64()?;
                let total = body.pointer(total_pages)?.as_f64()?;
                if current >= total || !(1.0..=1e9).contains(&current) {
                    return Some(Step::Last);
                }
                // Checked range: the page number is a small whole number.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let next = current.trunc() as u64 + 1;
                Some(Step::Set(arg, Value::from(next)))
            }
            Self::NextUrl { next } => match body.pointer(next) {
                Some(Value::String(url)) if !url.is_empty() => Some(Step::Url(url.clone())),
                Some(Value::Null) => Some(Step::Last),
                None if envelope.list(body).is_some() => Some(Step::Last),
                _ => None,
            },
            Self::LinkHeader => match answer.next_link {
                Some(url) => Some(Step::Url(url.to_owned())),
                None if envelope.list(body).is_some() => Some(Step::Last),
                None => None,
            },
        }
    }
}

/// One answer's word on the next page.
enum Step {
    /// Send the argument with this value.
    Set(&'static str, Value),
    /// Fetch this URL.
    Url(String),
    /// No next page.
    Last,
}

/// The arguments of the page whose query is `query`: the call's path
/// arguments, plus each query parameter as the tool argument of that name,
/// typed by the input schema (a parameter the tool does not declare makes
/// the URL unusable as arguments: `None`).
fn query_args(tool: &ToolDef, args: &Args, query: &str) -> Option<PageNext> {
    let mut next: Args = args
        .iter()
        .filter(|(arg, _)| {
            tool.params
                .iter()
                .any(|p| p.arg == arg.as_str() && p.location == ParamLocation::Path)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let types = target::InputTypes::of(tool);
    let query = target::typed_args(&types, target::pairs(query), |name| {
        tool.params
            .iter()
            .find(|p| p.location == ParamLocation::Query && p.name == name)
            .map(|p| (p.arg.to_owned(), p.arg.to_owned()))
    })?;
    next.extend(query);
    Some(PageNext::Next(next))
}

#[cfg(test)]
mod tests;
