//! A [`Doc`] as tokens, for `prettyplease` to lay out where the direct
//! layout declines: the same value written both ways, so a tool static
//! has one description ([`super::tool_doc`]) whichever way it is laid out.

use proc_macro2::{Ident, LexError, Span, TokenStream};
use quote::quote;

use super::layout::Doc;

impl Doc {
    /// The doc as tokens; a deferred literal becomes its placeholder
    /// identifier. Fails only if an atom is not Rust (a generator bug).
    pub fn tokens(&self) -> Result<TokenStream, LexError> {
        let all = |items: &[Doc]| items.iter().map(Doc::tokens).collect::<Result<Vec<_>, _>>();
        Ok(match self {
            Doc::Atom(s) => s.parse()?,
            Doc::Deferred { placeholder, .. } => {
                let id = Ident::new(placeholder, Span::call_site());
                quote!(#id)
            }
            Doc::Struct(path, fields) => {
                let path: TokenStream = path.parse()?;
                let names = fields.iter().map(|(n, _)| Ident::new(n, Span::call_site()));
                let values = fields
                    .iter()
                    .map(|(_, v)| v.tokens())
                    .collect::<Result<Vec<_>, _>>()?;
                quote!(#path { #(#names: #values),* })
            }
            Doc::Slice(items) => {
                let items = all(items)?;
                quote!(&[#(#items),*])
            }
            Doc::Tuple(items) => {
                let items = all(items)?;
                // A one-element tuple needs its comma.
                match items.as_slice() {
                    [one] => quote!((#one,)),
                    _ => quote!((#(#items),*)),
                }
            }
            Doc::Call(path, args) => {
                let path: TokenStream = path.parse()?;
                let args = all(args)?;
                quote!(#path(#(#args),*))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Doc;

    fn text(doc: &Doc) -> String {
        doc.tokens().unwrap().to_string()
    }

    #[test]
    fn every_kind_of_doc_becomes_the_rust_it_stands_for() {
        let doc = Doc::some(Doc::Struct(
            "BodyDef",
            vec![
                ("content_type", Doc::str("application/json")),
                ("kind", Doc::Atom("BodyKind::Json".into())),
                (
                    "args",
                    Doc::Call(
                        "BodyArgs::Fields",
                        vec![Doc::Slice(vec![Doc::Tuple(vec![
                            Doc::str("a"),
                            Doc::str("b"),
                        ])])],
                    ),
                ),
                ("min_fields", Doc::Atom("0u32".into())),
                (
                    "schema",
                    Doc::Deferred {
                        text: String::new(),
                        placeholder: "__toolforge_text_3".into(),
                    },
                ),
            ],
        ));
        assert_eq!(
            text(&doc),
            "Some (BodyDef { content_type : \"application/json\" , kind : BodyKind :: Json , \
             args : BodyArgs :: Fields (& [(\"a\" , \"b\")]) , min_fields : 0u32 , \
             schema : __toolforge_text_3 })"
        );
        assert_eq!(text(&Doc::Tuple(vec![Doc::str("x")])), "(\"x\" ,)");
        assert_eq!(text(&Doc::Slice(vec![])), "& []");
    }

    #[test]
    fn an_atom_that_is_not_rust_is_an_error() {
        assert!(Doc::Atom("\"open".into()).tokens().is_err());
    }
}
