//! The tree-sitter referee: languages with no checker on the CI machine (Go: no `gofmt`
//! there; Rust, TypeScript/TSX and C: no compiler that parses without building) are
//! parsed in process by their tree-sitter grammars (dev-dependencies). Tree-sitter
//! never fails a parse: it recovers, and marks what it could not read with `ERROR`
//! nodes and what it had to assume with `MISSING` ones (see the tree-sitter docs,
//! "Using Parsers", on `has_error`, `is_error` and `is_missing`). A text "parses"
//! here when its tree has neither; a grammar that reads a valid file with an error
//! node (the grammars lag their languages) makes that original not refereed, never
//! a result wrong.

use tree_sitter::{Language, Node, Parser};

/// A grammar this module parses with.
#[derive(Debug, Clone, Copy)]
pub enum Grammar {
    Go,
    Rust,
    TypeScript,
    Tsx,
    C,
}

impl Grammar {
    fn language(self) -> Language {
        match self {
            Grammar::Go => tree_sitter_go::LANGUAGE.into(),
            Grammar::Rust => tree_sitter_rust::LANGUAGE.into(),
            Grammar::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Grammar::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Grammar::C => tree_sitter_c::LANGUAGE.into(),
        }
    }
}

/// The verdict on each text, as the batch checkers give it: `None` when the tree has
/// no `ERROR` or `MISSING` node, else where the first one is (1-based line and
/// column, in bytes) and what it is. `Err` when the grammar cannot be loaded (its
/// ABI is not one the `tree-sitter` crate reads).
pub fn check(grammar: Grammar, texts: &[String]) -> Result<Vec<Option<String>>, String> {
    let mut parser = Parser::new();
    parser
        .set_language(&grammar.language())
        .map_err(|e| format!("the {grammar:?} grammar does not load: {e}"))?;
    Ok(texts
        .iter()
        .map(|t| match parser.parse(t, None) {
            None => Some("the parser gave up".to_owned()),
            Some(tree) => first_error(tree.root_node()).map(|n| {
                let p = n.start_position();
                let what = if n.is_missing() {
                    format!("missing `{}`", n.kind())
                } else {
                    let end = n.end_byte().min(n.start_byte() + 30);
                    let text = t.get(n.start_byte()..end).unwrap_or("");
                    format!("cannot read {text:?}")
                };
                format!("line {}, column {}: {what}", p.row + 1, p.column + 1)
            }),
        })
        .collect())
}

/// The first `ERROR` or `MISSING` node in document order, descending only into
/// subtrees that hold one.
fn first_error(node: Node<'_>) -> Option<Node<'_>> {
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    if !node.has_error() {
        return None;
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    children.into_iter().find_map(first_error)
}
