"""Drives tidy, tidy-status, tidy-cancel and config/auto-tidy with hvac (the Python Vault client).

Run by hvac-tidy.test.ts with VAULT_ADDR and VAULT_TOKEN (a root token) set, in two phases:
`start` sets up a mount, issues a short-lived certificate, configures auto-tidy and starts a
tidy (printing the serial); the test then moves the server's clock and runs the jobs;
`check <serial>` reads the finished status and the certificate list.
Prints "ok <step>" per step; any failed assertion or client exception exits non-zero.
"""
import os
import sys

import hvac
from hvac import exceptions

ADDR = os.environ["VAULT_ADDR"]
ROOT = os.environ["VAULT_TOKEN"]
MOUNT = "pki-hvac-tidy"
STARTED = (
    "Tidy operation successfully started. Any information from the operation will be printed to Vault's server logs."
)


def step(name):
    print("ok " + name, flush=True)


client = hvac.Client(url=ADDR, token=ROOT)
pki = client.secrets.pki


def start():
    client.sys.enable_secrets_engine("pki", path=MOUNT, config={"max_lease_ttl": "87600h"})
    pki.generate_root("internal", "Tidy Root", extra_params={"key_type": "ec", "ttl": "8760h"}, mount_point=MOUNT)
    pki.create_or_update_role(
        "short", extra_params={"allow_any_name": True, "key_type": "ec", "ttl": "1h"}, mount_point=MOUNT
    )
    cert = pki.generate_certificate("short", "old.tidy.test", mount_point=MOUNT)["data"]
    step("setup")

    status = client.read(MOUNT + "/tidy-status")["data"]
    assert status["state"] == "Inactive", status
    assert status["tidy_cert_store"] is None, status
    step("status before")

    config = client.write(MOUNT + "/config/auto-tidy", interval_duration="24h", tidy_revoked_certs=True)["data"]
    assert config["enabled"] is False, config
    assert config["interval_duration"] == 86400 and config["tidy_revoked_certs"] is True, config
    assert client.read(MOUNT + "/config/auto-tidy")["data"] == config
    try:
        client.write(MOUNT + "/config/auto-tidy", safety_buffer="-1h")
        raise AssertionError("a negative safety_buffer was accepted")
    except exceptions.InvalidRequest as e:
        assert "safety_buffer must be at least one second" in str(e), e
    step("auto-tidy config")

    r = pki.tidy(extra_params={"tidy_cert_store": True, "safety_buffer": "1m"}, mount_point=MOUNT)
    assert r.status_code == 202, r.status_code
    assert r.json()["warnings"] == [STARTED], r.json()
    again = pki.tidy(extra_params={"tidy_cert_store": True}, mount_point=MOUNT)
    assert again.json()["warnings"] == ["Tidy operation already in progress."], again.json()
    status = client.read(MOUNT + "/tidy-status")["data"]
    assert status["state"] == "Running" and status["safety_buffer"] == 60 and status["pause_duration"] == "0s", status
    try:
        pki.tidy(extra_params={"tidy_cert_store": True, "pause_duration": "-5s"}, mount_point=MOUNT)
        raise AssertionError("a negative pause_duration was accepted")
    except exceptions.InvalidRequest as e:
        assert "negative pause_duration" in str(e), e
    step("tidy started")
    print("serial " + cert["serial_number"], flush=True)


def check(serial):
    status = client.read(MOUNT + "/tidy-status")["data"]
    assert status["state"] == "Finished", status
    assert status["cert_store_deleted_count"] == 1, status
    assert status["time_finished"] is not None, status
    keys = pki.list_certificates(mount_point=MOUNT)["data"]["keys"]
    assert serial not in keys, keys
    cancel = client.write(MOUNT + "/tidy-cancel")
    assert cancel["warnings"] == ["Tidy operation cannot be cancelled as none is currently running."], cancel
    step("tidy finished")


if sys.argv[1] == "start":
    start()
else:
    check(sys.argv[2])
