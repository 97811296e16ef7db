//! Saying "no credentials found" where object_store says only that its last resort failed.
//!
//! With no credentials in the storage options or the environment, object_store asks the
//! machine's metadata service (EC2 instance metadata, the GCE metadata server, Azure's
//! managed identity endpoint, at `169.254.169.254` unless configured otherwise); off such a
//! machine the request fails, and its error (`Error performing PUT
//! http://169.254.169.254/latest/api/token … 403`) is all a user without credentials
//! would see. [`explain`] recognises that failure and says where credentials are looked for.

use std::error::Error as _;

/// What object_store 0.14 reads, by service (`from_env` and the builders' `build`).
const S3: &str = "no S3 credentials found: give access_key_id and secret_access_key \
    (and session_token, if temporary) in storage_options, or set AWS_ACCESS_KEY_ID and \
    AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) in the environment; object_store also \
    reads AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN, AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, \
    and AWS_CONTAINER_CREDENTIALS_FULL_URI with AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE, \
    but not AWS_PROFILE nor ~/.aws/credentials; its last resort, the EC2 instance \
    metadata endpoint (AWS_METADATA_ENDPOINT, default http://169.254.169.254), failed";

const GCS: &str = "no Google Cloud Storage credentials found: give service_account (the \
    path of a key file) or service_account_key (its JSON) in storage_options, or set \
    GOOGLE_SERVICE_ACCOUNT, GOOGLE_SERVICE_ACCOUNT_KEY or GOOGLE_APPLICATION_CREDENTIALS in \
    the environment (or have application default credentials in \
    ~/.config/gcloud/application_default_credentials.json); its last resort, the GCE \
    metadata server, failed";

const AZURE: &str = "no Azure credentials found: give account_key, sas_key, bearer_token, \
    or client_id with client_secret and tenant_id in storage_options, or set \
    AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_KEY, AZURE_STORAGE_TOKEN, or \
    AZURE_CLIENT_ID with AZURE_CLIENT_SECRET (or AZURE_FEDERATED_TOKEN_FILE) and \
    AZURE_TENANT_ID in the environment, or AZURE_USE_AZURE_CLI=true; its last resort, the \
    managed identity endpoint (MSI_ENDPOINT, default http://169.254.169.254), failed";

/// The "no credentials found" sentence for an error of the store named `url`
/// (`s3://bucket`, `gs://…`, `az://…`) when `err` is the failure of the credential
/// provider of last resort (the machine's metadata service); `None` otherwise.
pub(crate) fn explain(url: &str, err: &object_store::Error) -> Option<&'static str> {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        text.push('\n');
        text.push_str(&e.to_string());
        source = e.source();
    }
    let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
    match scheme {
        "s3" | "s3a" if s3_metadata(&text) => Some(S3),
        "gs" if text.contains("/computeMetadata/v1/instance/service-accounts/") => Some(GCS),
        "az" | "adl" | "azure" | "abfs" | "abfss"
            if text.contains("/metadata/identity/oauth2/token") =>
        {
            Some(AZURE)
        }
        _ => None,
    }
}

/// Whether `text` tells of a request to the EC2 instance metadata service (IMDSv2's
/// token, or the role and its credentials).
fn s3_metadata(text: &str) -> bool {
    text.contains("/latest/api/token")
        || text.contains("/latest/meta-data/iam/security-credentials")
}

#[cfg(test)]
mod tests {
    use super::explain;

    fn generic(store: &'static str, message: &str) -> object_store::Error {
        object_store::Error::Generic {
            store,
            source: message.to_string().into(),
        }
    }

    #[test]
    fn the_metadata_fallbacks_failure_is_explained() {
        let imds = generic(
            "S3",
            "Error performing PUT http://169.254.169.254/latest/api/token in 1ms - Server \
             returned non-2xx status code: 403 Forbidden",
        );
        let said = explain("s3://bucket", &imds).unwrap();
        assert!(said.starts_with("no S3 credentials found"), "{said}");
        assert!(said.contains("AWS_ACCESS_KEY_ID"), "{said}");
        let gce = generic(
            "GCS",
            "error sending request for url (http://169.254.169.254/computeMetadata/v1/\
             instance/service-accounts/default/token)",
        );
        assert!(explain("gs://b", &gce)
            .unwrap()
            .contains("GOOGLE_SERVICE_ACCOUNT"));
        let msi = generic(
            "MicrosoftAzure",
            "GET http://169.254.169.254/metadata/identity/oauth2/token: 400",
        );
        assert!(explain("az://c", &msi)
            .unwrap()
            .contains("AZURE_STORAGE_ACCOUNT_KEY"));
        // other failures, and another service's endpoint, are left as they are
        assert_eq!(explain("s3://b", &generic("S3", "403 Forbidden")), None);
        assert_eq!(explain("gs://b", &imds), None);
    }
}
