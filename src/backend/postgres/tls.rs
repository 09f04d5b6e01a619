//! The TLS connector of a PostgreSQL store: rustls with the ring provider
//! (no OpenSSL is linked), trusting the system's CA store plus
//! `sslRootCert`, with a verifier for each of libpq's `sslmode` values.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{Error, Result};
use crate::model::json::quote;

use super::config::{Resolved, SslMode};

/// The connector type the pool connects with.
pub type Connector = MakeRustlsConnect;

fn shown(path: &std::path::Path) -> String {
    quote(&path.display().to_string())
}

/// The system's roots (those that parse) and the certificates of
/// `sslRootCert`, which must hold at least one (also returned).
fn roots(r: &Resolved) -> Result<(RootCertStore, Vec<CertificateDer<'static>>)> {
    let mut store = RootCertStore::empty();
    // A machine without a CA bundle still verifies against sslRootCert.
    let native = rustls_native_certs::load_native_certs();
    store.add_parsable_certificates(native.certs);
    let mut pinned = Vec::new();
    if let Some(path) = &r.ssl_root_cert {
        let certs = read_certs(path, "sslRootCert")?;
        pinned.clone_from(&certs);
        let (_, refused) = store.add_parsable_certificates(certs);
        if refused > 0 {
            return Err(Error::invalid(format!(
                "PostgreSQL sslRootCert {}: {refused} certificate(s) are not valid X.509 trust anchors",
                shown(path)
            )));
        }
    }
    Ok((store, pinned))
}

fn read_certs(path: &std::path::Path, what: &str) -> Result<Vec<CertificateDer<'static>>> {
    let bad = |e: &dyn std::fmt::Display| {
        Error::invalid(format!(
            "PostgreSQL {what} {} cannot be read as PEM certificates: {e}",
            shown(path)
        ))
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(Error::invalid(format!(
            "PostgreSQL {what} {} holds no PEM certificate",
            shown(path)
        )));
    }
    Ok(certs)
}

fn read_key(path: &std::path::Path) -> Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| {
        Error::invalid(format!(
            "PostgreSQL sslKey {} holds no PEM private key (PKCS#8, PKCS#1 or SEC1): {e}",
            shown(path)
        ))
    })
}

/// `prefer` and `require`: encrypted, the certificate not checked (as
/// libpq does without a root certificate); the handshake signatures are
/// still verified.
#[derive(Debug)]
struct NoCertificateCheck(WebPkiSupportedAlgorithms);

/// `verify-ca` (the chain is checked, the host name is not) and
/// `verify-full` (both). A server certificate that is itself one of the
/// `sslRootCert` certificates (a self-signed certificate, which OpenSSL
/// makes a CA by default and webpki refuses as an end entity) is trusted as
/// pinned, as libpq trusts it; `verify-full` still checks its host name.
#[derive(Debug)]
struct Verify {
    webpki: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
    check_name: bool,
}

impl ServerCertVerifier for NoCertificateCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

impl ServerCertVerifier for Verify {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let checked = self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match checked {
            // The name check runs after the chain check: a name error
            // means the chain is good.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            Err(e)
                if self
                    .pinned
                    .iter()
                    .any(|p| p.as_ref() == end_entity.as_ref()) =>
            {
                if self.check_name {
                    let cert = webpki::EndEntityCert::try_from(end_entity).map_err(|_| e)?;
                    cert.verify_is_valid_for_subject_name(server_name)
                        .map_err(|_| {
                            rustls::Error::InvalidCertificate(CertificateError::NotValidForName)
                        })?;
                }
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// Builds the connector for `r`: certificate checks as its `sslMode` asks
/// (none for `prefer`/`require`, the chain for `verify-ca`, chain and host
/// name for `verify-full`), the system's roots plus `sslRootCert`, and the
/// client certificate when one is configured.
pub fn connector(r: &Resolved) -> Result<Connector> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let setup =
        |e: &dyn std::fmt::Display| Error::io_msg(format!("{}: cannot set up TLS: {e}", r.label));
    let verifier: Arc<dyn ServerCertVerifier> = match r.ssl_mode {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => Arc::new(NoCertificateCheck(
            provider.signature_verification_algorithms,
        )),
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let (roots, pinned) = roots(r)?;
            if roots.is_empty() {
                return Err(Error::invalid(format!(
                    "{}: sslMode {} needs root certificates: the system has none, and no sslRootCert is set",
                    r.label,
                    r.ssl_mode.as_str()
                )));
            }
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| setup(&e))?;
            Arc::new(Verify {
                webpki,
                pinned,
                check_name: r.ssl_mode == SslMode::VerifyFull,
            })
        }
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| setup(&e))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match (&r.ssl_cert, &r.ssl_key) {
        (Some(cert), Some(key)) => {
            let certs = read_certs(cert, "sslCert")?;
            let key_der = read_key(key)?;
            builder.with_client_auth_cert(certs, key_der).map_err(|e| {
                Error::invalid(format!(
                    "PostgreSQL sslCert {} / sslKey {} do not make a client identity: {e}",
                    shown(cert),
                    shown(key)
                ))
            })?
        }
        _ => builder.with_no_client_auth(),
    };
    Ok(MakeRustlsConnect::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pinned self-signed certificate of the PostgreSQL test server
    /// (`scripts/pg-test-server.sh`, SAN localhost and 127.0.0.1).
    fn test_ca() -> Option<std::path::PathBuf> {
        match std::env::var_os("DSH_TEST_POSTGRES_CA") {
            Some(p) => Some(p.into()),
            None if std::env::var_os("CI").is_some() => {
                panic!("DSH_TEST_POSTGRES_CA is not set under CI")
            }
            None => {
                eprintln!("SKIPPED: DSH_TEST_POSTGRES_CA is not set");
                None
            }
        }
    }

    #[test]
    fn a_pinned_self_signed_certificate_is_trusted_and_its_name_checked() {
        let Some(ca) = test_ca() else {
            return;
        };
        let certs = read_certs(&ca, "sslRootCert").unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(certs.clone());
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .unwrap();
        let check = |check_name: bool, name: &str| {
            let v = Verify {
                webpki: webpki.clone(),
                pinned: certs.clone(),
                check_name,
            };
            let name = ServerName::try_from(name.to_string()).unwrap();
            v.verify_server_cert(&certs[0], &[], &name, &[], UnixTime::now())
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        check(true, "localhost").unwrap();
        check(true, "127.0.0.1").unwrap();
        let e = check(true, "db.example.com").unwrap_err();
        assert!(e.contains("NotValidForName"), "{e}");
        check(false, "db.example.com").unwrap();
        // Not pinned: webpki's own verdict stands.
        let v = Verify {
            webpki: webpki.clone(),
            pinned: Vec::new(),
            check_name: true,
        };
        let name = ServerName::try_from("localhost").unwrap();
        assert!(
            v.verify_server_cert(&certs[0], &[], &name, &[], UnixTime::now())
                .is_err()
        );
    }
}
