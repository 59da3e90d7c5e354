//! A small YAML writer for the Kubernetes manifests: block mappings and sequences in the order
//! given, strings plain where YAML reads them back as the same string and JSON-quoted (a valid
//! YAML double-quoted scalar) everywhere else.

use std::fmt::Write as _;

/// A YAML value.
#[derive(Clone)]
pub(super) enum Node {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A mapping, in this order.
    Map(Vec<(&'static str, Node)>),
    /// A sequence.
    List(Vec<Node>),
}

/// A string node.
pub(super) fn s(text: impl Into<String>) -> Node {
    Node::Str(text.into())
}

/// A mapping node.
pub(super) fn map(entries: Vec<(&'static str, Node)>) -> Node {
    Node::Map(entries)
}

/// `node` as a YAML document, after `comment` (each of its lines prefixed with `# `).
pub(super) fn document(comment: &str, node: &Node) -> String {
    let mut out = String::new();
    for line in comment.lines() {
        let _ = writeln!(out, "# {line}");
    }
    write_block(&mut out, node, 0);
    out
}

fn is_scalar(node: &Node) -> bool {
    match node {
        Node::Str(_) | Node::Int(_) | Node::Bool(_) => true,
        Node::Map(entries) => entries.is_empty(),
        Node::List(items) => items.is_empty(),
    }
}

fn scalar(node: &Node) -> String {
    match node {
        Node::Str(text) => string(text),
        Node::Int(value) => value.to_string(),
        Node::Bool(value) => value.to_string(),
        Node::Map(_) => "{}".into(),
        Node::List(_) => "[]".into(),
    }
}

/// Writes a mapping or sequence whose lines start at `indent` spaces.
fn write_block(out: &mut String, node: &Node, indent: usize) {
    let pad = " ".repeat(indent);
    match node {
        Node::Map(entries) => {
            for (key, value) in entries {
                if is_scalar(value) {
                    let _ = writeln!(out, "{pad}{}: {}", string(key), scalar(value));
                } else {
                    let _ = writeln!(out, "{pad}{}:", string(key));
                    write_block(out, value, indent + 2);
                }
            }
        }
        Node::List(items) => {
            for item in items {
                if is_scalar(item) {
                    let _ = writeln!(out, "{pad}- {}", scalar(item));
                } else {
                    // The item's block, two further in, with its first line's indent replaced by
                    // the dash.
                    let mut inner = String::new();
                    write_block(&mut inner, item, indent + 2);
                    let _ = write!(out, "{pad}- {}", &inner[indent + 2..]);
                }
            }
        }
        Node::Str(_) | Node::Int(_) | Node::Bool(_) => {
            let _ = writeln!(out, "{pad}{}", scalar(node));
        }
    }
}

/// A string scalar: plain when it is a word or a path YAML cannot read as anything else,
/// otherwise a JSON string (JSON's escapes are all valid in a YAML double-quoted scalar).
fn string(text: &str) -> String {
    let plain = text
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '/')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
        && !matches!(
            text.to_ascii_lowercase().as_str(),
            "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
        );
    if plain {
        text.into()
    } else {
        serde_json::Value::from(text).to_string()
    }
}
