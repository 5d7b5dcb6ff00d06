"""AppRole through hvac, as cert-manager or a CI job uses it.

Run by vault-auth-approle.test.ts with VAULT_ADDR and VAULT_TOKEN (a root token) set.
Prints "ok <step>" per step; any failed assertion or client exception exits non-zero.
"""
import os

import hvac
from hvac import exceptions

ADDR = os.environ["VAULT_ADDR"]
ROOT = os.environ["VAULT_TOKEN"]


def step(name):
    print("ok " + name, flush=True)


def expect_error(kind, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except kind as err:
        return err
    raise AssertionError("expected %s from %s" % (kind.__name__, getattr(fn, "__name__", fn)))


root = hvac.Client(url=ADDR, token=ROOT)

# sys/auth: enable at the usual path and at a nested one, list, tune, read the tuning.
root.sys.enable_auth_method("approle", description="machines")
root.sys.enable_auth_method("approle", path="ci/approle", config={"default_lease_ttl": "30m"})
methods = root.sys.list_auth_methods()["data"]
assert methods["token/"]["type"] == "token", methods
assert methods["approle/"]["type"] == "approle" and methods["approle/"]["description"] == "machines", methods
assert methods["ci/approle/"]["config"]["default_lease_ttl"] == 1800, methods
assert methods["approle/"]["accessor"].startswith("auth_approle_"), methods
root.sys.tune_auth_method("approle", max_lease_ttl="4h")
assert root.sys.read_auth_method_tuning("approle")["data"]["max_lease_ttl"] == 14400
err = expect_error(exceptions.InvalidRequest, root.sys.enable_auth_method, "approle")
assert "path is already in use at auth/approle/" in str(err), err
err = expect_error(exceptions.InvalidRequest, root.sys.enable_auth_method, "nosuch", path="x")
assert "plugin not found in the catalog: nosuch" in str(err), err
step("sys-auth")

root.sys.create_or_update_policy("pki-read", 'path "pki/*" { capabilities = ["read", "list"] }')
root.auth.approle.create_or_update_approle(
    "web", token_policies=["pki-read"], token_ttl="1h", token_max_ttl="2h", secret_id_ttl="10m"
)
role = root.auth.approle.read_role("web")["data"]
assert role["token_policies"] == ["pki-read"] and role["token_ttl"] == 3600 and role["token_max_ttl"] == 7200, role
assert role["bind_secret_id"] is True and role["secret_id_ttl"] == 600, role
assert root.auth.approle.list_roles()["data"]["keys"] == ["web"]
role_id = root.auth.approle.read_role_id("web")["data"]["role_id"]
gen = root.auth.approle.generate_secret_id("web", metadata={"host": "web-1"})["data"]
secret_id, accessor = gen["secret_id"], gen["secret_id_accessor"]
assert gen["secret_id_ttl"] == 600, gen
assert root.auth.approle.list_secret_id_accessors("web")["data"]["keys"] == [accessor]
looked = root.auth.approle.read_secret_id("web", secret_id)["data"]
assert looked["secret_id_accessor"] == accessor and looked["metadata"] == {"host": "web-1"}, looked
by_accessor = root.auth.approle.read_secret_id_accessor("web", accessor)["data"]
assert by_accessor["metadata"] == {"host": "web-1"}, by_accessor
step("role")

machine = hvac.Client(url=ADDR)
auth = machine.auth.approle.login(role_id, secret_id)["auth"]
assert auth["client_token"] and auth["accessor"], auth
assert auth["policies"] == ["default", "pki-read"] and auth["token_policies"] == ["default", "pki-read"], auth
assert auth["metadata"] == {"role_name": "web", "host": "web-1"}, auth
assert auth["lease_duration"] == 3600 and auth["renewable"] is True, auth
assert machine.token == auth["client_token"] and machine.is_authenticated()
me = machine.auth.token.lookup_self()["data"]
assert me["path"] == "auth/approle/login" and me["display_name"] == "approle" and me["orphan"] is True, me
renewed = machine.auth.token.renew_self(increment="90m")["auth"]
assert renewed["lease_duration"] == 5400, renewed
assert auth["accessor"] in root.auth.token.list_accessors()["data"]["keys"]
machine.auth.token.revoke_self()
assert not machine.is_authenticated()
step("login")

# A nested mount uses its own default TTL; a secret id limited to one use logs in once.
root.auth.approle.create_or_update_approle("once", token_policies=["pki-read"], mount_point="ci/approle")
once_role = root.auth.approle.read_role_id("once", mount_point="ci/approle")["data"]["role_id"]
root.auth.approle.create_custom_secret_id("once", "my-own-secret-0001", mount_point="ci/approle")
root.write("auth/ci/approle/role/once/secret-id", num_uses=1)
one = root.write("auth/ci/approle/role/once/secret-id", num_uses=1)["data"]
assert one["secret_id_num_uses"] == 1, one
first = hvac.Client(url=ADDR).auth.approle.login(once_role, one["secret_id"], mount_point="ci/approle")["auth"]
assert first["lease_duration"] == 1800, first
err = expect_error(
    exceptions.InvalidRequest, hvac.Client(url=ADDR).auth.approle.login, once_role, one["secret_id"],
    mount_point="ci/approle",
)
assert "invalid role or secret ID" in str(err), err
custom = hvac.Client(url=ADDR).auth.approle.login(once_role, "my-own-secret-0001", mount_point="ci/approle")
assert custom["auth"]["client_token"]
step("num-uses")

# Refusals: a wrong secret id and a wrong role id read the same; CIDRs outside the binding are refused.
anon = hvac.Client(url=ADDR)
e1 = expect_error(exceptions.InvalidRequest, anon.auth.approle.login, role_id, "not-the-secret")
e2 = expect_error(exceptions.InvalidRequest, anon.auth.approle.login, "not-a-role", secret_id)
assert str(e1) == str(e2) and "invalid role or secret ID" in str(e1), (e1, e2)
root.auth.approle.create_or_update_approle("far", token_policies=["pki-read"], secret_id_bound_cidrs=["10.0.0.0/8"])
far_role = root.auth.approle.read_role_id("far")["data"]["role_id"]
far_secret = root.auth.approle.generate_secret_id("far")["data"]["secret_id"]
expect_error(exceptions.Forbidden, anon.auth.approle.login, far_role, far_secret)
root.auth.approle.destroy_secret_id("web", secret_id)
expect_error(exceptions.InvalidRequest, anon.auth.approle.login, role_id, secret_id)
step("refusals")

# Disabling the method revokes the tokens its logins made.
fresh = root.auth.approle.generate_secret_id("web")["data"]
held = hvac.Client(url=ADDR)
held.auth.approle.login(role_id, fresh["secret_id"])
assert held.is_authenticated()
root.sys.disable_auth_method("approle")
assert not held.is_authenticated()
assert "approle/" not in root.sys.list_auth_methods()["data"]
root.sys.disable_auth_method("ci/approle")
step("disable")
