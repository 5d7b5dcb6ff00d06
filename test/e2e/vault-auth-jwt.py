"""JWT/OIDC logins through hvac: a GitHub Actions-shaped token (JWKS URL), a Kubernetes
service-account token (PEM validation keys) and an OIDC discovery URL.

Run by vault-auth-jwt.test.ts with VAULT_ADDR, VAULT_TOKEN and a JSON file of URLs, keys and
tokens minted by the test as the first argument. Prints "ok <step>" per step.
"""
import json
import os
import sys

import hvac
from hvac import exceptions

ADDR = os.environ["VAULT_ADDR"]
ROOT = os.environ["VAULT_TOKEN"]
with open(sys.argv[1]) as f:
    CFG = json.load(f)
T = CFG["tokens"]


def step(name):
    print("ok " + name, flush=True)


def refused(path, role, token):
    try:
        hvac.Client(url=ADDR).auth.jwt.jwt_login(role, token, path=path)
    except (exceptions.InvalidRequest, exceptions.Forbidden) as err:
        return str(err)
    raise AssertionError("login was not refused")


root = hvac.Client(url=ADDR, token=ROOT)
root.sys.create_or_update_policy("deployer", 'path "pki/issue/*" { capabilities = ["update"] }')

# GitHub Actions: a JWKS URL, audiences, glob-bound claims, claim mappings.
root.sys.enable_auth_method("jwt", path="github")
root.auth.jwt.configure(jwks_url=CFG["jwks_url"], bound_issuer=CFG["issuer"], path="github")
conf = root.auth.jwt.read_config(path="github")["data"]
assert conf["jwks_url"] == CFG["jwks_url"] and conf["bound_issuer"] == CFG["issuer"], conf
root.auth.jwt.create_role(
    "deploy",
    user_claim="sub",
    allowed_redirect_uris=[],
    bound_audiences=["https://github.com/acme"],
    bound_claims={"repository": "acme/*", "ref": ["refs/heads/main", "refs/tags/v*"]},
    bound_claims_type="glob",
    claim_mappings={"repository": "repo", "workflow": "workflow"},
    token_policies=["deployer"],
    token_ttl="15m",
    path="github",
)
role = root.auth.jwt.read_role("deploy", path="github")["data"]
assert role["bound_claims_type"] == "glob" and role["token_ttl"] == 900, role
assert root.auth.jwt.list_roles(path="github")["data"]["keys"] == ["deploy"]
gh = hvac.Client(url=ADDR)
auth = gh.auth.jwt.jwt_login("deploy", T["github"], path="github")["auth"]
assert auth["policies"] == ["default", "deployer"] and auth["token_policies"] == ["default", "deployer"], auth
assert auth["metadata"] == {"role": "deploy", "repo": "acme/app", "workflow": "release"}, auth
assert auth["lease_duration"] == 900 and auth["renewable"] is True, auth
me = gh.auth.token.lookup_self()["data"]
assert me["path"] == "auth/github/login" and me["display_name"].startswith("jwt-repo:acme/app"), me
gh.auth.token.renew_self()
gh.auth.token.revoke_self()
assert not gh.is_authenticated()
step("github")

for name in ["wrong_audience", "expired", "bad_signature", "unknown_kid", "wrong_repo", "not_yet"]:
    message = refused("github", "deploy", T[name])
    assert message, name
step("github-refusals")

# Kubernetes service-account tokens: PEM validation keys, ES256, a JSON-pointer claim.
root.sys.enable_auth_method("jwt", path="kubernetes-sa")
root.auth.jwt.configure(
    jwt_validation_pubkeys=[CFG["k8s_pem"]], bound_issuer="https://kubernetes.default.svc", path="kubernetes-sa"
)
root.auth.jwt.create_role(
    "runner",
    user_claim="/kubernetes.io/serviceaccount/name",
    allowed_redirect_uris=[],
    bound_audiences=["strongroom"],
    bound_subject="system:serviceaccount:ci:runner",
    bound_claims={"/kubernetes.io/namespace": "ci"},
    token_policies=["deployer"],
    path="kubernetes-sa",
)
k8s = hvac.Client(url=ADDR).auth.jwt.jwt_login("runner", T["k8s"], path="kubernetes-sa")["auth"]
assert k8s["metadata"] == {"role": "runner"} and k8s["token_policies"] == ["default", "deployer"], k8s
assert "does not match bound subject" in refused("kubernetes-sa", "runner", T["k8s_other_sa"])
step("kubernetes")

# OIDC discovery (the method enabled as "oidc"), EdDSA, default_role.
root.sys.enable_auth_method("oidc", path="oidc")
root.auth.jwt.configure(oidc_discovery_url=CFG["issuer"], default_role="any", path="oidc")
root.auth.jwt.create_role(
    "any", user_claim="email", allowed_redirect_uris=[], bound_audiences=["strongroom"], path="oidc"
)
r = hvac.Client(url=ADDR).adapter.post("/v1/auth/oidc/login", json={"jwt": T["oidc"]})
assert r["auth"]["metadata"] == {"role": "any"}, r
step("discovery")
