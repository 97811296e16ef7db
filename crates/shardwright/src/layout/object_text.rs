//! Editing the text of a JSON object member by member, for `zarr.json` rewrites: members
//! not changed keep their text byte for byte (integers beyond 64 bits, number forms such
//! as `1E+2`, escapes, key order, formatting), and the new or changed ones are spliced in
//! with the object's own separators.

use std::ops::Range;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

/// One member of an object's text, as byte offsets into it.
#[derive(Debug)]
struct Member {
    key: String,
    /// Where its key's opening quote is.
    start: usize,
    /// Its value's text.
    value: Range<usize>,
}

/// The text of a JSON object and where its members are.
#[derive(Debug)]
pub(crate) struct ObjectText<'a> {
    text: &'a str,
    /// Where the opening brace is.
    open: usize,
    /// Where the closing brace is.
    close: usize,
    members: Vec<Member>,
}

/// The members of an object, borrowed from its text.
struct Raw<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Raw<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Raw<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, &'de RawValue>()? {
                    members.push(member);
                }
                Ok(Raw(members))
            }
        }
        deserializer.deserialize_map(Members)
    }
}

/// Whether `c` is JSON whitespace.
fn blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

impl<'a> ObjectText<'a> {
    /// The members of `text`, a JSON object.
    ///
    /// # Errors
    /// A message saying why `text` is not a JSON object.
    pub(crate) fn parse(text: &'a str) -> Result<Self, String> {
        let Raw(raw) = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let bytes = text.as_bytes();
        let base = text.as_ptr() as usize;
        let open = text.find('{').ok_or("no opening brace")?;
        let close = text.rfind('}').ok_or("no closing brace")?;
        let mut members = Vec::with_capacity(raw.len());
        let mut at = open + 1;
        for (key, value) in raw {
            // A borrowed raw value is a slice of `text`.
            let start = (value.get().as_ptr() as usize)
                .checked_sub(base)
                .filter(|s| text.get(*s..s + value.get().len()) == Some(value.get()))
                .ok_or("a member's value is not inside the text")?;
            // Between the previous value and this key: whitespace and a comma.
            while bytes.get(at).is_some_and(|&c| blank(c) || c == b',') {
                at += 1;
            }
            if bytes.get(at) != Some(&b'"') {
                return Err(format!("cannot find the key of member '{key}'"));
            }
            let value = start..start + value.get().len();
            members.push(Member {
                key,
                start: at,
                value: value.clone(),
            });
            at = value.end;
        }
        Ok(Self {
            text,
            open,
            close,
            members,
        })
    }

    /// The text in `range` (offsets found by [`parse`](Self::parse), so always inside).
    fn at(&self, range: Range<usize>) -> &'a str {
        self.text.get(range).unwrap_or_default()
    }

    /// The text of member `key`'s value (the last, if the key is repeated).
    pub(crate) fn get(&self, key: &str) -> Option<&'a str> {
        let member = self.members.iter().rev().find(|m| m.key == key)?;
        Some(self.at(member.value.clone()))
    }

    /// Each member's key and the text of its value, in order.
    pub(crate) fn members(&self) -> Vec<(String, String)> {
        self.members
            .iter()
            .map(|m| (m.key.clone(), self.at(m.value.clone()).to_string()))
            .collect()
    }

    /// What starts a member of an object without members nested in this one: this
    /// object's indentation, two spaces deeper when it is on lines of its own.
    pub(crate) fn nested_indent(&self) -> String {
        let (sep, _) = self.style("");
        let indent = sep.trim_start_matches(',');
        if indent.contains('\n') {
            format!("{indent}  ")
        } else {
            indent.to_string()
        }
    }

    /// What separates a member from the next one (`,` and the whitespace of the text, or
    /// `nested` in an object without two members), and the text between a key and its
    /// value.
    fn style(&self, nested: &str) -> (String, String) {
        let sep = match self.members.as_slice() {
            [.., a, b] => self.at(a.value.end..b.start).to_string(),
            [only] => format!(",{}", self.at(self.open + 1..only.start)),
            [] => format!(",{nested}"),
        };
        let colon = self.members.first().map_or_else(
            || ": ".to_string(),
            |m| {
                let head = self.at(m.start..m.value.start);
                let colon = head.rfind(':').unwrap_or(0);
                let key_end = head
                    .get(..colon)
                    .and_then(|k| k.rfind('"'))
                    .map_or(colon, |q| q + 1);
                head.get(key_end..).unwrap_or(": ").to_string()
            },
        );
        (sep, colon)
    }

    /// The text with the members in `set` (key, value text) given those values (in
    /// place, or added at the end in `set`'s order) and the other members named in
    /// `remove` dropped. `nested` is the whitespace that starts a member of an object
    /// that has none yet (`"\n    "` for one nested in a pretty `zarr.json`).
    pub(crate) fn edit(&self, set: &[(String, String)], remove: &[String], nested: &str) -> String {
        let (sep, colon) = self.style(nested);
        let value_of = |key: &str| set.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v);
        // Each member kept, with what followed it in the text (`None` for the last).
        let mut out: Vec<(String, Option<&str>)> = Vec::new();
        let mut next = self.members.iter().skip(1);
        for m in &self.members {
            let after = next.next().map(|n| self.at(m.value.end..n.start));
            if let Some(value) = value_of(&m.key) {
                out.push((format!("{}{value}", self.at(m.start..m.value.start)), after));
            } else if !remove.contains(&m.key) {
                out.push((self.at(m.start..m.value.end).to_string(), after));
            }
        }
        let mut added: Vec<&String> = Vec::new();
        for (key, value) in set {
            if !self.members.iter().any(|m| &m.key == key) && !added.contains(&key) {
                added.push(key);
                let key = Value::String(key.clone()).to_string();
                out.push((format!("{key}{colon}{value}"), None));
            }
        }
        let open = self.at(0..self.open + 1);
        let close = self.at(self.close..self.text.len());
        match (self.members.first(), self.members.last()) {
            // no member left: an empty object where the text had one
            _ if out.is_empty() => format!("{open}{close}"),
            (Some(first), Some(last)) => {
                let head = self.at(0..first.start);
                let tail = self.at(last.value.end..self.text.len());
                format!("{head}{}{tail}", join(&out, &sep))
            }
            // none before: `nested`, and the whitespace one level out before the brace
            _ => {
                let outer = nested.strip_suffix("  ").unwrap_or(nested);
                format!("{open}{nested}{}{outer}{close}", join(&out, &sep))
            }
        }
    }
}

/// Members joined, each followed by the separator it had in the text (`sep` for those
/// last or new).
fn join(members: &[(String, Option<&str>)], sep: &str) -> String {
    let mut text = String::new();
    let mut before: Option<Option<&str>> = None;
    for (member, after) in members {
        if let Some(previous) = before {
            text.push_str(previous.unwrap_or(sep));
        }
        text.push_str(member);
        before = Some(*after);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(text: &str, set: &[(&str, &str)], remove: &[&str]) -> String {
        let set: Vec<(String, String)> = set
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let remove: Vec<String> = remove.iter().map(|k| k.to_string()).collect();
        ObjectText::parse(text)
            .unwrap()
            .edit(&set, &remove, "\n    ")
    }

    #[test]
    fn changed_members_are_spliced_and_the_rest_kept() {
        let text = "{\n  \"a\": 18446744073709551617,\n  \"b\" : [1E+2],\n  \"c\": {}\n}\n";
        assert_eq!(
            edit(text, &[("b", "7")], &[]),
            "{\n  \"a\": 18446744073709551617,\n  \"b\" : 7,\n  \"c\": {}\n}\n"
        );
        assert_eq!(
            edit(text, &[("d", "[1]")], &["a"]),
            "{\n  \"b\" : [1E+2],\n  \"c\": {},\n  \"d\": [1]\n}\n"
        );
        assert_eq!(
            edit(text, &[], &["c"]),
            "{\n  \"a\": 18446744073709551617,\n  \"b\" : [1E+2]\n}\n"
        );
        assert_eq!(edit(text, &[], &["a", "b", "c"]), "{}\n");
        let parsed = ObjectText::parse(text).unwrap();
        assert_eq!(parsed.get("a"), Some("18446744073709551617"));
        assert_eq!(parsed.get("b"), Some("[1E+2]"));
        assert_eq!(parsed.get("x"), None);
    }

    #[test]
    fn an_object_without_members_takes_the_nested_style() {
        assert_eq!(edit("{}", &[("k", "1")], &[]), "{\n    \"k\": 1\n  }");
        assert_eq!(
            edit("{ }", &[("k", "1"), ("l", "2")], &[]),
            "{\n    \"k\": 1,\n    \"l\": 2\n  }"
        );
        assert_eq!(
            edit("{\"only\":1}", &[("k", "2")], &[]),
            "{\"only\":1,\"k\":2}"
        );
        assert_eq!(edit("{\"only\":1}", &[], &["only"]), "{}");
    }

    #[test]
    fn keys_with_escapes_and_braces_in_strings_are_found() {
        let text = r#"{"a\"}": "}{", "\u00e9": 1}"#;
        let parsed = ObjectText::parse(text).unwrap();
        assert_eq!(parsed.get("a\"}"), Some(r#""}{""#));
        assert_eq!(parsed.get("é"), Some("1"));
        assert_eq!(edit(text, &[("é", "2")], &["a\"}"]), r#"{"\u00e9": 2}"#);
        assert!(ObjectText::parse("[1]").is_err());
        assert!(ObjectText::parse("{\"a\": 1").is_err());
    }
}
