"""Drives the /v1 API with hvac (the Python Vault client), as a Vault user would.

Run by vault-hvac.test.ts with VAULT_ADDR and VAULT_TOKEN (a root token) set.
Prints "ok <step>" per step; any failed assertion or client exception exits non-zero.
"""
import os
import sys

import hvac
from hvac import exceptions

ADDR = os.environ["VAULT_ADDR"]
ROOT = os.environ["VAULT_TOKEN"]
MOUNT = "pki-hvac"


def step(name):
    print("ok " + name, flush=True)


def expect_error(kind, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except kind as err:
        return err
    raise AssertionError("expected %s from %s" % (kind.__name__, getattr(fn, "__name__", fn)))


client = hvac.Client(url=ADDR, token=ROOT)
assert client.is_authenticated()
assert not client.sys.is_sealed()
assert client.sys.is_initialized()
health = client.sys.read_health_status(method="GET")
assert health["initialized"] is True and health["sealed"] is False, health
assert client.sys.read_health_status().status_code == 200
step("health")

# Mounts: enable with config, list, tune, read tune, refuse a duplicate.
client.sys.enable_secrets_engine("pki", path=MOUNT, config={"max_lease_ttl": "87600h"}, description="hvac mount")
client.sys.enable_secrets_engine("pki", path=MOUNT + "-int")
mounts = client.sys.list_mounted_secrets_engines()
assert mounts["data"][MOUNT + "/"]["type"] == "pki", mounts
assert mounts[MOUNT + "/"]["description"] == "hvac mount"
assert MOUNT + "-int/" in mounts["data"]
err = expect_error(exceptions.InvalidRequest, client.sys.enable_secrets_engine, "pki", path=MOUNT)
assert "already in use" in str(err), err
client.sys.tune_mount_configuration(MOUNT, default_lease_ttl="1h", max_lease_ttl="87600h")
tune = client.sys.read_mount_configuration(MOUNT)
assert tune["data"]["default_lease_ttl"] == 3600, tune
assert tune["data"]["max_lease_ttl"] == 87600 * 3600, tune
client.sys.disable_secrets_engine(MOUNT + "-int")
assert MOUNT + "-int/" not in client.sys.list_mounted_secrets_engines()["data"]
step("mounts")

# Policies through the legacy endpoints hvac uses, HCL and dict (JSON) forms.
client.sys.create_or_update_policy("hvac-issuer", 'path "%s/issue/*" { capabilities = ["create", "update"] }' % MOUNT)
client.sys.create_or_update_policy("hvac-reader", {"path": {"sys/mounts": {"capabilities": ["read"]}}})
policies = client.sys.list_policies()["data"]["policies"]
assert "hvac-issuer" in policies and "hvac-reader" in policies and "default" in policies, policies
assert "capabilities" in client.sys.read_policy("hvac-issuer")["data"]["rules"]
err = expect_error(
    exceptions.InvalidRequest, client.sys.create_or_update_policy, "broken", 'path "x" { capabilities = '
)
listed = client.list("sys/policies/acl")
assert "hvac-reader" in listed["data"]["keys"], listed
step("policies")

# Tokens: create, use, look up, renew, list accessors (LIST verb), revoke.
created = client.auth.token.create(policies=["hvac-reader"], ttl="1h", meta={"who": "hvac"})
token = created["auth"]["client_token"]
accessor = created["auth"]["accessor"]
assert created["auth"]["policies"] == ["default", "hvac-reader"], created
user = hvac.Client(url=ADDR, token=token)
assert user.is_authenticated()
me = user.auth.token.lookup_self()["data"]
assert me["policies"] == ["default", "hvac-reader"] and me["meta"] == {"who": "hvac"}, me
assert 3590 <= me["ttl"] <= 3600, me
assert MOUNT + "/" in user.sys.list_mounted_secrets_engines()["data"]
expect_error(exceptions.Forbidden, user.sys.list_policies)
renewed = user.auth.token.renew_self(increment="2h")
assert renewed["auth"]["lease_duration"] == 7200, renewed
assert client.auth.token.lookup(token)["data"]["accessor"] == accessor
assert accessor in client.auth.token.list_accessors()["data"]["keys"]
assert client.auth.token.lookup_accessor(accessor)["data"]["id"] == ""
client.auth.token.revoke(token)
assert not user.is_authenticated()
expect_error(exceptions.Forbidden, user.sys.list_mounted_secrets_engines)
assert not hvac.Client(url=ADDR, token="bogus").is_authenticated()
step("tokens")

client.sys.delete_policy("hvac-reader")
assert "hvac-reader" not in client.sys.list_policies()["data"]["policies"]
step("cleanup")
sys.exit(0)
