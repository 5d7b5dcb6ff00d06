"""Drives roles, issue, sign and stored certificates with hvac (the Python Vault client).

Run by hvac-pki.test.ts with VAULT_ADDR and VAULT_TOKEN (a root token) set.
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
MOUNT = "pki-hvac-issue"


def step(name):
    print("ok " + name, flush=True)


def openssl(*args, data=None):
    return subprocess.run(["openssl", *args], input=data, capture_output=True, check=True, text=True).stdout


def verify(leaf, root):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "ca.pem"), "w") as f:
            f.write(root + "\n")
        with open(os.path.join(d, "leaf.pem"), "w") as f:
            f.write(leaf + "\n")
        out = openssl("verify", "-x509_strict", "-CAfile", os.path.join(d, "ca.pem"), os.path.join(d, "leaf.pem"))
        assert out.strip().endswith("OK"), out


def make_csr(cn):
    with tempfile.TemporaryDirectory() as d:
        key = os.path.join(d, "key.pem")
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key)
        return openssl("req", "-new", "-key", key, "-subj", "/CN=" + cn)


client = hvac.Client(url=ADDR, token=ROOT)
client.sys.enable_secrets_engine("pki", path=MOUNT, config={"max_lease_ttl": "87600h"})
client.sys.tune_mount_configuration(MOUNT, default_lease_ttl="2h", max_lease_ttl="87600h")
step("mount")

root = client.secrets.pki.generate_root(
    "internal", "hvac root", extra_params={"key_type": "ec", "ttl": "8760h"}, mount_point=MOUNT
)
root_pem = root["data"]["certificate"]
assert client.secrets.pki.read_ca_certificate(mount_point=MOUNT).strip() == root_pem
client.secrets.pki.set_urls(
    {
        "issuing_certificates": ADDR + "/v1/" + MOUNT + "/ca",
        "crl_distribution_points": ADDR + "/v1/" + MOUNT + "/crl",
    },
    mount_point=MOUNT,
)
urls = client.secrets.pki.read_urls(mount_point=MOUNT)
assert urls["data"]["issuing_certificates"] == [ADDR + "/v1/" + MOUNT + "/ca"], urls
step("root")

role = client.secrets.pki.create_or_update_role(
    "web",
    extra_params={
        "allowed_domains": ["example.com"],
        "allow_subdomains": True,
        "key_type": "ec",
        "ttl": "1h",
        "max_ttl": "24h",
    },
    mount_point=MOUNT,
)
assert any("[name]" in w for w in role["warnings"]), role["warnings"]
read = client.secrets.pki.read_role("web", mount_point=MOUNT)["data"]
assert read["ttl"] == 3600 and read["max_ttl"] == 86400 and read["allowed_domains"] == ["example.com"], read
assert read["key_bits"] == 256 and read["issuer_ref"] == "default", read
client.secrets.pki.create_or_update_role("tmp", mount_point=MOUNT)
assert client.secrets.pki.list_roles(mount_point=MOUNT)["data"]["keys"] == ["tmp", "web"]
client.secrets.pki.delete_role("tmp", mount_point=MOUNT)
assert client.secrets.pki.list_roles(mount_point=MOUNT)["data"]["keys"] == ["web"]
step("roles")

issued = client.secrets.pki.generate_certificate(
    "web", "www.example.com", extra_params={"alt_names": "api.example.com", "ip_sans": "10.0.0.1"}, mount_point=MOUNT
)
d = issued["data"]
verify(d["certificate"], root_pem)
text = openssl("x509", "-noout", "-text", data=d["certificate"])
assert "DNS:www.example.com, DNS:api.example.com, IP Address:10.0.0.1" in text, text
assert d["private_key_type"] == "ec" and d["private_key"].startswith("-----BEGIN EC PRIVATE KEY-----")
assert issued["lease_id"].startswith(MOUNT + "/issue/web/") and issued["renewable"] is False, issued
assert 3590 <= issued["lease_duration"] <= 3600, issued["lease_duration"]
err = None
try:
    client.secrets.pki.generate_certificate("web", "www.evil.org", mount_point=MOUNT)
except exceptions.InvalidRequest as e:
    err = e
assert err is not None and "www.evil.org" in str(err), err
step("issue")

signed = client.secrets.pki.sign_certificate("web", make_csr("csr.example.com"), "csr.example.com", mount_point=MOUNT)
verify(signed["data"]["certificate"], root_pem)
assert "private_key" not in signed["data"]
# Every role-based certificate has a lease, generate_lease or not; revoking it revokes the certificate.
assert signed["lease_id"].startswith(MOUNT + "/sign/web/") and signed["renewable"] is False, signed
assert 3590 <= signed["lease_duration"] <= 3600, signed["lease_duration"]
step("sign")

serials = client.secrets.pki.list_certificates(mount_point=MOUNT)["data"]["keys"]
assert d["serial_number"] in serials and signed["data"]["serial_number"] in serials and len(serials) == 3, serials
cert = client.secrets.pki.read_certificate(d["serial_number"], mount_point=MOUNT)["data"]
assert cert["certificate"].strip() == d["certificate"] and cert["revocation_time"] == 0, cert
step("list and read")

# A token limited to issuing for one role: it can issue there and nowhere else.
client.sys.create_or_update_policy(
    "issue-web",
    'path "%s/issue/web" { capabilities = ["update"] }\npath "%s/roles/*" { capabilities = ["read"] }' % (MOUNT, MOUNT),
)
tok = client.auth.token.create(policies=["issue-web"], ttl="1h")["auth"]["client_token"]
user = hvac.Client(url=ADDR, token=tok)
got = user.secrets.pki.generate_certificate("web", "u.example.com", mount_point=MOUNT)
verify(got["data"]["certificate"], root_pem)
assert user.secrets.pki.read_role("web", mount_point=MOUNT)["data"]["ttl"] == 3600
for fn, args in [
    (user.secrets.pki.sign_certificate, ("web", make_csr("x.example.com"), "x.example.com")),
    (user.secrets.pki.create_or_update_role, ("web",)),
]:
    try:
        fn(*args, mount_point=MOUNT)
        raise AssertionError("expected Forbidden")
    except exceptions.Forbidden:
        pass
step("policies and tokens")

# Revoking the lease revokes the certificate; revoking the token revokes its leases.
client.sys.revoke_lease(issued["lease_id"])
assert client.secrets.pki.read_certificate(d["serial_number"], mount_point=MOUNT)["data"]["revocation_time"] > 0
client.sys.revoke_lease(signed["lease_id"])
def revocation_time(serial):
    return client.secrets.pki.read_certificate(serial, mount_point=MOUNT)["data"]["revocation_time"]


assert revocation_time(signed["data"]["serial_number"]) > 0
client.auth.token.revoke(tok)
assert revocation_time(got["data"]["serial_number"]) > 0
step("leases")

client.sys.disable_secrets_engine(MOUNT)
client.sys.delete_policy("issue-web")
step("cleanup")
