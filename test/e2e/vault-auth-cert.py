"""TLS certificate logins through hvac, and the self-renewal workflow: a certificate issued by
Strongroom logs in, the token issues its successor, the successor logs in, the old one is
revoked and can no longer log in.

Run by vault-auth-cert.test.ts with VAULT_ADDR, VAULT_TOKEN, VAULT_CACERT and a JSON file of
certificate and key paths as the first argument. Prints "ok <step>" per step.
"""
import json
import os
import sys

import hvac
from hvac import exceptions

ADDR = os.environ["VAULT_ADDR"]
ROOT = os.environ["VAULT_TOKEN"]
CA = os.environ["VAULT_CACERT"]
with open(sys.argv[1]) as f:
    CFG = json.load(f)
WORK = CFG["dir"]


def step(name):
    print("ok " + name, flush=True)


def cert_login(cert, key, name=""):
    client = hvac.Client(url=ADDR, verify=CA)
    client.auth.cert.login(name=name, cert_pem=cert, key_pem=key)
    return client


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


root = hvac.Client(url=ADDR, token=ROOT, verify=CA)
root.sys.enable_auth_method("cert")
root.sys.create_or_update_policy("agent-renew", 'path "pki/issue/agents" { capabilities = ["update"] }')
pki_ca = write(os.path.join(WORK, "pki-ca.pem"), root.read("pki/cert/ca")["data"]["certificate"])
root.auth.cert.create_ca_certificate_role(
    "agents", pki_ca, allowed_dns_sans="*.example.com", token_policies=["agent-renew"], token_ttl="10m"
)
root.auth.cert.create_ca_certificate_role(
    "external", CFG["external_ca_file"], allowed_common_names="agent-ext", token_policies=["default"]
)
assert sorted(root.auth.cert.list_certificate_roles()["data"]["keys"]) == ["agents", "external"]
role = root.auth.cert.read_ca_certificate_role("agents")["data"]
assert role["allowed_dns_sans"] == ["*.example.com"] and role["token_ttl"] == 600, role
step("certs")

ext = cert_login(CFG["external_cert"], CFG["external_key"])
me = ext.auth.token.lookup_self()["data"]
assert me["meta"]["cert_name"] == "external" and me["meta"]["common_name"] == "agent-ext", me
assert me["path"] == "auth/cert/login" and me["display_name"] == "cert-external", me
step("external-ca")

# Strongroom-issued: log in, issue the successor with the login's token, log in with the successor.
first = root.write("pki/issue/agents", common_name="agent1.example.com", ttl="1h")["data"]
cert1 = write(os.path.join(WORK, "agent1.pem"), first["certificate"])
key1 = write(os.path.join(WORK, "agent1.key"), first["private_key"])
agent = cert_login(cert1, key1, name="agents")
auth = agent.auth.token.lookup_self()["data"]
assert auth["policies"] == ["agent-renew", "default"] and auth["meta"]["serial_number"] == first["serial_number"], auth
second = agent.write("pki/issue/agents", common_name="agent1.example.com", ttl="2h")["data"]
cert2 = write(os.path.join(WORK, "agent2.pem"), second["certificate"])
key2 = write(os.path.join(WORK, "agent2.key"), second["private_key"])
renewed = cert_login(cert2, key2)
assert renewed.auth.token.lookup_self()["data"]["meta"]["serial_number"] == second["serial_number"]
root.write("pki/revoke", serial_number=first["serial_number"])
try:
    cert_login(cert1, key1)
    raise AssertionError("a revoked certificate logged in")
except exceptions.InvalidRequest as err:
    assert "invalid certificate or no client certificate supplied" in str(err), err
cert_login(cert2, key2)
step("self-renewal")
