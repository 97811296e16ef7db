//! Keeping credentials out of messages. A URL can carry them (a SAS token's `sig=` in its
//! query, `user:password@` before its host), object_store's errors repeat the request's
//! URL, and storage options hold secrets: every message this crate makes about a store
//! passes through [`Redactor::redact`] (URLs without userinfo, query and fragment; the
//! secret option values replaced by `***`).

use std::fmt;

/// What a secret is replaced with in messages.
const HIDDEN: &str = "***";

/// The length of the shortest secret replaced wherever it appears.
const SHORTEST: usize = 8;

/// `text` with the userinfo (`user:password@`), the query (`?…`) and the fragment (`#…`)
/// removed from every URL (`scheme://…`) in it. A URL ends at white space or a quote;
/// punctuation that ends the text after a query (`)`, `.`, `,`, …) is kept.
///
/// ```
/// use shardwright_object_store::redact;
/// assert_eq!(
///     redact("error sending request for url (http://me:pw@host:9/b/k?sig=abc%3D)"),
///     "error sending request for url (http://host:9/b/k)",
/// );
/// assert_eq!(redact("no URL here: a?b=c"), "no URL here: a?b=c");
/// ```
#[must_use]
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let start = scheme_start(&rest[..at]);
        let after = &rest[at + 3..];
        out.push_str(&rest[..at + 3]);
        if start == at {
            // no scheme before "://": not a URL
            rest = after;
            continue;
        }
        let end = after.find(ends_url).unwrap_or(after.len());
        let (url, tail) = after.split_at(end);
        // the authority, as WHATWG URLs read it: up to the first '/', '\', '?' or '#';
        // its userinfo up to its last '@'
        let authority_end = url.find(['/', '\\', '?', '#']).unwrap_or(url.len());
        let authority = &url[..authority_end];
        out.push_str(
            authority
                .rfind('@')
                .map_or(authority, |i| &authority[i + 1..]),
        );
        let path = &url[authority_end..];
        let path_end = path.find(['?', '#']).unwrap_or(path.len());
        out.push_str(&path[..path_end]);
        if path_end < path.len() {
            let dropped = &path[path_end..];
            let kept = dropped.trim_end_matches([')', ']', '}', '.', ',', ';', ':', '!']);
            out.push_str(&dropped[kept.len()..]);
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// Where the scheme ending `before` starts (`before.len()` when there is none): a run of
/// letters, digits, `+`, `-` and `.` that starts with a letter.
fn scheme_start(before: &str) -> usize {
    let run = before.len()
        - before
            .bytes()
            .rev()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
            .count();
    before[run..]
        .find(|c: char| c.is_ascii_alphabetic())
        .map_or(before.len(), |i| run + i)
}

/// The characters that end a URL in a message.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>')
}

/// Cleans the messages about one store: [`redact`]s every URL in them and replaces the
/// secrets among its options (the values of keys that name a secret, key, token, SAS or
/// password, and the credentials inside URLs given as options or as the store's URL) by
/// `***` wherever they appear, when they have 8 characters or more (shorter ones, such as
/// `true` or `secret`, are common words, and no real key or token). Its `Debug` shows how
/// many secrets it holds, never them.
///
/// ```
/// use shardwright_object_store::Redactor;
/// let redactor = Redactor::new(
///     "az://container/a.zarr",
///     &[("azure_storage_sas_key", "sv=2022-11-02&sig=c2VjcmV0"), ("allow_http", "true")],
/// );
/// let message = "PUT https://acct.blob.core.windows.net/container/a.zarr/zarr.json?sv=2022-11-02&sig=c2VjcmV0 \
///                refused (key sv=2022-11-02&sig=c2VjcmV0)";
/// assert_eq!(
///     redactor.redact(message),
///     "PUT https://acct.blob.core.windows.net/container/a.zarr/zarr.json refused (key ***)",
/// );
/// assert_eq!(format!("{redactor:?}"), "Redactor { secrets: 2 }");
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    /// Longest first, so that a secret containing another is replaced whole.
    secrets: Vec<String>,
}

impl Redactor {
    /// The redactor of the messages about the store of `url` configured with `options`.
    #[must_use]
    pub fn new(url: &str, options: &[(&str, &str)]) -> Self {
        let mut secrets = Vec::new();
        in_url(url, &mut secrets);
        for &(key, value) in options {
            if secret_key(key) {
                secrets.push(value.to_string());
                // a SAS token's signature also appears alone, percent-encoded or not
                query_secrets(value, &mut secrets);
            }
            in_url(value, &mut secrets);
            let key = key.to_ascii_lowercase();
            if key.contains("endpoint") || key.contains("url") {
                // credentials before a host, in a value that is no URL (`user:pw@host`)
                let value = value.split_once("://").map_or(value, |(_, rest)| rest);
                let authority = value.split(['/', '?', '#']).next().unwrap_or("");
                if let Some((userinfo, _)) = authority.rsplit_once('@') {
                    secrets.push(userinfo.to_string());
                }
            }
        }
        // Short values (a switch, a word such as "secret") would mangle messages; the URLs
        // that carry them are cleaned all the same.
        secrets.retain(|s| s.len() >= SHORTEST);
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Self { secrets }
    }

    /// `text` without credentials: its URLs [`redact`]ed, the secrets replaced by `***`.
    #[must_use]
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_string();
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), HIDDEN);
            }
        }
        redact(&text)
    }
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

/// Whether the option `key` holds a secret (`secret_access_key`, `session_token`,
/// `azure_storage_sas_key`, `azure_storage_account_key`, `client_secret`, …; not an id,
/// a switch or a file's path).
fn secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "secret",
        "token",
        "sas",
        "password",
        "key",
        "sig",
        "credential",
    ]
    .iter()
    .any(|word| key.contains(word))
        && !key.ends_with("_id")
        && !key.ends_with("_enabled")
        && !key.starts_with("skip_")
        && !key.contains("_skip_")
}

/// The credentials in `text` when it is a URL: its userinfo and password, and the values
/// of its query pairs whose names are secret's.
fn in_url(text: &str, secrets: &mut Vec<String>) {
    let Ok(url) = url::Url::parse(text) else {
        return;
    };
    match url.password() {
        Some(password) if !password.is_empty() => {
            secrets.push(format!("{}:{password}", url.username()));
            secrets.push(password.to_string());
            push_decoded(password, secrets);
        }
        // a token given as the user name
        _ if !url.username().is_empty() => {
            secrets.push(url.username().to_string());
            push_decoded(url.username(), secrets);
        }
        _ => {}
    }
    if let Some(query) = url.query() {
        query_secrets(query, secrets);
    }
}

/// The values of the secret pairs (`sig=…`, `token=…`) of a query string `text`, as
/// written and percent-decoded.
fn query_secrets(text: &str, secrets: &mut Vec<String>) {
    for pair in text.split('&') {
        if let Some((name, value)) = pair.split_once('=') {
            if secret_key(name) || name.eq_ignore_ascii_case("sig") {
                secrets.push(value.to_string());
                push_decoded(value, secrets);
            }
        }
    }
}

/// The percent-decoding of `text` (`+` read as a space, as in a query), where it differs.
fn push_decoded(text: &str, secrets: &mut Vec<String>) {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                i += 3;
            }
            (b'+', _) => {
                decoded.push(b' ');
                i += 1;
            }
            (byte, _) => {
                decoded.push(byte);
                i += 1;
            }
        }
    }
    let decoded = String::from_utf8_lossy(&decoded);
    if decoded != text {
        secrets.push(decoded.into_owned());
    }
}

/// A store's name in messages — its root URL, without credentials — and the redactor of
/// the messages about it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Named {
    url: String,
    redactor: Redactor,
}

impl Named {
    /// The name `url` (cleaned) of a store whose messages `redactor` cleans.
    pub(crate) fn new(url: &str, redactor: Redactor) -> Self {
        Self {
            url: redactor.redact(url),
            redactor,
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.url
    }

    /// `"{url}: {what}"`, cleaned.
    pub(crate) fn says(&self, what: impl fmt::Display) -> String {
        self.redactor.redact(&format!("{}: {what}", self.url))
    }
}

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

#[cfg(test)]
mod tests {
    use super::{redact, Redactor};

    #[test]
    fn urls_lose_their_userinfo_query_and_fragment() {
        let cases = [
            ("s3://bucket/a.zarr", "s3://bucket/a.zarr"),
            ("az://container/p?sig=SECRET", "az://container/p"),
            (
                "https://acct.blob.core.windows.net/c/p?sv=1&sig=S#f",
                "https://acct.blob.core.windows.net/c/p",
            ),
            (
                "endpoint=\"http://user:pw@127.0.0.1:9\" is plain",
                "endpoint=\"http://127.0.0.1:9\" is plain",
            ),
            ("http://a:b@c@host/x", "http://host/x"),
            ("http://user:pw@host?q=1", "http://host"),
            ("http://user:pw@host#frag", "http://host"),
            ("(see http://h/p?x=1).", "(see http://h/p)."),
            (
                "'http://h/p?x=1', 'http://u:p@h2/q#z'",
                "'http://h/p', 'http://h2/q'",
            ),
            ("two: s3://b/k?a=1 gs://c/k?b=2", "two: s3://b/k gs://c/k"),
            (
                "not a URL: ://x?y=1 and 3://x?y",
                "not a URL: ://x?y=1 and 3://x?y",
            ),
            ("Url: s3+x://u:p@b", "Url: s3+x://b"),
            ("éhttp://u:p@h/?q", "éhttp://h/"),
            ("http://token@host/k", "http://host/k"),
            (
                "unicode é http://ü:ß@hôst/ä?ö=1 ø",
                "unicode é http://hôst/ä ø",
            ),
            ("", ""),
        ];
        for (given, expected) in cases {
            assert_eq!(redact(given), expected, "{given}");
        }
    }

    #[test]
    fn secret_options_are_hidden_wherever_they_appear() {
        let redactor = Redactor::new(
            "https://me:hunter22@acct.blob.core.windows.net/c?sig=URLSIG%2B1",
            &[
                ("secret_access_key", "wJalrXUtnFEMI"),
                ("AWS_SESSION_TOKEN", "FQoGZXIvYXdzE"),
                ("azure_storage_sas_key", "sv=2022&sig=SASSIGNATURE%3D"),
                ("endpoint", "http://epuser:epsecret@127.0.0.1:9"),
                ("aws_endpoint", "short:pw@host"),
                ("access_key_id", "AKIDEXAMPLE"),
                ("skip_signature", "true"),
                ("region", "us-east-1"),
            ],
        );
        let message =
            "wJalrXUtnFEMI FQoGZXIvYXdzE SASSIGNATURE%3D SASSIGNATURE= URLSIG%2B1 URLSIG+1 \
                       hunter22 epuser:epsecret epsecret short:pw AKIDEXAMPLE us-east-1 true";
        assert_eq!(
            redactor.redact(message),
            "*** *** *** *** *** *** *** *** *** *** AKIDEXAMPLE us-east-1 true"
        );
        // a short password is left in the text, and taken out of URLs
        let short = Redactor::new("s3://key:secret@b", &[("secret_access_key", "hush")]);
        assert_eq!(
            short.redact("secret hush s3://key:secret@b/k"),
            "secret hush s3://b/k"
        );
        assert!(!format!("{redactor:?}").contains("wJalr"));
        assert_eq!(Redactor::default().redact("x://u:p@h"), "x://h");
    }
}
