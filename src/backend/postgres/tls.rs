//! The TLS connector of a PostgreSQL store (native-tls: OpenSSL on Linux).

use postgres_native_tls::MakeTlsConnector;

use crate::error::{Error, Result};
use crate::model::json::quote;

use super::config::{Resolved, SslMode};

fn read_pem(what: &str, path: &std::path::Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        Error::io(
            format!(
                "cannot read the PostgreSQL {what} {}",
                quote(&path.display().to_string())
            ),
            e,
        )
    })
}

/// Builds the connector for `r`: certificate checks as its `sslMode` asks
/// (none for `prefer`/`require`, the chain for `verify-ca`, chain and host
/// name for `verify-full`), the system's roots plus `sslRootCert`, and the
/// client certificate when one is configured.
pub fn connector(r: &Resolved) -> Result<MakeTlsConnector> {
    let mut b = native_tls::TlsConnector::builder();
    match r.ssl_mode {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => {
            b.danger_accept_invalid_certs(true);
            b.danger_accept_invalid_hostnames(true);
        }
        SslMode::VerifyCa => {
            b.danger_accept_invalid_hostnames(true);
        }
        SslMode::VerifyFull => {}
    }
    if let Some(path) = &r.ssl_root_cert {
        let pem = read_pem("root certificate file (sslRootCert)", path)?;
        let certs = native_tls::Certificate::stack_from_pem(&pem).map_err(|e| {
            Error::invalid(format!(
                "PostgreSQL sslRootCert {} holds no PEM certificate: {e}",
                quote(&path.display().to_string())
            ))
        })?;
        if certs.is_empty() {
            return Err(Error::invalid(format!(
                "PostgreSQL sslRootCert {} holds no PEM certificate",
                quote(&path.display().to_string())
            )));
        }
        for c in certs {
            b.add_root_certificate(c);
        }
    }
    if let (Some(cert), Some(key)) = (&r.ssl_cert, &r.ssl_key) {
        let cert_pem = read_pem("client certificate (sslCert)", cert)?;
        let key_pem = read_pem("client key (sslKey)", key)?;
        let id = native_tls::Identity::from_pkcs8(&cert_pem, &key_pem).map_err(|e| {
            Error::invalid(format!(
                "PostgreSQL sslCert {} / sslKey {} are not a PEM certificate and PKCS#8 PEM key: {e}",
                quote(&cert.display().to_string()),
                quote(&key.display().to_string())
            ))
        })?;
        b.identity(id);
    }
    let c = b
        .build()
        .map_err(|e| Error::io_msg(format!("{}: cannot set up TLS: {e}", r.label)))?;
    Ok(MakeTlsConnector::new(c))
}
