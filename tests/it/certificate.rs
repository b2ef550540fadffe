//! The certificate domain (src/certificate) against certificates made here with rcgen: a CA, leaves
//! it signs, wildcard SANs, expired and not-yet-valid leaves, RSA/ECDSA/Ed25519 keys in PKCS#8,
//! PKCS#1 and SEC1, a key of another certificate, chains in the wrong order, broken PEM.
//! RSA keys come from tests/fixtures/certificate (ring, rcgen's backend here, cannot generate them).

use kuryr_l7_router::certificate::{CertificateError, ParsedCertificate};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, PKCS_ECDSA_P384_SHA384, PKCS_ED25519,
    date_time_ymd,
};
use std::time::{Duration, SystemTime};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/certificate");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap()
}

/// 2026-06-01T00:00:00Z: inside the default validity below.
fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_780_272_000)
}

struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

fn ca(cn: &str) -> Ca {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.not_before = date_time_ymd(2020, 1, 1);
    p.not_after = date_time_ymd(2040, 1, 1);
    Ca { issuer: CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap() }
}

/// Leaf parameters: `sans` as SAN DNS names, `cn` as subject CN, valid 2020–2040 unless changed.
fn params(sans: &[&str], cn: &str) -> CertificateParams {
    let mut p = CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.not_before = date_time_ymd(2020, 1, 1);
    p.not_after = date_time_ymd(2040, 1, 1);
    p
}

fn signed(p: &CertificateParams, key: &KeyPair, ca: &Ca) -> String {
    p.signed_by(key, &ca.issuer).unwrap().pem()
}

fn parse(crt: &str, key: &str) -> Result<ParsedCertificate, CertificateError> {
    ParsedCertificate::from_pem(crt.as_bytes(), key.as_bytes())
}

/// Every base64 line of a PEM text (what must never show up in messages).
fn body_lines(pem: &str) -> Vec<&str> {
    pem.lines().filter(|l| !l.starts_with("-----") && l.len() > 20).collect()
}

#[test]
fn well_formed_secrets_of_every_key_kind_parse() {
    let ca = ca("Test CA");
    let rsa = fixture("rsa2048.pkcs8.pem");
    let p256 = fixture("p256.pkcs8.pem");
    let cases: Vec<(&str, KeyPair, Vec<String>, &str)> = vec![
        ("ECDSA P-256 (generated)", KeyPair::generate().unwrap(), vec![], "ECDSA"),
        ("ECDSA P-384", KeyPair::generate_for(&PKCS_ECDSA_P384_SHA384).unwrap(), vec![], "ECDSA"),
        ("Ed25519", KeyPair::generate_for(&PKCS_ED25519).unwrap(), vec![], "ED25519"),
        ("RSA 2048 PKCS#8", KeyPair::from_pem(&rsa).unwrap(), vec![fixture("rsa2048.pkcs1.pem")], "RSA"),
        ("ECDSA P-256 fixture", KeyPair::from_pem(&p256).unwrap(), vec![fixture("p256.sec1.pem")], "ECDSA"),
    ];
    for (name, key, other_encodings, algorithm) in cases {
        let leaf = signed(&params(&["www.example.com", "Example.ORG."], "www.example.com"), &key, &ca);
        let crt = format!("{leaf}{}", ca.issuer.pem());
        let c = parse(&crt, &key.serialize_pem()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(c.key_algorithm(), algorithm, "{name}");
        assert_eq!(c.subject(), "CN=www.example.com", "{name}");
        assert_eq!(c.common_name(), Some("www.example.com"));
        assert_eq!(c.dns_names(), ["www.example.com", "example.org"], "{name}: SANs normalized");
        assert_eq!(c.chain_len(), 1, "{name}");
        assert_eq!(c.certificates().len(), 2);
        assert_eq!(c.not_before(), SystemTime::UNIX_EPOCH + Duration::from_secs(1_577_836_800), "2020-01-01");
        assert_eq!(c.not_after(), SystemTime::UNIX_EPOCH + Duration::from_secs(2_208_988_800), "2040-01-01");
        let fp = c.sha256_fingerprint();
        assert!(fp.len() == 64 && fp.chars().all(|ch| matches!(ch, '0'..='9' | 'a'..='f')), "{fp}");
        assert_ne!(fp, parse(&ca.issuer.pem(), &ca.issuer.key().serialize_pem()).unwrap().sha256_fingerprint());
        assert_eq!(c.content_id().len(), 16);
        c.check_validity(now()).unwrap();
        // The same key in PKCS#1 / SEC1 (with an EC PARAMETERS block first) parses to the same content.
        for other in other_encodings {
            let again = parse(&crt, &other).unwrap_or_else(|e| panic!("{name} other encoding: {e}"));
            assert_eq!(again.content_id(), c.content_id(), "{name}: key normalized to PKCS#8");
            assert_eq!(again.key_algorithm(), algorithm);
        }
    }
}

fn expect_err(crt: &str, key: &str, reason: &str) -> CertificateError {
    let e = parse(crt, key).expect_err(reason);
    assert_eq!(e.reason(), reason, "{e}");
    e
}

#[test]
fn broken_or_missing_input_is_named() {
    let ca = ca("Test CA");
    let key = KeyPair::generate().unwrap();
    let key_pem = key.serialize_pem();
    let leaf = signed(&params(&["a.example.com"], "a"), &key, &ca);
    let not_base64 = "-----BEGIN CERTIFICATE-----\n!!!! not base64 !!!!\n-----END CERTIFICATE-----\n";
    let not_x509 = "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n";
    let no_end = "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n";
    let key_body_garbage = "-----BEGIN PRIVATE KEY-----\n%%%% not base64 %%%%\n-----END PRIVATE KEY-----\n";
    let key_not_der = "-----BEGIN PRIVATE KEY-----\naGVsbG8gd29ybGQgdGhpcyBpcyBub3QgREVS\n-----END PRIVATE KEY-----\n";
    let cases: Vec<(&str, String, String, &str)> = vec![
        ("empty tls.crt", String::new(), key_pem.clone(), "NoCertificate"),
        ("tls.crt holds only a key", key_pem.clone(), key_pem.clone(), "NoCertificate"),
        ("tls.crt not base64", not_base64.into(), key_pem.clone(), "MalformedCertificate"),
        ("tls.crt not X.509", not_x509.into(), key_pem.clone(), "MalformedCertificate"),
        ("tls.crt without END", no_end.into(), key_pem.clone(), "MalformedCertificate"),
        ("second certificate broken", format!("{leaf}{not_x509}"), key_pem.clone(), "MalformedCertificate"),
        ("empty tls.key", leaf.clone(), "\n \n".into(), "NoKey"),
        ("tls.key holds a certificate", leaf.clone(), leaf.clone(), "NoKey"),
        ("tls.key not base64", leaf.clone(), key_body_garbage.into(), "MalformedKey"),
        ("tls.key not DER", leaf.clone(), key_not_der.into(), "MalformedKey"),
        ("RSA 1024", leaf.clone(), fixture("rsa1024.pkcs8.pem"), "UnsupportedKey"),
        ("ECDSA P-521", leaf.clone(), fixture("p521.sec1.pem"), "UnsupportedKey"),
        ("encrypted PKCS#8", leaf.clone(), fixture("p256.encrypted.pem"), "UnsupportedKey"),
    ];
    for (name, crt, key, reason) in cases {
        let e = expect_err(&crt, &key, reason);
        let msg = e.to_string();
        eprintln!("{name}: [{reason}] {msg}");
        assert!(!msg.is_empty(), "{name}");
        for line in body_lines(&key) {
            assert!(!msg.contains(line), "{name}: message quotes the key: {msg}");
        }
        assert!(!msg.contains("not base64 !!") && !msg.contains("%%%%"), "{name}: quotes input: {msg}");
    }
    let e = expect_err(&format!("{leaf}{not_x509}"), &key_pem, "MalformedCertificate");
    assert!(e.to_string().starts_with("tls.crt: certificate 2:"), "{e}");
    let e = expect_err(&fixture("p256.encrypted.pem"), &fixture("p256.encrypted.pem"), "NoCertificate");
    assert_eq!(e.to_string(), "tls.crt holds no PEM CERTIFICATE block");
    let e = expect_err(&leaf, &fixture("p256.encrypted.pem"), "UnsupportedKey");
    assert!(e.to_string().contains("encrypted"), "{e}");
}

#[test]
fn a_key_that_is_not_the_leafs_is_a_mismatch_and_a_reversed_chain_says_so() {
    let ca = ca("Test CA");
    let key = KeyPair::generate().unwrap();
    let leaf = signed(&params(&["a.example.com"], "a.example.com"), &key, &ca);
    let other = KeyPair::generate().unwrap();
    let _other_leaf = signed(&params(&["b.example.com"], "b.example.com"), &other, &ca);

    let e = expect_err(&leaf, &other.serialize_pem(), "KeyMismatch");
    let fp = parse(&leaf, &key.serialize_pem()).unwrap().sha256_fingerprint().to_string();
    assert_eq!(
        e,
        CertificateError::KeyMismatch { subject: "CN=a.example.com".into(), fingerprint: fp.clone(), matches: None }
    );
    assert!(e.to_string().contains(&fp) && e.to_string().contains("CN=a.example.com"), "{e}");

    // CA first, then the leaf: the key belongs to certificate 2.
    let reversed = format!("{}{leaf}", ca.issuer.pem());
    let e = expect_err(&reversed, &key.serialize_pem(), "KeyMismatch");
    assert!(matches!(e, CertificateError::KeyMismatch { matches: Some(2), .. }), "{e:?}");
    assert!(e.to_string().contains("certificate 2") && e.to_string().contains("server certificate first"), "{e}");

    // An RSA key against an ECDSA leaf.
    expect_err(&leaf, &fixture("rsa2048.pkcs1.pem"), "KeyMismatch");
}

#[test]
fn the_chain_keeps_its_order_and_extra_pem_blocks_are_ignored() {
    let root = ca("Root");
    let mut ip = params(&[], "Intermediate");
    ip.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let inter = CertifiedIssuer::signed_by(ip, KeyPair::generate().unwrap(), &root.issuer).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = params(&["shop.example.com"], "shop").signed_by(&key, &inter).unwrap().pem();
    // A key pasted into tls.crt by mistake is not a certificate and not quoted.
    let crt = format!("{leaf}{}{}{}", key.serialize_pem(), inter.pem(), root.issuer.pem());
    let c = parse(&crt, &key.serialize_pem()).unwrap();
    assert_eq!(c.chain_len(), 2);
    let der: Vec<&[u8]> = c.certificates().iter().map(|d| d.as_ref()).collect();
    assert_eq!(der[1], inter.der().as_ref(), "intermediate second");
    assert_eq!(der[2], root.issuer.der().as_ref(), "root last");
}

#[test]
fn validity_is_checked_against_the_given_time() {
    let ca = ca("Test CA");
    let key = KeyPair::generate().unwrap();
    let mut expired = params(&["old.example.com"], "old");
    expired.not_before = date_time_ymd(2010, 1, 1);
    expired.not_after = date_time_ymd(2015, 1, 1);
    let mut future = params(&["new.example.com"], "new");
    future.not_before = date_time_ymd(2090, 1, 1);
    future.not_after = date_time_ymd(2095, 1, 1);

    let old = parse(&signed(&expired, &key, &ca), &key.serialize_pem()).unwrap();
    let e = old.check_validity(now()).unwrap_err();
    assert_eq!(e.reason(), "CertificateExpired");
    assert!(e.to_string().contains("expired at 2015-01-01T00:00:00Z"), "{e}");
    assert!(e.to_string().contains(old.sha256_fingerprint()), "{e}");
    old.check_validity(SystemTime::UNIX_EPOCH + Duration::from_secs(1_420_070_400)).expect("last second is valid");
    assert!(old.check_validity(SystemTime::UNIX_EPOCH + Duration::from_secs(1_420_070_401)).is_err());

    let new = parse(&signed(&future, &key, &ca), &key.serialize_pem()).unwrap();
    let e = new.check_validity(now()).unwrap_err();
    assert_eq!(e.reason(), "CertificateNotYetValid");
    assert!(e.to_string().contains("not valid before 2090-01-01T00:00:00Z"), "{e}");
    new.check_validity(SystemTime::UNIX_EPOCH + Duration::from_secs(3_786_912_000)).expect("valid in 2090");
}

#[test]
fn host_coverage_follows_rfc_6125() {
    let ca = ca("Test CA");
    let key = KeyPair::generate().unwrap();
    let pem = key.serialize_pem();
    let wild =
        parse(&signed(&params(&["*.example.com", "api.Example.net"], "ignored.example.org"), &key, &ca), &pem).unwrap();
    let cases = [
        ("a.example.com", true),
        ("A.EXAMPLE.COM", true),
        ("a.example.com.", true),
        ("example.com", false),
        ("a.b.example.com", false),
        ("*.example.com", true),
        ("api.example.net", true),
        ("x.api.example.net", false),
        ("*.example.net", false),
        ("ignored.example.org", false),
        ("", false),
    ];
    for (host, want) in cases {
        assert_eq!(wild.covers(host), want, "SAN *.example.com, api.example.net covers {host:?}");
        assert_eq!(wild.check_host(host).is_ok(), want);
    }
    let e = wild.check_host("example.com").unwrap_err();
    assert_eq!(e.reason(), "HostNotCovered");
    assert!(e.to_string().contains("host example.com") && e.to_string().contains("*.example.com, api.example.net"));

    // No SAN at all: the CN is the name.
    let cn_only = parse(&signed(&params(&[], "Legacy.Example.com"), &key, &ca), &pem).unwrap();
    assert!(cn_only.dns_names().is_empty());
    assert!(cn_only.covers("legacy.example.com"));
    assert!(!cn_only.covers("other.example.com"));
    let wild_cn = parse(&signed(&params(&[], "*.legacy.example.com"), &key, &ca), &pem).unwrap();
    assert!(wild_cn.covers("a.legacy.example.com"));
    assert!(!wild_cn.covers("legacy.example.com"));
}

#[test]
fn content_id_changes_with_the_content_only() {
    let ca = ca("Test CA");
    let key = KeyPair::generate().unwrap();
    let p = params(&["a.example.com"], "a");
    let first = signed(&p, &key, &ca);
    let a = parse(&first, &key.serialize_pem()).unwrap();
    assert_eq!(a.content_id(), parse(&first, &key.serialize_pem()).unwrap().content_id(), "deterministic");
    // Renewed (new serial/signature), same key: new id.
    let renewed = parse(&signed(&p, &key, &ca), &key.serialize_pem()).unwrap();
    assert_ne!(a.content_id(), renewed.content_id());
    // Same leaf with its chain appended: new id.
    let chained = parse(&format!("{first}{}", ca.issuer.pem()), &key.serialize_pem()).unwrap();
    assert_ne!(a.content_id(), chained.content_id());
    // New key, new certificate: new id.
    let key2 = KeyPair::generate().unwrap();
    let b = parse(&signed(&p, &key2, &ca), &key2.serialize_pem()).unwrap();
    assert_ne!(a.content_id(), b.content_id());
}

#[test]
fn debug_and_messages_never_show_key_material() {
    let ca = ca("Test CA");
    let rsa_pem = fixture("rsa2048.pkcs8.pem");
    let key = KeyPair::from_pem(&rsa_pem).unwrap();
    let leaf = signed(&params(&["a.example.com"], "a"), &key, &ca);
    let c = parse(&leaf, &rsa_pem).unwrap();
    let dbg = format!("{c:?} {c:#?}");
    assert!(dbg.contains("<redacted>") && dbg.contains("a.example.com") && dbg.contains("RSA"), "{dbg}");
    for line in body_lines(&rsa_pem) {
        assert!(!dbg.contains(line), "Debug shows the key");
    }
    // No byte list of the DER either (a derived Debug of Vec<u8> prints decimal bytes).
    assert!(dbg.len() < 2000, "Debug output is a summary, not data ({} bytes)", dbg.len());
}

#[test]
fn pkcs12_round_trips_key_leaf_and_chain() {
    use p12_keystore::{KeyStore, Pkcs12ImportPolicy};
    let ca = ca("Test CA");
    for key in [KeyPair::from_pem(&fixture("rsa2048.pkcs8.pem")).unwrap(), KeyPair::generate().unwrap()] {
        let leaf = signed(&params(&["a.example.com"], "a.example.com"), &key, &ca);
        let c = parse(&format!("{leaf}{}", ca.issuer.pem()), &key.serialize_pem()).unwrap();
        let p12 = c.pkcs12().unwrap();
        let store = KeyStore::from_pkcs12(&p12, "", Pkcs12ImportPolicy::Relaxed).expect("reads back with no password");
        let (_, chain) = store.private_key_chain().expect("one key with its chain");
        assert_eq!(chain.key().as_der(), key.serialize_der(), "the key (PKCS#8)");
        let certs: Vec<&[u8]> = chain.certs().iter().map(|c| c.as_der()).collect();
        let want: Vec<&[u8]> = c.certificates().iter().map(|d| d.as_ref()).collect();
        assert_eq!(certs, want, "leaf then chain");
        assert!(KeyStore::from_pkcs12(&p12, "not-empty", Pkcs12ImportPolicy::Relaxed).is_err(), "MAC checked");
    }
}

/// The bundle as Octavia loads it: functional/pkcs12_load.py runs python3-cryptography's
/// `pkcs12.load_key_and_certificates(data, None)` and, when python3-octavia is installed,
/// Octavia's own `PKCS12Cert(data)`. Skipped (with a message) when /usr/bin/python3 has no
/// `cryptography`; when Octavia is installed its loader must succeed.
#[test]
fn pkcs12_loads_in_python_cryptography_and_octavia() {
    let python = "/usr/bin/python3";
    let has_crypto = std::process::Command::new(python)
        .args(["-c", "import cryptography"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !has_crypto {
        eprintln!("SKIPPED: {python} with python3-cryptography not found");
        return;
    }
    let octavia_installed = std::path::Path::new("/usr/lib/python3/dist-packages/octavia").exists();
    let root = ca("Root");
    let mut ip = params(&[], "Intermediate");
    ip.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let inter = CertifiedIssuer::signed_by(ip, KeyPair::generate().unwrap(), &root.issuer).unwrap();
    let keys = [
        ("RSA PKCS#1", fixture("rsa2048.pkcs1.pem")),
        ("ECDSA SEC1", fixture("p256.sec1.pem")),
        ("ECDSA P-384", KeyPair::generate_for(&PKCS_ECDSA_P384_SHA384).unwrap().serialize_pem()),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, key_pem) in keys {
        let signer = match KeyPair::from_pem(&key_pem) {
            Ok(k) => k,
            // rcgen reads PKCS#8 only: sign with the PKCS#8 twin of the fixture.
            Err(_) => KeyPair::from_pem(&fixture(&name_to_pkcs8(name))).unwrap(),
        };
        let leaf = params(&["www.example.com"], "www.example.com").signed_by(&signer, &inter).unwrap().pem();
        let crt = format!("{leaf}{}{}", inter.pem(), root.issuer.pem());
        let c = parse(&crt, &key_pem).unwrap();
        let path = dir.path().join("bundle.p12");
        std::fs::write(&path, c.pkcs12().unwrap()).unwrap();
        let out = std::process::Command::new(python)
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/functional/pkcs12_load.py"))
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        eprintln!("{name}: {got}");
        let want_chain: Vec<String> = c.certificates()[1..].iter().map(|d| sha256_hex(d.as_ref())).collect();
        let mut loaders = vec!["cryptography"];
        if octavia_installed {
            loaders.push("octavia");
        } else {
            eprintln!("octavia not installed: only python3-cryptography checked ({})", got["octavia"]);
        }
        for loader in loaders {
            let r = &got[loader];
            assert!(r.is_object(), "{name}: {loader} failed: {r}");
            assert_eq!(r["certificate_sha256"], c.sha256_fingerprint(), "{name}: {loader} leaf");
            assert_eq!(r["key_matches_certificate"], true, "{name}: {loader} key");
            assert_eq!(r["intermediates_sha256"], serde_json::json!(want_chain), "{name}: {loader} chain");
        }
        if octavia_installed {
            let r = &got["octavia"];
            assert_eq!(r["validate_cert"], true, "{name}: Octavia's cert_parser.validate_cert");
            assert_eq!(r["host_names"]["dns_names"], serde_json::json!(["www.example.com"]), "{name}");
            assert_eq!(r["host_names"]["cn"], "www.example.com", "{name}");
        }
    }
}

fn name_to_pkcs8(name: &str) -> String {
    match name {
        "RSA PKCS#1" => "rsa2048.pkcs8.pem".into(),
        "ECDSA SEC1" => "p256.pkcs8.pem".into(),
        other => panic!("no PKCS#8 twin for {other}"),
    }
}

fn sha256_hex(b: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, b).as_ref().iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn a_ca_certificate_without_san_is_named_by_its_cn() {
    let ca = ca("Test CA");
    let c = parse(&ca.issuer.pem(), &ca.issuer.key().serialize_pem()).unwrap();
    assert_eq!(c.subject(), "CN=Test CA");
    assert!(c.names() == ["Test CA"], "no SAN: the CN is the name");
}
