//! `mcp-relay dev-certs`: a local development CA and a `localhost` certificate signed by it, so
//! wss can be tried (and tested) without a public certificate. The private keys are written
//! next to the certificates and are git-ignored; never use them outside a development machine.

use std::path::{Path, PathBuf};

use anyhow::Context;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// PEM texts of a freshly generated CA and server certificate.
pub struct DevCerts {
    pub ca_cert_pem: String,
    pub ca_key_pem: String,
    pub server_cert_pem: String,
    pub server_key_pem: String,
}

/// Generates a CA and a certificate for `localhost`, `127.0.0.1` and `::1` (plus `extra_names`).
pub fn generate(extra_names: &[String]) -> anyhow::Result<DevCerts> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "mcp-relay development CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate()?;
    let ca_key_pem = ca_key.serialize_pem();
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key)?;

    let mut names = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    names.extend(extra_names.iter().cloned());
    let mut server_params = CertificateParams::new(names)?;
    server_params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    server_params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    let server_key = KeyPair::generate()?;
    let server_cert = server_params.signed_by(&server_key, &ca)?;
    Ok(DevCerts {
        ca_cert_pem: ca.pem(),
        ca_key_pem,
        server_cert_pem: server_cert.pem(),
        server_key_pem: server_key.serialize_pem(),
    })
}

/// Writes `ca.pem`, `ca.key`, `localhost.pem` and `localhost.key` into `dir`; returns the
/// paths of the server certificate and key.
pub fn write(dir: &Path, certs: &DevCerts) -> anyhow::Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let files = [
        ("ca.pem", &certs.ca_cert_pem),
        ("ca.key", &certs.ca_key_pem),
        ("localhost.pem", &certs.server_cert_pem),
        ("localhost.key", &certs.server_key_pem),
    ];
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        #[cfg(unix)]
        if name.ends_with(".key") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok((dir.join("localhost.pem"), dir.join("localhost.key")))
}
