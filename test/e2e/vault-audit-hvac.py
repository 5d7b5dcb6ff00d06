"""Audit devices through hvac: enable, list, hash, disable, as a Vault operator does.

Run by vault-audit.test.ts with VAULT_ADDR and VAULT_TOKEN (a root token) set and the
file path of the device as the first argument. Prints "ok <step>" per step.
"""
import json
import os
import sys

import hvac
from hvac import exceptions

ADDR = os.environ["VAULT_ADDR"]
ROOT = os.environ["VAULT_TOKEN"]
FILE_PATH = sys.argv[1]


def step(name):
    print("ok " + name, flush=True)


client = hvac.Client(url=ADDR, token=ROOT)

client.sys.enable_audit_device(
    "file", path="hvac-file", description="hvac device", options={"file_path": FILE_PATH, "hmac_accessor": "false"}
)
devices = client.sys.list_enabled_audit_devices()
entry = devices["data"]["hvac-file/"]
assert entry["type"] == "file", entry
assert entry["description"] == "hvac device", entry
assert entry["options"] == {"file_path": FILE_PATH, "hmac_accessor": "false"}, entry
assert entry["path"] == "hvac-file/", entry
assert devices["hvac-file/"] == entry, devices
step("enable")

# The same path twice, an unknown type and a missing file_path are refused in Vault's envelope.
for kwargs, wording in [
    (dict(device_type="file", path="hvac-file", options={"file_path": FILE_PATH}), "path already in use"),
    (dict(device_type="syslog2", path="other"), "unknown backend type"),
    (dict(device_type="file", path="other", options={}), "file_path is required"),
]:
    try:
        client.sys.enable_audit_device(**kwargs)
        raise AssertionError("expected a refusal for %r" % (kwargs,))
    except exceptions.InvalidRequest as err:
        assert wording in str(err), str(err)
step("refusals")

hashed = client.sys.calculate_hash("hvac-file", "hello")
assert hashed["data"]["hash"].startswith("hmac-sha256:"), hashed
assert client.sys.calculate_hash("hvac-file", "hello")["data"]["hash"] == hashed["data"]["hash"]
token_hash = client.sys.calculate_hash("hvac-file", ROOT)["data"]["hash"]
step("hash")

# The requests just made are in the file, the token only as its HMAC.
with open(FILE_PATH) as f:
    lines = [json.loads(line) for line in f if line.strip()]
assert any(e["type"] == "request" and e["request"]["path"] == "sys/audit-hash/hvac-file" for e in lines), lines
assert all(e["auth"] is None or e["auth"]["client_token"] == token_hash for e in lines), lines
assert ROOT not in open(FILE_PATH).read()
step("entries")

client.sys.disable_audit_device("hvac-file")
assert "hvac-file/" not in client.sys.list_enabled_audit_devices()["data"]
step("disable")
