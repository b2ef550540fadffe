#!/usr/bin/python3
"""Loads a PKCS#12 bundle the way Octavia does and prints what came back as JSON.

Usage: pkcs12_load.py BUNDLE.p12

- "cryptography": python3-cryptography's pkcs12.load_key_and_certificates(data, None), i.e. no
  password, as Octavia's newer releases call it.
- "octavia": Octavia's own octavia.certificates.common.pkcs12.PKCS12Cert(data) (what the
  barbican cert manager builds from the secret payload), then cert_parser.validate_cert and
  get_host_names as the API does, if python3-octavia is installed; "not installed" otherwise.

For each: sha256 of the certificate DER, of each intermediate DER (in order), and whether the
private key's public key equals the certificate's. Only hashes are printed, never key material.
"""
import hashlib
import json
import sys

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

DER = serialization.Encoding.DER
SPKI = serialization.PublicFormat.SubjectPublicKeyInfo


def sha(b):
    return hashlib.sha256(b).hexdigest()


def summary(key, cert, intermediates):
    return {
        "certificate_sha256": sha(cert.public_bytes(DER)),
        "intermediates_sha256": [sha(c.public_bytes(DER)) for c in intermediates],
        "key_type": type(key).__name__,
        "key_matches_certificate": key.public_key().public_bytes(DER, SPKI) == cert.public_key().public_bytes(DER, SPKI),
    }


def with_cryptography(data):
    key, cert, extra = pkcs12.load_key_and_certificates(data, None)
    return summary(key, cert, extra or [])


def with_octavia(data):
    try:
        from octavia.certificates.common import pkcs12 as octavia_pkcs12
    except ImportError as e:
        return "not installed (%s)" % e
    c = octavia_pkcs12.PKCS12Cert(data)
    cert = x509.load_pem_x509_certificate(c.get_certificate())
    inter = [x509.load_pem_x509_certificate(p) for p in (c.get_intermediates() or [])]
    key = serialization.load_pem_private_key(c.get_private_key(), password=c.get_private_key_passphrase())
    out = summary(key, cert, inter)
    # What the API does next with a loaded certificate (load_certificates_data): validate it (key
    # matches, intermediates parse) and read its host names.
    from octavia.common.tls_utils import cert_parser
    out["validate_cert"] = cert_parser.validate_cert(
        c.get_certificate(), private_key=c.get_private_key(),
        private_key_passphrase=c.get_private_key_passphrase(), intermediates=c.get_intermediates())
    names = cert_parser.get_host_names(c.get_certificate())
    out["host_names"] = {"cn": names.get("cn"), "dns_names": sorted(names.get("dns_names") or [])}
    return out


def main():
    data = open(sys.argv[1], "rb").read()
    out = {}
    for name, fn in (("cryptography", with_cryptography), ("octavia", with_octavia)):
        try:
            out[name] = fn(data)
        except Exception as e:  # report, the Rust test asserts
            out[name] = "error: %s: %s" % (type(e).__name__, e)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
