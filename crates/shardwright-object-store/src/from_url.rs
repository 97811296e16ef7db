//! Making a backend from a URL: the store of each service, built as its concrete type so
//! that its multipart calls by upload id are at hand (see `abandoned`).

use std::sync::{Arc, OnceLock};

use object_store::memory::InMemory;
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::ObjectStore;
use shardwright::store::StoreError;

use crate::redact::{Named, Redactor};
use crate::ObjectStoreBackend;

/// The one in-memory object store of the process, shared by every `memory://` URL (so an
/// array created at `memory:///x.zarr` can be opened again at that URL).
fn process_memory() -> Arc<InMemory> {
    static MEMORY: OnceLock<Arc<InMemory>> = OnceLock::new();
    MEMORY.get_or_init(|| Arc::new(InMemory::new())).clone()
}

impl ObjectStoreBackend {
    /// The store of `url` (`s3://bucket/path`, `gs://…`, `az://…`, `abfs://…`,
    /// `https://account.blob.core.windows.net/…`, `memory:///path`) and the path inside it.
    /// `options`: object_store configuration keys and values (`endpoint`, `region`,
    /// `access_key_id`, `secret_access_key`, `allow_http`, …, in any case, with or without
    /// the service's prefix: `AWS_REGION`, `aws_region` and `region` are one key); anything
    /// not given comes from the environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`, as
    /// object_store's `from_env` reads it), options winning over the environment. A request
    /// that finds no credentials anywhere says so, and where they are looked for.
    /// Credentials go in `options` (or the environment), never in the URL. No message of
    /// the store repeats them ([`Redactor`]).
    ///
    /// ```
    /// use shardwright_object_store::ObjectStoreBackend;
    /// let err = ObjectStoreBackend::from_url("ftp://host/x", &[]).unwrap_err();
    /// assert!(err.to_string().contains("ftp://host/x"));
    /// let err = ObjectStoreBackend::from_url("az://container/x?sig=c2VjcmV0", &[]).unwrap_err();
    /// assert!(!err.to_string().contains("c2VjcmV0"));
    /// ```
    ///
    /// # Errors
    /// [`StoreError::Config`] for a URL that is not an object store's or holds credentials
    /// (`user:password@`), or a configuration key or value object_store refuses.
    pub fn from_url(url: &str, options: &[(&str, &str)]) -> Result<(Self, String), StoreError> {
        // The environment's secrets too: object_store reads them (from_env).
        let environment = environment();
        let mut known: Vec<(&str, &str)> = options.to_vec();
        known.extend(environment.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let redactor = Redactor::new(url, &known);
        let config = |message: String| StoreError::Config {
            url: redactor.redact(url),
            message: redactor.redact(&message),
        };
        let parsed = url::Url::parse(url).map_err(|e| config(e.to_string()))?;
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(config(
                "a query or fragment ('?', '#') in an object-store URL; percent-encode them \
                 (%3F, %23) in key names"
                    .into(),
            ));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(config(
                "credentials ('user:password@') in an object-store URL; give them as storage \
                 options (e.g. access_key_id and secret_access_key) or in the environment"
                    .into(),
            ));
        }
        let made: (Arc<dyn ObjectStore>, Option<Arc<dyn MultipartStore>>, Path) =
            if parsed.scheme() == "memory" {
                if parsed.host_str().is_some_and(|h| !h.is_empty()) {
                    return Err(config(
                        "memory:// URLs name no host: memory:///path (three slashes)".into(),
                    ));
                }
                if let Some((key, _)) = options.first() {
                    return Err(config(format!(
                        "memory:// stores take no options (given {key:?})"
                    )));
                }
                let path = Path::from_url_path(parsed.path()).map_err(|e| config(e.to_string()))?;
                let memory = process_memory();
                (
                    memory.clone(),
                    Some(memory as Arc<dyn MultipartStore>),
                    path,
                )
            } else {
                check_options(&parsed, options).map_err(config)?;
                match build_multipart(&parsed, options).map_err(|e| config(e.to_string()))? {
                    Some((store, path)) => (store.0, Some(store.1), path),
                    None => {
                        let (store, path) =
                            object_store::parse_url_opts(&parsed, options.iter().copied())
                                .map_err(|e| config(e.to_string()))?;
                        (Arc::from(store), None, path)
                    }
                }
            };
        let (inner, multipart, path) = made;
        let root = match parsed.host_str() {
            Some(host) => format!("{}://{host}", parsed.scheme()),
            None => format!("{}://", parsed.scheme()),
        };
        let backend = Self {
            inner,
            multipart,
            url: Named::new(&root, redactor),
        };
        Ok((backend, path.to_string()))
    }
}

/// A store and its multipart calls (the same object twice).
type Both = (Arc<dyn ObjectStore>, Arc<dyn MultipartStore>);

/// The variables of the environment object_store's builders read (`from_env`: `AWS_*`,
/// `GOOGLE_*`, `AZURE_*`, and GCS's `SERVICE_ACCOUNT`, Azure's `MSI_ENDPOINT`), whose
/// secret values the messages must not repeat either.
fn environment() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| {
            ["AWS_", "GOOGLE_", "AZURE_"]
                .iter()
                .any(|p| k.starts_with(p))
                || k == "SERVICE_ACCOUNT"
                || k == "MSI_ENDPOINT"
        })
        .collect()
}

/// The store of `url` as its concrete type, for S3, GCS and Azure (`None` for other
/// schemes): the service's settings from the environment (object_store's `from_env`),
/// then the URL's, then `options` (already checked), each over the ones before, as
/// object_store's `parse_url_opts` would but with the environment read.
fn build_multipart(
    url: &url::Url,
    options: &[(&str, &str)],
) -> Result<Option<(Both, Path)>, object_store::Error> {
    use object_store::ObjectStoreScheme as Scheme;
    fn both<S: ObjectStore + MultipartStore>(store: S) -> Both {
        let store = Arc::new(store);
        (store.clone(), store)
    }
    let (scheme, path) = Scheme::parse(url)?;
    let path = Path::parse(path)?;
    let lower = |key: &str| key.to_ascii_lowercase();
    let store = match scheme {
        #[cfg(feature = "aws")]
        Scheme::AmazonS3 => {
            let mut builder = s3_from_env(options, environment()).with_url(url.to_string());
            for &(key, value) in options {
                if let Ok(key) = lower(key).parse() {
                    builder = builder.with_config(key, value);
                }
            }
            both(builder.build()?)
        }
        #[cfg(feature = "gcp")]
        Scheme::GoogleCloudStorage => {
            let mut builder =
                object_store::gcp::GoogleCloudStorageBuilder::from_env().with_url(url.to_string());
            for &(key, value) in options {
                if let Ok(key) = lower(key).parse() {
                    builder = builder.with_config(key, value);
                }
            }
            both(builder.build()?)
        }
        #[cfg(feature = "azure")]
        Scheme::MicrosoftAzure => {
            let mut builder =
                object_store::azure::MicrosoftAzureBuilder::from_env().with_url(url.to_string());
            for &(key, value) in options {
                if let Ok(key) = lower(key).parse() {
                    builder = builder.with_config(key, value);
                }
            }
            both(builder.build()?)
        }
        _ => return Ok(None),
    };
    Ok(Some((store, path)))
}

/// object_store's `AmazonS3Builder::from_env`, except that the environment's session token
/// is left out when `options` give keys of their own without a token: a token belongs to
/// the keys it was issued with, and signing other keys with it is refused by the server.
#[cfg(feature = "aws")]
fn s3_from_env(
    options: &[(&str, &str)],
    environment: Vec<(String, String)>,
) -> object_store::aws::AmazonS3Builder {
    use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey as Key};
    let given = |wanted: &[Key]| {
        options.iter().any(|(k, _)| {
            k.to_ascii_lowercase()
                .parse::<Key>()
                .is_ok_and(|k| wanted.contains(&k))
        })
    };
    let own_keys = given(&[Key::AccessKeyId, Key::SecretAccessKey]) && !given(&[Key::Token]);
    let mut builder = AmazonS3Builder::new();
    for (name, value) in environment {
        if !name.starts_with("AWS_") {
            continue;
        }
        if let Ok(key) = name.to_ascii_lowercase().parse::<Key>() {
            if !(own_keys && key == Key::Token) {
                builder = builder.with_config(key, value);
            }
        }
    }
    builder
}

/// Refuse option keys the URL's service does not know (object_store ignores them, so a
/// typo would silently fall back to the environment's settings).
fn check_options(url: &url::Url, options: &[(&str, &str)]) -> Result<(), String> {
    use object_store::ObjectStoreScheme as Scheme;
    let (scheme, _) = Scheme::parse(url).map_err(|e| e.to_string())?;
    for &(key, _) in options {
        // object_store's keys are lower case; from_env lowercases the variables' names,
        // and so do the builders here (`AWS_REGION`, `aws_region` and `region` alike)
        let lower = key.to_ascii_lowercase();
        let known = match scheme {
            #[cfg(feature = "aws")]
            Scheme::AmazonS3 => lower
                .parse::<object_store::aws::AmazonS3ConfigKey>()
                .is_ok(),
            #[cfg(feature = "gcp")]
            Scheme::GoogleCloudStorage => {
                lower.parse::<object_store::gcp::GoogleConfigKey>().is_ok()
            }
            #[cfg(feature = "azure")]
            Scheme::MicrosoftAzure => lower.parse::<object_store::azure::AzureConfigKey>().is_ok(),
            _ => false,
        };
        if !known {
            return Err(format!(
                "unknown storage option {key:?} for {}:// (object_store configuration keys, \
                 e.g. endpoint, region, access_key_id, secret_access_key, allow_http)",
                url.scheme()
            ));
        }
    }
    check_endpoints(options)
}

/// Endpoints must be http(s) URLs (object_store panics on one it cannot make a request
/// of), and a plain-HTTP one needs `allow_http` (object_store's refusal says only
/// "builder error").
fn check_endpoints(options: &[(&str, &str)]) -> Result<(), String> {
    let truthy = |v: &str| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "yes");
    let allow_http = options
        .iter()
        .any(|&(k, v)| k.to_ascii_lowercase().ends_with("allow_http") && truthy(v))
        || [
            "AWS_ALLOW_HTTP",
            "ALLOW_HTTP",
            "GOOGLE_ALLOW_HTTP",
            "AZURE_ALLOW_HTTP",
        ]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| truthy(&v)));
    for &(key, value) in options {
        if !key.to_ascii_lowercase().contains("endpoint") {
            continue;
        }
        let endpoint = url::Url::parse(value)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
            .ok_or_else(|| {
                format!("storage option {key}={value:?} is not an http(s) URL with a host")
            })?;
        if endpoint.scheme() == "http" && !allow_http {
            return Err(format!(
                "storage option {key}={value:?} is plain HTTP: also pass allow_http='true'"
            ));
        }
    }
    Ok(())
}

#[cfg(all(test, feature = "aws"))]
mod session_token_tests {
    use object_store::aws::AmazonS3ConfigKey as Key;

    use super::s3_from_env;

    fn env() -> Vec<(String, String)> {
        [
            ("AWS_ACCESS_KEY_ID", "ENVKEY"),
            ("AWS_SECRET_ACCESS_KEY", "envsecret"),
            ("AWS_SESSION_TOKEN", "envtoken"),
            ("AWS_REGION", "eu-west-1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    #[test]
    fn the_environments_session_token_is_not_paired_with_keys_given_as_options() {
        let own = [("access_key_id", "MINE"), ("SECRET_ACCESS_KEY", "mine")];
        let builder = s3_from_env(&own, env());
        assert_eq!(builder.get_config_value(&Key::Token), None);
        assert_eq!(
            builder.get_config_value(&Key::Region).as_deref(),
            Some("eu-west-1")
        );
        // keys and token from the environment stay together; an explicit token is kept
        let builder = s3_from_env(&[("region", "us-east-1")], env());
        assert_eq!(
            builder.get_config_value(&Key::Token).as_deref(),
            Some("envtoken")
        );
        let with_token = [("access_key_id", "MINE"), ("token", "mytoken")];
        let builder = s3_from_env(&with_token, env());
        assert_eq!(
            builder.get_config_value(&Key::Token).as_deref(),
            Some("envtoken"),
            "options are applied after: the caller's token replaces it"
        );
    }
}
