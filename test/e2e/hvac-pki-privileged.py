"""Drives sign-intermediate, sign-self-issued and sign-verbatim with hvac (the Python Vault client).

Run by hvac-pki-privileged.test.ts with VAULT_ADDR and VAULT_TOKEN (a root token) set.
Prints "ok <step>" per step; any failed assertion or client exception exits non-zero.
Certificates are checked with openssl, independently of the server.
"""
import os
import subprocess
import tempfile

import hvac
from hvac import exceptions

ADDR = os.environ["VAULT_ADDR"]
ROOT = os.environ["VAULT_TOKEN"]
MOUNT = "pki-hvac-root"
INT = "pki-hvac-int"


def step(name):
    print("ok " + name, flush=True)


def openssl(*args, data=None):
    return subprocess.run(["openssl", *args], input=data, capture_output=True, check=True, text=True).stdout


def verify(leaf, trusted, untrusted=None):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "ca.pem"), "w") as f:
            f.write(trusted + "\n")
        with open(os.path.join(d, "leaf.pem"), "w") as f:
            f.write(leaf + "\n")
        args = ["verify", "-x509_strict", "-CAfile", os.path.join(d, "ca.pem")]
        if untrusted:
            with open(os.path.join(d, "untrusted.pem"), "w") as f:
                f.write(untrusted + "\n")
            args += ["-untrusted", os.path.join(d, "untrusted.pem")]
        out = openssl(*args, os.path.join(d, "leaf.pem"))
        assert out.strip().endswith("OK"), out


def text(pem):
    return openssl("x509", "-noout", "-text", data=pem)


def make_csr(subject, *addext):
    with tempfile.TemporaryDirectory() as d:
        key = os.path.join(d, "key.pem")
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key)
        args = ["req", "-new", "-key", key, "-subj", subject]
        for e in addext:
            args += ["-addext", e]
        return openssl(*args)


client = hvac.Client(url=ADDR, token=ROOT)
pki = client.secrets.pki
for m in (MOUNT, INT):
    client.sys.enable_secrets_engine("pki", path=m, config={"max_lease_ttl": "87600h"})
root = pki.generate_root(
    "internal",
    "hvac privileged root",
    extra_params={"key_type": "ec", "ttl": "8760h", "issuer_name": "old"},
    mount_point=MOUNT,
)
root_pem = root["data"]["certificate"]
step("mount")

csr = pki.generate_intermediate(
    "internal", "hvac intermediate", extra_params={"key_type": "ec"}, mount_point=INT
)["data"]["csr"]
signed = pki.sign_intermediate(
    csr, "hvac intermediate", extra_params={"ttl": "4000h", "max_path_length": 0}, mount_point=MOUNT
)
int_pem = signed["data"]["certificate"]
assert signed["lease_id"] == "" and signed["lease_duration"] == 0, signed
assert signed["data"]["ca_chain"] == [int_pem, root_pem], signed["data"]
assert "CA:TRUE, pathlen:0" in text(int_pem)
verify(int_pem, root_pem)
pki.set_signed_intermediate(int_pem, mount_point=INT)
pki.create_or_update_role(
    "web",
    extra_params={"allowed_domains": ["example.com"], "allow_subdomains": True, "key_type": "ec", "ttl": "1h"},
    mount_point=INT,
)
leaf = pki.generate_certificate("web", "www.example.com", mount_point=INT)["data"]["certificate"]
verify(leaf, root_pem, int_pem)
step("sign_intermediate")

plain = make_csr("/O=Verbatim/CN=any name at all", "subjectAltName=DNS:whatever.invalid")
v = pki.sign_verbatim(plain, mount_point=MOUNT)
assert v["lease_id"] == "", v
t = text(v["data"]["certificate"])
assert "CN = any name at all" in t and "DNS:whatever.invalid" in t, t
verify(v["data"]["certificate"], root_pem)
pki.create_or_update_role("verbatim", extra_params={"ttl": "30m"}, mount_point=MOUNT)
v = pki.sign_verbatim(plain, name="verbatim", extra_params={"ext_key_usage": ["ServerAuth"]}, mount_point=MOUNT)
assert v["lease_id"].startswith(MOUNT + "/sign-verbatim/verbatim/") and 1790 <= v["lease_duration"] <= 1800, v
assert "TLS Web Server Authentication" in text(v["data"]["certificate"])
try:
    pki.sign_verbatim(make_csr("/CN=ca", "basicConstraints=critical,CA:TRUE"), mount_point=MOUNT)
    raise AssertionError("a CA CSR was signed verbatim")
except exceptions.InvalidRequest as e:
    assert "CA certificate" in str(e), e
step("sign_verbatim")

new_root = pki.generate_root(
    "internal",
    "hvac next root",
    extra_params={"key_type": "ec", "ttl": "8760h", "issuer_name": "next"},
    mount_point=MOUNT,
)
new_pem = new_root["data"]["certificate"]
cross = pki.sign_self_issued(new_pem, mount_point=MOUNT)
assert sorted(cross["data"].keys()) == ["certificate", "issuing_ca"], cross
verify(cross["data"]["certificate"], root_pem)
new_leaf = client.write(MOUNT + "/issuer/next/sign-verbatim", csr=plain)["data"]["certificate"]
verify(new_leaf, root_pem, cross["data"]["certificate"])

client.sys.create_or_update_policy("no-sudo", 'path "%s/root/sign-self-issued" { capabilities = ["update"] }' % MOUNT)
user = hvac.Client(url=ADDR, token=client.auth.token.create(policies=["no-sudo"])["auth"]["client_token"])
try:
    user.secrets.pki.sign_self_issued(new_pem, mount_point=MOUNT)
    raise AssertionError("sign-self-issued without sudo succeeded")
except exceptions.Forbidden:
    pass
step("sign_self_issued")
