"""Certificates for a loopback TLS server, for the tests and bench/ alike: one self-signed
for 127.0.0.1 (which a client trusts by naming it: ``SSL_CERT_FILE`` or ``verify=``), or a
CA of the run's own and a server certificate it signed for some host names (for a client
that takes extra CAs but not a server certificate: ``NODE_EXTRA_CA_CERTS``)."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["ca_and_server", "self_signed"]

_LOOPBACK = x509.IPAddress(ipaddress.ip_address("127.0.0.1"))


def self_signed(folder: Path, name: str = "copilot-host test upstream") -> tuple[Path, Path]:
    """(certificate, key) files in ``folder``: valid for an hour, for 127.0.0.1, a CA of
    its own (so a trust store may hold it)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = _name(name)
    cert = (
        _builder(subject, subject, key, hours=1)
        .add_extension(x509.SubjectAlternativeName([_LOOPBACK]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "upstream.pem", folder / "upstream.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key_file, key)
    return cert_file, key_file


def ca_and_server(folder: Path, names: Sequence[str]) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) files in ``folder``: a CA made
    for the run, and a certificate it signed for ``names`` and 127.0.0.1; two hours."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("copilot-host test CA")
    ca = (
        _builder(ca_name, ca_name, ca_key, hours=2)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    server = (
        _builder(_name(names[0]), ca_name, key, hours=2)
        .add_extension(
            x509.SubjectAlternativeName([*(x509.DNSName(name) for name in names), _LOOPBACK]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    ca_file, cert_file, key_file = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    _write_key(key_file, key)
    return ca_file, cert_file, key_file


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey, *, hours: int
) -> x509.CertificateBuilder:
    # Valid from a few minutes back, so a clock a little behind still accepts it.
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=hours))
    )


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
