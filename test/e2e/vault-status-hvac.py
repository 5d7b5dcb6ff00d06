"""The status checks of hvac (the Python Vault client) without a token, as a monitor would run them.

Run by vault-status.test.ts with VAULT_ADDR set (and VAULT_CACERT for a TLS server). Prints
"ok <step>" per step; any failed assertion or client exception exits non-zero.
"""
import os

import hvac

ADDR = os.environ["VAULT_ADDR"]
client = hvac.Client(url=ADDR, verify=os.environ.get("VAULT_CACERT", True))


def step(name):
    print("ok " + name, flush=True)


# HEAD by default: the status code only.
head = client.sys.read_health_status()
assert head.status_code == 200, head.status_code
assert head.text == "", head.text
# hvac sends the parameters with GET only; a status other than 200 comes back as the response itself.
custom = client.sys.read_health_status(method="GET", active_code=299)
assert custom.status_code == 299, custom.status_code
assert custom.json()["sealed"] is False, custom.text
# GET: hvac returns the decoded body for a 200.
health = client.sys.read_health_status(method="GET")
assert health["initialized"] is True and health["sealed"] is False and health["standby"] is False, health
assert isinstance(health["server_time_utc"], int) and health["version"].startswith("1."), health
# Every parameter hvac knows, as a load balancer would set them: the active code decides.
health = client.sys.read_health_status(
    method="GET",
    standby_ok=True,
    active_code=200,
    standby_code=200,
    dr_secondary_code=299,
    performance_standby_code=299,
    sealed_code=299,
    uninit_code=299,
)
assert health["cluster_name"] and health["cluster_id"], health
step("health")

seal = client.sys.read_seal_status()
assert seal["sealed"] is False and seal["initialized"] is True and seal["type"] == "shamir", seal
assert seal["t"] == 1 and seal["n"] == 1 and seal["progress"] == 0, seal
assert seal["cluster_id"] == health["cluster_id"] and seal["version"] == health["version"], seal
assert client.sys.is_sealed() is False
assert client.sys.is_initialized() is True
step("seal-status")

leader = client.sys.read_leader_status()
assert leader["ha_enabled"] is False and leader["is_self"] is True, leader
assert leader["leader_address"] == "" and leader["performance_standby"] is False, leader
step("leader")
