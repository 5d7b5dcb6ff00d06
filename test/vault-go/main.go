// Command vault-status-go reads sys/health, sys/seal-status and sys/leader of a running
// server as Vault's Go API client does (Sys().Health(), Sys().SealStatus(), Sys().Leader(),
// which `vault status` calls), and exits non-zero on the first answer that client would
// refuse or misread.
//
// The client itself (github.com/hashicorp/vault/api) is not packaged by Debian, so this
// program repeats what it does, using the standard library only: a GET with the
// X-Vault-Request header and no token, any status below 200 or from 400 up taken as an
// error, and the body decoded with json.Decoder.UseNumber into structs whose fields have
// the JSON names and Go types of the client's response structs (int, int64, uint64,
// time.Time, *bool, []string), so a value of the wrong kind fails to decode here as it
// would there.
//
//	VAULT_ADDR=https://localhost:8200 VAULT_CACERT=ca.pem ./vault-status-go
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// health has the fields and types of the Go client's HealthResponse.
type health struct {
	Initialized                bool   `json:"initialized"`
	Sealed                     bool   `json:"sealed"`
	Standby                    bool   `json:"standby"`
	PerformanceStandby         bool   `json:"performance_standby"`
	ReplicationPerformanceMode string `json:"replication_performance_mode"`
	ReplicationDRMode          string `json:"replication_dr_mode"`
	ServerTimeUTC              int64  `json:"server_time_utc"`
	Version                    string `json:"version"`
	ClusterName                string `json:"cluster_name,omitempty"`
	ClusterID                  string `json:"cluster_id,omitempty"`
	LastWAL                    uint64 `json:"last_wal,omitempty"`
	Enterprise                 bool   `json:"enterprise"`
	EchoDurationMillis         int64  `json:"echo_duration_ms"`
	ClockSkewMillis            int64  `json:"clock_skew_ms"`
	CanaryAgeMillis            int64  `json:"replication_primary_canary_age_ms"`
	RemovedFromCluster         *bool  `json:"removed_from_cluster,omitempty"`
	HAConnectionHealthy        *bool  `json:"ha_connection_healthy,omitempty"`
	LastHeartbeatMillis        int64  `json:"last_request_forwarding_heartbeat_ms,omitempty"`
}

// sealStatus has the fields and types of the Go client's SealStatusResponse.
type sealStatus struct {
	Type                 string   `json:"type"`
	Initialized          bool     `json:"initialized"`
	Sealed               bool     `json:"sealed"`
	T                    int      `json:"t"`
	N                    int      `json:"n"`
	Progress             int      `json:"progress"`
	Nonce                string   `json:"nonce"`
	Version              string   `json:"version"`
	BuildDate            string   `json:"build_date"`
	Migration            bool     `json:"migration"`
	ClusterName          string   `json:"cluster_name,omitempty"`
	ClusterID            string   `json:"cluster_id,omitempty"`
	RecoverySeal         bool     `json:"recovery_seal"`
	RecoverySealType     string   `json:"recovery_seal_type,omitempty"`
	StorageType          string   `json:"storage_type,omitempty"`
	RemovedFromCluster   *bool    `json:"removed_from_cluster,omitempty"`
	Warnings             []string `json:"warnings,omitempty"`
	MigrationDoneAtEpoch int64    `json:"migration_done_at_epoch,omitempty"`
}

// leader has the fields and types of the Go client's LeaderResponse.
type leader struct {
	HAEnabled                bool      `json:"ha_enabled"`
	IsSelf                   bool      `json:"is_self"`
	ActiveTime               time.Time `json:"active_time"`
	LeaderAddress            string    `json:"leader_address"`
	LeaderClusterAddress     string    `json:"leader_cluster_address"`
	PerfStandby              bool      `json:"performance_standby"`
	PerfStandbyLastRemoteWAL uint64    `json:"performance_standby_last_remote_wal"`
	LastWAL                  uint64    `json:"last_wal"`
	RaftCommittedIndex       uint64    `json:"raft_committed_index,omitempty"`
	RaftAppliedIndex         uint64    `json:"raft_applied_index,omitempty"`
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func check(ok bool, format string, args ...interface{}) {
	if !ok {
		fail(format, args...)
	}
}

func client() *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if file := os.Getenv("VAULT_CACERT"); file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			fail("read VAULT_CACERT: %v", err)
		}
		pool := x509.NewCertPool()
		check(pool.AppendCertsFromPEM(pem), "no certificate in %s", file)
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: transport, Timeout: time.Minute}
}

// get reads path as the client does and decodes the body into out; it returns the status.
func get(c *http.Client, path string, query url.Values, out interface{}) int {
	u := strings.TrimRight(os.Getenv("VAULT_ADDR"), "/") + "/v1/" + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		fail("%s: %v", path, err)
	}
	req.Header.Set("X-Vault-Request", "true")
	resp, err := c.Do(req)
	if err != nil {
		fail("%s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		fail("%s: the client takes status %d for an error", path, resp.StatusCode)
	}
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		fail("%s: the client's struct does not decode the body: %v", path, err)
	}
	return resp.StatusCode
}

func main() {
	c := client()

	// Sys().Health() moves every status but the active node's out of the error range.
	var h health
	q := url.Values{}
	for _, name := range []string{
		"uninitcode", "sealedcode", "standbycode", "drsecondarycode",
		"performancestandbycode", "removedcode", "haunhealthycode",
	} {
		q.Set(name, "299")
	}
	check(get(c, "sys/health", q, &h) == 200, "sys/health: an active node answers 200")
	check(h.Initialized && !h.Sealed && !h.Standby && !h.PerformanceStandby, "sys/health: %+v", h)
	skew := time.Since(time.Unix(h.ServerTimeUTC, 0))
	check(skew < time.Hour && skew > -time.Hour, "sys/health: server_time_utc %d is not now", h.ServerTimeUTC)
	check(h.Version != "" && h.ClusterName != "" && h.ClusterID != "", "sys/health: %+v", h)
	check(h.ReplicationDRMode == "disabled" && h.ReplicationPerformanceMode == "disabled", "sys/health: %+v", h)
	fmt.Println("ok health")

	var s sealStatus
	get(c, "sys/seal-status", nil, &s)
	check(s.Type == "shamir" && s.Initialized && !s.Sealed, "sys/seal-status: %+v", s)
	check(s.T == 1 && s.N == 1 && s.Progress == 0, "sys/seal-status: %+v", s)
	check(s.Version == h.Version && s.ClusterName == h.ClusterName && s.ClusterID == h.ClusterID,
		"sys/seal-status: version and cluster differ from sys/health: %+v", s)
	check(s.StorageType != "", "sys/seal-status: no storage type")
	fmt.Println("ok seal-status")

	var l leader
	get(c, "sys/leader", nil, &l)
	check(!l.HAEnabled && l.IsSelf && !l.PerfStandby, "sys/leader: %+v", l)
	check(!l.ActiveTime.IsZero() && !l.ActiveTime.After(time.Now()), "sys/leader: active_time %v", l.ActiveTime)
	fmt.Println("ok leader")
}
